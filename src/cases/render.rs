//! The matrix as tables (text, Markdown, CSV through `export`), with the legend, and the
//! Markdown page with the machine, the method and the caveats.

use std::collections::BTreeSet;

use super::backend::{Backend, CellError};
use super::matrix::{BackendTable, Cell, Matrix};
use super::reload::ReloadKind;
use super::spec::Mode;
use crate::export::{Table, render_markdown};

/// Nanoseconds with three significant digits, as the seed's tables show them.
pub fn fmt_ns(ns: f64) -> String {
    if ns < 10.0 {
        format!("{ns:.2}")
    } else if ns < 100.0 {
        format!("{ns:.1}")
    } else {
        format!("{ns:.0}")
    }
}

/// A ratio: two decimals.
pub fn fmt_ratio(r: f64) -> String {
    format!("{r:.2}x")
}

fn cell_text(c: Option<&Cell>, native_only: bool, reasons: &mut BTreeSet<String>) -> String {
    if native_only {
        return "-".into();
    }
    let Some(c) = c else { return "n/a".into() };
    match (&c.error, c.ns) {
        (Some(CellError::Unavailable(why)), _) => {
            reasons.insert(why.clone());
            "n/a".into()
        }
        (Some(CellError::Failed(_)), _) => "error".into(),
        (None, Some(ns)) => {
            let mark = if c.mismatch { "!" } else { "" };
            match c.ratio {
                Some(r) => format!("{}{mark} ({})", fmt_ns(ns), fmt_ratio(r)),
                None => format!("{}{mark}", fmt_ns(ns)),
            }
        }
        (None, None) if c.mismatch => "!".into(),
        (None, None) => {
            reasons.insert(NO_SAMPLE.into());
            "n/a".into()
        }
    }
}

/// Why a cell that ran and matched its twin has no time.
pub const NO_SAMPLE: &str = "too few timed samples fit the budget (a slow cell, e.g. the \
    interpreter's host calls): give more --time";

/// The legend under every table.
pub const LEGEND: [&str; 5] = [
    "Time in ns per op (the case's unit); in parentheses the ratio to the native twin, the median of per-round ratios of one interleaved job.",
    "`!` after a time: the script's result differs from its twin's (bench exits 5).",
    "`n/a`: the cell has no value, for the reason given below the table.",
    "`-`: a native-only row, with no script.",
    "`error`: the script failed to load or raised an error; the message is printed on stderr and kept in the JSON.",
];

/// One backend's table.
pub fn backend_table(t: &BackendTable) -> Table {
    let mut table = Table::new(
        format!("backend {}", t.backend.name()),
        &["case", ">native", ">.hot", ">.clif"],
    );
    if let Some(why) = &t.unavailable {
        table.notes.push(format!("n/a: {why}"));
        return table;
    }
    let mut reasons = BTreeSet::new();
    for r in &t.rows {
        let native = r.native_ns.map_or("n/a".to_string(), fmt_ns);
        table.push(vec![
            r.title.clone(),
            native,
            cell_text(r.cells.get(&Mode::Hot), r.native_only, &mut reasons),
            cell_text(r.cells.get(&Mode::Clif), r.native_only, &mut reasons),
        ]);
    }
    for why in reasons {
        table.notes.push(format!("n/a: {why}"));
    }
    if t.backend == Backend::JitOpt {
        table.notes.push(JIT_OPT_CLASSES.into());
    }
    table
}

/// What `jit-opt`'s class rows measure.
pub const JIT_OPT_CLASSES: &str = "jit-opt's class rows run code for a fixed runtime: an object \
    is one allocation with its fields inline after the shell, handle checks (null, stale, \
    detached) are inline with a cold fault block, methods of a known class are direct calls and \
    virtual ones go through the class's constant slot table (its vtable); loops that call \
    nothing keep module variables in registers. jit-opt refuses reloads.";

