//! What a frame owns when a `ScriptError` unwinds through it: home slots, held temporaries and
//! the stack map entries that name them (read back by `runtime::sweep`).
//!
//! - **Home slots.** Every variable the function owns (`FunctionTranslator::owned`) has an
//!   8-byte stack slot, zeroed at function entry (just after the stack check, before anything
//!   else can raise) and stored at *every* definition of the variable ([`FunctionTranslator::def_var`]
//!   is the one place variables are defined). Uses read the SSA value, never the slot. So from
//!   entry on, the slot holds the cell the variable owns.
//! - **Held temporaries.** An owned temporary that stays alive while something else that may
//!   raise runs (an operand while the other is evaluated, call arguments and receivers through
//!   the call itself, a handle across its check) is *held*: stored into a temporary slot from a
//!   small per-function pool and recorded on a compile-time list ([`FunctionTranslator::hold`]).
//!   When it is consumed (released, moved into a variable, field, global or vec) it is *unheld*
//!   first ([`FunctionTranslator::unhold`]): no store is needed, the slot is just no longer
//!   named. Holds are made late and unheld at or before the consuming instruction: a missed
//!   hold leaks, a late unhold would free twice.
//! - **Stack map entries.** Every call that can raise (script calls, indirect calls through
//!   slots and closures, natives, every raising helper; not the retain and release helpers,
//!   which never raise and run while a released variable's slot still names its old cell)
//!   carries one user stack map entry per home slot and per held temporary
//!   ([`FunctionTranslator::owned_cells`] gathers them). The entry's CLIF type encodes the cell's
//!   kind ([`map_type`]); it is only metadata. After compilation [`frame_map`] turns the
//!   function's maps into a `runtime::sweep::FrameMap`.

use cranelift_codegen::cursor::{Cursor, FuncCursor};
use cranelift_codegen::entity::SecondaryMap;
use cranelift_codegen::entity::packed_option::PackedOption;
use cranelift_codegen::ir::{
    self, DebugTag, InstBuilder, StackSlot, UserStackMapEntry, Value, types,
};
use cranelift_codegen::{Final, MachBufferFinalized, MachDebugTagPos};
use cranelift_frontend::Variable;
use cranelift_module::FuncId;

use crate::lang::hir::Type;
use crate::lang::span::Span;
use crate::runtime::sweep::{FrameMap, Site};
use crate::runtime::values::ElemKind;

use super::lower::FunctionTranslator;
use super::lower_value::elem_kind;

/// The CLIF type that marks a stack map entry of kind `kind` (one distinct 8-byte type per
/// counted kind; `None` for a kind that owns nothing).
pub(crate) fn map_type(kind: ElemKind) -> Option<ir::Type> {
    Some(match kind {
        ElemKind::Handle => types::I64,
        ElemKind::Vec => types::F64,
        ElemKind::Str => types::I32X2,
        ElemKind::Fn => types::F32X2,
        ElemKind::I64 | ElemKind::F64 | ElemKind::Bool => return None,
    })
}

/// The kind a stack map entry's type stands for ([`map_type`] reversed).
fn kind_of_map_type(ty: ir::Type) -> Option<ElemKind> {
    [ElemKind::Handle, ElemKind::Vec, ElemKind::Str, ElemKind::Fn]
        .into_iter()
        .find(|k| map_type(*k) == Some(ty))
}

/// A compiled function's frame map: its user stack maps (`(return offset, frame span, map)`,
/// as `MachBufferFinalized::user_stack_maps` gives them) and the spans its helper calls carry
/// as debug tags ([`FunctionTranslator::call_helper`]).
pub(crate) fn frame_map(buffer: &MachBufferFinalized<Final>) -> FrameMap {
    let maps = buffer.user_stack_maps();
    let spans = buffer
        .debug_tags()
        .filter(|t| t.pos == MachDebugTagPos::Post)
        .filter_map(|t| Some((t.offset, span_of_tags(t.tags)?)))
        .collect();
    let sites = maps
        .iter()
        .filter_map(|(ret, _, map)| {
            let cells: Box<[(u32, ElemKind)]> = map
                .entries()
                .filter_map(|(ty, offset)| Some((offset, kind_of_map_type(ty)?)))
                .collect();
            (!cells.is_empty()).then_some(Site { ret: *ret, cells })
        })
        .collect();
    FrameMap::new(sites).with_spans(spans)
}

