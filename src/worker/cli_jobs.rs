//! The worker's side of the one-shot commands (`hotlab run`, `asm`, `ladder`, `bench`): the same
//! code paths they ran in their own process, here on the worker's job thread, so that script
//! code that crashes (a signal) or spins ends the worker, never hotlab.

use std::sync::Arc;

use super::jobs::{AsmInput, code_of, fail, front, input, listings, load_failure, machine_code};
use super::protocol::SnippetSource;
use crate::backend::disasm::{self, Syntax};
use crate::backend::jit::{JitError, ReloadFailure};
use crate::backend::object::ObjectError;
use crate::backend::{Backend, Checks, LoadOptions, Loaded, Loader, Value};
use crate::ladder::bench::{Build, BuildError, DEFAULT_SNIPPET};
use crate::lang::{self, SourceFile};
use crate::results::{
    AppliedReload, BenchResult, FailureCause, FunctionSummary, JobFailed, JobReport, LiveSnapshot,
    ReloadResult, ReloadStep, RunFileResult,
};

fn shown(values: &[Value]) -> String {
    let shown: Vec<String> = values.iter().map(Value::to_string).collect();
    shown.join(" ")
}

fn source_of(s: &SnippetSource) -> Arc<SourceFile> {
    Arc::new(SourceFile::new(s.name.clone(), s.text.clone()))
}

fn syntax(att: bool) -> Syntax {
    if att { Syntax::Att } else { Syntax::Intel }
}

/// `hotlab run`: `main`, then each reload in order.
pub fn run_file(
    snippet: &SnippetSource,
    backend: Backend,
    checks: bool,
    reloads: &[SnippetSource],
) -> Result<JobReport, JobFailed> {
    let source = source_of(snippet);
    let options = LoadOptions {
        checks: if checks { Checks::On } else { Checks::Off },
        reloadable: !reloads.is_empty(),
        ..LoadOptions::default()
    };
    if snippet.is_clif() {
        // Raw IR has no diagnostics of its own: whatever goes wrong is the file's.
        let name = &snippet.name;
        let mut loaded = Loader::new(options)
            .load(source, backend, None)
            .map_err(|e| input(format!("error: {name}: {e}")))?;
        let values = loaded
            .run_main()
            .map_err(|e| input(format!("error: {name}: {e}")))?;
        return Ok(JobReport::RanFile(RunFileResult {
            value: shown(&values),
            functions: Vec::new(),
            object_stages: Vec::new(),
            reloads: Vec::new(),
        }));
    }
    let program = front(snippet)?;
    if program.main.is_none() {
        return Err(input(format!(
            "error: {}: no `fn main` to run (add `fn main() -> i64 {{ ... }}`)",
            snippet.name
        )));
    }
    let mut loaded = Loader::new(options)
        .load_checked(program, backend)
        .map_err(|e| load_failure(e, backend, &source))?;
    let functions = stage_times(&loaded);
    let object_stages = loaded
        .object_stages()
        .map(|t| {
            t.stages()
                .iter()
                .map(|(name, d)| (name.to_string(), d.as_secs_f64() * 1e6))
                .collect()
        })
        .unwrap_or_default();
    let value = loaded
        .run_main()
        .map_err(|e| fail(FailureCause::Script, e.to_string()))?;
    let reloads = reloads
        .iter()
        .map(|v| reload_step(&mut loaded, v))
        .collect();
    Ok(JobReport::RanFile(RunFileResult {
        value: shown(&value),
        functions,
        object_stages,
        reloads,
    }))
}

/// Each compiled function's name and stage times.
fn stage_times(loaded: &Loaded) -> Vec<FunctionSummary> {
    let micros = |d: std::time::Duration| d.as_secs_f64() * 1e6;
    loaded
        .machine_code()
        .unwrap_or_default()
        .iter()
        .map(|f| FunctionSummary {
            name: f.name.clone(),
            bytes: f.bytes.len(),
            instructions: disasm::instruction_count(&f.bytes),
            lower_us: micros(f.lower_time),
            compile_us: micros(f.compile_time),
        })
        .collect()
}

/// One `--reload`: what it did, or why it was not applied, as `hotlab run` reports it.
fn reload_step(loaded: &mut Loaded, version: &SnippetSource) -> ReloadStep {
    let source = source_of(version);
    let name = &version.name;
    let applied_then =
        |e: &crate::runtime::ScriptError, applied: &crate::backend::jit::ReloadOutcome| JobFailed {
            applied: Some(Box::new(AppliedReload {
                snippet: name.clone(),
                classes: applied.classes.clone(),
                defined: applied.defined.clone(),
            })),
            ..fail(FailureCause::Script, e.render(&source))
        };
    match loaded.reload(Arc::clone(&source)) {
        Ok(outcome) => ReloadStep::Applied(ReloadResult {
            started: false,
            main: None,
            classes: outcome.classes,
            defined: outcome.defined,
            globals_kept: outcome.globals_kept,
            after_reload: outcome.after_reload.map(|v| v.to_string()),
        }),
        Err(ReloadFailure::Compile(d)) => ReloadStep::Failed(input(format!(
            "{}reload {name}: not applied (nothing changed)",
            d.render(&source, false)
        ))),
        Err(ReloadFailure::AfterReload(e, applied) | ReloadFailure::Init(e, applied)) => {
            ReloadStep::Failed(applied_then(&e, &applied))
        }
        Err(
            ReloadFailure::Jit(JitError::Init(e)) | ReloadFailure::Object(ObjectError::Init(e)),
        ) => ReloadStep::Failed(fail(FailureCause::Script, e.render(&source))),
        Err(e) => ReloadStep::Failed(input(format!("error: reload {name}: {e}"))),
    }
}

