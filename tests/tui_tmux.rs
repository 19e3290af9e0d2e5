//! End to end: `hotlab` with no arguments in a real terminal (tmux) opens the TUI; a snippet is
//! typed, run, and the finished table is read from the screen. Skipped, with the reason printed,
//! where tmux is not installed, except under `CI=true`, where that is a failure. Without a
//! terminal, `hotlab` still prints the ladder table.

mod tmux_support;

use std::process::Command;
use std::time::{Duration, Instant};

use tmux_support::Tmux;

#[test]
fn type_a_snippet_run_it_and_read_the_table() {
    if !Tmux::required() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let cmd = format!(
        "env XDG_STATE_HOME={} {}",
        state.path().display(),
        env!("CARGO_BIN_EXE_hotlab")
    );
    let t = Tmux::start("run", &cmd, 100, 30);
    // No arguments on a terminal: the TUI on the host_call ladder around the empty method.
    t.wait("the TUI", |s| {
        s.contains("ladder host_call") && s.contains("fn call() -> i64")
    });
    // It measures the ladder at once; wait until that job is over (the table's title says
    // so; "no job running" alone can be true before the job has started).
    t.wait("the first job to end", |s| {
        s.contains("ladder host_call (done)") && !s.contains("running :")
    });
    t.keys(&[":set time 1.5", "Enter"]);
    t.wait("the setting", |s| s.contains("time 1.5 s"));
    t.keys(&[":snippet sum.hot", "Enter"]);
    t.wait("the new snippet", |s| s.contains("snippet: sum.hot"));
    t.keys(&["e"]);
    for line in [
        "fn run(n: i64) -> i64 {",
        "var s = 0",
        "for i in 0..n { s += i }",
        "return s",
        "}",
    ] {
        t.text(line);
        t.keys(&["Enter"]);
    }
    t.keys(&["Escape"]);
    t.wait("the typed snippet", |s| {
        s.contains("for i in 0..n { s += i }")
    });
    t.keys(&["F5"]);
    let screen = t.wait("the finished table", |s| {
        s.contains(":compare interp (done)")
    });
    let row = |name: &str| {
        screen
            .lines()
            .find(|l| l.contains(name) && !l.contains(" e: edit"))
            .unwrap_or_else(|| panic!("no row {name} in\n{screen}"))
            .to_string()
    };
    assert!(row("sum.hot (jit)").contains("baseline"), "{screen}");
    // The interpreter is tens of times slower than the JIT on this loop; on a very busy
    // machine too few rounds may leave it unresolved, but never equal or faster.
    let interp = row("sum.hot (interp)");
    assert!(
        interp.contains("slower") || interp.contains("unresolved"),
        "{screen}"
    );
    let ns: Vec<f64> = interp
        .split_whitespace()
        .filter_map(|w| w.parse::<f64>().ok())
        .collect();
    if interp.contains("slower") {
        assert!(ns.iter().any(|&x| x > 5.0), "an interp ns/op: {interp}");
        assert!(interp.contains('+'), "ns added: {interp}");
    } else {
        // Unresolved: either a figure, or `-` when no round finished within the budget (a
        // machine busy enough to starve the interpreter's job); never a figure below the JIT's.
        assert!(
            ns.iter().all(|&x| x > 5.0) && (!ns.is_empty() || interp.contains(" - ")),
            "an interp ns/op: {interp}"
        );
    }
    assert!(screen.contains("within the time budget"), "{screen}");
    t.keys(&["q"]);
    let start = Instant::now();
    while t.alive() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!t.alive(), "q did not quit");
    // The session was saved with the snippet.
    let saved = std::fs::read_to_string(state.path().join("hotlab/session.json")).unwrap();
    assert!(
        saved.contains("sum.hot") && saved.contains("s += i"),
        "{saved}"
    );
}

#[test]
fn a_bad_theme_is_named_and_the_default_used() {
    if !Tmux::required() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let theme = dir.path().join("bad.toml");
    std::fs::write(&theme, "[colors]\ntitle = \"reddish\"\n").unwrap();
    let cmd = format!(
        "env XDG_STATE_HOME={} {} tui --resume --theme {}",
        dir.path().display(),
        env!("CARGO_BIN_EXE_hotlab"),
        theme.display()
    );
    let t = Tmux::start("theme", &cmd, 120, 30);
    // The error line can be on screen a frame before the status bar names the theme: wait for
    // both.
    let s = t.wait("the theme error and the default theme", |s| {
        s.contains("colors.title") && s.contains("dark")
    });
    assert!(s.contains("bad.toml:2"), "{s}");
    assert!(s.contains("dark"), "the default theme is used:\n{s}");
    t.keys(&["C-q"]);
}

