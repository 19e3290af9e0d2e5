//! The `runtime` ladder: its rungs are the runtime's own code (build `runtime`), its top rung is
//! the host's call through a handle, and its last row is the bench's host-call row. Every
//! protection of the real call holds on its rungs: a detached object fails, a stale handle
//! fails, a raised error is caught and reported, the depth limit stops runaway recursion, and a
//! call waits while another thread reloads the class.

mod common;

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use hotlab::ladder::bench::{Build, CalledMethod, DEFAULT_SNIPPET, LadderBench, LadderRow};
use hotlab::ladder::path::Path;
use hotlab::ladder::spec::Layer;
use hotlab::ladder::{self, Ladder};
use hotlab::lang::{self, SourceFile};
use hotlab::runtime::ScriptErrorKind;
use hotlab::runtime::class::{ClassDef, Field, FieldType, Init, MethodDef};
use hotlab::runtime::depth::{current_thread_in_call, set_depth_limit};
use hotlab::runtime::iface::{HookCall, Signature};
use hotlab::runtime::object::Object;

const BOTH: [Build; 2] = [Build::Jit, Build::Aot];

fn layer(row: &LadderRow) -> Option<Layer> {
    match row.path {
        Path::Runtime(l) => Some(l),
        _ => None,
    }
}

/// The rungs that carry every check of the real call (not the bare slot call, not the bench's
/// row, which calls an object of its own).
fn checked(row: &LadderRow) -> bool {
    matches!(
        layer(row),
        Some(Layer::RtFused | Layer::RtObject | Layer::RtHandle)
    )
}

fn snippet(text: &str) -> lang::Program {
    lang::compile(Arc::new(SourceFile::new("t.hot", text))).unwrap()
}

#[test]
fn the_runtime_ladder_is_the_runtimes_code_and_the_benchs_row() {
    let l = ladder::resolve("runtime").unwrap();
    let program = snippet(DEFAULT_SNIPPET);
    let mut bench = LadderBench::build(l, CalledMethod::Snippet(&program), &BOTH).unwrap();
    let layers: Vec<Option<Layer>> = bench.rows.iter().map(layer).collect();
    assert_eq!(
        layers,
        [
            None,
            Some(Layer::RtSlot),
            Some(Layer::RtFused),
            Some(Layer::RtObject),
            Some(Layer::RtHandle),
            Some(Layer::Bench),
        ]
    );
    for row in &mut bench.rows[1..] {
        assert_eq!(row.build, Some(Build::Runtime), "{}", row.path);
        let (sum, fault) = row.run(100);
        assert!(fault.is_none(), "{}: {fault:?}", row.path);
        assert_eq!(sum, 100, "{}", row.path);
    }
    assert_eq!(bench.rows[4].path.to_string(), "Hook for Handle");
    assert!(!current_thread_in_call());
}

#[test]
fn runtime_rungs_fail_a_detached_object_and_a_stale_handle() {
    let program = snippet(DEFAULT_SNIPPET);
    let mut bench = LadderBench::build(
        ladder::resolve("runtime").unwrap(),
        CalledMethod::Snippet(&program),
        &BOTH,
    )
    .unwrap();
    bench.runtime().detach(bench.handle()).unwrap();
    let mut n = 0;
    for row in bench.rows.iter_mut().filter(|r| checked(r)) {
        let (sum, fault) = row.run(10);
        let fault = fault.unwrap_or_else(|| panic!("{} ran on a detached object", row.path));
        assert_eq!(fault.kind, ScriptErrorKind::ObjectDetached, "{}", row.path);
        assert_eq!(sum, 0);
        n += 1;
    }
    assert_eq!(n, 3);

    let mut bench = LadderBench::build(
        ladder::resolve("runtime").unwrap(),
        CalledMethod::Snippet(&program),
        &BOTH,
    )
    .unwrap();
    bench.runtime().destroy(bench.handle()).unwrap();
    let row = bench
        .rows
        .iter_mut()
        .find(|r| layer(r) == Some(Layer::RtHandle))
        .unwrap();
    let (sum, fault) = row.run(10);
    assert_eq!(fault.map(|f| f.kind), Some(ScriptErrorKind::StaleHandle));
    assert_eq!(sum, 0);
    assert!(!current_thread_in_call());
}

#[test]
fn runtime_rungs_catch_a_raised_error_and_restore_the_thread() {
    // The first call (made when the ladder is built) succeeds; every later one divides by zero.
    let text = "var calls = 0\nfn call() -> i64 {\n    calls = calls + 1\n    if calls > 1 { return 1 / (calls - calls) }\n    return 1\n}\n";
    let program = snippet(text);
    let mut bench = LadderBench::build(
        ladder::resolve("runtime").unwrap(),
        CalledMethod::Snippet(&program),
        &BOTH,
    )
    .unwrap();
    for row in bench
        .rows
        .iter_mut()
        .filter(|r| layer(r).is_some_and(|l| l != Layer::Bench))
    {
        let (_, fault) = row.run(5);
        let fault = fault.unwrap_or_else(|| panic!("{}: no error reported", row.path));
        assert_eq!(fault.kind, ScriptErrorKind::DivisionByZero, "{}", row.path);
        assert!(!current_thread_in_call(), "{}: markers left", row.path);
    }
}

thread_local! {
    static ROW: Cell<*const LadderRow> = const { Cell::new(std::ptr::null()) };
    static DEEPEST: Cell<Option<u32>> = const { Cell::new(None) };
}

