//! Tables that fit the front end's terminal: under the width a REPL reports, the columns a
//! reader can best do without are dropped, one at a time, until the text fits (a note says
//! which); a wide terminal, or no width at all (a pipe, an export), gets the whole table.
//! The prose around a table (its notes, a ladder's header, a verdict's sentence) is
//! word-wrapped to the same width ([`wrap_prose`]).

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
    for note in &mut t.notes {
        *note = wrap_prose(note, Some(width));
    }
    t
}

/// The longest label (`health: `, `adds: `) a wrapped line's continuation lines are indented
/// under; after a longer one they are indented by [`HANG`].
const LABEL_MAX: usize = 20;

/// The indent of a wrapped line's continuation lines when it has no short label.
const HANG: usize = 2;

/// `text` with every line longer than `width` columns word-wrapped to it. Continuation lines
/// are indented under the text after a short leading label (`health: load average …` goes on
/// under `load`), else by two columns more than the line's own indent, so they read as the
/// same note. A word longer than a whole line is cut where the line ends: no line is ever
/// wider than `width` (unless `width` leaves no room for text after the indent).
pub fn wrap_prose(text: &str, width: Option<usize>) -> String {
    let Some(width) = width else {
        return text.to_string();
    };
    let mut out = String::new();
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        wrap_line(line, width, &mut out);
    }
    out
}

fn wrap_line(line: &str, width: usize, out: &mut String) {
    let line = line.trim_end();
    if line.chars().count() <= width {
        out.push_str(line);
        return;
    }
    let text = line.trim_start();
    let own = &line[..line.len() - text.len()];
    let lead = own.chars().count();
    let indent = match text.split_once(": ") {
        Some((label, _)) if label.chars().count() + 2 <= LABEL_MAX.min(width / 3) => {
            lead + label.chars().count() + 2
        }
        _ => lead + HANG,
    };
    // The first row keeps the line's own indent, the rest the hanging one.
    let mut row = String::from(own);
    let mut row_len = lead;
    let mut fresh = true;
    let break_row = |row: &mut String, row_len: &mut usize, out: &mut String| {
        out.push_str(row.trim_end());
        out.push('\n');
        *row = " ".repeat(indent);
        *row_len = indent;
    };
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        let gap = usize::from(!fresh);
        if !fresh && row_len + gap + word.len() > width {
            break_row(&mut row, &mut row_len, out);
            fresh = true;
        }
        if !fresh {
            row.push(' ');
            row_len += 1;
        }
        // A word wider than a whole row is cut at the row's end.
        while row_len + word.len() > width && width > row_len {
            let room = width - row_len;
            row.extend(&word[..room]);
            word.drain(..room);
            break_row(&mut row, &mut row_len, out);
        }
        row.extend(&word);
        row_len += word.len();
        fresh = false;
    }
    out.push_str(row.trim_end());
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

    #[test]
    fn prose_wraps_under_its_label() {
        let note = "health: load average (1 min): busy machine: other work competes for cores \
                    and caches; expect wider CIs";
        let wrapped = wrap_prose(note, Some(40));
        assert_eq!(
            wrapped.lines().collect::<Vec<_>>(),
            [
                "health: load average (1 min): busy",
                "        machine: other work competes for",
                "        cores and caches; expect wider",
                "        CIs",
            ]
        );
        // Short lines, and every line without a width, stay as they are.
        assert_eq!(wrap_prose("ok: run", Some(40)), "ok: run");
        assert_eq!(wrap_prose(note, None), note);
    }

    #[test]
    fn prose_without_a_short_label_hangs_two_columns_and_long_words_are_cut() {
        let line = "int_loop.hot on jit vs twin int_loop: slower: 1.43x, CI [1.41x, 1.47x]";
        let wrapped = wrap_prose(line, Some(30));
        assert_eq!(
            wrapped,
            "int_loop.hot on jit vs twin\n  int_loop: slower: 1.43x, CI\n  [1.41x, 1.47x]"
        );
        let path = format!("see {}", "x".repeat(25));
        let cut = wrap_prose(&path, Some(12));
        assert!(cut.lines().all(|l| l.chars().count() <= 12), "{cut}");
        assert_eq!(cut.replace(['\n', ' '], ""), path.replace(' ', ""));
        // An indented line keeps its indent, and its continuation hangs under it.
        assert_eq!(
            wrap_prose("    one two three four", Some(14)),
            "    one two\n      three\n      four"
        );
    }

    #[test]
    fn a_fitted_tables_notes_fit_too() {
        let mut t = Table::new("t", &["step", "verdict"]);
        t.push(vec!["slot read".into(), "slower".into()]);
        t.notes.push(
            "adds: median per-round difference from the row before in the same build (the \
             native row for a build's first step); vs native: ratio verdict with a ±2% band"
                .into(),
        );
        let text = render_text(&fit_table(&t, Some(50)));
        assert!(text.lines().all(|l| l.chars().count() <= 50), "{text}");
        // The note's continuation lines hang under the text after its label (`adds: `).
        let note: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("adds:"))
            .collect();
        assert!(note.len() > 1, "{text}");
        assert!(
            note[1..]
                .iter()
                .all(|l| l.starts_with("      ") && !l.starts_with("       ")),
            "{text}"
        );
        // Without a width (a pipe, an export) the note is one line, as before.
        assert!(render_text(&fit_table(&t, None)).contains("same build (the native"));
    }
}
