//! GitHub-flavoured Markdown, for docs and slides.

use super::{Align, Table};

fn escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Render a table as Markdown: a `###` title, the table, then the notes as a paragraph.
pub fn render_markdown(t: &Table) -> String {
    let mut out = String::new();
    if !t.title.is_empty() {
        out.push_str(&format!("### {}\n\n", t.title));
    }
    let header: Vec<String> = t.columns.iter().map(|c| escape(&c.name)).collect();
    out.push_str(&format!("| {} |\n", header.join(" | ")));
    let rule: Vec<&str> = t
        .columns
        .iter()
        .map(|c| match c.align {
            Align::Left => ":---",
            Align::Right => "---:",
        })
        .collect();
    out.push_str(&format!("| {} |\n", rule.join(" | ")));
    for row in &t.rows {
        let cells: Vec<String> = row.iter().map(|c| escape(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    if !t.notes.is_empty() {
        out.push('\n');
        for n in &t.notes {
            out.push_str(n);
            out.push('\n');
        }
    }
    out
}
