//! HIR → CLIF for element reads in place: `G[i]`, `G[i][j]`, `o.a[i]`, `o.g[i][j]` read the
//! element where it lives, never a copy of the whole array.
//!
//! The plain lowering evaluates the indexed array as a value first: a module variable's array
//! is copied into a temporary (its managed cells retained, then released), a field's boxed array
//! unboxed into one (`hot_array_unbox`), and only then is one element read. That copy is what
//! the interpreter's semantics ask for when the index can change the array (`G[f()]` where `f`
//! assigns `G`: the element comes from the array as it was before the index ran), but most
//! indexes cannot.
//!
//! # The rule
//! A read `a[i]` (and each `[j]` of a nested one) is lowered in place when
//! - the innermost array is a local's slot, a module variable, or a field of an object (an
//!   arbitrary object expression, evaluated first as before), reached through array indexes
//!   only; and
//! - every index expression is [pure](pure_index): no call of any kind, no `new`, no vec push
//!   or pop, no closure: nothing that can write a module variable, a field or an element, or
//!   destroy an object. It may raise (a division by zero, an index out of range).
//!
//! Then nothing between the array's evaluation and the element's load can change the array,
//! so reading in place gives the element the copy would have held. The order of evaluation and
//! of the checks is unchanged: the object (checked at the field's span, held while the indexes
//! run), then outermost index first, each checked against its array's length at its own
//! expression's span, with the same `IndexOutOfRange` helper. A boxed array (a field's, or a
//! row of one) is walked through its vec block: the bounds check comes before any load from it.
//!
//! What the read yields is what the copy would have yielded: a scalar (retained when managed),
//! or for an array-valued read a fresh owned temporary of that one element (copied and retained,
//! or unboxed) — except a non-owning element of a local, which stays an address into the local's
//! slot, as before (no code in one expression can assign to a local).

use cranelift_codegen::ir::{InstBuilder, Value, types};

use crate::lang::hir::{Expr, ExprKind, Type};
use crate::lang::span::Span;
use crate::runtime::values::VecBlock;

use super::lower::{FunctionTranslator, LResult, LocalSlot, bad, mem};
use super::lower_unwind::TempHold;

/// Where an array lives, for reading its elements without a copy.
#[derive(Clone, Copy)]
enum ArrayAt {
    /// Flat cells at this address: a local's slot, a module variable, or an element of one.
    Flat(Value),
    /// A boxed array: the vec block cell (borrowed from the field or the outer box that owns
    /// it), each element one cell, rows boxed in turn (`runtime::arrays::box_array`).
    Boxed(Value),
}

/// The owned handle of a field root (`f().a[i]`), held while the indexes run.
struct Root {
    cell: Value,
    owned: bool,
    held: TempHold,
}

/// Whether `e`, an index expression, is pure in the sense of the module docs: it cannot write
/// any memory a script can read, nor run other code.
pub(crate) fn pure_index(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Bool(_)
        | ExprKind::Local(_)
        | ExprKind::Global(_)
        | ExprKind::Null => true,
        ExprKind::Unary(_, x)
        | ExprKind::Cast(x)
        | ExprKind::Len(x)
        | ExprKind::Assert(x)
        | ExprKind::NonNull(x)
        | ExprKind::Field(x, _) => pure_index(x),
        ExprKind::Binary { lhs, rhs, .. } | ExprKind::Logical(_, lhs, rhs) => {
            pure_index(lhs) && pure_index(rhs)
        }
        ExprKind::Index(a, i) => pure_index(a) && pure_index(i),
        // Calls, `new`, vec push and pop, closures, and anything this walk does not know.
        #[allow(unreachable_patterns)]
        _ => false,
    }
}

/// Whether array expression `e` can be read in place (see the module docs).
fn in_place_root(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Local(_) | ExprKind::Global(_) => true,
        ExprKind::Field(..) => matches!(e.ty, Type::Array(..)),
        ExprKind::Index(base, index) => {
            matches!(base.ty, Type::Array(..)) && in_place_root(base) && pure_index(index)
        }
        _ => false,
    }
}

/// Whether the array of `e` is a local's slot (through array indexes only).
fn rooted_in_local(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Local(_) => true,
        ExprKind::Index(base, _) => rooted_in_local(base),
        _ => false,
    }
}

impl FunctionTranslator<'_, '_> {
    /// `array[index]` read in place when the rule of the module docs allows it; `None` (and no
    /// code emitted) when it does not.
    pub(crate) fn translate_index_in_place(
        &mut self,
        array: &Expr,
        index: &Expr,
        whole: &Expr,
    ) -> LResult<Option<Value>> {
        self.index_in_place(array, index, whole, true)
    }

