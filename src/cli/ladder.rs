//! `hotlab ladder`: build a ladder's rows (jit, aot or both), measure them interleaved in one
//! job, print the table. Also what `hotlab` with no arguments runs.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::{Args, ValueEnum};

use super::snippet::{SnippetFile, load_snippet};
use super::{Failure, exit};
use crate::export::{self, Format};
use crate::ladder::bench::{Build, CalledMethod, DEFAULT_SNIPPET};
use crate::ladder::code::{StepCode, ladder_code};
use crate::lang::{self, SourceFile};
use crate::measure::{Picos, Progress, Settings, Stop};

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
    /// Aligned text for a terminal.
    #[default]
    Table,
    /// A GitHub-flavoured Markdown table.
    Markdown,
    /// Comma-separated values.
    Csv,
    /// The report's JSON form.
    Json,
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
            LadderFormat::Svg => None,
        }
    }
}

/// Options of `hotlab ladder`.
#[derive(Debug, Args)]
pub struct LadderArgs {
    /// A shipped ladder (host_call, fused, direct, runtime) or a ladder .toml file (see docs/ladder.md).
    #[arg(long, value_name = "NAME|FILE", default_value = "host_call")]
    pub ladder: String,
    /// The method called: a .hot file with `fn call() -> i64` (default: `return 1`).
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
/// default), built on this thread.
fn ladder_step_code(
    ladder: &str,
    snippet: Option<&PathBuf>,
    build: Build,
    syntax: crate::backend::disasm::Syntax,
) -> Result<Vec<StepCode>, Failure> {
    let ladder = resolve_ladder(ladder)?;
    let program = snippet_program(snippet)?;
    let where_ = snippet
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "<default snippet>".into());
    ladder_code(ladder, &program, build, syntax).map_err(|e| match e {
        crate::ladder::bench::BuildError::Raised(_) => {
            Failure::script(format!("error: {where_}: {e}"))
        }
        _ => Failure::input(format!("error: {where_}: {e}")),
    })
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
    let ladder = resolve_ladder(&args.ladder)?;
    let program = snippet_program(args.snippet.as_ref())?;
    let where_ = args
        .snippet
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "<default snippet>".into());
    let settings = Settings {
        stop: Stop::Budget(Picos(args.time * 1e12)),
        cpu: args.cpu,
        band: args.band / 100.0,
        ..Settings::default()
    };
    let cancel = AtomicBool::new(false);
    let tty = std::io::stderr().is_terminal();
    let mut progress = |p: &Progress<'_>| {
        if tty {
            let budget = p.budget.map(|b| b.secs()).unwrap_or(0.0);
            eprint!(
                "\r{:?}: {} rounds, {:.1}/{:.1} s   ",
                p.phase,
                p.rounds,
                p.elapsed.secs(),
                budget
            );
            let _ = std::io::stderr().flush();
        }
    };
    let report = crate::ladder::run::measure(
        ladder,
        CalledMethod::Snippet(&program),
        &args.build.builds(),
        settings,
        &cancel,
        &mut progress,
        crate::ladder::run::machine_header(),
    )
    .map_err(|e| {
        if e.is_script_error() {
            Failure::script(format!("error: {where_}: {e}"))
        } else {
            Failure::input(format!("error: {where_}: {e}"))
        }
    })?;
    if tty {
        eprint!("\r{:60}\r", "");
    }
    let text = match args.format.export() {
        None => {
            let json = serde_json::to_value(&report).unwrap_or_default();
            let picture = crate::tui::waterfall::Waterfall::from_report_json(&json)
                .ok_or_else(|| Failure::input("error: the ladder has no measured native row"))?;
            crate::tui::waterfall::svg(&picture, 960, 540)
                .map_err(|e| Failure::input(format!("error: {e}")))?
        }
        Some(Format::Json) => serde_json::to_string_pretty(&report).unwrap_or_default() + "\n",
        Some(Format::Csv) => export::render_csv(&report.table()),
        Some(Format::Markdown) => {
            let mut s: String = report.header.iter().map(|l| format!("- {l}\n")).collect();
            s.push('\n');
            s + &export::render_markdown(&report.table())
        }
        Some(Format::Table) => {
            let mut s: String = report.header.iter().map(|l| format!("{l}\n")).collect();
            s.push('\n');
            s + &export::render_text(&report.table())
        }
    };
    let out = args.output.clone().unwrap_or_else(|| PathBuf::from("-"));
    export::write_whole(&out, text.as_bytes())
        .map_err(|e| Failure::input(format!("error: cannot write {}: {e}", out.display())))?;
    if report.all_ok() {
        Ok(ExitCode::from(exit::OK))
    } else {
        eprintln!("error: a row's checksum differs from the native row's (marked `!`)");
        Ok(ExitCode::from(exit::SCRIPT_ERROR))
    }
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
) -> Result<ExitCode, Failure> {
    let want = match build {
        AsmBuild::Jit => Build::Jit,
        AsmBuild::Aot => Build::Aot,
    };
    let syntax = match syntax {
        super::asm::AsmSyntax::Intel => crate::backend::disasm::Syntax::Intel,
        super::asm::AsmSyntax::Att => crate::backend::disasm::Syntax::Att,
    };
    let mut out = String::new();
    for step in ladder_step_code(ladder, snippet, want, syntax)? {
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
