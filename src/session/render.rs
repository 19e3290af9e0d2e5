//! Results as tables (for the terminal, Markdown and CSV) and as text with the verdict and the
//! histograms. JSON exports use the results' own serde form instead.

use super::JobRecord;
use super::results::{JobFailed, JobReport, MeasuredRow, Measurement, ReloadReport};
use crate::export::{Table, render_text};

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_string(), |x| format!("{x:.digits$}"))
}

fn pct(row: &MeasuredRow, q: f64) -> String {
    let v = row
        .percentiles
        .iter()
        .find(|p| (p.q - q).abs() < 1e-9)
        .map(|p| p.ns);
    num(v, 2)
}

/// The rows of a measurement, with the ratio against the first row and its CI.
pub fn measured_table(m: &Measurement, title: &str) -> Table {
    let mut t = Table::new(
        title,
        &[
            "variant", ">ns/op", ">mad", ">p10", ">p90", ">cycles", ">ratio", ">CI", "verdict",
        ],
    );
    for (i, row) in m.rows.iter().enumerate() {
        let cmp = (i > 0)
            .then(|| m.comparisons.iter().find(|c| c.b == row.name))
            .flatten();
        let (ratio, ci, verdict) = match cmp {
            Some(c) => (
                c.ratio.map_or_else(|| "-".into(), |r| format!("{r:.3}x")),
                match (c.low, c.high) {
                    (Some(l), Some(h)) => format!("{l:.3}..{h:.3}"),
                    _ => String::new(),
                },
                c.verdict.clone(),
            ),
            None if i == 0 => ("1.000x".into(), String::new(), "baseline".into()),
            None => ("-".into(), String::new(), "-".into()),
        };
        let mut name = row.name.clone();
        if row.unstable {
            name.push_str(" ~");
        }
        t.push(vec![
            name,
            num(row.median_ns, 3),
            num(row.mad_ns, 3),
            pct(row, 0.1),
            pct(row, 0.9),
            num(row.cycles_est, 1),
            ratio,
            ci,
            verdict,
        ]);
    }
    t.notes.push(format!(
        "{} rounds of {} iterations, {:.2} s, {}; timer {}{}",
        m.rounds,
        m.iters,
        m.elapsed_s,
        match m.stopped.as_str() {
            "cancelled" => "stopped (Ctrl-C): the rows so far".to_string(),
            "budget" => "within the time budget".to_string(),
            other => format!("ended by {other}"),
        },
        m.timer,
        m.cpu.map_or_else(String::new, |c| format!(", CPU {c}"))
    ));
    if m.rows.iter().any(|r| r.unstable) {
        t.notes
            .push("~ unstable: the spread is above a few percent of the median".into());
    }
    if let Some(note) = &m.pin_note {
        t.notes.push(note.clone());
    }
    if let Some(why) = &m.no_counters {
        // The reason usually starts with the same words; say them once.
        let why = why.strip_prefix("no hardware counters: ").unwrap_or(why);
        t.notes.push(format!("no hardware counters: {why}"));
    }
    t
}

/// The table as text, then each verdict's sentence (wrapped to `width` columns, when the front
/// end has a width), then each row's histogram (its bars narrowed to the width).
pub fn measured_text(m: &Measurement, table: &Table, width: Option<usize>) -> String {
    let mut out = render_text(table);
    for c in &m.comparisons {
        let sentence = format!("{}: {}", c.b, c.explanation);
        out.push_str(&format!("\n{}\n", super::fit::wrap_prose(&sentence, width)));
    }
    for row in &m.rows {
        if !row.histogram.is_empty() {
            out.push_str(&format!("\n{} (ns/op)\n", row.name));
            // Its bars narrowed to the front end's width, when it has one.
            let lines = match width {
                Some(w) => crate::measure::histogram::fit_lines(&row.histogram, w),
                None => row.histogram.clone(),
            };
            for l in &lines {
                out.push_str(l);
                out.push('\n');
            }
        }
    }
    out.trim_end().to_string()
}

