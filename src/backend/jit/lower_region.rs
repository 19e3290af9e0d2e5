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
//! - **`let x = new C()`**: the handle `new` returns is valid (a fresh object, attached, of the
//!   handle's generation, which no other code holds yet), so it is known valid for the rest of
//!   the block on the terms of a check that dominates (below): `x` unassigned, the `let`
//!   straight through.
//!
//! The checks inside one statement are not repeated either: `o.f = value` checks `o` once,
//! before the value (whose calls cannot invalidate it, by the rule above).
//!
//! # Checks that dominate
//! A check of a local made in a statement that runs its expressions straight through (a
//! `let`, an assignment, an expression statement, a `return`, an `if`'s condition; none with
//! `&&` or `||`, whose right operand may not run) is made whenever control passes that point,
//! so it dominates the rest of the enclosing block (and the blocks nested in it). When the
//! local is one no assignment writes (a parameter, a `let`, a `var` never assigned after its
//! declaration), it holds the same handle there, and by the rule above that handle stays
//! valid: `b.x - c.x`, then `b.vx -= ...` checks `b` once. A failing check raises where it
//! always did, as the first one; the later ones could only have passed. The knowledge ends
//! with the block, and a loop's statements know only what their own block proved.
//!
//! # Borrowed reads
//! Reading a handle field takes a reference (a retain, and a release after use) because code
//! running meanwhile could store into the field and free the object. Where nothing can, the
//! field's own reference is borrowed instead, as a variable's is: `x.w.f` with `x` known valid
//! (nothing runs between the two reads), and the receiver of `x.w.m(args)` when neither the
//! arguments nor any body the call may run (`m`'s, every override's on `jit-opt`, and those of
//! the functions they call) can store into field `w` of any object, or into a module variable
//! (`opt_effects.rs`: the fields some code may write, keyed by declaring class). The same rule
//! lets a call take a field read argument `f(t.left)` (also a `C?` field passed as a `C`,
//! checked for null where the argument stands), or a string method its receiver
//! `x.s.slice(a, b)`, borrowed.
//! As everywhere in the runtime, this assumes no other thread writes the same object's handle,
//! vec or string fields while the call runs (two threads storing into one field would release
//! its old value twice; a borrowed vec element read would not see another thread's copy-on-
//! write).
//!
//! Seven more reads borrow:
//! - **`o.v[i]` and `o.v.len()`** of a vec field, `o` a handle local or a chain of handle
//!   fields of one, with an index that runs no code ([`pure_index`](super::lower_index::pure_index)):
//!   nothing runs between the field's read and the element's load (`borrowed_operand`), so the
//!   field's reference serves; a managed element read out is retained as before. Likewise
//!   `w[i][j]` (the inner vec borrowed from `w`'s block), `keys[i].len()`, and a string
//!   compare of two such reads (`borrowable_read`): nothing runs between the reads and the
//!   compare.
//! - **`var x = p` that walks a chain** (`chase_vars`): a handle `var` first set from a
//!   parameter or capture and then only by `x = x.g` of handle fields, where nothing after its
//!   declaration writes such a `g` except one last store through `x` (a queue append:
//!   `while peek.link != null { peek = peek.link }; peek.link = self`): every object on the way
//!   is held by the field before it, so `x` takes no reference and gives none up.
//! - **`let x = o.f`** of a handle field, or `let x = o.a[i]` of an element of a field's array
//!   (a pure index), `o` and `x` never assigned, when no code that may store into the field
//!   runs while `x` can still be used, except one last store after which it is not
//!   (`field_lets`): `x` owns nothing, and the field keeps the reference.
//! - **`x = o.f` right before `o.f = v`** (`var_moves`), `x` a `var` the function owns: the
//!   field is read without a count and the store moves its old reference (`x`'s value) to `x`.
//! - **`let x = p`** (or `let x: C = p` of a `C?`, checked for null at its span) of a parameter
//!   or a capture of handle, string or closure type: `p` holds its value for the whole call and
//!   nothing assigns it, so `x` is an alias, owning nothing, as the `let x = v[i]` below.
//! - **`let x = v[i]`** of a vec local `v` of handles, strings, vecs or closures, where no
//!   assignment, push or pop in the function writes `x` or `v`: `v`'s block holds a
//!   reference to the element for as long as `v` holds the block, which is at least `x`'s
//!   scope (`v` is never replaced, and a shared block is copied before anyone writes it, so
//!   no other owner can change it under `v`). `x` takes no reference and owns nothing: no
//!   retain, no release when it is re-bound or the function returns, no home slot. Whatever
//!   keeps `x`'s value beyond (a store, a return, a capture) takes its own, as it does from
//!   any local.
//! - **`for x in v`** over a vec of those: the loop's snapshot of `v` (a reference it holds
//!   for the whole loop; a write to `v` in the body copies the block) keeps every element, and
//!   `x` is immutable, so `x` borrows each element as `let x = v[i]` does.
//! - **Handle compares** `a.f == null`, `p.next != q`: both sides are locals, `null` or field
//!   reads through such (checked at the field's span, in order): no code runs between the
//!   reads and the compare, so no reference is taken.
//!
//! And a call passes a managed local argument as it is (the callee borrows its parameters
//! anyway, and the caller's local keeps the reference through the call): no retain before,
//! no release after (`FunctionTranslator::borrowed_arg`).

use std::collections::{HashMap, HashSet};

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value, types};

