//! The hot language: `lex → parse → check`, each stage taking the previous stage's output.

pub mod ast;
pub mod check;
pub mod diag;
pub mod hir;
pub mod host;
pub mod lexer;
pub mod parser;
pub mod span;
pub mod token;

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use diag::{DiagKind, Diagnostic, Diagnostics};
pub use hir::Program;
pub use span::{SourceFile, Span};
pub use token::Token;

/// Source text to tokens.
pub fn lex(source: &SourceFile) -> Result<Vec<Token>, Diagnostics> {
    lexer::lex(source)
}

/// Tokens to the syntax tree.
pub fn parse(tokens: &[Token]) -> Result<ast::Module, Diagnostics> {
    parser::parse(tokens)
}

/// The syntax tree to the checked program; `source` is the file it came from.
pub fn check(module: &ast::Module, source: Arc<SourceFile>) -> Result<Program, Diagnostics> {
    check::check(module, source)
}

/// How long each front-end stage took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrontTimings {
    /// [`lex`]
    pub lex: Duration,
    /// [`parse`]
    pub parse: Duration,
    /// [`check`]
    pub check: Duration,
}

/// The whole front end: source to checked program.
pub fn compile(source: Arc<SourceFile>) -> Result<Program, Diagnostics> {
    compile_timed(source).0
}

/// [`compile`], timing each stage (a stage not reached takes zero).
pub fn compile_timed(source: Arc<SourceFile>) -> (Result<Program, Diagnostics>, FrontTimings) {
    let mut timings = FrontTimings::default();
    let t = Instant::now();
    let tokens = lex(&source);
    timings.lex = t.elapsed();
    let tokens = match tokens {
        Ok(tokens) => tokens,
        Err(d) => return (Err(d), timings),
    };
    let t = Instant::now();
    let module = parse(&tokens);
    timings.parse = t.elapsed();
    let module = match module {
        Ok(module) => module,
        Err(d) => return (Err(d), timings),
    };
    let t = Instant::now();
    let program = check(&module, source);
    timings.check = t.elapsed();
    (program, timings)
}
