//! Object counts biased to one thread (`runtime::counts`): generated code changes a count with
//! plain instructions on the thread that owns the runtime, and a second thread that copies
//! and drops handles of the same objects shares the runtime first, so no change is lost. No
//! timing here.
#![cfg(feature = "thread-safe")]

mod common;

use hotlab::backend::jit::{Jit, JitOptions, OptLevel};
use hotlab::runtime::iface::Bench;

/// `run(n)` stores the shared item into a local array of handles `n` times: a retain of the
/// item and a release of what the cell held, each iteration, in generated code.
const COPIER: &str = "class Item {
    var k: i64 = 0
}
class Copier : Bench {
    var item: Item? = null
    fn run(self, n: i64) -> i64 {
        var keep: [Item?; 4] = [null, null, null, null]
        var s = 0
        for i in 0..n {
            keep[i & 3] = self.item
            s += 1
        }
        return s
    }
}
let shared_item = new Item()
let a = new Copier()
let b = new Copier()
fn main() -> i64 {
    a.item = shared_item
    b.item = shared_item
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

fn run(h: &hotlab::runtime::handle::Handle, n: i64) -> i64 {
    let bench: &dyn Bench = std::hint::black_box(h.get().unwrap());
    bench.run(n).into_result().unwrap()
}

#[test]
fn one_thread_owns_the_counts_and_a_second_shares_them_without_losing_a_change() {
    for opt in [OptLevel::None, OptLevel::Speed] {
        let program = common::compile_text("copier.hot", COPIER).unwrap();
        let compiled = Jit::new(options(opt)).unwrap().compile(&program).unwrap();
        compiled.run_main().unwrap();
        let runtime = &compiled.objects().unwrap().runtime;
        let (a, b) = (
            compiled.global_handle("a").unwrap(),
            compiled.global_handle("b").unwrap(),
        );
        let item = compiled.global_handle("shared_item").unwrap();
        // The module variable, the two fields and `item` here.
        let refs = || item.get().unwrap().ref_count();
        assert_eq!(refs(), 4, "{opt:?}");

        // One thread: the runtime is this thread's, and the plain changes balance.
        assert_eq!(run(&a, 1000), 1000, "{opt:?}");
        assert_eq!(runtime.counts(), "owned by this thread", "{opt:?}");
        assert_eq!(refs(), 4, "{opt:?}");

        // Two threads on the same item at once: the second shares the runtime, under calls of
        // the first (each thread's first change may find the other mid-loop). That an owner
        // thread which ends leaves its runtime shared is tested in `runtime::counts`.
        let go = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            let one = s.spawn(|| {
                go.wait();
                (0..20).map(|_| run(&a, 50_000)).sum::<i64>()
            });
            let two = s.spawn(|| {
                go.wait();
                (0..20).map(|_| run(&b, 50_000)).sum::<i64>()
            });
            assert_eq!(one.join().unwrap(), 1_000_000, "{opt:?}");
            assert_eq!(two.join().unwrap(), 1_000_000, "{opt:?}");
        });
        assert_eq!(runtime.counts(), "shared", "{opt:?}");
        assert_eq!(refs(), 4, "{opt:?}: a count change was lost");
        // Shared for good: this thread's calls are atomic now and still balance.
        assert_eq!(run(&a, 1000), 1000, "{opt:?}");
        assert_eq!(runtime.counts(), "shared", "{opt:?}");
        assert_eq!(refs(), 4, "{opt:?}");
    }
}

