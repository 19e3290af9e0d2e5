//! `hotlab ladder` and `hotlab asm --ladder` through the binary.

use assert_cmd::Command;
use predicates::prelude::*;

fn hotlab() -> Command {
    Command::cargo_bin("hotlab").unwrap()
}

/// A file `name` holding `text` in a fresh temporary directory (kept while the guard lives).
fn temp_file(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

#[test]
fn a_bad_ladder_file_names_file_line_and_key() {
    let (_dir, path) = temp_file(
        "bad.toml",
        "name = \"bad\"\ndescription = \"x\"\n\n[[step]]\nlayer = \"native\"\ntitle = \"n\"\ntext = \"t\"\n\n[[step]]\nlayer = \"slott\"\ntitle = \"s\"\ntext = \"t\"\n",
    );
    hotlab()
        .args(["ladder", "--ladder"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.toml:10:"))
        .stderr(predicate::str::contains("step[2].layer"))
        .stderr(predicate::str::contains("unknown layer"));
}

#[test]
fn an_unknown_ladder_name_lists_the_shipped_ones() {
    hotlab()
        .args(["ladder", "--ladder", "nope"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("host_call"));
}

#[test]
fn a_snippet_without_call_is_refused_with_its_name() {
    let (_dir, path) = temp_file("s.hot", "fn main() -> i64 { return 1 }\n");
    hotlab()
        .args(["ladder", "--snippet"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("s.hot"))
        .stderr(predicate::str::contains("fn call() -> i64"));
}

#[test]
fn a_short_run_prints_every_row_with_matching_checksums() {
    let out = hotlab()
        .args([
            "ladder", "--ladder", "direct", "--time", "0.5", "--format", "json",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "native + jit + aot");
    assert!(rows.iter().all(|r| r["checksum_ok"] == true));
    assert_eq!(rows[1]["path"], "Direct<Iface>");
}

#[test]
fn asm_ladder_shows_each_step_and_its_diff() {
    hotlab()
        .args(["asm", "--ladder", "host_call", "--build", "jit"])
        .assert()
        .success()
        .stdout(predicate::str::contains("=== slot read (slot)"))
        .stdout(predicate::str::contains("--- diff from the step before: +"))
        .stdout(predicate::str::contains("call rax").or(predicate::str::contains("call r")));
}

#[test]
fn the_table_is_coloured_as_checks_line_is() {
    let table = |color: Option<&str>, no_color: bool| {
        let mut c = hotlab();
        c.args([
            "ladder", "--ladder", "direct", "--build", "jit", "--time", "0.3",
        ]);
        if let Some(choice) = color {
            c.args(["--color", choice]);
        }
        if no_color {
            c.env("NO_COLOR", "1");
        } else {
            c.env_remove("NO_COLOR");
        }
        let out = c.assert().success().get_output().stdout.clone();
        String::from_utf8(out).unwrap()
    };
    // `always` colours even a pipe: the title bold, the `vs native` verdict in its colour.
    let painted = table(Some("always"), false);
    assert!(painted.contains("\x1b[1mladder direct\x1b[0m"), "{painted}");
    let verdict = [
        "\x1b[32mequal",
        "\x1b[31mslower",
        "\x1b[36mfaster",
        "\x1b[33munresolved",
    ];
    assert!(verdict.iter().any(|v| painted.contains(v)), "{painted}");
    // Without the escapes it is the plain table (alignment kept).
    let plain = table(Some("never"), false);
    assert!(!plain.contains('\x1b'), "{plain}");
    let strip = hotlab::frontend::strip_ansi(&painted);
    let rows = |s: &str| s.lines().filter(|l| l.starts_with("native ")).count();
    assert_eq!(rows(&strip), rows(&plain));
    // Piped with `auto` (the default), and NO_COLOR: none.
    assert!(!table(None, false).contains('\x1b'));
    assert!(!table(None, true).contains('\x1b'));
    // `always` beats NO_COLOR, as for `check`.
    assert!(table(Some("always"), true).contains('\x1b'));
}

/// A method that sums 0..10 beside a twin that returns 45: the body is measured as its own
/// row in each build, and each build's first rung is measured from it, not from the native row
/// (so the body's cost lands on no layer).
#[test]
fn a_method_that_does_work_gets_a_body_row_the_rungs_stand_on() {
    let (_dir, path) = temp_file(
        "sum.hot",
        "fn call() -> i64 {\n    var s = 0\n    for i in 0..10 {\n        s += i\n    }\n    return s\n}\n",
    );
    let out = hotlab()
        .args([
            "ladder", "--ladder", "fused", "--time", "0.3", "--format", "json",
        ])
        .arg("--snippet")
        .arg(&path)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["body_twin_returns"], 45, "the value the twin returns");
    let rows = v["rows"].as_array().unwrap();
    let steps: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["layer"].as_str().unwrap(),
                r["build"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("native", "-"),
            ("body", "jit"),
            ("body", "aot"),
            ("fused", "jit"),
            ("fused", "aot")
        ]
    );
    assert_eq!(rows[1]["step"], "method body");
    assert_eq!(rows[1]["path"], "Bound");
    // The body rows against the native row; each rung against its build's body row.
    assert_eq!(
        (rows[1]["previous"].as_u64(), rows[2]["previous"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(
        (rows[3]["previous"].as_u64(), rows[4]["previous"].as_u64()),
        (Some(1), Some(2))
    );
    assert!(rows.iter().all(|r| r["checksum_ok"] == true));
    // The table says why the row is there.
    hotlab()
        .args([
            "ladder", "--ladder", "fused", "--time", "0.2", "--build", "jit",
        ])
        .arg("--snippet")
        .arg(&path)
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"(?m)^method body +jit +Bound ").unwrap())
        .stdout(predicate::str::contains(
            "does work its native twin does not",
        ));
}

#[test]
fn the_empty_method_has_no_body_row_unless_the_ladder_asks() {
    let ladder = |second: &str, third: &str| {
        format!(
            "name = \"b\"\ndescription = \"d\"\n\n[[step]]\nlayer = \"native\"\ntitle = \"n\"\ntext = \"t\"\n\n\
             [[step]]\nlayer = \"{second}\"\ntitle = \"{second}\"\ntext = \"t\"\n\n\
             [[step]]\nlayer = \"{third}\"\ntitle = \"{third}\"\ntext = \"t\"\n"
        )
    };
    let (_dir, path) = temp_file("body.toml", &ladder("body", "slot"));
    let out = hotlab()
        .args([
            "ladder", "--time", "0.2", "--build", "jit", "--format", "json", "--ladder",
        ])
        .arg(&path)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let layers: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["layer"].as_str().unwrap())
        .collect();
    assert_eq!(layers, ["native", "body", "slot"]);
    // `body` anywhere else is refused where it stands.
    std::fs::write(&path, ladder("slot", "body")).unwrap();
    hotlab()
        .args(["ladder", "--ladder"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("step[3].layer"))
        .stderr(predicate::str::contains(
            "`body` may only be the second step",
        ));
}