use crate::lang::hir::{
    Block, Expr, ExprKind, FuncId, LocalId, Place, PlaceKind, Program, Stmt, StmtKind, Type,
};
use crate::lang::span::Span;
use crate::runtime::object::Object;

use super::lower::{FunctionTranslator, LResult, LocalSlot, mem};
use super::lower_object::ADDR_BITS;
use super::opt_effects::{self, EffectMemo, Effects, FieldKey};
use super::opt_walk::{Visitor, Walk, walk_block, walk_expr, walk_place, walk_stmt};

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
    /// The statement being lowered runs its expressions straight through (no `&&`/`||`, not
    /// a loop): a check made in it dominates the rest of its block.
    straight: bool,
    /// What the function does with its locals.
    facts: LocalFacts,
    /// The effects of the functions called, as this lowering has walked them
    /// (`opt_effects.rs`).
    pub(crate) effects: EffectMemo,
}

/// What one function does with its locals (from one walk of its body).
#[derive(Default)]
pub(crate) struct LocalFacts {
    /// Locals an assignment, a push or a pop writes (a `let` or a loop binding does not count).
    assigned: HashSet<LocalId>,
    /// `let x = v[i]` locals that borrow the element's reference from `v`'s block (see the
    /// module docs, "Borrowed reads").
    borrowed: HashSet<LocalId>,
    /// The stores into a field that move the field's reference into the borrowed field `let`
    /// that read it (`field_lets`), or into the `var` assigned from it just before
    /// (`var_moves`), by the place's span.
    pub(crate) moves: HashMap<Span, LocalId>,
    /// The `x = o.f` assignments (by their place's span) that read the field without a count,
    /// right before the store that moves its reference to `x` (`var_moves`).
    var_reads: HashSet<Span>,
    /// The `var`s of those.
    var_movers: HashSet<LocalId>,
}

impl LocalFacts {
    /// The facts of a function's body.
    /// `held(y)`: local `y` holds its value for the whole call (a parameter or a capture);
    /// `cx`: what the field `let`s need to know of the calls (see [`field_lets`]).
    pub(crate) fn of(
        body: &Block,
        locals: &[crate::lang::hir::Local],
        held: impl Fn(LocalId) -> bool,
        cx: &mut EffectCx<'_>,
    ) -> LocalFacts {
        let mut w = Assigned {
            program: Some(cx.program),
            ..Assigned::default()
        };
        walk_block(body, &mut w);
        // `var x = p` of a parameter or capture whose every assignment is `x = x.g`: a walk
        // along handle fields that nothing writes while `x` is used (`chase_vars`).
        let chases = if w.unknown {
            HashSet::new()
        } else {
            chase_vars(body, locals, &w, &held, cx)
        };
        let mut facts = LocalFacts {
            assigned: std::mem::take(&mut w.assigned),
            borrowed: HashSet::new(),
            moves: HashMap::new(),
            var_reads: HashSet::new(),
            var_movers: HashSet::new(),
        };
        if !w.unknown {
            let mut lets = FieldLets {
                borrowed: HashSet::new(),
                moves: HashMap::new(),
            };
            field_lets(body, locals, &facts.assigned, cx, &mut lets);
            facts.borrowed.extend(lets.borrowed);
            facts.moves = lets.moves;
        }
        // `let x = p` (or `let x: C = p` of a `C?`) of a parameter or a capture: `p` holds its
        // reference for the whole call and nothing assigns it, so `x` is an alias.
        for &(x, y) in &w.aliases {
            let aliasable = matches!(
                locals.get(x.index()).map(|l| &l.ty),
                Some(Type::Handle { .. } | Type::Str | Type::Fn { .. })
            );
            if aliasable && held(y) && !w.unknown && !facts.assigned.contains(&x) {
                facts.borrowed.insert(x);
            }
        }
        facts.borrowed.extend(chases);
        for (x, v) in w.lets {
            let borrowable = match locals.get(v.index()).map(|l| &l.ty) {
                Some(Type::Vec(elem)) => borrowable_elem(elem),
                _ => false,
            };
            if borrowable
                && !w.unknown
                && !facts.assigned.contains(&x)
                && !facts.assigned.contains(&v)
            {
                facts.borrowed.insert(x);
            }
        }
        // `for x in v`: the loop's own reference to the vec it iterates (its snapshot) keeps
        // every element for the whole loop, and `x` is immutable.
        for x in w.loop_vars {
            if !w.unknown && !facts.assigned.contains(&x) {
                facts.borrowed.insert(x);
            }
        }
        if !w.unknown {
            var_moves(body, locals, &held, cx, &mut facts);
        }
        facts
    }
}

