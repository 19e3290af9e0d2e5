//! The worker's side of the lab jobs built on the ladder engine and the cases: ladders,
//! checks against twins, the case matrix, and reloads of the live module. Each reuses the code
//! path of its one-shot command (`crate::ladder::run`, `crate::cases::check`,
//! `crate::cases::matrix`, `ScriptModule::reload`).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::jobs::{fail, front, input, live};
use super::protocol::{
    Against, BenchOut, ClassReload, FailureKind, JobFailure, JobOutput, LadderOut, LiveProgress,
    MeasureSettings, ReloadOut, SnippetSource, TableOut,
};
use crate::backend::Checks;
use crate::backend::jit::{JitError, JitOptions, ReloadFailure, ScriptModule};
use crate::cases::check::{self, CheckError, CheckOptions, Script};
use crate::cases::{Mode, twin_named, twins};
use crate::ladder::bench::{Build, DEFAULT_SNIPPET, Method};
use crate::lang::{self, SourceFile, Span};
use crate::measure::{Picos, Progress, Settings, Stop};

/// What lives in the worker between jobs: the module `:reload` works on.
#[derive(Default)]
pub struct State {
    live: Option<(String, ScriptModule)>,
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
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(LiveProgress),
) -> Result<JobOutput, JobFailure> {
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
            Method::Snippet(&program),
            &[Build::Jit, Build::Aot],
            engine_settings(settings),
            cancel,
            &mut observer,
            header,
        )
    });
    let report = match result {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            let kind = if e.is_script_error() {
                FailureKind::Script
            } else {
                FailureKind::Input
            };
            return Err(fail(kind, format!("error: {method}: {e}")));
        }
        Err(e) => return Err(fail(FailureKind::Script, e.render(&program.source))),
    };
    Ok(JobOutput::Ladder(LadderOut {
        ladder: report.ladder.clone(),
        method,
        note,
        header: report.header.clone(),
        table: TableOut::from(&report.table()),
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

/// `check`: the snippet's `run(n)` against a twin or another snippet.
pub fn check(
    snippet: &SnippetSource,
    against: &Against,
    backend: super::Backend,
    settings: &MeasureSettings,
    iters: i64,
) -> Result<JobOutput, JobFailure> {
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
        backend: backend.into(),
        band: settings.band,
        time: settings.time_s,
        iters,
    };
    check::check(&script(snippet), &against, &options)
        .map(JobOutput::Checked)
        .map_err(|e: CheckError| {
            if e.is_input() {
                input(e.to_string())
            } else {
                fail(FailureKind::Script, e.to_string())
            }
        })
}

/// `bench`: the case matrix (every backend), progress as one snapshot per cell.
pub fn bench(
    filter: Option<&str>,
    time_s: f64,
    reps: usize,
    progress: &mut dyn FnMut(LiveProgress),
) -> Result<JobOutput, JobFailure> {
    use crate::cases::{matrix, render, spec};
    let dir = spec::default_dir(None);
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
        progress(LiveProgress {
            phase: format!("{done}/{total} {what}"),
            rounds: done as u64,
            elapsed_ms: start.elapsed().as_secs_f64() * 1e3,
            budget_ms: None,
            iters: total as u64,
            variants: Vec::new(),
        });
    };
    let m = matrix::run_matrix(&cases, &opts, &mut bar);
    Ok(JobOutput::Bench(BenchOut {
        text: render::text(&m),
        markdown: render::markdown(&m),
        csv: render::csv(&m),
        json: serde_json::to_value(&m).unwrap_or_default(),
        problems: m.problems(),
    }))
}

/// `reload`: start the live module from the snippet, or reload it with the snippet's text.
pub fn reload(
    state: &mut State,
    snippet: &SnippetSource,
    checks: bool,
) -> Result<JobOutput, JobFailure> {
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
        let options = JitOptions {
            checks: if checks { Checks::On } else { Checks::Off },
            ..JitOptions::default()
        };
        let module = ScriptModule::new(program, options).map_err(|e| match e {
            JitError::Init(err) => fail(FailureKind::Script, err.render(&source)),
            other => input(format!("error: {}: {other}", snippet.name)),
        })?;
        let main = match module.program().main {
            Some(_) => Some(
                module
                    .run_main()
                    .map_err(|e| fail(FailureKind::Script, e.render(&source)))?
                    .to_string(),
            ),
            None => None,
        };
        let defined = module
            .program()
            .classes
            .iter()
            .map(|c| c.name.clone())
            .collect();
        state.live = Some((snippet.name.clone(), module));
        return Ok(JobOutput::Reloaded(ReloadOut {
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
        Ok(outcome) => Ok(JobOutput::Reloaded(ReloadOut {
            started: false,
            main: None,
            classes: outcome.classes.iter().map(ClassReload::from).collect(),
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
            Err(fail(FailureKind::Script, e.render(&source)))
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
) -> JobFailure {
    let classes: Vec<ClassReload> = applied.classes.iter().map(ClassReload::from).collect();
    let mut text = super::protocol::class_lines(name, &classes, &applied.defined).join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    fail(
        FailureKind::Script,
        format!("{text}{error}\n(the reload was applied; {what})"),
    )
}

/// `run_live`: call `function` in the live module of `snippet`.
pub fn run_live(state: &State, snippet: &str, function: &str) -> Result<JobOutput, JobFailure> {
    let module = match &state.live {
        Some((name, module)) if name == snippet => module,
        _ => {
            return Err(input(format!(
                "error: {snippet} has no live module in this worker: :reload starts one"
            )));
        }
    };
    let program = module.current();
    let Some(id) = program.function_named(function) else {
        let names: Vec<&str> = module
            .program()
            .functions
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        return Err(input(format!(
            "error: {snippet}: no function named `{function}` (functions: {})",
            names.join(", ")
        )));
    };
    let start = std::time::Instant::now();
    let value = program
        .call(id, &[])
        .map_err(|e| fail(FailureKind::Script, e.render(&module.program().source)))?;
    Ok(JobOutput::Ran {
        value: value.to_string(),
        micros: start.elapsed().as_secs_f64() * 1e6,
    })
}
