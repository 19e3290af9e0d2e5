//! What the panes show, as plain data: the table's rows (from a comparison, a measured ladder, a
//! live snapshot, or a ladder's plan before it is measured), each row's histogram, counters and
//! machine code. Made from the session's results; tests make them from fixed data.

use crate::cases::check::CheckAnswer;
use crate::ladder::Ladder;
use crate::ladder::report::{Report, Saving};
use crate::session::{
    FunctionListing, HistogramBucket, LiveSnapshot, Measurement, Quantile, RowDistribution,
};

/// What a verdict means, for colouring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meaning {
    /// The reference row.
    Baseline,
    /// Equal within the band.
    Equal,
    /// Slower (a cost).
    Slower,
    /// Faster (a saving).
    Faster,
    /// The data cannot tell.
    Unresolved,
}

impl Meaning {
    /// From a verdict's name (`equal`, `slower`, ...).
    pub fn of(verdict: &str) -> Meaning {
        match verdict {
            "equal" => Meaning::Equal,
            "slower" => Meaning::Slower,
            "faster" => Meaning::Faster,
            "baseline" => Meaning::Baseline,
            _ => Meaning::Unresolved,
        }
    }
}

/// What a row adds over the row before it: ns with the CI of the difference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Adds {
    /// Median difference, ns per op.
    pub ns: f64,
    /// CI low.
    pub low: f64,
    /// CI high.
    pub high: f64,
}

