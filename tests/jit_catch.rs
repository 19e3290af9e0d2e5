//! A `ScriptError` (or another Rust panic) caught by a handler block in JIT code: `try_call`
//! sites with exception tables, the JIT's personality routine and LSDA (`backend/jit/unwind.rs`),
//! while other threads compile and free code. No timing here.

use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use hotlab::backend::Value;
use hotlab::backend::jit::unwind::take_caught;
use hotlab::backend::jit::{Jit, JitOptions};
use hotlab::ladder::bench::{Build, CalledMethod, LadderBench};
use hotlab::ladder::spec::Layer;
use hotlab::ladder::{self, path::Path};
use hotlab::lang::span::Span;
use hotlab::lang::{self, SourceFile};
use hotlab::runtime::depth::current_thread_in_call;
use hotlab::runtime::{ScriptError, ScriptErrorKind};

fn jit() -> Jit {
    Jit::new(JitOptions {
        verify: true,
        ..JitOptions::default()
    })
    .expect("jit")
}

/// Raises a located `ScriptError` for a negative argument, panics with a message for zero.
extern "C-unwind" fn host_raise(x: i64) -> i64 {
    if x < 0 {
        ScriptError::new(ScriptErrorKind::DivisionByZero, Span::new(7, 9)).raise();
    }
    if x == 0 {
        std::panic::panic_any(String::from("host bug"));
    }
    x * 2
}

/// What the handler blocks call with `exn0`: finish the catch and encode what was caught
/// (-1000 - span start for a division by zero, -1 for a host panic with its message).
extern "C-unwind" fn host_caught(exception: i64) -> i64 {
    // SAFETY: generated code passes the exception pointer its handler block received.
    let payload = unsafe { take_caught(exception as *mut c_void) };
    match payload.downcast::<ScriptError>() {
        Ok(e) if e.kind == ScriptErrorKind::DivisionByZero => -1000 - i64::from(e.span.start),
        Ok(_) => -2,
        Err(other) => match other.downcast::<String>() {
            Ok(s) if *s == "host bug" => -1,
            _ => -3,
        },
    }
}

/// `%outer(x)`: `try_call %middle(x)` (a JIT frame with no handler of its own, which calls the
/// raising host function with a plain call), handler: `host_caught(exn0)`; plus `x` kept live
/// across the call in a callee-saved register, added on both paths.
fn catch_clif() -> String {
    let raise = host_raise as *const () as usize;
    let caught = host_caught as *const () as usize;
    format!(
        "function %middle(i64) -> i64 system_v {{
    sig0 = (i64) -> i64 system_v
block0(v0: i64):
    v1 = iconst.i64 {raise}
    v2 = call_indirect sig0, v1(v0)
    v3 = iconst.i64 1
    v4 = iadd v2, v3
    return v4
}}

function %outer(i64) -> i64 system_v {{
    sig0 = (i64) -> i64 system_v
    fn0 = %middle sig0
block0(v0: i64):
    v9 = iconst.i64 100
    v10 = imul v0, v9
    try_call fn0(v0), sig0, block1(ret0), [ default: block2(exn0) ]
block1(v1: i64):
    v2 = iadd v1, v10
    return v2
block2(v3: i64) cold:
    v4 = iconst.i64 {caught}
    v5 = call_indirect sig0, v4(v3)
    v6 = iadd v5, v10
    return v6
}}
"
    )
}

fn outer(p: &hotlab::backend::jit::clif::ClifProgram, x: i64) -> i64 {
    match p.run("outer", &[Value::I64(x)]).expect("outer runs")[..] {
        [Value::I64(v)] => v,
        ref other => panic!("outer returned {other:?}"),
    }
}

#[test]
fn a_handler_block_catches_a_script_error_and_a_host_panic() {
    let prog = jit().load_clif(&catch_clif()).expect("clif");
    for _ in 0..200 {
        // Happy path: 3*2 + 1 + 300.
        assert_eq!(outer(&prog, 3), 307);
        // A ScriptError two frames down lands in the handler, `x` intact, span kept.
        assert_eq!(outer(&prog, -2), -1000 - 7 - 200);
        // Any Rust panic is caught the same way.
        assert_eq!(outer(&prog, 0), -1);
        assert!(
            !std::thread::panicking(),
            "the catch did not finish the panic"
        );
    }
    // A panic after many caught ones still unwinds to a Rust border normally.
    let r = std::panic::catch_unwind(|| -> () { panic!("after") });
    assert!(r.is_err());
}

#[test]
fn handlers_keep_catching_while_other_threads_compile_and_free_code() {
    let stop = Arc::new(AtomicBool::new(false));
    let churned = Arc::new(AtomicUsize::new(0));
    let churn: Vec<_> = (0..2)
        .map(|t| {
            let (stop, churned) = (Arc::clone(&stop), Arc::clone(&churned));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    // Register and deregister frames (with and without personality) on the
                    // other threads, around the caught raises on this one.
                    let mut j = jit();
                    let prog = j.load_clif(&catch_clif()).expect("clif");
                    let x = t as i64 + 1;
                    assert_eq!(outer(&prog, x), x * 2 + 1 + x * 100);
                    assert_eq!(outer(&prog, -x), -1000 - 7 - x * 100);
                    drop(prog);
                    drop(j);
                    churned.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let prog = jit().load_clif(&catch_clif()).expect("clif");
    let mut rounds = 0;
    while rounds < 2000 || churned.load(Ordering::Relaxed) < 20 {
        assert_eq!(outer(&prog, -5), -1000 - 7 - 500);
        assert_eq!(outer(&prog, 5), 511);
        rounds += 1;
        assert!(rounds < 2_000_000, "the churn threads made no progress");
    }
    stop.store(true, Ordering::Relaxed);
    for t in churn {
        t.join().expect("a churn thread failed");
    }
}

#[test]
fn the_ladders_jit_catch_layer_catches_per_call_in_generated_code() {
    // The ladder's build call is call 1; in a run, call 2 returns 1 and call 3 raises. A catch
    // in generated code ends the loop with the sum so far (1); the row's outer border would
    // have returned 0.
    let text = "var calls = 0\nfn call() -> i64 {\n    calls = calls + 1\n    if calls % 3 == 0 { return 1 / (calls - calls) }\n    return 1\n}\n";
    let source = Arc::new(SourceFile::new("raise.hot", text));
    let program = lang::compile(Arc::clone(&source)).unwrap();
    let l = ladder::resolve("host_call").unwrap();
    let mut bench = LadderBench::build(l, CalledMethod::Snippet(&program), &[Build::Jit]).unwrap();
    let mut checked = 0;
    for row in bench.rows.iter_mut() {
        let Path::Layered { wrappers, .. } = &row.path else {
            continue;
        };
        if !wrappers.contains(&Layer::Catch) {
            continue;
        }
        assert!(row.clif.contains("try_call_indirect"), "{}", row.clif);
        for _ in 0..50 {
            let (sum, fault) = row.run(3);
            let fault = fault.unwrap_or_else(|| panic!("{}: no error reported", row.path));
            assert_eq!(sum, 1, "{}: not caught per call", row.path);
            assert_eq!(
                fault.render(&source),
                "error: division by zero at raise.hot:4:34",
                "{}",
                row.path
            );
            assert!(!current_thread_in_call(), "{}: markers", row.path);
            assert!(!std::thread::panicking());
            // Back in step: the next run's first call is call 3k+1.
            let (sum, fault) = row.run(1);
            assert!(fault.is_none() && sum == 1, "{}", row.path);
        }
        checked += 1;
    }
    assert!(checked >= 2, "rows with a catch layer: {checked}");
}
