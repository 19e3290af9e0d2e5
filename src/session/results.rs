//! The session's results model: what a finished job produced ([`JobReport`]), the live
//! snapshots while it measures ([`LiveSnapshot`]), and why it failed ([`JobFailed`]). The front
//! ends read these types only. The worker's wire format (`worker::protocol`) converts into them
//! as a job's answer arrives, so the two can change apart; the serde form here is the session
//! file's (and `:export json`'s), which keeps its old shape.

use serde::{Deserialize, Serialize};

use crate::cases::check::CheckAnswer;
use crate::export::Table;
use crate::worker::protocol as wire;

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
    Checked(CheckAnswer),
    /// The case matrix.
    Bench(BenchResult),
    /// The live module reloaded.
    Reloaded(ReloadResult),
    /// A ladder's machine code per step (the TUI's code pane; never recorded).
    LadderCode {
        /// One per step, with its diff from the step before.
        steps: Vec<crate::ladder::code::StepCode>,
    },
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

/// A live snapshot of a measuring job (about 20 a second).
#[derive(Debug, Clone, PartialEq)]
pub struct LiveSnapshot {
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
    pub variants: Vec<LiveContestant>,
}

/// The running figures of one contestant.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveContestant {
    /// The row label.
    pub name: String,
    /// Samples kept.
    pub samples: usize,
    /// Samples dropped as disturbed.
    pub dropped: usize,
    /// Running median, ns per op.
    pub median_ns: Option<f64>,
    /// The histogram as a few rows of bars.
    pub histogram: Vec<String>,
    /// The histogram as counts, for front ends that draw their own bars (a TUI).
    pub buckets: Vec<HistogramBucket>,
    /// Running quantiles (p1 … p100).
    pub percentiles: Vec<Quantile>,
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
}

/// What a reload of the live module did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReloadResult {
    /// True when the module was started by this job (nothing to migrate yet).
    pub started: bool,
    /// The value of `main` when the module was started and has one.
    pub main: Option<String>,
    /// The classes reloaded.
    pub classes: Vec<ClassChange>,
    /// Classes defined for the first time.
    pub defined: Vec<String>,
    /// Module variables that kept their values.
    pub globals_kept: Vec<String>,
    /// The value of `fn after_reload()`, if the new version has one.
    pub after_reload: Option<String>,
}

/// What a reload did to one class and its live objects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassChange {
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

/// Why a job failed in a healthy worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureCause {
    /// The snippet or the request is wrong (a diagnostic, a missing function).
    Input,
    /// The script raised an error at run time.
    Script,
    /// The job needs a feature this build does not have.
    Unavailable,
    /// The worker panicked (a bug in hotlab); the worker goes on.
    Panic,
}

/// Where in a snippet a failure is, when it has a place (a diagnostic's first span).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLocation {
    /// The snippet's name.
    pub snippet: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

/// A reload that was applied before the script failed: what it did to the classes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedReload {
    /// The snippet reloaded.
    pub snippet: String,
    /// The classes reloaded.
    pub classes: Vec<ClassChange>,
    /// Classes defined for the first time.
    pub defined: Vec<String>,
}

/// A job that failed: why, the message (diagnostics already drawn with their source lines),
/// where, and what an applied reload changed first. Its text is what the front ends show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", super::render::failure_text(self))]
pub struct JobFailed {
    /// Why.
    pub cause: FailureCause,
    /// What went wrong.
    pub message: String,
    /// Where, when the failure has a place in the snippet.
    pub location: Option<SourceLocation>,
    /// A reload applied before the failure.
    pub applied: Option<AppliedReload>,
}

/// `export::Table` in the session file: `columns` as names, `>` marking a right-aligned one.
mod table_form {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::wire::TableOut;
    use crate::export::Table;

