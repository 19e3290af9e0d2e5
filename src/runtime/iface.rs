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
use crate::runtime::depth::ThreadRecord;
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
/// ([`Class::iface_code`](crate::runtime::class::Class::iface_code)) holds its code, and how
/// its host entry ([`Class::host_entry`](crate::runtime::class::Class::host_entry)) is called.
pub trait IfaceSig: Signature<Ret = i64> {
    /// The method.
    const METHOD: IfaceMethod;

    /// Call the host entry `entry` on `this`, on the thread whose record is `rec`.
    ///
    /// # Safety
    /// `entry` must be a host entry of this method (`extern "C-unwind" fn(this, rec, args...)
    /// -> Returned`: the Rust one of `runtime::border` or one the JIT made), `this` a live
    /// shell whose class holds it, and `rec` the calling thread's record.
    unsafe fn enter(
        entry: *const c_void,
        this: &Object,
        rec: *const ThreadRecord,
        args: Self::Args,
    ) -> Returned;
}

impl IfaceSig for HookCall {
    const METHOD: IfaceMethod = IfaceMethod::HookCall;

    #[inline(always)]
    unsafe fn enter(
        entry: *const c_void,
        this: &Object,
        rec: *const ThreadRecord,
        (): (),
    ) -> Returned {
        // SAFETY: the caller guarantees `entry` has this signature; fn pointers and data
        // pointers have one size and representation on every target we build for.
        let f: HookEntry = unsafe { std::mem::transmute(entry) };
        f(this, rec)
    }
}

impl IfaceSig for BenchRun {
    const METHOD: IfaceMethod = IfaceMethod::BenchRun;

    #[inline(always)]
    unsafe fn enter(
        entry: *const c_void,
        this: &Object,
        rec: *const ThreadRecord,
        (n,): (i64,),
    ) -> Returned {
        // SAFETY: as for `HookCall`.
        let f: BenchEntry = unsafe { std::mem::transmute(entry) };
        f(this, rec, n)
    }
}

/// The host entry of `Hook.call`.
pub type HookEntry = extern "C-unwind" fn(&Object, *const ThreadRecord) -> Returned;
/// The host entry of `Bench.run`.
pub type BenchEntry = extern "C-unwind" fn(&Object, *const ThreadRecord, i64) -> Returned;

/// What a host-interface method returns across the C ABI: its value, or the error that stopped
/// it. Two registers (rax, rdx on x86_64), so a call through `&dyn Hook` can be one jump into
/// generated code that returns the pair itself (the JIT's host entries, `backend/jit/host_entry.rs`).
#[repr(C)]
#[derive(Debug)]
#[must_use]
pub struct Returned {
    /// The method's result (0 with an error).
    pub value: i64,
    /// The error, if the call failed (null across the ABI when it did not).
    pub fault: Option<Box<ScriptError>>,
}

impl Returned {
    /// A result.
    #[inline(always)]
    pub fn ok(value: i64) -> Returned {
        Returned { value, fault: None }
    }

    /// As a `Result` (the error out of its box, off the straight path).
    #[inline(always)]
    pub fn into_result(self) -> Result<i64, ScriptError> {
        match self.fault {
            None => Ok(self.value),
            Some(e) => Err(unboxed(e)),
        }
    }
}

impl From<Result<i64, Box<ScriptError>>> for Returned {
    #[inline(always)]
    fn from(r: Result<i64, Box<ScriptError>>) -> Returned {
        match r {
            Ok(value) => Returned { value, fault: None },
            Err(e) => Returned {
                value: 0,
                fault: Some(e),
            },
        }
    }
}

/// The error out of its box, off the straight path (it takes the box on purpose: the move out
/// of it and its free are what this keeps out of the host's loop).
#[cold]
#[inline(never)]
#[allow(clippy::boxed_local)]
fn unboxed(e: Box<ScriptError>) -> ScriptError {
    *e
}

/// The host interface `Hook`: the host loops calls to it.
///
/// The method has the C ABI and returns a [`Returned`], so that the implementation for a
/// script object's shell can jump straight into the class's host entry (see
/// `runtime::handle`); a twin implements it the same way, so both sides of a measurement make
/// the same virtual call.
pub trait Hook {
    /// One call.
    extern "C-unwind" fn call(&self) -> Returned;
}

/// The host interface `Bench`: the script loops `n` times and returns a checksum.
pub trait Bench {
    /// Run `n` iterations.
    extern "C-unwind" fn run(&self, n: i64) -> Returned;
}

/// The native twin of a `Hook` counter (`self.n += 1; return self.n`): a plain virtual call.
#[derive(Debug, Default)]
pub struct NativeCounter {
    n: std::cell::Cell<i64>,
}

impl Hook for NativeCounter {
    #[inline(never)]
    extern "C-unwind" fn call(&self) -> Returned {
        let n = self.n.get() + 1;
        self.n.set(n);
        Returned::ok(n)
    }
}

/// The native twin of a `Bench` sum (`s += i` for `i in 0..n`, through a black box).
#[derive(Debug, Default)]
pub struct NativeSum;

impl Bench for NativeSum {
    #[inline(never)]
    extern "C-unwind" fn run(&self, n: i64) -> Returned {
        let mut s = 0i64;
        for i in 0..n {
            s = s.wrapping_add(std::hint::black_box(i));
        }
        Returned::ok(s)
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
        c.call().into_result().unwrap();
        assert_eq!(c.call().into_result().unwrap(), 2);
        assert_eq!(NativeSum.run(4).into_result().unwrap(), 6);
    }
}
