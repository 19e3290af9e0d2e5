//! hotlab: a lab for the cost of a script call.
#![warn(missing_docs)]

pub mod backend;
pub mod cases;
pub mod cli;
pub mod export;
pub mod frontend;
pub mod ladder;
pub mod lang;
pub mod measure;
pub mod repl;
pub mod results;
pub mod runtime;
pub mod session;
pub mod tui;
pub mod worker;

/// Every allocation is counted, so a script's allocations can be held to the job's limit
/// (`--mem`; `runtime::memory`).
#[global_allocator]
static ALLOCATOR: runtime::memory::Counting = runtime::memory::Counting;
