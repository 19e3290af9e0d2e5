//! `hotlab check --layouts K` through the binary: the script's code measured at K placements,
//! the answer's layout fields, and the backends that place code only once.

use assert_cmd::Command;

fn hotlab() -> Command {
    let mut c = Command::cargo_bin("hotlab").unwrap();
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn json_of(args: &[&str]) -> (i32, serde_json::Value) {
    let out = hotlab().args(args).output().unwrap();
    let code = out.status.code().expect("exits, no signal");
    let text = String::from_utf8(out.stdout).unwrap();
    let v = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: {text}\n{}", String::from_utf8_lossy(&out.stderr)));
    (code, v)
}

#[test]
fn three_layouts_give_three_per_layout_ratios_and_a_spread() {
    let (code, v) = json_of(&[
        "check",
        "cases/int_loop.clif",
        "--vs",
        "cases/int_loop.clif",
        "--layouts",
        "3",
        "--time",
        "0.5",
        "--json",
    ]);
    assert!([0, 3, 4, 8].contains(&code), "{code}: {v}");
    assert_eq!(v["layouts"], 3, "{v}");
    let ratios = v["layout_ratios"].as_array().expect("an array");
    assert_eq!(ratios.len(), 3, "{v}");
    assert!(
        ratios.iter().all(|r| r.as_f64().is_some_and(|r| r > 0.0)),
        "{v}"
    );
    let spread = v["layout_spread"].as_f64().expect("a spread");
    assert!(spread >= 0.0, "{v}");
    let text = v.to_string();
    assert!(text.contains("over 3 layouts of the code"), "{v}");
}

#[test]
fn the_interpreter_is_measured_at_its_one_placement() {
    let (code, v) = json_of(&[
        "check",
        "cases/int_loop.hot",
        "--backend",
        "interp",
        "--layouts",
        "4",
        "--time",
        "0.3",
        "--json",
    ]);
    assert!([0, 3, 4, 8].contains(&code), "{code}: {v}");
    assert_eq!(v["layouts"], 1, "{v}");
    assert!(v["layout_spread"].is_null(), "{v}");
}

#[test]
fn a_layout_count_out_of_range_is_bad_input() {
    for k in ["0", "17", "x"] {
        let out = hotlab()
            .args(["check", "cases/int_loop.hot", "--layouts", k])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--layouts {k}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--layouts"), "{err}");
    }
}
