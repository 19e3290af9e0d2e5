//! Jobs: variants plus settings, run in explicit phases — `Calibrate` (timer calibration and
//! sizing of the shared iteration count), `Warmup` (rounds that are run and thrown away), and
//! `Collect` (rounds that count). Every round runs each variant once, with the round's jittered
//! iteration count, in the order of a Williams square (see `schedule`), so drift hits all
//! variants alike and every round yields paired samples.
//!
//! Counter groups are read outside the timed region, around each sample. A sample during which
//! the thread was switched out or migrated is dropped and counted. Cancellation is checked
//! before every sample; the observer is called between rounds at most every 50 ms (and at phase
//! changes), never inside a timed region.

use std::sync::atomic::{AtomicBool, Ordering};

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::Serialize;

use super::counters::{self, CounterAbsence, CounterSource, CounterTotals, PerfGroup, Reading};
use super::histogram::OpHistogram;
use super::result::{self, JobResult, RoundRecord, TimerInfo};
use super::schedule::{self, RoundOrder};
use super::stats::verdict::DEFAULT_BAND;
use super::timer::{Timer, TimerKind, best_timer};
use super::units::Picos;
use super::variant::Variant;
use super::{BadSetting, MeasureError, clock, env};

/// When collection stops.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// After this much time for the whole job (calibration, warm-up and collection).
    Budget(Picos),
    /// After this many collected rounds.
    Rounds(u64),
}

/// How a job is run.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// When to stop (default: a 1 s budget).
    pub stop: Stop,
    /// CPU to pin to; `None` picks one (see `env::pin::auto_cpu`).
    pub cpu: Option<usize>,
    /// Whether `Job::run` pins at all.
    pub pin: bool,
    /// Equivalence band for verdicts (default 0.02 = ±2 %).
    pub band: f64,
    /// Index of the variant others are compared with.
    pub baseline: usize,
    /// Seed of the jitter.
    pub seed: u64,
    /// Relative jitter of the per-round iteration count (default 0.1 = ±10 %).
    pub jitter: f64,
    /// Smallest sample, whatever the timer's precision (default 10 µs).
    pub min_sample: Picos,
    /// A sample must be at least this many times the timer's precision (default 1000).
    pub precision_factor: f64,
    /// Share of a time budget spent warming up, or of a round count (default 0.1).
    pub warmup_share: f64,
    /// Whether to open hardware counters (`Job::run`).
    pub counters: bool,
    /// Whether every round also times the ruler (a dependent chain of register adds, see
    /// [`Ruler`]), so per-op times become cycles with the clock of the same round (default on;
    /// off with a mock timer unless a ruler is given with [`Job::with_ruler`]).
    pub ruler: bool,
    /// Whether each variant's executed instructions per op are counted after collection, by
    /// single-stepping a few iterations (see `steps`; default on, off with a mock timer). A
    /// variant counted before the job ([`Variant::with_instructions`]) is not stepped again.
    pub instructions: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            stop: Stop::Budget(Picos(1e12)),
            cpu: None,
            pin: true,
            band: DEFAULT_BAND,
            baseline: 0,
            seed: 0x5eed,
            jitter: 0.1,
            min_sample: Picos::from_nanos(10_000.0),
            precision_factor: 1000.0,
            warmup_share: 0.1,
            counters: true,
            ruler: true,
            instructions: true,
        }
    }
}

/// The phase a job is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Timer calibration and sizing.
    Calibrate,
    /// Rounds that are thrown away.
    Warmup,
    /// Rounds that count.
    Collect,
    /// Finished (or cancelled).
    Done,
}

/// Live state of one variant.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantProgress {
    /// Collected samples.
    pub samples: usize,
    /// Dropped (disturbed) samples.
    pub dropped: usize,
    /// Running median per op (from the histogram; 3 significant digits).
    pub median: Option<Picos>,
}

/// A snapshot for front ends.
#[derive(Debug, Clone)]
pub struct Progress<'a> {
    /// Current phase.
    pub phase: Phase,
    /// Collected rounds so far.
    pub rounds: u64,
    /// Time since the job started.
    pub elapsed: Picos,
    /// The time budget, if any.
    pub budget: Option<Picos>,
    /// Shared iterations per sample (0 before sizing).
    pub iters: u64,
    /// Per variant, in job order.
    pub variants: Vec<VariantProgress>,
    /// Per-variant histograms, in job order.
    pub histograms: &'a [OpHistogram],
    /// Variant names, in job order.
    pub names: &'a [String],
}

