//! Ctrl-C sets the session's cancel flag (one test in this binary: it installs a signal handler).

use std::sync::atomic::Ordering;

use hotlab::session::{Session, SessionOptions, interrupt};

#[test]
fn sigint_sets_the_cancel_flag() {
    let s = Session::new(SessionOptions {
        exe: env!("CARGO_BIN_EXE_hotlab").into(),
        store: None,
    });
    let flag = s.cancel_flag();
    interrupt::install(s.cancel_flag()).expect("handler installed");
    assert!(!flag.load(Ordering::Relaxed));
    // SAFETY: raising a signal whose handler was just installed; the process survives it.
    let rc = unsafe { libc::raise(libc::SIGINT) };
    assert_eq!(rc, 0);
    assert!(
        flag.load(Ordering::Relaxed),
        "the handler set the flag instead of killing us"
    );
}
