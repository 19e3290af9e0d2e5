//! Handle checks once per region, on `jit` and `jit-opt`: `self` never re-checked inside its
//! method, and the handles a loop reaches through unassigned locals checked once before it.
//!
//! # The rule that makes it sound
//! A handle's check (null, generation, detached: `check_object_inline`) can fail later only if
//! the object is destroyed or detached, and an object's state block (what `[shell + STATE]`
//! points at on `jit`) can change only if a reload migrates it. None of these can happen
//! *because of* the script code of a running call:
//!
//! - destroy and detach are host operations (`Runtime::destroy`, `Runtime::detach`); script code
//!   cannot name them, and the host table's functions (`runtime::host`) do neither;
//! - a reload, an unload and a collect quiesce first: they wait until no other thread is inside
//!   a call, and are refused from inside one (`ReloadError::InsideCall`). So no state block is
//!   replaced or freed while a call runs: a state block dropped by a `destroy` on another thread
//!   is kept until the next quiescent point, or until its last handle goes, and the code holds a
//!   reference for every handle it checked (a local's own, or the caller's for a parameter);
//! - a reference the code holds keeps the shell allocated, whatever else runs.
//!
//! So, within one activation of a script function, a handle held in a local that the code does
//! not assign stays as valid as it was when it was checked, across calls too, and its state
//! pointer stays the same. A destroy or detach by *another* thread while a call runs is a race
//! with no order to the call's accesses: the call finishes on the state it had (still
//! allocated), and the next check made after it (the next call on the object, the next loop
//! entry, the next access through another handle) sees it. This is also how a host call through
//! a handle behaves: the border checks the object once, at entry.
//!
//! # What the lowering does with it
//! - **`self`** is checked by whoever calls the method (the receiver's check at a script call
//!   site; `Handle::get` and the fused or direct border for a host call), so its accesses inside
//!   the method are not checked again; on `jit` its state pointer is loaded once at entry.
//! - **Loops** (`versioned_loop`): the handle locals a loop uses as an object (`p.f`, `p.f = v`,
//!   `p.m()`) and does not assign are tested before it, without raising. When all pass, the loop
//!   runs a copy lowered with those handles known to be valid (no check inside, the state
//!   pointer loaded once); otherwise it runs the plain copy, whose checks raise at their own
//!   spans and in their own order, exactly as before. Hoisting a raising check would report an
//!   error the loop might never reach (a loop that runs zero times) or before an earlier one.
//!   The plain copy versions no inner loop (the code grows at most by one copy per level).
//!
//! The checks inside one statement are not repeated either: `o.f = value` checks `o` once,
//! before the value (whose calls cannot invalidate it, by the rule above).
//!
//! # Borrowed reads
//! Reading a handle field takes a reference (a retain, and a release after use) because code
//! running meanwhile could store into the field and free the object. Where nothing can, the
//! field's own reference is borrowed instead, as a variable's is: `x.w.f` with `x` known valid
//! (nothing runs between the two reads), and the receiver of `x.w.m(args)` when the call is
//! direct and neither the arguments nor `m`'s body can store into a field (other than a scalar
//! one) or a module variable, or call anything but host functions ([`releases_nothing`]).
//! As everywhere in the runtime, this assumes no other thread writes the same object's handle
//! fields while the call runs (two threads storing into one field would release its old value
//! twice).

use std::collections::HashSet;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value, types};

use crate::lang::hir::{
    Block, Expr, ExprKind, FuncId, LocalId, Place, PlaceKind, Program, Stmt, StmtKind, Type,
};
use crate::runtime::class::DETACHED_KEY;
use crate::runtime::object::Object;

use super::lower::{FunctionTranslator, LResult, LocalSlot, mem};
use super::lower_object::ADDR_BITS;

/// Loops larger than this many HIR nodes are not versioned (compile time and code size).
const MAX_VERSIONED_NODES: usize = 600;

/// A handle known to be valid here: its shell, and on `jit` the state block's first cell.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checked {
    pub shell: Value,
    pub state: Option<Value>,
}

/// The handles known valid in the code being lowered (see the module docs).
#[derive(Default)]
pub(crate) struct CheckedHandles {
    entries: Vec<(LocalId, Checked)>,
    /// Lowering the plain copy of a versioned loop: inner loops are not versioned.
    plain_copy: bool,
}

impl CheckedHandles {
    fn get(&self, id: LocalId) -> Option<Checked> {
        self.entries
            .iter()
            .rev()
            .find(|(l, _)| *l == id)
            .map(|(_, c)| *c)
    }
}

