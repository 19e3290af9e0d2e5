//! Faults of script code in the one-shot commands, through the binary: a crash is reported
//! with its signal and exit code 6 (hotlab itself never dies of a signal), a command past its
//! `--limit` says "did not finish within S s" with exit code 7, work that does not grow with n
//! is told, runaway recursion is a located error, and a diagnostic cascade stays bounded.
//! Out of memory: a script that allocates past the job's budget (`--mem`, or the default under
//! `ulimit -v`) fails with a located "out of memory" error, the same on every backend, exit
//! code 1 (the process lives); a crash in `.hot` code compiled with `--checks off` names the
//! function and the script location.
//! The only time bounds are generous ones proving that something stops.

use std::path::Path;

use assert_cmd::Command;

fn hotlab() -> Command {
    let mut c = Command::cargo_bin("hotlab").unwrap();
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// `(exit code, stdout, stderr)`; the command never ends by a signal.
fn outcome(c: &mut Command) -> (i32, String, String) {
    let out = c.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let code = out
        .status
        .code()
        .unwrap_or_else(|| panic!("hotlab ended by a signal: {:?}\n{stderr}", out.status));
    (
        code,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    )
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

const NULL_LOAD: &str = "function %main() -> i64 {\nblock0:\n    v0 = iconst.i64 0\n    v1 = load.i64 v0\n    return v1\n}\n";
const TRAP: &str = "function %main() -> i64 {\nblock0:\n    trap user1\n}\n";
const DIV_ZERO: &str = "function %main() -> i64 {\nblock0:\n    v0 = iconst.i64 7\n    v1 = iconst.i64 0\n    v2 = sdiv v0, v1\n    return v2\n}\n";
const DIV_OVERFLOW: &str = "function %main() -> i64 {\nblock0:\n    v0 = iconst.i64 0x8000000000000000\n    v1 = iconst.i64 -1\n    v2 = sdiv v0, v1\n    return v2\n}\n";
const DEBUGTRAP: &str =
    "function %main() -> i64 {\nblock0:\n    debugtrap\n    v0 = iconst.i64 1\n    return v0\n}\n";
const RUN_NULL: &str = ";# title = \"crash\"\n;# twin = \"int_loop\"\n;# unit = \"one loop iteration\"\n;# checksum = \"exact\"\nfunction %run(i64, i64) -> i64 system_v {\nblock0(v0: i64, v1: i64):\n    v2 = iconst.i64 0\n    v3 = load.i64 v2\n    return v3\n}\n";
const RUN_ID: &str =
    "function %run(i64, i64) -> i64 system_v {\nblock0(v0: i64, v1: i64):\n    return v1\n}\n";
const SPIN_MAIN: &str =
    "fn main() -> i64 {\n    var i = 0\n    while true { i += 1 }\n    return i\n}\n";
const SPIN_RUN: &str =
    "fn run(n: i64) -> i64 {\n    var i = 0\n    while true { i += 1 }\n    return i\n}\n";
const SUM_RUN: &str =
    "fn run(n: i64) -> i64 {\n    var s = 0\n    for i in 0..n { s += i }\n    return s\n}\n";

#[test]
fn run_reports_each_crash_signal_of_clif_code() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text, signal) in [
        ("null.clif", NULL_LOAD, "SIGSEGV"),
        ("trap.clif", TRAP, "SIGILL"),
        ("div.clif", DIV_ZERO, "SIGILL"),
        ("overflow.clif", DIV_OVERFLOW, "SIGFPE"),
        ("debugtrap.clif", DEBUGTRAP, "SIGTRAP"),
    ] {
        let file = write(dir.path(), name, text);
        let (code, _, err) = outcome(hotlab().args(["run", &file]));
        assert_eq!(code, 6, "{name}: {err}");
        assert!(
            err.starts_with(&format!(
                "error: {file}: the script crashed the process running it: {signal} ("
            )),
            "{name}: {err}"
        );
    }
}

