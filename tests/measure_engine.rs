//! The engine on the mock timer: sizing, jitter, round order, phases, cancellation,
//! disturbances and counters through fake sources, and bad input.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hotlab::measure::counters::{CounterAbsence, CounterKind, CounterSource, Reading};
use hotlab::measure::result::StopReason;
use hotlab::measure::schedule::RoundOrder;
use hotlab::measure::stats::blocks;
use hotlab::measure::{
    Job, MeasureError, MockTimer, NoObserver, Phase, Picos, Progress, Settings, Sources, Stop,
    Variant, Verdict,
};

const READ_COST: Picos = Picos(20_000.0); // 20 ns per timer read

/// A variant that "costs" `ps` per iteration on the mock clock, ±`wobble` ps deterministic
/// noise, and logs its index when run.
fn costly(
    timer: &MockTimer,
    idx: usize,
    ps: f64,
    wobble: f64,
    log: Option<Arc<Mutex<Vec<usize>>>>,
) -> Variant {
    let t = timer.clone();
    let mut k = 0u64;
    Variant::native(format!("v{idx}"), move |n| {
        k += 1;
        let noise = wobble * (((k * 2654435761) % 1000) as f64 / 500.0 - 1.0);
        t.advance(Picos((ps + noise) * n as f64));
        if let Some(l) = &log {
            l.lock().unwrap().push(idx);
        }
        n
    })
}

fn rounds(r: u64) -> Settings {
    Settings {
        stop: Stop::Rounds(r),
        pin: false,
        ..Settings::default()
    }
}

fn no_sources() -> Sources {
    Sources::none("not opened in tests")
}

/// Runs `job` on the mock `timer` with no counters, no cancel and no observer.
fn quiet(job: &mut Job, timer: &MockTimer) -> hotlab::measure::JobResult {
    job.run_with(
        timer,
        no_sources(),
        &AtomicBool::new(false),
        &mut NoObserver,
    )
    .unwrap()
}

#[test]
fn sizing_reaches_target_and_per_op_is_exact() {
    let timer = MockTimer::new(READ_COST);
    let mut job = Job::new(rounds(30))
        .with(costly(&timer, 0, 1000.0, 0.0, None))
        .with(costly(&timer, 1, 1100.0, 0.0, None));
    let r = quiet(&mut job, &timer);
    // Target: 1000 × 20 ns = 20 µs; the fastest variant costs 1 ns per iteration.
    assert!(r.iters >= 20_000 && r.iters <= 22_000, "{}", r.iters);
    assert_eq!(r.rounds, 30);
    assert_eq!(r.stopped, StopReason::Rounds);
    let a = r.variants[0].summary.unwrap();
    let b = r.variants[1].summary.unwrap();
    // The sample overhead (one read) is subtracted exactly.
    assert!((a.median.0 - 1000.0).abs() < 1e-6, "{a:?}");
    assert!((b.median.0 - 1100.0).abs() < 1e-6, "{b:?}");
    let c = r.compare(0, 1).unwrap();
    assert_eq!(c.verdict.verdict, Verdict::Slower);
    assert!((c.verdict.ratio.0 - 1.1).abs() < 1e-9);
    // Exact rounds: the interval is the run-level term alone (0.01% of 1.1 ns a side), and the
    // bounds get digits until they differ (`stats::digits`): four decimals.
    assert_eq!(
        c.abs.unwrap().to_string(),
        "adds 0.1000 ns [0.0999, 0.1001]"
    );
    assert!(r.variants.iter().all(|v| v.checksum.is_some()));
}

#[test]
fn jitter_varies_the_shared_count_within_bounds() {
    let timer = MockTimer::new(READ_COST);
    let mut job = Job::new(rounds(200)).with(costly(&timer, 0, 500.0, 0.0, None));
    let r = quiet(&mut job, &timer);
    let ns: Vec<u64> = r.round_records.iter().map(|x| x.iters).collect();
    let (lo, hi) = (*ns.iter().min().unwrap(), *ns.iter().max().unwrap());
    assert!(lo < hi, "no jitter");
    assert!(lo as f64 >= r.iters as f64 * 0.9 - 1.0 && hi as f64 <= r.iters as f64 * 1.1 + 1.0);
}