impl FunctionTranslator<'_, '_> {
    /// The checked handle `object` reads, when it is a local known valid here.
    pub(crate) fn checked_handle(&self, object: &Expr) -> Option<Checked> {
        match object.kind {
            ExprKind::Local(id) => self.checked.get(id),
            _ => None,
        }
    }

    /// A method's entry: `self` (local 0) is the shell the caller checked.
    pub(crate) fn enter_method(&mut self, shell: Value) {
        let state = self.state_of(shell);
        self.checked
            .entries
            .push((LocalId(0), Checked { shell, state }));
    }

    /// The state pointer of a checked shell on `jit` (`None` for an inline object of
    /// `jit-opt`, whose cells follow the shell).
    fn state_of(&mut self, shell: Value) -> Option<Value> {
        (!self.env.fixed).then(|| {
            self.builder
                .ins()
                .load(types::I64, mem(), shell, Object::STATE as i32)
        })
    }

    /// Address of field `field` of a checked handle.
    pub(crate) fn checked_field(&mut self, c: Checked, field: u32) -> Value {
        match c.state {
            Some(state) => self.builder.ins().iadd_imm_s(state, i64::from(field) * 8),
            None => self.field_addr(c.shell, field),
        }
    }

    /// The shell of a non-null cell (the low 48 bits: two shifts, as a 64-bit mask would be a
    /// constant-pool load on x86-64) and its generation tag.
    pub(crate) fn cell_parts(&mut self, cell: Value) -> (Value, Value) {
        let high = self.builder.ins().ishl_imm_s(cell, 64 - ADDR_BITS);
        let shell = self.builder.ins().ushr_imm_u(high, 64 - ADDR_BITS);
        let tag = self.builder.ins().ushr_imm_u(cell, ADDR_BITS);
        (shell, tag)
    }

    /// True (an `i8`) when the shell of a non-null cell is stale or detached. A stale shell is
    /// still allocated (the cell owns a reference), so its key can be read.
    pub(crate) fn shell_invalid(&mut self, shell: Value, tag: Value) -> Value {
        let generation = self
            .builder
            .ins()
            .uload16(types::I64, mem(), shell, Object::GEN as i32);
        let stale = self.builder.ins().icmp(IntCC::NotEqual, tag, generation);
        let key = self
            .builder
            .ins()
            .load(types::I64, mem(), shell, Object::KEY as i32);
        let detached = self
            .builder
            .ins()
            .icmp_imm_s(IntCC::Equal, key, DETACHED_KEY as i64);
        self.builder.ins().bor(stale, detached)
    }

    /// Lower a loop (`lower`, which may run twice) versioned on the handles it uses (see the
    /// module docs). `head` are the loop's own expressions (condition, bounds, array).
    pub(crate) fn versioned_loop(
        &mut self,
        head: &[&Expr],
        body: &Block,
        lower: &mut dyn FnMut(&mut Self) -> LResult<()>,
    ) -> LResult<()> {
        if self.checked.plain_copy {
            return lower(self);
        }
        let mut uses = LoopUses::default();
        for e in head {
            uses.expr(e);
        }
        uses.block(body);
        if uses.unknown || uses.nodes > MAX_VERSIONED_NODES {
            return lower(self);
        }
        let mut candidates = Vec::new();
        for id in uses.objects {
            if uses.assigned.contains(&id)
                || self.checked.get(id).is_some()
                || candidates.iter().any(|(c, _)| *c == id)
            {
                continue;
            }
            let is_handle = matches!(self.local_type(id)?, Type::Handle { .. });
            if let (true, LocalSlot::Scalar(var)) = (is_handle, self.local(id)?) {
                candidates.push((id, var));
            }
        }
        if candidates.is_empty() {
            return lower(self);
        }
        let plain_block = self.builder.create_block();
        let mut cells = Vec::with_capacity(candidates.len());
        for &(id, var) in &candidates {
            let cell = self.builder.use_var(var);
            let next = self.builder.create_block();
            self.builder.ins().brif(cell, next, &[], plain_block, &[]);
            self.builder.switch_to_block(next);
            self.builder.seal_block(next);
            let (shell, tag) = self.cell_parts(cell);
            let bad = self.shell_invalid(shell, tag);
            let next = self.builder.create_block();
            self.builder.ins().brif(bad, plain_block, &[], next, &[]);
            self.builder.switch_to_block(next);
            self.builder.seal_block(next);
            cells.push((id, shell));
        }
        // Every handle is valid: the copy with them checked.
        let merge_block = self.builder.create_block();
        let depth = self.checked.entries.len();
        for (id, shell) in cells {
            let state = self.state_of(shell);
            self.checked.entries.push((id, Checked { shell, state }));
        }
        let fast = lower(self);
        self.checked.entries.truncate(depth);
        fast?;
        self.builder.ins().jump(merge_block, &[]);
        // One is not: the plain copy.
        self.builder.seal_block(plain_block);
        self.builder.switch_to_block(plain_block);
        self.checked.plain_copy = true;
        let plain = lower(self);
        self.checked.plain_copy = false;
        plain?;
        self.builder.ins().jump(merge_block, &[]);
        self.builder.switch_to_block(merge_block);
        self.builder.seal_block(merge_block);
        Ok(())
    }
}

