//! Native twins of the class cases: the same work on Rust structs, boxes, `Arc`s, trait objects
//! and raw pointers (see the fairness rules in [`super::twins`]).
//!
//! Two rules specific to objects:
//! - A script reads a field from memory at every access (the handle check before it is a call,
//!   and the state pointer is reloaded after it). Where LLVM would keep a field in a register
//!   or hoist an invariant load out of the loop, the twin reads and writes it with
//!   `read_volatile`/`write_volatile`: one real load (and store) per access, as the script does.
//!   Where a call in between already forces memory (a non-inlined method taking `&mut self`),
//!   plain code does the same work and is left plain.
//! - The script's own costs are not copied into the twin: the handle check on every use, the
//!   retain and release of a handle read from a field, the slot load of a virtual call. The
//!   ratio shows them. The one exception is the handle chain, whose twin counts every copy with
//!   an `Arc` (the seed's twin counts with `shared_ptr`), because walking a chain of owners is
//!   that row's subject.

use std::ffi::c_void;
use std::hint::black_box;
use std::ptr::{read_volatile, write_volatile};
use std::sync::Arc;

use crate::backend::hook::hook_loop;
use crate::runtime::host::hot_sink;
use crate::runtime::iface::{Hook, NativeCounter, Returned};

fn n_of(n: u64) -> i64 {
    hot_sink(n as i64)
}

/// A native object with the empty method: `call` returns 1.
struct EmptyHook;

impl Hook for EmptyHook {
    #[inline(never)]
    extern "C-unwind" fn call(&self) -> Returned {
        Returned::ok(1)
    }
}

/// Host to script, empty method: `n` calls of `Hook.call` on a Rust object behind a
/// `black_box`ed `&dyn Hook` (one native virtual call each), in the same loop
/// ([`hook_loop`]) the script side runs around its handle.
pub(super) extern "C-unwind" fn host_call(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n) as u64;
    let h: &dyn Hook = black_box(&EmptyHook);
    hook_loop(h, n).unwrap_or(0) as u64
}

/// Native to script virtual call: `n` calls of a fresh [`NativeCounter`] (`n += 1; return n`)
/// through a `black_box`ed `&dyn Hook`, in the same loop as the script's `&dyn Hook` on its
/// shell. A fresh counter per run: the script's checked run is the first on its object too.
pub(super) extern "C-unwind" fn virtual_hook(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n) as u64;
    let counter = NativeCounter::default();
    let h: &dyn Hook = black_box(&counter);
    hook_loop(h, n).unwrap_or(0) as u64
}

/// A boxed object with one field.
struct OneField {
    x: i64,
}

/// Field read and write: `c.x += i & 3` on a boxed struct, with a volatile load and store per
/// iteration (the script loads and stores the field each time). Hidden: `n`, the result.
pub(super) extern "C-unwind" fn field_loop(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let mut c = Box::new(OneField { x: 0 });
    let x: *mut i64 = &mut c.x;
    for i in 0..n {
        // SAFETY: `x` points into the live box, used by nothing else during the loop.
        unsafe { write_volatile(x, read_volatile(x).wrapping_add(i & 3)) };
    }
    hot_sink(c.x) as u64
}

struct Node {
    next: Option<Arc<Node>>,
    v: i64,
}

/// Handle chain and null check: a chain of 16 `Arc` nodes (`v = 0..16`), one step per
/// iteration: add `v`, take `next` (an `Arc` clone: an atomic increment, and the old one's
/// decrement, as the script retains the field's handle and releases the variable's old one),
/// restart at the head on `None`. Hidden: `n`, the result.
pub(super) extern "C-unwind" fn handle_chain(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let mut head: Option<Arc<Node>> = None;
    for v in (0..16).rev() {
        head = Some(Arc::new(Node { next: head, v }));
    }
    let head = head.expect("16 nodes");
    let mut p = Some(Arc::clone(&head));
    let mut s: i64 = 0;
    for _ in 0..n {
        let node = p.as_deref().expect("null handle");
        s = s.wrapping_add(node.v);
        p = node.next.clone();
        if p.is_none() {
            p = Some(Arc::clone(&head));
        }
    }
    hot_sink(s) as u64
}

#[repr(C)]
struct RawNode {
    next: *const RawNode,
    v: i64,
}

/// Pointer chain: the same 16-node walk over raw pointers in a stack array (the `.clif`
/// script's nodes are in a stack slot): a load of `v`, a load of `next`, a null test. The head's
/// address passes through `hot_sink`, as the script's does, so the loads stay loads.
pub(super) extern "C-unwind" fn pointer_chain(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let mut nodes: [RawNode; 16] = std::array::from_fn(|k| RawNode {
        next: std::ptr::null(),
        v: k as i64,
    });
    let base = nodes.as_mut_ptr();
    for k in 0..15 {
        // SAFETY: `k + 1 < 16`: both are elements of `nodes`.
        unsafe { (*base.add(k)).next = base.add(k + 1) };
    }
    let head = hot_sink(base as i64) as *const RawNode;
    let mut p = head;
    let mut s: i64 = 0;
    for _ in 0..n {
        // SAFETY: `p` is always `head` or a `next` of a node of `nodes`, which lives for the
        // whole loop.
        let node = unsafe { &*p };
        s = s.wrapping_add(node.v);
        p = if node.next.is_null() { head } else { node.next };
    }
    hot_sink(s) as u64
}

