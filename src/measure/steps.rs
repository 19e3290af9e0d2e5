//! Executed instructions without a PMU: a variant runs a few iterations with the x86 trap flag
//! (EFLAGS.TF) set, so the CPU raises a debug exception after every instruction it retires and
//! the kernel delivers it as `SIGTRAP` with `si_code == TRAP_TRACE`; a handler counts them.
//! Two runs with different iteration counts cancel the fixed cost (the call, the flag's own
//! `popf`, the variant's prologue) and leave the instructions one iteration executes:
//! `(count(n₂) - count(n₁)) / (n₂ - n₁)`. The count is exact and the same on every run; it
//! covers everything the calling thread executes, host calls included, but not other threads.
//!
//! The handler is installed once per process and passes every trap that is not a step to the
//! disposition it replaced; a step trap on a thread that is not counting has its flag cleared.
//! Counting looks at the job's cancel flag before it starts and every few hundred steps.
//!
//! A limit no handler can lift: the kernel delivers a trap that arrives while `SIGTRAP` is
//! blocked with the default action, which ends the process. Code that blocks every signal for a
//! moment (`pthread_create` does, around `clone`) therefore cannot be single-stepped: a variant
//! that spawns a thread in its counted runs ends the worker, which reports it as a crash. Script
//! code cannot spawn threads, and the two-thread twins start their helper before a job.
//!
//! A sibling count, [`instructions_inside`], also tells which of the stepped instructions lie in
//! one range of addresses (a twin's copy, `cases::twin_layouts`): the handler sees the
//! interrupted context's `rip`, the address of the next instruction, so the instruction that
//! just retired is at the `rip` of the trap before it; that one is counted as inside when the
//! range holds it. The same two runs give both figures, so nothing is stepped twice.
//!
//! A trap costs a signal delivery (a few µs in a VM), so counting is bounded: the handler clears
//! the flag once a run has taken [`STEP_LIMIT`] steps, and the count is then reported as too
//! long rather than as a number.

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::AtomicBool;

use super::variant::Variant;

/// Steps one counted run may take before the handler stops it (0.1–3 s of traps: a trap costs 2–60 µs in a VM, more on a loaded host).
pub const STEP_LIMIT: u64 = 50_000;

/// Iteration counts of the two counted runs.
const RUNS: (u64, u64) = (1, 3);

thread_local! {
    // Const-initialised and without a destructor, so the handler can touch it: no lazy
    // initialisation, no allocation.
    static STEPS: Cell<u64> = const { Cell::new(0) };
    static LIMIT_HIT: Cell<bool> = const { Cell::new(false) };
    // The range `[start, end)` of `instructions_inside` (empty when only counting), the steps
    // whose instruction lay in it.
    static RANGE: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
    static INSIDE: Cell<u64> = const { Cell::new(0) };
}

/// Instructions one iteration executes, and how many of them lie in a range of addresses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Inside {
    /// Instructions per iteration (what [`instructions_per_op`] says).
    pub per_op: f64,
    /// Those of them whose address is in the range.
    pub inside_per_op: f64,
}

impl Inside {
    /// The share of an iteration's instructions that lie in the range (0 when it executes
    /// none).
    pub fn share(&self) -> f64 {
        if self.per_op > 0.0 {
            self.inside_per_op / self.per_op
        } else {
            0.0
        }
    }
}

/// Why there is no count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepError {
    /// Not an x86-64 Linux machine.
    Unsupported,
    /// The `SIGTRAP` handler could not be installed.
    Handler(String),
    /// A run took more than [`STEP_LIMIT`] steps.
    TooLong {
        /// Iterations of the run that hit the limit.
        iters: u64,
    },
    /// The second run executed no more instructions than the first (the variant's work does
    /// not grow with its iteration count).
    NotGrowing,
    /// The instructions in the range of [`instructions_inside`] are fewer in the second run
    /// than in the first (work outside the iterations, such as a drop, depends on their count).
    InsideNotGrowing,
    /// The job was cancelled while a run was being stepped.
    Cancelled,
}

impl fmt::Display for StepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepError::Unsupported => f.write_str("single-step counting needs x86-64 Linux"),
            StepError::Handler(e) => write!(f, "could not install the SIGTRAP handler: {e}"),
            StepError::TooLong { iters } => write!(
                f,
                "{iters} iteration(s) execute more than {STEP_LIMIT} instructions: too long to \
                 single-step"
            ),
            StepError::NotGrowing => {
                f.write_str("the instruction count does not grow with the iterations")
            }
            StepError::InsideNotGrowing => {
                f.write_str("the instructions in its own function do not grow with the iterations")
            }
            StepError::Cancelled => f.write_str("cancelled while counting"),
        }
    }
}

