//! Handle reference counts changed inline: `retain` and `release` of a handle cell without a
//! call on the common path.
//!
//! A retain is a null test and an add to the shell's count ([`Object::REFS`]). A release is one
//! decrement; when the count it took down was 1 (this reference was
//! the last), a cold block puts the 1 back and calls `hot_object_release`, which drops the
//! reference there and frees the object, as every other release does: freeing stays in one
//! place (`release_by_decrement` says why putting the 1 back is safe). The earlier design, a
//! load and a compare-and-swap from `n` to `n - 1` for `n > 1`, read the line before locking
//! it: Richards ran 3.38x its twin with it, 2.91x with the decrement.
//!
//! An object's add or decrement is a plain load and store on the thread that owns its runtime's
//! counts and a locked instruction elsewhere ([`runtime::counts`](crate::runtime::counts)): the
//! code reads the owner's stack range (at an address baked into JIT code, whose program has one
//! runtime; through the shell's class, `[class + Class::COUNTS]`, in the object backend) and
//! compares it with its stack pointer; the owner marks itself busy and reads the range again
//! before its plain change, the other side of the handshake that shares a runtime. A thread that
//! is not the owner of a runtime not yet shared calls `hot_counts_contend` first, once. Richards
//! on a Zen 5 guest: 7.1x its twin with locked counts, 2.4x with plain ones.
//!
//! A store of a handle read without running code into a handle place (`p = p.next`,
//! `o.f = x`) reads the new cell without a count of its own and then makes the retain and the
//! release in one window of the handshake ([`FunctionTranslator::swap_handle_counts`]): one
//! owner test, one busy pair and one `len` reload instead of two of each. The handle chain row
//! on jit-opt: 207 -> 190 executed instructions a step.
//!
//! Vec and closure blocks are counted the same way (a cell is 0 or the block's address, the
//! count at [`VecBlock::REFS`] / [`ClosureBlock::REFS`]); their last release calls
//! `hot_vec_release` / `hot_closure_release`, which free the block and what it holds.
//!
//! Strings are counted inline too, with the compare-and-swap (a static string's count must
//! not change, so the count is read first): a str cell is 0 or the address of its block, whose
//! count is its first word ([`StrBlock::REFS`]); the last release calls `hot_str_release`. A
//! static string (the one-byte ones, `str_block.rs`) has a count at or above
//! [`StrBlock::STATIC_FLOOR`]: its retains and releases read the count and change nothing, so
//! the one cache line all threads' one-byte strings share is never written.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{AtomicRmwOp, InstBuilder, Value, types};

use cranelift_module::FuncId;

use crate::lang::hir::{BinOp, Expr, ExprKind, Type};

use crate::runtime::class::Class;
use crate::runtime::closure::ClosureBlock;
use crate::runtime::counts::CountOwner;
use crate::runtime::object::Object;
use crate::runtime::str_block::StrBlock;
use crate::runtime::values::VecBlock;

use super::lower::{FunctionTranslator, mem};

impl FunctionTranslator<'_, '_> {
    /// The address of the count of a non-null handle cell's shell.
    fn refs_addr(&mut self, cell: Value) -> Value {
        let shell = self.cell_shell(cell);
        self.builder.ins().iadd_imm_s(shell, Object::REFS as i64)
    }

    /// The address of the count of a non-null str cell's block.
    fn str_refs_addr(&mut self, cell: Value) -> Value {
        self.builder.ins().iadd_imm_s(cell, StrBlock::REFS as i64)
    }

    /// The address of the count of a non-null vec cell's block.
    fn vec_refs_addr(&mut self, cell: Value) -> Value {
        self.builder.ins().iadd_imm_s(cell, VecBlock::REFS as i64)
    }

    /// The address of the count of a non-null closure cell's block.
    fn closure_refs_addr(&mut self, cell: Value) -> Value {
        self.builder
            .ins()
            .iadd_imm_s(cell, i64::from(ClosureBlock::REFS))
    }

    /// Take another count of a vec cell (0, the empty vec, is fine); returns the cell.
    pub(crate) fn retain_vec(&mut self, cell: Value) -> Value {
        self.retain_counted(cell, Some(Self::vec_refs_addr), None)
    }