#[test]
fn round_order_changes_every_round_and_is_balanced() {
    for k in 2..=5 {
        let timer = MockTimer::new(READ_COST);
        let log = Arc::new(Mutex::new(Vec::new()));
        let period = RoundOrder::new(k).period() as u64;
        let r_count = period * 6;
        let mut settings = rounds(r_count);
        settings.warmup_share = 0.0;
        let mut job = Job::new(settings);
        for i in 0..k {
            job = job.with(costly(&timer, i, 1000.0, 0.0, Some(log.clone())));
        }
        let r = quiet(&mut job, &timer);
        assert_eq!(r.rounds as u64, r_count);
        let log = log.lock().unwrap();
        let collected = &log[log.len() - (r_count as usize * k)..];
        let orders: Vec<&[usize]> = collected.chunks(k).collect();
        for w in orders.windows(2) {
            assert_ne!(w[0], w[1], "k = {k}: order repeated");
        }
        for pos in 0..k {
            for v in 0..k {
                let count = orders.iter().filter(|o| o[pos] == v).count() as u64;
                assert_eq!(count, r_count / k as u64, "k = {k}, pos {pos}, variant {v}");
            }
        }
    }
}

#[test]
fn phases_are_reported_in_order_and_cancel_stops() {
    let timer = MockTimer::new(READ_COST);
    let cancel = AtomicBool::new(false);
    let phases = Mutex::new(Vec::new());
    let mut observer = |p: &Progress<'_>| {
        let mut ph = phases.lock().unwrap();
        if ph.last() != Some(&p.phase) {
            ph.push(p.phase);
        }
        assert_eq!(p.histograms.len(), 2);
        if p.phase == Phase::Collect && p.rounds >= 5 {
            cancel.store(true, Ordering::Relaxed);
        }
    };
    let mut job = Job::new(Settings {
        stop: Stop::Budget(Picos(3600e12)), // an hour of mock time: only the cancel can stop it
        pin: false,
        ..Settings::default()
    })
    .with(costly(&timer, 0, 1000.0, 50.0, None))
    .with(costly(&timer, 1, 1000.0, 50.0, None));
    let r = job
        .run_with(&timer, no_sources(), &cancel, &mut observer)
        .unwrap();
    assert_eq!(r.stopped, StopReason::Cancelled);
    assert!(r.rounds >= 5 && r.rounds < 10_000, "{}", r.rounds);
    assert_eq!(
        *phases.lock().unwrap(),
        vec![Phase::Calibrate, Phase::Warmup, Phase::Collect, Phase::Done]
    );
}

#[test]
fn a_preset_cancel_stops_before_any_round() {
    let timer = MockTimer::new(READ_COST);
    let mut job = Job::new(rounds(10)).with(costly(&timer, 0, 1000.0, 0.0, None));
    let r = job
        .run_with(
            &timer,
            no_sources(),
            &AtomicBool::new(true),
            &mut NoObserver,
        )
        .unwrap();
    assert_eq!((r.stopped, r.rounds), (StopReason::Cancelled, 0));
    assert!(
        r.compare(0, 0)
            .unwrap()
            .verdict
            .explanation
            .contains("only 0")
    );
}

/// A fake counter group: every value grows by `step` per read; every `switch_every`-th read a
/// context switch is added.
struct Fake {
    kinds: Vec<CounterKind>,
    reads: Arc<AtomicU64>,
    step: u64,
    switch_every: u64,
    running_share: f64,
}

impl CounterSource for Fake {
    fn kinds(&self) -> &[CounterKind] {
        &self.kinds
    }
    fn read(&mut self) -> io::Result<Reading> {
        let i = self.reads.fetch_add(1, Ordering::Relaxed) + 1;
        let switches = i.checked_div(self.switch_every).unwrap_or(0);
        let values = self
            .kinds
            .iter()
            .map(|k| match k {
                CounterKind::ContextSwitches => switches,
                CounterKind::CpuMigrations => 0,
                CounterKind::Cycles => i * self.step,
                _ => i * self.step * 2,
            })
            .collect();
        Ok(Reading {
            values,
            time_enabled: i * 1000,
            time_running: (i as f64 * 1000.0 * self.running_share) as u64,
        })
    }
}