impl Adds {
    /// Resolved above zero, below zero, or neither.
    pub fn meaning(&self) -> Meaning {
        if self.low > 0.0 {
            Meaning::Slower
        } else if self.high < 0.0 {
            Meaning::Faster
        } else {
            Meaning::Unresolved
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TableRow {
    /// The label (`jit slot read`, `sum.hot (jit)`).
    pub label: String,
    /// The ladder step's title (ladder rows), to find its machine code.
    pub step: Option<String>,
    /// The layer (ladder rows).
    pub layer: Option<String>,
    /// `jit`, `aot`, or none (native, or not a ladder).
    pub build: Option<String>,
    /// Left out by the layer choice (a plan row).
    pub disabled: bool,
    /// Median ns per op.
    pub total_ns: Option<f64>,
    /// What it adds over the row before.
    pub adds: Option<Adds>,
    /// Ratio to the first row, and its CI.
    pub ratio: Option<(f64, Option<(f64, f64)>)>,
    /// The verdict against the first row.
    pub verdict: Option<String>,
    /// Samples kept, and dropped as disturbed.
    pub samples: (usize, usize),
    /// Whether its result equals the first row's (`!` when not).
    pub ok: bool,
    /// Histogram percentiles.
    pub percentiles: Vec<Quantile>,
    /// Histogram counts.
    pub buckets: Vec<HistogramBucket>,
    /// Hardware counters per op (the engine's JSON form).
    pub counters: Option<serde_json::Value>,
    /// Estimated core cycles per op.
    pub cycles: Option<f64>,
    /// Instructions of the row's code (static count).
    pub instructions: Option<usize>,
    /// Instructions one op executes, counted by single-stepping (a ladder row's).
    pub executed: Option<f64>,
    /// Why it costs less than the row before (a finished ladder's rows).
    pub why: Option<Saving>,
    /// The snippet the row ran (a comparison's or a check's row), to find its machine code.
    pub snippet: Option<String>,
    /// The backend the row ran on (a comparison's or a check's row).
    pub backend: Option<String>,
}

/// The native twin a row measures (`twin int_loop`, a bench's `twin int_loop (jit)`).
pub fn twin_of(row: &TableRow) -> Option<&str> {
    if row.snippet.is_some() {
        return None;
    }
    let name = row.label.strip_prefix("twin ")?;
    Some(match name.rsplit_once(" (") {
        Some((n, backend)) if backend.ends_with(')') => n,
        _ => name,
    })
}

/// A comparison row's label `sum.hot (jit)` (or `sum.hot (jit) [B]`): the snippet and the
/// backend.
pub fn snippet_backend(label: &str) -> Option<(String, String)> {
    let l = label.strip_suffix(" [B]").unwrap_or(label);
    let (name, rest) = l.rsplit_once(" (")?;
    let backend = rest.strip_suffix(')')?;
    crate::session::Backend::from_name(backend)?;
    Some((name.to_string(), backend.to_string()))
}

/// Where the table's numbers come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableState {
    /// A ladder's steps, not measured yet.
    Plan,
    /// A job is measuring: numbers are running values.
    Live,
    /// A finished result.
    Done,
}

/// The table pane's content.
#[derive(Debug, Clone, PartialEq)]
pub struct TableModel {
    /// The title (`ladder host_call`, `:compare interp`).
    pub title: String,
    /// Plan, live or done.
    pub state: TableState,
    /// The rows.
    pub rows: Vec<TableRow>,
    /// One line under the table: rounds, time, how it stopped.
    pub note: String,
    /// Why there are no hardware counters, if there are none.
    pub no_counters: Option<String>,
    /// Timer kind (`tsc`, `os_clock`).
    pub timer: Option<String>,
    /// The equivalence band.
    pub band: Option<f64>,
    /// Measuring progress in [0, 1] while live.
    pub progress: Option<f64>,
    /// The job was stopped (Esc) before its budget: the rows hold what it had.
    pub stopped: bool,
}

impl TableModel {
    /// A ladder's steps before measuring: one row per step of each build, with the layers left
    /// out by `enabled` marked.
    pub fn plan(ladder: &Ladder, enabled: &[bool], builds: &[&str]) -> TableModel {
        let mut rows = Vec::new();
        for (i, step) in ladder.steps.iter().enumerate() {
            let disabled = !enabled.get(i).copied().unwrap_or(true);
            if i == 0 {
                rows.push(TableRow {
                    label: step.title.clone(),
                    step: Some(step.title.clone()),
                    layer: Some(step.layer.to_string()),
                    ok: true,
                    ..TableRow::default()
                });
                continue;
            }
            for b in builds {
                rows.push(TableRow {
                    label: format!("{b} {}", step.title),
                    step: Some(step.title.clone()),
                    layer: Some(step.layer.to_string()),
                    build: Some(b.to_string()),
                    disabled,
                    ok: true,
                    ..TableRow::default()
                });
            }
        }
        TableModel {
            title: format!("ladder {}", ladder.name),
            state: TableState::Plan,
            rows,
            note: "not measured yet: F5 measures".into(),
            no_counters: None,
            timer: None,
            band: None,
            progress: None,
            stopped: false,
        }
    }

    /// A finished measurement (a comparison, or a ladder measured as rows): ratio and verdict
    /// against the first row, and what each row adds over the row before it, when the result
    /// has those comparisons.
    pub fn from_measured(m: &Measurement, title: &str) -> TableModel {
        let first = m.rows.first().map(|r| r.name.as_str()).unwrap_or("");
        let checksum0 = m.rows.first().and_then(|r| r.checksum);
        let rows = m
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let vs_first = m.comparisons.iter().find(|c| c.a == first && c.b == r.name);
                let prev = i.checked_sub(1).map(|p| m.rows[p].name.as_str());
                let vs_prev =
                    prev.and_then(|p| m.comparisons.iter().find(|c| c.a == p && c.b == r.name));
                let ok = match (checksum0, r.checksum) {
                    (Some((n0, c0)), Some((n, c))) => {
                        u128::from(c0) * u128::from(n) == u128::from(c) * u128::from(n0)
                    }
                    _ => true,
                };
                let (snippet, backend) = snippet_backend(&r.name).unzip();
                TableRow {
                    label: r.name.clone(),
                    snippet,
                    backend,
                    total_ns: r.median_ns,
                    adds: vs_prev.and_then(|c| c.diff_ns).map(|(ns, low, high)| Adds {
                        ns,
                        low,
                        high,
                    }),
                    ratio: if i == 0 {
                        Some((1.0, None))
                    } else {
                        vs_first.and_then(|c| c.ratio.map(|x| (x, c.low.zip(c.high))))
                    },
                    verdict: if i == 0 {
                        Some("baseline".into())
                    } else {
                        vs_first.map(|c| c.verdict.clone())
                    },
                    samples: (r.samples, r.dropped),
                    ok,
                    percentiles: r.percentiles.clone(),
                    buckets: r.buckets.clone(),
                    counters: r.counters.clone(),
                    cycles: r.cycles_est,
                    ..TableRow::default()
                }
            })
            .collect();
        TableModel {
            title: title.to_string(),
            state: TableState::Done,
            rows,
            note: format!(
                "{} rounds of {} iterations, {:.2} s, {}{}",
                m.rounds,
                m.iters,
                m.elapsed_s,
                match m.stopped.as_str() {
                    "cancelled" => "stopped (Esc): what it had".to_string(),
                    "budget" => "within the time budget".to_string(),
                    other => format!("ended by {other}"),
                },
                m.cpu.map_or_else(String::new, |c| format!(", CPU {c}"))
            ),
            no_counters: m.no_counters.clone(),
            timer: Some(m.timer.clone()),
            band: m.comparisons.first().map(|c| c.band),
            progress: None,
            stopped: m.stopped == "cancelled",
        }
    }

