//! A ladder measured end to end: build the rows, run each once untimed (so a fault is reported
//! plainly instead of mid-measurement), measure them interleaved in one job, and make the
//! report. `hotlab ladder` and the session's worker (`:ladder`) both go through [`measure`].

use std::sync::atomic::AtomicBool;

use super::bench::{Build, BuildError, CalledMethod, LadderBench};
use super::report::Report;
use super::spec::Ladder;
use crate::measure::env::health::{self, LiveProbes};
use crate::measure::{MeasureError, Observer, Settings};
use crate::runtime::ScriptError;

/// Why a ladder was not measured.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The rows could not be built (no `fn call() -> i64`, a compile error, ...). Boxed: a
    /// build error is large, and this is the `Err` of every ladder measurement.
    #[error("{0}")]
    Build(Box<BuildError>),
    /// A row's first, untimed calls raised an error.
    #[error("row `{row}` failed: {error}")]
    Row {
        /// The row's label.
        row: String,
        /// The error.
        error: ScriptError,
    },
    /// The engine refused the settings.
    #[error("{0}")]
    Measure(#[from] MeasureError),
}

impl From<BuildError> for RunError {
    fn from(e: BuildError) -> RunError {
        RunError::Build(Box::new(e))
    }
}

impl RunError {
    /// True when the snippet raised an error (as opposed to bad input).
    pub fn is_script_error(&self) -> bool {
        matches!(self, RunError::Row { .. })
            || matches!(self, RunError::Build(b) if matches!(**b, BuildError::Raised(_)))
    }
}

/// Build `ladder` around `method` for `builds` on this thread, check every row, and measure them
/// all in one interleaved job (the native row is the baseline). `header` heads the report (see
/// [`machine_header`]).
pub fn measure(
    ladder: Ladder,
    method: CalledMethod<'_>,
    builds: &[Build],
    settings: Settings,
    cancel: &AtomicBool,
    observer: &mut dyn Observer,
    header: Vec<String>,
) -> Result<Report, RunError> {
    let source = match &method {
        CalledMethod::Snippet(p) => Some(std::sync::Arc::clone(&p.source)),
        CalledMethod::Code { .. } => None,
    };
    let mut bench = LadderBench::build(ladder, method, builds)?;
    for i in 0..bench.rows.len() {
        let (_, fault) = bench.rows[i].run(100);
        if let Some(e) = fault {
            return Err(RunError::Row {
                row: bench.rows[i].label(&bench.ladder),
                error: e,
            });
        }
    }
    let result = bench.measure(settings, cancel, observer)?;
    let faults = bench.take_faults();
    let mut report = Report::new(&bench, &result, &faults, header);
    // A fault raised while measuring is located in the method's source (FILE:LINE:COL; the
    // error alone knows only its byte).
    if let Some(source) = &source {
        for (row, fault) in report.rows.iter_mut().zip(&faults) {
            if let Some(e) = fault {
                row.fault = Some(format!("{} at {}", e.kind, source.location(e.span)));
            }
        }
    }
    Ok(report)
}

/// The report's header: the machine, the timer and core clock, and health warnings.
pub fn machine_header() -> Vec<String> {
    let probes = LiveProbes::probe();
    let report = health::collect(std::path::Path::new("/"), &probes);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let mut lines = vec![format!(
        "machine: {model}, {} CPUs online",
        crate::measure::env::pin::online_cpus().len()
    )];
    if let Some(t) = probes.timer {
        lines.push(format!(
            "timer: {:?} at {}, precision {:.1} ns; core clock ~{}",
            t.kind,
            t.frequency,
            t.precision.nanos(),
            probes
                .core_clock
                .map(|c| c.ghz.to_string())
                .unwrap_or_else(|| "?".into())
        ));
    }
    for item in report.items.iter().filter(|i| i.warning.is_some()) {
        lines.push(format!(
            "health: {}: {}",
            item.name,
            item.warning.as_deref().unwrap_or("")
        ));
    }
    lines
}

/// Why [`with_layers`] made no ladder.
#[derive(Debug, thiserror::Error)]
pub enum LayersError {
    /// Neither the ladder nor a shipped one has a step for the layer.
    #[error("no ladder describes the layer `{0}`")]
    NoStep(super::Layer),
    /// The chosen ladder did not serialize.
    #[error("cannot write the ladder: {0}")]
    Write(#[from] toml::ser::Error),
    /// The chosen layers do not make a ladder (a layer twice, `fused` or `direct` beside
    /// another): the ladder file's problem, without a position.
    #[error("{0}")]
    Invalid(super::LadderProblem),
}

/// A ladder with its steps reordered or chosen: `layers` names the layers after `native`, in
/// order (`native` first is implied). Each step keeps the title and text of the ladder that has
/// it (`base` first, then the shipped ladders). The result is checked like a ladder file.
pub fn with_layers(base: &Ladder, layers: &[super::Layer]) -> Result<Ladder, LayersError> {
    use super::{Layer, Step};
    let pool: Vec<Step> = base
        .steps
        .iter()
        .cloned()
        .chain(
            super::BUILTIN
                .iter()
                .filter_map(|(name, _)| super::resolve(name).ok())
                .flat_map(|l| l.steps),
        )
        .chain([Step::body()])
        .collect();
    let step = |l: Layer| {
        pool.iter()
            .find(|s| s.layer == l)
            .cloned()
            .ok_or(LayersError::NoStep(l))
    };
    let mut steps = vec![step(Layer::Native)?];
    for &l in layers.iter().filter(|l| **l != Layer::Native) {
        steps.push(step(l)?);
    }
    let ladder = Ladder {
        name: base.name.clone(),
        description: base.description.clone(),
        steps,
    };
    // Checked as a file would be: no layer twice, `fused`/`direct` alone.
    let text = toml::to_string(&ladder)?;
    Ladder::parse("<layers>", &text).map_err(|e| LayersError::Invalid(e.problem))?;
    Ok(ladder)
}
