//! `hotlab check` through the binary: exit codes, the line's shape, the result check.

use assert_cmd::Command;

fn hotlab() -> Command {
    let mut c = Command::cargo_bin("hotlab").unwrap();
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

const VERDICT_CODES: [i32; 3] = [0, 3, 4];

#[test]
fn a_case_against_its_twin_answers_in_one_line() {
    let out = hotlab()
        .args(["check", "cases/int_loop.hot", "--time", "0.2"])
        .output()
        .unwrap();
    let s = String::from_utf8(out.stdout).unwrap();
    let code = out.status.code().unwrap();
    assert!(VERDICT_CODES.contains(&code), "{code}: {s}");
    assert_eq!(s.lines().count(), 1, "{s}");
    assert!(
        s.starts_with("cases/int_loop.hot on jit vs twin int_loop: "),
        "{s}"
    );
    assert!(
        s.contains("CI [") && s.contains("ns/op") && s.contains("results equal"),
        "{s}"
    );
    let verdict = ["equal within", "slower:", "faster:", "unresolved:"];
    assert!(verdict.iter().any(|v| s.contains(v)), "{s}");
}

#[test]
fn json_and_vs_and_clif() {
    let out = hotlab()
        .args([
            "check",
            "cases/int_loop.clif",
            "--vs",
            "cases/int_loop.hot",
            "--backend",
            "jit-opt",
            "--time",
            "0.2",
            "--json",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["results_equal"], true);
    assert_eq!(
        v["exit_code"].as_i64().unwrap() as i32,
        out.status.code().unwrap()
    );
    assert!(VERDICT_CODES.contains(&out.status.code().unwrap()));
    assert_eq!(v["backend"], "jit-opt");
}

#[test]
fn a_wrong_twin_fails_the_result_check() {
    let out = hotlab()
        .args([
            "check",
            "cases/int_loop.hot",
            "--twin",
            "float_loop",
            "--time",
            "0.2",
            "--iters",
            "100",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    assert!(String::from_utf8_lossy(&out.stdout).contains("RESULTS DIFFER"));
}

#[test]
fn bad_input_exits_2_with_a_message() {
    for (args, want) in [
        (vec!["check", "cases/no_such.hot"], "cannot read"),
        (
            vec!["check", "cases/native.toml"],
            "must end in .hot or .clif",
        ),
        (
            vec!["check", "cases/int_loop.hot", "--twin", "nope"],
            "unknown twin",
        ),
        (vec!["check", "cases/int_loop.hot", "--band", "0"], "--band"),
        (
            vec!["check", "cases/int_loop.clif", "--backend", "object"],
            ".hot scripts only",
        ),
        (
            vec!["check", "cases/int_loop.clif", "--backend", "interp"],
            ".hot scripts only",
        ),
    ] {
        let out = hotlab().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plain.hot");
    std::fs::write(&p, "fn run(n: i64) -> i64 { return n }\n").unwrap();
    let out = hotlab().arg("check").arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--twin NAME"));
    std::fs::write(&p, "fn run(n: i64) -> i64 { return n / (n - n) }\n").unwrap();
    let out = hotlab()
        .arg("check")
        .arg(&p)
        .args(["--twin", "int_loop"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `hotlab check ARGS --time 0.2 --iters 500`, which must answer with a verdict code: its stdout.
#[track_caller]
fn answered(args: &[&str]) -> String {
    let out = hotlab()
        .arg("check")
        .args(args)
        .args(["--time", "0.2", "--iters", "500"])
        .output()
        .unwrap();
    let s = String::from_utf8(out.stdout).unwrap();
    let code = out.status.code().unwrap();
    assert!(
        VERDICT_CODES.contains(&code),
        "{code}: {s}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    s
}

#[test]
fn hook_and_class_cases_are_checked_on_jit_and_object() {
    let s = answered(&["cases/host_call.hot"]);
    assert!(
        s.contains("vs twin host_call") && s.contains("results equal (500 at n = 500)"),
        "{s}"
    );
    let s = answered(&["cases/field_loop.hot", "--backend", "object"]);
    assert!(s.contains("results equal"), "{s}");
}