#[test]
fn check_and_asm_survive_a_crashing_clif() {
    let dir = tempfile::tempdir().unwrap();
    let crash = write(dir.path(), "crash.clif", RUN_NULL);
    let ok = write(dir.path(), "ok.clif", RUN_ID);
    let (code, _, err) = outcome(hotlab().args(["check", &crash, "--vs", &ok, "--time", "0.2"]));
    assert_eq!(code, 6, "{err}");
    assert!(err.contains("SIGSEGV"), "{err}");
    // asm compiles without running: the same file lists its code.
    let (code, out, err) = outcome(hotlab().args(["asm", &crash]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("; run"), "{out}");
}

#[test]
fn bench_marks_the_cell_that_crashed_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "crash.clif", RUN_NULL);
    let header = "//# title = \"fine\"\n//# twin = \"int_loop\"\n//# unit = \"one loop iteration\"\n//# checksum = \"exact\"\n";
    write(dir.path(), "fine.hot", &format!("{header}{SUM_RUN}"));
    let cases = dir.path().display().to_string();
    let (code, out, err) = outcome(hotlab().args([
        "bench",
        "--cases",
        &cases,
        "--backend",
        "jit",
        "--reps",
        "1",
        "--time",
        "0.05",
        "--no-load",
    ]));
    assert_eq!(code, 6, "{err}");
    // The crashed cell is named with its signal, and the table is printed with the other case
    // measured (the matrix went on in a fresh worker).
    assert!(
        err.contains("crash .clif (jit): crashed the process running it: SIGSEGV"),
        "{err}"
    );
    assert!(out.contains("fine"), "{out}");
    let fine = out.lines().find(|l| l.contains("fine")).unwrap();
    assert!(
        fine.contains(" ns") || fine.chars().any(|c| c.is_ascii_digit()),
        "{out}"
    );
}

#[test]
fn an_endless_run_stops_at_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    let spin = write(dir.path(), "spin.hot", SPIN_MAIN);
    // The exit code and the message are the judge: a run the limit did not stop never ends
    // (no wall-clock bound here: the machines are noisy).
    let (code, _, err) = outcome(hotlab().args(["run", &spin, "--limit", "1"]));
    assert_eq!(code, 7, "{err}");
    assert!(
        err.starts_with(&format!("error: {spin}: did not finish within 1 s")),
        "{err}"
    );
}

#[test]
fn measuring_commands_stop_a_spinning_run_at_their_limit() {
    let dir = tempfile::tempdir().unwrap();
    let spin = write(dir.path(), "spin.hot", SPIN_RUN);
    let ok = write(dir.path(), "ok.hot", SUM_RUN);
    let (code, _, err) =
        outcome(hotlab().args(["check", &spin, "--vs", &ok, "--time", "0.2", "--limit", "2"]));
    assert_eq!(code, 7, "{err}");
    assert!(err.contains("did not finish within 2 s"), "{err}");

    let method = write(
        dir.path(),
        "method.hot",
        "fn call() -> i64 {\n    var i = 0\n    while true { i += 1 }\n    return i\n}\n",
    );
    let (code, _, err) = outcome(hotlab().args([
        "ladder",
        "--snippet",
        &method,
        "--time",
        "0.2",
        "--limit",
        "3",
    ]));
    assert_eq!(code, 7, "{err}");
    assert!(err.contains("did not finish within 3 s"), "{err}");
}

#[test]
fn bench_stops_a_spinning_case_at_the_limit_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let header = "//# title = \"spin\"\n//# twin = \"int_loop\"\n//# unit = \"one loop iteration\"\n//# checksum = \"exact\"\n";
    write(dir.path(), "spin.hot", &format!("{header}{SPIN_RUN}"));
    let cases = dir.path().display().to_string();
    let (code, _, err) = outcome(hotlab().args([
        "bench",
        "--cases",
        &cases,
        "--backend",
        "jit",
        "--reps",
        "1",
        "--time",
        "0.05",
        "--no-load",
        "--limit",
        "2",
    ]));
    assert_eq!(code, 7, "{err}");
    assert!(err.contains("did not finish within 2 s"), "{err}");
    assert!(err.contains("spin (jit)"), "{err}");
}

#[test]
fn work_that_does_not_grow_with_n_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let flat = write(
        dir.path(),
        "flat.hot",
        "fn run(n: i64) -> i64 { return n }\n",
    );
    let ok = write(dir.path(), "ok.hot", SUM_RUN);
    let (code, _, err) = outcome(hotlab().args(["check", &flat, "--vs", &ok, "--time", "0.2"]));
    assert!(code == 1 || code == 2, "{code}: {err}");
    assert!(err.contains("the work does not depend on n"), "{err}");
}

