//! HIR → CLIF for the builtins: `print` (through `runtime::output`) and the math builtins
//! (`runtime::math` defines them). Where x86-64 has an
//! instruction, the builtin is that instruction, not a call: `abs` (`iabs`, `fabs`), `min`/`max`
//! (`smin`/`smax`; `fmin`/`fmax`, IEEE 754-2019 minimum/maximum, a short inline sequence around
//! `minsd`/`maxsd`), `sqrt` (`sqrtsd`), `floor`/`ceil`/`trunc` (SSE4.1 `roundsd`). `round` (half
//! away from zero) is `trunc` and a select: Cranelift's `nearest` rounds ties to even, which is
//! not `round`. The transcendental ones (`sin cos tan atan2 exp ln pow`) call the runtime's
//! `hot_math_*`, the same Rust functions the interpreter calls, so every backend gives the same
//! bits.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{self, InstBuilder, Value, types};
use cranelift_module::FuncId;

use crate::lang::hir::{Expr, ExprKind, Math, Type};
use crate::runtime::str_block::StrBlock;

use super::JitError;
use super::lower::{FunctionTranslator, LResult, bad, mem};

/// Module ids of the builtins' helpers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BuiltinHelpers {
    print: FuncId,
    str_byte: FuncId,
    str_slice: FuncId,
    pub(crate) raise_step: FuncId,
    sin: FuncId,
    cos: FuncId,
    tan: FuncId,
    atan2: FuncId,
    exp: FuncId,
    ln: FuncId,
    pow: FuncId,
    /// `hot_object_as` (`lower_downcast.rs`).
    pub(crate) object_as: FuncId,
}

/// How `declare_imports` declares one import: name, parameter types, result type.
pub(crate) type Declare<'a> =
    dyn FnMut(&str, &[ir::Type], Option<ir::Type>) -> Result<FuncId, JitError> + 'a;

impl BuiltinHelpers {
    /// Declare the builtins' imports (`hot_print`, `hot_math_*`).
    pub(crate) fn declare(declare: &mut Declare<'_>) -> Result<BuiltinHelpers, JitError> {
        let f = types::F64;
        Ok(BuiltinHelpers {
            print: declare("hot_print", &[types::I64], None)?,
            raise_step: declare(
                "hot_raise_step",
                &[types::I64, types::I32, types::I32],
                None,
            )?,
            str_byte: declare(
                "hot_str_byte",
                &[types::I64, types::I64, types::I32, types::I32],
                Some(types::I64),
            )?,
            str_slice: declare(
                "hot_str_slice",
                &[types::I64, types::I64, types::I64, types::I32, types::I32],
                Some(types::I64),
            )?,
            sin: declare("hot_math_sin", &[f], Some(f))?,
            cos: declare("hot_math_cos", &[f], Some(f))?,
            tan: declare("hot_math_tan", &[f], Some(f))?,
            atan2: declare("hot_math_atan2", &[f, f], Some(f))?,
            exp: declare("hot_math_exp", &[f], Some(f))?,
            ln: declare("hot_math_ln", &[f], Some(f))?,
            pow: declare("hot_math_pow", &[f, f], Some(f))?,
            object_as: declare(
                "hot_object_as",
                &[types::I64, types::I64, types::I32, types::I32, types::I32],
                Some(types::I64),
            )?,
        })
    }
}

impl FunctionTranslator<'_, '_> {
    /// `print(e)`: `e` shown as a string (as `"${e}"` does; a string as it is), written with a
    /// newline, released. Unit.
    pub(crate) fn translate_print(&mut self, e: &Expr) -> LResult<Value> {
        let text = self.translate_to_str(e)?;
        let print = self.env.helpers.builtins.print;
        self.call_helper(print, &[text]);
        self.release_value(&Type::Str, text);
        Ok(self.unit())
    }

    /// `s.byte(i)` / `s.slice(a, b)` (`whole` is the call): the string (held while the offsets
    /// run, which may raise), the offsets, then the helper, which raises at the call's span.
    pub(crate) fn translate_str_bytes(
        &mut self,
        s: &Expr,
        offsets: &[&Expr],
        whole: &Expr,
    ) -> LResult<Value> {
        // `x.f.slice(a, b)`: the field's own reference is borrowed when the offsets cannot
        // store into a field (`lower_region.rs`, "Borrowed reads"; the helper runs no script).
        let borrowed = match &s.kind {
            ExprKind::Field(object, field)
                if super::opt_effects::field_key(self.env.program, &object.ty, *field)
                    .is_some_and(|key| {
                        !self.exprs_effects(offsets.iter().copied()).writes(key)
                    }) =>
            {
                self.borrowed_field_value(s)?
            }
            _ => None,
        };
        let (text, owned) = match borrowed {
            Some(cell) => (cell, false),
            None => self.handle_operand(s)?,
        };
        let held = self.hold_if(owned, &Type::Str, text);
        let mut args = vec![text];
        for offset in offsets {
            args.push(self.translate_expr(offset)?);
        }
        let (start, end) = self.span_args(whole.span);
        args.extend([start, end]);
        let h = self.env.helpers.builtins;
        let in_range = offsets.len() == 1
            && self
                .scalar_var_of(s)
                .is_some_and(|var| self.below_len_of(args[1], var));
        let v = if in_range {
            // A loop variable below this string's length, which the loop cannot change: the
            // string is not empty (a block) and the byte is inside it.
            let at = self.builder.ins().iadd(text, args[1]);
            self.builder
                .ins()
                .uload8(types::I64, mem(), at, StrBlock::BYTES as i32)
        } else if offsets.len() == 1 {
            self.str_byte_inline(&args, h.str_byte)
        } else if self.env.objects_data.is_none() {
            // The JIT: the static one-byte strings' addresses can be constants (the object
            // backend's code is position-independent and calls the helper).
            self.str_slice_inline(&args, h.str_slice)
        } else {
            self.call_helper(h.str_slice, &args)[0]
        };
        self.unhold(held);
        self.done_with_value(&Type::Str, text, owned);
        Ok(v)
    }

