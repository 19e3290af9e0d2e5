//! Values inside the interpreter.

use std::rc::Rc;

use crate::backend::Value;
use crate::lang::hir::Type;
use crate::runtime::handle::Handle;

/// A value inside the interpreter.
#[derive(Debug, Clone)]
pub(super) enum Val {
    Unit,
    I(i64),
    F(f64),
    B(bool),
    A(Rc<Vec<Val>>),
    /// A handle owns one reference (cloning retains, dropping releases).
    H(Handle),
}

impl Val {
    pub(super) fn int(&self) -> i64 {
        match self {
            Val::I(v) => *v,
            _ => unreachable!("checked program: expected i64"),
        }
    }

    pub(super) fn bool(&self) -> bool {
        match self {
            Val::B(v) => *v,
            _ => unreachable!("checked program: expected bool"),
        }
    }

    pub(super) fn handle(&self) -> &Handle {
        match self {
            Val::H(h) => h,
            _ => unreachable!("checked program: expected a handle"),
        }
    }

    pub(super) fn array(&self) -> &Rc<Vec<Val>> {
        match self {
            Val::A(v) => v,
            _ => unreachable!("checked program: expected an array"),
        }
    }

    pub(super) fn from_value(v: &Value) -> Val {
        match v {
            Value::Unit => Val::Unit,
            Value::I64(x) => Val::I(*x),
            Value::F64(x) => Val::F(*x),
            Value::Bool(x) => Val::B(*x),
            Value::Array(items) => Val::A(Rc::new(items.iter().map(Val::from_value).collect())),
            // `fits` lets only `null` in: the host holds no reference to give.
            Value::Handle(_) => Val::H(Handle::null()),
        }
    }

    pub(super) fn to_value(&self) -> Value {
        match self {
            Val::Unit => Value::Unit,
            Val::I(x) => Value::I64(*x),
            Val::F(x) => Value::F64(*x),
            Val::B(x) => Value::Bool(*x),
            Val::A(items) => Value::Array(items.iter().map(Val::to_value).collect()),
            Val::H(h) => Value::Handle(h.cell()),
        }
    }
}

/// Whether a host value has a script type (for checking what the host passes in).
pub(super) fn fits(v: &Value, ty: &Type) -> bool {
    match (v, ty) {
        (Value::Unit, Type::Unit)
        | (Value::I64(_), Type::I64)
        | (Value::F64(_), Type::F64)
        | (Value::Bool(_), Type::Bool) => true,
        (Value::Handle(0), Type::Handle { nullable, .. }) => *nullable,
        (Value::Array(items), Type::Array(elem, n)) => {
            items.len() == *n as usize && items.iter().all(|i| fits(i, elem))
        }
        _ => false,
    }
}
