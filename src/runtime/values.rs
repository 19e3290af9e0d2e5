//! `vec<T>` and `str` values of generated code: reference-counted heap blocks in one 8-byte cell.
//!
//! # Ownership
//! A cell is `0` (the empty vec, the empty string: what a zeroed global or a fresh local holds)
//! or the address of a counted block (a string: a [`StrBlock`]; a vec: a [`VecBlock`], whose count
//! generated code reads). A non-null cell *owns* one count. Generated code
//! retains a cell when it copies it (a variable read, an element read) and releases it when the
//! copy goes (a temporary used up, a variable overwritten or going out of its function), as it
//! does for handles (`backend/jit/lower_object.rs`). Dropping a vec block releases its elements
//! by their kind ([`ElemKind`]), iteratively only as deep as the nesting of vecs.
//!
//! Vecs are values with copy-on-write: `let b = a` shares one block; a mutation (`push`, `pop`,
//! an element store) first makes the block unique ([`hot_vec_unique`]), copying it (and
//! retaining its elements) when another owner shares it. Strings are immutable.
//!
//! Counts are atomic (with `Arc`'s orderings): a block may be released on another thread than the one that made
//! it (a host calling an object's method). [`live_blocks`] counts the blocks made minus freed
//! on the current thread, for the leak tests.

use std::cell::Cell;
use std::collections::TryReserveError;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};

use crate::lang::span::Span;
use crate::runtime::error::{ScriptError, ScriptErrorKind};
use crate::runtime::handle::{Handle, hot_handle_release, hot_handle_retain};
pub use crate::runtime::str_block::StrBlock;
use crate::runtime::{arrays, memory, str_block};

thread_local! {
    static LIVE: Cell<i64> = const { Cell::new(0) };
}

/// Vec and str blocks made minus blocks freed on this thread (0 after a run that leaked none).
pub fn live_blocks() -> i64 {
    LIVE.with(Cell::get)
}

/// Count `delta` blocks made (or freed, negative) on this thread: vec and str blocks here,
/// closure blocks in `runtime::closure`, the interpreter's closures.
pub(crate) fn count_blocks(delta: i64) {
    // `try_with`: a block freed while the thread's locals are torn down is not counted.
    let _ = LIVE.try_with(|c| c.set(c.get() + delta));
}

/// What one cell of a vec holds: how it is released, retained and shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ElemKind {
    /// An `i64`.
    I64 = 0,
    /// An `f64` (its bits).
    F64 = 1,
    /// A `bool` (0 or 1).
    Bool = 2,
    /// A handle cell (owns a reference to a shell).
    Handle = 3,
    /// A `vec` cell (owns a count of a [`VecBlock`]).
    Vec = 4,
    /// A `str` cell (owns a count of a string block).
    Str = 5,
    /// A closure cell (owns a count of a `runtime::closure` block).
    Fn = 6,
}

impl ElemKind {
    /// From the code generated code passes (`self as u8`); `None` for another number.
    pub fn from_code(code: u64) -> Option<ElemKind> {
        Some(match code {
            0 => ElemKind::I64,
            1 => ElemKind::F64,
            2 => ElemKind::Bool,
            3 => ElemKind::Handle,
            4 => ElemKind::Vec,
            5 => ElemKind::Str,
            6 => ElemKind::Fn,
            _ => return None,
        })
    }

    /// The bytes an element of this kind takes in a vec's block: one for a bool (packed, as
    /// in a bool array), else a whole cell. Generated code computes element addresses with it.
    pub const fn bytes(self) -> usize {
        match self {
            ElemKind::Bool => 1,
            _ => 8,
        }
    }

    /// Whether an element of this kind owns a reference (to release when it goes, to retain
    /// when it is copied).
    pub const fn owns(self) -> bool {
        !matches!(self, ElemKind::I64 | ElemKind::F64 | ElemKind::Bool)
    }

    pub(crate) fn code_or_abort(code: u64) -> ElemKind {
        // Generated code passes constants made from a checked type; anything else is a bug
        // that must not turn into a wrong release.
        ElemKind::from_code(code).unwrap_or_else(|| std::process::abort())
    }
}