#[test]
fn disturbed_samples_are_dropped_and_counted_and_counters_scaled() {
    let timer = MockTimer::new(READ_COST);
    let dist = Fake {
        kinds: vec![CounterKind::ContextSwitches, CounterKind::CpuMigrations],
        reads: Arc::new(AtomicU64::new(0)),
        step: 0,
        switch_every: 7,
        running_share: 1.0,
    };
    let hw = Fake {
        kinds: vec![CounterKind::Cycles, CounterKind::Instructions],
        reads: Arc::new(AtomicU64::new(0)),
        step: 1_000_000,
        switch_every: 0,
        running_share: 0.5,
    };
    let sources = Sources {
        disturbances: Ok(Box::new(dist)),
        hardware: Ok(Box::new(hw)),
    };
    let mut job = Job::new(rounds(100))
        .with(costly(&timer, 0, 1000.0, 0.0, None))
        .with(costly(&timer, 1, 1000.0, 0.0, None));
    let r = job
        .run_with(&timer, sources, &AtomicBool::new(false), &mut NoObserver)
        .unwrap();
    let dropped: usize = r.variants.iter().map(|v| v.dropped).sum();
    let kept: usize = r.variants.iter().map(|v| v.samples).sum();
    assert!(dropped > 0, "nothing dropped");
    assert_eq!(dropped + kept, 200);
    assert!(r.disturbances.reason.is_none());
    let c = r.variants[0].counters.as_ref().unwrap();
    assert!(c.multiplexed);
    let per = |k| c.per_op.iter().find(|(x, _)| *x == k).unwrap().1;
    // Each sample spans one hardware read pair: 1e6 cycles, scaled ×2 for 50 % running.
    let per_sample_iters = r.iters as f64;
    assert!((per(CounterKind::Cycles) * per_sample_iters / 2e6 - 1.0).abs() < 0.11);
    assert!((c.ipc.unwrap() - 2.0).abs() < 1e-9);
}

/// A machine that disturbs every sample: sizing still ends at the target (from the disturbed
/// times) instead of growing the count without bound, and every collected sample is dropped
/// and counted.
#[test]
fn sizing_ends_when_every_probe_is_disturbed() {
    let timer = MockTimer::new(READ_COST);
    let dist = Fake {
        kinds: vec![CounterKind::ContextSwitches, CounterKind::CpuMigrations],
        reads: Arc::new(AtomicU64::new(0)),
        step: 0,
        switch_every: 1,
        running_share: 1.0,
    };
    let sources = Sources {
        disturbances: Ok(Box::new(dist)),
        hardware: Err(CounterAbsence::NotOpened("none".into())),
    };
    let mut job = Job::new(rounds(10))
        .with(costly(&timer, 0, 1000.0, 0.0, None))
        .with(costly(&timer, 1, 1000.0, 0.0, None));
    let r = job
        .run_with(&timer, sources, &AtomicBool::new(false), &mut NoObserver)
        .unwrap();
    // The same target as undisturbed sizing: 1000 × 20 ns at 1 ns per iteration.
    assert!(r.iters >= 20_000 && r.iters <= 22_000, "{}", r.iters);
    let dropped: usize = r.variants.iter().map(|v| v.dropped).sum();
    assert_eq!(dropped, 20);
    assert!(r.variants.iter().all(|v| v.samples == 0));
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let timer = MockTimer::new(READ_COST);
    let cancel = AtomicBool::new(false);
    let mut empty = Job::new(rounds(5));
    assert!(matches!(
        empty.run_with(&timer, no_sources(), &cancel, &mut NoObserver),
        Err(MeasureError::NoVariants)
    ));
    let mut s = rounds(5);
    s.baseline = 3;
    let mut j = Job::new(s).with(costly(&timer, 0, 1.0, 0.0, None));
    assert!(matches!(
        j.run_with(&timer, no_sources(), &cancel, &mut NoObserver),
        Err(MeasureError::BadBaseline { index: 3, len: 1 })
    ));
    for stop in [
        Stop::Rounds(0),
        Stop::Budget(Picos(-1.0)),
        Stop::Budget(Picos(f64::NAN)),
    ] {
        let mut j = Job::new(Settings {
            stop,
            pin: false,
            ..Settings::default()
        })
        .with(costly(&timer, 0, 1.0, 0.0, None));
        let e = j
            .run_with(&timer, no_sources(), &cancel, &mut NoObserver)
            .unwrap_err();
        assert!(e.to_string().starts_with("bad measurement setting"), "{e}");
    }
    let mut j = Job::new(rounds(6)).with(costly(&timer, 0, 1.0, 0.0, None));
    let r = j
        .run_with(&timer, no_sources(), &cancel, &mut NoObserver)
        .unwrap();
    assert!(r.compare(0, 1).is_err());
    assert_eq!(
        r.disturbances.reason.as_deref(),
        Some("not opened in tests")
    );
}

