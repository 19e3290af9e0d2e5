//! Objects in the interpreter: field cells, receivers, virtual dispatch, and the trampolines
//! through which the host calls interpreted `Hook`/`Bench` methods.

use std::cell::Cell;
use std::ffi::c_void;

use super::ops::{binary, check_index};
use super::{Interp, PlaceOp, PlaceStep, R, Val};
use crate::backend::objects::check_cell;
use crate::backend::objects::elem_kind;
use crate::lang::hir::{self, Expr, FuncId, Program, Type};
use crate::lang::span::Span;
use crate::runtime::handle::Handle;
use crate::runtime::iface::{BenchRun, HookCall, Signature};
use crate::runtime::object::Object;
use crate::runtime::values;
use crate::runtime::{ScriptError, ScriptErrorKind};

impl<'p> Interp<'p> {
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

/// The cell a place in field `i` (of type `ty`) of a checked object leads to, and its type:
/// each vec on the path is made unique in its cell first (`values::hot_vec_unique`: a copy
/// only when another owner shares it) and the index checked against its length now. Only the
/// cells on the path are touched, so an element store, a push or a pop on a field's vec costs
/// what it costs on a local's.
///
/// # Safety
/// `obj` must be checked attached, and the returned cell is valid only until the object or a
/// vec on the path is next changed (use it at once, running no script code).
pub(super) unsafe fn cell_place<'t>(
    obj: &Object,
    i: usize,
    ty: &'t Type,
    path: &[PlaceStep],
) -> R<(*mut u64, &'t Type)> {
    // SAFETY: as in `read_cell`.
    let mut cell = unsafe { obj.state_ptr().add(i) };
    let mut ty = ty;
    for step in path {
        let (index, elem) = match (*step, ty) {
            (PlaceStep::Vec(index, span), Type::Vec(elem)) => {
                // SAFETY: `cell` holds a vec owned by the field (or by a vec the field owns).
                let len = unsafe { values::vec_block(*cell) }.map_or(0, |b| b.len());
                (check_index(index, len as i64, span)?, &**elem)
            }
            // An array inside a vec is boxed in a block of its elements (`arrays::box_array`),
            // changed like a vec's; its index was checked against the type's length already.
            (PlaceStep::Array(index), Type::Array(elem, _)) => (index, &**elem),
            _ => unreachable!("checked program: a field's place indexes vecs and boxed arrays"),
        };
        // SAFETY: `cell` holds a vec of `elem` (the caller's contract, then each step's).
        let unique = unsafe { make_unique(cell, elem) };
        // A bool element's address is a byte's (packed): `cell_op` reads and writes a bool
        // through its first byte only.
        cell = values::hot_vec_at(unique, index as i64, 0, 0).cast::<u64>();
        ty = elem;
    }
    Ok((cell, ty))
}

/// Do `op` with `v` on a cell (of type `ty`) from [`cell_place`], converting only what the
/// operation reads or writes: the element stored or popped, the old value for `op=`.
///
/// # Safety
/// `cell` must come from `cell_place` with nothing changed since.
pub(super) unsafe fn cell_op(cell: *mut u64, ty: &Type, op: PlaceOp, v: Val) -> R<Val> {
    if *ty == Type::Bool {
        // A bool is its first byte: all of a packed `vec<bool>` element (`values::VecBlock`),
        // and the value of a whole cell (a field), whose other bytes stay zero (little-endian).
        let byte = cell.cast::<u8>();
        // SAFETY: the caller's contract: a live bool, a byte of it at least.
        let old = unsafe { Val::from_cell(u64::from(*byte), ty) };
        let new = match op {
            PlaceOp::Assign(None, _) => v,
            PlaceOp::Assign(Some(op), span) => binary(op, span, &old, &v)?,
            _ => unreachable!("checked program: push or pop on a place that is not a vec"),
        };
        // SAFETY: as above.
        unsafe { *byte = new.into_cell(ty) as u8 };
        return Ok(Val::Unit);
    }
    let kind = elem_kind(ty);
    match (op, ty) {
        (PlaceOp::Assign(None, _), _) => {
            let bits = v.into_cell(ty);
            // SAFETY: the caller's contract: a live cell of type `ty` that owns its value.
            values::release_cell(kind, unsafe { std::ptr::replace(cell, bits) });
        }
        (PlaceOp::Assign(Some(op), span), _) => {
            // SAFETY: as above; the old value is copied out before it is replaced.
            let old = unsafe { Val::from_cell(*cell, ty) };
            let bits = binary(op, span, &old, &v)?.into_cell(ty);
            // SAFETY: as above.
            values::release_cell(kind, unsafe { std::ptr::replace(cell, bits) });
        }
        (PlaceOp::Push(span), Type::Vec(elem)) => {
            // SAFETY: as above: a live vec cell of `elem`.
            let unique = unsafe { make_unique(cell, elem) };
            // SAFETY: `unique` is a live vec block of ours.
            let grow = unsafe { values::vec_block(unique) }.map_or(0, |b| b.push_growth());
            super::ops::room(grow, span)?;
            // SAFETY: `unique` is the only owner of its block; the item is a cell of `elem`.
            unsafe { values::hot_vec_push(unique, v.into_cell(elem)) };
        }
        (PlaceOp::Pop(span), Type::Vec(elem)) => {
            // SAFETY: as above.
            if unsafe { values::vec_block(*cell) }.is_none_or(|b| b.is_empty()) {
                return Err(ScriptError::new(ScriptErrorKind::PopEmpty, span));
            }
            // SAFETY: as above.
            let unique = unsafe { make_unique(cell, elem) };
            // SAFETY: unique and not empty (checked): `hot_vec_pop` does not raise.
            let item = unsafe { values::hot_vec_pop(unique, 0, 0) };
            // SAFETY: the popped element's count is ours; released once converted.
            let out = unsafe { Val::from_cell(item, elem) };
            values::release_cell(elem_kind(elem), item);
            return Ok(out);
        }
        _ => unreachable!("checked program: push or pop on a place that is not a vec"),
    }
    Ok(Val::Unit)
}

