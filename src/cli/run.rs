//! `hotlab run FILE`: compile a snippet and print the result of `main`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::snippet::{Snippet, load_snippet};
use super::{Failure, exit};
use std::io::IsTerminal;
use std::sync::Arc;

use super::use_color;
use crate::backend::jit::{
    CompiledFunction, Jit, JitError, JitOptions, OptLevel, ReloadFailure, ScriptModule,
};
use crate::backend::object::{ObjectError, ObjectOptions, StageTimings, compile_object};
use crate::backend::{Checks, Value, interp};
use crate::lang::Program;
use crate::lang::SourceFile;
use crate::session::{ClassChange, class_lines};

/// The backends `run` offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunBackend {
    /// Cranelift JIT in process.
    Jit,
    /// Cranelift JIT optimized for speed, objects in a fixed runtime (no reload).
    #[value(name = "jit-opt")]
    JitOpt,
    /// Cranelift object file, linked into a shared library with `ld` and loaded with dlopen.
    Object,
    /// The reference interpreter.
    Interp,
}

impl From<RunBackend> for crate::worker::protocol::Backend {
    fn from(b: RunBackend) -> Self {
        match b {
            RunBackend::Jit => Self::Jit,
            RunBackend::JitOpt => Self::JitOpt,
            RunBackend::Object => Self::Object,
            RunBackend::Interp => Self::Interp,
        }
    }
}

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
    #[arg(long, value_enum, default_value_t = RunBackend::Jit)]
    pub backend: RunBackend,
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

/// Stack for script code: deep recursion is allowed, runaway recursion stops with an error.
const SCRIPT_STACK: usize = 256 << 20;

/// Run `f` on a thread with a large stack and hand back its result.
fn on_script_thread<R: Send + 'static>(
    f: impl FnOnce() -> R + Send + 'static,
) -> Result<R, Failure> {
    std::thread::Builder::new()
        .name("hotlab-script".into())
        .stack_size(SCRIPT_STACK)
        .spawn(f)
        .map_err(|e| Failure::input(format!("error: cannot start the script thread: {e}")))?
        .join()
        .map_err(|_| Failure::script("error: the script thread panicked (a bug in hotlab)"))
}