/// `x = o.f` followed at once by `o.f = v` (the pop of a queue: `packet = self.queue;
/// self.queue = packet.link`), with `x` a `var` the function owns, `o` a local that holds its
/// object by itself, `f` a handle field and `v` writing no field `f` (of any object: its
/// key). Plainly, the first statement takes a reference to the field's object and the store
/// gives the field's up: two count changes of one object that cancel. Instead the
/// assignment reads the field without a count (`x`'s home slot holds 0 meanwhile, so an error
/// raised by `v` releases nothing of `x`'s: the field still holds the reference), and the
/// store moves the field's old reference, which is `x`'s value since nothing wrote `f`, to
/// `x` (`move_site`, as for a borrowed field `let`). `x`'s old value is released at the
/// assignment, as before.
fn var_moves(
    block: &Block,
    locals: &[crate::lang::hir::Local],
    held: &impl Fn(LocalId) -> bool,
    cx: &mut EffectCx<'_>,
    facts: &mut LocalFacts,
) {
    for (i, s) in block.stmts.iter().enumerate() {
        for b in nested_blocks(s) {
            var_moves(b, locals, held, cx, facts);
        }
        let Some(next) = block.stmts.get(i + 1) else {
            continue;
        };
        let StmtKind::Assign {
            place: read,
            op: None,
            value: init,
            ..
        } = &s.kind
        else {
            continue;
        };
        let StmtKind::Assign {
            place: store,
            op: None,
            value,
            ..
        } = &next.kind
        else {
            continue;
        };
        let PlaceKind::Local(x) = read.kind else {
            continue;
        };
        let Some(FieldRead {
            o,
            key,
            element: false,
        }) = field_source(cx.program, init)
        else {
            continue;
        };
        let PlaceKind::Field { object, field } = &store.kind else {
            continue;
        };
        let owned_var = locals.get(x.index()).is_some_and(|l| l.ty.is_handle())
            && !held(x)
            && !facts.borrowed.contains(&x);
        if !owned_var
            || o == x
            || facts.borrowed.contains(&o)
            || !matches!(object.kind, ExprKind::Local(p) if p == o)
            || opt_effects::field_key(cx.program, &object.ty, *field) != Some(key)
            || facts.moves.contains_key(&store.span)
            || opt_effects::exprs_effects(cx.program, cx.fixed, [&**object, value], cx.memo)
                .writes(key)
        {
            continue;
        }
        facts.var_reads.insert(read.span);
        facts.moves.insert(store.span, x);
        facts.var_movers.insert(x);
    }
}

/// The locals a function writes, and its `let x = v[i]`s (`(x, v)`).
#[derive(Default)]
struct Assigned<'p> {
    /// The program, for the field keys of `x = x.g` (none: no chase is found).
    program: Option<&'p Program>,
    assigned: HashSet<LocalId>,
    lets: Vec<(LocalId, LocalId)>,
    /// `for x in v` variables over a vec of managed elements.
    loop_vars: Vec<LocalId>,
    /// `let x = y` and `let x: C = y` (`(x, y)`).
    aliases: Vec<(LocalId, LocalId)>,
    /// Writes of each local (assignments, pushes, pops), and of those the plain assignments
    /// `x = x.g` (or `x = x.g` made non-null) with their fields `(x, g's key)`, for
    /// [`chase_vars`].
    writes: HashMap<LocalId, usize>,
    chases: Vec<(LocalId, Option<FieldKey>)>,
    unknown: bool,
}

/// The `var`s that walk a chain of objects without owning them (module docs, "Borrowed
/// reads"): `var x = p` (or `var x: C = p` of a `C?`) of a parameter or capture `p` that
/// nothing assigns, a handle, whose every assignment is `x = x.g` of a handle field `g` (or that
/// made non-null), where no statement after the `var` in its block may write any such `g` (of
/// any object: its key; `opt_effects.rs`), except one store `x.f = v` through `x` after which
/// `x` is not used, whose value writes no `g`.
///
/// Why `x` needs no reference: `p` is held for the whole call; every object `x` reaches is
/// held by a field `g` of the one before it, and no `g` is written while `x` is used, so no
/// reference along the way is given up (a cascade frees only an object whose count reached
/// zero, and each of these keeps the one its predecessor's field holds). The last store
/// `x.f = v` releases the old value of `x`'s own field, not a reference on the way to `x`.
fn chase_vars(
    body: &Block,
    locals: &[crate::lang::hir::Local],
    w: &Assigned<'_>,
    held: &impl Fn(LocalId) -> bool,
    cx: &mut EffectCx<'_>,
) -> HashSet<LocalId> {
    let mut candidates: HashMap<LocalId, HashSet<FieldKey>> = HashMap::new();
    for &(x, y) in &w.aliases {
        let handle = locals.get(x.index()).is_some_and(|l| l.ty.is_handle());
        if !handle || !held(y) || w.assigned.contains(&y) || !w.assigned.contains(&x) {
            continue;
        }
        let steps: Vec<Option<FieldKey>> = w
            .chases
            .iter()
            .filter(|(t, _)| *t == x)
            .map(|(_, k)| *k)
            .collect();
        // Every write of `x` is one of these assignments, and each is a step along a field.
        if steps.len() != w.writes.get(&x).copied().unwrap_or(0) || steps.contains(&None) {
            continue;
        }
        candidates.insert(x, steps.into_iter().flatten().collect());
    }
    // A local declared twice (a `let` in two places) is left alone.
    let mut declared: HashMap<LocalId, usize> = HashMap::new();
    for &(x, _) in &w.aliases {
        *declared.entry(x).or_default() += 1;
    }
    candidates.retain(|x, _| declared.get(x) == Some(&1));
    let mut out = HashSet::new();
    if !candidates.is_empty() {
        chase_blocks(body, &candidates, cx, &mut out);
    }
    out
}

/// The candidates of [`chase_vars`] whose `var` statement, found in `block` or a block nested
/// in it, is followed by statements that keep the chain (see there).
fn chase_blocks(
    block: &Block,
    candidates: &HashMap<LocalId, HashSet<FieldKey>>,
    cx: &mut EffectCx<'_>,
    out: &mut HashSet<LocalId>,
) {
    for (i, s) in block.stmts.iter().enumerate() {
        if let StmtKind::Let { local: x, .. } = &s.kind
            && let Some(keys) = candidates.get(x)
            && chain_kept(&block.stmts[i + 1..], *x, keys, cx)
        {
            out.insert(*x);
        }
        for b in nested_blocks(s) {
            chase_blocks(b, candidates, cx, out);
        }
    }
}

