//! A measured ladder as a table (text, Markdown, CSV) or JSON: per row the step, the ns it adds
//! over the row before it in the same build (with CI and a verdict), the total, the ratio to the
//! native row (with CI), estimated cycles and the instruction count of its call-path code, and
//! whether its checksum equals the native row's (`!` when not).

use serde::Serialize;

use super::bench::{Build, LadderBench};
use super::spec::Layer;
use crate::export::Table;
use crate::measure::{AbsVerdict, JobResult, Verdict};
use crate::runtime::ScriptError;

/// One row of the report.
#[derive(Debug, Clone, Serialize)]
pub struct ReportRow {
    /// The step's title.
    pub step: String,
    /// The layer the step adds.
    pub layer: String,
    /// `jit`, `aot`, or `None` for native.
    pub build: Option<Build>,
    /// The call path as a Rust type.
    pub path: String,
    /// Median ns per call.
    pub total_ns: Option<f64>,
    /// Index of the row this one is compared with for `adds` (the previous step, same build).
    pub previous: Option<usize>,
    /// What the step adds over `previous`.
    pub adds: Option<AbsVerdict>,
    /// The difference in estimated core cycles.
    pub adds_cycles: Option<f64>,
    /// Ratio to the native row and its CI.
    pub ratio: Option<(f64, f64, f64)>,
    /// The ratio verdict against native (`equal` within the band, `slower`, ...).
    pub verdict: Option<Verdict>,
    /// Estimated core cycles per call (from the calibrated core clock).
    pub cycles: Option<f64>,
    /// Instructions in the row's call-path machine code (static count).
    pub instructions: usize,
    /// Instructions one call executes, counted by single-stepping the row (exact, the same
    /// from run to run; the native row's too); `None` where counting was not possible.
    pub executed: Option<f64>,
    /// The row's checksum equals the native row's (per iteration).
    pub checksum_ok: bool,
    /// The fault that stopped the row, if one did.
    pub fault: Option<String>,
    /// Why a row that costs less than the row before it does ([`saving_reason`]); `None`
    /// unless `adds` is a resolved saving.
    pub why: Option<Saving>,
}

/// Why a rung costs less than the row before it, though it adds a layer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Saving {
    /// The saving is smaller than the run's equivalence band of the row before: resolved
    /// (the CI excludes zero), but below what the verdicts treat as a difference.
    WithinNoise {
        /// The saving, ns.
        saved_ns: f64,
        /// The band's width at the row before, ns.
        band_ns: f64,
    },
    /// The row's code has at least as many instructions as the row before's, so no work was
    /// saved: the code's placement (alignment of its loop and branches, branch-predictor
    /// aliasing) changed with it.
    Layout {
        /// The saving, ns.
        saved_ns: f64,
        /// Instructions more than the row before (0 or more).
        more_instructions: usize,
    },
    /// The row's code is shorter: the layer's wrapper let the compiler fold work away (for
    /// instance a runtime rung that inlines whole).
    FewerInstructions {
        /// The saving, ns.
        saved_ns: f64,
        /// The row's instructions and the row before's.
        instructions: (usize, usize),
    },
}

impl Saving {
    /// The short tag shown after the `saves` cell.
    pub fn tag(&self) -> &'static str {
        match self {
            Saving::WithinNoise { .. } => "within noise",
            Saving::Layout { .. } => "layout effect",
            Saving::FewerInstructions { .. } => "fewer instructions",
        }
    }
}

impl std::fmt::Display for Saving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Saving::WithinNoise { saved_ns, band_ns } => write!(
                f,
                "within the run's noise: {saved_ns:.3} ns is less than the equivalence band at \
                 the row before (±{band_ns:.3} ns); a layer that costs next to nothing can \
                 measure a hair below zero"
            ),
            Saving::Layout {
                saved_ns,
                more_instructions,
            } => write!(
                f,
                "a layout effect: the code has {more_instructions} more instructions than the \
                 row before, so nothing was saved; where its loop and branches fall \
                 (alignment, branch-predictor aliasing) moved, worth {saved_ns:.2} ns here \
                 (`hotlab check --layouts K` measures a snippet at several placements)"
            ),
            Saving::FewerInstructions {
                saved_ns,
                instructions: (now, before),
            } => write!(
                f,
                "fewer instructions: {now} against {before} in the row before; the compiler \
                 folded work away around this layer ({saved_ns:.2} ns)"
            ),
        }
    }
}

