//! The command line: options → command → result → output. Errors are printed in one place.

mod asm;
mod bench;
mod check;
mod compare;
mod doctor;
mod ladder;
mod run;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::results::{FailureCause, JobReport, LiveSnapshot};
use crate::worker::protocol::WorkerJob;
use crate::worker::{Worker, WorkerError, WorkerOptions};

pub use asm::AsmArgs;
pub use bench::BenchArgs;
pub use check::CheckArgs;
pub use compare::CompareArgs;
pub use doctor::DoctorArgs;
pub use ladder::LadderArgs;
pub use run::RunArgs;

// What the front ends share; the command files below reach it as `super::...`.
use crate::frontend::{Failure, exit, snippet};

/// The `--help` epilogue: the exit codes (from [`exit::TABLE`], as docs/cli.md lists them),
/// then where script code runs and what hotlab does with no command.
fn after_help() -> String {
    format!(
        "Exit codes (every command; `hotlab COMMAND --help` says which it uses):\n{}\n{AFTER_HELP}",
        exit::help_text()
    )
}

const AFTER_HELP: &str = "\
`run`, `asm`, `check`, `ladder` and `bench` run script code in a worker process (`--limit S`:
run 120 s, asm 60 s, check and ladder 3 x --time + 30 s, bench per cell 4 x --reps x --time +
30 s). `--color auto|always|never` on every command (auto: a terminal and NO_COLOR unset).
Defaults for theme, time, band and backend come from $XDG_CONFIG_HOME/hotlab/config.toml when it
exists. HOTLAB_PERF_MAP=1 names JIT code for `perf` (/tmp/perf-PID.map; docs/cli.md, Profiling).
With no command, hotlab opens the TUI (`hotlab tui`) on a terminal, and runs
`hotlab ladder` (the host_call ladder) when stdin or stdout is not one.
Install: `cargo install --locked --path .`. Documentation: docs/ (cli.md, tui.md, language.md,
measurement.md, runtime.md, ladder.md, cases.md, results.md, backends.md, session.md, repl.md).";

/// hotlab: a lab for the cost of a script call.
#[derive(Debug, Parser)]
#[command(name = "hotlab", version, about, after_help = after_help())]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Option<CliCommand>,
    /// Colour on stdout and stderr: `auto` (a terminal, and NO_COLOR unset or empty),
    /// `always` or `never`.
    #[arg(long, value_enum, global = true, default_value_t = crate::frontend::ColorChoice::Auto)]
    pub color: crate::frontend::ColorChoice,
    /// The memory budget of each job that runs script code (`run`, `check`, `ladder`, `bench`,
    /// and the sessions' jobs unless `:set mem` says otherwise): `512M`, `2G`, ... (default:
    /// half the RAM, less under `ulimit -v`). Past it a script fails with "out of memory" at
    /// the operation that allocates.
    #[arg(long, global = true, value_name = "SIZE", value_parser = crate::runtime::memory::parse_size)]
    pub mem: Option<u64>,
    /// The config file's theme, for the TUI that `hotlab` with no command opens.
    #[arg(skip)]
    pub default_theme: Option<String>,
}

/// Fill the options the command line left at their defaults from the config file
/// ([`crate::frontend::config`]); print what is wrong in the file (the default is then used).
fn apply_config(cli: &mut Cli, matches: &clap::ArgMatches) {
    use clap::ValueEnum;
    use clap::parser::ValueSource;
    let config = crate::frontend::config::load();
    for w in &config.warnings {
        eprintln!("warning: {w}");
    }
    let Some((name, sub)) = matches.subcommand() else {
        cli.default_theme.clone_from(&config.theme);
        return;
    };
    let unset = |id: &str| {
        sub.try_get_raw(id).is_ok() && sub.value_source(id) == Some(ValueSource::DefaultValue)
    };
    let d = config.for_command(name);
    let file = config
        .path
        .as_ref()
        .map_or(String::new(), |p| p.display().to_string());
    match &mut cli.command {
        Some(CliCommand::Check(a)) => {
            if let Some(t) = d.time.filter(|_| unset("time")) {
                a.time = t;
            }
            if let Some(b) = d.band.filter(|_| unset("band")) {
                a.band = b;
            }
            if let Some(b) = d.backend.as_deref().filter(|_| unset("backend")) {
                match crate::cases::Backend::from_str(b, false) {
                    Ok(b) => a.backend = b,
                    Err(_) => eprintln!(
                        "warning: {file}: `backend`: `{b}` is not a backend of check; the default is used"
                    ),
                }
            }
        }
        Some(CliCommand::Ladder(a)) => {
            if let Some(t) = d.time.filter(|_| unset("time")) {
                a.time = t;
            }
            if let Some(b) = d.band.filter(|_| unset("band")) {
                a.band = b;
            }
        }
        Some(CliCommand::Bench(a)) => {
            if let Some(t) = d.time.filter(|_| unset("time")) {
                a.time = t.min(60.0);
            }
            if let Some(b) = d.backend.as_deref().filter(|_| unset("backend")) {
                match bench::BackendChoice::from_str(b, false) {
                    Ok(b) => a.backend = b,
                    Err(_) => eprintln!(
                        "warning: {file}: `backend`: `{b}` is not a backend of bench; the default is used"
                    ),
                }
            }
        }
        Some(CliCommand::Tui(a)) if a.theme.is_none() => a.theme.clone_from(&config.theme),
        _ => {}
    }
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
    /// Two exported runs (or saved baselines) row by row: what changed, with a verdict.
    Compare(CompareArgs),
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
    /// Each job's memory budget in bytes (default: `runtime::memory::default_budget`).
    #[arg(long)]
    pub mem_bytes: Option<u64>,
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
    /// The script's `print` lines go to stderr (stdout carries one JSON document).
    printed_to_stderr: bool,
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
    let (result, last_phase) = worker_answer(job, how, &AtomicBool::new(false), on_progress)?;
    result.map_err(|e| worker_failure(e, how, &last_phase))
}

