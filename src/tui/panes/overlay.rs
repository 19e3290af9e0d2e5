//! Overlays: the key help (`?`, F1) and a popup for output longer than one line.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget, Wrap};

use super::Styles;
use crate::tui::app::App;

/// Every key, as the help overlay lists it (and docs/tui.md).
pub const KEYS: &[(&str, &str)] = &[
    (
        "F5, r, Ctrl-R",
        "run: the ladder around fn call, run(n) against another backend, or main",
    ),
    (
        "F6, c, Ctrl-K",
        "check: the snippet against its native twin",
    ),
    ("F7, l", "next ladder (host_call, fused, direct)"),
    ("F8, b", "next backend (jit, jit-opt, interp)"),
    ("F9, t", "next theme (dark, light, high-contrast)"),
    (
        "space",
        "leave the selected row's layer out, or put it back",
    ),
    ("[ ], K J", "move the selected row's layer earlier or later"),
    ("Tab, Shift-Tab", "next or previous pane"),
    ("e, i, Enter", "edit the snippet (Esc leaves the editor)"),
    ("↑ ↓, j k", "select a row (in the code pane: scroll)"),
    (
        "mouse",
        "click a row to select it; the wheel moves the selection",
    ),
    (
        "d",
        "code pane: diff from the step before, or the whole listing",
    ),
    (
        ":",
        "command line: the REPL's commands (Tab completes, :help lists)",
    ),
    (
        "Esc, Ctrl-C",
        "cancel the running job (Esc also clears a message)",
    ),
    ("?, F1", "this help"),
    (
        "q, Ctrl-Q",
        "quit (the session is saved; hotlab tui --resume reopens it)",
    ),
];

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

/// The help overlay.
pub fn render_help(app: &App, area: Rect, buf: &mut Buffer) {
    let s = Styles(&app.theme);
    let r = centered(area, 78, KEYS.len() as u16 + 4);
    Clear.render(r, buf);
    let block = s.block(" keys (any key closes) ", true);
    let inner = block.inner(r);
    block.render(r, buf);
    let mut lines: Vec<Line> = KEYS
        .iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(format!("{k:<15} "), s.title()),
                Span::styled(*what, s.text()),
            ])
        })
        .collect();
    lines.push(Line::styled(
        "In the editor, letters are text: use F-keys and Ctrl keys there.",
        s.muted(),
    ));
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .render(inner, buf);
}

/// Output longer than one line (`:help`, `:asm`, a rendered diagnostic).
pub fn render_popup(app: &App, area: Rect, buf: &mut Buffer) {
    let Some(m) = &app.message else {
        return;
    };
    let s = Styles(&app.theme);
    let n = m.text.lines().count() as u16;
    let w = m.text.lines().map(|l| l.chars().count()).max().unwrap_or(0) as u16;
    let r = centered(area, (w + 4).max(30), n + 2);
    Clear.render(r, buf);
    let block = s.block(" output (any key closes) ", true);
    let inner = block.inner(r);
    block.render(r, buf);
    let style = if m.error { s.error() } else { s.text() };
    Paragraph::new(m.text.as_str())
        .style(style)
        .render(inner, buf);
}
