//! `hotlab check`: is this 1.0x? One script against its native twin or a second snippet,
//! measured interleaved, answered in one line with the ratio, its CI, the verdict and the
//! result check.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use serde::Serialize;

use super::{Failure, exit};
use crate::cases::matrix;
use crate::cases::spec::parse_header;
use crate::cases::{Backend, CellError, Entry, Jits, Loaded, Mode, Twin, twin_named, twins};
use crate::lang::SourceFile;
use crate::measure::{Picos, Settings, Stop, Verdict};

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
    /// `function %run(i64, i64) -> i64 system_v` taking ctx and n), or a hook case (its header
    /// says `entry = "hook"`: the host calls `target`'s `Hook.call`).
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
}

/// The answer, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct CheckAnswer {
    /// The script.
    pub file: String,
    /// What it was compared with (`twin NAME` or the second file).
    pub against: String,
    /// The backend.
    pub backend: Backend,
    /// The verdict.
    pub verdict: Verdict,
    /// Median ratio FILE / other.
    pub ratio: f64,
    /// Its CI.
    pub low: f64,
    /// Its CI.
    pub high: f64,
    /// The band (0.02 = ±2%).
    pub band: f64,
    /// The script's time per op, ns.
    pub ns: Option<f64>,
    /// The other side's, ns.
    pub other_ns: Option<f64>,
    /// The loop count of the result check.
    pub n: i64,
    /// The script's result.
    pub result: i64,
    /// The other side's.
    pub other_result: i64,
    /// Whether the results pass the checksum rule.
    pub results_equal: bool,
    /// The verdict as a sentence.
    pub explanation: String,
    /// The exit code.
    pub exit_code: u8,
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

fn read(path: &Path) -> Result<(Mode, Arc<SourceFile>), Failure> {
    let mode = mode_of(path)?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::input(format!("error: cannot read {}: {e}", path.display())))?;
    Ok((
        mode,
        Arc::new(SourceFile::new(path.display().to_string(), text)),
    ))
}

/// How to run a script: its header's `entry`, or `run` for a file without a case header.
fn entry_of(path: &Path, mode: Mode, src: &SourceFile) -> Entry {
    parse_header(path, mode, &src.text).map_or(Entry::Run, |h| h.entry)
}