fn micros(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

/// `hotlab run`.
pub fn run(args: &RunArgs) -> Result<ExitCode, Failure> {
    let snippet = load_snippet(&args.file)?;
    let checks = Checks::from(args.checks);
    match (snippet, args.backend) {
        (Snippet::Clif { .. }, RunBackend::Interp | RunBackend::Object) => {
            Err(Failure::input(format!(
                "error: {}: the {} backend runs .hot snippets only; use --backend jit for .clif",
                args.file.display(),
                if args.backend == RunBackend::Interp {
                    "interp"
                } else {
                    "object"
                }
            )))
        }
        (Snippet::Clif { source }, RunBackend::Jit | RunBackend::JitOpt) => {
            let text = source.text.clone();
            let opt = opt_level(args.backend);
            let values = on_script_thread(move || {
                let mut jit = Jit::new(JitOptions {
                    checks,
                    opt,
                    ..JitOptions::default()
                })?;
                let program = jit.load_clif(&text)?;
                program.run("main", &[])
            })?
            .map_err(|e| Failure::input(format!("error: {}: {e}", source.name)))?;
            let shown: Vec<String> = values.iter().map(Value::to_string).collect();
            println!("{}", shown.join(" "));
            Ok(ExitCode::from(exit::OK))
        }
        (Snippet::Hot { program, .. }, backend) if !args.reload.is_empty() => {
            let mut versions = Vec::new();
            for path in &args.reload {
                let name = path.display().to_string();
                let text = std::fs::read_to_string(path)
                    .map_err(|e| Failure::input(format!("error: cannot read {name}: {e}")))?;
                versions.push(Arc::new(SourceFile::new(name, text)));
            }
            on_script_thread(move || run_with_reloads(program, versions, checks, backend))?
        }
        (Snippet::Hot { program, timings }, backend) => {
            let want_timings = args.timings;
            let outcome = on_script_thread(move || run_hot(&program, backend, checks))?;
            let (value, stages, object_stages) = match outcome {
                Ok(ok) => ok,
                Err(Outcome::Script(msg)) => return Err(Failure::script(msg)),
                Err(Outcome::Input(msg)) => return Err(Failure::input(msg)),
            };
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

/// The Cranelift optimization level a JIT backend asks for.
fn opt_level(backend: RunBackend) -> OptLevel {
    crate::worker::protocol::Backend::from(backend).opt_level()
}

/// `main`, then each reload in order. Returns the exit code: the first failure's, or OK.
fn run_with_reloads(
    program: Program,
    versions: Vec<Arc<SourceFile>>,
    checks: Checks,
    backend: RunBackend,
) -> Result<ExitCode, Failure> {
    if program.main.is_none() {
        return Err(Failure::input(format!(
            "error: {}: no `fn main` to run",
            program.source.name
        )));
    }
    let source = Arc::clone(&program.source);
    let jit = JitOptions {
        checks,
        opt: opt_level(backend),
        ..JitOptions::default()
    };
    let script = |err: crate::runtime::ScriptError| Failure::script(err.render(&source));
    let input = |e: String| Failure::input(format!("error: {}: {e}", source.name));
    let mut code = exit::OK;
    match backend {
        RunBackend::Interp => {
            // The interpreter runs borrowed programs: every version is compiled first (one
            // that does not compile is reported at its turn and changes nothing).
            let compiled: Vec<_> = versions
                .iter()
                .map(|v| crate::lang::compile(Arc::clone(v)))
                .collect();
            let mut interp = interp::Interp::new(&program, checks).map_err(script)?;
            let main = program.main.expect("checked above");
            println!("{}", interp.call(main, &[]).map_err(script)?);
            for (version, next) in versions.iter().zip(&compiled) {
                let result = match next {
                    Ok(next) => interp.reload(next),
                    Err(d) => Err(ReloadFailure::Compile(d.clone())),
                };
                code = code.max(report_reload(version, result));
            }
        }
        RunBackend::Jit | RunBackend::JitOpt | RunBackend::Object => {
            // On jit-opt every reload is refused (reported, exit code set), nothing changes.
            let mut module = match backend {
                RunBackend::Object => {
                    let options = ObjectOptions {
                        jit,
                        ..ObjectOptions::default()
                    };
                    ScriptModule::new_object(program, options).map_err(|e| match e {
                        ObjectError::Init(err) => script(err),
                        other => input(other.to_string()),
                    })?
                }
                _ => ScriptModule::new(program, jit).map_err(|e| match e {
                    JitError::Init(err) => script(err),
                    other => input(other.to_string()),
                })?,
            };
            println!("{}", module.run_main().map_err(script)?);
            for version in versions {
                let result = module.reload(Arc::clone(&version));
                code = code.max(report_reload(&version, result));
            }
        }
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
            let classes: Vec<ClassChange> = outcome.classes.iter().map(ClassChange::from).collect();
            for line in class_lines(&version.name, &classes, &outcome.defined) {
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
            let classes: Vec<ClassChange> = applied.classes.iter().map(ClassChange::from).collect();
            for line in class_lines(&version.name, &classes, &applied.defined) {
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

enum Outcome {
    Script(String),
    Input(String),
}

type Stages = Vec<(String, Duration, Duration)>;

fn run_hot(
    program: &Program,
    backend: RunBackend,
    checks: Checks,
) -> Result<(Value, Stages, Option<StageTimings>), Outcome> {
    if program.main.is_none() {
        return Err(Outcome::Input(format!(
            "error: {}: no `fn main` to run (add `fn main() -> i64 {{ ... }}`)",
            program.source.name
        )));
    }
    let script = |e: crate::runtime::ScriptError| Outcome::Script(e.render(&program.source));
    match backend {
        RunBackend::Interp => Ok((
            interp::run_main(program, checks).map_err(script)?,
            vec![],
            None,
        )),
        RunBackend::Object => {
            let options = ObjectOptions {
                jit: JitOptions {
                    checks,
                    ..JitOptions::default()
                },
                ..ObjectOptions::default()
            };
            let loaded = compile_object(program, &options).map_err(|e| match e {
                ObjectError::Init(err) => script(err),
                other => Outcome::Input(format!("error: {}: {other}", program.source.name)),
            })?;
            let stages = function_stages(loaded.functions());
            let value = loaded.run_main().map_err(script)?;
            Ok((value, stages, Some(loaded.timings())))
        }
        RunBackend::Jit | RunBackend::JitOpt => {
            let mut jit = Jit::new(JitOptions {
                checks,
                opt: opt_level(backend),
                ..JitOptions::default()
            })
            .map_err(|e| Outcome::Input(format!("error: {e}")))?;
            let compiled = jit.compile(program).map_err(|e| match e {
                crate::backend::jit::JitError::Init(err) => script(err),
                other => Outcome::Input(format!("error: {}: {other}", program.source.name)),
            })?;
            let stages = function_stages(compiled.functions());
            let value = compiled.run_main().map_err(script)?;
            Ok((value, stages, None))
        }
    }
}

fn function_stages(functions: &[CompiledFunction]) -> Stages {
    functions
        .iter()
        .map(|f| (f.name.clone(), f.lower_time, f.compile_time))
        .collect()
}
