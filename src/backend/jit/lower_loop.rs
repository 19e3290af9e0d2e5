//! HIR → CLIF for loops: `while`, `for i in a..b`, `for x in array`, with `break`/`continue`
//! targets per loop.
//!
//! Loops are emitted rotated where that is sound: a test before the loop, then the test again
//! at the bottom, branching back to the body, so an iteration takes one taken branch, and
//! Cranelift 0.135's egraph hoists loop invariants out of a rotated loop (it does not out of a
//! `brif cond, body, exit` header: see the `jit-opt` branch of [`FunctionTranslator::translate_while`]).
//! A `while` is rotated when its condition runs no code ([`runs_no_code`]: no call can be
//! lowered twice by it), so emitting the condition twice changes nothing but the code's
//! size. Conditions are lowered as branches ([`FunctionTranslator::translate_branch`]): `a && b`,
//! `a || b` and `!a` jump on each operand's test, with no `bool` materialized and tested again.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value, types};
use cranelift_frontend::Variable;

use cranelift_codegen::ir::Block;

use crate::lang::hir::{self, BinOp, Block as HirBlock, ExprKind, LocalId, LogicOp, Type, UnOp};
use crate::lang::span::Span;

use super::lower::{FunctionTranslator, LResult, LocalSlot, LoopTargets, PlaceRef, bad};
use super::lower_expr::reads_var;
use super::opt_globals::runs_no_code;
use super::opt_walk::{Visitor, Walk, walk_block, walk_expr};

/// Body copies per trip of an unrolled counted loop ([`FunctionTranslator::counted_loop`]).
const UNROLL: i64 = 4;

/// Loop bodies of more HIR nodes than this are not unrolled (code size, compile time).
const MAX_UNROLLED_NODES: usize = 40;

/// An accumulation `p op= e` that the unrolled copies of a loop compute from one base: copy
/// `k` stores `base op (e0 ⊕ … ⊕ ek)` (⊕ is `+` for `+=` and `-=`, the operator itself for
/// `^=`, `|=`, `&=`), where `base` is `p` as the group's first copy read it. The same values,
/// stored in the same order (i64 arithmetic wraps, so the sums are exact in any grouping),
/// but the loop carries one operation per group instead of one per copy: the operands' partial
/// sums do not wait for the stores before them. See [`reassociable`] for when it is sound.
#[derive(Debug)]
pub(crate) struct Reassoc {
    /// The one assignment's place (the body's only statement), by address.
    place: *const hir::Place,
    /// The compound operator the copies apply (`p = p op e` is taken as `p op= e`).
    op: BinOp,
    /// Lowering the copies of the unrolled loop (not the plain loop after it).
    in_group: bool,
    /// The assignment is being lowered and its store not made yet: the next store lowered is
    /// its own (set by [`FunctionTranslator::reassoc_begin`], taken by `store_to`). Nothing
    /// else is stored in between: the place is a local, a module variable or a field of a
    /// local handle, and the operand a scalar expression that calls nothing.
    store_pending: bool,
    /// The group's base and its operands folded so far (from its first copy's store).
    folded: Option<(Value, Value)>,
}

impl Reassoc {
    /// Whether `place` is the assignment's, in a copy of the unrolled trip.
    fn is(&self, place: &hir::Place) -> bool {
        self.in_group && std::ptr::eq(self.place, place)
    }

    /// Whether the store being lowered is the assignment's (once).
    pub(crate) fn take_store(&mut self) -> bool {
        std::mem::take(&mut self.store_pending)
    }
}

