//! The layers' semantics, tested through the ladder's own call paths (the rows `hotlab ladder`
//! measures), in both builds: detached objects fail, the depth limit stops recursion, try/catch
//! reports a raised ScriptError, and the entry check waits out a reload on another thread.

mod common;

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use hotlab::ladder::bench::{Build, CalledMethod, LadderBench, LadderRow};
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

fn has(row: &LadderRow, layer: Layer) -> bool {
    match &row.path {
        Path::Fused => matches!(
            layer,
            Layer::Detached | Layer::Depth | Layer::Catch | Layer::Entry
        ),
        // jit-opt's host entry: no entry word (a fixed runtime has no reload), every other check.
        Path::Direct => matches!(layer, Layer::Detached | Layer::Depth | Layer::Catch),
        Path::Layered { wrappers, .. } => wrappers.contains(&layer),
        // The runtime's own rungs are tested in ladder_runtime.rs.
        Path::Native | Path::NativeNew | Path::Runtime(_) => false,
    }
}

fn every_path_ladder() -> Vec<Ladder> {
    vec![
        ladder::resolve("host_call").unwrap(),
        ladder::resolve("fused").unwrap(),
        ladder::resolve("direct").unwrap(),
    ]
}

#[test]
fn the_detached_check_fails_a_detached_object() {
    for l in every_path_ladder() {
        let program = lang::compile(Arc::new(SourceFile::new(
            "t.hot",
            hotlab::ladder::bench::DEFAULT_SNIPPET,
        )))
        .unwrap();
        let mut bench = LadderBench::build(l, CalledMethod::Snippet(&program), &BOTH).unwrap();
        bench.runtime().detach(bench.handle()).unwrap();
        let mut checked = 0;
        for row in &mut bench.rows {
            if !has(row, Layer::Detached) {
                continue;
            }
            let (sum, fault) = row.run(10);
            let fault = fault.unwrap_or_else(|| panic!("{} ran on a detached object", row.path));
            assert_eq!(fault.kind, ScriptErrorKind::ObjectDetached, "{}", row.path);
            assert_eq!(sum, 0, "{}: the method ran", row.path);
            checked += 1;
        }
        assert!(checked >= 2);
        assert!(
            !current_thread_in_call(),
            "a failed check left the thread marked in a call"
        );
    }
}

thread_local! {
    /// The row the recursive method calls back into, and the deepest fault seen.
    static ROW: Cell<*const LadderRow> = const { Cell::new(std::ptr::null()) };
    static DEEPEST: Cell<Option<u32>> = const { Cell::new(None) };
}

/// A method that calls back into the same row: host → script → host → script ... forever,
/// unless a layer stops it.
extern "C-unwind" fn recurse(_: *mut c_void, _: *const Object) -> i64 {
    let row = ROW.get();
    // SAFETY: the test sets ROW to a live row of a bench built on this thread.
    unsafe { (*row).enter(1) };
    // SAFETY: as above.
    if let Some(e) = unsafe { (*row).take_fault() }
        && let ScriptErrorKind::DepthLimit { limit } = e.kind
    {
        DEEPEST.set(Some(limit));
    }
    1
}

#[test]
fn the_depth_limit_stops_runaway_recursion() {
    let text = "name = \"d\"\ndescription = \"d\"\n\n[[step]]\nlayer = \"native\"\ntitle = \"n\"\ntext = \"t\"\n\n[[step]]\nlayer = \"slot\"\ntitle = \"s\"\ntext = \"t\"\n\n[[step]]\nlayer = \"depth\"\ntitle = \"d\"\ntext = \"t\"\n";
    for l in [
        Ladder::parse("d.toml", text).unwrap(),
        ladder::resolve("fused").unwrap(),
        ladder::resolve("direct").unwrap(),
    ] {
        let bench = LadderBench::build(
            l,
            CalledMethod::Code {
                code: recurse as *const c_void,
                value: 1,
            },
            &BOTH,
        )
        .unwrap();
        assert!(set_depth_limit(16));
        for row in bench.rows.iter().filter(|r| has(r, Layer::Depth)) {
            DEEPEST.set(None);
            ROW.set(row);
            // SAFETY: built on this thread; the bench lives.
            unsafe { row.enter(1) };
            assert_eq!(
                DEEPEST.get(),
                Some(16),
                "{}: recursion was not stopped",
                row.path
            );
            assert!(
                !current_thread_in_call(),
                "{}: depth not restored",
                row.path
            );
        }
        ROW.set(std::ptr::null());
    }
}

