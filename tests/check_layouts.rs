//! `hotlab check --layouts K` through the binary: the script's code (and its twin's) measured at
//! K placements, the answer's layout fields, and the backends that place code only once.

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
    assert_eq!(v["other_layouts"], 1, "{v}");
    assert!(v["layout_spread"].is_null(), "{v}");
}

/// The twin is placed as often as the script: its copies pair with the script's placements,
/// and each side's time at each placement is reported.
#[test]
fn four_layouts_place_the_twin_as_often_as_the_script() {
    let (code, v) = json_of(&[
        "check",
        "cases/int_loop.hot",
        "--layouts",
        "4",
        "--time",
        "0.5",
        "--json",
    ]);
    assert!([0, 3, 4, 8].contains(&code), "{code}: {v}");
    assert_eq!(v["against"], "twin int_loop", "{v}");
    assert_eq!(v["layouts"], 4, "{v}");
    assert_eq!(v["other_layouts"], 4, "{v}");
    assert!(v["other_unplaced"].is_null(), "{v}");
    for key in ["layout_ratios", "layout_ns", "other_layout_ns"] {
        let values = v[key].as_array().expect("an array");
        assert_eq!(values.len(), 4, "{key}: {v}");
        assert!(
            values.iter().all(|x| x.as_f64().is_some_and(|x| x > 0.0)),
            "{key}: {v}"
        );
    }
    assert!(v["layout_spread"].as_f64().is_some_and(|s| s >= 0.0), "{v}");
    let explanation = v["explanation"].as_str().expect("a sentence");
    assert!(explanation.contains("over 4 layouts of the code"), "{v}");
    assert!(!explanation.contains("one placement"), "{v}");
    assert_eq!(v["results_equal"], true, "{v}");
}

/// `self_method`'s loop is `Mixer::total`'s, which rustc did not inline: a copy of the twin
/// would move none of it, so the twin runs at its one placement and the answer says why.
#[test]
fn a_twin_whose_loop_is_in_a_callee_runs_at_its_one_placement() {
    let (code, v) = json_of(&[
        "check",
        "cases/self_method.hot",
        "--layouts",
        "4",
        "--time",
        "0.3",
        "--json",
    ]);
    assert!([0, 3, 4, 8].contains(&code), "{code}: {v}");
    assert_eq!(
        (v["layouts"].as_u64(), v["other_layouts"].as_u64()),
        (Some(4), Some(1)),
        "{v}"
    );
    let why = v["other_unplaced"].as_str().expect("a reason");
    assert!(
        why.starts_with("twin self_method cannot be placed: ")
            && why.ends_with(
                "% of its instructions run in functions it calls, which stay where rustc put them"
            ),
        "{why}"
    );
    let explanation = v["explanation"].as_str().expect("a sentence");
    assert!(explanation.contains(why) && explanation.contains("so it ran at its one placement"));
    assert_eq!(
        v["other_layout_ns"].as_array().map(Vec::len),
        Some(1),
        "{v}"
    );
    assert!(
        v["other_instructions"].as_f64().is_some_and(|n| n > 0.0),
        "{v}"
    );
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