    /// Give up the count a vec cell owns (0 is fine).
    pub(crate) fn release_vec(&mut self, cell: Value) {
        let helper = self.env.helpers.vec_release;
        self.release_counted(cell, Self::vec_refs_addr, helper, None);
    }

    /// Take another count of a closure cell (0 is fine); returns the cell.
    pub(crate) fn retain_closure(&mut self, cell: Value) -> Value {
        self.retain_counted(cell, Some(Self::closure_refs_addr), None)
    }

    /// Give up the count a closure cell owns (0 is fine).
    pub(crate) fn release_closure(&mut self, cell: Value) {
        let helper = self.env.helpers.closure_release;
        self.release_counted(cell, Self::closure_refs_addr, helper, None);
    }

    /// Take another reference through a handle cell (null is fine); returns the cell.
    pub(crate) fn retain_handle(&mut self, cell: Value) -> Value {
        self.retain_counted(cell, None, None)
    }

    /// Add `delta` to the count of a non-null handle cell's shell; returns the count before
    /// (when `want_old`) and the count's address. Plain on the thread that owns the runtime's
    /// counts, atomic elsewhere (module docs). Without `want_old` (a retain) the owner's load,
    /// add and store have no other use and become one `add [count], 1`.
    fn change_object_count(
        &mut self,
        cell: Value,
        delta: i64,
        want_old: bool,
    ) -> (Option<Value>, Value) {
        let addr = self.refs_addr(cell);
        let owner = match self.env.counts_owner {
            // The program's, known when the code is made: no loads through the object.
            Some(at) => self.builder.ins().iconst(types::I64, at),
            None => {
                let shell = self.cell_shell(cell);
                let class = self
                    .builder
                    .ins()
                    .load(types::I64, mem(), shell, Object::CLASS as i32);
                self.builder
                    .ins()
                    .load(types::I64, mem(), class, Class::COUNTS as i32)
            }
        };
        let (lo, mine) = self.owns_counts(owner);

        let own_block = self.builder.create_block();
        let plain_block = self.builder.create_block();
        let unbusy_block = self.builder.create_block();
        let other_block = self.builder.create_block();
        let contend_block = self.builder.create_block();
        let atomic_block = self.builder.create_block();
        let done_block = self.builder.create_block();
        // The owner's path falls through: a shared runtime pays a locked instruction anyway.
        for block in [unbusy_block, other_block, contend_block, atomic_block] {
            self.builder.set_cold_block(block);
        }
        let old = want_old.then(|| self.builder.append_block_param(done_block, types::I64));
        let passed = |n: Value| -> Vec<cranelift_codegen::ir::BlockArg> {
            if want_old { vec![n.into()] } else { Vec::new() }
        };
        self.builder
            .ins()
            .brif(mine, own_block, &[], other_block, &[]);

        // The owner: busy, then `len` again (the handshake), then the plain change.
        self.builder.switch_to_block(own_block);
        self.builder.seal_block(own_block);
        let still = self.enter_window(owner);
        self.builder
            .ins()
            .brif(still, plain_block, &[], unbusy_block, &[]);

        self.builder.switch_to_block(plain_block);
        self.builder.seal_block(plain_block);
        let n = self.plain_add(addr, delta);
        self.set_busy(owner, 0);
        self.builder.ins().jump(done_block, &passed(n));

        // Shared under the owner since the first read: not busy, and atomic.
        self.builder.switch_to_block(unbusy_block);
        self.builder.seal_block(unbusy_block);
        self.set_busy(owner, 0);
        self.builder.ins().jump(atomic_block, &[]);

        // Not the owner: atomic, after claiming or sharing a runtime not shared yet (`lo` 0).
        self.builder.switch_to_block(other_block);
        self.builder.seal_block(other_block);
        self.builder
            .ins()
            .brif(lo, contend_block, &[], atomic_block, &[]);

        self.builder.switch_to_block(contend_block);
        self.builder.seal_block(contend_block);
        let helper = self.env.helpers.counts_contend;
        self.call_helper(helper, &[owner]);
        self.builder.ins().jump(atomic_block, &[]);

        self.builder.switch_to_block(atomic_block);
        self.builder.seal_block(atomic_block);
        let n = self.atomic_add(addr, delta);
        self.builder.ins().jump(done_block, &passed(n));

        self.builder.switch_to_block(done_block);
        self.builder.seal_block(done_block);
        (old, addr)
    }

