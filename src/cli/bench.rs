//! `hotlab bench`: every case on every backend beside its native twin (see docs/cases.md).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use clap::{Args, ValueEnum};

use super::{Failure, WorkerRun, exit, worker_answer, worker_failure};
use crate::cases::matrix::MatrixOptions;
use crate::cases::spec::{default_dir, load_dir};
use crate::cases::{Backend, CaseEntry, Mode, twins};
use crate::export::write_whole;
use crate::results::{JobReport, LiveSnapshot};
use crate::worker::WorkerError;
use crate::worker::protocol::{CrashedCell, WorkerJob};

/// `--backend`: every backend, or one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackendChoice(pub Option<Backend>);

impl BackendChoice {
    /// The backends chosen.
    pub fn backends(self) -> Vec<Backend> {
        match self.0 {
            None => Backend::ALL.to_vec(),
            Some(b) => vec![b],
        }
    }
}

impl ValueEnum for BackendChoice {
    fn value_variants<'a>() -> &'a [Self] {
        const CHOICES: [BackendChoice; 5] = [
            BackendChoice(None),
            BackendChoice(Some(Backend::ALL[0])),
            BackendChoice(Some(Backend::ALL[1])),
            BackendChoice(Some(Backend::ALL[2])),
            BackendChoice(Some(Backend::ALL[3])),
        ];
        &CHOICES
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        match self.0 {
            None => Some(clap::builder::PossibleValue::new("all").help("Every backend")),
            Some(b) => b.to_possible_value(),
        }
    }
}

const BENCH_HELP: &str = "\
Each cell: time per op in ns and, in parentheses, the ratio to the native twin. `!` marks a
script whose result differs from its twin's, `n/a` a cell with no value (reason under the table),
`-` a native-only row, `error` a script that failed (message on stderr).
Exit codes: 0 every result matched its twin, 5 a result differs (`!`), 1 a script failed to load
or run, 2 bad input (a bad case file or option), 3 a row got slower than --baseline NAME.
--csv and --json write numeric records (units in the column names), --markdown the page for
people. With defaults the whole matrix takes about a minute. See docs/cases.md, docs/results.md.";

/// Options of `hotlab bench`.
#[derive(Debug, Args)]
#[command(after_help = BENCH_HELP)]
pub struct BenchArgs {
    /// The backends to run.
    #[arg(long, value_enum, default_value_t = BackendChoice(None))]
    pub backend: BackendChoice,
    /// Run only the cases whose name, title or group contains this text (`--filter programs`:
    /// the program suite in cases/programs/).
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// Timed runs of each cell; the cell shows the median.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub reps: u32,
    /// Loop count of the checked run that compares each script's result with its twin's
    /// (timed runs size their own loop counts).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(i64).range(0..=1_000_000_000))]
    pub iters: i64,
    /// Seconds of one timed run (calibration, warm-up and collection).
    #[arg(long, default_value_t = 0.25, value_name = "S")]
    pub time: f64,
    /// The largest N of the call-after-N-reloads chain (0, 1, 10, 100, ... up to N). The
    /// reload rows run with no --filter, or with one they match (`--filter reload`).
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub reloads: u64,
    /// Also write the cells as CSV records: one row per backend, case and mode, one value per
    /// column, units in the names (`time_ns`, `ratio`). `-`: only the CSV, on stdout.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Also write the run as one JSON document: the same records, the load times (`*_us`) and
    /// the reload rows. `-`: only the JSON, on stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the results page as Markdown, for people. `-`: only the Markdown, on stdout.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Skip the load section (compile and load times).
    #[arg(long)]
    pub no_load: bool,
    /// Print the backends and the cases, with their files and twins, and exit.
    #[arg(long)]
    pub list: bool,
    /// The cases directory (default: ./cases, else the one hotlab was built with).
    #[arg(long, value_name = "DIR")]
    pub cases: Option<PathBuf>,
    /// Stop when one cell runs longer than this many seconds (default 4 x --reps x --time +
    /// 30): `did not finish within S s` naming the cell, exit code 7. The matrix runs in a
    /// worker process: a case that crashes it is exit code 6, naming the cell.
    #[arg(long, value_name = "S")]
    pub limit: Option<f64>,
    /// Saved baselines.
    #[command(flatten)]
    pub baselines: crate::frontend::baseline::BaselineArgs,
}

