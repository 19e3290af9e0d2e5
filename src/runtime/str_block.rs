//! A string's block: one allocation holding its count, its length and its UTF-8 bytes.
//!
//! A `str` cell is 0 (the empty string) or the address of a block. It used to be an
//! `Arc<String>`: two allocations per string (the `Arc` and the `String`'s buffer), so an
//! interpolation such as `"item ${i}"` made six and freed six (the literal, the number and the
//! joined string, each twice). A block is one allocation of exactly its length, written once
//! and never changed (strings are immutable), so the runtime's string helpers make each string
//! with one allocation, and generated code reads a string's length inline
//! (`[cell + StrBlock::LEN]`).
//!
//! Counts follow `Arc`'s orderings: a retain is relaxed (the caller's own count keeps the block
//! alive), a release is release-ordered and the last one acquires before the block is freed,
//! so every owner's reads happen before the free, on any thread.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::sync::atomic::{AtomicU64, Ordering, fence};

use super::values::count_blocks;

/// The header of a string's block; the bytes follow it.
#[repr(C)]
pub struct StrBlock {
    refs: AtomicU64,
    len: u64,
}

impl StrBlock {
    /// Offset of the count.
    pub const REFS: usize = 0;
    /// Offset of the length in bytes (generated code reads it for `s.len()`).
    pub const LEN: usize = 8;
    /// Offset of the first byte.
    const BYTES: usize = 16;
}

fn layout(len: usize) -> Layout {
    match Layout::from_size_align(StrBlock::BYTES + len, 8) {
        Ok(l) => l,
        // A length near `isize::MAX` cannot be allocated anyway.
        Err(_) => handle_alloc_error(Layout::new::<StrBlock>()),
    }
}

/// A new string of `len` bytes written by `fill` (given exactly `len` bytes, which it must
/// fill with UTF-8): its cell, owning its one count (0 when `len` is 0, without calling `fill`).
pub(crate) fn str_with(len: usize, fill: impl FnOnce(&mut [u8])) -> u64 {
    if len == 0 {
        return 0;
    }
    let layout = layout(len);
    // SAFETY: the layout has a non-zero size.
    let block = unsafe { alloc(layout) } as *mut StrBlock;
    if block.is_null() {
        handle_alloc_error(layout);
    }
    // SAFETY: `block` is a fresh allocation of the header and `len` bytes, 8-aligned; the
    // bytes are zeroed before `fill` sees them, so the slice is initialized.
    unsafe {
        block.write(StrBlock {
            refs: AtomicU64::new(1),
            len: len as u64,
        });
        let bytes = (block as *mut u8).add(StrBlock::BYTES);
        bytes.write_bytes(0, len);
        fill(std::slice::from_raw_parts_mut(bytes, len));
    }
    count_blocks(1);
    block as u64
}

/// A new string holding `text` (0 when empty).
pub(crate) fn str_of(text: &str) -> u64 {
    str_with(text.len(), |out| out.copy_from_slice(text.as_bytes()))
}

/// The text of a str cell, borrowed.
///
/// # Safety
/// `cell` must be 0 or own (or be borrowed from an owner of) a count of a live string block
/// for `'a`.
pub(crate) unsafe fn text<'a>(cell: u64) -> &'a str {
    if cell == 0 {
        return "";
    }
    let block = cell as *const StrBlock;
    // SAFETY: the caller's contract; a block's bytes are the UTF-8 `str_with`'s caller wrote,
    // never changed after.
    unsafe {
        let len = (*block).len as usize;
        let bytes = (block as *const u8).add(StrBlock::BYTES);
        std::str::from_utf8_unchecked(std::slice::from_raw_parts(bytes, len))
    }
}

/// Another count of a str cell; returns the cell.
pub(crate) fn retain(cell: u64) -> u64 {
    if cell != 0 {
        // SAFETY: a non-null str cell the caller holds owns a count of a live block.
        let block = unsafe { &*(cell as *const StrBlock) };
        // Relaxed, as `Arc::clone`.
        block.refs.fetch_add(1, Ordering::Relaxed);
    }
    cell
}

/// Give up the count a str cell owns, freeing the block with the last.
pub(crate) fn release(cell: u64) {
    if cell == 0 {
        return;
    }
    let block = cell as *mut StrBlock;
    // SAFETY: the caller gives up the count its cell owns, so the block is live until then.
    let (refs, len) = unsafe { (&(*block).refs, (*block).len as usize) };
    if refs.fetch_sub(1, Ordering::Release) != 1 {
        return;
    }
    fence(Ordering::Acquire);
    // SAFETY: that was the last count: no owner is left to read the block, which was
    // allocated by `str_with` with this layout.
    unsafe { dealloc(block as *mut u8, layout(len)) };
    count_blocks(-1);
}

/// The decimal digits of `x` (with a leading `-`), as `x.to_string()` writes them, into the
/// end of `buf`: the slice written.
pub(crate) fn i64_digits(x: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut n = x.unsigned_abs();
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if x < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_match_to_string() {
        for x in [0, 7, -7, 10, 99, -100, 123_456_789, i64::MAX, i64::MIN] {
            let mut buf = [0; 20];
            assert_eq!(i64_digits(x, &mut buf), x.to_string().as_bytes());
        }
    }

    #[test]
    fn a_block_holds_its_text_and_is_freed_with_its_last_count() {
        let before = crate::runtime::values::live_blocks();
        let s = str_of("héllo");
        // SAFETY: `s` owns a count.
        assert_eq!(unsafe { text(s) }, "héllo");
        assert_eq!(retain(s), s);
        release(s);
        // SAFETY: the second count is still owned.
        assert_eq!(unsafe { text(s) }, "héllo");
        release(s);
        assert_eq!(crate::runtime::values::live_blocks(), before);
        assert_eq!(str_of(""), 0);
    }
}