    /// A check's answer: the other side (the twin or the other snippet) first, as the ratio's
    /// baseline, then the snippet with the ratio, its CI and the verdict.
    pub fn from_check(a: &CheckAnswer, title: &str) -> TableModel {
        let verdict = serde_json::to_value(a.verdict)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| format!("{:?}", a.verdict).to_lowercase());
        let other_snippet = a.against.strip_prefix("twin ").is_none();
        let rows = vec![
            TableRow {
                label: if other_snippet {
                    format!("{} ({})", a.against, a.backend)
                } else {
                    a.against.clone()
                },
                snippet: other_snippet.then(|| a.against.clone()),
                backend: other_snippet.then(|| a.backend.clone()),
                total_ns: a.other_ns,
                ratio: Some((1.0, None)),
                verdict: Some("baseline".into()),
                ok: true,
                ..TableRow::default()
            },
            TableRow {
                label: format!("{} ({})", a.file, a.backend),
                snippet: Some(a.file.clone()),
                backend: Some(a.backend.clone()),
                total_ns: a.ns,
                adds: a.ns.zip(a.other_ns).map(|(x, o)| Adds {
                    ns: x - o,
                    low: o * a.low - o,
                    high: o * a.high - o,
                }),
                ratio: Some((a.ratio, Some((a.low, a.high)))),
                verdict: Some(verdict),
                ok: a.results_equal,
                ..TableRow::default()
            },
        ];
        TableModel {
            title: title.to_string(),
            state: TableState::Done,
            rows,
            note: format!(
                "results {} (n = {}: {} vs {})",
                if a.results_equal { "equal" } else { "DIFFER" },
                a.n,
                a.result,
                a.other_result
            ),
            no_counters: None,
            timer: None,
            band: Some(a.band),
            progress: None,
            stopped: false,
        }
    }

    /// Give the rows the distributions a job's record kept from its last live snapshot (by
    /// label; a check's live rows are named by file, matched by their start), where a row has
    /// none of its own.
    pub fn apply_distributions(&mut self, kept: &[RowDistribution]) {
        for row in &mut self.rows {
            if !row.buckets.is_empty() || !row.percentiles.is_empty() {
                continue;
            }
            let found = kept.iter().find(|d| d.name == row.label).or_else(|| {
                kept.iter().find(|d| {
                    row.label.starts_with(&format!("{} (", d.name))
                        || d.name
                            .strip_prefix("twin ")
                            .is_some_and(|t| row.label.ends_with(t))
                        || row.label == format!("twin {}", d.name)
                })
            });
            if let Some(d) = found {
                row.buckets = d.buckets();
                row.percentiles = d.percentiles();
                if row.samples.0 == 0 {
                    row.samples = (d.samples, d.dropped);
                }
                if row.total_ns.is_none() {
                    row.total_ns = d.median_ns;
                }
            }
        }
    }

    /// A finished `:bench` (the case matrix in its JSON form, `BenchResult::json`): per
    /// backend, each case's twin and then its script cells, each cell's ratio against the twin
    /// of its own interleaved job. `None` if `v` is not a matrix.
    pub fn from_bench_json(v: &serde_json::Value, title: &str) -> Option<TableModel> {
        let m: BenchJson = serde_json::from_value(v.clone()).ok()?;
        let mut rows = Vec::new();
        let mut cells = 0;
        for table in m.tables.iter().filter(|t| t.unavailable.is_none()) {
            for r in &table.rows {
                rows.push(TableRow {
                    label: format!("twin {} ({})", r.twin, table.backend),
                    total_ns: r.native_ns,
                    ratio: Some((1.0, None)),
                    verdict: Some("baseline".into()),
                    ok: true,
                    ..TableRow::default()
                });
                for (mode, c) in &r.cells {
                    cells += 1;
                    let snippet = format!("{}.{mode}", r.case);
                    rows.push(TableRow {
                        label: format!("{snippet} ({})", table.backend),
                        snippet: Some(snippet),
                        backend: Some(table.backend.clone()),
                        total_ns: c.ns,
                        ratio: c.ratio.map(|x| (x, None)),
                        verdict: c.error.as_ref().map(|e| {
                            match e.get("kind").and_then(|k| k.as_str()) {
                                Some("unavailable") => "n/a".to_string(),
                                _ => "error".to_string(),
                            }
                        }),
                        ok: !c.mismatch,
                        ..TableRow::default()
                    });
                }
            }
        }
        Some(TableModel {
            title: title.to_string(),
            state: TableState::Done,
            rows,
            note: format!(
                "{cells} cell(s), each the median of {} run(s) of {} s against its twin, {:.1} \
                 s in all; bench keeps medians, no histograms (:check or :compare measure one \
                 with its distribution)",
                m.reps, m.time, m.elapsed
            ),
            no_counters: None,
            timer: None,
            band: None,
            progress: None,
            stopped: false,
        })
    }

    /// A measured ladder report (`crate::ladder::report`).
    pub fn from_report(r: &Report, note: &str) -> TableModel {
        let json = serde_json::to_value(r).unwrap_or_default();
        TableModel::from_report_json(&json, note).unwrap_or_else(|| TableModel {
            title: format!("ladder {}", r.ladder),
            state: TableState::Done,
            rows: Vec::new(),
            note: note.to_string(),
            no_counters: None,
            timer: None,
            band: Some(r.band),
            progress: None,
            stopped: false,
        })
    }

    /// A measured ladder report in its JSON form (what `hotlab ladder --format json` prints,
    /// and what a ladder job's result carries); `None` if `v` is not one.
    pub fn from_report_json(v: &serde_json::Value, note: &str) -> Option<TableModel> {
        let r: ReportJson = serde_json::from_value(v.clone()).ok()?;
        let rows = r
            .rows
            .into_iter()
            .map(|row| {
                let adds = row.adds.map(|a| match a.kind.as_str() {
                    "no_cost_resolved" => {
                        let w = a.within.unwrap_or(0.0) / 1e3;
                        Adds {
                            ns: 0.0,
                            low: -w,
                            high: w,
                        }
                    }
                    _ => Adds {
                        ns: a.diff.unwrap_or(0.0) / 1e3,
                        low: a.low.unwrap_or(0.0) / 1e3,
                        high: a.high.unwrap_or(0.0) / 1e3,
                    },
                });
                let native = row.build.is_none();
                TableRow {
                    label: match &row.build {
                        Some(b) => format!("{b} {}", row.step),
                        None => row.step.clone(),
                    },
                    step: Some(row.step),
                    layer: Some(row.layer),
                    total_ns: row.total_ns,
                    adds,
                    ratio: match row.ratio {
                        Some((Some(x), lo, hi)) => Some((x, lo.zip(hi))),
                        None if native => Some((1.0, None)),
                        _ => None,
                    },
                    verdict: row
                        .verdict
                        .or_else(|| native.then(|| "baseline".to_string())),
                    ok: row.checksum_ok,
                    cycles: row.cycles,
                    instructions: row.build.as_ref().map(|_| row.instructions),
                    executed: row.executed,
                    why: row.why,
                    build: row.build,
                    ..TableRow::default()
                }
            })
            .collect();
        Some(TableModel {
            title: format!("ladder {}", r.ladder),
            state: TableState::Done,
            rows,
            note: note.to_string(),
            no_counters: None,
            timer: None,
            band: Some(r.band),
            progress: None,
            stopped: false,
        })
    }

    /// Lay a live snapshot over the table: rows are matched by label (new ones are added),
    /// totals and histograms become the running values.
    pub fn apply_live(&mut self, p: &LiveSnapshot, title: &str) {
        if self.state != TableState::Live || self.title != title {
            // A new job: start from the plan's rows if they match, else from nothing.
            // (A snapshot with no rows, a bench's, matches nothing: the old rows, reset,
            // would read as this job's.)
            let same = !p.variants.is_empty()
                && p.variants
                    .iter()
                    .all(|v| self.rows.iter().any(|r| r.label == v.name));
            let planned = p.variants.iter().any(|v| {
                self.rows
                    .iter()
                    .any(|r| r.label == v.name && r.step.is_some())
            });
            if !same && planned {
                // A ladder with rows its plan lacks (a method body row): each goes in after the
                // row of the job's row before it; the planned ones keep their step and build.
                let body = crate::ladder::Step::body();
                for (k, v) in p.variants.iter().enumerate() {
                    if self.rows.iter().any(|r| r.label == v.name) {
                        continue;
                    }
                    let i = k
                        .checked_sub(1)
                        .and_then(|b| {
                            let before = &p.variants[b].name;
                            self.rows.iter().position(|r| &r.label == before)
                        })
                        .map_or(0, |j| j + 1);
                    let build = v
                        .name
                        .split_once(' ')
                        .filter(|(_, title)| *title == body.title)
                        .map(|(b, _)| b.to_string());
                    self.rows.insert(
                        i,
                        TableRow {
                            label: v.name.clone(),
                            step: build.as_ref().map(|_| body.title.clone()),
                            layer: build.as_ref().map(|_| body.layer.to_string()),
                            build,
                            ok: true,
                            ..TableRow::default()
                        },
                    );
                }
            } else if !same {
                self.rows.clear();
            }
            for r in &mut self.rows {
                *r = TableRow {
                    label: r.label.clone(),
                    step: r.step.clone(),
                    layer: r.layer.clone(),
                    build: r.build.clone(),
                    disabled: r.disabled,
                    ok: true,
                    ..TableRow::default()
                };
            }
            self.title = title.to_string();
            self.state = TableState::Live;
            self.stopped = false;
            self.no_counters = None;
        }
        for v in &p.variants {
            let i = match self.rows.iter().position(|r| r.label == v.name) {
                Some(i) => i,
                None => {
                    let (snippet, backend) = snippet_backend(&v.name).unzip();
                    self.rows.push(TableRow {
                        label: v.name.clone(),
                        snippet,
                        backend,
                        ok: true,
                        ..TableRow::default()
                    });
                    self.rows.len() - 1
                }
            };
            let row = &mut self.rows[i];
            row.total_ns = v.median_ns;
            row.samples = (v.samples, v.dropped);
            row.buckets = v.buckets.clone();
            row.percentiles = v.percentiles.clone();
        }
        let base = self.rows.first().and_then(|r| r.total_ns);
        for r in self.rows.iter_mut() {
            r.ratio = match (r.total_ns, base) {
                (Some(x), Some(b)) if b > 0.0 => Some((x / b, None)),
                _ => None,
            };
        }
        self.progress = p
            .budget_ms
            .filter(|b| *b > 0.0)
            .map(|b| (p.elapsed_ms / b).clamp(0.0, 1.0));
        if p.variants.is_empty() {
            // A job of many jobs (bench): the phase says which of them runs.
            self.note = format!("{}, {:.1} s", p.phase, p.elapsed_ms / 1e3);
            return;
        }
        self.note = format!(
            "{}: {} rounds of {} iterations, {:.1} s{}",
            p.phase,
            p.rounds,
            p.iters,
            p.elapsed_ms / 1e3,
            p.budget_ms
                .map_or_else(String::new, |b| format!(" of {:.1} s", b / 1e3))
        );
    }
}