/// [`in_worker`] before its errors become failures: the worker's answer or error, and the
/// phase of the last progress snapshot (where a crash or a timeout happened).
fn worker_answer(
    job: WorkerJob,
    how: &WorkerRun<'_>,
    cancel: &AtomicBool,
    on_progress: &mut dyn FnMut(&LiveSnapshot),
) -> Result<(Result<JobReport, WorkerError>, String), Failure> {
    let mut options = WorkerOptions::current(how.cpu)
        .map_err(|e| Failure::input(format!("error: cannot find the hotlab executable: {e}")))?;
    options.mem = crate::runtime::memory::flag();
    let mut worker = Worker::spawn(options)
        .map_err(|e| Failure::input(format!("error: cannot start the worker process: {e}")))?;
    // A one-shot command has nothing to show after a cancel but the job's answer to it.
    worker.set_cancel_grace(PARTIAL_GRACE);
    let mut last_phase = String::new();
    let result = worker.run_paced(job, how.limit, how.per_progress, cancel, &mut |p| {
        last_phase.clone_from(&p.phase);
        on_progress(&p);
    });
    // The script's `print` lines, before the job's answer (or its error).
    let printed = worker.take_printed();
    if !printed.is_empty() {
        use std::io::Write;
        if how.printed_to_stderr {
            let mut out = std::io::stderr().lock();
            let _ = out.write_all(printed.as_bytes());
        } else {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(printed.as_bytes());
            let _ = out.flush();
        }
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
            at,
            stderr,
        } => {
            let at = crate::worker::client::crash_site(&at);
            let tail = stderr.trim();
            let tail = if tail.is_empty() {
                String::new()
            } else {
                format!("\nworker stderr:\n{tail}")
            };
            Failure::crashed(format!(
                "error: {what}: the script crashed the process running it: {signal} ({why}){at}{during}{tail}"
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
/// a small multiple of `--time` plus the compiles and the checked runs. `json`: the script's
/// `print` lines go to stderr; `progress`: a bar on stderr (the measurement's `--time` as it
/// passes, after the compiles and the checked runs).
pub(crate) fn check_in_worker(
    script: &crate::cases::check::Script,
    against: &crate::cases::check::Against,
    options: &crate::cases::check::CheckOptions,
    limit: Option<f64>,
    json: bool,
    progress: bool,
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
        layouts: options.layouts,
    };
    let how = WorkerRun {
        what: &script.source.name,
        limit,
        per_progress: false,
        cpu: measuring_cpu(None),
        printed_to_stderr: json,
    };
    // Ctrl-C from here on cancels the job through the protocol instead of ending hotlab: the
    // worker answers with the verdict on the rounds so far (marked partial, exit code 130).
    let interrupted = Arc::new(AtomicBool::new(false));
    let routed = crate::session::interrupt::install(Arc::clone(&interrupted)).is_ok();
    let bar = progress.then(|| rounds_bar(&script.source.name, options.time));
    let mut rounds = 0u64;
    let answer = worker_answer(job, &how, &interrupted, &mut |p| {
        rounds = p.rounds;
        if let Some(bar) = &bar {
            bar.set_position(p.elapsed_ms.max(0.0) as u64);
            bar.set_message(format!("{}: {} rounds", p.phase, p.rounds));
        }
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if routed {
        // Ctrl-C ends hotlab again, as it would any command.
        // SAFETY: SIG_DFL is a valid disposition for SIGINT; no pointer is passed.
        unsafe { libc::signal(libc::SIGINT, libc::SIG_DFL) };
    }
    let (result, last_phase) = answer?;
    let stopped = interrupted.load(Ordering::Relaxed);
    match result {
        Ok(JobReport::Checked(answer)) => Ok(*answer),
        Ok(other) => Err(Failure::input(format!(
            "error: the worker answered a check with {other:?} (a bug in hotlab)"
        ))),
        // Stopped before the measurement could answer (in the compiles or the checked runs,
        // or the worker did not answer within the grace).
        Err(e @ (WorkerError::Cancelled { .. } | WorkerError::Failed(_))) if stopped => {
            let why = match e {
                WorkerError::Failed(f) => format!(" ({})", f.message.trim_end()),
                _ => String::new(),
            };
            let during = if last_phase.is_empty() {
                "before the measurement started".to_string()
            } else {
                format!("during {last_phase}, after {rounds} rounds")
            };
            Err(Failure {
                message: format!(
                    "error: {}: interrupted {during}: no answer{why}",
                    script.source.name
                ),
                code: exit::INTERRUPTED,
            })
        }
        Err(e) => Err(worker_failure(e, &how, &last_phase)),
    }
}

/// How long a one-shot command waits, after Ctrl-C, for the job's answer on what it has (the
/// job stops within a sample; the statistics and a busy CPU can take a few hundred ms).
const PARTIAL_GRACE: Duration = Duration::from_secs(3);

/// A bar on stderr over `check`'s `--time`, moved by the job's progress (elapsed time, phase
/// and rounds so far); before the first progress, the compiles and the checked runs.
fn rounds_bar(what: &str, time: f64) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new((time * 1000.0) as u64);
    let style = indicatif::ProgressStyle::with_template(
        "{prefix} [{bar:30}] {elapsed_precise} of ~{len_s} {msg}",
    )
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
    .with_key(
        "len_s",
        |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{} s", state.len().unwrap_or(0) as f64 / 1000.0);
        },
    )
    .progress_chars("#>.");
    bar.set_style(style);
    bar.set_prefix(format!("check {what}"));
    bar.set_message("compiling, checking the results (Ctrl-C: stop with the answer so far)");
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// The default `--limit` of a measuring command (`check`, `ladder`), in seconds: three times
/// the measurement, and 30 s for compiling, sizing and the checked runs.
pub fn measuring_limit_s(time: f64) -> f64 {
    3.0 * time + 30.0
}

/// Parse the command line and run it. A command line `check ... --json` that does not parse
/// still answers with one JSON document on stdout (clap's message as a `bad_input` error).
pub fn main() -> ExitCode {
    use clap::{CommandFactory, FromArgMatches};
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    let mut cli = match parsed {
        Ok((mut cli, matches)) => {
            if !matches!(cli.command, Some(CliCommand::Worker(_))) {
                apply_config(&mut cli, &matches);
            }
            cli
        }
        Err(e) => {
            let args: Vec<String> = std::env::args().skip(1).collect();
            let wants_json = args.iter().any(|a| a == "--json")
                && args.iter().any(|a| a == "check" || a == "compare")
                && e.use_stderr();
            if wants_json {
                let message = crate::frontend::strip_ansi(&e.render().to_string());
                let f = Failure::input(message.trim_end().to_string());
                println!(
                    "{}",
                    serde_json::to_string_pretty(&f.to_json()).unwrap_or_default()
                );
                return ExitCode::from(exit::BAD_INPUT);
            }
            e.exit()
        }
    };
    if !matches!(cli.command, Some(CliCommand::Worker(_))) {
        quiet_on_closed_output();
    }
    crate::frontend::set_color(cli.color);
    crate::runtime::memory::set_flag(cli.mem);
    let default_tui = crate::tui::TuiArgs {
        theme: cli.default_theme.take(),
        ..crate::tui::TuiArgs::default()
    };
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
        Some(CliCommand::Compare(args)) => compare::compare(&args),
        Some(CliCommand::Worker(args)) => {
            return crate::worker::serve(args.cpu, args.parent, args.mem_bytes);
        }
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
        None if on_terminal() => crate::tui::run(&default_tui),
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

/// A print to a closed stdout or stderr (`hotlab ladder | head -3`) ends the command quietly
/// with [`exit::OUTPUT_CLOSED`], from whichever thread printed: Rust ignores SIGPIPE, so the
/// write fails and `println!` panics, which would print a panic report (to the same closed
/// pipe, or to the terminal) and exit 101. Every other panic reports as before. Not for the
/// worker, whose pipes to its front end have their own handling.
fn quiet_on_closed_output() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if text.starts_with("failed printing to std") && text.contains("Broken pipe") {
            std::process::exit(i32::from(exit::OUTPUT_CLOSED));
        }
        report(info)
    }));
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
