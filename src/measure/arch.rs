//! The few machine-level pieces the engine needs, in one small file: fenced TSC reads, CPUID
//! feature bits and a dependent `add` chain the compiler cannot fold.
//!
//! Everything here is x86-64 only; other targets get the OS clock and no core-clock estimate.

/// Reads the TSC at the start of a timed region: `lfence; rdtsc` so that earlier instructions
/// have completed before the read (Intel SDM vol. 2B, RDTSC; Paoloni, "How to benchmark code
/// execution times on Intel IA-32 and IA-64", 2010).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn tsc_start() -> u64 {
    use core::arch::x86_64::{_mm_lfence, _rdtsc};
    // SAFETY: `lfence` and `rdtsc` are available on every x86-64 CPU and touch no memory.
    unsafe {
        _mm_lfence();
        let t = _rdtsc();
        _mm_lfence();
        t
    }
}

/// Reads the TSC at the end of a timed region: `rdtscp; lfence` — `rdtscp` waits for earlier
/// instructions, the `lfence` keeps later ones from starting before the read.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn tsc_end() -> u64 {
    use core::arch::x86_64::{__rdtscp, _mm_lfence};
    let mut aux = 0u32;
    // SAFETY: `rdtscp` writes only `aux`, a local; the caller checked RDTSCP support through
    // `has_rdtscp` before building a TSC timer.
    unsafe {
        let t = __rdtscp(&mut aux);
        _mm_lfence();
        t
    }
}

#[cfg(target_arch = "x86_64")]
fn cpuid(leaf: u32) -> core::arch::x86_64::CpuidResult {
    // CPUID exists on every x86-64 CPU; unsupported leaves are guarded by the max-leaf checks.
    core::arch::x86_64::__cpuid(leaf)
}

/// CPU facts read with CPUID (none of them from `/proc`, so they are true for this machine).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct CpuidFacts {
    /// CPUID 0x8000_0007 EDX bit 8: the TSC runs at a constant rate in all P-, C- and T-states.
    pub invariant_tsc: bool,
    /// CPUID 0x8000_0001 EDX bit 27: `rdtscp` exists.
    pub rdtscp: bool,
    /// CPUID 1 ECX bit 31: running under a hypervisor.
    pub hypervisor: bool,
}

/// Reads [`CpuidFacts`]; all false off x86-64.
pub fn cpuid_facts() -> CpuidFacts {
    #[cfg(target_arch = "x86_64")]
    {
        let max_ext = cpuid(0x8000_0000).eax;
        let invariant_tsc = max_ext >= 0x8000_0007 && cpuid(0x8000_0007).edx & (1 << 8) != 0;
        let rdtscp = max_ext >= 0x8000_0001 && cpuid(0x8000_0001).edx & (1 << 27) != 0;
        let hypervisor = cpuid(1).ecx & (1 << 31) != 0;
        CpuidFacts {
            invariant_tsc,
            rdtscp,
            hypervisor,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    CpuidFacts::default()
}

/// Runs `n` iterations of a chain of `K` dependent register-register `add`s (inline asm, so the
/// compiler can neither fold nor vectorise it) and returns the sum. One iteration costs K
/// cycles on any out-of-order x86 core (one add per cycle along the dependency), plus loop
/// overhead that runs in parallel; uarch-bench times such a chain to turn time into cycles.
/// The added value is a register, never an immediate: some cores (Intel Golden Cove and later)
/// fold chains of `add reg, imm` at rename and retire more than one per cycle.
///
/// The signature is the raw variant ABI, so the doctor exercises that path too.
pub extern "C-unwind" fn add_chain<const K: usize>(_ctx: *mut core::ffi::c_void, n: u64) -> u64 {
    let mut acc = 0u64;
    for _ in 0..n {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the asm only adds to a register operand; it touches no memory and no stack.
        unsafe {
            core::arch::asm!(
                ".rept {k}",
                "add {acc}, {one}",
                ".endr",
                k = const K,
                acc = inout(reg) acc,
                one = in(reg) 1u64,
                options(nomem, nostack),
            );
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            acc = core::hint::black_box(acc + K as u64);
        }
    }
    acc
}

/// A raw variant that does nothing: used to measure the per-sample overhead of the harness.
pub extern "C-unwind" fn empty_variant(_ctx: *mut core::ffi::c_void, n: u64) -> u64 {
    core::hint::black_box(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_chain_sums() {
        assert_eq!(add_chain::<4>(core::ptr::null_mut(), 10), 40);
        assert_eq!(add_chain::<9>(core::ptr::null_mut(), 0), 0);
    }
}
