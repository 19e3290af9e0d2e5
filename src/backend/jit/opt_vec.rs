//! Vec locals whose length and data pointer are read once before a loop, not at every index
//! (every Cranelift backend).
//!
//! An index of a vec `v[i]` loads the vec's length and data pointer from its block, and a
//! store `v[i] = x` first makes the block unique (a null test, an atomic load of its count),
//! every time: any code between two indexes could have pushed, popped, replaced or shared `v`.
//!
//! # The rule
//! A loop hoists vec local `v` (of `vec<i64>`, `vec<f64>`, `vec<bool>`, or of handles such as
//! `vec<Body>`) when
//! - the loop (its head expressions and its body) calls nothing ([`loop_globals`]: no script,
//!   method, virtual, closure or host call, no `new`), so no other code runs in it; and
//! - every mention of `v` in the loop is an element read `v[e]`, a length `v.len()`, or (for
//!   scalar elements) the place of an element assignment `v[e] = x` / `v[e] op= x` or a push
//!   `v.push(x)`: no pop, no assignment to `v`, no read of `v` as a value (which would share its
//!   block), no `let` of it.
//!
//! Then nothing in the loop but its own pushes changes `v`'s block, its length or where its
//! elements are. A
//! handle read from `v` may be retained and released in the loop, and a release there may
//! free an object (the one place where runtime code runs in such a loop): freeing releases
//! what the object held, which changes at most the *count* of `v`'s block (never its length
//! or data, and never frees it: `v` owns a count of it, or borrows one that nothing can
//! release while `v` is in scope, such as a parameter's, held by the caller's local), and the
//! count is not what is hoisted. Before
//! the loop, when the loop stores into `v`, the block is made unique as the first store would
//! have done (`hot_vec_unique` when shared; the empty vec is left empty, as every index of it
//! raises anyway); then its length and data pointer are loaded once (0 and 0 for the empty
//! vec). Each index is still checked, at its own span, against that length, and a fault
//! still calls `hot_vec_at`, which raises the same `IndexOutOfRange` (the empty vec's length
//! is 0 either way). Making a vec unique is not observable (a copy of a shared block has the
//! same elements), so doing it before a loop that may store nothing changes no result; only
//! under a job's memory limit can the copy fail there, before the loop, where the plain
//! lowering would fail at the first store (a loop that only pushes does not copy before it:
//! see "Pushes").
//!
//! # Pushes
//! The cell, length and data pointer live in variables of their own through the loop; when the
//! loop pushes, so does the capacity ([`FunctionTranslator::hoisted_push`]). A push with room
//! stores the element and `len + 1` into the block, as the plain push does, and redefines the
//! length's variable: no load, and the block is current at every point (an error unwinding out
//! of the loop, the code after it, see the same vec as without the hoisting). Without room (the
//! buffer full, or the empty vec, whose hoisted capacity is 0) the cold path does what the plain
//! push does, `hot_vec_unique` then `hot_vec_push`, stores the cell into `v`, and reads the cell,
//! length, data and capacity again. A loop that pushes but stores no element does not make the
//! block unique before it: a shared block's capacity is hoisted as 0, so its first push takes
//! the cold path, whose `hot_vec_unique` copies it there (an out-of-memory error is raised at
//! that push, as without the hoisting). The block a push writes is unique: made so before the
//! loop or by the cold path, and nothing in the loop shares it.
//!
//! # Vec fields
//! A vec field `h.f` read through a handle local `h` the loop does not assign and that is known
//! valid for the whole loop (`self` in a method, or a handle the loop was versioned on:
//! `lower_region.rs`), used by the loop only as `h.f[e]`, `h.f[e] = x` / `h.f[e] op= x` (scalar
//! elements) and `h.f.len()`, is hoisted the same way: its cell is read from the field (made
//! unique and stored back when the loop stores), then its length and data pointer. The field
//! must not be mentioned otherwise on any object in the loop (no `x.f = ...`, push, pop or
//! whole read of a field with its index): nothing else can then replace, share or resize the
//! block the field holds. Two handles may be one object, so a field the loop reads through
//! several handles is hoisted only when none of them stores into it (making one unique after
//! the other read the old block would split them). Pushes onto a field are not hoisted.
//!
//! # Indexes below a length the loop cannot change
//! [`FunctionTranslator::len_bound`]: in `for i in c..x.len()` with a constant `c >= 0`, over a
//! `str` or `vec` local `x`, in a loop that calls nothing and whose body neither assigns `x` nor
//! pushes to or pops from it (element stores change no length), `i` stays below the length `x`
//! had when the range was made, and that length cannot change while the loop runs: with no call
//! no other code runs, so no other owner of the block can append to it in place or push to it.
//! `x.byte(i)` and a hoisted `x[i]` by the loop variable itself then have no bounds check (and
//! the string no null test: it is not empty). Only values read from the loop variable are
//! trusted (`i + 1` keeps its check), and only on the local the range named.