/// What a loop does with its locals: the ones it uses as an object, the ones it assigns.
#[derive(Default)]
struct LoopUses {
    objects: Vec<LocalId>,
    assigned: HashSet<LocalId>,
    nodes: usize,
    /// A construct this walk does not know: the loop is not versioned.
    unknown: bool,
}

impl LoopUses {
    fn object(&mut self, e: &Expr) {
        if let ExprKind::Local(id) = e.kind {
            self.objects.push(id);
        }
        self.expr(e);
    }

    fn block(&mut self, b: &Block) {
        for s in &b.stmts {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        self.nodes += 1;
        match &s.kind {
            StmtKind::Let { local, init } => {
                self.assigned.insert(*local);
                self.expr(init);
            }
            StmtKind::Assign { place, value, .. } => {
                self.place(place, true);
                self.expr(value);
            }
            StmtKind::Expr(e) => self.expr(e),
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                self.expr(cond);
                self.block(then_block);
                if let Some(b) = else_block {
                    self.block(b);
                }
            }
            StmtKind::While { cond, body } => {
                self.expr(cond);
                self.block(body);
            }
            StmtKind::ForRange {
                var,
                start,
                end,
                body,
            } => {
                self.assigned.insert(*var);
                self.expr(start);
                self.expr(end);
                self.block(body);
            }
            StmtKind::ForEach { var, array, body } => {
                self.assigned.insert(*var);
                self.expr(array);
                self.block(body);
            }
            StmtKind::Break | StmtKind::Continue => {}
            StmtKind::Return(v) => {
                if let Some(v) = v {
                    self.expr(v);
                }
            }
            #[allow(unreachable_patterns)]
            _ => self.unknown = true,
        }
    }

    /// A place; `root_assigned`: the local it is rooted at is written (an assignment, a push).
    fn place(&mut self, p: &Place, root_assigned: bool) {
        self.nodes += 1;
        match &p.kind {
            PlaceKind::Local(id) => {
                if root_assigned {
                    self.assigned.insert(*id);
                }
            }
            PlaceKind::Global(_) => {}
            // `o.f = v` writes the object, not the local holding its handle.
            PlaceKind::Field { object, .. } => self.object(object),
            PlaceKind::Index { base, index } => {
                self.place(base, root_assigned);
                self.expr(index);
            }
        }
    }

    fn expr(&mut self, e: &Expr) {
        self.nodes += 1;
        match &e.kind {
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Local(_)
            | ExprKind::Global(_)
            | ExprKind::Null
            | ExprKind::VecNew
            | ExprKind::StrLit(_)
            | ExprKind::New(_) => {}
            ExprKind::Unary(_, x)
            | ExprKind::Cast(x)
            | ExprKind::Len(x)
            | ExprKind::Assert(x)
            | ExprKind::NonNull(x)
            | ExprKind::ToStr(x)
            | ExprKind::ArrayRepeat(x, _) => self.expr(x),
            ExprKind::Field(x, _) => self.object(x),
            ExprKind::Binary { lhs, rhs, .. }
            | ExprKind::Logical(_, lhs, rhs)
            | ExprKind::Index(lhs, rhs) => {
                self.expr(lhs);
                self.expr(rhs);
            }
            ExprKind::ArrayLit(xs)
            | ExprKind::Call(_, xs)
            | ExprKind::CallNative(_, xs)
            | ExprKind::Closure { captures: xs, .. } => {
                for x in xs {
                    self.expr(x);
                }
            }
            ExprKind::MethodCall { object, args, .. }
            | ExprKind::VirtualCall { object, args, .. } => {
                self.object(object);
                for x in args {
                    self.expr(x);
                }
            }
            ExprKind::CallClosure(callee, args) => {
                self.expr(callee);
                for x in args {
                    self.expr(x);
                }
            }
            ExprKind::VecPush(place, x) => {
                self.place(place, true);
                self.expr(x);
            }
            ExprKind::VecPop(place) => self.place(place, true),
            #[allow(unreachable_patterns)]
            _ => self.unknown = true,
        }
    }
}

