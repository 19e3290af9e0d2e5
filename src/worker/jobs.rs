//! The worker's side of each job: compile, run, list machine code, measure, check the machine.
//! Everything here runs on the worker's job thread, where a fault takes only the worker down.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use super::protocol::{Contestant, MeasureSettings, SnippetSource, WorkerJob};
use crate::backend::disasm::{self, Syntax};
use crate::backend::jit::CompiledFunction;
use crate::backend::{
    Backend, CallError, Checks, LoadError, LoadOptions, Loaded, Loader, Value, Workload,
    WorkloadError,
};
use crate::ladder::bench::Build;
use crate::lang::{self, Program, SourceFile};
use crate::measure::histogram::OpHistogram;
use crate::measure::{self, JobResult, Picos, Progress, Stop};
use crate::results::{
    FailureCause, FunctionListing, FunctionSummary, HistogramBucket, JobFailed, JobReport,
    LiveContestant, LiveSnapshot, MeasuredComparison, MeasuredRow, Measurement, Quantile,
    SourceLocation,
};

/// Rows and width of histograms sent to front ends.
const HIST_ROWS: usize = 8;
const HIST_WIDTH: usize = 48;
/// Buckets of the histograms sent as counts.
const BUCKETS: usize = 32;
const QUANTILES: [f64; 9] = [0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0];

pub(super) fn fail(kind: FailureCause, message: impl Into<String>) -> JobFailed {
    JobFailed::new(kind, message)
}

pub(super) fn input(message: impl Into<String>) -> JobFailed {
    fail(FailureCause::Input, message)
}

fn checks(on: bool) -> Checks {
    if on { Checks::On } else { Checks::Off }
}

/// A loader with the job's bounds checks.
fn loader(checks_on: bool) -> Loader {
    Loader::new(LoadOptions {
        checks: checks(checks_on),
        ..LoadOptions::default()
    })
}

/// Why `backend` refuses a `.clif` snippet, as the worker says it.
fn refuse_clif(backend: Backend, name: &str) -> JobFailed {
    match backend {
        Backend::Object => input(format!(
            "error: {name}: the object backend builds .hot snippets only (a .clif snippet is \
             loaded by the JIT); use the jit backend"
        )),
        _ => input(format!(
            "error: {name}: the {backend} backend runs .hot snippets only; use the jit backend"
        )),
    }
}

/// A load failure as the worker reports it (`source`: the snippet, for diagnostics and script
/// errors).
pub(super) fn load_failure(e: LoadError, backend: Backend, source: &SourceFile) -> JobFailed {
    let name = &source.name;
    match e {
        LoadError::HotOnly(_) => refuse_clif(backend, name),
        LoadError::Front(d) => input(d.render(source, false)),
        LoadError::Setup(e) => input(format!("error: {e}")),
        LoadError::Init(err) => fail(FailureCause::Script, err.render(source)),
        other => input(format!("error: {name}: {other}")),
    }
}

/// Run the front end over a `.hot` snippet; diagnostics come back rendered.
pub(super) fn front(snippet: &SnippetSource) -> Result<Program, JobFailed> {
    let source = source_of(snippet);
    lang::compile(Arc::clone(&source)).map_err(|d| {
        let location = d.0.first().map(|first| {
            let at = source.line_col(first.span.start);
            SourceLocation {
                snippet: source.name.clone(),
                line: at.line,
                column: at.col,
            }
        });
        JobFailed {
            location,
            ..input(d.render(&source, false))
        }
    })
}

fn source_of(snippet: &SnippetSource) -> Arc<SourceFile> {
    Arc::new(SourceFile::new(snippet.name.clone(), snippet.text.clone()))
}

