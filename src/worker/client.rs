//! The front end's side: start `hotlab worker`, send a job, stream its events back, and contain
//! every fault. A job that outlives its time limit, or ignores a cancel, is ended by killing the
//! worker; a worker that dies (a signal, a panic that escaped, an exit) is reported with what
//! killed it. Either way the next job gets a fresh worker.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use super::protocol::{Event, Request, Response, WorkerJob};
use crate::results::{JobFailed, JobReport, LiveSnapshot};

/// How long a cancelled measuring job may take to answer with the samples it has before the
/// worker is killed. The engine stops within a sample (it checks the flag before each), but the
/// statistics after it, and a worker thread pinned to a busy CPU, can take hundreds of
/// milliseconds on a loaded machine: past this grace the worker is killed, so a cancel always
/// ends the job within about 100 ms (a one-shot `hotlab check`, which has nothing to show but
/// that answer, waits longer: [`Worker::set_cancel_grace`]). Jobs that cannot stop by
/// themselves (run, compile, doctor, bench) are killed at once.
pub const CANCEL_GRACE: Duration = Duration::from_millis(60);
/// How often the wait loop looks at the cancel flag and the clock.
const POLL: Duration = Duration::from_millis(5);

/// How long a front end that is about to kill its worker (a job cancelled or out of time) waits
/// for the job's output so far, which the worker sends in answer to the cancel.
const PRINTED_WAIT: Duration = Duration::from_millis(250);
/// How much of the worker's stderr is kept for crash reports.
const STDERR_KEEP: usize = 4096;

/// How to start a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerOptions {
    /// The hotlab executable (`std::env::current_exe()`, or `CARGO_BIN_EXE_hotlab` in tests).
    pub exe: PathBuf,
    /// The CPU the worker's job thread is pinned to.
    pub cpu: Option<usize>,
    /// Each job's memory budget in bytes (`--mem`; `None`: `runtime::memory::default_budget`).
    pub mem: Option<u64>,
}

impl WorkerOptions {
    /// This executable, pinned to `cpu`, with the default memory budget.
    pub fn current(cpu: Option<usize>) -> std::io::Result<WorkerOptions> {
        Ok(WorkerOptions {
            exe: std::env::current_exe()?,
            cpu,
            mem: None,
        })
    }
}

/// How a job ended without an output.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkerError {
    /// The job failed inside a healthy worker.
    #[error("{}", .0.message)]
    Failed(JobFailed),
    /// The job ran past its limit and the worker was killed.
    #[error("the {job} did not finish within {}: it was stopped (a new worker takes the next job)", secs(*.limit))]
    TimedOut {
        /// The job kind (`snippet` for run jobs).
        job: String,
        /// The limit.
        limit: Duration,
    },
    /// The job was cancelled and did not stop by itself, so the worker was killed.
    #[error("cancelled: the {job} was stopped")]
    Cancelled {
        /// The job kind.
        job: String,
    },
    /// The worker died during the job.
    #[error("the worker crashed: {signal} ({why}){}{}", crash_site(.at), tail(.stderr))]
    Crashed {
        /// `SIGSEGV`, `exit code 101`, ...
        signal: String,
        /// What that usually means for a snippet.
        why: String,
        /// Where in script code, when the worker could tell (`` `main` at FILE:LINE:COL ``,
        /// see `worker::crash`).
        at: Option<String>,
        /// The end of the worker's stderr.
        stderr: String,
    },
    /// The worker could not be started or talked to.
    #[error("the worker cannot be used: {0}")]
    Broken(String),
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// ` in `main` at FILE:LINE:COL` for a crash's message.
pub fn crash_site(at: &Option<String>) -> String {
    at.as_ref().map_or(String::new(), |at| format!(" in {at}"))
}

fn tail(stderr: &str) -> String {
    let t = stderr.trim();
    if t.is_empty() {
        String::new()
    } else {
        format!("\nworker stderr:\n{t}")
    }
}