/// A core clock that the ruler slows down half-way through the job: every variant's cost is
/// given in cycles and takes `cycles × period` on the mock clock.
struct MovingClock {
    timer: MockTimer,
    /// Picoseconds per cycle now.
    period: Arc<AtomicU64>,
}

impl MovingClock {
    fn variant(&self, name: &str, cycles: f64) -> Variant {
        let (t, period) = (self.timer.clone(), self.period.clone());
        Variant::native(name.to_string(), move |n| {
            let p = period.load(Ordering::Relaxed) as f64;
            t.advance(Picos(cycles * p * n as f64));
            n
        })
    }

    /// A 64-cycle ruler that switches the clock from 400 to 250 ps per cycle after `after`
    /// of its runs.
    fn ruler(&self, after: u64) -> hotlab::measure::Ruler {
        let (t, period) = (self.timer.clone(), self.period.clone());
        let mut runs = 0u64;
        let variant = Variant::native("ruler", move |n| {
            runs += 1;
            if runs == after {
                period.store(250, Ordering::Relaxed);
            }
            let p = period.load(Ordering::Relaxed) as f64;
            t.advance(Picos(64.0 * p * n as f64));
            n
        });
        hotlab::measure::Ruler {
            variant,
            cycles_per_iter: 64.0,
        }
    }
}

#[test]
fn the_ruler_turns_times_into_cycles_with_the_clock_of_each_round() {
    let clock = MovingClock {
        timer: MockTimer::new(READ_COST),
        period: Arc::new(AtomicU64::new(400)),
    };
    let mut job = Job::new(rounds(40))
        .with(clock.variant("three", 3.0))
        .with(clock.variant("five", 5.0))
        .with_ruler(clock.ruler(25));
    let r = quiet(&mut job, &clock.timer);
    // The clock moved (400 ps = 2.5 GHz, then 250 ps = 4 GHz): the times are a mixture, the
    // cycles are exact in every round.
    let ruler = r.ruler.expect("a ruler summary");
    assert!((ruler.ghz_min - 2.5).abs() < 1e-9, "{ruler:?}");
    assert!((ruler.ghz_max - 4.0).abs() < 1e-9, "{ruler:?}");
    let three = r.variants[0].cycles.expect("cycles from the ruler");
    assert!((three.estimate - 3.0).abs() < 1e-9, "{three:?}");
    // Exact in every round: the interval is the run-level term alone (0.01% of 3 cycles a side).
    let term = blocks::RUN_LEVEL * 3.0;
    assert!((three.low - (3.0 - term)).abs() < 1e-9, "{three:?}");
    assert!((three.high - (3.0 + term)).abs() < 1e-9, "{three:?}");
    assert!((r.variants[1].cycles_est.unwrap().0 - 5.0).abs() < 1e-9);
    let a = r.variants[0].summary.unwrap();
    assert!(a.max.0 > a.min.0 * 1.5, "the times did move: {a:?}");
    let c = r.compare(0, 1).unwrap();
    assert!((c.diff_cycles.unwrap().0 - 2.0).abs() < 1e-9, "{c:?}");
}

#[test]
fn without_a_ruler_a_mock_job_has_no_ruler_cycles() {
    let timer = MockTimer::new(READ_COST);
    let mut job = Job::new(rounds(10)).with(costly(&timer, 0, 1000.0, 0.0, None));
    let r = quiet(&mut job, &timer);
    assert!(r.ruler.is_none());
    assert!(r.variants[0].cycles.is_none());
}

