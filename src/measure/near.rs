//! Executable memory near the host's own code.
//!
//! A call from the host into generated code, and back, is predicted by the CPU's branch target
//! buffers, which do not hold a whole 64-bit target in every entry. Measured on this project's
//! AMD EPYC (Zen 4) machines with the host call's own loop and method copied into a C program:
//! the same indirect call and return cost 1.4 ns when the callee was within 16 GiB of the
//! caller and 2.2 ns when it was 32 GiB or more away, as a JIT's `mmap` puts it (the kernel
//! maps at the top of the address space, the executable sits near its bottom: about 2^46
//! bytes apart). So the JIT's code goes into one reservation made once, within 2 GiB below
//! the executable's text, where every call between the two is also within a `rel32`'s reach.
//!
//! The reservation is address space only (`PROT_NONE`, no reserve), made in chunks of 32 MiB
//! as code needs them (address space counts against `ulimit -v`), each right below the one
//! before; a run of pages becomes writable when a JIT asks for memory, executable when the JIT
//! finalizes it, and is given back (fresh `PROT_NONE` pages, so the kernel frees what it
//! held) when the JIT frees its memory. If no chunk can be reserved there, code goes wherever
//! `mmap` puts it, as before: slower calls, the same results.

use std::collections::BTreeMap;
use std::io;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Bytes of address space reserved at a time.
const CHUNK: usize = 32 << 20;

/// How far below a function of the text ([`host_text`]) the reservation may reach: 2 GiB less
/// a margin for the text above that function (hotlab's whole text is about 11 MiB), so a
/// `rel32` from anywhere in the text reaches every chunk, and from any chunk every other.
const WINDOW: usize = (2 << 30) - (128 << 20);

/// Room left below that function before the first chunk: for the rest of the text and the
/// executable's first, read-only segment, which the loader maps right below the text (its
/// data, bss and heap are above it). A chunk never replaces a mapping: the reservation skips
/// whatever it finds mapped.
const GAP: usize = 64 << 20;

/// The page size this code assumes (x86-64 Linux; checked against the system's).
pub(crate) const PAGE: usize = 4096;

/// The reservation, grown a chunk at a time.
struct Arena {
    state: Mutex<State>,
}

struct State {
    /// Where the next chunk ends (below every chunk so far, and below anything found mapped).
    low: usize,
    /// The lowest address a chunk may start at.
    floor: usize,
    /// The chunks reserved: (start, length).
    chunks: Vec<(usize, usize)>,
    /// The runs of pages in them that are free: start → length.
    free: BTreeMap<usize, usize>,
    /// The system refused the last chunk asked for (`Reserved::Refused`).
    refused: bool,
}

static ARENA: OnceLock<Option<Arena>> = OnceLock::new();

/// Where the host's text is: the address of a function of this crate's.
fn host_text() -> usize {
    host_text as *const () as usize
}

/// What reserving address space at a place came to.
#[derive(Debug, PartialEq, Eq)]
enum Reserved {
    /// The space is ours.
    Yes,
    /// Something is mapped there already: the next try goes below it.
    Taken,
    /// The system gives no more address space (`ulimit -v`, `vm.max_map_count`): trying
    /// elsewhere in the window would fail the same way, so the window is left as it is.
    Refused,
}

/// Maps `len` bytes of inaccessible, unreserved address space exactly at `at`, or says why not.
fn reserve_at(at: usize, len: usize) -> Reserved {
    // SAFETY: an anonymous mapping that may not replace anything (MAP_FIXED_NOREPLACE); a
    // kernel that does not know the flag treats `at` as a hint, which the check below catches.
    let p = unsafe {
        libc::mmap(
            at as *mut libc::c_void,
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE
                | libc::MAP_ANONYMOUS
                | libc::MAP_NORESERVE
                | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return match io::Error::last_os_error().raw_os_error() {
            Some(libc::EEXIST) => Reserved::Taken,
            _ => Reserved::Refused,
        };
    }
    if p as usize != at {
        // SAFETY: the mapping just made, elsewhere than asked; nothing uses it.
        unsafe { libc::munmap(p, len) };
        return Reserved::Taken;
    }
    Reserved::Yes
}

fn arena() -> Option<&'static Arena> {
    ARENA
        .get_or_init(|| {
            // SAFETY: sysconf has no preconditions.
            if unsafe { libc::sysconf(libc::_SC_PAGESIZE) } != PAGE as libc::c_long {
                return None;
            }
            let text = host_text();
            Some(Arena {
                state: Mutex::new(State {
                    low: text.checked_sub(GAP)? & !(CHUNK - 1),
                    floor: text.checked_sub(WINDOW)?,
                    chunks: Vec::new(),
                    free: BTreeMap::new(),
                    refused: false,
                }),
            })
        })
        .as_ref()
}

