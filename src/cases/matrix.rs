//! The backend matrix: every case on every backend, measured beside its twin and checked
//! against it.
//!
//! For each backend and case, the case's scripts for that backend are loaded (timed: the load
//! section), run once with the checked loop count and compared with the twin (a difference
//! marks the cell `!`), then measured with the engine: one job per rep with the twin first and
//! the scripts after it, interleaved, so the ratios come from paired rounds. A cell shows the
//! median over reps of the script's median time per op, and of the median per-round ratio.
//! Native-only rows are measured once and shown in every table.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

use serde::Serialize;

use super::backend::{Backend, CellError, LoadTimes, Loader, Sampler, case_loader};
use super::reload::{ReloadRow, reload_rows};
use super::spec::{Case, Mode};
use super::twin_layouts::TwinLayouts;
use super::twins::Twin;
use crate::lang::Span;
use crate::measure::{
    Job, JobResult, MeasureError, NoObserver, Observer, Picos, Settings, Sources, Stop, best_timer,
};
use crate::runtime::{ScriptError, catch_script};

/// How the matrix runs.
#[derive(Debug, Clone)]
pub struct MatrixOptions {
    /// Backends to run, in table order.
    pub backends: Vec<Backend>,
    /// Only cases whose name, title or group contains this text.
    pub filter: Option<String>,
    /// Timed runs per cell; cells show the median.
    pub reps: usize,
    /// Loop count of the checked run (script and twin compared).
    pub iters: i64,
    /// Engine time budget of one timed run, in seconds.
    pub time: f64,
    /// Largest N of the reload chain.
    pub reloads: u64,
    /// Whether to keep the load section.
    pub load: bool,
    /// Pin the measuring thread to a CPU.
    pub pin: bool,
    /// Cells (case name, backend) that crashed the process running them in an earlier
    /// attempt, with what ended it (`SIGSEGV (...)`): marked crashed and not run again, so the
    /// rest of the matrix goes on without them.
    pub crashed: Vec<(String, Backend, String)>,
}

impl Default for MatrixOptions {
    fn default() -> Self {
        MatrixOptions {
            backends: Backend::ALL.to_vec(),
            filter: None,
            reps: 3,
            iters: 10_000,
            time: 0.25,
            reloads: 100,
            load: true,
            pin: true,
            crashed: Vec::new(),
        }
    }
}

impl MatrixOptions {
    /// Whether `case` passes the filter.
    pub fn selects(&self, case: &Case) -> bool {
        self.filter.as_deref().is_none_or(|f| {
            case.name.contains(f)
                || case.header.title.contains(f)
                || case.group.as_deref().is_some_and(|g| g.contains(f))
        })
    }

    /// Whether the reload rows run: with no filter, or a filter they match (`--filter reload`).
    pub fn selects_reloads(&self) -> bool {
        self.filter
            .as_deref()
            .is_none_or(|f| "reload of 100 objects; call after N reloads".contains(f))
    }
}

/// One script's cell of a table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// Median time per op, ns.
    pub ns: Option<f64>,
    /// Median ratio to the twin of the same job.
    pub ratio: Option<f64>,
    /// The script's checked result.
    pub checksum: Option<i64>,
    /// True when the script's result differs from the twin's (`!`).
    pub mismatch: bool,
    /// Why there is no time.
    pub error: Option<CellError>,
}

impl Cell {
    /// A cell with no time, for the reason `e`.
    pub(crate) fn failed(e: CellError) -> Cell {
        Cell {
            ns: None,
            ratio: None,
            checksum: None,
            mismatch: false,
            error: Some(e),
        }
    }
}

/// One row of a backend's table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatrixRow {
    /// The case name.
    pub case: String,
    /// Its title.
    pub title: String,
    /// Its group (`programs` for `cases/programs/`), `None` for the cases at the top.
    pub group: Option<String>,
    /// What one op is.
    pub unit: String,
    /// The twin's name.
    pub twin: String,
    /// The twin's median time per op in this backend's jobs, ns.
    pub native_ns: Option<f64>,
    /// The twin's checked result.
    pub native_checksum: i64,
    /// True for native-only rows (script cells show `-`).
    pub native_only: bool,
    /// Script cells by mode.
    pub cells: BTreeMap<Mode, Cell>,
}

/// The table of one backend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BackendTable {
    /// The backend.
    pub backend: Backend,
    /// Set when the backend cannot run at all (the table is then empty).
    pub unavailable: Option<String>,
    /// Its rows.
    pub rows: Vec<MatrixRow>,
}

/// Load times of one script on one backend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadRow {
    /// The case.
    pub case: String,
    /// The script mode.
    pub mode: Mode,
    /// The backend.
    pub backend: Backend,
    /// The times, µs in JSON.
    pub times: LoadTimes,
}

