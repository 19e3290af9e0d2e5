//! HIR → CLIF for vecs and strings: one 8-byte cell each (0 = empty, else a counted block of
//! `runtime::values`), owned and released like handles (`lower_object.rs`), operated on by
//! `hot_vec_*` / `hot_str_*` helpers.
//!
//! A mutation of a vec place (`v[i] = x`, `v.push(x)`, `v.pop()`) evaluates the place's index
//! expressions first, then the value, and only then walks the place: at each vec level it reads
//! the cell, makes it unique (`hot_vec_unique`, which copies a shared block: copy-on-write) and
//! writes it back, then computes the element's address, checking the index against the length
//! the vec has *now*. So no address is held across code that could reallocate or share the vec.
//!
//! Indexing is inline (`[cell + VecBlock::LEN]`, `[cell + VecBlock::DATA]`): only a fault (the
//! empty vec, an index out of range) calls `hot_vec_at`, in a cold block, to raise; a store
//! calls `hot_vec_unique` only when the block is shared (its count, `[cell + VecBlock::REFS]`,
//! is not 1) or the vec is empty. A push onto the unique block is inline while its buffer has
//! room (`len < [cell + VecBlock::CAP]`), a pop while it has an element; `hot_vec_push` grows
//! the buffer and `hot_vec_pop` raises on the empty vec, from cold blocks.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{GlobalValue, InstBuilder, MemFlagsData, Value, types};
use cranelift_module::DataDescription;

use crate::backend::Checks;
use crate::lang::hir::{BinOp, Expr, ExprKind, Place, PlaceKind, Type};
use crate::lang::span::Span;

use crate::runtime::str_block::StrBlock;
use crate::runtime::values::{VecBlock, str_part};

use super::lower::{
    FunctionTranslator, LResult, LocalSlot, PlaceRef, bad, mem, place_has_vec_index,
};
use super::lower_index::pure_index;
use super::lower_object::borrowable_read;
use super::lower_unwind::TempHold;
use super::opt_vec::HoistedVec;

pub(crate) use crate::backend::objects::elem_kind;

/// The element type of a vec (or boxed array) type; `Unit` for another type.
fn vec_elem(vec_ty: &Type) -> &Type {
    match vec_ty {
        Type::Vec(elem) | Type::Array(elem, _) => elem,
        _ => &Type::Unit,
    }
}

/// The place of an element of type `elem` at `addr` in a vec's block: a bool is a byte there
/// ([`PlaceRef::Packed`], as in a bool array), anything else a whole cell.
fn elem_place(addr: Value, elem: &Type) -> PlaceRef {
    match elem {
        Type::Bool => PlaceRef::Packed(addr),
        _ => PlaceRef::Mem(addr),
    }
}

/// Where a vec place starts.
#[derive(Clone, Copy)]
enum VecRoot {
    /// A variable or a global.
    Place(PlaceRef),
    /// A vec field the loop being lowered hoisted (`opt_vec.rs`), of a handle known valid.
    Hoisted(HoistedVec),
    /// Field `field` of the object in handle `cell` (owned or borrowed, see `handle_operand`):
    /// checked at `span` when evaluated and again when walked.
    Field {
        cell: Value,
        owned: bool,
        field: u32,
        span: Span,
    },
}

/// A vec place with its indexes evaluated: the root variable or field, then one step per vec
/// level.
pub(crate) struct VecPath {
    root: VecRoot,
    /// An owned field-root handle, held until [`FunctionTranslator::finish_vec_path`].
    root_held: Option<TempHold>,
    /// `(index, its span, the indexed vec's type)`, outermost first.
    steps: Vec<(Value, Span, Type)>,
}

