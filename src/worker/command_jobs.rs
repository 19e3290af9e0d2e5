//! The worker's side of the jobs that reuse a one-shot command's code path: ladders
//! (`crate::ladder::run`), checks against twins (`crate::cases::check`), the case matrix
//! (`crate::cases::matrix`), and reloads of the live module (`Loaded::reload`, as `hotlab run
//! --reload` does).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::jobs::{fail, front, input, live};
use super::protocol::{Against, MeasureSettings, SnippetSource};
use crate::backend::jit::{JitError, ReloadFailure};
use crate::backend::{Backend, CallError, Checks, LoadError, LoadOptions, Loaded, Loader};
use crate::cases::check::{self, CheckError, CheckOptions, Script};
use crate::cases::{Mode, twin_named, twins};
use crate::ladder::bench::{Build, BuildError, CalledMethod, DEFAULT_SNIPPET};
use crate::lang::{self, SourceFile, Span};
use crate::measure::{Picos, Progress, Settings, Stop};
use crate::results::{
    AppliedReload, BenchResult, FailureCause, JobFailed, JobReport, LadderResult, LiveSnapshot,
    ReloadResult,
};

/// What lives in the worker between jobs: the module `:reload` works on.
#[derive(Default)]
pub struct State {
    live: Option<(String, Loaded)>,
}

fn engine_settings(s: &MeasureSettings) -> Settings {
    Settings {
        stop: Stop::Budget(Picos(s.time_s * 1e12)),
        cpu: s.cpu,
        band: s.band,
        ..Settings::default()
    }
}

/// `ladder`: the snippet's `call` (or the default empty method) through every row.
pub fn ladder(
    ladder: &crate::ladder::Ladder,
    snippet: Option<&SnippetSource>,
    settings: &MeasureSettings,
    builds: &[Build],
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(LiveSnapshot),
) -> Result<JobReport, JobFailed> {
    // The core clock is calibrated once per process (~100 ms): before measuring, not after a
    // cancel.
    crate::measure::clock::core_clock();
    let mut note = None;
    let own = match snippet {
        Some(s) if s.is_clif() => {
            return Err(input(format!(
                "error: {}: a ladder's method must be hot code with `fn call() -> i64` (.clif \
                 code has no method ABI)",
                s.name
            )));
        }
        Some(s) if !s.text.trim().is_empty() => {
            let program = front(s)?;
            if program.function_named("call").is_some() {
                Some((s.name.clone(), program))
            } else {
                note = Some(format!(
                    "{} has no `fn call() -> i64`: the ladder calls the default empty method",
                    s.name
                ));
                None
            }
        }
        _ => None,
    };
    let (method, program) = match own {
        Some(p) => p,
        None => {
            let source = Arc::new(SourceFile::new("<default snippet>", DEFAULT_SNIPPET));
            let program = lang::compile(source)
                .map_err(|_| input("error: the default snippet does not compile"))?;
            ("the default empty method".to_string(), program)
        }
    };
    let mut observer = |p: &Progress<'_>| progress(live(p));
    let header = crate::ladder::run::machine_header();
    let result = crate::runtime::catch_script(Span::default(), || {
        crate::ladder::run::measure(
            ladder.clone(),
            CalledMethod::Snippet(&program),
            builds,
            engine_settings(settings),
            cancel,
            &mut observer,
            header,
        )
    });
    let report = match result {
        Ok(Ok(r)) => r,
        Ok(Err(crate::ladder::run::RunError::Row { row, error })) => {
            // Located in the method's source, and said to be the row's cause.
            return Err(fail(
                FailureCause::Script,
                format!(
                    "{} (raised by row `{row}` of the ladder)",
                    error.render(&program.source)
                ),
            ));
        }
        Ok(Err(crate::ladder::run::RunError::Build(b))) if matches!(*b, BuildError::Raised(_)) => {
            let BuildError::Raised(error) = *b else {
                unreachable!("matched above")
            };
            // Located in the method's source (a ScriptError alone knows only its byte).
            return Err(fail(
                FailureCause::Script,
                format!(
                    "{} (raised by the first call of `call`, before any row ran)",
                    error.render(&program.source)
                ),
            ));
        }
        Ok(Err(e)) => {
            let kind = if e.is_script_error() {
                FailureCause::Script
            } else {
                FailureCause::Input
            };
            return Err(fail(kind, format!("error: {method}: {e}")));
        }
        Err(e) => return Err(fail(FailureCause::Script, e.render(&program.source))),
    };
    Ok(JobReport::Ladder(LadderResult {
        ladder: report.ladder.clone(),
        method,
        note,
        header: report.header.clone(),
        table: report.table(),
        all_ok: report.all_ok(),
        report: serde_json::to_value(&report).unwrap_or_default(),
    }))
}