/// Take another reference through a cell of kind `kind`; returns the cell.
pub fn retain_cell(kind: ElemKind, cell: u64) -> u64 {
    match kind {
        ElemKind::I64 | ElemKind::F64 | ElemKind::Bool => cell,
        ElemKind::Handle => hot_handle_retain(cell),
        ElemKind::Vec => hot_vec_retain(cell),
        ElemKind::Str => hot_str_retain(cell),
        ElemKind::Fn => crate::runtime::closure::hot_closure_retain(cell),
    }
}

/// Give up the reference a cell of kind `kind` owns.
pub fn release_cell(kind: ElemKind, cell: u64) {
    match kind {
        ElemKind::I64 | ElemKind::F64 | ElemKind::Bool => {}
        ElemKind::Handle => hot_handle_release(cell),
        ElemKind::Vec => hot_vec_release(cell),
        ElemKind::Str => hot_str_release(cell),
        ElemKind::Fn => crate::runtime::closure::hot_closure_release(cell),
    }
}

/// A vec's block: a reference count, its elements' kind and elements. `#[repr(C)]` with the
/// offsets [`VecBlock::REFS`], [`VecBlock::LEN`], [`VecBlock::DATA`] and [`VecBlock::CAP`],
/// which generated code reads to index a vec inline (`backend/jit/lower_value.rs`).
///
/// An element takes [`ElemKind::bytes`]: a bool one byte (0 or 1, packed as a bool array's
/// leaves are: a `vec<bool>` of a million flags is a megabyte), anything else an 8-byte cell.
/// The Rust API reads and takes elements as cells either way (a bool as 0 or 1).
///
/// The elements are atomics: generated code writes an element through a pointer it got from a
/// shared block reference (`hot_vec_at`, or `DATA` inline), which is sound only through
/// interior mutability. It writes only after making the block unique (its count is 1, so no
/// other owner, on any thread, reads it meanwhile); Rust reads them with relaxed loads.
#[repr(C)]
pub struct VecBlock {
    /// Owners: the cells that hold this block (1 = unique, a mutation may go in place).
    refs: AtomicUsize,
    /// The number of elements, kept for generated code.
    len: usize,
    /// The first element's address, kept for generated code (dangling when empty: never read
    /// then).
    data: *const u8,
    /// The buffer's capacity in elements, kept for generated code: a push with `len < cap` on
    /// a unique block writes the element at `data + bytes * len` and stores `len + 1` itself,
    /// and a pop with `len > 0` stores `len - 1` and takes that element
    /// (`backend/jit/lower_value.rs`).
    cap: usize,
    kind: ElemKind,
    /// The elements. Their `Vec`'s own length is behind `len` after generated code pushed or
    /// popped: Rust reads the first `len` through `data` ([`Self::load`]) and takes the `Vec`
    /// back through [`Self::items_mut`], which first sets its length to `len`.
    items: Elements,
}

/// The buffer of a vec's elements, by their size ([`ElemKind::bytes`]).
enum Elements {
    /// 8-byte cells.
    Cells(Vec<AtomicU64>),
    /// Bools, a byte each.
    Bytes(Vec<AtomicU8>),
}

impl Elements {
    /// The elements `items` (cells of `kind`) in a buffer of the kind's size.
    fn new(kind: ElemKind, items: Vec<u64>) -> Elements {
        match kind.bytes() {
            1 => Elements::Bytes(
                items
                    .into_iter()
                    .map(|c| AtomicU8::new(u8::from(c & 0xff != 0)))
                    .collect(),
            ),
            _ => Elements::Cells(items.into_iter().map(AtomicU64::new).collect()),
        }
    }