    /// Whether a plain store (`op` none) of `value` into a place of type `ty` changes its
    /// counts with [`Self::swap_handle_counts`]: a handle place in JIT code (the owner's
    /// address known) and a value read as a cell without running code (a local, or a field
    /// read through such cells, possibly asserted non-null; `p = null` is a release alone).
    pub(crate) fn swaps_counts(&self, ty: &Type, op: Option<BinOp>, value: &Expr) -> bool {
        let read = match &value.kind {
            ExprKind::NonNull(inner) => inner,
            ExprKind::Null => return false,
            _ => value,
        };
        op.is_none()
            && ty.is_handle()
            && self.env.counts_owner.is_some()
            && super::lower_object::pure_cell(read)
    }

    /// A handle place that held `old` now holds `new`, whose cell the code read without a
    /// count of its own (`p = p.next`): one more count on `new`, one less on `old`, each only
    /// when not null, and `old`'s last reference released as [`Self::release_handle`] does.
    ///
    /// When both are handles, on the thread that owns the counts, both changes are made in one
    /// window of the handshake (module docs): one owner test, one busy store each way and one
    /// reload of `len`, where a retain and a release each made their own. `new`'s add comes
    /// first, so freeing `old` (which may hold the last other reference to `new`, as a list's
    /// node holds its next) finds `new` counted. A null on either side is the one change
    /// alone. Off the straight path: in a shared runtime both changes are atomic, inline; a
    /// runtime not claimed yet or another thread's goes through the runtime's retain and
    /// release, which claim or share it first.
    pub(crate) fn swap_handle_counts(&mut self, new: Value, old: Value) {
        let Some(at) = self.env.counts_owner else {
            self.retain_handle(new);
            self.release_handle(old);
            return;
        };
        let has_old_block = self.builder.create_block();
        let only_new_block = self.builder.create_block();
        let only_old_block = self.builder.create_block();
        let both_block = self.builder.create_block();
        let own_block = self.builder.create_block();
        let last_block = self.builder.create_block();
        let unbusy_block = self.builder.create_block();
        let apart_block = self.builder.create_block();
        let done_block = self.builder.create_block();
        for block in [last_block, unbusy_block, apart_block] {
            self.builder.set_cold_block(block);
        }
        self.builder
            .ins()
            .brif(old, has_old_block, &[], only_new_block, &[]);

        // Nothing held before (a `var` set for the first time): the retain alone.
        self.builder.switch_to_block(only_new_block);
        self.builder.seal_block(only_new_block);
        self.retain_handle(new);
        self.builder.ins().jump(done_block, &[]);

        self.builder.switch_to_block(has_old_block);
        self.builder.seal_block(has_old_block);
        self.builder
            .ins()
            .brif(new, both_block, &[], only_old_block, &[]);

        // `p = null`: the release alone.
        self.builder.switch_to_block(only_old_block);
        self.builder.seal_block(only_old_block);
        self.release_handle(old);
        self.builder.ins().jump(done_block, &[]);

        self.builder.switch_to_block(both_block);
        self.builder.seal_block(both_block);
        let owner = self.builder.ins().iconst(types::I64, at);
        let (_, mine) = self.owns_counts(owner);
        self.builder
            .ins()
            .brif(mine, own_block, &[], apart_block, &[]);

        self.builder.switch_to_block(own_block);
        self.builder.seal_block(own_block);
        let still = self.enter_window(owner);
        let plain_block = self.builder.create_block();
        self.builder
            .ins()
            .brif(still, plain_block, &[], unbusy_block, &[]);

        self.builder.switch_to_block(plain_block);
        self.builder.seal_block(plain_block);
        let addr = self.refs_addr(new);
        self.plain_add(addr, 1);
        let old_addr = self.refs_addr(old);
        let m = self.plain_add(old_addr, -1);
        self.set_busy(owner, 0);
        let last = self.builder.ins().icmp_imm_s(IntCC::Equal, m, 1);
        self.builder
            .ins()
            .brif(last, last_block, &[], done_block, &[]);

        // `old`'s last reference, from either side (sealed once both branched here).
        self.builder.switch_to_block(last_block);
        let old_addr = self.refs_addr(old);
        let release = self.handle_last_release();
        self.release_last(old, old_addr, release, done_block);

        // Shared under the owner since the first read: not busy, then the separate way.
        self.builder.switch_to_block(unbusy_block);
        self.builder.seal_block(unbusy_block);
        self.set_busy(owner, 0);
        self.builder.ins().jump(apart_block, &[]);

        // Not the owner. A shared runtime (`lo` 0): both changes atomic, inline, as the single
        // change makes them. One not claimed yet or owned by another thread: the runtime's own
        // retain and release, which claim or share first (two calls here keep the inline code
        // small: a store like this one sits in methods the inliner takes only while short).
        let atomic_block = self.builder.create_block();
        let helpers_block = self.builder.create_block();
        for block in [atomic_block, helpers_block] {
            self.builder.set_cold_block(block);
        }
        self.builder.switch_to_block(apart_block);
        self.builder.seal_block(apart_block);
        let lo = self
            .builder
            .ins()
            .load(types::I64, mem(), owner, CountOwner::LO as i32);
        self.builder
            .ins()
            .brif(lo, helpers_block, &[], atomic_block, &[]);

        self.builder.switch_to_block(atomic_block);
        self.builder.seal_block(atomic_block);
        let addr = self.refs_addr(new);
        self.atomic_add(addr, 1);
        let old_addr = self.refs_addr(old);
        let m = self.atomic_add(old_addr, -1);
        let last = self.builder.ins().icmp_imm_s(IntCC::Equal, m, 1);
        self.builder
            .ins()
            .brif(last, last_block, &[], done_block, &[]);
        self.builder.seal_block(last_block);

        self.builder.switch_to_block(helpers_block);
        self.builder.seal_block(helpers_block);
        let retain = self.env.helpers.retain;
        self.call_helper(retain, &[new]);
        let release = self.env.helpers.release;
        self.call_helper(release, &[old]);
        self.builder.ins().jump(done_block, &[]);

        self.builder.switch_to_block(done_block);
        self.builder.seal_block(done_block);
    }