/// The window the reservation grows in, if there is one: (its lowest address, the end of the
/// highest chunk it may have).
#[cfg(test)]
pub(crate) fn reservation() -> Option<(usize, usize)> {
    arena().map(|a| {
        let s = a.lock();
        (
            s.floor,
            s.chunks.first().map_or(s.low, |&(at, len)| at + len),
        )
    })
}

impl State {
    /// Reserves a chunk (or more, for a large run) below `low` (skipping what is mapped
    /// already); false when the window is used up or the system refuses address space (then
    /// `low` stays, and a later try, after code is freed, starts where this one did).
    fn grow(&mut self, len: usize) -> bool {
        let Some(want) = len.checked_next_multiple_of(CHUNK) else {
            return false;
        };
        while let Some(at) = self.low.checked_sub(want)
            && at >= self.floor
        {
            match reserve_at(at, want) {
                Reserved::Yes => {
                    self.refused = false;
                    self.low = at;
                    self.chunks.push((at, want));
                    self.insert(at, want);
                    return true;
                }
                // Something of the process's is there: the next chunk goes below it.
                Reserved::Taken => self.low = at,
                Reserved::Refused => {
                    self.refused = true;
                    return false;
                }
            }
        }
        false
    }

    /// Adds a free run, joined with free neighbours.
    fn insert(&mut self, at: usize, len: usize) {
        let (mut start, mut run) = (at, len);
        if let Some((&before, &blen)) = self.free.range(..at).next_back()
            && before + blen == at
        {
            self.free.remove(&before);
            start = before;
            run += blen;
        }
        if let Some(after) = self.free.remove(&(at + len)) {
            run += after;
        }
        self.free.insert(start, run);
    }

    /// The first free run of at least `len` bytes: (start, length).
    fn first_fit(&self, len: usize) -> Option<(usize, usize)> {
        self.free
            .iter()
            .find(|(_, run)| **run >= len)
            .map(|(&at, &run)| (at, run))
    }
}

impl Arena {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The first free run of `len` bytes (a multiple of the page), taken and made writable;
    /// `None` when the window has no room left (or the protection cannot change).
    fn take(&self, len: usize) -> Option<*mut u8> {
        let mut state = self.lock();
        let (at, run) = match state.first_fit(len) {
            Some(f) => f,
            None if state.grow(len) => state.first_fit(len)?,
            None => return None,
        };
        // SAFETY: `at..at + len` is reserved by us and free (nobody holds a pointer into it),
        // so changing its protection affects no one.
        let r = unsafe {
            libc::mprotect(
                at as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        if r != 0 {
            return None;
        }
        state.free.remove(&at);
        if run > len {
            state.free.insert(at + len, run - len);
        }
        Some(at as *mut u8)
    }

    /// Gives back a run `take` handed out: fresh inaccessible pages over it (the kernel drops
    /// what the old ones held), joined with free neighbours.
    ///
    /// # Safety
    /// `at..at + len` came from `take` and no pointer into it is used again.
    unsafe fn give(&self, at: usize, len: usize) {
        // SAFETY: the caller's contract; MAP_FIXED replaces only our own pages.
        let p = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            // The pages stay mapped (and counted as used): a leak, never a reuse of pages
            // whose protection is unknown.
            return;
        }
        self.lock().insert(at, len);
    }

    /// Whether `at` is in a chunk of the reservation.
    fn holds(&self, at: usize) -> bool {
        self.lock()
            .chunks
            .iter()
            .any(|&(start, len)| (start..start + len).contains(&at))
    }
}

/// Whether the system refused the last chunk the reservation asked for (then a near run may
/// be missing for that reason, not for want of room in the window).
pub(crate) fn refused() -> bool {
    arena().is_some_and(|a| a.lock().refused)
}

/// A run of pages for code: from the reservation when it has room, else from `mmap` anywhere.
pub(crate) struct Pages {
    pub(crate) ptr: *mut u8,
    pub(crate) len: usize,
}

// SAFETY: the pages are owned by whoever holds this value; nothing here is thread-bound.
unsafe impl Send for Pages {}

impl Pages {
    /// At least `size` bytes of writable pages: near the text when the reservation has room,
    /// else wherever `mmap` puts them.
    pub(crate) fn new(size: usize) -> io::Result<Pages> {
        match Pages::near(size) {
            Some(pages) => Ok(pages),
            None => Pages::anywhere(size),
        }
    }

    /// The pages' length for `size` bytes (`None`: more than the address space).
    fn length(size: usize) -> Option<usize> {
        size.max(1).checked_next_multiple_of(PAGE)
    }

    /// At least `size` bytes of writable pages in the reservation near the text; `None` when
    /// there is none or it has no room left.
    pub(crate) fn near(size: usize) -> Option<Pages> {
        let len = Pages::length(size)?;
        let ptr = arena()?.take(len)?;
        Some(Pages { ptr, len })
    }

