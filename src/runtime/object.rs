//! Script objects: the shell the host holds and calls, and the state block a reload replaces.
//!
//! A shell is a 72-byte `#[repr(C)]` struct (offsets below) that lives while any handle refers
//! to it. Its state block is one header word (the [`Version`] it was built with, so it can always
//! be dropped correctly) followed by one 8-byte cell per field; [`Object::STATE`] points at the
//! first cell. `new` makes both in **one allocation**, the state block right after the shell
//! (its header marked [`EMBEDDED`]); a reload replaces it with a block of its own, and the
//! embedded one's memory then stays unused until the shell goes. Releasing the last reference
//! drops the state (releasing the handles in its fields, iteratively: a long chain cannot
//! overflow the stack), takes the shell off its class's live list and frees it.

use std::alloc::{self, Layout};
use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

use crate::lang::span::Span;
use crate::runtime::border::{Fault, catch_cold};
use crate::runtime::class::{CellKind, Class, DETACHED_KEY, Init, Version};
#[cfg(feature = "thread-safe")]
use crate::runtime::counts::CountOwner;
use crate::runtime::error::{ScriptError, ScriptErrorKind};
use crate::runtime::handle::{ADDR_BITS, Handle};
use crate::runtime::spin::ClassGuard;
use crate::runtime::values;

/// Slots whose code a shell binds at creation (the `Bound` terminal of the call path calls these
/// without reading the class's table). Host-interface methods take the first slots.
pub const BOUND_SLOTS: usize = 2;

/// Bit 0 of a state block's header word: the block lies inside its shell's allocation (the one
/// `new` made), so dropping it frees no memory of its own. The rest of the word is the
/// [`Version`] (aligned to 8, so bit 0 is free).
pub(crate) const EMBEDDED: u64 = 1;

/// The version a state block's header word names.
#[inline(always)]
fn header_version(word: u64) -> *const Version {
    (word & !EMBEDDED) as *const Version
}

/// Not on the live list (destroyed, detached, unloaded, or being freed).
pub(crate) const NOT_LISTED: u32 = u32::MAX;

/// A reference count: atomic with `thread-safe`, a plain `Cell` (and so `!Sync`) without.
#[cfg(feature = "thread-safe")]
pub(crate) type RefCount = std::sync::atomic::AtomicUsize;
/// A reference count: atomic with `thread-safe`, a plain `Cell` (and so `!Sync`) without.
#[cfg(not(feature = "thread-safe"))]
pub(crate) type RefCount = std::cell::Cell<usize>;

/// The bit of [`Object`]'s handle word set when the object is detached (with
/// [`DETACHED_KEY`] in its key): bit 0, which no handle cell has (a shell's address is a
/// multiple of 8), so one compare of a cell with the word tests both that the handle is current
/// and that the object is attached (`backend/jit/lower_region.rs`, `branch_if_invalid`).
pub const WORD_DETACHED: u64 = 1;

/// One generation in the handle word, whose high 16 bits are the generation (a handle's tag).
pub(crate) const WORD_GENERATION: u64 = 1 << ADDR_BITS;

/// The shell of a script object.
#[repr(C)]
pub struct Object {
    /// The slot key: equal to the class's entry word while attached and no reload is pending;
    /// [`DETACHED_KEY`] once detached, destroyed or unloaded.
    pub(crate) key: AtomicU64,
    /// The first cell of the state block (null after an unload or a collect of a destroyed
    /// object).
    pub(crate) state: AtomicPtr<u64>,
    /// The class (kept alive by its runtime while any shell exists: see `Runtime`'s drop).
    pub(crate) class: *const Class,
    /// The class's `vmctx`, bound at creation (for the `Bound` path, which reads no class data).
    pub(crate) bound_vmctx: AtomicPtr<c_void>,
    /// The code of slots `0..BOUND_SLOTS`, bound at creation and rebound by reload.
    pub(crate) bound: [AtomicPtr<c_void>; BOUND_SLOTS],
    /// Strong references (handles, including handle cells in fields).
    pub(crate) refs: RefCount,
    /// The handle word: the cell of a current handle to this object, the shell's address in
    /// the low 48 bits and the generation in the high 16 (a handle is made for one generation:
    /// its tag); destroy bumps the generation. [`WORD_DETACHED`] is set on top once the object
    /// is detached (destroyed, detached or unloaded), with the key: generated code then tests a
    /// handle's generation and attachment with one compare of the cell with the word (`cmp
    /// cell,[shell+38h]`), and a method's `self` handle is the word with bit 0 cleared.
    pub(crate) word: AtomicU64,
    /// Index in the class's live list, or [`NOT_LISTED`]. Written under the class lock.
    pub(crate) live_index: AtomicU32,
}

