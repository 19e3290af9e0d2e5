//! `hotlab run FILE --reload FILE2`: live objects migrate (added, removed, retyped fields),
//! module variables keep their objects, `after_reload` sees the migrated state, and a version
//! that does not compile (or cannot replace the old one) changes nothing.

mod common;

use std::sync::Arc;

use assert_cmd::Command;
use common::fixture;
use hotlab::backend::Value;
use hotlab::backend::jit::{JitOptions, ReloadFailure, ScriptModule};
use hotlab::lang::{SourceFile, compile};
use predicates::prelude::*;

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

/// A version that does not compile, or cannot replace the old one, changes nothing; the next
/// one still migrates. The same on every backend: the interpreter and the object backend (a
/// new shared library per version) give the jit's output, migrations and errors.
#[test]
fn every_backend_reloads_the_same_way() {
    for backend in ["jit", "object", "interp"] {
        hotlab()
            .args([
                "run",
                &fixture("v1.hot"),
                "--backend",
                backend,
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
            ))
            .stderr(predicate::str::contains(
                "class Counter v2: 2 object(s) migrated; kept [n] added [added] removed [gone] retyped [ratio]",
            ));
    }
}

/// No code of a replaced version runs again, so a version that drops a class unloads it: its
/// objects are destroyed and a line says so, the same on every backend. Then a version whose
/// `<init>` raises is still the current one (its classes run its code): the error is reported
/// and the next reload goes on from it.
#[test]
fn a_dropped_class_is_unloaded_and_a_raising_init_still_switches_everywhere() {
    let dir = std::env::temp_dir().join(format!("hotlab-reload-drop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let with_temp = dir.join("with_temp.hot");
    let v1 = std::fs::read_to_string(fixture("v1.hot")).unwrap();
    std::fs::write(
        &with_temp,
        v1.replace(
            "var a: Counter? = null",
            "class Temp { var t: i64 = 0 }\nvar keep: Temp? = null\nvar a: Counter? = null",
        )
        .replace(
            "    return x.n\n",
            "    keep = new Temp()\n    return x.n\n",
        ),
    )
    .unwrap();
    let v2 = std::fs::read_to_string(fixture("v2.hot")).unwrap();
    let raising = dir.join("raising.hot");
    std::fs::write(
        &raising,
        format!("{v2}\nfn zero() -> i64 {{ return 0 }}\nvar boom: i64 = 10 / zero()\n"),
    )
    .unwrap();
    for backend in ["jit", "object", "interp"] {
        hotlab()
            .args(["run", with_temp.to_str().unwrap(), "--backend", backend])
            .args(["--reload", raising.to_str().unwrap()])
            .args(["--reload", &fixture("v2.hot")])
            .assert()
            .code(1)
            // The raising version's classes migrated; v2 then reloads from it (v3 of Counter).
            .stdout("2\n102040\n")
            .stderr(predicate::str::contains(
                "class Temp unloaded (not in the new version): 1 object(s) destroyed",
            ))
            .stderr(predicate::str::contains("division by zero"))
            .stderr(predicate::str::contains(
                "class Counter v3: 2 object(s) migrated; kept [n, added, ratio] added [] removed [] retyped []",
            ));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn script_module_reload_keeps_host_handles_valid() {
    let text = std::fs::read_to_string(fixture("v1.hot")).unwrap();
    let program = compile(Arc::new(SourceFile::new("v1.hot", text))).unwrap();
    let mut module = ScriptModule::new(program, JitOptions::default()).unwrap();
    assert_eq!(module.run_main().unwrap(), Value::I64(2));
    let held = module.current().global_handle("a").unwrap();
    use hotlab::runtime::iface::Hook;
    assert_eq!(held.call().into_result().unwrap(), 3);

    let broken = std::fs::read_to_string(fixture("broken.hot")).unwrap();
    let failed = module.reload(Arc::new(SourceFile::new("broken.hot", broken)));
    assert!(matches!(failed, Err(ReloadFailure::Compile(_))));
    assert_eq!(
        held.call().into_result().unwrap(),
        4,
        "a failed reload changed the code"
    );

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
    assert_eq!(held.call().into_result().unwrap(), 204);
}

/// The interpreter's reload API: the same outcomes as the jit's `ScriptModule` above (host
/// handle valid, calls reach the new code, retyped field reported, globals kept, a failed
/// version changes nothing), and no object leaks.
#[test]
fn interp_reload_keeps_host_handles_valid() {
    use hotlab::backend::Checks;
    use hotlab::backend::interp::Interp;
    use hotlab::runtime::iface::Hook;
    let load = |name: &str| {
        let text = std::fs::read_to_string(fixture(name)).unwrap();
        compile(Arc::new(SourceFile::new(name, text))).unwrap()
    };
    let (v1, resigned, v2) = (load("v1.hot"), load("resigned.hot"), load("v2.hot"));
    let mut interp = Interp::new(&v1, Checks::On).unwrap();
    assert_eq!(interp.call(v1.main.unwrap(), &[]).unwrap(), Value::I64(2));
    let a = v1.globals.iter().position(|g| g.name == "a").unwrap();
    let held = interp
        .global_handle(hotlab::lang::hir::GlobalId(a as u32))
        .unwrap();
    assert_eq!(interp.host_calls(|| held.call().into_result()).unwrap(), 3);

    let failed = interp.reload(&resigned);
    assert!(
        matches!(&failed, Err(ReloadFailure::Refused(m)) if m.to_string().contains("cannot change its signature")),
        "{failed:?}"
    );
    assert_eq!(
        interp.host_calls(|| held.call().into_result()).unwrap(),
        4,
        "a refused reload changed the code"
    );

    let outcome = interp.reload(&v2).unwrap();
    assert_eq!(outcome.classes.len(), 1);
    assert_eq!(outcome.classes[0].migrated, 2);
    assert_eq!(outcome.classes[0].kept, ["n"]);
    assert_eq!(outcome.classes[0].added, ["added"]);
    assert_eq!(outcome.classes[0].removed, ["gone"]);
    assert_eq!(outcome.classes[0].retyped, ["ratio"]);
    assert_eq!(outcome.globals_kept, ["a", "b"]);
    assert_eq!(outcome.after_reload, Some(Value::I64(104 * 1000 + 40)));
    // The host's handle survived and now runs the new code.
    assert_eq!(
        interp.host_calls(|| held.call().into_result()).unwrap(),
        204
    );
    drop(held);
    let runtime = std::sync::Arc::clone(interp.runtime());
    drop(interp);
    let counter = runtime.class("Counter").unwrap();
    assert_eq!(counter.shell_count(), 0, "objects leaked");
}

/// The object backend's reload: each version a new library, the same outcomes as the jit's.
#[test]
fn object_reload_keeps_host_handles_valid() {
    use hotlab::backend::object::ObjectOptions;
    use hotlab::runtime::iface::Hook;
    let text = std::fs::read_to_string(fixture("v1.hot")).unwrap();
    let program = compile(Arc::new(SourceFile::new("v1.hot", text))).unwrap();
    let mut module = ScriptModule::new_object(program, ObjectOptions::default()).unwrap();
    assert_eq!(module.run_main().unwrap(), Value::I64(2));
    let held = module.current().global_handle("a").unwrap();
    assert_eq!(held.call().into_result().unwrap(), 3);
    let v2 = std::fs::read_to_string(fixture("v2.hot")).unwrap();
    let outcome = module
        .reload(Arc::new(SourceFile::new("v2.hot", v2)))
        .unwrap();
    assert_eq!(outcome.classes[0].retyped, ["ratio"]);
    assert_eq!(outcome.globals_kept, ["a", "b"]);
    // 3 + 100 from after_reload's call.
    assert_eq!(outcome.after_reload, Some(Value::I64(103 * 1000 + 40)));
    assert_eq!(held.call().into_result().unwrap(), 203);
}

/// `run --backend jit-opt` runs `main`, then refuses every reload with the reason (nothing
/// changes, the exit code says it failed).
#[test]
fn jit_opt_runs_and_refuses_reloads() {
    hotlab()
        .args([
            "run",
            &fixture("v1.hot"),
            "--backend",
            "jit-opt",
            "--reload",
            &fixture("v2.hot"),
        ])
        .assert()
        .code(2)
        .stdout("2\n")
        .stderr(predicate::str::contains(
            "a jit-opt module cannot be reloaded",
        ));
}

/// A closure kept in a module variable captured a handle and read a field at the first
/// version's offset; after a reload that swaps the fields' places and types, running it read a
/// string from an integer cell (a crash on jit and object). The reload now gives the variable
/// the new version's initializer, on every backend.
#[test]
fn a_closure_of_a_replaced_version_never_runs_against_migrated_objects() {
    let dir = std::env::temp_dir().join(format!("hotlab-reload-closure-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (v1, v2) = (dir.join("v1.hot"), dir.join("v2.hot"));
    let keep = "var keep: fn() -> str = || -> str { return \"\" }\n";
    std::fs::write(
        &v1,
        format!(
            "class C {{\n var n: i64 = 5\n var s: str = \"hi\"\n}}\n{keep}\
             fn main() -> i64 {{\n let c = new C()\n keep = || -> str {{ return c.s }}\n \
             return keep().len()\n}}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        &v2,
        format!(
            "class C {{\n var s: i64 = 7\n var n: str = \"x\"\n}}\n{keep}\
             fn after_reload() -> i64 {{ return keep().len() }}\n"
        ),
    )
    .unwrap();
    for backend in ["jit", "object", "interp"] {
        hotlab()
            .args(["run", v1.to_str().unwrap(), "--backend", backend])
            .args(["--reload", v2.to_str().unwrap()])
            .assert()
            .success()
            .stdout("2\n0\n")
            .stderr(predicate::str::contains("retyped [s, n]"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A version whose new class cannot be defined (a method named like a sibling's, with another
/// signature: slot indices belong to the class family) fails inside the reload's transaction:
/// the class it reloaded first goes back, so the next version is the reloaded class's v2.
#[test]
fn a_version_whose_new_class_fails_changes_nothing_everywhere() {
    let dir = std::env::temp_dir().join(format!("hotlab-reload-define-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = "class Shape { var w: i64 = 2 }\nclass Sq : Shape {\n fn area(self) -> i64 { return self.w * self.w }\n}\nvar s: Sq? = null\n";
    let v1 = dir.join("v1.hot");
    std::fs::write(
        &v1,
        format!("{base}fn main() -> i64 {{ s = new Sq()\n return 1 }}\n"),
    )
    .unwrap();
    let bad = dir.join("bad.hot");
    std::fs::write(
        &bad,
        format!("{base}class Circle : Shape {{\n fn area(self) -> f64 {{ return 3.0 }}\n}}\n"),
    )
    .unwrap();
    let good = dir.join("good.hot");
    std::fs::write(
        &good,
        format!("{base}fn after_reload() -> i64 {{ let q: Sq = s\n return q.area() }}\n"),
    )
    .unwrap();
    for backend in ["jit", "object", "interp"] {
        hotlab()
            .args(["run", v1.to_str().unwrap(), "--backend", backend])
            .args(["--reload", bad.to_str().unwrap()])
            .args(["--reload", good.to_str().unwrap()])
            .assert()
            .code(2)
            .stdout("1\n4\n")
            .stderr(predicate::str::contains("cannot define class `Circle`"))
            .stderr(predicate::str::contains(
                "class Sq v2: 1 object(s) migrated",
            ));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A class a version dropped (unloaded) can come back in a later version: it is defined anew.
#[test]
fn a_dropped_class_can_come_back_everywhere() {
    let dir = std::env::temp_dir().join(format!("hotlab-reload-back-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let a = "class A { var n: i64 = 1 }\nvar x: A? = null\n";
    let b = "class B { var m: i64 = 2 }\n";
    let v1 = dir.join("v1.hot");
    std::fs::write(
        &v1,
        format!("{a}{b}fn main() -> i64 {{ x = new A()\n return 1 }}\n"),
    )
    .unwrap();
    let v2 = dir.join("v2.hot");
    std::fs::write(&v2, a).unwrap();
    let v3 = dir.join("v3.hot");
    std::fs::write(
        &v3,
        format!("{a}{b}fn after_reload() -> i64 {{ let y = new B()\n return y.m }}\n"),
    )
    .unwrap();
    for backend in ["jit", "object", "interp"] {
        hotlab()
            .args(["run", v1.to_str().unwrap(), "--backend", backend])
            .args(["--reload", v2.to_str().unwrap()])
            .args(["--reload", v3.to_str().unwrap()])
            .assert()
            .success()
            .stdout("1\n2\n")
            .stderr(predicate::str::contains(
                "class B unloaded (not in the new version): 0 object(s) destroyed",
            ))
            .stderr(predicate::str::contains("class B defined"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A function that calls itself runs unrolled by one level (`opt_inline::inline_self`, on jit
/// and object too): a call through a host handle before a reload runs the old recursion whole,
/// the one after it the new one whole (the copy inside the function is of its own version).
#[test]
fn a_reload_between_two_calls_swaps_a_function_that_calls_itself_whole() {
    use hotlab::backend::object::ObjectOptions;
    use hotlab::runtime::iface::Hook;
    let version = |step: &str| {
        format!(
            "fn depth(k: i64) -> i64 {{
                 if k == 0 {{ return 0 }}
                 return depth(k - 1) * {step} + k
             }}
             class C : Hook {{
                 var n: i64 = 0
                 fn call(self) -> i64 {{ self.n += 1; return depth(5 + self.n) }}
             }}
             var a: C? = null
             fn main() -> i64 {{ a = new C(); return depth(3) }}"
        )
    };
    let source = |name: &str, step: &str| Arc::new(SourceFile::new(name, version(step)));
    for object in [false, true] {
        let program = compile(source("v1.hot", "3")).unwrap();
        let mut module = if object {
            ScriptModule::new_object(program, ObjectOptions::default()).unwrap()
        } else {
            ScriptModule::new(program, JitOptions::default()).unwrap()
        };
        // depth(3) with * 3: ((1 * 3 + 2) * 3) + 3 = 18.
        assert_eq!(module.run_main().unwrap(), Value::I64(18));
        let held = module.current().global_handle("a").unwrap();
        // depth(6) with * 3: 1, 5, 18, 58, 179, 543.
        assert_eq!(held.call().into_result().unwrap(), 543, "object: {object}");
        module.reload(source("v2.hot", "2")).unwrap();
        // depth(7) with * 2: 1, 4, 11, 26, 57, 120, 247.
        assert_eq!(held.call().into_result().unwrap(), 247, "object: {object}");
    }
}
