//! Per-thread call records: the call-depth budget and the in-call markers that let a reload know
//! when no thread is inside script code, without any atomic read-modify-write on the call path.
//!
//! Each thread has a [`ThreadRecord`] in a `const` thread-local (a fixed `%fs:` offset, no lazy
//! initialization check). The call path only does plain loads and stores on it. A thread's record
//! is *registered* (its address put in a global list the reloader scans) the first time it calls
//! through the border: a fresh record has `room == 0` and `entered == 0`, which the fast paths
//! already branch on (depth limit reached / not registered), so registration costs no extra test.
//!
//! The reloader and the callers meet in an asymmetric Dekker handshake: a caller stores its marker
//! and then loads the class's entry word (only a compiler fence between them); the reloader stores
//! the entry word, runs `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` (a full fence executed on
//! every CPU running this process), then reads the markers. Either the caller's marker store is
//! visible to the reloader (it waits for that thread), or the caller's entry-word load comes after
//! the fence and sees the pending bit (it takes the slow path). See docs/runtime.md.

use std::cell::RefCell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

/// The depth limit a thread starts with.
pub const DEFAULT_DEPTH_LIMIT: u32 = 512;

/// One thread's call state. Generated code reaches it through [`thread_record`]; the offsets are
/// [`ThreadRecord::ROOM`], [`ThreadRecord::LIMIT`] and [`ThreadRecord::ENTERED`].
#[repr(C)]
#[derive(Debug)]
pub struct ThreadRecord {
    /// Border calls this thread may still nest before the depth limit: `limit - depth`. Zero
    /// also for a thread not registered yet (so the first call takes the slow path once).
    pub room: AtomicU32,
    /// The depth limit in force on this thread (0 until registered).
    pub limit: AtomicU32,
    /// 1 + the number of calls through the entry-check layer this thread is inside (0 until
    /// registered).
    pub entered: AtomicU32,
}

impl ThreadRecord {
    /// Offset of `room` (generated code: `load.i32 [rec+0]`, `store.i32 [rec+0]`).
    pub const ROOM: usize = std::mem::offset_of!(ThreadRecord, room);
    /// Offset of `limit`.
    pub const LIMIT: usize = std::mem::offset_of!(ThreadRecord, limit);
    /// Offset of `entered`.
    pub const ENTERED: usize = std::mem::offset_of!(ThreadRecord, entered);

    /// True when this thread is inside a border call through a marking layer (the depth layer,
    /// the entry layer or the fused path). Read by other threads.
    fn in_call(&self) -> bool {
        let entered = self.entered.load(Ordering::Acquire);
        let room = self.room.load(Ordering::Acquire);
        let limit = self.limit.load(Ordering::Acquire);
        entered > 1 || room < limit
    }

    /// The depth of border calls this thread is inside (through any marking layer).
    pub fn depth(&self) -> u32 {
        let limit = self.limit.load(Ordering::Relaxed);
        let room = self.room.load(Ordering::Relaxed);
        limit.saturating_sub(room) + self.entered.load(Ordering::Relaxed).saturating_sub(1)
    }
}

thread_local! {
    static RECORD: ThreadRecord = const {
        ThreadRecord { room: AtomicU32::new(0), limit: AtomicU32::new(0), entered: AtomicU32::new(0) }
    };
    // Lazily made at registration (the slow path); its drop takes the record out of the registry
    // before the thread's TLS memory goes away.
    static REGISTRATION: RefCell<Option<ThreadRegistration>> = const { RefCell::new(None) };
}

/// Every registered thread's record, by address.
static REGISTRY: Mutex<Vec<usize>> = Mutex::new(Vec::new());

struct ThreadRegistration(usize);

impl Drop for ThreadRegistration {
    fn drop(&mut self) {
        let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        reg.retain(|&a| a != self.0);
    }
}

