//! Object reference counts changed without a locked instruction while one thread uses a
//! runtime's objects: counts *biased* to their owner thread.
//!
//! A locked read-modify-write (`lock add`, `lock xadd`) costs 18-25 cycles on the Zen parts
//! these numbers come from (4.7 ns a pair on a Zen 5 guest, against 0.24 ns for a plain add),
//! and an object-heavy script does one per handle copied or dropped: Richards ran 7.1x its twin
//! with locked counts and 2.4x with plain ones. Yet almost every runtime is used by one thread.
//! libstdc++ makes the same bet for `shared_ptr` (plain counts while the process has one
//! thread); hotlab makes it per runtime, since hotlab itself always has several threads.
//!
//! Each runtime has a [`CountOwner`], shared by its classes (`Class::counts`), with three words:
//! `lo` and `len`, the stack of the thread that owns the counts, and `busy`. A thread knows it
//! is the owner when its stack pointer lies in `[lo, lo + len)`: two live threads never share
//! stack memory, and generated code can read its stack pointer where it cannot read a
//! thread-local. States:
//!
//! - **unclaimed** (`lo == 1, len == 0`): the first change of a count claims the runtime for its
//!   thread (the change itself is atomic);
//! - **owned** (`len != 0`): the owner changes counts with plain loads and stores; any other
//!   thread that wants to change one first *shares* the runtime;
//! - **shared** (`lo == 0, len == 0`): every thread uses atomic instructions, for good.
//!
//! The owner's plain change and a sharer meet in an asymmetric Dekker handshake, as callers and
//! the reloader do (`runtime::depth`): the owner stores `busy = 1`, then loads `len` again (only
//! a compiler fence between), changes the count if `len` is still not 0 and stores `busy = 0`;
//! the sharer stores `len = 0`, runs [`heavy_fence`] (a full fence on every CPU running the
//! process), waits until `busy` is 0, and only then stores `lo = 0` (until then every thread
//! that finds a zero `len` and a non-zero `lo` waits on the sharer's lock). Either the owner's load sees `len == 0` (it uses the
//! atomic instruction), or the sharer sees `busy == 1` and waits for the plain change to land.
//! No call, lock or allocation happens inside the owner's window, so the wait is short. Only
//! the owner writes `busy`: a thread first checks that it is the owner, then marks itself busy.
//!
//! Torn reads of the two words are harmless: `lo` is written before `len` on a claim, and `len`
//! is cleared before `lo` on a share, so a reader that pairs an old word with a new one sees a
//! range starting at 0 or 1 and shorter than [`MAX_STACK`], which holds no thread's stack.
//! When the owner thread ends, its runtimes are shared (a thread-local's destructor), so a later
//! thread whose stack reuses that memory is never mistaken for the owner.
//!
//! Vec, closure and string blocks keep atomic counts: they are not tied to one runtime.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering, compiler_fence};
use std::sync::{Arc, Mutex};

use super::depth::heavy_fence;

/// `lo` of a runtime no thread has claimed yet.
const UNCLAIMED: usize = 1;
/// `lo` of a shared runtime (atomic counts for every thread).
const SHARED: usize = 0;
/// The longest stack a thread may claim with (longer: the runtime is shared instead). Far
/// below the lowest address any thread's stack has on x86_64 Linux.
pub const MAX_STACK: usize = 1 << 36;

/// Who may change a runtime's object counts with plain instructions (see the module docs).
/// Generated code reads `lo` and `len` and writes `busy` at [`CountOwner::LO`],
/// [`CountOwner::LEN`] and [`CountOwner::BUSY`]. On a cache line of its own: the owner writes
/// `busy` at every change.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct CountOwner {
    lo: AtomicUsize,
    len: AtomicUsize,
    busy: AtomicUsize,
}

/// Whether a runtime can be claimed: not in a build without `thread-safe`, whose counts are
/// plain `Cell`s anyway (its runtimes start shared, and generated code keeps its atomic
/// instructions, which are right for a `Cell` too).
const CLAIMABLE: bool = cfg!(feature = "thread-safe");

impl Default for CountOwner {
    fn default() -> Self {
        CountOwner::new()
    }
}

/// Claims and shares, one at a time (they happen at most twice per runtime).
static GATE: Mutex<()> = Mutex::new(());

thread_local! {
    /// The runtimes this thread owns, shared when it ends.
    static OWNED: RefCell<Owned> = const { RefCell::new(Owned(Vec::new())) };
    /// This thread's stack (`lo`, `len`), once read; `(0, 0)` when unknown.
    static STACK: std::cell::Cell<Option<(usize, usize)>> = const { std::cell::Cell::new(None) };
}

