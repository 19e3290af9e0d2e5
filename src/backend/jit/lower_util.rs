//! Memory, calls and checks shared by the statement and expression translators: stack slots,
//! cell loads and stores, array copies, helper calls and cold raise paths.

use cranelift_codegen::cursor::{Cursor, FuncCursor};
use cranelift_codegen::entity::EntityRef;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::immediates::Imm64;
use cranelift_codegen::ir::{
    self, BlockArg, FuncRef, GlobalValueData, InstBuilder, InstructionData, Opcode, StackSlot,
    StackSlotData, StackSlotKind, TrapCode, UserStackMapEntry, Value, ValueDef, types,
};
use cranelift_frontend::Variable;
use cranelift_module::{DataId, FuncId};

use crate::backend::Checks;
use crate::lang::hir::{self, LocalId, Type};
use crate::lang::span::Span;

use crate::runtime::values::{ElemKind, VecBlock};

use super::lower::{FunctionTranslator, GlobalsBase, LResult, bad, mem};
use super::lower_unwind::map_type;

// A bool cell is read by loading its first byte (`load_value`), and a packed bool array's
// bytes are its cells' bytes in order (`runtime::arrays`): generated code runs on the host
// (`cranelift_native`), which must be little-endian for both.
const _: () = assert!(
    cfg!(target_endian = "little"),
    "generated code's memory layout assumes a little-endian host"
);

