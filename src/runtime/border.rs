//! The call path from the host into a script method, one layer at a time.
//!
//! Each layer is a zero-sized type generic over the path inside it, and every `call` is
//! `#[inline(always)]`, so any order and subset monomorphizes into one straight function:
//! `Depth<TryCatch<Detached<Entry<Slot>>>>` is the seed's ladder read outside in (depth first,
//! slot last); `Fused<Slot>` is the optimized path; `Direct<Iface>` is the host entry of a fixed
//! runtime (`jit-opt`), which no reload or unload can reach.
//!
//! | type | layer |
//! | --- | --- |
//! | [`Slot`] | read the class's slot table, call the pointer there (terminal) |
//! | [`Bound`] | call the pointer bound in the shell at creation (terminal, no slot) |
//! | [`Iface`] | call the class's interface entry for the method, resolved at definition (terminal, no slot) |
//! | [`Entry`] | mark the thread in-call, one load of the entry word, branch to a waiting slow path |
//! | [`Detached`] | compare the object's slot key with the class's |
//! | [`TryCatch`] | catch a raised `ScriptError` and return it as `Err` |
//! | [`Depth`] | raise and lower the thread's depth budget; a limit stops runaway recursion |
//! | [`Fused`] | depth + entry + detached in one test, catch out of line |
//! | [`Direct`] | depth, then the detached test of the key alone (no entry word), catch out of line |
//!
//! Every layer returns `Result`; a layer that fails returns `Err` at once (it does not unwind).
//! An error *raised* by the method unwinds through the layers (their guards restore the
//! per-thread counters) until a `TryCatch`/`Fused` layer turns it into `Err`, or out of the path.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering, compiler_fence};

use crate::runtime::class::{Class, DETACHED_KEY, ENTRY_PENDING, IfaceMethod, SlotIndex};
use crate::runtime::depth::{ThreadRecord, ensure_registered, thread_record, with_record};
use crate::runtime::error::{ScriptError, ScriptErrorKind, catch_script};
use crate::runtime::iface::{BenchRun, HookCall, IfaceSig, Returned, Signature};
use crate::runtime::object::{Object, detached_error};

/// An error on the call path: a boxed [`ScriptError`]. Boxed so that every layer's
/// `Result<i64, Fault>` is two registers: a `ScriptError` by value is ~70 bytes, and copying such
/// results between layers went through memory with store-forwarding stalls on the happy path.
pub type Fault = Box<ScriptError>;

/// A (possibly layered) way to call method `slot` of an object with signature `S`.
pub trait CallPath<S: Signature> {
    /// Call through every layer of the path.
    ///
    /// # Safety
    /// The code in `slot` (or the bound pointer) must have signature `S` and use the state block
    /// of `obj`. A path without [`Detached`] (or [`Fused`]) must only be used on an attached
    /// object; a path without [`Entry`] (or [`Fused`]) must not race with a reload, unload or
    /// collect, except that [`Direct`] may race with a collect. [`Direct`] and [`Iface`] are for
    /// objects of a fixed runtime's class (which refuses reload and unload). The full paths
    /// ([`Fused`], or all five layers) need only the first sentence; [`Direct`] the first and
    /// the fixed runtime.
    unsafe fn call(obj: &Object, slot: SlotIndex, args: S::Args) -> Result<S::Ret, Fault>;
}

/// Terminal: read the class's slot table and call the code found there.
pub struct Slot;
/// Terminal: call the code bound in the shell at creation (no slot read).
pub struct Bound;
/// Terminal: call the class's interface entry for `S`'s host-interface method (no slot read; the
/// slot argument is not used).
pub struct Iface;
/// The entry-check layer around `P`.
pub struct Entry<P>(PhantomData<P>);
/// The detached-check layer around `P`.
pub struct Detached<P>(PhantomData<P>);
/// The try/catch layer around `P`.
pub struct TryCatch<P>(PhantomData<P>);
/// The call-depth layer around `P`.
pub struct Depth<P>(PhantomData<P>);
/// The fused path around `P`.
pub struct Fused<P>(PhantomData<P>);
/// The direct path around `P` (a fixed runtime's host entry).
pub struct Direct<P>(PhantomData<P>);

