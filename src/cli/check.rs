//! `hotlab check`: is this 1.0x? One script against its native twin or a second snippet,
//! measured interleaved, answered in one line with the ratio, its CI, the verdict and the
//! result check.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use super::Failure;
use crate::cases::check::{Against, CheckAnswer, CheckOptions, Script, line};
use crate::cases::shape;
use crate::cases::spec::parse_header;
use crate::cases::{Backend, Mode, Twin, twin_named, twins};
use crate::frontend::baseline::{self, Show};
use crate::frontend::{exit, use_color};
use crate::lang::SourceFile;

const CHECK_HELP: &str = "\
The answer is one line: the ratio FILE / twin (or FILE / FILE2) with its 95% CI, the verdict and
the result check; on a terminal, a histogram of the rounds' ratios against the band follows.
`equal` means the CI lies inside the band; `slower`/`faster` that it excludes 1.0; `unresolved`
that the data cannot tell (the line says how much longer to run).
Exit codes: 0 equal, 3 slower, 8 faster, 4 unresolved, 5 the results differ (the script's
checksum is not its twin's), 1 a script raised an error, 2 bad input (file, header, option,
shape), 6 crashed, 7 timed out, 130 interrupted. With --json every outcome, errors included, is
one JSON document on stdout.
Ctrl-C while it measures stops it and prints the verdict on the rounds so far, marked partial
(`stopped after N rounds (T of S s): a partial answer`; --json: `partial`, `stopped`), exit 130.
Shapes: `fn run(n: i64) -> i64`; a `class C : Bench` (hotlab makes `let target = new C()` when
the file has none); a `class C : Hook` (the host loops `call`); a .clif `function %run`.
A FILE names its twin in its case header (`//# twin = \"int_loop\"`: the only key needed), or
use --twin. --layouts K measures the code at K placements and widens the CI by their spread.
See docs/cli.md, docs/cases.md and docs/measurement.md.";