/// Run one job; progress goes to `progress` while measuring.
pub fn run_job(
    job: &WorkerJob,
    state: &mut super::command_jobs::State,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(LiveSnapshot),
) -> Result<JobReport, JobFailed> {
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
            Ok(JobReport::Doctor {
                text: report.render(),
                all_met: report.all_met,
            })
        }
        WorkerJob::Ladder {
            ladder,
            snippet,
            settings,
        } => super::command_jobs::ladder(
            ladder,
            snippet.as_ref(),
            settings,
            &[Build::Jit, Build::Aot],
            cancel,
            progress,
        ),
        WorkerJob::LadderBuilds {
            ladder,
            snippet,
            settings,
            builds,
        } => super::command_jobs::ladder(
            ladder,
            snippet.as_ref(),
            settings,
            builds,
            cancel,
            progress,
        ),
        WorkerJob::RunFile {
            snippet,
            backend,
            checks,
            reloads,
        } => super::cli_jobs::run_file(snippet, *backend, *checks, reloads),
        WorkerJob::AsmFile {
            snippet,
            backend,
            checks,
            function,
            att,
        } => super::cli_jobs::asm_file(snippet, *backend, *checks, function.as_deref(), *att),
        WorkerJob::LadderAsm {
            ladder,
            snippet,
            build,
            att,
        } => super::cli_jobs::ladder_asm(ladder, snippet.as_ref(), *build, *att),
        WorkerJob::Matrix {
            backends,
            filter,
            reps,
            iters,
            time_s,
            reloads,
            load,
            cases,
            crashed,
        } => super::cli_jobs::matrix(
            &super::cli_jobs::MatrixJob {
                backends,
                filter: filter.as_deref(),
                reps: *reps,
                iters: *iters,
                time_s: *time_s,
                reloads: *reloads,
                load: *load,
                cases: cases.as_deref(),
                crashed,
            },
            progress,
        ),
        WorkerJob::Check {
            snippet,
            against,
            backend,
            settings,
            iters,
            layouts,
        } => super::command_jobs::check(
            &super::command_jobs::CheckJob {
                snippet,
                against,
                backend: *backend,
                settings,
                iters: *iters,
                layouts: *layouts,
            },
            cancel,
            progress,
        ),
        WorkerJob::Bench {
            filter,
            time_s,
            reps,
            cases,
        } => super::command_jobs::bench(
            filter.as_deref(),
            *time_s,
            *reps,
            cases.as_deref(),
            progress,
        ),
        WorkerJob::Reload { snippet, checks } => {
            super::command_jobs::reload(state, snippet, *checks)
        }
        WorkerJob::RunLive { snippet, function } => {
            super::command_jobs::run_live(state, snippet, function)
        }
        WorkerJob::LadderCode { ladder, snippet } => ladder_code(ladder, snippet),
        WorkerJob::Panic { message } => panic!("{message}"),
    }
}

fn compile(
    snippet: &SnippetSource,
    backend: Backend,
    checks_on: bool,
) -> Result<JobReport, JobFailed> {
    let micros = |d: std::time::Duration| d.as_secs_f64() * 1e6;
    let info = |f: &CompiledFunction| FunctionSummary {
        name: f.name.clone(),
        bytes: f.bytes.len(),
        instructions: disasm::instruction_count(&f.bytes),
        lower_us: micros(f.lower_time),
        compile_us: micros(f.compile_time),
    };
    if backend == Backend::Interp {
        // The interpreter makes no code: its functions, with nothing in them.
        if snippet.is_clif() {
            return Err(refuse_clif(backend, &snippet.name));
        }
        let functions = front(snippet)?
            .functions
            .iter()
            .map(|f| FunctionSummary {
                name: f.name.clone(),
                bytes: 0,
                instructions: 0,
                lower_us: 0.0,
                compile_us: 0.0,
            })
            .collect();
        return Ok(JobReport::Compiled { functions });
    }
    let loaded = snippet_code(snippet, backend, checks_on)?;
    let functions = code_of(&loaded)?.into_iter().map(info).collect();
    Ok(JobReport::Compiled { functions })
}

