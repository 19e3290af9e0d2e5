//! Code placements for layout-randomized measurement (`--layouts K`): layout `k` starts every
//! function of a JIT a fixed number of bytes past where it would start, so the same code runs
//! at another offset within its cache line and within its page. Layout 0 is the usual
//! placement (every function on a 64-byte line).
//!
//! The shift keeps 16-byte alignment: Cranelift's constant pools sit at fixed offsets from the
//! function's start and SSE operands read from them need 16 bytes. hotlab's code never asks for
//! more (no 256-bit vectors).

use std::io;

use cranelift_jit::{BranchProtection, JITMemoryKind, JITMemoryProvider, SystemMemoryProvider};
use cranelift_module::ModuleResult;

/// Most layouts a job may ask for.
pub const MAX_LAYOUTS: usize = 16;

/// The byte shift of layout `k`: 0, 16, 32 or 48 bytes into the cache line, times four positions
/// 1 KiB apart within the page (other L1 sets, another place relative to 4 KiB aliasing).
pub fn code_offset(k: usize) -> u16 {
    let k = k % MAX_LAYOUTS;
    (16 * (k % 4) + 1024 * (k / 4)) as u16
}

/// The system provider, with every executable allocation shifted by `offset` bytes.
pub(crate) struct ShiftedCode {
    inner: SystemMemoryProvider,
    offset: usize,
}

impl ShiftedCode {
    pub(crate) fn new(offset: u16) -> ShiftedCode {
        ShiftedCode {
            inner: SystemMemoryProvider::new(),
            offset: usize::from(offset),
        }
    }
}

impl JITMemoryProvider for ShiftedCode {
    fn allocate(&mut self, size: usize, align: u64, kind: JITMemoryKind) -> io::Result<*mut u8> {
        match kind {
            JITMemoryKind::Executable => {
                let p = self.inner.allocate(size + self.offset, align, kind)?;
                // SAFETY: `p` starts an allocation of `size + offset` bytes: `p + offset` and
                // the `size` bytes after it are inside it.
                Ok(unsafe { p.add(self.offset) })
            }
            _ => self.inner.allocate(size, align, kind),
        }
    }

    unsafe fn free_memory(&mut self) {
        // SAFETY: the caller's contract (no pointer into the memory is used again) is passed on.
        unsafe { self.inner.free_memory() }
    }

    fn finalize(&mut self, branch_protection: BranchProtection) -> ModuleResult<()> {
        self.inner.finalize(branch_protection)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_distinct_16_byte_aligned_shifts_within_a_page() {
        let offsets: Vec<u16> = (0..MAX_LAYOUTS).map(code_offset).collect();
        assert_eq!(offsets[0], 0);
        let mut unique = offsets.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), MAX_LAYOUTS);
        assert!(offsets.iter().all(|o| o % 16 == 0 && *o < 4096));
        // The first four differ in their place within a cache line.
        let lines: Vec<u16> = offsets[..4].iter().map(|o| o % 64).collect();
        assert_eq!(lines, [0, 16, 32, 48]);
    }

    #[test]
    fn executable_memory_is_shifted_and_other_memory_is_not() {
        let mut p = ShiftedCode::new(48);
        let code = p.allocate(100, 64, JITMemoryKind::Executable).unwrap();
        assert_eq!(code as usize % 64, 48);
        let data = p.allocate(100, 64, JITMemoryKind::Writable).unwrap();
        assert_eq!(data as usize % 64, 0);
        // SAFETY: nothing points into the memory any more.
        unsafe { p.free_memory() };
    }
}
