//! The calibrated core clock: where there are no hardware counters, time becomes cycles by
//! timing a dependent chain of `add`s, which retires one add per core cycle on any
//! out-of-order x86 core (the method of uarch-bench, Travis Downs). Two chain lengths are timed
//! so the one-add-per-cycle assumption is checked: per-add times must agree. The two lengths are
//! timed in back-to-back pairs, so a clock that moves while calibrating shows as movement, not
//! as a failed check. Jobs do better still: their ruler (`job::Ruler`) is timed in every round.

use std::sync::OnceLock;

use serde::Serialize;

use super::arch::add_chain;
use super::timer::Timer;
use super::units::{Ghz, Picos};

/// The calibrated core clock.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CoreClock {
    /// Adds per ns along a 64-long chain: the core frequency if one add takes one cycle.
    pub ghz: Ghz,
    /// Time per add with a 64-add chain (the fastest run).
    pub per_add_64: Picos,
    /// Time per add with a 128-add chain (the fastest run); equal to `per_add_64` when the
    /// model holds.
    pub per_add_128: Picos,
    /// Median over the runs of (128-chain per-add time / 64-chain per-add time), each pair
    /// timed back to back: 1.0 when one add takes one cycle, whatever the clock did between
    /// pairs.
    pub paired_ratio: f64,
    /// Slowest and fastest clock among the runs of the 64-add chain, in GHz: how far the
    /// clock moved while calibrating.
    pub ghz_min: Ghz,
    /// See `ghz_min`.
    pub ghz_max: Ghz,
}

impl CoreClock {
    /// Relative disagreement of the two chain lengths, timed in pairs (0.0 = the model fits
    /// exactly).
    pub fn linearity_error(&self) -> f64 {
        (self.paired_ratio - 1.0).abs()
    }

    /// How far the clock moved during calibration, relative to its fastest (0.0 = steady).
    pub fn movement(&self) -> f64 {
        1.0 - self.ghz_min.0 / self.ghz_max.0
    }
}

/// Time per add of one run of about 1 ms of a `K`-add chain.
fn one_run<const K: usize>(timer: &dyn Timer) -> Picos {
    let n = 1_000_000 / K as u64 * 3;
    let t0 = timer.start();
    let s = add_chain::<K>(std::ptr::null_mut(), n);
    let t1 = timer.end();
    std::hint::black_box(s);
    Picos(timer.to_picos(t1.saturating_sub(t0)).0 / (n * K as u64) as f64)
}

/// Measures the core clock with `timer` (about 100 ms): 31 pairs of runs, a 64-add chain then
/// a 128-add chain back to back (alternating which goes first), so that a clock that moves
/// between pairs moves both runs of a pair alike and the linearity check compares like with
/// like.
pub fn measure_core_clock(timer: &dyn Timer) -> CoreClock {
    // Warm up so the core leaves any low-power state before the timed runs.
    for _ in 0..8 {
        one_run::<64>(timer);
    }
    let mut ratios = Vec::with_capacity(31);
    let (mut best64, mut best128, mut worst64) = (f64::INFINITY, f64::INFINITY, 0.0f64);
    for i in 0..31 {
        let (a, b) = if i % 2 == 0 {
            let a = one_run::<64>(timer);
            (a, one_run::<128>(timer))
        } else {
            let b = one_run::<128>(timer);
            (one_run::<64>(timer), b)
        };
        ratios.push(b.0 / a.0);
        best64 = best64.min(a.0);
        worst64 = worst64.max(a.0);
        best128 = best128.min(b.0);
    }
    CoreClock {
        ghz: Ghz(1e3 / best64),
        per_add_64: Picos(best64),
        per_add_128: Picos(best128),
        paired_ratio: super::stats::summary::median(&ratios),
        ghz_min: Ghz(1e3 / worst64),
        ghz_max: Ghz(1e3 / best64),
    }
}

/// The core clock measured once with the best timer, cached.
pub fn core_clock() -> CoreClock {
    static CLOCK: OnceLock<CoreClock> = OnceLock::new();
    *CLOCK.get_or_init(|| measure_core_clock(super::timer::best_timer()))
}
