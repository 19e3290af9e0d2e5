//! HIR → CLIF for expressions: one `translate_<construct>` per expression kind.
//!
//! An expression yields one `Value`: a scalar in a register, or for an array the address of its
//! cells. That address is either a fresh temporary slot (literals, calls, copies of globals) or,
//! for a local or an element of a local, the local's own slot: no code inside one expression can
//! assign to a local, so the value cannot change under the reader. A global array is copied
//! when it is read, because a call later in the same expression may assign to it.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{InstBuilder, Value, types};

use crate::lang::hir::{BinOp, Expr, ExprKind, FuncId, LocalId, LogicOp, NativeId, Type, UnOp};
use crate::lang::span::Span;

use super::lower::{FunctionTranslator, LResult, LocalSlot, bad};
use super::lower_unwind::TempHold;

impl FunctionTranslator<'_, '_> {
    /// Evaluate `e`: a scalar, an array's address, or a placeholder for unit. The helpers
    /// called for `e` itself carry its span (`call_helper`).
    pub(crate) fn translate_expr(&mut self, e: &Expr) -> LResult<Value> {
        let saved = self.enter_span(e.span);
        let v = self.translate_expr_kind(e);
        self.enter_span(saved);
        if let Ok(v) = v {
            self.note_in_bounds(e, v);
        }
        v
    }

    fn translate_expr_kind(&mut self, e: &Expr) -> LResult<Value> {
        match &e.kind {
            ExprKind::Int(v) => Ok(self.builder.ins().iconst(types::I64, *v)),
            ExprKind::Float(v) => Ok(self.builder.ins().f64const(*v)),
            ExprKind::Bool(v) => Ok(self.builder.ins().iconst(types::I8, i64::from(*v))),
            ExprKind::Local(id) => {
                if let Some(c) = self.ranges.let_int(*id) {
                    return Ok(self.builder.ins().iconst(types::I64, c));
                }
                let v = self.translate_local(*id)?;
                self.note_range(*id, v);
                if let (Type::Array(..), true) = (&e.ty, e.ty.owns_cells()) {
                    // An owned copy (`lower_array.rs`).
                    return Ok(self.copy_retained(v, &e.ty));
                }
                Ok(self.retain_value(&e.ty, v))
            }
            ExprKind::Global(id) => {
                if let Some(v) = self.module_constant(*id) {
                    return Ok(v);
                }
                if let Some(var) = self.cached_global(*id) {
                    // A scalar: nothing to retain.
                    return Ok(self.read_cached(var));
                }
                let addr = self.global_addr(*id)?;
                let v = self.translate_copy_if_array(addr, &e.ty)?;
                Ok(self.retain_value(&e.ty, v))
            }
            ExprKind::Unary(op, x) => self.translate_unary(*op, x),
            ExprKind::Binary { op, lhs, rhs, .. } if lhs.ty.is_handle() => {
                self.translate_handle_compare(*op, lhs, rhs)
            }
            ExprKind::Binary { lhs, .. } if lhs.ty == Type::Str => self.translate_str_binary(e),
            ExprKind::Binary {
                op,
                op_span,
                lhs,
                rhs,
            } => {
                let l = self.translate_expr(lhs)?;
                let r = self.translate_expr(rhs)?;
                if *op == BinOp::Mul && lhs.ty == Type::I64 {
                    let chain = self.mutable_local(lhs) || self.mutable_local(rhs);
                    return Ok(self.mul_values(l, r, chain));
                }
                self.binary_values(*op, *op_span, &lhs.ty, l, r)
            }
            ExprKind::Logical(op, l, r) => self.translate_logical(*op, l, r),
            ExprKind::Cast(x) => self.translate_cast(x, &e.ty),
            ExprKind::Call(f, args) => self.translate_call(*f, args, &e.ty),
            ExprKind::CallNative(n, args) => self.translate_call_native(*n, args),
            ExprKind::ArrayLit(items) => self.translate_array_lit(items, &e.ty),
            ExprKind::ArrayRepeat(item, n) => self.translate_array_repeat(item, *n),
            ExprKind::Index(array, index) => self.translate_index(array, index, e),
            ExprKind::Len(array) => self.translate_len(array),
            ExprKind::Assert(cond) => self.translate_assert(cond, e.span),
            ExprKind::Null => Ok(self.builder.ins().iconst(types::I64, 0)),
            ExprKind::New(class) => self.translate_new(*class, e.span),
            ExprKind::Field(object, field) => self.translate_field(object, *field, e),
            ExprKind::MethodCall { object, func, args } => {
                self.translate_method_call(object, *func, None, args, e)
            }
            ExprKind::VirtualCall {
                object,
                method,
                func,
                args,
            } => self.translate_method_call(object, *func, Some(method), args, e),
            ExprKind::NonNull(inner) => self.translate_non_null(inner, e.span),
            ExprKind::Downcast(inner, class) => self.translate_downcast(inner, *class, e.span),
            ExprKind::VecNew => Ok(self.builder.ins().iconst(types::I64, 0)),
            ExprKind::VecPush(place, value) => self.translate_vec_push(place, value),
            ExprKind::VecPop(place) => self.translate_vec_pop(place, e),
            ExprKind::StrLit(text) => self.translate_str_lit(text),
            ExprKind::ToStr(inner) => self.translate_to_str(inner),
            ExprKind::Closure { func, captures } => self.translate_closure(*func, captures, e),
            ExprKind::CallClosure(callee, args) => self.translate_call_closure(callee, args, e),
            ExprKind::Math(m, args) => self.translate_math(*m, args),
            ExprKind::Print(inner) => self.translate_print(inner),
            ExprKind::StrByte(s, i) => self.translate_str_bytes(s, &[&**i], e),
            ExprKind::StrSlice(s, a, b) => self.translate_str_bytes(s, &[&**a, &**b], e),
        }
    }

