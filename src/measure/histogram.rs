//! Per-variant histograms of picoseconds per op (HdrHistogram, 3 significant digits) and a
//! compact text rendering for terminals: a few rows of bars over the p1..p99 range, with the
//! rows holding p50, p90 and p99 marked. A REPL prints the rows; a TUI draws them in a pane.

use hdrhistogram::Histogram;

use super::units::Picos;

/// A histogram of per-op times.
#[derive(Debug, Clone)]
pub struct OpHistogram {
    h: Histogram<u64>,
}

impl Default for OpHistogram {
    fn default() -> Self {
        OpHistogram::new()
    }
}

impl OpHistogram {
    /// An empty, auto-resizing histogram with 3 significant digits.
    pub fn new() -> OpHistogram {
        OpHistogram {
            // 3 significant digits is always a valid precision (1..=5), so this cannot fail.
            h: Histogram::new(3).unwrap_or_else(|_| unreachable!("sigfig 3 is valid")),
        }
    }

    /// Records one per-op time (negative values, possible after overhead subtraction, count
    /// as 0).
    pub fn record(&mut self, v: Picos) {
        let ps = v.0.max(0.0).round() as u64;
        // Auto-resize is on, so recording cannot go out of range.
        let _ = self.h.record(ps);
    }

    /// Number of recorded values.
    pub fn len(&self) -> u64 {
        self.h.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.h.is_empty()
    }

    /// The value at quantile `q` in `[0, 1]`.
    pub fn quantile(&self, q: f64) -> Picos {
        Picos(self.h.value_at_quantile(q.clamp(0.0, 1.0)) as f64)
    }

    /// The underlying HdrHistogram.
    pub fn inner(&self) -> &Histogram<u64> {
        &self.h
    }

    /// `rows` lines of at most about `width` characters: lower bound of the row, a bar
    /// proportional to its share, the share, and marks for p50/p90/p99.
    pub fn render(&self, rows: usize, width: usize) -> Vec<String> {
        if self.h.is_empty() || rows == 0 {
            return vec!["(no samples)".to_string()];
        }
        let lo = self.h.value_at_quantile(0.01) as f64;
        let hi = (self.h.value_at_quantile(0.99) as f64).max(lo + 1.0);
        let step = (hi - lo) / rows as f64;
        let row_of = |v: f64| (((v - lo) / step).floor().max(0.0) as usize).min(rows - 1);
        let mut counts = vec![0u64; rows];
        for it in self.h.iter_recorded() {
            counts[row_of(it.value_iterated_to() as f64)] += it.count_at_value();
        }
        let total = self.h.len().max(1) as f64;
        let marks = [(0.5, "p50"), (0.9, "p90"), (0.99, "p99")];
        let bar_width = width.saturating_sub(30).max(5);
        let max = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
        (0..rows)
            .map(|r| {
                let share = counts[r] as f64 / total;
                let eighths = (counts[r] as f64 / max * bar_width as f64 * 8.0).round() as usize;
                let mut bar = "█".repeat(eighths / 8);
                if !eighths.is_multiple_of(8) {
                    bar.push(['▏', '▎', '▍', '▌', '▋', '▊', '▉'][eighths % 8 - 1]);
                }
                let mark: Vec<&str> = marks
                    .iter()
                    .filter(|(q, _)| row_of(self.h.value_at_quantile(*q) as f64) == r)
                    .map(|(_, m)| *m)
                    .collect();
                let edge = if r == rows - 1 { "≥" } else { " " };
                format!(
                    "{edge}{:>10} │{bar:<bar_width$} {:>5.1}% {}",
                    Picos(lo + step * r as f64).to_string(),
                    share * 100.0,
                    mark.join(" ")
                )
                .trim_end()
                .to_string()
            })
            .collect()
    }
}

/// The eighths of a bar character (`█` is 8, `▏` 1), or `None` for any other character.
fn eighths_of(c: char) -> Option<usize> {
    ['▏', '▎', '▍', '▌', '▋', '▊', '▉', '█']
        .iter()
        .position(|b| *b == c)
        .map(|i| i + 1)
}