/// The parts of the case matrix's JSON form (`crate::cases::matrix::Matrix`) the table shows.
#[derive(serde::Deserialize)]
struct BenchJson {
    tables: Vec<BenchTableJson>,
    reps: usize,
    time: f64,
    elapsed: f64,
}

#[derive(serde::Deserialize)]
struct BenchTableJson {
    backend: String,
    unavailable: Option<String>,
    rows: Vec<BenchRowJson>,
}

#[derive(serde::Deserialize)]
struct BenchRowJson {
    case: String,
    twin: String,
    native_ns: Option<f64>,
    /// By mode (`hot`, `clif`), in the map's order (`clif` first).
    cells: std::collections::BTreeMap<String, BenchCellJson>,
}

#[derive(serde::Deserialize)]
struct BenchCellJson {
    ns: Option<f64>,
    ratio: Option<f64>,
    mismatch: bool,
    error: Option<serde_json::Value>,
}

/// The parts of a ladder report's JSON form the table shows.
#[derive(serde::Deserialize)]
struct ReportJson {
    ladder: String,
    rows: Vec<ReportRowJson>,
    band: f64,
}

#[derive(serde::Deserialize)]
struct ReportRowJson {
    step: String,
    layer: String,
    build: Option<String>,
    total_ns: Option<f64>,
    adds: Option<AddsJson>,
    /// `[ratio, low, high]`; each `null` in a row stopped before its first round.
    ratio: Option<(Option<f64>, Option<f64>, Option<f64>)>,
    verdict: Option<String>,
    cycles: Option<f64>,
    instructions: usize,
    #[serde(default)]
    executed: Option<f64>,
    checksum_ok: bool,
    #[serde(default)]
    why: Option<Saving>,
}

