//! "Is this 1.0x?": one script against its native twin or a second script, each run once with a
//! checked loop count (results compared), then measured interleaved and answered with the
//! ratio, its CI and the verdict. `hotlab check` and the session's `:check` both go through
//! [`check`].

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};

use super::backend::{Backend, CellError, Loaded, Loader, Sampler, layout_loader};
use super::matrix;
use super::spec::{CaseEntry, Mode};
use super::twin_layouts::TwinLayouts;
use super::twins::Twin;
use crate::backend::MAX_LAYOUTS;
use crate::lang::SourceFile;
use crate::measure::result::StopReason;
use crate::measure::{MeasureError, NoObserver, Observer, Picos, Settings, Stop, Verdict};

/// An `f64` that JSON wrote as `null` (serde_json writes NaN so): NaN again. A check stopped
/// before its first usable round has no ratio, and its answer must still cross the worker's pipe.
fn number_or_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// [`number_or_nan`] for each element: a layout with no usable round has a NaN ratio.
fn numbers_or_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    let v = Vec::<Option<f64>>::deserialize(d)?;
    Ok(v.into_iter().map(|x| x.unwrap_or(f64::NAN)).collect())
}

/// The answer, as `hotlab check --json` prints it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckAnswer {
    /// The script.
    pub file: String,
    /// What it was compared with (`twin NAME` or the second file).
    pub against: String,
    /// The backend (its name).
    pub backend: String,
    /// The verdict.
    pub verdict: Verdict,
    /// Median ratio FILE / other (NaN with no usable round: written `null`, read back as NaN).
    #[serde(deserialize_with = "number_or_nan")]
    pub ratio: f64,
    /// Its CI.
    #[serde(deserialize_with = "number_or_nan")]
    pub low: f64,
    /// Its CI.
    #[serde(deserialize_with = "number_or_nan")]
    pub high: f64,
    /// The band (0.02 = ±2%).
    pub band: f64,
    /// The script's time per op, ns.
    pub ns: Option<f64>,
    /// The other side's, ns.
    pub other_ns: Option<f64>,
    /// The script's cycles per op, from the ruler timed in the same rounds.
    pub cycles: Option<CyclesCi>,
    /// The other side's.
    pub other_cycles: Option<CyclesCi>,
    /// Instructions one op of the script executes, counted by single-stepping a few
    /// iterations (exact; the same on every run).
    pub instructions: Option<f64>,
    /// The other side's.
    pub other_instructions: Option<f64>,
    /// The loop count of the result check.
    pub n: i64,
    /// The script's result.
    pub result: i64,
    /// The other side's.
    pub other_result: i64,
    /// Whether the results pass the checksum rule.
    pub results_equal: bool,
    /// The verdict as a sentence.
    pub explanation: String,
    /// The exit code `hotlab check` uses for this answer.
    pub exit_code: u8,
    /// Each paired round's ratio FILE / other, in round order (what the CI is made of; shown
    /// as a histogram against the band on a terminal).
    #[serde(default)]
    pub round_ratios: Vec<f64>,
    /// Placements of the script's code that were measured.
    #[serde(default = "one")]
    pub layouts: usize,
    /// Placements of the other side's code: the second script's (as many as the script's), or
    /// the twin's (the original and its copies, `twin_layouts`; 1 when it cannot be copied).
    #[serde(default = "one")]
    pub other_layouts: usize,
    /// Why the twin ran at its one placement though the script had more.
    #[serde(default)]
    pub other_unplaced: Option<String>,
    /// With more than one layout: the largest layout's ratio over the smallest, minus one.
    #[serde(default)]
    pub layout_spread: Option<f64>,
    /// With more than one layout: each layout's median ratio, in layout order (NaN for a layout
    /// with no usable round). Layout `k`'s ratio is the script at its placement `k` over the
    /// other side at its placement `k` (or at its one placement).
    #[serde(default, deserialize_with = "numbers_or_nan")]
    pub layout_ratios: Vec<f64>,
    /// With more than one layout: the script's median ns per op at each placement.
    #[serde(default, deserialize_with = "numbers_or_nan")]
    pub layout_ns: Vec<f64>,
    /// With more than one layout: the other side's median ns per op at each of its placements
    /// (one value for a twin left at its one placement).
    #[serde(default, deserialize_with = "numbers_or_nan")]
    pub other_layout_ns: Vec<f64>,
    /// Set when the measurement was stopped (Ctrl-C) before its time was up: the answer is
    /// the verdict on the rounds so far, a partial one.
    #[serde(default)]
    pub stopped: Option<Stopped>,
}