    fn as_ptr(&self) -> *const u8 {
        match self {
            Elements::Cells(v) => v.as_ptr().cast(),
            Elements::Bytes(v) => v.as_ptr().cast(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Elements::Cells(v) => v.len(),
            Elements::Bytes(v) => v.len(),
        }
    }

    fn capacity(&self) -> usize {
        match self {
            Elements::Cells(v) => v.capacity(),
            Elements::Bytes(v) => v.capacity(),
        }
    }

    /// # Safety
    /// As `Vec::set_len`: `n` at most the capacity, the first `n` elements initialized.
    unsafe fn set_len(&mut self, n: usize) {
        // SAFETY: the caller's contract.
        unsafe {
            match self {
                Elements::Cells(v) => v.set_len(n),
                Elements::Bytes(v) => v.set_len(n),
            }
        }
    }

    fn try_reserve(&mut self, n: usize) -> Result<(), TryReserveError> {
        match self {
            Elements::Cells(v) => v.try_reserve(n),
            Elements::Bytes(v) => v.try_reserve(n),
        }
    }

    /// Append the element of cell `c` (a bool's is 0 or 1).
    fn push(&mut self, c: u64) {
        match self {
            Elements::Cells(v) => v.push(AtomicU64::new(c)),
            Elements::Bytes(v) => v.push(AtomicU8::new(u8::from(c & 0xff != 0))),
        }
    }

    /// Take the last element as a cell.
    fn pop(&mut self) -> Option<u64> {
        match self {
            Elements::Cells(v) => v.pop().map(AtomicU64::into_inner),
            Elements::Bytes(v) => v.pop().map(|b| u64::from(b.into_inner())),
        }
    }
}

impl VecBlock {
    /// The bytes a push would allocate: 0 while there is room, else about the new buffer's
    /// size (it doubles).
    pub(crate) fn push_growth(&self) -> usize {
        if self.len == self.cap {
            // `Vec`'s first buffer: 8 elements of a byte, 4 of more.
            let first = if self.kind.bytes() == 1 { 8 } else { 4 };
            self.kind.bytes() * self.cap.max(first)
        } else {
            0
        }
    }
}

impl std::fmt::Debug for VecBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VecBlock")
            .field("kind", &self.kind)
            .field("items", &self.cells().collect::<Vec<_>>())
            .finish()
    }
}

impl VecBlock {
    /// Offset of the reference count (`usize`).
    pub const REFS: usize = std::mem::offset_of!(VecBlock, refs);
    /// Offset of the length in elements (`usize`).
    pub const LEN: usize = std::mem::offset_of!(VecBlock, len);
    /// Offset of the pointer to the first element.
    pub const DATA: usize = std::mem::offset_of!(VecBlock, data);
    /// Offset of the capacity in elements (`usize`).
    pub const CAP: usize = std::mem::offset_of!(VecBlock, cap);

    fn new(kind: ElemKind, items: Vec<u64>) -> VecBlock {
        VecBlock::of(kind, Elements::new(kind, items))
    }

    /// A block (one owner) of `items`, whose size must be `kind`'s.
    fn of(kind: ElemKind, items: Elements) -> VecBlock {
        count_blocks(1);
        let mut block = VecBlock {
            refs: AtomicUsize::new(1),
            len: 0,
            data: std::ptr::null(),
            cap: 0,
            kind,
            items,
        };
        block.sync();
        block
    }

    /// Mirror `items` into the fields generated code reads (after every change of `items`).
    fn sync(&mut self) {
        self.len = self.items.len();
        self.data = self.items.as_ptr();
        self.cap = self.items.capacity();
    }

    /// The elements' `Vec` with its length brought up to `len` (generated code's pushes and
    /// pops change `len` only), for a change made in Rust; [`Self::sync`] after it.
    fn items_mut(&mut self) -> &mut Elements {
        // SAFETY: `len <= cap == items.capacity()` (generated code pushes only below `cap`,
        // and `cap` is the buffer's capacity since the last `sync`); the elements below `len`
        // are initialized: those `items` had, and those generated code wrote before raising
        // `len` over them. Elements a pop left above `len` are plain integers (no drop): their
        // references moved out with the pop.
        unsafe { self.items.set_len(self.len) };
        &mut self.items
    }

    /// The address of element `i`, which must be below `len`.
    fn elem_ptr(&self, i: usize) -> *const u8 {
        debug_assert!(i < self.len);
        // SAFETY: `data` is the buffer of `items` and `i < len <= cap`: in bounds.
        unsafe { self.data.add(i * self.kind.bytes()) }
    }

