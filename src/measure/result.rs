//! Results of a job: per-variant summaries and the paired comparisons built from per-round
//! differences and log-ratios (see `stats`).

use serde::Serialize;

use super::MeasureError;
use super::clock::CoreClock;
use super::counters::{Availability, CounterKind, CounterReport};
use super::histogram::OpHistogram;
use super::job::Settings;
use super::stats::median_ci::{DEFAULT_LEVEL, MedianCi, sign_test_ci};
use super::stats::summary::{self, Summary};
use super::stats::tukey::{self, Outliers};
use super::stats::verdict::{AbsVerdict, RatioVerdict, Verdict, abs_verdict, ratio_verdict};
use super::stats::{blocks, layouts};
use super::timer::TimerKind;
use super::units::{Cycles, Ghz, Picos, Ratio};

/// Why collection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The time budget ran out.
    Budget,
    /// The round count was reached.
    Rounds,
    /// The cancel flag was set.
    Cancelled,
}

/// The timer used, with its calibration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TimerInfo {
    /// Which clock.
    pub kind: TimerKind,
    /// Its tick rate.
    pub frequency: Ghz,
    /// Its precision.
    pub precision: Picos,
    /// Subtracted from every sample.
    pub sample_overhead: Picos,
}

/// One collected round: the iteration count and each variant's per-op time (`None` when its
/// sample was disturbed and dropped).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundRecord {
    /// Iterations per sample in this round.
    pub iters: u64,
    /// Per variant, in job order.
    pub per_op: Vec<Option<Picos>>,
    /// The ruler's time per core cycle in this round (`None` without a ruler, or when its
    /// sample was disturbed).
    pub per_cycle: Option<Picos>,
}

/// The ruler timed in every round: the core clock as the rounds saw it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RulerSummary {
    /// Rounds with a ruler sample.
    pub rounds: usize,
    /// Median time per core cycle (ps), with its CI.
    pub per_cycle_ps: MedianCi,
    /// The clock, in GHz (1000 / per-cycle ps).
    pub ghz: f64,
    /// Fastest and slowest round's clock, in GHz: how far the clock moved during the job.
    pub ghz_min: f64,
    /// See `ghz_min`.
    pub ghz_max: f64,
}

/// Per-op statistics of one variant, typed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OpSummary {
    /// Median per op.
    pub median: Picos,
    /// MAD per op.
    pub mad: Picos,
    /// Fastest.
    pub min: Picos,
    /// 10th percentile.
    pub p10: Picos,
    /// 90th percentile.
    pub p90: Picos,
    /// Slowest.
    pub max: Picos,
    /// MAD / median.
    pub mad_ratio: f64,
}

impl From<Summary> for OpSummary {
    fn from(s: Summary) -> Self {
        OpSummary {
            median: Picos(s.median),
            mad: Picos(s.mad),
            min: Picos(s.min),
            p10: Picos(s.p10),
            p90: Picos(s.p90),
            max: Picos(s.max),
            mad_ratio: s.mad_ratio(),
        }
    }
}

/// How far the PMU's cycle count may be from the ruler's and still agree (5%).
pub const PMU_RULER_TOLERANCE: f64 = 0.05;

/// The PMU's cycles per op beside the ruler's: two independent measures of one thing. They
/// should agree; when they do not, one of them is wrong on this machine (a ruler whose adds do
/// not retire one per cycle, or a PMU that counts another clock, such as a reference clock).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PmuAgreement {
    /// The PMU's cycles per op (the `cycles` counter over the samples' iterations).
    pub pmu_cycles: f64,
    /// The ruler's (median over rounds).
    pub ruler_cycles: f64,
    /// `pmu / ruler - 1`.
    pub relative: f64,
    /// Whether they agree within [`PMU_RULER_TOLERANCE`].
    pub agree: bool,
}

impl PmuAgreement {
    /// The agreement of `pmu` and `ruler` cycles per op (`None` unless both are positive).
    pub fn of(pmu: f64, ruler: f64) -> Option<PmuAgreement> {
        (pmu > 0.0 && ruler > 0.0 && pmu.is_finite() && ruler.is_finite()).then(|| {
            let relative = pmu / ruler - 1.0;
            PmuAgreement {
                pmu_cycles: pmu,
                ruler_cycles: ruler,
                relative,
                agree: relative.abs() <= PMU_RULER_TOLERANCE,
            }
        })
    }
}