    fn translate_local(&mut self, id: LocalId) -> LResult<Value> {
        match self.local(id)? {
            LocalSlot::Scalar(var) => Ok(self.builder.use_var(var)),
            LocalSlot::Array(slot) => Ok(self.slot_addr(slot)),
            LocalSlot::Unit => Ok(self.unit()),
        }
    }

    /// A scalar is loaded; an array is copied into a fresh slot.
    fn translate_copy_if_array(&mut self, addr: Value, ty: &Type) -> LResult<Value> {
        if let Type::Array(..) = ty {
            let slot = self.new_slot(ty.cells());
            let copy = self.slot_addr(slot);
            self.copy_cells(copy, addr, ty.cells());
            Ok(copy)
        } else {
            self.load_value(addr, ty)
        }
    }

    fn translate_unary(&mut self, op: UnOp, x: &Expr) -> LResult<Value> {
        let v = self.translate_expr(x)?;
        Ok(match (op, &x.ty) {
            (UnOp::Neg, Type::I64) => self.builder.ins().ineg(v),
            (UnOp::Neg, Type::F64) => self.builder.ins().fneg(v),
            (UnOp::Not, Type::Bool) => self.builder.ins().icmp_imm_s(IntCC::Equal, v, 0),
            (UnOp::BitNot, Type::I64) => self.builder.ins().bnot(v),
            (op, ty) => return bad(format!("unary {op:?} on {ty}")),
        })
    }

    /// Whether `e` reads a `var` local ([`reads_var`]).
    pub(crate) fn mutable_local(&self, e: &Expr) -> bool {
        reads_var(&self.func.locals, e)
    }

    /// `l * r` (wrapping). A multiply by a constant `2^k + 1` or `2^k - 1` is a
    /// shift and an add or subtract where that is faster, as optimizing compilers emit it
    /// (the same value: both wrap modulo 2^64):
    /// - `x * 3`, `x * 5`, `x * 9` always: one `lea` (1 cycle) for `imul`'s 3;
    /// - other such constants (`x * 31`: `mov`, `shl`, `sub`, 2 cycles of latency) only on
    ///   a `chain`, an operand a loop may carry ([`Self::mutable_local`]), where the latency
    ///   decides: off a chain (`(i * 7) & 255` of a loop index) one `imul` instruction is
    ///   cheaper than three (measured: 0.62 against 0.94 ns an iteration of the vec index
    ///   loop, while `acc * 31` in the integer loop went from 1.09 to 0.91 ns).
    pub(crate) fn mul_values(&mut self, l: Value, r: Value, chain: bool) -> Value {
        let by = match (self.constant_of(l), self.constant_of(r)) {
            (_, Some(c)) => Some((l, c)),
            (Some(c), None) => Some((r, c)),
            (None, None) => None,
        };
        // `(x + k) * c` is `x * c + k * c` (wrapping, both ways): the copies of an unrolled
        // loop (`i + 1`, `i + 2`, ...) share one `x * c` and each adds a constant, where each
        // made its own multiply (the module array row's `GL[(i * 7) & 1023]`).
        if let Some((sum, c)) = by
            && let Some((x, k)) = self.plus_constant(sum)
        {
            // `x` is no such sum: this multiply takes the plain path below.
            let cv = self.builder.ins().iconst(types::I64, c);
            let product = self.mul_values(x, cv, chain);
            return self.builder.ins().iadd_imm_s(product, k.wrapping_mul(c));
        }
        let worth = |c: i64| chain || matches!(c, 3 | 5 | 9);
        if let Some((x, c)) = by.filter(|&(_, c)| c > 2 && worth(c)) {
            if (c - 1).count_ones() == 1 {
                let k = i64::from((c - 1).trailing_zeros());
                let shifted = self.builder.ins().ishl_imm_u(x, k);
                return self.builder.ins().iadd(shifted, x);
            }
            if let Some(above) = c.checked_add(1)
                && above.count_ones() == 1
            {
                let k = i64::from(above.trailing_zeros());
                let shifted = self.builder.ins().ishl_imm_u(x, k);
                return self.builder.ins().isub(shifted, x);
            }
        }
        self.builder.ins().imul(l, r)
    }

