//! The worker protocol: one JSON object per line. The front end writes [`Request`]s to the
//! worker's stdin; the worker writes [`Response`]s to its stdout, each tagged with the id of the
//! job it belongs to. A job answers `started`, then any number of `progress` events (about 20 per
//! second while measuring), then exactly one `done` or `failed`.
//!
//! Every type here is plain data (strings and numbers), so both sides can be read by people and
//! by other tools. This is the worker's own wire format: the session converts each answer into
//! its results model (`session::results`) as it arrives, and the front ends read that. Nothing
//! here renders text.

use serde::{Deserialize, Serialize};

/// How a snippet becomes code (the one list of backends, shared with the CLI and the cases).
pub use crate::backend::Backend;

/// Script source sent to the worker: `.hot` unless the name ends in `.clif`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnippetSource {
    /// Shown in diagnostics (a file name or a REPL name).
    pub name: String,
    /// The text.
    pub text: String,
}

impl SnippetSource {
    /// Whether this is raw Cranelift IR.
    pub fn is_clif(&self) -> bool {
        self.name.ends_with(".clif")
    }
}

/// Settings of a measuring job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasureSettings {
    /// Time budget in seconds.
    pub time_s: f64,
    /// Equivalence band (0.02 = ±2 %).
    pub band: f64,
    /// CPU to pin to (`None`: the worker's CPU).
    pub cpu: Option<usize>,
    /// Index bounds checks in script code.
    pub checks: bool,
}

/// One contestant of a measuring job: `function(n)` of a snippet on a backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contestant {
    /// The row label.
    pub label: String,
    /// The snippet.
    pub snippet: SnippetSource,
    /// The backend.
    pub backend: Backend,
    /// The function measured: `fn NAME(n: i64) -> i64` running `n` iterations.
    pub function: String,
}

/// What a job does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkerJob {
    /// Compile a snippet and report its functions.
    Compile {
        /// The snippet.
        snippet: SnippetSource,
        /// The backend.
        backend: Backend,
        /// Index bounds checks.
        checks: bool,
    },
    /// Call one function without arguments and report its value.
    Run {
        /// The snippet.
        snippet: SnippetSource,
        /// The backend.
        backend: Backend,
        /// Index bounds checks.
        checks: bool,
        /// The function (`main` by default).
        function: String,
    },
    /// Machine code and Cranelift IR of the snippet's functions.
    Asm {
        /// The snippet.
        snippet: SnippetSource,
        /// `jit` or `jit-opt`.
        backend: Backend,
        /// Only this function.
        function: Option<String>,
    },
    /// Measure contestants interleaved; with two, compare the second against the first.
    Measure {
        /// The contestants (the first is the baseline).
        contestants: Vec<Contestant>,
        /// How to measure.
        settings: MeasureSettings,
    },
    /// The machine's health report and the engine's self-checks.
    Doctor(crate::measure::doctor::DoctorOptions),
    /// Measure a ladder around a snippet's `fn call() -> i64` (the default empty method when
    /// there is no snippet or it has no `call`), both builds (jit and aot) interleaved.
    Ladder {
        /// The ladder (its steps already chosen and ordered).
        ladder: crate::ladder::Ladder,
        /// The snippet whose `call` is the method.
        snippet: Option<SnippetSource>,
        /// How to measure.
        settings: MeasureSettings,
    },
    /// Is the snippet's `run(n)` 1.0x of a native twin or of another snippet's?
    Check {
        /// The snippet (`.hot`, or `.clif` with `%run(ctx, n)`).
        snippet: SnippetSource,
        /// What it is compared with.
        against: Against,
        /// The backend both sides are compiled with.
        backend: Backend,
        /// How to measure.
        settings: MeasureSettings,
        /// Loop count of the result check.
        iters: i64,
    },
    /// Every case (or those matching `filter`) on every backend beside its twin.
    Bench {
        /// Only cases whose name or title contains this.
        filter: Option<String>,
        /// Seconds of one timed run.
        time_s: f64,
        /// Timed runs per cell.
        reps: usize,
    },
    /// Reload the worker's live module from the snippet (the first reload starts the module
    /// and runs its `main`, if it has one). The module lives in the worker between jobs.
    Reload {
        /// The new version.
        snippet: SnippetSource,
        /// Index bounds checks.
        checks: bool,
    },
    /// Call a function without arguments in the worker's live module (see `Reload`), whose
    /// objects and module variables live on between calls.
    RunLive {
        /// The snippet the module was started from (it must be the live one).
        snippet: String,
        /// The function.
        function: String,
    },
    /// The machine code of each step of a ladder's `jit` build around a snippet's `fn call()
    /// -> i64` (the default empty method when the text has no `fn call(`), with each step's
    /// diff from the step before: the TUI's code pane.
    LadderCode {
        /// The ladder (its steps already chosen and ordered).
        ladder: crate::ladder::Ladder,
        /// The snippet whose `call` is the method.
        snippet: SnippetSource,
    },
    /// Test only: panic in the worker with this message.
    #[doc(hidden)]
    Panic {
        /// The panic message.
        message: String,
    },
}