/// `AbsVerdict`'s JSON form: picoseconds, tagged by `kind`.
#[derive(serde::Deserialize)]
struct AddsJson {
    kind: String,
    diff: Option<f64>,
    low: Option<f64>,
    high: Option<f64>,
    within: Option<f64>,
}

/// The machine code of one ladder step (or one function of the snippet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeView {
    /// What the code is (`jit slot read — 14 instructions`).
    pub title: String,
    /// The step title or function name it belongs to.
    pub key: String,
    /// The listing.
    pub listing: Vec<String>,
    /// The diff from the step before, with added and removed line counts.
    pub diff: Option<(Vec<String>, usize, usize)>,
    /// Static instruction count.
    pub instructions: usize,
    /// The listing with each instruction's offset and bytes (the code pane's `a`), when the
    /// code has addresses (a function's; a ladder step's listing is address-free for its diff).
    pub addressed: Option<Vec<String>>,
}

impl CodeView {
    /// From `hotlab asm --ladder`'s per-step code.
    pub fn from_steps(steps: &[crate::ladder::code::StepCode]) -> Vec<CodeView> {
        steps
            .iter()
            .map(|s| CodeView {
                title: format!("{} — {} instructions", s.label, s.instructions),
                key: s.title.clone(),
                listing: s.listing.clone(),
                diff: s.diff.clone(),
                instructions: s.instructions,
                addressed: None,
            })
            .collect()
    }