/// The reload rows: the reload in µs per reload, the calls in ns per call (ratio to the twin).
pub fn reload_table(m: &Matrix) -> Table {
    let backends: Vec<Backend> = m.tables.iter().map(|t| t.backend).collect();
    let mut cols = vec!["reload".to_string(), ">native".to_string()];
    cols.extend(backends.iter().map(|b| format!(">{}", b.name())));
    let cols: Vec<&str> = cols.iter().map(String::as_str).collect();
    let mut t = Table::new("reload and the call after N reloads", &cols);
    let mut reasons = BTreeSet::new();
    for r in &m.reloads {
        let reload = r.kind == ReloadKind::Reload;
        let mut row = vec![
            if reload {
                format!("{} (µs)", r.title)
            } else {
                r.title.clone()
            },
            r.native_ns
                .map_or(if reload { "-" } else { "n/a" }.into(), fmt_ns),
        ];
        for b in &backends {
            let c = r.cells.get(b);
            row.push(match c {
                Some(c) if reload && c.error.is_none() => {
                    c.ns.map_or("n/a".into(), |ns| fmt_ns(ns / 1000.0))
                }
                _ => cell_text(c, false, &mut reasons),
            });
        }
        t.push(row);
    }
    for why in reasons {
        t.notes.push(format!("n/a: {why}"));
    }
    t.notes.push(
        "The reload is the runtime's time (quiesce, migrate every object, swap state and slots), \
         median of 2 x reps + 1 reloads that alternately add and remove a field; the compile of \
         each version (on object also its link and load) comes before it and is not in it. \
         The calls are Hook.call through a handle \
         on an object made before the first reload, beside the host_call twin."
            .into(),
    );
    t
}

fn us(d: Option<std::time::Duration>) -> String {
    d.map_or("-".into(), |d| format!("{:.0}", d.as_secs_f64() * 1e6))
}

/// The load section: µs per stage per case, mode and backend.
pub fn load_table(m: &Matrix) -> Table {
    let mut t = Table::new(
        "load (µs)",
        &[
            "case",
            "mode",
            "backend",
            ">lex+parse",
            ">check",
            ">lower",
            ">compile",
            ">load",
            ">total",
        ],
    );
    for l in &m.loads {
        let x = &l.times;
        t.push(vec![
            l.case.clone(),
            l.mode.label().into(),
            l.backend.name().into(),
            us(x.parse),
            us(x.check),
            us(x.lower),
            us(x.compile),
            us(x.load),
            us(Some(x.total)),
        ]);
    }
    t.notes.push(
        "lex+parse of a .clif is the check of its `%run` signature; load is the rest of the wall \
         time: finalizing code, unwind registration, the module initializer (interp: making \
         the interpreter)."
            .into(),
    );
    t
}

/// The groups the matrix's rows come from (`programs`), in row order.
fn groups(m: &Matrix) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for g in m
        .tables
        .iter()
        .flat_map(|t| &t.rows)
        .filter_map(|r| r.group.clone())
    {
        if !out.contains(&g) {
            out.push(g);
        }
    }
    out
}

