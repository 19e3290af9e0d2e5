//! The command line: options → command → result → output. Errors are printed in one place.

mod asm;
mod bench;
mod check;
mod doctor;
mod ladder;
mod run;

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::results::{FailureCause, JobReport, LiveSnapshot};
use crate::worker::protocol::WorkerJob;
use crate::worker::{Worker, WorkerError, WorkerOptions};

pub use asm::AsmArgs;
pub use bench::BenchArgs;
pub use check::CheckArgs;
pub use doctor::DoctorArgs;
pub use ladder::LadderArgs;
pub use run::RunArgs;

// What the front ends share; the command files below reach it as `super::...`.
use crate::frontend::{Failure, exit, snippet};

const AFTER_HELP: &str = "\
Exit codes: 0 success, 1 the script raised an error at run time, 2 bad input (a diagnostic in the
snippet, an unreadable file, a bad option), 6 script code crashed the worker process running it
(SIGSEGV, SIGILL, SIGFPE, SIGTRAP, ...: the message names the signal), 7 it did not finish within
--limit. `hotlab doctor` exits 1 when a self-check misses its
expectation; `hotlab ladder` exits 1 when a row's checksum differs from the native row's.
`hotlab check` exits 0 equal, 3 differs, 4 unresolved, 5 results differ; `hotlab bench` exits 5
when a result differs from its twin. `run`, `asm`, `check`, `ladder` and `bench` run script
code in a worker process (`--limit S`: run 120 s, asm 60 s, check and ladder 3 x --time + 30 s,
bench per cell 4 x --reps x --time + 30 s). With no command, hotlab opens the TUI (`hotlab tui`) on a
terminal, and runs `hotlab ladder` (the host_call ladder) when stdin or stdout is not one.
Documentation: docs/ (cli.md, tui.md, language.md, measurement.md, runtime.md, ladder.md,
cases.md, results.md, backends.md, session.md, repl.md).";

/// hotlab: a lab for the cost of a script call.
#[derive(Debug, Parser)]
#[command(name = "hotlab", version, about, after_help = AFTER_HELP)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Option<CliCommand>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum CliCommand {
    /// Compile a snippet (.hot or .clif) and print the result of `main`.
    Run(RunArgs),
    /// Print the machine code (and with --ir the Cranelift IR) of a snippet's functions.
    Asm(AsmArgs),
    /// Check the machine for measurement: a health report and self-checks of the engine.
    Doctor(DoctorArgs),
    /// Run every case on every backend beside its native twin: times, ratios, load times.
    Bench(BenchArgs),
    /// Is this 1.0x? A script against its twin (or a second snippet), in one line.
    Check(CheckArgs),
    /// Measure a ladder: what each layer of a host-to-script call adds (the default command).
    Ladder(LadderArgs),
    /// The terminal UI: editor, ladder table, live histogram, counters, machine code (the
    /// default on a terminal).
    Tui(crate::tui::TuiArgs),
    /// An interactive session: type hot code and :commands (:help); scripts via piped stdin.
    Repl(crate::repl::ReplArgs),
    /// The saved sessions (the last one and the 10 kept before it, with their times and what
    /// they hold); `--resume N|NAME` goes on with one.
    Sessions,
    /// Serve jobs over stdin/stdout (started by the session; see docs/session.md).
    #[command(hide = true)]
    Worker(WorkerArgs),
}

/// Options of the hidden `hotlab worker` mode.
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// Pin the job thread to this CPU.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// The front end's process id: the worker ends when that process does.
    #[arg(long)]
    pub parent: Option<u32>,
}

/// Whether `hotlab` with no command opens the TUI: stdin and stdout are terminals.
fn on_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// Stack for script code, and for the compiler on the one-shot commands: deep recursion and
/// expressions nested up to the language's limit are allowed; runaway recursion stops with an
/// error.
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

