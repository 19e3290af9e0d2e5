//! Figures, not tests: `cargo test --release --test runtime_bench -- --ignored --nocapture`.
//! Each prints nanoseconds (or microseconds); nothing here asserts on time.

mod runtime_support;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use hotlab::runtime::border::{Bound, CallPath, Depth, Detached, Entry, Fused, Slot, TryCatch};
use hotlab::runtime::class::{ClassDef, SlotIndex};
use hotlab::runtime::handle::Handle;
use hotlab::runtime::iface::{Hook, HookCall, NativeCounter};
use hotlab::runtime::object::Object;
use hotlab::runtime::rt::Runtime;
use runtime_support::*;

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

#[test]
#[ignore]
fn bench_new_and_free() {
    let rt = Runtime::new();
    let c = rt
        .define(class("Alloc", vec![int("n", 0)], vec![hook(count_call)]))
        .unwrap();
    let script = median_ns(15, 200_000, |n| {
        for _ in 0..n {
            let h = rt.new_object(&c).unwrap();
            black_box(&h);
        }
    });
    // A shell (72 bytes) plus a one-cell state block with its header (16 bytes).
    let arc = median_ns(15, 200_000, |n| {
        for _ in 0..n {
            let a = Arc::new([0u64; 11]);
            black_box(&a);
        }
    });
    let feature = if cfg!(feature = "thread-safe") {
        "thread-safe"
    } else {
        "no thread-safe"
    };
    println!(
        "new+free ({feature}): script {script:.1} ns, Arc::new([u64; 11]) {arc:.1} ns, ratio {:.2}x",
        script / arc
    );
    assert_eq!(c.shell_count(), 0);
}

fn wide(version: usize) -> ClassDef {
    let mut fields: Vec<_> = (0..65).map(|i| int(&format!("f{i}"), i)).collect();
    if version % 2 == 1 {
        fields.push(int("extra", 1));
    }
    class("Wide", fields, vec![hook(count_call)])
}

#[test]
#[ignore]
fn bench_reload_100_objects_of_65_fields() {
    let rt = Runtime::new();
    let c = rt.define(wide(0)).unwrap();
    let objs: Vec<Handle> = (0..100).map(|_| rt.new_object(&c).unwrap()).collect();
    let mut us: Vec<f64> = (1..=21)
        .map(|v| {
            let report = rt.reload(&c, wide(v)).unwrap();
            assert_eq!(report.migrated, 100);
            report.total.as_nanos() as f64 / 1000.0
        })
        .collect();
    us.sort_by(f64::total_cmp);
    println!(
        "reload of 100 objects x 65 fields: median {:.1} us (min {:.1}, max {:.1})",
        us[10], us[0], us[20]
    );
    drop(objs);
}

#[test]
#[ignore]
fn bench_call_after_n_reloads() {
    let rt = Runtime::new();
    let c = rt
        .define(class("Hooked", vec![int("n", 0)], vec![hook(count_call)]))
        .unwrap();
    let h = rt.new_object(&c).unwrap();
    let native: Box<dyn Hook> = Box::new(NativeCounter::default());
    let native = black_box(native);
    let twin = median_ns(15, 2_000_000, |n| {
        for _ in 0..n {
            black_box(native.call().into_result().unwrap());
        }
    });
    println!("native virtual call (twin): {twin:.2} ns");
    let mut done = 0;
    for target in [0, 1, 10, 100] {
        while done < target {
            let fields = if done % 2 == 0 {
                vec![int("n", 0), int("x", 1)]
            } else {
                vec![int("n", 0)]
            };
            rt.reload(&c, class("Hooked", fields, vec![hook(count_call)]))
                .unwrap();
            done += 1;
        }
        let via_handle = median_ns(15, 2_000_000, |n| {
            for _ in 0..n {
                black_box(h.call().into_result().unwrap());
            }
        });
        let obj = h.get().unwrap();
        let via_shell = median_ns(15, 2_000_000, |n| {
            for _ in 0..n {
                black_box(obj.call().into_result().unwrap());
            }
        });
        let fresh = rt.new_object(&c).unwrap();
        let new_obj = median_ns(15, 2_000_000, |n| {
            for _ in 0..n {
                black_box(fresh.call().into_result().unwrap());
            }
        });
        println!(
            "after {target:>3} reloads: fused via handle {via_handle:.2} ns ({:.2}x), via shell {via_shell:.2} ns, new object via handle {new_obj:.2} ns",
            via_handle / twin
        );
    }
}

/// One host call through the handle check and the fused path, out of line so its machine code
/// can be read (`objdump -d --no-show-raw-insn target/release/deps/runtime_bench-* | less`).
#[inline(never)]
pub fn one_hook_call(h: &Handle) -> i64 {
    h.call().into_result().unwrap_or(-1)
}

#[test]
#[ignore]
fn bench_one_call_symbol() {
    let rt = Runtime::new();
    let c = rt
        .define(class("Sym", vec![int("n", 0)], vec![hook(count_call)]))
        .unwrap();
    let h = rt.new_object(&c).unwrap();
    assert_eq!(black_box(one_hook_call)(&h), 1);
}

/// Calls `P` `n` times on `obj` (slot 0 = `count_call`).
fn run_path<P: CallPath<HookCall>>(obj: &Object, n: u64) {
    let slot = SlotIndex::new(0).unwrap();
    for _ in 0..n {
        // SAFETY: slot 0 is `count_call`, of signature `HookCall`; attached; no reload runs.
        black_box(unsafe { P::call(black_box(obj), slot, ()) }.unwrap_or(-1));
    }
}

#[test]
#[ignore]
fn bench_ladder_rust_layers() {
    let rt = Runtime::new();
    let c = rt
        .define(class("Ladder", vec![int("n", 0)], vec![hook(count_call)]))
        .unwrap();
    let h = rt.new_object(&c).unwrap();
    let obj = h.get().unwrap();
    let native: Box<dyn Hook> = black_box(Box::new(NativeCounter::default()));
    type Rows = [(&'static str, fn(&Object, u64)); 7];
    let rows: Rows = [
        ("bound (no checks)", run_path::<Bound>),
        ("slot", run_path::<Slot>),
        ("+ entry check", run_path::<Entry<Slot>>),
        ("+ detached check", run_path::<Detached<Entry<Slot>>>),
        ("+ try/catch", run_path::<TryCatch<Detached<Entry<Slot>>>>),
        (
            "+ call depth",
            run_path::<Depth<TryCatch<Detached<Entry<Slot>>>>>,
        ),
        ("fused", run_path::<Fused<Slot>>),
    ];
    // Interleaved rounds: every row once per round, so drift hits all rows alike.
    let iters = 1_000_000;
    let mut samples = vec![Vec::new(); rows.len() + 1];
    for _ in 0..15 {
        let t = Instant::now();
        for _ in 0..iters {
            black_box(native.call().into_result().unwrap());
        }
        samples[0].push(t.elapsed().as_nanos() as f64 / iters as f64);
        for (i, (_, f)) in rows.iter().enumerate() {
            let t = Instant::now();
            f(obj, iters);
            samples[i + 1].push(t.elapsed().as_nanos() as f64 / iters as f64);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!("native virtual call: {:.2} ns", median(&mut samples[0]));
    for (i, (name, _)) in rows.iter().enumerate() {
        println!("{name:<18} {:.2} ns", median(&mut samples[i + 1]));
    }
}
