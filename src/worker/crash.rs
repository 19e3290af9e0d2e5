//! Where a crash in script code happened: the worker's fatal-signal handler.
//!
//! Script code a crash can come from: `.clif` snippets, which have no checks, and `.hot` code
//! compiled with `--checks off` that indexes out of bounds (or a bug in hotlab). The worker
//! dies of the signal either way (the front end reports it and starts a new worker); before it
//! does, this handler looks up the faulting instruction among the registered script code
//! (`runtime::sweep::describe_pc`: the function, and for `.hot` code the source location of the
//! operation the instruction belongs to) and writes one line to stderr, [`MARK`] followed by
//! `` `main` at FILE:LINE:COL ``. The front end takes that line out of the worker's stderr and
//! puts the location into its crash message ([`location_in`]).
//!
//! The handler allocates nothing and takes no lock that could wait (the registry is read with
//! `try_read`). A fault outside script code goes to the handler that was there before (Rust's
//! own, which reports a stack overflow), else the signal's default action.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

/// What starts the line the handler writes.
pub const MARK: &str = "hotlab worker: crashed in script code: ";

/// The signals a crash in generated code raises.
const SIGNALS: [libc::c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGTRAP,
];

/// The handlers installed before ours, by the index of the signal in [`SIGNALS`].
static mut PREVIOUS: [Option<libc::sigaction>; 5] = [None; 5];
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Install the handler for the crash signals (once per process; the worker calls it before
/// its job thread starts).
pub fn install() {
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    for (i, &sig) in SIGNALS.iter().enumerate() {
        // SAFETY: a zeroed `sigaction` is a valid start (no flags, empty mask) which is then
        // filled in; `old` is a valid out-pointer. `PREVIOUS` is written here, before any
        // handler of ours can run (it is installed by this very call), and only read after.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, &action, &mut old) == 0 {
                (*std::ptr::addr_of_mut!(PREVIOUS))[i] = Some(old);
            }
        }
    }
}

/// A fixed buffer that `write!` fills (what does not fit is dropped).
struct Line {
    bytes: [u8; 512],
    len: usize,
}

impl std::fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let room = self.bytes.len() - self.len;
        let n = s.len().min(room);
        self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// The instruction pointer of the interrupted code.
///
/// # Safety
/// `context` must be the `ucontext_t` the kernel passed to an `SA_SIGINFO` handler.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
unsafe fn pc_of(context: *mut libc::c_void) -> usize {
    // SAFETY: the caller's contract.
    unsafe {
        (*(context as *const libc::ucontext_t)).uc_mcontext.gregs[libc::REG_RIP as usize] as usize
    }
}

/// The instruction pointer of the interrupted code.
///
/// # Safety
/// `context` must be the `ucontext_t` the kernel passed to an `SA_SIGINFO` handler.
#[cfg(all(target_os = "linux", target_arch = "aarch64"))]
unsafe fn pc_of(context: *mut libc::c_void) -> usize {
    // SAFETY: the caller's contract.
    unsafe { (*(context as *const libc::ucontext_t)).uc_mcontext.pc as usize }
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes a `ucontext_t` to an `SA_SIGINFO` handler.
    let pc = unsafe { pc_of(context) };
    let mut line = Line {
        bytes: [0; 512],
        len: 0,
    };
    let _ = line.write_str(MARK);
    // A `debugtrap` on x86_64 (int3) reports the address after the instruction; aarch64's
    // `brk` its own.
    let at = if sig == libc::SIGTRAP && cfg!(target_arch = "x86_64") {
        pc.wrapping_sub(1)
    } else {
        pc
    };
    if crate::runtime::sweep::describe_pc(at, &mut line) {
        let _ = line.write_str("\n");
        // SAFETY: writes the initialized prefix of the buffer to stderr (async-signal-safe).
        unsafe { libc::write(2, line.bytes.as_ptr().cast(), line.len) };
        die(sig);
    }
    let i = SIGNALS.iter().position(|&s| s == sig).unwrap_or(0);
    // SAFETY: written once by `install` before the handler was installed; only read here.
    let previous = unsafe { (*std::ptr::addr_of!(PREVIOUS))[i] };
    match previous {
        Some(old)
            if old.sa_sigaction != libc::SIG_DFL
                && old.sa_sigaction != libc::SIG_IGN
                && old.sa_flags & libc::SA_SIGINFO != 0 =>
        {
            // SAFETY: the previous handler was installed with `SA_SIGINFO`, so it takes these
            // three arguments; they are the kernel's, passed on unchanged.
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(old.sa_sigaction) };
            f(sig, info, context);
        }
        _ => die(sig),
    }
}

/// Die of `sig`: its default action, raised again (the interrupted instruction would fault
/// again on return, but a `debugtrap` would not).
fn die(sig: libc::c_int) {
    // SAFETY: restoring the default action and raising are async-signal-safe; the signal is
    // blocked while this handler runs, so the raise ends the process as the handler returns.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// The location the handler wrote into a dead worker's stderr, and the stderr without that
/// line.
pub fn location_in(stderr: &str) -> (Option<String>, String) {
    let mut location = None;
    let mut rest = String::with_capacity(stderr.len());
    for line in stderr.lines() {
        match line.strip_prefix(MARK) {
            Some(at) if location.is_none() => location = Some(at.trim().to_string()),
            _ => {
                rest.push_str(line);
                rest.push('\n');
            }
        }
    }
    (location, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handlers_line_is_taken_out_of_the_stderr() {
        let stderr = format!("before\n{MARK}`main` at t.hot:4:5\nafter\n");
        let (at, rest) = location_in(&stderr);
        assert_eq!(at.as_deref(), Some("`main` at t.hot:4:5"));
        assert_eq!(rest, "before\nafter\n");
        assert_eq!(location_in("nothing\n").0, None);
    }

    #[test]
    fn a_long_line_is_cut_not_overflowed() {
        let mut line = Line {
            bytes: [0; 512],
            len: 0,
        };
        let _ = write!(line, "{}", "x".repeat(600));
        assert_eq!(line.len, 512);
    }
}
