//! The Rust side of the `jit` rows: the context every row function receives, and the cold
//! helpers its generated code calls (by address, `movabs; call reg`, as the JIT calls any host
//! function) when a fast-path test fails, and the catches.
//!
//! The `catch` layer of an unfused ladder is generated code (`try_call`s into a handler block,
//! see `clif.rs`); its handler calls [`ladder_caught`] to finish the catch. [`ladder_catch_loop`]
//! is one Rust border around a whole sample's loop: every `jit` row is entered through it, so a
//! raise can never unwind into the measuring engine; for the `fused` row it *is* the
//! out-of-line catch. It restores the thread's depth and entry markers that the unwound JIT
//! frames could not.

use std::ffi::c_void;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::Ordering;

use crate::backend::hook::HookCell;
use crate::backend::jit::unwind::take_caught;
use crate::runtime::border::{Fault, nested, wait_while_pending};
use crate::runtime::class::{ClassRef, ENTRY_PENDING};
use crate::runtime::depth::{ThreadRecord, ensure_registered};
use crate::runtime::error::{ScriptError, ScriptErrorKind, catch_script};
use crate::runtime::object::Object;
use crate::runtime::rt::Runtime;

/// What a row function is called with (`ctx` of the measure engine's raw ABI). `#[repr(C)]`:
/// generated code loads `this` at [`RowCtx::THIS`] and the thread record at [`RowCtx::REC`].
#[repr(C)]
pub struct RowCtx {
    /// The script object's shell.
    pub this: *const Object,
    /// The measuring thread's call record (depth budget and entry marker).
    pub rec: *const ThreadRecord,
    /// The first fault of the row, recorded by a helper; the row stops at it.
    pub fault: Option<Fault>,
    /// The host's calls through the object's handle, as the bench makes them (the `rt-handle`
    /// rung only).
    pub hook: Option<HookCell<'static, 'static>>,
    /// The object's class and its runtime (which outlives the row), for the `new-*` rungs,
    /// which make objects of it; `None` for every other row.
    pub new_in: Option<(ClassRef, *const Runtime)>,
}

impl std::fmt::Debug for RowCtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowCtx")
            .field("this", &self.this)
            .field("rec", &self.rec)
            .field("fault", &self.fault)
            .field("hook", &self.hook.is_some())
            .field("new_in", &self.new_in.is_some())
            .finish()
    }
}

impl RowCtx {
    /// Offset of `this`.
    pub const THIS: usize = std::mem::offset_of!(RowCtx, this);
    /// Offset of `rec`.
    pub const REC: usize = std::mem::offset_of!(RowCtx, rec);

    /// A context for `this` on the calling thread (the thread that will run the row).
    pub fn new(this: &Object) -> RowCtx {
        RowCtx {
            this,
            rec: crate::runtime::depth::thread_record(),
            fault: None,
            hook: None,
            new_in: None,
        }
    }
}

/// A helper's answer to the generated code: go back and test again.
pub const RETRY: i64 = 0;
/// A helper's answer: the call fails (the fault is in the context).
pub const FAIL: i64 = 1;
/// A helper's answer: go in without the test (a nested call while a reload waits for us).
pub const PROCEED: i64 = 2;

/// Fault kinds for [`ladder_fault`].
pub const FAULT_DETACHED: i64 = 0;
/// The slot (or bound pointer) holds no code.
pub const FAULT_EMPTY_SLOT: i64 = 1;

fn record(ctx: *mut RowCtx, e: ScriptError) -> i64 {
    // SAFETY: generated code passes the context it was called with, which the variant owns and
    // nobody else touches during the call.
    let ctx = unsafe { &mut *ctx };
    ctx.fault.get_or_insert(Box::new(e));
    FAIL
}

fn error(kind: ScriptErrorKind) -> ScriptError {
    ScriptError::new(kind, Default::default())
}

/// A failed detached or slot test: records the fault, returns [`FAIL`].
///
/// # Safety
/// `ctx` must be the row's live context, `this` its object.
#[cold]
pub unsafe extern "C-unwind" fn ladder_fault(ctx: *mut RowCtx, kind: i64) -> i64 {
    // SAFETY: per the contract, `this` in the context is a live shell.
    let this = unsafe { &*(*ctx).this };
    let e = if kind == FAULT_DETACHED {
        error(ScriptErrorKind::ObjectDetached)
    } else {
        error(ScriptErrorKind::EmptySlot {
            class: this.class().name().to_string(),
            slot: 0,
        })
    };
    record(ctx, e)
}

/// The depth layer found `room == 0`: register the thread (first call) and retry, or fail
/// with the depth limit.
///
/// # Safety
/// `ctx` must be the row's live context, made on this thread.
#[cold]
pub unsafe extern "C-unwind" fn ladder_depth_slow(ctx: *mut RowCtx) -> i64 {
    // SAFETY: the record is this thread's (the context was made here) and lives as long.
    let rec = unsafe { &*(*ctx).rec };
    let limit = rec.limit.load(Ordering::Relaxed);
    if limit != 0 {
        return record(ctx, error(ScriptErrorKind::DepthLimit { limit }));
    }
    if ensure_registered() {
        RETRY
    } else {
        record(ctx, error(ScriptErrorKind::ThreadExiting))
    }
}

