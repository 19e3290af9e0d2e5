//! The host's functions as the checker sees them: each one's script name and signature, at a
//! fixed index (its id).
//!
//! A script declares one with `native fn` and the checker resolves the declaration against
//! [`host_signatures`]; [`NativeImport::host`](super::hir::NativeImport::host) is the id. The code
//! behind each id is the runtime's host table (`runtime::host`), which is indexed by these ids
//! and has exactly [`HOST_COUNT`] entries, so the two lists cannot drift apart.

use super::hir::Type;

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

/// What the host declares for one function.
#[derive(Debug, Clone, Copy)]
pub struct HostSig {
    /// The name a script declares (`native fn sink(x: i64) -> i64`).
    pub name: &'static str,
    /// Parameter types.
    pub params: &'static [HostType],
    /// Return type.
    pub ret: HostType,
    /// One line for `:help` and docs.
    pub doc: &'static str,
}

impl HostSig {
    /// The signature as a script type: `fn(i64) -> i64` (no arrow for unit).
    pub fn signature(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|t| t.to_type().to_string())
            .collect();
        let ret = match self.ret {
            HostType::Unit => String::new(),
            t => format!(" -> {}", t.to_type()),
        };
        format!("fn({}){ret}", params.join(", "))
    }
}

/// How many host functions there are (the length of both this list and the runtime's table).
pub const HOST_COUNT: usize = 3;

/// Every host function's signature, at its id (see [`host_signatures`]).
pub static HOST_SIGNATURES: [HostSig; HOST_COUNT] = [
    HostSig {
        name: "sink",
        params: &[HostType::I64],
        ret: HostType::I64,
        doc: "returns its argument, hidden from the optimizer (a black box)",
    },
    HostSig {
        name: "sinkf",
        params: &[HostType::F64],
        ret: HostType::F64,
        doc: "returns its f64 argument, hidden from the optimizer (a black box)",
    },
    HostSig {
        name: "sqrt",
        params: &[HostType::F64],
        ret: HostType::F64,
        doc: "square root (IEEE 754; negative gives NaN)",
    },
];

/// Every host function's signature, in id order (a `.clif` file imports them as `u0:0`,
/// `u0:1`, ...).
pub fn host_signatures() -> &'static [HostSig; HOST_COUNT] {
    &HOST_SIGNATURES
}

/// Find a host function by its script name: its id and signature.
pub fn host_sig(name: &str) -> Option<(usize, &'static HostSig)> {
    HOST_SIGNATURES
        .iter()
        .enumerate()
        .find(|(_, f)| f.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_to_their_ids() {
        let (i, sink) = host_sig("sink").unwrap();
        assert_eq!(i, 0);
        assert_eq!(sink.signature(), "fn(i64) -> i64");
        assert_eq!(host_sig("sqrt").unwrap().0, 2);
        assert!(host_sig("nope").is_none());
    }
}
