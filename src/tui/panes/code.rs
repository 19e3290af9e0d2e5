//! The machine code of the selected ladder step (with its diff from the step before) or of the
//! snippet's functions.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::Styles;
use crate::tui::app::{App, Pane};

/// The code pane.
pub fn render_code(app: &App, area: Rect, buf: &mut Buffer, compact: bool) {
    let s = Styles(&app.theme);
    let code = app.selected_code();
    // A row without code (a ladder's native row, an interp row) is still named.
    let name = code.map(|c| c.title.clone()).unwrap_or_else(|| {
        app.table
            .rows
            .get(app.selected)
            .map(|r| r.label.clone())
            .unwrap_or_default()
    });
    let title = if compact {
        super::detail_title(&s, Pane::Code, name)
    } else {
        Line::from(Span::styled(format!(" code: {name} "), s.title()))
    };
    let block = s.block(title, app.focus == Pane::Code);
    let inner = block.inner(area);
    block.render(area, buf);
    let Some(code) = code else {
        let why = match app.row_code() {
            Some(Err(why)) => why,
            _ => "no row selected".to_string(),
        };
        Paragraph::new(Line::styled(why, s.muted()))
            .wrap(ratatui::widgets::Wrap { trim: false })
            .render(inner, buf);
        return;
    };
    let mut lines = Vec::new();
    match (&code.diff, app.code_diff) {
        (Some((diff, added, removed)), true) => {
            lines.push(Line::styled(
                format!("diff from the step before: +{added} -{removed} (d: whole listing)"),
                s.muted(),
            ));
            for l in diff {
                let style = if l.starts_with('+') {
                    s.fg(app.theme.colors.diff_add)
                } else if l.starts_with('-') {
                    s.fg(app.theme.colors.diff_remove)
                } else {
                    s.text()
                };
                lines.push(Line::styled(l.clone(), style));
            }
        }
        _ => {
            if code.diff.is_some() {
                lines.push(Line::styled("whole listing (d: diff)", s.muted()));
            }
            let listing = match (&code.addressed, app.code_addresses) {
                (Some(a), true) => a,
                _ => &code.listing,
            };
            if code.addressed.is_some() {
                lines.push(Line::styled(
                    if app.code_addresses {
                        "offset  bytes  instruction (a: instructions only)"
                    } else {
                        "a: offsets and bytes"
                    },
                    s.muted(),
                ));
            }
            for l in listing {
                let style = if crate::tui::asm_view::is_mark(l) {
                    s.muted()
                } else if l.ends_with(':') {
                    s.title()
                } else {
                    s.text()
                };
                lines.push(Line::styled(l.clone(), style));
            }
        }
    }
    Paragraph::new(lines)
        .scroll((app.code_scroll, 0))
        .render(inner, buf);
}
