//! `hotlab run FILE`: compile a snippet and print the result of `main`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::snippet::{SnippetFile, load_snippet};
use super::{Failure, exit, on_script_thread};
use std::io::IsTerminal;
use std::sync::Arc;

use super::use_color;
use crate::backend::jit::{JitError, ReloadFailure};
use crate::backend::object::{ObjectError, StageTimings};
use crate::backend::{Backend, Checks, LoadError, LoadOptions, Loader, Value, load};
use crate::lang::Program;
use crate::lang::SourceFile;
use crate::session::class_lines;

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
}

fn micros(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

/// Values as `run` prints them: one per result, separated by spaces.
fn shown(values: &[Value]) -> String {
    let shown: Vec<String> = values.iter().map(Value::to_string).collect();
    shown.join(" ")
}

/// A load failure: the initializer's error is the script's, the rest bad input.
fn load_failure(e: LoadError, source: &SourceFile) -> Failure {
    match e {
        LoadError::Init(err) => Failure::script(err.render(source)),
        LoadError::Setup(e) => Failure::input(format!("error: {e}")),
        other => Failure::input(format!("error: {}: {other}", source.name)),
    }
}

/// `hotlab run`.
pub fn run(args: &RunArgs) -> Result<ExitCode, Failure> {
    let snippet = load_snippet(&args.file)?;
    let options = LoadOptions {
        checks: Checks::from(args.checks),
        ..LoadOptions::default()
    };
    let backend = args.backend;
    match snippet {
        SnippetFile::Clif { .. } if backend.refuses_clif().is_some() => {
            Err(Failure::input(format!(
                "error: {}: the {backend} backend runs .hot snippets only; use --backend jit for .clif",
                args.file.display(),
            )))
        }
        SnippetFile::Clif { source } => {
            let name = source.name.clone();
            let values = on_script_thread(move || {
                let mut loaded = load(source, backend, &options).map_err(|e| e.to_string())?;
                loaded.run_main().map_err(|e| e.to_string())
            })?
            .map_err(|e| Failure::input(format!("error: {name}: {e}")))?;
            println!("{}", shown(&values));
            Ok(ExitCode::from(exit::OK))
        }
        SnippetFile::Hot { program, .. } if !args.reload.is_empty() => {
            let mut versions = Vec::new();
            for path in &args.reload {
                let name = path.display().to_string();
                let text = std::fs::read_to_string(path)
                    .map_err(|e| Failure::input(format!("error: cannot read {name}: {e}")))?;
                versions.push(Arc::new(SourceFile::new(name, text)));
            }
            on_script_thread(move || run_with_reloads(program, versions, options, backend))?
        }
        SnippetFile::Hot { program, timings } => {
            if program.main.is_none() {
                return Err(Failure::input(format!(
                    "error: {}: no `fn main` to run (add `fn main() -> i64 {{ ... }}`)",
                    program.source.name
                )));
            }
            let want_timings = args.timings;
            let (value, stages, object_stages) =
                on_script_thread(move || run_main(program, backend, options))??;
            println!("{value}");
            if want_timings {
                println!(
                    "timings (µs): lex {}  parse {}  check {}",
                    micros(timings.lex),
                    micros(timings.parse),
                    micros(timings.check)
                );
                if !stages.is_empty() {
                    let width = stages.iter().map(|s| s.0.len()).max().unwrap_or(8).max(8);
                    println!("{:width$}  {:>9}  {:>9}", "function", "lower", "compile");
                    for (name, lower, compile) in &stages {
                        println!(
                            "{name:width$}  {:>9}  {:>9}",
                            micros(*lower),
                            micros(*compile)
                        );
                    }
                    let total: Duration = stages.iter().map(|s| s.1 + s.2).sum();
                    println!("total lower+compile {} µs", micros(total));
                }
                if let Some(t) = object_stages {
                    let shown: Vec<String> = t
                        .stages()
                        .iter()
                        .map(|(name, d)| format!("{name} {}", micros(*d)))
                        .collect();
                    println!(
                        "object (µs): {}  total {}",
                        shown.join("  "),
                        micros(t.total())
                    );
                }
            }
            Ok(ExitCode::from(exit::OK))
        }
    }
}

/// Each function's (name, lower time, compile time).
type Stages = Vec<(String, Duration, Duration)>;

/// Load `program` on `backend` and run its `main`: the value as printed, the functions'
/// stage times, and the object backend's.
fn run_main(
    program: Program,
    backend: Backend,
    options: LoadOptions,
) -> Result<(String, Stages, Option<StageTimings>), Failure> {
    let source = Arc::clone(&program.source);
    let mut loaded = Loader::new(options)
        .load_checked(program, backend)
        .map_err(|e| load_failure(e, &source))?;
    let stages = loaded
        .machine_code()
        .unwrap_or_default()
        .iter()
        .map(|f| (f.name.clone(), f.lower_time, f.compile_time))
        .collect();
    let value = loaded
        .run_main()
        .map_err(|e| Failure::script(e.to_string()))?;
    Ok((shown(&value), stages, loaded.object_stages()))
}

/// `main`, then each reload in order. Returns the exit code: the first failure's, or OK.
fn run_with_reloads(
    program: Program,
    versions: Vec<Arc<SourceFile>>,
    options: LoadOptions,
    backend: Backend,
) -> Result<ExitCode, Failure> {
    if program.main.is_none() {
        return Err(Failure::input(format!(
            "error: {}: no `fn main` to run",
            program.source.name
        )));
    }
    let source = Arc::clone(&program.source);
    let options = LoadOptions {
        reloadable: true,
        ..options
    };
    // On jit-opt every reload is refused (reported, exit code set), nothing changes.
    let mut loaded = Loader::new(options)
        .load_checked(program, backend)
        .map_err(|e| match e {
            LoadError::Init(err) => Failure::script(err.render(&source)),
            other => Failure::input(format!("error: {}: {other}", source.name)),
        })?;
    let main = loaded
        .run_main()
        .map_err(|e| Failure::script(e.to_string()))?;
    println!("{}", shown(&main));
    let mut code = exit::OK;
    for version in versions {
        let result = loaded.reload(Arc::clone(&version));
        code = code.max(report_reload(&version, result));
    }
    Ok(ExitCode::from(code))
}

/// Print what a reload did (stdout: `after_reload`'s result; stderr: the classes) or why it
/// failed; returns its exit code.
fn report_reload(
    version: &SourceFile,
    result: Result<crate::backend::jit::ReloadOutcome, ReloadFailure>,
) -> u8 {
    let color = use_color(std::io::stderr().is_terminal());
    match result {
        Ok(outcome) => {
            for line in class_lines(&version.name, &outcome.classes, &outcome.defined) {
                eprintln!("{line}");
            }
            if let Some(v) = outcome.after_reload {
                println!("{v}");
            }
            exit::OK
        }
        Err(ReloadFailure::Compile(d)) => {
            eprint!("{}", d.render(version, color));
            eprintln!("reload {}: not applied (nothing changed)", version.name);
            exit::BAD_INPUT
        }
        Err(ReloadFailure::AfterReload(e, applied) | ReloadFailure::Init(e, applied)) => {
            for line in class_lines(&version.name, &applied.classes, &applied.defined) {
                eprintln!("{line}");
            }
            eprintln!("{}", e.render(version));
            exit::SCRIPT_ERROR
        }
        Err(
            ReloadFailure::Jit(JitError::Init(e)) | ReloadFailure::Object(ObjectError::Init(e)),
        ) => {
            eprintln!("{}", e.render(version));
            exit::SCRIPT_ERROR
        }
        Err(e) => {
            eprintln!("error: reload {}: {e}", version.name);
            exit::BAD_INPUT
        }
    }
}
