//! What a job produced, defined once: a finished job's [`JobReport`], the [`LiveSnapshot`]s
//! while it measures, and why it failed ([`JobFailed`]). The worker builds these and carries
//! them as the payloads of its wire format (`worker::protocol`, which keeps only its envelope);
//! the session keeps them in its records and re-exports them for the front ends. Their serde
//! form is the wire's, the session file's and `:export json`'s. Nothing here renders text (the
//! session does).

mod failure;
mod live;

use serde::{Deserialize, Serialize};

use crate::cases::check::CheckAnswer;
use crate::export::Table;
use crate::ladder::code::StepCode;
use crate::runtime::reload::ReloadReport;

pub use failure::{AppliedReload, FailureCause, JobFailed, SourceLocation};
pub use live::{LiveContestant, LiveSnapshot};

/// What a finished job produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "output", rename_all = "snake_case")]
pub enum JobReport {
    /// A snippet compiled: its functions.
    Compiled {
        /// The functions.
        functions: Vec<FunctionSummary>,
    },
    /// A function called: its value.
    Ran {
        /// The value, as the language prints it.
        value: String,
        /// µs for the call (compile excluded).
        micros: f64,
    },
    /// The machine code of the snippet's functions.
    Asm {
        /// One per function.
        listings: Vec<FunctionListing>,
    },
    /// Contestants measured interleaved.
    Measured(Measurement),
    /// The machine's health and the engine's self-checks.
    Doctor {
        /// The report as text.
        text: String,
        /// Whether every self-check met its expectation.
        all_met: bool,
    },
    /// A ladder measured.
    Ladder(LadderResult),
    /// A snippet checked against its twin or another snippet.
    Checked(Box<CheckAnswer>),
    /// The case matrix.
    Bench(BenchResult),
    /// The live module reloaded.
    Reloaded(ReloadResult),
    /// A ladder's machine code per step (the TUI's code pane; never recorded).
    LadderCode {
        /// One per step, with its diff from the step before.
        steps: Vec<StepCode>,
    },
    /// `hotlab run` in the worker: `main`'s value, the build's stage times, each reload's
    /// outcome (the one-shot command's job; sessions never ask for it).
    RanFile(RunFileResult),
}

/// What `hotlab run FILE [--reload FILE2]...` did in the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFileResult {
    /// `main`'s values as `run` prints them (space-separated).
    pub value: String,
    /// Each compiled function's lower and compile times (empty for the interpreter).
    pub functions: Vec<FunctionSummary>,
    /// The object backend's stages (name, µs) in pipeline order; empty on other backends.
    pub object_stages: Vec<(String, f64)>,
    /// One per `--reload` version, in order.
    pub reloads: Vec<ReloadStep>,
}

/// One `--reload` of `hotlab run`: applied, or why not (with what it changed first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reload", rename_all = "snake_case")]
pub enum ReloadStep {
    /// Applied.
    Applied(ReloadResult),
    /// Not applied, or applied and then raised (`applied` says what it changed).
    Failed(JobFailed),
}

/// A compiled function: its size and what it took to build.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionSummary {
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

/// One function's code: Cranelift IR and machine code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionListing {
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

/// A measurement: one row per contestant, each later one compared with the first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// One per contestant.
    pub rows: Vec<MeasuredRow>,
    /// With two or more contestants: each against the first (a ladder: also each against the
    /// row before it).
    pub comparisons: Vec<MeasuredComparison>,
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

/// One contestant's measured figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredRow {
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
    /// Histogram quantiles.
    pub percentiles: Vec<Quantile>,
    /// The histogram as rows of bars.
    pub histogram: Vec<String>,
    /// The histogram as counts.
    #[serde(default)]
    pub buckets: Vec<HistogramBucket>,
    /// Hardware counters per op, when they opened (the engine's JSON form).
    pub counters: Option<serde_json::Value>,
}

/// Row B against row A: the ratio of their medians with its CI and the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredComparison {
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

/// One quantile of a histogram.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quantile {
    /// The quantile in [0, 1].
    pub q: f64,
    /// ns per op.
    pub ns: f64,
}

/// One bar of a histogram: how many samples took `lo_ns` up to `hi_ns` per op. The first and
/// last bars also hold the samples below p1 and above p99.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HistogramBucket {
    /// Lower edge, ns per op.
    pub lo_ns: f64,
    /// Upper edge, ns per op.
    pub hi_ns: f64,
    /// Samples in the bucket.
    pub count: u64,
}

/// A measured ladder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LadderResult {
    /// The ladder's name.
    pub ladder: String,
    /// What the ladder called: the snippet's name, or the default empty method.
    pub method: String,
    /// Why the default method was used, if it was.
    pub note: Option<String>,
    /// Machine, timer and health lines.
    pub header: Vec<String>,
    /// The table (step, build, what it adds, total, ratio to native, verdict, ...).
    #[serde(with = "table_form")]
    pub table: Table,
    /// True when every row's checksum equals the native row's.
    pub all_ok: bool,
    /// The report's JSON form (every number; what `hotlab ladder --format json` prints).
    pub report: serde_json::Value,
}

/// The case matrix, in every export format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
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
    /// Each failed cell: `CASE MODE (BACKEND): message` (what `hotlab bench` prints on stderr).
    #[serde(default)]
    pub errors: Vec<String>,
    /// A script cell failed to load or run.
    #[serde(default)]
    pub failed: bool,
    /// A script's result differs from its twin's.
    #[serde(default)]
    pub mismatched: bool,
}

/// What a reload of the live module did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReloadResult {
    /// True when the module was started by this job (nothing to migrate yet).
    pub started: bool,
    /// The value of `main` when the module was started and has one.
    pub main: Option<String>,
    /// The classes reloaded.
    pub classes: Vec<ReloadReport>,
    /// Classes defined for the first time.
    pub defined: Vec<String>,
    /// Module variables that kept their values.
    pub globals_kept: Vec<String>,
    /// The value of `fn after_reload()`, if the new version has one.
    pub after_reload: Option<String>,
}

/// `export::Table` in its serde form: `columns` as names, `>` marking a right-aligned one.
mod table_form {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::export::{Align, Table};

    /// A table as the exports draw it.
    #[derive(Serialize, Deserialize)]
    struct TableForm {
        title: String,
        columns: Vec<String>,
        rows: Vec<Vec<String>>,
        notes: Vec<String>,
    }

    pub fn serialize<S: Serializer>(t: &Table, s: S) -> Result<S::Ok, S::Error> {
        TableForm {
            title: t.title.clone(),
            columns: t
                .columns
                .iter()
                .map(|c| match c.align {
                    Align::Right => format!(">{}", c.name),
                    Align::Left => c.name.clone(),
                })
                .collect(),
            rows: t.rows.clone(),
            notes: t.notes.clone(),
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Table, D::Error> {
        let form = TableForm::deserialize(d)?;
        let columns: Vec<&str> = form.columns.iter().map(String::as_str).collect();
        let mut t = Table::new(form.title, &columns);
        for r in form.rows {
            t.push(r);
        }
        t.notes = form.notes;
        Ok(t)
    }
}
