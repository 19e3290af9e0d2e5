//! HIR → CLIF for arrays whose cells own references (`[str; 4]`, `[[C?; 2]; 3]`,
//! `[vec<i64>; 2]`, `[fn() -> i64; 2]`) and for arrays boxed in a vec's cells (`vec<[T; N]>`).
//!
//! # Ownership
//! An array is a run of cells; each managed cell owns one reference, as a managed variable
//! does (`lower_object.rs`). An array-valued expression of such a type yields the address of an
//! *owned* temporary: reading a local or a module variable copies its cells into a fresh slot
//! and retains each managed one ([`FunctionTranslator::copy_retained`]); literals, calls and
//! element reads make fresh cells. A consumer moves the cells (a store into a variable, an
//! element, an out pointer, a closure's cells, a vec: the place's old cells are released
//! first) or releases them after use ([`FunctionTranslator::release_cells`]), as a call does
//! for its array arguments. An element read or an interpolation of a local borrows its slot
//! instead ([`FunctionTranslator::array_operand`]).
//!
//! Array locals of such types are *owned slots*: zeroed in the block that runs right after the
//! stack check (before anything that can raise), always holding owned cells, and released when
//! the function returns ([`FunctionTranslator::release_owned`]); so are the snapshots of
//! `for x in a` loops. Parameters and captures are borrowed (the caller, the closure, keeps the
//! references) and never released. [`FunctionTranslator::own_array_cells`] names the owned
//! cells of the slots in the stack maps (`lower_unwind.rs`).
//!
//! # Boxed arrays
//! In a vec's cell an array is boxed: a vec block of its elements, rows boxed in turn
//! (`runtime::arrays::box_array`). Pushing or storing an array boxes it (moving the references
//! in); reading one unboxes it into a fresh owned temporary (`hot_array_unbox`, retaining);
//! an element store `v[i][j] = x` walks into the box like a nested vec (`lower_value.rs`).

use cranelift_codegen::ir::{InstBuilder, StackSlot, Value, types};

use crate::lang::hir::{Expr, ExprKind, Type};

use super::lower::{FunctionTranslator, LResult, LocalSlot, mem};
use super::lower_value::elem_kind;

/// Arrays at most this long have their cells retained or released by unrolled code; longer ones
/// by a loop.
const UNROLL: u32 = 8;

impl FunctionTranslator<'_, '_> {
    /// Call `f(cell address, cell type)` for every managed cell of a value of type `ty` at
    /// `base` (the value itself for a managed scalar).
    fn walk_owned(&mut self, base: Value, ty: &Type, f: &mut dyn FnMut(&mut Self, Value, &Type)) {
        match ty {
            Type::Array(elem, n) if elem.owns_cells() => {
                let step = elem.stride() as i64;
                if *n <= UNROLL {
                    for i in 0..i64::from(*n) {
                        let addr = self.builder.ins().iadd_imm_s(base, i * step);
                        self.walk_owned(addr, elem, f);
                    }
                } else {
                    let end = self.builder.ins().iconst(types::I64, step * i64::from(*n));
                    self.byte_loop(end, step, |t, offset| {
                        let addr = t.builder.ins().iadd(base, offset);
                        t.walk_owned(addr, elem, f);
                    });
                }
            }
            ty if ty.is_managed() => f(self, base, ty),
            _ => {}
        }
    }

    /// Take a reference through every managed cell of the array at `addr`.
    pub(crate) fn retain_cells(&mut self, addr: Value, ty: &Type) {
        self.walk_owned(addr, ty, &mut |t, cell, leaf| {
            let v = t.builder.ins().load(types::I64, mem(), cell, 0);
            t.retain_value(leaf, v);
        });
    }

    /// Give up the reference of every managed cell of the array at `addr`.
    pub(crate) fn release_cells(&mut self, addr: Value, ty: &Type) {
        self.walk_owned(addr, ty, &mut |t, cell, leaf| {
            let v = t.builder.ins().load(types::I64, mem(), cell, 0);
            t.release_value(leaf, v);
        });
    }

    /// Zero every managed cell of the array at `addr` (it then owns nothing).
    pub(crate) fn zero_cells(&mut self, addr: Value, ty: &Type) {
        self.walk_owned(addr, ty, &mut |t, cell, _| {
            let zero = t.builder.ins().iconst(types::I64, 0);
            t.builder.ins().store(mem(), zero, cell, 0);
        });
    }