/// The geometric mean of the ratios, `None` when there are none.
pub fn geometric_mean(ratios: &[f64]) -> Option<f64> {
    let logs: Vec<f64> = ratios
        .iter()
        .filter(|r| r.is_finite() && **r > 0.0)
        .map(|r| r.ln())
        .collect();
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

/// A group's summary (the program suite): one row per case with its `.hot` ratio to the twin
/// on each backend, then the geometric mean per backend, over the cases with a ratio.
pub fn group_table(m: &Matrix, group: &str) -> Table {
    let backends: Vec<&BackendTable> = m
        .tables
        .iter()
        .filter(|t| t.unavailable.is_none())
        .collect();
    let mut cols = vec!["program".to_string(), "unit".to_string()];
    cols.extend(backends.iter().map(|t| format!(">{}", t.backend.name())));
    let cols: Vec<&str> = cols.iter().map(String::as_str).collect();
    let mut t = Table::new(format!("{group}: ratio to the native twin"), &cols);
    let mut names: Vec<(&str, &str, &str)> = Vec::new();
    for r in backends.iter().flat_map(|t| &t.rows) {
        if r.group.as_deref() == Some(group) && !names.iter().any(|(c, _, _)| *c == r.case) {
            names.push((&r.case, &r.title, &r.unit));
        }
    }
    let mut per_backend: Vec<Vec<f64>> = vec![Vec::new(); backends.len()];
    let mut reasons = BTreeSet::new();
    for (case, title, unit) in &names {
        let mut row = vec![title.to_string(), unit.to_string()];
        for (k, bt) in backends.iter().enumerate() {
            let r = bt.rows.iter().find(|r| r.case == *case);
            let c = r.and_then(|r| r.cells.get(&Mode::Hot));
            row.push(match c {
                Some(Cell {
                    error: None,
                    ratio: Some(ratio),
                    mismatch,
                    ..
                }) => {
                    per_backend[k].push(*ratio);
                    format!("{}{}", fmt_ratio(*ratio), if *mismatch { "!" } else { "" })
                }
                // A time without a ratio, or no time: the backend table has the time.
                Some(Cell {
                    error: None,
                    mismatch: true,
                    ..
                }) => "!".into(),
                Some(Cell { error: None, .. }) => {
                    reasons.insert(NO_SAMPLE.into());
                    "n/a".into()
                }
                _ => cell_text(c, false, &mut reasons),
            });
        }
        t.push(row);
    }
    let mut mean = vec!["geometric mean".to_string(), String::new()];
    mean.extend(
        per_backend
            .iter()
            .map(|v| geometric_mean(v).map_or("n/a".into(), fmt_ratio)),
    );
    t.push(mean);
    for why in reasons {
        t.notes.push(format!("n/a: {why}"));
    }
    t.notes.push(format!(
        "The {group} rows of the backend tables above, as ratios (script time / twin time, \
         measured interleaved); the geometric mean is over the rows with a ratio."
    ));
    t
}

/// Every table of the matrix, in order: backends, groups' summaries, reloads, load section.
pub fn tables(m: &Matrix) -> Vec<Table> {
    // With a filter that only matched the reload rows, the backend tables have no rows.
    let mut out: Vec<Table> = m
        .tables
        .iter()
        .filter(|t| !t.rows.is_empty() || t.unavailable.is_some() || m.reloads.is_empty())
        .map(backend_table)
        .collect();
    for g in groups(m) {
        out.push(group_table(m, &g));
    }
    if !m.reloads.is_empty() {
        out.push(reload_table(m));
    }
    if !m.loads.is_empty() {
        out.push(load_table(m));
    }
    out
}

/// The text a run prints: tables, then the legend and the settings.
pub fn text(m: &Matrix) -> String {
    let mut s = String::new();
    for t in tables(m) {
        s.push_str(&crate::export::render_text(&t));
        s.push('\n');
    }
    for l in LEGEND {
        s.push_str(l);
        s.push('\n');
    }
    s.push_str(&settings_line(m));
    s.push('\n');
    s
}

fn settings_line(m: &Matrix) -> String {
    format!(
        "Each cell: median of {} timed runs of {} s (interleaved with the twin); results checked with n = {}; whole matrix {:.1} s.",
        m.reps, m.time, m.iters, m.elapsed
    )
}

/// One CSV for the whole matrix: a row per case, mode and backend.
pub fn csv(m: &Matrix) -> String {
    let mut t = Table::new(
        "",
        &[
            "backend",
            "case",
            "title",
            "unit",
            "native_ns",
            "mode",
            "ns",
            "ratio",
            "mark",
            "reason",
        ],
    );
    for bt in &m.tables {
        for r in &bt.rows {
            for mode in [Mode::Hot, Mode::Clif] {
                let c = r.cells.get(&mode);
                let (mark, reason) = match (r.native_only, c) {
                    (true, _) => ("-".to_string(), String::new()),
                    (false, Some(c)) => mark_and_reason(c),
                    (false, None) => ("n/a".into(), String::new()),
                };
                let ns = c
                    .and_then(|c| c.ns)
                    .map_or(String::new(), |v| format!("{v:.4}"));
                let ratio = c
                    .and_then(|c| c.ratio)
                    .map_or(String::new(), |v| format!("{v:.4}"));
                t.push(vec![
                    bt.backend.name().into(),
                    r.case.clone(),
                    r.title.clone(),
                    r.unit.clone(),
                    r.native_ns.map_or(String::new(), |v| format!("{v:.4}")),
                    mode.label().into(),
                    ns,
                    ratio,
                    mark,
                    reason,
                ]);
            }
        }
        if let Some(why) = &bt.unavailable {
            t.push(vec![
                bt.backend.name().into(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                "n/a".into(),
                why.clone(),
            ]);
        }
    }
    for r in &m.reloads {
        let name = match r.kind {
            ReloadKind::Reload => "reload".to_string(),
            ReloadKind::CallAfter(n) => format!("call_after_{n}_reloads"),
        };
        for (b, c) in &r.cells {
            let (mark, reason) = mark_and_reason(c);
            t.push(vec![
                b.name().into(),
                name.clone(),
                r.title.clone(),
                r.unit.clone(),
                r.native_ns.map_or(String::new(), |v| format!("{v:.4}")),
                ".hot".into(),
                c.ns.map_or(String::new(), |v| format!("{v:.4}")),
                c.ratio.map_or(String::new(), |v| format!("{v:.4}")),
                mark,
                reason,
            ]);
        }
    }
    crate::export::render_csv(&t)
}

fn mark_and_reason(c: &Cell) -> (String, String) {
    match &c.error {
        Some(CellError::Unavailable(w)) => ("n/a".into(), w.clone()),
        Some(CellError::Failed(e)) => ("error".into(), e.clone()),
        None if c.mismatch => ("!".into(), "result differs from the twin".into()),
        None => (String::new(), String::new()),
    }
}

/// The machine, as `docs/results.md` describes it.
pub fn machine() -> Vec<String> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split(':').nth(1))
        })
        .map_or("unknown CPU".to_string(), |s| s.trim().to_string());
    let cpus = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let virt = if cpuinfo.contains(" hypervisor") {
        ", a virtual machine"
    } else {
        ""
    };
    let kernel = read("/proc/sys/kernel/osrelease");
    vec![
        format!("CPU: {model}, {cpus} logical CPUs{virt}."),
        format!("Kernel: Linux {}.", kernel.trim()),
        format!(
            "hotlab {} built with Rust ({} profile); Cranelift 0.135.",
            env!("CARGO_PKG_VERSION"),
            if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
        ),
    ]
}