    /// Element `i` (below `len`) as a cell.
    fn load(&self, i: usize) -> u64 {
        let at = self.elem_ptr(i);
        // SAFETY: `at` is an initialized element of the buffer (see `items_mut`) of the kind's
        // size and alignment, which `&self` keeps; it changes only through its own atomic.
        unsafe {
            match self.items {
                Elements::Bytes(_) => u64::from((*at.cast::<AtomicU8>()).load(Ordering::Relaxed)),
                Elements::Cells(_) => (*at.cast::<AtomicU64>()).load(Ordering::Relaxed),
            }
        }
    }

    /// The elements as cells, in order.
    pub fn cells(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        (0..self.len).map(|i| self.load(i))
    }

    /// Element `i` as a cell, if in range.
    pub fn cell(&self, i: usize) -> Option<u64> {
        (i < self.len).then(|| self.load(i))
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no elements (a block in a cell always has some: 0 is the empty vec).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// What the elements are.
    pub fn kind(&self) -> ElemKind {
        self.kind
    }
}

impl Clone for VecBlock {
    /// A copy (one owner) that owns its own reference to every element.
    fn clone(&self) -> VecBlock {
        let kind = self.kind;
        let items = match &self.items {
            // Plain elements, copied as they are.
            Elements::Bytes(_) => Elements::Bytes(
                (0..self.len)
                    .map(|i| AtomicU8::new(self.load(i) as u8))
                    .collect(),
            ),
            Elements::Cells(_) if !kind.owns() => Elements::Cells(
                (0..self.len)
                    .map(|i| AtomicU64::new(self.load(i)))
                    .collect(),
            ),
            Elements::Cells(_) => Elements::Cells(
                (0..self.len)
                    .map(|i| AtomicU64::new(retain_cell(kind, self.load(i))))
                    .collect(),
            ),
        };
        VecBlock::of(kind, items)
    }
}

impl Drop for VecBlock {
    fn drop(&mut self) {
        count_blocks(-1);
        // The buffer's `Vec` frees it (its elements are plain atomics); their references go
        // first, in order.
        self.items_mut();
        if self.kind.owns() {
            for i in 0..self.len {
                release_cell(self.kind, self.load(i));
            }
        }
    }
}

/// The block of a non-null vec cell, borrowed.
///
/// # Safety
/// `cell` must be 0 or own (or be borrowed from an owner of) a count of a live [`VecBlock`]
/// for `'a`.
pub unsafe fn vec_block<'a>(cell: u64) -> Option<&'a VecBlock> {
    // SAFETY: the caller's contract: a non-null cell points at a live block.
    (cell != 0).then(|| unsafe { &*(cell as *const VecBlock) })
}

/// A new vec cell owning `items` (each owning what its kind owns); 0 when empty.
pub fn vec_from_cells(kind: ElemKind, items: Vec<u64>) -> u64 {
    if items.is_empty() {
        return 0;
    }
    Box::into_raw(Box::new(VecBlock::new(kind, items))) as u64
}

/// For generated code: the block behind an array slot too large for the stack
/// (`backend/jit/lower_util.rs`, [`HEAP_SLOT_CELLS`](crate::lang::hir::HEAP_SLOT_CELLS)): a
/// vec cell of `cells` zero cells of plain kind, so releasing it frees the block and nothing
/// else. Raises `OutOfMemory` (at the function that needs it) when the job's limit or the
/// system refuses it.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_array_heap(cells: u64) -> u64 {
    let n = usize::try_from(cells).unwrap_or(usize::MAX);
    let bytes = n.saturating_mul(8);
    memory::ensure(bytes.saturating_add(std::mem::size_of::<VecBlock>()));
    let mut items: Vec<AtomicU64> = Vec::new();
    if items.try_reserve_exact(n).is_err() {
        memory::refuse(bytes, memory::Refused::System);
    }
    items.resize_with(n, || AtomicU64::new(0));
    let block = VecBlock::of(ElemKind::I64, Elements::Cells(items));
    Box::into_raw(Box::new(block)) as u64
}

