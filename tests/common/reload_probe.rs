//! A method and a field initializer that let a test watch a call wait while another thread
//! reloads: the first call blocks (inside the call) until a reload is pending, later calls note
//! whether they ran before the (slow) migration finished.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use hotlab::runtime::object::Object;

/// The slow initializer has run: the migration is over.
pub static MIGRATED: AtomicBool = AtomicBool::new(false);
/// A call ran while the migration was still going (what must never happen).
pub static RAN_DURING_MIGRATION: AtomicBool = AtomicBool::new(false);
/// The first call is inside the method, waiting for the reload.
pub static RELOAD_STARTED: AtomicBool = AtomicBool::new(false);
/// Calls of [`observe`] so far.
pub static CALLS: AtomicU32 = AtomicU32::new(0);

/// Put the probe back to its start (for a test that uses it more than once).
pub fn reset() {
    MIGRATED.store(false, Ordering::SeqCst);
    RAN_DURING_MIGRATION.store(false, Ordering::SeqCst);
    RELOAD_STARTED.store(false, Ordering::SeqCst);
    CALLS.store(0, Ordering::SeqCst);
}

/// The method: the first call waits (inside the call) until a reload is pending; later calls
/// note whether they ran before the migration finished.
pub extern "C-unwind" fn observe(_: *mut c_void, this: *const Object) -> i64 {
    if CALLS.fetch_add(1, Ordering::SeqCst) == 0 {
        RELOAD_STARTED.store(true, Ordering::SeqCst);
        // SAFETY: `this` is the live shell the path called us with.
        let class = unsafe { (*this).class() };
        while class.entry_word() & 1 == 0 {
            std::thread::yield_now();
        }
    } else if !MIGRATED.load(Ordering::SeqCst) {
        RAN_DURING_MIGRATION.store(true, Ordering::SeqCst);
    }
    1
}

/// The new field's initializer: a slow migration.
pub extern "C-unwind" fn slow_init(_: *mut c_void) -> u64 {
    std::thread::sleep(std::time::Duration::from_millis(150));
    MIGRATED.store(true, Ordering::SeqCst);
    7
}