/// The entry layer found the thread unregistered (`entered == 0`) or a reload pending: register,
/// go in when nested, else wait for the reload; then retry.
///
/// # Safety
/// `ctx` must be the row's live context, made on this thread.
#[cold]
pub unsafe extern "C-unwind" fn ladder_entry_slow(ctx: *mut RowCtx, entered: i64) -> i64 {
    // SAFETY: as `ladder_depth_slow`; `this` is a live shell.
    let (rec, this) = unsafe { (&*(*ctx).rec, &*(*ctx).this) };
    if entered == 0 {
        return if ensure_registered() {
            RETRY
        } else {
            record(ctx, error(ScriptErrorKind::ThreadExiting))
        };
    }
    if nested(rec) {
        return PROCEED;
    }
    wait_while_pending(this.class());
    RETRY
}

/// The fused test failed: depth limit or unregistered thread (`room == 0`), a pending reload,
/// or a detached object (the key differs from the entry word).
///
/// # Safety
/// `ctx` must be the row's live context, made on this thread.
#[cold]
pub unsafe extern "C-unwind" fn ladder_fused_slow(ctx: *mut RowCtx, room: i64) -> i64 {
    if room == 0 {
        // SAFETY: forwarded.
        return unsafe { ladder_depth_slow(ctx) };
    }
    // SAFETY: as `ladder_depth_slow`; `this` is a live shell.
    let (rec, this) = unsafe { (&*(*ctx).rec, &*(*ctx).this) };
    let entry = this.class().entry_word();
    if entry & ENTRY_PENDING == 0 {
        return record(ctx, error(ScriptErrorKind::ObjectDetached));
    }
    if nested(rec) {
        if this.key() == entry & !ENTRY_PENDING {
            return PROCEED;
        }
        return record(ctx, error(ScriptErrorKind::ObjectDetached));
    }
    wait_while_pending(this.class());
    RETRY
}

/// A generated loop of `n` calls returning the sum of results.
pub type LoopFn = unsafe extern "C-unwind" fn(ctx: *mut RowCtx, n: u64) -> u64;

/// Saves the thread's markers, to put them back after an unwind through JIT frames.
fn saved(rec: &ThreadRecord) -> (u32, u32) {
    (
        rec.room.load(Ordering::Relaxed),
        rec.entered.load(Ordering::Relaxed),
    )
}

fn restore(rec: &ThreadRecord, (room, entered): (u32, u32)) {
    rec.room.store(room, Ordering::Release);
    rec.entered.store(entered, Ordering::Release);
}

/// The handler of a `catch` layer of the `jit` build (a cold block that a `try_call` in
/// generated code unwound into, with the exception pointer): finishes the catch, records the
/// error as the row's fault and returns [`FAIL`]. The handler has put the thread's markers
/// back already.
///
/// # Safety
/// `ctx` must be the row's live context, `exception` what the JIT's personality routine handed
/// to the handler on this thread, not finished before.
#[cold]
pub unsafe extern "C-unwind" fn ladder_caught(ctx: *mut RowCtx, exception: *mut c_void) -> i64 {
    // SAFETY: per the contract.
    let payload = unsafe { take_caught(exception) };
    record(ctx, caught(payload))
}

/// The border every `jit` row is entered through: one `catch_unwind` around a whole loop.
///
/// # Safety
/// `lp` must be a finalized generated function of type [`LoopFn`], `ctx` the row's context.
pub unsafe extern "C-unwind" fn ladder_catch_loop(lp: LoopFn, ctx: *mut RowCtx, n: u64) -> u64 {
    // SAFETY: the record is this thread's.
    let rec = unsafe { &*(*ctx).rec };
    let before = saved(rec);
    // SAFETY: per the contract.
    match panic::catch_unwind(AssertUnwindSafe(|| unsafe { lp(ctx, n) })) {
        Ok(sum) => sum,
        Err(payload) => {
            restore(rec, before);
            record(ctx, caught(payload));
            0
        }
    }
}

/// A caught panic as a `ScriptError` (a raised one as itself), via the runtime's conversion.
#[cold]
pub fn caught(payload: Box<dyn std::any::Any + Send>) -> ScriptError {
    match catch_script(Default::default(), || -> () {
        panic::resume_unwind(payload)
    }) {
        Err(e) => e,
        Ok(()) => error(ScriptErrorKind::HostPanic("lost panic".into())),
    }
}

/// The helpers' addresses, baked into generated code as constants.
pub(crate) struct HelperAddrs {
    pub fault: usize,
    pub depth_slow: usize,
    pub entry_slow: usize,
    pub fused_slow: usize,
    pub caught: usize,
    pub catch_loop: usize,
}

pub(crate) fn helper_addrs() -> HelperAddrs {
    HelperAddrs {
        fault: ladder_fault as *const c_void as usize,
        depth_slow: ladder_depth_slow as *const c_void as usize,
        entry_slow: ladder_entry_slow as *const c_void as usize,
        fused_slow: ladder_fused_slow as *const c_void as usize,
        caught: ladder_caught as *const c_void as usize,
        catch_loop: ladder_catch_loop as *const c_void as usize,
    }
}