    /// At least `size` bytes of writable pages wherever `mmap` puts them.
    pub(crate) fn anywhere(size: usize) -> io::Result<Pages> {
        let len = Pages::length(size).ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
        // SAFETY: an anonymous private mapping; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Pages {
            ptr: p as *mut u8,
            len,
        })
    }

    /// The first byte.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Whether the pages are in the reservation near the text.
    pub(crate) fn is_near(&self) -> bool {
        arena().is_some_and(|a| a.holds(self.ptr as usize))
    }

    /// Makes the pages readable and executable (no longer writable).
    pub(crate) fn make_executable(&self) -> io::Result<()> {
        self.protect(libc::PROT_READ | libc::PROT_EXEC)
    }

    /// Makes the pages read-only.
    pub(crate) fn make_readonly(&self) -> io::Result<()> {
        self.protect(libc::PROT_READ)
    }

    fn protect(&self, prot: libc::c_int) -> io::Result<()> {
        // SAFETY: the pages are ours; from here on they are only accessed as `prot` allows.
        if unsafe { libc::mprotect(self.ptr as *mut libc::c_void, self.len, prot) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Gives the pages back.
    ///
    /// # Safety
    /// No pointer into them is used again.
    pub(crate) unsafe fn free(self) {
        match arena() {
            // SAFETY: the caller's contract; the run came from `take`.
            Some(a) if a.holds(self.ptr as usize) => unsafe { a.give(self.ptr as usize, self.len) },
            // SAFETY: the caller's contract; the mapping made in `new`.
            _ => unsafe {
                libc::munmap(self.ptr as *mut libc::c_void, self.len);
            },
        }
    }
}

/// A copy of `code` in executable pages of the reservation (`None`: there is none).
pub(crate) fn place(code: &[u8]) -> io::Result<Option<Pages>> {
    let Some(pages) = Pages::near(code.len()) else {
        return Ok(None);
    };
    // SAFETY: fresh writable pages of at least `code.len()` bytes.
    unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), pages.ptr, code.len()) };
    if let Err(e) = pages.make_executable() {
        // SAFETY: nothing points into them.
        unsafe { pages.free() };
        return Err(e);
    }
    Ok(Some(pages))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_pages_are_within_two_gib_of_the_host_text() {
        let p = Pages::new(100).unwrap();
        let (floor, top) = reservation().expect("a reservation below the executable");
        let text = host_text();
        assert!(
            top <= text && text - floor < (2 << 30),
            "{floor:#x}..{top:#x} vs {text:#x}"
        );
        assert!((floor..top).contains(&(p.ptr as usize)));
        assert!(arena().unwrap().holds(p.ptr as usize));
        assert_eq!(p.len, PAGE);
        // SAFETY: nothing points into the pages.
        unsafe { p.free() };
    }

    #[test]
    fn given_back_runs_join_their_neighbours() {
        // A private arena (the shared one is in use by other tests at the same time).
        let len = 16 * PAGE;
        // SAFETY: an anonymous inaccessible mapping, checked.
        let start = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        assert_ne!(start, libc::MAP_FAILED);
        let start = start as usize;
        // Its window is this one mapping: it cannot grow.
        let a = Arena {
            state: Mutex::new(State {
                low: start,
                floor: start,
                chunks: vec![(start, len)],
                free: BTreeMap::from([(start, len)]),
                refused: false,
            }),
        };
        let x = a.take(3 * PAGE).unwrap() as usize;
        let y = a.take(PAGE).unwrap() as usize;
        let z = a.take(2 * PAGE).unwrap() as usize;
        assert_eq!((x, y, z), (start, start + 3 * PAGE, start + 4 * PAGE));
        // SAFETY: writable pages of the arena's.
        unsafe { (y as *mut u8).write(7) };
        // SAFETY: nothing points into them.
        unsafe { a.give(y, PAGE) };
        assert_eq!(
            a.take(2 * PAGE).unwrap() as usize,
            start + 6 * PAGE,
            "first fit skips a hole too small"
        );
        // SAFETY: as above.
        unsafe { a.give(x, 3 * PAGE) };
        let free = a.lock().free.clone();
        assert_eq!(free.get(&start), Some(&(4 * PAGE)), "{free:?}");
        // The page given back is fresh: zero again once taken.
        let again = a.take(4 * PAGE).unwrap();
        assert_eq!(again as usize, start);
        // SAFETY: writable pages of the arena's.
        assert_eq!(unsafe { again.add(3 * PAGE).read() }, 0);
        assert!(
            a.take(16 * PAGE).is_none(),
            "a full window hands out nothing"
        );
        // SAFETY: the mapping made above; nothing points into it.
        unsafe { libc::munmap(start as *mut libc::c_void, len) };
    }
}