    /// The owner's plain change of the count at `addr` by `delta`; returns the count before.
    fn plain_add(&mut self, addr: Value, delta: i64) -> Value {
        let n = self.builder.ins().load(types::I64, mem(), addr, 0);
        let changed = self.builder.ins().iadd_imm_s(n, delta);
        self.builder.ins().store(mem(), changed, addr, 0);
        n
    }

    /// An atomic change of the count at `addr` by `delta`; returns the count before.
    fn atomic_add(&mut self, addr: Value, delta: i64) -> Value {
        let delta = self.builder.ins().iconst(types::I64, delta);
        self.builder
            .ins()
            .atomic_rmw(types::I64, mem(), AtomicRmwOp::Add, addr, delta)
    }

    /// The block of a release that took `cell`'s count (at `addr`) from 1: put the 1 back and
    /// let `helper` drop the reference and free, then go on at `done` (`release_by_decrement`
    /// says why putting it back is safe). A plain store: no other thread can read the count
    /// now, and an atomic store would be a sequentially consistent one, with an `mfence` on
    /// every free.
    fn release_last(
        &mut self,
        cell: Value,
        addr: Value,
        helper: FuncId,
        done: cranelift_codegen::ir::Block,
    ) {
        let one = self.builder.ins().iconst(types::I64, 1);
        self.builder.ins().store(mem(), one, addr, 0);
        self.call_helper(helper, &[cell]);
        self.builder.ins().jump(done, &[]);
    }

    /// The owner test: `(lo, sp - lo < len)` of the counts' owner at `owner`. Plain loads at
    /// offsets from the one owner address (one constant, not one per field): they stay in the
    /// function's order (not readonly), and none is merged with a load before a store of the
    /// same memory kind, so the reload of `len` in [`Self::enter_window`] is a load of its own.
    fn owns_counts(&mut self, owner: Value) -> (Value, Value) {
        let lo = self
            .builder
            .ins()
            .load(types::I64, mem(), owner, CountOwner::LO as i32);
        let len = self
            .builder
            .ins()
            .load(types::I64, mem(), owner, CountOwner::LEN as i32);
        let sp = self.builder.ins().get_stack_pointer(types::I64);
        let offset = self.builder.ins().isub(sp, lo);
        let mine = self
            .builder
            .ins()
            .icmp(IntCC::UnsignedLessThan, offset, len);
        (lo, mine)
    }