/// Whether no statement of `stmts` (what follows `var x = p` in its block) may write a field
/// of `keys`, except a store `x.f = v` after which `x` is not used (see [`chase_vars`]).
fn chain_kept(stmts: &[Stmt], x: LocalId, keys: &HashSet<FieldKey>, cx: &mut EffectCx<'_>) -> bool {
    for (j, s) in stmts.iter().enumerate() {
        let effects = opt_effects::stmt_effects(cx.program, cx.fixed, s, cx.memo);
        if !keys.iter().any(|k| effects.writes(*k)) {
            continue;
        }
        if stmts[j + 1..].iter().any(|t| stmt_uses(t, x)) {
            return false;
        }
        let StmtKind::Assign {
            place,
            op: None,
            value,
            ..
        } = &s.kind
        else {
            return false;
        };
        let PlaceKind::Field { object, .. } = &place.kind else {
            return false;
        };
        if !matches!(object.kind, ExprKind::Local(o) if o == x) {
            return false;
        }
        let before = opt_effects::exprs_effects(cx.program, cx.fixed, [value], cx.memo);
        if keys.iter().any(|k| before.writes(*k)) {
            return false;
        }
    }
    true
}

/// Whether a vec element of type `elem` can be borrowed: a handle, a string, a vec or a
/// closure (one cell owning one reference; not a boxed array, read as an unboxed copy).
fn borrowable_elem(elem: &Type) -> bool {
    matches!(
        elem,
        Type::Handle { .. } | Type::Str | Type::Vec(_) | Type::Fn { .. }
    )
}

/// What the analysis of field `let`s reads: the program, the lowering's kind and its cache of
/// call effects.
pub(crate) struct EffectCx<'p> {
    pub program: &'p Program,
    pub fixed: bool,
    pub memo: &'p mut EffectMemo,
}

/// The handle field `init` reads through a local, as it is or made non-null: `(o, key)` of
/// `o.f` / `let x: C = o.f`.
fn field_source(program: &Program, init: &Expr) -> Option<FieldRead> {
    let read = match &init.kind {
        ExprKind::NonNull(inner) => inner,
        _ => init,
    };
    if !read.ty.is_handle() {
        return None;
    }
    // `o.a[i]`: an element of a field's array, read in place (`lower_index.rs`: a pure index,
    // no call); the field is the array's.
    let (field, element) = match &read.kind {
        ExprKind::Index(array, index)
            if matches!(array.ty, Type::Array(..))
                && super::lower_index::pure_index(index)
                && matches!(array.kind, ExprKind::Field(..)) =>
        {
            (&**array, true)
        }
        _ => (read, false),
    };
    let ExprKind::Field(object, f) = &field.kind else {
        return None;
    };
    let ExprKind::Local(o) = object.kind else {
        return None;
    };
    opt_effects::field_key(program, &object.ty, *f).map(|key| FieldRead { o, key, element })
}

/// A handle read from a field through a local (`field_source`): `o`, the field's key, and
/// whether it is an element of the field's array (`o.a[i]`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FieldRead {
    o: LocalId,
    key: FieldKey,
    pub(crate) element: bool,
}

/// What [`field_lets`] finds.
struct FieldLets {
    borrowed: HashSet<LocalId>,
    moves: HashMap<Span, LocalId>,
}

/// `let x = o.f` (or `let x: C = o.f`) of a handle field, `o` and `x` never assigned, where no
/// code that may store into field `f` (of any object: its key) runs while `x` borrows: `x`
/// borrows the field's reference. What may follow the `let` (in its block, and in the branches
/// of an `if` there, [`rest_keeps_field`]):
/// - code that writes no `f`;
/// - code that writes `f` after which `x` is not used (a store whose place or value reads `x`
///   included: they run before the store releases the old reference);
/// - a **move**: `o.f = value` through the same `o`, whose value writes no `f`: the field's old
///   reference is `x`'s value (nothing wrote `f` since the `let`), so instead of being
///   released it goes to `x`, which owns it from there on (a second variable holds it, 0 while
///   `x` borrows, released where an owned local is: `FunctionTranslator::field_owner`). After a
///   move on every path anything may follow.
///
/// `o` keeps its object alive, so nothing else can release the field's reference
/// (`opt_effects.rs`).
fn field_lets(
    block: &Block,
    locals: &[crate::lang::hir::Local],
    assigned: &HashSet<LocalId>,
    cx: &mut EffectCx<'_>,
    out: &mut FieldLets,
) {
    for (i, s) in block.stmts.iter().enumerate() {
        // `o` must hold its object for `x`'s whole scope by itself: not a field `let` that
        // borrows (its borrow may end, with its last use, before `x`'s does).
        if let StmtKind::Let { local: x, init } = &s.kind
            && let Some(FieldRead { o, key, element }) = field_source(cx.program, init)
            && !assigned.contains(x)
            && !assigned.contains(&o)
            && !out.borrowed.contains(&o)
            && locals.get(x.index()).is_some_and(|l| l.ty.is_handle())
        {
            let mut moves = Vec::new();
            let field = FieldOf {
                o,
                key,
                x: *x,
                element,
            };
            let flow = rest_keeps_field(&block.stmts[i + 1..], &field, false, cx, &mut moves);
            // A store that is already another `let`'s move stays that one's alone.
            if flow != Flow::Fails && !moves.iter().any(|m| out.moves.contains_key(m)) {
                out.borrowed.insert(*x);
                out.moves.extend(moves.into_iter().map(|span| (span, *x)));
            }
        }
        for b in nested_blocks(s) {
            field_lets(b, locals, assigned, cx, out);
        }
    }
}