#[test]
fn runaway_recursion_is_a_located_error_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let rec = write(
        dir.path(),
        "rec.hot",
        "fn f(n: i64) -> i64 { return f(n + 1) + 1 }\nfn main() -> i64 { return f(0) }\n",
    );
    for backend in ["jit", "jit-opt", "object", "interp"] {
        let (code, _, err) = outcome(hotlab().args(["run", &rec, "--backend", backend]));
        assert_eq!(code, 1, "{backend}: {err}");
        assert!(
            err.starts_with("error: call stack exhausted in `f` (runaway recursion?) at ")
                && err.contains("rec.hot:1:"),
            "{backend}: {err}"
        );
    }
}

#[test]
fn a_diagnostic_cascade_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let n = 2000;
    let text = format!("var a: {}i64{}\n", "[".repeat(n), "; 1]".repeat(n));
    let file = write(dir.path(), "cascade.hot", &text);
    let (code, _, err) = outcome(hotlab().args(["run", &file]));
    assert_eq!(code, 2, "{}", &err[..err.len().min(2000)]);
    let errors = err.matches("error[").count();
    assert!((1..=20).contains(&errors), "{errors} errors shown");
    // The long source line is shown once.
    assert_eq!(err.matches(&"[".repeat(n)).count(), 1);
    assert!(err.len() < 200_000, "{} bytes of stderr", err.len());
}

#[test]
fn a_file_that_is_not_utf8_is_refused_with_its_location() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.hot");
    std::fs::write(&p, b"fn main() -> i64 {\n    return 1 \xff\n}\n").unwrap();
    let file = p.display().to_string();
    let (code, _, err) = outcome(hotlab().args(["run", &file]));
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        format!("error: cannot read {file}: not valid UTF-8 at line 2, column 14 (byte 0xff)")
    );
}

#[test]
fn the_repl_on_a_missing_file_is_bad_input_and_shows_settings_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = outcome(
        hotlab()
            .args(["repl", "/nonexistent/x.hot"])
            .env("XDG_STATE_HOME", dir.path())
            .write_stdin(""),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("neither a file nor a case"), "{err}");
    let (code, out, err) = outcome(
        hotlab()
            .arg("repl")
            .env("XDG_STATE_HOME", dir.path())
            .write_stdin(":set band 7%\n:set cpu 9999\n"),
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("band ±7%,"), "{out}");
    assert!(err.contains("CPU 9999 is not online here"), "{err}");
}

const BACKENDS: [&str; 4] = ["jit", "jit-opt", "object", "interp"];

/// `s += s` doubles a string forty times (a TiB): the append past the budget fails.
const DOUBLING: &str = "fn main() -> i64 {\n    var s = \"ab\"\n    for i in 0..40 {\n        s += s\n    }\n    return s.len()\n}\n";
/// A vec pushed forever.
const PUSHING: &str = "fn main() -> i64 {\n    var v = vec<i64>()\n    var i = 0\n    while true {\n        v.push(i)\n        i += 1\n    }\n    return v.len()\n}\n";
/// A list of objects made forever.
const LISTING: &str = "class Node {\n    var next: Node? = null\n    var n: i64 = 0\n}\nfn main() -> i64 {\n    var head: Node? = null\n    var i = 0\n    while true {\n        let x = new Node()\n        x.next = head\n        head = x\n        i += 1\n    }\n    return i\n}\n";
/// Strings joined into a vec forever (many small allocations, each under the budget).
const JOINING: &str = "fn main() -> i64 {\n    var v = vec<str>()\n    var i = 0\n    while true {\n        v.push(\"item ${i}\")\n        i += 1\n    }\n    return v.len()\n}\n";