    /// `v` as `x + k` when it is an `iadd` of a constant made in this function, or a chain of
    /// them (an unrolled loop's third copy reads `(i + 1) + 1`): `k` their wrapping sum.
    fn plus_constant(&self, v: Value) -> Option<(Value, i64)> {
        use cranelift_codegen::ir::{InstructionData, Opcode, ValueDef};
        let dfg = &self.builder.func.dfg;
        let (mut x, mut k, mut found) = (v, 0i64, false);
        while let ValueDef::Result(inst, _) = dfg.value_def(x)
            && let InstructionData::Binary {
                opcode: Opcode::Iadd,
                args: [a, b],
            } = dfg.insts[inst]
        {
            let (rest, c) = match (self.constant_of(a), self.constant_of(b)) {
                (_, Some(c)) => (a, c),
                (Some(c), None) => (b, c),
                (None, None) => break,
            };
            (x, k, found) = (rest, k.wrapping_add(c), true);
        }
        found.then_some((x, k))
    }

    /// `l op r` on values of type `ty` (also used by compound assignment).
    pub(crate) fn binary_values(
        &mut self,
        op: BinOp,
        op_span: Span,
        ty: &Type,
        l: Value,
        r: Value,
    ) -> LResult<Value> {
        Ok(match ty {
            Type::I64 => match op {
                BinOp::Add => self.builder.ins().iadd(l, r),
                BinOp::Sub => self.builder.ins().isub(l, r),
                BinOp::Mul => self.mul_values(l, r, false),
                BinOp::Div | BinOp::Rem => self.translate_div_rem(op, op_span, l, r),
                BinOp::BitAnd => self.builder.ins().band(l, r),
                BinOp::BitOr => self.builder.ins().bor(l, r),
                BinOp::BitXor => self.builder.ins().bxor(l, r),
                // Cranelift takes shift amounts modulo the type width, as hir.rs asks.
                BinOp::Shl => self.builder.ins().ishl(l, r),
                BinOp::Shr => self.builder.ins().sshr(l, r),
                BinOp::UShr => self.builder.ins().ushr(l, r),
                cmp => {
                    let cc = match cmp {
                        BinOp::Eq => IntCC::Equal,
                        BinOp::Ne => IntCC::NotEqual,
                        BinOp::Lt => IntCC::SignedLessThan,
                        BinOp::Le => IntCC::SignedLessThanOrEqual,
                        BinOp::Gt => IntCC::SignedGreaterThan,
                        _ => IntCC::SignedGreaterThanOrEqual,
                    };
                    self.builder.ins().icmp(cc, l, r)
                }
            },
            Type::F64 => match op {
                BinOp::Add => self.builder.ins().fadd(l, r),
                BinOp::Sub => self.builder.ins().fsub(l, r),
                BinOp::Mul => self.builder.ins().fmul(l, r),
                BinOp::Div => self.builder.ins().fdiv(l, r),
                BinOp::Rem => {
                    let fmod = self.env.helpers.fmod;
                    self.call_helper(fmod, &[l, r])[0]
                }
                BinOp::Eq => self.builder.ins().fcmp(FloatCC::Equal, l, r),
                BinOp::Ne => self.builder.ins().fcmp(FloatCC::NotEqual, l, r),
                BinOp::Lt => self.builder.ins().fcmp(FloatCC::LessThan, l, r),
                BinOp::Le => self.builder.ins().fcmp(FloatCC::LessThanOrEqual, l, r),
                BinOp::Gt => self.builder.ins().fcmp(FloatCC::GreaterThan, l, r),
                BinOp::Ge => self.builder.ins().fcmp(FloatCC::GreaterThanOrEqual, l, r),
                op => return bad(format!("`{}` on f64", op.symbol())),
            },
            // Strings: `l` and `r` are borrowed; `+` makes a new string.
            Type::Str => {
                let h = self.env.helpers;
                match op {
                    BinOp::Add => self.call_helper(h.str_concat, &[l, r])[0],
                    BinOp::Eq => self.call_helper(h.str_eq, &[l, r])[0],
                    BinOp::Ne => {
                        let eq = self.call_helper(h.str_eq, &[l, r])[0];
                        self.builder.ins().icmp_imm_s(IntCC::Equal, eq, 0)
                    }
                    op => return bad(format!("`{}` on str", op.symbol())),
                }
            }
            Type::Bool => {
                let cc = match op {
                    BinOp::Eq => IntCC::Equal,
                    BinOp::Ne => IntCC::NotEqual,
                    BinOp::Lt => IntCC::UnsignedLessThan,
                    BinOp::Le => IntCC::UnsignedLessThanOrEqual,
                    BinOp::Gt => IntCC::UnsignedGreaterThan,
                    BinOp::Ge => IntCC::UnsignedGreaterThanOrEqual,
                    BinOp::BitAnd => return Ok(self.builder.ins().band(l, r)),
                    BinOp::BitOr => return Ok(self.builder.ins().bor(l, r)),
                    BinOp::BitXor => return Ok(self.builder.ins().bxor(l, r)),
                    op => return bad(format!("`{}` on bool", op.symbol())),
                };
                self.builder.ins().icmp(cc, l, r)
            }
            ty => return bad(format!("`{}` on {ty}", op.symbol())),
        })
    }

