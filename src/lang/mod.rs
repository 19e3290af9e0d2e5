//! The hot language: `lex → parse → check`, each stage taking the previous stage's output.

pub mod hir;
pub mod span;