#[test]
fn try_catch_reports_a_script_error_and_restores_the_thread() {
    // The first call (made when the ladder is built) succeeds; every later one divides by zero.
    let text = "var calls = 0\nfn call() -> i64 {\n    calls = calls + 1\n    if calls > 1 { return 1 / (calls - calls) }\n    return 1\n}\n";
    let program = lang::compile(Arc::new(SourceFile::new("raise.hot", text))).unwrap();
    for l in every_path_ladder() {
        let mut bench = LadderBench::build(l, CalledMethod::Snippet(&program), &BOTH).unwrap();
        let mut checked = 0;
        for row in bench.rows.iter_mut().filter(|r| r.build.is_some()) {
            let (_, fault) = row.run(5);
            // Every row is entered through a border, so nothing unwinds into the caller; rows
            // with a catch layer (or fused) catch it per call.
            let fault = fault.unwrap_or_else(|| panic!("{}: no error reported", row.path));
            assert_eq!(fault.kind, ScriptErrorKind::DivisionByZero, "{}", row.path);
            assert!(
                !current_thread_in_call(),
                "{}: markers not restored",
                row.path
            );
            checked += usize::from(has(row, Layer::Catch));
        }
        assert!(checked >= 2);
    }
}

use common::reload_probe::{MIGRATED, RAN_DURING_MIGRATION, RELOAD_STARTED, observe, slow_init};

#[test]
fn the_entry_check_waits_while_another_thread_reloads() {
    let text = "name = \"e\"\ndescription = \"e\"\n\n[[step]]\nlayer = \"native\"\ntitle = \"n\"\ntext = \"t\"\n\n[[step]]\nlayer = \"slot\"\ntitle = \"s\"\ntext = \"t\"\n\n[[step]]\nlayer = \"entry\"\ntitle = \"e\"\ntext = \"t\"\n";
    for build in BOTH {
        for l in [
            Ladder::parse("e.toml", text).unwrap(),
            ladder::resolve("fused").unwrap(),
        ] {
            common::reload_probe::reset();
            let bench = LadderBench::build(
                l,
                CalledMethod::Code {
                    code: observe as *const c_void,
                    value: 1,
                },
                &[build],
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
            std::thread::scope(|s| {
                let reloader = s.spawn(|| {
                    while !RELOAD_STARTED.load(Ordering::SeqCst) {
                        std::thread::yield_now();
                    }
                    rt.reload(&class, def).map(|_| ())
                });
                // Call 1 holds the reload at its quiescence wait; calls 2 and 3 come while the
                // migration (150 ms) runs and must wait for it.
                // SAFETY: the bench was built on this thread and lives.
                let sum = unsafe { row.enter(3) };
                let fault = row.take_fault();
                assert!(fault.is_none(), "{fault:?}");
                assert_eq!(sum, 3);
                reloader.join().unwrap().unwrap();
            });
            assert!(MIGRATED.load(Ordering::SeqCst));
            assert!(
                !RAN_DURING_MIGRATION.load(Ordering::SeqCst),
                "{build} {}: a call ran while the reload migrated",
                row.path
            );
        }
    }
}

#[test]
fn the_direct_ladder_runs_on_a_fixed_runtime_through_the_interface_entry() {
    let program = lang::compile(Arc::new(SourceFile::new(
        "t.hot",
        hotlab::ladder::bench::DEFAULT_SNIPPET,
    )))
    .unwrap();
    let mut bench = LadderBench::build(
        ladder::resolve("direct").unwrap(),
        CalledMethod::Snippet(&program),
        &BOTH,
    )
    .unwrap();
    // As jit-opt's objects: a fixed runtime, whose classes refuse reload.
    assert!(bench.runtime().is_fixed());
    let rows: Vec<&mut LadderRow> = bench
        .rows
        .iter_mut()
        .filter(|r| r.build.is_some())
        .collect();
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(row.path, Path::Direct);
        assert_eq!(row.path.to_string(), "Direct<Iface>");
        assert_eq!(row.run(10), (10, None), "{:?}", row.build);
        assert!(!current_thread_in_call());
    }
}
