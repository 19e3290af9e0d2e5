//! Values inside the interpreter.

use std::cell::Cell;
use std::fmt::Write as _;
use std::rc::Rc;

use super::R;
use super::objects::HeldVec;
use super::ops::check_index;
use crate::backend::Value;
use crate::backend::objects::elem_kind;
use crate::lang::hir::{Function, Type};
use crate::lang::span::Span;
use crate::runtime::closure;
use crate::runtime::handle::Handle;
use crate::runtime::memory;
use crate::runtime::values::{self, ElemKind};

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
    /// A vec: shared on copy, copied on the first write to a shared one, like arrays.
    V(Rc<Vec<Val>>),
    /// A vec read out of a runtime cell (a field, or a vec in one), still in its block: reading
    /// it as a value is O(1); its elements are converted when read, the whole vec on the first
    /// write (or `to_value`). Stored back into a cell it is the block again, O(1).
    CV(CellVec),
    /// A string.
    S(Rc<String>),
    /// A closure (shared: closures are immutable). A module variable of a fn type not
    /// initialized yet holds `Unit` instead.
    C(Rc<Closure>),
}

/// A vec in its runtime block (see [`Val::CV`]): a count of the block (so the vec is the one
/// that was read: a later store into the cell it came from copies the block first, as for any
/// shared vec) and the element type.
#[derive(Debug, Clone)]
pub(super) struct CellVec {
    held: HeldVec,
    /// In a program version the interpreter runs: each is borrowed for the interpreter's whole
    /// life, as [`Closure::code`]'s function.
    elem: *const Type,
}

impl CellVec {
    /// The element type.
    fn elem(&self) -> &Type {
        // SAFETY: see `elem`: the program version outlives the interpreter's values.
        unsafe { &*self.elem }
    }

    /// Element `i`, checked at `span`, converted.
    fn item(&self, i: i64, span: Span) -> R<Val> {
        let bits = self.held.at(i, span)?;
        // SAFETY: the block (held) keeps the element alive while it is converted; it was made
        // from values of the element type.
        Ok(unsafe { Val::from_cell(bits, self.elem()) })
    }

    /// Every element, converted.
    fn to_vals(&self) -> Vec<Val> {
        let elem = self.elem();
        self.held
            .cells()
            // SAFETY: as in `item`.
            .map(|c| unsafe { Val::from_cell(c, elem) })
            .collect()
    }
}

/// A closure: the lambda's function and copies of what it captured.
///
/// In a runtime cell (an object's field, a vec in one) it is a `runtime::closure` block, one
/// layout with the compiled backends': its code word is `code` (never called as machine code:
/// only the interpreter reads the cells of its own objects), its descriptor an interned one
/// (`closure::interned_descriptor`, so the block can be released after the program is gone,
/// made once per lambda: see [`Lambda`]), its cells the captured values as cells (an array's
/// elements one cell each).
#[derive(Debug)]
pub(super) struct Closure {
    /// The lambda's function in the program version that made the closure. Every version the
    /// interpreter runs is borrowed for its whole life, so this stays valid while any of its
    /// values does; a reload resets every value holding closures, and a closure of a replaced
    /// version would be refused when called (`Interp::closure_func`).
    pub(super) code: *const Function,
    /// What the closures of its lambda share.
    pub(super) lambda: Rc<Lambda>,
    /// The captured values, in the order of the lambda's `captures` locals.
    pub(super) cells: Vec<Val>,
}

/// What every closure of one lambda shares (the interpreter makes one per lambda, see
/// `Interp::lambda`; a closure read from a cell takes its block's).
#[derive(Debug)]
pub(super) struct Lambda {
    /// How interpolation shows it (`<fn(i64) -> i64>`).
    pub(super) shown: Rc<str>,
    /// The interned descriptor of its closure blocks: made on the first store into a cell,
    /// then reused (null until then).
    desc: Cell<*const u8>,
}

impl Lambda {
    pub(super) fn new(shown: Rc<str>) -> Lambda {
        Lambda {
            shown,
            desc: Cell::new(std::ptr::null()),
        }
    }