/// Another count of a vec cell; returns the cell.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_vec_retain(cell: u64) -> u64 {
    // SAFETY: a non-null vec cell the caller holds owns a count of a live block.
    if let Some(block) = unsafe { vec_block(cell) } {
        // Relaxed, as `Arc::clone`: the caller's own count keeps the block alive.
        block.refs.fetch_add(1, Ordering::Relaxed);
    }
    cell
}

/// Release a count of a vec cell (its elements go with the last).
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_vec_release(cell: u64) {
    // SAFETY: the caller gives up the count its cell owns; the block lives until then.
    let Some(block) = (unsafe { vec_block(cell) }) else {
        return;
    };
    // Release, then acquire on the last, as `Arc`'s drop: every owner's use of the block
    // happens before it is freed.
    if block.refs.fetch_sub(1, Ordering::Release) == 1 {
        std::sync::atomic::fence(Ordering::Acquire);
        // SAFETY: the last count went: no cell refers to the block; it came from `Box`.
        drop(unsafe { Box::from_raw(cell as *mut VecBlock) });
    }
}

/// Make the vec in `cell` (owned, given up) unique before a mutation: the same block when no
/// other cell shares it, else a copy; a fresh empty block for 0. Returns the owned result.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_vec_unique(cell: u64, kind: u64) -> u64 {
    let kind = ElemKind::code_or_abort(kind);
    // SAFETY: the caller hands over the count its cell owns.
    match unsafe { vec_block(cell) } {
        None => {
            memory::ensure(std::mem::size_of::<VecBlock>());
            Box::into_raw(Box::new(VecBlock::new(kind, Vec::new()))) as u64
        }
        // Acquire, as `Arc::make_mut`: another owner's last use happens before our writes.
        Some(block) if block.refs.load(Ordering::Acquire) == 1 => cell,
        Some(block) => {
            memory::ensure(std::mem::size_of::<VecBlock>() + block.kind.bytes() * block.len());
            let copy = Box::into_raw(Box::new(block.clone())) as u64;
            hot_vec_release(cell);
            copy
        }
    }
}

/// The block of a unique vec cell (from [`hot_vec_unique`]), mutably.
///
/// # Safety
/// `cell` must come from `hot_vec_unique` with no copy of it made since.
unsafe fn unique_block<'a>(cell: u64) -> &'a mut VecBlock {
    // SAFETY: the caller's contract: this cell is the block's only owner.
    unsafe { &mut *(cell as *mut VecBlock) }
}

/// `v.push(item)` on a unique vec (from [`hot_vec_unique`]); the item's reference moves in.
///
/// # Safety
/// `cell` must be unique (see [`hot_vec_unique`]) and `item` a cell of the vec's kind.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn hot_vec_push(cell: u64, item: u64) {
    // SAFETY: the caller's contract.
    let block = unsafe { unique_block(cell) };
    let grow = block.push_growth();
    if grow != 0 {
        // Growing: the new buffer must fit the job's memory limit (`runtime::memory`). The item
        // is ours (its reference moved in): released before the raise, or nobody would.
        let refused = match memory::room(grow) {
            Err(why) => Some(why),
            Ok(()) => block
                .items_mut()
                .try_reserve(1)
                .err()
                .map(|_| memory::Refused::System),
        };
        if let Some(why) = refused {
            release_cell(block.kind, item);
            memory::refuse(grow, why);
        }
    }
    block.items_mut().push(item);
    block.sync();
}

/// `v.pop()` on a unique vec: the last element (its reference moves out), or a raised "pop from
/// an empty vec" at `start..end`.
///
/// # Safety
/// `cell` must be unique (see [`hot_vec_unique`]).
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn hot_vec_pop(cell: u64, start: u32, end: u32) -> u64 {
    // SAFETY: the caller's contract.
    let block = unsafe { unique_block(cell) };
    let item = block.items_mut().pop();
    block.sync();
    match item {
        Some(item) => item,
        None => ScriptError::new(ScriptErrorKind::PopEmpty, Span { start, end }).raise(),
    }
}

