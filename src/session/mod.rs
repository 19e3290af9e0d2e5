//! The session: one model for every front end. It holds the snippets (text and name), the
//! backend, the twin and ladder names, the settings and the results, and it runs the REPL's
//! `:commands` on them: [`command::parse`] turns a line into a [`Command`], and
//! [`Session::execute`] carries it out, writing to a [`Sink`] (a REPL prints, a TUI draws).
//!
//! Every job (compile, run, machine code, measure, doctor) runs in a worker process
//! (`crate::worker`), so a snippet that crashes or hangs ends its job, never the session. The
//! state is saved after every change to the session file ([`store::default_path`]) and comes
//! back with [`Session::resume`]. See `docs/session.md`.

mod cases;
mod code;
pub mod command;
mod distribution;
mod exec;
pub mod fit;
pub mod generations;
pub mod interrupt;
mod lab_commands;
pub mod merge;
mod render;
pub mod results;
pub mod store;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};

/// The backend a session's jobs run on.
pub use crate::backend::Backend;

/// The backends in the order the sessions list, complete and cycle them (`:backend`, F8): the
/// interpreter, the reference, before the object backend, which is the slowest to build.
pub const SESSION_BACKENDS: [Backend; 4] = [
    Backend::Jit,
    Backend::JitOpt,
    Backend::Interp,
    Backend::Object,
];
pub use command::{Command, CommandError, ExportFormat, Setting, parse};
pub use distribution::RowDistribution;
pub use render::{class_lines, measured_table, record_table};
pub use results::{
    AppliedReload, BenchResult, FailureCause, FunctionListing, FunctionSummary, HistogramBucket,
    JobFailed, JobReport, LadderResult, LiveContestant, LiveSnapshot, MeasuredComparison,
    MeasuredRow, Measurement, Quantile, ReloadReport, ReloadResult, SourceLocation,
};

use crate::worker::{Worker, WorkerError, WorkerOptions};

/// The version written into session files.
pub const STATE_VERSION: u32 = 1;

/// A snippet: its name (a `.clif` ending marks Cranelift IR) and its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snippet {
    /// The name.
    pub name: String,
    /// The source text.
    pub text: String,
}

/// What `:set` changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSettings {
    /// Measuring time budget, seconds.
    pub time_s: f64,
    /// Equivalence band (0.02 = ±2 %).
    pub band: f64,
    /// CPU for the worker (`None`: automatic).
    pub cpu: Option<usize>,
    /// Index bounds checks in script code.
    pub checks: bool,
    /// Time limit of a run, seconds (measuring jobs get it on top of their budget).
    pub limit_s: f64,
    /// Each job's memory budget in bytes (`None`: the default, `runtime::memory`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem: Option<u64>,
}

impl Default for SessionSettings {
    fn default() -> Self {
        SessionSettings {
            time_s: 1.0,
            band: crate::measure::stats::verdict::DEFAULT_BAND,
            cpu: None,
            checks: true,
            limit_s: 5.0,
            mem: None,
        }
    }
}

/// One finished job and what it produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// The command line that ran it.
    pub command: String,
    /// The backend it used.
    pub backend: Backend,
    /// The snippets it used.
    pub snippets: Vec<String>,
    /// Seconds since the Unix epoch when it finished.
    pub finished: u64,
    /// The output.
    pub output: JobReport,
    /// Each row's distribution as the job's last live snapshot showed it, for results that
    /// carry none themselves (a ladder, a check, a bench cell); empty for a measurement.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<RowDistribution>,
    /// How the job ended early, if it did (`cancelled`: stopped by the user, with what it had).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// Everything the session file keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    /// File format version.
    pub version: u32,
    /// The snippets (never empty).
    pub snippets: Vec<Snippet>,
    /// Index of the current snippet.
    pub current: usize,
    /// The backend.
    pub backend: Backend,
    /// The native twin (a case name).
    pub twin: Option<String>,
    /// The ladder (a file in `micro/`).
    pub ladder: Option<String>,
    /// The layers of the next ladder, in order, when chosen with `:layers` (`None`: as the
    /// ladder file says).
    #[serde(default)]
    pub layers: Option<Vec<String>>,
    /// The settings.
    pub settings: SessionSettings,
    /// Results, oldest first (the last [`MAX_RESULTS`]).
    pub results: Vec<JobRecord>,
    /// Lines entered, oldest first (the last [`MAX_HISTORY`]).
    pub history: Vec<String>,
}

/// Results kept in the session.
pub const MAX_RESULTS: usize = 50;
/// History lines kept in the session.
pub const MAX_HISTORY: usize = 1000;