/// Results of one variant.
#[derive(Debug, Clone, Serialize)]
pub struct VariantResult {
    /// Its name.
    pub name: String,
    /// Samples kept.
    pub samples: usize,
    /// Samples dropped as disturbed.
    pub dropped: usize,
    /// Statistics (absent without samples).
    pub summary: Option<OpSummary>,
    /// Tukey outliers among the kept samples (counted, not removed).
    pub outliers: Outliers,
    /// Spread above a few percent of the median.
    pub unstable: bool,
    /// Median cycles per op: from the ruler of the same rounds when there is one, else from
    /// the core clock calibrated once.
    pub cycles_est: Option<Cycles>,
    /// Cycles per op from the ruler, per round (the op's time over the ruler's per-cycle time
    /// in the same round): the median with its CI.
    pub cycles: Option<MedianCi>,
    /// Median in TSC ticks (TSC timer only).
    pub tsc_ticks: Option<f64>,
    /// Hardware counters per op (when they opened).
    pub counters: Option<CounterReport>,
    /// Where both exist: the PMU's cycles per op beside the ruler's, and whether they agree.
    pub pmu_vs_ruler: Option<PmuAgreement>,
    /// Last sample's (iterations, checksum).
    pub checksum: Option<(u64, u64)>,
    /// Instructions one op executes on the job's thread, counted by single-stepping (exact,
    /// the same from run to run).
    pub instructions: Option<f64>,
    /// Why `instructions` is absent, when counting was tried.
    pub instructions_note: Option<String>,
    /// Per-op histogram.
    #[serde(skip)]
    pub histogram: OpHistogram,
}

/// Everything a job measured.
#[derive(Debug, Clone, Serialize)]
pub struct JobResult {
    /// Timer and calibration.
    pub timer: TimerInfo,
    /// Shared iterations per sample before jitter.
    pub iters: u64,
    /// Relative jitter used.
    pub jitter: f64,
    /// Collected rounds.
    pub rounds: usize,
    /// Warm-up rounds thrown away.
    pub warmup_rounds: u64,
    /// Why collection ended.
    pub stopped: StopReason,
    /// Wall time of the whole job.
    pub elapsed: Picos,
    /// CPU pinned to.
    pub cpu: Option<usize>,
    /// Why not pinned, if not.
    pub pin_note: Option<String>,
    /// Disturbance counters.
    pub disturbances: Availability,
    /// Hardware counters.
    pub hardware: Availability,
    /// Calibrated core clock.
    pub core_clock: Option<CoreClock>,
    /// The ruler timed in every round (absent when off, or with a mock timer).
    pub ruler: Option<RulerSummary>,
    /// Equivalence band.
    pub band: f64,
    /// Baseline index.
    pub baseline: usize,
    /// Per variant, in job order.
    pub variants: Vec<VariantResult>,
    /// Raw rounds.
    #[serde(skip)]
    pub round_records: Vec<RoundRecord>,
}

/// B compared with A over the rounds where both samples were kept.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Index of A (the reference).
    pub a: usize,
    /// Index of B.
    pub b: usize,
    /// Paired rounds used.
    pub pairs: usize,
    /// CI of the median per-round difference B - A, in ps per op.
    pub diff: Option<MedianCi>,
    /// Ratio verdict (B / A).
    pub verdict: RatioVerdict,
    /// Absolute verdict.
    pub abs: Option<AbsVerdict>,
    /// The difference in cycles: from the ruler of the same rounds when there is one, else from
    /// the calibrated core clock.
    pub diff_cycles: Option<Cycles>,
    /// CI of the median per-round difference in cycles (ruler only).
    pub diff_cycles_ci: Option<MedianCi>,
    /// Either variant flagged unstable.
    pub unstable: bool,
}

/// A ratio over code layouts (see [`JobResult::compare_layouts`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayoutComparison {
    /// How many layouts.
    pub layouts: usize,
    /// Rounds in which every layout had both samples.
    pub rounds: usize,
    /// The verdict over all layouts, its interval widened by the between-layout term.
    pub verdict: RatioVerdict,
    /// Each layout's median ratio.
    pub per_layout: Vec<Ratio>,
    /// Largest per-layout ratio over the smallest, minus one (0.03 = 3%).
    pub spread: f64,
}