/// The names of a program's functions, for "no function named ...".
fn function_names(program: &Program) -> String {
    let names: Vec<&str> = program.functions.iter().map(|f| f.name.as_str()).collect();
    names.join(", ")
}

fn run(
    snippet: &SnippetSource,
    backend: Backend,
    checks_on: bool,
    function: &str,
) -> Result<JobReport, JobFailed> {
    let source = source_of(snippet);
    let mut loaded = if snippet.is_clif() {
        loader(checks_on)
            .load(Arc::clone(&source), backend, None)
            .map_err(|e| load_failure(e, backend, &source))?
    } else {
        let program = front(snippet)?;
        if program.function_named(function).is_none() {
            return Err(input(format!(
                "error: {}: no function named `{function}` (functions: {})",
                snippet.name,
                function_names(&program)
            )));
        }
        loader(checks_on)
            .load_checked(program, backend)
            .map_err(|e| load_failure(e, backend, &source))?
    };
    let start = Instant::now();
    let values = loaded.call(function).map_err(|e| match e {
        CallError::Clif(e) => fail(
            FailureCause::Script,
            format!("error: {}: {e}", snippet.name),
        ),
        other => fail(FailureCause::Script, other.to_string()),
    })?;
    let micros = start.elapsed().as_secs_f64() * 1e6;
    let shown: Vec<String> = values.iter().map(Value::to_string).collect();
    Ok(JobReport::Ran {
        value: shown.join(" "),
        micros,
    })
}

fn asm(
    snippet: &SnippetSource,
    backend: Backend,
    function: Option<&str>,
) -> Result<JobReport, JobFailed> {
    let loaded = snippet_code(snippet, backend, true)?;
    let source = loaded.program().map(|p| Arc::clone(&p.source));
    let listings = listings(
        &code_of(&loaded)?,
        function,
        Syntax::Intel,
        &snippet.name,
        source.as_deref(),
    )?;
    Ok(JobReport::Asm { listings })
}

/// What [`machine_code`] builds: a checked program, or the source of a `.clif` snippet.
pub(crate) enum AsmInput {
    Hot(Program),
    Clif(Arc<SourceFile>),
}

/// The [`machine_code`] of a snippet: a `.hot` one is checked first, a `.clif` one is loaded
/// as it is.
fn snippet_code(
    snippet: &SnippetSource,
    backend: Backend,
    checks_on: bool,
) -> Result<Loaded, JobFailed> {
    if snippet.is_clif() {
        let what = AsmInput::Clif(source_of(snippet));
        return machine_code(what, backend, checks_on);
    }
    let program = front(snippet)?;
    machine_code(AsmInput::Hot(program), backend, checks_on)
}

const NO_MACHINE_CODE: &str =
    "error: the interp backend makes no machine code; use the jit, jit-opt or object backend";

/// A snippet loaded on `backend` for its machine code ([`code_of`]; `:asm` in the sessions and
/// `hotlab asm`). The interpreter makes none; the object backend builds `.hot` snippets only.
pub(crate) fn machine_code(
    what: AsmInput,
    backend: Backend,
    checks_on: bool,
) -> Result<Loaded, JobFailed> {
    if !backend.makes_machine_code() {
        return Err(input(NO_MACHINE_CODE));
    }
    match what {
        AsmInput::Clif(source) => loader(checks_on)
            .load(Arc::clone(&source), backend, None)
            .map_err(|e| load_failure(e, backend, &source)),
        AsmInput::Hot(program) => {
            let source = Arc::clone(&program.source);
            loader(checks_on)
                .load_checked(program, backend)
                .map_err(|e| load_failure(e, backend, &source))
        }
    }
}

/// The machine code of a loaded snippet's functions.
pub(crate) fn code_of(loaded: &Loaded) -> Result<Vec<&CompiledFunction>, JobFailed> {
    loaded.machine_code().ok_or_else(|| input(NO_MACHINE_CODE))
}