    /// A fresh owned temporary holding a copy of the array at `src`, each managed cell
    /// retained.
    pub(crate) fn copy_retained(&mut self, src: Value, ty: &Type) -> Value {
        let slot = self.new_slot(ty.cells());
        let copy = self.slot_addr(slot);
        self.copy_cells(copy, src, ty.cells());
        self.retain_cells(copy, ty);
        copy
    }

    /// An array expression as `(address, owned)`: a local of an owning type is borrowed (its
    /// slot: nothing in the expression can assign to it), anything else evaluated (owned when
    /// its type owns cells). Give it back with [`Self::done_with_array`].
    pub(crate) fn array_operand(&mut self, e: &Expr) -> LResult<(Value, bool)> {
        if let ExprKind::Local(id) = &e.kind
            && let LocalSlot::Array(slot) = self.local(*id)?
        {
            return Ok((self.slot_addr(slot), false));
        }
        Ok((self.translate_expr(e)?, e.ty.owns_cells()))
    }

    pub(crate) fn done_with_array(&mut self, addr: Value, ty: &Type, owned: bool) {
        if owned {
            self.release_cells(addr, ty);
        }
    }

    /// A new owned slot of type `ty`, zeroed at function entry and released on return.
    pub(crate) fn new_owned_slot(&mut self, ty: &Type) -> StackSlot {
        let slot = self.new_slot(ty.cells());
        self.owned_arrays.push((slot, ty.clone()));
        self.own_array_cells(slot, ty);
        slot
    }

    /// Zero the owned array slots (in the block after the stack check).
    pub(crate) fn zero_owned_arrays(&mut self) {
        for (slot, ty) in self.owned_arrays.clone() {
            let addr = self.slot_addr(slot);
            self.zero_cells(addr, &ty);
        }
    }

    /// Release the cells of the owned array slots (before a return).
    pub(crate) fn release_owned_arrays(&mut self) {
        for (slot, ty) in self.owned_arrays.clone() {
            let addr = self.slot_addr(slot);
            self.release_cells(addr, &ty);
        }
    }

    /// Move the owned array at `value` into the owned cells at `dst`, releasing what they held.
    pub(crate) fn replace_cells(&mut self, dst: Value, ty: &Type, value: Value) {
        self.release_cells(dst, ty);
        self.copy_cells(dst, value, ty.cells());
    }

    /// `[item; n]`: `n` copies of the owned item `v` at `base`. An item of an owning type has
    /// each copy retained, then is released itself; one of no cells stores nothing.
    pub(crate) fn fill_array(&mut self, base: Value, item: &Type, v: Value, n: u32) -> LResult<()> {
        if *item == Type::Bool {
            self.fill_bools(base, v, n);
            return Ok(());
        }
        let step = item.stride() as i64;
        if step == 0 {
            return Ok(());
        }
        let end = self.builder.ins().iconst(types::I64, step * i64::from(n));
        let mut result = Ok(());
        self.byte_loop(end, step, |t, offset| {
            let addr = t.builder.ins().iadd(base, offset);
            result = t.store_value(addr, item, v);
            match item {
                Type::Array(..) => t.retain_cells(addr, item),
                _ => {
                    t.retain_value(item, v);
                }
            }
        });
        result?;
        self.release_value(item, v);
        Ok(())
    }

    /// `[b; n]` of a bool `b` at `base`: eight elements a cell, each whole cell stored with
    /// `b` in all its bytes, the last partial one with its padding bytes zero (as
    /// [`Self::zero_bool_padding`] leaves them).
    fn fill_bools(&mut self, base: Value, b: Value, n: u32) {
        const ALL_BYTES: i64 = 0x0101_0101_0101_0101;
        // `jit` has no egraph to fold `[false; n]`'s pattern into a constant.
        let pattern = match self.constant_of(b) {
            Some(c) => self.builder.ins().iconst(types::I64, (c & 1) * ALL_BYTES),
            None => {
                let byte = self.builder.ins().uextend(types::I64, b);
                self.builder.ins().imul_imm_s(byte, ALL_BYTES)
            }
        };
        let whole = u64::from(n / 8);
        if whole <= 16 {
            for i in 0..whole {
                self.store_at(pattern, base, i * 8);
            }
        } else {
            let end = self.builder.ins().iconst(types::I64, (whole * 8) as i64);
            self.byte_loop(end, 8, |t, offset| {
                let addr = t.builder.ins().iadd(base, offset);
                t.builder.ins().store(mem(), pattern, addr, 0);
            });
        }
        let rest = n % 8;
        if rest != 0 {
            let mask = (1i64 << (8 * rest)) - 1;
            let last = self.builder.ins().band_imm_s(pattern, mask);
            self.store_at(last, base, whole * 8);
        }
    }

