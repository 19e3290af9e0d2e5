//! `hotlab worker`: the child's side. The main thread reads requests from stdin; one job
//! thread (with a large stack for deep script recursion, pinned to the worker's CPU) runs jobs
//! in order and writes responses to stdout. A cancel request sets the job's flag, which the
//! engine checks before every sample.
//!
//! The worker never outlives its front end: it asks the kernel for SIGKILL when the process that
//! started it ends (`PR_SET_PDEATHSIG`, checked against `--parent` for the race of a parent that
//! died first), and its read loop ends it when stdin closes, even while a job spins on the job
//! thread (the front end's end of the pipe closes however the front end goes, SIGKILL included).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use super::jobs::run_job;
use super::protocol::{Event, Request, Response, WorkerJob};
use crate::measure::env::pin;
use crate::results::{FailureCause, JobFailed};
use crate::runtime::output::Captured;

/// Stack of the job thread: deep recursion is allowed, runaway recursion stops with an error.
const JOB_STACK: usize = 256 << 20;

/// Responses go out whole, one line each, from either thread.
#[derive(Clone)]
struct Output(Arc<Mutex<std::io::Stdout>>);

impl Output {
    fn send(&self, id: u64, event: Event) {
        let Ok(line) = serde_json::to_string(&Response { id, event }) else {
            return;
        };
        let mut out = match self.0.lock() {
            Ok(o) => o,
            Err(poisoned) => poisoned.into_inner(),
        };
        // If the front end is gone there is nobody to tell; the read loop ends on EOF.
        let _ = writeln!(out, "{line}").and_then(|_| out.flush());
    }
}

type Flags = Arc<Mutex<HashMap<u64, Arc<AtomicBool>>>>;

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

fn job_thread(
    cpu: Option<usize>,
    mem: Option<u64>,
    jobs: mpsc::Receiver<(u64, WorkerJob)>,
    out: Output,
    flags: Flags,
    captured: Captured,
) {
    // Kept for the thread's life: the job thread stays on the worker's CPU.
    let pinned = cpu.and_then(|c| pin::pin_current_thread(c).ok());
    let on_cpu = pinned.as_ref().map(|g| g.cpu());
    // The live module of `reload` jobs, kept between jobs.
    let mut state = super::command_jobs::State::default();
    // Scripts' `print` output goes back with each job, never to stdout (the protocol's pipe).
    crate::runtime::output::capture_into(&captured);
    for (id, job) in jobs {
        let cancel = flags
            .lock()
            .map(|f| f.get(&id).cloned())
            .unwrap_or_default()
            .unwrap_or_default();
        // Each job gets the whole budget again (`runtime::memory`).
        crate::runtime::memory::start_job(mem.or_else(crate::runtime::memory::default_budget));
        out.send(id, Event::Started { cpu: on_cpu });
        let progress_out = out.clone();
        let mut progress = |p| progress_out.send(id, Event::Progress(p));
        let result = catch_unwind(AssertUnwindSafe(|| {
            run_job(&job, &mut state, &cancel, &mut progress)
        }));
        let event = match result {
            Ok(Ok(output)) => Event::Done(output),
            Ok(Err(failure)) => Event::Failed(failure),
            Err(payload) => Event::Failed(JobFailed::new(
                FailureCause::Panic,
                format!(
                    "the worker panicked during the {} job: {} (a bug in hotlab; the worker \
                     goes on)",
                    job.kind(),
                    panic_message(payload.as_ref())
                ),
            )),
        };
        let printed = captured.take();
        if !printed.is_empty() {
            out.send(id, Event::Printed { text: printed });
        }
        out.send(id, event);
        if let Ok(mut f) = flags.lock() {
            f.remove(&id);
        }
    }
}

/// How long the worker waits, once stdin closed or `shutdown` came, for the running job to stop
/// by its cancel flag before it exits anyway (a job in an endless loop never stops).
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// End this process with SIGKILL when its parent ends, and at once if `parent` (the front end's
/// pid) is already gone: a parent that died before the request was made would go unnoticed.
fn die_with_parent(parent: Option<u32>) {
    // SAFETY: plain syscalls without pointers; PR_SET_PDEATHSIG takes the signal number.
    let set = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) };
    if set != 0 {
        eprintln!(
            "warning: the worker cannot ask to end with its front end: {}",
            std::io::Error::last_os_error()
        );
    }
    // SAFETY: getppid has no preconditions.
    let ppid = unsafe { libc::getppid() };
    if let Some(p) = parent
        && i64::from(ppid) != i64::from(p)
    {
        // The front end is gone (we were reparented), or something between it and us forked
        // instead of exec'ing: either way nobody will read an answer. Say which, for the crash
        // report the front end shows.
        eprintln!("hotlab worker: front end pid {p} is not my parent (pid {ppid}); ending");
        std::process::exit(0);
    }
}

/// Serve requests from stdin until EOF or `shutdown`; the job thread runs on `cpu`. `parent` is
/// the front end's pid (`--parent`): the worker ends when that process ends.
pub fn serve(cpu: Option<usize>, parent: Option<u32>, mem: Option<u64>) -> ExitCode {
    die_with_parent(parent);
    // A crash in script code names where it happened before the worker dies.
    super::crash::install();
    let out = Output(Arc::new(Mutex::new(std::io::stdout())));
    let flags: Flags = Arc::default();
    let captured = Captured::default();
    let (tx, rx) = mpsc::channel();
    let thread = {
        let (out, flags, captured) = (out.clone(), Arc::clone(&flags), captured.clone());
        std::thread::Builder::new()
            .name("hotlab-job".into())
            .stack_size(JOB_STACK)
            .spawn(move || job_thread(cpu, mem, rx, out, flags, captured))
    };
    let Ok(thread) = thread else {
        eprintln!("error: the worker cannot start its job thread");
        return ExitCode::from(1);
    };
    let (finished_tx, finished) = mpsc::channel::<()>();
    let watcher = std::thread::spawn(move || {
        let _ = thread.join();
        let _ = finished_tx.send(());
    });
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Request>(&line) {
            Ok(Request::Job { id, job }) => {
                if let Ok(mut f) = flags.lock() {
                    f.insert(id, Arc::new(AtomicBool::new(false)));
                }
                if tx.send((id, job)).is_err() {
                    break;
                }
            }
            Ok(Request::Cancel { id }) => {
                if let Some(flag) = flags.lock().ok().and_then(|f| f.get(&id).cloned()) {
                    flag.store(true, Ordering::Relaxed);
                    // What the job printed so far, at once: a job that never stops (an endless
                    // loop) is killed with its worker, and its output with it. Always sent, so
                    // the front end knows when it has it.
                    out.send(
                        id,
                        Event::Printed {
                            text: captured.take(),
                        },
                    );
                }
            }
            Ok(Request::Shutdown) => break,
            Err(e) => out.send(
                0,
                Event::Failed(JobFailed::new(
                    FailureCause::Input,
                    format!("error: the worker cannot read a request line: {e}"),
                )),
            ),
        }
    }
    // The front end is gone or done: stop every job (a measuring one ends within a sample),
    // give the running job a moment, and exit even if it spins (the job thread cannot be
    // stopped from outside; the process can).
    drop(tx);
    if let Ok(f) = flags.lock() {
        for flag in f.values() {
            flag.store(true, Ordering::Relaxed);
        }
    }
    if finished.recv_timeout(EXIT_GRACE).is_ok() {
        let _ = watcher.join();
        return ExitCode::SUCCESS;
    }
    // Every response was flushed when sent; a job thread blocked on a write must not block this.
    std::process::exit(0)
}
