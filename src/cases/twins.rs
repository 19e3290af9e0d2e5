//! Native twins: Rust code, compiled with hotlab, that does the same work per iteration as a
//! case's script, for the script's time to be divided by.
//!
//! Every twin has the engine's raw ABI, `extern "C-unwind" fn(ctx, n) -> u64`, the same shape as
//! a script's `fn run(n: i64) -> i64` called through the JIT: the engine calls both the same way
//! (an indirect call per sample), and neither side gets a cheaper entry.
//!
//! Fairness rules, the same for every twin:
//! - Values are hidden from the optimizer the way the script hides them: the script calls the
//!   host's `sink`, the twin calls the very same [`hot_sink`] (an `#[inline(never)]` black box).
//!   Each twin's comment says where.
//! - Arithmetic is wrapping `i64` and IEEE `f64` in the script's order, so checksums are equal
//!   bit for bit.
//! - A script function call is a real call in Cranelift (it does not inline), so a twin's
//!   helper function is `#[inline(never)]` where the script calls a function.

use std::ffi::c_void;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, mpsc};

use super::class_twins as c;
use super::program_twins as p;
use crate::runtime::host::hot_sink;

/// A twin's function: the engine's raw ABI. `ctx` is unused (null); `n` is the loop count.
pub type TwinFn = extern "C-unwind" fn(ctx: *mut c_void, n: u64) -> u64;

/// One native twin.
#[derive(Debug, Clone, Copy)]
pub struct Twin {
    /// The name a case header gives in `twin = "..."`.
    pub name: &'static str,
    /// The function.
    pub f: TwinFn,
    /// What it does, one line (shown by `bench --list`).
    pub doc: &'static str,
    /// Threads it runs on (2 for the contended classics: they need a second CPU).
    pub threads: u8,
}

impl Twin {
    /// Run `n` iterations and return the checksum as the script's `i64`.
    pub fn run(&self, n: i64) -> i64 {
        (self.f)(std::ptr::null_mut(), n as u64) as i64
    }
}

fn n_of(n: u64) -> i64 {
    // The loop bound goes through the sink, as the script's `n` comes from the host.
    hot_sink(n as i64)
}

/// Integer loop: a dependent multiply/xor/shift chain (no closed form, nothing to vectorize).
/// Hidden: `n` and the result pass through `hot_sink`, as `int_loop.hot` does with `sink`.
extern "C-unwind" fn int_loop(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let mut acc: i64 = 1;
    let mut i = 0;
    while i < n {
        acc = acc.wrapping_mul(31).wrapping_add(i ^ (acc >> 7));
        i += 1;
    }
    hot_sink(acc) as u64
}

/// Float loop: `x = x * 0.5 + (i & 15) as f64`, a dependent multiply-add chain that stays
/// bounded. Rust does not contract to FMA, nor does Cranelift, so both round alike.
/// Hidden: `n` and the result through `hot_sink`.
extern "C-unwind" fn float_loop(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let mut x = 0.0f64;
    let mut i = 0;
    while i < n {
        x = x * 0.5 + (i & 15) as f64;
        i += 1;
    }
    hot_sink((x * 1000.0) as i64) as u64
}

/// Array index: a write and a read of an `[i64; 256]` per iteration at masked indexes. The
/// mask lets LLVM drop its bounds check; the script keeps its checks (checks on), as the seed's
/// `.hot` arrays do. Hidden: `n`, the result.
extern "C-unwind" fn array_index(_: *mut c_void, n: u64) -> u64 {
    let mut a = [0i64; 256];
    hot_sink(write_read_masked(&mut a, n_of(n))) as u64
}

/// Vector index: the array case on a heap `Vec<i64>` of 256 elements (made once, before the
/// loop, as the script's vec is), seen as a fixed array so the masks let LLVM drop its bounds
/// checks; the script's vec index is always checked. Hidden: `n`, the result.
extern "C-unwind" fn vec_index(_: *mut c_void, n: u64) -> u64 {
    let mut v: Vec<i64> = vec![0; 256];
    let a: &mut [i64; 256] = v.as_mut_slice().try_into().expect("256 elements");
    hot_sink(write_read_masked(a, n_of(n))) as u64
}