/// Instructions one iteration of `v` executes, counted by single-stepping (see the module
/// text). Runs `v` with 1 and with 3 iterations.
pub fn instructions_per_op(v: &mut Variant) -> Result<f64, StepError> {
    instructions_per_op_cancellable(v, None)
}

/// [`instructions_per_op`], stopping within a few hundred steps once `cancel` is set.
pub fn instructions_per_op_cancellable(
    v: &mut Variant,
    cancel: Option<&AtomicBool>,
) -> Result<f64, StepError> {
    // An empty range: the same two runs, nothing counted as inside.
    instructions_inside(v, 0..0, cancel).map(|i| i.per_op)
}

/// Instructions the calling thread executes while `v` runs `n` iterations (the fixed cost of
/// the call included).
pub fn count(v: &mut Variant, n: u64) -> Result<u64, StepError> {
    imp::count(v, n, None)
}

/// [`instructions_per_op_cancellable`], and of those instructions the ones whose address lies
/// in `range` (a function's extent `start..start + len`), per iteration. The same two stepped
/// runs give both.
pub fn instructions_inside(
    v: &mut Variant,
    range: std::ops::Range<usize>,
    cancel: Option<&AtomicBool>,
) -> Result<Inside, StepError> {
    RANGE.with(|r| r.set((range.start, range.end)));
    let counted = (|| {
        let a = imp::count(v, RUNS.0, cancel)?;
        let a_in = INSIDE.with(|c| c.get());
        let b = imp::count(v, RUNS.1, cancel)?;
        let b_in = INSIDE.with(|c| c.get());
        Ok((a, a_in, b, b_in))
    })();
    RANGE.with(|r| r.set((0, 0)));
    let (a, a_in, b, b_in) = counted?;
    // An iteration executes at least its loop's own instructions: a second run that executed
    // no more than the first did the same work (a variant whose unit is coarser than one
    // iteration: binary-trees' twin makes one whole tree for 1 node and for 3), and its count
    // per iteration would read 0, not a count.
    if b <= a {
        return Err(StepError::NotGrowing);
    }
    if b_in < a_in {
        return Err(StepError::InsideNotGrowing);
    }
    let runs = (RUNS.1 - RUNS.0) as f64;
    Ok(Inside {
        per_op: (b - a) as f64 / runs,
        inside_per_op: (b_in - a_in) as f64 / runs,
    })
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod imp {
    use super::*;
    use std::sync::OnceLock;
    use std::sync::atomic::Ordering;

    const TF: u64 = 1 << 8;

    /// The disposition `SIGTRAP` had before ours, for traps that are not our steps.
    static PREVIOUS: OnceLock<Result<libc::sigaction, String>> = OnceLock::new();

    /// Steps between two looks at the cancel flag.
    const CANCEL_POLL: u64 = 256;

    thread_local! {
        static STEPPING: Cell<bool> = const { Cell::new(false) };
        static CANCEL: Cell<*const AtomicBool> = const { Cell::new(std::ptr::null()) };
        static CANCELLED: Cell<bool> = const { Cell::new(false) };
        static PREV_IP: Cell<usize> = const { Cell::new(0) };
    }

    extern "C" fn on_trap(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo and ucontext to an SA_SIGINFO handler.
        let (code, uc) = unsafe { ((*info).si_code, &mut *(ctx as *mut libc::ucontext_t)) };
        let ip = uc.uc_mcontext.gregs[libc::REG_RIP as usize] as usize;
        let flags = &mut uc.uc_mcontext.gregs[libc::REG_EFL as usize];
        let stepping = STEPPING.with(|s| s.get());
        if !is_step(code, *flags as u64 & TF != 0, stepping) {
            // Not a step (an `int3`, a trap another part of the process raised): what the
            // previous disposition would have done.
            previous(sig, info, ctx, ip);
            return;
        }
        if !stepping {
            // A trace trap on a thread that is not counting: a thread the variant spawned
            // while it was stepped inherits the flag. Clear it and go on; passing it to the
            // default disposition would end the process.
            *flags &= !(TF as i64);
            return;
        }
        let steps = STEPS.with(|s| {
            let n = s.get() + 1;
            s.set(n);
            n
        });
        // The instruction that just retired is where the previous trap's `rip` pointed.
        let retired = PREV_IP.with(|p| p.replace(ip));
        let (start, end) = RANGE.with(|r| r.get());
        if (start..end).contains(&retired) {
            INSIDE.with(|c| c.set(c.get() + 1));
        }
        let cancelled = steps.is_multiple_of(CANCEL_POLL) && {
            let c = CANCEL.with(|c| c.get());
            // SAFETY: `count` sets the pointer to a flag that outlives the counted run and
            // resets it to null before the flag can go away.
            !c.is_null() && unsafe { (*c).load(Ordering::Relaxed) }
        };
        if cancelled {
            CANCELLED.with(|l| l.set(true));
            *flags &= !(TF as i64);
        } else if steps >= STEP_LIMIT {
            LIMIT_HIT.with(|l| l.set(true));
            // The flags are restored from the saved context on return: clearing TF there ends
            // the stepping.
            *flags &= !(TF as i64);
        }
    }

    /// Whether a `SIGTRAP` with this `si_code`, from code running with the trap flag `tf`, on
    /// a thread that is `stepping`, is a single step. The kernel names a debug exception by the
    /// cause its `DR6` register records: `TRAP_TRACE` for a step. Some hypervisors deliver a
    /// step with that record lost, which the kernel then reports as `TRAP_BRKPT` (the code of
    /// an `int1`); with the trap flag set it is a step all the same, and so is the last step of
    /// a counted run, which arrives after the `popfq` that cleared the flag (the instruction
    /// traps because the flag was set when it began) while the thread is still stepping. A
    /// record that names a hardware breakpoint instead (`TRAP_HWBKPT`) is a step on a thread
    /// that is stepping (the process sets no breakpoints); elsewhere it goes on as before. An
    /// `int3` arrives as `SI_KERNEL` and is never one.
    pub(super) fn is_step(code: libc::c_int, tf: bool, stepping: bool) -> bool {
        code == libc::TRAP_TRACE
            || (code == libc::TRAP_BRKPT && (tf || stepping))
            || (code == libc::TRAP_HWBKPT && stepping)
    }

    fn previous(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void, ip: usize) {
        let Some(Ok(old)) = PREVIOUS.get() else {
            return;
        };
        let handler = old.sa_sigaction;
        if handler == libc::SIG_IGN {
            return;
        }
        if handler == libc::SIG_DFL {
            // The process ends: say why on stderr first, with what `write` can do in a handler.
            // SAFETY: `info` is the kernel's valid siginfo.
            say_fatal_trap(unsafe { (*info).si_code }, ip);
            // SAFETY: resets the default action and raises the signal again; it is blocked
            // while this handler runs, so it is delivered (and ends the process, as the default
            // would have) when the handler returns.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                libc::raise(sig);
            }
            return;
        }
        if old.sa_flags & libc::SA_SIGINFO != 0 {
            // SAFETY: the previous handler was installed with SA_SIGINFO: this is its type.
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(handler) };
            f(sig, info, ctx);
        } else {
            // SAFETY: a handler installed without SA_SIGINFO takes the signal number only.
            let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(handler) };
            f(sig);
        }
    }

    /// Writes "hotlab: SIGTRAP (si_code C) at 0xADDR is not a single step" to stderr without
    /// allocating or locking (a signal handler may not).
    fn say_fatal_trap(code: libc::c_int, ip: usize) {
        let mut buf = [0u8; 96];
        let mut len = 0;
        let mut put = |bytes: &[u8]| {
            for &b in bytes {
                if len < buf.len() {
                    buf[len] = b;
                    len += 1;
                }
            }
        };
        put(b"hotlab: SIGTRAP (si_code ");
        let (digits, start) = decimal(code);
        put(&digits[start..]);
        put(b") at 0x");
        let mut hex = [0u8; 16];
        for (i, h) in hex.iter_mut().enumerate() {
            *h = b"0123456789abcdef"[(ip >> ((15 - i) * 4)) & 0xf];
        }
        put(&hex);
        put(b" is not a single step\n");
        // SAFETY: writes `len` initialised bytes of `buf` to fd 2; `write` is async-signal-safe.
        unsafe {
            libc::write(2, buf.as_ptr().cast(), len);
        }
    }

    /// The decimal digits of `v`, sign first, at the end of a buffer: `(buffer, first)`.
    fn decimal(v: libc::c_int) -> ([u8; 12], usize) {
        let mut buf = [0u8; 12];
        let mut start = buf.len();
        let mut m = v.unsigned_abs();
        loop {
            start -= 1;
            buf[start] = b'0' + (m % 10) as u8;
            m /= 10;
            if m == 0 {
                break;
            }
        }
        if v < 0 {
            start -= 1;
            buf[start] = b'-';
        }
        (buf, start)
    }

    /// Installs the handler once per process; it stays, and passes other traps on.
    fn install() -> Result<(), StepError> {
        let r = PREVIOUS.get_or_init(|| {
            // SAFETY: a zeroed sigaction is a valid starting value; the handler is an
            // `extern "C"` fn with the SA_SIGINFO signature; `old` receives the previous one.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_trap as *const () as usize;
                sa.sa_flags = libc::SA_SIGINFO;
                libc::sigemptyset(&mut sa.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(libc::SIGTRAP, &sa, &mut old) != 0 {
                    return Err(std::io::Error::last_os_error().to_string());
                }
                Ok(old)
            }
        });
        r.as_ref()
            .map(|_| ())
            .map_err(|e| StepError::Handler(e.clone()))
    }

    /// Clears the trap flag and the thread's stepping mark when dropped, so a variant that
    /// unwinds out of a counted run stops being stepped as it leaves.
    struct StepGuard;

    impl StepGuard {
        fn start() -> StepGuard {
            STEPPING.with(|s| s.set(true));
            // SAFETY: setting TF only makes the CPU trap after each instruction; the handler
            // installed by `install` counts the traps and returns. pushf/popf use the stack,
            // which is why `nostack` is not given.
            unsafe {
                std::arch::asm!("pushfq", "or qword ptr [rsp], {tf}", "popfq", tf = const TF);
            }
            StepGuard
        }
    }

    impl Drop for StepGuard {
        fn drop(&mut self) {
            // SAFETY: as in `start`; clears TF.
            unsafe {
                std::arch::asm!(
                    "pushfq",
                    "and qword ptr [rsp], {mask}",
                    "popfq",
                    mask = const !TF as i32
                );
            }
            STEPPING.with(|s| s.set(false));
        }
    }

    #[inline(never)]
    fn stepped(v: &mut Variant, n: u64) -> u64 {
        let _guard = StepGuard::start();
        v.run(n)
    }

    pub(super) fn count(
        v: &mut Variant,
        n: u64,
        cancel: Option<&AtomicBool>,
    ) -> Result<u64, StepError> {
        install()?;
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Err(StepError::Cancelled);
        }
        STEPS.with(|s| s.set(0));
        INSIDE.with(|c| c.set(0));
        PREV_IP.with(|p| p.set(0));
        LIMIT_HIT.with(|l| l.set(false));
        CANCELLED.with(|l| l.set(false));
        CANCEL.with(|c| c.set(cancel.map_or(std::ptr::null(), |c| c as *const AtomicBool)));
        std::hint::black_box(stepped(v, n));
        CANCEL.with(|c| c.set(std::ptr::null()));
        if CANCELLED.with(|l| l.get()) {
            return Err(StepError::Cancelled);
        }
        if LIMIT_HIT.with(|l| l.get()) {
            return Err(StepError::TooLong { iters: n });
        }
        Ok(STEPS.with(|s| s.get()))
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
mod imp {
    use super::*;