/// The field a borrowed `let` reads: `x = o.f` (or `x = o.f[i]`: `element`), `f`'s key.
struct FieldOf {
    o: LocalId,
    key: FieldKey,
    x: LocalId,
    element: bool,
}

/// How statements after a borrowed field `let` leave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// Still borrowing (on some path), safely so far.
    Borrows,
    /// Moved on every path: `x` owns its reference.
    Moved,
    /// Something may write the field while `x` borrows.
    Fails,
}

/// The blocks nested in statement `s`.
fn nested_blocks(s: &Stmt) -> Vec<&Block> {
    match &s.kind {
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => std::iter::once(then_block).chain(else_block).collect(),
        StmtKind::While { body, .. }
        | StmtKind::ForRange { body, .. }
        | StmtKind::ForStep { body, .. }
        | StmtKind::ForEach { body, .. } => vec![body],
        _ => Vec::new(),
    }
}

/// How `stmts` (what follows `let x = o.f` in its block, or a branch of an `if` there) leave
/// the borrow (see [`field_lets`]); `used_after`: `x` may be used after `stmts`. The spans of
/// the move stores found go to `moves`.
fn rest_keeps_field(
    stmts: &[Stmt],
    field: &FieldOf,
    used_after: bool,
    cx: &mut EffectCx<'_>,
    moves: &mut Vec<Span>,
) -> Flow {
    let key = field.key;
    // An `if` before moved on some of its paths: a second move there would drop the first
    // one's reference, so from here on any store to the field that `x` outlives fails.
    let mut moved_on_some_path = false;
    for (j, s) in stmts.iter().enumerate() {
        if !opt_effects::stmt_effects(cx.program, cx.fixed, s, cx.memo).writes(key) {
            continue;
        }
        let later = used_after || stmts[j + 1..].iter().any(|t| stmt_uses(t, field.x));
        if !later && !stmt_uses(s, field.x) {
            continue;
        }
        if moved_on_some_path {
            return Flow::Fails;
        }
        match &s.kind {
            StmtKind::Assign {
                place,
                op: None,
                value,
                ..
            } => {
                let PlaceKind::Field { object, field: f } = &place.kind else {
                    return Flow::Fails;
                };
                let before =
                    opt_effects::exprs_effects(cx.program, cx.fixed, [&**object, value], cx.memo);
                if before.writes(key) {
                    return Flow::Fails;
                }
                if !later {
                    // `x` is read here only, by the place and the value, which run before the
                    // store: a plain write, whose release of the old reference (`x`'s object,
                    // perhaps) comes after `x`'s last use. (It may then change both counts in
                    // one window: `swap_handle_counts`.)
                    continue;
                }
                // (A store of the whole field is no move of an element's reference.)
                let same = !field.element
                    && matches!(object.kind, ExprKind::Local(o) if o == field.o)
                    && opt_effects::field_key(cx.program, &object.ty, *f) == Some(key);
                if same {
                    moves.push(place.span);
                    return Flow::Moved;
                }
                if later {
                    return Flow::Fails;
                }
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                if opt_effects::exprs_effects(cx.program, cx.fixed, [cond], cx.memo).writes(key) {
                    return Flow::Fails;
                }
                let then = rest_keeps_field(&then_block.stmts, field, later, cx, moves);
                let els = match else_block {
                    Some(b) => rest_keeps_field(&b.stmts, field, later, cx, moves),
                    None => Flow::Borrows,
                };
                match (then, els) {
                    (Flow::Fails, _) | (_, Flow::Fails) => return Flow::Fails,
                    (Flow::Moved, Flow::Moved) => return Flow::Moved,
                    (Flow::Moved, _) | (_, Flow::Moved) => moved_on_some_path = true,
                    // Borrowing on every path: what follows is checked as before.
                    _ => {}
                }
            }
            _ => return Flow::Fails,
        }
    }
    Flow::Borrows
}

/// Whether statement `s` reads local `x` anywhere.
fn stmt_uses(s: &Stmt, x: LocalId) -> bool {
    struct Uses {
        x: LocalId,
        found: bool,
    }
    impl Visitor for Uses {
        fn expr(&mut self, e: &Expr) -> Walk {
            if let ExprKind::Local(id) = e.kind
                && id == self.x
            {
                self.found = true;
            }
            Walk::Children
        }
        fn unknown(&mut self) {
            self.found = true;
        }
    }
    let mut w = Uses { x, found: false };
    walk_stmt(s, &mut w);
    w.found
}

/// The local `init` reads as it is: `y`, or `y` made non-null (`let x: C = y` of a `C?`).
pub(crate) fn alias_source(init: &Expr) -> Option<LocalId> {
    match &init.kind {
        ExprKind::Local(y) => Some(*y),
        ExprKind::NonNull(inner) => match inner.kind {
            ExprKind::Local(y) => Some(y),
            _ => None,
        },
        _ => None,
    }
}