impl<S: Signature> CallPath<S> for Slot {
    #[inline(always)]
    unsafe fn call(obj: &Object, slot: SlotIndex, args: S::Args) -> Result<S::Ret, Fault> {
        // SAFETY: forwarded from this function's contract.
        unsafe { call_slot::<S>(obj, slot, args) }
    }
}

/// The `Slot` terminal as a function (the host interfaces use it inside [`fused_enter`]).
///
/// # Safety
/// As [`CallPath::call`] for `Fused<Slot>`.
#[inline(always)]
pub unsafe fn call_slot<S: Signature>(
    obj: &Object,
    slot: SlotIndex,
    args: S::Args,
) -> Result<S::Ret, Fault> {
    let class = obj.class();
    let code = class.slot(slot);
    if code.is_null() {
        return Err(empty_slot(class, slot));
    }
    // SAFETY: non-null, and of signature `S` by the caller's contract.
    Ok(unsafe { S::invoke(code, class.vmctx(), obj, args) })
}

impl<S: Signature> CallPath<S> for Bound {
    #[inline(always)]
    unsafe fn call(obj: &Object, slot: SlotIndex, args: S::Args) -> Result<S::Ret, Fault> {
        let code = match obj.bound.get(slot.get()) {
            Some(b) => b.load(Ordering::Relaxed),
            None => std::ptr::null_mut(),
        };
        if code.is_null() {
            return Err(empty_slot(obj.class(), slot));
        }
        let vmctx = obj.bound_vmctx.load(Ordering::Relaxed);
        // SAFETY: non-null, and of signature `S` by the caller's contract.
        Ok(unsafe { S::invoke(code, vmctx, obj, args) })
    }
}

impl<S: IfaceSig> CallPath<S> for Iface {
    #[inline(always)]
    unsafe fn call(obj: &Object, _: SlotIndex, args: S::Args) -> Result<S::Ret, Fault> {
        // SAFETY: forwarded from this function's contract.
        unsafe { call_iface::<S>(obj, args) }
    }
}

/// The `Iface` terminal as a function (the host interfaces use it inside [`direct_enter`]).
///
/// # Safety
/// As [`CallPath::call`] for `Direct<Iface>`.
#[inline(always)]
pub unsafe fn call_iface<S: IfaceSig>(obj: &Object, args: S::Args) -> Result<S::Ret, Fault> {
    let class = obj.class();
    let code = class.iface_code(S::METHOD);
    if code.is_null() {
        return Err(no_iface_code(class, S::METHOD));
    }
    // SAFETY: non-null, so the class resolved it for a method of `S::METHOD`'s name and
    // signature, which is `S`.
    Ok(unsafe { S::invoke(code, class.vmctx(), obj, args) })
}

/// Stores a counter's value back when a call leaves, normally or by unwinding.
struct Restore<'a>(&'a AtomicU32, u32);

impl Drop for Restore<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        // Release: the reloader's acquire load of the marker then sees the call's writes.
        self.0.store(self.1, Ordering::Release);
    }
}

/// What a slow path decided.
enum Next {
    /// Try the fast path again (the thread registered, or a reload finished).
    Retry,
    /// Go in without the check (a nested call while a reload waits for this very thread).
    Proceed,
}

impl<S: Signature, P: CallPath<S>> CallPath<S> for Entry<P> {
    #[inline(always)]
    unsafe fn call(obj: &Object, slot: SlotIndex, args: S::Args) -> Result<S::Ret, Fault> {
        with_record(|rec| {
            loop {
                let e = rec.entered.load(Ordering::Relaxed);
                if e != 0 {
                    rec.entered.store(e + 1, Ordering::Relaxed);
                    // The marker store must stay before the entry-word load; the reloader's
                    // membarrier supplies the CPU side of the fence.
                    compiler_fence(Ordering::SeqCst);
                    if obj.class().entry_word() & ENTRY_PENDING == 0 {
                        let _restore = Restore(&rec.entered, e);
                        // SAFETY: forwarded from this function's contract.
                        return unsafe { P::call(obj, slot, args) };
                    }
                    rec.entered.store(e, Ordering::Release);
                }
                if let Next::Proceed = entry_slow(rec, obj.class(), e)? {
                    rec.entered.store(e + 1, Ordering::Relaxed);
                    let _restore = Restore(&rec.entered, e);
                    // SAFETY: forwarded; the reloader waits for this thread's outer call.
                    return unsafe { P::call(obj, slot, args) };
                }
            }
        })
    }
}