/// A per-call count: whole numbers as integers, others with one decimal.
fn fmt_count(x: f64) -> String {
    if (x - x.round()).abs() < 0.05 {
        format!("{:.0}", x)
    } else {
        format!("{x:.1}")
    }
}

/// The instruction counts of `now` and `before` that a saving is judged by: what one call
/// executes (the `instr` column) where both rows were counted, else their call-path code's
/// static counts. The native row's static count is not its code's: like with like only.
fn compared_instructions(now: &ReportRow, before: &ReportRow) -> (usize, usize) {
    match (now.executed, before.executed) {
        (Some(n), Some(b)) => (n.round() as usize, b.round() as usize),
        _ if before.build.is_some() => (now.instructions, before.instructions),
        _ => (now.instructions, now.instructions),
    }
}

/// Why row `now` costs less than row `before` (see [`Saving`]): `saved_ns` is the resolved
/// saving, `before_ns` the row before's total, `band` the equivalence band (a fraction).
pub fn saving_reason(
    saved_ns: f64,
    before_ns: f64,
    band: f64,
    instructions: (usize, usize),
) -> Saving {
    let band_ns = before_ns * band;
    let (now, before) = instructions;
    if saved_ns < band_ns {
        Saving::WithinNoise { saved_ns, band_ns }
    } else if now >= before {
        Saving::Layout {
            saved_ns,
            more_instructions: now - before,
        }
    } else {
        Saving::FewerInstructions {
            saved_ns,
            instructions: (now, before),
        }
    }
}

/// The note under a ladder whose method's body is measured as its own row.
pub fn body_note(value: i64) -> String {
    format!(
        "method body: the snippet's `call` does work its native twin does not (the twin only \
         returns {value}); the body rows measure that work (the method through the pointer bound \
         in the shell, no layer), and each build's first rung is measured from them, so the \
         body's cost lands on no layer"
    )
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The ladder's name.
    pub ladder: String,
    /// Header lines: machine, timer, health warnings.
    pub header: Vec<String>,
    /// The rows.
    pub rows: Vec<ReportRow>,
    /// The equivalence band.
    pub band: f64,
    /// The runtime's call (`rt-handle`) against the bench's row (`bench`) measured in the same
    /// job: the ratio bench / rt-handle and its CI, when the ladder has both rungs.
    pub bench_agreement: Option<(f64, f64, f64)>,
    /// The method's body is measured as its own row (a `body` step: the method does work its
    /// native twin does not), with the value the twin returns.
    pub body: Option<i64>,
}