/// The index cases' loop: `a[i & 255] += i; acc += a[(i * 7) & 255]` for `i` in `0..n`.
#[inline(always)]
fn write_read_masked(a: &mut [i64; 256], n: i64) -> i64 {
    let mut acc: i64 = 0;
    let mut i = 0;
    while i < n {
        let w = (i & 255) as usize;
        a[w] = a[w].wrapping_add(i);
        acc = acc.wrapping_add(a[((i.wrapping_mul(7)) & 255) as usize]);
        i += 1;
    }
    acc
}

/// String interpolation: one `format!` per iteration (a heap allocation, freed at the end of
/// the iteration, as the script's string is), its byte length summed. `black_box` keeps LLVM
/// from computing the length without making the string. Hidden: `n`, the result.
extern "C-unwind" fn string_interp(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let mut acc: i64 = 0;
    let mut i = 0;
    while i < n {
        let s = std::hint::black_box(format!("item {i}"));
        acc = acc.wrapping_add(s.len() as i64);
        i += 1;
    }
    hot_sink(acc) as u64
}

/// Script to native: one call of `hot_sink` per iteration, the same symbol the script calls.
extern "C-unwind" fn call_native(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let mut acc: i64 = 0;
    let mut i = 0;
    while i < n {
        acc = acc.wrapping_add(hot_sink(i));
        i += 1;
    }
    acc as u64
}

/// `depth(k) = depth(k - 1) * 3 + k`: the `* 3 + k` after the call keeps LLVM from turning the
/// recursion into a loop (it is not a plain accumulator).
#[inline(never)]
fn depth(k: i64) -> i64 {
    if k == 0 {
        return 0;
    }
    depth(k - 1).wrapping_mul(3).wrapping_add(k)
}

/// Recursive script-to-script call: `depth(sink(16))` per iteration, 17 calls deep.
/// Hidden: the depth through `hot_sink` each iteration, as the script does.
extern "C-unwind" fn recursive(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let mut acc: i64 = 0;
    let mut i = 0;
    while i < n {
        acc = acc.wrapping_add(depth(hot_sink(16)));
        i += 1;
    }
    acc as u64
}

/// The twin's module variable: a static, read and written with relaxed atomics, which compile
/// to plain loads and stores and which LLVM keeps in memory each iteration, as the script's
/// global lives in its globals block.
static COUNTER: AtomicI64 = AtomicI64::new(0);

/// Module variable read and write: `counter = counter + (i & 3)` per iteration.
/// Hidden: `n`, the result.
extern "C-unwind" fn module_var(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    COUNTER.store(0, Ordering::Relaxed);
    let mut i = 0;
    while i < n {
        let c = COUNTER.load(Ordering::Relaxed);
        COUNTER.store(c.wrapping_add(i & 3), Ordering::Relaxed);
        i += 1;
    }
    hot_sink(COUNTER.load(Ordering::Relaxed)) as u64
}

/// The twin's module arrays: statics of relaxed atomics (plain loads and stores, kept in
/// memory), as the script's module variables live in its globals block.
static GL: [AtomicI64; 1024] = [const { AtomicI64::new(0) }; 1024];
static GN: [[AtomicI64; 16]; 16] = [const { [const { AtomicI64::new(0) }; 16] }; 16];

/// Module array element read: `acc += GL[(i * 7) & 1023] + GN[i & 15][(i >> 4) & 15]` per
/// iteration, after filling both. Hidden: `n`, the result.
extern "C-unwind" fn global_array(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    for (i, c) in GL.iter().enumerate() {
        c.store(i as i64 * 3, Ordering::Relaxed);
    }
    for (i, row) in GN.iter().enumerate() {
        for (j, c) in row.iter().enumerate() {
            c.store((i * j) as i64, Ordering::Relaxed);
        }
    }
    let mut acc: i64 = 0;
    let mut i: i64 = 0;
    while i < n {
        let a = GL[(i.wrapping_mul(7) & 1023) as usize].load(Ordering::Relaxed);
        let b = GN[(i & 15) as usize][((i >> 4) & 15) as usize].load(Ordering::Relaxed);
        acc = acc.wrapping_add(a.wrapping_add(b));
        i += 1;
    }
    hot_sink(acc) as u64
}

