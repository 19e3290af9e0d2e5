//! `hotlab run FILE`: compile a snippet and print the result of `main`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};

use std::sync::Arc;

use super::snippet::{SnippetFile, load_snippet};
use super::{Failure, WorkerRun, exit, in_worker};
use crate::backend::{Backend, Checks};
use crate::lang::FrontTimings;
use crate::results::{FailureCause, JobReport, ReloadStep, RunFileResult};
use crate::session::class_lines;
use crate::worker::protocol::{SnippetSource, WorkerJob};

/// `on` / `off` for `--checks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    /// Index bounds checked.
    On,
    /// Index bounds not checked.
    Off,
}

impl From<OnOff> for Checks {
    fn from(v: OnOff) -> Checks {
        match v {
            OnOff::On => Checks::On,
            OnOff::Off => Checks::Off,
        }
    }
}

/// Options of `hotlab run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The snippet: a .hot file, or a .clif file (Cranelift IR, `jit` only).
    ///
    /// Backends are described in docs/backends.md.
    pub file: PathBuf,
    /// How to run it.
    #[arg(long, value_enum, default_value_t = Backend::Jit)]
    pub backend: Backend,
    /// Index bounds checks in script code (division by zero is always checked).
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub checks: OnOff,
    /// Also print the µs spent in each stage: lex, parse, check, and lower and compile per
    /// function (and, for `object`, lower, define, emit, link, load and init).
    #[arg(long)]
    pub timings: bool,
    /// After `main`, reload from this new version of the source (repeatable, in order): its
    /// classes replace the running ones and live objects migrate (field changes are reported
    /// on stderr); module variables with the same name and type keep their values; then its
    /// `fn after_reload()` runs, if it has one, and its result is printed. A version that does
    /// not compile changes nothing. Every backend: on `object` each version is a new shared
    /// library; the interpreter needs each version to keep every class.
    #[arg(long, value_name = "FILE2")]
    pub reload: Vec<PathBuf>,
    /// Stop the script after this many seconds (it runs in a worker process, which is then
    /// ended): `did not finish within S s`, exit code 7.
    #[arg(long, value_name = "S", default_value_t = RUN_LIMIT_S)]
    pub limit: f64,
}

fn micros(us: f64) -> String {
    format!("{us:.1}")
}

/// The default `--limit` of `run`, in seconds: generous, for scripts that compute for a while.
pub const RUN_LIMIT_S: f64 = 120.0;

/// `hotlab run`: the snippet is checked here (its diagnostics and front-end timings), then
/// loaded and run in a worker process, where a crash or an endless loop ends that process, not
/// hotlab.
pub fn run(args: &RunArgs) -> Result<ExitCode, Failure> {
    let limit = super::limit_of(args.limit)?;
    let snippet = load_snippet(&args.file)?;
    let backend = args.backend;
    let file = args.file.display().to_string();
    let (source, timings) = match snippet {
        SnippetFile::Clif { .. } if backend.refuses_clif().is_some() => {
            return Err(Failure::input(format!(
                "error: {file}: the {backend} backend runs .hot snippets only; use --backend jit for .clif",
            )));
        }
        SnippetFile::Clif { source } => (source, None),
        SnippetFile::Hot { program, timings } => {
            if program.main.is_none() {
                return Err(Failure::input(format!(
                    "error: {}: no `fn main` to run (add `fn main() -> i64 {{ ... }}`)",
                    program.source.name
                )));
            }
            (Arc::clone(&program.source), Some(timings))
        }
    };
    let mut reloads = Vec::new();
    for path in &args.reload {
        let name = path.display().to_string();
        let text = crate::lang::span::read_source(path)
            .map_err(|e| Failure::input(format!("error: cannot read {name}: {e}")))?;
        reloads.push(SnippetSource { name, text });
    }
    if source.name.ends_with(".clif") && !reloads.is_empty() {
        return Err(Failure::input(format!(
            "error: {file}: .clif code has no classes to reload"
        )));
    }
    let job = WorkerJob::RunFile {
        snippet: SnippetSource {
            name: source.name.clone(),
            text: source.text.clone(),
        },
        backend,
        checks: args.checks == OnOff::On,
        reloads,
    };
    let how = WorkerRun {
        what: &file,
        limit,
        per_progress: false,
        cpu: None,
        printed_to_stderr: false,
    };
    let report = match in_worker(job, &how, &mut |_| {})? {
        JobReport::RanFile(r) => r,
        other => {
            return Err(Failure::input(format!(
                "error: {file}: the worker answered a run with {other:?} (a bug in hotlab)"
            )));
        }
    };
    println!("{}", report.value);
    if args.timings
        && let Some(t) = timings
    {
        print_timings(&t, &report);
    }
    let mut code = exit::OK;
    for (path, step) in args.reload.iter().zip(&report.reloads) {
        code = code.max(report_reload(&path.display().to_string(), step));
    }
    Ok(ExitCode::from(code))
}

/// `--timings`: the front end's stages (measured here), then each function's lower and compile
/// and the object backend's stages (measured in the worker).
fn print_timings(t: &FrontTimings, report: &RunFileResult) {
    let us = |d: Duration| micros(d.as_secs_f64() * 1e6);
    println!(
        "timings (µs): lex {}  parse {}  check {}",
        us(t.lex),
        us(t.parse),
        us(t.check)
    );
    let stages = &report.functions;
    if !stages.is_empty() {
        let width = stages
            .iter()
            .map(|s| s.name.len())
            .max()
            .unwrap_or(8)
            .max(8);
        println!("{:width$}  {:>9}  {:>9}", "function", "lower", "compile");
        for f in stages {
            println!(
                "{:width$}  {:>9}  {:>9}",
                f.name,
                micros(f.lower_us),
                micros(f.compile_us)
            );
        }
        let total: f64 = stages.iter().map(|s| s.lower_us + s.compile_us).sum();
        println!("total lower+compile {} µs", micros(total));
    }
    if !report.object_stages.is_empty() {
        let shown: Vec<String> = report
            .object_stages
            .iter()
            .map(|(name, d)| format!("{name} {}", micros(*d)))
            .collect();
        let total: f64 = report.object_stages.iter().map(|s| s.1).sum();
        println!("object (µs): {}  total {}", shown.join("  "), micros(total));
    }
}

/// Print what a reload did (stdout: `after_reload`'s result; stderr: the classes) or why it
/// failed; returns its exit code.
fn report_reload(name: &str, step: &ReloadStep) -> u8 {
    match step {
        ReloadStep::Applied(outcome) => {
            for line in class_lines(name, &outcome.classes, &outcome.defined) {
                eprintln!("{line}");
            }
            if let Some(v) = &outcome.after_reload {
                println!("{v}");
            }
            exit::OK
        }
        ReloadStep::Failed(f) => {
            if let Some(applied) = &f.applied {
                for line in class_lines(name, &applied.classes, &applied.defined) {
                    eprintln!("{line}");
                }
            }
            eprintln!("{}", f.message.trim_end());
            match f.cause {
                FailureCause::Script | FailureCause::Panic => exit::SCRIPT_ERROR,
                FailureCause::Input | FailureCause::Unavailable => exit::BAD_INPUT,
            }
        }
    }
}