impl WorkerJob {
    /// A short name for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            WorkerJob::Compile { .. } => "compile",
            WorkerJob::Run { .. } => "run",
            WorkerJob::Asm { .. } => "asm",
            WorkerJob::Measure { .. } => "measure",
            WorkerJob::Doctor(_) => "doctor",
            WorkerJob::Ladder { .. } => "ladder",
            WorkerJob::Check { .. } => "check",
            WorkerJob::Bench { .. } => "bench",
            WorkerJob::Reload { .. } => "reload",
            WorkerJob::RunLive { .. } => "run",
            WorkerJob::LadderCode { .. } => "ladder code",
            WorkerJob::Panic { .. } => "panic",
        }
    }
}

/// The other side of a check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Against {
    /// A native twin by name (see `hotlab bench --list`).
    Twin {
        /// Its name.
        name: String,
    },
    /// Another snippet on the same backend.
    Snippet {
        /// The snippet.
        snippet: SnippetSource,
    },
}

/// A message to the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// Start a job (the worker runs one at a time, in order).
    Job {
        /// Chosen by the front end; echoed in every response.
        id: u64,
        /// The job.
        job: WorkerJob,
    },
    /// Stop a measuring job soon (it ends with the samples it has).
    Cancel {
        /// The job.
        id: u64,
    },
    /// Stop: jobs are cancelled, and the worker exits once the running one ends, or after
    /// half a second if it does not (as when stdin closes).
    Shutdown,
}

/// A message from the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The job it belongs to.
    pub id: u64,
    /// What happened.
    pub event: Event,
}

/// What happened to a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The worker took the job.
    Started {
        /// The CPU the job runs on, if pinned.
        cpu: Option<usize>,
    },
    /// A live snapshot while measuring.
    Progress(LiveProgress),
    /// The job finished.
    Done(JobOutput),
    /// The job failed (the worker goes on).
    Failed(JobFailure),
}

/// A live snapshot of a measuring job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveProgress {
    /// `calibrate`, `warmup`, `collect` or `done`.
    pub phase: String,
    /// Collected rounds.
    pub rounds: u64,
    /// Milliseconds since the job started.
    pub elapsed_ms: f64,
    /// The time budget in milliseconds.
    pub budget_ms: Option<f64>,
    /// Iterations per sample (0 before sizing).
    pub iters: u64,
    /// Per contestant.
    pub variants: Vec<LiveVariant>,
}

/// The live state of one contestant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveVariant {
    /// The row label.
    pub name: String,
    /// Samples kept.
    pub samples: usize,
    /// Samples dropped as disturbed.
    pub dropped: usize,
    /// Running median, ns per op.
    pub median_ns: Option<f64>,
    /// The histogram as a few rows of bars (see `OpHistogram::render`).
    pub histogram: Vec<String>,
    /// The histogram as counts, for front ends that draw their own bars (a TUI).
    #[serde(default)]
    pub buckets: Vec<Bucket>,
    /// Running percentiles (p1 … p100).
    #[serde(default)]
    pub percentiles: Vec<Percentile>,
}

/// One bar of a histogram: how many samples took `lo_ns` up to `hi_ns` per op. The first and
/// last buckets also hold the samples below p1 and above p99.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    /// Lower edge, ns per op.
    pub lo_ns: f64,
    /// Upper edge, ns per op.
    pub hi_ns: f64,
    /// Samples in the bucket.
    pub count: u64,
}

/// Why a job failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The snippet or the request is wrong (a diagnostic, a missing function).
    Input,
    /// The script raised an error at run time.
    Script,
    /// The job needs a feature this build does not have.
    Unavailable,
    /// The worker panicked (a bug in hotlab); the worker goes on.
    Panic,
}

/// A failed job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobFailure {
    /// Why.
    pub kind: FailureKind,
    /// What went wrong (diagnostics drawn with their source lines).
    pub message: String,
    /// Where in the snippet, when the failure has a place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<FailureLocation>,
    /// What a reload applied before the script failed did to the classes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<Box<AppliedReload>>,
}

