//! Faults are contained: an endless loop is stopped at its limit, a crash is reported with its
//! signal, a cancel stops a measuring job, and a panic is reported — and after each one the
//! next job runs. The only time bounds are generous upper bounds proving that something stops.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hotlab::results::{FailureCause, JobReport};
use hotlab::worker::protocol::{Backend, Contestant, MeasureSettings, SnippetSource, WorkerJob};
use hotlab::worker::{Worker, WorkerError, WorkerOptions};

fn worker() -> Worker {
    Worker::spawn(WorkerOptions {
        exe: env!("CARGO_BIN_EXE_hotlab").into(),
        cpu: None,
        mem: None,
    })
    .expect("the worker starts")
}

fn hot(text: &str) -> SnippetSource {
    SnippetSource {
        name: "t.hot".into(),
        text: text.into(),
    }
}

const SUM: &str = "fn run(n: i64) -> i64 {\n    var s = 0\n    for i in 0..n { s += i }\n    return s\n}\nfn main() -> i64 { return run(10) }\n";

fn run_main(
    w: &mut Worker,
    snippet: SourceOrText,
    limit: Duration,
) -> Result<JobReport, WorkerError> {
    let snippet = match snippet {
        SourceOrText::Text(t) => hot(t),
        SourceOrText::Source(s) => s,
    };
    let job = WorkerJob::Run {
        snippet,
        backend: Backend::Jit,
        checks: true,
        function: "main".into(),
    };
    w.run(job, limit, &AtomicBool::new(false), &mut |_| {})
}

enum SourceOrText {
    Text(&'static str),
    Source(SnippetSource),
}

fn assert_healthy(w: &mut Worker) {
    let out = run_main(w, SourceOrText::Text(SUM), Duration::from_secs(30)).expect("runs");
    assert!(
        matches!(out, JobReport::Ran { ref value, .. } if value == "45"),
        "{out:?}"
    );
}

#[test]
fn endless_loop_is_stopped_at_the_limit_and_a_new_worker_takes_over() {
    let mut w = worker();
    let pid = w.pid();
    let looping = "fn main() -> i64 {\n    var i = 0\n    while true { i += 1 }\n    return i\n}\n";
    let start = Instant::now();
    let err = run_main(&mut w, SourceOrText::Text(looping), Duration::from_secs(1)).unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "took {:?}",
        start.elapsed()
    );
    assert!(matches!(err, WorkerError::TimedOut { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.starts_with("the snippet did not finish within 1 s: it was stopped"),
        "{msg}"
    );
    assert_ne!(w.pid(), pid, "a new worker was started");
    assert_healthy(&mut w);
}

#[test]
fn a_clif_store_to_address_zero_is_a_reported_crash() {
    let mut w = worker();
    let pid = w.pid();
    let clif = "function %main() -> i64 {\nblock0:\n    v0 = iconst.i64 0\n    v1 = iconst.i64 7\n    store v1, v0\n    return v1\n}\n";
    let snippet = SnippetSource {
        name: "null.clif".into(),
        text: clif.into(),
    };
    let err = run_main(
        &mut w,
        SourceOrText::Source(snippet),
        Duration::from_secs(30),
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("the worker crashed: SIGSEGV (the snippet"),
        "{msg}"
    );
    assert_ne!(w.pid(), pid);
    assert_healthy(&mut w);
}

#[test]
fn cancel_stops_a_measuring_job() {
    let mut w = worker();
    let contestant = |label: &str| Contestant {
        label: label.into(),
        snippet: hot(SUM),
        backend: Backend::Jit,
        function: "run".into(),
    };
    let job = WorkerJob::Measure {
        contestants: vec![contestant("a"), contestant("b")],
        settings: MeasureSettings {
            time_s: 60.0,
            band: 0.02,
            cpu: None,
            checks: true,
        },
    };
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        flag.store(true, Ordering::Relaxed);
        Instant::now()
    });
    let mut snapshots = 0;
    let out = w.run(job, Duration::from_secs(120), &cancel, &mut |_| {
        snapshots += 1
    });
    let stopped = Instant::now();
    let cancelled_at = setter.join().expect("the setter thread");
    eprintln!("cancel latency: {:?}", stopped - cancelled_at);
    // Either the engine stopped within the grace and answered with the samples it had, or the
    // worker was killed after it (a loaded machine): both end the job.
    match out {
        Ok(JobReport::Measured(m)) => {
            assert_eq!(m.stopped, "cancelled");
            assert_eq!(m.rows.len(), 2);
        }
        Err(WorkerError::Cancelled { job }) => assert_eq!(job, "measure job"),
        other => panic!("unexpected: {other:?}"),
    }
    assert!(snapshots > 0, "progress streamed while measuring");
    assert_healthy(&mut w);
}

#[test]
fn cancel_kills_a_job_that_cannot_stop_by_itself() {
    let mut w = worker();
    let pid = w.pid();
    let looping = "fn main() -> i64 {\n    var i = 0\n    while true { i += 1 }\n    return i\n}\n";
    let job = WorkerJob::Run {
        snippet: hot(looping),
        backend: Backend::Jit,
        checks: true,
        function: "main".into(),
    };
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        flag.store(true, Ordering::Relaxed);
        Instant::now()
    });
    // A limit far away: the job ends by the cancel, not by the limit.
    let out = w.run(job, Duration::from_secs(600), &cancel, &mut |_| {});
    let stopped = Instant::now();
    let cancelled_at = setter.join().expect("the setter thread");
    eprintln!(
        "cancel latency (endless loop): {:?}",
        stopped - cancelled_at
    );
    match out {
        Err(WorkerError::Cancelled { job }) => assert_eq!(job, "snippet"),
        other => panic!("unexpected: {other:?}"),
    }
    assert_ne!(w.pid(), pid, "a new worker took over");
    assert_healthy(&mut w);
}

#[test]
fn a_panic_in_the_worker_is_reported_and_the_worker_goes_on() {
    let mut w = worker();
    let pid = w.pid();
    let job = WorkerJob::Panic {
        message: "deliberate test panic".into(),
    };
    let err = w
        .run(
            job,
            Duration::from_secs(30),
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap_err();
    match &err {
        WorkerError::Failed(f) => {
            assert_eq!(f.cause, FailureCause::Panic);
            assert!(f.message.contains("deliberate test panic"), "{}", f.message);
        }
        other => panic!("unexpected: {other:?}"),
    }
    assert_eq!(w.pid(), pid, "a caught panic does not cost the worker");
    assert_healthy(&mut w);
}

#[test]
fn script_errors_and_bad_snippets_fail_the_job_only() {
    let mut w = worker();
    let pid = w.pid();
    let div = "fn main() -> i64 {\n    let z = 0\n    return 1 / z\n}\n";
    let err = run_main(&mut w, SourceOrText::Text(div), Duration::from_secs(30)).unwrap_err();
    assert!(
        matches!(&err, WorkerError::Failed(f) if f.cause == FailureCause::Script),
        "{err:?}"
    );
    let err = run_main(
        &mut w,
        SourceOrText::Text("fn main( {"),
        Duration::from_secs(30),
    )
    .unwrap_err();
    assert!(
        matches!(&err, WorkerError::Failed(f) if f.cause == FailureCause::Input),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("t.hot"),
        "the diagnostic names the file: {err}"
    );
    // The failure also says where, for front ends that point at the place.
    match &err {
        WorkerError::Failed(f) => {
            let at = f.location.as_ref().expect("a diagnostic has a place");
            assert_eq!((at.snippet.as_str(), at.line), ("t.hot", 1), "{at:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(w.pid(), pid);
    assert_healthy(&mut w);
}