/// The reassociated form of a loop body (see [`Reassoc`]): a body of exactly one assignment
/// `p op= e` (or `p = p op e`) of an `i64` local, module variable or field of a local handle,
/// with `op` one of `+ - ^ | &`, where `e` does not read `p`'s cell (no read of the local, of
/// the module variable, of a field with `p`'s index on any object) — and, as every unrolled
/// body, calls nothing ([`FunctionTranslator::unrolls`]): nothing but the copies' own stores
/// writes `p` during the group, so its value at copy `k` is `base op (e0 ⊕ … ⊕ ek)`. A raise
/// in `e` (an index out of range) stops the group where the plain copies stop: the stores
/// before it made, the rest not.
fn reassociable(body: &HirBlock) -> Option<Reassoc> {
    let [stmt] = body.stmts.as_slice() else {
        return None;
    };
    let hir::StmtKind::Assign {
        place, op, value, ..
    } = &stmt.kind
    else {
        return None;
    };
    if place.ty != Type::I64 {
        return None;
    }
    let (op, operand) = match (op, &value.kind) {
        (Some(op), _) => (*op, value),
        (None, ExprKind::Binary { op, lhs, rhs, .. }) if reads_place(lhs, place) => (*op, &**rhs),
        _ => return None,
    };
    if !matches!(
        op,
        BinOp::Add | BinOp::Sub | BinOp::BitXor | BinOp::BitOr | BinOp::BitAnd
    ) {
        return None;
    }
    match &place.kind {
        hir::PlaceKind::Local(_) | hir::PlaceKind::Global(_) => {}
        hir::PlaceKind::Field { object, .. } if matches!(object.kind, ExprKind::Local(_)) => {}
        _ => return None,
    }
    let mut reads = ReadsCell {
        place,
        found: false,
    };
    walk_expr(operand, &mut reads);
    (!reads.found).then_some(Reassoc {
        place,
        op,
        in_group: false,
        store_pending: false,
        folded: None,
    })
}

/// Whether `e` is a plain read of `place` (a local, a module variable, or a field of the same
/// local handle).
fn reads_place(e: &hir::Expr, place: &hir::Place) -> bool {
    match (&e.kind, &place.kind) {
        (ExprKind::Local(a), hir::PlaceKind::Local(b)) => a == b,
        (ExprKind::Global(a), hir::PlaceKind::Global(b)) => a == b,
        (ExprKind::Field(o, f), hir::PlaceKind::Field { object, field }) => {
            f == field
                && matches!((&o.kind, &object.kind),
                    (ExprKind::Local(a), ExprKind::Local(b)) if a == b)
        }
        _ => false,
    }
}

/// Finds a read in an operand that may see the cell of the assignment's `place`, or anything
/// that might write it: a call of any kind (the unrolled body has none, `Unrollable`; this
/// does not lean on that).
struct ReadsCell<'p> {
    place: &'p hir::Place,
    found: bool,
}

impl Visitor for ReadsCell<'_> {
    fn expr(&mut self, e: &hir::Expr) -> Walk {
        self.found |= match (&e.kind, &self.place.kind) {
            (ExprKind::Local(a), hir::PlaceKind::Local(b)) => a == b,
            (ExprKind::Global(a), hir::PlaceKind::Global(b)) => a == b,
            (ExprKind::Field(_, f), hir::PlaceKind::Field { field, .. }) => f == field,
            (
                ExprKind::Call(..)
                | ExprKind::CallNative(..)
                | ExprKind::MethodCall { .. }
                | ExprKind::VirtualCall { .. }
                | ExprKind::CallClosure(..)
                | ExprKind::VecPush(..)
                | ExprKind::VecPop(..)
                | ExprKind::New(_)
                | ExprKind::Print(_)
                | ExprKind::Closure { .. },
                _,
            ) => true,
            _ => false,
        };
        Walk::Children
    }
    fn unknown(&mut self) {
        self.found = true;
    }
}

/// Whether a loop body may be unrolled, and its size (see [`FunctionTranslator::unrolls`]).
/// Every value it computes or stores is a scalar: no array copy (a temporary slot per copy), no
/// handle or string (a retain or release call).
struct Unrollable<'l> {
    locals: &'l [hir::Local],
    /// The vec index sites whose bounds the loop tested before it (`opt_bounds.rs`): no
    /// check, so no branch.
    in_bounds: &'l super::opt_bounds::InBounds,
    nodes: usize,
    ok: bool,
}

