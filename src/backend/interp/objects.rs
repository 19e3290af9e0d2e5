//! Objects in the interpreter: field cells, receivers, virtual dispatch, and the trampolines
//! through which the host calls interpreted `Hook`/`Bench` methods.

use std::cell::Cell;
use std::ffi::c_void;

use super::ops::binary;
use super::{Interp, R, Val};
use crate::backend::objects::check_cell;
use crate::backend::objects::elem_kind;
use crate::lang::hir::{self, BinOp, Expr, FuncId, Program, Type};
use crate::lang::span::Span;
use crate::runtime::handle::Handle;
use crate::runtime::iface::{BenchRun, HookCall, Signature};
use crate::runtime::object::Object;
use crate::runtime::values;
use crate::runtime::{ScriptError, ScriptErrorKind};

impl<'p> Interp<'p> {
    /// `o.f = value` / `o.f op= value`: the object is evaluated and checked, then the value,
    /// then the cell is read (for `op=`) and written.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn assign_field(
        &mut self,
        object: &'p Expr,
        field: usize,
        ty: &Type,
        op: Option<BinOp>,
        op_span: Span,
        value: &'p Expr,
        span: Span,
    ) -> R<()> {
        let obj = self.eval(object)?;
        let h = obj.handle();
        // SAFETY: `h` owns a reference while the cells are used.
        unsafe { check_cell(h.cell(), span) }?;
        let v = self.eval(value)?;
        // Checked again: the value's calls may have changed the object.
        // SAFETY: as above.
        let target = unsafe { check_cell(h.cell(), span) }?;
        let v = match op {
            None => v,
            Some(op) => binary(op, op_span, &read_cell(target, field, ty), &v)?,
        };
        write_cell(target, field, ty, v);
        Ok(())
    }

    /// Evaluate a receiver and check it (null, stale, detached) at `span`.
    pub(super) fn receiver(&mut self, object: &'p Expr, span: Span) -> R<Val> {
        let v = self.eval(object)?;
        // SAFETY: `v` owns the handle's reference.
        unsafe { check_cell(v.handle().cell(), span) }?;
        Ok(v)
    }

    /// Call `func` with `this` and the values of `args`.
    pub(super) fn call_method(&mut self, func: FuncId, this: Val, args: &'p [Expr]) -> R<Val> {
        let base = self.stack.len();
        self.stack.push(this);
        for arg in args {
            let v = self.eval(arg)?;
            self.stack.push(v);
        }
        self.invoke(func, base)
    }

    /// The function of `method` for the class of `obj` (virtual dispatch).
    pub(super) fn dispatch(&self, obj: &Object, method: &str) -> FuncId {
        let class = self
            .classes
            .iter()
            .position(|c| std::ptr::eq::<crate::runtime::class::Class>(&**c, obj.class()))
            .expect("an object of this program's classes");
        self.program.classes[class]
            .method(method)
            .expect("checked program: an override exists in every derived class")
            .func
    }
}

/// A runtime error (reported without a span) at `span`.
pub(super) fn at(mut err: ScriptError, span: Span) -> ScriptError {
    err.span = span;
    err
}

/// Cell `i` of a checked object's state, as a value of type `ty` (a copy: the field keeps what
/// it owns).
pub(super) fn read_cell(obj: &Object, i: usize, ty: &Type) -> Val {
    // SAFETY: the object was checked attached; its state has a cell per field of the program's
    // layout (the runtime class was defined from it), and no reload runs during the walk.
    let bits = unsafe { *obj.state_ptr().add(i) };
    // SAFETY: the field owns what its cell holds while it is converted.
    unsafe { Val::from_cell(bits, ty) }
}

/// Write cell `i` of a checked object's state; a handle, vec or string cell releases what it
/// held.
pub(super) fn write_cell(obj: &Object, i: usize, ty: &Type, v: Val) {
    let bits = v.into_cell(ty);
    // SAFETY: as in `read_cell`.
    let old = unsafe { std::ptr::replace(obj.state_ptr().add(i), bits) };
    values::release_cell(elem_kind(ty), old);
}

/// Move the value out of cell `i` (leaving the empty value, 0, in the cell): a place in a
/// field is changed on it, then put back with [`write_cell`].
pub(super) fn take_cell(obj: &Object, i: usize, ty: &Type) -> Val {
    // SAFETY: as in `read_cell`.
    let bits = unsafe { std::ptr::replace(obj.state_ptr().add(i), 0) };
    // SAFETY: the cell's count moved here; it is released once converted.
    let v = unsafe { Val::from_cell(bits, ty) };
    values::release_cell(elem_kind(ty), bits);
    v
}