use std::collections::{HashMap, HashSet};

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value, types};
use cranelift_frontend::Variable;

use crate::lang::hir::{Block, Expr, ExprKind, LocalId, Place, PlaceKind, Stmt, StmtKind, Type};
use crate::lang::span::Span;
use crate::runtime::values::VecBlock;

use super::lower::{FunctionTranslator, LResult, LocalSlot, PlaceRef, bad, mem};
use super::lower_value::elem_kind;
use super::opt_globals::loop_globals;
use super::opt_walk::{Visitor, Walk, walk_block, walk_expr};

/// A vec local's block as read before the loop being lowered, in variables of its own (a
/// push redefines them; nothing else in the loop does).
#[derive(Clone, Copy)]
pub(crate) struct HoistedVec {
    /// The local's variable.
    var: Variable,
    /// The cell (0 for the empty vec), unique when the loop stores into it.
    cell: Variable,
    len: Variable,
    data: Variable,
    /// The buffer's capacity, when the loop pushes.
    cap: Option<Variable>,
    /// The bytes of an element (`ElemKind::bytes`).
    elem_bytes: usize,
}

impl HoistedVec {
    /// Whether the loop pushes to it (its capacity is hoisted too).
    pub(crate) fn pushes(&self) -> bool {
        self.cap.is_some()
    }

    /// The variable its indexes' known ranges are keyed by: the local's (a field's own).
    pub(crate) fn key(&self) -> Variable {
        self.var
    }
}

/// The vec locals hoisted by the loops being lowered, by their variable, and the vec fields,
/// by their handle local and field.
#[derive(Default)]
pub(crate) struct VecCache {
    vecs: Vec<(Variable, HoistedVec)>,
    fields: Vec<((LocalId, u32), HoistedVec)>,
}

/// How a loop uses one vec local.
#[derive(Default, Clone, Copy)]
struct Use {
    /// Mentioned in a way the rule does not allow.
    other: bool,
    /// The place of an element assignment.
    stores: bool,
    /// Pushed to.
    pushes: bool,
}

/// A vec field a loop may hoist: field `field` (of type `ty`) read through handle local
/// `handle`, used as `used`.
struct FieldVec {
    handle: LocalId,
    field: u32,
    ty: Type,
    used: Use,
}

