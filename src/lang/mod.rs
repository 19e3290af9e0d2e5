//! The hot language: `lex → parse → check`, each stage taking the previous stage's output.

pub mod diag;
pub mod hir;
pub mod lexer;
pub mod span;
pub mod token;
