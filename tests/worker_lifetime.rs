//! The worker never outlives its front end: a REPL killed (SIGKILL or SIGTERM) while its
//! worker spins in an endless loop takes the worker with it, a worker whose stdin closes
//! mid-job exits, a worker started from a thread that has ended stays with its session, and a
//! worker killed while idle is replaced without failing the next job. Bounds are generous
//! (20 s): they prove that something ends, not how fast.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use hotlab::session::JobReport;
use hotlab::session::{Collect, Session, SessionOptions};
use hotlab::worker::protocol::{Backend, Request, SnippetSource, WorkerJob};
use hotlab::worker::{Worker, WorkerOptions};

const EXE: &str = env!("CARGO_BIN_EXE_hotlab");
const BOUND: Duration = Duration::from_secs(20);
const SPIN: &str =
    "fn main() -> i64 {\n    var i = 0\n    while true { i += 1 }\n    return i\n}\n";

/// Whether a process runs: its `/proc` entry exists and it is not a zombie.
fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim().chars().next());
    !matches!(state, Some('Z' | 'X') | None)
}

fn gone_within(pid: u32, bound: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < bound {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    !alive(pid)
}

/// The `hotlab worker` children of `parent`.
fn workers_of(parent: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            ppid == Some(parent) && cmdline.split(|&b| b == 0).any(|a| a == b"worker")
        })
        .collect()
}

/// A REPL whose worker is spinning in `main`'s endless loop, and that worker's pid.
fn repl_with_a_spinning_worker(state: &std::path::Path) -> (Child, u32) {
    let mut repl = Command::new(EXE)
        .arg("repl")
        .env("XDG_STATE_HOME", state)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the repl starts");
    let mut stdin = repl.stdin.take().expect("stdin");
    write!(stdin, ":set limit 60\n{SPIN}:run\n").expect("the script goes in");
    // Kept open: the REPL waits for more input after the job, as a person at a terminal would.
    std::mem::forget(stdin);
    let start = Instant::now();
    let worker = loop {
        if let Some(&w) = workers_of(repl.id()).first() {
            break w;
        }
        assert!(start.elapsed() < BOUND, "the repl started no worker");
        std::thread::sleep(Duration::from_millis(50));
    };
    // Let the job start spinning.
    std::thread::sleep(Duration::from_millis(500));
    assert!(alive(worker), "the worker runs the job");
    (repl, worker)
}

#[test]
fn a_killed_or_terminated_repl_takes_its_spinning_worker_with_it() {
    for signal in [libc::SIGKILL, libc::SIGTERM] {
        let dir = tempfile::tempdir().expect("temp dir");
        let (mut repl, worker) = repl_with_a_spinning_worker(dir.path());
        // SAFETY: a plain syscall on the child this test started.
        unsafe { libc::kill(repl.id() as libc::pid_t, signal) };
        let _ = repl.wait();
        assert!(
            gone_within(worker, BOUND),
            "the worker {worker} still runs {} s after its repl got signal {signal}",
            BOUND.as_secs()
        );
    }
}

#[test]
fn a_worker_whose_stdin_closes_mid_job_exits() {
    // Started without `--parent` by this test's thread, which goes on living: only the closed
    // pipe can end it.
    let mut child = Command::new(EXE)
        .arg("worker")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the worker starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let job = Request::Job {
        id: 1,
        job: WorkerJob::Run {
            snippet: SnippetSource {
                name: "spin.hot".into(),
                text: SPIN.into(),
            },
            backend: Backend::Jit,
            checks: true,
            function: "main".into(),
        },
    };
    writeln!(stdin, "{}", serde_json::to_string(&job).expect("encodes")).expect("sent");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut started = String::new();
    out.read_line(&mut started).expect("a response");
    assert!(started.contains("started"), "{started}");
    std::thread::sleep(Duration::from_millis(300));
    drop(stdin);
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("waits") {
            break s;
        }
        if start.elapsed() > BOUND {
            let _ = child.kill();
            panic!(
                "the worker spins on {} s after its stdin closed",
                BOUND.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
}

fn options() -> SessionOptions {
    SessionOptions {
        exe: EXE.into(),
        store: None,
    }
}

#[test]
fn a_worker_started_from_a_thread_that_ended_stays_with_its_session() {
    let mut session = std::thread::spawn(|| {
        let mut s = Session::new(options());
        s.run_line("fn main() -> i64 { return 7 }", &mut Collect::default())
            .expect("defines");
        s.run_line(":run", &mut Collect::default()).expect("runs");
        s
    })
    .join()
    .expect("the thread ends");
    let pid = session.worker_pid().expect("a worker");
    // The thread that started the worker has ended; the worker must not have ended with it.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        alive(pid),
        "the worker died with the thread that started it"
    );
    let mut out = Collect::default();
    session.run_line(":run", &mut out).expect("runs again");
    assert!(out.all().contains('7'), "{}", out.all());
    assert_eq!(session.worker_pid(), Some(pid), "the same worker ran it");
}

#[test]
fn a_worker_killed_while_idle_is_replaced_before_the_next_job() {
    let mut w = Worker::spawn(WorkerOptions {
        exe: EXE.into(),
        cpu: None,
        mem: None,
    })
    .expect("the worker starts");
    let job = || WorkerJob::Run {
        snippet: SnippetSource {
            name: "t.hot".into(),
            text: "fn main() -> i64 { return 5 }".into(),
        },
        backend: Backend::Jit,
        checks: true,
        function: "main".into(),
    };
    let limit = Duration::from_secs(30);
    let no = AtomicBool::new(false);
    w.run(job(), limit, &no, &mut |_| {}).expect("runs");
    let pid = w.pid();
    // SAFETY: a plain syscall on the worker this test started.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    let start = Instant::now();
    while w.pid() == pid && start.elapsed() < BOUND {
        // Wait for the death to be visible to the client (it reaps its child on try_wait).
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.is_empty() || stat.contains(") Z") {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = w
        .run(job(), limit, &no, &mut |_| {})
        .expect("the next job runs");
    assert!(
        matches!(out, JobReport::Ran { ref value, .. } if value == "5"),
        "{out:?}"
    );
    assert_ne!(w.pid(), pid, "a new worker ran it");
}
