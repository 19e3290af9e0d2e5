//! HIR → CLIF for vecs and strings: one 8-byte cell each (0 = empty, else a counted block of
//! `runtime::values`), owned and released like handles (`lower_object.rs`), operated on by
//! `hot_vec_*` / `hot_str_*` helpers.
//!
//! A mutation of a vec place (`v[i] = x`, `v.push(x)`, `v.pop()`) evaluates the place's index
//! expressions first, then the value, and only then walks the place: at each vec level it reads
//! the cell, makes it unique (`hot_vec_unique`, which copies a shared block: copy-on-write) and
//! writes it back, then gets the element's address from `hot_vec_at`, which checks the index
//! against the length the vec has *now*. So no address is held across code that could
//! reallocate or share the vec.

use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value, types};
use cranelift_module::DataDescription;

use crate::lang::hir::{Expr, ExprKind, Place, PlaceKind, Type};
use crate::lang::span::Span;
use crate::runtime::values::ElemKind;

use super::lower::{FunctionTranslator, LResult, LocalSlot, PlaceRef, bad};

/// The kind code of a one-cell element type (see [`ElemKind`]).
pub(crate) fn elem_kind(ty: &Type) -> ElemKind {
    match ty {
        Type::F64 => ElemKind::F64,
        Type::Bool => ElemKind::Bool,
        Type::Handle { .. } | Type::Null => ElemKind::Handle,
        Type::Vec(_) => ElemKind::Vec,
        Type::Str => ElemKind::Str,
        Type::Fn { .. } => ElemKind::Fn,
        _ => ElemKind::I64,
    }
}

/// A vec place with its indexes evaluated: the root variable, then one step per vec level.
pub(crate) struct VecPath {
    root: PlaceRef,
    /// `(index, its span, the indexed vec's type)`, outermost first.
    steps: Vec<(Value, Span, Type)>,
}

impl FunctionTranslator<'_, '_> {
    /// Evaluate the index expressions of a place made of vec levels, outermost first.
    pub(crate) fn translate_vec_path(&mut self, place: &Place) -> LResult<VecPath> {
        match &place.kind {
            PlaceKind::Local(id) => match self.local(*id)? {
                LocalSlot::Scalar(var) => Ok(VecPath {
                    root: PlaceRef::Var(var),
                    steps: Vec::new(),
                }),
                _ => bad("a vec place rooted in a local that is not one cell"),
            },
            PlaceKind::Global(id) => Ok(VecPath {
                root: PlaceRef::Mem(self.global_addr(*id)?),
                steps: Vec::new(),
            }),
            PlaceKind::Index { base, index } => {
                if !matches!(base.ty, Type::Vec(_)) {
                    return bad("a vec place indexing an array");
                }
                let mut path = self.translate_vec_path(base)?;
                let idx = self.translate_expr(index)?;
                path.steps.push((idx, index.span, base.ty.clone()));
                Ok(path)
            }
            PlaceKind::Field { .. } => bad("a vec place in a field"),
        }
    }

    /// Walk an evaluated path to its element, making each vec on the way unique and checking
    /// each index against its vec's current length.
    pub(crate) fn walk_vec_path(&mut self, path: &VecPath) -> LResult<PlaceRef> {
        let mut target = path.root;
        for (idx, span, vec_ty) in &path.steps {
            let cell = self.unique_vec_at(target, vec_ty)?;
            let (start, end) = self.span_args(*span);
            let helper = self.env.helpers.vec_at;
            let addr = self.call_helper(helper, &[cell, *idx, start, end])[0];
            target = PlaceRef::Mem(addr);
        }
        Ok(target)
    }