fn load(
    backend: Backend,
    mode: Mode,
    src: &Arc<SourceFile>,
    jits: &mut Jits,
) -> Result<Loaded, Failure> {
    let entry = entry_of(Path::new(&src.name), mode, src);
    match backend.load_source(mode, src, entry, jits) {
        Ok((l, _)) => Ok(l),
        Err(CellError::Unavailable(why)) => Err(Failure::input(format!(
            "error: {}: cannot run on {}: {why}",
            src.name,
            backend.name()
        ))),
        Err(CellError::Failed(msg)) => Err(Failure::input(if msg.starts_with("error") {
            msg
        } else {
            format!("error: {msg}")
        })),
    }
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
    let (mode, src) = read(&args.file)?;
    let mut jits = Jits::default();
    let twin = match &args.vs {
        Some(_) => None,
        None => Some(pick_twin(args, mode, &src)?),
    };
    let script = load(args.backend, mode, &src, &mut jits)?;
    let other = match &args.vs {
        Some(p) => {
            let (m2, s2) = read(p)?;
            Some(load(args.backend, m2, &s2, &mut jits)?)
        }
        None => None,
    };
    let mut runner = script.runner().map_err(Failure::script)?;
    let result = runner.checked(args.iters).map_err(Failure::script)?;
    let mut other_runner = match &other {
        Some(l) => Some(l.runner().map_err(Failure::script)?),
        None => None,
    };
    let other_result = match (&mut other_runner, twin) {
        (Some(r), _) => r.checked(args.iters).map_err(Failure::script)?,
        (None, Some(t)) => t.run(args.iters),
        (None, None) => unreachable!("a twin is picked when there is no --vs"),
    };
    let results_equal = result == other_result;

    let mut settings = Settings {
        stop: Stop::Budget(Picos(args.time * 1e12)),
        band: args.band / 100.0,
        counters: false,
        ..Settings::default()
    };
    let (against, values) = match (other_runner, twin) {
        (Some(r), _) => {
            let mut runners = vec![
                (
                    args.vs
                        .as_ref()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default(),
                    r,
                ),
                (args.file.display().to_string(), runner),
            ];
            // FILE2 first: the job's first variant is the baseline of the ratio.
            let job = measure_pair(&mut runners, &settings)?;
            (runners[0].0.clone(), job)
        }
        (None, Some(t)) => {
            if t.threads > 1 {
                settings = matrix::settings(args.time, true, t);
                settings.band = args.band / 100.0;
            }
            let mut runners = vec![(args.file.display().to_string(), runner)];
            let v = measure_one(t, &mut runners, &settings)?;
            (format!("twin {}", t.name), v)
        }
        (None, None) => unreachable!("a twin is picked when there is no --vs"),
    };
    let (verdict, other_ns, ns) = values;
    let code = if !results_equal {
        exit::RESULT_DIFFERS
    } else {
        match verdict.verdict {
            Verdict::Equal => exit::OK,
            Verdict::Slower | Verdict::Faster => exit::DIFFERS,
            Verdict::Unresolved => exit::UNRESOLVED,
        }
    };
    let answer = CheckAnswer {
        file: args.file.display().to_string(),
        against,
        backend: args.backend,
        verdict: verdict.verdict,
        ratio: verdict.ratio.0,
        low: verdict.low.0,
        high: verdict.high.0,
        band: verdict.band,
        ns,
        other_ns,
        n: args.iters,
        result,
        other_result,
        results_equal,
        explanation: verdict.explanation.clone(),
        exit_code: code,
    };
    if args.json {
        let json = serde_json::to_string_pretty(&answer)
            .map_err(|e| Failure::input(format!("error: {e}")))?;
        println!("{json}");
    } else {
        println!("{}", line(&answer));
    }
    Ok(ExitCode::from(code))
}

/// The one line.
pub fn line(a: &CheckAnswer) -> String {
    let ns = |v: Option<f64>| v.map_or("n/a".to_string(), crate::cases::render::fmt_ns);
    let result = if a.results_equal {
        format!("results equal ({} at n = {})", a.result, a.n)
    } else {
        format!(
            "RESULTS DIFFER: {} vs {} at n = {}",
            a.result, a.other_result, a.n
        )
    };
    format!(
        "{} on {} vs {}: {}; {} vs {} ns/op; {result}",
        a.file,
        a.backend.name(),
        a.against,
        a.explanation,
        ns(a.ns),
        ns(a.other_ns)
    )
}

type Measured = (
    crate::measure::stats::verdict::RatioVerdict,
    Option<f64>,
    Option<f64>,
);

/// FILE against a twin: the twin is the baseline.
fn measure_one(
    twin: &Twin,
    runners: &mut [(String, crate::cases::Runner<'_>)],
    settings: &Settings,
) -> Result<Measured, Failure> {
    let result = matrix::run_job(Some(twin), runners, settings).map_err(Failure::script)?;
    let c = result
        .compare(0, 1)
        .map_err(|e| Failure::input(format!("error: {e}")))?;
    let ns = |i: usize| {
        result.variants[i]
            .summary
            .as_ref()
            .map(|s| s.median.nanos())
    };
    Ok((c.verdict, ns(0), ns(1)))
}

/// FILE against FILE2: FILE2 is the baseline.
fn measure_pair(
    runners: &mut [(String, crate::cases::Runner<'_>)],
    settings: &Settings,
) -> Result<Measured, Failure> {
    let result = matrix::run_job(None, runners, settings).map_err(Failure::script)?;
    let c = result
        .compare(0, 1)
        .map_err(|e| Failure::input(format!("error: {e}")))?;
    let ns = |i: usize| {
        result.variants[i]
            .summary
            .as_ref()
            .map(|s| s.median.nanos())
    };
    Ok((c.verdict, ns(0), ns(1)))
}