#[test]
fn the_ruler_takes_every_position_of_a_round_in_turn() {
    let timer = MockTimer::new(READ_COST);
    let log = Arc::new(Mutex::new(Vec::new()));
    let ruler_log = log.clone();
    let t = timer.clone();
    let ruler = hotlab::measure::Ruler {
        variant: Variant::native("ruler", move |n| {
            t.advance(Picos(64.0 * 300.0 * n as f64));
            ruler_log.lock().unwrap().push(usize::MAX);
            n
        }),
        cycles_per_iter: 64.0,
    };
    let settings = Settings {
        warmup_share: 0.0,
        jitter: 0.0,
        ..rounds(6)
    };
    let mut job = Job::new(settings)
        .with(costly(&timer, 0, 1000.0, 0.0, Some(log.clone())))
        .with(costly(&timer, 1, 1000.0, 0.0, Some(log.clone())))
        .with_ruler(ruler);
    quiet(&mut job, &timer);
    let log = log.lock().unwrap();
    // The last 6 rounds × 3 samples are the collected rounds (sizing probes come first).
    let rounds: Vec<&[usize]> = log[log.len() - 18..].chunks(3).collect();
    let positions: Vec<usize> = rounds
        .iter()
        .map(|r| r.iter().position(|&i| i == usize::MAX).unwrap())
        .collect();
    assert_eq!(positions, vec![0, 1, 2, 0, 1, 2]);
}

/// A cycle counter that reads what the variants say they spent: a PMU as it should be, or one
/// that counts `scale` times too many (a reference clock, say).
struct CycleCounter {
    kinds: Vec<CounterKind>,
    cycles: Arc<AtomicU64>,
    scale: u64,
    reads: u64,
}

impl CounterSource for CycleCounter {
    fn kinds(&self) -> &[CounterKind] {
        &self.kinds
    }
    fn read(&mut self) -> io::Result<Reading> {
        // Always scheduled: enabled and running move together.
        self.reads += 1;
        Ok(Reading {
            values: vec![self.cycles.load(Ordering::Relaxed) * self.scale],
            time_enabled: self.reads * 1000,
            time_running: self.reads * 1000,
        })
    }
}

fn pmu_and_ruler(scale: u64) -> hotlab::measure::JobResult {
    let timer = MockTimer::new(READ_COST);
    let cycles = Arc::new(AtomicU64::new(0));
    // 300 ps per cycle; each variant advances the clock and the cycle count alike.
    let spend = |name: &str, per_op: u64| {
        let (t, c) = (timer.clone(), cycles.clone());
        Variant::native(name.to_string(), move |n| {
            t.advance(Picos(300.0 * (per_op * n) as f64));
            c.fetch_add(per_op * n, Ordering::Relaxed);
            n
        })
    };
    let ruler = hotlab::measure::Ruler {
        variant: spend("ruler", 64),
        cycles_per_iter: 64.0,
    };
    let sources = Sources {
        disturbances: Err(CounterAbsence::NotOpened("none".into())),
        hardware: Ok(Box::new(CycleCounter {
            kinds: vec![CounterKind::Cycles],
            cycles: cycles.clone(),
            scale,
            reads: 0,
        })),
    };
    let mut job = Job::new(rounds(30))
        .with(spend("seven", 7))
        .with(spend("twelve", 12))
        .with_ruler(ruler);
    job.run_with(&timer, sources, &AtomicBool::new(false), &mut NoObserver)
        .unwrap()
}

#[test]
fn a_pmu_is_shown_beside_the_ruler_and_their_agreement_judged() {
    let r = pmu_and_ruler(1);
    for (v, want) in r.variants.iter().zip([7.0, 12.0]) {
        let a = v.pmu_vs_ruler.expect("both the PMU and the ruler counted");
        assert!((a.ruler_cycles - want).abs() < 1e-9, "{a:?}");
        assert!((a.pmu_cycles - want).abs() < 1e-6, "{a:?}");
        assert!(a.agree && a.relative.abs() < 1e-6, "{a:?}");
    }
    // A PMU counting a clock three times as fast disagrees, and says by how much.
    let r = pmu_and_ruler(3);
    let a = r.variants[0].pmu_vs_ruler.unwrap();
    assert!(!a.agree, "{a:?}");
    assert!((a.relative - 2.0).abs() < 1e-6, "{a:?}");
}