/// The vec locals a loop (head expressions `head`, then `body`) may
/// hoist by the rule of the module docs, each with how the loop uses it, and the vec fields.
fn hoistable(head: &[&Expr], body: &Block) -> (Vec<(LocalId, Use)>, Vec<FieldVec>) {
    let mut w = VecWalk {
        uses: HashMap::new(),
        fields: HashMap::new(),
        field_other: HashSet::new(),
        assigned: HashSet::new(),
        unknown: false,
    };
    for e in head {
        walk_expr(e, &mut w);
    }
    walk_block(body, &mut w);
    if w.unknown {
        return (Vec::new(), Vec::new());
    }
    let mut found: Vec<(LocalId, Use)> = w.uses.into_iter().filter(|(_, u)| !u.other).collect();
    found.sort_by_key(|(id, _)| id.0);
    let mut fields: Vec<FieldVec> = w
        .fields
        .into_iter()
        .filter(|((h, f), _)| !w.field_other.contains(f) && !w.assigned.contains(h))
        .map(|((handle, field), (used, ty))| FieldVec {
            handle,
            field,
            ty,
            used,
        })
        .collect();
    fields.sort_by_key(|f| (f.handle.0, f.field));
    // Two handles may be one object: a field stored through one and hoisted through another
    // could be made unique (a new block) after the other read the old one. So a field read
    // through several handles is hoisted only when none of them stores into it.
    let split: HashSet<u32> = fields
        .iter()
        .filter(|f| {
            fields.iter().any(|g| {
                g.field == f.field && g.handle != f.handle && (g.used.stores || f.used.stores)
            })
        })
        .map(|f| f.field)
        .collect();
    fields.retain(|f| !split.contains(&f.field));
    (found, fields)
}

/// `(handle local, field)` when `e` is `h.f` of a vec a loop may hoist, `h` a local.
fn field_vec(e: &Expr) -> Option<(LocalId, u32)> {
    match &e.kind {
        ExprKind::Field(object, f) if hoistable_vec(&e.ty) => match object.kind {
            ExprKind::Local(h) => Some((h, *f)),
            _ => None,
        },
        _ => None,
    }
}

/// Whether a vec of this type has scalar elements (one cell each, owning nothing): the vecs
/// whose elements a hoisting loop may also store.
fn scalar_vec(ty: &Type) -> bool {
    matches!(ty, Type::Vec(elem) if matches!(**elem, Type::I64 | Type::F64 | Type::Bool))
}

/// Whether a loop may hoist a vec of this type: scalar elements, or handles (`vec<Body>`),
/// whose elements it may only read (a store would change two objects' counts).
fn hoistable_vec(ty: &Type) -> bool {
    scalar_vec(ty) || matches!(ty, Type::Vec(elem) if matches!(**elem, Type::Handle { .. }))
}

/// The local `e` reads, when it is a read of a vec local a loop may hoist.
fn vec_local(e: &Expr) -> Option<LocalId> {
    match e.kind {
        ExprKind::Local(id) if hoistable_vec(&e.ty) => Some(id),
        _ => None,
    }
}

/// The uses of every local a loop mentions (calls are `loop_globals`'s to refuse), and of the
/// vec fields read through handle locals.
struct VecWalk {
    uses: HashMap<LocalId, Use>,
    /// `(handle local, field)` → its uses and its type.
    fields: HashMap<(LocalId, u32), (Use, Type)>,
    /// Fields (by index, of any class) mentioned other than as a hoistable field's element
    /// or length: assigned, pushed, popped, read whole.
    field_other: HashSet<u32>,
    /// Locals assigned.
    assigned: HashSet<LocalId>,
    unknown: bool,
}

impl VecWalk {
    fn mention(&mut self, id: LocalId, allowed: bool, stores: bool) {
        let u = self.uses.entry(id).or_default();
        u.other |= !allowed;
        u.stores |= stores;
    }

    /// An allowed use of vec field `f` of handle local `h` (of type `ty`).
    fn mention_field(&mut self, (h, f): (LocalId, u32), ty: &Type, stores: bool) {
        let (u, _) = self
            .fields
            .entry((h, f))
            .or_insert_with(|| (Use::default(), ty.clone()));
        u.stores |= stores;
    }

    /// A push onto local `id`, a vec of scalars.
    fn push(&mut self, id: LocalId) {
        self.mention(id, true, false);
        if let Some(u) = self.uses.get_mut(&id) {
            u.pushes = true;
        }
    }
}

