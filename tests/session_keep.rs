//! Saved sessions are not lost: a command that only looks writes nothing, a fresh session's
//! first real change keeps the saved one as `session.prev.json` (older ones a generation
//! down), and a second front end on the same session file is told so and saves to a copy of
//! its own instead of overwriting the first one's work.

mod session_support;

use std::io::Write;
use std::process::{Command, Stdio};

use hotlab::session::{Session, store};
use session_support::{line, options, session};

const CLASS: &str = "class Counter {\n    var n: i64 = 0\n}\n";

fn read(p: &std::path::Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

#[test]
fn a_fresh_session_that_only_looks_writes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("session.json");
    let mut s = session(dir.path());
    line(&mut s, CLASS);
    drop(s);
    let saved = read(&path);
    assert!(saved.contains("Counter"), "{saved}");
    let mut look = session(dir.path());
    line(&mut look, ":show");
    line(&mut look, ":help");
    drop(look);
    assert_eq!(
        read(&path),
        saved,
        "a look leaves the saved session as it was"
    );
    assert!(!store::previous_path(&path).exists(), "and moves nothing");
}

#[test]
fn fresh_sessions_keep_the_earlier_ones_as_generations() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("session.json");
    for band in ["6%", "7%", "8%"] {
        let mut s = session(dir.path());
        line(&mut s, &format!(":set band {band}"));
    }
    let band = |p: &std::path::Path| {
        store::load(p)
            .expect("readable")
            .expect("there")
            .settings
            .band
    };
    assert_eq!(band(&path), 0.08);
    assert_eq!(band(&store::generation_path(&path, 1)), 0.07);
    assert_eq!(band(&store::generation_path(&path, 2)), 0.06);
    assert_eq!(
        store::generation_path(&path, 2),
        dir.path().join("session.prev.2.json")
    );
    // At most GENERATIONS are kept.
    for _ in 0..store::GENERATIONS + 2 {
        let mut s = session(dir.path());
        line(&mut s, ":set band 5%");
    }
    assert!(store::generation_path(&path, store::GENERATIONS).exists());
    assert!(!store::generation_path(&path, store::GENERATIONS + 1).exists());
}

#[test]
fn a_second_session_on_one_file_saves_to_its_own_copy() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("session.json");
    let mut first = session(dir.path());
    assert_eq!(first.store_note(), None);
    line(&mut first, "fn b1() -> i64 { return 1 }");
    let lock = read(&store::lock_path(&path));
    assert_eq!(
        lock.trim(),
        std::process::id().to_string(),
        "the holder's pid"
    );
    let mut second = Session::resume(options(dir.path())).expect("resumes");
    let note = second.store_note().expect("told").to_string();
    assert!(note.contains("in use by another hotlab"), "{note}");
    assert!(note.contains(&std::process::id().to_string()), "{note}");
    line(&mut second, ":set time 0.4");
    line(&mut first, ":set band 3%");
    drop(second);
    drop(first);
    let saved = store::load(&path).expect("readable").expect("there");
    assert!(
        saved.snippet().text.contains("fn b1"),
        "the first's work stays"
    );
    assert_eq!(saved.settings.band, 0.03);
    assert_eq!(
        saved.settings.time_s, 1.0,
        "the second did not overwrite it"
    );
    let copy = store::copy_path(&path);
    let theirs = store::load(&copy).expect("readable").expect("the copy");
    assert_eq!(theirs.settings.time_s, 0.4);
    assert!(
        theirs.snippet().text.contains("fn b1"),
        "resumed from the file"
    );
    assert!(
        !store::lock_path(&path).exists(),
        "the lock ends with its session"
    );
    // A stale lock (its holder is gone) is taken over.
    std::fs::write(store::lock_path(&path), "999999999\n").expect("write");
    let s = session(dir.path());
    assert_eq!(s.store_note(), None);
}

/// A piped REPL that saves (`--save`), as the rules below are about saving.
fn repl(state: &std::path::Path, script: &str) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hotlab"))
        .args(["repl", "--save"])
        .env("XDG_STATE_HOME", state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("script");
    child.wait_with_output().expect("ends")
}

#[test]
fn piped_repls_neither_lose_a_session_nor_overwrite_one_in_use() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("hotlab").join("session.json");
    let out = repl(dir.path(), CLASS);
    assert!(out.status.success(), "{out:?}");
    assert!(read(&path).contains("Counter"));
    // A piped look: the session with the class is still the saved one.
    let out = repl(dir.path(), ":show\n");
    assert!(out.status.success(), "{out:?}");
    assert!(read(&path).contains("Counter"), "{}", read(&path));
    // A piped change keeps it as session.prev.json.
    let out = repl(dir.path(), ":set time 0.2\n");
    assert!(out.status.success(), "{out:?}");
    assert!(read(&store::previous_path(&path)).contains("Counter"));
    // While this process holds the session file, a REPL says so and saves to its own copy.
    let mut held = Session::resume(options(&dir.path().join("hotlab"))).expect("resumes");
    line(&mut held, ":set band 3%");
    let before = read(&path);
    let out = repl(dir.path(), ":set time 0.4\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("in use by another hotlab"), "{stderr}");
    assert!(
        stderr.contains(&std::process::id().to_string()),
        "names the holder: {stderr}"
    );
    assert_eq!(read(&path), before, "not overwritten");
    let copies: Vec<_> = std::fs::read_dir(path.parent().expect("dir"))
        .expect("list")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("session.copy-"))
        .collect();
    assert_eq!(copies.len(), 1, "{copies:?}");
    drop(held);
}
