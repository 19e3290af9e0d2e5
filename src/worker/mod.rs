//! The worker process: jobs (compile, run, machine code, measure, doctor, ladder, check, bench,
//! reload) run in a child process, `hotlab worker`, so that a snippet that
//! crashes, hangs or is cancelled ends the job and never the session.
//!
//! - `protocol`: the JSON-lines messages, requests with ids and streamed responses (the
//!   worker's private wire format; the session converts it into `session::results`).
//! - [`client`]: the front end's side: [`Worker::spawn`], [`Worker::run`] with a time limit and
//!   a cancel flag; faults come back as [`WorkerError`] and a fresh worker takes the next job.
//! - the child's side ([`serve`]) runs one job at a time on a thread pinned to its CPU.
//!
//! See `docs/session.md` for the protocol and what happens on each fault.

mod cli_jobs;
pub mod client;
mod command_jobs;
pub mod crash;
pub(crate) mod jobs;
// Public only for the tests of the wire itself (tests/worker_*.rs); the front ends read the
// session's results model, which the session converts these messages into.
#[doc(hidden)]
pub mod protocol;
mod serve;

pub use client::{Worker, WorkerError, WorkerOptions, describe_status};

pub use serve::serve;