    /// The descriptor of its closure blocks, interned from the capture types `types` the first
    /// time.
    fn descriptor<'t>(&self, types: impl Iterator<Item = &'t Type>) -> *const u8 {
        if self.desc.get().is_null() {
            let mut kinds = Vec::new();
            for ty in types {
                push_kinds(ty, &mut kinds);
            }
            note_descriptor();
            self.desc
                .set(closure::interned_descriptor(&kinds, &self.shown));
        }
        self.desc.get()
    }
}

impl Closure {
    pub(super) fn new(code: *const Function, lambda: Rc<Lambda>, cells: Vec<Val>) -> Closure {
        // Counted like the compiled backends' closure blocks, for the leak tests.
        values::count_blocks(1);
        Closure {
            code,
            lambda,
            cells,
        }
    }

    /// The lambda's function.
    fn function(&self) -> &Function {
        // SAFETY: the program version that made the closure outlives the interpreter's values
        // (see `code`).
        unsafe { &*self.code }
    }

    /// The types of the captured values, in order.
    fn capture_types(&self) -> impl Iterator<Item = &Type> {
        let func = self.function();
        func.captures
            .iter()
            .flatten()
            .map(|l| &func.locals[l.index()].ty)
    }

    /// A new closure block with copies of the captured values (see the type's docs).
    fn to_cell(&self) -> u64 {
        let mut bits = Vec::new();
        for (ty, v) in self.capture_types().zip(&self.cells) {
            push_cells(v.clone(), ty, &mut bits);
        }
        let desc = self.lambda.descriptor(self.capture_types());
        // SAFETY: the descriptor lives as long as the process and describes `bits`.
        unsafe { closure::closure_from_cells(self.code.cast(), desc, &bits) }
    }

    /// A closure with copies of what the closure block `bits` (made by [`Closure::to_cell`])
    /// holds.
    ///
    /// # Safety
    /// As [`Val::from_cell`].
    unsafe fn from_cell(bits: u64) -> Closure {
        // SAFETY: the caller's contract.
        let (code, cells, desc) = unsafe {
            let (code, cells) = closure::closure_parts(bits);
            (code, cells, closure::closure_descriptor(bits))
        };
        let mut shown = String::new();
        closure::format_closure(bits, &mut shown);
        // The block's descriptor is an interned one (made by `to_cell`): kept for the next store.
        let lambda = Lambda::new(shown.into());
        lambda.desc.set(desc);
        let mut closure = Closure::new(code.cast(), Rc::new(lambda), Vec::new());
        let mut cells = cells.iter().copied();
        let values = closure
            .capture_types()
            // SAFETY: the cells are kept by the block, and made from values of these types.
            .map(|ty| unsafe { pop_cells(&mut cells, ty) })
            .collect();
        closure.cells = values;
        closure
    }
}

/// Append the cells of a value of type `ty` (an array's elements one cell each, unit none).
fn push_cells(v: Val, ty: &Type, bits: &mut Vec<u64>) {
    match (v, ty) {
        (_, Type::Unit) => {}
        (Val::A(items), Type::Array(elem, _)) => {
            for item in items.iter() {
                push_cells(item.clone(), elem, bits);
            }
        }
        (v, ty) => bits.push(v.into_cell(ty)),
    }
}

/// Append the kinds of the cells [`push_cells`] makes of a value of type `ty`.
fn push_kinds(ty: &Type, kinds: &mut Vec<ElemKind>) {
    match ty {
        Type::Unit => {}
        Type::Array(elem, n) => {
            for _ in 0..*n {
                push_kinds(elem, kinds);
            }
        }
        ty => kinds.push(elem_kind(ty)),
    }
}

/// The value of type `ty` the next cells hold (see [`push_cells`]), copied.
///
/// # Safety
/// As [`Val::from_cell`], for each cell.
unsafe fn pop_cells(cells: &mut impl Iterator<Item = u64>, ty: &Type) -> Val {
    match ty {
        Type::Unit => Val::Unit,
        Type::Array(elem, n) => Val::A(Rc::new(
            // SAFETY: the caller's contract.
            (0..*n).map(|_| unsafe { pop_cells(cells, elem) }).collect(),
        )),
        // SAFETY: the caller's contract.
        ty => unsafe { Val::from_cell(cells.next().unwrap_or(0), ty) },
    }
}

impl Drop for Closure {
    fn drop(&mut self) {
        values::count_blocks(-1);
    }
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

