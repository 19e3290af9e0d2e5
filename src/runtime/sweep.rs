//! Releasing what script frames own when a `ScriptError` unwinds through them.
//!
//! Generated code (the `jit`, `jit-opt` and `object` backends) has no landing pads: a
//! `ScriptError` unwinds through its frames without running any code there. So every call that
//! can raise carries a *stack map* (`backend/jit/lower_unwind.rs`): the stack offsets, from the
//! stack pointer at the call, of the cells the frame owns at that point (its managed
//! variables' home slots and the temporaries it holds), each with its kind. After a function is
//! compiled its maps become a [`FrameMap`] (sorted by return address offset); when its code is
//! mapped, `(start, length, map)` goes into a process-wide registry ([`register`]) until the
//! code is freed ([`CodeRegistration`] deregisters on drop).
//!
//! [`ScriptError::raise`](crate::runtime::ScriptError::raise) calls [`sweep`] before it
//! unwinds. The sweep walks the stack with libgcc's `_Unwind_Backtrace`, from the raise outward:
//! frames that are not script code (the raising helper and its callees) are skipped; for each
//! script frame of the run that follows, the stack pointer at its call is the CFA of the frame
//! just inside it (on x86_64 and aarch64 the CFA is the caller's stack pointer at the call;
//! libgcc's `_Unwind_GetCFA` on the script frame's context gives exactly that, see `visit`),
//! and each cell of the map at that return address is read, then all are released. The walk stops at the
//! first frame after that run that is not script code.
//!
//! Why that bound is right: script code is entered only through a Rust border (an entry
//! trampoline called inside `catch_script`, or a method called through the object border inside
//! `catch_cold`), and script frames call Rust only at the top of a run (helpers, natives, the
//! host border). So the first run of script frames above the raise is exactly the set the
//! unwinder will pass before it reaches the border that catches the error; the frames above
//! the border belong to whoever called it and must keep what they own. (This assumes no Rust
//! code between the raise and the first script frame catches the error itself; no raising
//! helper does.) Entry trampolines are script code with empty maps.
//!
//! Generated code can also catch: a `try_call` site with a handler (`backend/jit/unwind.rs`)
//! stops the unwind in its own frame, which then runs on. The walk stops there too, without
//! reading that frame's cells ([`FrameMap::catches_at`]).
//!
//! Not covered: a panic that is not a `ScriptError` (a host bug, reported as `HostPanic`)
//! unwinds without a sweep, so what the unwound script frames owned stays allocated (a leak,
//! never a dangling reference).

use std::ffi::c_void;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, RwLock};

use super::values::{self, ElemKind};

/// One call site of a function: its return address offset and the cells owned across it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Site {
    /// Offset of the return address from the function's start.
    pub ret: u32,
    /// `(offset from the stack pointer at the call, kind)` of each owned cell.
    pub cells: Box<[(u32, ElemKind)]>,
}

/// The call sites of one compiled function that have owned cells, sorted by return offset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrameMap {
    sites: Box<[Site]>,
    /// Return offsets of the calls that catch (`try_call` sites with a handler), sorted: the
    /// unwind stops in this frame there, so the sweep does too.
    catches: Box<[u32]>,
}

impl FrameMap {
    /// A map of `sites` (in any order; sorted here).
    pub(crate) fn new(mut sites: Vec<Site>) -> FrameMap {
        sites.sort_by_key(|s| s.ret);
        FrameMap {
            sites: sites.into_boxed_slice(),
            catches: Box::default(),
        }
    }

    /// This map with the return offsets of the function's catching calls.
    pub(crate) fn with_catches(mut self, mut catches: Vec<u32>) -> FrameMap {
        catches.sort_unstable();
        self.catches = catches.into_boxed_slice();
        self
    }

    /// Whether the call returning `ret` bytes into the function catches a `ScriptError`.
    pub(crate) fn catches_at(&self, ret: u32) -> bool {
        self.catches.binary_search(&ret).is_ok()
    }

    /// The cells owned across the call whose return address is `ret` bytes into the function
    /// (none when the call has no map).
    pub(crate) fn at(&self, ret: u32) -> &[(u32, ElemKind)] {
        match self.sites.binary_search_by_key(&ret, |s| s.ret) {
            Ok(i) => &self.sites[i].cells,
            Err(_) => &[],
        }
    }

    /// Number of call sites with owned cells.
    pub fn sites(&self) -> usize {
        self.sites.len()
    }
}

/// A mapped function: its code range and map.
struct Region {
    start: usize,
    end: usize,
    map: Arc<FrameMap>,
}

/// Every registered function, sorted by start (functions never overlap).
static REGISTRY: RwLock<Vec<Region>> = RwLock::new(Vec::new());

/// Registered code ranges; removed from the registry on drop (before the code is freed).
#[derive(Debug, Default)]
pub(crate) struct CodeRegistration {
    starts: Vec<usize>,
}

/// Register functions `(code start, code length, map)` as script code.
///
/// The returned registration must be dropped before the code is unmapped or reused.
pub(crate) fn register(functions: Vec<(usize, usize, Arc<FrameMap>)>) -> CodeRegistration {
    let mut registry = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    let mut starts = Vec::with_capacity(functions.len());
    for (start, len, map) in functions {
        if len == 0 {
            continue;
        }
        let at = registry.partition_point(|r| r.start < start);
        registry.insert(
            at,
            Region {
                start,
                end: start + len,
                map,
            },
        );
        starts.push(start);
    }
    CodeRegistration { starts }
}

impl Drop for CodeRegistration {
    fn drop(&mut self) {
        let mut registry = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
        for start in self.starts.drain(..) {
            if let Ok(i) = registry.binary_search_by_key(&start, |r| r.start) {
                registry.remove(i);
            }
        }
    }
}

