//! Saved sessions as generations a user can pick: `hotlab sessions` lists them with their times
//! and what they hold, `--resume N|NAME` goes on with one, piped runs save nothing unless
//! `--save`, resumed settings are checked as typed ones, and a missing state directory is said.

use assert_cmd::Command;
use predicates::prelude::*;

fn hotlab(state: &std::path::Path) -> Command {
    let mut c = Command::cargo_bin("hotlab").expect("the binary");
    c.env("XDG_STATE_HOME", state)
        .env("NO_COLOR", "1")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn save(state: &std::path::Path, script: &str) {
    hotlab(state)
        .args(["repl", "--save"])
        .write_stdin(script.to_string())
        .assert()
        .success();
}

#[test]
fn piped_runs_do_not_replace_a_session_unless_asked() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("hotlab").join("session.json");
    save(dir.path(), "fn kept() -> i64 { return 1 }\n");
    let saved = std::fs::read_to_string(&file).expect("saved with --save");
    assert!(saved.contains("kept"));
    // A piped change without --save: nothing written, nothing moved.
    hotlab(dir.path())
        .arg("repl")
        .write_stdin(":set time 0.2\nfn other() -> i64 { return 2 }\n")
        .assert()
        .success();
    assert_eq!(std::fs::read_to_string(&file).expect("there"), saved);
    assert!(!dir.path().join("hotlab").join("session.prev.json").exists());
    // It can still read the saved session.
    hotlab(dir.path())
        .args(["repl", "--resume"])
        .write_stdin(":set time 0.3\n:show\n")
        .assert()
        .success()
        .stdout(predicate::str::contains("fn kept"));
    assert_eq!(std::fs::read_to_string(&file).expect("there"), saved);
}

#[test]
fn sessions_lists_generations_and_resume_picks_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    for name in ["first", "second", "third"] {
        save(dir.path(), &format!("fn {name}() -> i64 {{ return 1 }}\n"));
    }
    let out = hotlab(dir.path()).arg("sessions").assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("saved sessions in "), "{text}");
    assert_eq!(lines.len(), 4, "{text}");
    for (line, (n, file)) in lines[1..].iter().zip([
        ("0", "session.json"),
        ("1", "session.prev.json"),
        ("2", "session.prev.2.json"),
    ]) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields[0], n, "{line}");
        assert!(fields[1].starts_with("20"), "a date: {line}");
        assert_eq!(fields[3], "UTC", "{line}");
        assert_eq!(fields[4], file, "{line}");
        assert!(
            line.contains("1 snippet (current snippet.hot, 1 line), jit"),
            "{line}"
        );
    }
    // Generation 2 is the first session.
    hotlab(dir.path())
        .args(["repl", "--resume", "2"])
        .write_stdin(":show\n")
        .assert()
        .success()
        .stdout(predicate::str::contains("fn first"));
    hotlab(dir.path())
        .args(["repl", "--resume", "prev"])
        .write_stdin(":show\n")
        .assert()
        .success()
        .stdout(predicate::str::contains("fn second"));
    hotlab(dir.path())
        .args(["repl", "--resume", "7"])
        .write_stdin(":show\n")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no session generation 7"))
        .stderr(predicate::str::contains("hotlab sessions"));
    // Resuming an old generation and changing it saves to session.json, the newest kept.
    hotlab(dir.path())
        .args(["repl", "--save", "--resume", "2"])
        .write_stdin("fn fourth() -> i64 { return 4 }\n")
        .assert()
        .success();
    let file = |n: &str| std::fs::read_to_string(dir.path().join("hotlab").join(n)).expect(n);
    assert!(file("session.json").contains("fourth") && file("session.json").contains("first"));
    assert!(file("session.prev.json").contains("third"));
}

#[test]
fn resumed_settings_are_checked_as_typed_ones() {
    let dir = tempfile::tempdir().expect("temp dir");
    save(dir.path(), ":set time 0.5\n");
    let file = dir.path().join("hotlab").join("session.json");
    let text = std::fs::read_to_string(&file).expect("saved");
    let bad = text
        .replace("\"time_s\": 0.5", "\"time_s\": -3.0")
        .replace("\"band\": 0.02", "\"band\": 7.0");
    assert_ne!(bad, text);
    std::fs::write(&file, bad).expect("write");
    hotlab(dir.path())
        .args(["repl", "--resume"])
        .write_stdin(":set\n")
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "note: the saved setting `time -3` is refused",
        ))
        .stderr(predicate::str::contains(
            "note: the saved setting `band 7` is refused",
        ))
        .stdout(predicate::str::contains("time 1 s, band ±2%"));
}

#[test]
fn no_state_directory_is_said() {
    let mut c = Command::cargo_bin("hotlab").expect("the binary");
    c.env_remove("HOME")
        .env("XDG_STATE_HOME", "relative/dir")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    c.arg("sessions")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no state directory for the session file: HOME is not set and XDG_STATE_HOME is \
             relative (relative/dir)",
        ));
    let mut c = Command::cargo_bin("hotlab").expect("the binary");
    c.env_remove("HOME")
        .env_remove("XDG_STATE_HOME")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    c.args(["repl", "--save"])
        .write_stdin(":set time 0.2\n")
        .assert()
        .success()
        .stderr(predicate::str::contains("XDG_STATE_HOME is not set"))
        .stderr(predicate::str::contains("this session is not saved"));
    let mut c = Command::cargo_bin("hotlab").expect("the binary");
    c.env_remove("HOME")
        .env_remove("XDG_STATE_HOME")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    c.args(["repl", "--resume"])
        .write_stdin(":show\n")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "cannot resume: no state directory",
        ));
}