    /// [`Self::translate_index_in_place`] of a handle element whose reference the caller
    /// borrows (a borrowed `let x = o.a[i]`, `lower_region.rs`): not retained.
    pub(crate) fn translate_index_borrowed(
        &mut self,
        array: &Expr,
        index: &Expr,
        whole: &Expr,
    ) -> LResult<Option<Value>> {
        if !whole.ty.is_handle() {
            return bad("a borrowed element that is not a handle");
        }
        self.index_in_place(array, index, whole, false)
    }

    fn index_in_place(
        &mut self,
        array: &Expr,
        index: &Expr,
        whole: &Expr,
        retain: bool,
    ) -> LResult<Option<Value>> {
        let Type::Array(elem, len) = &array.ty else {
            return Ok(None);
        };
        if !in_place_root(array) || !pure_index(index) {
            return Ok(None);
        }
        let mut root = None;
        let at = self.array_at(array, &mut root)?;
        let idx = self.translate_expr(index)?;
        let v = match self.element_at(at, idx, elem, *len, whole.span) {
            ArrayAt::Flat(addr) => match &whole.ty {
                Type::Array(..) if whole.ty.owns_cells() => self.copy_retained(addr, &whole.ty),
                Type::Array(..) if rooted_in_local(array) => addr,
                Type::Array(..) => {
                    let slot = self.new_slot(whole.ty.cells());
                    let copy = self.slot_addr(slot);
                    self.copy_cells(copy, addr, whole.ty.cells());
                    copy
                }
                ty => {
                    let v = self.load_value(addr, ty)?;
                    if retain { self.retain_value(ty, v) } else { v }
                }
            },
            // A row of a boxed array, unboxed (retaining) into an owned temporary.
            ArrayAt::Boxed(cell) => self.unbox_array(cell, &whole.ty)?,
        };
        if let Some(Root { cell, owned, held }) = root {
            self.unhold(held);
            self.done_with(cell, owned);
        }
        Ok(Some(v))
    }

    /// Where the array of expression `e` (one [`in_place_root`] accepts) lives; a field root's
    /// handle goes to `root`.
    fn array_at(&mut self, e: &Expr, root: &mut Option<Root>) -> LResult<ArrayAt> {
        match &e.kind {
            ExprKind::Local(id) => match self.local(*id)? {
                LocalSlot::Array(slot) => Ok(ArrayAt::Flat(self.slot_addr(slot))),
                _ => bad("an array local without a slot"),
            },
            ExprKind::Global(id) => Ok(ArrayAt::Flat(self.global_addr(*id)?)),
            ExprKind::Field(object, field) => {
                if let Some(c) = self.checked_handle(object) {
                    // Known valid here (`lower_region.rs`).
                    let addr = self.checked_field(c, *field);
                    return Ok(ArrayAt::Boxed(self.builder.ins().load(
                        types::I64,
                        mem(),
                        addr,
                        0,
                    )));
                }
                let (cell, owned) = self.handle_operand(object)?;
                // `o().a[i]`: the handle is held across its check and the indexes.
                let held = self.hold_if(owned, &object.ty, cell);
                let shell = self.check_object(cell, e.span);
                let c = self.note_checked(object, shell);
                let addr = self.checked_field(c, *field);
                let boxed = self.builder.ins().load(types::I64, mem(), addr, 0);
                *root = Some(Root { cell, owned, held });
                Ok(ArrayAt::Boxed(boxed))
            }
            ExprKind::Index(base, index) => {
                let Type::Array(elem, len) = &base.ty else {
                    return bad("indexing a value that is not an array");
                };
                let at = self.array_at(base, root)?;
                let idx = self.translate_expr(index)?;
                Ok(self.element_at(at, idx, elem, *len, e.span))
            }
            _ => bad("an array read in place that is not a place"),
        }
    }

    /// Element `idx` of the array at `at` (of `len` elements of type `elem`), checked at `span`
    /// first: a flat element's address, or a boxed row's cell.
    fn element_at(
        &mut self,
        at: ArrayAt,
        idx: Value,
        elem: &Type,
        len: u32,
        span: Span,
    ) -> ArrayAt {
        match at {
            ArrayAt::Flat(base) => ArrayAt::Flat(self.element_addr(base, idx, elem, len, span)),
            ArrayAt::Boxed(cell) => {
                self.check_index(idx, len, span);
                let data = self
                    .builder
                    .ins()
                    .load(types::I64, mem(), cell, VecBlock::DATA as i32);
                // A bool is a byte in the box's block (`VecBlock`), as in a flat array.
                let addr = self.elem_addr(data, idx, elem);
                match elem {
                    Type::Array(..) => {
                        ArrayAt::Boxed(self.builder.ins().load(types::I64, mem(), addr, 0))
                    }
                    _ => ArrayAt::Flat(addr),
                }
            }
        }
    }
}
