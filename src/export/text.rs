//! Aligned plain text for terminals and piped output.

use super::{Align, Table};

/// Render a table as aligned text: title, header, a rule, rows, notes.
pub fn render_text(t: &Table) -> String {
    render_text_painted(t, &|_, _, _| None)
}

/// The SGR colour of a verdict, as `check`'s line and the ladder's `vs native` column show it:
/// green `equal`, red `slower`, cyan `faster`, yellow `unresolved`.
pub fn verdict_paint(verdict: &str) -> Option<&'static str> {
    match verdict {
        "equal" => Some("32"),
        "slower" => Some("31"),
        "faster" => Some("36"),
        "unresolved" => Some("33"),
        _ => None,
    }
}

/// SGR of a results-differ mark (`!`, `RESULTS DIFFER`): bold red.
pub const DIFFERS_PAINT: &str = "1;31";

/// [`render_text`] with colour: `paint(row, column, cell)` gives a cell's SGR parameters
/// (`"32"`) or `None`; a painted cell is wrapped in `ESC[..m` and `ESC[0m` inside its padding,
/// so the columns stay aligned. The title is bold when anything is painted.
pub fn render_text_painted(
    t: &Table,
    paint: &dyn Fn(usize, usize, &str) -> Option<&'static str>,
) -> String {
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
    // Each cell with its SGR (if any), padded by the width of its text alone.
    let line = |cells: &mut dyn Iterator<Item = (&str, Align, Option<&str>)>| {
        let parts: Vec<String> = cells
            .zip(&widths)
            .map(|((s, a, sgr), w)| {
                let pad = " ".repeat(w.saturating_sub(s.chars().count()));
                let text = match sgr {
                    Some(sgr) if !s.is_empty() => format!("\x1b[{sgr}m{s}\x1b[0m"),
                    _ => s.to_string(),
                };
                match a {
                    Align::Left => format!("{text}{pad}"),
                    Align::Right => format!("{pad}{text}"),
                }
            })
            .collect();
        parts.join("  ").trim_end().to_string()
    };
    let painted = t.rows.iter().enumerate().any(|(r, row)| {
        row.iter()
            .enumerate()
            .any(|(c, cell)| paint(r, c, cell).is_some())
    });
    let mut out = String::new();
    if !t.title.is_empty() {
        if painted {
            out.push_str(&format!("\x1b[1m{}\x1b[0m", t.title));
        } else {
            out.push_str(&t.title);
        }
        out.push('\n');
    }
    out.push_str(&line(
        &mut t.columns.iter().map(|c| (c.name.as_str(), c.align, None)),
    ));
    out.push('\n');
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&rule.join("  "));
    out.push('\n');
    for (r, row) in t.rows.iter().enumerate() {
        out.push_str(&line(
            &mut row
                .iter()
                .zip(&t.columns)
                .enumerate()
                .map(|(k, (s, c))| (s.as_str(), c.align, paint(r, k, s))),
        ));
        out.push('\n');
    }
    for n in &t.notes {
        out.push_str(n);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn painted_cells_keep_the_columns_aligned() {
        let mut t = Table::new("t", &["step", ">ratio", "verdict"]);
        t.push(vec!["a".into(), "1.00x".into(), "equal".into()]);
        t.push(vec!["longer".into(), "12.50x".into(), "slower".into()]);
        let plain = render_text(&t);
        assert!(!plain.contains('\x1b'), "{plain}");
        let painted =
            render_text_painted(&t, &|_, c, s| (c == 2).then(|| verdict_paint(s)).flatten());
        assert!(painted.contains("\x1b[32mequal\x1b[0m"), "{painted}");
        assert!(painted.contains("\x1b[31mslower\x1b[0m"), "{painted}");
        assert!(painted.starts_with("\x1b[1mt\x1b[0m\n"), "{painted}");
        // Without its escapes the painted table is the plain one.
        let stripped = ["\x1b[32m", "\x1b[31m", "\x1b[1m", "\x1b[0m"]
            .iter()
            .fold(painted.clone(), |s, e| s.replace(e, ""));
        assert_eq!(stripped, plain);
    }
}