impl Default for SessionState {
    fn default() -> Self {
        SessionState {
            version: STATE_VERSION,
            snippets: vec![Snippet {
                name: "snippet.hot".into(),
                text: String::new(),
            }],
            current: 0,
            backend: Backend::Jit,
            twin: None,
            ladder: Some("host_call".into()),
            layers: None,
            settings: SessionSettings::default(),
            results: Vec::new(),
            history: Vec::new(),
        }
    }
}

impl SessionState {
    /// The current snippet.
    pub fn snippet(&self) -> &Snippet {
        &self.snippets[self.current.min(self.snippets.len() - 1)]
    }

    /// A state read from a file may break the invariants; repair what can be repaired.
    fn repair(&mut self) {
        if self.snippets.is_empty() {
            self.snippets = SessionState::default().snippets;
        }
        if self.current >= self.snippets.len() {
            self.current = 0;
        }
    }
}

/// Where a session's output goes.
pub trait Sink {
    /// A block of text (a value, a table, a listing, a message).
    fn text(&mut self, text: &str);
    /// A live snapshot of a measuring job (about 20 per second).
    fn progress(&mut self, progress: &LiveSnapshot) {
        let _ = progress;
    }
}

/// A sink that keeps the text, for tests and for front ends that print later.
#[derive(Debug, Default)]
pub struct Collect {
    /// Text blocks, in order.
    pub texts: Vec<String>,
    /// Progress snapshots seen.
    pub progress: usize,
}

impl Sink for Collect {
    fn text(&mut self, text: &str) {
        self.texts.push(text.to_string());
    }
    fn progress(&mut self, _: &LiveSnapshot) {
        self.progress += 1;
    }
}

impl Collect {
    /// Everything written, joined.
    pub fn all(&self) -> String {
        self.texts.join("\n")
    }
}

/// What the front end does after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineFlow {
    /// Read the next line.
    Continue,
    /// Leave.
    Quit,
}

/// Why a command did not do what it said.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The line is not a valid command.
    #[error("{0}")]
    Command(#[from] CommandError),
    /// Bad input: a file, a name, a snippet without what the command needs.
    #[error("{0}")]
    Input(String),
    /// The job needs a feature this build does not have.
    #[error("not available in this build: {0}")]
    Unavailable(String),
    /// The job failed in the worker: a diagnostic, a script error, a panic.
    #[error("{0}")]
    Job(Box<JobFailed>),
    /// The job did not finish: it timed out, was cancelled, or the worker crashed or cannot be
    /// used.
    #[error("{0}")]
    Worker(WorkerError),
    /// The session file could not be written or read.
    #[error("{0}")]
    Store(#[from] store::StoreError),
}

impl From<WorkerError> for SessionError {
    fn from(e: WorkerError) -> SessionError {
        match e {
            WorkerError::Failed(f) => match f {
                f if f.cause == FailureCause::Unavailable => SessionError::Unavailable(
                    f.message
                        .trim_start_matches("not available in this build: ")
                        .to_string(),
                ),
                f => SessionError::Job(Box::new(f)),
            },
            other => SessionError::Worker(other),
        }
    }
}

/// How to open a session.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// The hotlab executable the worker runs (`std::env::current_exe()`).
    pub exe: PathBuf,
    /// The session file (`None`: not saved).
    pub store: Option<PathBuf>,
}

impl SessionOptions {
    /// This executable, and the session file in the XDG state directory.
    pub fn standard() -> Result<SessionOptions, SessionError> {
        Ok(SessionOptions {
            exe: std::env::current_exe().map_err(|e| {
                SessionError::Input(format!("cannot find the hotlab executable: {e}"))
            })?,
            store: store::default_path(),
        })
    }
}

/// A session: the state, its file, and the worker that runs its jobs.
pub struct Session {
    state: SessionState,
    options: SessionOptions,
    worker: Option<Worker>,
    cancel: Arc<AtomicBool>,
    /// The live module the worker holds after a `:reload`: the snippet's name, the worker's
    /// pid, and the text last reloaded.
    live: Option<(String, u32, String)>,
    /// A fresh session that has not saved yet: its first save first moves the saved session
    /// (if any) to `session.prev.json`.
    keep_previous: std::cell::Cell<bool>,
    /// The state as last saved or loaded: a command that changes only the history writes
    /// nothing, so a look (`:show`, `:help`, a piped script of them) never replaces a file.
    saved: std::cell::RefCell<SessionState>,
    /// The session file held for this session (`None`: not saved, or saved to a copy).
    _lock: Option<store::StoreLock>,
    /// What the front end should tell the user about the session file (another front end
    /// holds it, say).
    note: Option<String>,
    /// The last live snapshot of the running (or last) job.
    last_live: Option<LiveSnapshot>,
    /// The front end's width in columns, when it has one (a REPL on a terminal): tables are
    /// made to fit it.
    width: Option<usize>,
    /// The cases directory and the cases read there.
    cases: cases::CaseDir,
}