impl FunctionTranslator<'_, '_> {
    /// A fresh slot of `cells` 8-byte cells: in the stack frame, or, above
    /// [`HEAP_SLOT_CELLS`](hir::HEAP_SLOT_CELLS) cells, a heap block (see
    /// [`Self::alloc_heap_slots`]) whose vec cell the returned one-cell slot holds. Either way
    /// [`Self::slot_addr`] gives the first cell's address.
    pub(crate) fn new_slot(&mut self, cells: u64) -> StackSlot {
        let heap = cells > hir::HEAP_SLOT_CELLS;
        let bytes = if heap { 8 } else { (cells.max(1) * 8) as u32 };
        self.slot_bytes += u64::from(bytes);
        let slot = self.builder.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            bytes,
            3,
        ));
        if heap {
            self.heap_slots.push((slot, cells, None));
        }
        slot
    }

    /// The address of the first cell of `slot` (from [`Self::new_slot`]).
    pub(crate) fn slot_addr(&mut self, slot: StackSlot) -> Value {
        if self.heap_slots.iter().any(|(s, _, _)| *s == slot) {
            // Its block's allocation is reported at the first code that uses it (a local's
            // initializer, the temporary's expression), as near as entry can be to where the
            // interpreter allocates.
            self.note_heap_slot_span(slot, self.span);
            // The holding slot is written once, at entry (`alloc_heap_slots`), before any code
            // that uses it, and the block of a fixed-size array never moves its cells: both
            // loads give the same address for the whole call, so they are pure to the
            // optimizer (`readonly`, `can_move`), which keeps them out of loops (a sieve's
            // `flags[j] = false` over a 2 MB `[bool; N]` reloaded both at every store).
            let flags = mem().with_readonly().with_can_move();
            let holder = self.builder.ins().stack_addr(types::I64, slot, 0);
            let block = self.builder.ins().load(types::I64, flags, holder, 0);
            return self
                .builder
                .ins()
                .load(types::I64, flags, block, VecBlock::DATA as i32);
        }
        self.builder.ins().stack_addr(types::I64, slot, 0)
    }

    /// Report the allocation of `slot`'s block at `span` if it is a heap slot whose first
    /// use is still to come.
    pub(crate) fn note_heap_slot_span(&mut self, slot: StackSlot, span: Span) {
        if let Some((_, _, at)) = self.heap_slots.iter_mut().find(|(s, _, _)| *s == slot) {
            at.get_or_insert(span);
        }
    }

    /// At function entry (the block after the stack check, once the whole body is lowered):
    /// allocate the block of every heap slot. The holding slots are zeroed first, so an
    /// allocation that raises (out of memory) leaves only blocks the stack maps name.
    pub(crate) fn alloc_heap_slots(&mut self) {
        if self.heap_slots.is_empty() {
            return;
        }
        let zero = self.builder.ins().iconst(types::I64, 0);
        for (slot, _, _) in self.heap_slots.clone() {
            self.builder.ins().stack_store(types::I64, zero, slot, 0);
        }
        let helper = self.env.helpers.array_heap;
        for (slot, cells, at) in self.heap_slots.clone() {
            let outer = self.enter_span(at.unwrap_or(self.func_name_span()));
            let n = self.builder.ins().iconst(types::I64, cells as i64);
            let block = self.call_helper(helper, &[n])[0];
            self.builder.ins().stack_store(types::I64, block, slot, 0);
            self.enter_span(outer);
        }
    }

    /// Once the function is lowered: every call that can raise names the heap slots' blocks
    /// (as vec cells: the unwinder releases them), and every return releases them first.
    pub(crate) fn finish_heap_slots(&mut self) {
        if self.heap_slots.is_empty() {
            return;
        }
        let entries: Vec<UserStackMapEntry> = self
            .heap_slots
            .iter()
            .map(|(slot, _, _)| UserStackMapEntry {
                ty: map_type(ElemKind::Vec).expect("a vec cell is counted"),
                slot: *slot,
                offset: 0,
            })
            .collect();
        for inst in std::mem::take(&mut self.raising_calls) {
            self.builder
                .func
                .dfg
                .append_user_stack_map_entries(inst, entries.iter().cloned());
        }
        let release = self.func_ref(self.env.helpers.vec_release);
        let func = &mut *self.builder.func;
        let returns: Vec<ir::Inst> = func
            .layout
            .blocks()
            .flat_map(|b| func.layout.block_insts(b))
            .filter(|&i| func.dfg.insts[i].opcode() == Opcode::Return)
            .collect();
        for inst in returns {
            let mut pos = FuncCursor::new(func).at_inst(inst);
            for (slot, _, _) in &self.heap_slots {
                let block = pos.ins().stack_load(types::I64, types::I64, *slot, 0);
                pos.ins().call(release, &[block]);
            }
        }
    }

    pub(crate) fn global_addr(&mut self, id: hir::GlobalId) -> LResult<Value> {
        let Some(cell) = self.env.global_cells.get(id.index()) else {
            return bad(format!("unknown global #{}", id.0));
        };
        let offset = (*cell * 8) as i64;
        if let Some(base) = self.region_base() {
            // Inside a loop that computed the block's address once (`opt_globals.rs`).
            return Ok(self.builder.ins().iadd_imm_s(base, offset));
        }
        match self.env.globals {
            GlobalsBase::Addr(base) => Ok(self
                .builder
                .ins()
                .iconst(types::I64, base.wrapping_add(offset))),
            GlobalsBase::Data(data) => self.data_object_addr(data, offset),
        }
    }

    /// The address `offset` bytes into module data object `data`: one `lea` with the offset
    /// folded into the relocation, like the JIT's one `movabs` of an absolute address.
    pub(crate) fn data_object_addr(&mut self, data: DataId, offset: i64) -> LResult<Value> {
        let base = self.module.declare_data_in_func(data, self.builder.func);
        let GlobalValueData::Symbol {
            name,
            colocated,
            tls,
            ..
        } = self.builder.func.global_values[base].clone()
        else {
            return bad("a data object that is not a symbol");
        };
        let gv = self.builder.create_global_value(GlobalValueData::Symbol {
            name,
            offset: Imm64::new(offset),
            colocated,
            tls,
        });
        Ok(self.builder.ins().symbol_value(types::I64, gv))
    }

    /// The address of the program's `ProgramObjects` (for `new`): a constant in JIT code, a
    /// load from the library's bound cell in position-independent code.
    pub(crate) fn objects_ptr(&mut self) -> LResult<Value> {
        match self.env.objects_data {
            None => Ok(self.builder.ins().iconst(types::I64, self.env.objects_addr)),
            Some(data) => {
                let cell = self.data_object_addr(data.objects, 0)?;
                Ok(self.builder.ins().load(types::I64, mem(), cell, 0))
            }
        }
    }

    /// The address of entry `k` of the slot-offset table (not a `readonly` load target: see
    /// `slot_code`).
    pub(crate) fn slot_table_entry(&mut self, k: usize) -> LResult<Value> {
        let offset = 8 * k as i64;
        match self.env.objects_data {
            None => Ok(self
                .builder
                .ins()
                .iconst(types::I64, self.env.slot_table_addr.wrapping_add(offset))),
            Some(data) => self.data_object_addr(data.slot_table, offset),
        }
    }

    /// Load a value of type `ty` at `addr`: a scalar, or (for an array) the address itself.
    ///
    /// A bool is one byte wherever it lives: an element of a packed bool array, or the first
    /// byte of a bool cell (0 or 1, little-endian), so both are read with the same byte load.
    pub(crate) fn load_value(&mut self, addr: Value, ty: &Type) -> LResult<Value> {
        Ok(match ty {
            Type::I64 => self.builder.ins().load(types::I64, mem(), addr, 0),
            Type::F64 => self.builder.ins().load(types::F64, mem(), addr, 0),
            Type::Bool => self.builder.ins().load(types::I8, mem(), addr, 0),
            Type::Handle { .. } | Type::Null | Type::Vec(_) | Type::Str | Type::Fn { .. } => {
                self.builder.ins().load(types::I64, mem(), addr, 0)
            }
            Type::Array(..) => addr,
            Type::Unit => self.unit(),
        })
    }

    /// Store `value` of type `ty` at `addr` (an array value is a pointer to its cells).
    pub(crate) fn store_value(&mut self, addr: Value, ty: &Type, value: Value) -> LResult<()> {
        match ty {
            Type::I64
            | Type::F64
            | Type::Handle { .. }
            | Type::Null
            | Type::Vec(_)
            | Type::Str
            | Type::Fn { .. } => {
                self.builder.ins().store(mem(), value, addr, 0);
            }
            Type::Bool => {
                let cell = self.builder.ins().uextend(types::I64, value);
                self.builder.ins().store(mem(), cell, addr, 0);
            }
            Type::Array(..) => self.copy_cells(addr, value, ty.cells()),
            Type::Unit => {}
        }
        Ok(())
    }

    /// Store `value`, an element of type `elem`, at `addr` inside an array: a bool as its one
    /// byte (bool arrays are packed, see [`Type::cells`]), anything else as
    /// [`Self::store_value`] stores it. A bool *cell* (a variable, a field, a vec's element)
    /// is stored whole with `store_value` instead, so its upper bytes stay zero.
    pub(crate) fn store_elem(&mut self, addr: Value, elem: &Type, value: Value) -> LResult<()> {
        if *elem == Type::Bool {
            self.builder.ins().store(mem(), value, addr, 0);
            return Ok(());
        }
        self.store_value(addr, elem, value)
    }

    /// Zero the padding bytes of a fresh `[bool; n]` at `base` (those of its last cell past
    /// element `n - 1`) before its elements are stored, so that two equal arrays have equal
    /// cells, whole-cell copies carry no stale bytes, and a value is one bit pattern however
    /// it was made. Nothing for another type or a whole last cell.
    pub(crate) fn zero_bool_padding(&mut self, base: Value, ty: &Type) {
        let Type::Array(elem, n) = ty else {
            return;
        };
        if **elem != Type::Bool || n % 8 == 0 {
            return;
        }
        let last = (ty.cells() - 1) * 8;
        let zero = self.builder.ins().iconst(types::I64, 0);
        self.store_at(zero, base, last);
    }

    /// Store `v` at `base + offset` bytes: the offset as the store's immediate when it fits,
    /// else added to the address first (cells past 2 GiB of a large array).
    pub(crate) fn store_at(&mut self, v: Value, base: Value, offset: u64) {
        match i32::try_from(offset) {
            Ok(offset) => {
                self.builder.ins().store(mem(), v, base, offset);
            }
            Err(_) => {
                let addr = self.builder.ins().iadd_imm_s(base, offset as i64);
                self.builder.ins().store(mem(), v, addr, 0);
            }
        }
    }

    /// The placeholder for a unit value (never stored or used).
    pub(crate) fn unit(&mut self) -> Value {
        self.builder.ins().iconst(types::I64, 0)
    }

    /// Copy `cells` 8-byte cells from `src` to `dst`: unrolled when short, a loop otherwise.
    pub(crate) fn copy_cells(&mut self, dst: Value, src: Value, cells: u64) {
        if cells <= 16 {
            for i in 0..cells as i32 {
                let x = self.builder.ins().load(types::I64, mem(), src, i * 8);
                self.builder.ins().store(mem(), x, dst, i * 8);
            }
            return;
        }
        let end = self.builder.ins().iconst(types::I64, (cells * 8) as i64);
        self.byte_loop(end, 8, |t, offset| {
            let s = t.builder.ins().iadd(src, offset);
            let d = t.builder.ins().iadd(dst, offset);
            let x = t.builder.ins().load(types::I64, mem(), s, 0);
            t.builder.ins().store(mem(), x, d, 0);
        });
    }

    /// Go on in a new block when `cond` holds, else to `otherwise` (one link of a chain of
    /// tests that share a fallback).
    pub(crate) fn continue_if(&mut self, cond: Value, otherwise: cranelift_codegen::ir::Block) {
        let next = self.builder.create_block();
        self.builder.ins().brif(cond, next, &[], otherwise, &[]);
        self.builder.switch_to_block(next);
        self.builder.seal_block(next);
    }

    /// `for offset in (0..end).step_by(step) { body(offset) }` (no break/continue inside).
    pub(crate) fn byte_loop(&mut self, end: Value, step: i64, body: impl FnOnce(&mut Self, Value)) {
        let header_block = self.builder.create_block();
        let body_block = self.builder.create_block();
        let exit_block = self.builder.create_block();
        let offset = self.builder.append_block_param(header_block, types::I64);
        let zero = self.builder.ins().iconst(types::I64, 0);
        self.builder.ins().jump(header_block, &[zero.into()]);

        self.builder.switch_to_block(header_block);
        let more = self.builder.ins().icmp(IntCC::SignedLessThan, offset, end);
        self.builder
            .ins()
            .brif(more, body_block, &[], exit_block, &[]);

        self.builder.switch_to_block(body_block);
        self.builder.seal_block(body_block);
        body(self, offset);
        let next = self.builder.ins().iadd_imm_s(offset, step);
        self.builder.ins().jump(header_block, &[next.into()]);

        self.builder.seal_block(header_block);
        self.builder.switch_to_block(exit_block);
        self.builder.seal_block(exit_block);
    }

    /// A `FuncRef` for module function `id`, declared in this function once.
    pub(crate) fn func_ref(&mut self, id: FuncId) -> FuncRef {
        if let Some(r) = self.refs.get(&id) {
            return *r;
        }
        let r = self.module.declare_func_in_func(id, self.builder.func);
        self.refs.insert(id, r);
        r
    }

    /// Call a helper (or any module function) and return its results. Unless it is a retain
    /// or release helper, the call may raise and carries the owned cells (`lower_unwind.rs`)
    /// and the span of the operation being lowered (as debug tags), where an error the helper
    /// raises without a span of its own (out of memory) is reported.
    pub(crate) fn call_helper(&mut self, id: FuncId, args: &[Value]) -> Vec<Value> {
        let r = self.func_ref(id);
        let call = self.builder.ins().call(r, args);
        if !self.never_raises(id) {
            self.attach_owned_cells(call);
            let tags = super::lower_unwind::span_tags(self.span);
            self.builder.func.debug_tags.set(call, tags);
        }
        self.builder.inst_results(call).to_vec()
    }

    /// Lower what follows as the operation at `span`: the span helper calls report
    /// (`call_helper`) and the source location of the instructions (for a crash report,
    /// `runtime::sweep::describe_pc`). Returns the span it replaces, to enter again after.
    pub(crate) fn enter_span(&mut self, span: Span) -> Span {
        self.builder
            .set_srcloc(cranelift_codegen::ir::SourceLoc::new(span.start));
        std::mem::replace(&mut self.span, span)
    }

    /// A span as two `u32` constants for a raise helper.
    pub(crate) fn span_args(&mut self, span: Span) -> (Value, Value) {
        let start = self.builder.ins().iconst(types::I32, i64::from(span.start));
        let end = self.builder.ins().iconst(types::I32, i64::from(span.end));
        (start, end)
    }

    /// Branch to a cold block that raises (via `raise`) when `failed` is true; continue in a
    /// fresh block otherwise.
    pub(crate) fn cold_raise(&mut self, failed: Value, raise: impl FnOnce(&mut Self)) {
        let fail_block = self.builder.create_block();
        let ok_block = self.builder.create_block();
        self.builder.set_cold_block(fail_block);
        self.builder
            .ins()
            .brif(failed, fail_block, &[], ok_block, &[]);
        self.builder.switch_to_block(fail_block);
        self.builder.seal_block(fail_block);
        raise(self);
        // The helper unwinds and never returns.
        self.builder.ins().trap(TrapCode::unwrap_user(3));
        self.builder.switch_to_block(ok_block);
        self.builder.seal_block(ok_block);
    }

    /// `slow(self)` in a cold block when `cold` is true, else `fast(self)`, joined after: the
    /// value each side gives (both sides one, of one type, or neither) is the join's.
    pub(crate) fn cold_else(
        &mut self,
        cold: Value,
        fast: impl FnOnce(&mut Self) -> Option<Value>,
        slow: impl FnOnce(&mut Self) -> Option<Value>,
    ) -> Option<Value> {
        let fast_block = self.builder.create_block();
        let slow_block = self.builder.create_block();
        let done = self.builder.create_block();
        self.builder.set_cold_block(slow_block);
        self.builder
            .ins()
            .brif(cold, slow_block, &[], fast_block, &[]);
        self.builder.switch_to_block(fast_block);
        self.builder.seal_block(fast_block);
        let value = fast(self);
        if let Some(v) = value {
            let ty = self.builder.func.dfg.value_type(v);
            self.builder.append_block_param(done, ty);
        }
        let args: Vec<BlockArg> = value.into_iter().map(Into::into).collect();
        self.builder.ins().jump(done, &args);
        self.builder.switch_to_block(slow_block);
        self.builder.seal_block(slow_block);
        let args: Vec<BlockArg> = slow(self).into_iter().map(Into::into).collect();
        self.builder.ins().jump(done, &args);
        self.builder.switch_to_block(done);
        self.builder.seal_block(done);
        self.builder.block_params(done).first().copied()
    }

    /// Address of element `idx` of the array at `base`, bounds-checked at `span` when checks
    /// are on.
    pub(crate) fn element_addr(
        &mut self,
        base: Value,
        idx: Value,
        elem: &Type,
        len: u32,
        span: Span,
    ) -> Value {
        self.check_index(idx, len, span);
        let bytes = elem.stride();
        // A shift for a power of two (every scalar element): `jit` has no egraph to turn the
        // multiply into one, and x86's `imul` takes three cycles on the index's path.
        let offset = if bytes == 1 {
            // A packed bool: the index is the byte offset.
            idx
        } else if bytes.is_power_of_two() {
            self.builder
                .ins()
                .ishl_imm_u(idx, i64::from(bytes.trailing_zeros()))
        } else {
            self.builder.ins().imul_imm_s(idx, bytes as i64)
        };
        self.builder.ins().iadd(base, offset)
    }

    /// Raise `IndexOutOfRange` at `span` when `idx` is outside `0..len` and checks are on.
    pub(crate) fn check_index(&mut self, idx: Value, len: u32, span: Span) {
        let in_range = self
            .ranges
            .values
            .get(&idx)
            .is_some_and(|bound| *bound <= i64::from(len));
        let here = self.builder.current_block();
        if self.env.checks == Checks::On
            && !in_range
            && !self.ranges.passed_below(here, idx, len)
            && !self.masked_below(idx, len)
        {
            let len_v = self.builder.ins().iconst(types::I64, i64::from(len));
            // Unsigned: a negative index is a huge one.
            let out = self
                .builder
                .ins()
                .icmp(IntCC::UnsignedGreaterThanOrEqual, idx, len_v);
            let helper = self.env.helpers.index;
            self.cold_raise(out, |t| {
                let (start, end) = t.span_args(span);
                t.call_helper(helper, &[idx, len_v, start, end]);
            });
            // The code that follows, in the block the check falls through to, has `idx < len`.
            if let Some(ok) = self.builder.current_block() {
                self.ranges.passed(here, ok, idx, len);
            }
        }
    }

    /// The constant `v` is, if it is one.
    pub(crate) fn constant_of(&self, v: Value) -> Option<i64> {
        let dfg = &self.builder.func.dfg;
        match dfg.value_def(v) {
            ValueDef::Result(inst, _) => match dfg.insts[inst] {
                InstructionData::UnaryImm {
                    opcode: Opcode::Iconst,
                    imm,
                } => Some(imm.bits()),
                _ => None,
            },
            _ => None,
        }
    }

    /// Lower `body`, a counted loop's over `first..end` with loop variable `var`, with what is
    /// known of the variable when `first` is a constant `>= 0`:
    /// - when `end` is a constant too, an array index that is that variable, on an array of at
    ///   least `end` elements, is always in range and needs no bounds check (`for j in 0..32 {
    ///   v[j] }` on a `[f64; 32]`);
    /// - when [`Self::len_bound`] found `end` to be `len_of.len()` of a local the loop cannot
    ///   change, an index `len_of[i]` or `len_of.byte(i)` by that variable is in range (and the
    ///   string is not empty).
    pub(crate) fn with_known_range<T>(
        &mut self,
        var: LocalId,
        first: Value,
        end: Value,
        len_of: Option<Variable>,
        body: impl FnOnce(&mut Self) -> LResult<T>,
    ) -> LResult<T> {
        if self.constant_of(first).is_none_or(|lo| lo < 0) {
            return body(self);
        }
        let known = self.constant_of(end);
        if let Some(hi) = known {
            self.ranges.vars.push((var, hi));
        }
        if let Some(of) = len_of {
            self.ranges.len_vars.push((var, of));
        }
        let result = body(self);
        if known.is_some() {
            self.ranges.vars.pop();
        }
        if len_of.is_some() {
            self.ranges.len_vars.pop();
        }
        result
    }

    /// `v` was just read from local `id`: remember its bound when `id` is a loop variable of
    /// a known range (see [`Self::with_known_range`]).
    pub(crate) fn note_range(&mut self, id: LocalId, v: Value) {
        if let Some((_, hi)) = self.ranges.vars.iter().rev().find(|(l, _)| *l == id) {
            self.ranges.values.insert(v, *hi);
        }
        if let Some((_, of)) = self.ranges.len_vars.iter().rev().find(|(l, _)| *l == id) {
            self.ranges.len_values.insert((v, of.index()));
        }
    }

    /// Whether index value `idx` is below the length of the vec or string in `of` (see
    /// [`Self::with_known_range`]).
    pub(crate) fn below_len_of(&self, idx: Value, of: Variable) -> bool {
        self.ranges.len_values.contains(&(idx, of.index()))
    }

    /// Whether `idx` is `x & c` (either operand order) with a constant `0 <= c < len`: always in
    /// range, so the bounds check can go (`a[i & 255]` on a 256-array). Any other index, and a
    /// negative mask (which lets negative values through), keeps its check.
    fn masked_below(&self, idx: Value, len: u32) -> bool {
        let dfg = &self.builder.func.dfg;
        let constant = |v: Value| match dfg.value_def(v) {
            ValueDef::Result(inst, _) => match dfg.insts[inst] {
                InstructionData::UnaryImm {
                    opcode: Opcode::Iconst,
                    imm,
                } => Some(imm.bits()),
                _ => None,
            },
            _ => None,
        };
        let ValueDef::Result(inst, _) = dfg.value_def(idx) else {
            return false;
        };
        let below = |c: Option<i64>| c.is_some_and(|c| (0..i64::from(len)).contains(&c));
        match dfg.insts[inst] {
            InstructionData::Binary {
                opcode: Opcode::Band,
                args,
            } => below(constant(args[0])) || below(constant(args[1])),
            _ => false,
        }
    }
}