/// A vec of 4000 references to one 1 MiB string, shown: the text would be 4 GB.
const SHOWING: &str = "fn main() -> i64 {\n    var s = \"abcdefgh\"\n    for i in 0..17 {\n        s += s\n    }\n    var v = vec<str>()\n    for i in 0..4000 {\n        v.push(s)\n    }\n    let t = \"${v}\"\n    return t.len()\n}\n";
/// Objects whose constant string field initializer allocates, made forever (kept on a list:
/// in a vec, whichever of the vec's growth and an object crossed the budget first would be
/// the place, which moves with the shell's size).
const INITIALIZING: &str = "class Item {\n    var name: str = \"hello world\"\n    var next: Item? = null\n}\nfn main() -> i64 {\n    var head: Item? = null\n    var i = 0\n    while true {\n        let x = new Item()\n        x.next = head\n        head = x\n        i += 1\n    }\n    return i\n}\n";
/// A field's vec copied on write (another owner keeps each version) forever.
const COPYING: &str = "class Bag {\n    var items: vec<i64> = vec<i64>()\n}\nfn main() -> i64 {\n    let b = new Bag()\n    for i in 0..100000 {\n        b.items.push(i)\n    }\n    var keep = vec<vec<i64>>()\n    while true {\n        keep.push(b.items)\n        b.items.push(1)\n    }\n    return keep.len()\n}\n";
/// An array too large for the stack (compiled code keeps it on the heap): its block is asked
/// for at entry and reported at the local's initializer, where the interpreter allocates.
const LARGE_LOCAL: &str = "fn fill(k: i64) -> i64 {\n    var a = [0; 8000000]\n    a[k] = k\n    return a[k]\n}\nfn main() -> i64 {\n    return fill(3)\n}\n";
/// A module variable as large.
const LARGE_GLOBAL: &str =
    "var G = [1.5; 8000000]\nfn main() -> i64 {\n    G[3] = 2.0\n    return 0\n}\n";

/// A loop that only pushes onto a vec shared with a field: the copy its first push makes is
/// refused at that push (a loop that pushes copies no block before it starts).
const SHARED_PUSH: &str = "class Box {\n    var items = vec<i64>()\n    var more = vec<i64>()\n}\nfn main() -> i64 {\n    let o = new Box()\n    for i in 0..2000000 { o.items.push(i) }\n    for i in 0..2000000 { o.more.push(i) }\n    var v = o.items\n    var k = 0\n    while k < 1 { k += 1; v.push(k) }\n    return v.len()\n}\n";

#[test]
fn allocating_past_the_budget_is_a_located_error_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text, at) in [
        ("doubling.hot", DOUBLING, "4:11"),
        ("pushing.hot", PUSHING, "5:9"),
        ("listing.hot", LISTING, "9:17"),
        ("joining.hot", JOINING, "5:9"),
        ("showing.hot", SHOWING, "10:16"),
        ("initializing.hot", INITIALIZING, "9:17"),
        ("copying.hot", COPYING, "12:9"),
        ("large_local.hot", LARGE_LOCAL, "2:13"),
        ("large_global.hot", LARGE_GLOBAL, "1:9"),
        ("shared_push.hot", SHARED_PUSH, "11:27"),
    ] {
        let file = write(dir.path(), name, text);
        for backend in BACKENDS {
            let (code, out, err) =
                outcome(hotlab().args(["run", "--mem", "48M", "--backend", backend, &file]));
            assert_eq!(code, 1, "{name} on {backend}: {out}{err}");
            assert_eq!(
                err.trim_end(),
                format!(
                    "error: out of memory: the job's limit of 48 MiB is reached (--mem SIZE sets it) at {file}:{at}"
                ),
                "{name} on {backend}"
            );
        }
    }
}

#[test]
fn the_default_budget_keeps_under_an_address_space_limit() {
    // Under `ulimit -v` the default budget is three quarters of the address space left, so the
    // doubling string fails with the located error instead of an abort.
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "doubling.hot", DOUBLING);
    let exe = assert_cmd::cargo::cargo_bin("hotlab");
    for backend in ["jit", "interp"] {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v 3000000 && exec '{}' run --backend {backend} '{file}'",
                exe.display()
            ))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{backend}: {err}");
        assert!(
            err.starts_with("error: out of memory: the job's limit of ")
                && err.trim_end().ends_with(&format!("at {file}:4:11")),
            "{backend}: {err}"
        );
    }
}

#[test]
fn a_bad_budget_is_refused_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "doubling.hot", DOUBLING);
    for (value, says) in [
        ("lots", "is not a size"),
        ("1M", "out of range"),
        ("3P", "unknown unit"),
    ] {
        let (code, _, err) = outcome(hotlab().args(["run", "--mem", value, &file]));
        assert_eq!(code, 2, "--mem {value}: {err}");
        assert!(
            err.contains("--mem") && err.contains(says),
            "--mem {value}: {err}"
        );
    }
}

