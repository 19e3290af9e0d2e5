//! The rungs of the `runtime` ladder: the runtime's own code, not a model of it.
//!
//! Every other row of a ladder is a *model*: its `jit` build is Cranelift IR written to do what
//! a layer does, its `aot` build the runtime's `CallPath` types composed in the ladder's order.
//! The rungs here call the functions the host's call through a handle really goes through, each
//! from its own loop with the engine's raw ABI:
//!
//! | layer | what one iteration calls |
//! | --- | --- |
//! | `rt-slot` | `border::call_slot` (the slot terminal: slot load, null test, `vmctx`, the call) |
//! | `rt-fused` | `border::fused_enter` around `call_slot`: depth, the entry-word compare, the catch |
//! | `rt-object` | `Hook for Object`: the inline test, the interface slot, the fused border, the error unboxed |
//! | `rt-handle` | the bench's host loop (`HookCell`) over `Hook for Handle`: the generation check, then `Hook for Object` |
//! | `bench` | the bench's own sampler over `cases/host_call.hot` loaded on the `jit` backend |
//!
//! `rt-handle` *is* the call `hotlab bench` measures in its "empty method call (host to script)"
//! row; `bench` is that row itself, measured in the same job, so the two can be compared.

use std::ffi::c_void;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::Ordering;

use super::aot::{aot_loop, aot_row};
use super::helpers::{RowCtx, caught};
use super::spec::Layer;
use crate::backend::hook::hook_loop;
use crate::backend::sample::HostLoop;
use crate::measure::RawVariantFn;
use crate::runtime::ScriptError;
use crate::runtime::border::{Fused, Slot};
use crate::runtime::object::Object;

/// The bench's host-call case, the source of the `bench` rung (the very file `hotlab bench`
/// loads for its "empty method call (host to script)" row).
pub const HOST_CALL_CASE: &str = include_str!("../../cases/host_call.hot");
/// The name the `bench` rung loads it under.
pub const HOST_CALL_CASE_NAME: &str = "cases/host_call.hot";

/// Run one sample of a rung inside a catch (so a raise never unwinds into the engine); the
/// first error is kept in the context and the sample returns 0, as a `jit` row does.
fn guarded(ctx: *mut c_void, body: impl FnOnce(&mut RowCtx) -> Result<i64, ScriptError>) -> u64 {
    // SAFETY: the rung's contract: `ctx` is the row's live context, used by this row only.
    let ctx = unsafe { &mut *(ctx as *mut RowCtx) };
    let rec = ctx.rec;
    // SAFETY: the record is this thread's (the context was made on the measuring thread).
    let before = unsafe { ((*rec).room.load(RELAXED), (*rec).entered.load(RELAXED)) };
    match panic::catch_unwind(AssertUnwindSafe(|| body(ctx))) {
        Ok(Ok(v)) => v as u64,
        Ok(Err(e)) => {
            ctx.fault.get_or_insert(Box::new(e));
            0
        }
        Err(payload) => {
            // SAFETY: as above; the runtime's guards restored the counters while unwinding.
            unsafe {
                (*rec).room.store(before.0, Ordering::Release);
                (*rec).entered.store(before.1, Ordering::Release);
            }
            ctx.fault.get_or_insert(Box::new(caught(payload)));
            0
        }
    }
}

const RELAXED: Ordering = Ordering::Relaxed;

/// `rt-object`: `n` calls of `Hook for Object` on the row's shell, in the bench's host loop.
///
/// # Safety
/// `ctx` must point at a live [`RowCtx`] whose `this` is a live shell of a class implementing
/// `Hook`, made on this thread.
pub unsafe extern "C-unwind" fn rt_object_row(ctx: *mut c_void, n: u64) -> u64 {
    guarded(ctx, |c| {
        // SAFETY: per the contract, `this` is live for the whole sample.
        let obj: &Object = unsafe { &*c.this };
        hook_loop(obj, n)
    })
}

/// `rt-handle`: the bench's host loop over the row's handle (`HookCell::run`, which calls
/// `Hook for Handle`), `n` calls.
///
/// # Safety
/// As [`rt_object_row`], and the context's `hook` must be set.
pub unsafe extern "C-unwind" fn rt_handle_row(ctx: *mut c_void, n: u64) -> u64 {
    guarded(ctx, |c| match c.hook.as_mut() {
        Some(cell) => cell.run(n),
        None => Err(ScriptError::new(
            crate::runtime::ScriptErrorKind::BadCall("the rung has no handle".into()),
            Default::default(),
        )),
    })
}

/// The row function of a runtime rung (not `bench`, which is the backend's sampler) and the
/// address of the function whose machine code the row shows.
pub fn rung_fn(layer: Layer) -> Option<(RawVariantFn, usize)> {
    let (f, code): (RawVariantFn, usize) = match layer {
        Layer::RtSlot => (
            aot_row::<Slot>,
            aot_loop::<Slot> as unsafe fn(&mut RowCtx, u64) -> u64 as *const c_void as usize,
        ),
        Layer::RtFused => (
            aot_row::<Fused<Slot>>,
            aot_loop::<Fused<Slot>> as unsafe fn(&mut RowCtx, u64) -> u64 as *const c_void as usize,
        ),
        Layer::RtObject => (rt_object_row, rt_object_row as *const c_void as usize),
        Layer::RtHandle => (rt_handle_row, rt_handle_row as *const c_void as usize),
        _ => return None,
    };
    Some((f, code))
}