impl Visitor for VecWalk {
    fn stmt(&mut self, s: &Stmt) -> Walk {
        match &s.kind {
            StmtKind::Let { local: var, .. }
            | StmtKind::ForRange { var, .. }
            | StmtKind::ForStep { var, .. }
            | StmtKind::ForEach { var, .. } => self.mention(*var, false, false),
            StmtKind::Assign { place, value, .. } => {
                // `v[e] = x` / `v[e] op= x` of a vec local of scalars: an allowed store (one
                // into a vec of handles falls to the place walk, which refuses its root).
                if let PlaceKind::Index { base, index } = &place.kind
                    && let PlaceKind::Local(id) = base.kind
                    && scalar_vec(&base.ty)
                {
                    self.mention(id, true, true);
                    walk_expr(index, self);
                    walk_expr(value, self);
                    return Walk::Skip;
                }
                // `h.f[e] = x` of a vec field of scalars through a handle local: the same.
                if let PlaceKind::Index { base, index } = &place.kind
                    && let PlaceKind::Field { object, field } = &base.kind
                    && let ExprKind::Local(h) = object.kind
                    && scalar_vec(&base.ty)
                {
                    self.mention_field((h, *field), &base.ty, true);
                    walk_expr(index, self);
                    walk_expr(value, self);
                    return Walk::Skip;
                }
            }
            _ => {}
        }
        Walk::Children
    }

    /// A place in any role other than an element assignment's of a vec local: its root local
    /// is mentioned in a way the rule does not allow.
    fn place(&mut self, p: &Place, written: bool) -> Walk {
        match p.kind {
            PlaceKind::Local(id) => {
                self.mention(id, false, false);
                if written {
                    self.assigned.insert(id);
                }
            }
            PlaceKind::Field { field, .. } => {
                self.field_other.insert(field);
            }
            _ => {}
        }
        Walk::Children
    }

    fn expr(&mut self, e: &Expr) -> Walk {
        match &e.kind {
            ExprKind::VecPush(place, x) if scalar_vec(&place.ty) => {
                if let PlaceKind::Local(id) = place.kind {
                    self.push(id);
                    walk_expr(x, self);
                    return Walk::Skip;
                }
                Walk::Children
            }
            ExprKind::Index(a, i) if field_vec(a).is_some() => {
                if let Some(key) = field_vec(a) {
                    self.mention_field(key, &a.ty, false);
                }
                walk_expr(i, self);
                Walk::Skip
            }
            ExprKind::Len(a) if field_vec(a).is_some() => {
                if let Some(key) = field_vec(a) {
                    self.mention_field(key, &a.ty, false);
                }
                Walk::Skip
            }
            ExprKind::Field(_, f) => {
                self.field_other.insert(*f);
                Walk::Children
            }
            ExprKind::Index(a, i) if vec_local(a).is_some() => {
                if let Some(id) = vec_local(a) {
                    self.mention(id, true, false);
                }
                walk_expr(i, self);
                Walk::Skip
            }
            ExprKind::Len(a) if vec_local(a).is_some() => {
                if let Some(id) = vec_local(a) {
                    self.mention(id, true, false);
                }
                Walk::Skip
            }
            ExprKind::Local(id) => {
                self.mention(*id, false, false);
                Walk::Skip
            }
            _ => Walk::Children,
        }
    }

    fn unknown(&mut self) {
        self.unknown = true;
    }
}

/// Whether a loop body changes the length of local `id`, a vec or a string: an assignment to
/// it (`x = e`, `x += s`), a push or a pop. An element store `x[e] = v` does not.
struct LenWalk {
    id: LocalId,
    changed: bool,
}

impl Visitor for LenWalk {
    fn stmt(&mut self, s: &Stmt) -> Walk {
        if let StmtKind::Assign { place, value, .. } = &s.kind
            && let PlaceKind::Index { base, index } = &place.kind
            && matches!(base.kind, PlaceKind::Local(id) if id == self.id)
        {
            walk_expr(index, self);
            walk_expr(value, self);
            return Walk::Skip;
        }
        Walk::Children
    }

