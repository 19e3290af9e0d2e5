//! Overlays: the key help (`?`, F1) and a popup for output longer than one line.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget, Wrap};

use super::Styles;
use crate::tui::app::App;
use crate::tui::keys::{HELP, POPUP};

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
    let r = centered(area, 78, HELP.len() as u16 + 4);
    Clear.render(r, buf);
    s.paint_background(r, buf);
    let block = s.block(" keys (any key closes) ", true);
    let inner = block.inner(r);
    block.render(r, buf);
    let mut lines: Vec<Line> = HELP
        .iter()
        .map(|entry| {
            Line::from(vec![
                Span::styled(format!("{:<15} ", entry.label()), s.title()),
                Span::styled(entry.help, s.text()),
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
    s.paint_background(r, buf);
    // Taller than the screen: say which lines show and how to scroll.
    let visible = r.height.saturating_sub(2);
    let top = app.popup_scroll.min(n.saturating_sub(visible));
    let title = if n > visible {
        format!(
            " output {}-{} of {n} ({}) ",
            top + 1,
            top + visible,
            popup_keys()
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

/// The popup title's key hint, from the popup's bindings: `↑↓ PgUp PgDn Home End scroll; other
/// keys close`.
fn popup_keys() -> String {
    let groups: Vec<String> = POPUP
        .keys
        .iter()
        .map(|g| g.iter().map(|b| b.key.name()).collect::<String>())
        .collect();
    format!("{} {}", groups.join(" "), POPUP.help)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_popup_title_names_its_keys_as_before() {
        assert_eq!(
            super::popup_keys(),
            "↑↓ PgUp PgDn Home End scroll; other keys close"
        );
    }
}