impl JobFailure {
    /// A failure without a place.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> JobFailure {
        JobFailure {
            kind,
            message: message.into(),
            location: None,
            applied: None,
        }
    }
}

/// A place in a snippet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureLocation {
    /// The snippet's name.
    pub snippet: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

/// A reload applied before a failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedReload {
    /// The snippet reloaded.
    pub snippet: String,
    /// The classes reloaded.
    pub classes: Vec<ClassReload>,
    /// Classes defined for the first time.
    pub defined: Vec<String>,
}

/// A compiled function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionInfo {
    /// Its name.
    pub name: String,
    /// Code size in bytes (0 for the interpreter).
    pub bytes: usize,
    /// Machine instructions (0 for the interpreter).
    pub instructions: usize,
    /// µs to lower to IR.
    pub lower_us: f64,
    /// µs to compile.
    pub compile_us: f64,
}

/// The listing of one function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Listing {
    /// Its name.
    pub name: String,
    /// The Cranelift IR.
    pub clif: String,
    /// The machine code, one instruction per line.
    pub asm: String,
    /// Code size in bytes.
    pub bytes: usize,
    /// Machine instructions.
    pub instructions: usize,
}

/// What a finished job produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "output", rename_all = "snake_case")]
pub enum JobOutput {
    /// From `compile`.
    Compiled {
        /// The functions.
        functions: Vec<FunctionInfo>,
    },
    /// From `run`.
    Ran {
        /// The value, as the language prints it.
        value: String,
        /// µs for the call (compile excluded).
        micros: f64,
    },
    /// From `asm`.
    Asm {
        /// One per function.
        listings: Vec<Listing>,
    },
    /// From `measure`.
    Measured(Measured),
    /// From `doctor`.
    Doctor {
        /// The rendered report.
        text: String,
        /// Whether every self-check met its expectation.
        all_met: bool,
    },
    /// From `ladder`.
    Ladder(LadderOut),
    /// From `check`.
    Checked(crate::cases::check::CheckAnswer),
    /// From `bench`.
    Bench(BenchOut),
    /// From `reload`.
    Reloaded(ReloadOut),
    /// From `ladder_code`.
    LadderCode {
        /// One per step, in the ladder's order.
        steps: Vec<crate::ladder::code::StepCode>,
    },
}

/// A table as the exports draw it: column names starting with `>` are right-aligned.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableOut {
    /// The title.
    pub title: String,
    /// The columns (`>` marks a right-aligned one).
    pub columns: Vec<String>,
    /// The cells.
    pub rows: Vec<Vec<String>>,
    /// Lines under the table.
    pub notes: Vec<String>,
}

impl From<&crate::export::Table> for TableOut {
    fn from(t: &crate::export::Table) -> TableOut {
        TableOut {
            title: t.title.clone(),
            columns: t
                .columns
                .iter()
                .map(|c| match c.align {
                    crate::export::Align::Right => format!(">{}", c.name),
                    crate::export::Align::Left => c.name.clone(),
                })
                .collect(),
            rows: t.rows.clone(),
            notes: t.notes.clone(),
        }
    }
}

impl TableOut {
    /// The table for the exports.
    pub fn table(&self) -> crate::export::Table {
        let columns: Vec<&str> = self.columns.iter().map(String::as_str).collect();
        let mut t = crate::export::Table::new(self.title.clone(), &columns);
        for r in &self.rows {
            t.push(r.clone());
        }
        t.notes = self.notes.clone();
        t
    }
}

/// A measured ladder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LadderOut {
    /// The ladder's name.
    pub ladder: String,
    /// What the ladder called: the snippet's name, or the default empty method.
    pub method: String,
    /// Why the default method was used, if it was.
    pub note: Option<String>,
    /// Machine, timer and health lines.
    pub header: Vec<String>,
    /// The table (step, build, what it adds, total, ratio to native, verdict, ...).
    pub table: TableOut,
    /// True when every row's checksum equals the native row's.
    pub all_ok: bool,
    /// The report's JSON form (every number; what `hotlab ladder --format json` prints).
    pub report: serde_json::Value,
}

/// The case matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchOut {
    /// The tables as text.
    pub text: String,
    /// As Markdown (the results page).
    pub markdown: String,
    /// As CSV.
    pub csv: String,
    /// Every number.
    pub json: serde_json::Value,
    /// Cells whose result differs from the twin, or that failed.
    pub problems: usize,
}

