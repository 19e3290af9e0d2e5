//! Out of memory and crash locations, through the binary: a script that allocates past the
//! job's budget (`--mem`, or the default under `ulimit -v`) fails with a located "out of
//! memory" error, the same on every backend, exit code 1 (the process lives); a crash in
//! `.hot` code compiled with `--checks off` names the function and the script location.

use std::path::Path;

use assert_cmd::Command;

const BACKENDS: [&str; 4] = ["jit", "jit-opt", "object", "interp"];

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

/// `s += s` doubles a string forty times (a TiB): the append past the budget fails.
const DOUBLING: &str = "fn main() -> i64 {\n    var s = \"ab\"\n    for i in 0..40 {\n        s += s\n    }\n    return s.len()\n}\n";
/// A vec pushed forever.
const PUSHING: &str = "fn main() -> i64 {\n    var v = vec<i64>()\n    var i = 0\n    while true {\n        v.push(i)\n        i += 1\n    }\n    return v.len()\n}\n";
/// A list of objects made forever.
const LISTING: &str = "class Node {\n    var next: Node? = null\n    var n: i64 = 0\n}\nfn main() -> i64 {\n    var head: Node? = null\n    var i = 0\n    while true {\n        let x = new Node()\n        x.next = head\n        head = x\n        i += 1\n    }\n    return i\n}\n";
/// Strings joined into a vec forever (many small allocations, each under the budget).
const JOINING: &str = "fn main() -> i64 {\n    var v = vec<str>()\n    var i = 0\n    while true {\n        v.push(\"item ${i}\")\n        i += 1\n    }\n    return v.len()\n}\n";

#[test]
fn allocating_past_the_budget_is_a_located_error_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text, at) in [
        ("doubling.hot", DOUBLING, "4:11"),
        ("pushing.hot", PUSHING, "5:9"),
        ("listing.hot", LISTING, "9:17"),
        ("joining.hot", JOINING, "5:9"),
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
            )) && err.contains(&format!(") in `main` at {file}:4:5")),
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
