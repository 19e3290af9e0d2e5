//! `hotlab worker`: the child's side. The main thread reads requests from stdin; one job
//! thread (with a large stack for deep script recursion, pinned to the worker's CPU) runs jobs
//! in order and writes responses to stdout. A cancel request sets the job's flag, which the
//! engine checks before every sample.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use super::jobs::run_job;
use super::protocol::{Event, Request, Response, WorkerJob};
use crate::measure::env::pin;
use crate::results::{FailureCause, JobFailed};

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
    jobs: mpsc::Receiver<(u64, WorkerJob)>,
    out: Output,
    flags: Flags,
) {
    // Kept for the thread's life: the job thread stays on the worker's CPU.
    let pinned = cpu.and_then(|c| pin::pin_current_thread(c).ok());
    let on_cpu = pinned.as_ref().map(|g| g.cpu());
    // The live module of `reload` jobs, kept between jobs.
    let mut state = super::command_jobs::State::default();
    for (id, job) in jobs {
        let cancel = flags
            .lock()
            .map(|f| f.get(&id).cloned())
            .unwrap_or_default()
            .unwrap_or_default();
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
        out.send(id, event);
        if let Ok(mut f) = flags.lock() {
            f.remove(&id);
        }
    }
}

/// Serve requests from stdin until EOF or `shutdown`; the job thread runs on `cpu`.
pub fn serve(cpu: Option<usize>) -> ExitCode {
    let out = Output(Arc::new(Mutex::new(std::io::stdout())));
    let flags: Flags = Arc::default();
    let (tx, rx) = mpsc::channel();
    let thread = {
        let (out, flags) = (out.clone(), Arc::clone(&flags));
        std::thread::Builder::new()
            .name("hotlab-job".into())
            .stack_size(JOB_STACK)
            .spawn(move || job_thread(cpu, rx, out, flags))
    };
    let Ok(thread) = thread else {
        eprintln!("error: the worker cannot start its job thread");
        return ExitCode::from(1);
    };
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
    drop(tx);
    let _ = thread.join();
    ExitCode::SUCCESS
}
