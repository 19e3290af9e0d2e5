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
use --twin. --layouts K measures the code at K placements (the script's, and the twin's or
FILE2's) and widens the CI by their spread.
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
    /// interleaved, and the twin's too (copies of its machine code); the CI then also covers
    /// the spread between placements (`jit` and `jit-opt`; other backends place code once).
    /// See docs/measurement.md.
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
        "other_layouts": a.other_layouts,
        "other_unplaced": a.other_unplaced,
        "layout_spread": a.layout_spread,
        "layout_ratios": a.layout_ratios,
        "layout_ns": a.layout_ns,
        "other_layout_ns": a.other_layout_ns,
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

/// The rounds' ratios as a small text histogram on a log axis that always holds the band:
/// the band's own bins (`|`, their edges the band's edges), and bins either side out to the
/// 2nd and 98th percentile of the rounds, so that a few wild rounds (a 0.003x or a 143x) do not
/// stretch the axis; rounds beyond it are counted on a `below` and an `above` line with the
/// extreme they reach. `1.0` marks the bin holding 1.0. Empty when there are no rounds.
pub fn histogram(ratios: &[f64], band: f64, color: bool) -> String {
    let mut finite: Vec<f64> = ratios
        .iter()
        .copied()
        .filter(|r| r.is_finite() && *r > 0.0)
        .collect();
    if finite.is_empty() {
        return String::new();
    }
    finite.sort_by(f64::total_cmp);
    let n = finite.len();
    let (lo_band, hi_band) = (1.0 / (1.0 + band), 1.0 + band);
    // Nearest-rank percentiles: with few rounds they are the extremes themselves.
    let rank = |q: f64| finite[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    let (axis_lo, axis_hi) = (rank(0.02).min(lo_band), rank(0.98).max(hi_band));
    // Edges in log space: the band in `IN` bins, each side in as many bins of the band's width
    // as it takes, at most `SIDE` (then wider ones).
    const IN: usize = 4;
    const SIDE: usize = 5;
    let (l_lo, l_in_lo, l_in_hi, l_hi) = (axis_lo.ln(), lo_band.ln(), hi_band.ln(), axis_hi.ln());
    let step = (l_in_hi - l_in_lo) / IN as f64;
    let side = |span: f64| {
        if span <= step * 1e-6 {
            0
        } else {
            ((span / step).ceil() as usize).clamp(1, SIDE)
        }
    };
    let (below, above) = (side(l_in_lo - l_lo), side(l_hi - l_in_hi));
    let mut edges: Vec<f64> = Vec::new();
    for k in 0..below {
        edges.push(l_lo + (l_in_lo - l_lo) * k as f64 / below as f64);
    }
    for k in 0..IN {
        edges.push(l_in_lo + step * k as f64);
    }
    for k in 0..=above {
        edges.push(l_in_hi + (l_hi - l_in_hi) * k as f64 / above.max(1) as f64);
    }
    if above == 0 {
        edges.truncate(below + IN + 1);
    }
    let edges: Vec<f64> = edges.into_iter().map(f64::exp).collect();
    let bins = edges.len() - 1;
    let mut counts = vec![0usize; bins];
    let (mut under, mut over) = (0usize, 0usize);
    for &r in &finite {
        if r < edges[0] {
            under += 1;
        } else if r > edges[bins] {
            over += 1;
        } else {
            // The last bin holds its upper edge too.
            let k = edges[1..].partition_point(|e| *e <= r).min(bins - 1);
            counts[k] += 1;
        }
    }
    let most = counts
        .iter()
        .copied()
        .chain([under, over])
        .max()
        .unwrap_or(1)
        .max(1);
    let paint = |bar: String, inside: bool| {
        if color && !bar.is_empty() {
            format!("\x1b[{}m{bar}\x1b[0m", if inside { "32" } else { "33" })
        } else {
            bar
        }
    };
    let bar = |count: usize| "#".repeat((count * 40).div_ceil(most));
    let mut out = format!(
        "rounds' ratios ({n} rounds; `|` = inside the band ±{:.0}%, {lo_band:.4}x to \
         {hi_band:.4}x):\n",
        band * 100.0
    );
    if under > 0 {
        out.push_str(&format!(
            "  below   {:.4}x   {} {under} (down to {:.4}x)\n",
            edges[0],
            paint(bar(under), false),
            finite[0]
        ));
    }
    for (k, &count) in counts.iter().enumerate() {
        let (a, b) = (edges[k], edges[k + 1]);
        let inside = k >= below && k < below + IN;
        let one = if a <= 1.0 && 1.0 < b { " 1.0" } else { "" };
        out.push_str(&format!(
            "  {a:.4}x-{b:.4}x {} {} {count}{one}\n",
            if inside { '|' } else { ' ' },
            paint(bar(count), inside)
        ));
    }
    if over > 0 {
        out.push_str(&format!(
            "  above   {:.4}x   {} {over} (up to {:.4}x)\n",
            edges[bins],
            paint(bar(over), false),
            finite[n - 1]
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The count at the end of a histogram line (before a ` 1.0` mark or a `(...)` note).
    fn count_of(line: &str) -> usize {
        let line = line.split(" (").next().unwrap().trim_end_matches(" 1.0");
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }

    #[test]
    fn the_histogram_marks_the_band_and_counts_every_round() {
        let ratios = [0.99, 1.0, 1.0, 1.01, 1.05, 1.3];
        let h = histogram(&ratios, 0.02, false);
        let lines: Vec<&str> = h.lines().collect();
        assert!(lines[0].starts_with("rounds' ratios (6 rounds;"), "{h}");
        // The band's edges are said, and are bin edges.
        assert!(lines[0].contains("0.9804x to 1.0200x"), "{h}");
        assert!(lines.iter().any(|l| l.contains("0.9804x-")), "{h}");
        assert!(lines.iter().any(|l| l.contains("-1.0200x |")), "{h}");
        assert_eq!(lines.iter().filter(|l| l.contains(" | ")).count(), 4, "{h}");
        assert_eq!(
            lines[1..].iter().map(|l| count_of(l)).sum::<usize>(),
            6,
            "{h}"
        );
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

    #[test]
    fn wild_rounds_do_not_stretch_the_axis() {
        // 200 rounds near 1.0, and two wild ones either side.
        let mut ratios: Vec<f64> = (0..200).map(|i| 0.97 + 0.0003 * i as f64).collect();
        ratios.extend([0.003, 0.004, 143.0, 150.0]);
        let h = histogram(&ratios, 0.02, false);
        let lines: Vec<&str> = h.lines().collect();
        let below = lines.iter().find(|l| l.contains("below")).expect(&h);
        let above = lines.iter().find(|l| l.contains("above")).expect(&h);
        // The wild ones and at most the 2% of rounds past each percentile.
        for l in [below, above] {
            assert!((2..=5).contains(&count_of(l)), "{h}");
        }
        assert!(
            below.contains("down to 0.0030x") && above.contains("up to 150.0000x"),
            "{h}"
        );
        // No bin reaches past the bulk of the rounds.
        for l in &lines[1..] {
            if let Some((range, _)) = l.trim().split_once("x ")
                && let Some((a, b)) = range.split_once("x-")
            {
                let (a, b): (f64, f64) = (a.parse().unwrap(), b.parse().unwrap());
                assert!(a > 0.9 && b < 1.1, "{l}\n{h}");
            }
        }
        assert_eq!(
            lines[1..].iter().map(|l| count_of(l)).sum::<usize>(),
            204,
            "{h}"
        );
        assert_eq!(lines.iter().filter(|l| l.contains(" | ")).count(), 4, "{h}");
    }
}
