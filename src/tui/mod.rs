//! The terminal user interface (ratatui + crossterm).

pub mod theme;