    fn place(&mut self, p: &Place, written: bool) -> Walk {
        self.changed |= written && matches!(p.kind, PlaceKind::Local(id) if id == self.id);
        Walk::Children
    }

    fn unknown(&mut self) {
        self.changed = true;
    }
}

impl FunctionTranslator<'_, '_> {
    /// Lower a loop with the vec locals the rule of the module docs allows hoisted.
    pub(crate) fn with_hoisted_vecs<T>(
        &mut self,
        head: &[&Expr],
        body: &Block,
        lower: impl FnOnce(&mut Self) -> LResult<T>,
    ) -> LResult<T> {
        if loop_globals(self.env.program, head, body).is_none() {
            return lower(self);
        }
        let mut added = 0;
        let (locals, fields) = hoistable(head, body);
        for (id, used) in locals {
            let Ok(LocalSlot::Scalar(var)) = self.local(id) else {
                continue;
            };
            if self.hoisted_vec_var(var).is_some() {
                continue;
            }
            let ty = self.local_type(id)?;
            let hoisted = self.hoist_vec(var, PlaceRef::Var(var), &ty, used)?;
            self.vec_cache.vecs.push((var, hoisted));
            added += 1;
        }
        let mut added_fields = 0;
        for f in fields {
            // Only through a handle known valid for the whole loop (`lower_region.rs`): its
            // field's address is the same at every iteration.
            let Some(c) = self.checked_local(f.handle) else {
                continue;
            };
            if self.hoisted_field(f.handle, f.field).is_some() {
                continue;
            }
            let addr = self.checked_field(c, f.field);
            // A variable of its own, never defined: the key its indexes' known ranges use.
            let key = self.builder.declare_var(types::I64);
            let hoisted = self.hoist_vec(key, PlaceRef::Mem(addr), &f.ty, f.used)?;
            self.vec_cache.fields.push(((f.handle, f.field), hoisted));
            added_fields += 1;
        }
        let result = lower(self);
        let kept = self.vec_cache.vecs.len() - added;
        self.vec_cache.vecs.truncate(kept);
        let kept = self.vec_cache.fields.len() - added_fields;
        self.vec_cache.fields.truncate(kept);
        result
    }

    /// The hoisted block of vec field `field` read through handle local `handle`, if the loop
    /// being lowered hoisted it.
    pub(crate) fn hoisted_field(&self, handle: LocalId, field: u32) -> Option<HoistedVec> {
        self.vec_cache
            .fields
            .iter()
            .find(|(k, _)| *k == (handle, field))
            .map(|(_, h)| *h)
    }

