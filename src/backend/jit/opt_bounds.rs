//! Counted loops versioned on the bounds of their vec indexes (every Cranelift backend).
//!
//! In `for j in 0..n { c[i * n + j] += a * b[k * n + j] }` each index is checked against its
//! vec's length at every iteration, where a native twin's loop over a slice checks nothing. When
//! the vecs are hoisted by the loop ([`opt_vec`](super::opt_vec): their length cannot change
//! while it runs) and each index is the loop variable plus an expression the loop does not
//! change, one test before the loop can show that every iteration's index is in range.
//!
//! # The rule
//! A `for j in first..end` loop (not in the plain copy of a versioned loop) is versioned on the
//! index sites in its body, condition, and nested loops, that are
//! - an element read `v[e]` or the place of an element assignment `v[e] = x` / `v[e] op= x`,
//! - of a vec local `v`, or a vec field `h.f` of a handle local, that the loops being lowered
//!   hoisted and that no loop among them pushes to (its length is the same at every
//!   iteration: [`HoistedVec::pushes`]),
//! - whose index `e` is `j`, `base + j` or `j + base`, where `base` is made of integer
//!   literals, reads of `i64` locals that the loop neither declares nor assigns (not `j`), and
//!   `+`, `-` and `*` of those: it wraps instead of raising and has the same value at every
//!   iteration and before the loop; or `x & c` / `c & x` with an integer literal `c >= 0`,
//!   whatever `x` is (the index is in `0..=c`).
//!
//! Before the loop every such `base` is evaluated (it cannot raise and reads nothing the loop
//! writes, so evaluating it early is not observable) and tested, without raising:
//! `0 <= first`, `end <= len`, `0 <= base` and `base <= len - end` (no sum that could wrap:
//! `len - end` is at least 0 once `end <= len`); a mask, `c < len`. When every test passes,
//! every index `base + j` for `j` in `first..end`, and every masked one, is in `0..len`: the
//! loop runs a copy in which those
//! sites have no bounds check (their values are known below their vec's length, as the
//! indexes of [`len_bound`](FunctionTranslator::len_bound) are). Otherwise the loop runs the
//! plain copy, whose checks raise at their own places and in their own order, exactly as
//! before; so does a loop that runs no iteration and fails a test. The plain copy versions no
//! inner loop on its indexes, so the code grows by at most one copy per loop.
//!
//! [`HoistedVec::pushes`]: super::opt_vec::HoistedVec::pushes

use std::collections::HashSet;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value, types};
use cranelift_frontend::Variable;

use crate::lang::hir::{
    BinOp, Block, Expr, ExprKind, LocalId, Place, PlaceKind, Stmt, StmtKind, Type,
};

use super::lower::{FunctionTranslator, LResult, LocalSlot};
use super::opt_walk::{Visitor, Walk, walk_block};

/// Loops larger than this many HIR nodes are not versioned on their indexes (code size).
const MAX_NODES: usize = 400;

/// What bounds an index site's value (see the module docs).
enum Bound {
    /// `base + j` (`None`: `j` alone).
    Affine(Option<Expr>),
    /// `x & c`: in `0..=c`.
    Mask(i64),
}

/// The vec of an index site: a local, or field `f` of handle local `h`.
#[derive(Clone, Copy)]
enum VecOf {
    Local(LocalId),
    Field(LocalId, u32),
}

impl VecOf {
    /// The vec `e` reads, when it is a local or a field of a handle local.
    fn of(e: &Expr) -> Option<VecOf> {
        if !matches!(e.ty, Type::Vec(_)) {
            return None;
        }
        match &e.kind {
            ExprKind::Local(v) => Some(VecOf::Local(*v)),
            ExprKind::Field(object, f) => match object.kind {
                ExprKind::Local(h) => Some(VecOf::Field(h, *f)),
                _ => None,
            },
            _ => None,
        }
    }

    /// The vec a place's base is, the same way.
    fn of_place(p: &Place) -> Option<VecOf> {
        if !matches!(p.ty, Type::Vec(_)) {
            return None;
        }
        match &p.kind {
            PlaceKind::Local(v) => Some(VecOf::Local(*v)),
            PlaceKind::Field { object, field } => match object.kind {
                ExprKind::Local(h) => Some(VecOf::Field(h, *field)),
                _ => None,
            },
            _ => None,
        }
    }
}

/// An index site of the rule: the vec, the index expression (by address: the site's
/// identity while the body is lowered) and what bounds it.
struct Site {
    vec: VecOf,
    index: *const Expr,
    bound: Bound,
}

/// Collects the candidate sites of a loop body and what it declares and assigns.
struct Sites {
    var: LocalId,
    found: Vec<Site>,
    declared: HashSet<LocalId>,
    assigned: HashSet<LocalId>,
    nodes: usize,
    unknown: bool,
}