/// The caveats of the Markdown page.
pub const CAVEATS: [&str; 7] = [
    "The cases are small loops: a real program also pays for cache misses, code size and calls between modules.",
    "A twin is only as fair as its code. Both sides hide values the same way (the script's `sink` is the twin's `hot_sink`), but LLVM may still unroll or vectorize a twin's loop where Cranelift does not; that is native speed, and the ratio shows it.",
    "The `.hot` array case runs with checks on, but its indexes are masked (`i & 255` on a 256-array), which proves them in range: the lowering drops those checks on every Cranelift backend, as LLVM drops the twin's; an unmasked index keeps its check.",
    "Two functions with the same body can differ by about 6% from code alignment alone: read differences under 10% in one row as noise unless they repeat across runs.",
    "The two-thread rows spawn a thread per sample (amortized over 2 ms samples) and pin it to another CPU; on a machine with one free CPU they measure contention with whatever else runs.",
    "Class rows on jit-opt run the fixed layout (fields inline in the shell, inline handle checks, direct calls, constant vtables; docs/backends.md); handles are still checked and counted, so rows that copy handles pay for that. jit-opt does not reload: its reload cells are n/a (docs/cases.md).",
    "One machine, shared with other work while measuring: run `hotlab bench` again on yours.",
];

/// The Markdown page: settings, machine, tables, legend, caveats.
pub fn markdown(m: &Matrix) -> String {
    let mut s = String::from("## Results\n\n");
    s.push_str("Generated by `hotlab bench --markdown FILE`.\n\n");
    s.push_str("### Machine\n\n");
    for l in machine() {
        s.push_str(&format!("- {l}\n"));
    }
    s.push_str("\n### Method\n\n");
    s.push_str(&settings_line(m));
    s.push_str(
        " A timed run is one job of the measurement engine: the twin and the scripts of the row \
         run in interleaved rounds with a shared iteration count, pinned to one CPU; the time is \
         the median per op, the ratio the median of per-round ratios.\n\n",
    );
    for t in tables(m) {
        s.push_str(&render_markdown(&t));
        s.push('\n');
    }
    s.push_str("### Legend\n\n");
    for l in LEGEND {
        s.push_str(&format!("- {l}\n"));
    }
    s.push_str("\n### Caveats\n\n");
    for l in CAVEATS {
        s.push_str(&format!("- {l}\n"));
    }
    s
}
