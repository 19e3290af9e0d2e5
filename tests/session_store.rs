//! The session is saved after every change to `$XDG_STATE_HOME/hotlab/session.json` and comes
//! back with `Session::resume`. One test in this binary: it sets process environment variables.

use hotlab::session::Backend;
use hotlab::session::{Collect, Session, SessionOptions, store};

#[test]
fn the_session_is_saved_after_every_change_and_resumed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state_home = dir.path().join("state");
    // SAFETY: the only test in this binary, so no other thread reads the environment now.
    unsafe {
        std::env::set_var("XDG_STATE_HOME", &state_home);
        std::env::set_var("HOME", dir.path().join("home"));
    }
    let path = store::default_path().expect("a path");
    assert_eq!(path, state_home.join("hotlab").join("session.json"));

    let options = || SessionOptions {
        exe: env!("CARGO_BIN_EXE_hotlab").into(),
        store: store::default_path(),
    };
    // Nothing saved yet: a fresh session.
    let mut s = Session::resume(options()).expect("resumes");
    assert!(s.state().history.is_empty());
    let mut out = Collect::default();
    s.run_line(":backend interp", &mut out).expect("backend");
    assert!(path.exists(), "saved after the first change");
    s.run_line(":set band 5%", &mut out).expect("set");
    s.run_line(":snippet second.hot", &mut out)
        .expect("snippet");
    s.run_line("fn main() -> i64 { return 41 + 1 }", &mut out)
        .expect("code");
    s.run_line(":run", &mut out).expect("run");
    let before = s.state().clone();
    drop(s);

    let s = Session::resume(options()).expect("resumes");
    assert_eq!(s.state(), &before);
    assert_eq!(s.state().backend, Backend::Interp);
    assert_eq!(s.state().settings.band, 0.05);
    assert_eq!(s.state().snippet().name, "second.hot");
    assert_eq!(s.state().results.len(), 1);
    assert_eq!(s.state().history.last().map(String::as_str), Some(":run"));
    // Written whole: no temporary file is left beside it (only the lock of the session that
    // holds it, removed when that session ends).
    let names = || -> Vec<_> {
        let mut n: Vec<_> = std::fs::read_dir(path.parent().expect("dir"))
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        n.sort();
        n
    };
    assert_eq!(
        names(),
        vec![
            std::ffi::OsString::from("session.json"),
            std::ffi::OsString::from("session.lock")
        ]
    );
    drop(s);
    assert_eq!(names(), vec![std::ffi::OsString::from("session.json")]);

    // A fresh session does not overwrite the saved one: its first change moves the saved file
    // to session.prev.json, which still resumes to the state before.
    let mut fresh = Session::new(options());
    assert!(path.exists(), "nothing moved before the first change");
    // Choosing the backend it already has changes only the history: nothing is written.
    fresh.run_line(":backend jit", &mut out).expect("backend");
    assert!(
        !store::previous_path(&path).exists(),
        "a no-op moves nothing"
    );
    fresh
        .run_line(":backend jit-opt", &mut out)
        .expect("backend");
    let prev = store::previous_path(&path);
    assert_eq!(prev, path.with_file_name("session.prev.json"));
    let kept = store::load(&prev).expect("readable").expect("kept");
    assert_eq!(kept, before);
    let now = store::load(&path).expect("readable").expect("saved");
    assert_eq!(now.backend, Backend::JitOpt);
    assert!(now.results.is_empty(), "the fresh session's own state");
    // Only the first save moves: the second change keeps the previous file as it was.
    fresh.run_line(":set band 3%", &mut out).expect("set");
    assert_eq!(store::load(&prev).expect("readable").expect("kept"), before);
    drop(fresh);
    std::fs::remove_file(&prev).expect("remove");

    // A damaged file is an error that names it, and is left alone.
    std::fs::write(&path, "{ not json").expect("write");
    let e = Session::resume(options()).expect_err("damaged");
    assert!(e.to_string().contains("is not a hotlab session"), "{e}");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), "{ not json");

    // Without XDG_STATE_HOME the file is under ~/.local/state.
    // SAFETY: as above.
    unsafe { std::env::remove_var("XDG_STATE_HOME") };
    assert_eq!(
        store::default_path(),
        Some(dir.path().join("home/.local/state/hotlab/session.json"))
    );
}