/// A loop-invariant value: `cr = 2.0 * y / w - 1.5` once per row of up to 64 inner
/// iterations of `zr = zr * 0.5 + cr`, `n` inner iterations in all. Hidden: `n`, `w`, the
/// result.
extern "C-unwind" fn loop_invariant(_: *mut c_void, n: u64) -> u64 {
    let m = n_of(n);
    let w = hot_sink(64) as f64;
    let mut acc = 0.0f64;
    let mut y: i64 = 0;
    let mut count: i64 = 0;
    while count < m {
        let cr = 2.0 * (y as f64) / w - 1.5;
        let mut k = 0;
        let mut zr = 0.0f64;
        while k < 64 && count < m {
            zr = zr * 0.5 + cr;
            k += 1;
            count += 1;
        }
        acc += zr;
        y += 1;
    }
    hot_sink((acc * 1000.0) as i64) as u64
}

/// A module function; `#[inline(never)]` because the script's call is a real call.
#[inline(never)]
fn mix(a: i64, b: i64) -> i64 {
    a.wrapping_mul(3).wrapping_add(b)
}

/// Module function call: `acc = mix(acc, i)` per iteration. Hidden: `n`, the result.
extern "C-unwind" fn module_fn(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let mut acc: i64 = 0;
    let mut i = 0;
    while i < n {
        acc = mix(acc, i);
        i += 1;
    }
    hot_sink(acc) as u64
}

/// Closure call: `acc = f(acc, i)` where `f` captures `k` (hidden). `f` is a boxed Rust closure
/// called through a `&dyn Fn` that went through `black_box`, so LLVM cannot see which closure
/// it is: one indirect call through the vtable per iteration, as the seed's `std::function`
/// (the closure's body is not inlined into the loop). Hidden: `n`, `k`, the closure, the result.
extern "C-unwind" fn closure_call(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let k = hot_sink(3);
    let boxed: Box<dyn Fn(i64, i64) -> i64> =
        Box::new(move |a, b| a.wrapping_mul(k).wrapping_add(b));
    let f: &dyn Fn(i64, i64) -> i64 = std::hint::black_box(&*boxed);
    let mut acc: i64 = 0;
    let mut i = 0;
    while i < n {
        acc = f(acc, i);
        i += 1;
    }
    hot_sink(acc) as u64
}

/// Interpreter loop sum (the classic "loopsum"): `sum += i % 7`. The remainder keeps either
/// compiler from summing the series in closed form; LLVM may still unroll and vectorize, which
/// is what native code gets. Hidden: `n`, the result.
extern "C-unwind" fn loop_sum(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let mut sum: i64 = 0;
    let mut i = 0;
    while i < n {
        sum = sum.wrapping_add(i % 7);
        i += 1;
    }
    hot_sink(sum) as u64
}

/// The 80-byte buffer of the read cases: byte `k` holds `k`, as the `.clif` scripts store it.
fn read_buffer() -> [u8; 80] {
    std::array::from_fn(|k| k as u8)
}

/// Aligned 8-byte reads at `(i & 7) * 8` from a stack buffer; the buffer's address passes
/// through `hot_sink` so the loads stay loads (the `.clif` script's slot address is as opaque
/// to Cranelift, which does not fold loads).
extern "C-unwind" fn aligned_read(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let buf = read_buffer();
    let base = hot_sink(buf.as_ptr() as i64) as *const u8;
    let mut acc: i64 = 0;
    let mut i = 0;
    while i < n {
        // SAFETY: offsets 0..=56 plus 8 bytes stay inside the 80-byte buffer, which lives
        // for the whole loop; `read_unaligned` has no alignment requirement.
        let v = unsafe { std::ptr::read_unaligned(base.add(((i & 7) * 8) as usize) as *const i64) };
        acc = acc.wrapping_add(v);
        i += 1;
    }
    hot_sink(acc) as u64
}

/// Unaligned 8-byte reads at `1 + (i & 7) * 8`, otherwise as [`aligned_read`].
extern "C-unwind" fn unaligned_read(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let buf = read_buffer();
    let base = hot_sink(buf.as_ptr() as i64) as *const u8;
    let mut acc: i64 = 0;
    let mut i = 0;
    while i < n {
        // SAFETY: offsets 1..=57 plus 8 bytes stay inside the 80-byte buffer.
        let v =
            unsafe { std::ptr::read_unaligned(base.add(1 + ((i & 7) * 8) as usize) as *const i64) };
        acc = acc.wrapping_add(v);
        i += 1;
    }
    hot_sink(acc) as u64
}

