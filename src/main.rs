//! hotlab's command line (only `doctor` on this branch).

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use hotlab::measure::doctor::{DoctorArgs, run_doctor};

#[derive(Debug, Parser)]
#[command(name = "hotlab", about = "A lab for the cost of a script call")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check this machine and the measurement engine.
    Doctor(DoctorArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Doctor(args) => run_doctor(args),
    };
    result.unwrap_or_else(|e| {
        eprintln!("error: {e:#}");
        ExitCode::from(2)
    })
}
