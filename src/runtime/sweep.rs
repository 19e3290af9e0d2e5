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
//! unwinds. The sweep walks the stack from the raise outward: frames that are not script code
//! (the raising helper and its callees) are skipped with libgcc's `_Unwind_Backtrace`, up to
//! the first script frame; from there on it follows the frame-pointer chain, because every
//! script frame that called something has a frame record (Cranelift sets one up in every
//! function that is not a leaf, and a leaf calls nothing, so it is never inside the run). For
//! each script frame the stack pointer at its call is the CFA of the frame just inside it (on
//! x86_64 and aarch64 the CFA is the caller's stack pointer at the call): for the first, libgcc's
//! `_Unwind_GetCFA` on its context (see `visit`); for each one after, the frame pointer of the
//! frame inside it plus the 16 bytes of that frame's record (saved frame pointer and return
//! address; no script function takes stack arguments through a tail call, which would move the
//! record). Each cell of the map at that return address is read, then all are released. The
//! walk stops at the first frame after that run that is not script code.
//!
//! Why not `_Unwind_Backtrace` all the way: it interprets each frame's DWARF CFI (a
//! few hundred ns a frame, more under load), and runaway recursion raises with millions of
//! script frames on the stack; a frame-record step is two loads.
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
use crate::lang::span::{SourceFile, Span};

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
    /// `(return offset, span)` of the helper calls, sorted: the script operation each call
    /// made, for an error raised without a span of its own (out of memory).
    spans: Box<[(u32, Span)]>,
    /// The function's name (for a crash report).
    name: Box<str>,
    /// `(first offset, end offset, source byte)` of the function's code, sorted: the script
    /// operation each range of instructions comes from (Cranelift's source locations), for a
    /// crash report.
    locs: Box<[(u32, u32, u32)]>,
}

impl FrameMap {
    /// A map of `sites` (in any order; sorted here).
    pub(crate) fn new(mut sites: Vec<Site>) -> FrameMap {
        sites.sort_by_key(|s| s.ret);
        FrameMap {
            sites: sites.into_boxed_slice(),
            catches: Box::default(),
            spans: Box::default(),
            name: Box::default(),
            locs: Box::default(),
        }
    }

    /// This map with the function's name and its code's source locations
    /// (`(first offset, end offset, source byte)`).
    pub(crate) fn with_origin(mut self, name: &str, mut locs: Vec<(u32, u32, u32)>) -> FrameMap {
        locs.sort_unstable();
        self.name = name.into();
        self.locs = locs.into_boxed_slice();
        self
    }

    /// The source byte the instruction `at` bytes into the function comes from.
    pub(crate) fn source_byte_at(&self, at: u32) -> Option<u32> {
        let i = self.locs.partition_point(|&(start, _, _)| start <= at);
        let &(_, end, byte) = self.locs.get(i.checked_sub(1)?)?;
        (at < end).then_some(byte)
    }

    /// This map with the spans of the function's helper calls (`(return offset, span)`).
    pub(crate) fn with_spans(mut self, mut spans: Vec<(u32, Span)>) -> FrameMap {
        spans.sort_unstable_by_key(|&(ret, _)| ret);
        spans.dedup_by_key(|&mut (ret, _)| ret);
        self.spans = spans.into_boxed_slice();
        self
    }

