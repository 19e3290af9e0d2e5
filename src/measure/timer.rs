//! Timers behind one trait (criterion's `Measurement` idea): the fenced TSC, the OS clock and a
//! mock for deterministic tests. Each timer knows its precision and the fixed per-sample
//! overhead of the harness; both are measured once (cached in a `OnceLock`, as divan does),
//! shown in results, and the overhead is subtracted from every sample.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use serde::Serialize;

use super::arch;
use super::units::{Ghz, Picos};
use super::variant::Variant;

/// Which clock a timer reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerKind {
    /// The invariant time-stamp counter, fenced.
    Tsc,
    /// `clock_gettime(CLOCK_MONOTONIC_RAW)`.
    OsClock,
    /// The mock timer of tests.
    Mock,
}

/// What a timer costs and resolves, measured once.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TimerCalibration {
    /// Median difference between two back-to-back reads: the smallest interval it resolves.
    pub precision: Picos,
    /// Median time of an empty sample (start, call of an empty variant, end); subtracted from
    /// every sample.
    pub sample_overhead: Picos,
}

/// A clock the engine reads around samples. Raw readings are ticks; only [`Timer::to_picos`]
/// turns them into time.
pub trait Timer: Send + Sync {
    /// Which clock this is.
    fn kind(&self) -> TimerKind;
    /// Reads the clock at the start of a timed region.
    fn start(&self) -> u64;
    /// Reads the clock at the end of a timed region.
    fn end(&self) -> u64;
    /// Converts a tick count into picoseconds.
    fn to_picos(&self, ticks: u64) -> Picos;
    /// Tick frequency (ticks per ns).
    fn frequency(&self) -> Ghz;
    /// Precision and sample overhead (measured once for real clocks).
    fn calibration(&self) -> TimerCalibration;
}

/// Measures [`TimerCalibration`] for any timer by reading it.
pub fn measure_calibration(timer: &dyn Timer) -> TimerCalibration {
    const REPS: usize = 2001;
    let mut deltas = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        let t0 = timer.start();
        let mut t1 = timer.start();
        // A clock coarser than one read repeats its value: wait for the next tick.
        let mut spins = 0u32;
        while t1 == t0 && spins < 1_000_000 {
            t1 = timer.start();
            spins += 1;
        }
        deltas.push(t1.saturating_sub(t0));
    }
    let precision = timer.to_picos(median_u64(&mut deltas));

    let mut empty = Variant::native("empty", std::hint::black_box);
    deltas.clear();
    for _ in 0..REPS {
        let t0 = timer.start();
        let c = empty.run(0);
        let t1 = timer.end();
        std::hint::black_box(c);
        deltas.push(t1.saturating_sub(t0));
    }
    let sample_overhead = timer.to_picos(median_u64(&mut deltas));
    TimerCalibration {
        precision,
        sample_overhead,
    }
}

fn median_u64(v: &mut [u64]) -> u64 {
    let mid = v.len() / 2;
    *v.select_nth_unstable(mid).1
}

fn monotonic_raw_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC_RAW exists on Linux ≥ 2.6.28.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The OS monotonic clock (`CLOCK_MONOTONIC_RAW`, not slewed by NTP), one tick per ns.
#[derive(Debug, Default)]
pub struct OsTimer;

impl Timer for OsTimer {
    fn kind(&self) -> TimerKind {
        TimerKind::OsClock
    }
    fn start(&self) -> u64 {
        monotonic_raw_ns()
    }
    fn end(&self) -> u64 {
        monotonic_raw_ns()
    }
    fn to_picos(&self, ticks: u64) -> Picos {
        Picos(ticks as f64 * 1e3)
    }
    fn frequency(&self) -> Ghz {
        Ghz(1.0)
    }
    fn calibration(&self) -> TimerCalibration {
        static CAL: OnceLock<TimerCalibration> = OnceLock::new();
        *CAL.get_or_init(|| measure_calibration(self))
    }
}

/// The invariant TSC read with fences, its rate calibrated against `CLOCK_MONOTONIC_RAW`.
#[derive(Debug)]
pub struct TscTimer {
    ticks_per_ns: f64,
}

impl TscTimer {
    /// The calibrated TSC timer, or `None` when the TSC is not invariant or `rdtscp` is
    /// missing (then the TSC rate may change with P-states and is no clock).
    pub fn get() -> Option<&'static TscTimer> {
        static TSC: OnceLock<Option<TscTimer>> = OnceLock::new();
        TSC.get_or_init(|| {
            let f = arch::cpuid_facts();
            (cfg!(target_arch = "x86_64") && f.invariant_tsc && f.rdtscp).then(|| TscTimer {
                ticks_per_ns: calibrate_tsc_rate(),
            })
        })
        .as_ref()
    }
}