    /// `s.byte(i)` (`args`: the cell, `i`, the span): the byte loaded inline when `i` is in
    /// range (an unsigned compare with the block's length; the empty string has no block),
    /// else the helper, which raises at the span.
    fn str_byte_inline(&mut self, args: &[Value], helper: FuncId) -> Value {
        let (cell, i) = (args[0], args[1]);
        self.inline_or_helper(true, args, helper, |t, raise| t.byte_or(cell, i, raise))
    }

    /// `s.slice(a, b)` (`args`: the cell, `a`, `b`, the span): one ASCII byte (`b == a + 1`,
    /// `a` inside the string, the byte below 0x80) is its static one-byte string, found inline
    /// (`str_block::one_byte_table`: nothing allocated, no count to take, as the helper gives
    /// it); anything else calls `hot_str_slice`, which raises at the span when out of range.
    fn str_slice_inline(&mut self, args: &[Value], helper: FuncId) -> Value {
        let (cell, a, b) = (args[0], args[1], args[2]);
        self.inline_or_helper(false, args, helper, |t, call| {
            let width = t.builder.ins().isub(b, a);
            let one = t.builder.ins().icmp_imm_s(IntCC::Equal, width, 1);
            t.continue_if(one, call);
            let byte = t.byte_or(cell, a, call);
            let ascii = t
                .builder
                .ins()
                .icmp_imm_s(IntCC::UnsignedLessThan, byte, 0x80);
            t.continue_if(ascii, call);
            let (base, stride) = crate::runtime::str_block::one_byte_table();
            let offset = t.builder.ins().imul_imm_s(byte, stride as i64);
            t.builder.ins().iadd_imm_s(offset, base as i64)
        })
    }

    /// The shape of the inline string reads: `fast` lowers the inline path (any failed test
    /// jumps to the block it is given) and returns its value; that block calls `helper` with
    /// `args` (a cold block when the helper only raises). The value of whichever ran.
    fn inline_or_helper(
        &mut self,
        cold: bool,
        args: &[Value],
        helper: FuncId,
        fast: impl FnOnce(&mut Self, cranelift_codegen::ir::Block) -> Value,
    ) -> Value {
        let fallback = self.builder.create_block();
        let done = self.builder.create_block();
        self.builder.append_block_param(done, types::I64);
        if cold {
            self.builder.set_cold_block(fallback);
        }
        let v = fast(self, fallback);
        self.builder.ins().jump(done, &[v.into()]);
        self.builder.switch_to_block(fallback);
        self.builder.seal_block(fallback);
        let r = self.call_helper(helper, args)[0];
        self.builder.ins().jump(done, &[r.into()]);
        self.builder.switch_to_block(done);
        self.builder.seal_block(done);
        self.builder.block_params(done)[0]
    }

    /// Byte `i` of the string in `cell` when the cell is a block (the empty string has none)
    /// and `i` is inside it (an unsigned compare with its length); else on to `otherwise`.
    fn byte_or(&mut self, cell: Value, i: Value, otherwise: cranelift_codegen::ir::Block) -> Value {
        self.continue_if(cell, otherwise);
        let len = self
            .builder
            .ins()
            .load(types::I64, mem(), cell, StrBlock::LEN as i32);
        let inside = self.builder.ins().icmp(IntCC::UnsignedLessThan, i, len);
        self.continue_if(inside, otherwise);
        let at = self.builder.ins().iadd(cell, i);
        self.builder
            .ins()
            .uload8(types::I64, mem(), at, StrBlock::BYTES as i32)
    }

