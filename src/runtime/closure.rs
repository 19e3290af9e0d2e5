//! Closures of generated code: a counted block holding the lambda's code pointer and the
//! captured cells, in one 8-byte cell (its address).
//!
//! # Layout (`#[repr(C)]`, read by generated code)
//! ```text
//! +0   code: *const u8      the lambda's function: (vmctx, env, [out], params..) -> ret
//! +8   refs: AtomicU64      strong count; the cell that made the block owns the first
//! +16  desc: *const u8      the lambda's descriptor (below), in the program's data
//! +24  cells: [u64; n]      the captured values, each owning what its kind owns
//! ```
//! A call loads `code` from `[cell + 0]` and calls it with the cell as `env`: the body reads its
//! captures at `[env + 24 + 8*i]` (borrowed: the caller keeps the closure alive for the call).
//!
//! The descriptor is `n: u32, shown_len: u32, kinds: [u8; n], shown: [u8; shown_len]`: the
//! [`ElemKind`] of every cell (how it is released) and how interpolation shows the closure
//! (`<fn(i64) -> i64>`). Generated code puts it in the module's data (so it works in a
//! position-independent library too); it lives as long as the program's code, like `code`.
//!
//! A closure's cell is never 0 once made; 0 is what a fn-typed module variable holds before its
//! initializer ran (a call of it raises `NullClosure`).

use std::alloc::{Layout, alloc, dealloc};
use std::sync::atomic::{AtomicU64, Ordering, fence};

use crate::runtime::values::{ElemKind, count_blocks, release_cell};

/// A closure block's header (the cells follow it).
#[repr(C)]
#[derive(Debug)]
pub struct ClosureBlock {
    code: *const u8,
    refs: AtomicU64,
    desc: *const u8,
}

impl ClosureBlock {
    /// Byte offset of the code pointer.
    pub const CODE: i32 = 0;
    /// Byte offset of the first captured cell.
    pub const CELLS: i32 = 24;
    /// Offset of the strong count (generated code retains and releases it inline).
    pub const REFS: i32 = std::mem::offset_of!(ClosureBlock, refs) as i32;
}

/// The parts of a descriptor.
struct Desc<'a> {
    kinds: &'a [u8],
    shown: &'a [u8],
}

/// Read a descriptor.
///
/// # Safety
/// `desc` must point at a descriptor as the module docs describe.
unsafe fn desc<'a>(desc: *const u8) -> Desc<'a> {
    // SAFETY: the caller's contract: two u32 (unaligned reads are fine) then the bytes.
    unsafe {
        let n = desc.cast::<u32>().read_unaligned() as usize;
        let shown_len = desc.add(4).cast::<u32>().read_unaligned() as usize;
        let kinds = std::slice::from_raw_parts(desc.add(8), n);
        let shown = std::slice::from_raw_parts(desc.add(8 + n), shown_len);
        Desc { kinds, shown }
    }
}

/// The bytes of a descriptor for cells of `kinds`, shown as `shown`.
pub fn descriptor(kinds: &[ElemKind], shown: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + kinds.len() + shown.len());
    out.extend_from_slice(&(kinds.len() as u32).to_le_bytes());
    out.extend_from_slice(&(shown.len() as u32).to_le_bytes());
    out.extend(kinds.iter().map(|&k| k as u8));
    out.extend_from_slice(shown.as_bytes());
    out
}

fn layout(cells: usize) -> Layout {
    // A closure holds at most the cells of its captures, each a checked type's (an array at
    // most `MAX_ARRAY_CELLS`): far from overflowing.
    Layout::from_size_align(ClosureBlock::CELLS as usize + 8 * cells, 8)
        .unwrap_or_else(|_| std::process::abort())
}

/// A new closure of `code` described by `desc`, its cells zeroed (generated code stores the
/// captured values into them, moving their references in). Returns the owned cell.
///
/// # Safety
/// `desc` must point at a descriptor that lives as long as the closure.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn hot_closure_new(code: *const u8, desc_ptr: *const u8) -> u64 {
    // SAFETY: the caller's contract.
    let n = unsafe { desc(desc_ptr) }.kinds.len();
    let layout = layout(n);
    super::memory::ensure(layout.size());
    // SAFETY: the layout is not zero-sized (the header).
    let block = unsafe { alloc(layout) };
    if block.is_null() {
        super::memory::refuse(layout.size(), super::memory::Refused::System);
    }
    // SAFETY: `block` is fresh memory of `layout`: the header, then `n` cells.
    unsafe {
        block.cast::<ClosureBlock>().write(ClosureBlock {
            code,
            refs: AtomicU64::new(1),
            desc: desc_ptr,
        });
        std::ptr::write_bytes(block.add(ClosureBlock::CELLS as usize), 0, 8 * n);
    }
    count_blocks(1);
    block as u64
}

/// A descriptor for cells of `kinds` shown as `shown` that lives as long as the process: one per
/// distinct descriptor, shared. For closures made outside generated code (the interpreter's, when
/// it stores one in a runtime cell), whose blocks may outlive the program that made them (an
/// object the host still holds).
pub fn interned_descriptor(kinds: &[ElemKind], shown: &str) -> *const u8 {
    type Known = std::sync::Mutex<std::collections::HashSet<&'static [u8]>>;
    static KNOWN: std::sync::LazyLock<Known> = std::sync::LazyLock::new(Known::default);
    let bytes = descriptor(kinds, shown);
    let mut known = KNOWN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(d) = known.get(&bytes[..]) {
        return d.as_ptr();
    }
    let d: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    known.insert(d);
    d.as_ptr()
}