    /// The owner's side of the handshake: busy, then `len` again, whose value (0: shared since
    /// the owner test) the caller branches on before any plain change.
    fn enter_window(&mut self, owner: Value) -> Value {
        self.set_busy(owner, 1);
        self.builder
            .ins()
            .load(types::I64, mem(), owner, CountOwner::LEN as i32)
    }

    /// The owner's busy word: a plain store (only the owner writes it).
    fn set_busy(&mut self, owner: Value, busy: i64) {
        let v = self.builder.ins().iconst(types::I64, busy);
        self.builder
            .ins()
            .store(mem(), v, owner, CountOwner::BUSY as i32);
    }

    /// Take another count of a str cell (0, the empty string, is fine); returns the cell.
    pub(crate) fn retain_str(&mut self, cell: Value) -> Value {
        self.retain_counted(
            cell,
            Some(Self::str_refs_addr),
            Some(StrBlock::STATIC_FLOOR),
        )
    }

    /// Give up a reference through a handle cell (null is fine; see the module docs).
    pub(crate) fn release_handle(&mut self, cell: Value) {
        let helper = self.handle_last_release();
        self.release_by_decrement(cell, None, helper);
    }

    /// The helper a handle's last release calls (the count found at 1, put back): on a fixed
    /// runtime (`jit-opt`), whose classes are all inline, `hot_object_free_last`, which frees
    /// the object without changing the count again (`object::free_last`); elsewhere the
    /// runtime's release, which takes the count to zero itself (a reload's walk of a live list
    /// may have taken a reference meanwhile).
    fn handle_last_release(&self) -> FuncId {
        if self.env.fixed {
            self.env.helpers.free_last
        } else {
            self.env.helpers.release
        }
    }

    /// Give up the count a str cell owns (0 is fine; see the module docs).
    pub(crate) fn release_str(&mut self, cell: Value) {
        let helper = self.env.helpers.str_release;
        self.release_counted(
            cell,
            Self::str_refs_addr,
            helper,
            Some(StrBlock::STATIC_FLOOR),
        );
    }

    /// Go to `done` when count `n` is at or above `floor` (a static block's); go on otherwise.
    fn skip_static(&mut self, n: Value, floor: u64, done: cranelift_codegen::ir::Block) {
        let counted = self
            .builder
            .ins()
            .icmp_imm_s(IntCC::UnsignedLessThan, n, floor as i64);
        self.continue_if(counted, done);
    }

    /// A retain: an atomic add to the count at `refs(cell)` when `cell` is not 0 (and the
    /// count is below `floor`, when given: a static block's); `None` is a handle's count,
    /// changed as [`Self::change_object_count`] says.
    fn retain_counted(
        &mut self,
        cell: Value,
        refs: Option<fn(&mut Self, Value) -> Value>,
        floor: Option<u64>,
    ) -> Value {
        let add_block = self.builder.create_block();
        let done_block = self.builder.create_block();
        self.builder
            .ins()
            .brif(cell, add_block, &[], done_block, &[]);
        self.builder.switch_to_block(add_block);
        self.builder.seal_block(add_block);
        match refs {
            Some(refs) => {
                let addr = refs(self, cell);
                if let Some(floor) = floor {
                    let n = self.builder.ins().atomic_load(types::I64, mem(), addr);
                    self.skip_static(n, floor, done_block);
                }
                self.atomic_add(addr, 1);
            }
            None => {
                self.change_object_count(cell, 1, false);
            }
        }
        self.builder.ins().jump(done_block, &[]);
        self.builder.switch_to_block(done_block);
        self.builder.seal_block(done_block);
        cell
    }

