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
    ("F8, b", "next backend (jit, jit-opt, interp, object)"),
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
    let text = m.text.trim_end();
    let n = u16::try_from(text.lines().count()).unwrap_or(u16::MAX);
    let w = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    let w = u16::try_from(w).unwrap_or(u16::MAX);
    // A popup that scrolls is wide enough for its title's scroll hint.
    let least = if n.saturating_add(2) > area.height {
        74
    } else {
        30
    };
    let r = centered(area, w.saturating_add(4).max(least), n.saturating_add(2));
    Clear.render(r, buf);
    // Taller than the screen: say which lines show and how to scroll.
    let visible = r.height.saturating_sub(2);
    let top = app.popup_scroll.min(n.saturating_sub(visible));
    let title = if n > visible {
        format!(
            " output {}-{} of {n} (↑↓ PgUp PgDn Home End scroll; other keys close) ",
            top + 1,
            top + visible
        )
    } else {
        " output (any key closes) ".to_string()
    };
    let block = s.block(title.as_str(), true);
    let inner = block.inner(r);
    block.render(r, buf);
    let style = if m.error { s.error() } else { s.text() };
    Paragraph::new(text)
        .style(style)
        .scroll((top, 0))
        .render(inner, buf);
}