/// What is known of index values where they are used, so that a bounds check that cannot fail
/// is not emitted: loop variables with a known range and the values read from them (see
/// [`FunctionTranslator::with_known_range`]), `let` locals bound to an integer literal, and the
/// checks already passed on the straight path to the code being lowered.
#[derive(Default)]
pub(crate) struct KnownRanges {
    /// `(variable, bound)`: the variable is in `0..bound` in the loop being lowered.
    vars: Vec<(LocalId, i64)>,
    /// Values read from such a variable, with its bound.
    values: std::collections::HashMap<Value, i64>,
    /// `(variable, local)`: the variable is in `0..local.len()` in the loop being lowered,
    /// whose code cannot change that length ([`FunctionTranslator::with_known_range`]).
    len_vars: Vec<(LocalId, Variable)>,
    /// Values read from such a variable, with the local whose length bounds them.
    /// (A value may be below several: `c[j] = a[j] + b[j]`.)
    len_values: std::collections::HashSet<(Value, usize)>,
    /// `let x = 7`: an immutable local bound to an integer literal, read as that constant
    /// wherever it is used (`for i in 0..x` then has a known range, `a[i & x]` a mask).
    let_ints: std::collections::HashMap<LocalId, i64>,
    /// The checks passed on the way into `passed_in`, the block being lowered: index value →
    /// the smallest length it was found below. Each check continues in a fresh block that only
    /// the check's branch reaches, so what held before it still holds there; any other entry
    /// into a block (a join, a loop header, a branch's arm) starts the block with nothing
    /// known.
    passed: std::collections::HashMap<Value, u32>,
    passed_in: Option<cranelift_codegen::ir::Block>,
}

