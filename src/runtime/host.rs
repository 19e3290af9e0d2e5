//! The host table: the Rust functions a script may declare with `native fn` and call.
//!
//! Every entry has a C-ABI function pointer (for JIT and object code) and a generic entry over
//! raw 64-bit cells (for the interpreter), so both backends call the very same Rust code.
//! Symbols carry the `hot_` prefix: the `object` backend exports exactly those from the binary.

use crate::lang::hir::Type;

/// A scalar type in a host signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostType {
    /// `i64`
    I64,
    /// `f64`
    F64,
    /// `bool`
    Bool,
    /// no value
    Unit,
}

impl HostType {
    /// The script type it corresponds to.
    pub fn to_type(self) -> Type {
        match self {
            HostType::I64 => Type::I64,
            HostType::F64 => Type::F64,
            HostType::Bool => Type::Bool,
            HostType::Unit => Type::Unit,
        }
    }
}

/// One host function.
#[derive(Debug, Clone, Copy)]
pub struct HostFn {
    /// The name a script declares (`native fn sink(x: i64) -> i64`).
    pub name: &'static str,
    /// The exported symbol (`hot_sink`).
    pub symbol: &'static str,
    /// Parameter types.
    pub params: &'static [HostType],
    /// Return type.
    pub ret: HostType,
    /// The `extern "C-unwind"` function, for generated code.
    pub ptr: *const u8,
    /// The same function over raw cells (an `i64`, `f64::to_bits`, or 0/1 for `bool`).
    pub call_cells: fn(&[u64]) -> u64,
    /// One line for `:help` and docs.
    pub doc: &'static str,
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

static HOST_TABLE: [HostFn; 3] = [
    HostFn {
        name: "sink",
        symbol: "hot_sink",
        params: &[HostType::I64],
        ret: HostType::I64,
        ptr: hot_sink as *const u8,
        call_cells: |a| hot_sink(a[0] as i64) as u64,
        doc: "returns its argument, hidden from the optimizer (a black box)",
    },
    HostFn {
        name: "sinkf",
        symbol: "hot_sinkf",
        params: &[HostType::F64],
        ret: HostType::F64,
        ptr: hot_sinkf as *const u8,
        call_cells: |a| hot_sinkf(f64::from_bits(a[0])).to_bits(),
        doc: "returns its f64 argument, hidden from the optimizer (a black box)",
    },
    HostFn {
        name: "sqrt",
        symbol: "hot_sqrt",
        params: &[HostType::F64],
        ret: HostType::F64,
        ptr: hot_sqrt as *const u8,
        call_cells: |a| hot_sqrt(f64::from_bits(a[0])).to_bits(),
        doc: "square root (IEEE 754; negative gives NaN)",
    },
];

/// Every host function, in a fixed order (a `.clif` file imports them as `u0:0`, `u0:1`, ...).
pub fn host_table() -> &'static [HostFn] {
    &HOST_TABLE
}

/// Find a host function by its script name.
pub fn host_fn(name: &str) -> Option<(usize, &'static HostFn)> {
    HOST_TABLE.iter().enumerate().find(|(_, f)| f.name == name)
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
}