#[cfg(feature = "thread-safe")]
// SAFETY: every field is atomic or immutable after creation (`class`); the state block is reached
// only through the call path, whose entry protocol keeps a reload from replacing it under a call.
unsafe impl Sync for Object {}
#[cfg(feature = "thread-safe")]
// SAFETY: as above.
unsafe impl Send for Object {}

/// A class's live objects and its shell count, under the class lock.
#[derive(Default)]
pub struct LiveList {
    pub(crate) objects: Vec<*const Object>,
    pub(crate) shells: usize,
}

// SAFETY: the pointers are shells that stay allocated while listed (freeing unlists first, under
// the lock), and they are only dereferenced by the runtime under the rules above.
unsafe impl Send for LiveList {}

impl LiveList {
    pub(crate) fn insert(&mut self, obj: &Object) {
        obj.live_index
            .store(self.objects.len() as u32, Ordering::Relaxed);
        self.objects.push(obj);
    }

    /// Take `obj` off the list if it is on it (swap-remove: O(1)). Returns whether it was.
    pub(crate) fn remove(&mut self, obj: &Object) -> bool {
        // The index is written under the class lock, which the caller holds: a plain load and
        // store (a swap would be a locked instruction, the cost of a second lock on `free`).
        let i = obj.live_index.load(Ordering::Relaxed);
        if i == NOT_LISTED {
            return false;
        }
        obj.live_index.store(NOT_LISTED, Ordering::Relaxed);
        self.objects.swap_remove(i as usize);
        if let Some(&moved) = self.objects.get(i as usize) {
            // SAFETY: listed pointers are live shells (see the `Send` impl).
            unsafe { &*moved }.live_index.store(i, Ordering::Relaxed);
        }
        true
    }
}

impl Object {
    /// Offset of the slot key.
    pub const KEY: usize = std::mem::offset_of!(Object, key);
    /// Offset of the state pointer (generated code: `state = load.i64 [this+STATE]`, then field
    /// `i` at `[state + 8*i]`).
    pub const STATE: usize = std::mem::offset_of!(Object, state);
    /// Offset of the class pointer.
    pub const CLASS: usize = std::mem::offset_of!(Object, class);
    /// Offset of the bound `vmctx`.
    pub const BOUND_VMCTX: usize = std::mem::offset_of!(Object, bound_vmctx);
    /// Offset of the bound code pointers.
    pub const BOUND: usize = std::mem::offset_of!(Object, bound);
    /// Offset of the handle word.
    pub const WORD: usize = std::mem::offset_of!(Object, word);
    /// Offset of the reference count (a `usize`; generated code changes it with plain
    /// instructions on the thread that owns the runtime and atomic ones elsewhere, as
    /// `runtime::counts` says; atomic ones are also right for the `Cell` of a build without
    /// `thread-safe`).
    pub const REFS: usize = std::mem::offset_of!(Object, refs);
    /// Offset of the first field cell of an object of an inline class (a fixed runtime's): the
    /// shell, then the state block's header word, then the cells, in one allocation. Field `i`
    /// is at `[this + INLINE_CELLS + 8*i]`, and `[this + STATE]` points there too.
    pub const INLINE_CELLS: usize = std::mem::size_of::<Object>() + 8;

    /// The object's class.
    #[inline(always)]
    pub fn class(&self) -> &Class {
        // SAFETY: a shell's class outlives it (the runtime leaks a class that still has shells
        // rather than free it).
        unsafe { &*self.class }
    }

    /// The slot key now.
    #[inline(always)]
    pub fn key(&self) -> u64 {
        self.key.load(Ordering::Relaxed)
    }

    /// True while attached (not detached, destroyed or unloaded).
    pub fn is_attached(&self) -> bool {
        self.key() != DETACHED_KEY
    }

    /// The state block's cells (null after an unload or collect).
    #[inline(always)]
    pub fn state_ptr(&self) -> *mut u64 {
        self.state.load(Ordering::Acquire)
    }

    /// The version the state block was built with.
    pub fn state_version(&self) -> Option<&Version> {
        let state = self.state_ptr();
        // SAFETY: a non-null state has its header word one cell before the first cell, holding
        // a version the class keeps for its whole life.
        (!state.is_null()).then(|| unsafe { &*header_version(*state.sub(1)) })
    }

    /// The generation handles to this object carry (the handle word's high 16 bits).
    #[inline(always)]
    pub fn generation(&self) -> u32 {
        (self.word.load(Ordering::Acquire) >> ADDR_BITS) as u32
    }

    /// The cell of a current handle to this object (the handle word without
    /// [`WORD_DETACHED`]).
    #[inline(always)]
    pub(crate) fn handle_cell(&self) -> u64 {
        self.word.load(Ordering::Acquire) & !WORD_DETACHED
    }

