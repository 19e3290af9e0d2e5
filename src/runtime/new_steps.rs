//! `new` and free taken apart: each function does the steps of one row of the `new` ladder
//! (`micro/new.toml`, docs/runtime.md "The cost of new") and undoes them, with the runtime's own
//! pieces, so what a step adds is the difference between two rows measured in one job.
//!
//! | function | what one call does (and undoes) |
//! | --- | --- |
//! | [`alloc_free`] | the object's one allocation (shell, header word, cells) from the runtime's object allocator (its thread's pool of freed blocks in front of the global allocator) and back |
//! | [`header_free`] | + the shell written (key, class, count, generation, ...) and the header word |
//! | [`fields_free`] | + every field initializer run, and the cells dropped (`object::new_block`) |
//! | [`listed_free`] | + the live list (the class lock, key, bound slots) and the handle whose release frees it |
//!
//! The whole `new` is `Runtime::new_object`: [`listed_free`] inside the class's border (depth
//! room, pending-reload test, catch) and the unload test. Every function writes the value into
//! the object's first field and reads it back, as the bench's case does.

use std::hint::black_box;

use crate::runtime::border::Fault;
use crate::runtime::class::Class;
use crate::runtime::object::{self, EMBEDDED, Object};

/// Write `v` into the first field cell of `shell`'s block and read it back (through a black box,
/// so neither the allocation nor the cell can be optimized away).
///
/// # Safety
/// `shell` must be a block of [`object::object_layout`] with at least one cell.
#[inline(always)]
unsafe fn field_write_read(shell: *mut u8, v: i64) -> i64 {
    let shell = black_box(shell);
    // SAFETY: the first cell lies inside the block (the caller's contract).
    unsafe {
        let cell = shell.add(Object::INLINE_CELLS) as *mut i64;
        cell.write(v);
        cell.read()
    }
}

/// The allocation alone: the block `new` makes for an object of `class` (shell, header word and
/// cells), the first cell written and read, the block freed.
///
/// # Safety
/// `class`'s current version must have at least one field.
#[inline(always)]
pub unsafe fn alloc_free(class: &Class, v: i64) -> i64 {
    let fields = class.version().fields.len();
    let block = object::alloc_object_block(fields);
    // SAFETY: made with the layout `field_write_read` needs (the caller's contract).
    let r = unsafe { field_write_read(block, v) };
    // SAFETY: made above for `fields` fields, not used after.
    unsafe { object::free_object_block(block, fields) };
    r
}

/// The allocation, the shell written as `new` writes it and the state block's header word
/// (marked embedded), no field initialized; freed again.
///
/// # Safety
/// As [`alloc_free`].
#[inline(always)]
pub unsafe fn header_free(class: &Class, v: i64) -> i64 {
    let version = class.version();
    let fields = version.fields.len();
    let block = object::alloc_object_block(fields);
    // SAFETY: the header and the shell lie inside the block, which is aligned for an `Object`.
    unsafe {
        let header = block.add(Object::INLINE_CELLS - 8) as *mut u64;
        header.write(version as *const _ as u64 | EMBEDDED);
        object::init_shell(block as *mut Object, class, header.add(1));
    }
    // SAFETY: as `alloc_free`.
    let r = unsafe { field_write_read(black_box(block), v) };
    // SAFETY: made above for `fields` fields; `Object` has no drop glue and no cell owns
    // anything yet.
    unsafe { object::free_object_block(block, fields) };
    r
}

/// `new`'s block with every initializer run (`object::new_block`: allocation, shell, header,
/// fields), then its state dropped and the block freed (`object::free_block`).
///
/// # Safety
/// As [`alloc_free`].
#[inline(always)]
pub unsafe fn fields_free(class: &Class, v: i64) -> Result<i64, Fault> {
    let shell = object::new_block(class, class.version())?;
    // SAFETY: as `alloc_free`.
    let r = unsafe { field_write_read(shell as *mut u8, v) };
    // SAFETY: made above, never listed or shared.
    unsafe { object::free_block(shell) };
    Ok(r)
}

/// [`fields_free`] and the registration: the shell attached and put on the class's live list
/// under its lock, as a handle; the handle's release (its count's atomic decrement), which takes
/// the shell off the list under the lock again and frees it.
///
/// # Safety
/// As [`alloc_free`]; `class` must not be reloaded meanwhile (the real `new` rechecks the
/// version under the lock, inside the class's border).
#[inline(always)]
pub unsafe fn listed_free(class: &Class, v: i64) -> Result<i64, Fault> {
    let shell = object::new_block(class, class.version())?;
    // A fixed runtime's class lists nothing (`runtime::shells`); the ladder's runtime is not one.
    let handle = if class.is_inline() {
        object::attach_unlisted(class, shell)
    } else {
        object::list_shell(class, shell, class.live.lock())
    };
    // SAFETY: as `alloc_free`; the handle keeps the block.
    let r = unsafe { field_write_read(shell as *mut u8, v) };
    drop(handle);
    Ok(r)
}
