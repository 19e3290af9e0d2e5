//! HIR → CLIF for objects of a *fixed* runtime (the `jit-opt` backend): fields inline in the
//! shell, handle checks inline, virtual calls through a table that never changes.
//!
//! A fixed runtime ([`Runtime::fixed`](crate::runtime::rt::Runtime::fixed)) refuses reloads, so
//! what the reloadable layout keeps indirect is constant for an object's life:
//!
//! - **fields**: an object is one allocation, the shell then its cells, so field `i` is
//!   `[shell + Object::INLINE_CELLS + 8*i]`: no state pointer to load;
//! - **handle checks** stay (they are language semantics: null, stale generation, detached) but
//!   are inline: a null test, then the cell against the shell's handle word (the cell of a
//!   current handle, which a detach marks with `WORD_DETACHED`), each with a branch to a `cold` block that calls
//!   `hot_object_check` (which raises the right error at the right span). No helper call on the
//!   fast path;
//! - **virtual calls** read the class's slot table, which is the class's vtable here: no reload
//!   swaps it, so its loads (and the slot offset's) are `readonly` and Cranelift may merge them.
//!   Statically bound methods are direct `call`s (as on `jit`), and so is a virtual call whose
//!   target is known: when no class derived from the receiver's static class overrides the
//!   method, the program (closed: a fixed runtime loads no other version) has one function it
//!   can reach, and a direct call of it can be inlined (`opt_inline.rs`).

use cranelift_codegen::ir::{InstBuilder, MemFlagsData, TrapCode, Value};

use crate::lang::hir::{ClassId, FuncId, Program, Type};
use crate::lang::span::Span;
use crate::runtime::object::Object;

use super::lower::{FunctionTranslator, mem};

/// Flags of a load that no code changes while generated code of a fixed runtime runs (a class's
/// slots and the slot-offset table: filled before any code runs, never reloaded).
pub(crate) fn fixed() -> MemFlagsData {
    mem().with_readonly()
}

impl FunctionTranslator<'_, '_> {
    /// The shell of a handle cell, checked inline at `span` (see the module docs).
    pub(crate) fn check_object_inline(&mut self, cell: Value, span: Span) -> Value {
        // One cold block for the three ways to fail: null, stale, detached (two
        // compare-and-branch pairs on the path that passes: the null test, and the cell against
        // the shell's handle word, which covers stale and detached).
        let fail_block = self.builder.create_block();
        self.builder.set_cold_block(fail_block);
        self.continue_if(cell, fail_block);
        let shell = self.cell_shell(cell);
        self.branch_if_invalid(shell, cell, fail_block);
        let ok_block = self.builder.current_block().expect("in a block");
        self.builder.switch_to_block(fail_block);
        self.builder.seal_block(fail_block);
        let helper = self.env.helpers.object_check;
        let (start, end) = self.span_args(span);
        // Raises `NullHandle`, `StaleHandle` or `ObjectDetached` (the helper tells them apart).
        self.call_helper(helper, &[cell, start, end]);
        // The helper unwinds and never returns.
        self.builder.ins().trap(TrapCode::unwrap_user(3));
        self.builder.switch_to_block(ok_block);
        shell
    }

    /// Address of field `field` of a checked shell of an inline class.
    pub(crate) fn inline_field_addr(&mut self, shell: Value, field: u32) -> Value {
        let offset = Object::INLINE_CELLS as i64 + i64::from(field) * 8;
        self.builder.ins().iadd_imm_s(shell, offset)
    }

    /// `jit-opt`: whether a virtual call of `method` (implemented by `func` in the static
    /// class) on `receiver` can only reach `func` (see the module docs).
    pub(crate) fn sole_virtual_target(&self, receiver: &Type, method: &str, func: FuncId) -> bool {
        let Type::Handle { class, .. } = receiver else {
            return false;
        };
        let program = self.env.program;
        self.env.fixed
            && program.classes.iter().enumerate().all(|(i, c)| {
                !derives(program, ClassId(i as u32), *class)
                    || c.method(method).is_none_or(|m| m.func == func)
            })
    }
}

/// Whether `class` is `base` or derives from it.
pub(crate) fn derives(program: &Program, class: ClassId, base: ClassId) -> bool {
    let mut at = Some(class);
    while let Some(c) = at {
        if c == base {
            return true;
        }
        at = program.classes.get(c.index()).and_then(|k| k.parent);
    }
    false
}