/// The whole matrix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Matrix {
    /// One table per backend asked for.
    pub tables: Vec<BackendTable>,
    /// The load section (empty with `--no-load`).
    pub loads: Vec<LoadRow>,
    /// The reload rows (empty when `--filter` leaves them out).
    pub reloads: Vec<ReloadRow>,
    /// Settings: reps, checked loop count, budget per run (s).
    pub reps: usize,
    /// Loop count of the checked runs.
    pub iters: i64,
    /// Engine budget per timed run, s.
    pub time: f64,
    /// Wall time of the whole matrix, s.
    pub elapsed: f64,
}

impl Matrix {
    /// Cells whose result differs from the twin, or that failed: `bench` exits non-zero.
    pub fn problems(&self) -> usize {
        self.cells()
            .filter(|c| c.mismatch || matches!(c.error, Some(CellError::Failed(_))))
            .count()
    }

    /// Every script cell: the backends' tables, then the reload rows.
    pub fn cells(&self) -> impl Iterator<Item = &Cell> {
        self.tables
            .iter()
            .flat_map(|t| &t.rows)
            .flat_map(|r| r.cells.values())
            .chain(self.reloads.iter().flat_map(|r| r.cells.values()))
    }
}

/// Progress: (jobs done, jobs in all, what runs now).
pub type ProgressFn<'a> = &'a mut dyn FnMut(usize, usize, &str);

/// The engine settings of one timed run.
pub fn settings(time: f64, pin: bool, twin: &Twin) -> Settings {
    let mut s = Settings {
        stop: Stop::Budget(Picos(time * 1e12)),
        pin,
        counters: false,
        // Single-stepping a bench cell's variants would cost up to seconds per cell for a
        // column the bench table does not show; check, ladder and the TUI count.
        instructions: false,
        ..Settings::default()
    };
    if twin.threads > 1 {
        // A sample hands work to the helper thread: long samples hide the hand-over.
        s.min_sample = Picos::from_nanos(500_000.0);
    }
    s
}