impl JobResult {
    /// Compares variant `b` with variant `a` (ratio B/A, difference B - A).
    pub fn compare(&self, a: usize, b: usize) -> Result<Comparison, MeasureError> {
        let len = self.variants.len();
        for index in [a, b] {
            if index >= len {
                return Err(MeasureError::BadBaseline { index, len });
            }
        }
        let mut diffs = Vec::new();
        let mut logs = Vec::new();
        let mut cycle_diffs = Vec::new();
        // The larger of the two per-op times (and cycles) per round: the scale of the
        // run-level term of a difference.
        let mut larger = Vec::new();
        let mut larger_cycles = Vec::new();
        for r in &self.round_records {
            if let (Some(x), Some(y)) = (r.per_op[a], r.per_op[b]) {
                diffs.push(y.0 - x.0);
                larger.push(x.0.abs().max(y.0.abs()));
                if x.0 > 0.0 && y.0 > 0.0 {
                    logs.push((y.0 / x.0).ln());
                }
                if let Some(c) = r.per_cycle.filter(|c| c.0 > 0.0) {
                    cycle_diffs.push((y.0 - x.0) / c.0);
                    larger_cycles.push(x.0.abs().max(y.0.abs()) / c.0);
                }
            }
        }
        // Each interval also covers the variation between blocks of rounds and carries the
        // run-level term (`stats::blocks`), so that it describes the next run too, not only
        // this one. A log ratio's term is RUN_LEVEL itself; a difference's is RUN_LEVEL of the
        // larger of the two times it is the difference of.
        let ci = |v: &[f64], term: f64| {
            sign_test_ci(v, DEFAULT_LEVEL).map(|c| blocks::across_runs(v, c, term))
        };
        let scale = |v: &[f64]| {
            if v.is_empty() {
                0.0
            } else {
                summary::median(v)
            }
        };
        let diff = ci(&diffs, blocks::RUN_LEVEL * scale(&larger));
        let diff_cycles_ci = ci(&cycle_diffs, blocks::RUN_LEVEL * scale(&larger_cycles));
        let secs = self.elapsed.secs();
        let verdict = match ci(&logs, blocks::RUN_LEVEL) {
            Some(ci) => ratio_verdict(&ci, self.band, secs),
            None => RatioVerdict {
                verdict: Verdict::Unresolved,
                ratio: Ratio(f64::NAN),
                low: Ratio(f64::NAN),
                high: Ratio(f64::NAN),
                band: self.band,
                explanation: format!(
                    "unresolved: only {} usable paired rounds; a 95% interval needs at least 6 \
                     — run longer",
                    logs.len()
                ),
            },
        };
        let unstable = self.variants[a].unstable || self.variants[b].unstable;
        Ok(Comparison {
            a,
            b,
            pairs: diffs.len(),
            abs: diff.as_ref().map(abs_verdict),
            diff_cycles: match (&diff_cycles_ci, &diff, &self.core_clock) {
                (Some(r), _, _) => Some(Cycles(r.estimate)),
                (None, Some(d), Some(c)) => Some(c.ghz.cycles_in(Picos(d.estimate))),
                _ => None,
            },
            diff_cycles_ci,
            diff,
            verdict,
            unstable,
        })
    }