/// Where the host's `Hook`/`Bench` calls on interpreted objects find their interpreter: the
/// `vmctx` of the interpreter's classes. The pointer is set only while [`Interp::host_calls`]
/// runs.
pub(super) struct HostLink {
    interp: Cell<*mut ()>,
}

impl HostLink {
    pub(super) fn new() -> HostLink {
        HostLink {
            interp: Cell::new(std::ptr::null_mut()),
        }
    }
}

/// The slot code of an interpreted method: a trampoline for the host interfaces' methods (the
/// only signatures the host calls), none for the others (their slots stay empty).
pub(super) fn slot_code(program: &Program, m: &hir::Method) -> *const c_void {
    let sig = crate::backend::objects::method_sig(program, m.func);
    match m.name.as_str() {
        "call" if sig == Some(HookCall::sig()) => hook_call as *const c_void,
        "run" if sig == Some(BenchRun::sig()) => bench_run as *const c_void,
        _ => std::ptr::null(),
    }
}

extern "C-unwind" fn hook_call(vmctx: *mut c_void, this: *const Object) -> i64 {
    host_method(vmctx, this, "call", Vec::new())
}

extern "C-unwind" fn bench_run(vmctx: *mut c_void, this: *const Object, n: i64) -> i64 {
    host_method(vmctx, this, "run", vec![Val::I(n)])
}

/// Run method `name` of the object for the host; a failure unwinds to the host's border as the
/// method ABI requires.
fn host_method(vmctx: *mut c_void, this: *const Object, name: &str, args: Vec<Val>) -> i64 {
    // SAFETY: the runtime passes the `vmctx` the class was defined with: the interpreter's
    // `HostLink`, which lives while any of its classes has objects (see `Interp`'s drop).
    let link = unsafe { &*(vmctx as *const HostLink) };
    let interp = link.interp.get() as *mut Interp<'static>;
    if interp.is_null() {
        ScriptError::new(
            ScriptErrorKind::BadCall(format!(
                "`{name}` of an interpreted object called outside `Interp::host_calls`"
            )),
            Span::default(),
        )
        .raise()
    }
    // SAFETY: set by `host_calls`, which holds the interpreter exclusively and lends it to no
    // one else while the host's closure runs; the lifetime is erased, not extended (the pointer
    // is cleared before `host_calls` returns). `this` is a live shell (the border checked it).
    let (interp, obj) = unsafe { (&mut *interp, &*this) };
    match interp.call_from_host(obj, name, args) {
        Ok(Val::I(v)) => v,
        Ok(_) => unreachable!("checked program: interface methods return i64"),
        Err(e) => e.raise(),
    }
}

impl<'p> Interp<'p> {
    /// Let the host call this interpreter's objects through `Hook`/`Bench` (on handles it got
    /// from [`Interp::global_handle`]) while `f` runs. Outside it, such calls fail with a
    /// `BadCall` error.
    pub fn host_calls<T>(&mut self, f: impl FnOnce() -> T) -> T {
        struct Reset<'a>(&'a HostLink, *mut ());
        impl Drop for Reset<'_> {
            fn drop(&mut self) {
                self.0.interp.set(self.1);
            }
        }
        let me = self as *mut Interp<'p> as *mut ();
        let link: *const HostLink = &**self
            .host
            .as_ref()
            .expect("the link lives with the interpreter");
        // SAFETY: the link is boxed and outlives this call; `self` is not used while `f` runs.
        let link = unsafe { &*link };
        let _reset = Reset(link, link.interp.replace(me));
        f()
    }

    /// Run method `name` of `obj` with `args` as an outermost call.
    fn call_from_host(&mut self, obj: &Object, name: &str, args: Vec<Val>) -> R<Val> {
        let generation = u64::from(obj.generation() & 0xffff);
        let cell = (obj as *const Object as u64) | (generation << 48);
        let cell = crate::runtime::handle::hot_handle_retain(cell);
        // SAFETY: `hot_handle_retain` took the reference this handle owns.
        let this = Val::H(unsafe { Handle::from_cell(cell) });
        let func = self.dispatch(obj, name);
        let outer = self.stack_limit == 0;
        if outer {
            self.stack_limit = super::stack_limit();
        }
        let (saved_len, saved_base) = (self.stack.len(), self.base);
        self.stack.push(this);
        self.stack.extend(args);
        let result = self.invoke(func, saved_len);
        self.stack.truncate(saved_len);
        self.base = saved_base;
        if outer {
            self.stack_limit = 0;
        }
        result
    }
}