/// Weak: a runtime that goes before its owner thread is not kept for it.
struct Owned(Vec<std::sync::Weak<CountOwner>>);

impl Drop for Owned {
    fn drop(&mut self) {
        let _gate = super::rt::lock(&GATE);
        for owner in self.0.drain(..).filter_map(|w| w.upgrade()) {
            // This thread is the owner and changes no count any more: no handshake needed.
            owner.len.store(0, Ordering::SeqCst);
            owner.lo.store(SHARED, Ordering::SeqCst);
        }
    }
}

impl CountOwner {
    /// Offset of `lo` (generated code: `load.i64 [owner+LO]`).
    pub const LO: usize = std::mem::offset_of!(CountOwner, lo);
    /// Offset of `len`.
    pub const LEN: usize = std::mem::offset_of!(CountOwner, len);
    /// Offset of `busy` (written by the owner only).
    pub const BUSY: usize = std::mem::offset_of!(CountOwner, busy);

    /// Unclaimed: the first thread that changes a count owns the runtime.
    pub fn new() -> CountOwner {
        CountOwner {
            lo: AtomicUsize::new(if CLAIMABLE { UNCLAIMED } else { SHARED }),
            len: AtomicUsize::new(0),
            busy: AtomicUsize::new(0),
        }
    }

    /// The state, for reports: `unclaimed`, `owned by this thread`, `owned by another thread`
    /// or `shared`.
    pub fn describe(&self) -> &'static str {
        let (lo, len) = (
            self.lo.load(Ordering::Acquire),
            self.len.load(Ordering::Acquire),
        );
        match (lo, len) {
            (UNCLAIMED, 0) => "unclaimed",
            (SHARED, 0) => "shared",
            _ if self.is_mine(stack_pointer()) => "owned by this thread",
            _ => "owned by another thread",
        }
    }

    #[inline(always)]
    fn is_mine(&self, sp: usize) -> bool {
        let lo = self.lo.load(Ordering::Relaxed);
        sp.wrapping_sub(lo) < self.len.load(Ordering::Relaxed)
    }

    /// Change a count: `plain` (plain loads and stores) when this thread owns the runtime, else
    /// `atomic` (after claiming or sharing the runtime, when it is not shared yet).
    #[inline(always)]
    pub(crate) fn change<R>(
        this: &Arc<CountOwner>,
        plain: impl FnOnce() -> R,
        atomic: impl FnOnce() -> R,
    ) -> R {
        let sp = stack_pointer();
        let lo = this.lo.load(Ordering::Relaxed);
        if sp.wrapping_sub(lo) < this.len.load(Ordering::Relaxed) {
            this.busy.store(1, Ordering::Relaxed);
            // The light side of the handshake: the store above before the load below, for
            // the compiler; the sharer's `heavy_fence` orders them for the CPU.
            compiler_fence(Ordering::SeqCst);
            if this.len.load(Ordering::Relaxed) != 0 {
                let r = plain();
                this.busy.store(0, Ordering::Release);
                return r;
            }
            this.busy.store(0, Ordering::Release);
        } else if lo != SHARED {
            contend(this);
        }
        atomic()
    }
}

