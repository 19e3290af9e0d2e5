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
    /// The row's checksum equals the native row's (per iteration).
    pub checksum_ok: bool,
    /// The fault that stopped the row, if one did.
    pub fault: Option<String>,
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
                let previous = if row.build.is_none() {
                    None
                } else {
                    // The row of the previous step in the same build, else the native row.
                    Some(
                        (0..i)
                            .rev()
                            .find(|&j| {
                                bench.rows[j].build == row.build && bench.rows[j].step < row.step
                            })
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
                    checksum_ok,
                    fault: faults
                        .get(i)
                        .and_then(|f| f.as_ref())
                        .map(|e| e.to_string()),
                }
            })
            .collect();
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
                match &r.adds {
                    Some(a) => a.to_string(),
                    None if r.build.is_none() => "(the floor)".into(),
                    None => "unresolved: too few rounds".into(),
                },
                r.total_ns.map(|x| format!("{x:.2}")).unwrap_or_default(),
                match r.ratio {
                    Some((x, lo, hi)) => format!("{x:.2}x [{lo:.2}, {hi:.2}]"),
                    None if r.build.is_none() => "1.00x".into(),
                    None => String::new(),
                },
                r.verdict.map(|v| v.to_string()).unwrap_or_default(),
                r.cycles.map(|x| format!("{x:.1}")).unwrap_or_default(),
                if r.build.is_some() {
                    r.instructions.to_string()
                } else {
                    "-".into()
                },
                if r.checksum_ok { "ok" } else { "!" }.into(),
            ]);
        }
        t.notes.push(format!(
            "adds: median per-round difference from the row before in the same build (the native \
             row for a build's first step); vs native: ratio verdict with a ±{:.0}% band; cycles \
             estimated from the calibrated core clock (no PMU); instr: static count of the \
             row's call-path machine code",
            self.band * 100.0
        ));
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