/// The owner's change keeps the handshake in its code, on `jit` and `jit-opt`: the busy store
/// (`mov qword ptr [owner+10h],1`) is followed by a load of `len` (`[owner+8]`) of its own, not
/// merged with the load the owner test made before it.
#[test]
fn the_owner_reloads_len_after_its_busy_store() {
    let program = common::compile_text("copier.hot", COPIER).unwrap();
    for opt in [OptLevel::None, OptLevel::Speed] {
        let lines = common::listing(&program, opt, "Copier.run");
        let busy: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].starts_with("mov qword ptr [") && lines[i].ends_with("+10h],1"))
            .collect();
        assert!(
            !busy.is_empty(),
            "{opt:?}: no busy store in\n{}",
            lines.join("\n")
        );
        for i in busy {
            // `[owner+8]` right after the store: through the register the store used, or
            // through a register reloaded from the stack slot that register came from (a loop
            // may keep the owner address in a slot: `mov rcx,[rsp+68h]`, the store through
            // `rcx`, `mov rsi,[rsp+68h]`, `mov rax,[rsi+8]`).
            let base = lines[i]["mov qword ptr [".len()..]
                .split('+')
                .next()
                .unwrap()
                .to_string();
            let slot = lines[..i].iter().rev().take(3).find_map(|l| {
                let from = l.strip_prefix(&format!("mov {base},"))?;
                from.starts_with("[rsp+").then(|| from.to_string())
            });
            let next: Vec<&String> = lines[i + 1..].iter().take(3).collect();
            let reloads = |b: &str, from: usize| {
                next[from..]
                    .iter()
                    .any(|l| l.starts_with("mov ") && l.ends_with(&format!(",[{b}+8]")))
            };
            let through_slot = slot.is_some_and(|slot| {
                next.iter().enumerate().any(|(k, l)| {
                    l.strip_prefix("mov ")
                        .and_then(|rest| rest.split_once(','))
                        .is_some_and(|(reg, from)| from == slot && reloads(reg, k + 1))
                })
            });
            assert!(
                reloads(&base, 0) || through_slot,
                "{opt:?}: no reload of len after line {i}:\n{}",
                lines.join("\n")
            );
        }
    }
}

/// Two `Swapper`s store the shared items into their fields and a local each iteration.
const SWAPPER: &str = "class Item {
    var k: i64 = 0
    var next: Item? = null
}
class Swapper : Bench {
    var item: Item? = null
    var other: Item? = null
    var slot: Item? = null
    fn run(self, n: i64) -> i64 {
        var s = 0
        var loc: Item? = null
        for i in 0..n {
            self.slot = self.item
            loc = self.other
            self.slot = self.other
            loc = self.item
            loc = loc.next
            loc = self.item
            s += 1
        }
        self.slot = null
        return s
    }
}
let shared_item = new Item()
let shared_other = new Item()
let a = new Swapper()
let b = new Swapper()
fn main() -> i64 {
    shared_item.next = shared_other
    a.item = shared_item
    b.item = shared_item
    a.other = shared_other
    b.other = shared_other
    return 0
}
";

/// Stores that change two counts in one window (`swap_handle_counts`: `self.slot = self.item`,
/// `loc = loc.next`) on the owner thread, then from two threads at once, which shares the
/// runtime mid-loop and takes the atomic side of the swap: no change is lost.
#[test]
fn swaps_under_two_threads_balance() {
    for opt in [OptLevel::None, OptLevel::Speed] {
        for round in 0..2 {
            let program = common::compile_text("swapper.hot", SWAPPER).unwrap();
            let compiled = Jit::new(options(opt)).unwrap().compile(&program).unwrap();
            compiled.run_main().unwrap();
            let runtime = &compiled.objects().unwrap().runtime;
            let (a, b) = (
                compiled.global_handle("a").unwrap(),
                compiled.global_handle("b").unwrap(),
            );
            let item = compiled.global_handle("shared_item").unwrap();
            let other = compiled.global_handle("shared_other").unwrap();
            let ri = || item.get().unwrap().ref_count();
            let ro = || other.get().unwrap().ref_count();
            let (i0, o0) = (ri(), ro());
            assert_eq!(run(&a, 1000), 1000);
            assert_eq!(runtime.counts(), "owned by this thread");
            assert_eq!((ri(), ro()), (i0, o0), "{opt:?} single");
            let go = std::sync::Barrier::new(2);
            std::thread::scope(|s| {
                let one = s.spawn(|| {
                    go.wait();
                    (0..20).map(|_| run(&a, 20_000)).sum::<i64>()
                });
                let two = s.spawn(|| {
                    go.wait();
                    (0..20).map(|_| run(&b, 20_000)).sum::<i64>()
                });
                assert_eq!(one.join().unwrap(), 400_000);
                assert_eq!(two.join().unwrap(), 400_000);
            });
            assert_eq!(runtime.counts(), "shared");
            assert_eq!(
                (ri(), ro()),
                (i0, o0),
                "{opt:?} round {round}: a count change was lost"
            );
            assert_eq!(run(&a, 1000), 1000);
            assert_eq!((ri(), ro()), (i0, o0), "{opt:?} shared");
        }
    }
}