    /// Before the loop: make the vec in `var` unique if the loop stores into it and it is not
    /// empty, then read its length and data pointer (and its capacity, if the loop pushes).
    /// `var` is the local's variable (for a field, a key of its own), `place` where the cell
    /// is.
    fn hoist_vec(
        &mut self,
        var: Variable,
        place: PlaceRef,
        ty: &Type,
        used: Use,
    ) -> LResult<HoistedVec> {
        let cell = self.read_place(place, ty)?;
        let cell = if used.stores {
            let unique_block = self.builder.create_block();
            let joined = self.builder.create_block();
            self.builder.append_block_param(joined, types::I64);
            let null = self.builder.ins().icmp_imm_s(IntCC::Equal, cell, 0);
            self.builder
                .ins()
                .brif(null, joined, &[cell.into()], unique_block, &[]);
            self.builder.switch_to_block(unique_block);
            self.builder.seal_block(unique_block);
            let unique = self.unique_vec_at(place, ty)?;
            self.builder.ins().jump(joined, &[unique.into()]);
            self.builder.switch_to_block(joined);
            self.builder.seal_block(joined);
            self.builder.block_params(joined)[0]
        } else {
            cell
        };
        let load_block = self.builder.create_block();
        let read = self.builder.create_block();
        let offsets: &[i32] = match used.pushes {
            true => &[
                VecBlock::LEN as i32,
                VecBlock::DATA as i32,
                VecBlock::CAP as i32,
            ],
            false => &[VecBlock::LEN as i32, VecBlock::DATA as i32],
        };
        for _ in offsets {
            self.builder.append_block_param(read, types::I64);
        }
        let zero = self.builder.ins().iconst(types::I64, 0);
        let null = self.builder.ins().icmp_imm_s(IntCC::Equal, cell, 0);
        let zeros: Vec<_> = offsets.iter().map(|_| zero.into()).collect();
        self.builder.ins().brif(null, read, &zeros, load_block, &[]);
        self.builder.switch_to_block(load_block);
        self.builder.seal_block(load_block);
        let mut loaded: Vec<_> = offsets
            .iter()
            .map(|&at| self.builder.ins().load(types::I64, mem(), cell, at))
            .collect();
        if used.pushes && !used.stores {
            // Not made unique before the loop (a copy there would be made, and could fail, where
            // no push may run): a shared block has no room, so its first push copies it, in the
            // cold path, at its own place. Acquire, as `hot_vec_unique`.
            let refs = self.builder.ins().iadd_imm_s(cell, VecBlock::REFS as i64);
            let refs = self.builder.ins().atomic_load(types::I64, mem(), refs);
            let unique = self.builder.ins().icmp_imm_s(IntCC::Equal, refs, 1);
            loaded[2] = self.builder.ins().select(unique, loaded[2], zero);
        }
        let loaded: Vec<_> = loaded.into_iter().map(Into::into).collect();
        self.builder.ins().jump(read, &loaded);
        self.builder.switch_to_block(read);
        self.builder.seal_block(read);
        let params = self.builder.block_params(read).to_vec();
        let mut own = |v: Value| {
            let x = self.builder.declare_var(types::I64);
            self.builder.def_var(x, v);
            x
        };
        Ok(HoistedVec {
            var,
            cell: own(cell),
            len: own(params[0]),
            data: own(params[1]),
            cap: params.get(2).map(|&c| own(c)),
            elem_bytes: match ty {
                Type::Vec(elem) => elem_kind(elem).bytes(),
                _ => 8,
            },
        })
    }

    /// The variable of local `x` when a counted loop's `end` is `x.len()` of a vec or string
    /// local whose length the loop cannot change: the loop calls nothing ([`loop_globals`]:
    /// no other code runs in it, so no other owner of the block can append to it in place or
    /// push to it), and its `body` neither assigns `x` nor pushes to or pops from it
    /// ([`LenWalk`]). Its index by the loop variable is then in range
    /// ([`FunctionTranslator::with_known_range`]).
    pub(crate) fn len_bound(&self, head: &[&Expr], end: &Expr, body: &Block) -> Option<Variable> {
        let ExprKind::Len(of) = &end.kind else {
            return None;
        };
        let ExprKind::Local(id) = of.kind else {
            return None;
        };
        if !matches!(of.ty, Type::Vec(_) | Type::Str) {
            return None;
        }
        loop_globals(self.env.program, head, body)?;
        let mut w = LenWalk { id, changed: false };
        walk_block(body, &mut w);
        if w.changed {
            return None;
        }
        self.scalar_var_of(of)
    }

    /// The hoisted block of the vec in local `e` (an `ExprKind::Local`), if the loop being
    /// lowered hoisted it.
    pub(crate) fn hoisted_vec_of(&self, e: &Expr) -> Option<HoistedVec> {
        if let Some((handle, field)) = field_vec(e) {
            return self.hoisted_field(handle, field);
        }
        self.scalar_var_of(e)
            .and_then(|var| self.hoisted_vec_var(var))
    }

    /// The variable of `e` when it is a read of a local held in one (`ExprKind::Local`).
    pub(crate) fn scalar_var_of(&self, e: &Expr) -> Option<Variable> {
        let ExprKind::Local(id) = e.kind else {
            return None;
        };
        match self.local(id) {
            Ok(LocalSlot::Scalar(var)) => Some(var),
            _ => None,
        }
    }

