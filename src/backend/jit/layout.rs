//! Code placements for layout-randomized measurement (`--layouts K`): layout `k` starts every
//! function of a JIT a fixed number of bytes past where it would start, so the same code runs
//! at another offset within its cache line and within its page. Layout 0 is the usual
//! placement (every function on a 64-byte line).
//!
//! The shift keeps 16-byte alignment: Cranelift's constant pools sit at fixed offsets from the
//! function's start and SSE operands read from them need 16 bytes. hotlab's code never asks for
//! more (no 256-bit vectors).
//!
//! Every layout's code lives in pages near the host's own code ([`near`]): calls between the
//! two cost what calls within the executable cost.

use std::io;

use cranelift_jit::{BranchProtection, JITMemoryKind, JITMemoryProvider};
use cranelift_module::{ModuleError, ModuleResult};

use crate::measure::near::{self, Pages};

/// Most layouts a job may ask for.
pub const MAX_LAYOUTS: usize = 16;

/// The byte shift of layout `k`: 0, 16, 32 or 48 bytes into the cache line, times four positions
/// 1 KiB apart within the page (other L1 sets, another place relative to 4 KiB aliasing).
pub fn code_offset(k: usize) -> u16 {
    let k = k % MAX_LAYOUTS;
    (16 * (k % 4) + 1024 * (k / 4)) as u16
}

/// The JIT's memory: code, data and read-only data in pages near the host's text ([`near`]),
/// bumped within the current run of pages of each kind as cranelift-jit's own provider does;
/// every code allocation shifted by `offset` bytes (the layout).
///
/// A module's code reaches its data and its other functions with 32-bit pc-relative offsets,
/// which cranelift-jit's relocation *panics* on when the target is 2 GiB or more away. So where
/// the memory goes is decided once, by the first run of pages ([`Place`]), and a run that
/// cannot go there is an allocation error (the compile fails with a message), never a run
/// somewhere else.
pub(crate) struct CodeMemory {
    offset: usize,
    place: Option<Place>,
    code: Runs,
    writable: Runs,
    readonly: Runs,
}

/// Where a [`CodeMemory`]'s runs go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// In the reservation near the text (all of it within 2 GiB).
    Near,
    /// Wherever `mmap` puts them, all within one span of less than [`FAR_SPAN`] bytes: `lo` to
    /// `hi`, from the lowest byte of a run so far to the end of the highest.
    Far { lo: usize, hi: usize },
}

/// The span far runs must stay within: any two bytes in it are within a `rel32`'s reach.
const FAR_SPAN: usize = (2 << 30) - 1;

impl Place {
    /// A run of at least `size` bytes where this memory's runs go (`place` still `None`: where
    /// the first run goes decides it).
    fn pages(place: &mut Option<Place>, size: usize) -> io::Result<Pages> {
        match *place {
            None => {
                let pages = Pages::new(size)?;
                let (start, end) = (pages.ptr() as usize, pages.ptr() as usize + pages.len);
                *place = Some(if pages.is_near() {
                    Place::Near
                } else if end - start <= FAR_SPAN {
                    Place::Far { lo: start, hi: end }
                } else {
                    // SAFETY: fresh pages nothing points into.
                    unsafe { pages.free() };
                    return Err(too_far());
                });
                Ok(pages)
            }
            Some(Place::Near) => Pages::near(size).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::OutOfMemory,
                    if near::refused() {
                        "the system refused more address space near hotlab's code (`ulimit -v`, \
                         `vm.max_map_count`) for more of this program's code and data (its code \
                         reaches all of them with 32-bit offsets)"
                    } else {
                        "no room left near hotlab's code for more of this program's code and \
                         data (its code reaches all of them with 32-bit offsets)"
                    },
                )
            }),
            Some(Place::Far { lo, hi }) => {
                let pages = Pages::anywhere(size)?;
                let (start, end) = (pages.ptr() as usize, pages.ptr() as usize + pages.len);
                let (lo, hi) = (lo.min(start), hi.max(end));
                if hi - lo <= FAR_SPAN {
                    *place = Some(Place::Far { lo, hi });
                    return Ok(pages);
                }
                // SAFETY: fresh pages nothing points into.
                unsafe { pages.free() };
                Err(too_far())
            }
        }
    }
}

/// The error for far pages out of reach of the rest.
fn too_far() -> io::Error {
    io::Error::new(
        io::ErrorKind::OutOfMemory,
        "the system placed more of this program's code and data 2 GiB or more from the rest \
         (its code reaches all of them with 32-bit offsets)",
    )
}

/// The runs of pages of one kind.
#[derive(Default)]
struct Runs {
    /// Every run, in order; those from `protected` on still have their first protection.
    runs: Vec<Pages>,
    protected: usize,
    /// Bytes used of the last run, while more may go into it.
    position: Option<usize>,
}

