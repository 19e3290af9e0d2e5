//! Helpers of the session tests: a session on the test binary's worker with its file in a
//! temporary directory, and running lines that must succeed or fail.
#![allow(dead_code)]

use hotlab::session::{Collect, LineFlow, Session, SessionError, SessionOptions};

/// Options with the built hotlab as the worker and the session file in `dir`.
pub fn options(dir: &std::path::Path) -> SessionOptions {
    SessionOptions {
        exe: env!("CARGO_BIN_EXE_hotlab").into(),
        store: Some(dir.join("session.json")),
    }
}

/// A fresh session.
pub fn session(dir: &std::path::Path) -> Session {
    Session::new(options(dir))
}

/// Run `l`, which must succeed; its output.
pub fn line(s: &mut Session, l: &str) -> String {
    let mut out = Collect::default();
    match s.run_line(l, &mut out) {
        Ok(LineFlow::Continue) => out.all(),
        Ok(LineFlow::Quit) => "<quit>".into(),
        Err(e) => panic!("`{l}` failed: {e}"),
    }
}

/// Run `l`, which must fail; its error.
pub fn fails(s: &mut Session, l: &str) -> SessionError {
    match s.run_line(l, &mut Collect::default()) {
        Ok(o) => panic!("`{l}` should fail, got {o:?}"),
        Err(e) => e,
    }
}
