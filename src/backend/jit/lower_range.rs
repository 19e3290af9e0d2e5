//! HIR → CLIF for stepped and inclusive ranges (`for i in a..=b step k`, hir's `ForStep`).
//!
//! `a`, `b`, `k` are evaluated once; `k <= 0` raises from a cold block. The loop is rotated as
//! the plain range loop is (one test before it, the step's test branching back). The step
//! tests what is left, `b - i` as an unsigned number (exact: `i <= b` holds in the body),
//! against `k`, so `i + k` is only computed when it does not pass `b` and never overflows.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, types};

use crate::lang::hir::{Block as HirBlock, Expr, LocalId};
use crate::lang::span::Span;

use super::lower::{FunctionTranslator, LResult, LocalSlot, LoopTargets, bad};

/// One `ForStep` loop's parts.
pub(crate) struct StepLoop<'h> {
    pub var: LocalId,
    pub start: &'h Expr,
    pub end: &'h Expr,
    pub inclusive: bool,
    pub step: Option<&'h Expr>,
    pub step_span: Span,
    pub body: &'h HirBlock,
}

impl FunctionTranslator<'_, '_> {
    pub(crate) fn translate_for_step(&mut self, l: StepLoop<'_>) -> LResult<()> {
        let LocalSlot::Scalar(var) = self.local(l.var)? else {
            return bad("range loop variable is not an i64");
        };
        let first = self.translate_expr(l.start)?;
        let end = self.translate_expr(l.end)?;
        let k = match l.step {
            Some(k) => {
                let k = self.translate_expr(k)?;
                let not_positive =
                    self.builder
                        .ins()
                        .icmp_imm_s(IntCC::SignedLessThanOrEqual, k, 0);
                let helper = self.env.helpers.builtins.raise_step;
                let at = l.step_span;
                self.cold_raise(not_positive, |t| {
                    let (start, end) = t.span_args(at);
                    t.call_helper(helper, &[k, start, end]);
                });
                k
            }
            None => self.builder.ins().iconst(types::I64, 1),
        };
        let (enter_cc, more_cc) = if l.inclusive {
            (
                IntCC::SignedLessThanOrEqual,
                IntCC::UnsignedGreaterThanOrEqual,
            )
        } else {
            (IntCC::SignedLessThan, IntCC::UnsignedGreaterThan)
        };
        self.def_var(var, first);
        let body_block = self.builder.create_block();
        let step_block = self.builder.create_block();
        let exit_block = self.builder.create_block();
        let any = self.builder.ins().icmp(enter_cc, first, end);
        self.builder
            .ins()
            .brif(any, body_block, &[], exit_block, &[]);

        self.builder.switch_to_block(body_block);
        self.loops.push(LoopTargets {
            continue_block: step_block,
            exit_block,
        });
        let result = self.translate_block(l.body);
        self.loops.pop();
        result?;
        self.builder.ins().jump(step_block, &[]);

        self.builder.switch_to_block(step_block);
        self.builder.seal_block(step_block);
        let i = self.builder.use_var(var);
        let left = self.builder.ins().isub(end, i);
        let more = self.builder.ins().icmp(more_cc, left, k);
        let next = self.builder.ins().iadd(i, k);
        self.def_var(var, next);
        self.builder
            .ins()
            .brif(more, body_block, &[], exit_block, &[]);

        self.builder.seal_block(body_block);
        self.builder.switch_to_block(exit_block);
        self.builder.seal_block(exit_block);
        Ok(())
    }
}
