//! `hotlab bench` through the binary: --list, a filtered tiny run with its marks, exports.

use assert_cmd::Command;

fn hotlab() -> Command {
    let mut c = Command::cargo_bin("hotlab").unwrap();
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

#[test]
fn list_names_backends_cases_and_twins() {
    let out = hotlab().args(["bench", "--list"]).output().unwrap();
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    for want in [
        "jit-opt",
        "linked and dlopen'ed",
        "host_call",
        "entry hook",
        "int_loop",
        "cases/int_loop.clif",
        "native only",
        "twins:",
    ] {
        assert!(s.contains(want), "missing {want:?} in\n{s}");
    }
}

#[test]
fn filtered_run_has_the_rows_marks_and_exports() {
    let dir = tempfile::tempdir().unwrap();
    let (csv, json, md) = (
        dir.path().join("m.csv"),
        dir.path().join("m.json"),
        dir.path().join("m.md"),
    );
    let out = hotlab()
        .args([
            "bench",
            "--filter",
            "int_loop",
            "--reps",
            "1",
            "--time",
            "0.02",
            "--iters",
            "100",
            "--reloads",
            "10",
        ])
        .arg("--csv")
        .arg(&csv)
        .arg("--json")
        .arg(&json)
        .arg("--markdown")
        .arg(&md)
        .output()
        .unwrap();
    let s = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{s}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(s.contains("integer arithmetic loop"), "{s}");
    assert!(!s.contains("float arithmetic loop"), "{s}");
    assert!(
        s.contains("n/a: the object backend runs .hot scripts only"),
        "{s}"
    );
    assert!(
        s.contains("n/a: the interpreter runs .hot scripts only"),
        "{s}"
    );
    assert!(
        s.contains("jit-opt's class rows run code for a fixed runtime"),
        "{s}"
    );
    // A filter that does not match the reload rows leaves them out.
    assert!(!s.contains("call after"), "{s}");
    assert!(s.contains("load (µs)"), "{s}");
    let row = s
        .lines()
        .find(|l| l.starts_with("integer arithmetic loop"))
        .unwrap();
    assert!(!row.contains('!'), "no result may differ: {s}");
    // Numeric records: one value per column, units in the column names.
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(
        csv.starts_with("backend,case,group,title,unit,twin,mode,time_ns,native_ns,ratio,"),
        "{csv}"
    );
    assert_eq!(
        csv.lines()
            .filter(|l| l.starts_with("jit,int_loop,"))
            .count(),
        2,
        "{csv}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(json["kind"], "bench");
    assert_eq!(json["reps"], 1);
    let rows = json["rows"].as_array().unwrap();
    let cell = |backend: &str, mode: &str| {
        rows.iter()
            .find(|r| r["backend"] == backend && r["case"] == "int_loop" && r["mode"] == mode)
            .unwrap_or_else(|| panic!("no {backend} {mode} row in {json}"))
    };
    let hot = cell("jit", "hot");
    assert_eq!(hot["status"], "ok");
    assert!(hot["time_ns"].as_f64().unwrap() > 0.0 && hot["ratio"].as_f64().unwrap() > 0.0);
    assert_eq!(hot["result"], hot["native_result"], "{hot}");
    assert!(hot["result"].is_string());
    assert_eq!(cell("object", "clif")["status"], "n/a");
    assert!(rows.iter().all(|r| r["group"] != "reload"));
    assert!(!json["loads"].as_array().unwrap().is_empty());
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("### backend jit-opt") && md.contains("### Caveats"),
        "{md}"
    );
}

#[test]
fn an_export_to_stdout_is_alone_there() {
    let out = hotlab()
        .args([
            "bench",
            "--filter",
            "int_loop",
            "--backend",
            "interp",
            "--reps",
            "1",
            "--time",
            "0.02",
            "--iters",
            "100",
            "--no-load",
            "--csv",
            "-",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8(out.stdout).unwrap();
    let mut lines = s.lines();
    assert!(lines.next().unwrap().starts_with("backend,case,"), "{s}");
    assert!(
        lines.all(|l| l.starts_with("interp,")),
        "only CSV records: {s}"
    );
    let out = hotlab()
        .args(["bench", "--csv", "-", "--json", "-", "--filter", "int_loop"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("only one of"));
}

#[test]
fn a_differing_result_is_marked_and_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/cases/int_loop.hot"))
        .unwrap();
    std::fs::write(
        dir.path().join("wrong.hot"),
        src.replace("return sink(acc)", "return sink(acc + 1)"),
    )
    .unwrap();
    let out = hotlab()
        .args([
            "bench",
            "--backend",
            "interp",
            "--reps",
            "1",
            "--time",
            "0.02",
            "--iters",
            "50",
            "--no-load",
            "--cases",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    let s = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(5), "{s}");
    // The interpreter's samples may not fit so small a budget: the mark shows with or without
    // a time.
    let row = s
        .lines()
        .find(|l| l.starts_with("integer arithmetic loop"))
        .unwrap();
    assert!(row.contains('!'), "{s}");
    assert!(!s.contains("load (µs)"), "{s}");
}

#[test]
fn bad_options_and_cases_are_input_errors() {
    let out = hotlab()
        .args(["bench", "--filter", "no-such-case"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no case"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("b.hot"), "//# title = 1\n").unwrap();
    let out = hotlab()
        .args(["bench", "--cases"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("b.hot:1:"));
}

#[test]
fn the_reload_section_in_text_csv_and_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let (csv, md) = (dir.path().join("r.csv"), dir.path().join("r.md"));
    let out = hotlab()
        .args([
            "bench",
            "--filter",
            "reload",
            "--reps",
            "1",
            "--time",
            "0.02",
            "--iters",
            "100",
            "--reloads",
            "1",
            "--no-load",
        ])
        .arg("--csv")
        .arg(&csv)
        .arg("--markdown")
        .arg(&md)
        .output()
        .unwrap();
    let s = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{s}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reload = s
        .lines()
        .find(|l| l.starts_with("reload of 100 objects with 65 fields (µs)"))
        .unwrap_or_else(|| panic!("no reload row in\n{s}"));
    // native `-`, a time on jit, object and interp, n/a on jit-opt.
    assert_eq!(reload.matches("n/a").count(), 1, "{reload}");
    for n in [0, 1] {
        let row = format!("call after {n} reloads");
        assert!(s.lines().any(|l| l.starts_with(&row)), "{s}");
    }
    assert!(!s.contains("call after 10 reloads"), "{s}");
    assert!(
        s.contains("n/a: refused: jit-opt code is not reloadable"),
        "{s}"
    );
    // No case matched: no case rows.
    assert!(!s.contains("integer arithmetic loop"), "{s}");
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(csv.contains("jit,reload,"), "{csv}");
    assert!(csv.contains("jit,call_after_1_reloads,"), "{csv}");
    for b in ["object", "interp"] {
        let line = csv
            .lines()
            .find(|l| l.starts_with(&format!("{b},reload,")))
            .unwrap_or_else(|| panic!("no {b} reload in {csv}"));
        assert!(!line.contains("n/a"), "{line}");
    }
    assert!(
        csv.contains("jit-opt,reload,") && csv.contains(",n/a,refused"),
        "{csv}"
    );
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("reload and the call after N reloads")
            && md.contains("reload of 100 objects with 65 fields"),
        "{md}"
    );
}
