//! The hot language: `lex → parse → check`, each stage taking the previous stage's output.

pub mod ast;
pub mod diag;
pub mod hir;
pub mod lexer;
pub mod parser;
pub mod span;
pub mod token;