/// A new closure of `code` described by `desc` holding `cells` (their references move in).
/// Returns the owned cell.
///
/// # Safety
/// `desc` must point at a descriptor of `cells.len()` kinds that lives as long as the closure,
/// and each cell must be of its kind.
pub unsafe fn closure_from_cells(code: *const u8, desc_ptr: *const u8, cells: &[u64]) -> u64 {
    // SAFETY: the caller's contract.
    let block = unsafe { hot_closure_new(code, desc_ptr) };
    // SAFETY: the fresh block has a cell per kind of `desc`: `cells.len()` of them.
    unsafe {
        let at = (block as *mut u8).add(ClosureBlock::CELLS as usize) as *mut u64;
        std::ptr::copy_nonoverlapping(cells.as_ptr(), at, cells.len());
    }
    block
}

/// The code word and the captured cells of a closure cell (not 0), borrowed.
///
/// # Safety
/// `cell` must own (or be borrowed from an owner of) a count of a live closure block for `'a`.
pub unsafe fn closure_parts<'a>(cell: u64) -> (*const u8, &'a [u64]) {
    // SAFETY: the caller's contract; the descriptor lives as long as the block.
    unsafe {
        let block = &*(cell as *const ClosureBlock);
        let n = desc(block.desc).kinds.len();
        let cells = (cell as *const u8).add(ClosureBlock::CELLS as usize) as *const u64;
        (block.code, std::slice::from_raw_parts(cells, n))
    }
}

/// The descriptor a closure cell (not 0) was made with: it lives as long as the block's code
/// (an interned one as long as the process), so a new block may be made with it.
///
/// # Safety
/// As [`closure_parts`].
pub unsafe fn closure_descriptor(cell: u64) -> *const u8 {
    // SAFETY: the caller's contract.
    unsafe { (*(cell as *const ClosureBlock)).desc }
}

/// Another count of a closure cell (0 is fine); returns the cell.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_closure_retain(cell: u64) -> u64 {
    if cell != 0 {
        // SAFETY: a non-null closure cell the caller holds owns a count of a live block.
        let block = unsafe { &*(cell as *const ClosureBlock) };
        block.refs.fetch_add(1, Ordering::Relaxed);
    }
    cell
}

/// Give up a count of a closure cell (0 is fine); the last frees it and releases its cells.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_closure_release(cell: u64) {
    if cell == 0 {
        return;
    }
    // SAFETY: the caller gives up the count its cell owns: the block is live until then.
    let block = unsafe { &*(cell as *const ClosureBlock) };
    if block.refs.fetch_sub(1, Ordering::Release) != 1 {
        return;
    }
    // As `Arc`: every other owner's last use happens before the free.
    fence(Ordering::Acquire);
    // SAFETY: the block was made by `hot_closure_new` with this descriptor, and this was the
    // last count: nothing else reads it.
    unsafe {
        let d = desc(block.desc);
        let cells = (cell as *const u8).add(ClosureBlock::CELLS as usize) as *const u64;
        for (i, &k) in d.kinds.iter().enumerate() {
            let kind = ElemKind::code_or_abort(u64::from(k));
            release_cell(kind, cells.add(i).read());
        }
        dealloc(cell as *mut u8, layout(d.kinds.len()));
    }
    count_blocks(-1);
}

/// `"${f}"` of a closure: its type as the descriptor has it (`<fn(i64) -> i64>`).
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_str_of_closure(cell: u64) -> u64 {
    crate::runtime::values::str_of_cell(ElemKind::Fn, cell)
}

/// Append how a closure cell is shown (`<fn: not initialized>` for 0).
pub fn format_closure(cell: u64, out: &mut String) {
    if cell == 0 {
        out.push_str("<fn: not initialized>");
        return;
    }
    // SAFETY: the caller holds a count of the (live) block; its descriptor lives as long.
    let d = unsafe { desc((*(cell as *const ClosureBlock)).desc) };
    out.push_str(&String::from_utf8_lossy(d.shown));
}

/// The helpers generated code imports for closures: `(symbol, address)`.
pub fn helper_symbols() -> [(&'static str, *const u8); 4] {
    [
        ("hot_closure_new", hot_closure_new as *const u8),
        ("hot_closure_retain", hot_closure_retain as *const u8),
        ("hot_closure_release", hot_closure_release as *const u8),
        ("hot_str_of_closure", hot_str_of_closure as *const u8),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::values::{hot_str_release, live_blocks, str_from, str_text};

    #[test]
    fn a_closure_releases_its_cells_with_its_last_count() {
        let before = live_blocks();
        let d = descriptor(&[ElemKind::I64, ElemKind::Str], "<fn(i64) -> str>");
        // SAFETY: `d` outlives the closure.
        let c = unsafe { hot_closure_new(std::ptr::null(), d.as_ptr()) };
        // SAFETY: the fresh block has two cells.
        unsafe {
            let cells = (c as *mut u8).add(ClosureBlock::CELLS as usize) as *mut u64;
            cells.write(7);
            cells.add(1).write(str_from("kept".to_string()));
        }
        assert_eq!(live_blocks(), before + 2);
        let s = hot_str_of_closure(c);
        // SAFETY: `s` is owned here.
        assert_eq!(unsafe { str_text(s) }, "<fn(i64) -> str>");
        hot_str_release(s);
        hot_closure_retain(c);
        hot_closure_release(c);
        assert_eq!(live_blocks(), before + 2, "one count left");
        hot_closure_release(c);
        assert_eq!(live_blocks(), before, "the string went with the closure");
    }
}
