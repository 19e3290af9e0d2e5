//! Aligned plain text for terminals and piped output.

use super::{Align, Table};

/// Render a table as aligned text: title, header, a rule, rows, notes.
pub fn render_text(t: &Table) -> String {
    let widths: Vec<usize> = t
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            t.rows
                .iter()
                .map(|r| r[i].chars().count())
                .chain([c.name.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &mut dyn Iterator<Item = (&str, Align)>| {
        let parts: Vec<String> = cells
            .zip(&widths)
            .map(|((s, a), w)| match a {
                Align::Left => format!("{s:<w$}"),
                Align::Right => format!("{s:>w$}"),
            })
            .collect();
        parts.join("  ").trim_end().to_string()
    };
    let mut out = String::new();
    if !t.title.is_empty() {
        out.push_str(&t.title);
        out.push('\n');
    }
    out.push_str(&line(
        &mut t.columns.iter().map(|c| (c.name.as_str(), c.align)),
    ));
    out.push('\n');
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&rule.join("  "));
    out.push('\n');
    for row in &t.rows {
        out.push_str(&line(
            &mut row
                .iter()
                .zip(&t.columns)
                .map(|(s, c)| (s.as_str(), c.align)),
        ));
        out.push('\n');
    }
    for n in &t.notes {
        out.push_str(n);
        out.push('\n');
    }
    out
}
