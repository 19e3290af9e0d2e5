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

#[cfg(test)]
mod tests {
    use super::*;

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