/// Whether two states differ in more than the history.
fn same_but_history(a: &SessionState, b: &SessionState) -> bool {
    a.version == b.version
        && a.snippets == b.snippets
        && a.current == b.current
        && a.backend == b.backend
        && a.twin == b.twin
        && a.ladder == b.ladder
        && a.layers == b.layers
        && a.settings == b.settings
        && a.results == b.results
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("state", &self.state)
            .field("store", &self.options.store)
            .finish()
    }
}

impl Session {
    /// A fresh session. At its first change it moves the saved session file (if any) to
    /// `session.prev.json` and starts a new one, so nothing saved is lost.
    pub fn new(options: SessionOptions) -> Session {
        let s = Session::with_state(options, SessionState::default());
        s.keep_previous.set(true);
        s
    }

    /// A session with this state. Its session file is held for it (a lock file beside it);
    /// when another front end holds it, this session saves to a copy of its own
    /// ([`store::copy_path`]) and [`Session::store_note`] says so.
    pub fn with_state(mut options: SessionOptions, mut state: SessionState) -> Session {
        state.repair();
        let (lock, note) = match options.store.clone() {
            None => (None, None),
            Some(path) => match store::lock(&path) {
                Ok(lock) => (Some(lock), None),
                Err(store::LockError::InUse(pid)) => {
                    let copy = store::copy_path(&path);
                    let note = format!(
                        "the session file {} is in use by another hotlab (pid {pid}); this \
                         session is saved to {} instead, so neither overwrites the other",
                        path.display(),
                        copy.display()
                    );
                    options.store = Some(copy);
                    (None, Some(note))
                }
                Err(store::LockError::Io(why)) => {
                    let note = format!(
                        "{why}: another front end on {} would not be noticed",
                        path.display()
                    );
                    (None, Some(note))
                }
            },
        };
        Session {
            saved: std::cell::RefCell::new(state.clone()),
            state,
            options,
            worker: None,
            cancel: Arc::new(AtomicBool::new(false)),
            live: None,
            keep_previous: std::cell::Cell::new(false),
            _lock: lock,
            note,
            last_live: None,
            width: None,
            cases: cases::CaseDir::default(),
        }
    }

    /// What the front end should tell the user about the session file, if anything: another
    /// front end holds it and this session saves to a copy.
    pub fn store_note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// The saved session from the session file, or a fresh one if there is none yet. A file
    /// that cannot be read is an error (it is left alone, never overwritten silently).
    pub fn resume(options: SessionOptions) -> Result<Session, SessionError> {
        let state = match &options.store {
            Some(path) => store::load(path).map_err(SessionError::Store)?,
            None => None,
        };
        let mut state = state.unwrap_or_default();
        let notes = generations::validate(&mut state);
        let mut s = Session::with_state(options, state);
        s.add_notes(notes);
        Ok(s)
    }

    /// The session saved in `from` (a generation or a copy, see [`generations::find`]), saved
    /// to the options' session file from now on. When `from` is another file than that one,
    /// the session starts as a fresh one does: its first change keeps the saved session file
    /// as `session.prev.json` (the file resumed from is a generation, and moves down with the
    /// others). Its settings, twin and ladder are checked as typed ones are.
    pub fn resume_from(
        options: SessionOptions,
        from: &std::path::Path,
    ) -> Result<Session, SessionError> {
        let mut state = store::load(from)
            .map_err(SessionError::Store)?
            .ok_or_else(|| SessionError::Input(format!("{} does not exist", from.display())))?;
        let notes = generations::validate(&mut state);
        let same = options
            .store
            .as_deref()
            .is_some_and(|p| store::same_file(p, from));
        let mut s = Session::with_state(options, state);
        s.keep_previous.set(!same);
        s.add_notes(notes);
        Ok(s)
    }

    /// Add lines to what the front end tells the user about this session
    /// ([`Session::store_note`]).
    pub fn add_notes(&mut self, notes: impl IntoIterator<Item = String>) {
        for n in notes {
            self.note = Some(match self.note.take() {
                Some(old) => format!("{old}\n{n}"),
                None => n,
            });
        }
    }

