//! The worker protocol: one JSON object per line. The front end writes [`Request`]s to the
//! worker's stdin; the worker writes [`Response`]s to its stdout, each tagged with the id of the
//! job it belongs to. A job answers `started`, then any number of `progress` events (about 20 per
//! second while measuring), then exactly one `done` or `failed`.
//!
//! Every type here is plain data (strings and numbers), so both sides can be read by people and
//! by other tools. This is the worker's own wire format, and only its envelope: the answers it
//! carries are the results model (`crate::results`), defined once, which the session keeps and
//! the front ends read. Nothing here renders text.

use serde::{Deserialize, Serialize};

use crate::results::{JobFailed, JobReport, LiveSnapshot};

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
        /// Placements of the script's code measured interleaved (`--layouts`).
        #[serde(default = "one_layout")]
        layouts: usize,
    },
    /// Every case (or those matching `filter`) on every backend beside its twin.
    Bench {
        /// Only cases whose name or title contains this.
        filter: Option<String>,
        /// Seconds of one timed run.
        time_s: f64,
        /// Timed runs per cell.
        reps: usize,
        /// The cases directory (default: ./cases, else the one hotlab was built with).
        #[serde(default)]
        cases: Option<std::path::PathBuf>,
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
    /// `hotlab run FILE`: compile the snippet on `backend`, run its `main`, then reload each
    /// version in order (every backend), as the one-shot command does.
    RunFile {
        /// The snippet.
        snippet: SnippetSource,
        /// The backend.
        backend: Backend,
        /// Index bounds checks.
        checks: bool,
        /// The `--reload` versions, in order.
        reloads: Vec<SnippetSource>,
    },
    /// `hotlab asm FILE`: the machine code of a snippet's functions, with the command's checks
    /// and syntax.
    AsmFile {
        /// The snippet.
        snippet: SnippetSource,
        /// A backend that makes machine code.
        backend: Backend,
        /// Index bounds checks in the generated code.
        checks: bool,
        /// Only this function.
        function: Option<String>,
        /// AT&T syntax instead of Intel.
        att: bool,
    },
    /// `hotlab asm --ladder`: each step's call-path code of one build around a snippet's `fn
    /// call() -> i64` (the default empty method without a snippet).
    LadderAsm {
        /// The ladder.
        ladder: crate::ladder::Ladder,
        /// The method's snippet.
        snippet: Option<SnippetSource>,
        /// The build whose code to show.
        build: crate::ladder::bench::Build,
        /// AT&T syntax instead of Intel.
        att: bool,
    },
    /// `hotlab ladder`: [`WorkerJob::Ladder`] with the builds chosen.
    LadderBuilds {
        /// The ladder.
        ladder: crate::ladder::Ladder,
        /// The snippet whose `call` is the method.
        snippet: Option<SnippetSource>,
        /// How to measure.
        settings: MeasureSettings,
        /// The builds measured side by side.
        builds: Vec<crate::ladder::bench::Build>,
    },
    /// `hotlab bench`: the case matrix with the command's options.
    Matrix {
        /// The backends, in table order.
        backends: Vec<Backend>,
        /// Only cases whose name or title contains this.
        filter: Option<String>,
        /// Timed runs per cell.
        reps: usize,
        /// Loop count of the checked run.
        iters: i64,
        /// Seconds of one timed run.
        time_s: f64,
        /// Largest N of the reload chain.
        reloads: u64,
        /// Keep the load section.
        load: bool,
        /// The cases directory (default: ./cases, else the one hotlab was built with).
        cases: Option<std::path::PathBuf>,
        /// Cells that crashed an earlier worker: marked crashed, not run again.
        #[serde(default)]
        crashed: Vec<CrashedCell>,
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
            WorkerJob::LadderCode { .. } | WorkerJob::LadderAsm { .. } => "ladder code",
            WorkerJob::RunFile { .. } => "run",
            WorkerJob::AsmFile { .. } => "asm",
            WorkerJob::LadderBuilds { .. } => "ladder",
            WorkerJob::Matrix { .. } => "bench",
            WorkerJob::Panic { .. } => "panic",
        }
    }
}

/// A bench cell that crashed the worker running it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrashedCell {
    /// The case's name.
    pub case: String,
    /// The backend.
    pub backend: Backend,
    /// What ended the worker: `SIGSEGV (invalid memory reference)`.
    pub signal: String,
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
    Progress(LiveSnapshot),
    /// What the job's script printed (`print`): sent just before the job's `Done` or `Failed`
    /// when it printed anything, and at once (possibly empty) in answer to a `Cancel` of the
    /// running job, with what it printed so far.
    Printed {
        /// The lines, each ending with a newline.
        text: String,
    },
    /// The job finished.
    Done(JobReport),
    /// The job failed (the worker goes on).
    Failed(JobFailed),
}

/// One code layout, the usual placement (a job written before layouts existed).
fn one_layout() -> usize {
    1
}