#[test]
fn without_a_terminal_hotlab_prints_the_ladder() {
    let out = Command::new(env!("CARGO_BIN_EXE_hotlab"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("ladder host_call"), "{stdout}");
    assert!(stdout.contains("native virtual call"), "{stdout}");
}

#[test]
fn a_resumed_check_row_shows_its_code() {
    if !Tmux::required() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    // A session whose last result is a check of a case (saved by a script with --save).
    save_session(
        state.path(),
        b":load int_loop\n:set time 0.3\n:check\n",
        "the check script failed",
    );
    let cmd = format!(
        "env XDG_STATE_HOME={} {} tui --resume",
        state.path().display(),
        env!("CARGO_BIN_EXE_hotlab")
    );
    let t = Tmux::start("resume-code", &cmd, 120, 35);
    t.wait("the check's table", |s| s.contains("int_loop.hot (jit)"));
    // The snippet's row (the second; the twin's is first) lists its machine code.
    t.keys(&["j"]);
    t.wait("the machine code of the check's row", |s| {
        s.contains("fn run —") && !s.contains("building the machine code")
    });
    t.keys(&["C-q"]);
}

#[test]
fn a_job_stopped_with_esc_says_stopped_in_the_title() {
    if !Tmux::required() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    // A long budget, saved, so the jobs below are still measuring when Esc arrives.
    save_session(state.path(), b":set time 60\n", "the setting script failed");
    let cmd = format!(
        "env XDG_STATE_HOME={} {} tui --resume",
        state.path().display(),
        env!("CARGO_BIN_EXE_hotlab")
    );
    let t = Tmux::start("stop", &cmd, 120, 35);
    t.wait("the TUI", |s| s.contains("ladder host_call"));
    t.keys(&["F5"]);
    t.wait("the ladder measuring", |s| s.contains("(measuring "));
    t.keys(&["Escape"]);
    let s = t.wait("the stopped ladder", |s| {
        s.contains("ladder host_call (stopped)")
    });
    assert!(!s.contains("(done)"), "{s}");
    // A check stopped: its partial answer, titled stopped.
    t.keys(&[":load int_loop", "Enter"]);
    t.wait("the case", |s| s.contains("int_loop.hot (jit)"));
    t.keys(&["F6"]);
    t.wait("the check measuring", |s| s.contains(":check (measuring"));
    t.keys(&["Escape"]);
    let s = t.wait("the stopped check", |s| s.contains(":check (stopped)"));
    assert!(s.contains("partial answer"), "{s}");
    t.keys(&["C-q"]);
}

#[test]
fn a_snippet_file_opens_in_the_tui_as_its_help_says() {
    let help = Command::new(env!("CARGO_BIN_EXE_hotlab"))
        .args(["tui", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("[FILE|CASE]"), "{help}");
    // A name that is neither a file nor a case is an error before the screen opens, not
    // `unexpected argument`.
    let state = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hotlab"))
        .args(["tui", "no_such_snippet.hot"])
        .env("XDG_STATE_HOME", state.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(!err.contains("unexpected argument"), "{err}");
    assert!(err.contains("no_such_snippet.hot"), "{err}");
    if !Tmux::required() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sum10.hot");
    std::fs::write(&file, "fn main() -> i64 {\n    return 10\n}\n").unwrap();
    let cmd = format!(
        "env XDG_STATE_HOME={} {} tui {}",
        state.path().display(),
        env!("CARGO_BIN_EXE_hotlab"),
        file.display()
    );
    let t = Tmux::start("file", &cmd, 100, 30);
    t.wait("the file in the editor", |s| {
        s.contains("sum10.hot") && s.contains("return 10")
    });
    t.keys(&["q"]);
}

#[test]
fn a_fresh_tui_over_a_saved_session_says_where_it_goes() {
    if !Tmux::required() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    // A saved session (a script with --save).
    save_session(
        state.path(),
        b":set time 0.3\n",
        "the setting script failed",
    );
    let saved = state.path().join("hotlab/session.json");
    assert!(saved.exists());
    // Issue #19: a fresh `hotlab tui` moved it to session.prev.json without a word; the REPL
    // says so. The TUI says it too, in its message line, until the first key.
    let cmd = format!(
        "env XDG_STATE_HOME={} {} tui",
        state.path().display(),
        env!("CARGO_BIN_EXE_hotlab")
    );
    let t = Tmux::start("fresh-over-saved", &cmd, 240, 35);
    t.wait("the notice", |s| {
        s.contains("a saved session exists (hotlab tui --resume goes on with it)")
            && s.contains("session.prev.json")
    });
    // The launch's run ends: the notice is still there.
    let s = t.wait("the first job to end", |s| {
        s.contains("ladder host_call (done)") && !s.contains("running :")
    });
    assert!(s.contains("a saved session exists"), "{s}");
    assert!(
        state.path().join("hotlab/session.prev.json").exists(),
        "the saved session was moved, as the notice says"
    );
    t.keys(&["C-q"]);
}

/// Runs `script` through `hotlab repl --save` with its state in `state`: a saved session for
/// a TUI test to resume. `what` names the script in the failure.
fn save_session(state: &std::path::Path, script: &[u8], what: &str) {
    use std::io::Write as _;
    let mut repl = Command::new(env!("CARGO_BIN_EXE_hotlab"))
        .args(["repl", "--save"])
        .env("XDG_STATE_HOME", state)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    repl.stdin.take().unwrap().write_all(script).unwrap();
    assert!(repl.wait().unwrap().success(), "{what}");
}
