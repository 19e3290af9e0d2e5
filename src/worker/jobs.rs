//! The worker's side of each job: compile, run, list machine code, measure, check the machine.
//! Everything here runs on the worker's job thread, where a fault takes only the worker down.

use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use super::protocol::{
    Backend, Bucket, ComparisonOut, Contestant, FailureKind, FailureLocation, FunctionInfo,
    JobFailure, JobOutput, Listing, LiveProgress, LiveVariant, MeasureSettings, Measured,
    MeasuredRowOut, Percentile, SnippetSource, WorkerJob,
};
use crate::backend::disasm::{self, Syntax};
use crate::backend::jit::{Jit, JitError, JitOptions, JitProgram, VmCtx};
use crate::backend::object::{ObjectError, ObjectOptions, compile_object};
use crate::backend::{Checks, Value, interp};
use crate::lang::{self, Program, SourceFile};
use crate::measure::histogram::OpHistogram;
use crate::measure::{self, JobResult, Picos, Progress, Stop, Variant};

/// Rows and width of histograms sent to front ends.
const HIST_ROWS: usize = 8;
const HIST_WIDTH: usize = 48;
/// Buckets of the histograms sent as counts.
const BUCKETS: usize = 32;
const QUANTILES: [f64; 9] = [0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0];

pub(super) fn fail(kind: FailureKind, message: impl Into<String>) -> JobFailure {
    JobFailure::new(kind, message)
}

pub(super) fn input(message: impl Into<String>) -> JobFailure {
    fail(FailureKind::Input, message)
}

fn checks(on: bool) -> Checks {
    if on { Checks::On } else { Checks::Off }
}

fn jit_for(backend: Backend, checks_on: bool) -> Result<Jit, JobFailure> {
    Jit::new(JitOptions {
        checks: checks(checks_on),
        opt: backend.opt_level(),
        ..JitOptions::default()
    })
    .map_err(|e| input(format!("error: {e}")))
}

/// Compile a checked program on `backend` (jit, jit-opt or object). An object program keeps
/// its shared library loaded for as long as it lives.
fn compile_native(
    backend: Backend,
    checks_on: bool,
    program: &Program,
    name: &str,
) -> Result<JitProgram, JobFailure> {
    if backend != Backend::Object {
        let mut jit = jit_for(backend, checks_on)?;
        return compile_jit(&mut jit, program, name);
    }
    let options = ObjectOptions {
        jit: JitOptions {
            checks: checks(checks_on),
            ..JitOptions::default()
        },
        ..ObjectOptions::default()
    };
    match compile_object(program, &options) {
        Ok(p) => Ok(p.into_program()),
        Err(ObjectError::Init(err)) => Err(fail(FailureKind::Script, err.render(&program.source))),
        Err(other) => Err(input(format!("error: {name}: {other}"))),
    }
}

/// `.clif` snippets run on the Cranelift JIT only.
fn refuse_clif(backend: Backend, name: &str) -> Result<(), JobFailure> {
    match backend {
        Backend::Interp => Err(input(format!(
            "error: {name}: the interp backend runs .hot snippets only; use the jit backend"
        ))),
        Backend::Object => Err(input(format!(
            "error: {name}: the object backend builds .hot snippets only (a .clif snippet is \
             loaded by the JIT); use the jit backend"
        ))),
        Backend::Jit | Backend::JitOpt => Ok(()),
    }
}

/// Run the front end over a `.hot` snippet; diagnostics come back rendered.
pub(super) fn front(snippet: &SnippetSource) -> Result<Program, JobFailure> {
    let source = Arc::new(SourceFile::new(snippet.name.clone(), snippet.text.clone()));
    lang::compile(Arc::clone(&source)).map_err(|d| {
        let location = d.0.first().map(|first| {
            let at = source.line_col(first.span.start);
            FailureLocation {
                snippet: source.name.clone(),
                line: at.line,
                column: at.col,
            }
        });
        JobFailure {
            location,
            ..input(d.render(&source, false))
        }
    })
}

fn compile_jit(jit: &mut Jit, program: &Program, name: &str) -> Result<JitProgram, JobFailure> {
    jit.compile(program).map_err(|e| match e {
        JitError::Init(err) => fail(FailureKind::Script, err.render(&program.source)),
        other => input(format!("error: {name}: {other}")),
    })
}