    /// Make every handle to this object stale: the next generation in the handle word, if the
    /// word still names generation `from` (`false`: another destroy came first). A detach on
    /// another thread may set [`WORD_DETACHED`] meanwhile; that leaves the generation as it is.
    pub(crate) fn bump_generation(&self, from: Option<u32>) -> bool {
        self.word
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                from.is_none_or(|g| (w >> ADDR_BITS) as u32 == g)
                    .then_some(w.wrapping_add(WORD_GENERATION))
            })
            .is_ok()
    }

    /// Mark the object detached in its handle word ([`WORD_DETACHED`]), as its key is.
    pub(crate) fn mark_detached(&self) {
        // The rule generated code's one compare relies on: the bit only ever with the key
        // cleared (so the cold path, which reads the key, agrees that the object is detached).
        debug_assert_eq!(self.key(), DETACHED_KEY, "marked detached with a key");
        self.word.fetch_or(WORD_DETACHED, Ordering::AcqRel);
    }

    /// Take a reference: a plain add on the thread that owns the class's runtime, an atomic
    /// one elsewhere (`runtime::counts`).
    #[cfg(feature = "thread-safe")]
    #[inline(always)]
    pub(crate) fn retain(&self) {
        let refs = &self.refs;
        CountOwner::change(
            &self.class().counts,
            || {
                refs.store(
                    refs.load(Ordering::Relaxed).wrapping_add(1),
                    Ordering::Relaxed,
                )
            },
            || {
                refs.fetch_add(1, Ordering::Relaxed);
            },
        )
    }
    #[cfg(not(feature = "thread-safe"))]
    #[inline(always)]
    pub(crate) fn retain(&self) {
        self.refs.set(self.refs.get() + 1);
    }

    /// Take a reference unless the count already reached zero (the object is being freed).
    #[cfg(feature = "thread-safe")]
    pub(crate) fn try_retain(&self) -> bool {
        let refs = &self.refs;
        let plain = || {
            let n = refs.load(Ordering::Relaxed);
            if n != 0 {
                refs.store(n + 1, Ordering::Relaxed);
            }
            n != 0
        };
        let atomic = || {
            let mut n = refs.load(Ordering::Relaxed);
            while n != 0 {
                match refs.compare_exchange_weak(n, n + 1, Ordering::Acquire, Ordering::Relaxed) {
                    Ok(_) => return true,
                    Err(m) => n = m,
                }
            }
            false
        };
        CountOwner::change(&self.class().counts, plain, atomic)
    }
    #[cfg(not(feature = "thread-safe"))]
    pub(crate) fn try_retain(&self) -> bool {
        let n = self.refs.get();
        if n != 0 {
            self.refs.set(n + 1);
        }
        n != 0
    }

    /// Drop one reference; true if it was the last.
    #[cfg(feature = "thread-safe")]
    #[inline(always)]
    fn unref(&self) -> bool {
        let refs = &self.refs;
        let plain = || {
            let n = refs.load(Ordering::Relaxed);
            refs.store(n.wrapping_sub(1), Ordering::Relaxed);
            n == 1
        };
        let atomic = || {
            if refs.fetch_sub(1, Ordering::Release) == 1 {
                std::sync::atomic::fence(Ordering::Acquire);
                return true;
            }
            false
        };
        CountOwner::change(&self.class().counts, plain, atomic)
    }
    #[cfg(not(feature = "thread-safe"))]
    #[inline(always)]
    fn unref(&self) -> bool {
        let n = self.refs.get() - 1;
        self.refs.set(n);
        n == 0
    }

    /// Strong references now (handles and handle cells).
    #[cfg(feature = "thread-safe")]
    pub fn ref_count(&self) -> usize {
        self.refs.load(Ordering::Relaxed)
    }
    /// Strong references now (handles and handle cells).
    #[cfg(not(feature = "thread-safe"))]
    pub fn ref_count(&self) -> usize {
        self.refs.get()
    }
}

/// Make an object of `class`: shell + state block with every initializer run, on the live list,
/// in one allocation (see [`new_block`]). An initializer that raises leaves nothing behind (the
/// cells made so far are dropped).
pub(crate) fn new_object(class: &Class) -> Result<Handle, Fault> {
    if class.inline {
        return new_inline_object(class);
    }
    loop {
        let version = class.version_ptr();
        // SAFETY: the class keeps every version alive.
        let shell = new_block(class, unsafe { &*version })?;
        let live = class.live.lock();
        if class.version_ptr() != version {
            // A reload installed a new layout while the state was built: build again. (Never
            // for an inline class: a fixed runtime refuses reload.)
            drop(live);
            // SAFETY: made above and never shared.
            unsafe { free_block(shell) };
            continue;
        }
        return Ok(list_shell(class, shell, live));
    }
}

/// [`new_object`] of an inline class (a fixed runtime's): never reloaded, so no layout can
/// change under `new`, and no list to join. Also called by jit-opt's `new` helper
/// (`hot_object_new_fixed`) directly, so [`new_object`] keeps its one caller.
#[inline(always)]
pub(crate) fn new_inline_object(class: &Class) -> Result<Handle, Fault> {
    let shell = new_block(class, class.version())?;
    Ok(attach_unlisted(class, shell))
}

