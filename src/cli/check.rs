//! `hotlab check`: is this 1.0x? One script against its native twin or a second snippet,
//! measured interleaved, answered in one line with the ratio, its CI, the verdict and the
//! result check.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use super::Failure;
use crate::cases::check::{Against, CheckOptions, Script};
use crate::cases::spec::parse_header;
use crate::cases::{Backend, Mode, Twin, twin_named, twins};
use crate::lang::SourceFile;

use crate::cases::check::line;

const CHECK_HELP: &str = "\
The answer is one line: the ratio FILE / twin (or FILE / FILE2) with its 95% CI, the verdict and
the result check. `equal` means the CI lies inside the band; `slower`/`faster` that it excludes
1.0; `unresolved` that the data cannot tell (the line says how much longer to run).
Exit codes: 0 equal, 3 differs (slower or faster), 4 unresolved, 5 the results differ (the
script's checksum is not its twin's), 1 a script raised an error, 2 bad input (file, header,
option). A FILE names its twin in its case header (`//# twin = \"int_loop\"`), or use --twin.
See docs/cases.md.";

/// Options of `hotlab check`.
#[derive(Debug, Args)]
#[command(after_help = CHECK_HELP)]
pub struct CheckArgs {
    /// The script: a case or any .hot/.clif file with `run(n)` (`fn run(n: i64) -> i64`, or
    /// `function %run(i64, i64) -> i64 system_v` taking ctx and n).
    pub file: PathBuf,
    /// Compare with this native twin (default: the one the file's header names).
    #[arg(long, value_name = "NAME", conflicts_with = "vs")]
    pub twin: Option<String>,
    /// Compare with a second snippet instead of a twin (ratio FILE / FILE2).
    #[arg(long, value_name = "FILE2")]
    pub vs: Option<PathBuf>,
    /// The backend to compile the scripts with.
    #[arg(long, value_enum, default_value_t = Backend::Jit)]
    pub backend: Backend,
    /// Equivalence band in percent: `equal` needs the CI inside ±PCT%.
    #[arg(long, default_value_t = 2.0, value_name = "PCT")]
    pub band: f64,
    /// Seconds of measurement.
    #[arg(long, default_value_t = 1.0, value_name = "S")]
    pub time: f64,
    /// Loop count of the result check.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(i64).range(0..=1_000_000_000))]
    pub iters: i64,
    /// Print the answer as JSON.
    #[arg(long)]
    pub json: bool,
    /// Stop after this many seconds (default 3 x --time + 30): `did not finish within S s`,
    /// exit code 7. The check runs in a worker process: a crash there is exit code 6.
    #[arg(long, value_name = "S")]
    pub limit: Option<f64>,
}

fn mode_of(path: &Path) -> Result<Mode, Failure> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("hot") => Ok(Mode::Hot),
        Some("clif") => Ok(Mode::Clif),
        _ => Err(Failure::input(format!(
            "error: {}: a script must end in .hot or .clif",
            path.display()
        ))),
    }
}

fn read(path: &Path) -> Result<Script, Failure> {
    let mode = mode_of(path)?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::input(format!("error: cannot read {}: {e}", path.display())))?;
    Ok(Script {
        mode,
        source: Arc::new(SourceFile::new(path.display().to_string(), text)),
    })
}

/// The twin for FILE: `--twin`, else the header's.
fn pick_twin(args: &CheckArgs, mode: Mode, src: &SourceFile) -> Result<&'static Twin, Failure> {
    if let Some(name) = &args.twin {
        return twin_named(name).ok_or_else(|| {
            let known: Vec<&str> = twins().iter().map(|t| t.name).collect();
            Failure::input(format!(
                "error: unknown twin `{name}`; known twins: {}",
                known.join(", ")
            ))
        });
    }
    parse_header(&args.file, mode, &src.text)
        .map(|h| h.twin)
        .map_err(|e| Failure::input(format!("error: {e}; or give --twin NAME or --vs FILE2")))
}

/// `hotlab check`.
pub fn check(args: &CheckArgs) -> Result<ExitCode, Failure> {
    if !(args.band > 0.0 && args.band < 100.0) {
        return Err(Failure::input(format!(
            "error: --band {} is out of range: give a percentage in (0, 100), e.g. --band 2",
            args.band
        )));
    }
    if !(args.time > 0.0 && args.time <= 600.0) {
        return Err(Failure::input(format!(
            "error: --time {} is out of range: give seconds in (0, 600], e.g. --time 1",
            args.time
        )));
    }
    let script = read(&args.file)?;
    let against = match &args.vs {
        Some(p) => Against::Script(read(p)?),
        None => Against::Twin(pick_twin(args, script.mode, &script.source)?),
    };
    let options = CheckOptions {
        backend: args.backend,
        band: args.band / 100.0,
        time: args.time,
        iters: args.iters,
    };
    let answer = super::check_in_worker(&script, &against, &options, args.limit)?;
    if args.json {
        let json = serde_json::to_string_pretty(&answer)
            .map_err(|e| Failure::input(format!("error: {e}")))?;
        println!("{json}");
    } else {
        println!("{}", line(&answer));
    }
    Ok(ExitCode::from(answer.exit_code))
}
