//! `hotlab ladder`: build a ladder's rows (jit, aot or both), measure them interleaved in one
//! job, print the table. Also what `hotlab` with no arguments runs.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, ValueEnum};

use super::snippet::{SnippetFile, load_snippet};
use super::{Failure, WorkerRun, exit, in_worker};
use crate::export::{self, Format};
use crate::ladder::bench::{Build, DEFAULT_SNIPPET};
use crate::ladder::code::StepCode;
use crate::lang::{self, SourceFile};
use crate::results::{JobReport, LiveSnapshot};
use crate::worker::protocol::{MeasureSettings, SnippetSource, WorkerJob};

/// Which builds to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum BuildArg {
    /// The call path as Cranelift IR around the snippet.
    Jit,
    /// The call path compiled by rustc (the runtime's `CallPath` wrappers).
    Aot,
    /// Both, side by side, in one job.
    #[default]
    Both,
}

impl BuildArg {
    /// The builds this stands for.
    pub fn builds(self) -> Vec<Build> {
        match self {
            BuildArg::Jit => vec![Build::Jit],
            BuildArg::Aot => vec![Build::Aot],
            BuildArg::Both => vec![Build::Jit, Build::Aot],
        }
    }
}

/// `hotlab ladder`'s output formats: the exports, and a picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum LadderFormat {
    /// Aligned text for a terminal, its verdicts coloured as `check`'s line (--color).
    #[default]
    Table,
    /// A GitHub-flavoured Markdown table.
    Markdown,
    /// Numeric records as CSV: one row per rung, one value per column, units in the column
    /// names (`total_ns`, `adds_ns`, `ratio_low`).
    Csv,
    /// The same records as one JSON document (`kind`, `ladder`, `band_pct`, `columns`, `rows`).
    Json,
    /// The report's own JSON form, every field as the TUI reads it (`hotlab tui` and the SVG
    /// are drawn from it).
    Report,
    /// An SVG waterfall of what each rung adds (with its CI), jit beside aot.
    Svg,
}

impl LadderFormat {
    /// The export format, or `None` for the picture.
    fn export(self) -> Option<Format> {
        match self {
            LadderFormat::Table => Some(Format::Table),
            LadderFormat::Markdown => Some(Format::Markdown),
            LadderFormat::Csv => Some(Format::Csv),
            LadderFormat::Json => Some(Format::Json),
            LadderFormat::Report | LadderFormat::Svg => None,
        }
    }
}

/// Options of `hotlab ladder`.
#[derive(Debug, Args)]
pub struct LadderArgs {
    /// A shipped ladder (host_call, fused, direct, runtime, new) or a ladder .toml file (see docs/ladder.md).
    #[arg(long, value_name = "NAME|FILE", default_value = "host_call")]
    pub ladder: String,
    /// The method called: a .hot file with `fn call() -> i64` (default: `return 1`). A method
    /// that does more than return a literal is measured as its own `method body` row, which
    /// the rungs are measured from.
    #[arg(long, value_name = "FILE")]
    pub snippet: Option<PathBuf>,
    /// Which builds of the call path to measure.
    #[arg(long, value_enum, default_value_t = BuildArg::Both)]
    pub build: BuildArg,
    /// Time budget for the whole measurement, in seconds.
    #[arg(long, value_name = "S", default_value_t = 3.0)]
    pub time: f64,
    /// Pin the measuring thread to this CPU (default: one chosen for quiet).
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,
    /// Output format: the export formats, or `svg`, a waterfall of what each rung adds with
    /// its CI, jit beside aot (a picture for a slide; use with --output FILE).
    #[arg(long, value_enum, default_value_t = LadderFormat::Table)]
    pub format: LadderFormat,
    /// Equivalence band of the `vs native` verdict, in percent.
    #[arg(long, value_name = "PCT", default_value_t = 2.0)]
    pub band: f64,
    /// Write the output to this file (whole, atomically) instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Stop after this many seconds (default 3 x --time + 30): `did not finish within S s`,
    /// exit code 7. The ladder runs in a worker process: a crash there is exit code 6.
    #[arg(long, value_name = "S")]
    pub limit: Option<f64>,
    /// Saved baselines.
    #[command(flatten)]
    pub baselines: crate::frontend::baseline::BaselineArgs,
}

impl Default for LadderArgs {
    /// What `hotlab` with no arguments runs.
    fn default() -> Self {
        LadderArgs {
            ladder: "host_call".into(),
            snippet: None,
            build: BuildArg::Both,
            time: 3.0,
            cpu: None,
            format: LadderFormat::Table,
            band: 2.0,
            output: None,
            limit: None,
            baselines: Default::default(),
        }
    }
}

/// Parse a ladder (`NAME|FILE`) into a `Failure` naming file, line and key on error.
pub fn resolve_ladder(name: &str) -> Result<crate::ladder::Ladder, Failure> {
    crate::ladder::resolve(name).map_err(|e| Failure::input(format!("error: {e}")))
}