impl Unrollable<'_> {
    /// Whether `op` on `i64` operands is light: one-cycle integer operations, and a multiply
    /// off a chain (`chain`: an operand or the target is a `var`).
    fn light_op(op: BinOp, chain: bool) -> bool {
        match op {
            BinOp::Div | BinOp::Rem => false,
            BinOp::Mul => !chain,
            _ => true,
        }
    }

    /// An array read or written in place by index, or a handle whose field is: a local, a
    /// module variable, a field read through a local handle, or a row of such an array.
    fn in_place(&mut self, e: &hir::Expr) -> bool {
        self.nodes += 1;
        match &e.kind {
            ExprKind::Local(_) | ExprKind::Global(_) => true,
            ExprKind::Field(object, _) => {
                self.nodes += 1;
                matches!(object.kind, ExprKind::Local(_))
            }
            // A row of an array of arrays (`GN[i & 15][j]`), read in place as its elements.
            ExprKind::Index(inner, index) if matches!(inner.ty, Type::Array(..)) => {
                walk_expr(index, self);
                self.in_place(inner)
            }
            _ => false,
        }
    }
}

impl Visitor for Unrollable<'_> {
    fn stmt(&mut self, s: &hir::Stmt) -> Walk {
        self.nodes += 1;
        match &s.kind {
            hir::StmtKind::Let { local, .. } => {
                if !self
                    .locals
                    .get(local.index())
                    .is_some_and(|l| l.ty.is_scalar())
                {
                    self.ok = false;
                }
            }
            hir::StmtKind::Assign { place, op, .. } => {
                // `x op= v` is `x = x op v`: the same rule as the binary expression.
                if let Some(op) = op {
                    let chain = matches!(place.kind, hir::PlaceKind::Local(id)
                        if self.locals.get(id.index()).is_some_and(|l| l.mutable));
                    if place.ty != Type::I64 || !Self::light_op(*op, chain) {
                        self.ok = false;
                    }
                }
            }
            hir::StmtKind::Expr(_) => {}
            _ => self.ok = false,
        }
        Walk::Children
    }

    fn place(&mut self, p: &hir::Place, _written: bool) -> Walk {
        self.nodes += 1;
        if !p.ty.is_scalar() {
            self.ok = false;
            return Walk::Skip;
        }
        match &p.kind {
            hir::PlaceKind::Local(_) | hir::PlaceKind::Global(_) => Walk::Skip,
            hir::PlaceKind::Field { object, .. } => {
                if !self.in_place(object) {
                    self.ok = false;
                }
                Walk::Skip
            }
            hir::PlaceKind::Index { base, index } => {
                // An element of an array (a vec's is bounds-checked: a branch in every copy)
                // held by a local or module variable, or in a field.
                let array = match &base.kind {
                    hir::PlaceKind::Local(_) | hir::PlaceKind::Global(_) => true,
                    hir::PlaceKind::Field { object, .. } => self.in_place(object),
                    hir::PlaceKind::Index { .. } => false,
                };
                let unchecked = match base.ty {
                    Type::Array(..) => true,
                    Type::Vec(_) => self.in_bounds.known(index),
                    _ => false,
                };
                if !array || !unchecked {
                    self.ok = false;
                }
                walk_expr(index, self);
                Walk::Skip
            }
        }
    }

    fn expr(&mut self, e: &hir::Expr) -> Walk {
        self.nodes += 1;
        if !e.ty.is_scalar() {
            self.ok = false;
            return Walk::Skip;
        }
        match &e.kind {
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Local(_)
            | ExprKind::Global(_)
            | ExprKind::Unary(..)
            | ExprKind::Cast(_) => Walk::Children,
            // Integer adds, subtracts, bit operations, shifts and compares: one cycle each; a
            // multiply off a chain a loop carries (not of a `var`: `(i * 7) & 255`).
            ExprKind::Binary { op, lhs, rhs, .. } => {
                let chain = reads_var(self.locals, lhs) || reads_var(self.locals, rhs);
                if lhs.ty != Type::I64 || !Self::light_op(*op, chain) {
                    self.ok = false;
                }
                Walk::Children
            }
            ExprKind::Field(object, _) => {
                if !matches!(object.kind, ExprKind::Local(_)) {
                    self.ok = false;
                }
                Walk::Skip
            }
            ExprKind::Len(array) => {
                if !matches!(array.ty, Type::Array(..)) || !self.in_place(array) {
                    self.ok = false;
                }
                Walk::Skip
            }
            // An array element read in place (see `place`), or a vec's whose bounds the loop
            // tested before it.
            ExprKind::Index(array, index) => {
                let unchecked = match array.ty {
                    Type::Array(..) => true,
                    Type::Vec(_) => self.in_bounds.known(index),
                    _ => false,
                };
                if !unchecked || !self.in_place(array) {
                    self.ok = false;
                }
                walk_expr(index, self);
                Walk::Skip
            }
            _ => {
                self.ok = false;
                Walk::Skip
            }
        }
    }

    fn unknown(&mut self) {
        self.ok = false;
    }
}

