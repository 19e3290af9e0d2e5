//! The process's heap use, and the job's memory limit (`--mem`).
//!
//! A script that allocates without end (a vec pushed in a loop, `s += s`, a list of objects)
//! must fail with a located `ScriptError` ("out of memory"), not abort the process when the
//! allocator gives up. So:
//!
//! - [`Counting`] is the process's global allocator: the system allocator, counting the bytes
//!   it holds. Each thread counts into a thread-local tally and moves it into one shared atomic
//!   when it passes ±[`FLUSH`] bytes, so an allocation costs a few plain instructions, not a
//!   locked one; the shared count is exact to within `FLUSH` per live thread (what a thread
//!   still had in its tally when it ended is not counted: the worker's job thread lives as long
//!   as the worker). The allocator itself
//!   never fails for the limit (a global allocator must not unwind).
//! - Every allocation script code asks for (a string block, a vec's growth or copy, an object,
//!   a closure, a boxed array; the interpreter's values) first asks [`room`] whether the bytes
//!   fit under the limit: the heap in use when the job started plus the job's budget. If not,
//!   it raises `ScriptErrorKind::OutOfMemory` at the operation that allocates. A request the
//!   system allocator refuses (an address-space limit, `ulimit -v`) is raised the same way.
//! - The budget: `--mem` (every command that runs script code, `:set mem` in the sessions), or
//!   by default [`default_budget`]: half the machine's RAM, and no more than three quarters of
//!   the address space left under `RLIMIT_AS`.
//!
//! What the count covers is the whole process's heap after the job started: the job's compiled
//! code and the engine's buffers count against the budget too (a few MiB), which is why the
//! smallest budget accepted is [`MIN_BUDGET`].

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

use super::error::{ScriptError, ScriptErrorKind};

/// How far a thread's tally may drift before it is moved into [`USED`].
pub const FLUSH: isize = 256 << 10;
/// The smallest budget `--mem` takes.
pub const MIN_BUDGET: u64 = 8 << 20;
/// The largest budget `--mem` takes (1 TiB).
pub const MAX_BUDGET: u64 = 1 << 40;

/// Bytes held by the process's heap, as flushed by the threads.
static USED: AtomicIsize = AtomicIsize::new(0);
/// The heap size past which script allocations fail (`usize::MAX`: no limit).
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The job's budget (for the message), 0 when there is no limit.
static BUDGET: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's allocations minus frees not yet in [`USED`]. A `const` `Cell` of a type
    /// without drop: no destructor is registered, so it stays usable while the thread's other
    /// locals are torn down (and from inside the allocator, which must not allocate).
    static PENDING: Cell<isize> = const { Cell::new(0) };
}

/// Count `delta` bytes allocated (negative: freed) on this thread.
#[inline]
fn count(delta: isize) {
    let flushed = PENDING.try_with(|p| {
        let now = p.get() + delta;
        if (-FLUSH..=FLUSH).contains(&now) {
            p.set(now);
        } else {
            p.set(0);
            USED.fetch_add(now, Ordering::Relaxed);
        }
    });
    if flushed.is_err() {
        USED.fetch_add(delta, Ordering::Relaxed);
    }
}

/// The system allocator, counting what it holds (see the module's text).
pub struct Counting;

// SAFETY: every call is forwarded to `System` with the same arguments; the count is a side
// effect that neither allocates nor unwinds.
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// Bytes the process's heap holds now (exact for this thread's share, within [`FLUSH`] per
/// other thread).
pub fn used() -> u64 {
    let pending = PENDING.try_with(Cell::get).unwrap_or(0);
    (USED.load(Ordering::Relaxed) + pending).max(0) as u64
}

/// The limit of a job starting now: `budget` bytes more than the heap holds (`None`: no
/// limit). Set by the worker before each job.
pub fn start_job(budget: Option<u64>) {
    match budget {
        Some(b) => {
            let limit = used().saturating_add(b);
            BUDGET.store(usize::try_from(b).unwrap_or(usize::MAX), Ordering::Relaxed);
            LIMIT.store(
                usize::try_from(limit).unwrap_or(usize::MAX),
                Ordering::Relaxed,
            );
        }
        None => {
            BUDGET.store(0, Ordering::Relaxed);
            LIMIT.store(usize::MAX, Ordering::Relaxed);
        }
    }
}

/// The front end's `--mem` (0: not given), for the workers it starts.
static FLAG: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Set the front end's `--mem`: the budget of the jobs its workers run.
pub fn set_flag(bytes: Option<u64>) {
    FLAG.store(bytes.unwrap_or(0), Ordering::Relaxed);
}

/// The front end's `--mem`, if given.
pub fn flag() -> Option<u64> {
    Some(FLAG.load(Ordering::Relaxed)).filter(|&b| b != 0)
}

/// Why an allocation was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// It would pass the job's budget (the budget).
    Budget(u64),
    /// The system allocator returned no memory.
    System,
}

/// Whether `bytes` more fit under the job's limit: `Err` with the budget when they do not.
#[inline]
pub fn room(bytes: usize) -> Result<(), Refused> {
    let limit = LIMIT.load(Ordering::Relaxed);
    if limit == usize::MAX {
        return Ok(());
    }
    room_under(limit, bytes)
}

/// Raise `OutOfMemory` at the script operation calling (see [`ScriptError::raise_here`])
/// unless `bytes` more fit under the job's limit: for the runtime's allocations on behalf of
/// script code, before they allocate.
#[inline]
pub fn ensure(bytes: usize) {
    if let Err(why) = room(bytes) {
        refuse(bytes, why)
    }
}

