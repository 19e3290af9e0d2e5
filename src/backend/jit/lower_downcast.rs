//! HIR → CLIF for `o as? D` ([`ExprKind::Downcast`](crate::lang::hir::ExprKind::Downcast);
//! `o is D` is a downcast compared with `null`): one helper call that checks the handle and
//! walks the object's class chain, [`hot_object_as`].

use cranelift_codegen::ir::{InstBuilder, Value, types};

use crate::backend::objects::{ProgramObjects, check_cell, instance_of};
use crate::lang::hir::{ClassId, Expr};
use crate::lang::span::Span;

use super::lower::{FunctionTranslator, LResult};

/// `o as? D`: `cell` when its object's class is class `class` of the program or derives from
/// it, else 0; 0 for `null`. Takes and gives no reference. Raises `StaleHandle` or
/// `ObjectDetached` at the span for a handle that cannot be used.
///
/// # Safety
/// `objects` must be the program's [`ProgramObjects`], with its classes installed, and the
/// caller must hold a reference through `cell` for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn hot_object_as(
    objects: *const ProgramObjects,
    cell: u64,
    class: u32,
    start: u32,
    end: u32,
) -> u64 {
    if cell == 0 {
        return 0;
    }
    // SAFETY: the caller's contract; the program (which owns the box) outlives its code's calls.
    let objects = unsafe { &*objects };
    let span = Span { start, end };
    // SAFETY: the caller holds a reference through `cell` for this call.
    match unsafe { check_cell(cell, span) } {
        Ok(obj) if instance_of(obj, &objects.classes[class as usize]) => cell,
        Ok(_) => 0,
        Err(e) => e.raise(),
    }
}

/// The helper generated code imports for downcasts: `(symbol, address)`.
pub fn helper_symbols() -> [(&'static str, *const u8); 1] {
    [("hot_object_as", hot_object_as as *const u8)]
}

impl FunctionTranslator<'_, '_> {
    /// `o as? D`: the owned cell of `o` when it is a `D`, else 0 (a failed test gives up the
    /// reference `o` held; a borrowed `o` that passes is retained for the result).
    pub(crate) fn translate_downcast(
        &mut self,
        object: &Expr,
        class: ClassId,
        span: Span,
    ) -> LResult<Value> {
        let (cell, owned) = self.handle_operand(object)?;
        let held = self.hold_if(owned, &object.ty, cell);
        let objects = self.objects_ptr()?;
        let class = self.builder.ins().iconst(types::I32, i64::from(class.0));
        let (start, end) = self.span_args(span);
        let helper = self.env.helpers.builtins.object_as;
        let r = self.call_helper(helper, &[objects, cell, class, start, end])[0];
        self.unhold(held);
        if owned {
            let zero = self.builder.ins().iconst(types::I64, 0);
            let dropped = self.builder.ins().select(r, zero, cell);
            self.release(dropped);
            Ok(r)
        } else {
            Ok(self.retain_handle(r))
        }
    }
}