impl<S: Signature, P: CallPath<S>> CallPath<S> for Detached<P> {
    #[inline(always)]
    unsafe fn call(obj: &Object, slot: SlotIndex, args: S::Args) -> Result<S::Ret, Fault> {
        if obj.key() != obj.class().entry_word() & !ENTRY_PENDING {
            return Err(detached());
        }
        // SAFETY: forwarded from this function's contract.
        unsafe { P::call(obj, slot, args) }
    }
}

impl<S: Signature, P: CallPath<S>> CallPath<S> for TryCatch<P> {
    #[inline(always)]
    unsafe fn call(obj: &Object, slot: SlotIndex, args: S::Args) -> Result<S::Ret, Fault> {
        // SAFETY: forwarded from this function's contract.
        catch_cold(|| unsafe { protected::<S, P>(obj, slot, args) })?
    }
}

/// The body a `TryCatch` protects, kept out of line on purpose: with the inner layers inlined
/// into it, std's `catch_unwind` shim (`do_call`) grew too big for LLVM to inline and every call
/// paid for it passing its closure and result through memory. Out of line, the shim inlines
/// and this is one direct call with arguments and result in registers.
#[inline(never)]
unsafe fn protected<S: Signature, P: CallPath<S>>(
    obj: &Object,
    slot: SlotIndex,
    args: S::Args,
) -> Result<S::Ret, Fault> {
    // SAFETY: forwarded from `TryCatch::call`'s contract.
    unsafe { P::call(obj, slot, args) }
}

impl<S: Signature, P: CallPath<S>> CallPath<S> for Depth<P> {
    #[inline(always)]
    unsafe fn call(obj: &Object, slot: SlotIndex, args: S::Args) -> Result<S::Ret, Fault> {
        with_record(|rec| {
            loop {
                let room = rec.room.load(Ordering::Relaxed);
                if room != 0 {
                    rec.room.store(room - 1, Ordering::Relaxed);
                    let _restore = Restore(&rec.room, room);
                    // SAFETY: forwarded from this function's contract.
                    return unsafe { P::call(obj, slot, args) };
                }
                depth_slow(rec)?;
            }
        })
    }
}

impl<S: Signature, P: CallPath<S>> CallPath<S> for Fused<P> {
    #[inline(always)]
    unsafe fn call(obj: &Object, slot: SlotIndex, args: S::Args) -> Result<S::Ret, Fault> {
        // SAFETY: forwarded from this function's contract.
        fused_enter(obj, || unsafe { P::call(obj, slot, args) })?
    }
}

