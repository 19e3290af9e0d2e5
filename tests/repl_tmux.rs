//! End to end: `hotlab repl` in a real terminal (tmux). Input typed ahead (a pasted block, or
//! commands typed while a job measures) is never dropped. Skipped, with the reason printed,
//! where tmux is not installed, except under `CI=true`, where that is a failure.

mod tmux_support;

use tmux_support::Tmux;

/// `hotlab repl` in a terminal of `w` columns with a state directory of its own.
fn repl(tag: &str, state: &std::path::Path, w: u16) -> Tmux {
    let cmd = format!(
        "env XDG_STATE_HOME={} {} repl",
        state.display(),
        env!("CARGO_BIN_EXE_hotlab")
    );
    let t = Tmux::start(tag, &cmd, w, 35);
    t.wait("the prompt", |s| s.contains("hot>"));
    t
}

#[test]
fn lines_typed_ahead_all_arrive() {
    if !Tmux::required() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let t = repl("ahead", state.path(), 120);
    // One send-keys: the three lines reach the terminal at once, as a paste does.
    t.keys(&[
        "fn a() -> i64 {",
        "Enter",
        "    return 1",
        "Enter",
        "}",
        "Enter",
    ]);
    t.wait("the whole definition", |s| s.contains("ok: a"));
    t.keys(&[":set time 0.5", "Enter"]);
    t.wait("the setting", |s| s.contains("time 0.5 s"));
    t.keys(&[":ladder", "Enter"]);
    // Commands typed while the job measures run after it, all of them, in order.
    t.wait("the job's progress line", |s| {
        s.contains("(Ctrl-C cancels)")
    });
    t.keys(&[":backend", "Enter", ":twin", "Enter", ":show", "Enter"]);
    t.wait("the three commands typed during the job", |_| {
        let s = t.scrollback(300);
        s.contains("backend: jit") && s.contains("twin: ") && s.contains("fn a() -> i64")
    });
    let all = t.scrollback(300);
    let at = |what: &str| {
        all.find(what)
            .unwrap_or_else(|| panic!("no {what} in\n{all}"))
    };
    assert!(at("ladder host_call") < at("backend: jit"), "{all}");
    assert!(at("backend: jit") < at("twin: "), "{all}");
    t.keys(&["C-d"]);
}

#[test]
fn a_job_stopped_with_ctrl_c_says_so() {
    if !Tmux::required() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let t = repl("stop", state.path(), 120);
    t.keys(&[":set time 60", "Enter"]);
    t.wait("the setting", |s| s.contains("time 60 s"));
    t.keys(&[":ladder", "Enter"]);
    t.wait("the ladder's progress", |s| {
        s.contains("collect") && s.contains("(Ctrl-C cancels)")
    });
    t.keys(&["C-c"]);
    // The note heads the report, which can be taller than the screen (rows that ran long
    // enough for a result get notes under the table, a layout effect's two lines each): it is
    // looked for in the scrollback.
    let s = t.wait("the stopped ladder", |s| {
        s.trim_end().ends_with("hot>")
            && t.scrollback(300)
                .contains("stopped (Ctrl-C): the rows so far")
    });
    // The progress line is gone, with the `^C` the terminal echoed after it.
    assert!(!s.contains("cancels)"), "{s}");
    assert!(!s.lines().any(|l| l.trim_end().ends_with('^')), "{s}");
    t.keys(&["C-l"]);
    t.keys(&[
        "fn run(n: i64) -> i64 {",
        "Enter",
        "var s = 0",
        "Enter",
        "for i in 0..n { s += i }",
        "Enter",
        "return s",
        "Enter",
        "}",
        "Enter",
    ]);
    t.wait("the definition", |s| s.contains("ok: run"));
    t.keys(&[":compare interp", "Enter"]);
    t.wait("the comparison's progress", |s| {
        s.contains("collect") && s.contains("(Ctrl-C cancels)")
    });
    t.keys(&["C-c"]);
    let s = t.wait("the stopped comparison", |s| {
        s.contains("iterations") && s.trim_end().ends_with("hot>")
    });
    assert!(s.contains("stopped (Ctrl-C): the rows so far"), "{s}");
    assert!(!s.contains("stopped by cancelled"), "{s}");
    t.keys(&["C-d"]);
}