/// The source byte each range of a compiled function's code comes from (`(first offset, end
/// offset, byte)`; the lowering sets a source location per expression and statement), for
/// `runtime::sweep`'s crash reports. Inlined code has none (Cranelift's inliner does not copy
/// them): a crash there names only the function.
pub(crate) fn source_locs(buffer: &MachBufferFinalized<Final>) -> Vec<(u32, u32, u32)> {
    buffer
        .get_srclocs_sorted()
        .iter()
        .filter(|l| !l.loc.is_default())
        .map(|l| (l.start, l.end, l.loc.bits()))
        .collect()
}

/// The debug tags of a helper call: its span's start and end (two `User` tags). A call inlined
/// from another function (jit-opt) has the tags of the call it replaced before its own, so the
/// innermost, its own operation's, are the last two.
pub(crate) fn span_tags(span: Span) -> [DebugTag; 2] {
    [DebugTag::User(span.start), DebugTag::User(span.end)]
}

/// The span [`span_tags`] wrote, from a call's whole tag list.
fn span_of_tags(tags: &[DebugTag]) -> Option<Span> {
    match tags {
        [.., DebugTag::User(start), DebugTag::User(end)] => Some(Span {
            start: *start,
            end: *end,
        }),
        _ => None,
    }
}

/// A held temporary (from [`FunctionTranslator::hold`]): its slot, and whether the slot is
/// from the pool (a one-cell temporary) rather than an array temporary's own slot; `None` for
/// a value that owns nothing.
#[must_use = "a hold must be given back with `unhold` when its value is consumed"]
pub(crate) struct TempHold(Option<(StackSlot, bool)>);

/// The owned cells of a function being lowered (see the module docs).
#[derive(Default)]
pub(crate) struct OwnedCells {
    /// The instruction after which home slots are zeroed (at entry, after the stack check).
    anchor: Option<ir::Inst>,
    /// `(variable, home slot, kind)` of every owned variable, in the order they were owned
    /// (the order of their stack map entries).
    homes: Vec<(Variable, StackSlot, ElemKind)>,
    /// The home slot of each variable that has one, for [`FunctionTranslator::def_var`].
    home_of: SecondaryMap<Variable, PackedOption<StackSlot>>,
    /// The cells of the temporaries held now, innermost last: `(slot, byte offset, kind)`.
    held: Vec<(StackSlot, u32, ElemKind)>,
    /// `(slot, byte offset, kind)` of every managed cell of the owned array slots (array
    /// locals, `for` snapshots: zero from entry on, always owning their cells).
    arrays: Vec<(StackSlot, u32, ElemKind)>,
    /// Temporary slots not holding anything.
    free: Vec<StackSlot>,
}

impl FunctionTranslator<'_, '_> {
    /// Mark the current position (function entry, after the stack check) as where home slots
    /// are zeroed.
    pub(crate) fn start_owned_cells(&mut self) {
        let zero = self.builder.ins().iconst(types::I64, 0);
        self.cells.anchor = self.builder.func.dfg.value_def(zero).inst();
    }

    /// Own `var` (a managed `let`/`var` local or a hidden loop variable): its home slot is
    /// zeroed at entry and it starts as null here; it is released at every return.
    pub(crate) fn own_var(&mut self, var: Variable, ty: &Type) {
        let slot = self.new_slot(1);
        if let Some(anchor) = self.cells.anchor {
            let mut pos = FuncCursor::new(self.builder.func).after_inst(anchor);
            let zero = pos.ins().iconst(types::I64, 0);
            pos.ins().stack_store(types::I64, zero, slot, 0);
        }
        let zero = self.builder.ins().iconst(types::I64, 0);
        self.builder.def_var(var, zero);
        if map_type(elem_kind(ty)).is_some() {
            self.cells.homes.push((var, slot, elem_kind(ty)));
            self.cells.home_of[var] = slot.into();
        }
        self.owned.push((var, ty.clone()));
    }

    /// Name the managed cells of owned array slot `slot` (of type `ty`) from here on.
    pub(crate) fn own_array_cells(&mut self, slot: StackSlot, ty: &Type) {
        for (cell, kind) in crate::backend::objects::owned_cells(ty) {
            self.cells.arrays.push((slot, (cell * 8) as u32, kind));
        }
    }

    /// Define `var` as `v`; an owned variable's home slot follows.
    pub(crate) fn def_var(&mut self, var: Variable, v: Value) {
        self.builder.def_var(var, v);
        if let Some(slot) = self.cells.home_of[var].expand() {
            self.builder.ins().stack_store(types::I64, v, slot, 0);
        }
    }