/// Run one job; progress goes to `progress` while measuring.
pub fn run_job(
    job: &WorkerJob,
    state: &mut super::lab::State,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(LiveProgress),
) -> Result<JobOutput, JobFailure> {
    match job {
        WorkerJob::Compile {
            snippet,
            backend,
            checks,
        } => compile(snippet, *backend, *checks),
        WorkerJob::Run {
            snippet,
            backend,
            checks,
            function,
        } => run(snippet, *backend, *checks, function),
        WorkerJob::Asm {
            snippet,
            backend,
            function,
        } => asm(snippet, *backend, function.as_deref()),
        WorkerJob::Measure {
            contestants,
            settings,
        } => measure_job(contestants, settings, cancel, progress),
        WorkerJob::Doctor(options) => {
            let report = measure::doctor::doctor_report(options)
                .map_err(|e| input(format!("error: {e:#}")))?;
            Ok(JobOutput::Doctor {
                text: report.render(),
                all_met: report.all_met,
            })
        }
        WorkerJob::Ladder {
            ladder,
            snippet,
            settings,
        } => super::lab::ladder(ladder, snippet.as_ref(), settings, cancel, progress),
        WorkerJob::Check {
            snippet,
            against,
            backend,
            settings,
            iters,
        } => super::lab::check(snippet, against, *backend, settings, *iters),
        WorkerJob::Bench {
            filter,
            time_s,
            reps,
        } => super::lab::bench(filter.as_deref(), *time_s, *reps, progress),
        WorkerJob::Reload { snippet, checks } => super::lab::reload(state, snippet, *checks),
        WorkerJob::RunLive { snippet, function } => super::lab::run_live(state, snippet, function),
        WorkerJob::Panic { message } => panic!("{message}"),
    }
}

fn compile(
    snippet: &SnippetSource,
    backend: Backend,
    checks_on: bool,
) -> Result<JobOutput, JobFailure> {
    let micros = |d: std::time::Duration| d.as_secs_f64() * 1e6;
    let info = |f: &crate::backend::jit::CompiledFunction| FunctionInfo {
        name: f.name.clone(),
        bytes: f.bytes.len(),
        instructions: disasm::instruction_count(&f.bytes),
        lower_us: micros(f.lower_time),
        compile_us: micros(f.compile_time),
    };
    if backend == Backend::Interp {
        // The interpreter makes no code: its functions, with nothing in them.
        if snippet.is_clif() {
            refuse_clif(backend, &snippet.name)?;
        }
        let functions = front(snippet)?
            .functions
            .iter()
            .map(|f| FunctionInfo {
                name: f.name.clone(),
                bytes: 0,
                instructions: 0,
                lower_us: 0.0,
                compile_us: 0.0,
            })
            .collect();
        return Ok(JobOutput::Compiled { functions });
    }
    let code = snippet_code(snippet, backend, checks_on)?;
    let functions = code.iter().map(info).collect();
    Ok(JobOutput::Compiled { functions })
}

fn run(
    snippet: &SnippetSource,
    backend: Backend,
    checks_on: bool,
    function: &str,
) -> Result<JobOutput, JobFailure> {
    if snippet.is_clif() {
        refuse_clif(backend, &snippet.name)?;
        let mut jit = jit_for(backend, checks_on)?;
        let program = jit
            .load_clif(&snippet.text)
            .map_err(|e| input(format!("error: {}: {e}", snippet.name)))?;
        let start = Instant::now();
        let values = program
            .run(function, &[])
            .map_err(|e| fail(FailureKind::Script, format!("error: {}: {e}", snippet.name)))?;
        let micros = start.elapsed().as_secs_f64() * 1e6;
        let shown: Vec<String> = values.iter().map(Value::to_string).collect();
        return Ok(JobOutput::Ran {
            value: shown.join(" "),
            micros,
        });
    }
    let program = front(snippet)?;
    let Some(id) = program.function_named(function) else {
        let names: Vec<&str> = program.functions.iter().map(|f| f.name.as_str()).collect();
        return Err(input(format!(
            "error: {}: no function named `{function}` (functions: {})",
            snippet.name,
            names.join(", ")
        )));
    };
    let script =
        |e: crate::runtime::ScriptError| fail(FailureKind::Script, e.render(&program.source));
    let start;
    let value = match backend {
        Backend::Interp => {
            let mut it = interp::Interp::new(&program, checks(checks_on)).map_err(script)?;
            start = Instant::now();
            it.call(id, &[]).map_err(script)?
        }
        _ => {
            let compiled = compile_native(backend, checks_on, &program, &snippet.name)?;
            start = Instant::now();
            compiled.call(id, &[]).map_err(script)?
        }
    };
    Ok(JobOutput::Ran {
        value: value.to_string(),
        micros: start.elapsed().as_secs_f64() * 1e6,
    })
}