    /// The elements of a vec to change: a shared one copied first, one still in its runtime
    /// block converted first (it stays converted).
    ///
    /// A copy or a conversion must fit the job's memory limit, else `OutOfMemory` is raised
    /// (`runtime::memory::ensure`; the interpreter catches it at the operation).
    pub(super) fn vec_mut(&mut self) -> &mut Vec<Val> {
        if let Val::CV(c) = self {
            memory::ensure(std::mem::size_of::<Val>() * c.held.len());
            *self = Val::V(Rc::new(c.to_vals()));
        }
        match self {
            Val::V(v) => unique_items(v),
            _ => unreachable!("checked program: expected a vec"),
        }
    }

    /// The number of elements of an array or a vec.
    pub(super) fn len(&self) -> usize {
        match self {
            Val::A(v) | Val::V(v) => v.len(),
            Val::CV(c) => c.held.len(),
            _ => unreachable!("checked program: expected an array or a vec"),
        }
    }

    /// Element `i` of an array or a vec (a copy), checked against its length at `span`.
    pub(super) fn item(&self, i: i64, span: Span) -> R<Val> {
        match self {
            Val::A(v) | Val::V(v) => Ok(v[check_index(i, v.len() as i64, span)?].clone()),
            Val::CV(c) => c.item(i, span),
            _ => unreachable!("checked program: expected an array or a vec"),
        }
    }

    /// Append how interpolation shows the value (`runtime::values::format_cell` for the
    /// compiled backends): strings inside lists quoted, handles as `<Class>` or `null`.
    pub(super) fn show(&self, out: &mut String, nested: bool) {
        match self {
            // A unit expression is never shown (the checker refuses it in a string): a `Unit`
            // shown is a fn value not initialized (a fn-typed field or module variable).
            Val::Unit => closure::format_closure(0, out),
            Val::I(x) => out.push_str(&x.to_string()),
            Val::F(x) => out.push_str(&values::format_f64(*x)),
            Val::B(x) => out.push_str(if *x { "true" } else { "false" }),
            Val::S(s) if nested => {
                memory::reserve_text(out, s.len() + 2);
                let _ = write!(out, "{:?}", s.as_str());
            }
            Val::S(s) => {
                memory::reserve_text(out, s.len());
                out.push_str(s)
            }
            Val::H(h) => values::format_cell(values::ElemKind::Handle, h.cell(), out),
            Val::C(c) => out.push_str(&c.lambda.shown),
            Val::A(items) | Val::V(items) => show_items(items.iter(), out),
            Val::CV(c) => show_items(c.to_vals().iter(), out),
        }
    }

    /// The value a runtime cell of type `ty` holds (what compiled code and object fields keep):
    /// a copy, taking its own references (a handle is retained, a vec, string or closure
    /// copied).
    ///
    /// # Safety
    /// `bits` must be a cell of type `ty` whose owner keeps it alive during the call; a closure
    /// in it (at any depth) made by [`Closure::to_cell`] of this interpreter.
    ///
    /// A vec is not converted: it stays in its block ([`Val::CV`], O(1)), which needs `ty` to
    /// live in a program version the interpreter runs (as every type it converts with does).
    pub(super) unsafe fn from_cell(bits: u64, ty: &Type) -> Val {
        if let Type::Vec(elem) = ty {
            return Val::CV(CellVec {
                held: HeldVec::retain(bits),
                elem: &**elem,
            });
        }
        note_conversion();
        match ty {
            Type::I64 => Val::I(bits as i64),
            Type::F64 => Val::F(f64::from_bits(bits)),
            Type::Bool => Val::B(bits & 0xff != 0),
            Type::Handle { .. } | Type::Null => {
                // SAFETY: a handle cell kept by its owner: the shell is allocated; the clone
                // takes a reference of its own and `ManuallyDrop` leaves the owner's.
                let held = std::mem::ManuallyDrop::new(unsafe { Handle::from_cell(bits) });
                Val::H((*held).clone())
            }
            // SAFETY: the caller's contract.
            Type::Str => Val::S(Rc::new(unsafe { values::str_text(bits) }.to_string())),
            // An array in a cell is boxed as a vec block (`backend::objects::elem_kind`).
            Type::Array(elem, _) => {
                // SAFETY: the caller's contract; the elements are kept by the block.
                let items = unsafe { values::vec_block(bits) }.map_or_else(Vec::new, |b| {
                    b.cells()
                        // SAFETY: each element is a cell of `elem` kept by the block.
                        .map(|c| unsafe { Val::from_cell(c, elem) })
                        .collect()
                });
                Val::A(Rc::new(items))
            }
            Type::Fn { .. } if bits == 0 => Val::Unit,
            // SAFETY: the caller's contract.
            Type::Fn { .. } => Val::C(Rc::new(unsafe { Closure::from_cell(bits) })),
            _ => unreachable!("checked program: a cell of type `{ty}`"),
        }
    }

