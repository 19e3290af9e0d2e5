//! The selected row's histogram (from its HdrHistogram's bucket counts): one bar per line,
//! re-binned to the pane's height, with the lines holding p50, p90 and p99 marked.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::Styles;
use super::table::{bar, ns};
use crate::session::HistogramBucket;
use crate::tui::app::{App, Pane};

/// `buckets` merged into `rows` bars of (lower edge ns, count).
pub fn rebin(buckets: &[HistogramBucket], rows: usize) -> Vec<(f64, f64, u64)> {
    if buckets.is_empty() || rows == 0 {
        return Vec::new();
    }
    let rows = rows.min(buckets.len());
    (0..rows)
        .map(|r| {
            let from = r * buckets.len() / rows;
            let to = ((r + 1) * buckets.len() / rows).max(from + 1);
            let part = &buckets[from..to];
            (
                part[0].lo_ns,
                part[part.len() - 1].hi_ns,
                part.iter().map(|b| b.count).sum(),
            )
        })
        .collect()
}

/// The waterfall in the histogram pane's place: what each rung adds, jit beside aot.
fn render_waterfall(app: &App, area: Rect, buf: &mut Buffer, compact: bool) -> bool {
    let Some(w) = crate::tui::waterfall::Waterfall::from_table(&app.table) else {
        return false;
    };
    let s = Styles(&app.theme);
    let name = format!("waterfall: {} (w: histogram)", w.title);
    let title = if compact {
        super::detail_title(&s, Pane::Histogram, name)
    } else {
        Line::from(Span::styled(format!(" {name} "), s.title()))
    };
    let block = s.block(title, app.focus == Pane::Histogram);
    let inner = block.inner(area);
    block.render(area, buf);
    let c = &app.theme.colors;
    let lines: Vec<Line> = crate::tui::waterfall::text_lines(&w, inner.width as usize)
        .into_iter()
        .map(|(build, text, resolved)| {
            let style = match build.as_deref() {
                None => s.muted(),
                Some("jit") => s.fg(c.bar),
                Some(_) => s.fg(c.histogram_bar),
            };
            let style = if resolved {
                style
            } else {
                style.add_modifier(ratatui::style::Modifier::DIM)
            };
            Line::styled(text, style)
        })
        .collect();
    Paragraph::new(lines).render(inner, buf);
    true
}

