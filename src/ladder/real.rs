//! The rungs of the `runtime` ladder: the runtime's own code, not a model of it.
//!
//! Every other row of a ladder is a *model*: its `jit` build is Cranelift IR written to do what
//! a layer does, its `aot` build the runtime's `CallPath` types composed in the ladder's order.
//! The rungs here call the functions the host's call through a handle really goes through, each
//! from its own loop with the engine's raw ABI:
//!
//! | layer | what one iteration calls |
//! | --- | --- |
//! | `rt-slot` | `border::call_iface` (the host border's terminal: the interface entry, null test, `vmctx`, the call) |
//! | `rt-fused` | `border::fused_enter` around `call_iface`: depth, the entry-word compare, the catch, each tested on its own |
//! | `rt-object` | `Hook for Object`: `border::host_enter`, the same checks folded into one test, the error unboxed |
//! | `rt-handle` | the bench's host loop (`HookCell`) over `Hook for Handle`: null tested, the generation folded into the border's key test |
//! | `bench` | the bench's own sampler over `cases/host_call.hot` loaded on the `jit` backend |
//!
//! The `new-*` rungs take `new` and free apart (`runtime::new_steps`): each loop makes an object
//! of the row's class per iteration, writes and reads its field, and frees it, through one more
//! of the runtime's steps than the rung before; `new-runtime` is the runtime's own
//! `Runtime::new_object` and release, what a script's `new` runs.
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
use crate::runtime::border::{Fault, Fused, Iface};
use crate::runtime::class::ClassRef;
use crate::runtime::new_steps;
use crate::runtime::object::Object;
use crate::runtime::rt::Runtime;

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

/// `n` objects made, written, read and freed through `step` (given the class, its runtime and
/// the value), in one sample's border; the sum of the values read.
fn new_loop(
    ctx: *mut c_void,
    n: u64,
    step: impl Fn(&ClassRef, &Runtime, i64) -> Result<i64, Fault>,
) -> u64 {
    guarded(ctx, |c| {
        let Some((class, rt)) = &c.new_in else {
            return Err(ScriptError::new(
                crate::runtime::ScriptErrorKind::BadCall("the rung has no class".into()),
                Default::default(),
            ));
        };
        // SAFETY: the runtime outlives the row (the `LadderBench` drops its rows first).
        let rt = unsafe { &**rt };
        let mut s = 0i64;
        for i in 0..n as i64 {
            s = s.wrapping_add(step(class, rt, i).map_err(|e| *e)?);
        }
        Ok(s)
    })
}

/// `new-alloc`.
///
/// # Safety
/// `ctx` must point at a live [`RowCtx`] whose `new_in` class has an `i64` first field and is
/// not reloaded while the row runs.
pub unsafe extern "C-unwind" fn new_alloc_row(ctx: *mut c_void, n: u64) -> u64 {
    // SAFETY: the class has a field (the contract).
    new_loop(ctx, n, |c, _, i| Ok(unsafe { new_steps::alloc_free(c, i) }))
}

/// `new-header`.
///
/// # Safety
/// As [`new_alloc_row`].
pub unsafe extern "C-unwind" fn new_header_row(ctx: *mut c_void, n: u64) -> u64 {
    // SAFETY: as `new_alloc_row`.
    new_loop(ctx, n, |c, _, i| {
        Ok(unsafe { new_steps::header_free(c, i) })
    })
}

/// `new-fields`.
///
/// # Safety
/// As [`new_alloc_row`].
pub unsafe extern "C-unwind" fn new_fields_row(ctx: *mut c_void, n: u64) -> u64 {
    // SAFETY: as `new_alloc_row`.
    new_loop(ctx, n, |c, _, i| unsafe { new_steps::fields_free(c, i) })
}

/// `new-list`.
///
/// # Safety
/// As [`new_alloc_row`].
pub unsafe extern "C-unwind" fn new_list_row(ctx: *mut c_void, n: u64) -> u64 {
    // SAFETY: as `new_alloc_row`; nothing reloads the row's class.
    new_loop(ctx, n, |c, _, i| unsafe { new_steps::listed_free(c, i) })
}

/// `new-runtime`: `Runtime::new_object`, the field written and read through the handle's
/// object, the handle dropped.
///
/// # Safety
/// As [`new_alloc_row`].
pub unsafe extern "C-unwind" fn new_runtime_row(ctx: *mut c_void, n: u64) -> u64 {
    new_loop(ctx, n, |c, rt, i| {
        let h = rt.new_object(c).map_err(Box::new)?;
        let obj = h.get().map_err(Box::new)?;
        let cell = std::hint::black_box(obj.state_ptr()) as *mut i64;
        // SAFETY: an attached object of a class with an `i64` first field: its state block's
        // first cell, which nothing else uses while `h` is held here.
        let r = unsafe {
            cell.write(i);
            cell.read()
        };
        drop(h);
        Ok(r)
    })
}

/// The row function of a runtime rung (not `bench`, which is the backend's sampler) and the
/// address of the function whose machine code the row shows.
pub fn rung_fn(layer: Layer) -> Option<(RawVariantFn, usize)> {
    let (f, code): (RawVariantFn, usize) = match layer {
        Layer::RtSlot => (
            aot_row::<Iface>,
            aot_loop::<Iface> as unsafe fn(&mut RowCtx, u64) -> u64 as *const c_void as usize,
        ),
        Layer::RtFused => (
            aot_row::<Fused<Iface>>,
            aot_loop::<Fused<Iface>> as unsafe fn(&mut RowCtx, u64) -> u64 as *const c_void
                as usize,
        ),
        Layer::RtObject => (rt_object_row, rt_object_row as *const c_void as usize),
        Layer::RtHandle => (rt_handle_row, rt_handle_row as *const c_void as usize),
        Layer::NewAlloc => (new_alloc_row, new_alloc_row as *const c_void as usize),
        Layer::NewHeader => (new_header_row, new_header_row as *const c_void as usize),
        Layer::NewFields => (new_fields_row, new_fields_row as *const c_void as usize),
        Layer::NewList => (new_list_row, new_list_row as *const c_void as usize),
        Layer::NewRuntime => (new_runtime_row, new_runtime_row as *const c_void as usize),
        _ => return None,
    };
    Some((f, code))
}