    /// `/` and `%` on i64: zero raises at `op_span`; a divisor of -1 is replaced by 1 so the
    /// hardware never sees `MIN / -1` (which traps), and the quotient is negated instead
    /// (wrapping: `-MIN == MIN`); `x % 1 == 0 == x % -1`.
    fn translate_div_rem(&mut self, op: BinOp, op_span: Span, l: Value, r: Value) -> Value {
        let zero = self.builder.ins().icmp_imm_s(IntCC::Equal, r, 0);
        let helper = self.env.helpers.div_zero;
        self.cold_raise(zero, |t| {
            let (start, end) = t.span_args(op_span);
            t.call_helper(helper, &[start, end]);
        });
        let minus_one = self.builder.ins().icmp_imm_s(IntCC::Equal, r, -1);
        let one = self.builder.ins().iconst(types::I64, 1);
        let divisor = self.builder.ins().select(minus_one, one, r);
        if op == BinOp::Div {
            let q = self.builder.ins().sdiv(l, divisor);
            let neg = self.builder.ins().ineg(l);
            self.builder.ins().select(minus_one, neg, q)
        } else {
            self.builder.ins().srem(l, divisor)
        }
    }

    /// `&&` / `||`: the right operand runs only when it decides the result.
    fn translate_logical(&mut self, op: LogicOp, l: &Expr, r: &Expr) -> LResult<Value> {
        let lv = self.translate_expr(l)?;
        let rhs_block = self.builder.create_block();
        let merge_block = self.builder.create_block();
        let result = self.builder.append_block_param(merge_block, types::I8);
        match op {
            LogicOp::And => self
                .builder
                .ins()
                .brif(lv, rhs_block, &[], merge_block, &[lv.into()]),
            LogicOp::Or => self
                .builder
                .ins()
                .brif(lv, merge_block, &[lv.into()], rhs_block, &[]),
        };
        self.builder.switch_to_block(rhs_block);
        self.builder.seal_block(rhs_block);
        let rv = self.translate_expr(r)?;
        self.builder.ins().jump(merge_block, &[rv.into()]);
        self.builder.switch_to_block(merge_block);
        self.builder.seal_block(merge_block);
        Ok(result)
    }

