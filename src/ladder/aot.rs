//! The `aot` build of a ladder row: the same call path compiled by rustc from the runtime's
//! `CallPath` wrappers, monomorphized per combination (see `aot_table.rs`), with the measure
//! engine's raw ABI, so `jit` and `aot` rows are run by the engine alike.

use std::ffi::c_void;
use std::panic::{self, AssertUnwindSafe};

use super::aot_table::TABLE;
use super::helpers::{RowCtx, caught};
use super::path::Path;
use crate::measure::RawVariantFn;
use crate::runtime::border::{CallPath, Direct, Fused, Iface, Slot};
use crate::runtime::class::SlotIndex;
use crate::runtime::iface::HookCall;
use crate::runtime::object::Object;

/// The method slot every ladder calls (`call`, the class's first method).
pub const CALL_SLOT: usize = 0;

/// The loop of `n` calls through `P`; kept out of line so its machine code is one function.
///
/// # Safety
/// `ctx.this` must be a live shell whose slot [`CALL_SLOT`] (and bound pointer, and `Hook.call`
/// interface entry) holds code of signature `HookCall`, and the path's own contract must hold
/// (see `CallPath::call`).
#[inline(never)]
pub unsafe fn aot_loop<P: CallPath<HookCall>>(ctx: &mut RowCtx, n: u64) -> u64 {
    // SAFETY: per the contract, `this` is live for the whole loop.
    let obj: &Object = unsafe { &*ctx.this };
    let slot = SlotIndex::new(CALL_SLOT).expect("slot 0 exists");
    let mut sum = 0u64;
    for _ in 0..n {
        // SAFETY: forwarded from this function's contract.
        match unsafe { P::call(obj, slot, ()) } {
            Ok(v) => sum = sum.wrapping_add(v as u64),
            Err(e) => {
                ctx.fault.get_or_insert(e);
                break;
            }
        }
    }
    sum
}

/// A row with the raw ABI: the loop inside one `catch_unwind` border per sample (as every `jit`
/// row is entered through `ladder_catch_loop`), so a raise never unwinds into the engine.
///
/// # Safety
/// `ctx` must point at a live [`RowCtx`] satisfying [`aot_loop`]'s contract.
pub unsafe extern "C-unwind" fn aot_row<P: CallPath<HookCall>>(ctx: *mut c_void, n: u64) -> u64 {
    // SAFETY: per the contract.
    let ctx = unsafe { &mut *(ctx as *mut RowCtx) };
    let rec = ctx.rec;
    // SAFETY: forwarded; the record is this thread's.
    let before = unsafe { ((*rec).room.load(RELAXED), (*rec).entered.load(RELAXED)) };
    // SAFETY: forwarded.
    match panic::catch_unwind(AssertUnwindSafe(|| unsafe { aot_loop::<P>(ctx, n) })) {
        Ok(sum) => sum,
        Err(payload) => {
            // SAFETY: the record is this thread's. The layers' guards already restored their
            // counters while unwinding; storing the saved values again is harmless.
            unsafe {
                (*rec).room.store(before.0, RELEASE);
                (*rec).entered.store(before.1, RELEASE);
            }
            ctx.fault.get_or_insert(Box::new(caught(payload)));
            0
        }
    }
}

const RELAXED: std::sync::atomic::Ordering = std::sync::atomic::Ordering::Relaxed;
const RELEASE: std::sync::atomic::Ordering = std::sync::atomic::Ordering::Release;

/// A loop function, as stored in the table.
pub type LoopPtr = unsafe fn(&mut RowCtx, u64) -> u64;

/// The row function and the address of its loop's machine code for `path` (not `Native`).
pub fn aot_fn(path: &Path) -> Option<(RawVariantFn, usize)> {
    let (f, lp): (RawVariantFn, LoopPtr) = match path {
        Path::Native | Path::NativeNew | Path::Runtime(_) => return None,
        Path::Fused => (aot_row::<Fused<Slot>>, aot_loop::<Fused<Slot>>),
        Path::Direct => (aot_row::<Direct<Iface>>, aot_loop::<Direct<Iface>>),
        Path::Layered { terminal, wrappers } => {
            let (_, _, f, lp) = TABLE
                .iter()
                .find(|(t, w, _, _)| t == terminal && *w == wrappers.as_slice())?;
            (*f, *lp)
        }
    };
    Some((f, lp as *const c_void as usize))
}

#[cfg(test)]
mod tests {
    use super::super::spec::Layer;
    use super::*;

    #[test]
    fn table_is_complete() {
        let wrappers = [Layer::Entry, Layer::Detached, Layer::Catch, Layer::Depth];
        let mut want = 0;
        // Every ordered subset: sum over k of 4!/(4-k)!, for two terminals.
        for k in 0..=4usize {
            want += (4 - k + 1..=4).product::<usize>();
        }
        assert_eq!(TABLE.len(), 2 * want);
        for (t, w, _, _) in TABLE.iter() {
            let p = Path::Layered {
                terminal: *t,
                wrappers: w.to_vec(),
            };
            assert!(w.iter().all(|l| wrappers.contains(l)));
            let n = TABLE
                .iter()
                .filter(|(t2, w2, _, _)| t2 == t && w2 == w)
                .count();
            assert_eq!(n, 1, "{p} twice");
        }
    }
}