impl FunctionTranslator<'_, '_> {
    /// Branch to `yes` when `cond` is true, else to `no`: `&&`, `||` and `!` as jumps on their
    /// operands (short-circuit, left to right, as their values are), anything else evaluated
    /// and tested. The caller seals `yes` and `no`.
    pub(crate) fn translate_branch(
        &mut self,
        cond: &hir::Expr,
        yes: Block,
        no: Block,
    ) -> LResult<()> {
        match &cond.kind {
            ExprKind::Logical(op, l, r) => {
                let rhs_block = self.builder.create_block();
                match op {
                    LogicOp::And => self.translate_branch(l, rhs_block, no)?,
                    LogicOp::Or => self.translate_branch(l, yes, rhs_block)?,
                }
                self.builder.switch_to_block(rhs_block);
                self.builder.seal_block(rhs_block);
                self.translate_branch(r, yes, no)
            }
            ExprKind::Unary(UnOp::Not, x) => self.translate_branch(x, no, yes),
            _ => {
                let c = self.translate_expr(cond)?;
                self.builder.ins().brif(c, yes, &[], no, &[]);
                Ok(())
            }
        }
    }

    pub(crate) fn translate_while(&mut self, cond: &hir::Expr, body: &HirBlock) -> LResult<()> {
        if runs_no_code(self.env.program, cond) {
            return self.translate_while_rotated(cond, body);
        }
        let header_block = self.builder.create_block();
        let body_block = self.builder.create_block();
        let exit_block = self.builder.create_block();
        self.builder.ins().jump(header_block, &[]);

        self.builder.switch_to_block(header_block);
        let c = self.translate_expr(cond)?;
        if self.env.fixed {
            // `brif exit_cond, exit, body`: the shape in which Cranelift 0.135's egraph hoists
            // loop invariants. From `brif cond, body, exit` its domtree walk visits the exit
            // before the body, leaves the loop there and hoists nothing in it. The egraph folds
            // the inverted test into the compare.
            let exit = self.builder.ins().icmp_imm_s(IntCC::Equal, c, 0);
            self.builder
                .ins()
                .brif(exit, exit_block, &[], body_block, &[]);
        } else {
            self.builder.ins().brif(c, body_block, &[], exit_block, &[]);
        }

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

    /// `while cond { body }` as `if cond { do { body } while cond }` (see the module docs);
    /// `continue` goes to the bottom test.
    fn translate_while_rotated(&mut self, cond: &hir::Expr, body: &HirBlock) -> LResult<()> {
        let body_block = self.builder.create_block();
        let latch_block = self.builder.create_block();
        let exit_block = self.builder.create_block();
        self.translate_branch(cond, body_block, exit_block)?;

        self.builder.switch_to_block(body_block);
        self.loops.push(LoopTargets {
            continue_block: latch_block,
            exit_block,
        });
        let result = self.translate_block(body);
        self.loops.pop();
        result?;
        self.builder.ins().jump(latch_block, &[]);

        self.builder.switch_to_block(latch_block);
        self.builder.seal_block(latch_block);
        self.translate_branch(cond, body_block, exit_block)?;

        self.builder.seal_block(body_block);
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
        let id = var;
        let LocalSlot::Scalar(var) = self.local(var)? else {
            return bad("range loop variable is not an i64");
        };
        let len_of = self.len_bound(&[start, end], end, body);
        let first = self.translate_expr(start)?;
        let end = self.translate_expr(end)?;
        // The loop variable is immutable, so it doubles as the counter. `i + 1` cannot
        // overflow: it only runs after `i < end <= i64::MAX`.
        self.def_var(var, first);
        self.bounds_versioned(id, first, end, body, &mut |t| {
            // In the copy whose vec indexes need no check, those are no branch either.
            let unroll = t.unrolls(body);
            t.with_reassoc(unroll, body, |t| {
                t.with_known_range(id, first, end, len_of, |t| {
                    t.counted_loop(var, end, unroll, &mut |t| t.translate_block(body))
                })
            })
        })
    }

    /// Lower a loop over `body` with `f`, its unrolled copies reassociated when `unroll` and
    /// the body is an accumulation ([`Reassoc`]); the state of an outer loop is put back after.
    fn with_reassoc<T>(
        &mut self,
        unroll: bool,
        body: &HirBlock,
        f: impl FnOnce(&mut Self) -> T,
    ) -> T {
        let mine = if unroll { reassociable(body) } else { None };
        let outer = std::mem::replace(&mut self.reassoc, mine);
        let done = f(self);
        self.reassoc = outer;
        done
    }

    /// The assignment to `place` as a copy of the reassociated accumulation lowers it (the
    /// operator, and the operand `e` of `p op= e` or `p = p op e`), when it is one and its
    /// store is not being lowered yet; the store is then the next one lowered, until
    /// [`Self::reassoc_end`].
    pub(crate) fn reassoc_begin<'e>(
        &mut self,
        place: &hir::Place,
        op: Option<BinOp>,
        value: &'e hir::Expr,
    ) -> Option<(BinOp, &'e hir::Expr)> {
        let r = self
            .reassoc
            .as_mut()
            .filter(|r| r.is(place) && !r.store_pending)?;
        r.store_pending = true;
        let operand = match (op, &value.kind) {
            (None, ExprKind::Binary { rhs, .. }) => &**rhs,
            _ => value,
        };
        Some((r.op, operand))
    }