/// One (TSC, OS clock) pair, the TSC read taken as the midpoint of two reads around the OS read;
/// the tightest of a few tries.
#[cfg(target_arch = "x86_64")]
fn paired_read() -> (f64, u64) {
    let mut best = (u64::MAX, 0.0, 0u64);
    for _ in 0..7 {
        let a = arch::tsc_start();
        let c = monotonic_raw_ns();
        let b = arch::tsc_end();
        if b - a < best.0 {
            best = (b - a, (a as f64 + b as f64) / 2.0, c);
        }
    }
    (best.1, best.2)
}

/// Ticks per ns over a 50 ms spin: the pair reads are good to about 30 ns, so the rate to about
/// 1 ppm.
#[cfg(target_arch = "x86_64")]
fn calibrate_tsc_rate() -> f64 {
    let (t0, c0) = paired_read();
    while monotonic_raw_ns() - c0 < 50_000_000 {
        std::hint::spin_loop();
    }
    let (t1, c1) = paired_read();
    (t1 - t0) / (c1 - c0) as f64
}

#[cfg(not(target_arch = "x86_64"))]
fn calibrate_tsc_rate() -> f64 {
    1.0
}

impl Timer for TscTimer {
    fn kind(&self) -> TimerKind {
        TimerKind::Tsc
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn start(&self) -> u64 {
        arch::tsc_start()
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn end(&self) -> u64 {
        arch::tsc_end()
    }
    #[cfg(not(target_arch = "x86_64"))]
    fn start(&self) -> u64 {
        monotonic_raw_ns()
    }
    #[cfg(not(target_arch = "x86_64"))]
    fn end(&self) -> u64 {
        monotonic_raw_ns()
    }
    fn to_picos(&self, ticks: u64) -> Picos {
        Picos(ticks as f64 * 1e3 / self.ticks_per_ns)
    }
    fn frequency(&self) -> Ghz {
        Ghz(self.ticks_per_ns)
    }
    fn calibration(&self) -> TimerCalibration {
        static CAL: OnceLock<TimerCalibration> = OnceLock::new();
        *CAL.get_or_init(|| measure_calibration(self))
    }
}

/// The best timer here: the TSC when invariant, else the OS clock.
pub fn best_timer() -> &'static dyn Timer {
    static OS: OsTimer = OsTimer;
    match TscTimer::get() {
        Some(t) => t,
        None => &OS,
    }
}

/// A deterministic clock for tests: time is a counter in picoseconds that advances by
/// `read_cost` on every read and by whatever a test variant calls [`MockTimer::advance`] with.
/// One tick is one picosecond.
#[derive(Debug, Clone)]
pub struct MockTimer {
    now: Arc<AtomicU64>,
    read_cost: u64,
}

impl MockTimer {
    /// A mock clock at 0 whose reads each take `read_cost`.
    pub fn new(read_cost: Picos) -> MockTimer {
        MockTimer {
            now: Arc::new(AtomicU64::new(0)),
            read_cost: read_cost.0.max(1.0) as u64,
        }
    }
    /// Moves the clock forward, as if work took `d`.
    pub fn advance(&self, d: Picos) {
        self.now.fetch_add(d.0.max(0.0) as u64, Ordering::Relaxed);
    }
    /// The current mock time.
    pub fn now(&self) -> Picos {
        Picos(self.now.load(Ordering::Relaxed) as f64)
    }
    fn read(&self) -> u64 {
        self.now.fetch_add(self.read_cost, Ordering::Relaxed) + self.read_cost
    }
}

impl Timer for MockTimer {
    fn kind(&self) -> TimerKind {
        TimerKind::Mock
    }
    fn start(&self) -> u64 {
        self.read()
    }
    fn end(&self) -> u64 {
        self.read()
    }
    fn to_picos(&self, ticks: u64) -> Picos {
        Picos(ticks as f64)
    }
    fn frequency(&self) -> Ghz {
        Ghz(1000.0)
    }
    fn calibration(&self) -> TimerCalibration {
        TimerCalibration {
            precision: Picos(self.read_cost as f64),
            sample_overhead: Picos(self.read_cost as f64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mock_calibration_matches_read_cost() {
        let m = MockTimer::new(Picos(20_000.0));
        let measured = measure_calibration(&m);
        assert_eq!(measured, m.calibration());
    }
}