/// The fused border around `f`: one budget test (depth limit, or a thread not registered yet),
/// one compare of the object's key with the class's entry word (a pending reload *or* a detached
/// object), `f` under a catch whose handling is out of line. Host field access uses it too.
///
/// The straight path is written out here, with no closure around it, and everything else (the
/// slow answers, the retry loop) is one cold function: so the whole fast path inlines into the
/// caller's loop, as the `fused` ladder's rows have it, instead of being a call of its own that
/// passes its result through memory (the runtime ladder's `rt-object` rung showed that call).
#[inline(always)]
pub fn fused_enter<R>(obj: &Object, f: impl FnOnce() -> R) -> Result<R, Fault> {
    let rec = this_record();
    let room = rec.room.load(Ordering::Relaxed);
    if room != 0 {
        rec.room.store(room - 1, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        if obj.key() == obj.class().entry_word() {
            let _restore = Restore(&rec.room, room);
            return catch_cold(f);
        }
        rec.room.store(room, Ordering::Release);
    }
    fused_enter_slow(rec, obj, room, f)
}

/// [`fused_enter`] after its fast test failed with `room`: the slow answer, then the fast test
/// again, until the call goes in or fails.
#[cold]
#[inline(never)]
fn fused_enter_slow<R>(
    rec: &ThreadRecord,
    obj: &Object,
    mut room: u32,
    f: impl FnOnce() -> R,
) -> Result<R, Fault> {
    loop {
        if let Next::Proceed = fused_slow(rec, obj, room)? {
            rec.room.store(room - 1, Ordering::Relaxed);
            let _restore = Restore(&rec.room, room);
            return catch_cold(f);
        }
        room = rec.room.load(Ordering::Relaxed);
        if room != 0 {
            rec.room.store(room - 1, Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
            if obj.key() == obj.class().entry_word() {
                let _restore = Restore(&rec.room, room);
                return catch_cold(f);
            }
            rec.room.store(room, Ordering::Release);
        }
    }
}

/// The host's border for a call of host-interface method `S` on `obj` (what `Hook`/`Bench` for
/// `Object` and `Handle` go through): every protection of [`fused_enter`] around
/// [`call_iface`], folded into one test on the straight path.
///
/// - The depth room is decremented *before* it is tested: the store is the in-call marker, and
///   `room == 0` (the depth limit, or a thread not registered yet) joins the key compare in one
///   branch; the slow path puts the room back first.
/// - One compare of the object's key with the class's entry word covers a pending reload, a
///   detached object and (through a handle) a destroyed one: destroy stores the detached key,
///   and a reload never gives a destroyed object a key again (it is off the live list). So the
///   handle's generation is tested only on the slow path, where `tag` (the handle's generation
///   tag, `None` for a call on the shell) tells a stale handle from a detached object.
/// - A fixed runtime's class (`jit-opt`) goes the same way: its entry word is constant and equal
///   to every attached object's key (it refuses reload and unload), so the compare is the
///   detached test of [`direct_enter`]; a collect there raises the pending bit like any
///   quiesce, and a call waits for it instead of racing it.
/// - The code is the class's interface entry, loaded after the entry word (acquire): the entry
///   a reload installed before it let calls in again, never one older than the key.
/// - The catch is [`catch_cold`]: a plain call on the happy path.
#[inline(always)]
pub fn host_enter<S: IfaceSig>(
    obj: &Object,
    tag: Option<u64>,
    args: S::Args,
) -> Result<S::Ret, Fault> {
    let rec = this_record();
    let room = rec.room.load(Ordering::Relaxed);
    rec.room.store(room.wrapping_sub(1), Ordering::Relaxed);
    // The marker store must stay before the entry-word load (see `fused_enter`).
    compiler_fence(Ordering::SeqCst);
    let class = obj.class();
    if (room != 0) & (obj.key() == class.entry_word()) {
        let code = class.iface_code(S::METHOD);
        if !code.is_null() {
            let _restore = Restore(&rec.room, room);
            let vmctx = class.vmctx();
            // SAFETY: non-null, so the class resolved it for `S::METHOD`'s name and signature
            // (which is `S`), and the key test keeps reloads out and the object attached.
            return catch_cold(|| unsafe { S::invoke(code, vmctx, obj, args) });
        }
    }
    rec.room.store(room, Ordering::Release);
    host_enter_slow::<S>(rec, obj, tag, room, args)
}

/// The Rust host entry of `m` (see [`Class::host_entry`]): [`host_enter`] behind the C ABI of
/// a host entry, for a class whose method has no entry of the JIT's (interpreted and object
/// backend classes, the ladder's, an empty interface entry).
pub fn rust_host_entry(m: IfaceMethod) -> *const c_void {
    match m {
        IfaceMethod::HookCall => rust_hook_entry as *const c_void,
        IfaceMethod::BenchRun => rust_bench_entry as *const c_void,
    }
}

extern "C-unwind" fn rust_hook_entry(obj: &Object, _: *const ThreadRecord) -> Returned {
    host_enter::<HookCall>(obj, None, ()).into()
}

extern "C-unwind" fn rust_bench_entry(obj: &Object, _: *const ThreadRecord, n: i64) -> Returned {
    host_enter::<BenchRun>(obj, None, (n,)).into()
}

/// [`host_enter`] after its straight path did not go in: a stale handle, then the answers of
/// [`fused_enter_slow`] (depth limit, registration, a pending reload, a detached object), then
/// the call, whose empty interface entry is an error too.
///
/// Also the slow path of the JIT's host entries (`backend/jit/host_entry.rs`), which store the
/// room back before they call it.
#[cold]
#[inline(never)]
pub(crate) fn host_enter_slow<S: IfaceSig>(
    rec: &ThreadRecord,
    obj: &Object,
    tag: Option<u64>,
    room: u32,
    args: S::Args,
) -> Result<S::Ret, Fault> {
    if let Some(tag) = tag
        && u64::from(obj.generation()) != tag
    {
        return Err(Box::new(ScriptError::new(
            ScriptErrorKind::StaleHandle,
            Default::default(),
        )));
    }
    if room != 0 {
        // The straight path's test passed and the interface entry was empty: the call goes in
        // and `call_iface` reports `NotImplemented` or `EmptySlot`.
        rec.room.store(room - 1, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        if obj.key() == obj.class().entry_word() {
            let _restore = Restore(&rec.room, room);
            // SAFETY: attached and no reload pending, as on the straight path.
            return catch_cold(|| unsafe { call_iface::<S>(obj, args) })?;
        }
        rec.room.store(room, Ordering::Release);
    }
    // SAFETY: `fused_enter_slow` runs the call only once the object is attached and no reload
    // is pending (or the reloader waits for this thread), which is all `call_iface` needs.
    fused_enter_slow(rec, obj, room, || unsafe { call_iface::<S>(obj, args) })?
}

/// This thread's call record, for the border functions' straight paths (no closure, so nothing
/// stands between the caller and the inlined fast path).
#[inline(always)]
fn this_record<'a>() -> &'a ThreadRecord {
    // SAFETY: the record is this thread's and lives until the thread ends; the border functions
    // use the reference only during the call they are in, on this thread.
    unsafe { &*thread_record() }
}

impl<S: Signature, P: CallPath<S>> CallPath<S> for Direct<P> {
    #[inline(always)]
    unsafe fn call(obj: &Object, slot: SlotIndex, args: S::Args) -> Result<S::Ret, Fault> {
        // SAFETY: forwarded from this function's contract.
        direct_enter(obj, || unsafe { P::call(obj, slot, args) })?
    }
}

/// The direct border around `f`, for an object of a fixed runtime: one budget test (depth limit,
/// or a thread not registered yet), one test of the object's key against the detached key, `f`
/// under a catch whose handling is out of line. No entry word: a fixed runtime's classes refuse
/// reload and unload, so the only operation that stops script code there is a collect, which
/// frees the state of *destroyed* objects only. Destroy stores the detached key before the
/// collect's fence, and this path stores the depth marker before it loads the key: either the
/// collect sees this thread inside a call and waits for it, or this load sees the detached key
/// (the handshake `depth.rs` describes, with the key in the entry word's part).
///
/// As [`fused_enter`], the straight path is written out with no closure and the rest is cold.
#[inline(always)]
pub fn direct_enter<R>(obj: &Object, f: impl FnOnce() -> R) -> Result<R, Fault> {
    let rec = this_record();
    let room = rec.room.load(Ordering::Relaxed);
    if room != 0 {
        rec.room.store(room - 1, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        if obj.key() != DETACHED_KEY {
            let _restore = Restore(&rec.room, room);
            return catch_cold(f);
        }
        rec.room.store(room, Ordering::Release);
        return Err(detached());
    }
    direct_enter_slow(rec, obj, f)
}

/// [`direct_enter`] with no room: register the thread (or fail at the depth limit), then the
/// straight path again.
#[cold]
#[inline(never)]
fn direct_enter_slow<R>(
    rec: &ThreadRecord,
    obj: &Object,
    f: impl FnOnce() -> R,
) -> Result<R, Fault> {
    loop {
        depth_slow(rec)?;
        let room = rec.room.load(Ordering::Relaxed);
        if room != 0 {
            rec.room.store(room - 1, Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
            if obj.key() != DETACHED_KEY {
                let _restore = Restore(&rec.room, room);
                return catch_cold(f);
            }
            rec.room.store(room, Ordering::Release);
            return Err(detached());
        }
    }
}

/// Run `f` marked as inside a call of `class`, after waiting out a pending reload: what `new`
/// does so that it never runs (with its initializers) while a reload migrates. The depth room is
/// the marker, and its limit applies (a `new` in runaway recursion fails like a call).
///
/// No catch: `f` reports its failures as `Err`, and the initializers that may raise are run
/// under a catch of their own where they run (`object::fill_state`), so the straight path is
/// the room store, one load and test of the entry word, `f`, the room stored back. A panic that
/// is not a `ScriptError` (a hotlab bug) unwinds through, the room restored on the way.
#[inline(always)]
pub fn class_enter<R>(class: &Class, f: impl FnOnce() -> Result<R, Fault>) -> Result<R, Fault> {
    let rec = this_record();
    let room = rec.room.load(Ordering::Relaxed);
    rec.room.store(room.wrapping_sub(1), Ordering::Relaxed);
    // The marker store must stay before the entry-word load (see `fused_enter`).
    compiler_fence(Ordering::SeqCst);
    if (room != 0) & (class.entry_word() & ENTRY_PENDING == 0) {
        let _restore = Restore(&rec.room, room);
        return f();
    }
    rec.room.store(room, Ordering::Release);
    class_enter_slow(rec, class, f)
}

/// [`class_enter`] after its straight test failed: register or fail at the depth limit, go in
/// when nested (the reloader waits for this thread), else wait out the reload; then again.
#[cold]
#[inline(never)]
fn class_enter_slow<R>(
    rec: &ThreadRecord,
    class: &Class,
    f: impl FnOnce() -> Result<R, Fault>,
) -> Result<R, Fault> {
    loop {
        let room = rec.room.load(Ordering::Relaxed);
        if room != 0 {
            rec.room.store(room - 1, Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
            if class.entry_word() & ENTRY_PENDING == 0 {
                let _restore = Restore(&rec.room, room);
                return f();
            }
            rec.room.store(room, Ordering::Release);
        } else {
            depth_slow(rec)?;
            continue;
        }
        if nested(rec) {
            rec.room.store(room - 1, Ordering::Relaxed);
            let _restore = Restore(&rec.room, room);
            return f();
        }
        wait_while_pending(class);
    }
}

/// Run `f`; a panic becomes `Err` (a `ScriptError` as itself, anything else as `HostPanic`).
/// The happy path is a plain call: the landing pad and the conversion are out of line.
#[inline(always)]
pub fn catch_cold<R>(f: impl FnOnce() -> R) -> Result<R, Fault> {
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => Ok(r),
        Err(payload) => Err(caught(payload)),
    }
}

/// A caught panic's payload as the error a border returns (a `ScriptError` as it was, any other
/// panic as `HostPanic`).
#[cold]
#[inline(never)]
pub(crate) fn caught(payload: Box<dyn std::any::Any + Send>) -> Fault {
    // Reuse the border's own conversion, so every border reports panics alike.
    let run = catch_script(Default::default(), || -> () {
        panic::resume_unwind(payload)
    });
    Box::new(match run {
        Err(e) => e,
        Ok(()) => ScriptError::new(
            ScriptErrorKind::HostPanic("lost panic".into()),
            Default::default(),
        ),
    })
}

#[cold]
#[inline(never)]
fn detached() -> Fault {
    Box::new(detached_error())
}

#[cold]
#[inline(never)]
fn empty_slot(class: &Class, slot: SlotIndex) -> Fault {
    Box::new(ScriptError::new(
        ScriptErrorKind::EmptySlot {
            class: class.name().to_string(),
            slot: slot.get() as u32,
        },
        Default::default(),
    ))
}

/// An interface entry without code: the class lacks the method, or its slot is empty.
#[cold]
#[inline(never)]
fn no_iface_code(class: &Class, m: IfaceMethod) -> Fault {
    match class.iface_slot(m) {
        Ok(slot) => empty_slot(class, slot),
        Err(e) => Box::new(e),
    }
}

#[cold]
#[inline(never)]
fn depth_slow(rec: &ThreadRecord) -> Result<(), Fault> {
    let limit = rec.limit.load(Ordering::Relaxed);
    if limit == 0 {
        return register();
    }
    Err(Box::new(ScriptError::new(
        ScriptErrorKind::DepthLimit { limit },
        Default::default(),
    )))
}

fn register() -> Result<(), Fault> {
    if ensure_registered() {
        Ok(())
    } else {
        Err(Box::new(ScriptError::new(
            ScriptErrorKind::ThreadExiting,
            Default::default(),
        )))
    }
}

/// True when this thread is inside an outer call (through any marking layer) besides the one
/// being entered, whose marker was restored before calling here.
pub(crate) fn nested(rec: &ThreadRecord) -> bool {
    rec.entered.load(Ordering::Relaxed) > 1
        || rec.room.load(Ordering::Relaxed) < rec.limit.load(Ordering::Relaxed)
}

/// Spin, then yield, then sleep, until the class's pending bit clears.
pub(crate) fn wait_while_pending(class: &Class) {
    let mut spins = 0u32;
    while class.entry_word() & ENTRY_PENDING != 0 {
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else if spins < 256 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
    }
}

#[cold]
#[inline(never)]
fn entry_slow(rec: &ThreadRecord, class: &Class, entered: u32) -> Result<Next, Fault> {
    if entered == 0 {
        register()?;
        return Ok(Next::Retry);
    }
    // A reload is pending. If this thread is already inside a call, the reloader is waiting for
    // it and cannot have started migrating: go in (waiting here would deadlock).
    if nested(rec) {
        return Ok(Next::Proceed);
    }
    wait_while_pending(class);
    Ok(Next::Retry)
}

#[cold]
#[inline(never)]
fn fused_slow(rec: &ThreadRecord, obj: &Object, room: u32) -> Result<Next, Fault> {
    if room == 0 {
        depth_slow(rec)?;
        return Ok(Next::Retry);
    }
    let class = obj.class();
    let entry = class.entry_word();
    if entry & ENTRY_PENDING == 0 {
        return Err(detached());
    }
    // Pending. Nested: the reloader waits for this thread and has not touched any object, so
    // the key is current unless the object is really detached. Not nested: objects may be
    // mid-migration (keys in flux): wait, then test again.
    if nested(rec) {
        if obj.key() == entry & !ENTRY_PENDING {
            return Ok(Next::Proceed);
        }
        return Err(detached());
    }
    wait_while_pending(class);
    Ok(Next::Retry)
}

#[cfg(all(test, feature = "thread-safe"))]
mod tests {
    use super::*;
    use crate::runtime::iface::HookCall;
    use crate::runtime::rt::Runtime;
    use std::ffi::c_void;
    use std::sync::atomic::AtomicBool;
    use std::sync::mpsc;

    static RAN: AtomicBool = AtomicBool::new(false);

    extern "C-unwind" fn mark(_: *mut c_void, _: *const Object) -> i64 {
        RAN.store(true, Ordering::SeqCst);
        1
    }

    #[test]
    fn the_entry_check_waits_while_the_entry_word_is_raised() {
        let rt = Runtime::new();
        let def = crate::runtime::class::hook_class_def(mark as *const c_void);
        let class = rt.define(def).unwrap();
        let h = rt.new_object(&class).unwrap();
        class.entry.fetch_or(ENTRY_PENDING, Ordering::SeqCst);
        let (tx, rx) = mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let slot = SlotIndex::new(0).unwrap();
                // SAFETY: slot 0 is `mark`, of signature `HookCall`; the object is attached.
                let r = unsafe {
                    <Entry<Slot> as CallPath<HookCall>>::call(h.get().unwrap(), slot, ())
                };
                tx.send(r).unwrap();
            });
            // While the word is raised the caller waits: nothing arrives, the method has not run.
            assert!(
                rx.recv_timeout(std::time::Duration::from_millis(100))
                    .is_err()
            );
            assert!(!RAN.load(Ordering::SeqCst));
            class.entry.fetch_and(!ENTRY_PENDING, Ordering::SeqCst);
            assert_eq!(rx.recv().unwrap().unwrap(), 1);
        });
        assert!(RAN.load(Ordering::SeqCst));
    }
}