    /// The hoisted block of the vec in variable `var`, if any.
    pub(crate) fn hoisted_vec_var(&self, var: Variable) -> Option<HoistedVec> {
        self.vec_cache
            .vecs
            .iter()
            .find(|(v, _)| *v == var)
            .map(|(_, h)| *h)
    }

    /// The address of element `idx` of a hoisted vec, checked at `span` against its length
    /// (a fault raises through `hot_vec_at`, as the plain index does).
    pub(crate) fn hoisted_elem_addr(&mut self, v: HoistedVec, idx: Value, span: Span) -> Value {
        let data = self.builder.use_var(v.data);
        if self.below_len_of(idx, v.var) {
            // A loop variable below this vec's length, which the loop cannot change.
            return self.scaled_addr(data, idx, v.elem_bytes);
        }
        let len = self.builder.use_var(v.len);
        let out = self
            .builder
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, idx, len);
        let helper = self.env.helpers.vec_at;
        let cell = self.builder.use_var(v.cell);
        self.cold_raise(out, |t| {
            let (start, end) = t.span_args(span);
            t.call_helper(helper, &[cell, idx, start, end]);
        });
        self.scaled_addr(data, idx, v.elem_bytes)
    }

    /// The length of a hoisted vec.
    pub(crate) fn hoisted_len(&mut self, v: HoistedVec) -> Value {
        self.builder.use_var(v.len)
    }

    /// `v.push(x)` onto a hoisted vec the loop pushes to, `x` a scalar's cell: while the
    /// buffer has room, the element goes to `data + bytes * len` and `len + 1` both into the
    /// block (which stays current for every reader: an error unwinding out of the loop, the
    /// code after it) and into the length's variable, with no load of the block; else a cold
    /// call of `hot_vec_unique` (the empty vec's first push makes its block) and `hot_vec_push`
    /// (which grows the buffer or raises out of memory), after which the cell, length, data
    /// and capacity are read again. Only for a vec the loop pushes to ([`HoistedVec::pushes`]).
    pub(crate) fn hoisted_push(&mut self, v: HoistedVec, x: Value, elem: &Type) -> LResult<()> {
        let Some(cap) = v.cap else {
            return bad("a push onto a vec hoisted by a loop that does not push");
        };
        let len = self.builder.use_var(v.len);
        let room = self.builder.use_var(cap);
        let full = self
            .builder
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, len, room);
        let fast = |t: &mut Self| {
            let data = t.builder.use_var(v.data);
            let addr = t.scaled_addr(data, len, v.elem_bytes);
            t.store_elem_cell(x, addr, v.elem_bytes);
            let grown = t.builder.ins().iadd_imm_s(len, 1);
            let cell = t.builder.use_var(v.cell);
            t.builder
                .ins()
                .store(mem(), grown, cell, VecBlock::LEN as i32);
            t.builder.def_var(v.len, grown);
            None
        };
        let slow = |t: &mut Self| {
            let cell = t.builder.use_var(v.cell);
            let kind = t.builder.ins().iconst(types::I64, elem_kind(elem) as i64);
            let unique = t.env.helpers.vec_unique;
            let cell = t.call_helper(unique, &[cell, kind])[0];
            t.def_var(v.var, cell);
            let push = t.env.helpers.vec_push;
            t.call_helper(push, &[cell, x]);
            t.builder.def_var(v.cell, cell);
            for (var, at) in [
                (v.len, VecBlock::LEN),
                (v.data, VecBlock::DATA),
                (cap, VecBlock::CAP),
            ] {
                let field = t.builder.ins().load(types::I64, mem(), cell, at as i32);
                t.builder.def_var(var, field);
            }
            None
        };
        self.cold_else(full, fast, slow);
        Ok(())
    }
}