    /// `s += t` into a variable owning `old`'s count (`store_to`): the joined string, owning
    /// the count. One byte appended to a heap block with this one count and room for it is
    /// written inline (the common `line += piece` of one character); anything else calls
    /// `hot_str_append`, which does the same in general (`str_block.rs`).
    pub(crate) fn str_append(&mut self, old: Value, tail: Value) -> Value {
        let call_block = self.builder.create_block();
        let done = self.builder.create_block();
        self.builder.append_block_param(done, types::I64);
        // Both non-empty (0 is the empty string, which has no block).
        self.continue_if(old, call_block);
        self.continue_if(tail, call_block);
        let tail_len = self
            .builder
            .ins()
            .load(types::I64, mem(), tail, StrBlock::LEN as i32);
        let one = self.builder.ins().icmp_imm_s(IntCC::Equal, tail_len, 1);
        self.continue_if(one, call_block);
        // The variable's count is the only one (a static block's never is): nobody else can
        // see the write. Acquire, as `str_block::append`'s load.
        let refs_addr = self.builder.ins().iadd_imm_s(old, StrBlock::REFS as i64);
        let refs = self.builder.ins().atomic_load(types::I64, mem(), refs_addr);
        let unique = self.builder.ins().icmp_imm_s(IntCC::Equal, refs, 1);
        self.continue_if(unique, call_block);
        let len = self
            .builder
            .ins()
            .load(types::I64, mem(), old, StrBlock::LEN as i32);
        let cap = self
            .builder
            .ins()
            .load(types::I64, mem(), old, StrBlock::CAP as i32);
        let room = self.builder.ins().icmp(IntCC::UnsignedLessThan, len, cap);
        self.continue_if(room, call_block);
        let byte = self
            .builder
            .ins()
            .uload8(types::I64, mem(), tail, StrBlock::BYTES as i32);
        let at = self.builder.ins().iadd(old, len);
        self.builder
            .ins()
            .istore8(mem(), byte, at, StrBlock::BYTES as i32);
        let longer = self.builder.ins().iadd_imm_s(len, 1);
        self.builder
            .ins()
            .store(mem(), longer, old, StrBlock::LEN as i32);
        self.builder.ins().jump(done, &[old.into()]);

        self.builder.switch_to_block(call_block);
        self.builder.seal_block(call_block);
        let h = self.env.helpers.str_append;
        let joined = self.call_helper(h, &[old, tail])[0];
        self.builder.ins().jump(done, &[joined.into()]);

        self.builder.switch_to_block(done);
        self.builder.seal_block(done);
        self.builder.block_params(done)[0]
    }

    /// A math builtin: its arguments left to right, then the instruction or the call.
    pub(crate) fn translate_math(&mut self, m: Math, args: &[Expr]) -> LResult<Value> {
        let mut v = Vec::with_capacity(args.len());
        for arg in args {
            v.push(self.translate_expr(arg)?);
        }
        if v.len() != m.arity() {
            return bad(format!("`{}` with {} arguments", m.name(), v.len()));
        }
        let h = self.env.helpers.builtins;
        let call = |t: &mut Self, f: FuncId, v: &[Value]| t.call_helper(f, v)[0];
        Ok(match m {
            Math::AbsI => self.builder.ins().iabs(v[0]),
            Math::MinI => self.builder.ins().smin(v[0], v[1]),
            Math::MaxI => self.builder.ins().smax(v[0], v[1]),
            Math::AbsF => self.builder.ins().fabs(v[0]),
            Math::MinF => self.builder.ins().fmin(v[0], v[1]),
            Math::MaxF => self.builder.ins().fmax(v[0], v[1]),
            Math::Sqrt => self.builder.ins().sqrt(v[0]),
            Math::Floor => self.builder.ins().floor(v[0]),
            Math::Ceil => self.builder.ins().ceil(v[0]),
            Math::Trunc => self.builder.ins().trunc(v[0]),
            Math::Round => self.round_half_away(v[0]),
            Math::Sin => call(self, h.sin, &v),
            Math::Cos => call(self, h.cos, &v),
            Math::Tan => call(self, h.tan, &v),
            Math::Atan2 => call(self, h.atan2, &v),
            Math::Exp => call(self, h.exp, &v),
            Math::Ln => call(self, h.ln, &v),
            Math::Pow => call(self, h.pow, &v),
        })
    }

    /// `round(x)`: `t = trunc(x)`, and `t ± 1` (the sign of `x`) when `|x - t| >= 0.5`.
    /// `x - t` is exact (the fraction's bits are some of `x`'s); NaN and infinities compare
    /// false and keep `t` (NaN, or the infinity), and `-0.4` keeps `trunc`'s `-0.0`.
    fn round_half_away(&mut self, x: Value) -> Value {
        let ins = &mut self.builder;
        let t = ins.ins().trunc(x);
        let frac = ins.ins().fsub(x, t);
        let frac = ins.ins().fabs(frac);
        let half = ins.ins().f64const(0.5);
        let away = ins.ins().fcmp(FloatCC::GreaterThanOrEqual, frac, half);
        let one = ins.ins().f64const(1.0);
        let step = ins.ins().fcopysign(one, x);
        let up = ins.ins().fadd(t, step);
        ins.ins().select(away, up, t)
    }
}
