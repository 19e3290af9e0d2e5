//! The JIT's host entries (`backend/jit/host_entry.rs`): a host call through a `&dyn Hook` on a
//! script object's shell jumps into generated code that is the border itself, with the method
//! inlined. Every protection the Rust border gives holds there too: raises caught and located,
//! what the method owned released, detached objects refused, the reloaded version run, the
//! depth budget and the thread's record left as they were. No timing here.

mod common;

use std::sync::Arc;

use hotlab::backend::jit::{Jit, JitOptions, OptLevel, ScriptModule};
use hotlab::lang::SourceFile;
use hotlab::runtime::depth::with_record;
use hotlab::runtime::iface::{Bench, Hook};
use hotlab::runtime::{ScriptError, ScriptErrorKind};

const RAISING: &str = "class Other {
    var k: i64 = 0
}
class Counter : Hook {
    var n: i64 = 0
    var other: Other? = null
    fn call(self) -> i64 {
        self.n += 1
        let held = self.other
        self.other = null
        let r = 10 / (self.n - 1)
        self.other = held
        return r
    }
}
class Summer : Bench {
    fn run(self, n: i64) -> i64 {
        var s = 0
        for i in 0..n { s += i }
        return s
    }
}
let target = new Counter()
let summer = new Summer()
fn main() -> i64 {
    target.other = new Other()
    return 0
}
";

fn options(opt: OptLevel) -> JitOptions {
    JitOptions {
        verify: true,
        opt,
        ..JitOptions::default()
    }
}

/// The call the host makes on a shell: one virtual call.
fn shell_call(h: &hotlab::runtime::handle::Handle) -> Result<i64, ScriptError> {
    let shell: &dyn Hook = std::hint::black_box(h.get().unwrap());
    shell.call().into_result()
}

#[test]
fn every_hook_method_gets_a_host_entry_with_its_method_inlined() {
    for opt in [OptLevel::None, OptLevel::Speed] {
        let program = common::compile_text("raising.hot", RAISING).unwrap();
        let compiled = Jit::new(options(opt)).unwrap().compile(&program).unwrap();
        let names: Vec<&str> = compiled.host_entries().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["Counter.call.host", "Summer.run.host"], "{opt:?}");
        // A small method is inlined: its entry calls no script function (only the slow
        // path's helper).
        let small = "class Counter : Hook {
    var n: i64 = 0
    fn call(self) -> i64 { self.n += 1; return self.n }
}
let target = new Counter()
";
        let program = common::compile_text("small.hot", small).unwrap();
        let compiled = Jit::new(options(opt)).unwrap().compile(&program).unwrap();
        let entry = compiled.host_entries().next().unwrap();
        assert!(
            !entry.clif.contains("try_call fn0("),
            "{opt:?}: the method is still called:\n{}",
            entry.clif
        );
    }
}

#[test]
fn a_raise_in_the_method_is_caught_by_the_host_entry_and_located() {
    for opt in [OptLevel::None, OptLevel::Speed] {
        let program = common::compile_text("raising.hot", RAISING).unwrap();
        let mut jit = Jit::new(options(opt)).unwrap();
        let compiled = jit.compile(&program).unwrap();
        compiled.run_main().unwrap();
        let target = compiled.global_handle("target").unwrap();
        let others = || {
            let objects = compiled.objects().unwrap();
            objects.runtime.class("Other").unwrap().shell_count()
        };
        assert_eq!(others(), 1);
        // n = 1: a division by zero, at its line, as a value the host gets back, raised while
        // the method held the object it took from its field.
        let err = shell_call(&target).unwrap_err();
        assert_eq!(err.kind, ScriptErrorKind::DivisionByZero, "{opt:?}");
        let line = RAISING[..err.span.start as usize].lines().count();
        assert_eq!(line, 11, "{opt:?}: {err}");
        assert!(!std::thread::panicking());
        assert_eq!(with_record(|r| r.depth()), 0, "{opt:?}: the room came back");
        // What the method held when it raised was released by the sweep.
        assert_eq!(others(), 0, "{opt:?}: `held` leaked");
        // The object runs on.
        assert_eq!(shell_call(&target).unwrap(), 10, "{opt:?}");
        assert_eq!(shell_call(&target).unwrap(), 5, "{opt:?}");
        let summer = compiled.global_handle("summer").unwrap();
        let bench: &dyn Bench = std::hint::black_box(summer.get().unwrap());
        assert_eq!(bench.run(10).into_result().unwrap(), 45, "{opt:?}");
    }
}

#[test]
fn a_detached_object_is_refused_through_its_shell() {
    for opt in [OptLevel::None, OptLevel::Speed] {
        let program = common::compile_text("raising.hot", RAISING).unwrap();
        let compiled = Jit::new(options(opt)).unwrap().compile(&program).unwrap();
        let target = compiled.global_handle("target").unwrap();
        let keep = target.clone();
        let shell: &dyn Hook = std::hint::black_box(keep.get().unwrap());
        let runtime = &compiled.objects().unwrap().runtime;
        runtime.detach(&target).unwrap();
        let err = shell.call().into_result().unwrap_err();
        assert_eq!(err.kind, ScriptErrorKind::ObjectDetached, "{opt:?}");
        assert_eq!(with_record(|r| r.depth()), 0);
    }
}

#[test]
fn a_shell_runs_the_reloaded_version() {
    let v1 = "class Counter : Hook {
    var n: i64 = 0
    fn call(self) -> i64 { self.n += 1; return self.n }
}
let target = new Counter()
fn main() -> i64 { return 0 }
";
    let v2 = v1.replace("self.n += 1; return self.n", "self.n += 100; return self.n");
    let program = common::compile_text("v1.hot", v1).unwrap();
    let mut module = ScriptModule::new(program, options(OptLevel::None)).unwrap();
    let target = module.current().global_handle("target").unwrap();
    let shell: &dyn Hook = std::hint::black_box(target.get().unwrap());
    assert_eq!(shell.call().into_result().unwrap(), 1);
    module
        .reload(Arc::new(SourceFile::new("v2.hot", v2)))
        .unwrap();
    // The object migrated in place: the same shell, the new version's entry and code.
    assert_eq!(shell.call().into_result().unwrap(), 101);
    assert_eq!(shell.call().into_result().unwrap(), 201);
}