struct One {
    n: i64,
}

/// `new` and free: per iteration, `Arc::new` of a one-field struct (the script's objects are
/// reference counted, atomically), a field read, the drop. `black_box` on the `Arc` keeps the
/// allocation real (LLVM may delete a malloc/free pair it sees through); the script's `new` is
/// a runtime call nothing removes. Hidden: `n`, the result.
pub(super) extern "C-unwind" fn new_free(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let mut s: i64 = 0;
    for i in 0..n {
        let o = black_box(Arc::new(One { n: i }));
        s = s.wrapping_add(o.n);
    }
    hot_sink(s) as u64
}

struct Acc {
    s: i64,
}

impl Acc {
    /// Not inlined: the script's method call is a real call.
    #[inline(never)]
    fn add(&mut self, x: i64) {
        self.s = self.s.wrapping_add(x);
    }
}

/// Loop with a method call: `a.add(i & 7)` per iteration on a boxed struct (the call keeps
/// `s` in memory on both sides). Hidden: `n`, the result.
pub(super) extern "C-unwind" fn method_loop(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let mut a = Box::new(Acc { s: 0 });
    for i in 0..n {
        a.add(i & 7);
    }
    hot_sink(a.s) as u64
}

struct Mixer {
    k: i64,
}

impl Mixer {
    #[inline(never)]
    fn mix(&self, a: i64, b: i64) -> i64 {
        a.wrapping_mul(self.k).wrapping_add(b)
    }

    #[inline(never)]
    fn total(&self, n: i64) -> i64 {
        let mut acc: i64 = 0;
        for i in 0..n {
            acc = self.mix(acc, i);
        }
        acc
    }
}

/// Method on `self`: `total` loops `acc = self.mix(acc, i)`, both methods not inlined, `k`
/// from `hot_sink(3)` as the script sets it. Hidden: `n`, `k`, the result.
pub(super) extern "C-unwind" fn self_method(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let x = Box::new(Mixer { k: hot_sink(3) });
    hot_sink(x.total(n)) as u64
}

struct Peer {
    v: i64,
}

struct Reader;

impl Reader {
    /// Reads `p.v` each iteration with a volatile load (LLVM would hoist the invariant load;
    /// the script reloads it after each handle check).
    #[inline(never)]
    fn sum(&self, p: &Peer, n: i64) -> i64 {
        let mut acc: i64 = 0;
        for i in 0..n {
            // SAFETY: `p.v` is a live, aligned `i64`.
            let v = unsafe { read_volatile(&p.v) };
            acc = acc.wrapping_add(v.wrapping_add(i & 3));
        }
        acc
    }
}

/// Field of another object: a method of one object sums a field of another, `p.v` from
/// `hot_sink(5)`. Hidden: `n`, `v`, the result.
pub(super) extern "C-unwind" fn field_other(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let p = Box::new(Peer { v: hot_sink(5) });
    let r = Reader;
    hot_sink(black_box(&r).sum(&p, n)) as u64
}

struct Boss {
    w: *const Mixer,
}

impl Boss {
    /// Per iteration: a volatile load of the field `w`, the null test, the call (the script
    /// reads the field, checks the handle, calls, and also retains and releases it).
    #[inline(never)]
    fn total(&self, n: i64) -> i64 {
        let mut acc: i64 = 0;
        for i in 0..n {
            // SAFETY: `self.w` is an aligned pointer field.
            let w = unsafe { read_volatile(&self.w) };
            // SAFETY: non-null `w` points at the live boxed worker.
            let w = unsafe { w.as_ref() }.expect("null handle");
            acc = w.mix(acc, i);
        }
        acc
    }
}

/// Method through a handle: `acc = self.w.mix(acc, i)`, the worker reached through a field of
/// the boss each iteration. Hidden: `n`, `k`, the result.
pub(super) extern "C-unwind" fn handle_method(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let w = Box::new(Mixer { k: hot_sink(3) });
    let b = Box::new(Boss { w: &*w });
    hot_sink(b.total(n)) as u64
}

trait Shape {
    fn area(&self, x: i64) -> i64;
}

struct Square {
    k: i64,
}

impl Shape for Square {
    #[inline(never)]
    fn area(&self, x: i64) -> i64 {
        x.wrapping_mul(self.k).wrapping_add(1)
    }
}

/// Script to script virtual call: `acc += s.area(i)` through a `black_box`ed `&dyn Shape`
/// (one indirect call, not devirtualized), `k` from `hot_sink(2)`. Hidden: `n`, `k`, the result.
pub(super) extern "C-unwind" fn virtual_call(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let q = Box::new(Square { k: hot_sink(2) });
    let s: &dyn Shape = black_box(&*q);
    let mut acc: i64 = 0;
    for i in 0..n {
        acc = acc.wrapping_add(s.area(i));
    }
    hot_sink(acc) as u64
}