    /// A release: a swap of the count at `refs(cell)` from `n` to `n - 1` while `n > 1`, else
    /// `helper(cell)` from a cold block (see the module docs); nothing for a count at or above
    /// `floor`, when given (a static block's).
    fn release_counted(
        &mut self,
        cell: Value,
        refs: fn(&mut Self, Value) -> Value,
        helper: FuncId,
        floor: Option<u64>,
    ) {
        if floor.is_none() {
            return self.release_by_decrement(cell, Some(refs), helper);
        }
        let load_block = self.builder.create_block();
        let try_block = self.builder.create_block();
        let swap_block = self.builder.create_block();
        let last_block = self.builder.create_block();
        let done_block = self.builder.create_block();
        self.builder.set_cold_block(last_block);
        self.builder
            .ins()
            .brif(cell, load_block, &[], done_block, &[]);

        self.builder.switch_to_block(load_block);
        self.builder.seal_block(load_block);
        let addr = refs(self, cell);
        let seen = self.builder.ins().atomic_load(types::I64, mem(), addr);
        self.builder.ins().jump(try_block, &[seen.into()]);

        // try(n): the last reference, maybe: the helper; else swap n for n - 1.
        self.builder.switch_to_block(try_block);
        let n = self.builder.append_block_param(try_block, types::I64);
        let last = self
            .builder
            .ins()
            .icmp_imm_s(IntCC::UnsignedLessThanOrEqual, n, 1);
        self.builder
            .ins()
            .brif(last, last_block, &[], swap_block, &[]);

        self.builder.switch_to_block(swap_block);
        self.builder.seal_block(swap_block);
        if let Some(floor) = floor {
            self.skip_static(n, floor, done_block);
        }
        let less = self.builder.ins().iadd_imm_s(n, -1);
        let found = self.builder.ins().atomic_cas(mem(), addr, n, less);
        let swapped = self.builder.ins().icmp(IntCC::Equal, found, n);
        self.builder
            .ins()
            .brif(swapped, done_block, &[], try_block, &[found.into()]);
        self.builder.seal_block(try_block);

        self.builder.switch_to_block(last_block);
        self.builder.seal_block(last_block);
        self.call_helper(helper, &[cell]);
        self.builder.ins().jump(done_block, &[]);

        self.builder.switch_to_block(done_block);
        self.builder.seal_block(done_block);
    }
    /// A release of a count with no static floor (handles, vecs, closures): one atomic
    /// decrement; when it took the count from 1 to 0 (this was the last reference), a cold
    /// block puts the 1 back and calls `helper(cell)`, which takes it to zero again and frees,
    /// as every release does. Putting it back is safe: no one can raise a count from 0 — a
    /// retain needs a reference of its own, and the runtime's walks of the live lists take
    /// theirs with `try_retain`, which refuses 0 (one that sees the 1 put back holds a real
    /// reference, and the helper's decrement then leaves the object to it).
    ///
    /// `refs` finds the count of a vec or closure block, changed atomically; `None` is a
    /// handle's, changed as [`Self::change_object_count`] says.
    fn release_by_decrement(
        &mut self,
        cell: Value,
        refs: Option<fn(&mut Self, Value) -> Value>,
        helper: FuncId,
    ) {
        let dec_block = self.builder.create_block();
        let last_block = self.builder.create_block();
        let done_block = self.builder.create_block();
        self.builder.set_cold_block(last_block);
        self.builder
            .ins()
            .brif(cell, dec_block, &[], done_block, &[]);

        self.builder.switch_to_block(dec_block);
        self.builder.seal_block(dec_block);
        let (old, addr) = match refs {
            Some(refs) => {
                let addr = refs(self, cell);
                let old = self.atomic_add(addr, -1);
                (old, addr)
            }
            None => {
                let (old, addr) = self.change_object_count(cell, -1, true);
                (old.expect("the count before, asked for"), addr)
            }
        };
        let last = self.builder.ins().icmp_imm_s(IntCC::Equal, old, 1);
        self.builder
            .ins()
            .brif(last, last_block, &[], done_block, &[]);

        self.builder.switch_to_block(last_block);
        self.builder.seal_block(last_block);
        self.release_last(cell, addr, helper, done_block);

        self.builder.switch_to_block(done_block);
        self.builder.seal_block(done_block);
    }
}
