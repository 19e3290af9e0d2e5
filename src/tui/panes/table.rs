//! The ladder or comparison table: per row a bar of its time, what it adds over the row before
//! (ns with the CI), the total, the ratio to the first row and the verdict, coloured by meaning.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::Styles;
use crate::tui::app::{App, Pane};
use crate::tui::model::{Meaning, TableRow, TableState};

/// The first row shown when `visible` rows fit and `selected` must be among them.
pub fn table_offset(selected: usize, visible: usize) -> usize {
    selected.saturating_sub(visible.saturating_sub(1))
}

fn meaning_style(s: &Styles<'_>, m: Meaning) -> Style {
    let c = &s.0.colors;
    match m {
        Meaning::Baseline => s.muted(),
        Meaning::Equal => s.fg(c.equal),
        Meaning::Slower => s.fg(c.regression).add_modifier(Modifier::BOLD),
        Meaning::Faster => s.fg(c.improvement).add_modifier(Modifier::BOLD),
        Meaning::Unresolved => s.fg(c.unresolved).add_modifier(Modifier::ITALIC),
    }
}

/// `1.23` with a width that suits ns values from 0.01 to 100 000.
pub fn ns(x: f64) -> String {
    if x.abs() >= 1000.0 {
        format!("{x:.0}")
    } else if x.abs() >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// A bar of `value / max` of `width` cells, in eighths of a cell, padded to `width`.
pub fn bar(value: f64, max: f64, width: usize) -> String {
    if width == 0 || max <= 0.0 || !value.is_finite() {
        return " ".repeat(width);
    }
    let eighths = ((value / max).clamp(0.0, 1.0) * width as f64 * 8.0).round() as usize;
    let mut s = "█".repeat(eighths / 8);
    if !eighths.is_multiple_of(8) {
        s.push(['▏', '▎', '▍', '▌', '▋', '▊', '▉'][eighths % 8 - 1]);
    }
    let len = s.chars().count();
    s + &" ".repeat(width.saturating_sub(len))
}

/// The cells `text` takes on the screen (`±` and `…` one each, a wide character two): what
/// ratatui draws, where `{:<w$}` would count chars and `len()` bytes.
fn cells(text: &str) -> usize {
    Span::raw(text).width()
}

/// `text` left-aligned in `width` cells, cut with `…` when longer.
fn fit(text: &str, width: usize) -> String {
    let n = cells(text);
    if n <= width {
        format!("{text}{}", " ".repeat(width - n))
    } else {
        let mut cut = String::new();
        for c in text.chars() {
            if cells(&cut) + cells(c.encode_utf8(&mut [0; 4])) > width.saturating_sub(1) {
                break;
            }
            cut.push(c);
        }
        format!(
            "{cut}…{}",
            " ".repeat(width.saturating_sub(cells(&cut) + 1))
        )
    }
}

/// `text` right-aligned in `width` cells (never cut: the column is as wide as its widest cell).
fn right(text: &str, width: usize) -> String {
    format!("{}{text}", " ".repeat(width.saturating_sub(cells(text))))
}

/// What the row adds with its CI, the mark of an explained saving (`*`, its own column so the
/// columns stay aligned), and the meaning.
fn adds_text(r: &TableRow) -> (String, &'static str, Meaning) {
    match (&r.adds, r.build.is_none() && r.step.is_some()) {
        (Some(a), _) => {
            // A saving that is explained (noise, layout, ...) is marked; the counters pane
            // says why.
            let mark = if r.why.is_some() { "*" } else { " " };
            (
                format!("{:+.2} {}", a.ns, ci_half(a.high - a.low)),
                mark,
                a.meaning(),
            )
        }
        (None, true) => ("floor".into(), " ", Meaning::Baseline),
        (None, false) => ("".into(), " ", Meaning::Baseline),
    }
}

/// Half a CI's width with the digits that keep it non-zero (`±0.34`, `±0.004`, `< ±0.001`):
/// [`crate::measure::stats::digits::ci_half`], as every front end shows it.
pub fn ci_half(width: f64) -> String {
    crate::measure::stats::digits::ci_half(width / 2.0)
}

/// A row's cells as text.
struct RowText {
    label: String,
    adds: String,
    total: String,
    ratio: String,
    verdict: String,
}

fn row_text(r: &TableRow) -> RowText {
    RowText {
        label: if r.ok {
            r.label.clone()
        } else {
            format!("! {}", r.label)
        },
        adds: adds_text(r).0,
        total: r.total_ns.map(ns).unwrap_or_else(|| "-".into()),
        ratio: r.ratio.map(|(x, _)| format!("{x:.2}x")).unwrap_or_default(),
        verdict: if r.disabled {
            "(left out)".into()
        } else {
            r.verdict.clone().unwrap_or_default()
        },
    }
}

/// The table pane.
pub fn render_table(app: &App, area: Rect, buf: &mut Buffer) {
    let s = Styles(&app.theme);
    let t = &app.table;
    let state = match t.state {
        TableState::Plan => "plan".to_string(),
        TableState::Live => match t.progress {
            Some(p) => format!("measuring {:.0}%", p * 100.0),
            None => "measuring".into(),
        },
        TableState::Done if t.stopped => "stopped".into(),
        TableState::Done => "done".into(),
    };
    let block = s.block(
        Line::from(vec![
            Span::styled(format!(" {} ", t.title), s.title()),
            Span::styled(format!("({state}) "), s.muted()),
        ]),
        app.focus == Pane::Table,
    );
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.height < 2 || inner.width < 20 {
        return;
    }
    let w = inner.width as usize;
    // Each row's cells, measured before the columns are laid out.
    let texts: Vec<RowText> = t.rows.iter().map(row_text).collect();
    // Columns: label, adds (and its mark), total, ratio, verdict, bar (the rest). The number
    // columns are as wide as their widest cell (`+1234.56 < ±0.001`, `1234.56x`), so no row
    // pushes the columns after it out of line; the labels get the room they need, as long as
    // a bar of `MIN_BAR` cells stays.
    const MIN_BAR: usize = 6;
    let widest_of = |min: usize, cell: fn(&RowText) -> &str| {
        texts.iter().map(|r| cells(cell(r))).fold(min, usize::max)
    };
    let adds_w = widest_of(15, |r| &r.adds);
    let total_w = widest_of(8, |r| &r.total);
    let ratio_w = widest_of(7, |r| &r.ratio);
    let verdict_w = 11;
    let fixed = adds_w + 1 + total_w + ratio_w + verdict_w + 5;
    let widest = texts.iter().map(|r| cells(&r.label)).max().unwrap_or(0);
    let label_w = widest
        .min(w.saturating_sub(fixed + MIN_BAR))
        .max((w / 4).clamp(10, 24));
    let bar_w = w.saturating_sub(label_w + fixed);
    let header = format!(
        "{} {}  {} {} {} {}",
        fit("row", label_w),
        right("adds ns ±CI", adds_w),
        right("ns/op", total_w),
        right("ratio", ratio_w),
        fit("verdict", verdict_w),
        fit("", bar_w)
    );
    let mut lines = vec![Line::styled(
        header,
        s.muted().add_modifier(Modifier::UNDERLINED),
    )];
    let visible = (inner.height as usize).saturating_sub(2).max(1);
    let offset = table_offset(app.selected, visible);
    let max = t
        .rows
        .iter()
        .filter_map(|r| r.total_ns)
        .fold(0.0f64, f64::max);
    for ((i, r), text) in t
        .rows
        .iter()
        .enumerate()
        .zip(&texts)
        .skip(offset)
        .take(visible)
    {
        let selected = i == app.selected;
        let (_, mark, adds_m) = adds_text(r);
        let vm = Meaning::of(r.verdict.as_deref().unwrap_or_default());
        let row_style = if r.disabled { s.muted() } else { s.text() };
        let mut spans = vec![
            Span::styled(
                fit(&text.label, label_w),
                if r.ok { row_style } else { s.error() },
            ),
            Span::raw(" "),
            Span::styled(right(&text.adds, adds_w), meaning_style(&s, adds_m)),
            Span::styled(mark, s.muted()),
            Span::raw(" "),
            Span::styled(right(&text.total, total_w), row_style),
            Span::raw(" "),
            Span::styled(right(&text.ratio, ratio_w), row_style),
            Span::raw(" "),
            Span::styled(fit(&text.verdict, verdict_w), meaning_style(&s, vm)),
            Span::raw(" "),
            Span::styled(
                bar(r.total_ns.unwrap_or(0.0), max, bar_w),
                s.fg(app.theme.colors.bar),
            ),
        ];
        if selected {
            for sp in &mut spans {
                sp.style = sp.style.patch(s.selection_bg());
            }
            spans[0].style = spans[0].style.patch(s.selection());
        }
        lines.push(Line::from(spans));
    }
    if t.rows.is_empty() {
        lines.push(Line::styled("no rows yet", s.muted()));
    }
    let note_y = inner.y + inner.height - 1;
    Paragraph::new(lines).render(
        Rect {
            height: inner.height - 1,
            ..inner
        },
        buf,
    );
    let mut note = t.note.clone();
    if let Some(band) = t.band {
        note.push_str(&format!("; band ±{:.0}%", band * 100.0));
    }
    Paragraph::new(Line::styled(note, s.muted())).render(
        Rect {
            y: note_y,
            height: 1,
            ..inner
        },
        buf,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_and_offsets() {
        assert_eq!(bar(1.0, 2.0, 4), "██  ");
        assert_eq!(bar(0.0, 0.0, 3), "   ");
        assert_eq!(table_offset(0, 5), 0);
        assert_eq!(table_offset(7, 5), 3);
        assert_eq!(fit("abcdef", 4), "abc…");
        // Cells, not chars or bytes: `±` takes one, a wide character two.
        assert_eq!(fit("< ±0.001", 9), "< ±0.001 ");
        assert_eq!(right("< ±0.001", 9), " < ±0.001");
        assert_eq!(fit("日本語", 4), "日… ");
        assert_eq!(cells(&fit("日本語", 4)), 4);
        assert_eq!(ci_half(0.5), "±0.25");
        assert_eq!(ci_half(0.008), "±0.004");
        assert_eq!(ci_half(0.0), "< ±0.001");
    }
}