#[test]
fn a_script_within_its_budget_runs_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let small = "fn main() -> i64 {\n    var s = \"\"\n    for i in 0..1000 { s += \"x\" }\n    return s.len()\n}\n";
    let file = write(dir.path(), "small.hot", small);
    for backend in BACKENDS {
        let (code, out, err) =
            outcome(hotlab().args(["run", "--mem", "16M", "--backend", backend, &file]));
        assert_eq!((code, out.trim()), (0, "1000"), "{backend}: {err}");
    }
}

#[test]
fn the_repl_sets_and_shows_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "pushing.hot", PUSHING);
    let script = format!(":set mem 40M\n:set\n:load {file}\n:run\n:set mem auto\n:set\n");
    let out = hotlab()
        .arg("repl")
        .env("XDG_STATE_HOME", dir.path())
        .write_stdin(script)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("mem 40 MiB"), "{text}");
    assert!(
        text.contains("out of memory: the job's limit of 40 MiB is reached"),
        "{text}"
    );
    assert!(text.contains("mem auto"), "{text}");
    let bad = hotlab()
        .arg("repl")
        .env("XDG_STATE_HOME", dir.path())
        .write_stdin(":set mem 12bananas\n")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&bad.stderr);
    assert!(text.contains("is not a size"), "{text}");
}

#[test]
fn a_crash_in_unchecked_hot_code_names_its_location() {
    let dir = tempfile::tempdir().unwrap();
    let wild = "fn main() -> i64 {\n    var a = [0; 16]\n    var i = 1 << 40\n    a[i] = 5\n    return a[0]\n}\n";
    let file = write(dir.path(), "wild.hot", wild);
    for backend in ["jit", "jit-opt", "object"] {
        let (code, _, err) =
            outcome(hotlab().args(["run", "--checks", "off", "--backend", backend, &file]));
        assert_eq!(code, 6, "{backend}: {err}");
        assert!(
            err.starts_with(&format!(
                "error: {file}: the script crashed the process running it: SIGSEGV ("
            )) && err.contains(&format!(") in `main` at {file}:4:10")),
            "{backend}: {err}"
        );
        // The handler's line is folded into the message, not repeated as the worker's stderr.
        assert!(!err.contains("hotlab worker: crashed"), "{backend}: {err}");
    }
}

#[test]
fn a_crash_in_clif_code_names_its_function() {
    let dir = tempfile::tempdir().unwrap();
    let null = "function %main() -> i64 {\nblock0:\n    v0 = iconst.i64 0\n    v1 = load.i64 v0\n    return v1\n}\n";
    let file = write(dir.path(), "null.clif", null);
    let (code, _, err) = outcome(hotlab().args(["run", &file]));
    assert_eq!(code, 6, "{err}");
    assert!(
        err.contains("SIGSEGV (") && err.contains(") in `main`"),
        "{err}"
    );
}

#[test]
fn a_constant_initializer_past_the_budget_fails_at_its_new_whatever_the_budget() {
    // The check before the initializers run counts what they allocate exactly: the error is
    // at the operation on every backend, at any budget (not at `main` when the margin is
    // small).
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "initializing.hot", INITIALIZING);
    for mem in ["16M", "24M", "32M", "40M"] {
        for backend in BACKENDS {
            let (code, _, err) =
                outcome(hotlab().args(["run", "--mem", mem, "--backend", backend, &file]));
            assert_eq!(code, 1, "{mem} {backend}: {err}");
            // The `new` (the only operation that allocates): never the function's name.
            let err = err.trim_end();
            assert!(
                err.ends_with(&format!("at {file}:9:17")),
                "{mem} {backend}: {err}"
            );
        }
    }
}

/// Module variables past the job's memory limit: the compiled backends make their block before
/// `<init>` runs, so they raise at the initializer of the first variable that does not fit,
/// where the interpreter raises when it makes the array (they used to abort allocating the
/// block, or fail in the loader).
#[test]
fn module_variables_past_the_memory_limit_are_an_error_not_an_abort() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "big.hot",
        "var small = 1\nvar G = [0; 100000000]\nfn main() -> i64 { G[5] = 3; return G[5] }\n",
    );
    for backend in BACKENDS {
        let (code, out, err) =
            outcome(hotlab().args(["run", "--mem", "64M", "--backend", backend, &file]));
        assert_eq!(code, 1, "{backend}: {out}{err}");
        assert_eq!(
            err.trim_end(),
            format!(
                "error: out of memory: the job's limit of 64 MiB is reached (--mem SIZE sets it) at {file}:2:9"
            ),
            "{backend}"
        );
    }
}