/// Allocate an object's memory: the one allocation site of the runtime's objects (shells with
/// their first state block, and the state blocks reloads build).
#[inline(always)]
pub(crate) fn alloc_object_memory(layout: Layout) -> *mut u8 {
    // SAFETY: every layout used here has a non-zero size (at least a header word).
    let block = unsafe { alloc::alloc(layout) };
    if block.is_null() {
        alloc::handle_alloc_error(layout);
    }
    block
}

/// Freed object blocks kept by each thread for its next `new` of the same size.
///
/// A program that makes and frees many objects (a tree built and dropped, a packet per
/// message) spends much of `new` and free in the global allocator, whose free lists for a
/// size hold only a few blocks per thread before the slower paths run. Each thread keeps up to
/// [`POOL_BLOCKS`] freed blocks per field count (objects of up to [`POOL_FIELDS`] fields, at
/// most [`POOL_BYTES`] in all), handed out again by [`alloc_object_block`]; a block freed on
/// another thread than the one that made it joins that thread's pool. The blocks are the global
/// allocator's, of [`object_layout`]; a thread's pool gives them back when the thread ends.
mod pool {
    use std::alloc;
    #[cfg(test)]
    use std::alloc::Layout;
    use std::cell::RefCell;

    /// Field counts pooled: `0..POOL_FIELDS`.
    pub(super) const POOL_FIELDS: usize = 16;
    /// Blocks kept per field count.
    pub(super) const POOL_BLOCKS: usize = 1024;
    /// Bytes kept per thread, at most.
    pub(super) const POOL_BYTES: usize = 1 << 20;

    pub(super) struct Pool {
        free: [Vec<*mut u8>; POOL_FIELDS],
        bytes: usize,
    }

    impl Drop for Pool {
        fn drop(&mut self) {
            for (fields, list) in self.free.iter_mut().enumerate() {
                let layout = super::object_layout(fields);
                for block in list.drain(..) {
                    // SAFETY: every pooled block was allocated by the global allocator with
                    // its field count's layout and is owned by the pool alone.
                    unsafe { alloc::dealloc(block, layout) };
                }
            }
        }
    }

    thread_local! {
        static POOL: RefCell<Pool> = const {
            RefCell::new(Pool {
                free: [const { Vec::new() }; POOL_FIELDS],
                bytes: 0,
            })
        };
    }

    /// A pooled block for an object of `fields` fields, if this thread has one.
    #[inline]
    pub(super) fn take(fields: usize) -> Option<*mut u8> {
        if fields >= POOL_FIELDS {
            return None;
        }
        // `try_with`: a thread being torn down has no pool (the allocator serves it).
        POOL.try_with(|p| {
            let mut p = p.borrow_mut();
            let block = p.free[fields].pop()?;
            p.bytes -= super::object_layout(fields).size();
            Some(block)
        })
        .ok()
        .flatten()
    }

    /// Keep `block` (an object's of `fields` fields, of its layout) for a later `new`: false
    /// when the pool is full (the caller frees it).
    #[inline]
    pub(super) fn give(block: *mut u8, fields: usize) -> bool {
        if fields >= POOL_FIELDS {
            return false;
        }
        let size = super::object_layout(fields).size();
        POOL.try_with(|p| {
            let mut p = p.borrow_mut();
            if p.free[fields].len() >= POOL_BLOCKS || p.bytes + size > POOL_BYTES {
                return false;
            }
            p.free[fields].push(block);
            p.bytes += size;
            true
        })
        .unwrap_or(false)
    }

    /// Blocks this thread keeps for objects of `fields` fields (tests).
    #[cfg(test)]
    pub(super) fn kept(fields: usize) -> usize {
        POOL.with(|p| p.borrow().free.get(fields).map_or(0, Vec::len))
    }

    /// The layout a pooled block was made with (tests).
    #[cfg(test)]
    pub(super) fn layout(fields: usize) -> Layout {
        super::object_layout(fields)
    }
}

/// The memory of an object of `fields` fields (shell, header word, cells; [`object_layout`]):
/// a block this thread freed before, else a new one from the allocator (see [`pool`]).
#[inline(always)]
pub(crate) fn alloc_object_block(fields: usize) -> *mut u8 {
    match pool::take(fields) {
        Some(block) => block,
        None => alloc_object_memory(object_layout(fields)),
    }
}

/// Give back the memory of an object of `fields` fields, from [`alloc_object_block`].
///
/// # Safety
/// `block` must come from [`alloc_object_block`] with the same `fields`, and not be used after.
#[inline(always)]
pub(crate) unsafe fn free_object_block(block: *mut u8, fields: usize) {
    if !pool::give(block, fields) {
        // SAFETY: the caller's contract: a global-allocator block of this layout.
        unsafe { alloc::dealloc(block, object_layout(fields)) };
    }
}