impl Assigned<'_> {
    /// The field of `x = x.g` (or `x = x.g` made non-null) of a handle field `g`: `g`'s key
    /// (`None` when `value` is anything else).
    fn chase_step(&self, x: LocalId, value: &Expr) -> Option<FieldKey> {
        let read = match &value.kind {
            ExprKind::NonNull(inner) => inner,
            _ => value,
        };
        let ExprKind::Field(object, g) = &read.kind else {
            return None;
        };
        let ExprKind::Local(o) = object.kind else {
            return None;
        };
        if o != x || !read.ty.is_handle() {
            return None;
        }
        self.program
            .and_then(|p| opt_effects::field_key(p, &object.ty, *g))
    }
}

impl Visitor for Assigned<'_> {
    fn stmt(&mut self, s: &Stmt) -> Walk {
        if let StmtKind::Let { local, init } = &s.kind
            && let ExprKind::Index(v, _) = &init.kind
            && let ExprKind::Local(v) = v.kind
        {
            self.lets.push((*local, v));
        }
        if let StmtKind::Let { local, init } = &s.kind
            && let Some(y) = alias_source(init)
        {
            self.aliases.push((*local, y));
        }
        if let StmtKind::ForEach { var, array, .. } = &s.kind
            && let Type::Vec(elem) = &array.ty
            && borrowable_elem(elem)
        {
            self.loop_vars.push(*var);
        }
        if let StmtKind::Assign {
            place,
            op: None,
            value,
            ..
        } = &s.kind
            && let PlaceKind::Local(x) = place.kind
        {
            self.chases.push((x, self.chase_step(x, value)));
        }
        Walk::Children
    }

    fn place(&mut self, p: &Place, written: bool) -> Walk {
        if let (PlaceKind::Local(id), true) = (&p.kind, written) {
            self.assigned.insert(*id);
            *self.writes.entry(*id).or_default() += 1;
        }
        Walk::Children
    }

    fn unknown(&mut self) {
        self.unknown = true;
    }
}

impl CheckedHandles {
    /// Lowering the plain copy of a versioned loop (the rare path: a handle was not valid).
    pub(crate) fn in_plain_copy(&self) -> bool {
        self.plain_copy
    }

    fn get(&self, id: LocalId) -> Option<Checked> {
        self.entries
            .iter()
            .rev()
            .find(|(l, _)| *l == id)
            .map(|(_, c)| *c)
    }
}

impl FunctionTranslator<'_, '_> {
    /// Handle local `id`, when it is known valid here.
    pub(crate) fn checked_local(&self, id: LocalId) -> Option<Checked> {
        self.checked.get(id)
    }

    /// The checked handle `object` reads, when it is a local known valid here.
    pub(crate) fn checked_handle(&self, object: &Expr) -> Option<Checked> {
        match object.kind {
            ExprKind::Local(id) => self.checked.get(id),
            _ => None,
        }
    }

    /// Walk the function's body for the facts the region rules need; before lowering it.
    /// `held(y)`: local `y` holds its value for the whole call (a parameter or a capture).
    pub(crate) fn analyze_locals(
        &mut self,
        body: &Block,
        locals: &[crate::lang::hir::Local],
        held: impl Fn(LocalId) -> bool,
    ) {
        let mut memo = std::mem::take(&mut self.checked.effects);
        let mut cx = EffectCx {
            program: self.env.program,
            fixed: self.env.fixed,
            memo: &mut memo,
        };
        self.checked.facts = LocalFacts::of(body, locals, held, &mut cx);
        self.checked.effects = memo;
    }

    /// The borrowed field `let` whose reference a store at `place` moves (`field_lets`).
    pub(crate) fn move_site(&self, place: Span) -> Option<LocalId> {
        self.checked.facts.moves.get(&place).copied()
    }

    /// Whether the assignment at `place` is the `x = o.f` of a var move (`var_moves`): the
    /// field read without a count, `x` owning nothing until the store after it.
    pub(crate) fn var_move_read(&self, place: Span) -> bool {
        self.checked.facts.var_reads.contains(&place)
    }

    /// The `var`s some store moves a field's reference into (`var_moves`): their own variable
    /// takes it.
    pub(crate) fn var_movers(&self) -> Vec<LocalId> {
        let mut vars: Vec<LocalId> = self.checked.facts.var_movers.iter().copied().collect();
        vars.sort_by_key(|l| l.0);
        vars
    }

    /// The borrowed field `let`s some store moves a reference into.
    pub(crate) fn moved_lets(&self) -> Vec<LocalId> {
        let mut lets: Vec<LocalId> = self
            .checked
            .facts
            .moves
            .values()
            .copied()
            .filter(|x| !self.checked.facts.var_movers.contains(x))
            .collect();
        lets.sort_by_key(|l| l.0);
        lets.dedup();
        lets
    }

    /// Whether local `id` is a `let x = o.f` that borrows the field's reference.
    pub(crate) fn borrowed_field_let(&self, id: LocalId, init: &Expr) -> Option<FieldRead> {
        if !self.borrowed_let(id) {
            return None;
        }
        field_source(self.env.program, init)
    }

    /// Whether local `id` is a `let x = v[i]` that borrows its element (never owned).
    pub(crate) fn borrowed_let(&self, id: LocalId) -> bool {
        self.checked.facts.borrowed.contains(&id)
    }

