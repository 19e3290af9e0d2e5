//! HIR → CLIF for loops: `while`, `for i in a..b`, `for x in array`, with `break`/`continue`
//! targets per loop.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value, types};
use cranelift_frontend::Variable;

use crate::lang::hir::{self, Block as HirBlock, LocalId, Type};

use super::lower::{FunctionTranslator, LResult, LocalSlot, LoopTargets, bad};

impl FunctionTranslator<'_, '_> {
    pub(crate) fn translate_while(&mut self, cond: &hir::Expr, body: &HirBlock) -> LResult<()> {
        let header_block = self.builder.create_block();
        let body_block = self.builder.create_block();
        let exit_block = self.builder.create_block();
        self.builder.ins().jump(header_block, &[]);

        self.builder.switch_to_block(header_block);
        let c = self.translate_expr(cond)?;
        self.builder.ins().brif(c, body_block, &[], exit_block, &[]);

        self.builder.switch_to_block(body_block);
        self.builder.seal_block(body_block);
        self.loops.push(LoopTargets {
            continue_block: header_block,
            exit_block,
        });
        let result = self.translate_block(body);
        self.loops.pop();
        result?;
        self.builder.ins().jump(header_block, &[]);

        self.builder.seal_block(header_block);
        self.builder.switch_to_block(exit_block);
        self.builder.seal_block(exit_block);
        Ok(())
    }

    pub(crate) fn translate_for_range(
        &mut self,
        var: LocalId,
        start: &hir::Expr,
        end: &hir::Expr,
        body: &HirBlock,
    ) -> LResult<()> {
        let LocalSlot::Scalar(var) = self.local(var)? else {
            return bad("range loop variable is not an i64");
        };
        let first = self.translate_expr(start)?;
        let end = self.translate_expr(end)?;
        // The loop variable is immutable, so it doubles as the counter. `i + 1` cannot
        // overflow: it only runs after `i < end <= i64::MAX`.
        self.builder.def_var(var, first);
        self.counted_loop(var, end, |t| t.translate_block(body))
    }

    pub(crate) fn translate_for_each(
        &mut self,
        var: LocalId,
        array: &hir::Expr,
        body: &HirBlock,
    ) -> LResult<()> {
        let Type::Array(elem, len) = &array.ty else {
            return bad("for-each over a value that is not an array");
        };
        let src = self.translate_expr(array)?;
        // Iterate over a copy taken now: the body may assign to the array it came from.
        let copy = self.new_slot(array.ty.cells());
        let copy = self.slot_addr(copy);
        self.copy_cells(copy, src, array.ty.cells());
        let slot = self.local(var)?;
        let counter = self.builder.declare_var(types::I64);
        let zero = self.builder.ins().iconst(types::I64, 0);
        self.builder.def_var(counter, zero);
        let end = self.builder.ins().iconst(types::I64, i64::from(*len));
        let elem_bytes = elem.cells() as i64 * 8;
        self.counted_loop(counter, end, |t| {
            let i = t.builder.use_var(counter);
            let offset = t.builder.ins().imul_imm_s(i, elem_bytes);
            let addr = t.builder.ins().iadd(copy, offset);
            match slot {
                LocalSlot::Scalar(v) => {
                    let x = t.load_value(addr, elem)?;
                    t.builder.def_var(v, x);
                }
                LocalSlot::Array(s) => {
                    let dst = t.slot_addr(s);
                    t.copy_cells(dst, addr, elem.cells());
                }
                LocalSlot::Unit => {}
            }
            t.translate_block(body)
        })
    }

    /// `while counter < end { body; counter += 1 }`, with `continue` jumping to the increment.
    fn counted_loop(
        &mut self,
        counter: Variable,
        end: Value,
        body: impl FnOnce(&mut Self) -> LResult<()>,
    ) -> LResult<()> {
        let header_block = self.builder.create_block();
        let body_block = self.builder.create_block();
        let step_block = self.builder.create_block();
        let exit_block = self.builder.create_block();
        self.builder.ins().jump(header_block, &[]);

        self.builder.switch_to_block(header_block);
        let i = self.builder.use_var(counter);
        let more = self.builder.ins().icmp(IntCC::SignedLessThan, i, end);
        self.builder
            .ins()
            .brif(more, body_block, &[], exit_block, &[]);

        self.builder.switch_to_block(body_block);
        self.builder.seal_block(body_block);
        self.loops.push(LoopTargets {
            continue_block: step_block,
            exit_block,
        });
        let result = body(self);
        self.loops.pop();
        result?;
        self.builder.ins().jump(step_block, &[]);

        self.builder.switch_to_block(step_block);
        self.builder.seal_block(step_block);
        let i = self.builder.use_var(counter);
        let next = self.builder.ins().iadd_imm_s(i, 1);
        self.builder.def_var(counter, next);
        self.builder.ins().jump(header_block, &[]);

        self.builder.seal_block(header_block);
        self.builder.switch_to_block(exit_block);
        self.builder.seal_block(exit_block);
        Ok(())
    }
}
