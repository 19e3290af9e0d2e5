//! Machine code placed at a chosen offset: `doctor` measures how much the placement of one
//! small loop alone moves its time on this machine (see `stats::layouts` for why it can). The
//! loop is position-independent x86-64 code, copied into its own executable pages at `offset`
//! bytes from a page start.

use std::io;

use super::near::Pages;
use super::variant::RawVariantFn;

/// A loop of 12 register adds in four independent chains, 14 instructions and 41 bytes per
/// iteration: bound by how fast the front end delivers it, so where it falls relative to cache
/// lines and fetch blocks shows. System V: `rdi` ctx (unused), `rsi` n; returns 12·n.
#[cfg(target_arch = "x86_64")]
pub const FRONT_END_LOOP: &[u8] = &[
    0x31, 0xc0, // xor eax, eax
    0xb9, 0x01, 0x00, 0x00, 0x00, // mov ecx, 1
    0x31, 0xd2, // xor edx, edx
    0x45, 0x31, 0xc0, // xor r8d, r8d
    0x45, 0x31, 0xc9, // xor r9d, r9d
    0x48, 0x85, 0xf6, // test rsi, rsi
    0x74, 0x29, // je done (+41: the loop's 41 bytes)
    // loop:
    0x48, 0x01, 0xc8, 0x48, 0x01, 0xca, 0x49, 0x01, 0xc8, 0x49, 0x01, 0xc9, // 4 adds
    0x48, 0x01, 0xc8, 0x48, 0x01, 0xca, 0x49, 0x01, 0xc8, 0x49, 0x01, 0xc9, // 4 adds
    0x48, 0x01, 0xc8, 0x48, 0x01, 0xca, 0x49, 0x01, 0xc8, 0x49, 0x01, 0xc9, // 4 adds
    0x48, 0xff, 0xce, // dec rsi
    0x75, 0xd7, // jne loop (-41)
    // done:
    0x48, 0x01, 0xd0, // add rax, rdx
    0x4c, 0x01, 0xc0, // add rax, r8
    0x4c, 0x01, 0xc8, // add rax, r9
    0xc3, // ret
];

/// Executable memory holding one copy of a function, near hotlab's text as JIT code is
/// (`near`), so a call into it costs what a call into JIT code does.
pub struct PlacedCode {
    pages: Option<Pages>,
    entry: RawVariantFn,
}

// SAFETY: the pages are owned by this value and only read (executed) after construction.
unsafe impl Send for PlacedCode {}

impl PlacedCode {
    /// Copies `code` to `offset` bytes past the start of fresh pages and makes it executable.
    ///
    /// # Safety
    /// `code` must be position-independent machine code for this CPU with the
    /// [`RawVariantFn`] ABI.
    pub unsafe fn new(code: &[u8], offset: usize) -> io::Result<PlacedCode> {
        // SAFETY: the caller's contract.
        unsafe { PlacedCode::in_pages(Pages::new(offset + code.len())?, code, offset) }
    }

    /// [`PlacedCode::new`] wherever `mmap` puts fresh pages (far from hotlab's text: where
    /// JIT code goes without the near reservation).
    ///
    /// # Safety
    /// As for [`PlacedCode::new`].
    pub unsafe fn far(code: &[u8], offset: usize) -> io::Result<PlacedCode> {
        // SAFETY: the caller's contract.
        unsafe { PlacedCode::in_pages(Pages::anywhere(offset + code.len())?, code, offset) }
    }

    /// # Safety
    /// As for [`PlacedCode::new`]; `pages` hold at least `offset + code.len()` bytes.
    unsafe fn in_pages(pages: Pages, code: &[u8], offset: usize) -> io::Result<PlacedCode> {
        // SAFETY: fresh writable pages of at least `offset + code.len()` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(code.as_ptr(), pages.ptr().add(offset), code.len())
        };
        if let Err(e) = pages.make_executable() {
            // SAFETY: nothing points into them yet.
            unsafe { pages.free() };
            return Err(e);
        }
        // SAFETY: the caller's contract: the bytes at `offset` are a function with this ABI.
        let entry =
            unsafe { std::mem::transmute::<*mut u8, RawVariantFn>(pages.ptr().add(offset)) };
        Ok(PlacedCode {
            pages: Some(pages),
            entry,
        })
    }

    /// The function.
    pub fn entry(&self) -> RawVariantFn {
        self.entry
    }
}

impl Drop for PlacedCode {
    fn drop(&mut self) {
        if let Some(pages) = self.pages.take() {
            // SAFETY: no variant over the code outlives this value (the doctor drops its job
            // first).
            unsafe { pages.free() };
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn the_loop_runs_at_every_offset_and_returns_twelve_per_iteration() {
        for offset in [0, 16, 32, 48, 1024, 4000] {
            // SAFETY: FRONT_END_LOOP is position-independent x86-64 code with the raw ABI.
            let code = unsafe { PlacedCode::new(FRONT_END_LOOP, offset) }.unwrap();
            let f = code.entry();
            assert_eq!(f as usize % 4096, offset);
            let (floor, top) = super::super::near::reservation().expect("a reservation");
            assert!(
                (floor..top).contains(&(f as usize)),
                "placed near hotlab's text"
            );
            // SAFETY: as above; the ctx is unused.
            unsafe {
                assert_eq!(f(std::ptr::null_mut(), 0), 0);
                assert_eq!(f(std::ptr::null_mut(), 1000), 12_000);
            }
        }
    }
}
