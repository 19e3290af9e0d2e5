//! Figures, not tests: `cargo test --release --test classes_bench -- --ignored --nocapture`.
//! Nothing here asserts on time.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use hotlab::backend::Value;
use hotlab::backend::jit::{Jit, JitOptions};
use hotlab::lang::{SourceFile, compile};

/// Median over `rounds` of the ns per iteration of `f(iters)`.
fn median_ns(rounds: usize, iters: u64, mut f: impl FnMut(u64)) -> f64 {
    let mut samples: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            f(iters);
            t.elapsed().as_nanos() as f64 / iters as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[rounds / 2]
}

/// `new` + free of a one-field script object in a JIT loop, against `Arc::new` of a struct of
/// the same size (a 72-byte shell plus a 16-byte state block: eleven `u64`).
#[test]
#[ignore]
fn bench_script_new_and_free_on_jit() {
    let text = "class One { var n: i64 = 1 }
fn churn(k: i64) -> i64 {
    var s = 0
    for i in 0..k {
        let o = new One()
        s += o.n
    }
    return s
}
fn empty(k: i64) -> i64 {
    var s = 0
    for i in 0..k { s += 1 }
    return s
}";
    let program = compile(Arc::new(SourceFile::new("bench.hot", text))).unwrap();
    let mut jit = Jit::new(JitOptions::default()).unwrap();
    let compiled = jit.compile(&program).unwrap();
    let churn = compiled.function_named("churn").unwrap();
    let empty = compiled.function_named("empty").unwrap();
    let run = |f, n: u64| {
        let v = compiled.call(f, &[Value::I64(n as i64)]).unwrap();
        assert_eq!(v, Value::I64(n as i64));
    };
    let script = median_ns(15, 200_000, |n| run(churn, n));
    let floor = median_ns(15, 200_000, |n| run(empty, n));
    let arc = median_ns(15, 200_000, |n| {
        for _ in 0..n {
            let a = Arc::new([1u64; 11]);
            black_box(&a);
        }
    });
    println!(
        "new+free on jit: script {script:.1} ns (loop alone {floor:.1} ns), Arc::new([u64; 11]) {arc:.1} ns, ratio {:.2}x",
        (script - floor) / arc
    );
    let shells: usize = compiled
        .objects()
        .unwrap()
        .classes
        .iter()
        .map(|c| c.shell_count())
        .sum();
    assert_eq!(shells, 0);
}