/// Module variables that do not fit together are refused before `<init>` runs, at the same
/// variable on every backend: no initializer's output, and the interpreter (whose values are
/// twice the size of a compiled cell) does not stop at an earlier array than the others.
#[test]
fn module_variables_that_do_not_fit_stop_every_backend_at_the_same_place_before_init() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "three.hot",
        "fn noisy() -> i64 {\n    print(\"made\")\n    return 1\n}\nvar small = noisy()\n\
         var A = [0; 3000000]\nvar B = [0; 3000000]\nvar C = [0; 3000000]\n\
         fn main() -> i64 {\n    return small + A[0] + B[1] + C[2]\n}\n",
    );
    for backend in BACKENDS {
        let (code, out, err) =
            outcome(hotlab().args(["run", "--mem", "64M", "--backend", backend, &file]));
        assert_eq!((code, out.as_str()), (1, ""), "{backend}: {err}");
        assert_eq!(
            err.trim_end(),
            format!(
                "error: out of memory: the job's limit of 64 MiB is reached (--mem SIZE sets it) at {file}:8:9"
            ),
            "{backend}"
        );
    }
}

/// The interpreter makes a module array once: `var G = [3; 5000000]` (80 MB of interpreter
/// values) runs under a limit of 120 MiB on every backend (it also made the array's zero value
/// before the assignment replaced it, and needed twice that).
#[test]
fn a_module_array_is_made_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "once.hot",
        "var G = [3; 5000000]\nfn main() -> i64 { G[5] = 4; return G[5] + G[6] }\n",
    );
    for backend in BACKENDS {
        let (code, out, err) =
            outcome(hotlab().args(["run", "--mem", "120M", "--backend", backend, &file]));
        assert_eq!((code, out.trim()), (0, "7"), "{backend}: {err}");
    }
}

/// A pipe whose reader is already gone (`hotlab ... | head` after `head` exits): writing to it
/// fails with EPIPE.
fn closed_pipe() -> std::os::fd::OwnedFd {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the read end, just made and owned here; closing it leaves the pipe readerless.
    unsafe { libc::close(fds[0]) };
    // SAFETY: the write end, just made and owned by nobody else.
    unsafe { std::os::fd::OwnedFd::from_raw_fd(fds[1]) }
}

/// Output into a closed pipe ends the command with 141, quietly: no panic report, no 101, on
/// stdout (a result) and on stderr (a diagnostic) alike.
#[test]
fn a_closed_output_pipe_ends_the_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.hot");
    std::fs::write(&good, "fn main() -> i64 {\n    return 7\n}\n").unwrap();
    let bad = dir.path().join("bad.hot");
    std::fs::write(&bad, "fn main() -> i64 {\n    return nope\n}\n").unwrap();
    for (file, to_stderr) in [(&good, false), (&bad, true)] {
        let pipe = closed_pipe();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hotlab"));
        cmd.arg("run").arg(file);
        if to_stderr {
            cmd.stdout(std::process::Stdio::null()).stderr(pipe);
        } else {
            cmd.stdout(pipe).stderr(std::process::Stdio::piped());
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(141),
            "{}: {:?} {}",
            file.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("panicked"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A string appended to while another owner keeps each version is copied at every append; the
/// copies are sized by the text (they once doubled the old block's capacity each time, so 22
/// appends of two bytes asked for gigabytes and ran out of a 64 MiB budget on the compiled
/// backends, while the interpreter printed 45).
#[test]
fn a_string_appended_while_its_versions_are_kept_stays_within_a_small_budget() {
    let dir = tempfile::tempdir().unwrap();
    let text = "fn main() -> i64 {\n    var s = \"a\"\n    var keep = vec<str>()\n    for k in 0..22 {\n        keep.push(s)\n        s += \"xy\"\n    }\n    return s.len()\n}\n";
    let file = write(dir.path(), "keeping.hot", text);
    for backend in BACKENDS {
        let (code, out, err) =
            outcome(hotlab().args(["run", "--mem", "64M", "--backend", backend, &file]));
        assert_eq!((code, out.trim_end()), (0, "45"), "{backend}: {err}");
    }
}
