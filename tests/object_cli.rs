//! `hotlab run --backend object` through the binary: the result, the stage timings, script
//! errors with their exit code, and `.clif` refused with a clear message. (The binary exports
//! the `hot_*` symbols the library imports, or none of this would load.)

use assert_cmd::Command;

fn snippet(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

#[test]
fn runs_main_and_shows_every_stage() {
    let (_dir, path) = snippet(
        "fib.hot",
        "var calls: i64 = 0\nfn fib(n: i64) -> i64 {\n    calls += 1\n    if n < 2 { return n }\n    \
         return fib(n - 1) + fib(n - 2)\n}\nfn main() -> i64 { return fib(20) + calls }\n",
    );
    let out = Command::cargo_bin("hotlab")
        .unwrap()
        .args(["run", "--backend", "object", "--timings"])
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.lines().next(), Some("28656"));
    let object_line = stdout
        .lines()
        .find(|l| l.starts_with("object (µs):"))
        .unwrap_or_else(|| panic!("no stage line in:\n{stdout}"));
    for stage in ["lower", "define", "emit", "link", "load", "init", "total"] {
        assert!(object_line.contains(stage), "{object_line}");
    }
}

#[test]
fn a_script_error_is_rendered_with_its_location() {
    let (_dir, path) = snippet(
        "div.hot",
        "fn main() -> i64 {\n    let z = 0\n    return 5 / z\n}\n",
    );
    let out = Command::cargo_bin("hotlab")
        .unwrap()
        .args(["run", "--backend", "object"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("division by zero at"), "{stderr}");
    assert!(stderr.contains("div.hot:3:14"), "{stderr}");
}

#[test]
fn clif_is_refused_with_a_way_out() {
    let (_dir, path) = snippet(
        "f.clif",
        "function %main() -> i64 {\nblock0:\n    v0 = iconst.i64 1\n    return v0\n}\n",
    );
    let out = Command::cargo_bin("hotlab")
        .unwrap()
        .args(["run", "--backend", "object"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("object backend runs .hot snippets only"),
        "{stderr}"
    );
    assert!(stderr.contains("--backend jit"), "{stderr}");
}