/// Unaligned reads through a byte copy (`copy_from_slice` into `[u8; 8]`, then
/// `from_le_bytes`): the portable way, which the compiler turns into one load.
extern "C-unwind" fn unaligned_copy(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n);
    let buf = read_buffer();
    let buf = std::hint::black_box(&buf);
    let mut acc: i64 = 0;
    let mut i = 0;
    while i < n {
        let at = 1 + ((i & 7) * 8) as usize;
        let mut word = [0u8; 8];
        word.copy_from_slice(&buf[at..at + 8]);
        acc = acc.wrapping_add(i64::from_le_bytes(word));
        i += 1;
    }
    hot_sink(acc) as u64
}

static ATOMIC: AtomicU64 = AtomicU64::new(0);
static MUTEX: Mutex<u64> = Mutex::new(0);

/// One atomic increment (`fetch_add`, a `lock xadd`) per iteration.
extern "C-unwind" fn atomic_inc(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n) as u64;
    for _ in 0..n {
        ATOMIC.fetch_add(1, Ordering::Relaxed);
    }
    n
}

/// One mutex lock, increment, unlock per iteration.
extern "C-unwind" fn mutex_inc(_: *mut c_void, n: u64) -> u64 {
    let n = n_of(n) as u64;
    for _ in 0..n {
        *MUTEX.lock().unwrap_or_else(|e| e.into_inner()) += 1;
    }
    n
}

/// The helper thread of the two-thread rows, started once (starting a thread per sample would
/// cost more than the work): it takes `(kind, n)` from one channel and answers on the other.
/// Waiting blocks rather than spins, so on a busy machine the two threads never fight for one
/// CPU while one of them only waits.
struct Helper {
    work: mpsc::Sender<(u8, u64)>,
    done: mpsc::Receiver<u64>,
}

static HELPER: OnceLock<Option<Mutex<Helper>>> = OnceLock::new();

fn loop_of(kind: u8) -> TwinFn {
    if kind == 0 { atomic_inc } else { mutex_inc }
}

fn helper() -> Option<&'static Mutex<Helper>> {
    HELPER
        .get_or_init(|| {
            let (work, work_rx) = mpsc::channel::<(u8, u64)>();
            let (done_tx, done) = mpsc::channel();
            std::thread::Builder::new()
                .name("hotlab-twin-helper".into())
                .spawn(move || {
                    while let Ok((kind, n)) = work_rx.recv() {
                        if done_tx
                            .send(loop_of(kind)(std::ptr::null_mut(), n))
                            .is_err()
                        {
                            break;
                        }
                    }
                })
                .ok()
                .map(|_| Mutex::new(Helper { work, done }))
        })
        .as_ref()
}

/// Run half of `n` on this thread and half on the helper, at the same time; the time per op
/// is wall time over all `n` increments, as in the classic.
fn two_threads(n: u64, kind: u8) -> u64 {
    let f = loop_of(kind);
    let half = n / 2;
    let Some(helper) = helper() else {
        // No second thread could start: both halves here (the row then shows one thread).
        return f(std::ptr::null_mut(), half) + f(std::ptr::null_mut(), n - half);
    };
    let h = helper.lock().unwrap_or_else(|e| e.into_inner());
    if h.work.send((kind, n - half)).is_err() {
        return f(std::ptr::null_mut(), half) + f(std::ptr::null_mut(), n - half);
    }
    let mine = f(std::ptr::null_mut(), half);
    mine + h.done.recv().unwrap_or(0)
}

/// Atomic increments from two threads, contending for one cache line.
extern "C-unwind" fn atomic_inc_2t(_: *mut c_void, n: u64) -> u64 {
    two_threads(n, 0)
}

/// Mutex lock/unlock from two threads, contending for one mutex.
extern "C-unwind" fn mutex_inc_2t(_: *mut c_void, n: u64) -> u64 {
    two_threads(n, 1)
}