impl Report {
    /// Build the report from a bench and its job's result (variant `i` is row `i`).
    pub fn new(
        bench: &LadderBench,
        result: &JobResult,
        faults: &[Option<ScriptError>],
        header: Vec<String>,
    ) -> Report {
        let native = result.variants.first().and_then(|v| v.checksum);
        let rows = bench
            .rows
            .iter()
            .enumerate()
            .map(|(i, row)| {
                let v = &result.variants[i];
                let layer = |j: usize| bench.ladder.steps[bench.rows[j].step].layer;
                let previous = if row.build.is_none() {
                    None
                } else if layer(i) == Layer::Body {
                    // The body's work over the twin's.
                    Some(0)
                } else {
                    // The row of the previous step in the same build, else the method's body
                    // row (its build's, else the `aot` one: a runtime rung is Rust calling the
                    // method, too), else the native row.
                    let body = |b: Option<Build>| {
                        (0..i).find(|&j| layer(j) == Layer::Body && bench.rows[j].build == b)
                    };
                    Some(
                        (0..i)
                            .rev()
                            .find(|&j| {
                                bench.rows[j].build == row.build && bench.rows[j].step < row.step
                            })
                            .or_else(|| body(row.build))
                            .or_else(|| body(Some(Build::Aot)))
                            .or_else(|| body(Some(Build::Jit)))
                            .unwrap_or(0),
                    )
                };
                let step_cmp = previous.and_then(|p| result.compare(p, i).ok());
                let native_cmp = (i != 0).then(|| result.compare(0, i).ok()).flatten();
                let checksum_ok = match (native, v.checksum) {
                    (Some((n0, c0)), Some((n, c))) => {
                        u128::from(c0) * u128::from(n) == u128::from(c) * u128::from(n0)
                    }
                    _ => false,
                } && faults.get(i).is_none_or(|f| f.is_none());
                ReportRow {
                    step: bench.ladder.steps[row.step].title.clone(),
                    layer: bench.ladder.steps[row.step].layer.to_string(),
                    build: row.build,
                    path: row.path.to_string(),
                    total_ns: v.summary.as_ref().map(|s| s.median.nanos()),
                    previous,
                    adds: step_cmp.as_ref().and_then(|c| c.abs),
                    adds_cycles: step_cmp.as_ref().and_then(|c| c.diff_cycles.map(|x| x.0)),
                    ratio: native_cmp
                        .as_ref()
                        .map(|c| (c.verdict.ratio.0, c.verdict.low.0, c.verdict.high.0)),
                    verdict: native_cmp.as_ref().map(|c| c.verdict.verdict),
                    cycles: v.cycles_est.map(|c| c.0),
                    instructions: row.instructions(),
                    executed: v.instructions,
                    checksum_ok,
                    fault: faults
                        .get(i)
                        .and_then(|f| f.as_ref())
                        .map(|e| e.to_string()),
                    why: None,
                }
            })
            .collect::<Vec<ReportRow>>();
        let mut rows = rows;
        for i in 0..rows.len() {
            let (Some(p), Some(AbsVerdict::Saves { diff, .. })) = (rows[i].previous, rows[i].adds)
            else {
                continue;
            };
            let before = &rows[p];
            rows[i].why = Some(saving_reason(
                -diff.nanos(),
                before.total_ns.unwrap_or(0.0),
                result.band,
                compared_instructions(&rows[i], before),
            ));
        }
        let rung = |l: Layer| {
            bench
                .rows
                .iter()
                .position(|r| bench.ladder.steps[r.step].layer == l)
        };
        let bench_agreement = match (rung(Layer::RtHandle), rung(Layer::Bench)) {
            (Some(h), Some(b)) => result
                .compare(h, b)
                .ok()
                .map(|c| (c.verdict.ratio.0, c.verdict.low.0, c.verdict.high.0)),
            _ => None,
        };
        Report {
            ladder: bench.ladder.name.clone(),
            header,
            rows,
            band: result.band,
            bench_agreement,
            body: bench.ladder.has_body().then_some(bench.value),
        }
    }

    /// True when every row's checksum equals the native row's.
    pub fn all_ok(&self) -> bool {
        self.rows.iter().all(|r| r.checksum_ok)
    }