fn script(s: &SnippetSource) -> Script {
    Script {
        mode: if s.is_clif() { Mode::Clif } else { Mode::Hot },
        source: Arc::new(SourceFile::new(s.name.clone(), s.text.clone())),
    }
}

/// What a check job asks (`WorkerJob::Check`'s fields).
pub struct CheckJob<'a> {
    /// The script.
    pub snippet: &'a SnippetSource,
    /// Its twin or the other snippet.
    pub against: &'a Against,
    /// The backend both are compiled with.
    pub backend: Backend,
    /// Time and band.
    pub settings: &'a MeasureSettings,
    /// Loop count of the result check.
    pub iters: i64,
    /// Placements of the script's code.
    pub layouts: usize,
}

/// `check`: the snippet's `run(n)` against a twin or another snippet; progress while it
/// measures, and a cancel answered with the verdict on the rounds so far.
pub fn check(
    job: &CheckJob<'_>,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(LiveSnapshot),
) -> Result<JobReport, JobFailed> {
    let &CheckJob {
        snippet,
        against,
        backend,
        settings,
        iters,
        layouts,
    } = job;
    // The core clock is calibrated once per process (~100 ms): before measuring, not after a
    // cancel, whose answer (the verdict on the rounds so far) must come within the grace.
    crate::measure::clock::core_clock();
    let against = match against {
        Against::Twin { name } => check::Against::Twin(twin_named(name).ok_or_else(|| {
            let known: Vec<&str> = twins().iter().map(|t| t.name).collect();
            input(format!(
                "error: no twin named `{name}`; twins: {}",
                known.join(", ")
            ))
        })?),
        Against::Snippet { snippet } => check::Against::Script(script(snippet)),
    };
    let options = CheckOptions {
        backend,
        band: settings.band,
        time: settings.time_s,
        iters,
        layouts,
    };
    let mut observer = |p: &Progress<'_>| progress(live(p));
    check::check_observed(&script(snippet), &against, &options, cancel, &mut observer)
        .map(|a| JobReport::Checked(Box::new(a)))
        .map_err(|e: CheckError| {
            if e.is_input() {
                input(e.to_string())
            } else {
                fail(FailureCause::Script, e.to_string())
            }
        })
}

/// `bench`: the case matrix (every backend) of the cases in `cases` (default: ./cases, else
/// the one hotlab was built with), progress as one snapshot per cell.
pub fn bench(
    filter: Option<&str>,
    time_s: f64,
    reps: usize,
    cases: Option<&std::path::Path>,
    progress: &mut dyn FnMut(LiveSnapshot),
) -> Result<JobReport, JobFailed> {
    use crate::cases::{matrix, render, spec};
    let dir = spec::default_dir(cases);
    let cases = spec::load_dir(&dir).map_err(|e| input(format!("error: {e}")))?;
    let opts = matrix::MatrixOptions {
        filter: filter.map(str::to_string),
        reps: reps.max(1),
        time: time_s,
        ..matrix::MatrixOptions::default()
    };
    if !cases.iter().any(|c| opts.selects(c)) {
        return Err(input(format!(
            "error: no case in {} matches `{}` (:cases lists them)",
            dir.display(),
            filter.unwrap_or("")
        )));
    }
    let start = std::time::Instant::now();
    let mut bar = |done: usize, total: usize, what: &str| {
        progress(LiveSnapshot {
            phase: format!("{done}/{total} {what}"),
            rounds: done as u64,
            elapsed_ms: start.elapsed().as_secs_f64() * 1e3,
            budget_ms: None,
            iters: total as u64,
            variants: Vec::new(),
        });
    };
    let m = matrix::run_matrix(&cases, &opts, &mut bar);
    Ok(JobReport::Bench(BenchResult {
        text: render::text(&m),
        markdown: render::markdown(&m),
        csv: render::csv(&m),
        json: serde_json::to_value(&m).unwrap_or_default(),
        problems: m.problems(),
        errors: Vec::new(),
        failed: m
            .cells()
            .any(|c| matches!(c.error, Some(crate::cases::CellError::Failed(_)))),
        mismatched: m.cells().any(|c| c.mismatch),
    }))
}