fn asm(
    snippet: &SnippetSource,
    backend: Backend,
    function: Option<&str>,
) -> Result<JobOutput, JobFailure> {
    let code = snippet_code(snippet, backend, true)?;
    let listings = listings(&code, function, Syntax::Intel, &snippet.name)?;
    Ok(JobOutput::Asm { listings })
}

/// What [`machine_code`] compiles: a checked program, or the text of a `.clif` snippet.
pub(crate) enum AsmInput<'a> {
    Hot(&'a Program),
    Clif(&'a str),
}

/// The [`machine_code`] of a snippet: a `.hot` one is checked first, a `.clif` one is loaded
/// as it is.
fn snippet_code(
    snippet: &SnippetSource,
    backend: Backend,
    checks_on: bool,
) -> Result<Vec<crate::backend::jit::CompiledFunction>, JobFailure> {
    if snippet.is_clif() {
        let what = AsmInput::Clif(&snippet.text);
        return machine_code(what, backend, checks_on, &snippet.name);
    }
    let program = front(snippet)?;
    machine_code(AsmInput::Hot(&program), backend, checks_on, &snippet.name)
}

/// The machine code of a snippet's functions as `backend` makes it (`:asm` in the sessions and
/// `hotlab asm`). The interpreter makes none; the object backend builds `.hot` snippets only.
pub(crate) fn machine_code(
    what: AsmInput<'_>,
    backend: Backend,
    checks_on: bool,
    name: &str,
) -> Result<Vec<crate::backend::jit::CompiledFunction>, JobFailure> {
    if backend == Backend::Interp {
        return Err(input(
            "error: the interp backend makes no machine code; use the jit, jit-opt or object \
             backend",
        ));
    }
    match what {
        AsmInput::Clif(text) => {
            refuse_clif(backend, name)?;
            let mut jit = jit_for(backend, checks_on)?;
            let program = jit
                .load_clif(text)
                .map_err(|e| input(format!("error: {name}: {e}")))?;
            Ok(program.functions().iter().map(|f| f.code.clone()).collect())
        }
        AsmInput::Hot(program) => Ok(compile_native(backend, checks_on, program, name)?
            .functions()
            .to_vec()),
    }
}

/// Disassembled listings of `code` (only `function` when given; naming the functions there
/// are when it matches none).
pub(crate) fn listings(
    code: &[crate::backend::jit::CompiledFunction],
    function: Option<&str>,
    syntax: Syntax,
    name: &str,
) -> Result<Vec<Listing>, JobFailure> {
    let listings: Vec<Listing> = code
        .iter()
        .filter(|f| function.is_none_or(|n| n == f.name))
        .map(|f| {
            let lines = disasm::disassemble(&f.bytes, f.addr, syntax);
            Listing {
                name: f.name.clone(),
                clif: f.clif.clone(),
                asm: disasm::render(&lines),
                bytes: f.bytes.len(),
                instructions: lines.len(),
            }
        })
        .collect();
    if listings.is_empty() {
        let names: Vec<&str> = code.iter().map(|f| f.name.as_str()).collect();
        return Err(input(format!(
            "error: {name}: no function named `{}` (functions: {})",
            function.unwrap_or(""),
            names.join(", ")
        )));
    }
    Ok(listings)
}

/// The type of a measured script function: `fn NAME(n: i64) -> i64`.
type RunFn = unsafe extern "C-unwind" fn(*mut VmCtx, i64) -> i64;

/// What a JIT contestant's raw variant needs: its program (which keeps the code alive), the
/// function, and a context made for the job thread.
struct HotCtx {
    _program: JitProgram,
    f: RunFn,
    vm: VmCtx,
}

/// The one typed wrapper through which the engine calls a JIT contestant.
///
/// # Safety
/// `ctx` must point to a live `HotCtx` used by no one else during the call.
unsafe extern "C-unwind" fn call_hot(ctx: *mut c_void, n: u64) -> u64 {
    // SAFETY: the caller passes the `HotCtx` this variant was built with (see `jit_variant`).
    let ctx = unsafe { &mut *ctx.cast::<HotCtx>() };
    // SAFETY: `f` was typed by `raw_entry` against the function's signature, its program is
    // alive in the same `HotCtx`, and `vm` was made on this (the job's) thread.
    unsafe { (ctx.f)(&mut ctx.vm, n as i64) as u64 }
}

/// What an interpreter contestant's raw variant needs. The interpreter is not `Send`, so it
/// cannot live in a native (closure) variant; it is made and used on the job thread only.
struct InterpCtx {
    it: interp::Interp<'static>,
    f: lang::hir::FuncId,
}

/// The wrapper through which the engine calls an interpreted contestant.
///
/// # Safety
/// `ctx` must point to a live `InterpCtx` used by no one else during the call.
unsafe extern "C-unwind" fn call_interp(ctx: *mut c_void, n: u64) -> u64 {
    // SAFETY: the caller passes the `InterpCtx` this variant was built with.
    let ctx = unsafe { &mut *ctx.cast::<InterpCtx>() };
    match ctx.it.call(ctx.f, &[Value::I64(n as i64)]) {
        Ok(Value::I64(v)) => v as u64,
        Ok(_) => 0,
        // Unwind as JIT code does: the job catches it and reports the error.
        Err(e) => e.raise(),
    }
}

/// Frees a context made by `Contexts::keep`.
type Free = unsafe fn(*mut c_void);

/// Contexts of raw variants, freed when the job is over.
struct Contexts(Vec<(*mut c_void, Free)>);

impl Contexts {
    fn keep<T>(&mut self, ctx: T) -> *mut c_void {
        /// # Safety
        /// `p` must come from `Box::<T>::into_raw` and not be used afterwards.
        unsafe fn free<T>(p: *mut c_void) {
            // SAFETY: the caller's contract.
            drop(unsafe { Box::from_raw(p.cast::<T>()) });
        }
        let p = Box::into_raw(Box::new(ctx)).cast::<c_void>();
        self.0.push((p, free::<T>));
        p
    }
}

impl Drop for Contexts {
    fn drop(&mut self) {
        for &(p, free) in &self.0 {
            // SAFETY: each pointer came from `Box::into_raw` in `keep` with this `free`, and
            // the variants that used it were dropped before this guard (see `measure_job`).
            unsafe { free(p) };
        }
    }
}

fn needs_run_fn(c: &Contestant) -> String {
    format!(
        "error: {}: `{}` must be `fn {}(n: i64) -> i64` running n iterations of the work",
        c.snippet.name, c.function, c.function
    )
}

fn variant(
    c: &Contestant,
    settings: &MeasureSettings,
    contexts: &mut Contexts,
) -> Result<Variant, JobFailure> {
    if c.snippet.is_clif() {
        return clif_variant(c, settings, contexts);
    }
    let program = front(&c.snippet)?;
    let Some(id) = program.function_named(&c.function) else {
        return Err(input(needs_run_fn(c)));
    };
    {
        let f = program.function(id);
        let params: Vec<_> = f.param_types().collect();
        if params.len() != 1 || *params[0] != lang::hir::Type::I64 || f.ret != lang::hir::Type::I64
        {
            return Err(input(needs_run_fn(c)));
        }
    }
    match c.backend {
        Backend::Interp => {
            // The interpreter borrows its program for as long as it lives and a variant must
            // be 'static: the program (a few KB) is leaked, once per measured interp snippet.
            let program: &'static Program = Box::leak(Box::new(program));
            let it = interp::Interp::new(program, checks(settings.checks))
                .map_err(|e| fail(FailureKind::Script, e.render(&program.source)))?;
            let ctx = contexts.keep(InterpCtx { it, f: id });
            // SAFETY: `call_interp` has the raw ABI and runs n iterations via `fn run(n)`;
            // `ctx` lives in `contexts` until after the job's variants are dropped, is used
            // only by this variant, and the job runs on this thread.
            Ok(unsafe { Variant::raw(c.label.clone(), call_interp, ctx) })
        }
        _ => {
            let compiled = compile_native(c.backend, settings.checks, &program, &c.snippet.name)?;
            let f: RunFn = compiled
                .raw_entry(id)
                .map_err(|e| input(format!("error: {}: {e}", c.snippet.name)))?;
            let vm = compiled.vm_context();
            let ctx = contexts.keep(HotCtx {
                _program: compiled,
                f,
                vm,
            });
            // SAFETY: `call_hot` has the raw ABI and runs n iterations via `fn run(n)`; `ctx`
            // lives in `contexts` until after the job (and its variants) are dropped, is used
            // only by this variant, and the job runs on this thread, where `vm` was made.
            Ok(unsafe { Variant::raw(c.label.clone(), call_hot, ctx) })
        }
    }
}

/// A `.clif` contestant: `%NAME(ctx, n) -> i64 system_v`, the engine's raw ABI (checked as
/// `hotlab check` checks `.clif` cases), called with a null context.
fn clif_variant(
    c: &Contestant,
    settings: &MeasureSettings,
    contexts: &mut Contexts,
) -> Result<Variant, JobFailure> {
    refuse_clif(c.backend, &c.snippet.name)?;
    if c.function != "run" {
        return Err(input(format!(
            "error: {}: a measured .clif snippet needs `function %run(i64, i64) -> i64 system_v`",
            c.snippet.name
        )));
    }
    crate::cases::backend::check_clif_signature(&c.snippet.text)
        .map_err(|e| input(format!("error: {}: {e}", c.snippet.name)))?;
    let mut jit = jit_for(c.backend, settings.checks)?;
    let program = jit
        .load_clif(&c.snippet.text)
        .map_err(|e| input(format!("error: {}: {e}", c.snippet.name)))?;
    let addr = program
        .function("run")
        .map(|f| f.code.addr as *const u8)
        .ok_or_else(|| input(format!("error: {}: no `%run` function", c.snippet.name)))?;
    // Keeps the code alive until the job's variants are dropped (see `Contexts`).
    contexts.keep((program, jit));
    // SAFETY: `addr` is `%run`, finalized, and alive while `contexts` holds its program;
    // `check_clif_signature` proved it is `(i64, i64) -> i64 system_v`, the engine's raw ABI
    // (two integer arguments, an integer result, the platform C convention).
    let f = unsafe { std::mem::transmute::<*const u8, crate::measure::RawVariantFn>(addr) };
    // SAFETY: `.clif` code ignores its context; the code lives in `contexts` until the job is
    // over, and the job runs on this thread.
    Ok(unsafe { Variant::raw(c.label.clone(), f, std::ptr::null_mut()) })
}

pub(super) fn live(p: &Progress<'_>) -> LiveProgress {
    LiveProgress {
        phase: format!("{:?}", p.phase).to_lowercase(),
        rounds: p.rounds,
        elapsed_ms: p.elapsed.0 / 1e9,
        budget_ms: p.budget.map(|b| b.0 / 1e9),
        iters: p.iters,
        variants: p
            .variants
            .iter()
            .enumerate()
            .map(|(i, v)| LiveVariant {
                name: p.names.get(i).cloned().unwrap_or_default(),
                samples: v.samples,
                dropped: v.dropped,
                median_ns: v.median.and_then(|m| finite(m.0 / 1e3)),
                histogram: p
                    .histograms
                    .get(i)
                    .map(|h| h.render(HIST_ROWS, HIST_WIDTH))
                    .unwrap_or_default(),
                buckets: p.histograms.get(i).map(buckets).unwrap_or_default(),
                percentiles: p.histograms.get(i).map(percentiles).unwrap_or_default(),
            })
            .collect(),
    }
}

fn measure_job(
    contestants: &[Contestant],
    settings: &MeasureSettings,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(LiveProgress),
) -> Result<JobOutput, JobFailure> {
    if contestants.is_empty() {
        return Err(input("error: nothing to measure: no contestants"));
    }
    // The core clock is calibrated once per process (~100 ms, more on a busy machine): do it
    // now, not at the end of the job, where it would delay the answer to a cancel.
    crate::measure::clock::core_clock();
    let mut contexts = Contexts(Vec::new());
    let mut job = measure::Job::new(measure::Settings {
        stop: Stop::Budget(Picos(settings.time_s * 1e12)),
        cpu: settings.cpu,
        band: settings.band,
        ..measure::Settings::default()
    });
    for c in contestants {
        job = job.with(variant(c, settings, &mut contexts)?);
    }
    let mut observer = |p: &Progress<'_>| progress(live(p));
    let border = crate::lang::span::Span::default();
    let result = crate::runtime::catch_script(border, || job.run(cancel, &mut observer));
    drop(job);
    let result = match result {
        Ok(r) => r.map_err(|e| input(format!("error: {e}")))?,
        Err(e) => {
            let src = SourceFile::new(contestants[0].snippet.name.clone(), String::new());
            return Err(fail(FailureKind::Script, e.render(&src)));
        }
    };
    Ok(JobOutput::Measured(measured(&result)))
}

/// JSON has no NaN: a number the statistics could not give is absent.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

fn ns(p: Picos) -> f64 {
    p.0 / 1e3
}

fn percentiles(h: &OpHistogram) -> Vec<Percentile> {
    if h.is_empty() {
        return Vec::new();
    }
    QUANTILES
        .iter()
        .map(|&q| Percentile {
            q,
            ns: ns(h.quantile(q)),
        })
        .collect()
}

/// The histogram as [`BUCKETS`] equal-width buckets over p1..p99 (the tails go to the edge
/// buckets), so a front end can draw bars at any size.
fn buckets(h: &OpHistogram) -> Vec<Bucket> {
    if h.is_empty() {
        return Vec::new();
    }
    let lo = h.quantile(0.01).0;
    let hi = h.quantile(0.99).0.max(lo + 1.0);
    let step = (hi - lo) / BUCKETS as f64;
    let mut counts = [0u64; BUCKETS];
    for it in h.inner().iter_recorded() {
        let v = it.value_iterated_to() as f64;
        let i = (((v - lo) / step).floor().max(0.0) as usize).min(BUCKETS - 1);
        counts[i] += it.count_at_value();
    }
    counts
        .iter()
        .enumerate()
        .map(|(i, &count)| Bucket {
            lo_ns: (lo + step * i as f64) / 1e3,
            hi_ns: (lo + step * (i + 1) as f64) / 1e3,
            count,
        })
        .collect()
}

/// The protocol's form of an engine result.
pub fn measured(r: &JobResult) -> Measured {
    let rows = r
        .variants
        .iter()
        .map(|v| MeasuredRowOut {
            name: v.name.clone(),
            samples: v.samples,
            dropped: v.dropped,
            median_ns: v.summary.as_ref().and_then(|s| finite(ns(s.median))),
            mad_ns: v.summary.as_ref().and_then(|s| finite(ns(s.mad))),
            min_ns: v.summary.as_ref().and_then(|s| finite(ns(s.min))),
            max_ns: v.summary.as_ref().and_then(|s| finite(ns(s.max))),
            cycles_est: v.cycles_est.and_then(|c| finite(c.0)),
            outliers: v.outliers.low_severe
                + v.outliers.low_mild
                + v.outliers.high_mild
                + v.outliers.high_severe,
            unstable: v.unstable,
            checksum: v.checksum,
            percentiles: percentiles(&v.histogram),
            histogram: v.histogram.render(HIST_ROWS, HIST_WIDTH),
            buckets: buckets(&v.histogram),
            counters: v
                .counters
                .as_ref()
                .and_then(|c| serde_json::to_value(c).ok()),
        })
        .collect();
    let comparisons = (1..r.variants.len())
        .filter_map(|b| r.compare(0, b).ok())
        .map(|c| ComparisonOut {
            a: r.variants[c.a].name.clone(),
            b: r.variants[c.b].name.clone(),
            verdict: c.verdict.verdict.to_string(),
            ratio: finite(c.verdict.ratio.0),
            low: finite(c.verdict.low.0),
            high: finite(c.verdict.high.0),
            band: c.verdict.band,
            explanation: c.verdict.explanation.clone(),
            diff_ns: c
                .diff
                .map(|d| (d.estimate / 1e3, d.low / 1e3, d.high / 1e3)),
        })
        .collect();
    Measured {
        rows,
        comparisons,
        iters: r.iters,
        rounds: r.rounds,
        stopped: serde_json::to_value(r.stopped)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        elapsed_s: r.elapsed.0 / 1e12,
        cpu: r.cpu,
        pin_note: r.pin_note.clone(),
        timer: serde_json::to_value(r.timer.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        no_counters: r.hardware.reason.clone(),
    }
}
