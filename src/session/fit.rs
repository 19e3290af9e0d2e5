//! Tables that fit the front end's terminal: under the width a REPL reports, the columns a
//! reader can best do without are dropped, one at a time, until the text fits (a note says
//! which); a wide terminal, or no width at all (a pipe, an export), gets the whole table.

use crate::export::{Table, render_text};

/// Columns dropped first when a table is too wide, in order.
const DROP_ORDER: &[&str] = &["path", "instr", "mad", "p10", "cycles", "p90", "CI", "ok"];

/// The widest line of the table's header and rows (its notes wrap on their own).
fn width_of(t: &Table) -> usize {
    let mut bare = t.clone();
    bare.notes.clear();
    bare.title.clear();
    render_text(&bare)
        .lines()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
}

/// `t` with columns dropped (in [`DROP_ORDER`]) until its text fits `width` columns, or as
/// narrow as they make it; unchanged without a width.
pub fn fit_table(t: &Table, width: Option<usize>) -> Table {
    let Some(width) = width else {
        return t.clone();
    };
    let mut t = t.clone();
    let mut dropped = Vec::new();
    for name in DROP_ORDER {
        if width_of(&t) <= width {
            break;
        }
        if let Some(i) = t.columns.iter().position(|c| c.name == *name) {
            t.columns.remove(i);
            for r in &mut t.rows {
                if i < r.len() {
                    r.remove(i);
                }
            }
            dropped.push(*name);
        }
    }
    if !dropped.is_empty() {
        t.notes.push(format!(
            "(compact for a {width}-column terminal: {} left out; :export or a wider terminal \
             has them)",
            dropped.join(", ")
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_columns_until_it_fits() {
        let mut t = Table::new("t", &["step", "path", ">instr", "verdict"]);
        t.push(vec![
            "slot read".into(),
            "a very long call path type name".into(),
            "51".into(),
            "slower".into(),
        ]);
        assert_eq!(fit_table(&t, None), t);
        let narrow = fit_table(&t, Some(30));
        // The path goes first; step, instr and verdict then fit.
        assert_eq!(narrow.columns.len(), 3, "{}", render_text(&narrow));
        assert!(
            narrow.notes[0].contains("path left out"),
            "{:?}",
            narrow.notes
        );
        assert!(
            render_text(&narrow)
                .lines()
                .all(|l| l.chars().count() <= 30 || l.starts_with('('))
        );
        assert_eq!(fit_table(&t, Some(200)).columns.len(), 4);
    }
}
