//! `hotlab compare OLD.json NEW.json`: two exported runs (two commits, two machines) row by
//! row (see [`crate::export::compare`]).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{Failure, exit};
use crate::export::compare::{self, CompareOptions, DEFAULT_BAND_PCT, DEFAULT_SPREAD_PCT};
use crate::frontend::baseline;

const COMPARE_HELP: &str = "\
OLD and NEW are JSON exports of one kind: `hotlab ladder --format json`, `hotlab bench --json
FILE`, `hotlab check --json`, or saved baselines (--save-baseline NAME writes one under the XDG
data directory; `--baseline NAME` compares a run with it directly). Each row's change is new /
old of its in-run ratio (rung over native, cell over twin, script over the other side), with a
CI that combines both runs' CIs and the run-to-run term; the verdict is `check`'s: equal inside
the band, slower, faster, unresolved. Exit codes: 0 no row got slower, 3 a row got slower, 2 bad
input. See docs/cli.md.";

/// Options of `hotlab compare`.
#[derive(Debug, Args)]
#[command(after_help = COMPARE_HELP)]
pub struct CompareArgs {
    /// The older run (an export, or a baseline's file).
    pub old: PathBuf,
    /// The newer run.
    pub new: PathBuf,
    /// The equivalence band, in percent.
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_BAND_PCT, help = compare::BAND_HELP)]
    pub band: f64,
    /// The run-to-run term, in percent.
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_SPREAD_PCT, help = compare::SPREAD_HELP)]
    pub run_spread: f64,
    /// Print the comparison as one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// `hotlab compare`.
pub fn compare(args: &CompareArgs) -> Result<ExitCode, Failure> {
    match run(args) {
        Err(f) if args.json => {
            println!(
                "{}",
                serde_json::to_string_pretty(&f.to_json()).unwrap_or_default()
            );
            Ok(ExitCode::from(f.code))
        }
        other => other,
    }
}

fn run(args: &CompareArgs) -> Result<ExitCode, Failure> {
    let options = CompareOptions::from_pct(args.band, args.run_spread, "--band")
        .map_err(|why| Failure::input(format!("error: {why}")))?;
    let old = baseline::read(&args.old)?;
    let new = baseline::read(&args.new)?;
    let (o, n) = (
        args.old.display().to_string(),
        args.new.display().to_string(),
    );
    let c = baseline::compare_docs((&o, &old), (&n, &new), options)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&compare::to_json(&c)).unwrap_or_default()
        );
    } else {
        let t = compare::table(&c, &format!("{n} against {o}"));
        print!("{}", crate::export::render_text(&t));
    }
    Ok(ExitCode::from(if c.slower() {
        exit::SLOWER
    } else {
        exit::OK
    }))
}
