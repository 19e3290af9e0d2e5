//! The command line: options → command → result → output. Errors are printed in one place.

mod asm;
mod bench;
mod check;
mod ladder;
mod run;
mod snippet;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use asm::AsmArgs;
pub use bench::BenchArgs;
pub use check::CheckArgs;
pub use ladder::LadderArgs;
pub use run::RunArgs;
pub use snippet::{Snippet, load_snippet};

use crate::measure::doctor::DoctorArgs;

/// Exit codes shared by every command (documented in `--help` and docs/cli.md).
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// The script raised a `ScriptError` at run time.
    pub const SCRIPT_ERROR: u8 = 1;
    /// Bad input: a diagnostic in the snippet, an unreadable file, a bad option.
    pub const BAD_INPUT: u8 = 2;
    /// `check`: the two sides differ (slower or faster).
    pub const DIFFERS: u8 = 3;
    /// `check`: the data cannot tell (see the line for what would resolve it).
    pub const UNRESOLVED: u8 = 4;
    /// `check`/`bench`: a script's result differs from its twin's (or the other snippet's).
    pub const RESULT_DIFFERS: u8 = 5;
}

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
    pub command: Option<Command>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
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
}

/// An error that already says what went wrong and where, with the exit code to use.
#[derive(Debug)]
pub struct Failure {
    /// The message, printed to stderr as is (diagnostics are pre-rendered).
    pub message: String,
    /// The exit code.
    pub code: u8,
}

impl Failure {
    /// Bad input: exit code 2.
    pub fn input(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            code: exit::BAD_INPUT,
        }
    }

    /// A script fault: exit code 1.
    pub fn script(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            code: exit::SCRIPT_ERROR,
        }
    }
}

/// Whether stderr/stdout should carry colour: a terminal, and `NO_COLOR` unset or empty.
pub fn use_color(stream_is_tty: bool) -> bool {
    stream_is_tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Whether `hotlab` with no command opens the TUI: stdin and stdout are terminals.
fn on_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

fn doctor(args: &DoctorArgs) -> Result<ExitCode, Failure> {
    crate::measure::doctor::run_doctor(args).map_err(|e| Failure::input(format!("error: {e:#}")))
}

/// Parse the command line and run it.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Run(args)) => run::run(&args),
        Some(Command::Asm(args)) => asm::asm(&args),
        Some(Command::Doctor(args)) => doctor(&args),
        Some(Command::Bench(args)) => bench::bench(&args),
        Some(Command::Check(args)) => check::check(&args),
        Some(Command::Worker(args)) => return crate::worker::serve(args.cpu),
        Some(Command::Ladder(args)) => ladder::ladder(&args),
        Some(Command::Repl(args)) => return crate::repl::run(&args),
        Some(Command::Tui(args)) => crate::tui::run(&args),
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
