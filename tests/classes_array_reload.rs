//! Hot reload of classes with fields of array type (boxed in their cell): a field kept by name
//! and full type keeps its array, a removed one is released, one retyped (`[i64; 2]` →
//! `[i64; 3]`) is re-initialized and reported, an added one gets its initializer; the same on
//! every backend, and nothing leaks.

mod common;

use std::sync::Arc;

use assert_cmd::Command;
use common::fixture;
use hotlab::backend::Value;
use hotlab::backend::jit::{JitOptions, ScriptModule};
use hotlab::lang::{SourceFile, compile};
use hotlab::runtime::values::live_blocks;
use predicates::prelude::*;

const REPORT: &str =
    "class Grid v2: 1 object(s) migrated; kept [a, s] added [extra] removed [gone] retyped [r]";

#[test]
fn array_fields_migrate_on_every_backend() {
    for backend in ["jit", "object", "interp"] {
        Command::cargo_bin("hotlab")
            .unwrap()
            .args([
                "run",
                &fixture("arrays_v1.hot"),
                "--backend",
                backend,
                "--reload",
                &fixture("arrays_v2.hot"),
            ])
            .assert()
            .success()
            // main: 1 + 20 + 3; after_reload: a[1] kept (20), r re-initialized (7, _, 9).
            .stdout("24\n20709\n")
            .stderr(predicate::str::contains(REPORT));
    }
}

#[test]
fn array_fields_migrate_without_leaks() {
    let before = live_blocks();
    {
        let read = |name: &str| {
            let text = std::fs::read_to_string(fixture(name)).unwrap();
            Arc::new(SourceFile::new(name, text))
        };
        let program = compile(read("arrays_v1.hot")).unwrap();
        let mut module = ScriptModule::new(program, JitOptions::default()).unwrap();
        assert_eq!(module.run_main().unwrap(), Value::I64(24));
        let outcome = module.reload(read("arrays_v2.hot")).unwrap();
        let report = &outcome.classes[0];
        assert_eq!(report.kept, ["a", "s"]);
        assert_eq!(report.added, ["extra"]);
        assert_eq!(report.removed, ["gone"]);
        assert_eq!(report.retyped, ["r"]);
        assert_eq!(outcome.after_reload, Some(Value::I64(20709)));
    }
    assert_eq!(live_blocks(), before, "array blocks leaked");
}
