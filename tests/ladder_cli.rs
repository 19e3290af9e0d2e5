//! `hotlab ladder` and `hotlab asm --ladder` through the binary.

use assert_cmd::Command;
use predicates::prelude::*;

fn hotlab() -> Command {
    Command::cargo_bin("hotlab").unwrap()
}

#[test]
fn a_bad_ladder_file_names_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        "name = \"bad\"\ndescription = \"x\"\n\n[[step]]\nlayer = \"native\"\ntitle = \"n\"\ntext = \"t\"\n\n[[step]]\nlayer = \"slott\"\ntitle = \"s\"\ntext = \"t\"\n",
    )
    .unwrap();
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
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hot");
    std::fs::write(&path, "fn main() -> i64 { return 1 }\n").unwrap();
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
