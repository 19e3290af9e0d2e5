//! The live snapshots of a measuring job.

use serde::{Deserialize, Serialize};

use super::{HistogramBucket, Quantile};

/// A live snapshot of a measuring job (about 20 a second).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    #[serde(default)]
    pub buckets: Vec<HistogramBucket>,
    /// Running quantiles (p1 … p100).
    #[serde(default)]
    pub percentiles: Vec<Quantile>,
}
