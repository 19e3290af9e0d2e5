//! Ctrl-C while a job runs: a SIGINT handler that sets the session's cancel flag, so the running
//! job is cancelled through the worker protocol instead of the front end being killed. (The
//! worker runs in its own process group and never sees the terminal's SIGINT.)

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// The flag the handler sets; a leaked `Arc` so the handler never frees it.
static FLAG: AtomicPtr<AtomicBool> = AtomicPtr::new(std::ptr::null_mut());

extern "C" fn on_sigint(_: libc::c_int) {
    // Only an atomic load and an atomic store: both are async-signal-safe.
    let p = FLAG.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: `p` comes from `Arc::into_raw` in `install` and is never released.
        unsafe { (*p).store(true, Ordering::Relaxed) };
    }
}

/// Route SIGINT to `flag` (a session's [`super::Session::cancel_flag`]) from now on. A second
/// call routes it to the new flag. Line editors that catch Ctrl-C themselves while reading
/// (rustyline) may keep their own SIGINT handler installed while they live: call [`restore`]
/// after each line read, before the job runs.
pub fn install(flag: Arc<AtomicBool>) -> std::io::Result<()> {
    let p = Arc::into_raw(flag).cast_mut();
    // The previous flag, if any, is leaked on purpose: the handler may be reading it.
    FLAG.store(p, Ordering::Release);
    restore()
}

/// Make this module's handler the SIGINT handler again (after a line editor replaced it),
/// keeping the flag given to [`install`].
pub fn restore() -> std::io::Result<()> {
    // SAFETY: `on_sigint` only touches atomics; the sigaction struct is fully initialised
    // (zeroed, then the handler and an empty mask set) before the call.
    let rc = unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_sigint as *const () as usize;
        act.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(libc::SIGINT, &act, std::ptr::null_mut())
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
