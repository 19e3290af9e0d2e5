//! The status line (backend, ladder, CPU, budget, timer, health, theme) and the line below it:
//! the command line while typing one, else the last message.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::Styles;
use crate::tui::app::App;

/// The status line and the message (or command) line.
pub fn render_status(app: &App, status: Rect, message: Rect, buf: &mut Buffer) {
    let s = Styles(&app.theme);
    let c = &app.theme.colors;
    let base = if app.theme.color {
        Style::default().fg(c.status_fg).bg(c.status_bg)
    } else {
        Style::default().add_modifier(Modifier::REVERSED)
    };
    let st = &app.status;
    let mut parts = vec![
        format!(" {}", app.backend.name()),
        app.ladder.name.clone(),
        st.cpu.map_or("CPU auto".into(), |c| format!("CPU {c}")),
        format!("{} s", st.time_s),
    ];
    if let Some(t) = &st.timer {
        parts.push(t.clone());
    }
    let mut spans = vec![Span::styled(parts.join(" │ "), base)];
    if let Some(line) = &app.busy {
        let pct = app
            .table
            .progress
            .map_or(String::new(), |p| format!(" {:.0}%", p * 100.0));
        spans.push(Span::styled(
            format!(" │ running {line}{pct} (Esc cancels)"),
            base.add_modifier(Modifier::BOLD),
        ));
    }
    if !st.health.is_empty() {
        let warn = if app.theme.color {
            base.fg(c.warning)
        } else {
            base.add_modifier(Modifier::BOLD)
        };
        spans.push(Span::styled(format!(" │ ⚠ {}", st.health.join(", ")), warn));
    }
    spans.push(Span::styled(
        format!(" │ {} │ F1 help ", app.theme.name),
        base,
    ));
    Paragraph::new(Line::from(spans))
        .style(base)
        .render(status, buf);
    let line = if let Some(cmd) = &app.command {
        let chars: Vec<char> = cmd.chars().collect();
        let at = app.command_cursor.min(chars.len());
        let before: String = chars[..at].iter().collect();
        let under: String = chars.get(at).map_or(" ".to_string(), |c| c.to_string());
        let after: String = chars
            .get(at + 1..)
            .map_or(String::new(), |r| r.iter().collect());
        let mut v = vec![
            Span::styled(before, s.text()),
            Span::styled(under, s.text().add_modifier(Modifier::REVERSED)),
            Span::styled(after, s.text()),
        ];
        if app.completion.0.len() > 1 {
            v.push(Span::styled(
                format!("   {}", app.completion.0.join("  ")),
                s.muted(),
            ));
        }
        Line::from(v)
    } else if let Some(m) = &app.message {
        let first = m.text.lines().next().unwrap_or("");
        let more = if m.text.lines().count() > 1 {
            " …"
        } else {
            ""
        };
        Line::styled(
            format!("{first}{more}"),
            if m.error { s.error() } else { s.text() },
        )
    } else {
        Line::styled(
            "F5 run  F6 check  F7 ladder  F8 backend  F9 theme  : command  Tab pane  ? help  q quit",
            s.muted(),
        )
    };
    // A long one-line message (a check's answer) wraps over the lines the layout gave it.
    Paragraph::new(line)
        .wrap(ratatui::widgets::Wrap { trim: false })
        .render(message, buf);
}

/// The lines the message area needs at `width`: a one-line message longer than the screen
/// wraps over up to three (a longer text, or several lines, is a popup).
pub fn message_height(app: &App, width: u16) -> u16 {
    let Some(m) = app.message.as_ref().filter(|_| app.command.is_none()) else {
        return 1;
    };
    let first = m.text.lines().next().unwrap_or("").chars().count() + 2;
    let w = usize::from(width.max(1));
    first.div_ceil(w).clamp(1, 3) as u16
}