    /// Empty `var`'s home slot (it owns nothing from here until its next definition).
    pub(crate) fn clear_home(&mut self, var: Variable) {
        if let Some(slot) = self.cells.home_of[var].expand() {
            let zero = self.builder.ins().iconst(types::I64, 0);
            self.builder.ins().stack_store(types::I64, zero, slot, 0);
        }
    }

    /// Hold owned temporary `v` of type `ty` while other code runs (nothing for a type that
    /// owns nothing).
    pub(crate) fn hold(&mut self, ty: &Type, v: Value) -> TempHold {
        if let Type::Array(..) = ty {
            return self.hold_array(ty, v);
        }
        let kind = elem_kind(ty);
        if map_type(kind).is_none() {
            return TempHold(None);
        }
        let slot = match self.cells.free.pop() {
            Some(slot) => slot,
            None => self.new_slot(1),
        };
        self.builder.ins().stack_store(types::I64, v, slot, 0);
        self.cells.held.push((slot, 0, kind));
        TempHold(Some((slot, true)))
    }

    /// Hold an owned array temporary: an array expression of an owning type yields the address
    /// of a fresh slot of its own (`stack_addr slot`, see `lower_array.rs`), whose managed
    /// cells are named where they are, without a store. Anything else (an address that is not
    /// a temporary slot's, an array owning nothing, an owned array local's slot, already named)
    /// holds nothing.
    fn hold_array(&mut self, ty: &Type, v: Value) -> TempHold {
        if !ty.owns_cells() {
            return TempHold(None);
        }
        let dfg = &self.builder.func.dfg;
        let slot = match dfg.value_def(v).inst().map(|i| &dfg.insts[i]) {
            Some(&ir::InstructionData::StackAddr {
                opcode: ir::Opcode::StackAddr,
                stack_slot,
                offset,
            }) if i64::from(offset) == 0 => stack_slot,
            _ => return TempHold(None),
        };
        if self.owned_arrays.iter().any(|(s, _)| *s == slot) {
            return TempHold(None);
        }
        for (cell, kind) in crate::backend::objects::owned_cells(ty) {
            self.cells.held.push((slot, (cell * 8) as u32, kind));
        }
        TempHold(Some((slot, false)))
    }

    /// [`Self::hold`] when `owned`, else nothing (a borrowed operand: its variable's home slot
    /// names it).
    pub(crate) fn hold_if(&mut self, owned: bool, ty: &Type, v: Value) -> TempHold {
        if owned {
            self.hold(ty, v)
        } else {
            TempHold(None)
        }
    }

    /// The held value is consumed from here on: calls no longer name it.
    pub(crate) fn unhold(&mut self, held: TempHold) {
        let TempHold(Some((slot, pooled))) = held else {
            return;
        };
        self.cells.held.retain(|(s, _, _)| *s != slot);
        if pooled {
            self.cells.free.push(slot);
        }
    }

    /// Unhold several held values (in any order).
    pub(crate) fn unhold_all(&mut self, held: Vec<TempHold>) {
        for h in held.into_iter().rev() {
            self.unhold(h);
        }
    }

    /// The owned cells in explicit slots at this point: every home slot, every managed cell of
    /// the owned array slots (array locals, `for` snapshots: zero from entry on, see
    /// `lower_array.rs`) and every held temporary, as stack map entries.
    pub(crate) fn owned_cells(&self) -> Vec<UserStackMapEntry> {
        let homes = self
            .cells
            .homes
            .iter()
            .map(|(_, slot, kind)| (*slot, 0, *kind));
        homes
            .chain(self.cells.arrays.iter().copied())
            .chain(self.cells.held.iter().copied())
            .filter_map(|(slot, offset, kind)| {
                Some(UserStackMapEntry {
                    ty: map_type(kind)?,
                    slot,
                    offset,
                })
            })
            .collect()
    }

    /// Attach the owned cells to call `inst` (one that can raise).
    pub(crate) fn attach_owned_cells(&mut self, inst: ir::Inst) {
        self.raising_calls.push(inst);
        let entries = self.owned_cells();
        if !entries.is_empty() {
            self.builder
                .func
                .dfg
                .append_user_stack_map_entries(inst, entries);
        }
    }

    /// Whether module function `id` is a helper that never raises and may run while a slot
    /// names a cell being released (retain and release).
    pub(crate) fn never_raises(&self, id: FuncId) -> bool {
        let h = &self.env.helpers;
        [
            h.retain,
            h.release,
            h.free_last,
            h.counts_contend,
            h.vec_retain,
            h.vec_release,
            h.str_retain,
            h.str_release,
            h.closure_retain,
            h.closure_release,
        ]
        .contains(&id)
    }
}