/// Lines of [`OpHistogram::render`] narrowed to `width` columns: the bars scaled down
/// together (each keeps its share of the longest), the edge, share and marks as they were.
/// Lines that fit, and lines of another form (`(no samples)`), are returned as they are.
pub fn fit_lines(lines: &[String], width: usize) -> Vec<String> {
    // Each line as (edge and `│`, its bar in eighths, bar field width, share and marks).
    let parsed: Option<Vec<(String, usize, usize, String)>> = lines
        .iter()
        .map(|l| {
            let chars: Vec<char> = l.chars().collect();
            let bar_at = chars.iter().position(|c| *c == '│')? + 1;
            // The share is ` {:>5.1}%`: the bar field ends six characters before its `%`.
            let pct = chars.iter().rposition(|c| *c == '%')?;
            let tail_at = pct.checked_sub(6).filter(|&t| t >= bar_at)?;
            let field = &chars[bar_at..tail_at];
            let eighths = field.iter().map(|c| eighths_of(*c).unwrap_or(0)).sum();
            Some((
                chars[..bar_at].iter().collect(),
                eighths,
                field.len(),
                chars[tail_at..].iter().collect(),
            ))
        })
        .collect();
    let Some(parsed) = parsed.filter(|p| !p.is_empty()) else {
        return lines.to_vec();
    };
    let longest = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    if longest <= width {
        return lines.to_vec();
    }
    let field = parsed.iter().map(|p| p.2).max().unwrap_or(0);
    let fixed = longest - field;
    let narrow = width.saturating_sub(fixed).max(3);
    parsed
        .into_iter()
        .map(|(head, eighths, _, tail)| {
            let scaled = (eighths * narrow + field / 2) / field.max(1);
            let mut bar = "█".repeat(scaled / 8);
            if !scaled.is_multiple_of(8) {
                bar.push(['▏', '▎', '▍', '▌', '▋', '▊', '▉'][scaled % 8 - 1]);
            }
            format!("{head}{bar:<narrow$}{tail}").trim_end().to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitted_lines_scale_their_bars_to_the_width() {
        let mut h = OpHistogram::new();
        for i in 0..1000 {
            h.record(Picos(1000.0 + (i % 100) as f64 * (i % 7) as f64));
        }
        let rows = h.render(6, 48);
        let wide = rows.iter().map(|l| l.chars().count()).max().unwrap();
        // Wide enough: unchanged.
        assert_eq!(fit_lines(&rows, wide), rows);
        let narrow = fit_lines(&rows, 40);
        assert_eq!(narrow.len(), rows.len());
        for (n, r) in narrow.iter().zip(&rows) {
            assert!(n.chars().count() <= 40, "{n}");
            // The edge and the share with its marks are kept.
            assert_eq!(n.split('│').next(), r.split('│').next());
            assert!(n.ends_with(r.rsplit_once('%').unwrap().1), "{n} / {r}");
        }
        // The longest bar is still the longest, now 8 columns shorter.
        let bar = |l: &str| l.chars().filter(|c| eighths_of(*c).is_some()).count();
        let before = rows.iter().map(|l| bar(l)).max().unwrap();
        let after = narrow.iter().map(|l| bar(l)).max().unwrap();
        assert_eq!(after + (wide - 40), before, "{rows:#?}\n{narrow:#?}");
        let none = vec!["(no samples)".to_string()];
        assert_eq!(fit_lines(&none, 5), none);
    }

    #[test]
    fn renders_marks() {
        let mut h = OpHistogram::new();
        for i in 0..1000 {
            h.record(Picos(1000.0 + (i % 100) as f64));
        }
        let rows = h.render(5, 60);
        assert_eq!(rows.len(), 5);
        let all = rows.join("\n");
        assert!(
            all.contains("p50") && all.contains("p90") && all.contains("p99"),
            "{all}"
        );
        assert!((h.quantile(0.5).0 - 1050.0).abs() < 2.0);
    }
}
