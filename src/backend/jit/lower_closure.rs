//! HIR → CLIF for closures: making one (`hot_closure_new`, then the captured values stored
//! into its cells), calling one (an indirect call through its code pointer), and a lambda's
//! prologue (its captures loaded from the env).
//!
//! A closure is one cell owned like a vec or a string (`lower_object.rs`): the lambda
//! expression yields an owned cell, a variable read retains, the last release frees the block
//! and releases the captured values (`runtime::closure`). A call borrows the callee (a variable
//! read is not even retained: nothing in the call can change the variable) and keeps it alive
//! for the call, so the body reads its captures from the env without retaining them: they are
//! borrowed like parameters, and not released when it returns.
//!
//! The call is lean on purpose (the `closure_call` case measures it): test the cell for 0
//! (a cold raise), load the code pointer at `[cell + 0]`, `call_indirect` with
//! `(vmctx, cell, args..)`. The callee's prologue does the same stack check as every script
//! function's. A `let` bound to a lambda is never null and its block always holds that
//! lambda's code (the code of the same compiled version as the caller's, on `jit` too): its call
//! is a direct `call` of the lambda with the same operands, which `jit-opt`'s inliner takes
//! when the lambda is small (`opt_inline.rs`).

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value, types};

use crate::lang::hir::{Expr, ExprKind, FuncId, LocalId, Type};
use crate::runtime::closure::{ClosureBlock, descriptor};

use super::lower::{FunctionTranslator, LResult, LocalSlot, bad, closure_signature, mem};
use crate::backend::objects::cell_kinds;

impl FunctionTranslator<'_, '_> {
    /// A lambda expression: a new closure of `func` holding `captures` (evaluated now, left to
    /// right; each value's reference moves into the closure).
    pub(crate) fn translate_closure(
        &mut self,
        func: FuncId,
        captures: &[Expr],
        e: &Expr,
    ) -> LResult<Value> {
        let Some(&callee) = self.env.funcs.get(func.index()) else {
            return bad(format!("closure of unknown function #{}", func.0));
        };
        let mut values = Vec::with_capacity(captures.len());
        let mut kinds = Vec::new();
        let mut held = Vec::new();
        for c in captures {
            let v = self.translate_expr(c)?;
            held.push(self.hold(&c.ty, v));
            values.push(v);
            cell_kinds(&c.ty, &mut kinds);
        }
        let desc = descriptor(&kinds, &format!("<{}>", e.ty));
        let desc = self.data_addr(desc)?;
        let code_ref = self.func_ref(callee);
        let code = self.builder.ins().func_addr(types::I64, code_ref);
        let helper = self.env.helpers.closure_new;
        let block = self.call_helper(helper, &[code, desc])[0];
        // The captured values move into the closure.
        self.unhold_all(held);
        let mut offset = i64::from(ClosureBlock::CELLS);
        for (c, v) in captures.iter().zip(values) {
            let addr = self.builder.ins().iadd_imm_s(block, offset);
            self.store_value(addr, &c.ty, v)?;
            offset += 8 * c.ty.cells() as i64;
        }
        Ok(block)
    }

    /// `callee(args)` of a closure value.
    pub(crate) fn translate_call_closure(
        &mut self,
        callee: &Expr,
        args: &[Expr],
        e: &Expr,
    ) -> LResult<Value> {
        let Type::Fn { params, ret } = &callee.ty else {
            return bad("a closure call of a value that is not a closure");
        };
        let (cell, owned) = self.handle_operand(callee)?;
        // A callee made by an expression (`make(3)(4)`) is held through its arguments and the
        // call.
        let callee_held = self.hold_if(owned, &callee.ty, cell);
        // A `let` bound to a lambda is never null, and its code is the lambda's (`closure_lets`).
        let known = match callee.kind {
            ExprKind::Local(id) => self.closure_lets.get(&id).copied(),
            _ => None,
        };
        if known.is_none() {
            let is_null = self.builder.ins().icmp_imm_s(IntCC::Equal, cell, 0);
            let span = callee.span;
            self.cold_raise(is_null, |t| {
                let (start, end) = t.span_args(span);
                let helper = t.env.helpers.null_closure;
                t.call_helper(helper, &[start, end]);
            });
        }
        let mut values = vec![self.vmctx, cell];
        let (out, held) = self.call_operands(&mut values, &e.ty, args, &[])?;
        let call = match known.and_then(|f| self.env.funcs.get(f.index()).copied()) {
            // The code the closure block holds: a direct call (the inliner's to take on
            // `jit-opt`), with the same operands.
            Some(lambda) => {
                let code_ref = self.func_ref(lambda);
                self.builder.ins().call(code_ref, &values)
            }
            None => {
                let code = self
                    .builder
                    .ins()
                    .load(types::I64, mem(), cell, ClosureBlock::CODE);
                let sig = closure_signature(params, ret, self.env.call_conv);
                let sig = self.builder.import_signature(sig);
                self.builder.ins().call_indirect(sig, code, &values)
            }
        };
        self.attach_owned_cells(call);
        let result = self.builder.inst_results(call).first().copied();
        self.unhold_all(held);
        self.unhold(callee_held);
        let first_arg = values.len() - args.len();
        self.release_args(args, &values[first_arg..]);
        self.done_with_value(&callee.ty, cell, owned);
        Ok(self.call_result(out, result))
    }

    /// A lambda's prologue: its capture locals from the env's cells (borrowed).
    pub(crate) fn load_captures(&mut self, env: Value, captures: &[LocalId]) -> LResult<()> {
        let mut offset = i64::from(ClosureBlock::CELLS);
        for &id in captures {
            let ty = self.local_type(id)?;
            let addr = self.builder.ins().iadd_imm_s(env, offset);
            match self.local(id)? {
                LocalSlot::Scalar(var) => {
                    let v = self.load_value(addr, &ty)?;
                    self.def_var(var, v);
                }
                LocalSlot::Array(slot) => {
                    let dst = self.slot_addr(slot);
                    self.copy_cells(dst, addr, ty.cells());
                }
                LocalSlot::Unit => {}
            }
            offset += 8 * ty.cells() as i64;
        }
        Ok(())
    }
}