/// This thread's record. `#[inline(always)]`: with a `const` initializer and no `Drop`, this is
/// one `%fs:`-relative address computation.
///
/// The closure runs outside `LocalKey::with` (which only hands out the address), so a big body
/// does not stop the TLS access itself from being inlined into the call path.
#[inline(always)]
pub fn with_record<R>(f: impl FnOnce(&ThreadRecord) -> R) -> R {
    let rec = RECORD.with(|r| r as *const ThreadRecord);
    // SAFETY: the record is this thread's and lives until the thread ends; `f` runs now, on
    // this thread, and cannot keep the reference (its lifetime is the call).
    f(unsafe { &*rec })
}

/// The address of this thread's record (for generated code, which adds the offsets above).
/// `#[inline(always)]`: one `%fs:`-relative address computation, as in [`with_record`].
#[inline(always)]
pub fn thread_record() -> *const ThreadRecord {
    RECORD.with(|r| r as *const ThreadRecord)
}

/// Where this thread's record is from the thread pointer (`%fs:0` on x86_64 Linux), for the
/// shell's `Hook`/`Bench` vtable functions, which find the record in two instructions and jump
/// (`runtime::handle`). The same for every thread: the record is in the executable's static
/// TLS block, at one offset from each thread's pointer (hotlab is linked statically, never
/// `dlopen`ed). Set by [`record_offset`] before the first class exists; checked again by each
/// thread's registration.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub(crate) static RECORD_TP_OFFSET: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// This thread's record's offset from its thread pointer (see [`RECORD_TP_OFFSET`]).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn this_record_offset() -> usize {
    let tp: usize;
    // SAFETY: on x86_64 Linux `%fs:0` holds the thread pointer itself (the TCB's self
    // pointer); reading it has no other effect.
    unsafe {
        std::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags));
    }
    (thread_record() as usize).wrapping_sub(tp)
}

/// Set [`RECORD_TP_OFFSET`], or check that this thread's offset is the one set (every thread
/// computes the same value; a build where one does not must not run at all: the shells'
/// vtable functions would hand the JIT's host entries another thread's memory).
pub(crate) fn record_offset() {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let mine = this_record_offset();
        if let Err(set) =
            RECORD_TP_OFFSET.compare_exchange(0, mine, Ordering::AcqRel, Ordering::Acquire)
            && set != mine
        {
            eprintln!("hotlab: the call record is not at one offset from every thread pointer");
            std::process::abort();
        }
    }
}

/// Register this thread's record if it is not yet. Returns false if the thread is exiting (its
/// thread-locals are being torn down), in which case no call may start on it.
#[cold]
#[inline(never)]
pub fn ensure_registered() -> bool {
    with_record(|rec| {
        if rec.limit.load(Ordering::Relaxed) != 0 {
            return true;
        }
        let addr = rec as *const ThreadRecord as usize;
        record_offset();
        let ok = REGISTRATION
            .try_with(|slot| {
                let mut slot = slot.borrow_mut();
                if slot.is_none() {
                    REGISTRY
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(addr);
                    *slot = Some(ThreadRegistration(addr));
                }
            })
            .is_ok();
        if ok {
            rec.room.store(DEFAULT_DEPTH_LIMIT, Ordering::Release);
            rec.limit.store(DEFAULT_DEPTH_LIMIT, Ordering::Release);
            rec.entered.store(1, Ordering::Release);
        }
        ok
    })
}

/// Set this thread's depth limit (at least 1). Refused (returns false) while the thread is inside
/// a call, because the budget of the calls in progress was taken against the old limit.
pub fn set_depth_limit(limit: u32) -> bool {
    if !ensure_registered() || current_thread_in_call() {
        return false;
    }
    with_record(|rec| {
        let limit = limit.max(1);
        rec.room.store(limit, Ordering::Release);
        rec.limit.store(limit, Ordering::Release);
    });
    true
}

/// True when the calling thread is inside a border call (through a marking layer).
pub fn current_thread_in_call() -> bool {
    with_record(|rec| rec.limit.load(Ordering::Relaxed) != 0 && rec.in_call())
}

