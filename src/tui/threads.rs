//! The threads behind the screen: the session thread runs session lines and builds the
//! ladder's machine code (every job goes on to the worker process) and streams what its sink
//! receives; the background thread probes the machine for the status line. The UI thread only
//! draws and reads keys, and sleeps in `poll` between events.

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread;

use super::model::CodeView;
use crate::ladder::Ladder;
use crate::session::{JobRecord, LineFlow, LiveSnapshot, Session, SessionState, Sink};

/// A line for the session thread.
#[derive(Debug)]
pub struct LineRequest {
    /// The line.
    pub line: String,
    /// The snippet text to set first.
    pub text: Option<String>,
}

/// A request for the ladder's code: the ladder as chosen, and the snippet text.
#[derive(Debug)]
pub struct CodeRequest {
    /// The ladder, its steps in the chosen order and choice.
    pub ladder: Ladder,
    /// The editor's text.
    pub text: String,
}

/// What the session thread is asked to do, in order.
#[derive(Debug)]
pub enum ThreadRequest {
    /// Run a session line; its report is a [`FromSession`].
    Line(LineRequest),
    /// Build the ladder's code in the worker; the answer is a [`Background::Code`]. Only the
    /// newest waiting request is built.
    Code(CodeRequest),
    /// Build the machine code of snippets' functions on backends (`(snippet, backend)`), with
    /// the editor's text for the current snippet; the answer is a [`Background::Functions`].
    Functions {
        /// The pairs.
        pairs: Vec<(String, String)>,
        /// The editor's text.
        text: String,
    },
}

/// What the session thread reports.
#[derive(Debug)]
pub enum FromSession {
    /// A live snapshot of the running job.
    Progress(LiveSnapshot),
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
    fn progress(&mut self, progress: &LiveSnapshot) {
        let _ = self.tx.send(FromSession::Progress(progress.clone()));
    }
}

/// The channels of the threads behind the screen.
#[derive(Debug)]
pub struct Threads {
    /// Requests for the session thread.
    pub requests: Sender<ThreadRequest>,
    /// What the session thread reports about lines.
    pub from_session: Receiver<FromSession>,
    /// The machine probe, and the ladder's code built by the session thread.
    pub from_background: Receiver<Background>,
}

/// Start the background thread and the session thread; the session thread ends when the
/// request channel closes.
pub fn spawn(session: Session) -> std::io::Result<Threads> {
    let (background_tx, from_background) = channel();
    spawn_background(background_tx.clone())?;
    let (requests, from_session) = spawn_session(session, background_tx)?;
    Ok(Threads {
        requests,
        from_session,
        from_background,
    })
}

fn spawn_session(
    mut session: Session,
    code_tx: Sender<Background>,
) -> std::io::Result<(Sender<ThreadRequest>, Receiver<FromSession>)> {
    let (req_tx, req_rx) = channel::<ThreadRequest>();
    let (tx, rx) = channel();
    thread::Builder::new()
        .name("hotlab-session".into())
        .spawn(move || {
            let mut waiting: VecDeque<ThreadRequest> = VecDeque::new();
            loop {
                if waiting.is_empty() {
                    match req_rx.recv() {
                        Ok(r) => waiting.push_back(r),
                        Err(_) => break,
                    }
                }
                waiting.extend(req_rx.try_iter());
                let Some(req) = waiting.pop_front() else {
                    continue;
                };
                let req = match req {
                    // Only the newest code request matters.
                    ThreadRequest::Code(_)
                        if waiting.iter().any(|r| matches!(r, ThreadRequest::Code(_))) =>
                    {
                        continue;
                    }
                    ThreadRequest::Code(CodeRequest { ladder, text }) => {
                        let code = session
                            .ladder_code(ladder, &text)
                            .map(|steps| CodeView::from_steps(&steps))
                            .map_err(|e| e.to_string());
                        let _ = code_tx.send(Background::Code(code));
                        continue;
                    }
                    ThreadRequest::Functions { pairs, text } => {
                        let built = pairs
                            .into_iter()
                            .map(|(snippet, backend)| {
                                let key = format!("{snippet}@{backend}");
                                let code = match crate::session::Backend::from_name(&backend) {
                                    Some(b) => session
                                        .function_code(&snippet, b, &text)
                                        .map(|l| CodeView::from_listings(&l))
                                        .map_err(|e| e.to_string()),
                                    None => Err(format!("no backend named {backend}")),
                                };
                                (key, code)
                            })
                            .collect();
                        let _ = code_tx.send(Background::Functions(built));
                        continue;
                    }
                    ThreadRequest::Line(req) => req,
                };
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
                    Ok(o) => (None, o == LineFlow::Quit),
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

/// What the background thread reports, and the ladder's code the session thread built.
#[derive(Debug)]
pub enum Background {
    /// The ladder's code per step (or why there is none).
    Code(Result<Vec<CodeView>, String>),
    /// Functions' machine code per `snippet@backend` (or why there is none).
    Functions(Vec<(String, Result<Vec<CodeView>, String>)>),
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

/// Start the background thread: it probes the machine once for the status line.
fn spawn_background(tx: Sender<Background>) -> std::io::Result<()> {
    thread::Builder::new()
        .name("hotlab-probe".into())
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
        })?;
    Ok(())
}