impl FunctionTranslator<'_, '_> {
    /// Evaluate the index expressions of a place made of vec levels, outermost first.
    pub(crate) fn translate_vec_path(&mut self, place: &Place) -> LResult<VecPath> {
        match &place.kind {
            PlaceKind::Local(id) => match self.local(*id)? {
                LocalSlot::Scalar(var) => Ok(VecPath {
                    root: VecRoot::Place(PlaceRef::Var(var)),
                    root_held: None,
                    steps: Vec::new(),
                }),
                _ => bad("a vec place rooted in a local that is not one cell"),
            },
            PlaceKind::Global(id) => Ok(VecPath {
                root: VecRoot::Place(PlaceRef::Mem(self.global_addr(*id)?)),
                root_held: None,
                steps: Vec::new(),
            }),
            PlaceKind::Index { base, .. }
                if matches!(base.ty, Type::Array(..))
                    && !place_has_vec_index(base)
                    && !matches!(base.kind, PlaceKind::Field { .. }) =>
            {
                // An element of a local's or a global's array, in its flat cells: the root.
                Ok(VecPath {
                    root: VecRoot::Place(self.translate_place(place)?),
                    root_held: None,
                    steps: Vec::new(),
                })
            }
            PlaceKind::Index { base, index } => {
                // A vec, or an array boxed in a vec's cell (walked like a vec of its length).
                let mut path = self.translate_vec_path(base)?;
                let idx = self.translate_expr(index)?;
                if let Type::Array(_, n) = &base.ty {
                    // An array's length is fixed: its index is checked now, before the value
                    // runs, as the interpreter does (a vec's waits for the walk, since the value
                    // may push or pop it); with checks on, the walk does not check it again.
                    self.check_index(idx, *n, index.span);
                }
                path.steps.push((idx, index.span, base.ty.clone()));
                Ok(path)
            }
            PlaceKind::Field { object, field } => {
                if let ExprKind::Local(handle) = object.kind
                    && let Some(hoisted) = self.hoisted_field(handle, *field)
                {
                    // Unique (the loop stores into it), its length and data read before the
                    // loop (`opt_vec.rs`).
                    return Ok(VecPath {
                        root: VecRoot::Hoisted(hoisted),
                        root_held: None,
                        steps: Vec::new(),
                    });
                }
                if let Some(c) = self.checked_handle(object) {
                    // Known valid for the rest of the activation, `self` among them, and its
                    // state block stays (`lower_region.rs`): the field's address is the root,
                    // with no check now or at the walk.
                    return Ok(VecPath {
                        root: VecRoot::Place(PlaceRef::Mem(self.checked_field(c, *field))),
                        root_held: None,
                        steps: Vec::new(),
                    });
                }
                let (cell, owned) = self.handle_operand(object)?;
                // Held while the indexes and the value run and the path is walked.
                let held = self.hold_if(owned, &object.ty, cell);
                self.check_object(cell, place.span);
                Ok(VecPath {
                    root: VecRoot::Field {
                        cell,
                        owned,
                        field: *field,
                        span: place.span,
                    },
                    root_held: Some(held),
                    steps: Vec::new(),
                })
            }
        }
    }

    /// Give up what evaluating the path took (the handle of a field root).
    pub(crate) fn finish_vec_path(&mut self, path: VecPath) {
        if let Some(held) = path.root_held {
            self.unhold(held);
        }
        if let VecRoot::Field { cell, owned, .. } = path.root {
            self.done_with(cell, owned);
        }
    }