    /// The ratio B/A over code layouts: `pairs[k]` names the variants of A and B placed at
    /// layout `k` (see `stats::layouts`). The verdict's interval carries the between-layout
    /// term; with one pair this is [`JobResult::compare`]'s ratio verdict.
    pub fn compare_layouts(
        &self,
        pairs: &[(usize, usize)],
    ) -> Result<LayoutComparison, MeasureError> {
        let len = self.variants.len();
        for &index in pairs.iter().flat_map(|(a, b)| [a, b]) {
            if index >= len {
                return Err(MeasureError::BadBaseline { index, len });
            }
        }
        let rounds: Vec<Vec<Option<f64>>> = self
            .round_records
            .iter()
            .map(|r| {
                pairs
                    .iter()
                    .map(|&(a, b)| match (r.per_op[a], r.per_op[b]) {
                        (Some(x), Some(y)) if x.0 > 0.0 && y.0 > 0.0 => Some((y.0 / x.0).ln()),
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        let interval = layouts::layout_interval(&rounds);
        let secs = self.elapsed.secs();
        let Some(li) = interval else {
            return Ok(LayoutComparison {
                layouts: pairs.len(),
                rounds: 0,
                verdict: RatioVerdict {
                    verdict: Verdict::Unresolved,
                    ratio: Ratio(f64::NAN),
                    low: Ratio(f64::NAN),
                    high: Ratio(f64::NAN),
                    band: self.band,
                    explanation: "unresolved: too few rounds with every layout; a 95% interval \
                                  needs at least 6 — run longer"
                        .to_string(),
                },
                per_layout: vec![Ratio(f64::NAN); pairs.len()],
                spread: f64::NAN,
            });
        };
        let mut verdict = ratio_verdict(&li.ci, self.band, secs);
        if pairs.len() > 1 {
            verdict.explanation = format!(
                "{} (over {} layouts of the code, spread {:.1}%)",
                verdict.explanation,
                pairs.len(),
                li.spread * 100.0
            );
        }
        Ok(LayoutComparison {
            layouts: pairs.len(),
            rounds: li.ci.n,
            verdict,
            per_layout: li.per_layout.iter().map(|m| Ratio(m.exp())).collect(),
            spread: li.spread,
        })
    }

    /// Every variant other than the baseline compared with the baseline.
    pub fn against_baseline(&self) -> Vec<Comparison> {
        (0..self.variants.len())
            .filter(|&b| b != self.baseline)
            .filter_map(|b| self.compare(self.baseline, b).ok())
            .collect()
    }
}

/// What the engine hands over to build a [`JobResult`].
pub(crate) struct Parts {
    pub names: Vec<String>,
    pub timer: TimerInfo,
    pub settings: Settings,
    pub iters: u64,
    pub warmup_rounds: u64,
    pub stopped: StopReason,
    pub elapsed: Picos,
    pub disturbances: Availability,
    pub hardware: Availability,
    pub core_clock: Option<CoreClock>,
    pub samples: Vec<Vec<f64>>,
    pub dropped: Vec<usize>,
    pub hists: Vec<OpHistogram>,
    pub rounds: Vec<RoundRecord>,
    pub counters: Vec<CounterReport>,
    pub checksums: Vec<Option<(u64, u64)>>,
    pub instructions: Vec<Option<Result<f64, super::steps::StepError>>>,
}

/// Per-round cycles of variant `i`: its per-op time over the ruler's per-cycle time of the
/// same round.
fn ruler_cycles(rounds: &[RoundRecord], i: usize) -> Vec<f64> {
    rounds
        .iter()
        .filter_map(|r| match (r.per_op[i], r.per_cycle) {
            (Some(op), Some(c)) if c.0 > 0.0 => Some(op.0 / c.0),
            _ => None,
        })
        .collect()
}

fn ruler_summary(rounds: &[RoundRecord]) -> Option<RulerSummary> {
    let per_cycle: Vec<f64> = rounds
        .iter()
        .filter_map(|r| r.per_cycle.map(|c| c.0))
        .filter(|c| *c > 0.0)
        .collect();
    let ci = sign_test_ci(&per_cycle, DEFAULT_LEVEL)?;
    let (fast, slow) = per_cycle
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), &c| {
            (lo.min(c), hi.max(c))
        });
    Some(RulerSummary {
        rounds: per_cycle.len(),
        per_cycle_ps: ci,
        ghz: 1e3 / ci.estimate,
        ghz_min: 1e3 / slow,
        ghz_max: 1e3 / fast,
    })
}

pub(crate) fn assemble(p: Parts) -> JobResult {
    let has_hw = !p.hardware.events.is_empty();
    let variants = p
        .names
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let s = summary::summarize(&p.samples[i]);
            let sorted = summary::sorted(&p.samples[i]);
            let per_round = ruler_cycles(&p.rounds, i);
            let cycles = sign_test_ci(&per_round, DEFAULT_LEVEL)
                .map(|c| blocks::across_runs(&per_round, c, blocks::RUN_LEVEL * c.estimate.abs()));
            VariantResult {
                name,
                samples: p.samples[i].len(),
                dropped: p.dropped[i],
                summary: s.map(OpSummary::from),
                outliers: tukey::classify(&sorted),
                unstable: s.is_some_and(|s| s.unstable()),
                cycles_est: match (&cycles, &s, &p.core_clock) {
                    (Some(r), _, _) => Some(Cycles(r.estimate)),
                    (None, Some(s), Some(c)) => Some(c.ghz.cycles_in(Picos(s.median))),
                    _ => None,
                },
                cycles,
                tsc_ticks: s
                    .filter(|_| p.timer.kind == TimerKind::Tsc)
                    .map(|s| p.timer.frequency.cycles_in(Picos(s.median)).0),
                counters: has_hw.then(|| p.counters[i].clone()),
                pmu_vs_ruler: match (&cycles, has_hw) {
                    (Some(r), true) => p.counters[i]
                        .per_op
                        .iter()
                        .find(|(k, _)| *k == CounterKind::Cycles)
                        .and_then(|&(_, pmu)| PmuAgreement::of(pmu, r.estimate)),
                    _ => None,
                },
                checksum: p.checksums[i],
                instructions: p.instructions[i]
                    .as_ref()
                    .and_then(|r| r.as_ref().ok().copied()),
                instructions_note: p.instructions[i]
                    .as_ref()
                    .and_then(|r| r.as_ref().err().map(ToString::to_string)),
                histogram: p.hists[i].clone(),
            }
        })
        .collect();
    JobResult {
        timer: p.timer,
        iters: p.iters,
        jitter: p.settings.jitter,
        rounds: p.rounds.len(),
        warmup_rounds: p.warmup_rounds,
        stopped: p.stopped,
        elapsed: p.elapsed,
        cpu: None,
        pin_note: None,
        disturbances: p.disturbances,
        hardware: p.hardware,
        core_clock: p.core_clock,
        ruler: ruler_summary(&p.rounds),
        band: p.settings.band,
        baseline: p.settings.baseline,
        variants,
        round_records: p.rounds,
    }
}