/// How a one-shot command's job runs in the worker process.
struct WorkerRun<'a> {
    /// What the messages name: the snippet's file, or the command.
    what: &'a str,
    /// The time limit (`--limit`).
    limit: Duration,
    /// The limit starts again at each progress event (`bench`: per cell).
    per_progress: bool,
    /// The CPU the worker's job thread is pinned to.
    cpu: Option<usize>,
}

/// Seconds as `--limit` takes them, checked.
fn limit_of(secs: f64) -> Result<Duration, Failure> {
    if secs > 0.0 && secs <= 86_400.0 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(Failure::input(format!(
            "error: --limit {secs} is out of range: give seconds in (0, 86400], e.g. --limit 60"
        )))
    }
}

fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// Run `job` in a fresh worker process (`hotlab worker`, as the sessions do): script code that
/// crashes it (a signal) or runs past the limit ends that process, and comes back here as a
/// [`Failure`] with its own exit code (6 crashed, 7 timed out). `on_progress` sees each
/// snapshot; the last one's phase says where a crash or a timeout happened.
fn in_worker(
    job: WorkerJob,
    how: &WorkerRun<'_>,
    on_progress: &mut dyn FnMut(&LiveSnapshot),
) -> Result<JobReport, Failure> {
    let (result, last_phase) = worker_answer(job, how, on_progress)?;
    result.map_err(|e| worker_failure(e, how, &last_phase))
}

/// [`in_worker`] before its errors become failures: the worker's answer or error, and the
/// phase of the last progress snapshot (where a crash or a timeout happened).
fn worker_answer(
    job: WorkerJob,
    how: &WorkerRun<'_>,
    on_progress: &mut dyn FnMut(&LiveSnapshot),
) -> Result<(Result<JobReport, WorkerError>, String), Failure> {
    let options = WorkerOptions::current(how.cpu)
        .map_err(|e| Failure::input(format!("error: cannot find the hotlab executable: {e}")))?;
    let mut worker = Worker::spawn(options)
        .map_err(|e| Failure::input(format!("error: cannot start the worker process: {e}")))?;
    let mut last_phase = String::new();
    let result = worker.run_paced(
        job,
        how.limit,
        how.per_progress,
        &AtomicBool::new(false),
        &mut |p| {
            last_phase.clone_from(&p.phase);
            on_progress(&p);
        },
    );
    // The script's `print` lines, before the job's answer (or its error).
    let printed = worker.take_printed();
    if !printed.is_empty() {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(printed.as_bytes());
        let _ = out.flush();
    }
    Ok((result, last_phase))
}

/// A worker's error as the command's failure, with its exit code (6 crashed, 7 timed out).
fn worker_failure(e: WorkerError, how: &WorkerRun<'_>, last_phase: &str) -> Failure {
    let during = if last_phase.is_empty() {
        String::new()
    } else {
        format!(" (during: {last_phase})")
    };
    let what = how.what;
    match e {
        WorkerError::Failed(f) => match f.cause {
            FailureCause::Script | FailureCause::Panic => Failure::script(f.message),
            FailureCause::Input | FailureCause::Unavailable => Failure::input(f.message),
        },
        WorkerError::TimedOut { limit, .. } => {
            let per = if how.per_progress { " per step" } else { "" };
            Failure::timed_out(format!(
                "error: {what}: did not finish within {}{during}: stopped (--limit S sets the limit{per})",
                seconds(limit)
            ))
        }
        WorkerError::Crashed {
            signal,
            why,
            stderr,
        } => {
            let tail = stderr.trim();
            let tail = if tail.is_empty() {
                String::new()
            } else {
                format!("\nworker stderr:\n{tail}")
            };
            Failure::crashed(format!(
                "error: {what}: the script crashed the process running it: {signal} ({why}){during}{tail}"
            ))
        }
        WorkerError::Cancelled { job } => {
            Failure::script(format!("error: {what}: the {job} was cancelled"))
        }
        WorkerError::Broken(why) => Failure::input(format!(
            "error: {what}: the worker process cannot be used: {why}"
        )),
    }
}