/// Where a stopped measurement stopped.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stopped {
    /// Rounds collected before the stop.
    pub rounds: usize,
    /// Seconds the measurement had run (calibration and warm-up included, as `--time`).
    pub elapsed_s: f64,
    /// The seconds it was to run (`--time`).
    pub time_s: f64,
}

impl Stopped {
    /// The note a partial answer carries: `stopped after 120 rounds (1.3 of 5 s): a partial
    /// answer`.
    pub fn note(&self) -> String {
        format!(
            "stopped after {} round{} ({:.1} of {} s): a partial answer",
            self.rounds,
            if self.rounds == 1 { "" } else { "s" },
            self.elapsed_s.min(self.time_s),
            self.time_s
        )
    }
}

/// One layout (an answer saved before layouts existed).
fn one() -> usize {
    1
}

/// Cycles per op with their 95% CI: each round's time over the ruler's per-cycle time in the
/// same round (a dependent chain of register adds, one per cycle), so a clock that moves
/// during the run does not move them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CyclesCi {
    /// Median cycles per op.
    pub median: f64,
    /// Lower end of its CI.
    pub low: f64,
    /// Upper end of its CI.
    pub high: f64,
}

impl CyclesCi {
    fn of(v: &crate::measure::VariantResult) -> Option<CyclesCi> {
        v.cycles.map(|c| CyclesCi {
            median: c.estimate,
            low: c.low,
            high: c.high,
        })
    }
}

/// A script to check: its mode and its source (the source's name is shown).
#[derive(Debug, Clone)]
pub struct Script {
    /// `.hot` or `.clif`.
    pub mode: Mode,
    /// The text and its name.
    pub source: Arc<SourceFile>,
}

/// What the script is compared with.
#[derive(Debug, Clone)]
pub enum Against {
    /// A native twin: the ratio is script / twin.
    Twin(&'static Twin),
    /// Another script on the same backend: the ratio is script / other.
    Script(Script),
}

/// How to check.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// The backend both scripts are compiled with.
    pub backend: Backend,
    /// Equivalence band as a fraction (0.02 = ±2%).
    pub band: f64,
    /// Seconds of measurement.
    pub time: f64,
    /// Loop count of the result check.
    pub iters: i64,
    /// Placements of the script's code measured interleaved (1: the usual one; see
    /// `backend::jit::layout`; `jit` and `jit-opt` only, other backends place code once). A
    /// twin is placed as many times (`twin_layouts`).
    pub layouts: usize,
}

/// Why there is no answer.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The backend cannot run this script (bad input).
    #[error("error: {file}: cannot run on {backend}: {why}")]
    Unrunnable {
        /// The script's name.
        file: String,
        /// The backend's name.
        backend: &'static str,
        /// Why not.
        why: String,
    },
    /// The script did not load: it does not compile, or its backend failed on it (bad
    /// input). The text as the backend rendered it, shown as an `error:` line.
    #[error("{}", if .0.starts_with("error") { .0.clone() } else { format!("error: {}", .0) })]
    Load(String),
    /// A script raised an error at run time (the text as its runner rendered it).
    #[error("{0}")]
    Run(String),
    /// Measuring failed at run time.
    #[error(transparent)]
    Measure(#[from] matrix::TimedRunError),
    /// The measurement cannot answer the comparison (bad input).
    #[error("error: {0}")]
    Compare(MeasureError),
}

impl CheckError {
    /// Whether the input is to blame (a script that does not load or run here, a comparison
    /// the measurement cannot answer) rather than a script's run.
    pub fn is_input(&self) -> bool {
        match self {
            CheckError::Unrunnable { .. } | CheckError::Load(_) | CheckError::Compare(_) => true,
            CheckError::Run(_) | CheckError::Measure(_) => false,
        }
    }
}

/// Exit codes of the answers (the same as `hotlab check`'s).
pub mod code {
    /// `equal`.
    pub const EQUAL: u8 = 0;
    /// `slower`.
    pub const SLOWER: u8 = 3;
    /// `faster`.
    pub const FASTER: u8 = 8;
    /// `unresolved`.
    pub const UNRESOLVED: u8 = 4;
    /// The results differ.
    pub const RESULT_DIFFERS: u8 = 5;
    /// Stopped (Ctrl-C) before its time was up: the verdict is on the rounds so far.
    pub const INTERRUPTED: u8 = 130;
}

