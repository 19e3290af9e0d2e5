//! The host table: the Rust code behind the functions a script may declare with `native fn`.
//!
//! The signatures are the language's ([`crate::lang::host`]); this table holds, at each of their
//! ids, a C-ABI function pointer (for JIT and object code) and a generic entry over raw 64-bit
//! cells (for the interpreter), so both backends call the very same Rust code. Its length is
//! [`HOST_COUNT`] by type, and a test checks that every entry sits at its signature's id.
//! Symbols carry the `hot_` prefix: the `object` backend exports exactly those from the binary.

use crate::lang::host::{HOST_COUNT, HOST_SIGNATURES};
pub use crate::lang::host::{HostSig, HostType};

/// One host function: the language's signature and the code behind it.
#[derive(Debug, Clone, Copy)]
pub struct HostFn {
    /// What the script sees: name, parameter and return types.
    pub sig: &'static HostSig,
    /// The exported symbol (`hot_sink`).
    pub symbol: &'static str,
    /// The `extern "C-unwind"` function, for generated code.
    pub ptr: *const u8,
    /// The same function over raw cells (an `i64`, `f64::to_bits`, or 0/1 for `bool`).
    pub call_cells: fn(&[u64]) -> u64,
}

// SAFETY: `ptr` points at a `fn` item, which is immutable code valid for the whole program.
unsafe impl Sync for HostFn {}
// SAFETY: as above; the pointer is never written through.
unsafe impl Send for HostFn {}

/// An opaque identity on `i64`: the optimizer cannot see through it (on either side of a
/// comparison: the native twins use it too).
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C-unwind" fn hot_sink(x: i64) -> i64 {
    std::hint::black_box(x)
}

/// An opaque identity on `f64`.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C-unwind" fn hot_sinkf(x: f64) -> f64 {
    std::hint::black_box(x)
}

/// Square root.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C-unwind" fn hot_sqrt(x: f64) -> f64 {
    x.sqrt()
}

/// Indexed by the language's host ids: entry `i` is the code of `HOST_SIGNATURES[i]`.
static HOST_TABLE: [HostFn; HOST_COUNT] = [
    HostFn {
        sig: &HOST_SIGNATURES[0],
        symbol: "hot_sink",
        ptr: hot_sink as *const u8,
        call_cells: |a| hot_sink(a[0] as i64) as u64,
    },
    HostFn {
        sig: &HOST_SIGNATURES[1],
        symbol: "hot_sinkf",
        ptr: hot_sinkf as *const u8,
        call_cells: |a| hot_sinkf(f64::from_bits(a[0])).to_bits(),
    },
    HostFn {
        sig: &HOST_SIGNATURES[2],
        symbol: "hot_sqrt",
        ptr: hot_sqrt as *const u8,
        call_cells: |a| hot_sqrt(f64::from_bits(a[0])).to_bits(),
    },
];

/// Every host function, in a fixed order (a `.clif` file imports them as `u0:0`, `u0:1`, ...).
pub fn host_table() -> &'static [HostFn] {
    &HOST_TABLE
}

/// Find a host function by its script name: its id and entry.
pub fn host_fn(name: &str) -> Option<(usize, &'static HostFn)> {
    let (id, _) = crate::lang::host::host_sig(name)?;
    Some((id, &HOST_TABLE[id]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_and_pointers_agree() {
        let (_, sqrt) = host_fn("sqrt").unwrap();
        assert_eq!(f64::from_bits((sqrt.call_cells)(&[16f64.to_bits()])), 4.0);
        let (i, sink) = host_fn("sink").unwrap();
        assert_eq!(i, 0);
        assert_eq!((sink.call_cells)(&[(-3i64) as u64]) as i64, -3);
        assert!(host_fn("nope").is_none());
    }

    #[test]
    fn every_entry_sits_at_its_signatures_id() {
        for (id, (host, sig)) in host_table().iter().zip(&HOST_SIGNATURES).enumerate() {
            assert!(
                std::ptr::eq(host.sig, sig),
                "entry {id} is not `{}`'s",
                sig.name
            );
            assert_eq!(host.symbol, format!("hot_{}", sig.name), "entry {id}");
        }
    }
}
