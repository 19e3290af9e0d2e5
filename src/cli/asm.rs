//! `hotlab asm FILE`: the machine code of a snippet's functions, and their Cranelift IR.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::snippet::{Snippet, load_snippet};
use super::{Failure, exit};
use crate::backend::disasm::{self, Syntax};
use crate::backend::jit::{Jit, JitOptions};

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
    /// The snippet: a .hot or .clif file.
    pub file: PathBuf,
    /// Only this function.
    #[arg(long = "fn", value_name = "NAME")]
    pub function: Option<String>,
    /// Print the Cranelift IR before the machine code.
    #[arg(long)]
    pub ir: bool,
    /// Assembly syntax.
    #[arg(long, value_enum, default_value_t = AsmSyntax::Intel)]
    pub syntax: AsmSyntax,
}

struct Listing {
    name: String,
    clif: String,
    addr: u64,
    bytes: Vec<u8>,
}

/// `hotlab asm`.
pub fn asm(args: &AsmArgs) -> Result<ExitCode, Failure> {
    let snippet = load_snippet(&args.file)?;
    let mut jit =
        Jit::new(JitOptions::default()).map_err(|e| Failure::input(format!("error: {e}")))?;
    let file = args.file.display().to_string();
    let compile_err = |e| Failure::input(format!("error: {file}: {e}"));
    let listings: Vec<Listing> = match snippet {
        Snippet::Hot { program, .. } => {
            let compiled = jit.compile(&program).map_err(compile_err)?;
            compiled
                .functions()
                .iter()
                .map(|f| Listing {
                    name: f.name.clone(),
                    clif: f.clif.clone(),
                    addr: f.addr,
                    bytes: f.bytes.clone(),
                })
                .collect()
        }
        Snippet::Clif { source } => {
            let compiled = jit.load_clif(&source.text).map_err(compile_err)?;
            compiled
                .functions()
                .iter()
                .map(|f| Listing {
                    name: f.code.name.clone(),
                    clif: f.code.clif.clone(),
                    addr: f.code.addr,
                    bytes: f.code.bytes.clone(),
                })
                .collect()
        }
    };
    let selected: Vec<&Listing> = listings
        .iter()
        .filter(|l| args.function.as_deref().is_none_or(|n| n == l.name))
        .collect();
    if selected.is_empty() {
        let names: Vec<&str> = listings.iter().map(|l| l.name.as_str()).collect();
        return Err(Failure::input(format!(
            "error: {file}: no function named `{}` (functions: {})",
            args.function.as_deref().unwrap_or(""),
            names.join(", ")
        )));
    }
    let syntax = match args.syntax {
        AsmSyntax::Intel => Syntax::Intel,
        AsmSyntax::Att => Syntax::Att,
    };
    let mut out = String::new();
    for l in selected {
        let lines = disasm::disassemble(&l.bytes, l.addr, syntax);
        out.push_str(&format!(
            "; {} — {} bytes, {} instructions\n",
            l.name,
            l.bytes.len(),
            lines.len()
        ));
        if args.ir {
            out.push_str(l.clif.trim_end());
            out.push_str("\n\n");
        }
        out.push_str(&disasm::render(&lines));
        out.push('\n');
    }
    print!("{out}");
    Ok(ExitCode::from(exit::OK))
}