    /// The reassociated assignment is lowered (see [`Self::reassoc_begin`]).
    pub(crate) fn reassoc_end(&mut self) {
        if let Some(r) = self.reassoc.as_mut() {
            r.store_pending = false;
        }
    }

    /// The store of the reassociated assignment in an unrolled copy ([`Reassoc`]): the group's
    /// first copy reads the place (after its operand, as a compound assignment does) and
    /// keeps it as the base; every copy stores `base op (its operands folded)`.
    pub(crate) fn reassoc_store(
        &mut self,
        target: PlaceRef,
        ty: &Type,
        op_span: Span,
        value: Value,
    ) -> LResult<()> {
        let (Some(r), Type::I64) = (self.reassoc.as_ref(), ty) else {
            return bad("a reassociated store outside its loop, or not of an i64");
        };
        let (op, folded) = (r.op, r.folded);
        let (base, sum) = match folded {
            None => (self.read_place(target, ty)?, value),
            Some((base, sum)) => {
                let ins = self.builder.ins();
                let sum = match op {
                    BinOp::BitXor => ins.bxor(sum, value),
                    BinOp::BitOr => ins.bor(sum, value),
                    BinOp::BitAnd => ins.band(sum, value),
                    _ => ins.iadd(sum, value),
                };
                (base, sum)
            }
        };
        if let Some(r) = self.reassoc.as_mut() {
            r.folded = Some((base, sum));
        }
        let v = self.binary_values(op, op_span, ty, base, sum)?;
        self.write_place(target, ty, v)
    }

