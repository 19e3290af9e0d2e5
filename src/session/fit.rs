//! Tables that fit the front end's terminal: under the width a REPL reports, the columns a
//! reader can best do without are dropped, one at a time, until the text fits (a note says
//! which); a wide terminal, or no width at all (a pipe, an export), gets the whole table.

use crate::export::{Table, render_text};

/// Columns dropped first when a table is too wide, in order.
/// A ladder keeps its `adds` column longest: under 80 columns its ratio and verdict against
/// native go (the `total ns` column still gives both against the first row).
const DROP_ORDER: &[&str] = &[
    "path",
    "instr",
    "mad",
    "p10",
    "cycles",
    "p90",
    "CI",
    "vs native",
    "x native [95% CI]",
];

/// Dropped only when shortening cells (below) was not enough: a checksum mark is worth more
/// than a cell's tag.
const DROP_LAST: &[&str] = &["ok"];

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

/// Drop the columns named in `order`, one at a time, until `t` fits `width`.
fn drop_until_fits(
    t: &mut Table,
    order: &[&'static str],
    width: usize,
    dropped: &mut Vec<&'static str>,
) {
    for name in order {
        if width_of(t) <= width {
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
}

/// `t` with columns dropped (in [`DROP_ORDER`]) until its text fits `width` columns, or as
/// narrow as they make it; unchanged without a width.
pub fn fit_table(t: &Table, width: Option<usize>) -> Table {
    let Some(width) = width else {
        return t.clone();
    };
    let mut t = t.clone();
    let mut dropped = Vec::new();
    drop_until_fits(&mut t, DROP_ORDER, width, &mut dropped);
    let mut shortened = false;
    if width_of(&t) > width {
        // Still too wide: a cell's trailing ` (…)` tag in a ladder's `adds` column goes
        // (`saves 0.27 ns [..] (layout effect)`); the notes under the table say the same at
        // length. Only there: elsewhere a tag tells rows apart (`main (jit)`, `main (jit-opt)`).
        let adds: Vec<usize> = t
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.name.starts_with("adds"))
            .map(|(i, _)| i)
            .collect();
        for r in &mut t.rows {
            for (i, cell) in r.iter_mut().enumerate() {
                if !adds.contains(&i) {
                    continue;
                }
                if let Some(cut) = cell.rfind(" (").filter(|&i| i > 0 && cell.ends_with(')')) {
                    cell.truncate(cut);
                    shortened = true;
                }
            }
        }
    }
    drop_until_fits(&mut t, DROP_LAST, width, &mut dropped);
    if !dropped.is_empty() || shortened {
        let mut left = dropped.join(", ");
        if shortened {
            if !left.is_empty() {
                left.push_str(", ");
            }
            left.push_str("the (…) tags of cells (the notes explain them)");
        }
        t.notes.push(format!(
            "(compact for a {width}-column terminal: {left} left out; :export or a wider \
             terminal has them)"
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

    #[test]
    fn tags_that_tell_rows_apart_stay() {
        let mut t = Table::new(
            "compare",
            &["row", ">ns", "adds (vs row before)", "verdict"],
        );
        for (row, adds) in [
            ("main (jit)", "adds 0.27 ns [0.27, 0.27] (layout effect)"),
            (
                "main (jit-opt)",
                "saves 0.27 ns [0.27, 0.27] (layout effect)",
            ),
        ] {
            t.push(vec![
                row.into(),
                "1.62".into(),
                adds.into(),
                "slower than the row before it".into(),
            ]);
        }
        let narrow = fit_table(&t, Some(40));
        let text = render_text(&narrow);
        assert!(
            text.contains("main (jit)") && text.contains("main (jit-opt)"),
            "{text}"
        );
        assert!(!text.contains("(layout effect)"), "{text}");
    }

    #[test]
    fn a_ladder_table_fits_80_columns() {
        // The widest cells a ladder table has, in its columns.
        let mut t = Table::new(
            "ladder host_call",
            &[
                "step",
                "build",
                "path",
                "adds (vs row before, 95% CI)",
                ">total ns",
                ">x native [95% CI]",
                "vs native",
                ">cycles",
                ">instr",
                "ok",
            ],
        );
        for adds in [
            "saves 0.27 ns [0.27, 0.27] (layout effect)",
            "no cost resolved: within < ±0.001 ns",
            "(the floor)",
        ] {
            t.push(
                [
                    "native virtual call",
                    "jit",
                    "&dyn Hook",
                    adds,
                    "1.63",
                    "1.17x [1.17, 1.17]",
                    "slower",
                    "6.1",
                    "~51",
                    "ok",
                ]
                .map(String::from)
                .to_vec(),
            );
        }
        let fit = fit_table(&t, Some(80));
        assert!(width_of(&fit) <= 80, "{}", render_text(&fit));
        // The adds column and the checksum mark stay; a floor stays a floor.
        let text = render_text(&fit);
        assert!(text.contains("saves 0.27 ns [0.27, 0.27]") && text.contains(" ok"));
        assert!(text.contains("(the floor)"), "{text}");
        assert!(
            fit.notes.last().unwrap().contains("tags"),
            "{:?}",
            fit.notes
        );
        // At 120 columns nothing is shortened.
        assert!(render_text(&fit_table(&t, Some(120))).contains("(layout effect)"));
    }
}