/// The address of element `index` of a vec (a byte's in a `vec<bool>`, see
/// [`ElemKind::bytes`]), or a raised "index out of range" at `start..end`. Valid until the vec
/// is next mutated or released.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_vec_at(cell: u64, index: i64, start: u32, end: u32) -> *mut u8 {
    // SAFETY: generated code passes a vec cell it holds a count through.
    let block = unsafe { vec_block(cell) };
    let len = block.map_or(0, |b| b.len());
    match block {
        // An atomic element's own address: writing through it is interior mutation, which the
        // caller does only after making the vec unique (`hot_vec_unique`).
        Some(b) if index >= 0 && (index as u64) < len as u64 => {
            b.elem_ptr(index as usize).cast_mut()
        }
        _ => ScriptError::new(
            ScriptErrorKind::IndexOutOfRange {
                index,
                len: len as i64,
            },
            Span { start, end },
        )
        .raise(),
    }
}

/// `v.len()`.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_vec_len(cell: u64) -> i64 {
    // SAFETY: generated code passes a vec cell it holds a count through.
    unsafe { vec_block(cell) }.map_or(0, |b| b.len() as i64)
}

// ---- strings ----

/// The text of a str cell, borrowed.
///
/// # Safety
/// `cell` must be 0 or own (or be borrowed from an owner of) a count of a live string block
/// for `'a`.
pub unsafe fn str_text<'a>(cell: u64) -> &'a str {
    // SAFETY: the caller's contract.
    unsafe { str_block::text(cell) }
}

/// A new str cell with `text` (0 when empty).
pub fn str_from(text: String) -> u64 {
    str_block::str_of(&text)
}

/// Another count of a str cell; returns the cell.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_str_retain(cell: u64) -> u64 {
    str_block::retain(cell)
}

/// Release a count of a str cell.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_str_release(cell: u64) {
    str_block::release(cell)
}

/// A string literal: `len` bytes of UTF-8 at `bytes` (in the program's data), as a new cell.
///
/// # Safety
/// `bytes` must point at `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn hot_str_lit(bytes: *const u8, len: u64) -> u64 {
    if len == 0 {
        return 0;
    }
    // SAFETY: the caller's contract.
    let bytes = unsafe { std::slice::from_raw_parts(bytes, len as usize) };
    match std::str::from_utf8(bytes) {
        Ok(text) => str_block::str_of(text),
        Err(_) => str_block::str_of(&String::from_utf8_lossy(bytes)),
    }
}

/// `a + b`: a new string (both operands borrowed).
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_str_concat(a: u64, b: u64) -> u64 {
    // SAFETY: generated code passes cells it holds counts through.
    let (a, b) = unsafe { (str_text(a), str_text(b)) };
    str_block::str_with(a.len() + b.len(), |out| {
        out[..a.len()].copy_from_slice(a.as_bytes());
        out[a.len()..].copy_from_slice(b.as_bytes());
    })
}

/// `a += b` for a string variable that owns its count and that nothing borrows from: takes
/// `a`'s count, returns the joined string's (`b` borrowed); appends in place when it can
/// ([`str_block`]'s module docs).
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_str_append(a: u64, b: u64) -> u64 {
    str_block::append(a, b)
}

/// A part of an interpolation for [`hot_str_build`]: three cells, `(tag, a, b)`.
pub mod str_part {
    /// `a`: the address of `b` bytes of UTF-8 (a literal in the program's data).
    pub const BYTES: u64 = 0;
    /// `a`: an `i64`, shown in decimal.
    pub const I64: u64 = 1;
    /// `a`: an `f64`'s bits, shown as `"${x}"` shows it.
    pub const F64: u64 = 2;
    /// `a`: a `bool` (0 or 1).
    pub const BOOL: u64 = 3;
    /// `a`: a str cell (borrowed).
    pub const STR: u64 = 4;
}