/// The histogram pane (or, after `w`, the ladder's waterfall).
pub fn render_histogram(app: &App, area: Rect, buf: &mut Buffer, compact: bool) {
    if app.waterfall && render_waterfall(app, area, buf, compact) {
        return;
    }
    let s = Styles(&app.theme);
    let row = app.table.rows.get(app.selected);
    let name = row.map(|r| r.label.clone()).unwrap_or_default();
    let title = if compact {
        super::detail_title(&s, Pane::Histogram, name)
    } else {
        Line::from(Span::styled(format!(" histogram: {name} "), s.title()))
    };
    let block = s.block(title, app.focus == Pane::Histogram);
    let inner = block.inner(area);
    block.render(area, buf);
    let Some(row) = row else {
        return;
    };
    let mut lines = Vec::new();
    let pct = |q: f64| {
        row.percentiles
            .iter()
            .find(|p| (p.q - q).abs() < 1e-9)
            .map(|p| p.ns)
    };
    let marks: Vec<(&str, f64)> = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99)]
        .iter()
        .filter_map(|(n, q)| pct(*q).map(|v| (*n, v)))
        .collect();
    // Numbers are never cut: the gaps narrow first, then the marks go from p90 on (the
    // sample count stays).
    let count = sample_count(row.samples);
    let width = inner.width as usize;
    let (shown, gap) = summary_fit(&marks, &count, width);
    let summary: Vec<Span> = shown
        .iter()
        .flat_map(|(n, v)| {
            [
                Span::styled(format!("{n} "), s.fg(app.theme.colors.histogram_marker)),
                Span::styled(format!("{}{gap}", ns(*v)), s.text()),
            ]
        })
        .chain(std::iter::once(Span::styled(count, s.muted())))
        .collect();
    lines.push(Line::from(summary));
    let bar_rows = (inner.height as usize).saturating_sub(1);
    if row.buckets.is_empty() || bar_rows == 0 {
        lines.push(Line::styled(
            if app.table.rows.iter().any(|r| r.total_ns.is_some()) {
                "no samples for this row"
            } else {
                "measure (F5) to see the distribution of ns/op"
            },
            s.muted(),
        ));
    } else {
        let bars = rebin(&row.buckets, bar_rows);
        let total: u64 = bars.iter().map(|b| b.2).sum::<u64>().max(1);
        let max = bars.iter().map(|b| b.2).max().unwrap_or(1).max(1);
        let last = bars.len() - 1;
        // The marks each line holds (`p50 p90 p99` when they share one): the tail (` 100.0%`
        // and the marks) is as wide as the widest, so no mark is cut.
        let heres: Vec<String> = bars
            .iter()
            .enumerate()
            .map(|(i, (lo, hi, _))| {
                marks
                    .iter()
                    .filter(|(_, v)| (*v >= *lo || i == 0) && (*v < *hi || i == last))
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let label_w = 9;
        let tail_w = 7 + heres.iter().map(|h| h.len() + 1).max().unwrap_or(0);
        let bar_w = (inner.width as usize)
            .saturating_sub(label_w + tail_w + 1)
            .max(1);
        for (i, ((lo, _, count), here)) in bars.iter().zip(&heres).enumerate() {
            let bar = bar(*count as f64, max as f64, bar_w);
            let edge = if i == last { "≥" } else { " " };
            lines.push(Line::from(vec![
                Span::styled(format!("{edge}{:>8}", ns(*lo)), s.muted()),
                Span::styled("│", s.muted()),
                Span::styled(bar, s.fg(app.theme.colors.histogram_bar)),
                Span::styled(
                    format!(" {:>4.1}%", *count as f64 * 100.0 / total as f64),
                    s.muted(),
                ),
                Span::styled(format!(" {here}"), s.fg(app.theme.colors.histogram_marker)),
            ]));
        }
    }
    Paragraph::new(lines).render(inner, buf);
}

/// The histogram's sample count: `n=440`, or `n=440 of 562` when the OS disturbed some of the
/// row's rounds. The histogram, the median and the CI are made of the kept samples only, while
/// the table's note counts every round: without the `of`, `562 rounds` above and `n=440` here
/// read as two different sets of samples.
pub fn sample_count((kept, dropped): (usize, usize)) -> String {
    if dropped == 0 {
        format!("n={kept}")
    } else {
        format!("n={kept} of {}", kept + dropped)
    }
}

/// The marks (`p50 3.24`) and the gap between them that fit `width` cells before `count`:
/// all with two spaces, all with one, then fewer marks (p50 last); the count always.
fn summary_fit<'a>(
    marks: &'a [(&'a str, f64)],
    count: &str,
    width: usize,
) -> (&'a [(&'a str, f64)], &'static str) {
    let len = |m: &[(&str, f64)], gap: &str| -> usize {
        m.iter()
            .map(|(n, v)| n.len() + 1 + ns(*v).len() + gap.len())
            .sum::<usize>()
            + count.chars().count()
    };
    for keep in (0..=marks.len()).rev() {
        for gap in ["  ", " "] {
            if len(&marks[..keep], gap) <= width {
                return (&marks[..keep], gap);
            }
        }
    }
    (&marks[..0], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebin_keeps_every_count() {
        let b: Vec<HistogramBucket> = (0..32)
            .map(|i| HistogramBucket {
                lo_ns: i as f64,
                hi_ns: i as f64 + 1.0,
                count: i,
            })
            .collect();
        let r = rebin(&b, 5);
        assert_eq!(r.len(), 5);
        assert_eq!(r.iter().map(|x| x.2).sum::<u64>(), (0..32).sum::<u64>());
        assert_eq!((r[0].0, r[4].1), (0.0, 32.0));
    }
}