    /// Walk an evaluated path to its element, making each vec on the way unique and checking
    /// each index against its vec's current length. A field root of a handle not known valid
    /// is checked again and its address taken now (the object may have been destroyed since it
    /// was evaluated); one known valid was made a `VecRoot::Place` of its field's address.
    pub(crate) fn walk_vec_path(&mut self, path: &VecPath) -> LResult<PlaceRef> {
        let hoisted = match path.root {
            VecRoot::Hoisted(hoisted) => Some(hoisted),
            VecRoot::Place(PlaceRef::Var(var)) => self.hoisted_vec_var(var),
            _ => None,
        };
        if let (Some(hoisted), [(idx, span, vec_ty)]) = (hoisted, &path.steps[..]) {
            // Unique, its length and data read before the loop (`opt_vec.rs`).
            let addr = self.hoisted_elem_addr(hoisted, *idx, *span);
            return Ok(elem_place(addr, vec_elem(vec_ty)));
        }
        let mut target = match path.root {
            VecRoot::Place(p) => p,
            VecRoot::Hoisted(_) => {
                return bad("a hoisted vec field's place with other than one index");
            }
            VecRoot::Field {
                cell, field, span, ..
            } => PlaceRef::Mem(self.checked_field_addr(cell, field, span)),
        };
        for (idx, span, vec_ty) in &path.steps {
            let cell = self.unique_vec_at(target, vec_ty)?;
            let elem = vec_elem(vec_ty);
            let addr = match vec_ty {
                // A boxed array's index was checked against its fixed length when the path
                // was evaluated (`translate_vec_path`; with checks on), and its block, unique
                // now, exists.
                Type::Array(..) if self.env.checks == Checks::On => {
                    self.vec_data_elem(cell, *idx, elem)
                }
                _ => self.vec_elem_addr(cell, *idx, *span, elem),
            };
            target = elem_place(addr, elem);
        }
        Ok(target)
    }

