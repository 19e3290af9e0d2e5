//! `hotlab check` through the binary: exit codes, the line's shape, the result check.

use assert_cmd::Command;

fn hotlab() -> Command {
    let mut c = Command::cargo_bin("hotlab").unwrap();
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// equal, slower, unresolved, faster (`hotlab --help`, exit codes): a case may beat its twin.
const VERDICT_CODES: [i32; 4] = [0, 3, 4, 8];

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

/// `hotlab check FILE ARGS --time 0.2 --iters 500` on a file written from `text`.
fn check_text(name: &str, text: &str, args: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    let out = hotlab()
        .arg("check")
        .arg(&p)
        .args(args)
        .args(["--time", "0.2", "--iters", "500"])
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

const LOOP_SUM: &str = "native fn sink(x: i64) -> i64\n";

const ANSWERS: [i32; 4] = [0, 3, 4, 8];

#[test]
fn a_bench_class_and_a_hook_class_are_measured_as_they_are() {
    // The Bench interface, with a header of only `twin`: hotlab makes the object.
    let bench = format!(
        "//# twin = \"loop_sum\"\n{LOOP_SUM}class Sum : Bench {{\n    fn run(self, n: i64) -> i64 {{\n        \
         let m = sink(n)\n        var sum = 0\n        for i in 0..m {{ sum += i % 7 }}\n        \
         return sink(sum)\n    }}\n}}\n"
    );
    let (code, out, err) = check_text("sum.hot", &bench, &[]);
    assert!(ANSWERS.contains(&code), "{code}: {out}{err}");
    assert!(
        out.contains("vs twin loop_sum") && out.contains("results equal"),
        "{out}"
    );
    // Its own `let target`.
    let own = format!("{bench}let target = new Sum()\n");
    let (code, out, err) = check_text("sum.hot", &own, &["--backend", "interp"]);
    assert!(ANSWERS.contains(&code), "{code}: {out}{err}");
    assert!(out.contains("results equal"), "{out}");
    // A Hook class without a header: the host loops `call`.
    let hook = "class Empty : Hook {\n    fn call(self) -> i64 { return 1 }\n}\n";
    let (code, out, err) = check_text("hook.hot", hook, &["--twin", "host_call"]);
    assert!(ANSWERS.contains(&code), "{code}: {out}{err}");
    assert!(out.contains("results equal (500 at n = 500)"), "{out}");
}

#[test]
fn anything_else_lists_the_shapes_and_a_header_needs_only_twin() {
    let (code, _, err) = check_text(
        "main.hot",
        "fn main() -> i64 { return 1 }\n",
        &["--twin", "int_loop"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("class C : Bench") && err.contains("class C : Hook") && err.contains("%run"),
        "{err}"
    );
    // Every header problem at once.
    let (code, _, err) = check_text(
        "bad.hot",
        "//# twin = \"nope\"\n//# checksum = \"close\"\nfn run(n: i64) -> i64 { return n }\n",
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.hot:1: unknown twin `nope`"), "{err}");
    assert!(err.contains("bad.hot:2: unknown checksum rule"), "{err}");
}

#[test]
fn json_is_one_document_for_every_outcome() {
    let out = hotlab()
        .args(["check", "cases/int_loop.hot", "--time", "0.2", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "check");
    for key in [
        "ratio",
        "ratio_low",
        "ratio_high",
        "band_pct",
        "time_ns",
        "other_time_ns",
    ] {
        assert!(v[key].is_number(), "{key}: {v}");
    }
    assert_eq!(v["band_pct"], 2.0);
    assert_eq!(v["result_str"], v["result"].as_i64().unwrap().to_string());
    assert!(
        v.get("cycles").is_some() && v.get("instructions").is_some(),
        "{v}"
    );
    assert_eq!(
        v["exit_code"].as_i64().unwrap() as i32,
        out.status.code().unwrap()
    );

    for (args, kind, code) in [
        (vec!["check", "cases/no_such.hot", "--json"], "bad_input", 2),
        (
            vec!["check", "cases/int_loop.hot", "--json", "--bnad", "3"],
            "bad_input",
            2,
        ),
        (
            vec![
                "check",
                "cases/int_loop.hot",
                "--twin",
                "float_loop",
                "--json",
                "--time",
                "0.2",
                "--iters",
                "100",
            ],
            "",
            5,
        ),
    ] {
        let out = hotlab().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
        if kind.is_empty() {
            assert_eq!(v["results_equal"], false);
        } else {
            assert_eq!(v["error"]["kind"], kind, "{v}");
            assert_eq!(v["error"]["exit_code"], code);
            assert!(v["error"]["message"].as_str().unwrap().len() > 10, "{v}");
        }
    }
    // A located error names its place.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.hot");
    std::fs::write(&p, "fn run(n: i64) -> i64 {\n    return m\n}\n").unwrap();
    let out = hotlab()
        .arg("check")
        .arg(&p)
        .args(["--twin", "int_loop", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let at = v["error"]["location"].as_str().unwrap_or("");
    assert!(at.ends_with("bad.hot:2:12"), "{v}");
}

#[test]
fn a_baseline_is_saved_and_compared() {
    let data = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        hotlab()
            .env("HOTLAB_DATA_DIR", data.path())
            .args([
                "check",
                "cases/int_loop.hot",
                "--time",
                "0.2",
                "--iters",
                "500",
            ])
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["--save-baseline", "base"]);
    assert!(ANSWERS.contains(&out.status.code().unwrap()));
    let saved = data.path().join("baselines/base.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(v["kind"], "check");
    let out = run(&["--baseline", "base", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = &v["baseline"]["rows"][0];
    assert_eq!(
        row["row"], "cases/int_loop.hot vs twin int_loop on jit",
        "{v}"
    );
    assert!(row["change_low"].as_f64().unwrap() < row["change_high"].as_f64().unwrap());
    assert!(
        v["baseline"]["note"]
            .as_str()
            .unwrap()
            .contains("not interleaved")
    );
    // `--baseline-band` and `--run-spread` are `compare`'s `--band` and `--run-spread`.
    assert_eq!(v["baseline"]["band_pct"], 8.0, "{v}");
    assert_eq!(v["baseline"]["run_spread_pct"], 5.0, "{v}");
    let out = run(&[
        "--baseline",
        "base",
        "--baseline-band",
        "12",
        "--run-spread",
        "0",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["baseline"]["band_pct"], 12.0, "{v}");
    assert_eq!(v["baseline"]["run_spread_pct"], 0.0, "{v}");
    let note = v["baseline"]["note"].as_str().unwrap();
    assert!(note.contains("±0%") && note.contains("±12%"), "{note}");
    // Out of range: exit 2 before measuring, naming the option; without --baseline: clap's 2.
    for (args, says) in [
        (
            &["--baseline", "base", "--baseline-band", "0"][..],
            "--baseline-band 0",
        ),
        (
            &["--baseline", "base", "--run-spread=-1"][..],
            "--run-spread -1",
        ),
        (&["--run-spread", "3"][..], "--baseline"),
    ] {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let out = run(&["--baseline", "missing"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no baseline `missing`"));
    // `compare` on two exports: the same file against itself is equal, exit 0.
    let out = hotlab()
        .arg("compare")
        .arg(&saved)
        .arg(&saved)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(
        s.contains("1.000x") && s.contains("equal") && s.contains("not interleaved"),
        "{s}"
    );
}

#[test]
fn the_exit_codes_agree_in_the_table_the_help_and_the_docs() {
    let help = hotlab().arg("--help").output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cli.md")).unwrap();
    let mut codes = Vec::new();
    for (code, kind, meaning) in hotlab::frontend::exit::TABLE {
        assert!(
            help.contains(&format!("  {code}  {meaning}")),
            "--help lacks {code}: {help}"
        );
        assert!(
            docs.contains(&format!("| {code} | {kind} | {meaning} |")),
            "docs/cli.md lacks the row of {code}"
        );
        codes.push(code);
    }
    let mut unique = codes.clone();
    unique.dedup();
    assert_eq!(unique, codes, "each code once, in order");
}

#[test]
fn color_and_the_config_file() {
    // `--color always` colours even a pipe; `never` (and NO_COLOR) does not.
    let out = hotlab()
        .args([
            "check",
            "cases/int_loop.hot",
            "--time",
            "0.2",
            "--iters",
            "500",
            "--color",
            "always",
        ])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\x1b["),
        "no colour"
    );
    let out = hotlab()
        .args(["check", "cases/no_such.hot", "--color", "never"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("\x1b["));
    // A config file's bad key is named with its file, and the default is used; a good one is.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[check]\nband = \"wide\"\ntime = 0.2\nspeed = 1\n").unwrap();
    let out = hotlab()
        .env("HOTLAB_CONFIG", &config)
        .args(["check", "cases/int_loop.hot", "--iters", "500", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("config.toml: `check.band`: expected a percentage"),
        "{err}"
    );
    assert!(err.contains("`check.speed`: unknown key"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["band_pct"], 2.0, "the default band");
}