/// Whether evaluating `args` and then running `func` (a script function called directly) can
/// release a reference that the caller does not own: only a store into a field or a module
/// variable (or a mutation of a vec there) gives one up, and only calls could reach other
/// code. So: no call of any kind but host functions, no `new`, and every assignment and vec
/// mutation rooted at a local, in the arguments and in the callee's body (its own locals hold
/// their own references). Unknown constructs count as releasing.
pub(crate) fn releases_nothing(program: &Program, func: FuncId, args: &[Expr]) -> bool {
    let mut w = ReleaseWalk { ok: true };
    for a in args {
        w.expr(a);
    }
    if let Some(f) = program.functions.get(func.index()) {
        w.block(&f.body);
    } else {
        return false;
    }
    w.ok
}

struct ReleaseWalk {
    ok: bool,
}

impl ReleaseWalk {
    fn block(&mut self, b: &Block) {
        for s in &b.stmts {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Let { init, .. } => self.expr(init),
            StmtKind::Assign { place, value, .. } => {
                self.place(place);
                self.expr(value);
            }
            StmtKind::Expr(e) => self.expr(e),
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                self.expr(cond);
                self.block(then_block);
                if let Some(b) = else_block {
                    self.block(b);
                }
            }
            StmtKind::While { cond, body } => {
                self.expr(cond);
                self.block(body);
            }
            StmtKind::ForRange {
                start, end, body, ..
            } => {
                self.expr(start);
                self.expr(end);
                self.block(body);
            }
            StmtKind::ForEach { array, body, .. } => {
                self.expr(array);
                self.block(body);
            }
            StmtKind::Break | StmtKind::Continue => {}
            StmtKind::Return(v) => {
                if let Some(v) = v {
                    self.expr(v);
                }
            }
            #[allow(unreachable_patterns)]
            _ => self.ok = false,
        }
    }

    /// A place written: rooted at a local (its indexes are expressions), or a scalar field
    /// (storing an `i64`, `f64` or `bool` gives up no reference).
    fn place(&mut self, p: &Place) {
        match &p.kind {
            PlaceKind::Local(_) => {}
            PlaceKind::Index { base, index } => {
                self.place(base);
                self.expr(index);
            }
            PlaceKind::Field { object, .. }
                if matches!(p.ty, Type::I64 | Type::F64 | Type::Bool) =>
            {
                self.expr(object)
            }
            PlaceKind::Global(_) | PlaceKind::Field { .. } => self.ok = false,
        }
    }

    fn expr(&mut self, e: &Expr) {
        if !self.ok {
            return;
        }
        match &e.kind {
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Local(_)
            | ExprKind::Global(_)
            | ExprKind::Null
            | ExprKind::VecNew
            | ExprKind::StrLit(_) => {}
            ExprKind::Unary(_, x)
            | ExprKind::Cast(x)
            | ExprKind::Len(x)
            | ExprKind::Assert(x)
            | ExprKind::NonNull(x)
            | ExprKind::ToStr(x)
            | ExprKind::ArrayRepeat(x, _)
            | ExprKind::Field(x, _) => self.expr(x),
            ExprKind::Binary { lhs, rhs, .. }
            | ExprKind::Logical(_, lhs, rhs)
            | ExprKind::Index(lhs, rhs) => {
                self.expr(lhs);
                self.expr(rhs);
            }
            ExprKind::ArrayLit(xs) | ExprKind::CallNative(_, xs) => {
                for x in xs {
                    self.expr(x);
                }
            }
            ExprKind::VecPush(place, x) => {
                self.place(place);
                self.expr(x);
            }
            ExprKind::VecPop(place) => self.place(place),
            // Calls, `new`, closures (their captures are fine, but a closure call is not), and
            // anything this walk does not know.
            #[allow(unreachable_patterns)]
            _ => self.ok = false,
        }
    }
}

impl FunctionTranslator<'_, '_> {
    /// `x.f` where `x` is known valid here: the cell of field `f`, *not* retained. Only for a
    /// use that ends before any code that could store into `x.f` runs (see `lower_object.rs`).
    pub(crate) fn borrowed_field_cell(&mut self, object: &Expr) -> LResult<Option<Value>> {
        let ExprKind::Field(inner, field) = &object.kind else {
            return Ok(None);
        };
        if !object.ty.is_handle() {
            return Ok(None);
        }
        let Some(c) = self.checked_handle(inner) else {
            return Ok(None);
        };
        let addr = self.checked_field(c, *field);
        self.load_value(addr, &object.ty).map(Some)
    }
}