/// Disassembled listings of `code` (only `function` when given; naming the functions there
/// are when it matches none).
pub(crate) fn listings(
    code: &[&CompiledFunction],
    function: Option<&str>,
    syntax: Syntax,
    name: &str,
    source: Option<&SourceFile>,
) -> Result<Vec<FunctionListing>, JobFailed> {
    // Calls and loaded addresses of helpers, host functions and the program's functions by
    // name; the rest from this process's symbol tables (the code runs here).
    let mut symbols = disasm::Symbols::in_process();
    for (name, ptr) in crate::backend::jit::imported_symbols() {
        symbols.insert(ptr as u64, name);
    }
    for f in code {
        symbols.insert(f.addr, f.name.clone());
    }
    let listings: Vec<FunctionListing> = code
        .iter()
        .filter(|f| function.is_none_or(|n| n == f.name))
        .map(|f| {
            let lines = disasm::disassemble_named(&f.bytes, f.addr, syntax, &symbols);
            // The source line each instruction was lowered from (the frame map keeps the
            // code's source locations), for the listing's marks.
            let source_line = |addr: u64| {
                let source = source?;
                let at = u32::try_from(addr.checked_sub(f.addr)?).ok()?;
                let byte = f.frame_map.source_byte_at(at)?;
                let line = source.line_col(byte).line as usize;
                let text = source.text.lines().nth(line.checked_sub(1)?)?;
                Some((line, text.to_string()))
            };
            FunctionListing {
                name: f.name.clone(),
                clif: f.clif.clone(),
                asm: disasm::render_marked(&lines, syntax, &source_line),
                bytes: f.bytes.len(),
                instructions: lines.iter().filter(|l| !l.is_data()).count(),
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

/// A contestant loaded for its `fn NAME(n: i64) -> i64` (a `.clif` one: `%run(ctx, n)`).
fn contestant(c: &Contestant, loader: &mut Loader) -> Result<Loaded, JobFailed> {
    let source = source_of(&c.snippet);
    let workload = Workload::Loop(c.function.clone());
    loader
        .load(Arc::clone(&source), c.backend, Some(&workload))
        .map_err(|e| match e {
            LoadError::Workload(WorkloadError::NoFunction(_) | WorkloadError::NotALoop { .. }) => {
                input(format!(
                    "error: {}: `{}` must be `fn {}(n: i64) -> i64` running n iterations of \
                     the work",
                    c.snippet.name, c.function, c.function
                ))
            }
            other => load_failure(other, c.backend, &source),
        })
}

pub(super) fn live(p: &Progress<'_>) -> LiveSnapshot {
    LiveSnapshot {
        phase: format!("{:?}", p.phase).to_lowercase(),
        rounds: p.rounds,
        elapsed_ms: p.elapsed.0 / 1e9,
        budget_ms: p.budget.map(|b| b.0 / 1e9),
        iters: p.iters,
        variants: p
            .variants
            .iter()
            .enumerate()
            .map(|(i, v)| LiveContestant {
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
    progress: &mut dyn FnMut(LiveSnapshot),
) -> Result<JobReport, JobFailed> {
    if contestants.is_empty() {
        return Err(input("error: nothing to measure: no contestants"));
    }
    // The core clock is calibrated once per process (~100 ms, more on a busy machine): do it
    // now, not at the end of the job, where it would delay the answer to a cancel.
    crate::measure::clock::core_clock();
    let mut loader = loader(settings.checks);
    let mut loaded = Vec::with_capacity(contestants.len());
    for c in contestants {
        loaded.push(contestant(c, &mut loader)?);
    }
    let mut samplers = Vec::with_capacity(loaded.len());
    for (c, l) in contestants.iter().zip(&mut loaded) {
        let workload = Workload::Loop(c.function.clone());
        let mut sampler = l
            .sampler(&workload)
            .map_err(|e| input(format!("error: {}: {e}", c.snippet.name)))?;
        // An interpreted contestant's error ends the job at once, as compiled code's unwind.
        sampler.stop_on_error(cancel);
        samplers.push(sampler);
    }
    let mut job = measure::Job::new(measure::Settings {
        stop: Stop::Budget(Picos(settings.time_s * 1e12)),
        cpu: settings.cpu,
        band: settings.band,
        ..measure::Settings::default()
    });
    for (c, s) in contestants.iter().zip(&mut samplers) {
        // SAFETY: the job (and with it the variant) is dropped below, before the samplers and
        // the programs they point into; it runs on this thread, inside `catch_script`.
        job = job.with(unsafe { s.variant(&c.label) });
    }
    let mut observer = |p: &Progress<'_>| progress(live(p));
    let border = crate::lang::span::Span::default();
    let result = crate::runtime::catch_script(border, || job.run(cancel, &mut observer));
    drop(job);
    // An error caught at the border is located in the contestant whose text holds its span
    // (the first such: contestants usually share a snippet), so it reads FILE:LINE:COL.
    let script_error = |e: &crate::runtime::ScriptError| {
        let c = contestants
            .iter()
            .find(|c| e.span.end as usize <= c.snippet.text.len())
            .unwrap_or(&contestants[0]);
        fail(FailureCause::Script, e.render(&source_of(&c.snippet)))
    };
    let result = match result {
        Ok(r) => {
            // A sampler's error knows its script: rendered against it.
            if let Some(e) = samplers.iter_mut().find_map(|s| s.take_error()) {
                return Err(fail(FailureCause::Script, e.to_string()));
            }
            r.map_err(|e| input(format!("error: {e}")))?
        }
        Err(e) => return Err(script_error(&e)),
    };
    Ok(JobReport::Measured(measured(&result)))
}

/// JSON has no NaN: a number the statistics could not give is absent.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

fn ns(p: Picos) -> f64 {
    p.0 / 1e3
}

fn percentiles(h: &OpHistogram) -> Vec<Quantile> {
    if h.is_empty() {
        return Vec::new();
    }
    QUANTILES
        .iter()
        .map(|&q| Quantile {
            q,
            ns: ns(h.quantile(q)),
        })
        .collect()
}

/// The histogram as [`BUCKETS`] equal-width buckets over p1..p99 (the tails go to the edge
/// buckets), so a front end can draw bars at any size.
fn buckets(h: &OpHistogram) -> Vec<HistogramBucket> {
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
        .map(|(i, &count)| HistogramBucket {
            lo_ns: (lo + step * i as f64) / 1e3,
            hi_ns: (lo + step * (i + 1) as f64) / 1e3,
            count,
        })
        .collect()
}

/// The protocol's form of an engine result.
pub fn measured(r: &JobResult) -> Measurement {
    let rows = r
        .variants
        .iter()
        .map(|v| MeasuredRow {
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
        .map(|c| MeasuredComparison {
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
    Measurement {
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

/// `ladder_code`: each step's `jit` code of `ladder` around the snippet's `fn call` (the default
/// empty method when the text has none), built here so that a crash ends only the worker.
fn ladder_code(
    ladder: &crate::ladder::Ladder,
    snippet: &SnippetSource,
) -> Result<JobReport, JobFailed> {
    use crate::ladder::bench::{Build, BuildError, DEFAULT_SNIPPET};
    let text = if snippet.text.contains("fn call(") {
        snippet.text.as_str()
    } else {
        DEFAULT_SNIPPET
    };
    let source = Arc::new(SourceFile::new(snippet.name.clone(), text));
    let program = lang::compile(source)
        .map_err(|_| input("the snippet does not compile (see the editor)"))?;
    let steps =
        crate::ladder::code::ladder_code(ladder.clone(), &program, Build::Jit, Syntax::Intel)
            .map_err(|e| match e {
                BuildError::Raised(_) => fail(FailureCause::Script, e.to_string()),
                _ => input(e.to_string()),
            })?;
    Ok(JobReport::LadderCode { steps })
}