/// Receives [`Progress`] between rounds.
pub trait Observer {
    /// Called between rounds (at most every ~50 ms) and at phase changes.
    fn observe(&mut self, progress: &Progress<'_>);
}

impl<F: FnMut(&Progress<'_>)> Observer for F {
    fn observe(&mut self, progress: &Progress<'_>) {
        self(progress)
    }
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct NoObserver;

impl Observer for NoObserver {
    fn observe(&mut self, _: &Progress<'_>) {}
}

/// Counter groups for a run: each opened, or the reason it is absent.
pub struct Sources {
    /// Software disturbance counters (context switches, migrations).
    pub disturbances: Result<Box<dyn CounterSource>, CounterAbsence>,
    /// Hardware counters.
    pub hardware: Result<Box<dyn CounterSource>, CounterAbsence>,
}

impl Sources {
    /// Opens perf-event groups on the calling thread.
    pub fn open_perf(hardware: bool) -> Sources {
        let boxed = |g: PerfGroup| Box::new(g) as Box<dyn CounterSource>;
        Sources {
            disturbances: PerfGroup::disturbances().map(boxed),
            hardware: if hardware {
                PerfGroup::hardware().map(boxed)
            } else {
                Err(CounterAbsence::NotRequested)
            },
        }
    }

    /// No counters, for the given reason.
    pub fn none(reason: &str) -> Sources {
        Sources {
            disturbances: Err(CounterAbsence::NotOpened(reason.to_string())),
            hardware: Err(CounterAbsence::NotOpened(reason.to_string())),
        }
    }
}

/// The ruler: a variant whose iteration costs a known number of core cycles (a chain of
/// dependent register adds retires one add per cycle), timed in every round beside the job's
/// variants. A variant's per-op time over the ruler's per-cycle time *of the same round* is its
/// cost in cycles, whatever the clock did between rounds.
#[derive(Debug)]
pub struct Ruler {
    /// The chain.
    pub variant: Variant,
    /// Core cycles one iteration of it takes.
    pub cycles_per_iter: f64,
}

/// Adds per iteration of the default ruler.
pub const RULER_ADDS: usize = 64;

impl Ruler {
    /// The default ruler: 64 dependent register-register adds per iteration.
    pub fn add_chain() -> Ruler {
        // SAFETY: `add_chain` has the raw variant ABI and ignores its (null) ctx.
        let variant = unsafe {
            Variant::raw(
                "ruler",
                super::arch::add_chain::<RULER_ADDS>,
                std::ptr::null_mut(),
            )
        };
        Ruler {
            variant,
            cycles_per_iter: RULER_ADDS as f64,
        }
    }
}

/// Variants and how to run them.
#[derive(Debug)]
pub struct Job {
    /// The contestants, in result order.
    pub variants: Vec<Variant>,
    /// How to run them.
    pub settings: Settings,
    /// A ruler given by the caller (tests inject one that a mock timer can time).
    ruler: Option<Ruler>,
}

const OBSERVE_EVERY: Picos = Picos(50e9);

enum SampleOutcome {
    Sample(Picos),
    /// Disturbed; the per-op time it measured anyway (only sizing uses it).
    Disturbed(Picos),
    Cancelled,
}

/// Takes timed samples of the variants: the timer, its overhead, the counters read around
/// each sample, and the cancel flag.
struct TimedSampler<'a> {
    timer: &'a dyn Timer,
    cancel: &'a AtomicBool,
    overhead: Picos,
    dist: Option<Box<dyn CounterSource>>,
    hw: Option<Box<dyn CounterSource>>,
    hw_totals: Vec<CounterTotals>,
    checksums: Vec<Option<(u64, u64)>>,
}

fn read(src: &mut Option<Box<dyn CounterSource>>) -> Option<Reading> {
    src.as_mut().and_then(|s| s.read().ok())
}

impl TimedSampler<'_> {
    /// One timed sample of `v` with `n` iterations. `idx` is the variant's index (its checksum
    /// is kept, and counters accumulate when `count`); the ruler has none.
    fn sample(
        &mut self,
        v: &mut Variant,
        idx: Option<usize>,
        n: u64,
        count: bool,
    ) -> SampleOutcome {
        if self.cancel.load(Ordering::Relaxed) {
            return SampleOutcome::Cancelled;
        }
        let d0 = read(&mut self.dist);
        let h0 = read(&mut self.hw);
        let t0 = self.timer.start();
        let c = v.run(n);
        let t1 = self.timer.end();
        let h1 = read(&mut self.hw);
        let d1 = read(&mut self.dist);
        let c = std::hint::black_box(c);
        if let Some(i) = idx {
            self.checksums[i] = Some((n, c));
        }
        let net = self.timer.to_picos(t1.saturating_sub(t0)) - self.overhead;
        let per_op = Picos(net.0 / n as f64);
        if let (Some(a), Some(b)) = (&d0, &d1)
            && counters::moved(a, b)
        {
            return SampleOutcome::Disturbed(per_op);
        }
        if count
            && let Some(i) = idx
            && let (Some(a), Some(b)) = (&h0, &h1)
        {
            self.hw_totals[i].add(a, b, n);
        }
        SampleOutcome::Sample(per_op)
    }

    /// Like sizing a variant: the net time of `n` iterations, probing again (a few times) when
    /// disturbed, the shortest disturbed time if every probe was. `None` when cancelled.
    fn probe(&mut self, v: &mut Variant, idx: Option<usize>, n: u64) -> Option<Picos> {
        // A disturbed probe is too long and could end sizing early: probe again (a few
        // times). A machine that disturbs every probe gets the shortest disturbed time: an
        // overestimate, so the count ends up smaller than it could be, never unbounded
        // (counting it as zero grew the count until one sample took minutes).
        let mut time = Picos(f64::INFINITY);
        for _ in 0..4 {
            match self.sample(v, idx, n, false) {
                SampleOutcome::Sample(p) => return Some(Picos(p.0 * n as f64)),
                SampleOutcome::Disturbed(p) => time = Picos(time.0.min(p.0 * n as f64)),
                SampleOutcome::Cancelled => return None,
            }
        }
        Some(time)
    }
}

impl Job {
    /// A job with no variants yet.
    pub fn new(settings: Settings) -> Job {
        Job {
            variants: Vec::new(),
            settings,
            ruler: None,
        }
    }

