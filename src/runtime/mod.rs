//! The script runtime: host functions, run-time errors, and (later) objects, slots and reload.

pub mod arrays;
pub mod border;
pub mod class;
pub mod closure;
pub mod counts;
pub mod depth;
pub mod error;
pub mod handle;
pub mod host;
pub mod iface;
pub mod math;
pub mod memory;
pub mod new_steps;
pub mod object;
pub mod output;
pub mod ranges;
pub mod reload;
pub mod rt;
pub(crate) mod shells;
pub mod spin;
pub mod str_block;
pub mod strings;
pub mod sweep;
pub mod values;

pub use error::{ScriptError, ScriptErrorKind, catch_script};
