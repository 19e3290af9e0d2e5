//! The script runtime: host functions, run-time errors, and (later) objects, slots and reload.

pub mod error;
pub mod host;

pub use error::{ScriptError, ScriptErrorKind, catch_script};