    pub(super) fn count(
        _v: &mut Variant,
        _n: u64,
        _cancel: Option<&std::sync::atomic::AtomicBool>,
    ) -> Result<u64, StepError> {
        Err(StepError::Unsupported)
    }
}

#[cfg(all(test, target_arch = "x86_64", target_os = "linux"))]
mod tests {
    use super::*;
    use crate::measure::arch::add_chain;

    #[test]
    fn a_64_add_chain_counts_its_adds_and_its_loop_exactly_and_the_same_every_time() {
        // SAFETY: `add_chain` has the raw variant ABI and ignores its (null) ctx.
        let mut v = unsafe { Variant::raw("chain", add_chain::<64>, std::ptr::null_mut()) };
        let first = instructions_per_op(&mut v).unwrap();
        // 64 adds plus the loop's counter, compare and branch.
        assert!((64.0..=72.0).contains(&first), "{first}");
        for _ in 0..3 {
            assert_eq!(instructions_per_op(&mut v).unwrap(), first);
        }
    }

    #[test]
    fn a_step_is_known_by_its_code_or_by_the_trap_flag_when_the_code_lost_it() {
        for (tf, stepping) in [(true, true), (true, false), (false, true), (false, false)] {
            assert!(imp::is_step(libc::TRAP_TRACE, tf, stepping));
            // An `int3`, with or without stepping.
            assert!(!imp::is_step(libc::SI_KERNEL, tf, stepping));
        }
        // A step whose debug-status record a hypervisor lost: the kernel says TRAP_BRKPT.
        assert!(imp::is_step(libc::TRAP_BRKPT, true, true));
        // A thread that inherited the flag from a stepped one.
        assert!(imp::is_step(libc::TRAP_BRKPT, true, false));
        // The last step of a run: the `popfq` that cleared the flag still traps.
        assert!(imp::is_step(libc::TRAP_BRKPT, false, true));
        // An `int1` on a thread that is not stepping.
        assert!(!imp::is_step(libc::TRAP_BRKPT, false, false));
        // A record naming a hardware breakpoint (none is set) while stepping.
        assert!(imp::is_step(libc::TRAP_HWBKPT, false, true));
        assert!(imp::is_step(libc::TRAP_HWBKPT, true, true));
        // A hardware breakpoint on a thread that is not counting, flag or not.
        assert!(!imp::is_step(libc::TRAP_HWBKPT, true, false));
        assert!(!imp::is_step(libc::TRAP_HWBKPT, false, false));
    }