    /// The span of the script operation whose call returns `ret` bytes into the function.
    pub(crate) fn span_at(&self, ret: u32) -> Option<Span> {
        let i = self.spans.binary_search_by_key(&ret, |&(r, _)| r).ok()?;
        Some(self.spans[i].1)
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

/// A mapped function: its code range and map, and the source its spans point into.
struct Region {
    start: usize,
    end: usize,
    map: Arc<FrameMap>,
    source: Option<Arc<SourceFile>>,
}

/// Every registered function, sorted by start (functions never overlap).
static REGISTRY: RwLock<Vec<Region>> = RwLock::new(Vec::new());

/// Registered code ranges; removed from the registry on drop (before the code is freed).
#[derive(Debug, Default)]
pub(crate) struct CodeRegistration {
    starts: Vec<usize>,
}

/// Register functions `(code start, code length, map)` as script code compiled from `source`
/// (`None`: Cranelift IR, or code of no source).
///
/// The returned registration must be dropped before the code is unmapped or reused.
pub(crate) fn register(
    functions: Vec<(usize, usize, Arc<FrameMap>)>,
    source: Option<Arc<SourceFile>>,
) -> CodeRegistration {
    let mut regions: Vec<Region> = functions
        .into_iter()
        .filter(|&(_, len, _)| len != 0)
        .map(|(start, len, map)| Region {
            start,
            end: start + len,
            map,
            source: source.clone(),
        })
        .collect();
    let starts = regions.iter().map(|r| r.start).collect();
    let mut registry = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    // Appended and sorted once: inserting each function in place moved the regions after it
    // (quadratic in a program's functions when they are not mapped in address order).
    registry.append(&mut regions);
    registry.sort_by_key(|r| r.start);
    CodeRegistration { starts }
}

impl Drop for CodeRegistration {
    fn drop(&mut self) {
        if self.starts.is_empty() {
            return;
        }
        // One pass over the registry: removing the functions one by one moved the rest of
        // it each time (a program of 10,000 functions moved 50 million regions).
        self.starts.sort_unstable();
        let mut registry = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
        let starts = std::mem::take(&mut self.starts);
        registry.retain(|r| starts.binary_search(&r.start).is_err());
    }
}

/// Write where the instruction at `pc` comes from, `` `main` at FILE:LINE:COL `` (or only the
/// function, when its code has no source location there), when `pc` is in script code; `false`
/// when it is not, or the registry is being changed. For a crash handler: it takes no lock
/// that could wait and allocates nothing.
pub(crate) fn describe_pc(pc: usize, out: &mut dyn std::fmt::Write) -> bool {
    let Ok(registry) = REGISTRY.try_read() else {
        return false;
    };
    let i = registry.partition_point(|r| r.start <= pc);
    let Some(r) = i.checked_sub(1).and_then(|i| registry.get(i)) else {
        return false;
    };
    if pc >= r.end {
        return false;
    }
    let _ = write!(out, "`{}`", r.map.name);
    if let (Some(source), Some(byte)) = (&r.source, r.map.source_byte_at((pc - r.start) as u32)) {
        let at = source.line_col(byte);
        let _ = write!(out, " at {}:{at}", source.name);
    }
    true
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

/// The DWARF number of the frame-pointer register.
#[cfg(target_arch = "x86_64")]
const FP_REGISTER: i32 = 6;
#[cfg(target_arch = "aarch64")]
const FP_REGISTER: i32 = 29;

unsafe extern "C" {
    fn _Unwind_Backtrace(trace: TraceFn, arg: *mut c_void) -> UnwindReasonCode;
    fn _Unwind_GetIP(ctx: *mut UnwindContext) -> usize;
    fn _Unwind_GetCFA(ctx: *mut UnwindContext) -> usize;
    fn _Unwind_GetGR(ctx: *mut UnwindContext, reg: i32) -> usize;
}

/// The innermost script frame, as libgcc found it.
#[derive(Debug, Clone, Copy)]
struct FirstFrame {
    /// Its return address (into it, from the call it made).
    pc: usize,
    /// Its stack pointer at that call.
    sp: usize,
    /// Its frame pointer.
    fp: usize,
}

extern "C" fn find_first(ctx: *mut UnwindContext, arg: *mut c_void) -> UnwindReasonCode {
    // SAFETY: `arg` is the `FindFirst` that `sweep` passed, alive and used only here.
    let find = unsafe { &mut *(arg as *mut FindFirst<'_>) };
    // SAFETY: `ctx` is the context libgcc passes to this callback, valid during the call.
    let pc = unsafe { _Unwind_GetIP(ctx) };
    if region_of(find.registry, pc).is_none() {
        return URC_NO_REASON;
    }
    // libgcc's context for a frame holds the CFA of the frame it called (the context is
    // stepped out of the callee, whose CFA it computed, to the caller's return address): that
    // is this frame's stack pointer at the call. Its registers are this frame's, restored
    // from where the frames inside it saved them.
    // SAFETY: as above.
    let (sp, fp) = unsafe { (_Unwind_GetCFA(ctx), _Unwind_GetGR(ctx, FP_REGISTER)) };
    find.first = Some(FirstFrame { pc, sp, fp });
    URC_NORMAL_STOP
}

/// The search for the first script frame.
struct FindFirst<'a> {
    registry: &'a [Region],
    first: Option<FirstFrame>,
}

/// Walk the run of script frames from `first` outward along the frame records, collecting
/// the cells each owns at its call, until a frame that catches or one that is not script code.
///
/// # Safety
/// `first` must be a live script frame of this thread's stack, outside the caller's frame,
/// and every script frame outside it up to the end of the run must have a frame record.
unsafe fn walk_frames(registry: &[Region], first: FirstFrame) -> Vec<(ElemKind, u64)> {
    let mut found = Vec::new();
    let FirstFrame {
        mut pc,
        mut sp,
        mut fp,
    } = first;
    while let Some(region) = region_of(registry, pc) {
        let ret = (pc - region.start) as u32;
        if region.map.catches_at(ret) {
            // The error is caught here: this frame runs on in its handler, keeping what it
            // owns, and so do the frames outside it.
            break;
        }
        for &(offset, kind) in region.map.at(ret) {
            // SAFETY: `sp` is the frame's stack pointer at this call, and the map says an owned
            // 8-byte cell is `offset` bytes above it; the frame is live (outside ours on the
            // stack, not yet unwound).
            let cell = unsafe { std::ptr::read((sp + offset as usize) as *const u64) };
            found.push((kind, cell));
        }
        // The frame record of this script frame: the caller's frame pointer, then the return
        // address into the caller. Records only go outward (to higher addresses) and are
        // word-aligned; anything else means no record, and the walk ends there rather than
        // read a wild address.
        if fp == 0 || fp % 8 != 0 || fp < sp {
            break;
        }
        // SAFETY: `fp` is this live script frame's frame pointer (the caller's contract for
        // the first, the chain for the others), which points at its two-word record.
        let (outer_fp, outer_pc) = unsafe {
            (
                std::ptr::read(fp as *const usize),
                std::ptr::read((fp + 8) as *const usize),
            )
        };
        // The caller's stack pointer at the call is this frame's CFA, just above its record.
        sp = fp + 16;
        pc = outer_pc;
        if outer_fp != 0 && outer_fp <= fp {
            // The next step would read a record that is not outward: only the caller's own
            // cells (found next, through `sp`, which is right) are safe; stop after them.
            fp = 0;
        } else {
            fp = outer_fp;
        }
    }
    found
}

/// Release every cell that the script frames between here and the catching border own (see
/// the module docs). Never panics; called by `ScriptError::raise` before it unwinds. Returns
/// the span of the script operation the innermost script frame was doing (the helper call
/// that raised), when its function recorded one.
pub(crate) fn sweep() -> Option<Span> {
    let span;
    let found = {
        let registry = match REGISTRY.read() {
            Ok(r) => r,
            Err(poisoned) => poisoned.into_inner(),
        };
        if registry.is_empty() {
            return None;
        }
        let mut find = FindFirst {
            registry: &registry,
            first: None,
        };
        // SAFETY: `find_first` matches libgcc's trace callback type and only reads `find`
        // through `arg` for the duration of this call.
        unsafe { _Unwind_Backtrace(find_first, &mut find as *mut FindFirst<'_> as *mut c_void) };
        let first = find.first?;
        span =
            region_of(&registry, first.pc).and_then(|r| r.map.span_at((first.pc - r.start) as u32));
        // SAFETY: libgcc found it on this thread's stack, outside this frame; script code
        // keeps frame records (module docs).
        unsafe { walk_frames(&registry, first) }
    };
    // Released after the lock is gone: a release may free a closure, whose captures release
    // in turn, but never registers code.
    for (kind, cell) in found {
        // A release that panicked would be a bug elsewhere; it must not replace the error.
        let _ = panic::catch_unwind(AssertUnwindSafe(|| values::release_cell(kind, cell)));
    }
    span
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
        let reg = register(vec![(0x1000, 0x10, map.clone()), (0x2000, 0x10, map)], None);
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