/// Whether `bytes` more fit the job's memory limit (`runtime::memory`), as a fault the caller
/// returns: `OutOfMemory` at the operation that raises it (the span is filled in there).
fn room_for(bytes: usize) -> Result<(), Fault> {
    super::memory::room(bytes).map_err(|why| {
        Box::new(ScriptError::new(
            ScriptErrorKind::out_of_memory(why),
            Span::UNKNOWN,
        ))
    })
}

/// `new`'s allocation: the shell, then the state block's header word (marked [`EMBEDDED`]),
/// then its cells with every initializer run; not attached or listed yet.
#[inline]
pub(crate) fn new_block(class: &Class, version: &Version) -> Result<*mut Object, Fault> {
    let fields = version.fields.len();
    let block = match pool::take(fields) {
        Some(block) => block,
        None => {
            // New memory (a block from the pool is not: the heap holds it already) must fit
            // the job's memory limit (`runtime::memory`).
            let layout = object_layout(fields);
            room_for(layout.size())?;
            alloc_object_memory(layout)
        }
    };
    let shell = block as *mut Object;
    // SAFETY: the header word and cells follow the shell inside the block.
    let header = unsafe { block.add(Object::INLINE_CELLS - 8) } as *mut u64;
    if let Some(bits) = &version.plain_init {
        // The common class (every initializer fixed bits) without the call of `fill_state`,
        // whose prologue and epilogue cost as much as its stores: the header word, the cells.
        // SAFETY: the header and `fields` cells (`bits.len()`) follow the shell in the block;
        // the version's words are not in it.
        unsafe {
            header.write(version as *const Version as u64 | EMBEDDED);
            copy_cells(bits, header.add(1));
            init_shell(shell, class, header.add(1));
        }
        return Ok(shell);
    }
    if let Err(e) = fill_state(version, class.vmctx(), &[], header, true) {
        // SAFETY: made above for `fields` fields; nothing else saw it (the cells made so far
        // were dropped by `fill_state`).
        unsafe { free_object_block(block, fields) };
        return Err(e);
    }
    // SAFETY: the cells start one word after the header; `shell` is the block's start, sized
    // and aligned for an `Object`.
    unsafe { init_shell(shell, class, header.add(1)) };
    Ok(shell)
}

/// The layout of the allocation of a shell whose embedded state block has `fields` cells.
pub(crate) fn object_layout(fields: usize) -> Layout {
    Layout::from_size_align(
        Object::INLINE_CELLS + 8 * fields,
        std::mem::align_of::<Object>(),
    )
    .expect("an object of a few cells always fits")
}

/// Free a shell's allocation: its current state block first (unless the caller took it), then
/// the block, whose size its embedded header's version gives (kept when a reload moved the
/// state out).
///
/// # Safety
/// `shell` must come from [`new_block`], be unlisted and unreferenced, and not be used after.
pub(crate) unsafe fn free_block(shell: *mut Object) {
    // SAFETY: per the contract, nothing else reaches the shell: plain accesses suffice (the
    // last release's acquire fence ordered every other thread's writes before this).
    let state = unsafe { (*shell).state.load(Ordering::Relaxed) };
    // SAFETY: a non-null state is the shell's own block (the contract).
    if !state.is_null() && unsafe { needs_drop_work(state) } {
        // SAFETY: as above.
        unsafe { (*shell).state.store(ptr::null_mut(), Ordering::Relaxed) };
        // SAFETY: the state is the shell's own and nothing can reach it any more.
        unsafe { drop_state_now(state) };
    }
    // SAFETY: the embedded header lies inside the block and still names the version it was
    // built with (dropping a state block never rewrites its header).
    let fields = unsafe {
        let header = (shell as *const u8).add(Object::INLINE_CELLS - 8) as *const u64;
        (*header_version(*header)).fields.len()
    };
    // SAFETY: made by `new_block` for `fields` fields. `Object` has no drop glue.
    unsafe { free_object_block(shell as *mut u8, fields) };
}

/// Write a shell of `class` with `state` at `at`, not attached or listed yet. In place, since
/// the handle word names the address the shell lives at (a shell moved after it was made would
/// make every handle to it stale).
///
/// # Safety
/// `at` is valid for writes of an `Object` and aligned for one, and nothing else uses it yet;
/// it is the start of a block `new_block` (or the `new` ladder) allocated, so its address fits
/// in a handle's 48 bits (`Handle::from_object` asserts it) and the shell is never moved; and
/// `state` points at the cells right after the block's embedded header word, as freeing the
/// block assumes.
pub(crate) unsafe fn init_shell(at: *mut Object, class: &Class, state: *mut u64) {
    let shell = Object {
        key: AtomicU64::new(DETACHED_KEY),
        state: AtomicPtr::new(state),
        class,
        bound_vmctx: AtomicPtr::new(ptr::null_mut()),
        bound: [const { AtomicPtr::new(ptr::null_mut()) }; BOUND_SLOTS],
        refs: RefCount::new(1),
        word: AtomicU64::new(at as u64 | WORD_GENERATION),
        live_index: AtomicU32::new(NOT_LISTED),
    };
    // SAFETY: the caller's promise.
    unsafe { at.write(shell) };
}