/// This thread does not own `owner`'s runtime and it is not shared: claim it if unclaimed,
/// else share it (wait for the owner's change in flight, if any). Also called by generated
/// code (`hot_counts_contend`).
#[cold]
#[inline(never)]
pub(crate) fn contend(owner: &Arc<CountOwner>) {
    let _gate = super::rt::lock(&GATE);
    let lo = owner.lo.load(Ordering::Acquire);
    if lo == SHARED {
        return;
    }
    if lo == UNCLAIMED {
        match this_stack() {
            Some((lo, len)) if CLAIMABLE && len < MAX_STACK && lo > MAX_STACK => {
                let claimed = OWNED.try_with(|o| {
                    let owned = &mut o.borrow_mut().0;
                    owned.retain(|w| w.strong_count() > 0);
                    owned.push(Arc::downgrade(owner));
                });
                if claimed.is_ok() {
                    owner.lo.store(lo, Ordering::SeqCst);
                    owner.len.store(len, Ordering::SeqCst);
                    return;
                }
                // A thread that is ending claims nothing.
                owner.lo.store(SHARED, Ordering::SeqCst);
            }
            _ => owner.lo.store(SHARED, Ordering::SeqCst),
        }
        return;
    }
    if owner.is_mine(stack_pointer()) {
        return;
    }
    // `lo` stays the owner's until its change in flight has landed: meanwhile (old `lo`, zero
    // `len`) sends every thread, the owner too, here, to wait on the gate. Were `lo` cleared
    // first, a third thread would take it as shared and change a count atomically under the
    // owner's plain change.
    owner.len.store(0, Ordering::SeqCst);
    heavy_fence();
    let mut spins = 0u32;
    while owner.busy.load(Ordering::Acquire) != 0 {
        spins += 1;
        if spins < 1024 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    owner.lo.store(SHARED, Ordering::SeqCst);
}

/// An address in the current thread's stack (a local's).
#[inline(always)]
fn stack_pointer() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

/// The current thread's stack, `(lowest address, length)`, if the platform tells (asked once
/// per thread).
pub fn this_stack() -> Option<(usize, usize)> {
    let known = STACK.try_with(|cell| {
        if let Some(known) = cell.get() {
            return known;
        }
        let found = read_stack().unwrap_or((0, 0));
        cell.set(Some(found));
        found
    });
    match known {
        Ok((lo, len)) if len != 0 => Some((lo, len)),
        Ok(_) => None,
        Err(_) => read_stack(),
    }
}

#[cfg(target_os = "linux")]
fn read_stack() -> Option<(usize, usize)> {
    let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: `attr` is initialized by `pthread_getattr_np` before it is read, and destroyed
    // exactly once after a successful init; the out pointers are valid locals.
    unsafe {
        if libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let rc = libc::pthread_attr_getstack(attr.as_ptr(), &mut addr, &mut size);
        libc::pthread_attr_destroy(attr.as_mut_ptr());
        (rc == 0 && !addr.is_null() && size != 0).then_some((addr as usize, size))
    }
}

#[cfg(not(target_os = "linux"))]
fn read_stack() -> Option<(usize, usize)> {
    None
}

#[cfg(all(test, feature = "thread-safe"))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    fn bump(owner: &Arc<CountOwner>, n: &AtomicU64) {
        CountOwner::change(
            owner,
            || n.store(n.load(Ordering::Relaxed) + 1, Ordering::Relaxed),
            || {
                n.fetch_add(1, Ordering::Relaxed);
            },
        )
    }

    #[test]
    fn the_first_changer_owns_and_a_second_thread_shares() {
        let owner = Arc::new(CountOwner::new());
        assert_eq!(owner.describe(), "unclaimed");
        let n = Arc::new(AtomicU64::new(0));
        bump(&owner, &n);
        assert_eq!(owner.describe(), "owned by this thread");
        let (o2, n2) = (owner.clone(), n.clone());
        std::thread::spawn(move || {
            assert_eq!(o2.describe(), "owned by another thread");
            bump(&o2, &n2);
            assert_eq!(o2.describe(), "shared");
        })
        .join()
        .unwrap();
        bump(&owner, &n);
        assert_eq!(owner.describe(), "shared");
        assert_eq!(n.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn an_ending_owner_leaves_the_runtime_shared() {
        let owner = Arc::new(CountOwner::new());
        let o2 = owner.clone();
        std::thread::spawn(move || {
            bump(&o2, &AtomicU64::new(0));
            assert_eq!(o2.describe(), "owned by this thread");
        })
        .join()
        .unwrap();
        assert_eq!(owner.describe(), "shared");
    }

    /// Three threads change one count as fast as they can while the runtime goes from owned to
    /// shared under them: no change is lost.
    #[test]
    fn no_change_is_lost_while_the_runtime_is_shared_under_its_owner() {
        for _ in 0..20 {
            let owner = Arc::new(CountOwner::new());
            let n = Arc::new(AtomicU64::new(0));
            bump(&owner, &n);
            // Two others: the second may arrive while the first is sharing the runtime.
            let go = Arc::new(std::sync::Barrier::new(3));
            let others: Vec<_> = (0..2)
                .map(|_| {
                    let (o2, n2, g2) = (owner.clone(), n.clone(), go.clone());
                    std::thread::spawn(move || {
                        g2.wait();
                        for _ in 0..10_000 {
                            bump(&o2, &n2);
                        }
                    })
                })
                .collect();
            go.wait();
            for _ in 0..100_000 {
                bump(&owner, &n);
            }
            for other in others {
                other.join().unwrap();
            }
            assert_eq!(n.load(Ordering::Relaxed), 120_001);
            assert_eq!(owner.describe(), "shared");
        }
    }
}