    pub fn serialize<S: Serializer>(table: &Table, s: S) -> Result<S::Ok, S::Error> {
        TableOut::from(table).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Table, D::Error> {
        TableOut::deserialize(d).map(|t| t.table())
    }
}

fn all<A, B: From<A>>(v: Vec<A>) -> Vec<B> {
    v.into_iter().map(B::from).collect()
}

impl From<wire::JobOutput> for JobReport {
    fn from(o: wire::JobOutput) -> JobReport {
        use wire::JobOutput as W;
        match o {
            W::Compiled { functions } => JobReport::Compiled {
                functions: all(functions),
            },
            W::Ran { value, micros } => JobReport::Ran { value, micros },
            W::Asm { listings } => JobReport::Asm {
                listings: all(listings),
            },
            W::Measured(m) => JobReport::Measured(m.into()),
            W::Doctor { text, all_met } => JobReport::Doctor { text, all_met },
            W::Ladder(l) => JobReport::Ladder(l.into()),
            W::Checked(a) => JobReport::Checked(a),
            W::Bench(b) => JobReport::Bench(b.into()),
            W::Reloaded(r) => JobReport::Reloaded(r.into()),
            W::LadderCode { steps } => JobReport::LadderCode { steps },
        }
    }
}

impl From<wire::FunctionInfo> for FunctionSummary {
    fn from(f: wire::FunctionInfo) -> FunctionSummary {
        let wire::FunctionInfo {
            name,
            bytes,
            instructions,
            lower_us,
            compile_us,
        } = f;
        FunctionSummary {
            name,
            bytes,
            instructions,
            lower_us,
            compile_us,
        }
    }
}

impl From<wire::Listing> for FunctionListing {
    fn from(l: wire::Listing) -> FunctionListing {
        let wire::Listing {
            name,
            clif,
            asm,
            bytes,
            instructions,
        } = l;
        FunctionListing {
            name,
            clif,
            asm,
            bytes,
            instructions,
        }
    }
}

impl From<wire::Measured> for Measurement {
    fn from(m: wire::Measured) -> Measurement {
        Measurement {
            rows: all(m.rows),
            comparisons: all(m.comparisons),
            iters: m.iters,
            rounds: m.rounds,
            stopped: m.stopped,
            elapsed_s: m.elapsed_s,
            cpu: m.cpu,
            pin_note: m.pin_note,
            timer: m.timer,
            no_counters: m.no_counters,
        }
    }
}

impl From<wire::MeasuredRowOut> for MeasuredRow {
    fn from(r: wire::MeasuredRowOut) -> MeasuredRow {
        MeasuredRow {
            name: r.name,
            samples: r.samples,
            dropped: r.dropped,
            median_ns: r.median_ns,
            mad_ns: r.mad_ns,
            min_ns: r.min_ns,
            max_ns: r.max_ns,
            cycles_est: r.cycles_est,
            outliers: r.outliers,
            unstable: r.unstable,
            checksum: r.checksum,
            percentiles: all(r.percentiles),
            histogram: r.histogram,
            buckets: all(r.buckets),
            counters: r.counters,
        }
    }
}

impl From<wire::ComparisonOut> for MeasuredComparison {
    fn from(c: wire::ComparisonOut) -> MeasuredComparison {
        MeasuredComparison {
            a: c.a,
            b: c.b,
            verdict: c.verdict,
            ratio: c.ratio,
            low: c.low,
            high: c.high,
            band: c.band,
            explanation: c.explanation,
            diff_ns: c.diff_ns,
        }
    }
}

impl From<wire::Percentile> for Quantile {
    fn from(p: wire::Percentile) -> Quantile {
        Quantile { q: p.q, ns: p.ns }
    }
}

impl From<wire::Bucket> for HistogramBucket {
    fn from(b: wire::Bucket) -> HistogramBucket {
        HistogramBucket {
            lo_ns: b.lo_ns,
            hi_ns: b.hi_ns,
            count: b.count,
        }
    }
}

impl From<wire::LiveProgress> for LiveSnapshot {
    fn from(p: wire::LiveProgress) -> LiveSnapshot {
        LiveSnapshot {
            phase: p.phase,
            rounds: p.rounds,
            elapsed_ms: p.elapsed_ms,
            budget_ms: p.budget_ms,
            iters: p.iters,
            variants: all(p.variants),
        }
    }
}

impl From<wire::LiveVariant> for LiveContestant {
    fn from(v: wire::LiveVariant) -> LiveContestant {
        LiveContestant {
            name: v.name,
            samples: v.samples,
            dropped: v.dropped,
            median_ns: v.median_ns,
            histogram: v.histogram,
            buckets: all(v.buckets),
            percentiles: all(v.percentiles),
        }
    }
}

impl From<wire::LadderOut> for LadderResult {
    fn from(l: wire::LadderOut) -> LadderResult {
        LadderResult {
            ladder: l.ladder,
            method: l.method,
            note: l.note,
            header: l.header,
            table: l.table.table(),
            all_ok: l.all_ok,
            report: l.report,
        }
    }
}

impl From<wire::BenchOut> for BenchResult {
    fn from(b: wire::BenchOut) -> BenchResult {
        BenchResult {
            text: b.text,
            markdown: b.markdown,
            csv: b.csv,
            json: b.json,
            problems: b.problems,
        }
    }
}

impl From<wire::ReloadOut> for ReloadResult {
    fn from(r: wire::ReloadOut) -> ReloadResult {
        ReloadResult {
            started: r.started,
            main: r.main,
            classes: all(r.classes),
            defined: r.defined,
            globals_kept: r.globals_kept,
            after_reload: r.after_reload,
        }
    }
}

impl From<wire::ClassReload> for ClassChange {
    fn from(c: wire::ClassReload) -> ClassChange {
        ClassChange {
            class: c.class,
            version: c.version,
            migrated: c.migrated,
            kept: c.kept,
            added: c.added,
            removed: c.removed,
            retyped: c.retyped,
            reset: c.reset,
            unloaded: c.unloaded,
        }
    }
}

impl From<&crate::runtime::reload::ReloadReport> for ClassChange {
    fn from(r: &crate::runtime::reload::ReloadReport) -> ClassChange {
        wire::ClassReload::from(r).into()
    }
}

impl From<wire::JobFailure> for JobFailed {
    fn from(f: wire::JobFailure) -> JobFailed {
        JobFailed {
            cause: match f.kind {
                wire::FailureKind::Input => FailureCause::Input,
                wire::FailureKind::Script => FailureCause::Script,
                wire::FailureKind::Unavailable => FailureCause::Unavailable,
                wire::FailureKind::Panic => FailureCause::Panic,
            },
            message: f.message,
            location: f.location.map(|l| SourceLocation {
                snippet: l.snippet,
                line: l.line,
                column: l.column,
            }),
            applied: f.applied.map(|a| AppliedReload {
                snippet: a.snippet,
                classes: all(a.classes),
                defined: a.defined,
            }),
        }
    }
}
