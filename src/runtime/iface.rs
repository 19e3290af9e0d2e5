//! The method ABI, the one typed wrapper that calls code pointers, and the host interfaces.
//!
//! Every method of a script class has the machine signature
//! `extern "C-unwind" fn(vmctx: *mut c_void, this: *const Object, args...) -> ret`
//! where `this` is the object's shell (generated code loads the state block from
//! [`Object::STATE`](crate::runtime::object::Object::STATE) once at entry; a reload never runs
//! while a call is inside, so that load may be hoisted within the call). Arguments and results
//! are scalars ([`AbiScalar`]); a handle crosses as its 8-byte cell.

use std::ffi::c_void;
use std::sync::Arc;

use crate::runtime::class::IfaceMethod;
use crate::runtime::error::ScriptError;
use crate::runtime::object::Object;

/// A machine type in a method signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AbiType {
    /// `i64` (also a handle cell, as its raw bits).
    I64,
    /// `f64`.
    F64,
    /// `bool` (one byte, 0 or 1).
    Bool,
}

/// A method's signature after `(vmctx, this)`; `ret: None` returns nothing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AbiSig {
    /// Parameter types.
    pub params: Vec<AbiType>,
    /// Result type.
    pub ret: Option<AbiType>,
    /// The script types (`(vec<i64>, str) -> C?`) when one of them is a cell ([`AbiType::I64`]
    /// at the machine level) that is not an `i64`: a handle, a vec, a string. Two methods with
    /// one machine signature but other cell types (`vec<i64>` / `str`, `vec<i64>` /
    /// `vec<str>`) are then different signatures, which a reload refuses to swap. `None` for
    /// scalars only (so the host interfaces' signatures compare as before).
    pub cells: Option<Arc<str>>,
}

impl AbiSig {
    /// `(params) -> ret` of scalars.
    pub fn new(params: &[AbiType], ret: Option<AbiType>) -> AbiSig {
        AbiSig {
            params: params.to_vec(),
            ret,
            cells: None,
        }
    }

    /// `(params) -> ret` whose cells have the script types `cells` (see [`AbiSig::cells`]).
    pub fn with_cells(mut self, cells: Option<Arc<str>>) -> AbiSig {
        self.cells = cells;
        self
    }
}

/// A Rust type that crosses the method ABI as one register.
pub trait AbiScalar: Copy + 'static {
    /// Its machine type.
    const TYPE: AbiType;
}

impl AbiScalar for i64 {
    const TYPE: AbiType = AbiType::I64;
}
impl AbiScalar for f64 {
    const TYPE: AbiType = AbiType::F64;
}
impl AbiScalar for bool {
    const TYPE: AbiType = AbiType::Bool;
}

/// A method signature known to Rust: the typed wrapper through which Rust calls slot pointers.
pub trait Signature {
    /// The arguments after `(vmctx, this)`, as a tuple.
    type Args: Copy;
    /// The result.
    type Ret;
    /// The signature as data (checked against a method's declared one before its slot is used).
    fn sig() -> AbiSig;
    /// Call `code` with this signature.
    ///
    /// # Safety
    /// `code` must be non-null and point at a function with exactly this machine signature
    /// (`extern "C-unwind" fn(*mut c_void, *const Object, Args...) -> Ret`), and `this` at a live
    /// shell whose state block that function may use.
    unsafe fn invoke(
        code: *const c_void,
        vmctx: *mut c_void,
        this: *const Object,
        args: Self::Args,
    ) -> Self::Ret;
}

/// The signature `fn(self, A...) -> R` (as a type: `Sig<(A, B), R>`).
pub struct Sig<A, R>(std::marker::PhantomData<fn(A) -> R>);

macro_rules! impl_sig {
    ($($a:ident),*) => {
        impl<$($a: AbiScalar,)* R: AbiScalar> Signature for Sig<($($a,)*), R> {
            type Args = ($($a,)*);
            type Ret = R;
            fn sig() -> AbiSig {
                AbiSig { params: vec![$($a::TYPE),*], ret: Some(R::TYPE), cells: None }
            }
            #[inline(always)]
            #[allow(non_snake_case)]
            unsafe fn invoke(
                code: *const c_void,
                vmctx: *mut c_void,
                this: *const Object,
                ($($a,)*): Self::Args,
            ) -> R {
                // SAFETY: the caller guarantees `code` has this exact signature; fn pointers and
                // data pointers have one size and representation on every target we build for.
                let f: extern "C-unwind" fn(*mut c_void, *const Object $(, $a)*) -> R =
                    unsafe { std::mem::transmute(code) };
                f(vmctx, this $(, $a)*)
            }
        }
    };
}

impl_sig!();
impl_sig!(A);
impl_sig!(A, B);
impl_sig!(A, B, C);

/// `Hook.call`: `fn call(self) -> i64`.
pub type HookCall = Sig<(), i64>;
/// `Bench.run`: `fn run(self, n: i64) -> i64`.
pub type BenchRun = Sig<(i64,), i64>;

/// The signature of a host-interface method: which of the class's interface entries
/// ([`Class::iface_code`](crate::runtime::class::Class::iface_code)) holds its code.
pub trait IfaceSig: Signature {
    /// The method.
    const METHOD: IfaceMethod;
}

impl IfaceSig for HookCall {
    const METHOD: IfaceMethod = IfaceMethod::HookCall;
}
impl IfaceSig for BenchRun {
    const METHOD: IfaceMethod = IfaceMethod::BenchRun;
}

/// The host interface `Hook`: the host loops calls to it.
pub trait Hook {
    /// One call.
    fn call(&self) -> Result<i64, ScriptError>;
}

/// The host interface `Bench`: the script loops `n` times and returns a checksum.
pub trait Bench {
    /// Run `n` iterations.
    fn run(&self, n: i64) -> Result<i64, ScriptError>;
}

/// The native twin of a `Hook` counter (`self.n += 1; return self.n`): a plain virtual call.
#[derive(Debug, Default)]
pub struct NativeCounter {
    n: std::cell::Cell<i64>,
}

impl Hook for NativeCounter {
    #[inline(never)]
    fn call(&self) -> Result<i64, ScriptError> {
        let n = self.n.get() + 1;
        self.n.set(n);
        Ok(n)
    }
}

/// The native twin of a `Bench` sum (`s += i` for `i in 0..n`, through a black box).
#[derive(Debug, Default)]
pub struct NativeSum;

impl Bench for NativeSum {
    #[inline(never)]
    fn run(&self, n: i64) -> Result<i64, ScriptError> {
        let mut s = 0i64;
        for i in 0..n {
            s = s.wrapping_add(std::hint::black_box(i));
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C-unwind" fn add(_: *mut c_void, _: *const Object, a: i64, b: i64) -> i64 {
        a + b
    }

    #[test]
    fn typed_wrapper_calls_with_the_signature() {
        assert_eq!(
            Sig::<(i64, i64), i64>::sig(),
            AbiSig::new(&[AbiType::I64, AbiType::I64], Some(AbiType::I64))
        );
        // SAFETY: `add` has exactly the signature `Sig<(i64, i64), i64>` describes and ignores
        // `this`.
        let r = unsafe {
            Sig::<(i64, i64), i64>::invoke(
                add as *const c_void,
                std::ptr::null_mut(),
                std::ptr::null(),
                (2, 3),
            )
        };
        assert_eq!(r, 5);
    }

    #[test]
    fn twins() {
        let c = NativeCounter::default();
        c.call().unwrap();
        assert_eq!(c.call().unwrap(), 2);
        assert_eq!(NativeSum.run(4).unwrap(), 6);
    }
}