/// Make every thread's earlier stores visible to this thread's later loads, and this thread's
/// earlier stores to every thread's later loads: the "heavy" side of the asymmetric fence.
pub fn heavy_fence() {
    #[cfg(target_os = "linux")]
    {
        use std::sync::OnceLock;
        // MEMBARRIER_CMD_PRIVATE_EXPEDITED needs a one-time registration; where it is missing
        // (old kernels), MEMBARRIER_CMD_GLOBAL is slower but has the same guarantee.
        const CMD_GLOBAL: libc::c_long = 1;
        const CMD_PRIVATE_EXPEDITED: libc::c_long = 8;
        const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 16;
        static CMD: OnceLock<Option<libc::c_long>> = OnceLock::new();
        let cmd = *CMD.get_or_init(|| {
            // SAFETY: membarrier takes (cmd, flags, cpu_id) integers and touches no memory.
            let reg = unsafe {
                libc::syscall(libc::SYS_membarrier, CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0)
            };
            if reg == 0 {
                return Some(CMD_PRIVATE_EXPEDITED);
            }
            // SAFETY: as above; a probe of the global command.
            let probe = unsafe { libc::syscall(libc::SYS_membarrier, CMD_GLOBAL, 0, 0) };
            (probe == 0).then_some(CMD_GLOBAL)
        });
        if let Some(cmd) = cmd {
            // SAFETY: as above.
            let rc = unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0, 0) };
            if rc == 0 {
                return;
            }
        }
        // No membarrier at all: there is no asymmetric fence, so fall back to an mprotect of a
        // page this thread touched, whose TLB shootdown interrupts every CPU running the
        // process (the trick of .NET's FlushProcessWriteBuffers).
        flush_by_mprotect();
    }
    #[cfg(not(target_os = "linux"))]
    compile_error!("hotlab's runtime needs Linux membarrier (or port heavy_fence)");
}

#[cfg(target_os = "linux")]
fn flush_by_mprotect() {
    use std::sync::atomic::AtomicUsize;
    static PAGE: AtomicUsize = AtomicUsize::new(0);
    let mut page = PAGE.load(Ordering::Acquire);
    if page == 0 {
        // SAFETY: an anonymous private mapping of one page; checked for failure below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert!(p != libc::MAP_FAILED, "mmap of the fence page failed");
        page = p as usize;
        PAGE.store(page, Ordering::Release);
    }
    // SAFETY: `page` is our own mapping of 4096 bytes; we write it while it is writable, then
    // drop and restore the write permission (the downgrade forces the cross-CPU flush).
    unsafe {
        libc::mprotect(
            page as *mut libc::c_void,
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
        );
        std::ptr::write_volatile(page as *mut u8, 1);
        libc::mprotect(page as *mut libc::c_void, 4096, libc::PROT_READ);
    }
}

/// Wait until no registered thread other than this one is inside a border call. Call after
/// raising the entry words and [`heavy_fence`]: threads that enter later see the pending bit.
pub fn wait_for_quiescence() {
    let me = thread_record() as usize;
    let mut spins = 0u32;
    loop {
        let busy = {
            let reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
            reg.iter().any(|&addr| {
                // SAFETY: a registered address is a live thread's record: a thread takes it out
                // of the registry (under this lock) before its thread-locals are freed.
                addr != me && unsafe { &*(addr as *const ThreadRecord) }.in_call()
            })
        };
        if !busy {
            return;
        }
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else if spins < 256 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_stable() {
        assert_eq!(ThreadRecord::ROOM, 0);
        assert_eq!(ThreadRecord::LIMIT, 4);
        assert_eq!(ThreadRecord::ENTERED, 8);
    }

    #[test]
    fn registration_sets_the_budget_and_the_limit_can_change() {
        std::thread::spawn(|| {
            assert_eq!(with_record(|r| r.room.load(Ordering::Relaxed)), 0);
            assert!(ensure_registered());
            assert_eq!(
                with_record(|r| r.room.load(Ordering::Relaxed)),
                DEFAULT_DEPTH_LIMIT
            );
            assert!(!current_thread_in_call());
            assert!(set_depth_limit(7));
            assert_eq!(with_record(|r| r.limit.load(Ordering::Relaxed)), 7);
            heavy_fence();
            wait_for_quiescence();
        })
        .join()
        .unwrap();
    }
}
