//! The selected row's counters per call, or the plain reason there are none and what stands in
//! for them: cycles estimated from the calibrated core clock and the code's instruction count.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use super::Styles;
use crate::tui::app::{App, Pane};
use crate::tui::model::counters_per_op;

/// The counters pane.
pub fn render_counters(app: &App, area: Rect, buf: &mut Buffer, compact: bool) {
    let s = Styles(&app.theme);
    let row = app.table.rows.get(app.selected);
    let name = row.map(|r| r.label.clone()).unwrap_or_default();
    let title = if compact {
        super::detail_title(&s, Pane::Counters, name)
    } else {
        Line::from(Span::styled(
            format!(" counters per call: {name} "),
            s.title(),
        ))
    };
    let block = s.block(title, app.focus == Pane::Counters);
    let inner = block.inner(area);
    block.render(area, buf);
    let Some(row) = row else {
        return;
    };
    let kv = |k: &str, v: String| {
        Line::from(vec![
            Span::styled(format!("{k:<26}"), s.muted()),
            Span::styled(v, s.text()),
        ])
    };
    let mut lines = Vec::new();
    let per_op = row
        .counters
        .as_ref()
        .map(counters_per_op)
        .unwrap_or_default();
    if per_op.is_empty() {
        let why = app
            .table
            .no_counters
            .clone()
            .or_else(|| app.status.no_pmu.clone())
            .unwrap_or_else(|| "none were read for this row".into());
        // The reason may start with the words this line starts with: say them once.
        let why = why
            .strip_prefix("no hardware counters: ")
            .map(str::to_string)
            .unwrap_or(why);
        lines.push(Line::from(vec![
            Span::styled("no hardware counters: ", s.fg(app.theme.colors.warning)),
            Span::styled(why, s.text()),
        ]));
        lines.push(Line::styled("instead:", s.muted()));
        lines.push(kv(
            "cycles (vs add chain)",
            row.cycles.map_or("-".into(), |c| format!("{c:.1}")),
        ));
        if let Some(x) = row.executed {
            lines.push(kv("instructions executed", format!("{x:.1}")));
            if let Some(c) = row.cycles.filter(|c| *c > 0.0) {
                lines.push(kv("IPC (est.)", format!("{:.2}", x / c)));
            }
        }
        let instr = row
            .instructions
            .or_else(|| app.selected_code().map(|c| c.instructions));
        lines.push(kv(
            "instructions in its code",
            instr.map_or("-".into(), |n| n.to_string()),
        ));
    } else {
        for (k, v) in per_op {
            lines.push(kv(&k, format!("{v:.2}")));
        }
        if let Some(c) = row.cycles {
            lines.push(kv("cycles (vs add chain)", format!("{c:.1}")));
        }
    }
    lines.push(kv(
        "samples (dropped)",
        format!("{} ({})", row.samples.0, row.samples.1),
    ));
    if let Some(why) = &row.why {
        lines.push(Line::from(vec![
            Span::styled(format!("{:<26}", "* costs less than before"), s.muted()),
            Span::styled(why.to_string(), s.text()),
        ]));
    }
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .render(inner, buf);
}