    /// The address of element `idx` (of type `elem`) of the vec in `cell` (borrowed), checked
    /// inline: the empty vec (a null cell) or an index outside `0..len` (unsigned: a negative
    /// index is a huge one) goes to a cold block whose `hot_vec_at` raises `IndexOutOfRange`
    /// at `span`.
    fn vec_elem_addr(&mut self, cell: Value, idx: Value, span: Span, elem: &Type) -> Value {
        let helper = self.env.helpers.vec_at;
        let fault = |t: &mut Self| {
            let (start, end) = t.span_args(span);
            t.call_helper(helper, &[cell, idx, start, end]);
        };
        let null = self.builder.ins().icmp_imm_s(IntCC::Equal, cell, 0);
        self.cold_raise(null, fault);
        let len = self
            .builder
            .ins()
            .load(types::I64, mem(), cell, VecBlock::LEN as i32);
        let out = self
            .builder
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, idx, len);
        self.cold_raise(out, fault);
        self.vec_data_elem(cell, idx, elem)
    }

    /// The address of element `idx` (of type `elem`) of the (non-null) vec block in `cell`,
    /// unchecked.
    fn vec_data_elem(&mut self, cell: Value, idx: Value, elem: &Type) -> Value {
        let data = self
            .builder
            .ins()
            .load(types::I64, mem(), cell, VecBlock::DATA as i32);
        self.elem_addr(data, idx, elem)
    }

    /// `data + idx * bytes`: the address of element `idx` of a vec's (or boxed array's) block
    /// whose elements, of type `elem`, start at `data` ([`ElemKind::bytes`]: a bool is a byte).
    pub(crate) fn elem_addr(&mut self, data: Value, idx: Value, elem: &Type) -> Value {
        self.scaled_addr(data, idx, elem_kind(elem).bytes())
    }

    /// Store cell `v` as a vec's element of `bytes` bytes at `addr` (a bool's one byte).
    pub(crate) fn store_elem_cell(&mut self, v: Value, addr: Value, bytes: usize) {
        match bytes {
            1 => self.builder.ins().istore8(mem(), v, addr, 0),
            _ => self.builder.ins().store(mem(), v, addr, 0),
        };
    }

    /// `data + idx * bytes`, `bytes` a power of two.
    pub(crate) fn scaled_addr(&mut self, data: Value, idx: Value, bytes: usize) -> Value {
        let offset = match bytes.trailing_zeros() {
            0 => idx,
            shift => self.builder.ins().ishl_imm_u(idx, i64::from(shift)),
        };
        self.builder.ins().iadd(data, offset)
    }

    /// Make the vec stored at `target` unique (copy-on-write) and return its cell (borrowed
    /// from the place). Inline when it already is (non-null, count 1: no other owner on any
    /// thread, so the count cannot change under us); else a cold call of `hot_vec_unique`,
    /// which copies a shared block (or makes one for the empty vec), and a store back.
    pub(crate) fn unique_vec_at(&mut self, target: PlaceRef, vec_ty: &Type) -> LResult<Value> {
        let (Type::Vec(elem) | Type::Array(elem, _)) = vec_ty else {
            return bad("a vec step on a value that is not a vec");
        };
        // A boxed array's cell is read and written as a vec's.
        let cell_ty = Type::Vec(elem.clone());
        let cell = self.read_place(target, &cell_ty)?;
        let check = self.builder.create_block();
        let slow = self.builder.create_block();
        let done = self.builder.create_block();
        self.builder.append_block_param(done, types::I64);
        self.builder.set_cold_block(slow);
        let null = self.builder.ins().icmp_imm_s(IntCC::Equal, cell, 0);
        self.builder.ins().brif(null, slow, &[], check, &[]);

        self.builder.switch_to_block(check);
        self.builder.seal_block(check);
        let refs = self.builder.ins().iadd_imm_s(cell, VecBlock::REFS as i64);
        // Acquire (an atomic load), as `hot_vec_unique`: the last use by an owner that went on
        // another thread happens before our writes.
        let refs = self.builder.ins().atomic_load(types::I64, mem(), refs);
        let shared = self.builder.ins().icmp_imm_s(IntCC::NotEqual, refs, 1);
        self.builder
            .ins()
            .brif(shared, slow, &[], done, &[cell.into()]);

        self.builder.switch_to_block(slow);
        self.builder.seal_block(slow);
        let kind = self
            .builder
            .ins()
            .iconst(types::I64, elem_kind(elem) as i64);
        let helper = self.env.helpers.vec_unique;
        let unique = self.call_helper(helper, &[cell, kind])[0];
        self.write_place(target, &cell_ty, unique)?;
        self.builder.ins().jump(done, &[unique.into()]);

        self.builder.switch_to_block(done);
        self.builder.seal_block(done);
        Ok(self.builder.block_params(done)[0])
    }

    /// `place.push(value)`.
    pub(crate) fn translate_vec_push(&mut self, place: &Place, value: &Expr) -> LResult<Value> {
        if let PlaceKind::Local(id) = place.kind
            && let Ok(LocalSlot::Scalar(var)) = self.local(id)
            && let Some(hoisted) = self.hoisted_vec_var(var)
            && hoisted.pushes()
        {
            // Its length, data and capacity kept in variables through the loop (`opt_vec.rs`).
            let v = self.translate_expr(value)?;
            let v = self.cell_of(v, &value.ty);
            self.hoisted_push(hoisted, v, vec_elem(&place.ty))?;
            return Ok(self.unit());
        }
        let path = self.translate_vec_path(place)?;
        let v = self.translate_expr(value)?;
        let (v, held_ty) = self.box_if_array(v, &value.ty)?;
        // Held while the path is walked (its indexes are checked); `vec_push` takes it.
        let held = self.hold(&held_ty, v);
        let target = self.walk_vec_path(&path)?;
        let cell = self.unique_vec_at(target, &place.ty)?;
        let v = self.cell_of(v, &value.ty);
        self.unhold(held);
        self.push_cell(cell, v, vec_elem(&place.ty));
        self.finish_vec_path(path);
        Ok(self.unit())
    }

    /// Push cell `v` (its reference moves in) onto the unique vec block `cell` of elements of
    /// type `elem`: inline while the buffer has room (the element at `data + bytes * len`,
    /// then `len + 1`), else a cold call of `hot_vec_push`, which grows the buffer (or raises
    /// out of memory, releasing `v`).
    fn push_cell(&mut self, cell: Value, v: Value, elem: &Type) {
        let len = self
            .builder
            .ins()
            .load(types::I64, mem(), cell, VecBlock::LEN as i32);
        let cap = self
            .builder
            .ins()
            .load(types::I64, mem(), cell, VecBlock::CAP as i32);
        let full = self
            .builder
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, len, cap);
        let fast = |t: &mut Self| {
            let addr = t.vec_data_elem(cell, len, elem);
            t.store_elem_cell(v, addr, elem_kind(elem).bytes());
            let grown = t.builder.ins().iadd_imm_s(len, 1);
            t.builder
                .ins()
                .store(mem(), grown, cell, VecBlock::LEN as i32);
            None
        };
        let helper = self.env.helpers.vec_push;
        self.cold_else(full, fast, |t| {
            t.call_helper(helper, &[cell, v]);
            None
        });
    }

    /// Pop the last element of the unique vec block `cell` of elements of type `elem` as a cell
    /// (its reference moves out): inline when there is one (`len - 1`, then the element
    /// there), else a cold call of `hot_vec_pop`, which raises "pop from an empty vec" at
    /// `span`.
    fn pop_cell(&mut self, cell: Value, span: Span, elem: &Type) -> LResult<Value> {
        let len = self
            .builder
            .ins()
            .load(types::I64, mem(), cell, VecBlock::LEN as i32);
        let empty = self.builder.ins().icmp_imm_s(IntCC::Equal, len, 0);
        let fast = |t: &mut Self| {
            let last = t.builder.ins().iadd_imm_s(len, -1);
            t.builder
                .ins()
                .store(mem(), last, cell, VecBlock::LEN as i32);
            let addr = t.vec_data_elem(cell, last, elem);
            Some(match elem_kind(elem).bytes() {
                1 => t.builder.ins().uload8(types::I64, mem(), addr, 0),
                _ => t.builder.ins().load(types::I64, mem(), addr, 0),
            })
        };
        let helper = self.env.helpers.vec_pop;
        let slow = |t: &mut Self| {
            let (start, end) = t.span_args(span);
            t.call_helper(helper, &[cell, start, end]).first().copied()
        };
        match self.cold_else(empty, fast, slow) {
            Some(bits) => Ok(bits),
            None => bad("hot_vec_pop returns no cell"),
        }
    }

    /// `place.pop()`: the element moves out (owned).
    pub(crate) fn translate_vec_pop(&mut self, place: &Place, e: &Expr) -> LResult<Value> {
        let path = self.translate_vec_path(place)?;
        let target = self.walk_vec_path(&path)?;
        let cell = self.unique_vec_at(target, &place.ty)?;
        let bits = self.pop_cell(cell, e.span, vec_elem(&place.ty))?;
        self.finish_vec_path(path);
        if let Type::Array(..) = e.ty {
            // The box moves out: unboxed (retaining), then given up.
            let v = self.unbox_array(bits, &e.ty)?;
            let boxed = Type::Vec(Box::new(e.ty.clone()));
            self.release_value(&boxed, bits);
            return Ok(v);
        }
        Ok(self.value_of_cell(bits, &e.ty))
    }

    /// A register value as its 8-byte cell.
    fn cell_of(&mut self, v: Value, ty: &Type) -> Value {
        match ty {
            Type::F64 => self
                .builder
                .ins()
                .bitcast(types::I64, MemFlagsData::new(), v),
            Type::Bool => self.builder.ins().uextend(types::I64, v),
            _ => v,
        }
    }

    /// An 8-byte cell as a register value of type `ty`.
    fn value_of_cell(&mut self, bits: Value, ty: &Type) -> Value {
        match ty {
            Type::F64 => self
                .builder
                .ins()
                .bitcast(types::F64, MemFlagsData::new(), bits),
            Type::Bool => self.builder.ins().ireduce(types::I8, bits),
            _ => bits,
        }
    }

    /// `v[i]` of a vec: checked at the whole expression's span; a managed element is retained.
    pub(crate) fn translate_vec_index(
        &mut self,
        vec: &Expr,
        index: &Expr,
        whole: &Expr,
    ) -> LResult<Value> {
        if let Some(hoisted) = self.hoisted_vec_of(vec) {
            // Its length and data read before the loop (`opt_vec.rs`).
            let idx = self.translate_expr(index)?;
            let addr = self.hoisted_elem_addr(hoisted, idx, whole.span);
            return self.load_cell_owned(addr, &whole.ty);
        }
        let (cell, owned) = self.borrowed_operand(vec, pure_index(index))?;
        let held = self.hold_if(owned, &vec.ty, cell);
        let idx = self.translate_expr(index)?;
        let addr = self.vec_elem_addr(cell, idx, whole.span, &whole.ty);
        // A boxed array, unboxed into an owned temporary.
        let v = self.load_cell_owned(addr, &whole.ty)?;
        self.unhold(held);
        self.done_with_value(&vec.ty, cell, owned);
        Ok(v)
    }

    /// `v[i]` of a vec whose element is not retained: the `let x = v[i]` that borrows its
    /// element from a local `v`'s block, or an element read for a use during which no code
    /// runs (`borrowed_operand`; `v` itself a `borrowable_read`) (`lower_region.rs`, "Borrowed
    /// reads").
    pub(crate) fn translate_vec_index_borrowed(
        &mut self,
        vec: &Expr,
        index: &Expr,
        whole: &Expr,
    ) -> LResult<Value> {
        if let Some(hoisted) = self.hoisted_vec_of(vec) {
            let idx = self.translate_expr(index)?;
            let addr = self.hoisted_elem_addr(hoisted, idx, whole.span);
            return self.load_value(addr, &whole.ty);
        }
        let (cell, owned) = self.borrowed_operand(vec, pure_index(index))?;
        if owned {
            return bad("a borrowed element of a vec that is not a local or a borrowable read");
        }
        let idx = self.translate_expr(index)?;
        let addr = self.vec_elem_addr(cell, idx, whole.span, &whole.ty);
        self.load_value(addr, &whole.ty)
    }

    /// `v.len()` of a vec or a string.
    pub(crate) fn translate_dynamic_len(&mut self, value: &Expr) -> LResult<Value> {
        if let Some(hoisted) = self.hoisted_vec_of(value) {
            return Ok(self.hoisted_len(hoisted));
        }
        let (cell, owned) = self.borrowed_operand(value, true)?;
        let n = match value.ty {
            // A string's length is in its block (`runtime::str_block`): read inline.
            Type::Str => self.len_inline(cell, StrBlock::LEN as i32),
            // So is a vec's (`runtime::values::VecBlock`).
            _ => self.len_inline(cell, VecBlock::LEN as i32),
        };
        self.done_with_value(&value.ty, cell, owned);
        Ok(n)
    }

    /// The length of the vec in `cell` (borrowed), read inline.
    pub(crate) fn vec_len_inline(&mut self, cell: Value) -> Value {
        self.len_inline(cell, VecBlock::LEN as i32)
    }

    /// The data pointer of the vec in `cell` (borrowed), read inline: 0 for the empty vec.
    pub(crate) fn vec_data_inline(&mut self, cell: Value) -> Value {
        self.len_inline(cell, VecBlock::DATA as i32)
    }

    /// The length of the string or vec in `cell` (borrowed): 0 for the empty one (a null
    /// cell), else the `i64` at `offset` in its block.
    fn len_inline(&mut self, cell: Value, offset: i32) -> Value {
        let load_block = self.builder.create_block();
        let done = self.builder.create_block();
        self.builder.append_block_param(done, types::I64);
        let zero = self.builder.ins().iconst(types::I64, 0);
        let null = self.builder.ins().icmp_imm_s(IntCC::Equal, cell, 0);
        self.builder
            .ins()
            .brif(null, done, &[zero.into()], load_block, &[]);
        self.builder.switch_to_block(load_block);
        self.builder.seal_block(load_block);
        let len = self.builder.ins().load(types::I64, mem(), cell, offset);
        self.builder.ins().jump(done, &[len.into()]);
        self.builder.switch_to_block(done);
        self.builder.seal_block(done);
        self.builder.block_params(done)[0]
    }

    /// The address of read-only bytes in the module's data.
    pub(crate) fn data_addr(&mut self, bytes: Vec<u8>) -> LResult<Value> {
        let gv = self.data_global(bytes)?;
        Ok(self.builder.ins().symbol_value(types::I64, gv))
    }

    /// Read-only bytes as a new data object of the module, declared in this function.
    pub(crate) fn data_global(&mut self, bytes: Vec<u8>) -> LResult<GlobalValue> {
        let id = self
            .module
            .declare_anonymous_data(false, false)
            .map_err(|e| super::lower::LowerError(format!("data: {e}")))?;
        let mut data = DataDescription::new();
        data.define(bytes.into_boxed_slice());
        data.set_align(8);
        self.module
            .define_data(id, &data)
            .map_err(|e| super::lower::LowerError(format!("data: {e}")))?;
        Ok(self.module.declare_data_in_func(id, self.builder.func))
    }

    /// A string literal: a new string from the text in the module's data (0 for `""`).
    pub(crate) fn translate_str_lit(&mut self, text: &str) -> LResult<Value> {
        if text.is_empty() {
            return Ok(self.builder.ins().iconst(types::I64, 0));
        }
        let ptr = self.data_addr(text.as_bytes().to_vec())?;
        let len = self.builder.ins().iconst(types::I64, text.len() as i64);
        let helper = self.env.helpers.str_lit;
        Ok(self.call_helper(helper, &[ptr, len])[0])
    }

    /// `l + r`, `l == r`, `l != r` on strings (operands released after).
    pub(crate) fn translate_str_binary(&mut self, e: &Expr) -> LResult<Value> {
        let ExprKind::Binary {
            op,
            op_span,
            lhs,
            rhs,
        } = &e.kind
        else {
            return bad("a string operator that is not binary");
        };
        // The join (or a chain's) is at the operator, as every error of a binary operator.
        self.enter_span(*op_span);
        if *op == BinOp::Add
            && let Some(v) = self.translate_str_chain(e)?
        {
            return Ok(v);
        }
        // Two reads that run no code (`keys[i] == w`): both borrowed, as the operation only
        // reads them (`borrowed_operand`).
        let both = borrowable_read(lhs) && borrowable_read(rhs);
        let (l, l_owned) = self.borrowed_operand(lhs, both)?;
        // Held while the right operand runs (`a + f()`). Concatenation and comparison do not
        // raise, so the right operand needs no hold.
        let l_held = self.hold_if(l_owned, &lhs.ty, l);
        let (r, r_owned) = self.borrowed_operand(rhs, both)?;
        let v = self.binary_values(*op, *op_span, &Type::Str, l, r)?;
        self.unhold(l_held);
        self.done_with_value(&Type::Str, l, l_owned);
        self.done_with_value(&Type::Str, r, r_owned);
        Ok(v)
    }

    /// A chain of `+` of strings (an interpolation `"item ${i}"` is `"item " + ToStr(i)`)
    /// made at once by `hot_str_build` with one allocation, when it has a literal, a shown
    /// scalar or at least three parts; `None` (and no code) otherwise. The parts are evaluated
    /// left to right, as the nested `+` evaluates them; an owned string part is held until the
    /// string is made (a later part may raise). Showing a scalar and joining never raise and
    /// have no effect, so showing the scalars at the end, with the join, changes nothing.
    fn translate_str_chain(&mut self, e: &Expr) -> LResult<Option<Value>> {
        fn chain<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
            match &e.kind {
                ExprKind::Binary {
                    op: BinOp::Add,
                    lhs,
                    rhs,
                    ..
                } if e.ty == Type::Str => {
                    chain(lhs, out);
                    chain(rhs, out);
                }
                _ => out.push(e),
            }
        }
        let scalar = |e: &Expr| match &e.kind {
            ExprKind::ToStr(x) => matches!(x.ty, Type::I64 | Type::F64 | Type::Bool),
            _ => false,
        };
        let mut parts = Vec::new();
        chain(e, &mut parts);
        let worth = parts.len() >= 3
            || parts
                .iter()
                .any(|p| matches!(p.kind, ExprKind::StrLit(_)) || scalar(p));
        if !worth {
            return Ok(None);
        }
        let slot = self.new_slot(3 * parts.len() as u64);
        let base = self.slot_addr(slot);
        let mut strings = Vec::new();
        for (k, part) in parts.iter().enumerate() {
            let zero = self.builder.ins().iconst(types::I64, 0);
            let (tag, a, b) = match &part.kind {
                ExprKind::StrLit(text) => {
                    let len = self.builder.ins().iconst(types::I64, text.len() as i64);
                    // The empty literal: no bytes to read.
                    let a = if text.is_empty() {
                        zero
                    } else {
                        self.data_addr(text.as_bytes().to_vec())?
                    };
                    (str_part::BYTES, a, len)
                }
                ExprKind::ToStr(x) if scalar(part) => {
                    let v = self.translate_expr(x)?;
                    let (tag, a) = match x.ty {
                        Type::I64 => (str_part::I64, v),
                        Type::F64 => (
                            str_part::F64,
                            self.builder
                                .ins()
                                .bitcast(types::I64, MemFlagsData::new(), v),
                        ),
                        _ => (str_part::BOOL, self.builder.ins().uextend(types::I64, v)),
                    };
                    (tag, a, zero)
                }
                _ => {
                    let (cell, owned) = self.handle_operand(part)?;
                    let held = self.hold_if(owned, &Type::Str, cell);
                    strings.push((cell, owned, held));
                    (str_part::STR, cell, zero)
                }
            };
            let tag = self.builder.ins().iconst(types::I64, tag as i64);
            let at = (24 * k) as i32;
            self.builder.ins().store(mem(), tag, base, at);
            self.builder.ins().store(mem(), a, base, at + 8);
            self.builder.ins().store(mem(), b, base, at + 16);
        }
        let n = self.builder.ins().iconst(types::I64, parts.len() as i64);
        let helper = self.env.helpers.str_build;
        let s = self.call_helper(helper, &[base, n])[0];
        for (cell, owned, held) in strings.into_iter().rev() {
            self.unhold(held);
            self.done_with_value(&Type::Str, cell, owned);
        }
        Ok(Some(s))
    }

    /// `"${inner}"`: the value shown as a new string.
    pub(crate) fn translate_to_str(&mut self, inner: &Expr) -> LResult<Value> {
        let h = self.env.helpers;
        match &inner.ty {
            Type::I64 | Type::F64 | Type::Bool => {
                let v = self.translate_expr(inner)?;
                let helper = match inner.ty {
                    Type::I64 => h.str_of_i64,
                    Type::F64 => h.str_of_f64,
                    _ => h.str_of_bool,
                };
                Ok(self.call_helper(helper, &[v])[0])
            }
            Type::Handle { .. } | Type::Null | Type::Vec(_) | Type::Str | Type::Fn { .. } => {
                let (cell, owned) = self.handle_operand(inner)?;
                let helper = match inner.ty {
                    Type::Vec(_) => h.str_of_vec,
                    Type::Str => h.str_retain,
                    Type::Fn { .. } => h.str_of_closure,
                    _ => h.str_of_handle,
                };
                let s = self.call_helper(helper, &[cell])[0];
                self.done_with_value(&inner.ty, cell, owned);
                Ok(s)
            }
            Type::Array(..) => {
                let (ptr, owned) = self.array_operand(inner)?;
                let [kind, dims, ndims] = self.array_shape(&inner.ty)?;
                let s = self.call_helper(h.str_of_array, &[ptr, kind, dims, ndims])[0];
                self.done_with_array(ptr, &inner.ty, owned);
                Ok(s)
            }
            Type::Unit => bad("a unit value shown as a string"),
        }
    }
}