impl KnownRanges {
    /// Index value `idx` is below the length of the vec in `of`, which the loop being lowered
    /// cannot change (`opt_bounds.rs`).
    pub(crate) fn note_below_len(&mut self, idx: Value, of: Variable) {
        self.len_values.insert((idx, of.index()));
    }

    /// Whether `idx < len` (unsigned) was already checked on the straight path into `here`.
    fn passed_below(
        &self,
        here: Option<cranelift_codegen::ir::Block>,
        idx: Value,
        len: u32,
    ) -> bool {
        here.is_some()
            && here == self.passed_in
            && self.passed.get(&idx).is_some_and(|&below| below <= len)
    }

    /// A check of `idx < len` made in block `from` continues in `ok`, reached from it alone.
    fn passed(
        &mut self,
        from: Option<cranelift_codegen::ir::Block>,
        ok: cranelift_codegen::ir::Block,
        idx: Value,
        len: u32,
    ) {
        if from.is_none() || from != self.passed_in {
            self.passed.clear();
        }
        self.passed_in = Some(ok);
        let below = self.passed.entry(idx).or_insert(len);
        *below = (*below).min(len);
    }

    /// Local `id` is a `let` bound to the integer `value`.
    pub(crate) fn note_let_int(&mut self, id: LocalId, value: i64) {
        self.let_ints.insert(id, value);
    }

    /// The integer a `let` local was bound to, if it is one of those.
    pub(crate) fn let_int(&self, id: LocalId) -> Option<i64> {
        self.let_ints.get(&id).copied()
    }
}