/// Compile the snippet option (or the default) into a checked program.
pub fn snippet_program(path: Option<&PathBuf>) -> Result<lang::Program, Failure> {
    match path {
        None => lang::compile(Arc::new(SourceFile::new(
            "<default snippet>",
            DEFAULT_SNIPPET,
        )))
        .map_err(|_| Failure::input("error: the default snippet does not compile")),
        Some(p) => match load_snippet(p)? {
            SnippetFile::Hot { program, .. } => Ok(program),
            SnippetFile::Clif { .. } => Err(Failure::input(format!(
                "error: {}: a ladder's method must be a .hot snippet with `fn call() -> i64` \
                 (.clif code has no method ABI)",
                p.display()
            ))),
        },
    }
}

/// Each step's call-path code of one build of a ladder around the snippet option (or the
/// default), built in a worker process (building a step runs the snippet's initializers).
fn ladder_step_code(
    ladder: &str,
    snippet: Option<&PathBuf>,
    build: Build,
    att: bool,
    limit: std::time::Duration,
) -> Result<Vec<StepCode>, Failure> {
    let ladder = resolve_ladder(ladder)?;
    let program = snippet_program(snippet)?;
    let where_ = snippet
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "<default snippet>".into());
    let snippet = snippet.map(|_| SnippetSource {
        name: program.source.name.clone(),
        text: program.source.text.clone(),
    });
    let job = WorkerJob::LadderAsm {
        ladder,
        snippet,
        build,
        att,
    };
    let how = WorkerRun {
        what: &where_,
        limit,
        per_progress: false,
        cpu: None,
        printed_to_stderr: false,
    };
    match in_worker(job, &how, &mut |_| {})? {
        JobReport::LadderCode { steps } => Ok(steps),
        other => Err(Failure::input(format!(
            "error: the worker answered a ladder's code with {other:?} (a bug in hotlab)"
        ))),
    }
}

/// `hotlab ladder`.
pub fn ladder(args: &LadderArgs) -> Result<ExitCode, Failure> {
    if !(args.time > 0.0 && args.time.is_finite()) {
        return Err(Failure::input(
            "error: --time must be a positive number of seconds",
        ));
    }
    if !(args.band > 0.0 && args.band < 100.0) {
        return Err(Failure::input(
            "error: --band must be a percentage in (0, 100), e.g. 2",
        ));
    }
    let limit = match args.limit {
        Some(s) => super::limit_of(s)?,
        None => std::time::Duration::from_secs_f64(super::measuring_limit_s(args.time)),
    };
    crate::frontend::baseline::precheck(&args.baselines)?;
    let ladder = resolve_ladder(&args.ladder)?;
    // Checked here for its diagnostics; built, run and measured in the worker.
    let program = snippet_program(args.snippet.as_ref())?;
    let where_ = args
        .snippet
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "<default snippet>".into());
    if args.snippet.is_some() && program.function_named("call").is_none() {
        // The worker would measure the default method instead: a command line asks for this one.
        return Err(Failure::input(format!(
            "error: {where_}: the snippet has no `fn call() -> i64` for the ladder to call"
        )));
    }
    let snippet = args.snippet.as_ref().map(|_| SnippetSource {
        name: program.source.name.clone(),
        text: program.source.text.clone(),
    });
    let job = WorkerJob::LadderBuilds {
        ladder,
        snippet,
        settings: MeasureSettings {
            time_s: args.time,
            band: args.band / 100.0,
            cpu: args.cpu,
            checks: true,
        },
        builds: args.build.builds(),
    };
    let tty = std::io::stderr().is_terminal();
    let mut progress = |p: &LiveSnapshot| {
        if tty {
            let budget = p.budget_ms.unwrap_or(0.0) / 1e3;
            eprint!(
                "\r{}: {} rounds, {:.1}/{:.1} s   ",
                p.phase,
                p.rounds,
                p.elapsed_ms / 1e3,
                budget
            );
            let _ = std::io::stderr().flush();
        }
    };
    let how = WorkerRun {
        what: &where_,
        limit,
        per_progress: false,
        cpu: super::measuring_cpu(args.cpu),
        // A document on stdout carries nothing else.
        printed_to_stderr: args.output.is_none() && args.format != LadderFormat::Table,
    };
    let answer = in_worker(job, &how, &mut progress);
    if tty {
        eprint!("\r{:60}\r", "");
    }
    let report = match answer? {
        JobReport::Ladder(l) => l,
        other => {
            return Err(Failure::input(format!(
                "error: the worker answered a ladder with {other:?} (a bug in hotlab)"
            )));
        }
    };
    if let Some(note) = &report.note {
        eprintln!("note: {note}");
    }
    let records = crate::export::records::ladder_records(&report.report);
    let text = match args.format.export() {
        None if args.format == LadderFormat::Report => {
            serde_json::to_string_pretty(&report.report).unwrap_or_default() + "\n"
        }
        None => {
            let picture = crate::tui::waterfall::Waterfall::from_report_json(&report.report)
                .ok_or_else(|| Failure::input("error: the ladder has no measured native row"))?;
            crate::tui::waterfall::svg(&picture, 960, 540)
                .map_err(|e| Failure::input(format!("error: {e}")))?
        }
        Some(Format::Json) => {
            serde_json::to_string_pretty(&records.to_json()).unwrap_or_default() + "\n"
        }
        Some(Format::Csv) => records.to_csv(),
        Some(Format::Markdown) => {
            let mut s: String = report.header.iter().map(|l| format!("- {l}\n")).collect();
            s.push('\n');
            s + &export::render_markdown(&report.table)
        }
        Some(Format::Table) => {
            let mut s: String = report.header.iter().map(|l| format!("{l}\n")).collect();
            s.push('\n');
            // Coloured as `check`'s line is (--color, NO_COLOR), on stdout only: a file
            // (--output) is a document.
            let color = args.output.is_none()
                && crate::frontend::use_color(std::io::stdout().is_terminal());
            if color {
                s + &export::render_text_painted(&report.table, &ladder_paint(&report.table))
            } else {
                s + &export::render_text(&report.table)
            }
        }
    };
    let out = args.output.clone().unwrap_or_else(|| PathBuf::from("-"));
    export::write_whole(&out, text.as_bytes())
        .map_err(|e| Failure::input(format!("error: cannot write {}: {e}", out.display())))?;
    // The comparison goes under the table on stdout, else (a document there) to stderr.
    let show = if args.output.is_none() && args.format != LadderFormat::Table {
        crate::frontend::baseline::Show::Stderr
    } else {
        crate::frontend::baseline::Show::Stdout
    };
    let compared = crate::frontend::baseline::after_run(&args.baselines, &records.to_json(), show)?;
    if let Some(fault) = (!report.all_ok)
        .then(|| first_fault(&report.report))
        .flatten()
    {
        // A row that raised: the error is the cause (its checksum differs because it raised).
        eprintln!("error: {fault}");
        Ok(ExitCode::from(exit::SCRIPT_ERROR))
    } else if !report.all_ok {
        eprintln!("error: a row's checksum differs from the native row's (marked `!`)");
        Ok(ExitCode::from(exit::RESULT_DIFFERS))
    } else if compared.is_some_and(|c| c.slower()) {
        Ok(ExitCode::from(exit::SLOWER))
    } else {
        Ok(ExitCode::from(exit::OK))
    }
}