/// The CPU a measuring command's worker runs on: `--cpu`, else one chosen for quiet (as the
/// sessions choose).
fn measuring_cpu(cpu: Option<usize>) -> Option<usize> {
    cpu.or_else(crate::measure::env::pin::auto_cpu)
}

/// `hotlab check`'s measurement in a worker process (as `:check` runs it): the default limit is
/// a small multiple of `--time` plus the compiles and the checked runs.
pub(crate) fn check_in_worker(
    script: &crate::cases::check::Script,
    against: &crate::cases::check::Against,
    options: &crate::cases::check::CheckOptions,
    limit: Option<f64>,
) -> Result<crate::cases::check::CheckAnswer, Failure> {
    use crate::worker::protocol::{Against, MeasureSettings, SnippetSource};
    let limit = match limit {
        Some(s) => limit_of(s)?,
        None => Duration::from_secs_f64(measuring_limit_s(options.time)),
    };
    let snippet = |s: &crate::cases::check::Script| SnippetSource {
        name: s.source.name.clone(),
        text: s.source.text.clone(),
    };
    let job = WorkerJob::Check {
        snippet: snippet(script),
        against: match against {
            crate::cases::check::Against::Twin(t) => Against::Twin {
                name: t.name.to_string(),
            },
            crate::cases::check::Against::Script(s) => Against::Snippet {
                snippet: snippet(s),
            },
        },
        backend: options.backend,
        settings: MeasureSettings {
            time_s: options.time,
            band: options.band,
            cpu: None,
            checks: true,
        },
        iters: options.iters,
    };
    let how = WorkerRun {
        what: &script.source.name,
        limit,
        per_progress: false,
        cpu: measuring_cpu(None),
    };
    match in_worker(job, &how, &mut |_| {})? {
        JobReport::Checked(answer) => Ok(answer),
        other => Err(Failure::input(format!(
            "error: the worker answered a check with {other:?} (a bug in hotlab)"
        ))),
    }
}

/// The default `--limit` of a measuring command (`check`, `ladder`), in seconds: three times
/// the measurement, and 30 s for compiling, sizing and the checked runs.
pub fn measuring_limit_s(time: f64) -> f64 {
    3.0 * time + 30.0
}

/// Parse the command line and run it.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(CliCommand::Run(args)) => run::run(&args),
        // The commands that lower a snippet in this process do it on a large stack, as `run`
        // does: an expression nested up to the language's limit must not overflow the 8 MiB
        // main thread.
        Some(CliCommand::Asm(args)) => on_script_thread(move || asm::asm(&args)).and_then(|r| r),
        Some(CliCommand::Doctor(args)) => doctor::doctor(&args),
        Some(CliCommand::Bench(args)) => bench::bench(&args),
        Some(CliCommand::Check(args)) => {
            on_script_thread(move || check::check(&args)).and_then(|r| r)
        }
        Some(CliCommand::Worker(args)) => return crate::worker::serve(args.cpu, args.parent),
        Some(CliCommand::Ladder(args)) => {
            on_script_thread(move || ladder::ladder(&args)).and_then(|r| r)
        }
        Some(CliCommand::Repl(args)) => return crate::repl::run(&args),
        Some(CliCommand::Tui(args)) => crate::tui::run(&args),
        Some(CliCommand::Sessions) => crate::session::store::state_path()
            .map_err(|e| Failure::input(format!("error: {e}")))
            .map(|p| {
                println!("{}", crate::session::generations::list_text(&p));
                ExitCode::SUCCESS
            }),
        // With no arguments on a terminal: the TUI on the host_call ladder.
        None if on_terminal() => crate::tui::run(&crate::tui::TuiArgs::default()),
        // Without one (CI, pipes): the seed's ladder, both builds, default settings, printed.
        None => ladder::ladder(&LadderArgs::default()),
    };
    match result {
        Ok(code) => code,
        Err(f) => {
            eprintln!("{}", f.message.trim_end());
            ExitCode::from(f.code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