/// `reload`: start the live module from the snippet, or reload it with the snippet's text.
pub fn reload(
    state: &mut State,
    snippet: &SnippetSource,
    checks: bool,
) -> Result<JobReport, JobFailed> {
    if snippet.is_clif() {
        return Err(input(format!(
            "error: {}: .clif code has no classes to reload",
            snippet.name
        )));
    }
    let source = Arc::new(SourceFile::new(snippet.name.clone(), snippet.text.clone()));
    let same = state
        .live
        .as_ref()
        .is_some_and(|(name, _)| *name == snippet.name);
    if !same {
        let program = front(snippet)?;
        let has_main = program.main.is_some();
        let defined = program.classes.iter().map(|c| c.name.clone()).collect();
        let options = LoadOptions {
            checks: if checks { Checks::On } else { Checks::Off },
            reloadable: true,
            ..LoadOptions::default()
        };
        let mut module = Loader::new(options)
            .load_checked(program, Backend::Jit)
            .map_err(|e| match e {
                LoadError::Init(err) => fail(FailureCause::Script, err.render(&source)),
                other => input(format!("error: {}: {other}", snippet.name)),
            })?;
        let main = match has_main {
            true => Some(
                module
                    .run_main()
                    .map_err(|e| fail(FailureCause::Script, e.to_string()))?
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            false => None,
        };
        state.live = Some((snippet.name.clone(), module));
        return Ok(JobReport::Reloaded(ReloadResult {
            started: true,
            main,
            classes: Vec::new(),
            defined,
            globals_kept: Vec::new(),
            after_reload: None,
        }));
    }
    let Some((_, module)) = state.live.as_mut() else {
        return Err(input("error: no live module (a bug in hotlab)"));
    };
    match module.reload(Arc::clone(&source)) {
        Ok(outcome) => Ok(JobReport::Reloaded(ReloadResult {
            started: false,
            main: None,
            classes: outcome.classes,
            defined: outcome.defined,
            globals_kept: outcome.globals_kept,
            after_reload: outcome.after_reload.map(|v| v.to_string()),
        })),
        Err(ReloadFailure::Compile(d)) => Err(input(format!(
            "{}reload of {}: not applied (nothing changed)",
            d.render(&source, false),
            snippet.name
        ))),
        Err(ReloadFailure::Init(e, applied)) => Err(applied_then(
            &snippet.name,
            &applied,
            &e.render(&source),
            "the new version's initializer raised",
        )),
        Err(ReloadFailure::AfterReload(e, applied)) => Err(applied_then(
            &snippet.name,
            &applied,
            &e.render(&source),
            "after_reload raised",
        )),
        Err(ReloadFailure::Jit(JitError::Init(e))) => {
            Err(fail(FailureCause::Script, e.render(&source)))
        }
        Err(e) => Err(input(format!("error: reload of {}: {e}", snippet.name))),
    }
}

/// A script failure after a reload was applied: what it did to the classes, the error, and
/// what raised.
fn applied_then(
    name: &str,
    applied: &crate::backend::jit::ReloadOutcome,
    error: &str,
    what: &str,
) -> JobFailed {
    JobFailed {
        applied: Some(Box::new(AppliedReload {
            snippet: name.to_string(),
            classes: applied.classes.clone(),
            defined: applied.defined.clone(),
        })),
        ..fail(
            FailureCause::Script,
            format!("{error}\n(the reload was applied; {what})"),
        )
    }
}

/// `run_live`: call `function` in the live module of `snippet`.
pub fn run_live(state: &mut State, snippet: &str, function: &str) -> Result<JobReport, JobFailed> {
    let module = match &mut state.live {
        Some((name, module)) if name == snippet => module,
        _ => {
            return Err(input(format!(
                "error: {snippet} has no live module in this worker: :reload starts one"
            )));
        }
    };
    let start = std::time::Instant::now();
    let values = module.call(function).map_err(|e| match e {
        CallError::NoFunction(_) => {
            let names: Vec<&str> = module
                .program()
                .map(|p| p.functions.iter().map(|f| f.name.as_str()).collect())
                .unwrap_or_default();
            input(format!(
                "error: {snippet}: no function named `{function}` (functions: {})",
                names.join(", ")
            ))
        }
        other => fail(FailureCause::Script, other.to_string()),
    })?;
    let shown: Vec<String> = values.iter().map(ToString::to_string).collect();
    Ok(JobReport::Ran {
        value: shown.join(" "),
        micros: start.elapsed().as_secs_f64() * 1e6,
    })
}
