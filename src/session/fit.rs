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
/// Then the `total ns` column (each rung's `adds` says what it costs; the total is the sum).
const DROP_LAST: &[&str] = &["ok", "total ns"];

/// A cell of a ladder's `adds` column that resolved no cost starts with this; still too wide,
/// a table keeps what follows (`within ±0.27 ns`).
const NO_COST: &str = "no cost resolved: ";

/// A cell shortened, or `None` when the cut does not apply to it.
type CellCut = fn(&str) -> Option<String>;

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
    // Still too wide: a cell's trailing ` (…)` tag in a ladder's `adds` column goes
    // (`saves 0.27 ns [..] (layout effect)`); the notes under the table say the same at
    // length. Only there: elsewhere a tag tells rows apart (`main (jit)`, `main (jit-opt)`).
    // Then, if need be, the `no cost resolved: ` before a cell's `within ±0.27 ns`.
    let mut shortened = Vec::new();
    let cuts: [(&str, CellCut); 2] = [
        ("the (…) tags", |cell| {
            cell.rfind(" (")
                .filter(|&i| i > 0 && cell.ends_with(')'))
                .map(|i| cell[..i].to_string())
        }),
        ("`no cost resolved:`", |cell| {
            cell.strip_prefix(NO_COST).map(str::to_string)
        }),
    ];
    for (what, cut) in cuts {
        if width_of(&t) <= width {
            break;
        }
        let adds: Vec<usize> = t
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.name.starts_with("adds"))
            .map(|(i, _)| i)
            .collect();
        for r in &mut t.rows {
            for (i, cell) in r.iter_mut().enumerate() {
                if let Some(short) = cut(cell).filter(|_| adds.contains(&i)) {
                    *cell = short;
                    if !shortened.contains(&what) {
                        shortened.push(what);
                    }
                }
            }
        }
    }
    drop_until_fits(&mut t, DROP_LAST, width, &mut dropped);
    if !dropped.is_empty() || !shortened.is_empty() {
        let mut left = dropped.join(", ");
        if !shortened.is_empty() {
            if !left.is_empty() {
                left.push_str(", ");
            }
            left.push_str(&format!(
                "{} of cells (the notes explain them)",
                shortened.join(" and ")
            ));
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

/// `t` fitted to `width` by word-wrapping the cells of its column `name` (a title, a
/// description) onto rows of their own below, no narrower than `min` characters: the other
/// columns (names a reader types) stay whole, and no text is lost. Its title and notes wrap
/// to the width. Unchanged without a width.
pub fn wrap_column(t: &Table, name: &str, width: Option<usize>, min: usize) -> Table {
    let Some(width) = width else {
        return t.clone();
    };
    let mut t = t.clone();
    if let Some(i) = t.columns.iter().position(|c| c.name == name) {
        let over = width_of(&t).saturating_sub(width);
        let longest = t
            .rows
            .iter()
            .map(|r| r[i].chars().count())
            .chain([t.columns[i].name.chars().count()])
            .max()
            .unwrap_or(0);
        let room = longest.saturating_sub(over).max(min);
        let mut rows = Vec::new();
        for r in std::mem::take(&mut t.rows) {
            let wrapped = wrap_indented(&r[i], Some(room), 0);
            let mut lines = wrapped.lines();
            let mut first = r.clone();
            first[i] = lines.next().unwrap_or("").to_string();
            rows.push(first);
            for more in lines {
                let mut row = vec![String::new(); r.len()];
                row[i] = more.to_string();
                rows.push(row);
            }
        }
        t.rows = rows;
    }
    t.title = wrap_prose(&t.title, Some(width));
    for note in &mut t.notes {
        *note = wrap_prose(note, Some(width));
    }
    t
}

/// A line of an `:asm` listing split into its address, bytes and instruction
/// (`0000556a96000001  48 89 e5      mov rbp,rsp`).
fn asm_line(line: &str) -> Option<(&str, &str)> {
    let (address, rest) = line.split_once("  ")?;
    if address.len() != 16 || !address.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let (bytes, instruction) = rest.split_once("  ")?;
    let is_bytes = !bytes.is_empty()
        && bytes
            .split(' ')
            .all(|b| b.len() == 2 && b.chars().all(|c| c.is_ascii_hexdigit()));
    is_bytes.then_some((address, instruction.trim_start()))
}

/// A code listing (`:asm`, `:ir`) fitted to `width` columns: when a machine-code line is too
/// wide, every line drops its instruction bytes (a line at the end says so); a line still too
/// wide puts its trailing `; comment` on a line of its own under the instruction, and what is
/// still too wide wraps under its second column. Unchanged without a width, or when it fits.
pub fn fit_listing(text: &str, width: Option<usize>) -> String {
    let Some(width) = width else {
        return text.to_string();
    };
    let too_wide = |l: &str| l.chars().count() > width;
    if !text.lines().any(too_wide) {
        return text.to_string();
    }
    let drop_bytes = text.lines().any(|l| too_wide(l) && asm_line(l).is_some());
    let mut out = Vec::new();
    for line in text.lines() {
        let line = match asm_line(line).filter(|_| drop_bytes) {
            Some((address, instruction)) => format!("{address}  {instruction}"),
            None => line.to_string(),
        };
        let chars: Vec<char> = line.chars().collect();
        let split = line.rfind(" ; ").filter(|_| too_wide(&line)).map(|at| {
            (
                line[..at].trim_end().to_string(),
                line[at + 1..].to_string(),
            )
        });
        match split {
            Some((code, comment)) => {
                let under = second_column(&chars, width)
                    .or_else(|| chars.iter().position(|c| *c != ' '))
                    .unwrap_or(0);
                out.push(wrap_prose(&code, Some(width)));
                out.push(wrap_indented(
                    &format!("{}{comment}", " ".repeat(under)),
                    Some(width),
                    under + 2,
                ));
            }
            None => out.push(wrap_prose(&line, Some(width))),
        }
    }
    if drop_bytes {
        out.push(wrap_prose(
            &format!(
                "; (compact for a {width}-column terminal: instruction bytes left out; a wider \
                 terminal has them)"
            ),
            Some(width),
        ));
    }
    out.join("\n")
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
///
/// A line laid out in two columns (`  timer       TSC at 2.3 GHz`: a gap of two spaces or more
/// in the line's first half) goes on under its second column.
pub fn wrap_prose(text: &str, width: Option<usize>) -> String {
    wrap_lines(text, width, None)
}

/// `text` word-wrapped to `width` as [`wrap_prose`] does, but every continuation line is
/// indented by `indent` columns (a paragraph under a heading, not a labelled note).
pub fn wrap_indented(text: &str, width: Option<usize>, indent: usize) -> String {
    wrap_lines(text, width, Some(indent))
}

fn wrap_lines(text: &str, width: Option<usize>, indent: Option<usize>) -> String {
    let Some(width) = width else {
        return text.to_string();
    };
    let mut out = String::new();
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        wrap_line(line, width, indent, &mut out);
    }
    out
}

/// Where the second column of a two-column line starts: after the line's last gap of two
/// spaces or more that ends in its first half.
fn second_column(line: &[char], width: usize) -> Option<usize> {
    let start = line.iter().position(|c| *c != ' ')?;
    let mut found = None;
    let mut i = start;
    while i < line.len() && i <= width / 2 {
        if line[i] == ' ' {
            let gap = line[i..].iter().take_while(|c| **c == ' ').count();
            if gap >= 2 && i + gap <= width / 2 && i + gap < line.len() {
                found = Some(i + gap);
            }
            i += gap;
        } else {
            i += 1;
        }
    }
    found
}

fn wrap_line(line: &str, width: usize, forced: Option<usize>, out: &mut String) {
    let line = line.trim_end();
    if line.chars().count() <= width {
        out.push_str(line);
        return;
    }
    let text = line.trim_start();
    let own = &line[..line.len() - text.len()];
    let lead = own.chars().count();
    let chars: Vec<char> = line.chars().collect();
    let indent = match (forced, second_column(&chars, width), text.split_once(": ")) {
        (Some(indent), _, _) => indent,
        (None, Some(column), _) => column,
        (None, None, Some((label, _))) if label.chars().count() + 2 <= LABEL_MAX.min(width / 3) => {
            lead + label.chars().count() + 2
        }
        _ => lead + HANG,
    };
    // The first row keeps the line's own indent (and a two-column line its first column as
    // it is), the rest the hanging one.
    // With a forced indent, a line already laid out up to it (`  :run [fn]    call …`)
    // keeps that layout too.
    let column = match forced {
        Some(k) => Some(k).filter(|&k| k > lead && k < chars.len() && chars[k - 1] == ' '),
        None => second_column(&chars, width),
    };
    let (head, text): (String, String) = match column {
        Some(column) => (
            chars[..column].iter().collect(),
            chars[column..].iter().collect(),
        ),
        None => (own.to_string(), text.to_string()),
    };
    let mut row = head.clone();
    let mut row_len = head.chars().count();
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
    fn a_wrapped_column_keeps_the_names_whole_and_every_word() {
        let mut t = Table::new("cases", &["case", "title", "twin"]);
        t.push(vec![
            "fasta".into(),
            "fasta (ALU repeat, IUB and Homo sapiens random, 60-column lines)".into(),
            "fasta".into(),
        ]);
        t.push(vec!["nbody".into(), "n-body".into(), "nbody".into()]);
        assert_eq!(wrap_column(&t, "title", None, 10), t);
        let fit = wrap_column(&t, "title", Some(40), 10);
        let text = render_text(&fit);
        assert!(text.lines().all(|l| l.chars().count() <= 40), "{text}");
        // The first row's title goes on in rows with nothing else in them; words are whole.
        assert_eq!(fit.rows[0][0], "fasta");
        assert!(fit.rows.len() > 2, "{text}");
        let title: Vec<&str> = fit
            .rows
            .iter()
            .take_while(|r| r[0] == "fasta" || r[0].is_empty())
            .map(|r| r[1].as_str())
            .collect();
        assert_eq!(title.join(" "), t.rows[0][1]);
        assert_eq!(fit.rows.last().unwrap(), &t.rows[1]);
    }

    #[test]
    fn two_column_lines_go_on_under_their_second_column() {
        let line = "  timer                 TSC (lfence;rdtsc / rdtscp;lfence) at 2.300 GHz, \
                    precision 22.6 ns";
        let wrapped = wrap_prose(line, Some(60));
        let lines: Vec<&str> = wrapped.lines().collect();
        assert_eq!(
            lines[0],
            "  timer                 TSC (lfence;rdtsc / rdtscp;lfence)"
        );
        assert!(
            lines[1..]
                .iter()
                .all(|l| l.starts_with(&" ".repeat(24)) && !l.starts_with(&" ".repeat(25))),
            "{wrapped}"
        );
        // A forced indent instead: a paragraph under a heading.
        assert_eq!(
            wrap_indented("  one two three four", Some(10), 2),
            "  one two\n  three\n  four"
        );
    }

    #[test]
    fn a_listing_drops_its_bytes_then_moves_its_comments() {
        let asm = "; run — 14 bytes, 3 instructions\n\
                   0000556a96000004  48 b8 a0 82 44 9d 6a 55 00 00   mov rax,hot_sink\n\
                   0000556a96000011  ff d0                           call rax ; hot_sink";
        assert_eq!(fit_listing(asm, None), asm);
        assert_eq!(fit_listing(asm, Some(100)), asm);
        let fit = fit_listing(asm, Some(60));
        assert!(fit.lines().all(|l| l.chars().count() <= 60), "{fit}");
        assert!(fit.contains("0000556a96000004  mov rax,hot_sink"), "{fit}");
        assert!(
            fit.contains("0000556a96000011  call rax ; hot_sink"),
            "{fit}"
        );
        assert!(
            fit.replace("\n  ", " ")
                .ends_with("instruction bytes left out; a wider terminal has them)"),
            "{fit}"
        );
        let ir = "@016b                               brif v12, block6(v10, v11), \
                  block5(v10)  ; v10 = 1, v11 = 0";
        let fit = fit_listing(ir, Some(80));
        let lines: Vec<&str> = fit.lines().collect();
        assert_eq!(
            lines,
            [
                "@016b                               brif v12, block6(v10, v11), block5(v10)",
                "                                    ; v10 = 1, v11 = 0",
            ]
        );
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
