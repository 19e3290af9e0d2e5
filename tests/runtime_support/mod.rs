//! Shared helpers for the runtime tests: class definitions and `extern "C-unwind"` stand-ins for
//! the methods the JIT will generate.
#![allow(dead_code)]

use std::ffi::c_void;
use std::sync::Arc;

use hotlab::runtime::class::{ClassDef, Field, FieldType, Init, MethodDef};
use hotlab::runtime::iface::{BenchRun, HookCall, Signature};
use hotlab::runtime::object::Object;

pub fn field(name: &str, ty: FieldType, init: Init) -> Field {
    Field {
        name: name.into(),
        ty,
        init,
    }
}

pub fn int(name: &str, v: i64) -> Field {
    field(name, FieldType::I64, Init::Bits(v as u64))
}

pub fn float(name: &str, v: f64) -> Field {
    field(name, FieldType::F64, Init::Bits(v.to_bits()))
}

pub fn boolean(name: &str, v: bool) -> Field {
    field(name, FieldType::Bool, Init::Bits(v as u64))
}

/// `name: class?` initialized to `null`.
pub fn link(name: &str, class: &str) -> Field {
    field(
        name,
        FieldType::Handle {
            class: class.into(),
            nullable: true,
        },
        Init::Bits(0),
    )
}

pub fn hook(code: extern "C-unwind" fn(*mut c_void, *const Object) -> i64) -> MethodDef {
    MethodDef {
        name: "call".into(),
        sig: HookCall::sig(),
        code: code as *const c_void,
        host_entry: std::ptr::null(),
    }
}

pub fn bench(code: extern "C-unwind" fn(*mut c_void, *const Object, i64) -> i64) -> MethodDef {
    MethodDef {
        name: "run".into(),
        sig: BenchRun::sig(),
        code: code as *const c_void,
        host_entry: std::ptr::null(),
    }
}

pub fn class(name: &str, fields: Vec<Field>, methods: Vec<MethodDef>) -> ClassDef {
    ClassDef {
        name: Arc::from(name),
        parent: None,
        fields,
        methods,
        vmctx: std::ptr::null_mut(),
    }
}

/// Cell `i` of `this`'s state, as generated code reads it (`load [state + 8*i]`).
///
/// # Safety
/// `this` is a live, attached shell inside a call, and `i` is inside its layout.
pub unsafe fn cell(this: *const Object, i: usize) -> *mut u64 {
    // SAFETY: per the contract, `this` is live and attached, so its state has cell `i`.
    unsafe { (*this).state_ptr().add(i) }
}

/// `self.n += 1; return self.n` with `n` in cell 0.
pub extern "C-unwind" fn count_call(_: *mut c_void, this: *const Object) -> i64 {
    // SAFETY: called through the border on an attached object whose cell 0 is `n: i64`.
    unsafe {
        let n = cell(this, 0);
        *n += 1;
        *n as i64
    }
}

/// Returns 7.
pub extern "C-unwind" fn seven(_: *mut c_void, _: *const Object) -> i64 {
    7
}

/// Returns 8.
pub extern "C-unwind" fn eight(_: *mut c_void, _: *const Object) -> i64 {
    8
}

/// Returns its argument.
pub extern "C-unwind" fn identity(_: *mut c_void, _: *const Object, n: i64) -> i64 {
    n
}
