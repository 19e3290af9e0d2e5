//! Each row's distribution as the last live snapshot of its job showed it, kept in the job's
//! record for the results that do not carry one (a ladder's report, a check's answer, a bench
//! cell): so a front end shows a finished job's histogram, and a resumed session too. Kept
//! compact in the session file: quantiles as `[q, ns]` pairs, bars as `[lo, hi, count]`,
//! nanoseconds rounded to a picosecond.

use serde::{Deserialize, Serialize};

use super::{HistogramBucket, LiveContestant, Quantile};

/// One row's samples, percentiles and histogram bars.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowDistribution {
    /// The row label, as the live snapshot named it.
    pub name: String,
    /// Samples kept.
    pub samples: usize,
    /// Samples dropped as disturbed.
    #[serde(default)]
    pub dropped: usize,
    /// The running median, ns per op.
    #[serde(default)]
    pub median_ns: Option<f64>,
    /// Quantiles: `[q, ns]`.
    #[serde(default)]
    pub p: Vec<[f64; 2]>,
    /// Bars: `[lo_ns, hi_ns, count]`.
    #[serde(default)]
    pub bars: Vec<[f64; 3]>,
}

fn ps(ns: f64) -> f64 {
    (ns * 1e3).round() / 1e3
}

impl RowDistribution {
    /// From a live snapshot's contestant.
    pub fn from_live(c: &LiveContestant) -> RowDistribution {
        RowDistribution {
            name: c.name.clone(),
            samples: c.samples,
            dropped: c.dropped,
            median_ns: c.median_ns.map(ps),
            p: c.percentiles.iter().map(|q| [q.q, ps(q.ns)]).collect(),
            bars: c
                .buckets
                .iter()
                .map(|b| [ps(b.lo_ns), ps(b.hi_ns), b.count as f64])
                .collect(),
        }
    }

    /// The quantiles.
    pub fn percentiles(&self) -> Vec<Quantile> {
        self.p.iter().map(|&[q, ns]| Quantile { q, ns }).collect()
    }

    /// The bars.
    pub fn buckets(&self) -> Vec<HistogramBucket> {
        self.bars
            .iter()
            .map(|&[lo_ns, hi_ns, count]| HistogramBucket {
                lo_ns,
                hi_ns,
                count: count as u64,
            })
            .collect()
    }
}