    /// `let a = [item; n]` into an array local's slot of a type that owns no cells: the item
    /// is evaluated, then its copies are written straight into the slot, not into a temporary
    /// copied after (which doubled the frame and the stores). Nothing can read the slot in
    /// between: the initializer cannot name the local it initializes, and an error in it
    /// unwinds out of the function. `false` (and no code) when `init` is not such a repeat.
    pub(crate) fn let_array_in_place(&mut self, slot: StackSlot, init: &Expr) -> LResult<bool> {
        let ExprKind::ArrayRepeat(item, n) = &init.kind else {
            return Ok(false);
        };
        if init.ty.owns_cells() {
            return Ok(false);
        }
        let v = self.translate_expr(item)?;
        let dst = self.slot_addr(slot);
        self.fill_array(dst, &item.ty, v, *n)?;
        Ok(true)
    }

    /// The leaf kind, the lengths (in the module's data) and their count of an array type, as
    /// `hot_str_of_array`, `hot_array_box` and `hot_array_unbox` take them.
    pub(crate) fn array_shape(&mut self, ty: &Type) -> LResult<[Value; 3]> {
        let mut dims = Vec::new();
        let mut leaf = ty;
        while let Type::Array(elem, n) = leaf {
            dims.extend_from_slice(&n.to_le_bytes());
            leaf = elem;
        }
        let ndims = (dims.len() / 4) as i64;
        // One data object per shape in a function, however many times it boxes or shows one.
        let gv = match self.shapes.get(&dims) {
            Some(&gv) => gv,
            None => {
                let gv = self.data_global(dims.clone())?;
                self.shapes.insert(dims, gv);
                gv
            }
        };
        let dims = self.builder.ins().symbol_value(types::I64, gv);
        let kind = self
            .builder
            .ins()
            .iconst(types::I64, elem_kind(leaf) as i64);
        let ndims = self.builder.ins().iconst(types::I64, ndims);
        Ok([kind, dims, ndims])
    }

    /// Box the owned array at `addr` into one owned cell (its references move in).
    pub(crate) fn box_array(&mut self, addr: Value, ty: &Type) -> LResult<Value> {
        let [kind, dims, ndims] = self.array_shape(ty)?;
        let helper = self.env.helpers.array_box;
        Ok(self.call_helper(helper, &[addr, kind, dims, ndims])[0])
    }

    /// Unbox the boxed array in `cell` (borrowed) into the cells at `dst` (each retained).
    pub(crate) fn unbox_into(&mut self, cell: Value, dst: Value, ty: &Type) -> LResult<()> {
        let [kind, dims, ndims] = self.array_shape(ty)?;
        let helper = self.env.helpers.array_unbox;
        self.call_helper(helper, &[cell, dst, kind, dims, ndims]);
        Ok(())
    }

    /// Unbox the boxed array in `cell` (borrowed) into a fresh owned temporary.
    pub(crate) fn unbox_array(&mut self, cell: Value, ty: &Type) -> LResult<Value> {
        let slot = self.new_slot(ty.cells());
        let dst = self.slot_addr(slot);
        self.unbox_into(cell, dst, ty)?;
        Ok(dst)
    }

    /// Unbox the boxed array in the cell at `addr` (a vec element or a field, borrowed) into a
    /// fresh owned temporary.
    pub(crate) fn unbox_array_at(&mut self, addr: Value, ty: &Type) -> LResult<Value> {
        let boxed = self.builder.ins().load(types::I64, mem(), addr, 0);
        self.unbox_array(boxed, ty)
    }

    /// An owned value of type `ty` as the cell a vec element or a field holds, with that
    /// cell's type: an array is boxed (its references move in) and its cell owns a vec block;
    /// anything else is its own cell.
    pub(crate) fn box_if_array(&mut self, v: Value, ty: &Type) -> LResult<(Value, Type)> {
        match ty {
            Type::Array(..) => Ok((self.box_array(v, ty)?, Type::Vec(Box::new(ty.clone())))),
            _ => Ok((v, ty.clone())),
        }
    }

    /// An owned value of type `ty` read from the cell at `addr` a vec element or a field
    /// holds (the other way of `box_if_array`): an array is unboxed into an owned temporary
    /// (its references retained); anything else is loaded and retained.
    pub(crate) fn load_cell_owned(&mut self, addr: Value, ty: &Type) -> LResult<Value> {
        match ty {
            Type::Array(..) => self.unbox_array_at(addr, ty),
            _ => {
                let v = self.load_value(addr, ty)?;
                Ok(self.retain_value(ty, v))
            }
        }
    }
}