    /// The machine code rustc made of the native twin `name` (a check's or a bench's twin
    /// row): built into this binary, so disassembled here, as `hotlab asm --twin` does.
    pub fn of_twin(name: &str) -> Result<CodeView, String> {
        let twin = crate::cases::twins::twin_named(name)
            .ok_or_else(|| format!("no twin named {name} in this build of hotlab"))?;
        let syntax = crate::backend::disasm::Syntax::Intel;
        // SAFETY: a twin's `f` is the entry of a Rust function compiled into this binary.
        let (bytes, lines) =
            unsafe { crate::ladder::code::twin_machine_code(twin.f as usize, syntax) };
        let listing = FunctionListing {
            name: name.to_string(),
            clif: String::new(),
            asm: crate::backend::disasm::render(&lines),
            bytes,
            instructions: lines.len(),
        };
        let mut view = CodeView::from_listings(&[listing])
            .pop()
            .ok_or_else(|| format!("no machine code for the twin {name}"))?;
        view.title = format!(
            "native {name} — {bytes} bytes, {} instructions",
            view.instructions
        );
        Ok(view)
    }

    /// From the worker's `:asm` listings of the snippet's functions.
    pub fn from_listings(listings: &[FunctionListing]) -> Vec<CodeView> {
        let starts: Vec<(String, u64)> = listings
            .iter()
            .filter_map(|l| Some((l.name.clone(), super::asm_view::start_of(&l.asm)?)))
            .collect();
        listings
            .iter()
            .map(|l| {
                let (listing, addressed) = if super::asm_view::is_addressed(&l.asm) {
                    let (plain, addressed) = super::asm_view::views(&l.asm, &starts);
                    (plain, Some(addressed))
                } else {
                    (l.asm.lines().map(str::to_string).collect(), None)
                };
                CodeView {
                    title: format!(
                        "fn {} — {} bytes, {} instructions",
                        l.name, l.bytes, l.instructions
                    ),
                    key: l.name.clone(),
                    listing,
                    diff: None,
                    instructions: l.instructions,
                    addressed,
                }
            })
            .collect()
    }
}

/// Counter names and per-op values from the engine's JSON form (`per_op: [[kind, value], …]`).
pub fn counters_per_op(v: &serde_json::Value) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = v
        .get("per_op")
        .and_then(|p| p.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|pair| {
                    let name = pair.get(0)?.as_str()?.replace('_', " ");
                    Some((name, pair.get(1)?.as_f64()?))
                })
                .collect()
        })
        .unwrap_or_default();
    if let Some(ipc) = v.get("ipc").and_then(|x| x.as_f64()) {
        out.push(("IPC".into(), ipc));
    }
    out
}