/// The name of a fatal signal and what it means for a snippet.
pub fn describe_status(status: ExitStatus) -> (String, String) {
    match status.signal() {
        Some(libc::SIGSEGV) => (
            "SIGSEGV".into(),
            "the snippet read or wrote memory it does not own: .clif code has no checks, nor .hot code under --checks off".into(),
        ),
        Some(libc::SIGBUS) => (
            "SIGBUS".into(),
            "the snippet accessed a misaligned or unmapped address".into(),
        ),
        Some(libc::SIGILL) => (
            "SIGILL".into(),
            "the snippet hit a trap instruction (a .clif `trap`, or a failed check)".into(),
        ),
        Some(libc::SIGFPE) => (
            "SIGFPE".into(),
            "the snippet divided by zero or overflowed a division in .clif code".into(),
        ),
        Some(libc::SIGTRAP) => (
            "SIGTRAP".into(),
            "the snippet hit a debug trap (a .clif `debugtrap`)".into(),
        ),
        Some(libc::SIGABRT) => (
            "SIGABRT".into(),
            "the worker aborted, e.g. a panic that could not unwind".into(),
        ),
        Some(libc::SIGKILL) => ("SIGKILL".into(), "killed from outside the session".into()),
        Some(sig) => (
            format!("signal {sig}"),
            "the snippet or the system ended it".into(),
        ),
        None => (
            format!("exit code {}", status.code().unwrap_or(-1)),
            "the worker stopped without finishing the job".into(),
        ),
    }
}

type SpawnRequest = (Command, mpsc::Sender<std::io::Result<Child>>);

/// Start `cmd` from a thread that lasts as long as the process. The worker asks for SIGKILL when
/// its parent ends, and to the kernel the parent is the *thread* that forked it: a worker
/// started from a thread that ends (a TUI's session thread, a test's thread, a job's helper)
/// would be killed with that thread, while its session goes on. This thread never ends, so the
/// worker dies with the front end's process and only then.
fn spawn_from_lasting_thread(cmd: Command) -> std::io::Result<Child> {
    static SPAWNER: std::sync::OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> =
        std::sync::OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        let started = std::thread::Builder::new()
            .name("hotlab-spawn".into())
            .spawn(move || {
                // The sender lives in the static, so this loop runs until the process ends.
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            });
        if let Err(e) = started {
            eprintln!("warning: hotlab cannot start its spawning thread: {e}");
        }
        Mutex::new(tx)
    });
    let (reply_tx, reply) = mpsc::channel();
    let sent = match spawner.lock() {
        Ok(tx) => tx.send((cmd, reply_tx)),
        Err(poisoned) => poisoned.into_inner().send((cmd, reply_tx)),
    };
    match sent {
        Ok(()) => reply
            .recv()
            .unwrap_or_else(|_| Err(std::io::Error::other("the spawning thread ended"))),
        // No spawning thread: start it from this one (the pipe's end still ends the worker).
        Err(mpsc::SendError((mut cmd, _))) => cmd.spawn(),
    }
}

enum WireLine {
    Response(Box<Response>),
    Garbled(String),
    Eof,
}

/// A running worker process.
pub struct Worker {
    options: WorkerOptions,
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<WireLine>,
    stderr: Arc<Mutex<String>>,
    next_id: u64,
    /// What the last job's script printed (`print`), until taken.
    printed: String,
    /// How long a cancelled cooperative job may take to answer ([`CANCEL_GRACE`] unless set).
    cancel_grace: Duration,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Worker(pid {})", self.child.id())
    }
}

impl Worker {
    /// How long a cancelled measuring job (measure, ladder, check) may take to answer with
    /// what it has before the worker is killed (default [`CANCEL_GRACE`]).
    pub fn set_cancel_grace(&mut self, grace: Duration) {
        self.cancel_grace = grace;
    }

