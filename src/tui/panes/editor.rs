//! The snippet editor: tui-textarea keeps the text, cursor and undo; this draws it with the
//! lexer's colours, line numbers, the cursor, each diagnostic underlined at its span and the
//! first diagnostic's message on the pane's last line.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::Styles;
use crate::tui::app::{App, Pane};
use crate::tui::highlight::TokenClass;

/// The editor pane.
pub fn render_editor(app: &App, area: Rect, buf: &mut Buffer) {
    let s = Styles(&app.theme);
    let focused = app.focus == Pane::Editor;
    let hint = if focused { "Esc: leave" } else { "e: edit" };
    let block = s.block(
        Line::from(vec![
            Span::styled(format!(" {} ", app.snippet_name), s.title()),
            Span::styled(format!("({}) {hint} ", app.backend.name()), s.muted()),
        ]),
        focused,
    );
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.height == 0 || inner.width < 6 {
        return;
    }
    let diag_line = app.diagnostics.first();
    let text_h = inner.height as usize - usize::from(diag_line.is_some() && inner.height > 2);
    let (cur_row, cur_col) = app.editor.cursor();
    let top = cur_row.saturating_sub(text_h.saturating_sub(1));
    let lines_src = app.editor.lines();
    let num_w = lines_src.len().to_string().len().max(2);
    let c = &app.theme.colors;
    let mut offset = 0usize;
    let mut out = Vec::new();
    for (i, line) in lines_src.iter().enumerate() {
        let start = offset;
        offset += line.len() + 1;
        if i < top || i >= top + text_h {
            continue;
        }
        let mut spans = vec![Span::styled(format!("{:>num_w$} ", i + 1), s.muted())];
        let chars: Vec<(usize, char)> = line.char_indices().collect();
        let mut col = 0;
        while col <= chars.len() {
            let byte = chars.get(col).map_or(line.len(), |(b, _)| *b) + start;
            let mut style = s.text();
            if let Some(m) = app.marks.iter().find(|m| m.start <= byte && byte < m.end) {
                style = match m.class {
                    TokenClass::Keyword => s.fg(c.keyword).add_modifier(Modifier::BOLD),
                    TokenClass::Number => s.fg(c.number),
                    TokenClass::Str => s.fg(c.string),
                    TokenClass::Comment => s.fg(c.comment).add_modifier(Modifier::ITALIC),
                };
            }
            let in_diag = app.diagnostics.iter().any(|d| {
                (d.start <= byte && byte < d.end.max(d.start + 1))
                    && (col < chars.len() || d.start == byte)
            });
            if in_diag {
                style = style
                    .patch(s.fg(c.error))
                    .add_modifier(Modifier::UNDERLINED);
            }
            let is_cursor = focused && i == cur_row && col == cur_col;
            if is_cursor {
                style = style.add_modifier(Modifier::REVERSED);
            }
            match chars.get(col) {
                Some((_, ch)) => spans.push(Span::styled(ch.to_string(), style)),
                None if is_cursor || in_diag => spans.push(Span::styled(" ", style)),
                None => {}
            }
            col += 1;
        }
        out.push(Line::from(spans));
    }
    if app.editor.is_empty() && !focused {
        out.push(Line::styled("empty: e to edit, or :load FILE", s.muted()));
    }
    Paragraph::new(out).render(
        Rect {
            height: text_h as u16,
            ..inner
        },
        buf,
    );
    if let Some(d) = diag_line
        && inner.height > 2
    {
        let style: Style = if d.incomplete { s.muted() } else { s.error() };
        let more = if app.diagnostics.len() > 1 {
            format!(" (+{} more)", app.diagnostics.len() - 1)
        } else {
            String::new()
        };
        Paragraph::new(Line::styled(
            format!("{}:{} {}{more}", d.line, d.col, d.message),
            style,
        ))
        .render(
            Rect {
                y: inner.y + inner.height - 1,
                height: 1,
                ..inner
            },
            buf,
        );
    }
}
