//! `print(e)`: the same lines on every backend (captured on the running thread, as the worker
//! captures them per job), `hotlab run` prints them before `main`'s result, and the REPL shows
//! a job's output (the worker's stdout is its protocol pipe: nothing may leak into it).

mod common;

use assert_cmd::Command;
use hotlab::backend::Checks;

const PRINTS: &str = "class P { var x: i64 = 4 }
fn main() -> i64 {
    print(1)
    print(-2.5)
    print(true)
    print(\"text ${1 + 1}\")
    print([1, 2])
    let v = vec<str>()
    print(v)
    print(new P() == null)
    let p: P? = null
    print(p)
    var i = 0
    while i < 3 { print(i * i); i += 1 }
    print(0.1 + 0.2)
    print(\"\")
    return 7
}";

const LINES: &str =
    "1\n-2.5\ntrue\ntext 2\n[1, 2]\n[]\nfalse\nnull\n0\n1\n4\n0.30000000000000004\n\n";

#[test]
fn print_writes_the_same_lines_on_every_backend() {
    let program = common::compile_text("p.hot", PRINTS).unwrap();
    for (backend, run) in common::backends_for(&program) {
        let program = program.clone();
        let (outcome, printed) = common::with_stack(common::TEST_STACK, move || {
            hotlab::runtime::output::capture_on_this_thread();
            let r = run(&program, Checks::On);
            let o = common::outcome(&program, &r);
            (o, hotlab::runtime::output::take_captured())
        });
        assert_eq!(outcome, "7", "{backend}");
        assert_eq!(printed, LINES, "{backend}");
    }
}

#[test]
fn what_printed_before_an_error_stays_printed() {
    let program = common::compile_text(
        "e.hot",
        "fn main() -> i64 {\n    print(\"before\")\n    let z = 0\n    return 1 / z\n}",
    )
    .unwrap();
    for (backend, run) in common::backends_for(&program) {
        let program = program.clone();
        let (outcome, printed) = common::with_stack(common::TEST_STACK, move || {
            hotlab::runtime::output::capture_on_this_thread();
            let r = run(&program, Checks::On);
            (
                common::outcome(&program, &r),
                hotlab::runtime::output::take_captured(),
            )
        });
        assert_eq!(outcome, "error: division by zero at 4:14", "{backend}");
        assert_eq!(printed, "before\n", "{backend}");
    }
}

#[test]
fn hotlab_run_prints_before_mains_result() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.hot");
    std::fs::write(&path, PRINTS).unwrap();
    for backend in ["interp", "jit", "jit-opt", "object"] {
        let out = Command::cargo_bin("hotlab")
            .unwrap()
            .args(["run", "--backend", backend])
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{backend}: {out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{LINES}7\n"),
            "{backend}"
        );
    }
}

#[test]
fn the_repl_shows_a_jobs_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("hotlab")
        .unwrap()
        .arg("repl")
        .env("XDG_STATE_HOME", dir.path())
        .write_stdin("fn main() -> i64 { print(\"hello\"); print(41 + 1); return 3 }\n:run\n:run\n")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each run shows its own output once, then the value.
    assert_eq!(stdout.matches("hello\n42\n3 ").count(), 2, "{stdout}");
}

#[test]
fn print_misuse_is_a_diagnostic() {
    for (text, says) in [
        ("fn f() { }\nfn main() { print(f()) }", "has none to show"),
        (
            "fn main() { print(1, 2) }",
            "`print` takes 1 argument but 2 were given",
        ),
        (
            "fn main() { print() }",
            "`print` takes 1 argument but 0 were given",
        ),
        ("fn main() { let x = print(1) }", "no value to store"),
    ] {
        let d = common::compile_text("bad.hot", text).unwrap_err();
        assert!(d.0[0].message.contains(says), "{text}: {d}");
    }
}

/// A job that never ends (an endless loop cannot stop by itself) is ended by killing its
/// worker when cancelled; what it printed before is still shown, then the cancel.
#[test]
fn a_cancelled_jobs_output_is_shown() {
    use hotlab::session::{Collect, Session, SessionError, SessionOptions};
    use hotlab::worker::WorkerError;
    use std::sync::atomic::Ordering;

    let mut s = Session::new(SessionOptions {
        exe: env!("CARGO_BIN_EXE_hotlab").into(),
        store: None,
    });
    let mut out = Collect::default();
    s.run_line(
        "fn spin() -> i64 {\n    print(\"started\")\n    print(\"still going\")\n    var i = 0\n    while true { i += 1 }\n    return i\n}",
        &mut out,
    )
    .expect("defined");
    s.run_line(":set limit 600", &mut out).expect("set");
    let flag = s.cancel_flag();
    let setter = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(700));
        flag.store(true, Ordering::Relaxed);
    });
    let mut out = Collect::default();
    let r = s.run_line(":run spin", &mut out);
    setter.join().expect("setter");
    assert!(
        matches!(r, Err(SessionError::Worker(WorkerError::Cancelled { .. }))),
        "{r:?}"
    );
    assert!(
        out.texts.iter().any(|t| t == "started\nstill going"),
        "{:?}",
        out.texts
    );
}