    /// Lower statement `s` with `lower`, noting the handles its checks prove valid for the rest
    /// of the enclosing block when its expressions run straight through (see the module
    /// docs, "Checks that dominate").
    pub(crate) fn in_statement<T>(
        &mut self,
        s: &Stmt,
        lower: impl FnOnce(&mut Self) -> LResult<T>,
    ) -> LResult<T> {
        let straight = match &s.kind {
            StmtKind::Let { init: e, .. }
            | StmtKind::Expr(e)
            | StmtKind::Return(Some(e))
            | StmtKind::If { cond: e, .. } => straight_line(&[e]),
            StmtKind::Assign { place, value, .. } => {
                let mut w = Straight(true);
                walk_place(place, true, &mut w);
                walk_expr(value, &mut w);
                w.0
            }
            _ => false,
        };
        let saved = std::mem::replace(&mut self.checked.straight, straight);
        // An assignment's own operations (`s += t`'s append, a shared vec copied before a
        // store) are at its operator, as the interpreter reports them.
        let span = match &s.kind {
            StmtKind::Assign { op_span, .. } => *op_span,
            _ => s.span,
        };
        let saved_span = self.enter_span(span);
        let result = lower(self);
        self.enter_span(saved_span);
        self.checked.straight = saved;
        result
    }

    /// Where the handles known valid stand when a block starts; [`Self::end_scope`] forgets
    /// what its statements proved.
    pub(crate) fn start_scope(&self) -> usize {
        self.checked.entries.len()
    }

    /// The end of a block begun at `depth` (from [`Self::start_scope`]).
    pub(crate) fn end_scope(&mut self, depth: usize) {
        self.checked.entries.truncate(depth);
    }

    /// `object` was just checked, giving `shell`: the checked handle, remembered for the rest
    /// of the block when `object` is a local nothing assigns and the statement runs straight
    /// through (its check dominates the block's later statements).
    pub(crate) fn note_checked(&mut self, object: &Expr, shell: Value) -> Checked {
        let state = self.state_of(shell);
        let c = Checked { shell, state };
        if let ExprKind::Local(id) = object.kind
            && self.check_dominates(id)
        {
            self.checked.entries.push((id, c));
        }
        c
    }

    /// Whether a check of local `id` made in the statement being lowered holds for the rest of
    /// the block: nothing assigns `id`, a one-cell local, and the statement runs straight
    /// through (see the module docs, "Checks that dominate").
    fn check_dominates(&self, id: LocalId) -> bool {
        self.checked.straight
            && !self.checked.facts.assigned.contains(&id)
            && matches!(self.local(id), Ok(LocalSlot::Scalar(_)))
    }