    /// Adds a variant.
    pub fn with(mut self, v: Variant) -> Job {
        self.variants.push(v);
        self
    }

    /// Times this ruler in every round instead of the default add chain (used even with a
    /// mock timer, when `settings.ruler` is on).
    pub fn with_ruler(mut self, ruler: Ruler) -> Job {
        self.ruler = Some(ruler);
        self
    }

    fn check(&self) -> Result<(), MeasureError> {
        let s = &self.settings;
        if self.variants.is_empty() {
            return Err(MeasureError::NoVariants);
        }
        if s.baseline >= self.variants.len() {
            return Err(MeasureError::BadBaseline {
                index: s.baseline,
                len: self.variants.len(),
            });
        }
        let bad = |which| Err(MeasureError::BadSettings(which));
        match s.stop {
            Stop::Budget(b) if !(b.0 > 0.0 && b.0.is_finite()) => {
                return bad(BadSetting::Budget);
            }
            Stop::Rounds(0) => return bad(BadSetting::Rounds),
            _ => {}
        }
        if !(0.0..1.0).contains(&s.jitter) {
            return bad(BadSetting::Jitter);
        }
        if !(s.band > 0.0 && s.band < 1.0) {
            return bad(BadSetting::Band);
        }
        if !(0.0..1.0).contains(&s.warmup_share) {
            return bad(BadSetting::WarmupShare);
        }
        Ok(())
    }