/// Attach a fresh shell (key and bound slots read under the class lock, which the reloader
/// installs them under, so they agree with each other) and put it on the live list.
pub(crate) fn list_shell(
    class: &Class,
    shell: *mut Object,
    mut live: ClassGuard<'_, LiveList>,
) -> Handle {
    // SAFETY: the shell was just made and is not shared yet.
    let obj = unsafe { &*shell };
    obj.key
        .store(class.entry.load(Ordering::Relaxed) & !1, Ordering::Relaxed);
    bind(obj, class);
    live.insert(obj);
    live.shells += 1;
    drop(live);
    Handle::from_object(shell)
}

/// Attach a fresh shell of an inline class and count it (`runtime::shells`): such a class lists
/// no objects, since only a reload or an unload walks the list and neither is allowed.
pub(crate) fn attach_unlisted(class: &Class, shell: *mut Object) -> Handle {
    debug_assert!(class.inline);
    // SAFETY: the shell was just made and is not shared yet.
    let obj = unsafe { &*shell };
    obj.key
        .store(class.entry.load(Ordering::Relaxed) & !1, Ordering::Relaxed);
    bind(obj, class);
    class.shells.add(1);
    Handle::from_object(shell)
}

/// Copy the class's current `vmctx` and first slots into the shell.
pub(crate) fn bind(obj: &Object, class: &Class) {
    obj.bound_vmctx.store(class.vmctx(), Ordering::Relaxed);
    for (i, b) in obj.bound.iter().enumerate() {
        b.store(class.slots[i].load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

fn cells_layout(n: usize) -> Layout {
    Layout::array::<u64>(n + 1).expect("a state block of a few cells always fits")
}

/// Build a state block for `version`. `keep[i]`, if `Some(bits)`, is cell `i` moved from an old
/// block (no reference change); every other cell runs its initializer.
pub(crate) fn build_state(
    version: &Version,
    vmctx: *mut c_void,
    keep: &[Option<u64>],
) -> Result<*mut u64, Fault> {
    // Not zeroed by the allocator (calloc is slower): `fill_state` writes every cell.
    let block = alloc_object_memory(cells_layout(version.fields.len())) as *mut u64;
    fill_state(version, vmctx, keep, block, false)?;
    // SAFETY: the cells start after the header word.
    Ok(unsafe { block.add(1) })
}

/// Write a state block for `version` at `block` (the header word, then one cell per field), as
/// [`build_state`] says; `embedded` marks a block inside its shell's allocation. On error the
/// cells made are dropped (and a block of its own freed; an embedded block is the caller's to
/// free with its shell).
fn fill_state(
    version: &Version,
    vmctx: *mut c_void,
    keep: &[Option<u64>],
    block: *mut u64,
    embedded: bool,
) -> Result<(), Fault> {
    let n = version.fields.len();
    // SAFETY: `block` holds n + 1 cells; cell 0 is the header.
    let cells = unsafe {
        *block = (version as *const Version as u64) | if embedded { EMBEDDED } else { 0 };
        block.add(1)
    };
    // Every initializer fixed bits (no string, array or code: nothing to allocate or raise):
    // the cells are a copy.
    if keep.is_empty()
        && let Some(bits) = &version.plain_init
    {
        // SAFETY: `bits` has one word per field, `n`, and the block holds `n` cells after the
        // header; the two do not overlap (the version's words are not in any state block).
        unsafe { copy_cells(bits, cells) };
        return Ok(());
    }
    // The constant strings and arrays the initializers make must fit the job's memory limit
    // (`runtime::memory`): refused before any cell is made, so nothing needs undoing.
    let heap: usize = version
        .fields
        .iter()
        .enumerate()
        .filter(|(i, _)| keep.get(*i).copied().flatten().is_none())
        .map(|(_, f)| f.init.heap_bytes())
        .sum();
    if heap != 0 {
        room_for(heap)?;
    }
    let mut code_inits = false;
    for (i, f) in version.fields.iter().enumerate() {
        let bits = match (keep.get(i).copied().flatten(), &f.init) {
            (Some(bits), _) => bits,
            // The common initializer inline; the others (a string, an array, code) out of line.
            (None, Init::Bits(bits)) => *bits,
            (None, init) => init.constant_cell().unwrap_or_else(|| {
                // Zero (a null handle) until the initializer runs: safe to drop on error.
                code_inits = true;
                0
            }),
        };
        // SAFETY: `i < n`, inside the block.
        unsafe { *cells.add(i) = bits };
    }
    if code_inits {
        // Generated initializers may raise: run them at a border, and on error drop what was
        // made (the zero cells of the rest are null handles / plain zeros: safe to drop).
        let run = catch_cold(|| {
            for (i, f) in version.fields.iter().enumerate() {
                if let (None, Init::Code(code)) = (keep.get(i).copied().flatten(), &f.init) {
                    // SAFETY: `i < n`; the initializer's result is the cell's owned value.
                    unsafe { *cells.add(i) = code(vmctx) };
                }
            }
        });
        if let Err(e) = run {
            // Kept cells are still owned by the old block: clear them before dropping this one.
            for (i, k) in keep.iter().enumerate() {
                if k.is_some() && i < n {
                    // SAFETY: `i < n`.
                    unsafe { *cells.add(i) = 0 };
                }
            }
            // SAFETY: the block was built here and never shared.
            unsafe { drop_state_now(cells) };
            return Err(e);
        }
    }
    Ok(())
}

/// Copy `src` to the cells at `dst`: a few words as plain stores (most classes have a few
/// fields, and a `memcpy` call for one word costs more than `new`'s other stores together).
///
/// # Safety
/// `dst` must hold `src.len()` cells that do not overlap `src`.
#[inline(always)]
unsafe fn copy_cells(src: &[u64], dst: *mut u64) {
    // SAFETY: every index is below `src.len()`, which `dst` holds (the contract).
    unsafe {
        match *src {
            [] => {}
            [a] => dst.write(a),
            [a, b] => {
                dst.write(a);
                dst.add(1).write(b);
            }
            [a, b, c] => {
                dst.write(a);
                dst.add(1).write(b);
                dst.add(2).write(c);
            }
            [a, b, c, d] => {
                dst.write(a);
                dst.add(1).write(b);
                dst.add(2).write(c);
                dst.add(3).write(d);
            }
            _ => ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()),
        }
    }
}

/// Whether dropping the state block at `cells` does anything: a block of its own is freed, and
/// cells that own something are released; an embedded block of plain cells (the common
/// `new`-and-free case) needs neither, and the call is skipped.
///
/// # Safety
/// `cells` must be a live state block (from [`new_block`] or [`build_state`]).
#[inline(always)]
unsafe fn needs_drop_work(cells: *mut u64) -> bool {
    // SAFETY: per the contract, the header one cell before names the block's version, which the
    // class keeps for its whole life.
    let header = unsafe { *cells.sub(1) };
    header & EMBEDDED == 0 || unsafe { &*header_version(header) }.needs_drop
}

/// Drop a state block: release every handle cell (pushing objects whose last reference went
/// onto `dying`), then free the block.
///
/// # Safety
/// `cells` must come from [`build_state`] and not be used afterwards.
pub(crate) unsafe fn drop_state(cells: *mut u64, dying: &mut Vec<*const Object>) {
    // SAFETY: per the contract, the header one cell before holds the block's version.
    let header = unsafe { *cells.sub(1) };
    // SAFETY: the class keeps its versions for its whole life.
    let version = unsafe { &*header_version(header) };
    if version.needs_drop {
        for (i, f) in version.fields.iter().enumerate() {
            // SAFETY: `i` is inside the block.
            let bits = unsafe { *cells.add(i) };
            drop_cell(f.ty.cell_kind(), bits, dying);
        }
    }
    if header & EMBEDDED == 0 {
        // SAFETY: allocated in `build_state` with this layout (an embedded block is part of its
        // shell's allocation, freed with the shell).
        unsafe { alloc::dealloc(cells.sub(1) as *mut u8, cells_layout(version.fields.len())) };
    }
}

/// Release what one cell owns.
pub(crate) fn drop_cell(kind: CellKind, bits: u64, dying: &mut Vec<*const Object>) {
    match kind {
        CellKind::Plain => {}
        // A vec of handles releases them as it goes (recursing once per nested object whose
        // last reference was in a vec, not per field: `dying` covers handle fields).
        CellKind::Counted(kind) => values::release_cell(kind, bits),
        CellKind::Handle => {
            if let Some(obj) = Handle::cell_object(bits) {
                // SAFETY: a non-null handle cell owns a reference, so the shell is allocated.
                if unsafe { &*obj }.unref() {
                    dying.push(obj);
                }
            }
        }
    }
}

/// Release one reference to `obj`; on the last, free it and, iteratively, every object whose
/// last reference was in its fields.
#[inline]
pub(crate) fn release(obj: *const Object) {
    // SAFETY: the caller owns a reference, so the shell is allocated.
    if unsafe { &*obj }.unref() {
        free_chain(obj);
    }
}

/// Free an object of an inline class (a fixed runtime's) whose last reference generated code
/// is giving up: it found the count at 1 and left it there (`hot_object_free_last`). Nothing
/// else can reach the count any more: no other reference exists, and an inline class lists no
/// objects, so no walk of a live list can take one (`try_retain`). So the count needs no second
/// change through its owner's handshake, as [`release`] would make it: the object is freed as
/// a release that took the count to zero frees it.
pub(crate) fn free_last(obj: *const Object) {
    // SAFETY: the caller held the last reference, so the shell is allocated.
    debug_assert!(unsafe { &*obj }.class().inline);
    // Every other thread's changes of the count (and of the state) came before the decrement
    // that found the last reference: as after `unref`'s atomic decrement.
    std::sync::atomic::fence(Ordering::Acquire);
    free_chain(obj);
}

#[inline(never)]
fn free_chain(first: *const Object) {
    // No allocation unless a field held the last reference to another object.
    let mut dying = Vec::new();
    free_one(first, &mut dying);
    free_all(dying);
}

/// Drop a state block now, freeing every object whose last reference was in it.
///
/// # Safety
/// As [`drop_state`].
pub(crate) unsafe fn drop_state_now(cells: *mut u64) {
    let mut dying = Vec::new();
    // SAFETY: per the contract.
    unsafe { drop_state(cells, &mut dying) };
    free_all(dying);
}

/// Free shells whose count reached zero (collected by [`drop_state`]), and, iteratively, the
/// objects their fields held last.
pub(crate) fn free_all(mut dying: Vec<*const Object>) {
    while let Some(obj) = dying.pop() {
        free_one(obj, &mut dying);
    }
}

/// Free one shell whose count reached zero: its state (pushing what that releases last onto
/// `dying`), its place on the live list, its memory.
fn free_one(obj: *const Object, dying: &mut Vec<*const Object>) {
    // SAFETY: its count reached zero: no handle refers to it, and we are its only user (a
    // reload or unload snapshot skips a shell whose count is zero), so plain accesses suffice.
    let shell = unsafe { &*obj };
    let state = shell.state.load(Ordering::Relaxed);
    // SAFETY: a non-null state is the shell's own block.
    if !state.is_null() && unsafe { needs_drop_work(state) } {
        shell.state.store(ptr::null_mut(), Ordering::Relaxed);
        // SAFETY: the state came from `new_block` or `build_state`; nothing can reach it any
        // more.
        unsafe { drop_state(state, dying) };
    }
    let class = shell.class();
    if class.inline {
        if shell.key.load(Ordering::Acquire) == DETACHED_KEY {
            class.detached.fetch_sub(1, Ordering::AcqRel);
        }
        class.shells.add(-1);
    } else {
        let mut live = class.live.lock();
        live.remove(shell);
        live.shells -= 1;
        drop(live);
    }
    // SAFETY: made by `new_block`; unlisted, unreferenced, its state dropped above.
    unsafe { free_block(obj as *mut Object) };
}

/// The error for a call on an object that is not attached.
#[cold]
pub(crate) fn detached_error() -> ScriptError {
    ScriptError::new(ScriptErrorKind::ObjectDetached, Default::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_block_is_kept_for_the_next_object_of_its_size() {
        // On a thread of its own: a fresh, empty pool.
        std::thread::spawn(|| {
            let a = alloc_object_block(3);
            assert_eq!(pool::kept(3), 0);
            // SAFETY: made above for 3 fields, not used after.
            unsafe { free_object_block(a, 3) };
            assert_eq!(pool::kept(3), 1);
            assert_eq!(pool::kept(2), 0);
            // The same block comes back for 3 fields, not for another size.
            let c = alloc_object_block(2);
            let b = alloc_object_block(3);
            assert_eq!(a, b);
            assert_eq!(pool::kept(3), 0);
            // Too many fields to pool: straight back to the allocator.
            let big = alloc_object_block(pool::POOL_FIELDS);
            // SAFETY: each made above for its field count, not used after.
            unsafe {
                free_object_block(big, pool::POOL_FIELDS);
                free_object_block(b, 3);
                free_object_block(c, 2);
            }
            assert_eq!(pool::kept(pool::POOL_FIELDS), 0);
            assert_eq!(pool::layout(3), object_layout(3));
        })
        .join()
        .expect("the pool test thread");
    }

    #[test]
    fn the_shell_has_stable_offsets_and_a_handle_word_after_its_count() {
        assert_eq!(std::mem::size_of::<Object>(), 72);
        assert_eq!(Object::KEY, 0);
        assert_eq!(Object::STATE, 8);
        assert_eq!(Object::CLASS, 16);
        assert_eq!(Object::BOUND_VMCTX, 24);
        assert_eq!(Object::BOUND, 32);
        assert_eq!(Object::WORD, 56);
        assert_eq!(Object::REFS, 48);
        assert_eq!(std::mem::size_of::<RefCount>(), 8);
    }
}