/// How the ladder table is coloured: the `vs native` verdicts as `check`'s (green equal, red
/// slower, cyan faster, yellow unresolved), a checksum that differs (`!`) bold red.
fn ladder_paint(table: &export::Table) -> impl Fn(usize, usize, &str) -> Option<&'static str> {
    let column = |name: &str| table.columns.iter().position(|c| c.name == name);
    let (verdict, ok) = (column("vs native"), column("ok"));
    move |_, c, cell| {
        if Some(c) == verdict {
            export::verdict_paint(cell)
        } else if Some(c) == ok && cell == "!" {
            Some(export::DIFFERS_PAINT)
        } else {
            None
        }
    }
}

/// `row `BUILD STEP` raised an error while measured: WHAT at FILE:LINE:COL` for the first row of
/// a report (its JSON) that raised.
fn first_fault(report: &serde_json::Value) -> Option<String> {
    report["rows"].as_array()?.iter().find_map(|row| {
        let fault = row["fault"].as_str()?;
        let build = row["build"]
            .as_str()
            .map(|b| format!("{b} "))
            .unwrap_or_default();
        let step = row["step"].as_str().unwrap_or("?");
        Some(format!(
            "row `{build}{step}` raised an error while measured: {fault}"
        ))
    })
}

/// The build whose code `hotlab asm --ladder` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum AsmBuild {
    /// The generated Cranelift code.
    #[default]
    Jit,
    /// rustc's monomorphized loops.
    Aot,
}

/// `hotlab asm --ladder NAME`: each step's call-path machine code, and what changed from the
/// step before (a unified diff of the listings, without addresses).
pub fn ladder_asm(
    ladder: &str,
    snippet: Option<&PathBuf>,
    build: AsmBuild,
    ir: bool,
    syntax: super::asm::AsmSyntax,
    limit: std::time::Duration,
) -> Result<ExitCode, Failure> {
    let want = match build {
        AsmBuild::Jit => Build::Jit,
        AsmBuild::Aot => Build::Aot,
    };
    let att = syntax == super::asm::AsmSyntax::Att;
    let mut out = String::new();
    for step in ladder_step_code(ladder, snippet, want, att, limit)? {
        out.push_str(&format!(
            "=== {} ({}) — {want} {}: {} instructions\n",
            step.title, step.layer, step.path, step.instructions
        ));
        if ir && !step.clif.is_empty() {
            out.push_str(step.clif.trim_end());
            out.push_str("\n\n");
        }
        match &step.diff {
            None => {
                for l in &step.listing {
                    out.push_str(&format!("  {l}\n"));
                }
            }
            Some((lines, added, removed)) => {
                out.push_str(&format!(
                    "--- diff from the step before: +{added} -{removed} lines\n"
                ));
                for l in lines {
                    out.push_str(l);
                    out.push('\n');
                }
            }
        }
        out.push('\n');
    }
    print!("{out}");
    Ok(ExitCode::from(exit::OK))
}
