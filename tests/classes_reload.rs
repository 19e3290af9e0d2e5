//! `hotlab run FILE --reload FILE2`: live objects migrate (added, removed, retyped fields),
//! module variables keep their objects, `after_reload` sees the migrated state, and a version
//! that does not compile (or cannot replace the old one) changes nothing.

use std::sync::Arc;

use assert_cmd::Command;
use hotlab::backend::Value;
use hotlab::backend::jit::{JitOptions, ReloadFailure, ScriptModule};
use hotlab::lang::{SourceFile, compile};
use predicates::prelude::*;

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/reload/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn hotlab() -> Command {
    Command::cargo_bin("hotlab").unwrap()
}

#[test]
fn reload_migrates_fields_and_runs_after_reload() {
    hotlab()
        .args(["run", &fixture("v1.hot"), "--reload", &fixture("v2.hot")])
        .assert()
        .success()
        // main: 2; after_reload: x.n = 2 + 100 kept and counted on, y.n = 0, added = 40.
        .stdout("2\n102040\n")
        .stderr(predicate::str::contains(
            "class Counter v2: 2 object(s) migrated; kept [n] added [added] removed [gone] retyped [ratio]",
        ));
}

#[test]
fn a_broken_version_changes_nothing() {
    hotlab()
        .args([
            "run",
            &fixture("v1.hot"),
            "--reload",
            &fixture("broken.hot"),
            "--reload",
            &fixture("resigned.hot"),
            "--reload",
            &fixture("v2.hot"),
        ])
        .assert()
        .code(2)
        .stdout("2\n102040\n")
        .stderr(predicate::str::contains("unknown name `nope`"))
        .stderr(predicate::str::contains("broken.hot: not applied"))
        .stderr(predicate::str::contains(
            "method `Counter.call` cannot change its signature",
        ));
}

#[test]
fn reload_needs_the_jit() {
    hotlab()
        .args([
            "run",
            &fixture("v1.hot"),
            "--backend",
            "interp",
            "--reload",
            &fixture("v2.hot"),
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--reload needs --backend jit"));
}

#[test]
fn script_module_reload_keeps_host_handles_valid() {
    let text = std::fs::read_to_string(fixture("v1.hot")).unwrap();
    let program = compile(Arc::new(SourceFile::new("v1.hot", text))).unwrap();
    let mut module = ScriptModule::new(program, JitOptions::default()).unwrap();
    assert_eq!(module.run_main().unwrap(), Value::I64(2));
    let held = module.current().global_handle("a").unwrap();
    use hotlab::runtime::iface::Hook;
    assert_eq!(held.call().unwrap(), 3);

    let broken = std::fs::read_to_string(fixture("broken.hot")).unwrap();
    let failed = module.reload(Arc::new(SourceFile::new("broken.hot", broken)));
    assert!(matches!(failed, Err(ReloadFailure::Compile(_))));
    assert_eq!(held.call().unwrap(), 4, "a failed reload changed the code");

    let v2 = std::fs::read_to_string(fixture("v2.hot")).unwrap();
    let outcome = module
        .reload(Arc::new(SourceFile::new("v2.hot", v2)))
        .unwrap();
    assert_eq!(outcome.classes.len(), 1);
    assert_eq!(outcome.classes[0].retyped, ["ratio"]);
    assert_eq!(outcome.globals_kept, ["a", "b"]);
    // 4 + 100 from after_reload's call.
    assert_eq!(outcome.after_reload, Some(Value::I64(104 * 1000 + 40)));
    // The host's handle survived and now runs the new code.
    assert_eq!(held.call().unwrap(), 204);
}
