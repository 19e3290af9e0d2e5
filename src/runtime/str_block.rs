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
//!
//! Two things keep building strings piece by piece cheap (fasta's `line += table.pick(r)`):
//! - **One-byte strings are static.** Every string of one ASCII byte (what `s.slice(i, i + 1)`
//!   of ASCII text makes) is one of 128 blocks in a static table whose count is 2^62, at or
//!   above [`StrBlock::STATIC_FLOOR`]: retains and releases (here and in generated code) see
//!   such a count and leave it alone, so the block is never freed and its line never written
//!   (no atomic on the cache line every thread's one-byte strings share). Making one
//!   allocates nothing.
//! - **`s += t` appends in place when nothing else can see `s`** ([`append`]): a block records
//!   its capacity, and an append to a block whose count is 1 (the variable's own: no other
//!   owner, and the lowering calls it only for a variable no one borrows from) writes `t`'s
//!   bytes after the old ones, growing the block by doubling when it is full. Nobody can
//!   observe the change: a string is immutable to every owner, and this block has one.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::sync::atomic::{AtomicU64, Ordering, fence};

use super::memory::{self, Refused};
use super::values::count_blocks;

/// The header of a string's block; the bytes follow it.
#[repr(C)]
pub struct StrBlock {
    refs: AtomicU64,
    len: u64,
    /// The bytes allocated after the header (at least `len`; 8 for a static one-byte block).
    cap: u64,
}

impl StrBlock {
    /// Offset of the count.
    pub const REFS: usize = 0;
    /// Offset of the length in bytes (generated code reads it for `s.len()`).
    pub const LEN: usize = 8;
    /// Offset of the capacity (generated code's one-byte append reads it).
    pub const CAP: usize = 16;
    /// Offset of the first byte.
    pub const BYTES: usize = 24;
    /// A count at or above this is a static block's: never changed, never freed (no heap
    /// block has 2^61 owners).
    pub const STATIC_FLOOR: u64 = 1 << 61;
}

/// The count a static block starts with (and, in any real run, keeps near): never the last.
const IMMORTAL: u64 = 1 << 62;

/// A static block of one ASCII byte.
#[repr(C)]
struct OneByte {
    head: StrBlock,
    byte: [u8; 8],
}

/// The 128 one-byte strings, `"\0"` to `"\x7f"`.
static ONE_BYTE: [OneByte; 128] = {
    let mut table = [const {
        OneByte {
            head: StrBlock {
                refs: AtomicU64::new(IMMORTAL),
                len: 1,
                cap: 8,
            },
            byte: [0; 8],
        }
    }; 128];
    let mut b = 0;
    while b < 128 {
        table[b].byte[0] = b as u8;
        b += 1;
    }
    table
};

/// The cell of the static one-byte string `b` (ASCII).
fn one_byte(b: u8) -> u64 {
    debug_assert!(b.is_ascii());
    // A cell is the block's address; the static lives for the whole run.
    &ONE_BYTE[usize::from(b & 0x7f)].head as *const StrBlock as u64
}

/// The one-byte strings' table, for generated code: the cell of `"\0"`, and the bytes from one
/// to the next (the cell of the ASCII byte `b` is `base + b * stride`).
pub(crate) fn one_byte_table() -> (u64, u64) {
    (one_byte(0), std::mem::size_of::<OneByte>() as u64)
}