    /// Tell the session the front end's width (`None`: no terminal, every column): the tables
    /// of `:ladder` and `:compare` drop their least needed columns to fit it.
    pub fn set_width(&mut self, width: Option<usize>) {
        self.width = width;
    }

    /// The state.
    pub fn state(&self) -> &SessionState {
        &self.state
    }

    /// Replace the current snippet's text, for front ends that edit the whole snippet at once
    /// (the TUI's editor). Nothing is compiled: the next job reports any diagnostic. Saved
    /// with the next command (or [`Session::save`]).
    pub fn set_snippet_text(&mut self, text: &str) {
        let i = self.state.current.min(self.state.snippets.len() - 1);
        self.state.snippets[i].text = text.to_string();
    }

    /// The session file, if any.
    pub fn store_path(&self) -> Option<&std::path::Path> {
        self.options.store.as_deref()
    }

    /// The flag a front end sets to cancel the running job (e.g. from a Ctrl-C handler). It
    /// is cleared when the next job starts.
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.cancel)
    }

    /// The worker's process id, once one was started.
    pub fn worker_pid(&self) -> Option<u32> {
        self.worker.as_ref().map(Worker::pid)
    }

    /// Write the state to the session file (done after every command by [`Session::run_line`])
    /// when it changed in more than the history since it was last saved or loaded: a command
    /// that only looks writes nothing. A fresh session's first write first moves the saved
    /// session to `session.prev.json` (older ones a generation down).
    pub fn save(&self) -> Result<(), SessionError> {
        let Some(path) = &self.options.store else {
            return Ok(());
        };
        if same_but_history(&self.state, &self.saved.borrow()) {
            return Ok(());
        }
        if self.keep_previous.get() {
            store::keep_previous(path).map_err(SessionError::Store)?;
            self.keep_previous.set(false);
        }
        store::save(path, &self.state).map_err(SessionError::Store)?;
        *self.saved.borrow_mut() = self.state.clone();
        Ok(())
    }

    fn worker(&mut self) -> Result<&mut Worker, SessionError> {
        if self.worker.is_none() {
            let cpu = self
                .state
                .settings
                .cpu
                .or_else(crate::measure::env::pin::auto_cpu);
            let options = WorkerOptions {
                exe: self.options.exe.clone(),
                cpu,
                mem: self
                    .state
                    .settings
                    .mem
                    .or_else(crate::runtime::memory::flag),
            };
            self.worker = Some(Worker::spawn(options)?);
        }
        match self.worker.as_mut() {
            Some(w) => Ok(w),
            None => Err(SessionError::Input("the worker did not start".into())),
        }
    }

    /// Parse `line`, add it to the history, run it, and save the session. Errors are
    /// returned for the front end to show; the session stays usable after any of them.
    pub fn run_line(&mut self, line: &str, sink: &mut dyn Sink) -> Result<LineFlow, SessionError> {
        if !line.trim().is_empty() {
            self.state.history.push(line.trim_end().to_string());
            let extra = self.state.history.len().saturating_sub(MAX_HISTORY);
            self.state.history.drain(..extra);
        }
        let result = command::parse(line)
            .map_err(SessionError::from)
            .and_then(|cmd| self.execute_as(cmd, line.trim(), sink));
        let saved = self.save();
        let outcome = result?;
        saved?;
        Ok(outcome)
    }

    /// Carry out one command (without adding it to the history or saving).
    pub fn execute(&mut self, cmd: Command, sink: &mut dyn Sink) -> Result<LineFlow, SessionError> {
        let line = format!("{cmd:?}");
        self.execute_as(cmd, &line, sink)
    }

    fn record(&mut self, command: &str, snippets: Vec<String>, output: JobReport) {
        let finished = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let live = self.last_live.take();
        let rows = match &output {
            // A measurement keeps its rows' distributions itself.
            JobReport::Measured(_) => Vec::new(),
            _ => live
                .iter()
                .flat_map(|p| p.variants.iter().map(RowDistribution::from_live))
                .collect(),
        };
        let stopped = match &output {
            JobReport::Measured(m) if m.stopped == "cancelled" => Some(m.stopped.clone()),
            JobReport::Measured(_) => None,
            _ => self
                .cancel
                .load(std::sync::atomic::Ordering::Relaxed)
                .then(|| "cancelled".to_string()),
        };
        self.state.results.push(JobRecord {
            command: command.to_string(),
            backend: self.state.backend,
            snippets,
            finished,
            output,
            rows,
            stopped,
        });
        let extra = self.state.results.len().saturating_sub(MAX_RESULTS);
        self.state.results.drain(..extra);
    }
}