impl Sites {
    /// What bounds `e` as a site's index: `base + var` in either order, `var` alone, or a
    /// mask by a literal `c >= 0`.
    fn bound(&self, e: &Expr) -> Option<Bound> {
        match &e.kind {
            ExprKind::Local(id) if *id == self.var => Some(Bound::Affine(None)),
            ExprKind::Binary {
                op: BinOp::Add,
                lhs,
                rhs,
                ..
            } => match (&lhs.kind, &rhs.kind) {
                (_, ExprKind::Local(id)) if *id == self.var => {
                    Some(Bound::Affine(Some((**lhs).clone())))
                }
                (ExprKind::Local(id), _) if *id == self.var => {
                    Some(Bound::Affine(Some((**rhs).clone())))
                }
                _ => None,
            },
            ExprKind::Binary {
                op: BinOp::BitAnd,
                lhs,
                rhs,
                ..
            } => match (&lhs.kind, &rhs.kind) {
                (_, ExprKind::Int(c)) | (ExprKind::Int(c), _) if *c >= 0 => Some(Bound::Mask(*c)),
                _ => None,
            },
            _ => None,
        }
    }

    /// An index `index` of vec `vec` (when it is one the rule knows): a site if bounded.
    fn note(&mut self, vec: Option<VecOf>, index: &Expr) {
        if let Some(vec) = vec
            && let Some(bound) = self.bound(index)
        {
            self.found.push(Site {
                vec,
                index: index as *const Expr,
                bound,
            });
        }
    }

    /// Whether `base` is loop-invariant and cannot raise (see the module docs).
    fn invariant(&self, base: &Expr) -> bool {
        match &base.kind {
            ExprKind::Int(_) => true,
            ExprKind::Local(id) => {
                base.ty == Type::I64
                    && *id != self.var
                    && !self.declared.contains(id)
                    && !self.assigned.contains(id)
            }
            ExprKind::Binary {
                op: BinOp::Add | BinOp::Sub | BinOp::Mul,
                lhs,
                rhs,
                ..
            } => base.ty == Type::I64 && self.invariant(lhs) && self.invariant(rhs),
            _ => false,
        }
    }
}

impl Visitor for Sites {
    fn stmt(&mut self, s: &Stmt) -> Walk {
        self.nodes += 1;
        match &s.kind {
            StmtKind::Let { local: v, .. }
            | StmtKind::ForRange { var: v, .. }
            | StmtKind::ForStep { var: v, .. }
            | StmtKind::ForEach { var: v, .. } => {
                self.declared.insert(*v);
            }
            _ => {}
        }
        Walk::Children
    }

    fn place(&mut self, p: &Place, written: bool) -> Walk {
        self.nodes += 1;
        if let (PlaceKind::Local(id), true) = (&p.kind, written) {
            self.assigned.insert(*id);
        }
        if let PlaceKind::Index { base, index } = &p.kind {
            self.note(VecOf::of_place(base), index);
        }
        Walk::Children
    }

    fn expr(&mut self, e: &Expr) -> Walk {
        self.nodes += 1;
        if let ExprKind::Index(vec, index) = &e.kind {
            self.note(VecOf::of(vec), index);
        }
        Walk::Children
    }

    fn unknown(&mut self) {
        self.unknown = true;
    }
}

/// What a site's test before the loop compares with its vec's length.
enum Test {
    /// `base + j` for `j` in the loop's range: its base's value (`None`: 0).
    Affine(Option<Value>),
    /// `x & c`: `c < len`.
    Mask(i64),
}

/// A site the loop can version on: its index expression, the hoisted vec's variable and
/// length, and its test.
struct Versioned {
    index: *const Expr,
    vec: Variable,
    len: Value,
    test: Test,
}

/// The index sites of the loop being lowered whose bounds were tested before it (see the
/// module docs), and whether the plain copy of such a loop is being lowered.
#[derive(Default)]
pub(crate) struct InBounds {
    /// Index expression (by address) → the vec local's variable it is in range of.
    sites: std::collections::HashMap<*const Expr, Variable>,
    /// Lowering the plain copy of a loop versioned on its indexes: inner loops are not.
    plain_copy: bool,
}

impl InBounds {
    /// Whether index expression `index` is a site of a loop whose bounds were tested (in the
    /// copy being lowered): it needs no check.
    pub(crate) fn known(&self, index: &Expr) -> bool {
        self.sites.contains_key(&(index as *const Expr))
    }
}

