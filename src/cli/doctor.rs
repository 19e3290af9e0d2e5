//! `hotlab doctor`: its options, and the report printed as text or JSON.

use std::process::ExitCode;

use super::Failure;
use crate::measure::doctor::{DoctorOptions, doctor_report};

/// Options of `hotlab doctor`.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct DoctorArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Time budget of each self-check, in seconds.
    #[arg(long, default_value_t = 1.0)]
    pub time: f64,
    /// CPU to measure on (default: a quiet one).
    #[arg(long)]
    pub cpu: Option<usize>,
}

/// Prints the report (text or JSON); exit status 0 when every expectation was met, 1
/// otherwise.
pub fn doctor(args: &DoctorArgs) -> Result<ExitCode, Failure> {
    let options = DoctorOptions {
        time_s: args.time,
        cpu: args.cpu,
    };
    let failure = |e: anyhow::Error| Failure::input(format!("error: {e:#}"));
    let report = doctor_report(&options).map_err(failure)?;
    if args.json {
        let json = serde_json::to_string_pretty(&report).map_err(|e| failure(e.into()))?;
        println!("{json}");
    } else {
        print!("{}", report.render());
    }
    Ok(if report.all_met {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
