//! ScriptErrors unwinding through JIT frames, and runaway recursion stopped by the stack check.

mod jit_support;

use hotlab::backend::Value;
use hotlab::backend::jit::{Jit, JitOptions};
use hotlab::lang::hir::{BinOp, Program, Type};
use hotlab::runtime::ScriptErrorKind;
use jit_support::*;

fn jit() -> Jit {
    Jit::new(JitOptions {
        verify: true,
        ..JitOptions::default()
    })
    .expect("jit")
}

/// main(d) → a(d) → b(d) → c(d) = 100 / d, each frame adding one so the frames are real.
fn three_deep() -> Program {
    let mut p = program();
    let c = p.func("c", &[Type::I64], Type::I64, |f| {
        vec![ret(Some(bin_at(
            BinOp::Div,
            int(100),
            local(f.param(0), Type::I64),
            sp(44, 45),
        )))]
    });
    let b = p.func("b", &[Type::I64], Type::I64, |f| {
        vec![ret(Some(bin(
            BinOp::Add,
            call(c, vec![local(f.param(0), Type::I64)], Type::I64),
            int(1),
        )))]
    });
    let a = p.func("a", &[Type::I64], Type::I64, |f| {
        vec![ret(Some(bin(
            BinOp::Add,
            call(b, vec![local(f.param(0), Type::I64)], Type::I64),
            int(1),
        )))]
    });
    p.func("main", &[Type::I64], Type::I64, |f| {
        vec![ret(Some(bin(
            BinOp::Add,
            call(a, vec![local(f.param(0), Type::I64)], Type::I64),
            int(1),
        )))]
    });
    p.finish()
}

#[test]
fn division_by_zero_three_frames_deep_is_caught_every_time() {
    let prog = jit().compile(&three_deep()).unwrap();
    let main = prog.function_named("main").unwrap();
    for _ in 0..1000 {
        let err = prog.call(main, &[Value::I64(0)]).unwrap_err();
        assert_eq!(err.kind, ScriptErrorKind::DivisionByZero);
        assert_eq!(err.span, sp(44, 45));
        assert_eq!(
            err.render(prog.source()),
            "error: division by zero at t.hot:2:5"
        );
    }
    // The program still runs after all those unwinds.
    assert_eq!(prog.call(main, &[Value::I64(5)]), Ok(Value::I64(23)));
}

#[test]
fn programs_outlive_their_jit_and_old_versions_stay_callable() {
    let mut jit = jit();
    let old = jit.compile(&three_deep()).unwrap();
    let new = jit.compile(&three_deep()).unwrap();
    drop(jit);
    let main = old.function_named("main").unwrap();
    assert_ne!(old.functions()[0].addr, new.functions()[0].addr);
    assert_ne!(old.functions()[0].symbol, new.functions()[0].symbol);
    assert_eq!(
        old.call(main, &[Value::I64(0)]).unwrap_err().kind,
        ScriptErrorKind::DivisionByZero
    );
    drop(old);
    assert_eq!(new.call(main, &[Value::I64(1)]), Ok(Value::I64(103)));
}

/// fn down(n: i64) -> i64 { return down(n + 1) + 1 }, with an array local to fatten frames.
fn runaway() -> Program {
    let mut p = program();
    let down = p.declare("down", &[Type::I64], Type::I64, sp(43, 47));
    p.define(down, |f| {
        let pad = f.var("pad", arr(Type::I64, 8));
        vec![
            let_(pad, repeat(local(f.param(0), Type::I64), 8)),
            ret(Some(bin(
                BinOp::Add,
                call(
                    down,
                    vec![bin(BinOp::Add, local(f.param(0), Type::I64), int(1))],
                    Type::I64,
                ),
                index(local(pad, arr(Type::I64, 8)), int(7)),
            ))),
        ]
    });
    p.finish()
}

#[test]
fn runaway_recursion_raises_stack_exhausted_on_a_small_thread() {
    let handle = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(|| {
            let prog = jit().compile(&runaway()).unwrap();
            let down = prog.function_named("down").unwrap();
            let mut errors = Vec::new();
            for _ in 0..20 {
                errors.push(prog.call(down, &[Value::I64(0)]).unwrap_err());
            }
            errors
        })
        .unwrap();
    let errors = handle.join().expect("the thread must not crash");
    for err in errors {
        assert_eq!(
            err.kind,
            ScriptErrorKind::StackExhausted {
                function: "down".into()
            }
        );
        assert_eq!(err.span, sp(43, 47));
    }
}

#[test]
fn runaway_recursion_on_the_default_test_thread() {
    let prog = jit().compile(&runaway()).unwrap();
    let down = prog.function_named("down").unwrap();
    let err = prog.call(down, &[Value::I64(0)]).unwrap_err();
    assert!(matches!(err.kind, ScriptErrorKind::StackExhausted { .. }));
}

/// Many JITs compiled and dropped on several threads at once, each raising through its frames.
/// Their code blocks interleave in memory; with one `.eh_frame` registration per batch the
/// registered ranges overlapped and libgcc's lookup stopped at the wrong one ("failed to
/// initiate panic, error 5" aborted the whole test binary in release builds).
#[test]
fn errors_unwind_while_other_threads_compile_and_free_jits() {
    // Enough functions that one batch spans several code blocks.
    let mut text = String::from("fn f0(d: i64) -> i64 { return 100 / d }\n");
    for i in 1..120 {
        text += &format!(
            "fn f{i}(d: i64) -> i64 {{ var s = 0\n for k in 0..3 {{ s += k * d }}\n return f{}(d) + s }}\n",
            i - 1
        );
    }
    text += "fn main() -> i64 { return f119(0) }\n";
    let program = std::sync::Arc::new(
        hotlab::lang::compile(std::sync::Arc::new(hotlab::lang::SourceFile::new(
            "many.hot", &text,
        )))
        .expect("the program checks"),
    );
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let program = std::sync::Arc::clone(&program);
            std::thread::spawn(move || {
                for _ in 0..40 {
                    let prog = jit().compile(&program).unwrap();
                    let err = prog.run_main().unwrap_err();
                    assert_eq!(err.kind, ScriptErrorKind::DivisionByZero);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a thread failed");
    }
}
