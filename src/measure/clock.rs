//! The calibrated core clock: where there are no hardware counters, time becomes cycles by
//! timing a dependent chain of `add`s, which retires one add per core cycle on any
//! out-of-order x86 core (the method of uarch-bench, Travis Downs). Two chain lengths are timed
//! so the one-add-per-cycle assumption is checked: per-add times must agree.

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
    /// Time per add with a 64-add chain.
    pub per_add_64: Picos,
    /// Time per add with a 128-add chain; equal to `per_add_64` when the model holds.
    pub per_add_128: Picos,
}

impl CoreClock {
    /// Relative disagreement of the two chain lengths (0.0 = the model fits exactly).
    pub fn linearity_error(&self) -> f64 {
        (self.per_add_128.0 / self.per_add_64.0 - 1.0).abs()
    }
}

/// Fastest of 31 runs of about 1 ms: the minimum is the undisturbed run.
fn per_add<const K: usize>(timer: &dyn Timer) -> Picos {
    let n = 1_000_000 / K as u64 * 3;
    let mut best = f64::INFINITY;
    for _ in 0..31 {
        let t0 = timer.start();
        let s = add_chain::<K>(std::ptr::null_mut(), n);
        let t1 = timer.end();
        std::hint::black_box(s);
        best = best.min(timer.to_picos(t1.saturating_sub(t0)).0);
    }
    Picos(best / (n * K as u64) as f64)
}

/// Measures the core clock with `timer` (about 100 ms).
pub fn measure_core_clock(timer: &dyn Timer) -> CoreClock {
    // Warm up so the core leaves any low-power state before the timed runs.
    per_add::<64>(timer);
    let per_add_64 = per_add::<64>(timer);
    let per_add_128 = per_add::<128>(timer);
    CoreClock {
        ghz: Ghz(1e3 / per_add_64.0),
        per_add_64,
        per_add_128,
    }
}

/// The core clock measured once with the best timer, cached.
pub fn core_clock() -> CoreClock {
    static CLOCK: OnceLock<CoreClock> = OnceLock::new();
    *CLOCK.get_or_init(|| measure_core_clock(super::timer::best_timer()))
}
