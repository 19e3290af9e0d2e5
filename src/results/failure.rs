//! Why a job failed: its cause, its message, its place in the snippet, and what a reload
//! applied before the failure did. The session renders its text (`session::render`).

use serde::{Deserialize, Serialize};

use crate::runtime::reload::ReloadReport;

/// Why a job failed in a healthy worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureCause {
    /// The snippet or the request is wrong (a diagnostic, a missing function).
    Input,
    /// The script raised an error at run time.
    Script,
    /// The job needs a feature this build does not have.
    Unavailable,
    /// The worker panicked (a bug in hotlab); the worker goes on.
    Panic,
}

/// Where in a snippet a failure is, when it has a place (a diagnostic's first span).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceLocation {
    /// The snippet's name.
    pub snippet: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

/// A reload that was applied before the script failed: what it did to the classes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedReload {
    /// The snippet reloaded.
    pub snippet: String,
    /// The classes reloaded.
    pub classes: Vec<ReloadReport>,
    /// Classes defined for the first time.
    pub defined: Vec<String>,
}

/// A job that failed: why, the message (diagnostics already drawn with their source lines),
/// where, and what an applied reload changed first. Its text (`Display`, from
/// `session::render`) is what the front ends show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobFailed {
    /// Why.
    #[serde(rename = "kind")]
    pub cause: FailureCause,
    /// What went wrong.
    pub message: String,
    /// Where, when the failure has a place in the snippet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<SourceLocation>,
    /// A reload applied before the failure (boxed: most failures have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<Box<AppliedReload>>,
}

impl JobFailed {
    /// A failure without a place.
    pub fn new(cause: FailureCause, message: impl Into<String>) -> JobFailed {
        JobFailed {
            cause,
            message: message.into(),
            location: None,
            applied: None,
        }
    }
}