    /// Whether a counted loop over `body` is unrolled ([`Self::counted_loop`]), on every
    /// Cranelift backend (the unrolled code is one version's, and a light loop calls nothing, so
    /// no reload can come between its copies): outside the plain copy of a versioned loop, for a small body of assignments and scalar
    /// `let`s whose expressions are one-cycle integer operations, locals, module variables,
    /// fields and array elements (and vec elements whose bounds the loop tested before it,
    /// `opt_bounds.rs`): no call, no branch (`if`, `&&`, a vec's bounds check), no
    /// inner loop, no divide, float arithmetic or multiply of a `var`. That is where the loop's own
    /// overhead is the bottleneck, which unrolling removes; measured on this project's Zen
    /// machines, a body that waits on a multiply's latency (the integer loop's `acc * 31`:
    /// 0.81 against 0.93 ns an iteration) or branches in every copy (a vec index loop: 0.62
    /// against 0.67) ran slower unrolled, and a module variable's `counter += i & 3` ran at
    /// 0.27 ns instead of 1.03.
    fn unrolls(&self, body: &HirBlock) -> bool {
        if self.checked.in_plain_copy() {
            return false;
        }
        let mut w = Unrollable {
            locals: &self.func.locals,
            in_bounds: &self.in_bounds,
            nodes: 0,
            ok: true,
        };
        walk_block(body, &mut w);
        w.ok && w.nodes <= MAX_UNROLLED_NODES
    }

    pub(crate) fn translate_for_each(
        &mut self,
        var: LocalId,
        array: &hir::Expr,
        body: &HirBlock,
    ) -> LResult<()> {
        if let Type::Vec(elem) = &array.ty {
            return self.translate_for_each_vec(var, array, elem, body);
        }
        let Type::Array(elem, len) = &array.ty else {
            return bad("for-each over a value that is not an array");
        };
        // Iterate over a snapshot taken now: the body may assign to the array it came from.
        // When the cells own references, the snapshot is an owned slot (so a `return` inside
        // releases it), and `x` takes its own reference to each element (releasing the
        // previous one).
        let owning = array.ty.owns_cells();
        // A module variable is copied straight into the snapshot (not through a temporary
        // copy first): nothing runs between the two.
        let (src, borrowed) = match &array.kind {
            hir::ExprKind::Global(id) => (self.global_addr(*id)?, true),
            _ => (self.translate_expr(array)?, false),
        };
        let snapshot = if owning {
            self.new_owned_slot(&array.ty)
        } else {
            self.new_slot(array.ty.cells())
        };
        let copy = self.slot_addr(snapshot);
        // An owned snapshot is zero (from entry or the last run of this loop): the owned cells
        // move in (a borrowed module variable's are retained).
        self.copy_cells(copy, src, array.ty.cells());
        if owning && borrowed {
            self.retain_cells(copy, &array.ty);
        }
        let slot = self.local(var)?;
        let counter = self.builder.declare_var(types::I64);
        let zero = self.builder.ins().iconst(types::I64, 0);
        self.def_var(counter, zero);
        let end = self.builder.ins().iconst(types::I64, i64::from(*len));
        let elem_bytes = elem.stride() as i64;
        let unroll = elem.is_scalar() && self.unrolls(body);
        self.with_reassoc(unroll, body, |t| {
            t.counted_loop(counter, end, unroll, &mut |t| {
                let i = t.builder.use_var(counter);
                // A packed bool's offset is its index.
                let offset = match elem_bytes {
                    1 => i,
                    _ => t.builder.ins().imul_imm_s(i, elem_bytes),
                };
                let addr = t.builder.ins().iadd(copy, offset);
                t.assign_loop_var(slot, elem, addr)?;
                t.translate_block(body)
            })
        })?;
        if owning {
            let copy = self.slot_addr(snapshot);
            self.release_cells(copy, &array.ty);
            self.zero_cells(copy, &array.ty);
        }
        Ok(())
    }

