//! The threads behind the screen: the session thread runs session lines (every job goes on to
//! the worker process) and streams what its sink receives; the background thread builds the
//! ladder's machine code and probes the machine for the status line. The UI thread only draws
//! and reads keys, and sleeps in `poll` between events.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread;

use super::model::CodeView;
use crate::ladder::Ladder;
use crate::ladder::bench::{Bench, Build, DEFAULT_SNIPPET, Method};
use crate::lang::{self, SourceFile};
use crate::session::{JobRecord, Outcome, Session, SessionState, Sink};
use crate::worker::LiveProgress;

/// A line for the session thread.
#[derive(Debug)]
pub struct LineRequest {
    /// The line.
    pub line: String,
    /// The snippet text to set first.
    pub text: Option<String>,
}

/// What the session thread reports.
#[derive(Debug)]
pub enum FromSession {
    /// A live snapshot of the running job.
    Progress(LiveProgress),
    /// A line finished.
    Done {
        /// The line.
        line: String,
        /// The texts the sink received.
        texts: Vec<String>,
        /// The error, if the line failed.
        error: Option<String>,
        /// Whether the session asked to leave.
        quit: bool,
        /// The session's state after it.
        state: Box<SessionState>,
        /// The result it recorded, if it recorded one.
        record: Option<Box<JobRecord>>,
    },
}

struct ChannelSink<'a> {
    tx: &'a Sender<FromSession>,
    texts: Vec<String>,
}

impl Sink for ChannelSink<'_> {
    fn text(&mut self, text: &str) {
        self.texts.push(text.to_string());
    }
    fn progress(&mut self, progress: &LiveProgress) {
        let _ = self.tx.send(FromSession::Progress(progress.clone()));
    }
}

/// Start the session thread; it ends when the request channel closes.
pub fn spawn_session(
    mut session: Session,
) -> std::io::Result<(Sender<LineRequest>, Receiver<FromSession>)> {
    let (req_tx, req_rx) = channel::<LineRequest>();
    let (tx, rx) = channel();
    thread::Builder::new()
        .name("hotlab-session".into())
        .spawn(move || {
            for req in req_rx {
                if let Some(text) = &req.text {
                    session.set_snippet_text(text);
                }
                let before = session.state().results.last().cloned();
                let mut sink = ChannelSink {
                    tx: &tx,
                    texts: Vec::new(),
                };
                let result = session.run_line(&req.line, &mut sink);
                let texts = sink.texts;
                let after = session.state().results.last();
                let record = (after != before.as_ref())
                    .then(|| after.cloned().map(Box::new))
                    .flatten();
                let (error, quit) = match result {
                    Ok(o) => (None, o == Outcome::Quit),
                    Err(e) => (Some(e.to_string()), false),
                };
                let msg = FromSession::Done {
                    line: req.line,
                    texts,
                    error,
                    quit,
                    state: Box::new(session.state().clone()),
                    record,
                };
                if tx.send(msg).is_err() {
                    break;
                }
            }
        })?;
    Ok((req_tx, rx))
}

/// What the background thread reports.
#[derive(Debug)]
pub enum Background {
    /// The ladder's code per step (or why there is none).
    Code(Result<Vec<CodeView>, String>),
    /// Timer and health for the status line.
    Machine {
        /// `tsc, 9.8 ns`.
        timer: Option<String>,
        /// Health warnings, short.
        health: Vec<String>,
        /// Why hardware counters do not open here, if they do not.
        no_pmu: Option<String>,
    },
}

/// The ladder's machine code around `snippet`'s `fn call` (the empty method when the snippet
/// has none), built like `hotlab asm --ladder`.
pub fn ladder_code(ladder: Ladder, snippet: &str) -> Result<Vec<CodeView>, String> {
    let text = if snippet.contains("fn call(") {
        snippet
    } else {
        DEFAULT_SNIPPET
    };
    let program = lang::compile(std::sync::Arc::new(SourceFile::new("snippet", text)))
        .map_err(|_| "the snippet does not compile (see the editor)".to_string())?;
    let bench = Bench::build(ladder, Method::Snippet(&program), &[Build::Jit])
        .map_err(|e| e.to_string())?;
    let steps = crate::cli::step_code(&bench, Build::Jit, crate::backend::disasm::Syntax::Intel);
    Ok(CodeView::from_steps(&steps))
}

/// A request for the ladder's code: the ladder as chosen, and the snippet text.
pub type CodeRequest = (Ladder, String);

/// Start the background thread: it probes the machine once, then builds code on request.
pub fn spawn_background() -> std::io::Result<(Sender<CodeRequest>, Receiver<Background>)> {
    let (req_tx, req_rx) = channel::<CodeRequest>();
    let (tx, rx) = channel();
    thread::Builder::new()
        .name("hotlab-code".into())
        .spawn(move || {
            let probes = crate::measure::env::health::LiveProbes::probe();
            let report = crate::measure::env::health::collect(std::path::Path::new("/"), &probes);
            let timer = probes
                .timer
                .map(|t| format!("{:?} {:.1} ns", t.kind, t.precision.nanos()).to_lowercase());
            let health = report
                .items
                .iter()
                .filter(|i| i.warning.is_some())
                .map(|i| i.name.clone())
                .collect();
            let no_pmu = probes.hw_counters.clone().err().map(|e| e.to_string());
            let _ = tx.send(Background::Machine {
                timer,
                health,
                no_pmu,
            });
            while let Ok(mut req) = req_rx.recv() {
                // Only the newest request matters.
                while let Ok(newer) = req_rx.try_recv() {
                    req = newer;
                }
                let (ladder, text) = req;
                let code = std::panic::catch_unwind(move || ladder_code(ladder, &text))
                    .unwrap_or_else(|_| Err("building the ladder's code panicked".into()));
                if tx.send(Background::Code(code)).is_err() {
                    break;
                }
            }
        })?;
    Ok((req_tx, rx))
}