/// How to run a script: its header's `entry` (a hook case is the host's `Hook.call` loop), else
/// the shape [`super::shape::prepare`] finds (a `Bench` or `Hook` class gets the lines it needs
/// appended).
fn prepared(script: &Script) -> Result<(Script, CaseEntry), CheckError> {
    let p = super::shape::prepare(script.mode, &script.source)
        .map_err(|e| CheckError::Load(e.to_string()))?;
    Ok((
        Script {
            mode: script.mode,
            source: p.source,
        },
        p.entry,
    ))
}

fn load(
    backend: Backend,
    (script, entry): &(Script, CaseEntry),
    jits: &mut Loader,
) -> Result<Loaded, CheckError> {
    match backend.load_source(script.mode, &script.source, *entry, jits) {
        Ok((l, _)) => Ok(l),
        Err(CellError::Unavailable(why)) => Err(CheckError::Unrunnable {
            file: script.source.name.clone(),
            backend: backend.name(),
            why,
        }),
        Err(CellError::Failed(msg)) => Err(CheckError::Load(msg)),
    }
}

/// Check `script` against `against` on this thread (see the module docs).
pub fn check(
    script: &Script,
    against: &Against,
    options: &CheckOptions,
) -> Result<CheckAnswer, CheckError> {
    check_observed(
        script,
        against,
        options,
        &AtomicBool::new(false),
        &mut NoObserver,
    )
}