    fn translate_cast(&mut self, x: &Expr, to: &Type) -> LResult<Value> {
        let v = self.translate_expr(x)?;
        Ok(match (&x.ty, to) {
            (a, b) if a == b => v,
            // Rust's `as`: truncate toward zero, saturate, NaN → 0.
            (Type::F64, Type::I64) => self.builder.ins().fcvt_to_sint_sat(types::I64, v),
            (Type::I64, Type::F64) => self.builder.ins().fcvt_from_sint(types::F64, v),
            (Type::Bool, Type::I64) => self.builder.ins().uextend(types::I64, v),
            (Type::Bool, Type::F64) => {
                let i = self.builder.ins().uextend(types::I64, v);
                self.builder.ins().fcvt_from_sint(types::F64, i)
            }
            (from, to) => return bad(format!("cast from {from} to {to}")),
        })
    }

    fn translate_call(&mut self, f: FuncId, args: &[Expr], ret: &Type) -> LResult<Value> {
        let Some(&callee) = self.env.funcs.get(f.index()) else {
            return bad(format!("call of unknown function #{}", f.0));
        };
        let mut values = vec![self.vmctx];
        // `check(t.left)` of a callee that cannot store into `left`: the field's reference is
        // borrowed (`lower_region.rs`, "Borrowed reads").
        let fields_borrowed = self.field_args_borrowed(Some(&[f]), args);
        let (out, held) = self.call_operands(&mut values, ret, args, &fields_borrowed)?;
        // The arguments stay held through the call: the callee borrows them, so if it raises
        // this frame still owns them.
        let results = self.call_helper(callee, &values);
        self.unhold_all(held);
        let first_arg = values.len() - args.len();
        self.release_args_but(args, &values[first_arg..], &fields_borrowed);
        Ok(self.call_result(out, results.first().copied()))
    }

    /// A script call's operands after `values` (the context, a closure's env): the out slot of
    /// an array result (returned), then the arguments, each owned one held (returned; unhold
    /// them after the call, before they are released). `fields_borrowed[i]`: argument `i`, a
    /// handle field read, is passed borrowed (`field_args_borrowed`; `release_args_but`).
    pub(crate) fn call_operands(
        &mut self,
        values: &mut Vec<Value>,
        ret: &Type,
        args: &[Expr],
        fields_borrowed: &[bool],
    ) -> LResult<(Option<Value>, Vec<TempHold>)> {
        let out = if let Type::Array(..) = ret {
            let slot = self.new_slot(ret.cells());
            let out = self.slot_addr(slot);
            values.push(out);
            Some(out)
        } else {
            None
        };
        let mut held = Vec::new();
        for (i, arg) in args.iter().enumerate() {
            if self.borrowed_arg(args, i) {
                // Borrowed from the caller's local (`release_args` skips it too).
                let (v, _) = self.handle_operand(arg)?;
                values.push(v);
                continue;
            }
            if fields_borrowed.get(i).copied().unwrap_or(false) {
                values.push(self.borrowed_arg_cell(arg)?);
                continue;
            }
            let v = self.translate_expr(arg)?;
            held.push(self.hold(&arg.ty, v));
            values.push(v);
        }
        Ok((out, held))
    }

    /// A call's value: the out slot of an array, the register result, or unit.
    pub(crate) fn call_result(&mut self, out: Option<Value>, result: Option<Value>) -> Value {
        match (out, result) {
            (Some(out), _) => out,
            (None, Some(v)) => v,
            (None, None) => self.unit(),
        }
    }

    fn translate_call_native(&mut self, n: NativeId, args: &[Expr]) -> LResult<Value> {
        let Some(native) = self.env.program.natives.get(n.index()) else {
            return bad(format!("call of unknown native #{}", n.0));
        };
        let Some(&callee) = self.env.hosts.get(native.host) else {
            return bad(format!("native `{}` has no host function", native.name));
        };
        let mut values = Vec::with_capacity(args.len());
        for arg in args {
            values.push(self.translate_expr(arg)?);
        }
        if native_inline(self.env.program, n)
            && let [x] = values.as_slice()
        {
            return Ok(self.builder.ins().sqrt(*x));
        }
        let results = self.call_helper(callee, &values);
        Ok(match results.first() {
            Some(v) => *v,
            None => self.unit(),
        })
    }