    /// The child's part of the test below: an `int3` while stepping.
    const INT3_CHILD: &str = "HOTLAB_TEST_INT3_WHILE_STEPPING";

    #[test]
    fn an_int3_while_stepping_ends_the_process_as_before_and_says_why() {
        if std::env::var_os(INT3_CHILD).is_some() {
            // No core file for the trap this child ends with.
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: sets this (child) process's core size limit from a valid struct.
            unsafe { libc::setrlimit(libc::RLIMIT_CORE, &none) };
            let mut v = Variant::native("int3", |n| {
                // SAFETY: a breakpoint; the process ends with SIGTRAP, which is the test.
                unsafe { std::arch::asm!("int3") };
                n
            });
            let _ = count(&mut v, 1);
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "measure::steps::tests::an_int3_while_stepping_ends_the_process_as_before_and_says_why",
                "--nocapture",
            ])
            .env(INT3_CHILD, "1")
            .output()
            .unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(libc::SIGTRAP), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("hotlab: SIGTRAP (si_code 128) at 0x")
                && err.contains("is not a single step"),
            "{err}"
        );
    }

    #[test]
    fn work_that_does_not_grow_with_the_iterations_has_no_count_not_zero() {
        // One fixed block of work whatever `n` is (as binary-trees' twin makes one whole tree
        // for 1 node and for 3): the same steps in both runs.
        let mut v = Variant::native("fixed", |_n| {
            let mut x = 0u64;
            for i in 0..100 {
                x = std::hint::black_box(x.wrapping_add(i));
            }
            x
        });
        assert_eq!(instructions_per_op(&mut v), Err(StepError::NotGrowing));
    }

    #[test]
    fn a_run_past_the_limit_is_too_long_and_the_thread_goes_on() {
        // SAFETY: as above.
        let mut v = unsafe { Variant::raw("chain", add_chain::<64>, std::ptr::null_mut()) };
        let n = STEP_LIMIT / 64 + 10;
        assert_eq!(count(&mut v, n), Err(StepError::TooLong { iters: n }));
        // Stepping ended with the limit: this runs at full speed, and counting works again.
        assert_eq!(v.run(1000), 64_000);
        assert!(count(&mut v, 1).unwrap() > 64);
    }

    #[test]
    fn a_cancel_ends_a_count_at_once_or_within_a_few_hundred_steps() {
        // SAFETY: as above.
        let mut v = unsafe { Variant::raw("chain", add_chain::<64>, std::ptr::null_mut()) };
        let cancel = AtomicBool::new(true);
        assert_eq!(
            instructions_per_op_cancellable(&mut v, Some(&cancel)),
            Err(StepError::Cancelled)
        );
        cancel.store(false, std::sync::atomic::Ordering::Relaxed);
        let n = instructions_per_op_cancellable(&mut v, Some(&cancel)).unwrap();
        assert!((64.0..=72.0).contains(&n), "{n}");
        // A cancel that arrives while a long run is stepped: the run goes on at full speed.
        let flag = std::sync::Arc::new(AtomicBool::new(false));
        let set = flag.clone();
        let mut long = Variant::native("sets the flag, then runs long", move |n| {
            set.store(true, std::sync::atomic::Ordering::Relaxed);
            let mut x = 0u64;
            for i in 0..n * 1_000_000 {
                x = std::hint::black_box(x.wrapping_add(i));
            }
            x
        });
        assert_eq!(
            instructions_per_op_cancellable(&mut long, Some(&flag)),
            Err(StepError::Cancelled)
        );
    }
}