    /// Runs on the calling thread with the best timer and perf-event counters, pinned as the
    /// settings say (the previous affinity is restored afterwards).
    pub fn run(
        &mut self,
        cancel: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<JobResult, MeasureError> {
        self.check()?;
        let mut pin_note = None;
        let guard = if self.settings.pin {
            match self.settings.cpu.or_else(env::pin::auto_cpu) {
                Some(cpu) => {
                    let online = env::pin::online_cpus();
                    if !online.is_empty() && !online.contains(&cpu) {
                        return Err(MeasureError::BadCpu { cpu, online });
                    }
                    match env::pin::pin_current_thread(cpu) {
                        Ok(g) => Some(g),
                        Err(e) => {
                            pin_note = Some(format!("not pinned: pinning to CPU {cpu}: {e}"));
                            None
                        }
                    }
                }
                None => {
                    pin_note = Some("not pinned: no usable CPU found".to_string());
                    None
                }
            }
        } else {
            pin_note = Some("not pinned (pinning off)".to_string());
            None
        };
        let sources = Sources::open_perf(self.settings.counters);
        let mut r = self.run_with(best_timer(), sources, cancel, observer)?;
        r.cpu = guard.as_ref().map(|g| g.cpu());
        r.pin_note = pin_note;
        Ok(r)
    }

    /// Runs on the calling thread with this timer and these counters, without pinning.
    pub fn run_with(
        &mut self,
        timer: &dyn Timer,
        sources: Sources,
        cancel: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<JobResult, MeasureError> {
        self.check()?;
        let s = self.settings.clone();
        let k = self.variants.len();
        let names: Vec<String> = self.variants.iter().map(|v| v.name().to_string()).collect();
        let start = timer.start();
        let elapsed = || timer.to_picos(timer.start().saturating_sub(start));
        let cal = timer.calibration();
        let budget = match s.stop {
            Stop::Budget(b) => Some(b),
            Stop::Rounds(_) => None,
        };
        let (disturb_avail, dist) = availability(sources.disturbances);
        let (hw_avail, hw) = availability(sources.hardware);
        let mut sampler = TimedSampler {
            timer,
            cancel,
            overhead: cal.sample_overhead,
            hw_totals: vec![CounterTotals::new(&hw_avail.events); k],
            dist,
            hw,
            checksums: vec![None; k],
        };
        let mut hists = vec![OpHistogram::new(); k];
        let mut samples: Vec<Vec<f64>> = vec![Vec::new(); k];
        let mut dropped = vec![0usize; k];
        let mut rounds: Vec<RoundRecord> = Vec::new();
        let mut iters = 0u64;
        let mut phase = Phase::Calibrate;
        let mut last_observe = Picos(f64::NEG_INFINITY);
        let mut notify = |phase: Phase,
                          rounds: u64,
                          iters: u64,
                          samples: &[Vec<f64>],
                          dropped: &[usize],
                          hists: &[OpHistogram],
                          force: bool| {
            let now = elapsed();
            if !force && now.0 - last_observe.0 < OBSERVE_EVERY.0 {
                return;
            }
            last_observe = now;
            let variants = (0..k)
                .map(|i| VariantProgress {
                    samples: samples[i].len(),
                    dropped: dropped[i],
                    median: (!hists[i].is_empty()).then(|| hists[i].quantile(0.5)),
                })
                .collect();
            observer.observe(&Progress {
                phase,
                rounds,
                elapsed: now,
                budget,
                iters,
                variants,
                histograms: hists,
                names: &names,
            });
        };
        notify(phase, 0, 0, &samples, &dropped, &hists, true);

        // Calibrate: size the shared iteration count.
        let target = Picos((cal.precision.0 * s.precision_factor).max(s.min_sample.0));
        let variants = &mut self.variants;
        let sizing = schedule::size_iterations(target, |n| {
            let mut out = Vec::with_capacity(k);
            for (i, v) in variants.iter_mut().enumerate() {
                out.push(sampler.probe(v, Some(i), n)?);
            }
            Some(out)
        });
        // The ruler is sized on its own to the same target: its sample is as long as the
        // fastest variant's, so both see the same clock for a similar time.
        if s.ruler && self.ruler.is_none() && timer.kind() != TimerKind::Mock {
            self.ruler = Some(Ruler::add_chain());
        }
        let mut ruler = if s.ruler { self.ruler.as_mut() } else { None };
        let ruler_iters = match (&sizing, ruler.as_deref_mut()) {
            (Some(_), Some(r)) => schedule::size_iterations(target, |n| {
                Some(vec![sampler.probe(&mut r.variant, None, n)?])
            })
            .map(|sz| sz.iters),
            _ => None,
        };
        let mut stopped = result::StopReason::Cancelled;
        let order = RoundOrder::new(k);
        let mut rng = StdRng::seed_from_u64(s.seed);
        let mut warmup_rounds = 0u64;
        if let Some(flat) = sizing.and_then(|sz| sz.flat) {
            return Err(MeasureError::NoGrowth {
                variant: names.get(flat.variant).cloned().unwrap_or_default(),
                from: flat.from,
                to: flat.to,
            });
        }
        if let Some(sz) = sizing {
            iters = sz.iters;
            phase = Phase::Warmup;
            notify(phase, 0, iters, &samples, &dropped, &hists, true);
            let warm_end = budget.map(|b| elapsed() + Picos(b.0 * s.warmup_share));
            let warm_rounds = match s.stop {
                Stop::Rounds(r) => (r as f64 * s.warmup_share).ceil() as u64,
                Stop::Budget(_) => u64::MAX,
            };
            let mut round = 0u64;
            let mut cancelled = false;
            'rounds: loop {
                let collecting = phase == Phase::Collect;
                if !collecting
                    && (warmup_rounds >= warm_rounds
                        || warm_end.is_some_and(|e| elapsed().0 >= e.0))
                {
                    phase = Phase::Collect;
                    notify(phase, 0, iters, &samples, &dropped, &hists, true);
                    continue;
                }
                if collecting {
                    let done = match s.stop {
                        Stop::Rounds(r) => rounds.len() as u64 >= r,
                        Stop::Budget(b) => elapsed().0 >= b.0,
                    };
                    if done {
                        stopped = match s.stop {
                            Stop::Rounds(_) => result::StopReason::Rounds,
                            Stop::Budget(_) => result::StopReason::Budget,
                        };
                        break;
                    }
                }
                let n = schedule::jittered(iters, s.jitter, &mut rng);
                let mut per_op = vec![None; k];
                let mut per_cycle = None;
                // The ruler takes each position in turn (round r: position r mod (k+1)), so
                // it sees the clock at every point of a round equally often.
                let ruler_at = ruler_iters.map(|_| (round % (k as u64 + 1)) as usize);
                let row = order.order(round);
                for pos in 0..k + usize::from(ruler_at.is_some()) {
                    if Some(pos) == ruler_at
                        && let (Some(r), Some(ri)) = (ruler.as_deref_mut(), ruler_iters)
                    {
                        // Jittered by the same factor as the variants' count.
                        let rn = ((ri as f64 * n as f64 / iters as f64).round() as u64).max(1);
                        match sampler.sample(&mut r.variant, None, rn, false) {
                            SampleOutcome::Sample(p) => {
                                per_cycle = Some(Picos(p.0 / r.cycles_per_iter))
                            }
                            SampleOutcome::Disturbed(_) => {}
                            SampleOutcome::Cancelled => {
                                cancelled = true;
                                break 'rounds;
                            }
                        }
                        continue;
                    }
                    let i = row[pos - usize::from(ruler_at.is_some_and(|at| pos > at))];
                    match sampler.sample(&mut variants[i], Some(i), n, collecting) {
                        SampleOutcome::Sample(p) => per_op[i] = Some(p),
                        SampleOutcome::Disturbed(_) => {
                            if collecting {
                                dropped[i] += 1;
                            }
                        }
                        SampleOutcome::Cancelled => {
                            cancelled = true;
                            break 'rounds;
                        }
                    }
                }
                round += 1;
                if collecting {
                    for (i, p) in per_op.iter().enumerate() {
                        if let Some(p) = p {
                            samples[i].push(p.0);
                            hists[i].record(*p);
                        }
                    }
                    rounds.push(RoundRecord {
                        iters: n,
                        per_op,
                        per_cycle,
                    });
                    let r = rounds.len() as u64;
                    notify(phase, r, iters, &samples, &dropped, &hists, false);
                } else {
                    warmup_rounds += 1;
                }
            }
            if cancelled {
                stopped = result::StopReason::Cancelled;
            }
        }
        let total = elapsed();
        // Counted after the timed rounds, so the traps disturb no sample.
        let instructions: Vec<Option<Result<f64, super::steps::StepError>>> = variants
            .iter_mut()
            .map(|v| {
                (s.instructions
                    && timer.kind() != TimerKind::Mock
                    && !cancel.load(Ordering::Relaxed))
                .then(|| match v.instructions() {
                    Some(n) => Ok(n),
                    None => super::steps::instructions_per_op_cancellable(v, Some(cancel)),
                })
            })
            .collect();
        notify(
            Phase::Done,
            rounds.len() as u64,
            iters,
            &samples,
            &dropped,
            &hists,
            true,
        );
        let core = (timer.kind() != TimerKind::Mock).then(clock::core_clock);
        Ok(result::assemble(result::Parts {
            names,
            timer: TimerInfo {
                kind: timer.kind(),
                frequency: timer.frequency(),
                precision: cal.precision,
                sample_overhead: cal.sample_overhead,
            },
            settings: s,
            iters,
            warmup_rounds,
            stopped,
            elapsed: total,
            disturbances: disturb_avail,
            hardware: hw_avail,
            core_clock: core,
            samples,
            dropped,
            hists,
            rounds,
            counters: sampler
                .hw_totals
                .iter()
                .map(CounterTotals::report)
                .collect(),
            checksums: sampler.checksums,
            instructions,
        }))
    }
}

fn availability(
    src: Result<Box<dyn CounterSource>, CounterAbsence>,
) -> (counters::Availability, Option<Box<dyn CounterSource>>) {
    match src {
        Ok(s) => (
            counters::Availability {
                events: s.kinds().to_vec(),
                reason: None,
            },
            Some(s),
        ),
        Err(reason) => (
            counters::Availability {
                events: Vec::new(),
                reason: Some(reason.to_string()),
            },
            None,
        ),
    }
}
