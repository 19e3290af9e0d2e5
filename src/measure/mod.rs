//! The measurement engine: timers, variants and jobs, statistics, histograms, counters, the
//! machine's health, and `hotlab doctor`. It depends on no other hotlab module, so every front
//! end (ladders, `check`, live views) builds on it alone. See `docs/measurement.md`.

pub mod arch;
pub mod clock;
pub mod counters;
pub mod doctor;
pub mod env;
pub mod histogram;
pub mod job;
pub(crate) mod near;
pub mod placed;
pub mod result;
pub mod schedule;
pub mod stats;
pub mod steps;
pub mod timer;
pub mod units;
pub mod variant;

pub use job::{Job, NoObserver, Observer, Phase, Progress, Ruler, Settings, Sources, Stop};
pub use result::{Comparison, JobResult, LayoutComparison, PmuAgreement, VariantResult};
pub use stats::verdict::{AbsVerdict, Verdict};
pub use timer::{MockTimer, Timer, best_timer};
pub use units::{Cycles, Ghz, Picos, Ratio};
pub use variant::{RawVariantFn, Variant};

/// Why a job could not run.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// The job has no variants.
    #[error("the job has no variants: add at least one")]
    NoVariants,
    /// A variant index is out of range.
    #[error("variant index {index} is out of range: the job has {len} variants")]
    BadBaseline {
        /// The index given.
        index: usize,
        /// Variants in the job.
        len: usize,
    },
    /// The CPU to pin to is not online.
    #[error("CPU {cpu} is not online (online: {online:?}); choose one of those with --cpu")]
    BadCpu {
        /// The CPU asked for.
        cpu: usize,
        /// Online CPUs.
        online: Vec<usize>,
    },
    /// A setting is out of range.
    #[error("bad measurement setting: {0}")]
    BadSettings(BadSetting),
    /// A variant's time did not grow with its iteration count: no count makes its sample long
    /// enough, so sizing stopped instead of growing the count without end.
    #[error(
        "the work does not depend on n: `{variant}` took as long for n = {to} as for n = {from} \
         (a measured `run(n)` must run n iterations of the work)"
    )]
    NoGrowth {
        /// The variant's name.
        variant: String,
        /// The smallest count probed in the window.
        from: u64,
        /// The largest.
        to: u64,
    },
}

/// Which measurement setting is out of range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BadSetting {
    /// `Stop::Budget` of zero, a negative or not a finite time.
    #[error("the time budget must be a positive number of seconds")]
    Budget,
    /// `Stop::Rounds(0)`.
    #[error("the round count must be at least 1")]
    Rounds,
    /// `jitter` outside [0, 1).
    #[error("jitter must be in [0, 1)")]
    Jitter,
    /// `band` outside (0, 1).
    #[error("the equivalence band must be in (0, 1), e.g. 0.02 for ±2%")]
    Band,
    /// `warmup_share` outside [0, 1).
    #[error("the warm-up share must be in [0, 1)")]
    WarmupShare,
}
