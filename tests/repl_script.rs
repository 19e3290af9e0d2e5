//! `hotlab repl` with piped stdin: no prompts, no colour, each command's output in order, and
//! a non-zero exit when a command failed. The shipped example script is run and its output
//! snapshotted with the numbers (and the machine's lines) filtered out.

use assert_cmd::Command;
use predicates::prelude::*;

fn repl(state: &std::path::Path) -> Command {
    let mut c = Command::cargo_bin("hotlab").expect("the binary");
    c.arg("repl")
        .env("XDG_STATE_HOME", state)
        .env_remove("NO_COLOR")
        // A width from the environment (a CI runner's `COLUMNS`) would change the layout.
        .env_remove("COLUMNS")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// Numbers, verdicts, what a step costs, and column padding depend on the machine and the
/// moment; the machine's own lines are dropped.
const FILTERS: &[(&str, &str)] = &[
    (r"(?m)^(machine|timer|health): .*\n", ""),
    (r"\b(equal|slower|faster|unresolved)\b", "[verdict]"),
    (r"-?\b\d+(\.\d+)?(x|%)?", "[n]"),
    (
        r"(vs twin int_loop: ).*?(; \[n\] vs \[n\] ns/op)",
        "$1[explanation]$2",
    ),
    (r"(adds|saves) \[n\] ns \[\[n\], \[n\]\]", "[step cost]"),
    // Whether a rung measures a hair below the one before, and why, depends on the run.
    (r" \((within noise|layout effect|fewer instructions)\)", ""),
    (r"(?m)^.* saves time: .*\n", ""),
    (r"no cost resolved: within ±\[n\] ns", "[step cost]"),
    (r"no cost resolved: within < ±\[n\] ns", "[step cost]"),
    (r"\[verdict\]: too few rounds", "[step cost]"),
    (r"-{2,}", "--"),
    (r" {2,}", " "),
];

#[test]
fn the_example_script_runs_in_order() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/examples/first.repl");
    let out = repl(dir.path())
        .args(["--echo", "--save"])
        .pipe_stdin(script)
        .expect("stdin")
        .assert()
        .success()
        .stderr("");
    let stdout = String::from_utf8(out.get_output().stdout.clone()).expect("utf-8");
    assert!(!stdout.contains('\x1b'), "no colour on a pipe: {stdout:?}");
    assert!(stdout.contains("hot> :run\n45 "), "{stdout}");
    assert!(stdout.contains("(replaced fn main)"), "{stdout}");
    insta::with_settings!({filters => FILTERS.to_vec()}, {
        insta::assert_snapshot!("first_repl", stdout);
    });
    // The session was saved where the state directory says, with the history.
    let saved = std::fs::read_to_string(dir.path().join("hotlab/session.json")).expect("saved");
    assert!(saved.contains(":ladder"), "{saved}");
}

#[test]
fn a_failed_command_makes_the_exit_code_non_zero_and_the_rest_still_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    repl(dir.path())
        .write_stdin(":backend nope\nfn main() -> i64 { return 6 * 7 }\n:run\n:lod x\n")
        .assert()
        .code(1)
        .stdout(predicate::str::starts_with("ok: main\n42 "))
        .stderr(predicate::str::contains("no backend named `nope`"))
        .stderr(predicate::str::contains("did you mean :load?"));
}

#[test]
fn a_script_may_not_end_inside_a_definition() {
    let dir = tempfile::tempdir().expect("temp dir");
    repl(dir.path())
        .write_stdin(":help run\nfn main() -> i64 {\n    return 1\n")
        .assert()
        .code(1)
        .stdout(predicate::str::contains(":run [fn]"))
        .stderr(predicate::str::contains(
            "ends inside the definition that starts on line 2",
        ));
}

#[test]
fn a_file_is_loaded_first_and_quit_stops_reading() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("seven.hot");
    std::fs::write(&file, "fn main() -> i64 {\n    return 7\n}\n").expect("write");
    repl(dir.path())
        .arg(&file)
        .write_stdin(":run\n:quit\n:bogus\n")
        .assert()
        .success()
        .stdout(predicate::str::starts_with("loaded seven.hot: main\n7 "));
}

#[test]
fn resume_goes_on_with_the_saved_session() {
    let dir = tempfile::tempdir().expect("temp dir");
    // A piped run saves only with --save.
    repl(dir.path())
        .arg("--save")
        .write_stdin(":snippet kept.hot\nfn main() -> i64 { return 5 }\n")
        .assert()
        .success();
    repl(dir.path())
        .arg("--resume")
        .write_stdin(":show\n:run\n")
        .assert()
        .success()
        .stdout(predicate::str::contains("// kept.hot (jit)"))
        .stdout(predicate::str::contains("5    ("));
    // Without --resume the session starts afresh.
    repl(dir.path())
        .write_stdin(":show\n")
        .assert()
        .success()
        .stdout("// snippet.hot (jit)\n(empty)\n");
}

#[test]
fn help_lists_the_repl() {
    Command::cargo_bin("hotlab")
        .expect("the binary")
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("repl"));
    Command::cargo_bin("hotlab")
        .expect("the binary")
        .args(["repl", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--resume"))
        .stdout(predicate::str::contains("docs/repl.md"));
}

#[test]
fn a_ladder_around_a_method_that_does_work_measures_its_body_as_a_row() {
    let dir = tempfile::tempdir().expect("temp dir");
    repl(dir.path())
        .write_stdin(concat!(
            ":set time 0.2\n",
            "fn call() -> i64 {\n    var s = 0\n    for i in 0..10 {\n        s += i\n    }\n    return s\n}\n",
            ":ladder fused\n",
        ))
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"(?m)^method body +jit +Bound ").expect("regex"))
        .stdout(predicate::str::is_match(r"(?m)^method body +aot +Bound ").expect("regex"))
        .stdout(predicate::str::contains("the twin only returns 45"));
}