/// Any result as a table (for Markdown and CSV exports).
pub fn record_table(r: &JobRecord) -> Table {
    match &r.output {
        JobReport::Measured(m) => measured_table(m, &r.command),
        JobReport::Ran { value, micros } => {
            let mut t = Table::new(&r.command, &["snippet", "backend", "value", ">µs"]);
            t.push(vec![
                r.snippets.join(", "),
                r.backend.name().into(),
                value.clone(),
                format!("{micros:.1}"),
            ]);
            t
        }
        JobReport::Compiled { functions } => {
            let mut t = Table::new(
                &r.command,
                &[
                    "function",
                    ">bytes",
                    ">instructions",
                    ">lower µs",
                    ">compile µs",
                ],
            );
            for f in functions {
                t.push(vec![
                    f.name.clone(),
                    f.bytes.to_string(),
                    f.instructions.to_string(),
                    format!("{:.1}", f.lower_us),
                    format!("{:.1}", f.compile_us),
                ]);
            }
            t
        }
        JobReport::Asm { listings } => {
            let mut t = Table::new(&r.command, &["function", ">bytes", ">instructions"]);
            for l in listings {
                t.push(vec![
                    l.name.clone(),
                    l.bytes.to_string(),
                    l.instructions.to_string(),
                ]);
            }
            t
        }
        JobReport::Doctor { text, all_met } => {
            let mut t = Table::new(&r.command, &["all self-checks met"]);
            t.push(vec![all_met.to_string()]);
            t.notes = text.lines().map(str::to_string).collect();
            t
        }
        JobReport::Ladder(l) => {
            let mut t = l.table.clone();
            t.title = format!("{} ({} around {})", r.command, t.title, l.method);
            t
        }
        JobReport::Checked(a) => {
            let mut t = Table::new(
                &r.command,
                &[
                    "script",
                    "against",
                    "backend",
                    ">ratio",
                    ">CI",
                    "verdict",
                    ">ns/op",
                    ">other ns/op",
                    "results",
                ],
            );
            t.push(vec![
                a.file.clone(),
                a.against.clone(),
                a.backend.clone(),
                format!("{:.3}x", a.ratio),
                format!("{:.3}..{:.3}", a.low, a.high),
                a.verdict.to_string(),
                num(a.ns, 3),
                num(a.other_ns, 3),
                if a.results_equal {
                    format!("equal ({})", a.result)
                } else {
                    format!("DIFFER ({} vs {})", a.result, a.other_result)
                },
            ]);
            t.notes.push(a.explanation.clone());
            t
        }
        JobReport::Bench(b) => {
            let mut t = Table::new(&r.command, &[">problems"]);
            t.push(vec![b.problems.to_string()]);
            t.notes = b.text.lines().map(str::to_string).collect();
            t
        }
        JobReport::Reloaded(x) => {
            let mut t = Table::new(
                &r.command,
                &[
                    "class",
                    ">version",
                    ">migrated",
                    "kept",
                    "added",
                    "removed",
                    "retyped",
                    "reset",
                ],
            );
            for c in x.classes.iter().filter(|c| c.unloaded) {
                t.notes.push(format!(
                    "class {} unloaded (not in the new version): {} object(s) destroyed",
                    c.class, c.migrated
                ));
            }
            for c in x.classes.iter().filter(|c| !c.unloaded) {
                t.push(vec![
                    c.class.clone(),
                    c.version.to_string(),
                    c.migrated.to_string(),
                    c.kept.join(" "),
                    c.added.join(" "),
                    c.removed.join(" "),
                    c.retyped.join(" "),
                    c.reset.join(" "),
                ]);
            }
            if let Some(v) = &x.after_reload {
                t.notes.push(format!("after_reload = {v}"));
            }
            t
        }
        JobReport::RanFile(x) => {
            let mut t = Table::new(&r.command, &["snippet", "backend", "value"]);
            t.push(vec![
                r.snippets.join(", "),
                r.backend.name().into(),
                x.value.clone(),
            ]);
            t
        }
        JobReport::LadderCode { steps } => {
            let mut t = Table::new(&r.command, &["step", "layer", "row", ">instructions"]);
            for s in steps {
                t.push(vec![
                    s.title.clone(),
                    s.layer.clone(),
                    s.label.clone(),
                    s.instructions.to_string(),
                ]);
            }
            t
        }
    }
}

/// One line: `reload NAME: class C v2: 1 object(s) migrated; kept [..] added [..] ...`.
/// ` reset [..]` follows only when a field held closures; a class the version dropped says it
/// was unloaded.
fn class_line(c: &ReloadReport, name: &str) -> String {
    if c.unloaded {
        return format!(
            "reload {name}: class {} unloaded (not in the new version): {} object(s) destroyed",
            c.class, c.migrated
        );
    }
    let mut line = format!(
        "reload {name}: class {} v{}: {} object(s) migrated; kept [{}] added [{}] removed \
         [{}] retyped [{}]",
        c.class,
        c.version,
        c.migrated,
        c.kept.join(", "),
        c.added.join(", "),
        c.removed.join(", "),
        c.retyped.join(", ")
    );
    if !c.reset.is_empty() {
        line.push_str(&format!(" reset [{}]", c.reset.join(", ")));
    }
    line
}

/// What a reload of source `name` did to its classes, one line each: every class reloaded
/// (see `class_line`), then `reload NAME: class C defined` for each new class. `hotlab
/// run --reload` and the session's `:reload` print these.
pub fn class_lines(name: &str, classes: &[ReloadReport], defined: &[String]) -> Vec<String> {
    let reloaded = classes.iter().map(|c| class_line(c, name));
    let new = defined
        .iter()
        .map(|c| format!("reload {name}: class {c} defined"));
    reloaded.chain(new).collect()
}

/// A failed job's text: what an applied reload did to the classes first, then the message.
impl std::fmt::Display for JobFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(a) = &self.applied {
            for line in class_lines(&a.snippet, &a.classes, &a.defined) {
                writeln!(f, "{line}")?;
            }
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for JobFailed {}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::results::{AppliedReload, FailureCause};
    use super::*;

    fn failed(applied: Option<AppliedReload>) -> JobFailed {
        JobFailed {
            cause: FailureCause::Script,
            message: "error: boom\n(the reload was applied; after_reload raised)".into(),
            location: None,
            applied: applied.map(Box::new),
        }
    }

    #[test]
    fn a_failure_after_an_applied_reload_says_what_it_did_first() {
        assert_eq!(
            failed(None).to_string(),
            "error: boom\n(the reload was applied; after_reload raised)"
        );
        let applied = AppliedReload {
            snippet: "a.hot".into(),
            classes: vec![ReloadReport {
                class: "C".into(),
                version: 2,
                migrated: 1,
                kept: vec!["n".into()],
                added: vec![],
                removed: vec![],
                retyped: vec![],
                reset: vec![],
                unloaded: false,
                waited: Duration::ZERO,
                total: Duration::ZERO,
            }],
            defined: vec!["D".into()],
        };
        assert_eq!(
            failed(Some(applied)).to_string(),
            "reload a.hot: class C v2: 1 object(s) migrated; kept [n] added [] removed [] \
             retyped []\nreload a.hot: class D defined\nerror: boom\n(the reload was applied; \
             after_reload raised)"
        );
    }
}