fn layout(cap: usize) -> Layout {
    match Layout::from_size_align(StrBlock::BYTES + cap, 8) {
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
    if len == 1 {
        let mut byte = [0u8; 1];
        fill(&mut byte);
        // One byte of UTF-8 is ASCII.
        if byte[0].is_ascii() {
            return one_byte(byte[0]);
        }
        return heap_block(1, 1, |out| out.copy_from_slice(&byte));
    }
    heap_block(len, len, fill)
}

/// A new heap block of capacity `cap` holding `len` bytes written by `fill`. Raises
/// `OutOfMemory` past the job's limit (`runtime::memory`) or when the system has no memory.
fn heap_block(len: usize, cap: usize, fill: impl FnOnce(&mut [u8])) -> u64 {
    debug_assert!(len <= cap && len > 0);
    let Ok(layout) = Layout::from_size_align(StrBlock::BYTES.saturating_add(cap), 8) else {
        memory::refuse(cap, Refused::System)
    };
    memory::ensure(layout.size());
    // SAFETY: the layout has a non-zero size.
    let block = unsafe { alloc(layout) } as *mut StrBlock;
    if block.is_null() {
        memory::refuse(layout.size(), Refused::System);
    }
    // SAFETY: `block` is a fresh allocation of the header and `cap >= len` bytes, 8-aligned;
    // the bytes are zeroed before `fill` sees them, so the slice is initialized.
    unsafe {
        block.write(StrBlock {
            refs: AtomicU64::new(1),
            len: len as u64,
            cap: cap as u64,
        });
        let bytes = (block as *mut u8).add(StrBlock::BYTES);
        bytes.write_bytes(0, len);
        fill(std::slice::from_raw_parts_mut(bytes, len));
    }
    count_blocks(1);
    block as u64
}

/// The string of byte `i` of `text` alone, when it is ASCII (a static block: nothing to
/// allocate; `s.slice(i, i + 1)`'s common case).
pub(crate) fn ascii_at(text: &str, i: usize) -> Option<u64> {
    text.as_bytes()
        .get(i)
        .filter(|b| b.is_ascii())
        .map(|&b| one_byte(b))
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
        // Relaxed, as `Arc::clone`; a static block's count stays.
        if block.refs.load(Ordering::Relaxed) < StrBlock::STATIC_FLOOR {
            block.refs.fetch_add(1, Ordering::Relaxed);
        }
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
    let (refs, cap) = unsafe { (&(*block).refs, (*block).cap as usize) };
    if refs.load(Ordering::Relaxed) >= StrBlock::STATIC_FLOOR {
        return;
    }
    if refs.fetch_sub(1, Ordering::Release) != 1 {
        return;
    }
    fence(Ordering::Acquire);
    // SAFETY: that was the last count: no owner is left to read the block, which was
    // allocated by `heap_block` with this layout (a static block's count never gets here).
    unsafe { dealloc(block as *mut u8, layout(cap)) };
    count_blocks(-1);
}

/// `a += b` for a variable `a` whose count is its own and that nobody borrows from: takes
/// `a`'s count and returns the joined string's (`b` borrowed). Appends in place when `a`'s
/// block is a heap block with this one count (see the module docs), else makes a new block
/// (with room to grow) and releases `a`.
pub(crate) fn append(a: u64, b: u64) -> u64 {
    // SAFETY: the caller holds `b`'s count (or borrows it from a holder) for the call.
    let tail = unsafe { text(b) }.as_bytes();
    if tail.is_empty() {
        return a;
    }
    if a == 0 {
        return retain(b);
    }
    let block = a as *mut StrBlock;
    // SAFETY: `a` owns a count of a live block.
    let (len, cap) = unsafe { ((*block).len as usize, (*block).cap as usize) };
    let need = len + tail.len();
    // SAFETY: as above. Acquire: another owner's release of its count (after its reads of
    // the bytes) happens before the writes below.
    // A static block's count is never 1.
    let unique = a != b && unsafe { &(*block).refs }.load(Ordering::Acquire) == 1;
    if unique && need <= cap {
        // SAFETY: the one owner writes the bytes after its `len` (inside its capacity; `b` is
        // another block, so the source does not overlap), then the new length.
        unsafe {
            let at = (block as *mut u8).add(StrBlock::BYTES + len);
            match tail {
                // One byte (a character of ASCII, the common piece): no call to `memcpy`.
                [b] => at.write(*b),
                _ => std::ptr::copy_nonoverlapping(tail.as_ptr(), at, tail.len()),
            }
            (*block).len = need as u64;
        }
        return a;
    }
    // SAFETY: `a` owns a count of a live block.
    let head = unsafe { text(a) }.as_bytes();
    // Room to grow: doubling keeps a loop of appends linear (at least 32 bytes). Twice the
    // *length*, not the old block's capacity: a shared block is copied at every append while
    // its versions are kept (`keep.push(s); s += "xy"`), and doubling the capacity each time
    // would grow the copies exponentially with a text that grows by two bytes. A full block
    // (the unique append that ran out of room) has `len == cap`, so that loop still doubles.
    let cap = need.max(2 * len).max(32);
    let joined = heap_block(need, cap, |out| {
        out[..head.len()].copy_from_slice(head);
        out[head.len()..need].copy_from_slice(tail);
    });
    release(a);
    joined
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
    fn the_header_offsets_are_the_fields() {
        let block = StrBlock {
            refs: AtomicU64::new(0),
            len: 0,
            cap: 0,
        };
        let base = &block as *const StrBlock as usize;
        assert_eq!(&block.refs as *const _ as usize - base, StrBlock::REFS);
        assert_eq!(&block.len as *const _ as usize - base, StrBlock::LEN);
        assert_eq!(&block.cap as *const _ as usize - base, StrBlock::CAP);
        assert_eq!(std::mem::size_of::<StrBlock>(), StrBlock::BYTES);
    }

    #[test]
    fn appending_to_a_shared_block_sizes_the_copy_by_its_text() {
        let before = crate::runtime::values::live_blocks();
        let tail = str_of("xy");
        let mut s = str_of("a");
        let mut kept = Vec::new();
        for _ in 0..40 {
            // Another owner keeps each version: every append copies.
            kept.push(retain(s));
            s = append(s, tail);
            // SAFETY: `s` owns a count of a live heap block.
            let (len, cap) = unsafe {
                let b = s as *const StrBlock;
                ((*b).len as usize, (*b).cap as usize)
            };
            assert!(cap <= (2 * len).max(32), "len {len}, cap {cap}");
        }
        // SAFETY: as above.
        assert_eq!(unsafe { text(s) }.len(), 81);
        for k in kept {
            release(k);
        }
        release(s);
        release(tail);
        assert_eq!(crate::runtime::values::live_blocks(), before);
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