/// Options of `hotlab check`.
#[derive(Debug, Args)]
#[command(after_help = CHECK_HELP)]
pub struct CheckArgs {
    /// The script: a case or any .hot/.clif file of one of the shapes below (`fn run(n: i64)
    /// -> i64`, a `Bench` or `Hook` class, or a .clif `function %run(i64, i64) -> i64
    /// system_v` taking ctx and n).
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
    /// Measure the script's code at K placements (offsets within a cache line and a page),
    /// interleaved; the CI then also covers the spread between placements (`jit` and
    /// `jit-opt`; other backends place code once). See docs/measurement.md.
    #[arg(long, default_value_t = 1, value_name = "K", value_parser = clap::value_parser!(u16).range(1..=16))]
    pub layouts: u16,
    /// Print the answer as one JSON document on stdout, for every outcome (an error is
    /// `{"error": {"kind", "message", "location", "exit_code"}}`).
    #[arg(long)]
    pub json: bool,
    /// Stop after this many seconds (default 3 x --time + 30): `did not finish within S s`,
    /// exit code 7. The check runs in a worker process: a crash there is exit code 6.
    #[arg(long, value_name = "S")]
    pub limit: Option<f64>,
    /// Saved baselines.
    #[command(flatten)]
    pub baselines: crate::frontend::baseline::BaselineArgs,
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
    let text = crate::lang::span::read_source(path)
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

/// `hotlab check`: with `--json`, a failure is printed as its JSON document on stdout (and the
/// exit code is still the failure's).
pub fn check(args: &CheckArgs) -> Result<ExitCode, Failure> {
    match answer(args) {
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

/// The fields of `check --json`: units in the names (`time_ns`, `band_pct`, the ratio's
/// `ratio_low`/`ratio_high`), 64-bit results also as strings (`result_str`), since common JSON
/// tools read numbers as doubles and lose digits above 2^53; `partial` and `stopped` (rounds,
/// `elapsed_s`, `time_s`) when Ctrl-C stopped the measurement.
pub fn answer_json(a: &CheckAnswer) -> serde_json::Value {
    serde_json::json!({
        "kind": "check",
        "file": a.file,
        "against": a.against,
        "backend": a.backend,
        "verdict": a.verdict,
        "ratio": a.ratio,
        "ratio_low": a.low,
        "ratio_high": a.high,
        "band_pct": a.band * 100.0,
        "time_ns": a.ns,
        "other_time_ns": a.other_ns,
        "cycles": a.cycles,
        "other_cycles": a.other_cycles,
        "instructions": a.instructions,
        "other_instructions": a.other_instructions,
        "n": a.n,
        "result": a.result,
        "result_str": a.result.to_string(),
        "other_result": a.other_result,
        "other_result_str": a.other_result.to_string(),
        "results_equal": a.results_equal,
        "rounds": a.round_ratios.len(),
        "layouts": a.layouts,
        "layout_spread": a.layout_spread,
        "layout_ratios": a.layout_ratios,
        "explanation": a.explanation,
        "partial": a.stopped.is_some(),
        "stopped": a.stopped.map(|st| serde_json::json!({
            "rounds": st.rounds,
            "elapsed_s": st.elapsed_s,
            "time_s": st.time_s,
        })),
        "exit_code": a.exit_code,
    })
}

fn answer(args: &CheckArgs) -> Result<ExitCode, Failure> {
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
    // The shapes are found again in the worker; here an unmeasurable file stops before it
    // starts one, with the list of the shapes there are.
    shape::prepare(script.mode, &script.source).map_err(|e| Failure::input(e.to_string()))?;
    if let Against::Script(s) = &against {
        shape::prepare(s.mode, &s.source).map_err(|e| Failure::input(e.to_string()))?;
    }
    let options = CheckOptions {
        backend: args.backend,
        band: args.band / 100.0,
        time: args.time,
        iters: args.iters,
        layouts: usize::from(args.layouts),
    };
    baseline::precheck(&args.baselines)?;
    let progress = std::io::stderr().is_terminal();
    let answer =
        super::check_in_worker(&script, &against, &options, args.limit, args.json, progress)?;
    let mut doc = answer_json(&answer);
    if !args.json {
        let tty = std::io::stdout().is_terminal();
        println!("{}", colored_line(&answer, use_color(tty)));
        if tty {
            print!(
                "{}",
                histogram(&answer.round_ratios, answer.band, use_color(tty))
            );
        }
    }
    let show = if args.json { Show::No } else { Show::Stdout };
    let mut baselines = args.baselines.clone();
    if answer.stopped.is_some()
        && let Some(name) = baselines.save_baseline.take()
    {
        // A baseline is a whole run: a stopped one would make the next comparison lie.
        eprintln!("note: not saved as baseline {name}: the run was stopped before its time");
    }
    let compared = baseline::after_run(&baselines, &doc, show)?;
    if let (Some(c), Some(map)) = (&compared, doc.as_object_mut()) {
        map.insert("baseline".into(), crate::export::compare::to_json(c));
    }
    if args.json {
        let json = serde_json::to_string_pretty(&doc)
            .map_err(|e| Failure::input(format!("error: {e}")))?;
        println!("{json}");
    }
    // The answer's own code first; an `equal` that got slower than the baseline is 3.
    let code = match compared {
        Some(c) if answer.exit_code == exit::OK && c.slower() => exit::SLOWER,
        _ => answer.exit_code,
    };
    Ok(ExitCode::from(code))
}

/// The answer's line, its verdict coloured (green equal, red slower or results differ, cyan
/// faster, yellow unresolved) when `color`.
fn colored_line(a: &CheckAnswer, color: bool) -> String {
    let text = line(a);
    if !color {
        return text;
    }
    let paint = if !a.results_equal {
        crate::export::DIFFERS_PAINT
    } else {
        crate::export::verdict_paint(&a.verdict.to_string()).unwrap_or("0")
    };
    match text.find(&a.explanation) {
        Some(at) if !a.explanation.is_empty() => {
            let end = at + a.explanation.len();
            format!(
                "{}\x1b[{paint}m{}\x1b[0m{}",
                &text[..at],
                &text[at..end],
                &text[end..]
            )
        }
        _ => format!("\x1b[{paint}m{text}\x1b[0m"),
    }
}

/// The rounds' ratios as a small text histogram: one line per bin from the smallest to the
/// largest ratio (the band's edges included), `|` marking the bins inside the band, `1.0`
/// the bin holding 1.0. Empty when there are no rounds.
pub fn histogram(ratios: &[f64], band: f64, color: bool) -> String {
    let finite: Vec<f64> = ratios
        .iter()
        .copied()
        .filter(|r| r.is_finite() && *r > 0.0)
        .collect();
    if finite.is_empty() {
        return String::new();
    }
    let (lo_band, hi_band) = (1.0 / (1.0 + band), 1.0 + band);
    // Bins in log space, so that 0.5x and 2x are as far from 1.0.
    let min = finite.iter().copied().fold(lo_band, f64::min).ln();
    let max = finite.iter().copied().fold(hi_band, f64::max).ln();
    const BINS: usize = 12;
    let width = (max - min) / BINS as f64;
    let mut counts = [0usize; BINS];
    for r in &finite {
        let k = (((r.ln() - min) / width) as usize).min(BINS - 1);
        counts[k] += 1;
    }
    let most = counts.iter().copied().max().unwrap_or(1).max(1);
    let mut out = format!(
        "rounds' ratios ({} rounds; `|` = inside the band ±{:.0}%):\n",
        finite.len(),
        band * 100.0
    );
    for (k, &count) in counts.iter().enumerate() {
        let (a, b) = (
            (min + width * k as f64).exp(),
            (min + width * (k + 1) as f64).exp(),
        );
        let inside = a >= lo_band * 0.999_999 && b <= hi_band * 1.000_001;
        let one = if a <= 1.0 && 1.0 < b { " 1.0" } else { "" };
        let bar = "#".repeat((count * 40).div_ceil(most));
        let bar = if color && !bar.is_empty() {
            let paint = if inside { "32" } else { "33" };
            format!("\x1b[{paint}m{bar}\x1b[0m")
        } else {
            bar
        };
        out.push_str(&format!(
            "  {a:.4}x {} {bar} {count}{one}\n",
            if inside { '|' } else { ' ' }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_marks_the_band_and_counts_every_round() {
        let ratios = [0.99, 1.0, 1.0, 1.01, 1.05, 1.3];
        let h = histogram(&ratios, 0.02, false);
        let lines: Vec<&str> = h.lines().collect();
        assert!(lines[0].starts_with("rounds' ratios (6 rounds;"), "{h}");
        assert_eq!(lines.len(), 13, "{h}");
        let counts: usize = lines[1..]
            .iter()
            .map(|l| {
                let l = l.trim_end_matches(" 1.0");
                l.rsplit(' ').next().unwrap().parse::<usize>().unwrap()
            })
            .sum();
        assert_eq!(counts, 6, "{h}");
        assert!(
            lines
                .iter()
                .any(|l| l.contains(" | ") && l.ends_with(" 1.0")),
            "{h}"
        );
        // 1.3x is outside the ±2% band: its bin has no `|`.
        let last = lines.last().unwrap();
        assert!(last.ends_with("# 1") && !last.contains('|'), "{h}");
        assert_eq!(histogram(&[], 0.02, false), "");
    }
}