    /// Give the loop variable the element at `addr`. When the element may own references, the
    /// variable is owned: it takes its own copy, releasing what it held; otherwise the element
    /// is copied as is.
    fn assign_loop_var(&mut self, slot: LocalSlot, elem: &Type, addr: Value) -> LResult<()> {
        let owning = elem.owns_cells();
        match slot {
            LocalSlot::Scalar(x) if owning => {
                let v = self.load_value(addr, elem)?;
                let v = self.retain_value(elem, v);
                let old = self.builder.use_var(x);
                self.def_var(x, v);
                self.release_value(elem, old);
            }
            LocalSlot::Scalar(x) => {
                let v = self.load_value(addr, elem)?;
                self.def_var(x, v);
            }
            LocalSlot::Array(s) if owning => {
                let dst = self.slot_addr(s);
                let v = self.copy_retained(addr, elem);
                self.replace_cells(dst, elem, v);
            }
            LocalSlot::Array(s) => {
                let dst = self.slot_addr(s);
                self.copy_cells(dst, addr, elem.cells());
            }
            LocalSlot::Unit => {}
        }
        Ok(())
    }

    /// `for x in v` over a vec: the loop holds a reference to the vec as it was (a mutation of
    /// the variable in the body copies the block, copy-on-write), kept in a hidden owned
    /// variable so a `return` inside the loop releases it; `x` takes a reference to each element.
    fn translate_for_each_vec(
        &mut self,
        var: LocalId,
        array: &hir::Expr,
        elem: &Type,
        body: &HirBlock,
    ) -> LResult<()> {
        let snapshot = self.translate_expr(array)?;
        let hidden = self.builder.declare_var(types::I64);
        self.own_var(hidden, &array.ty);
        self.def_var(hidden, snapshot);
        let x = self.local(var)?;
        let borrowed = self.borrowed_let(var);
        let end = self.vec_len_inline(snapshot);
        // Read once: nothing changes the snapshot's block while the loop holds its count (a
        // mutation of the variable copies it first), and the body runs only when it has
        // elements.
        let data = self.vec_data_inline(snapshot);
        let counter = self.builder.declare_var(types::I64);
        let zero = self.builder.ins().iconst(types::I64, 0);
        self.def_var(counter, zero);
        let elem = elem.clone();
        let unroll = elem.is_scalar() && self.unrolls(body);
        self.with_reassoc(unroll, body, |t| {
            t.counted_loop(counter, end, unroll, &mut |t| {
                let i = t.builder.use_var(counter);
                // In range by construction: the body runs only while `i` < the snapshot's length,
                // so the snapshot is a block, and the loop's own count keeps it from changing.
                let addr = t.elem_addr(data, i, &elem);
                match (x, &elem) {
                    (LocalSlot::Array(s), Type::Array(..)) => {
                        // A boxed array: unboxed (retaining) into the variable's owned cells.
                        let dst = t.slot_addr(s);
                        let v = t.unbox_array_at(addr, &elem)?;
                        t.replace_cells(dst, &elem, v);
                    }
                    (LocalSlot::Scalar(x), _) if borrowed => {
                        // Borrowed from the snapshot (`lower_region.rs`, "Borrowed reads").
                        let v = t.load_value(addr, &elem)?;
                        t.def_var(x, v);
                    }
                    (LocalSlot::Scalar(_), _) => t.assign_loop_var(x, &elem, addr)?,
                    _ => return bad("a vec loop variable of the wrong shape"),
                }
                t.translate_block(body)
            })
        })?;
        self.release_value(&array.ty, snapshot);
        let zero = self.builder.ins().iconst(types::I64, 0);
        self.def_var(hidden, zero);
        Ok(())
    }