/// Make the vec in `cell` (elements of type `elem`) the only owner of its block
/// (`values::hot_vec_unique`: a copy only when another owner shares it), store it back into the
/// cell and return it.
///
/// # Safety
/// `cell` must be a live cell holding a vec of `elem` that owns its count.
unsafe fn make_unique(cell: *mut u64, elem: &Type) -> u64 {
    // SAFETY: the caller's contract; the count moves through `hot_vec_unique` back into the cell.
    let unique = values::hot_vec_unique(unsafe { *cell }, elem_kind(elem) as u64);
    // SAFETY: as above.
    unsafe { *cell = unique };
    note_unique(unique);
    unique
}

/// A vec cell retained from a runtime cell (a field, or a vec a field holds): the interpreter's
/// vec read out of a cell (`val::CellVec`) works on the block through it, converting only the
/// elements it reads. It shares the block like any copy (a later store into the field copies it
/// first), so what it reads is the vec as it was when it was taken.
#[derive(Debug)]
pub(super) struct HeldVec(u64);

impl HeldVec {
    /// The vec cell `bits` (borrowed from its owner), with a count of its own.
    pub(super) fn retain(bits: u64) -> HeldVec {
        HeldVec(values::hot_vec_retain(bits))
    }

    /// The number of elements.
    pub(super) fn len(&self) -> usize {
        // SAFETY: this holds a count of the block.
        unsafe { values::vec_block(self.0) }.map_or(0, |b| b.len())
    }

    /// Element `i` checked at `span`, borrowed from the block.
    pub(super) fn at(&self, i: i64, span: Span) -> R<u64> {
        let i = check_index(i, self.len() as i64, span)?;
        // SAFETY: this holds a count of the block; `i` is in range.
        Ok(unsafe { values::vec_block(self.0) }
            .and_then(|b| b.cell(i))
            .unwrap_or(0))
    }

    /// The elements, borrowed from the block.
    pub(super) fn cells(&self) -> impl Iterator<Item = u64> + '_ {
        // SAFETY: this holds a count of the block while the iterator borrows it.
        unsafe { values::vec_block(self.0) }
            .into_iter()
            .flat_map(|b| b.cells())
    }

    /// The vec as an owned cell: this count moves into it.
    pub(super) fn into_cell(self) -> u64 {
        std::mem::ManuallyDrop::new(self).0
    }
}

impl Clone for HeldVec {
    fn clone(&self) -> HeldVec {
        HeldVec::retain(self.0)
    }
}

impl Drop for HeldVec {
    fn drop(&mut self) {
        values::hot_vec_release(self.0);
    }
}

#[cfg(test)]
thread_local! {
    /// The blocks fields' vecs were made unique into, in order (tests check a unique vec stays
    /// in its block while it grows).
    pub(super) static UNIQUE_BLOCKS: std::cell::RefCell<Vec<u64>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Note the block a field's vec was made unique into (tests only).
fn note_unique(_cell: u64) {
    #[cfg(test)]
    UNIQUE_BLOCKS.with(|b| b.borrow_mut().push(_cell));
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
        let cell = obj.handle_cell();
        let cell = crate::runtime::handle::hot_handle_retain(cell);
        // SAFETY: `hot_handle_retain` took the reference this handle owns.
        let this = Val::H(unsafe { Handle::from_cell(cell) });
        let func = self.dispatch(obj, name);
        let outer = self.stack_limit == 0;
        if outer {
            self.stack_limit = super::stack_limit(self.program.nesting);
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
