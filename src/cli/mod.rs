//! The command line: options → command → result → output. Errors are printed in one place.

mod asm;
mod bench;
mod check;
mod doctor;
mod ladder;
mod run;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use asm::AsmArgs;
pub use bench::BenchArgs;
pub use check::CheckArgs;
pub use doctor::DoctorArgs;
pub use ladder::LadderArgs;
pub use run::RunArgs;

// What the front ends share; the command files below reach it as `super::...`.
use crate::frontend::{Failure, exit, snippet, use_color};

const AFTER_HELP: &str = "\
Exit codes: 0 success, 1 the script raised an error at run time, 2 bad input (a diagnostic in the
snippet, an unreadable file, a bad option). `hotlab doctor` exits 1 when a self-check misses its
expectation; `hotlab ladder` exits 1 when a row's checksum differs from the native row's.
`hotlab check` exits 0 equal, 3 differs, 4 unresolved, 5 results differ; `hotlab bench` exits 5
when a result differs from its twin. With no command, hotlab opens the TUI (`hotlab tui`) on a
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
