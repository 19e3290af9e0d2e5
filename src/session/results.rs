//! The session's results model: what a finished job produced ([`JobReport`]), the live
//! snapshots while it measures ([`LiveSnapshot`]), and why it failed ([`JobFailed`]). The types
//! are defined once, in `crate::results`, where the worker builds them; the session keeps them
//! in its records (their serde form is the session file's and `:export json`'s), renders them
//! (`session::render`), and re-exports them here for the front ends.

pub use crate::results::{
    AppliedReload, BenchResult, FailureCause, FunctionListing, FunctionSummary, HistogramBucket,
    JobFailed, JobReport, LadderResult, LiveContestant, LiveSnapshot, MeasuredComparison,
    MeasuredRow, Measurement, Quantile, ReloadResult, SourceLocation,
};
/// What a reload did to one class and its live objects (the runtime's own report).
pub use crate::runtime::reload::ReloadReport;