    /// Start a worker.
    pub fn spawn(options: WorkerOptions) -> Result<Worker, WorkerError> {
        let mut cmd = Command::new(&options.exe);
        cmd.arg("worker");
        if let Some(cpu) = options.cpu {
            cmd.arg("--cpu").arg(cpu.to_string());
        }
        if let Some(mem) = options.mem {
            cmd.arg("--mem-bytes").arg(mem.to_string());
        }
        cmd.arg("--parent").arg(std::process::id().to_string());
        // Its own process group: Ctrl-C in the terminal reaches the front end only, which
        // then cancels the job through the protocol.
        cmd.process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = spawn_from_lasting_thread(cmd).map_err(|e| {
            WorkerError::Broken(format!("cannot start {}: {e}", options.exe.display()))
        })?;
        let (Some(stdin), Some(stdout), Some(mut err)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            return Err(WorkerError::Broken(
                "the worker's pipes did not open".into(),
            ));
        };
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let msg = match serde_json::from_str::<Response>(&line) {
                    Ok(r) => WireLine::Response(Box::new(r)),
                    Err(_) => WireLine::Garbled(line),
                };
                if tx.send(msg).is_err() {
                    return;
                }
            }
            let _ = tx.send(WireLine::Eof);
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let keep = Arc::clone(&stderr);
        // Drained always, so a chatty worker never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut buf = [0u8; 1024];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Ok(mut s) = keep.lock() {
                    s.push_str(&String::from_utf8_lossy(&buf[..n]));
                    if s.len() > STDERR_KEEP {
                        let cut = s.len() - STDERR_KEEP;
                        let cut = (cut..s.len()).find(|&i| s.is_char_boundary(i)).unwrap_or(0);
                        s.drain(..cut);
                    }
                }
            }
        });
        Ok(Worker {
            options,
            child,
            stdin,
            lines,
            stderr,
            next_id: 1,
            printed: String::new(),
            cancel_grace: CANCEL_GRACE,
        })
    }

    /// What the last job's script printed (`print(e)` lines), taken: the worker captures its
    /// scripts' output per job instead of writing it to its stdout (the protocol's pipe).
    pub fn take_printed(&mut self) -> String {
        std::mem::take(&mut self.printed)
    }

    /// The worker's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The options it was started with.
    pub fn options(&self) -> &WorkerOptions {
        &self.options
    }

    fn send(&mut self, req: &Request) -> Result<(), WorkerError> {
        let line = serde_json::to_string(req)
            .map_err(|e| WorkerError::Broken(format!("cannot encode a request: {e}")))?;
        writeln!(self.stdin, "{line}")
            .and_then(|_| self.stdin.flush())
            .map_err(|e| WorkerError::Broken(format!("cannot write to the worker: {e}")))
    }

    /// Kill the worker's process group at once (SIGKILL: the worker and anything it started,
    /// e.g. the linker of the object backend).
    fn kill(&mut self) {
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: plain syscall; the worker leads its own process group (`process_group(0)`),
        // so `-pid` names exactly the worker and its children.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        let _ = self.child.kill();
    }

    /// Kill the worker and start a new one in its place. The old process is reaped on a
    /// background thread, so a restart costs the start of a process, not the end of one.
    pub fn restart(&mut self) -> Result<(), WorkerError> {
        self.kill();
        let fresh = Worker::spawn(self.options.clone())?;
        let mut old = std::mem::replace(self, fresh);
        // What the killed job printed is still to be shown.
        self.printed = std::mem::take(&mut old.printed);
        self.cancel_grace = old.cancel_grace;
        std::thread::spawn(move || drop(old));
        Ok(())
    }

    /// The exit status of a worker whose stdout ended, waiting briefly for it to die.
    fn death(&mut self) -> WorkerError {
        let deadline = Instant::now() + Duration::from_secs(2);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(POLL),
                _ => break None,
            }
        };
        // Give the stderr thread a moment to take the last words.
        std::thread::sleep(Duration::from_millis(20));
        let stderr = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        // The line the worker's crash handler wrote, if it did (`worker::crash`).
        let (at, stderr) = super::crash::location_in(&stderr);
        match status {
            Some(s) => {
                let (signal, why) = describe_status(s);
                WorkerError::Crashed {
                    signal,
                    why,
                    at,
                    stderr,
                }
            }
            None => WorkerError::Crashed {
                signal: "closed its output".into(),
                why: "the worker stopped talking and was killed".into(),
                at,
                stderr,
            },
        }
    }

    /// Run `job`: progress snapshots go to `on_progress` as they arrive. The job is stopped
    /// (and the worker replaced) when it runs past `limit`, or when `cancel` is set and the
    /// job does not stop by itself within a short grace. Any fault that ends the worker
    /// starts a new one before this returns.
    pub fn run(
        &mut self,
        job: WorkerJob,
        limit: Duration,
        cancel: &AtomicBool,
        on_progress: &mut dyn FnMut(LiveSnapshot),
    ) -> Result<JobReport, WorkerError> {
        self.run_paced(job, limit, false, cancel, on_progress)
    }

    /// [`Worker::run`], where with `per_progress` the limit starts again at each progress
    /// event: a job of many steps that reports each one (`bench`'s cells) may take as long as
    /// it needs, while any one step that stops reporting is stopped at the limit.
    pub fn run_paced(
        &mut self,
        job: WorkerJob,
        limit: Duration,
        per_progress: bool,
        cancel: &AtomicBool,
        on_progress: &mut dyn FnMut(LiveSnapshot),
    ) -> Result<JobReport, WorkerError> {
        let id = self.next_id;
        self.next_id += 1;
        self.printed.clear();
        let cooperative = matches!(
            job,
            WorkerJob::Measure { .. } | WorkerJob::Ladder { .. } | WorkerJob::Check { .. }
        );
        let kind = match job {
            WorkerJob::Run { .. }
            | WorkerJob::RunLive { .. }
            | WorkerJob::Compile { .. }
            | WorkerJob::RunFile { .. } => "snippet".to_string(),
            ref other => format!("{} job", other.kind()),
        };
        // A worker that died while idle (killed from outside, say) is replaced before the job,
        // so the job does not fail for a death it did not cause.
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            self.restart()?;
        }
        // Kept to send again if the worker dies before it takes the job (below).
        let mut unsent = Some(job.clone());
        if let Err(e) = self.send(&Request::Job { id, job }) {
            // A worker that cannot take a request is replaced; the caller may retry.
            let _ = self.restart();
            return Err(e);
        }
        // Whether the worker answered `Started`: until then the job has not run.
        let mut started = false;
        let mut deadline = Instant::now() + limit;
        let mut cancelled_at: Option<Instant> = None;
        // Whether the worker answered the cancel with what the job printed so far.
        let mut answered = false;
        loop {
            if cancelled_at.is_none() && cancel.load(Ordering::Relaxed) {
                cancelled_at = Some(Instant::now());
                // If this fails the worker is dying; the receive below will say so.
                let _ = self.send(&Request::Cancel { id });
            }
            let grace = if cooperative {
                self.cancel_grace
            } else {
                Duration::ZERO
            };
            if cancelled_at.is_some_and(|t| t.elapsed() > grace) {
                if !answered {
                    self.collect_printed(id);
                }
                self.restart()?;
                return Err(WorkerError::Cancelled { job: kind });
            }
            if Instant::now() > deadline {
                if self.send(&Request::Cancel { id }).is_ok() {
                    self.collect_printed(id);
                }
                self.restart()?;
                return Err(WorkerError::TimedOut { job: kind, limit });
            }
            match self.lines.recv_timeout(POLL) {
                Ok(WireLine::Response(r)) if r.id == id => match r.event {
                    Event::Started { .. } => started = true,
                    Event::Progress(p) => {
                        if per_progress {
                            deadline = Instant::now() + limit;
                        }
                        on_progress(p)
                    }
                    Event::Printed { text } => {
                        answered |= cancelled_at.is_some();
                        self.printed.push_str(&text);
                    }
                    Event::Done(out) => return Ok(out),
                    Event::Failed(f) => return Err(WorkerError::Failed(f)),
                },
                // Late events of an earlier job, or a complaint about a request line.
                Ok(WireLine::Response(_)) => {}
                Ok(WireLine::Garbled(line)) => {
                    let _ = self.restart();
                    return Err(WorkerError::Broken(format!(
                        "the worker wrote a line that is not a response: {line}"
                    )));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Ok(WireLine::Eof) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let err = self.death();
                    self.restart()?;
                    // A worker killed while idle can look alive to `try_wait` above (its
                    // threads are still exiting) and take the request into its pipe: the job
                    // never started, so its replacement gets it once, with the same id.
                    // (Not a job the caller has cancelled meanwhile: it wants no answer.)
                    if !started
                        && cancelled_at.is_none()
                        && let Some(again) = unsent.take()
                    {
                        self.next_id = self.next_id.max(id + 1);
                        if let Err(e) = self.send(&Request::Job { id, job: again }) {
                            let _ = self.restart();
                            return Err(e);
                        }
                        continue;
                    }
                    return Err(err);
                }
            }
        }
    }
}

impl Worker {
    /// Before the worker is killed for job `id`: what the job printed so far, which the worker
    /// sends in answer to a `Cancel` (waiting at most [`PRINTED_WAIT`] for it).
    fn collect_printed(&mut self, id: u64) {
        let until = Instant::now() + PRINTED_WAIT;
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(WireLine::Response(r)) if r.id == id => match r.event {
                    Event::Printed { text } => return self.printed.push_str(&text),
                    Event::Done(_) | Event::Failed(_) => return,
                    Event::Started { .. } | Event::Progress(_) => {}
                },
                Ok(WireLine::Response(_)) => {}
                Ok(WireLine::Garbled(_) | WireLine::Eof) | Err(_) => return,
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.send(&Request::Shutdown);
        // A job may still be running (e.g. an endless loop): do not wait for it.
        self.kill();
        let _ = self.child.wait();
    }
}