    /// The rows as a table.
    pub fn table(&self) -> Table {
        let mut t = Table::new(
            format!("ladder {}", self.ladder),
            &[
                "step",
                "build",
                "path",
                "adds (vs row before, 95% CI)",
                ">total ns",
                ">x native [95% CI]",
                "vs native",
                ">cycles",
                ">instr",
                "ok",
            ],
        );
        for r in &self.rows {
            t.push(vec![
                r.step.clone(),
                r.build.map(|b| b.to_string()).unwrap_or_else(|| "-".into()),
                r.path.clone(),
                match (&r.adds, &r.why) {
                    (Some(a), Some(why)) => format!("{a} ({})", why.tag()),
                    (Some(a), None) => a.to_string(),
                    (None, _) if r.build.is_none() => "(the floor)".into(),
                    (None, _) => "unresolved: too few rounds".into(),
                },
                r.total_ns.map(|x| format!("{x:.2}")).unwrap_or_default(),
                match r.ratio {
                    Some((x, lo, hi)) => format!("{x:.2}x [{lo:.2}, {hi:.2}]"),
                    None if r.build.is_none() => "1.00x".into(),
                    None => String::new(),
                },
                r.verdict.map(|v| v.to_string()).unwrap_or_default(),
                r.cycles.map(|x| format!("{x:.1}")).unwrap_or_default(),
                match (r.executed, r.build) {
                    (Some(x), _) => fmt_count(x),
                    (None, Some(_)) => format!("~{}", r.instructions),
                    (None, None) => "-".into(),
                },
                if r.checksum_ok { "ok" } else { "!" }.into(),
            ]);
        }
        t.notes.push(format!(
            "adds: median per-round difference from the row before in the same build (the native \
             row for a build's first step, or its method body row when there is one); vs native: ratio verdict with a ±{:.0}% band; cycles: \
             per call, against a chain of register adds timed in the same rounds (no PMU \
             needed); instr: instructions one call executes, counted by single-stepping the row \
             (`~N`: counting was not possible, the static count of its call-path code)",
            self.band * 100.0
        ));
        if let Some(value) = self.body {
            t.notes.push(body_note(value));
        }
        if self.rows.iter().any(|r| r.build == Some(Build::Runtime)) {
            t.notes.push(
                "build `runtime`: the runtime's own code, not a model (jit: Cranelift IR written to \
                 do what a layer does; aot: the runtime's CallPath layers composed in the \
                 ladder's order)"
                    .into(),
            );
        }
        if let Some((x, lo, hi)) = self.bench_agreement {
            let apart = (x - 1.0).abs() * 100.0;
            t.notes.push(format!(
                "the runtime's call (rt-handle) beside the bench's host-call row (bench), same \
                 job: bench / rt-handle = {x:.3}x [{lo:.3}, {hi:.3}], {apart:.1}% apart ({})",
                if apart <= 5.0 {
                    "they agree within 5%"
                } else {
                    "more than 5%: they do not agree"
                }
            ));
        }
        for r in &self.rows {
            if let Some(why) = &r.why {
                t.notes.push(format!(
                    "{} {} saves time: {why}",
                    r.build.map(|b| b.to_string()).unwrap_or_default(),
                    r.step
                ));
            }
        }
        for r in &self.rows {
            if let Some(f) = &r.fault {
                t.notes.push(format!(
                    "! {} {}: {f}",
                    r.build.map(|b| b.to_string()).unwrap_or_default(),
                    r.step
                ));
            } else if !r.checksum_ok {
                t.notes.push(format!(
                    "! {} {}: checksum differs from the native row's",
                    r.build.map(|b| b.to_string()).unwrap_or_default(),
                    r.step
                ));
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saving_says_why() {
        // 0.01 ns below a 2.0 ns row: inside its ±2% band (0.04 ns).
        let noise = saving_reason(0.01, 2.0, 0.02, (90, 80));
        assert_eq!(noise.tag(), "within noise");
        assert!(noise.to_string().contains("±0.040 ns"), "{noise}");
        // 0.30 ns with more code: nothing was saved, placement moved.
        let layout = saving_reason(0.30, 2.0, 0.02, (95, 82));
        assert_eq!(
            layout,
            Saving::Layout {
                saved_ns: 0.30,
                more_instructions: 13
            }
        );
        assert!(
            layout.to_string().contains("13 more instructions"),
            "{layout}"
        );
        // Shorter code: real work folded away.
        let fewer = saving_reason(0.30, 2.0, 0.02, (60, 82));
        assert_eq!(fewer.tag(), "fewer instructions");
        assert!(fewer.to_string().contains("60 against 82"), "{fewer}");
    }

    fn row(build: Option<Build>, instructions: usize, executed: Option<f64>) -> ReportRow {
        ReportRow {
            step: String::from("step"),
            layer: String::from("slot"),
            build,
            path: String::from("Slot"),
            total_ns: Some(2.0),
            previous: None,
            adds: None,
            adds_cycles: None,
            ratio: None,
            verdict: None,
            cycles: None,
            instructions,
            executed,
            checksum_ok: true,
            fault: None,
            why: None,
        }
    }

    #[test]
    fn a_saving_is_judged_by_the_instructions_the_instr_column_shows() {
        // More code on its path, but fewer instructions executed per call (the `runtime`
        // ladder's handle rung against its object rung): the executed counts decide.
        let now = row(Some(Build::Jit), 73, Some(29.0));
        let before = row(Some(Build::Jit), 51, Some(51.0));
        assert_eq!(compared_instructions(&now, &before), (29, 51));
        // One row not counted: both static counts.
        let before = row(Some(Build::Jit), 51, None);
        assert_eq!(compared_instructions(&now, &before), (73, 51));
        // The native row's static count is not its code's: compared with itself.
        let native = row(None, 13, None);
        assert_eq!(compared_instructions(&now, &native), (73, 73));
        let native = row(None, 13, Some(13.0));
        assert_eq!(compared_instructions(&now, &native), (29, 13));
    }
}