/// An interpolation `"a${x}b${s}"`, or any chain of `+` of strings, joined at once: `n`
/// parts of three cells each ([`str_part`]) at `parts`, made into one new string with one
/// allocation (`a + x.to_str() + b + s` would make one per part and per `+`).
///
/// # Safety
/// `parts` must point at `3 * n` cells as [`str_part`] describes, whose byte parts are
/// readable and whose str cells are held by the caller.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn hot_str_build(parts: *const u64, n: u64) -> u64 {
    // SAFETY: the caller's contract.
    let parts = unsafe { std::slice::from_raw_parts(parts, 3 * n as usize) };
    let mut floats: Vec<String> = Vec::new();
    let mut digits = [0u8; 20];
    let mut len = 0;
    for p in parts.chunks_exact(3) {
        len += match p[0] {
            str_part::BYTES => p[2] as usize,
            str_part::I64 => str_block::i64_digits(p[1] as i64, &mut digits).len(),
            str_part::F64 => {
                floats.push(format_f64(f64::from_bits(p[1])));
                floats.last().map_or(0, String::len)
            }
            str_part::BOOL if p[1] != 0 => 4,
            str_part::BOOL => 5,
            // SAFETY: the caller holds the cell.
            _ => unsafe { str_text(p[1]) }.len(),
        };
    }
    let mut floats = floats.iter();
    str_block::str_with(len, |out| {
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            out[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        for p in parts.chunks_exact(3) {
            match p[0] {
                str_part::BYTES => {
                    // SAFETY: the caller's contract: `p[2]` readable bytes of UTF-8.
                    put(unsafe { std::slice::from_raw_parts(p[1] as *const u8, p[2] as usize) })
                }
                str_part::I64 => put(str_block::i64_digits(p[1] as i64, &mut digits)),
                str_part::F64 => put(floats.next().map_or(&[][..], |f| f.as_bytes())),
                str_part::BOOL if p[1] != 0 => put(b"true"),
                str_part::BOOL => put(b"false"),
                // SAFETY: the caller holds the cell.
                _ => put(unsafe { str_text(p[1]) }.as_bytes()),
            }
        }
    })
}

/// `a == b`: the same text.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_str_eq(a: u64, b: u64) -> i8 {
    // SAFETY: generated code passes cells it holds counts through.
    i8::from(a == b || unsafe { str_text(a) == str_text(b) })
}

/// `s.len()`: the length in bytes (UTF-8).
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_str_len(a: u64) -> i64 {
    // SAFETY: generated code passes a cell it holds a count through.
    unsafe { str_text(a) }.len() as i64
}

/// `"${x}"` of an `i64`.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_str_of_i64(x: i64) -> u64 {
    let mut digits = [0u8; 20];
    let digits = str_block::i64_digits(x, &mut digits);
    str_block::str_with(digits.len(), |out| out.copy_from_slice(digits))
}

/// `"${x}"` of an `f64`.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_str_of_f64(x: f64) -> u64 {
    str_block::str_of(&format_f64(x))
}

/// `"${b}"` of a `bool`.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_str_of_bool(b: i8) -> u64 {
    str_block::str_of(if b != 0 { "true" } else { "false" })
}

/// `"${h}"` of a handle: `null`, or `<Class>` (the object's class, also when destroyed).
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_str_of_handle(cell: u64) -> u64 {
    str_of_cell(ElemKind::Handle, cell)
}

/// A new string block holding how the cell is shown (`"${x}"` of a handle, vec or closure).
pub(crate) fn str_of_cell(kind: ElemKind, cell: u64) -> u64 {
    let mut s = String::new();
    format_cell(kind, cell, &mut s);
    str_from(s)
}

/// `"${v}"` of a vec of elements of kind `kind`: `[a, b]`, strings quoted.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_str_of_vec(cell: u64) -> u64 {
    str_of_cell(ElemKind::Vec, cell)
}

/// Rust's `{:?}` of an `f64` (`1.0`, `NaN`, `inf`, `1e300`): how every backend shows one.
pub fn format_f64(x: f64) -> String {
    format!("{x:?}")
}