/// [`check`] whose measurement sends its progress to `observer` and stops when `cancel` is
/// set: the answer is then the verdict on the rounds so far, marked [`CheckAnswer::stopped`],
/// with exit code [`code::INTERRUPTED`]. (The compiles and the checked runs before the
/// measurement are short and run to their end.)
pub fn check_observed(
    script: &Script,
    against: &Against,
    options: &CheckOptions,
    cancel: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<CheckAnswer, CheckError> {
    // Only JIT code can be placed; the object backend's library and the interpreter are
    // measured at their one placement.
    let layouts = match options.backend {
        Backend::Jit | Backend::JitOpt => options.layouts.clamp(1, MAX_LAYOUTS),
        _ => 1,
    };
    // One loader per layout: a loader keeps one JIT, and a JIT places all its code one way.
    let mut loaders: Vec<Loader> = (0..layouts).map(layout_loader).collect();
    let this = prepared(script)?;
    let that = match against {
        Against::Script(s) => Some(prepared(s)?),
        Against::Twin(_) => None,
    };
    let mut loaded = Vec::with_capacity(layouts);
    let mut other = Vec::with_capacity(layouts);
    for jits in &mut loaders {
        loaded.push(load(options.backend, &this, jits)?);
        if let Some(p) = &that {
            other.push(load(options.backend, p, jits)?);
        }
    }
    let script_error = |e: &dyn std::fmt::Display| CheckError::Run(e.to_string());
    let mut runners = Vec::with_capacity(layouts);
    for l in &mut loaded {
        runners.push(
            l.sampler(&this.1.workload())
                .map_err(|e| script_error(&e))?,
        );
    }
    let mut results = Vec::with_capacity(layouts);
    for r in &mut runners {
        results.push(r.checked(options.iters).map_err(|e| script_error(&e))?);
    }
    let result = results[0];
    let mut other_runners = Vec::with_capacity(layouts);
    if let Some(p) = &that {
        for l in &mut other {
            other_runners.push(l.sampler(&p.1.workload()).map_err(|e| script_error(&e))?);
        }
    }
    // The twin at as many placements as the script; its copies are freed when this returns,
    // after the job that runs them.
    let twin = match against {
        Against::Twin(t) => Some(TwinLayouts::new_cancellable(t, layouts, Some(cancel))),
        Against::Script(_) => None,
    };
    let other_result = match (against, &twin) {
        (Against::Script(_), _) => {
            let mut first = None;
            for r in &mut other_runners {
                let v = r.checked(options.iters).map_err(|e| script_error(&e))?;
                first.get_or_insert(v);
            }
            first.expect("one layout at least")
        }
        (Against::Twin(_), Some(t)) => {
            let original = t.run(0, options.iters);
            // A copy computes what the original does, or the copy is wrong: say so, never
            // average it in.
            for k in 1..t.layouts() {
                let v = t.run(k, options.iters);
                if v != original {
                    return Err(CheckError::Run(format!(
                        "error: twin {}: its copy at layout {k} computed {v} where the original \
                         computed {original}",
                        t.twin().name
                    )));
                }
            }
            original
        }
        (Against::Twin(_), None) => unreachable!("a twin's placements were made above"),
    };
    // The same code at another place computes the same thing; a layout that does not is a
    // backend bug worth saying, not averaging.
    if let Some(k) = results.iter().position(|&r| r != result) {
        return Err(CheckError::Run(format!(
            "error: {}: layout {k} computed {} where layout 0 computed {result}",
            script.source.name, results[k]
        )));
    }
    let results_equal = result == other_result;

    let mut settings = Settings {
        stop: Stop::Budget(Picos(options.time * 1e12)),
        band: options.band,
        counters: false,
        ..Settings::default()
    };
    let name = script.source.name.clone();
    let layout_name = |n: &str, k: usize| {
        if layouts == 1 {
            n.to_string()
        } else {
            format!("{n} @{k}")
        }
    };
    let (against_name, m) = match (&that, against) {
        (Some((s, _)), _) => {
            // The other script first at every layout: a pair's first variant is the
            // baseline of its ratio.
            let mut all = Vec::with_capacity(2 * layouts);
            let mut pairs = Vec::with_capacity(layouts);
            for (k, (o, r)) in other_runners.into_iter().zip(runners).enumerate() {
                pairs.push((all.len(), all.len() + 1));
                all.push((layout_name(&s.source.name, k), o));
                all.push((layout_name(&name, k), r));
            }
            let values = measure(None, &mut all, &settings, &pairs, cancel, observer)?;
            (s.source.name.clone(), values)
        }
        (None, Against::Twin(t)) => {
            if t.threads > 1 {
                settings = matrix::settings(options.time, true, t);
                settings.band = options.band;
            }
            let twin = twin.as_ref().expect("a twin's placements were made above");
            // The twin's placements come first in the job; layout `k` pairs the script's
            // placement `k` with the twin's placement `k + 1` (mod K; or with its one
            // placement). Rotated, not `k` with `k`: both sides' placement `k` starts at the same
            // offset in its line, and code that is slow at an offset on both sides would cancel
            // in each pair's ratio, understating the spread between placements (review).
            let placed = twin.layouts();
            let pairs: Vec<(usize, usize)> = (0..layouts)
                .map(|k| ((k + 1) % placed, placed + k))
                .collect();
            let mut all: Vec<(String, Sampler<'_>)> = runners
                .into_iter()
                .enumerate()
                .map(|(k, r)| (layout_name(&name, k), r))
                .collect();
            (
                format!("twin {}", t.name),
                measure(Some(twin), &mut all, &settings, &pairs, cancel, observer)?,
            )
        }
        (None, Against::Script(_)) => unreachable!("the other script was prepared above"),
    };
    let Measured {
        verdict,
        ns: [other_ns, ns],
        cycles: [other_cycles, cycles],
        instructions: [other_instr, instr],
        round_ratios,
        layout_spread,
        layout_ratios,
        layout_ns: [other_layout_ns, layout_ns],
        stopped,
    } = m;
    let other_layouts = match &twin {
        Some(t) => t.layouts(),
        None => layouts,
    };
    let other_unplaced = twin
        .as_ref()
        .filter(|_| layouts > 1)
        .and_then(|t| t.unplaced())
        .map(str::to_string);
    // A twin left at its one placement is said in the sentence every front end shows.
    let explanation = match &other_unplaced {
        Some(why) => format!(
            "{}; {why}, so it ran at its one placement",
            verdict.explanation
        ),
        None => verdict.explanation.clone(),
    };
    let stopped = stopped.map(|elapsed_s| Stopped {
        rounds: round_ratios.len(),
        elapsed_s,
        time_s: options.time,
    });
    let exit_code = if stopped.is_some() {
        code::INTERRUPTED
    } else if !results_equal {
        code::RESULT_DIFFERS
    } else {
        match verdict.verdict {
            Verdict::Equal => code::EQUAL,
            Verdict::Slower => code::SLOWER,
            Verdict::Faster => code::FASTER,
            Verdict::Unresolved => code::UNRESOLVED,
        }
    };
    Ok(CheckAnswer {
        file: name,
        against: against_name,
        backend: options.backend.name().to_string(),
        verdict: verdict.verdict,
        ratio: verdict.ratio.0,
        low: verdict.low.0,
        high: verdict.high.0,
        band: verdict.band,
        ns,
        other_ns,
        cycles,
        other_cycles,
        instructions: instr,
        other_instructions: other_instr,
        n: options.iters,
        result,
        other_result,
        results_equal,
        // Every front end shows the explanation: a partial answer says so in it.
        explanation: match &stopped {
            Some(st) => format!("{explanation}; {}", st.note()),
            None => explanation,
        },
        exit_code,
        round_ratios,
        layouts,
        other_layouts,
        other_unplaced,
        layout_spread,
        layout_ratios,
        layout_ns,
        other_layout_ns,
        stopped,
    })
}

/// The answer in one line.
pub fn line(a: &CheckAnswer) -> String {
    let ns = |v: Option<f64>| v.map_or("n/a".to_string(), super::render::fmt_ns);
    let result = if a.results_equal {
        format!("results equal ({} at n = {})", a.result, a.n)
    } else {
        format!(
            "RESULTS DIFFER: {} vs {} at n = {}",
            a.result, a.other_result, a.n
        )
    };
    format!(
        "{} on {} vs {}: {}; {} vs {} ns/op; {result}",
        a.file,
        a.backend,
        a.against,
        a.explanation,
        ns(a.ns),
        ns(a.other_ns)
    )
}

/// What one timed job gives a check: the verdict, then ns, cycles and instructions per op of
/// the first pair's two sides (the other first), the rounds' ratios of that pair, and the
/// layouts' spread, ratios and each side's ns per layout when there is more than one.
struct Measured {
    verdict: crate::measure::stats::verdict::RatioVerdict,
    ns: [Option<f64>; 2],
    cycles: [Option<CyclesCi>; 2],
    instructions: [Option<f64>; 2],
    round_ratios: Vec<f64>,
    layout_spread: Option<f64>,
    layout_ratios: Vec<f64>,
    /// Each side's median ns per op at each of its placements (the other first; NaN where a
    /// variant has none; empty with one layout).
    layout_ns: [Vec<f64>; 2],
    /// When the cancel flag stopped the job: the seconds it had run.
    stopped: Option<f64>,
}

/// One timed job, the twin's placements (if any) first; `pairs[k]` = (other, script) at layout
/// `k`.
fn measure(
    twin: Option<&TwinLayouts<'_>>,
    runners: &mut [(String, Sampler<'_>)],
    settings: &Settings,
    pairs: &[(usize, usize)],
    cancel: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<Measured, CheckError> {
    let result = matrix::run_job_observed(twin, runners, settings, cancel, observer)?;
    let (a, b) = pairs[0];
    let layouts = (pairs.len() > 1)
        .then(|| result.compare_layouts(pairs))
        .transpose()
        .map_err(CheckError::Compare)?;
    let verdict = match &layouts {
        Some(l) => l.verdict.clone(),
        None => result.compare(a, b).map_err(CheckError::Compare)?.verdict,
    };
    let ns = |i: usize| {
        result.variants[i]
            .summary
            .as_ref()
            .map(|s| s.median.nanos())
    };
    // Each side's variants in layout order, once each (a twin left at its one placement is
    // the other side of every pair).
    let layout_ns = |side: fn(&(usize, usize)) -> usize| -> Vec<f64> {
        if pairs.len() < 2 {
            return Vec::new();
        }
        let mut variants: Vec<usize> = pairs.iter().map(side).collect();
        variants.dedup();
        variants
            .into_iter()
            .map(|i| ns(i).unwrap_or(f64::NAN))
            .collect()
    };
    let cycles = |i: usize| CyclesCi::of(&result.variants[i]);
    let instr = |i: usize| result.variants[i].instructions;
    let round_ratios = result
        .round_records
        .iter()
        .filter_map(|r| match (r.per_op[a], r.per_op[b]) {
            (Some(x), Some(y)) if x.0 > 0.0 && y.0 > 0.0 => Some(y.0 / x.0),
            _ => None,
        })
        .collect();
    Ok(Measured {
        verdict,
        ns: [ns(a), ns(b)],
        cycles: [cycles(a), cycles(b)],
        instructions: [instr(a), instr(b)],
        round_ratios,
        layout_spread: layouts.as_ref().map(|l| l.spread),
        layout_ratios: layouts
            .map(|l| l.per_layout.iter().map(|r| r.0).collect())
            .unwrap_or_default(),
        layout_ns: [layout_ns(|p| p.0), layout_ns(|p| p.1)],
        stopped: (result.stopped == StopReason::Cancelled).then(|| result.elapsed.secs()),
    })
}