static TWINS: [Twin; 38] = [
    twin(
        "int_loop",
        int_loop,
        "dependent multiply/xor/shift chain",
        1,
    ),
    twin(
        "float_loop",
        float_loop,
        "dependent f64 multiply-add chain",
        1,
    ),
    twin("array_index", array_index, "[i64; 256] write and read", 1),
    twin("vec_index", vec_index, "Vec<i64> (256) write and read", 1),
    twin(
        "string_interp",
        string_interp,
        "format!(\"item {i}\") and its length",
        1,
    ),
    twin("call_native", call_native, "one call of hot_sink", 1),
    twin("recursive", recursive, "depth(16): 17 recursive calls", 1),
    twin("module_var", module_var, "static read and write", 1),
    twin("module_fn", module_fn, "one non-inlined function call", 1),
    twin(
        "global_array",
        global_array,
        "reads of static [i64; 1024] and [[i64; 16]; 16]",
        1,
    ),
    twin(
        "loop_invariant",
        loop_invariant,
        "row value computed outside the inner loop",
        1,
    ),
    twin(
        "closure_call",
        closure_call,
        "a Box<dyn Fn> called through black_box(&dyn Fn)",
        1,
    ),
    twin("loop_sum", loop_sum, "sum += i % 7", 1),
    twin(
        "aligned_read",
        aligned_read,
        "8-byte load at an aligned offset",
        1,
    ),
    twin(
        "unaligned_read",
        unaligned_read,
        "8-byte load at an odd offset",
        1,
    ),
    twin(
        "unaligned_copy",
        unaligned_copy,
        "odd offset through [u8; 8]",
        1,
    ),
    twin("atomic_inc", atomic_inc, "AtomicU64::fetch_add", 1),
    twin("mutex_inc", mutex_inc, "Mutex lock, += 1, unlock", 1),
    twin(
        "atomic_inc_2t",
        atomic_inc_2t,
        "fetch_add on two threads",
        2,
    ),
    twin("mutex_inc_2t", mutex_inc_2t, "Mutex on two threads", 2),
    twin(
        "host_call",
        c::host_call,
        "&dyn Hook on a Rust object: return 1",
        1,
    ),
    twin(
        "virtual_hook",
        c::virtual_hook,
        "&dyn Hook on NativeCounter: n += 1",
        1,
    ),
    twin(
        "field_loop",
        c::field_loop,
        "boxed field, volatile += i & 3",
        1,
    ),
    twin(
        "handle_chain",
        c::handle_chain,
        "16 Arc nodes, clone per step",
        1,
    ),
    twin("pointer_chain", c::pointer_chain, "16 raw-pointer nodes", 1),
    twin("new_free", c::new_free, "Arc::new of a one-field struct", 1),
    twin(
        "method_loop",
        c::method_loop,
        "non-inlined &mut self method",
        1,
    ),
    twin(
        "self_method",
        c::self_method,
        "self.mix(acc, i) in a method",
        1,
    ),
    twin(
        "field_other",
        c::field_other,
        "volatile read of another's field",
        1,
    ),
    twin(
        "handle_method",
        c::handle_method,
        "call through a pointer field",
        1,
    ),
    twin(
        "virtual_call",
        c::virtual_call,
        "&dyn Shape call, not inlined",
        1,
    ),
    twin(
        "nbody",
        p::nbody,
        "n-body: [Body; 5], split_at_mut pairs",
        1,
    ),
    twin(
        "spectral_norm",
        p::spectral_norm,
        "spectral-norm: [f64; 32] folds",
        1,
    ),
    twin(
        "fannkuch",
        p::fannkuch,
        "fannkuch-redux: slice reverse, rotate",
        1,
    ),
    twin(
        "binary_trees",
        p::binary_trees,
        "binary-trees: Box<Tree>",
        1,
    ),
    twin(
        "mandelbrot",
        p::mandelbrot,
        "mandelbrot: scalar f64 loop",
        1,
    ),
    twin(
        "richards",
        p::richards,
        "Richards: enum tasks, Vec arena of packets",
        1,
    ),
    twin("fasta", p::fasta, "fasta: byte lines, LCG, FNV-1a", 1),
];

const fn twin(name: &'static str, f: TwinFn, doc: &'static str, threads: u8) -> Twin {
    Twin {
        name,
        f,
        doc,
        threads,
    }
}

/// Every twin, in a fixed order.
pub fn twins() -> &'static [Twin] {
    &TWINS
}

/// A twin by name.
pub fn twin_named(name: &str) -> Option<&'static Twin> {
    TWINS.iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_twins_run() {
        for (i, t) in TWINS.iter().enumerate() {
            assert!(TWINS[..i].iter().all(|u| u.name != t.name), "{}", t.name);
            assert_eq!(t.run(0), t.run(0), "{}", t.name);
        }
        assert_eq!(twin_named("atomic_inc_2t").unwrap().run(1000), 1000);
        assert_eq!(twin_named("call_native").unwrap().run(4), 6);
        assert_eq!(depth(2), 5);
    }
}