    /// `while counter < end { body; counter += 1 }`, with `continue` jumping to the increment.
    ///
    /// `unroll`: first, while at least [`UNROLL`] iterations are left, a loop of [`UNROLL`]
    /// copies of the body, each with its own step (the counter is the loop variable, so copy
    /// `k` sees `i + k`; `continue` goes to its copy's step, `break` out of the whole loop);
    /// then the plain loop for the rest. The same iterations in the same order: only the
    /// loop's overhead (the compare, the branch back, the moves of the counter) is paid once
    /// per [`UNROLL`] iterations, as optimizing compilers do (the native twins' loops are
    /// unrolled by four).
    fn counted_loop(
        &mut self,
        counter: Variable,
        end: Value,
        unroll: bool,
        body: &mut dyn FnMut(&mut Self) -> LResult<()>,
    ) -> LResult<()> {
        let exit_block = self.builder.create_block();
        if unroll {
            // `i < end - (UNROLL - 1)`: `UNROLL` iterations are left. Where `end - (UNROLL - 1)`
            // would wrap, none is: `i64::MIN`, which no `i` is below.
            let floor = self.builder.ins().iconst(types::I64, i64::MIN + UNROLL - 1);
            let room = self
                .builder
                .ins()
                .icmp(IntCC::SignedGreaterThanOrEqual, end, floor);
            let below = self.builder.ins().iadd_imm_s(end, -(UNROLL - 1));
            let never = self.builder.ins().iconst(types::I64, i64::MIN);
            let limit = self.builder.ins().select(room, below, never);
            let wide_block = self.builder.create_block();
            let rest_block = self.builder.create_block();
            let i = self.builder.use_var(counter);
            let trips = self.builder.ins().icmp(IntCC::SignedLessThan, i, limit);
            self.builder
                .ins()
                .brif(trips, wide_block, &[], rest_block, &[]);
            self.builder.switch_to_block(wide_block);
            if let Some(r) = self.reassoc.as_mut() {
                r.in_group = true;
                r.folded = None;
            }
            for _ in 0..UNROLL {
                // `i + k + 1 <= end`: no wrap.
                self.body_and_step(counter, exit_block, body)?;
            }
            if let Some(r) = self.reassoc.as_mut() {
                r.in_group = false;
            }
            let i = self.builder.use_var(counter);
            let more = self.builder.ins().icmp(IntCC::SignedLessThan, i, limit);
            self.builder
                .ins()
                .brif(more, wide_block, &[], rest_block, &[]);
            self.builder.seal_block(wide_block);
            self.builder.switch_to_block(rest_block);
            self.builder.seal_block(rest_block);
        }
        // Rotated: one test before the loop, then the step tests and branches back to the body,
        // so an iteration takes one taken branch instead of two (Cranelift does not rotate
        // loops itself). `continue` goes to the step.
        let body_block = self.builder.create_block();
        let i = self.builder.use_var(counter);
        let any = self.builder.ins().icmp(IntCC::SignedLessThan, i, end);
        self.builder
            .ins()
            .brif(any, body_block, &[], exit_block, &[]);

        self.builder.switch_to_block(body_block);
        let next = self.body_and_step(counter, exit_block, body)?;
        let more = self.builder.ins().icmp(IntCC::SignedLessThan, next, end);
        self.builder
            .ins()
            .brif(more, body_block, &[], exit_block, &[]);

        self.builder.seal_block(body_block);
        self.builder.switch_to_block(exit_block);
        self.builder.seal_block(exit_block);
        Ok(())
    }

    /// The body, with `continue` going to a step block after it, where the counter takes its
    /// next value (returned); `break` goes to `exit_block`. Ends in the step block.
    fn body_and_step(
        &mut self,
        counter: Variable,
        exit_block: Block,
        body: &mut dyn FnMut(&mut Self) -> LResult<()>,
    ) -> LResult<Value> {
        let step_block = self.builder.create_block();
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
        self.def_var(counter, next);
        Ok(next)
    }
}