/// Append how a cell of kind `kind` is shown inside a string (nested strings quoted).
pub fn format_cell(kind: ElemKind, cell: u64, out: &mut String) {
    match kind {
        ElemKind::I64 => {
            let _ = write!(out, "{}", cell as i64);
        }
        ElemKind::F64 => out.push_str(&format_f64(f64::from_bits(cell))),
        ElemKind::Bool => out.push_str(if cell & 0xff != 0 { "true" } else { "false" }),
        ElemKind::Handle => match Handle::cell_object(cell) {
            None => out.push_str("null"),
            Some(obj) => {
                // SAFETY: a non-null handle cell owns a reference: the shell (and its class,
                // kept for the runtime's life) is allocated.
                let name = unsafe { &*obj }.class().name();
                let _ = write!(out, "<{name}>");
            }
        },
        ElemKind::Str => {
            // SAFETY: the caller holds the cell's count.
            let text = unsafe { str_text(cell) };
            // Shown quoted: its bytes and two quotes (escapes grow it a little more).
            memory::reserve_text(out, text.len() + 2);
            let _ = write!(out, "{text:?}");
        }
        ElemKind::Vec => {
            out.push('[');
            // SAFETY: the caller holds the cell's count.
            if let Some(block) = unsafe { vec_block(cell) } {
                for (i, c) in block.cells().enumerate() {
                    // A vec of many elements is a long text: its growth must fit the budget.
                    memory::reserve_text(out, 24);
                    if i > 0 {
                        out.push_str(", ");
                    }
                    format_cell(block.kind, c, out);
                }
            }
            out.push(']');
        }
        ElemKind::Fn => crate::runtime::closure::format_closure(cell, out),
    }
}

/// The helpers generated code imports for vecs and strings: `(symbol, address)`.
pub fn helper_symbols() -> [(&'static str, *const u8); 24] {
    [
        ("hot_array_heap", hot_array_heap as *const u8),
        ("hot_vec_retain", hot_vec_retain as *const u8),
        ("hot_vec_release", hot_vec_release as *const u8),
        ("hot_vec_unique", hot_vec_unique as *const u8),
        ("hot_vec_push", hot_vec_push as *const u8),
        ("hot_vec_pop", hot_vec_pop as *const u8),
        ("hot_vec_at", hot_vec_at as *const u8),
        ("hot_vec_len", hot_vec_len as *const u8),
        ("hot_str_retain", hot_str_retain as *const u8),
        ("hot_str_release", hot_str_release as *const u8),
        ("hot_str_lit", hot_str_lit as *const u8),
        ("hot_str_concat", hot_str_concat as *const u8),
        ("hot_str_append", hot_str_append as *const u8),
        ("hot_str_build", hot_str_build as *const u8),
        ("hot_str_eq", hot_str_eq as *const u8),
        ("hot_str_len", hot_str_len as *const u8),
        ("hot_str_of_i64", hot_str_of_i64 as *const u8),
        ("hot_str_of_f64", hot_str_of_f64 as *const u8),
        ("hot_str_of_bool", hot_str_of_bool as *const u8),
        ("hot_str_of_handle", hot_str_of_handle as *const u8),
        ("hot_str_of_vec", hot_str_of_vec as *const u8),
        ("hot_str_of_array", arrays::hot_str_of_array as *const u8),
        ("hot_array_box", arrays::hot_array_box as *const u8),
        ("hot_array_unbox", arrays::hot_array_unbox as *const u8),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_on_write_keeps_the_shared_copy() {
        let before = live_blocks();
        let a = hot_vec_unique(0, ElemKind::I64 as u64);
        // SAFETY: `a` is unique.
        unsafe { hot_vec_push(a, 7) };
        let b = hot_vec_retain(a);
        let b = hot_vec_unique(b, ElemKind::I64 as u64);
        assert_ne!(a, b, "a shared block is copied before a mutation");
        // SAFETY: `b` is unique.
        unsafe { hot_vec_push(b, 8) };
        assert_eq!((hot_vec_len(a), hot_vec_len(b)), (1, 2));
        hot_vec_release(a);
        hot_vec_release(b);
        assert_eq!(live_blocks(), before);
    }

    #[test]
    fn nested_values_are_shown_and_freed() {
        let before = live_blocks();
        let s = str_from("a\"b".to_string());
        let inner = vec_from_cells(ElemKind::Str, vec![s, 0]);
        let outer = vec_from_cells(ElemKind::Vec, vec![inner, 0]);
        let mut out = String::new();
        format_cell(ElemKind::Vec, outer, &mut out);
        assert_eq!(out, r#"[["a\"b", ""], []]"#);
        hot_vec_release(outer);
        assert_eq!(live_blocks(), before);
    }
}