/// Why a timed run has no result.
#[derive(Debug, thiserror::Error)]
pub enum TimedRunError {
    /// A runner kept an error from inside the job (its script raised, or it failed to run).
    #[error("{name}: {error}")]
    Runner {
        /// The runner's name in the job.
        name: String,
        /// What it kept, as it renders it.
        error: String,
    },
    /// A script error escaped the job itself.
    #[error("script error while measuring: {0}")]
    Script(ScriptError),
    /// The engine refused the job.
    #[error(transparent)]
    Engine(#[from] MeasureError),
}

/// One timed run: the twin (if any) first, then the runners, interleaved by the engine.
pub fn run_job(
    twin: Option<&TwinLayouts<'_>>,
    runners: &mut [(String, Sampler<'_>)],
    settings: &Settings,
) -> Result<JobResult, TimedRunError> {
    run_job_observed(
        twin,
        runners,
        settings,
        &AtomicBool::new(false),
        &mut NoObserver,
    )
}

/// [`run_job`] that `cancel` stops between samples (the result then holds the rounds so far,
/// `stopped` [`crate::measure::result::StopReason::Cancelled`]) and whose progress goes to
/// `observer` (`hotlab check`'s bar and its answer to Ctrl-C). The twin comes first, at each of
/// its placements in layout order.
pub fn run_job_observed(
    twin: Option<&TwinLayouts<'_>>,
    runners: &mut [(String, Sampler<'_>)],
    settings: &Settings,
    cancel: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<JobResult, TimedRunError> {
    let mut job = Job::new(settings.clone());
    if let Some(t) = twin {
        for k in 0..t.layouts() {
            // SAFETY: the job is dropped below, before the caller's `TwinLayouts`.
            job = job.with(unsafe { t.variant(k) });
        }
    }
    for (name, r) in runners.iter_mut() {
        // SAFETY: the job (and with it the variant) is dropped below, before the runners;
        // it runs on this thread, inside `catch_script`.
        job = job.with(unsafe { r.variant(name) });
    }
    let threads = twin.is_some_and(|t| t.twin().threads > 1);
    if let Some(t) = twin.filter(|_| threads) {
        // Start the helper thread and get it spinning before sizing probes see its start-up.
        t.twin().run(100_000);
    }
    // Disturbed samples are kept, not dropped: on a busy machine every long probe is
    // disturbed, and the engine's sizing then grows the shared loop count without bound
    // (the interpreter's samples become minutes long). Medians are robust to them.
    let why = if threads {
        "two-thread row: switches are part of the work"
    } else {
        "bench keeps disturbed samples"
    };
    // Two-thread rows stay unpinned, so the OS can spread their threads.
    let _pin = (settings.pin && !threads)
        .then(crate::measure::env::pin::auto_cpu)
        .flatten()
        .and_then(|cpu| crate::measure::env::pin::pin_current_thread(cpu).ok());
    let result = catch_script(Span::default(), || {
        job.run_with(best_timer(), Sources::none(why), cancel, observer)
    });
    drop(job);
    for (name, r) in runners.iter_mut() {
        if let Some(e) = r.take_error() {
            return Err(TimedRunError::Runner {
                name: name.clone(),
                error: e.to_string(),
            });
        }
    }
    Ok(result.map_err(TimedRunError::Script)??)
}

/// Per variant: the median ns per op and the median ratio to the twin (`None` where no run
/// produced one).
pub type VariantFigures = (Option<f64>, Option<f64>);

/// `reps` timed runs of the twin and the scripts; per variant (twin first), the median over
/// runs of (median ns per op, median ratio to the twin).
pub fn measure(
    twin: &Twin,
    runners: &mut [(String, Sampler<'_>)],
    settings: &Settings,
    reps: usize,
) -> Result<Vec<VariantFigures>, TimedRunError> {
    let k = runners.len() + 1;
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); k];
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); k];
    let twin = TwinLayouts::one(twin);
    for _ in 0..reps.max(1) {
        let result = run_job(Some(&twin), runners, settings)?;
        for (i, v) in result.variants.iter().enumerate() {
            if let Some(s) = &v.summary {
                ns[i].push(s.median.nanos());
            }
            if i > 0
                && let Ok(c) = result.compare(0, i)
                && c.verdict.ratio.0.is_finite()
            {
                ratios[i].push(c.verdict.ratio.0);
            }
        }
    }
    Ok((0..k)
        .map(|i| (median(&mut ns[i]), median(&mut ratios[i])))
        .collect())
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// Run the matrix over `cases`.
pub fn run_matrix(cases: &[Case], opts: &MatrixOptions, progress: ProgressFn<'_>) -> Matrix {
    let start = std::time::Instant::now();
    let cases: Vec<&Case> = cases.iter().filter(|c| opts.selects(c)).collect();
    let runnable: Vec<Backend> = opts
        .backends
        .iter()
        .copied()
        .filter(|b| b.unavailable(Mode::Hot).is_none() || b.unavailable(Mode::Clif).is_none())
        .collect();
    let scripted = cases.iter().filter(|c| !c.native_only()).count();
    let natives = cases.len() - scripted;
    let reload_steps = if opts.selects_reloads() {
        super::reload::steps(opts)
    } else {
        0
    };
    let total =
        scripted * runnable.len() + if runnable.is_empty() { 0 } else { natives } + reload_steps;
    let mut done = 0usize;
    let mut jits = case_loader();
    let mut loads = Vec::new();

    // Native-only rows: once, shown in every table.
    let mut native_rows: Vec<MatrixRow> = Vec::new();
    if !runnable.is_empty() {
        for case in cases.iter().filter(|c| c.native_only()) {
            let twin = case.header.twin;
            progress(done, total, &format!("{} (native)", case.name));
            let s = settings(opts.time, opts.pin, twin);
            let ns = measure(twin, &mut [], &s, opts.reps)
                .ok()
                .and_then(|v| v[0].0);
            done += 1;
            native_rows.push(row(case, ns, BTreeMap::new()));
        }
    }

    // A case's twin measured alone (no script cell of a backend could run), shared by every
    // backend in that position: measuring it again per backend only cost time.
    let mut twin_alone: std::collections::HashMap<String, Option<f64>> = Default::default();
    let mut tables = Vec::new();
    for &backend in &opts.backends {
        if !runnable.contains(&backend) {
            let why = backend.unavailable(Mode::Hot).unwrap_or("not available");
            tables.push(BackendTable {
                backend,
                unavailable: Some(why.to_string()),
                rows: Vec::new(),
            });
            continue;
        }
        let mut rows = Vec::new();
        for case in &cases {
            if case.native_only() {
                if let Some(r) = native_rows.iter().find(|r| r.case == case.name) {
                    rows.push(r.clone());
                }
                continue;
            }
            progress(done, total, &format!("{} ({})", case.name, backend.name()));
            if let Some((_, _, why)) = opts
                .crashed
                .iter()
                .find(|(c, b, _)| *c == case.name && *b == backend)
            {
                done += 1;
                rows.push(crashed_row(case, why));
                continue;
            }
            let (r, l) = run_case(case, backend, &mut jits, opts, &mut twin_alone);
            done += 1;
            rows.push(r);
            if opts.load {
                loads.extend(l);
            }
        }
        tables.push(BackendTable {
            backend,
            unavailable: None,
            rows,
        });
    }
    let reloads = if opts.selects_reloads() {
        reload_rows(opts, &mut |what: &str| {
            progress(done, total, what);
            done += 1;
        })
    } else {
        Vec::new()
    };
    progress(total, total, "done");
    Matrix {
        tables,
        loads,
        reloads,
        reps: opts.reps,
        iters: opts.iters,
        time: opts.time,
        elapsed: start.elapsed().as_secs_f64(),
    }
}

/// The row of a case that crashed the process running it: each script cell failed with
/// `why` (the signal), the twin not measured.
fn crashed_row(case: &Case, why: &str) -> MatrixRow {
    let cells = [Mode::Hot, Mode::Clif]
        .into_iter()
        .filter(|&m| case.script(m).is_some())
        .map(|m| {
            let e = format!("crashed the process running it: {why}");
            (m, Cell::failed(CellError::Failed(e)))
        })
        .collect();
    row(case, None, cells)
}

fn row(case: &Case, native_ns: Option<f64>, cells: BTreeMap<Mode, Cell>) -> MatrixRow {
    MatrixRow {
        case: case.name.clone(),
        title: case.header.title.clone(),
        group: case.group.clone(),
        unit: case.header.unit.clone(),
        twin: case.header.twin.name.to_string(),
        native_ns,
        native_checksum: 0,
        native_only: case.native_only(),
        cells,
    }
}

/// One case on one backend: load, check, measure. When no script cell can run, the twin is
/// measured alone once per case (`twin_alone` keeps its time for the other backends).
pub fn run_case(
    case: &Case,
    backend: Backend,
    jits: &mut Loader,
    opts: &MatrixOptions,
    twin_alone: &mut std::collections::HashMap<String, Option<f64>>,
) -> (MatrixRow, Vec<LoadRow>) {
    let twin = case.header.twin;
    let expected = twin.run(opts.iters);
    let mut cells: BTreeMap<Mode, Cell> = BTreeMap::new();
    let mut loads = Vec::new();
    let mut loaded = Vec::new();
    for mode in [Mode::Hot, Mode::Clif] {
        let Some(script) = case.script(mode) else {
            let why = match &case.header.absent {
                Some(why) => why.clone(),
                None => format!("no {} script", mode.label()),
            };
            cells.insert(mode, Cell::failed(CellError::Unavailable(why)));
            continue;
        };
        match backend.load(script, jits) {
            Ok((l, times)) => {
                loads.push(LoadRow {
                    case: case.name.clone(),
                    mode,
                    backend,
                    times,
                });
                loaded.push((mode, l));
            }
            Err(e) => {
                cells.insert(mode, Cell::failed(e));
            }
        }
    }
    let mut runners = Vec::new();
    for (mode, l) in &mut loaded {
        match l.sampler(&case.header.entry.workload()) {
            Ok(r) => runners.push((*mode, r)),
            Err(e) => {
                cells.insert(*mode, Cell::failed(CellError::Failed(e.to_string())));
            }
        }
    }
    let mut checks = Vec::new();
    for (mode, r) in runners.iter_mut() {
        checks.push((*mode, r.checked(opts.iters)));
    }
    let mut measured: Vec<(String, Sampler<'_>)> = Vec::new();
    let mut modes = Vec::new();
    for ((mode, r), (_, check)) in runners.into_iter().zip(checks) {
        match check {
            Ok(v) => {
                cells.insert(
                    mode,
                    Cell {
                        ns: None,
                        ratio: None,
                        checksum: Some(v),
                        mismatch: !case.header.checksum.accepts(v, expected),
                        error: None,
                    },
                );
                modes.push(mode);
                measured.push((format!("{}{}", case.name, mode.label()), r));
            }
            Err(e) => {
                cells.insert(mode, Cell::failed(CellError::Failed(e.to_string())));
            }
        }
    }
    if measured.is_empty()
        && let Some(ns) = twin_alone.get(&case.name)
    {
        let mut r = row(case, *ns, cells);
        r.native_checksum = expected;
        return (r, loads);
    }
    let alone = measured.is_empty();
    let s = settings(opts.time, opts.pin, twin);
    let mut native_ns = None;
    match measure(twin, &mut measured, &s, opts.reps) {
        Ok(values) => {
            native_ns = values[0].0;
            for (mode, (ns, ratio)) in modes.iter().zip(&values[1..]) {
                if let Some(c) = cells.get_mut(mode) {
                    c.ns = *ns;
                    c.ratio = *ratio;
                }
            }
        }
        Err(e) => {
            for mode in &modes {
                if let Some(c) = cells.get_mut(mode) {
                    c.error = Some(CellError::Failed(e.to_string()));
                }
            }
        }
    }
    if alone {
        twin_alone.insert(case.name.clone(), native_ns);
    }
    let mut r = row(case, native_ns, cells);
    r.native_checksum = expected;
    (r, loads)
}