/// What a reload did to one class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassReload {
    /// The class.
    pub class: String,
    /// Its new version (1 is the first definition).
    pub version: u32,
    /// Live objects migrated.
    pub migrated: usize,
    /// Fields kept with their values.
    pub kept: Vec<String>,
    /// New fields, initialized.
    pub added: Vec<String>,
    /// Fields dropped.
    pub removed: Vec<String>,
    /// Fields whose type changed (re-initialized).
    pub retyped: Vec<String>,
    /// Fields that held closures of the replaced version (re-initialized).
    #[serde(default)]
    pub reset: Vec<String>,
    /// The new version does not define the class: it was unloaded, its `migrated` objects
    /// destroyed.
    #[serde(default)]
    pub unloaded: bool,
}

impl From<&crate::runtime::reload::ReloadReport> for ClassReload {
    fn from(r: &crate::runtime::reload::ReloadReport) -> ClassReload {
        ClassReload {
            class: r.class.clone(),
            version: r.version,
            migrated: r.migrated,
            kept: r.kept.clone(),
            added: r.added.clone(),
            removed: r.removed.clone(),
            retyped: r.retyped.clone(),
            reset: r.reset.clone(),
            unloaded: r.unloaded,
        }
    }
}

/// What a reload job did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReloadOut {
    /// True when the module was started by this job (nothing to migrate yet).
    pub started: bool,
    /// The value of `main` when the module was started and has one.
    pub main: Option<String>,
    /// The classes reloaded.
    pub classes: Vec<ClassReload>,
    /// Classes defined for the first time.
    pub defined: Vec<String>,
    /// Module variables that kept their values.
    pub globals_kept: Vec<String>,
    /// The value of `fn after_reload()`, if the new version has one.
    pub after_reload: Option<String>,
}

/// One quantile of a histogram.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentile {
    /// The quantile in [0, 1].
    pub q: f64,
    /// ns per op.
    pub ns: f64,
}

/// One measured row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredRowOut {
    /// The row label.
    pub name: String,
    /// Samples kept.
    pub samples: usize,
    /// Samples dropped as disturbed.
    pub dropped: usize,
    /// Median ns per op.
    pub median_ns: Option<f64>,
    /// Median absolute deviation, ns.
    pub mad_ns: Option<f64>,
    /// Fastest sample, ns per op.
    pub min_ns: Option<f64>,
    /// Slowest sample, ns per op.
    pub max_ns: Option<f64>,
    /// Median in core cycles (calibrated clock estimate).
    pub cycles_est: Option<f64>,
    /// Tukey outliers (counted, not removed).
    pub outliers: usize,
    /// Spread above a few percent of the median.
    pub unstable: bool,
    /// The last sample's (iterations, checksum).
    pub checksum: Option<(u64, u64)>,
    /// Histogram percentiles.
    pub percentiles: Vec<Percentile>,
    /// The histogram as rows of bars.
    pub histogram: Vec<String>,
    /// The histogram as counts (see [`Bucket`]).
    #[serde(default)]
    pub buckets: Vec<Bucket>,
    /// Hardware counters per op, when they opened (the engine's JSON form).
    pub counters: Option<serde_json::Value>,
}

/// B against A.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonOut {
    /// The baseline row.
    pub a: String,
    /// The compared row.
    pub b: String,
    /// `equal`, `slower`, `faster` or `unresolved`.
    pub verdict: String,
    /// Median ratio B/A (absent without paired rounds).
    pub ratio: Option<f64>,
    /// Its CI, low end.
    pub low: Option<f64>,
    /// Its CI, high end.
    pub high: Option<f64>,
    /// The band used.
    pub band: f64,
    /// One sentence with the numbers.
    pub explanation: String,
    /// Median difference B−A in ns with its CI (estimate, low, high).
    pub diff_ns: Option<(f64, f64, f64)>,
}

/// The result of a measuring job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// One per contestant.
    pub rows: Vec<MeasuredRowOut>,
    /// With two or more contestants: each against the first.
    pub comparisons: Vec<ComparisonOut>,
    /// Shared iterations per sample.
    pub iters: u64,
    /// Collected rounds.
    pub rounds: usize,
    /// `budget`, `rounds` or `cancelled`.
    pub stopped: String,
    /// Seconds the job took.
    pub elapsed_s: f64,
    /// The CPU it ran on.
    pub cpu: Option<usize>,
    /// Why it was not pinned, if it was not.
    pub pin_note: Option<String>,
    /// `tsc`, `os_clock` or `mock`.
    pub timer: String,
    /// Why there are no hardware counters, if there are none.
    pub no_counters: Option<String>,
}