    /// `[a, b, ...]`: each item into its place in a fresh slot. An item that owns a reference
    /// stays held until the last item ran: the slot is not named for the unwinder (its later
    /// cells are not written yet), so a raise in a later item releases the earlier ones
    /// through their holds, as it does a call's evaluated arguments.
    fn translate_array_lit(&mut self, items: &[Expr], ty: &Type) -> LResult<Value> {
        let slot = self.new_slot(ty.cells());
        let base = self.slot_addr(slot);
        self.zero_bool_padding(base, ty);
        let mut held = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let v = self.translate_expr(item)?;
            if i + 1 < items.len() {
                held.push(self.hold(&item.ty, v));
            }
            let offset = (i as u64 * item.ty.stride()) as i64;
            let addr = self.builder.ins().iadd_imm_s(base, offset);
            self.store_elem(addr, &item.ty, v)?;
        }
        self.unhold_all(held);
        Ok(base)
    }

    fn translate_array_repeat(&mut self, item: &Expr, n: u32) -> LResult<Value> {
        let v = self.translate_expr(item)?;
        let ty = Type::Array(Box::new(item.ty.clone()), n);
        let slot = self.new_slot(ty.cells());
        let base = self.slot_addr(slot);
        self.fill_array(base, &item.ty, v, n)?;
        Ok(base)
    }

    /// `a[i]` as a value: bounds-checked at the whole expression's span (as the interpreter
    /// does; an assignment's place is checked at its index's span instead).
    fn translate_index(&mut self, array: &Expr, index: &Expr, whole: &Expr) -> LResult<Value> {
        if let Type::Vec(_) = array.ty {
            return self.translate_vec_index(array, index, whole);
        }
        let Type::Array(elem, len) = &array.ty else {
            return bad("indexing a value that is not an array");
        };
        if let Some(v) = self.translate_index_in_place(array, index, whole)? {
            return Ok(v);
        }
        if !array.ty.owns_cells() {
            let base = self.translate_expr(array)?;
            let idx = self.translate_expr(index)?;
            let addr = self.element_addr(base, idx, elem, *len, whole.span);
            return self.load_value(addr, &whole.ty);
        }
        // The element is copied out (retained) before an owned array goes.
        let (base, owned) = self.array_operand(array)?;
        // A fresh array (`f()[i]`, `[a, b][i]`) is held while the index runs and is checked:
        // a raise there releases its cells.
        let held = self.hold_if(owned, &array.ty, base);
        let idx = self.translate_expr(index)?;
        let addr = self.element_addr(base, idx, elem, *len, whole.span);
        let v = match &whole.ty {
            Type::Array(..) => self.copy_retained(addr, &whole.ty),
            ty => {
                let v = self.load_value(addr, ty)?;
                self.retain_value(ty, v)
            }
        };
        self.unhold(held);
        self.done_with_array(base, &array.ty, owned);
        Ok(v)
    }

    fn translate_len(&mut self, array: &Expr) -> LResult<Value> {
        if let Type::Vec(_) | Type::Str = array.ty {
            return self.translate_dynamic_len(array);
        }
        let Type::Array(_, len) = &array.ty else {
            return bad("len() of a value that is not an array");
        };
        // Reading a local or global has no effect worth a copy; anything else runs.
        if !matches!(array.kind, ExprKind::Local(_) | ExprKind::Global(_)) {
            let v = self.translate_expr(array)?;
            self.release_value(&array.ty, v);
        }
        Ok(self.builder.ins().iconst(types::I64, i64::from(*len)))
    }

    fn translate_assert(&mut self, cond: &Expr, span: Span) -> LResult<Value> {
        let c = self.translate_expr(cond)?;
        let failed = self.builder.ins().icmp_imm_s(IntCC::Equal, c, 0);
        let helper = self.env.helpers.assert;
        self.cold_raise(failed, |t| {
            let (start, end) = t.span_args(span);
            t.call_helper(helper, &[start, end]);
        });
        Ok(self.unit())
    }
}

/// Whether `e` reads a `var` of `locals`: a value that a loop may carry from one iteration to
/// the next (`acc = acc * 31 + ...`), where an operation's latency is what counts.
pub(crate) fn reads_var(locals: &[crate::lang::hir::Local], e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Local(id)
        if locals.get(id.index()).is_some_and(|l| l.mutable))
}

/// Whether a call of native `n` is made as an instruction, not a call: the host's `sqrt` is
/// Rust's `f64::sqrt`, an IEEE square root, correctly rounded, and the machine's instruction
/// gives the same bits. Such a call runs no other code, which the loop rules (`opt_globals`,
/// `opt_vec`) may count on.
pub(crate) fn native_inline(program: &crate::lang::hir::Program, n: NativeId) -> bool {
    let Some(native) = program.natives.get(n.index()) else {
        return false;
    };
    crate::runtime::host::host_table()
        .get(native.host)
        .is_some_and(|host| host.symbol == "hot_sqrt")
        && native.params == [crate::lang::hir::Type::F64]
}