    /// The value as an owned runtime cell of type `ty` (see [`Val::from_cell`]).
    pub(super) fn into_cell(self, ty: &Type) -> u64 {
        if let Val::CV(c) = self {
            // Not converted: the block's count moves into the cell.
            return c.held.into_cell();
        }
        note_conversion();
        match (self, ty) {
            (Val::I(x), _) => x as u64,
            (Val::F(x), _) => x.to_bits(),
            (Val::B(x), _) => u64::from(x),
            (Val::H(h), _) => h.into_cell(),
            (Val::S(s), _) => values::str_from(s.as_str().to_string()),
            (Val::V(items), Type::Vec(elem)) | (Val::A(items), Type::Array(elem, _)) => {
                memory::ensure(8 * items.len());
                let kind = crate::backend::objects::elem_kind(elem);
                let items = Rc::unwrap_or_clone(items);
                values::vec_from_cells(kind, items.into_iter().map(|v| v.into_cell(elem)).collect())
            }
            (Val::C(c), Type::Fn { .. }) => c.to_cell(),
            // A fn value not initialized.
            (Val::Unit, Type::Fn { .. }) => 0,
            (_, ty) => unreachable!("checked program: a cell of type `{ty}`"),
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
            Value::Vec(items) => Val::V(Rc::new(items.iter().map(Val::from_value).collect())),
            Value::Str(s) => Val::S(Rc::new(s.clone())),
            // `fits` lets no closure in: only a zero global is made from one.
            Value::Fn(_) => Val::Unit,
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
            Val::V(items) => Value::Vec(items.iter().map(Val::to_value).collect()),
            Val::CV(c) => Value::Vec(c.to_vals().iter().map(Val::to_value).collect()),
            Val::S(s) => Value::Str(s.as_str().to_string()),
            Val::C(c) => Value::Fn(c.lambda.shown.to_string()),
        }
    }
}

/// The items of an array or vec to change: copied first when shared, the copy within the job's
/// memory limit (see [`Val::vec_mut`]).
pub(super) fn unique_items(items: &mut Rc<Vec<Val>>) -> &mut Vec<Val> {
    if Rc::strong_count(items) > 1 {
        memory::ensure(std::mem::size_of::<Val>() * items.len());
    }
    Rc::make_mut(items)
}

/// Append `[a, b]` of elements (strings in it quoted).
fn show_items<'v>(items: impl Iterator<Item = &'v Val>, out: &mut String) {
    out.push('[');
    for (i, item) in items.enumerate() {
        // A long text: its growth must fit the budget (`runtime::memory`).
        memory::reserve_text(out, 24);
        if i > 0 {
            out.push_str(", ");
        }
        item.show(out, true);
    }
    out.push(']');
}

#[cfg(test)]
thread_local! {
    /// Values converted to or from runtime cells on this thread (each element of a vec counts;
    /// a vec kept in its block, `Val::CV`, is not converted).
    pub(super) static CONVERSIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
thread_local! {
    /// Closure descriptors interned on this thread (tests check it is one per lambda).
    pub(super) static DESCRIPTORS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Count one closure descriptor interned (tests only).
fn note_descriptor() {
    #[cfg(test)]
    DESCRIPTORS.with(|c| c.set(c.get() + 1));
}

/// Count one value converted to or from a cell (tests only: they check field operations
/// convert only what they touch).
fn note_conversion() {
    #[cfg(test)]
    CONVERSIONS.with(|c| c.set(c.get() + 1));
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
        (Value::Vec(items), Type::Vec(elem)) => items.iter().all(|i| fits(i, elem)),
        (Value::Str(_), Type::Str) => true,
        _ => false,
    }
}