/// The script cell a bench progress phase (`DONE/TOTAL CASE (BACKEND)`) names.
fn crashed_cell(phase: &str) -> Option<(String, Backend)> {
    let (_, cell) = phase.split_once(' ')?;
    let (case, backend) = cell.strip_suffix(')')?.rsplit_once(" (")?;
    Some((case.to_string(), Backend::from_name(backend)?))
}

/// The default `--limit` of `bench`, per cell, in seconds.
fn cell_limit_s(reps: u32, time: f64) -> f64 {
    4.0 * f64::from(reps) * time + 30.0
}

fn list(cases: &[crate::cases::Case]) -> String {
    let mut s = String::from("backends:\n");
    for b in Backend::ALL {
        let note = b
            .unavailable(Mode::Hot)
            .map_or(String::new(), |w| format!(" (n/a: {w})"));
        s.push_str(&format!("  {:<8} {}{note}\n", b.name(), b.describe()));
    }
    s.push_str("cases:\n");
    for c in cases {
        let files: Vec<String> = c
            .scripts
            .iter()
            .map(|f| f.path.display().to_string())
            .collect();
        let files = if files.is_empty() {
            "native only".to_string()
        } else {
            files.join(" ")
        };
        let entry = match c.header.entry {
            CaseEntry::Run => String::new(),
            e => format!("; entry {}", e.name()),
        };
        s.push_str(&format!(
            "  {:<16} {}  [twin {}; unit: {}{entry}]  {files}\n",
            c.name, c.header.title, c.header.twin.name, c.header.unit
        ));
    }
    s.push_str("twins:\n");
    for t in twins() {
        s.push_str(&format!("  {:<16} {}\n", t.name, t.doc));
    }
    s
}