/// A script whose answers have notes under their tables: a ladder around a method that does
/// work (its body note), a comparison (its verdict's sentence) and a check (its one line).
const NOTED: &str = concat!(
    ":set time 0.1\n",
    "fn call() -> i64 {\n    var s = 0\n    for i in 0..10 {\n        s += i\n    }\n    return s\n}\n",
    "fn run(n: i64) -> i64 {\n    var s = 0\n    for i in 0..n {\n        s += i\n    }\n    return s\n}\n",
    ":ladder fused\n",
    ":compare interp\n",
    ":load int_loop\n",
    ":check\n",
);

fn piped(state: &std::path::Path, columns: Option<&str>) -> String {
    let mut c = repl(state);
    match columns {
        Some(w) => c.env("COLUMNS", w),
        None => c.env_remove("COLUMNS"),
    };
    let out = c
        .write_stdin(NOTED)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).expect("utf-8")
}

#[test]
fn a_piped_session_fits_its_tables_and_their_notes_to_columns() {
    // Piped, there is no terminal to ask: `COLUMNS` gives the width, as for other tools. The
    // tables drop columns to fit it and the prose under them (notes, verdicts' sentences, the
    // check's line) wraps to it.
    let dir = tempfile::tempdir().expect("temp dir");
    let text = piped(dir.path(), Some("80"));
    for answer in [
        "method body: ",
        "snippet.hot (interp): ",
        "int_loop.hot on jit vs twin",
    ] {
        assert!(text.contains(answer), "{answer}: {text}");
    }
    for line in text.lines() {
        assert!(
            line.chars().count() <= 80,
            "{} columns: {line}\n{text}",
            line.chars().count()
        );
    }
    // A wrapped note goes on under its label: the body note's lines after its first.
    let body: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("method body: "))
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .collect();
    assert!(!body.is_empty(), "{text}");
    assert!(
        body.iter()
            .all(|l| l.starts_with(&" ".repeat("method body: ".len()))),
        "{body:?}"
    );
    // Without a width (no terminal, no COLUMNS) each note stays one line, as exports read it.
    let full = piped(dir.path(), None);
    assert!(
        full.lines()
            .any(|l| l.starts_with("method body: ") && l.chars().count() > 80),
        "{full}"
    );
}

#[test]
fn cases_come_from_the_directory_cases_names() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        cases.path().join("mine.hot"),
        "//# twin = \"int_loop\"\nfn only_in_mine(n: i64) -> i64 {\n    return n\n}\n\
         fn run(n: i64) -> i64 {\n    return only_in_mine(n)\n}\n",
    )
    .expect("write");
    repl(dir.path())
        .arg("--cases")
        .arg(cases.path())
        .write_stdin(":cases\n:load mine\n:show\n:load int_loop\n")
        .assert()
        .code(1)
        .stdout(predicate::str::contains(format!(
            "cases in {}",
            cases.path().display()
        )))
        .stdout(predicate::str::contains("fn only_in_mine"))
        // The default directory's cases are not this session's.
        .stderr(predicate::str::contains(
            "`int_loop` is neither a file nor a case",
        ));
    repl(dir.path())
        .args(["--cases", "no/such/dir"])
        .write_stdin(":cases\n")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--cases no/such/dir: not a directory",
        ));
}

/// One of each command a user types, with some bad input: every answer, error and listing.
const EVERY_COMMAND: &str = concat!(
    ":help\n",
    ":help ladder\n",
    ":cases\n",
    ":twin\n",
    ":twin nope\n",
    ":set time 0.1\n",
    ":set nope 3\n",
    ":backend nope\n",
    ":layers -catch\n",
    ":layers reset\n",
    ":load int_loop\n",
    ":twin int_loop\n",
    ":asm run\n",
    ":ir run\n",
    ":check\n",
    ":compare interp\n",
    ":ladder\n",
    ":bench int_loop\n",
    ":snippet\n",
    ":history\n",
    ":lod x\n",
    ":doctor\n",
);

#[test]
fn every_command_fits_80_columns() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = repl(dir.path())
        .env("COLUMNS", "80")
        .write_stdin(EVERY_COMMAND)
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    let stderr = String::from_utf8(out.stderr).expect("utf-8");
    // Each command answered: the help, the cases, the twin, a listing, a check, a comparison
    // with its histograms, a ladder, the bench matrix and the doctor; the errors on stderr.
    for answer in [
        ":ladder [NAME|FILE]",
        "Shipped ladders: host_call",
        "cases in cases",
        "twin: int_loop — ",
        "; run — ",
        "function u0:",
        "int_loop.hot on jit vs twin",
        "int_loop.hot (interp) (ns/op)",
        "ladder host_call",
        "backend jit",
        "timer ",
    ] {
        assert!(stdout.contains(answer), "{answer}: {stdout}");
    }
    for error in [
        "no twin named `nope`",
        "no setting named",
        "did you mean :load?",
    ] {
        assert!(stderr.contains(error), "{error}: {stderr}");
    }
    for line in stdout.lines().chain(stderr.lines()) {
        assert!(
            line.chars().count() <= 80,
            "{} columns: {line}\n{stdout}\n{stderr}",
            line.chars().count()
        );
    }
    // The cases' names stay whole, and a title too long for its column goes on below it.
    let fasta: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("fasta "))
        .take(2)
        .collect();
    assert!(
        fasta[0]
            .split_whitespace()
            .filter(|w| *w == "fasta")
            .count()
            == 3
            && fasta[1]
                .trim_start()
                .starts_with(|c: char| c.is_alphanumeric()),
        "{fasta:?}"
    );
}