/// Make room in `out` for about `more` bytes of text a script is building (a value shown):
/// the growth must fit the job's limit, and the system must give it, else `OutOfMemory` is
/// raised (see [`ensure`]). Doubles, so a long text is checked a logarithmic number of times.
#[inline]
pub fn reserve_text(out: &mut String, more: usize) {
    if out.capacity() - out.len() >= more {
        return;
    }
    let grow = more.max(out.capacity()).max(64);
    ensure(grow);
    if out.try_reserve(grow).is_err() {
        refuse(grow, Refused::System);
    }
}

/// Raise `OutOfMemory` for `_bytes` refused for `why` (the count is for a debugger: the
/// message leaves it out, see `ScriptErrorKind::OutOfMemory`).
#[cold]
#[inline(never)]
pub fn refuse(_bytes: usize, why: Refused) -> ! {
    ScriptError::raise_here(ScriptErrorKind::out_of_memory(why))
}

#[cold]
#[inline(never)]
fn room_under(limit: usize, bytes: usize) -> Result<(), Refused> {
    if fits(used(), limit as u64, bytes) {
        Ok(())
    } else {
        Err(Refused::Budget(BUDGET.load(Ordering::Relaxed) as u64))
    }
}

/// Whether `bytes` more on a heap of `used` stay within `limit`.
fn fits(used: u64, limit: u64, bytes: usize) -> bool {
    used.saturating_add(bytes as u64) <= limit
}

/// The default budget of a job: half the machine's RAM, and at most three quarters of the
/// address space left under `RLIMIT_AS` (so `ulimit -v` ends in a located error, not an
/// abort). `None` when neither can be read.
pub fn default_budget() -> Option<u64> {
    let ram = total_ram().map(|r| r / 2);
    let space = address_space_left().map(|s| s / 4 * 3);
    match (ram, space) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
    .map(|b| b.max(MIN_BUDGET))
}

/// `MemTotal` of /proc/meminfo, in bytes (read once: the worker asks at every job).
fn total_ram() -> Option<u64> {
    static RAM: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *RAM.get_or_init(|| {
        let text = std::fs::read_to_string("/proc/meminfo").ok()?;
        kib_field(&text, "MemTotal:")
    })
}

/// `RLIMIT_AS` minus the address space mapped now (`VmSize`), when the limit is set.
fn address_space_left() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid out-pointer for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } != 0
        || lim.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let mapped = kib_field(&status, "VmSize:")?;
    Some(lim.rlim_cur.saturating_sub(mapped))
}

/// The `NAME:   1234 kB` line of a /proc file, in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line[name.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// `SIZE` as `--mem` and `:set mem` take it: bytes, or a number with `K`, `M`, `G` or `T`
/// (powers of 1024; `KiB`, `MB`, ... read the same), within [`MIN_BUDGET`]..=[`MAX_BUDGET`].
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        other => {
            return Err(format!(
                "`{text}` is not a size: unknown unit `{other}` (give e.g. 512M, 2G or a byte count)"
            ));
        }
    };
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a size (give e.g. 512M, 2G or a byte count)"))?;
    let bytes = value * scale as f64;
    if !(bytes >= MIN_BUDGET as f64 && bytes <= MAX_BUDGET as f64) {
        return Err(format!(
            "{text} is out of range: give {} to {} (e.g. 512M, 2G)",
            show_bytes(MIN_BUDGET),
            show_bytes(MAX_BUDGET)
        ));
    }
    Ok(bytes as u64)
}

/// `1.5 GiB`, `512 MiB`, `300 B`: a byte count for messages.
pub fn show_bytes(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (name, size) in UNITS {
        if bytes >= size {
            let v = bytes as f64 / size as f64;
            return if v.fract() == 0.0 {
                format!("{v:.0} {name}")
            } else {
                format!("{v:.1} {name}")
            };
        }
    }
    format!("{bytes} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units_and_ranges() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("16 mb"), Ok(16 << 20));
        assert_eq!(parse_size("8388608"), Ok(8 << 20));
        assert!(parse_size("1M").unwrap_err().contains("out of range"));
        assert!(parse_size("2P").unwrap_err().contains("unknown unit"));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("").is_err());
    }

    #[test]
    fn bytes_show_in_the_largest_unit() {
        assert_eq!(show_bytes(3 << 29), "1.5 GiB");
        assert_eq!(show_bytes(512 << 20), "512 MiB");
        assert_eq!(show_bytes(300), "300 B");
    }

    #[test]
    fn the_count_follows_this_threads_allocations() {
        // On a thread of its own, so other tests' allocations do not move this one's tally.
        std::thread::spawn(|| {
            let before = used();
            let big: Vec<u8> = Vec::with_capacity(8 << 20);
            let during = used();
            drop(big);
            let after = used();
            assert!(
                during >= before + (8 << 20) - FLUSH as u64,
                "{before} -> {during}"
            );
            assert!(
                after + (8 << 20) <= during + FLUSH as u64,
                "{during} -> {after}"
            );
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_limit_refuses_what_passes_it() {
        // (The process-wide limit itself is set by the worker per job: tests/faults_cli.rs.)
        assert!(fits(100, 200, 100));
        assert!(!fits(100, 200, 101));
        assert!(!fits(u64::MAX - 1, u64::MAX - 1, usize::MAX));
        // No job limit: everything fits.
        assert_eq!(room(usize::MAX), Ok(()));
    }

    #[test]
    fn proc_fields_read_in_bytes() {
        let text = "MemTotal:       24576000 kB\nMemFree: 1 kB\n";
        assert_eq!(kib_field(text, "MemTotal:"), Some(24_576_000 * 1024));
        assert_eq!(kib_field(text, "Nope:"), None);
    }
}