/// `hotlab asm FILE`.
pub fn asm_file(
    snippet: &SnippetSource,
    backend: Backend,
    checks: bool,
    function: Option<&str>,
    att: bool,
) -> Result<JobReport, JobFailed> {
    let what = if snippet.is_clif() {
        AsmInput::Clif(source_of(snippet))
    } else {
        AsmInput::Hot(front(snippet)?)
    };
    let loaded = machine_code(what, backend, checks)?;
    let source = loaded.program().map(|p| Arc::clone(&p.source));
    let listings = listings(
        &code_of(&loaded)?,
        function,
        syntax(att),
        &snippet.name,
        source.as_deref(),
    )?;
    Ok(JobReport::Asm { listings })
}

/// The method's program: the snippet's (a `.hot` one), or the default empty method.
fn method_program(snippet: Option<&SnippetSource>) -> Result<(String, lang::Program), JobFailed> {
    match snippet {
        Some(s) if s.is_clif() => Err(input(format!(
            "error: {}: a ladder's method must be a .hot snippet with `fn call() -> i64` (.clif \
             code has no method ABI)",
            s.name
        ))),
        Some(s) => Ok((s.name.clone(), front(s)?)),
        None => {
            let source = Arc::new(SourceFile::new("<default snippet>", DEFAULT_SNIPPET));
            let program = lang::compile(source)
                .map_err(|_| input("error: the default snippet does not compile"))?;
            Ok(("<default snippet>".to_string(), program))
        }
    }
}

/// `hotlab asm --ladder`: each step's code of one build.
pub fn ladder_asm(
    ladder: &crate::ladder::Ladder,
    snippet: Option<&SnippetSource>,
    build: Build,
    att: bool,
) -> Result<JobReport, JobFailed> {
    let (name, program) = method_program(snippet)?;
    let steps = crate::ladder::code::ladder_code(ladder.clone(), &program, build, syntax(att))
        .map_err(|e| match e {
            BuildError::Raised(_) => fail(FailureCause::Script, format!("error: {name}: {e}")),
            _ => input(format!("error: {name}: {e}")),
        })?;
    Ok(JobReport::LadderCode { steps })
}

/// What `hotlab bench` runs: the matrix with the command's options.
pub struct MatrixJob<'a> {
    /// The backends, in table order.
    pub backends: &'a [Backend],
    /// Only cases whose name or title contains this.
    pub filter: Option<&'a str>,
    /// Timed runs per cell.
    pub reps: usize,
    /// Loop count of the checked run.
    pub iters: i64,
    /// Seconds of one timed run.
    pub time_s: f64,
    /// Largest N of the reload chain.
    pub reloads: u64,
    /// Keep the load section.
    pub load: bool,
    /// The cases directory.
    pub cases: Option<&'a std::path::Path>,
    /// Cells that crashed an earlier worker.
    pub crashed: &'a [super::protocol::CrashedCell],
}

/// `hotlab bench`: the case matrix; progress as one snapshot before each cell, whose phase
/// (`DONE/TOTAL CASE (BACKEND)`) names the cell that runs.
pub fn matrix(
    job: &MatrixJob<'_>,
    progress: &mut dyn FnMut(LiveSnapshot),
) -> Result<JobReport, JobFailed> {
    use crate::cases::{CellError, matrix, render, spec};
    let dir = spec::default_dir(job.cases);
    let cases = spec::load_dir(&dir).map_err(|e| input(format!("error: {e}")))?;
    let opts = matrix::MatrixOptions {
        backends: job.backends.to_vec(),
        filter: job.filter.map(str::to_string),
        reps: job.reps.max(1),
        iters: job.iters,
        time: job.time_s,
        reloads: job.reloads,
        load: job.load,
        pin: true,
        crashed: job
            .crashed
            .iter()
            .map(|c| (c.case.clone(), c.backend, c.signal.clone()))
            .collect(),
    };
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
    let mut errors = Vec::new();
    for t in &m.tables {
        for r in &t.rows {
            for (mode, c) in &r.cells {
                if let Some(CellError::Failed(e)) = &c.error {
                    errors.push(format!(
                        "{} {} ({}): {}",
                        r.case,
                        mode.label(),
                        t.backend.name(),
                        e.trim_end()
                    ));
                }
            }
        }
    }
    for r in &m.reloads {
        for (b, c) in &r.cells {
            if let Some(CellError::Failed(e)) = &c.error {
                errors.push(format!("{} ({}): {}", r.title, b.name(), e.trim_end()));
            }
        }
    }
    Ok(JobReport::Bench(BenchResult {
        text: render::text(&m),
        markdown: render::markdown(&m),
        csv: render::csv(&m),
        json: serde_json::to_value(&m).unwrap_or_default(),
        problems: m.problems(),
        failed: m
            .cells()
            .any(|c| matches!(c.error, Some(CellError::Failed(_)))),
        mismatched: m.cells().any(|c| c.mismatch),
        errors,
    }))
}
