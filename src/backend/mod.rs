//! Backends: how a checked program becomes something that runs.
//!
//! - `interp`: the reference semantics, a tree-walking interpreter over the HIR.
//! - `jit`: Cranelift JIT in process.
//! - `object`: Cranelift object file, linked into a shared library and loaded with `dlopen`.
//!
//! [`load`] is the one way in: it turns a script into a [`Loaded`] program on a [`Backend`]
//! (see `load.rs`); the engine measures it through a [`Sampler`].

pub mod disasm;
pub mod hook;
pub mod interp;
pub mod jit;
mod kind;
pub mod load;
mod load_times;
pub mod object;
pub mod objects;
pub mod relocate;
pub mod sample;

pub use hook::HookVia;
pub use jit::layout::MAX_LAYOUTS;
pub use kind::Backend;
pub use load::{
    CallError, LoadError, LoadOptions, Loaded, Loader, Workload, WorkloadError, is_clif, load,
};
pub use load_times::LoadTimes;
pub use sample::{Sampler, WorkloadFault};

use std::fmt;

use crate::lang::hir::Type;

/// Run-time checks that `--checks on|off` switches (index bounds; division by zero is always
/// checked because the hardware would trap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Checks {
    /// Index bounds are checked (the default).
    #[default]
    On,
    /// Index bounds are not checked.
    Off,
}

/// A value crossing the host border: arguments of and results from a script function.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// No value.
    Unit,
    /// An `i64`.
    I64(i64),
    /// An `f64`.
    F64(f64),
    /// A `bool`.
    Bool(bool),
    /// A fixed array.
    Array(Vec<Value>),
    /// A handle, as its raw cell (0 is `null`). The host holds no reference through it: it
    /// names an object, it does not keep it alive.
    Handle(u64),
    /// A `vec<T>`, its elements copied out.
    Vec(Vec<Value>),
    /// A `str`.
    Str(String),
    /// A closure, as interpolation shows it (`<fn(i64) -> i64>`; empty for one not
    /// initialized yet). The host cannot pass one in.
    Fn(String),
}

impl Value {
    /// The zero value of a type (what an uninitialized cell holds).
    pub fn zero(ty: &Type) -> Value {
        match ty {
            Type::Unit => Value::Unit,
            Type::I64 => Value::I64(0),
            Type::F64 => Value::F64(0.0),
            Type::Bool => Value::Bool(false),
            Type::Array(elem, n) => Value::Array(vec![Value::zero(elem); *n as usize]),
            Type::Handle { .. } | Type::Null => Value::Handle(0),
            Type::Vec(_) => Value::Vec(Vec::new()),
            Type::Str => Value::Str(String::new()),
            Type::Fn { .. } => Value::Fn(String::new()),
        }
    }

    /// Equal results, with floats compared bit for bit (so NaN equals the same NaN), which is
    /// what "same result on every backend" means.
    pub fn same_as(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::F64(a), Value::F64(b)) => a.to_bits() == b.to_bits(),
            (Value::Array(a), Value::Array(b)) | (Value::Vec(a), Value::Vec(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_as(y))
            }
            (a, b) => a == b,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Unit => f.write_str("()"),
            Value::I64(v) => write!(f, "{v}"),
            Value::F64(v) => write!(f, "{v:?}"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Array(items) | Value::Vec(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    match v {
                        // Inside a list a string is quoted, as interpolation shows it.
                        Value::Str(s) => write!(f, "{s:?}")?,
                        v => write!(f, "{v}")?,
                    }
                }
                f.write_str("]")
            }
            Value::Str(s) => f.write_str(s),
            Value::Handle(0) => f.write_str("null"),
            Value::Handle(cell) => write!(
                f,
                "<object {:#x}>",
                cell & crate::runtime::handle::ADDR_MASK
            ),
            Value::Fn(shown) if shown.is_empty() => f.write_str("<fn: not initialized>"),
            Value::Fn(shown) => f.write_str(shown),
        }
    }
}