    /// `let x = new C()` was just lowered, `cell` the handle it made: a fresh object, attached,
    /// whose generation is the handle's, and no other code holds it yet. For the rest of the
    /// block it is a checked handle, on the terms of [`Self::note_checked`] (nothing assigns
    /// `x`; the `let` runs straight through).
    pub(crate) fn note_new(&mut self, id: LocalId, cell: Value) {
        if self.check_dominates(id) {
            let shell = self.cell_shell(cell);
            let state = self.state_of(shell);
            self.checked.entries.push((id, Checked { shell, state }));
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

    /// The shell of a non-null cell (the low 48 bits; the check compares the whole cell).
    ///
    /// The low bits are two shifts. A logical shift back is what Cranelift's optimizer turns
    /// into an `and` with a 64-bit mask, which x86-64 reads from the function's constants, and
    /// which it computes again in every block that uses it (an `and` with a constant is
    /// rematerialized): `mov; and reg,[mask]` at each field access. On x86-64 the shift back
    /// is arithmetic instead, which the optimizer keeps as computed once: the same value, as
    /// a user-space address there has bit 47 clear (the kernel maps nothing above 2^47 for a
    /// process that does not ask for it, and no allocator hotlab uses does).
    pub(crate) fn cell_shell(&mut self, cell: Value) -> Value {
        let high = self.builder.ins().ishl_imm_s(cell, 64 - ADDR_BITS);
        if cfg!(target_arch = "x86_64") {
            self.builder.ins().sshr_imm_s(high, 64 - ADDR_BITS)
        } else {
            self.builder.ins().ushr_imm_u(high, 64 - ADDR_BITS)
        }
    }

    /// Branch to `invalid` when the shell of a non-null cell is stale or detached, and go on
    /// in a new block otherwise: one compare of the cell with the shell's handle word and one
    /// branch (`cmp cell,[shell+38h]; jne`). The word is the cell of a current handle (the
    /// shell's address and its generation) with bit 0 set once the object is detached, so the
    /// compare fails for a stale handle (another generation) and for a detached object alike.
    /// A stale shell is still allocated (the cell owns a reference), so its word can be read.
    /// The cold path (`hot_object_check`) tells stale from detached by the generation and the
    /// key: they agree with this compare because a detach clears the key before it sets the
    /// bit. The caller seals `invalid`.
    pub(crate) fn branch_if_invalid(
        &mut self,
        shell: Value,
        cell: Value,
        invalid: cranelift_codegen::ir::Block,
    ) {
        let word = self
            .builder
            .ins()
            .load(types::I64, mem(), shell, Object::WORD as i32);
        let current = self.builder.ins().icmp(IntCC::Equal, cell, word);
        self.continue_if(current, invalid);
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
            walk_expr(e, &mut uses);
        }
        walk_block(body, &mut uses);
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
            let shell = self.cell_shell(cell);
            self.branch_if_invalid(shell, cell, plain_block);
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

/// Whether evaluating `e` can push to or pop from a vec (the only expressions that change a
/// local); anything the walk does not know counts as one.
pub(crate) fn mutates_a_vec(e: &Expr) -> bool {
    struct Mutates(bool);
    impl Visitor for Mutates {
        fn expr(&mut self, e: &Expr) -> Walk {
            if let ExprKind::VecPush(..) | ExprKind::VecPop(_) = e.kind {
                self.0 = true;
            }
            Walk::Children
        }
        fn unknown(&mut self) {
            self.0 = true;
        }
    }
    let mut w = Mutates(false);
    walk_expr(e, &mut w);
    w.0
}

/// Whether expressions `es` run straight through: no `&&`/`||` (whose right operand may not
/// run), and nothing the walk does not know.
fn straight_line(es: &[&Expr]) -> bool {
    let mut w = Straight(true);
    for e in es {
        walk_expr(e, &mut w);
    }
    w.0
}

struct Straight(bool);

impl Visitor for Straight {
    fn expr(&mut self, e: &Expr) -> Walk {
        if let ExprKind::Logical(..) = e.kind {
            self.0 = false;
            return Walk::Skip;
        }
        Walk::Children
    }

    fn unknown(&mut self) {
        self.0 = false;
    }
}

/// What a loop does with its locals: the ones it uses as an object, the ones it assigns.
#[derive(Default)]
struct LoopUses {
    objects: Vec<LocalId>,
    assigned: HashSet<LocalId>,
    nodes: usize,
    /// A construct the walk does not know: the loop is not versioned.
    unknown: bool,
}

impl LoopUses {
    /// `e` is used as an object (a field's, a receiver).
    fn object(&mut self, e: &Expr) {
        if let ExprKind::Local(id) = e.kind {
            self.objects.push(id);
        }
    }
}

impl Visitor for LoopUses {
    fn stmt(&mut self, s: &Stmt) -> Walk {
        self.nodes += 1;
        match &s.kind {
            StmtKind::Let { local: var, .. }
            | StmtKind::ForRange { var, .. }
            | StmtKind::ForStep { var, .. }
            | StmtKind::ForEach { var, .. } => {
                self.assigned.insert(*var);
            }
            _ => {}
        }
        Walk::Children
    }

    fn place(&mut self, p: &Place, written: bool) -> Walk {
        self.nodes += 1;
        match &p.kind {
            PlaceKind::Local(id) if written => {
                self.assigned.insert(*id);
            }
            // `o.f = v` writes the object, not the local holding its handle.
            PlaceKind::Field { object, .. } => self.object(object),
            _ => {}
        }
        Walk::Children
    }

    fn expr(&mut self, e: &Expr) -> Walk {
        self.nodes += 1;
        match &e.kind {
            ExprKind::Field(x, _)
            | ExprKind::MethodCall { object: x, .. }
            | ExprKind::VirtualCall { object: x, .. } => self.object(x),
            _ => {}
        }
        Walk::Children
    }

    fn unknown(&mut self) {
        self.unknown = true;
    }
}

impl FunctionTranslator<'_, '_> {
    /// The effects of a call of `funcs` with `args` (`None`: a virtual call whose targets are
    /// not known, which may write anything).
    pub(crate) fn call_effects(&mut self, funcs: Option<&[FuncId]>, args: &[Expr]) -> Effects {
        let Some(funcs) = funcs else {
            return Effects::anything();
        };
        let mut memo = std::mem::take(&mut self.checked.effects);
        let effects =
            opt_effects::call_effects(self.env.program, self.env.fixed, funcs, args, &mut memo);
        self.checked.effects = memo;
        effects
    }

    /// The effects of evaluating `exprs`.
    pub(crate) fn exprs_effects<'e>(
        &mut self,
        exprs: impl IntoIterator<Item = &'e Expr>,
    ) -> Effects {
        let mut memo = std::mem::take(&mut self.checked.effects);
        let effects =
            opt_effects::exprs_effects(self.env.program, self.env.fixed, exprs, &mut memo);
        self.checked.effects = memo;
        effects
    }

    /// Whether `e`, a [`pure_cell`](super::lower_object::pure_cell) read, can be passed
    /// borrowed across code with `effects`: none of the fields on its path (`a.b.c`: `a.b` and
    /// `(a.b).c`) may be written.
    pub(crate) fn path_unwritten(&self, e: &Expr, effects: &Effects) -> bool {
        match &e.kind {
            ExprKind::Null | ExprKind::Local(_) => true,
            ExprKind::Field(object, field) => {
                opt_effects::field_key(self.env.program, &object.ty, *field)
                    .is_some_and(|key| !effects.writes(key))
                    && self.path_unwritten(object, effects)
            }
            _ => false,
        }
    }

    /// `x.f` where `x` is known valid here: the cell of field `f`, *not* retained. Only for a
    /// use that ends before any code that could store into `x.f` runs (see `lower_object.rs`).
    pub(crate) fn borrowed_field_cell(&mut self, object: &Expr) -> LResult<Option<Value>> {
        if !object.ty.is_handle() {
            return Ok(None);
        }
        self.borrowed_field_value(object)
    }

    /// `x.f` of a managed type (a handle, a string, a vec, a closure) where `x` is known
    /// valid here: its cell, *not* retained, as [`Self::borrowed_field_cell`].
    pub(crate) fn borrowed_field_value(&mut self, object: &Expr) -> LResult<Option<Value>> {
        let ExprKind::Field(inner, field) = &object.kind else {
            return Ok(None);
        };
        if !object.ty.is_managed() || matches!(object.ty, Type::Array(..)) {
            return Ok(None);
        }
        let Some(c) = self.checked_handle(inner) else {
            return Ok(None);
        };
        let addr = self.checked_field(c, *field);
        self.load_value(addr, &object.ty).map(Some)
    }
}