    /// Make the vec stored at `target` unique (copy-on-write) and return its cell (borrowed
    /// from the place).
    fn unique_vec_at(&mut self, target: PlaceRef, vec_ty: &Type) -> LResult<Value> {
        let Type::Vec(elem) = vec_ty else {
            return bad("a vec step on a value that is not a vec");
        };
        let cell = self.read_place(target, vec_ty)?;
        let kind = self
            .builder
            .ins()
            .iconst(types::I64, elem_kind(elem) as i64);
        let helper = self.env.helpers.vec_unique;
        let unique = self.call_helper(helper, &[cell, kind])[0];
        self.write_place(target, vec_ty, unique)?;
        Ok(unique)
    }

    /// `place.push(value)`.
    pub(crate) fn translate_vec_push(&mut self, place: &Place, value: &Expr) -> LResult<Value> {
        let path = self.translate_vec_path(place)?;
        let v = self.translate_expr(value)?;
        let target = self.walk_vec_path(&path)?;
        let cell = self.unique_vec_at(target, &place.ty)?;
        let v = self.cell_of(v, &value.ty);
        let helper = self.env.helpers.vec_push;
        self.call_helper(helper, &[cell, v]);
        Ok(self.unit())
    }

    /// `place.pop()`: the element moves out (owned).
    pub(crate) fn translate_vec_pop(&mut self, place: &Place, e: &Expr) -> LResult<Value> {
        let path = self.translate_vec_path(place)?;
        let target = self.walk_vec_path(&path)?;
        let cell = self.unique_vec_at(target, &place.ty)?;
        let (start, end) = self.span_args(e.span);
        let helper = self.env.helpers.vec_pop;
        let bits = self.call_helper(helper, &[cell, start, end])[0];
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
        let (cell, owned) = self.handle_operand(vec)?;
        let idx = self.translate_expr(index)?;
        let (start, end) = self.span_args(whole.span);
        let helper = self.env.helpers.vec_at;
        let addr = self.call_helper(helper, &[cell, idx, start, end])[0];
        let v = self.load_value(addr, &whole.ty)?;
        let v = self.retain_value(&whole.ty, v);
        self.done_with_value(&vec.ty, cell, owned);
        Ok(v)
    }

    /// `v.len()` of a vec or a string.
    pub(crate) fn translate_dynamic_len(&mut self, value: &Expr) -> LResult<Value> {
        let (cell, owned) = self.handle_operand(value)?;
        let helper = match value.ty {
            Type::Str => self.env.helpers.str_len,
            _ => self.env.helpers.vec_len,
        };
        let n = self.call_helper(helper, &[cell])[0];
        self.done_with_value(&value.ty, cell, owned);
        Ok(n)
    }

    /// The address of read-only bytes in the module's data.
    pub(crate) fn data_addr(&mut self, bytes: Vec<u8>) -> LResult<Value> {
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
        let gv = self.module.declare_data_in_func(id, self.builder.func);
        Ok(self.builder.ins().symbol_value(types::I64, gv))
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
        let (l, l_owned) = self.handle_operand(lhs)?;
        let (r, r_owned) = self.handle_operand(rhs)?;
        let v = self.binary_values(*op, *op_span, &Type::Str, l, r)?;
        self.done_with_value(&Type::Str, l, l_owned);
        self.done_with_value(&Type::Str, r, r_owned);
        Ok(v)
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
                let ptr = self.translate_expr(inner)?;
                let mut dims = Vec::new();
                let mut leaf = &inner.ty;
                while let Type::Array(elem, n) = leaf {
                    dims.extend_from_slice(&n.to_le_bytes());
                    leaf = elem;
                }
                let ndims = (dims.len() / 4) as i64;
                let dims = self.data_addr(dims)?;
                let kind = self
                    .builder
                    .ins()
                    .iconst(types::I64, elem_kind(leaf) as i64);
                let ndims = self.builder.ins().iconst(types::I64, ndims);
                Ok(self.call_helper(h.str_of_array, &[ptr, kind, dims, ndims])[0])
            }
            Type::Unit => bad("a unit value shown as a string"),
        }
    }
}