/// Calls back into the same row, forever unless the depth limit stops it.
extern "C-unwind" fn recurse(_: *mut c_void, _: *const Object) -> i64 {
    let row = ROW.get();
    // SAFETY: the test sets ROW to a live row of a bench built on this thread.
    let row = unsafe { &*row };
    // SAFETY: as above.
    unsafe { row.enter(1) };
    if let Some(f) = row.take_fault()
        && let ScriptErrorKind::DepthLimit { limit } = f.kind
    {
        DEEPEST.set(Some(limit));
    }
    1
}

#[test]
fn runtime_rungs_stop_runaway_recursion() {
    let bench = LadderBench::build(
        ladder::resolve("runtime").unwrap(),
        CalledMethod::Code {
            code: recurse as *const c_void,
            value: 1,
        },
        &BOTH,
    )
    .unwrap();
    assert!(set_depth_limit(16));
    let mut n = 0;
    for row in bench.rows.iter().filter(|r| checked(r)) {
        DEEPEST.set(None);
        ROW.set(row);
        // SAFETY: built on this thread; the bench lives.
        unsafe { row.enter(1) };
        assert_eq!(DEEPEST.get(), Some(16), "{}: not stopped", row.path);
        assert!(!current_thread_in_call(), "{}: depth left", row.path);
        n += 1;
    }
    ROW.set(std::ptr::null());
    assert_eq!(n, 3);
}

use common::reload_probe::{MIGRATED, RAN_DURING_MIGRATION, RELOAD_STARTED, observe, slow_init};

#[test]
fn the_handle_call_waits_while_another_thread_reloads() {
    let text = "name = \"h\"\ndescription = \"h\"\n\n[[step]]\nlayer = \"native\"\ntitle = \"n\"\ntext = \"t\"\n\n[[step]]\nlayer = \"rt-handle\"\ntitle = \"h\"\ntext = \"t\"\n";
    let bench = LadderBench::build(
        Ladder::parse("h.toml", text).unwrap(),
        CalledMethod::Code {
            code: observe as *const c_void,
            value: 1,
        },
        &BOTH,
    )
    .unwrap();
    let rt = bench.runtime();
    let class = bench.class().clone();
    let def = ClassDef {
        name: "Snippet".into(),
        parent: None,
        fields: vec![Field {
            name: "added".into(),
            ty: FieldType::I64,
            init: Init::Code(slow_init),
        }],
        methods: vec![MethodDef {
            name: "call".into(),
            sig: HookCall::sig(),
            code: observe as *const c_void,
            host_entry: std::ptr::null(),
        }],
        vmctx: std::ptr::null_mut(),
    };
    let row = bench.rows.last().unwrap();
    assert_eq!(layer(row), Some(Layer::RtHandle));
    std::thread::scope(|s| {
        let reloader = s.spawn(|| {
            while !RELOAD_STARTED.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            rt.reload(&class, def).map(|_| ())
        });
        // SAFETY: the bench was built on this thread and lives.
        let sum = unsafe { row.enter(3) };
        let fault = row.take_fault();
        assert!(fault.is_none(), "{fault:?}");
        assert_eq!(sum, 3);
        reloader.join().unwrap().unwrap();
    });
    assert!(MIGRATED.load(Ordering::SeqCst));
    assert!(!RAN_DURING_MIGRATION.load(Ordering::SeqCst));
}

/// The `new` ladder: its floor is `Arc::new` of the same field, its rungs the runtime's steps of
/// `new` and free, each making, writing, reading and freeing one object per iteration, so every
/// row's checksum is the floor's and no object is left behind.
#[test]
fn the_new_ladder_takes_new_apart_and_frees_every_object() {
    let l = ladder::resolve("new").unwrap();
    let program = snippet(DEFAULT_SNIPPET);
    let mut bench = LadderBench::build(l, CalledMethod::Snippet(&program), &BOTH).unwrap();
    let layers: Vec<Option<Layer>> = bench.rows.iter().map(layer).collect();
    assert_eq!(
        layers,
        [
            None,
            Some(Layer::NewAlloc),
            Some(Layer::NewHeader),
            Some(Layer::NewFields),
            Some(Layer::NewList),
            Some(Layer::NewRuntime),
        ]
    );
    assert_eq!(
        bench.rows[0].path.to_string(),
        "Arc::new",
        "the floor's path"
    );
    let shells = bench.class().shell_count();
    let sums: Vec<u64> = bench
        .rows
        .iter_mut()
        .map(|row| {
            let (sum, fault) = row.run(100);
            assert!(fault.is_none(), "{}: {fault:?}", row.path);
            sum
        })
        .collect();
    // 0 + 1 + ... + 99 on every row, the native one included.
    assert!(sums.iter().all(|&s| s == 4950), "{sums:?}");
    assert_eq!(bench.class().shell_count(), shells);
    assert_eq!(bench.class().live_count(), shells);
    assert!(!current_thread_in_call());
}

/// A ladder mixes the steps of `new` with no layer of the call: their floors differ.
#[test]
fn a_ladder_holds_new_steps_or_call_layers_not_both() {
    let text = "name = \"m\"\ndescription = \"m\"\n\n[[step]]\nlayer = \"native\"\ntitle = \"n\"\ntext = \"t\"\n\n[[step]]\nlayer = \"new-alloc\"\ntitle = \"a\"\ntext = \"t\"\n\n[[step]]\nlayer = \"slot\"\ntitle = \"s\"\ntext = \"t\"\n";
    let e = Ladder::parse("m.toml", text).unwrap_err();
    assert_eq!(e.key, "step[3].layer");
    assert!(e.to_string().contains("Arc::new"), "{e}");
}