impl FunctionTranslator<'_, '_> {
    /// Lower a counted loop over `first..end` with loop variable `var` (`lower`, which may run
    /// twice) versioned on the bounds of its vec indexes (see the module docs).
    pub(crate) fn bounds_versioned(
        &mut self,
        var: LocalId,
        first: Value,
        end: Value,
        body: &Block,
        lower: &mut dyn FnMut(&mut Self) -> LResult<()>,
    ) -> LResult<()> {
        if self.in_bounds.plain_copy || self.checked.in_plain_copy() {
            return lower(self);
        }
        let sites = self.versionable_sites(var, body)?;
        if sites.is_empty() {
            return lower(self);
        }
        let zero = self.builder.ins().iconst(types::I64, 0);
        let mut pass = self.builder.ins().iconst(types::I8, 1);
        if sites.iter().any(|s| matches!(s.test, Test::Affine(_))) {
            let from = self
                .builder
                .ins()
                .icmp(IntCC::SignedGreaterThanOrEqual, first, zero);
            pass = self.builder.ins().band(pass, from);
        }
        for s in &sites {
            let base = match s.test {
                Test::Mask(c) => {
                    let fits = self
                        .builder
                        .ins()
                        .icmp_imm_s(IntCC::SignedGreaterThan, s.len, c);
                    pass = self.builder.ins().band(pass, fits);
                    continue;
                }
                Test::Affine(base) => base,
            };
            let fits = self
                .builder
                .ins()
                .icmp(IntCC::SignedLessThanOrEqual, end, s.len);
            pass = self.builder.ins().band(pass, fits);
            if let Some(base) = base {
                let room = self.builder.ins().isub(s.len, end);
                let low = self
                    .builder
                    .ins()
                    .icmp(IntCC::SignedGreaterThanOrEqual, base, zero);
                let high = self
                    .builder
                    .ins()
                    .icmp(IntCC::SignedLessThanOrEqual, base, room);
                let both = self.builder.ins().band(low, high);
                pass = self.builder.ins().band(pass, both);
            }
        }
        let fast_block = self.builder.create_block();
        let plain_block = self.builder.create_block();
        let merge_block = self.builder.create_block();
        self.builder
            .ins()
            .brif(pass, fast_block, &[], plain_block, &[]);
        self.builder.switch_to_block(fast_block);
        self.builder.seal_block(fast_block);
        // A masked site may be an outer loop's too: put back what it knew after.
        let outer: Vec<_> = sites
            .iter()
            .map(|s| (s.index, self.in_bounds.sites.insert(s.index, s.vec)))
            .collect();
        let fast = lower(self);
        for (index, known) in outer {
            match known {
                Some(vec) => self.in_bounds.sites.insert(index, vec),
                None => self.in_bounds.sites.remove(&index),
            };
        }
        fast?;
        self.builder.ins().jump(merge_block, &[]);
        self.builder.switch_to_block(plain_block);
        self.builder.seal_block(plain_block);
        self.in_bounds.plain_copy = true;
        let plain = lower(self);
        self.in_bounds.plain_copy = false;
        plain?;
        self.builder.ins().jump(merge_block, &[]);
        self.builder.switch_to_block(merge_block);
        self.builder.seal_block(merge_block);
        Ok(())
    }

    /// The sites of `body` the rule allows, their bases evaluated (before the loop).
    fn versionable_sites(&mut self, var: LocalId, body: &Block) -> LResult<Vec<Versioned>> {
        let mut w = Sites {
            var,
            found: Vec::new(),
            declared: HashSet::new(),
            assigned: HashSet::new(),
            nodes: 0,
            unknown: false,
        };
        walk_block(body, &mut w);
        if w.unknown || w.nodes > MAX_NODES {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for site in &w.found {
            if let Bound::Affine(Some(b)) = &site.bound
                && !w.invariant(b)
            {
                continue;
            }
            let hoisted = match site.vec {
                VecOf::Local(id) => match self.local(id) {
                    Ok(LocalSlot::Scalar(var)) => self.hoisted_vec_var(var),
                    _ => None,
                },
                VecOf::Field(h, f) => self.hoisted_field(h, f),
            };
            let Some(hoisted) = hoisted else {
                continue;
            };
            let vec = hoisted.key();
            if hoisted.pushes() {
                continue;
            }
            let len = self.hoisted_len(hoisted);
            let test = match &site.bound {
                Bound::Affine(Some(b)) => Test::Affine(Some(self.translate_expr(b)?)),
                Bound::Affine(None) => Test::Affine(None),
                Bound::Mask(c) => Test::Mask(*c),
            };
            out.push(Versioned {
                index: site.index,
                vec,
                len,
                test,
            });
        }
        Ok(out)
    }

    /// `v`, just computed for expression `e`: when `e` is an index site of a loop whose bounds
    /// were tested (see the module docs), remember it as below its vec's length.
    pub(crate) fn note_in_bounds(&mut self, e: &Expr, v: Value) {
        if self.in_bounds.sites.is_empty() {
            return;
        }
        if let Some(&of) = self.in_bounds.sites.get(&(e as *const Expr)) {
            self.ranges.note_below_len(v, of);
        }
    }
}
