//! `hotlab doctor` through the binary: the JSON has its parts, bad input is a clear error.
//! No timing claims here: the verdicts depend on the machine, so only shape is checked.

use assert_cmd::Command;

#[test]
fn doctor_json_has_health_and_checks() {
    let out = Command::cargo_bin("hotlab")
        .unwrap()
        .args(["doctor", "--json", "--time", "0.05"])
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c == 0 || c == 1),
        "{out:?}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["A/A", "+1 cycle", "layout", "code distance", "core clock"]
    );
    assert!(v["layout_spread"].as_f64().is_some_and(|s| s >= 0.0), "{v}");
    assert!(v["health"]["items"].as_array().unwrap().len() >= 12);
    assert!(v["checks"][0]["expected"].as_str() == Some("equal"));
}

#[test]
fn doctor_rejects_a_bad_time() {
    let out = Command::cargo_bin("hotlab")
        .unwrap()
        .args(["doctor", "--time=0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--time must be a number of seconds"), "{err}");
}