/// `hotlab bench`.
pub fn bench(args: &BenchArgs) -> Result<ExitCode, Failure> {
    if !(args.time > 0.0 && args.time <= 60.0) {
        return Err(Failure::input(format!(
            "error: --time {} is out of range: give seconds in (0, 60], e.g. --time 0.25",
            args.time
        )));
    }
    let dir = default_dir(args.cases.as_deref());
    let cases = load_dir(&dir).map_err(|e| Failure::input(format!("error: {e}")))?;
    if args.list {
        print!("{}", list(&cases));
        return Ok(ExitCode::from(exit::OK));
    }
    let opts = MatrixOptions {
        backends: args.backend.backends(),
        filter: args.filter.clone(),
        reps: args.reps as usize,
        iters: args.iters,
        time: args.time,
        reloads: args.reloads,
        load: !args.no_load,
        pin: true,
        crashed: Vec::new(),
    };
    if !cases.iter().any(|c| opts.selects(c)) && !opts.selects_reloads() {
        return Err(Failure::input(format!(
            "error: no case in {} matches --filter {:?} (see `hotlab bench --list`; \
             `--filter reload` runs the reload rows)",
            dir.display(),
            args.filter.as_deref().unwrap_or("")
        )));
    }
    let dash = |p: &Option<PathBuf>| p.as_deref() == Some(std::path::Path::new("-"));
    let to_stdout = [&args.csv, &args.json, &args.markdown]
        .iter()
        .filter(|p| dash(p))
        .count();
    if to_stdout > 1 {
        return Err(Failure::input(
            "error: only one of --csv, --json and --markdown can be `-` (stdout)",
        ));
    }
    let document = to_stdout == 1;
    crate::frontend::baseline::precheck(&args.baselines)?;
    let limit = match args.limit {
        Some(secs) => super::limit_of(secs)?,
        None => std::time::Duration::from_secs_f64(cell_limit_s(args.reps, args.time)),
    };
    let job = |crashed: &[CrashedCell]| WorkerJob::Matrix {
        backends: opts.backends.clone(),
        filter: opts.filter.clone(),
        reps: opts.reps,
        iters: opts.iters,
        time_s: opts.time,
        reloads: opts.reloads,
        load: opts.load,
        cases: Some(dir.clone()),
        crashed: crashed.to_vec(),
    };
    // One step per cell, on stderr while a terminal is there to see it.
    let tty = std::io::stderr().is_terminal();
    let progress = tty.then(|| {
        let bar = indicatif::ProgressBar::new(0);
        let style = indicatif::ProgressStyle::with_template(
            "bench [{bar:30}] {pos}/{len} {msg} ({elapsed})",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("#>.");
        bar.set_style(style);
        bar
    });
    let mut bar = |p: &LiveSnapshot| {
        if let Some(bar) = &progress {
            let what = p.phase.split_once(' ').map_or("", |(_, w)| w);
            bar.set_length(p.iters);
            bar.set_position(p.rounds);
            bar.set_message(what.to_string());
        }
    };
    let how = WorkerRun {
        what: "bench",
        limit,
        per_progress: true,
        cpu: super::measuring_cpu(None),
        printed_to_stderr: document,
    };
    // A cell that crashes the worker is marked crashed and the matrix runs again in a fresh
    // worker without it (at most once per cell), so one bad case does not lose the others.
    let mut crashed: Vec<CrashedCell> = Vec::new();
    let answer = loop {
        let (answer, phase) =
            worker_answer(job(&crashed), &how, &AtomicBool::new(false), &mut bar)?;
        match answer {
            Err(WorkerError::Crashed {
                signal, why, at, ..
            }) if crashed.len() < cases.len() * opts.backends.len() => {
                let Some((case, backend)) = crashed_cell(&phase) else {
                    break Err(worker_failure(
                        WorkerError::Crashed {
                            signal,
                            why,
                            at,
                            stderr: String::new(),
                        },
                        &how,
                        &phase,
                    ));
                };
                if crashed
                    .iter()
                    .any(|c| c.case == case && c.backend == backend)
                {
                    // Crashed again where it was marked: not the cell's doing.
                    break Err(worker_failure(
                        WorkerError::Crashed {
                            signal,
                            why,
                            at,
                            stderr: String::new(),
                        },
                        &how,
                        &phase,
                    ));
                }
                crashed.push(CrashedCell {
                    case,
                    backend,
                    signal: format!("{signal} ({why}){}", crate::worker::client::crash_site(&at)),
                });
            }
            other => break other.map_err(|e| worker_failure(e, &how, &phase)),
        }
    };
    if let Some(bar) = &progress {
        bar.finish_and_clear();
    }
    let m = match answer? {
        JobReport::Bench(m) => m,
        other => {
            return Err(Failure::input(format!(
                "error: the worker answered bench with {other:?} (a bug in hotlab)"
            )));
        }
    };
    // With an export on stdout, stdout holds that export only.
    if !document {
        print!("{}", m.text);
    }
    for e in &m.errors {
        eprintln!("error: {e}");
    }
    let write = |path: &PathBuf, bytes: &[u8]| {
        write_whole(path, bytes)
            .map_err(|e| Failure::input(format!("error: cannot write {}: {e}", path.display())))
    };
    let records = crate::export::records::bench_records(&m.json);
    if let Some(p) = &args.csv {
        write(p, records.to_csv().as_bytes())?;
    }
    if let Some(p) = &args.markdown {
        write(p, m.markdown.as_bytes())?;
    }
    let doc = records.to_json();
    if let Some(p) = &args.json {
        let json = serde_json::to_string_pretty(&doc)
            .map_err(|e| Failure::input(format!("error: {e}")))?;
        write(p, (json + "\n").as_bytes())?;
    }
    let show = if document {
        crate::frontend::baseline::Show::Stderr
    } else {
        crate::frontend::baseline::Show::Stdout
    };
    let compared = crate::frontend::baseline::after_run(&args.baselines, &doc, show)?;
    Ok(ExitCode::from(if !crashed.is_empty() {
        exit::CRASHED
    } else if m.mismatched {
        exit::RESULT_DIFFERS
    } else if m.failed {
        exit::SCRIPT_ERROR
    } else if compared.is_some_and(|c| c.slower()) {
        exit::SLOWER
    } else {
        exit::OK
    }))
}
