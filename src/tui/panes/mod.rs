//! Drawing: the layout of the whole screen and one file per pane. Rendering only reads the
//! [`App`]; every colour comes from the theme by purpose ([`Styles`]).

mod code;
mod counters;
mod editor;
mod histogram;
mod overlay;
mod status;
mod table;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders};

use super::app::{App, Pane};
use super::theme::Theme;

pub use code::render_code;
pub use counters::render_counters;
pub use editor::render_editor;
pub use histogram::render_histogram;
pub use status::render_status;
pub use table::{bar, ci_half, render_table, table_offset};

/// Styles by purpose, honouring a colourless theme (NO_COLOR: attributes only).
pub struct Styles<'a>(pub &'a Theme);

impl Styles<'_> {
    /// Foreground `c`, or nothing without colour.
    pub fn fg(&self, c: Color) -> Style {
        if self.0.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }
    /// Paint the theme's background under every cell of `area` (nothing for a theme that keeps
    /// the terminal's own, or without colour); what is drawn later keeps it unless it sets its
    /// own background.
    pub fn paint_background(&self, area: Rect, buf: &mut Buffer) {
        let bg = self.0.colors.background;
        if self.0.color && bg != Color::Reset {
            buf.set_style(area, Style::default().bg(bg));
        }
    }
    /// Ordinary text.
    pub fn text(&self) -> Style {
        self.fg(self.0.colors.text)
    }
    /// Secondary text.
    pub fn muted(&self) -> Style {
        let s = self.fg(self.0.colors.muted);
        if self.0.color {
            s
        } else {
            s.add_modifier(Modifier::DIM)
        }
    }
    /// Titles.
    pub fn title(&self) -> Style {
        self.fg(self.0.colors.title).add_modifier(Modifier::BOLD)
    }
    /// The selected row.
    pub fn selection(&self) -> Style {
        if self.0.color {
            Style::default()
                .fg(self.0.colors.selection_fg)
                .bg(self.0.colors.selection_bg)
        } else {
            Style::default().add_modifier(Modifier::REVERSED)
        }
    }
    /// The selected row's background, keeping each cell's own colour (a verdict keeps its
    /// meaning when selected); without colour, reverse video.
    pub fn selection_bg(&self) -> Style {
        if self.0.color {
            Style::default().bg(self.0.colors.selection_bg)
        } else {
            Style::default().add_modifier(Modifier::REVERSED)
        }
    }
    /// Errors.
    pub fn error(&self) -> Style {
        self.fg(self.0.colors.error).add_modifier(Modifier::BOLD)
    }
    /// A pane's block, its border marked when focused.
    pub fn block<'t>(&self, title: impl Into<Line<'t>>, focused: bool) -> Block<'t> {
        let border = if focused {
            self.fg(self.0.colors.border_focus)
                .add_modifier(Modifier::BOLD)
        } else {
            self.fg(self.0.colors.border)
        };
        Block::default()
            .borders(Borders::ALL)
            .border_type(if focused {
                BorderType::Thick
            } else {
                BorderType::Plain
            })
            .border_style(border)
            .title(title)
            .title_style(self.title())
    }
}

/// A title made of spans.
pub fn title<'a>(parts: Vec<Span<'a>>) -> Line<'a> {
    Line::from(parts)
}

/// Where each pane is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Areas {
    /// The editor.
    pub editor: Rect,
    /// The table.
    pub table: Rect,
    /// The histogram (empty when the compact layout shows another detail pane).
    pub histogram: Rect,
    /// The counters.
    pub counters: Rect,
    /// The code.
    pub code: Rect,
    /// The status line.
    pub status: Rect,
    /// The message or command line.
    pub message: Rect,
}

/// Large screens show every pane; smaller ones show one detail pane (histogram, counters or
/// code: the focused one, else the histogram) below the table.
pub fn layout(area: Rect, app: &App) -> Areas {
    let [main, status, message] = Layout::vertical([
        Constraint::Min(6),
        Constraint::Length(1),
        Constraint::Length(status::message_height(app, area.width)),
    ])
    .areas(area);
    let table_h = (app.table.rows.len() as u16 + 4).max(6);
    // Leave the editor and the detail pane at least 7 lines.
    let table_max = main.height.saturating_sub(7).max(6);
    let mut a = Areas {
        status,
        message,
        ..Areas::default()
    };
    if area.width >= 120 && area.height >= 30 {
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(38), Constraint::Percentage(62)])
                .areas(main);
        [a.editor, a.counters] =
            Layout::vertical([Constraint::Min(5), Constraint::Length(10)]).areas(left);
        let [top, bottom] = Layout::vertical([
            Constraint::Length(table_h.min(main.height * 3 / 5)),
            Constraint::Min(5),
        ])
        .areas(right);
        a.table = top;
        [a.histogram, a.code] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                .areas(bottom);
    } else {
        let [top, bottom] = Layout::vertical([
            Constraint::Length(table_h.min(table_max)),
            Constraint::Min(4),
        ])
        .areas(main);
        a.table = top;
        let [left, right] = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Percentage(42), Constraint::Percentage(58)])
            .areas(bottom);
        a.editor = left;
        match app.focus {
            Pane::Counters => a.counters = right,
            Pane::Code => a.code = right,
            _ => a.histogram = right,
        }
    }
    a
}

/// The whole screen.
pub fn render(frame: &mut Frame, app: &App) {
    let area = frame.area();
    let a = layout(area, app);
    let buf = frame.buffer_mut();
    // First, so that every pane, border and gap lies on the theme's background.
    Styles(&app.theme).paint_background(area, buf);
    let compact = a.counters.is_empty() || a.code.is_empty() || a.histogram.is_empty();
    render_table(app, a.table, buf);
    render_editor(app, a.editor, buf);
    if !a.histogram.is_empty() {
        render_histogram(app, a.histogram, buf, compact);
    }
    if !a.counters.is_empty() {
        render_counters(app, a.counters, buf, compact);
    }
    if !a.code.is_empty() {
        render_code(app, a.code, buf, compact);
    }
    render_status(app, a.status, a.message, buf);
    if app.help {
        overlay::render_help(app, area, buf);
    } else if app.popup {
        overlay::render_popup(app, area, buf);
    }
}

/// The tabs of the compact layout's detail pane, the shown one marked.
pub fn detail_title<'a>(s: &Styles<'_>, shown: Pane, name: String) -> Line<'a> {
    let tab = |p: Pane, label: &'static str| {
        if p == shown {
            Span::styled(
                format!(" {label} "),
                s.title().add_modifier(Modifier::REVERSED),
            )
        } else {
            Span::styled(format!(" {label} "), s.muted())
        }
    };
    Line::from(vec![
        tab(Pane::Histogram, "histogram"),
        tab(Pane::Counters, "counters"),
        tab(Pane::Code, "code"),
        Span::styled(format!(" {name} "), s.title()),
    ])
}