impl Runs {
    /// `size` bytes aligned to `align`, with `offset` bytes before them, in new runs where
    /// `place` says.
    fn allocate(
        &mut self,
        place: &mut Option<Place>,
        size: usize,
        align: u64,
        offset: usize,
    ) -> io::Result<*mut u8> {
        let align = usize::try_from(align).unwrap_or(usize::MAX).max(1);
        if align > near::PAGE || !align.is_power_of_two() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("JIT memory alignment {align} not supported"),
            ));
        }
        let too_large = || io::Error::from(io::ErrorKind::OutOfMemory);
        let size = size.checked_add(offset).ok_or_else(too_large)?;
        if let (Some(pos), Some(run)) = (self.position, self.runs.last())
            && let Some(end) = pos
                .checked_next_multiple_of(align)
                .and_then(|at| Some((at, at.checked_add(size)?)))
            && end.1 <= run.len
        {
            let (at, end) = end;
            self.position = Some(end);
            // SAFETY: `at + size <= run.len`: inside the run.
            return Ok(unsafe { run.ptr.add(at + offset) });
        }
        let run = Place::pages(place, size)?;
        let ptr = run.ptr;
        self.runs.push(run);
        self.position = Some(size);
        // SAFETY: the run holds at least `size` bytes, `offset` of them first.
        Ok(unsafe { ptr.add(offset) })
    }

    /// Gives the runs made since the last call their final protection (`None`: they keep
    /// theirs); what is allocated after goes into new runs.
    fn seal(&mut self, protect: Option<fn(&Pages) -> io::Result<()>>) -> io::Result<()> {
        self.position = None;
        if let Some(protect) = protect {
            for run in &self.runs[self.protected..] {
                protect(run)?;
            }
        }
        self.protected = self.runs.len();
        Ok(())
    }

    /// # Safety
    /// No pointer into the runs is used again.
    unsafe fn free(&mut self) {
        self.position = None;
        self.protected = 0;
        for run in self.runs.drain(..) {
            // SAFETY: the caller's contract.
            unsafe { run.free() };
        }
    }
}

impl CodeMemory {
    pub(crate) fn new(offset: u16) -> CodeMemory {
        CodeMemory {
            offset: usize::from(offset),
            place: None,
            code: Runs::default(),
            writable: Runs::default(),
            readonly: Runs::default(),
        }
    }
}

impl JITMemoryProvider for CodeMemory {
    fn allocate(&mut self, size: usize, align: u64, kind: JITMemoryKind) -> io::Result<*mut u8> {
        match kind {
            JITMemoryKind::Executable => {
                self.code
                    .allocate(&mut self.place, size, align, self.offset)
            }
            JITMemoryKind::Writable => self.writable.allocate(&mut self.place, size, align, 0),
            JITMemoryKind::ReadOnly => self.readonly.allocate(&mut self.place, size, align, 0),
        }
    }

    unsafe fn free_memory(&mut self) {
        // SAFETY: the caller's contract (no pointer into the memory is used again).
        unsafe {
            self.code.free();
            self.writable.free();
            self.readonly.free();
        }
        self.place = None;
    }

    fn finalize(&mut self, _: BranchProtection) -> ModuleResult<()> {
        // x86-64 has no branch protection to apply; the new protection (mprotect) is all the
        // code needs before it runs on this or another thread.
        let sealed = self
            .readonly
            .seal(Some(Pages::make_readonly))
            .and_then(|()| self.writable.seal(None))
            .and_then(|()| self.code.seal(Some(Pages::make_executable)));
        sealed.map_err(|e| {
            ModuleError::Backend(anyhow::Error::new(e).context("protecting JIT memory"))
        })
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
        let mut p = CodeMemory::new(48);
        let code = p.allocate(100, 64, JITMemoryKind::Executable).unwrap();
        assert_eq!(code as usize % 64, 48);
        let data = p.allocate(100, 64, JITMemoryKind::Writable).unwrap();
        assert_eq!(data as usize % 64, 0);
        let constants = p.allocate(100, 16, JITMemoryKind::ReadOnly).unwrap();
        // All of it within a rel32 of the code (a colocated data reference is pc-relative)
        // and of the host's text.
        let text = super::near::reservation().expect("a reservation").0;
        for at in [data, constants] {
            assert!((at as usize).abs_diff(code as usize) < (1 << 31));
            assert!((at as usize).abs_diff(text) < (1 << 31));
        }
        // A second code allocation goes after the first in the same pages until finalized.
        let next = p.allocate(100, 64, JITMemoryKind::Executable).unwrap();
        assert_eq!(
            next as usize,
            code as usize + 192,
            "148 bytes used, the next 64-byte line, shifted"
        );
        p.finalize(BranchProtection::None).unwrap();
        let after = p.allocate(100, 64, JITMemoryKind::Executable).unwrap();
        assert_eq!(after as usize % 4096, 48, "sealed pages take no more code");
        // SAFETY: nothing points into the memory any more.
        unsafe { p.free_memory() };
    }

    /// Memory that cannot go where the first run went is an error, not a run elsewhere (which
    /// a relocation of the code that reaches it would panic on).
    #[test]
    fn memory_that_cannot_be_placed_with_the_rest_is_an_error() {
        let mut p = CodeMemory::new(0);
        p.allocate(100, 16, JITMemoryKind::Executable).unwrap();
        assert_eq!(p.place, Some(Place::Near), "the first run decides");
        // As if the first run had gone far away from wherever `mmap` puts pages now.
        let mut far = CodeMemory::new(0);
        far.place = Some(Place::Far {
            lo: 1 << 40,
            hi: (1 << 40) + 4096,
        });
        let e = far
            .allocate(100, 16, JITMemoryKind::Writable)
            .expect_err("a run 2 GiB or more away is refused");
        assert_eq!(e.kind(), io::ErrorKind::OutOfMemory);
        assert!(e.to_string().contains("32-bit offsets"), "{e}");
        // A far run within reach of the first is taken.
        let mut near_anchor = CodeMemory::new(0);
        let first = Pages::anywhere(4096).unwrap();
        near_anchor.place = Some(Place::Far {
            lo: first.ptr() as usize,
            hi: first.ptr() as usize + first.len,
        });
        let second = near_anchor.allocate(100, 16, JITMemoryKind::Writable);
        // SAFETY: nothing points into these pages.
        unsafe {
            first.free();
            p.free_memory();
            near_anchor.free_memory();
        }
        let second = second.expect("mmap puts a second run next to the first");
        assert!(second as usize != 0);
    }
}
