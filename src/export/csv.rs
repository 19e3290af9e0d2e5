//! CSV (RFC 4180): a header row, then one row per table row; title and notes are left out.

use super::Table;

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Render a table as CSV.
pub fn render_csv(t: &Table) -> String {
    let mut out = String::new();
    let header: Vec<String> = t.columns.iter().map(|c| field(&c.name)).collect();
    out.push_str(&header.join(","));
    out.push('\n');
    for row in &t.rows {
        let cells: Vec<String> = row.iter().map(|c| field(c)).collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}