/// The region holding `pc` (a return address: the byte before it is in the call).
fn region_of(registry: &[Region], pc: usize) -> Option<&Region> {
    let probe = pc.checked_sub(1)?;
    let i = registry.partition_point(|r| r.start <= probe);
    let r = registry.get(i.checked_sub(1)?)?;
    (probe < r.end).then_some(r)
}

/// libgcc's opaque `struct _Unwind_Context` (shared with the JIT's personality routine, so
/// both declare the unwinder's functions alike).
#[repr(C)]
pub(crate) struct UnwindContext {
    _private: [u8; 0],
}

type UnwindReasonCode = i32;
const URC_NO_REASON: UnwindReasonCode = 0;
const URC_NORMAL_STOP: UnwindReasonCode = 4;

type TraceFn = extern "C" fn(*mut UnwindContext, *mut c_void) -> UnwindReasonCode;

unsafe extern "C" {
    fn _Unwind_Backtrace(trace: TraceFn, arg: *mut c_void) -> UnwindReasonCode;
    fn _Unwind_GetIP(ctx: *mut UnwindContext) -> usize;
    fn _Unwind_GetCFA(ctx: *mut UnwindContext) -> usize;
}

/// The walk's state between frames.
struct FrameWalk<'a> {
    registry: &'a [Region],
    /// Whether the run of script frames has started.
    in_script: bool,
    /// Cells to release, collected first: nothing is freed while the stack is being read.
    found: Vec<(ElemKind, u64)>,
}

extern "C" fn visit(ctx: *mut UnwindContext, arg: *mut c_void) -> UnwindReasonCode {
    // SAFETY: `arg` is the `FrameWalk` that `sweep` passed, alive and used only here for the walk.
    let walk = unsafe { &mut *(arg as *mut FrameWalk<'_>) };
    // SAFETY: `ctx` is the context libgcc passes to this callback, valid during the call.
    let (pc, cfa) = unsafe { (_Unwind_GetIP(ctx), _Unwind_GetCFA(ctx)) };
    match region_of(walk.registry, pc) {
        Some(region) => {
            walk.in_script = true;
            let ret = (pc - region.start) as u32;
            if region.map.catches_at(ret) {
                // The error is caught here: this frame runs on in its handler, keeping what it
                // owns, and so do the frames outside it.
                return URC_NORMAL_STOP;
            }
            // libgcc's context for a frame holds the CFA of the frame it called (the context is
            // stepped out of the callee, whose CFA it computed, to the caller's return
            // address): that is this frame's stack pointer at the call.
            let sp = cfa;
            for &(offset, kind) in region.map.at(ret) {
                // SAFETY: `sp` is the frame's stack pointer at this call, and the map says an
                // owned 8-byte cell is `offset` bytes above it; the frame is live (outside ours
                // on the stack, not yet unwound).
                let cell = unsafe { std::ptr::read((sp + offset as usize) as *const u64) };
                walk.found.push((kind, cell));
            }
        }
        None if walk.in_script => return URC_NORMAL_STOP,
        None => {}
    }
    URC_NO_REASON
}

/// Release every cell that the script frames between here and the catching border own (see
/// the module docs). Never panics; called by `ScriptError::raise` before it unwinds.
pub(crate) fn sweep() {
    let found = {
        let registry = match REGISTRY.read() {
            Ok(r) => r,
            Err(poisoned) => poisoned.into_inner(),
        };
        if registry.is_empty() {
            return;
        }
        let mut walk = FrameWalk {
            registry: &registry,
            in_script: false,
            found: Vec::new(),
        };
        // SAFETY: `visit` matches libgcc's trace callback type and only reads `walk` through
        // `arg` for the duration of this call.
        unsafe { _Unwind_Backtrace(visit, &mut walk as *mut FrameWalk<'_> as *mut c_void) };
        walk.found
    };
    // Released after the lock is gone: a release may free a closure, whose captures release
    // in turn, but never registers code.
    for (kind, cell) in found {
        // A release that panicked would be a bug elsewhere; it must not replace the error.
        let _ = panic::catch_unwind(AssertUnwindSafe(|| values::release_cell(kind, cell)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_finds_its_sites_and_nothing_else() {
        let map = FrameMap::new(vec![
            Site {
                ret: 40,
                cells: vec![(8, ElemKind::Str)].into(),
            },
            Site {
                ret: 12,
                cells: vec![(0, ElemKind::Vec), (16, ElemKind::Handle)].into(),
            },
        ]);
        assert_eq!(map.at(12), &[(0, ElemKind::Vec), (16, ElemKind::Handle)]);
        assert_eq!(map.at(40), &[(8, ElemKind::Str)]);
        assert!(map.at(13).is_empty());
        assert_eq!(map.sites(), 2);
    }

    #[test]
    fn regions_are_found_by_return_address_and_deregistered() {
        let map = Arc::new(FrameMap::default());
        // Addresses no real code uses: the test only looks them up.
        let reg = register(vec![(0x1000, 0x10, map.clone()), (0x2000, 0x10, map)]);
        {
            let registry = REGISTRY.read().unwrap();
            assert!(region_of(&registry, 0x1001).is_some());
            // A return address just past the end is a call that ends the function.
            assert!(region_of(&registry, 0x1010).is_some());
            assert!(region_of(&registry, 0x1011).is_none());
            assert!(region_of(&registry, 0x1000).is_none());
            assert!(region_of(&registry, 0x2008).is_some());
        }
        drop(reg);
        let registry = REGISTRY.read().unwrap();
        assert!(region_of(&registry, 0x1001).is_none());
    }
}
