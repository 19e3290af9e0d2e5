//! `hotlab asm FILE`: the machine code of a snippet's functions, and their Cranelift IR.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::run::OnOff;
use super::snippet::{SnippetFile, load_snippet};
use super::{Failure, WorkerRun, exit, in_worker};
use crate::backend::Backend;
use crate::backend::disasm::{self, Syntax};
use crate::results::JobReport;
use crate::worker::protocol::{SnippetSource, WorkerJob};

/// Assembly syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AsmSyntax {
    /// Intel syntax (`mov rax, rbx`).
    Intel,
    /// AT&T syntax (`movq %rbx, %rax`).
    Att,
}

/// Options of `hotlab asm`.
#[derive(Debug, Args)]
pub struct AsmArgs {
    /// The snippet: a .hot or .clif file (with --ladder: the method's .hot file, optional).
    #[arg(required_unless_present_any = ["ladder", "twin"])]
    pub file: Option<PathBuf>,
    /// Instead of the snippet's functions: each step's call-path machine code of this ladder
    /// (a shipped name or a .toml file) and its diff from the step before.
    #[arg(long, value_name = "NAME|FILE")]
    pub ladder: Option<String>,
    /// With --ladder: which build's code to show.
    #[arg(long, value_enum, default_value_t = super::ladder::AsmBuild::Jit, requires = "ladder")]
    pub build: super::ladder::AsmBuild,
    /// Instead of a snippet: the machine code rustc made of this native twin (the cases'
    /// twins: `hotlab bench --list`), to read beside the script's.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["ladder", "file"])]
    pub twin: Option<String>,
    /// The backend whose machine code to show (`interp` makes none). The object backend shows
    /// the code as loaded from its shared library, relocations applied.
    #[arg(long, value_enum, conflicts_with_all = ["ladder", "twin"])]
    pub backend: Option<Backend>,
    /// Short for `--backend jit-opt` (Cranelift `OptLevel::Speed`).
    #[arg(long, conflicts_with = "backend")]
    pub opt: bool,
    /// Index bounds checks in the generated code.
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub checks: OnOff,
    /// Only this function.
    #[arg(long = "fn", value_name = "NAME")]
    pub function: Option<String>,
    /// Print the Cranelift IR before the machine code.
    #[arg(long)]
    pub ir: bool,
    /// Assembly syntax.
    #[arg(long, value_enum, default_value_t = AsmSyntax::Intel)]
    pub syntax: AsmSyntax,
    /// Stop after this many seconds: `did not finish within S s`, exit code 7. The snippet is
    /// compiled (and its module initializers run) in a worker process: a crash there is exit
    /// code 6.
    #[arg(long, value_name = "S", default_value_t = ASM_LIMIT_S)]
    pub limit: f64,
}

/// The default `--limit` of `asm`, in seconds.
pub const ASM_LIMIT_S: f64 = 60.0;

/// `hotlab asm`.
pub fn asm(args: &AsmArgs) -> Result<ExitCode, Failure> {
    let limit = super::limit_of(args.limit)?;
    if let Some(ladder) = &args.ladder {
        return super::ladder::ladder_asm(
            ladder,
            args.file.as_ref(),
            args.build,
            args.ir,
            args.syntax,
            limit,
        );
    }
    let syntax = match args.syntax {
        AsmSyntax::Intel => Syntax::Intel,
        AsmSyntax::Att => Syntax::Att,
    };
    if let Some(name) = &args.twin {
        return twin_asm(name, syntax);
    }
    let Some(path) = &args.file else {
        return Err(Failure::input(
            "error: give a snippet file, --ladder NAME or --twin NAME",
        ));
    };
    let backend = match (args.backend, args.opt) {
        (Some(b), _) => b,
        (None, true) => Backend::JitOpt,
        (None, false) => Backend::Jit,
    };
    // Checked here for its diagnostics; compiled (initializers run) in the worker.
    let source = match load_snippet(path)? {
        SnippetFile::Hot { program, .. } => program.source,
        SnippetFile::Clif { source } => source,
    };
    let file = path.display().to_string();
    let job = WorkerJob::AsmFile {
        snippet: SnippetSource {
            name: source.name.clone(),
            text: source.text.clone(),
        },
        backend,
        checks: args.checks == OnOff::On,
        function: args.function.clone(),
        att: args.syntax == AsmSyntax::Att,
    };
    let how = WorkerRun {
        what: &file,
        limit,
        per_progress: false,
        cpu: None,
        printed_to_stderr: false,
    };
    let selected = match in_worker(job, &how, &mut |_| {})? {
        JobReport::Asm { listings } => listings,
        other => {
            return Err(Failure::input(format!(
                "error: the worker answered asm with {other:?} (a bug in hotlab)"
            )));
        }
    };
    let mut out = String::new();
    for l in selected {
        out.push_str(&format!(
            "; {} — {} bytes, {} instructions\n",
            l.name, l.bytes, l.instructions
        ));
        if args.ir {
            out.push_str(l.clif.trim_end());
            out.push_str("\n\n");
        }
        out.push_str(&l.asm);
        out.push('\n');
    }
    print!("{out}");
    Ok(ExitCode::from(exit::OK))
}

/// `hotlab asm --twin NAME`: the twin's machine code, recovered from its address in this binary.
fn twin_asm(name: &str, syntax: Syntax) -> Result<ExitCode, Failure> {
    let Some(twin) = crate::cases::twins::twin_named(name) else {
        let names: Vec<&str> = crate::cases::twins::twins()
            .iter()
            .map(|t| t.name)
            .collect();
        return Err(Failure::input(format!(
            "error: --twin: no twin named `{name}` (twins: {})",
            names.join(", ")
        )));
    };
    // SAFETY: a twin's `f` is the entry of a Rust function compiled into this binary.
    let (bytes, lines) = unsafe { crate::ladder::code::twin_machine_code(twin.f as usize, syntax) };
    print!(
        "; twin {} — {} bytes, {} instructions ({})\n{}\n",
        twin.name,
        bytes,
        lines.len(),
        twin.doc,
        disasm::render(&lines)
    );
    Ok(ExitCode::from(exit::OK))
}
