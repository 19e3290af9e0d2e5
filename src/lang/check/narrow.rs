//! Flow typing: where a condition proves a local handle non-null (`x != null`) or of a derived
//! class (`x is D`), reads of that local have the narrower type.
//!
//! A *fact* is a local and the type a condition proves it has. The facts of a condition that
//! is true hold in an `if`'s then-block, in a `while`'s body and in the right operand of `&&`;
//! those of a condition that is false hold in the else-block, in the right operand of `||`, and
//! in the rest of the enclosing block after an `if` whose then-block cannot finish (`if x ==
//! null { return }`). Conditions combine: `!c` swaps true and false, `a && b` (true) and
//! `a || b` (false) give the facts of both sides.
//!
//! A block that assigns the local anywhere (`x = ...`, also in a nested block or loop) keeps
//! none of its facts: the checker does not follow the order of statements. The fact is kept
//! aside as *broken* instead, so a diagnostic that a narrowed type would have avoided can say
//! where the assignment is. A narrowed read is only a read with a more precise type: the value
//! is the same cell, and no backend tests it again.

use super::{Checker, LocalWhat};
use crate::lang::ast::{self, BinaryOp, UnaryOp};
use crate::lang::hir::{Expr, ExprKind, LocalId, Type};
use crate::lang::span::Span;

/// A local and the type a condition proves it has.
pub(super) type Fact = (LocalId, Type);

impl Checker {
    /// The facts that hold where `cond` evaluated to `when`.
    pub(super) fn facts(&self, cond: &ast::Expr, when: bool) -> Vec<Fact> {
        let mut out = Vec::new();
        self.facts_into(cond, when, &mut out);
        out
    }

    fn facts_into(&self, cond: &ast::Expr, when: bool, out: &mut Vec<Fact>) {
        match &cond.kind {
            ast::ExprKind::Paren(inner) => self.facts_into(inner, when, out),
            ast::ExprKind::Unary {
                op: UnaryOp::Not,
                operand,
            } => self.facts_into(operand, !when, out),
            ast::ExprKind::Binary { op, lhs, rhs, .. } => match (op, when) {
                (BinaryOp::And, true) | (BinaryOp::Or, false) => {
                    self.facts_into(lhs, when, out);
                    self.facts_into(rhs, when, out);
                }
                (BinaryOp::Ne, true) | (BinaryOp::Eq, false) => {
                    let name = match (&lhs.kind, &rhs.kind) {
                        (ast::ExprKind::Name(n), ast::ExprKind::Null)
                        | (ast::ExprKind::Null, ast::ExprKind::Name(n)) => n,
                        _ => return,
                    };
                    if let Some((id, Type::Handle { class, name, .. })) = self.local_handle(name) {
                        out.push((
                            id,
                            Type::Handle {
                                class,
                                name,
                                nullable: false,
                            },
                        ));
                    }
                }
                _ => {}
            },
            ast::ExprKind::Is(object, target) if when => {
                let ast::ExprKind::Name(name) = &object.kind else {
                    return;
                };
                let Some((id, Type::Handle { class, .. })) = self.local_handle(name) else {
                    return;
                };
                if let Some(super::ModName::Class(d)) = self.names.get(&target.name).map(|n| n.0)
                    && d != class
                    && self.derives(d, class)
                {
                    out.push((id, self.handle_type(d, false)));
                }
            }
            _ => {}
        }
    }

    /// A local of handle type visible as `name`, with its type here (narrowed or declared).
    fn local_handle(&self, name: &str) -> Option<(LocalId, Type)> {
        let id = self.f.visible(name)?;
        let ty = self
            .narrowed_type(id)
            .or_else(|| self.f.info[id.index()].ty.clone())?;
        matches!(ty, Type::Handle { .. }).then_some((id, ty))
    }

    /// The narrowed type of a local here, if a fact holds for it.
    pub(super) fn narrowed_type(&self, id: LocalId) -> Option<Type> {
        self.f
            .narrowed
            .iter()
            .rev()
            .find(|(l, _)| *l == id)
            .map(|(_, t)| t.clone())
    }

    /// Make `facts` hold while `f` runs, except those of locals that `stmts` assign (kept as
    /// broken, with the assignment).
    pub(super) fn with_facts<T>(
        &mut self,
        facts: Vec<Fact>,
        stmts: &[ast::Stmt],
        f: impl FnOnce(&mut Self) -> T,
    ) -> T {
        let (narrowed, broken) = (self.f.narrowed.len(), self.f.broken.len());
        self.add_facts(facts, stmts);
        let r = f(self);
        self.f.narrowed.truncate(narrowed);
        self.f.broken.truncate(broken);
        r
    }

    /// Add `facts` for the rest of the current region (the caller truncates).
    pub(super) fn add_facts(&mut self, facts: Vec<Fact>, stmts: &[ast::Stmt]) {
        for (id, ty) in facts {
            let assigned = if self.f.info[id.index()].what == LocalWhat::Var {
                assignment(stmts, &self.f.locals[id.index()].name)
            } else {
                None
            };
            match assigned {
                Some(at) => self.f.broken.push((id, ty, at)),
                None => self.f.narrowed.push((id, ty)),
            }
        }
    }

    /// For a diagnostic about `e`: when `e` reads a local whose narrowing an assignment broke,
    /// the assignment's span and a note saying so.
    pub(super) fn narrow_note(&self, e: &Expr) -> Option<(Span, String)> {
        let ExprKind::Local(id) = e.kind else {
            return None;
        };
        let (_, ty, at) = self.f.broken.iter().rev().find(|(l, ..)| *l == id)?;
        let name = &self.f.locals[id.index()].name;
        Some((
            *at,
            format!(
                "a condition makes `{name}` a `{ty}` only in a block that does not assign \
                 `{name}`; this one does (underlined), so `{name}` keeps its type `{}` here: \
                 test a copy that is never assigned (`let v = {name}`, then `if v is ...` or \
                 `if v != null`)",
                e.ty
            ),
        ))
    }
}

/// Where `stmts` (nested blocks and loops included) first assign the local `name`.
fn assignment(stmts: &[ast::Stmt], name: &str) -> Option<Span> {
    stmts.iter().find_map(|s| match &s.kind {
        ast::StmtKind::Assign { target, .. } => {
            let mut t = target;
            while let ast::ExprKind::Paren(inner) = &t.kind {
                t = inner;
            }
            matches!(&t.kind, ast::ExprKind::Name(n) if n == name).then_some(s.span)
        }
        ast::StmtKind::If {
            then_block,
            else_block,
            ..
        } => assignment(&then_block.stmts, name)
            .or_else(|| else_block.as_ref().and_then(|b| assignment(&b.stmts, name))),
        ast::StmtKind::While { body, .. } | ast::StmtKind::For { body, .. } => {
            assignment(&body.stmts, name)
        }
        ast::StmtKind::Block(b) => assignment(&b.stmts, name),
        _ => None,
    })
}

/// Whether a block cannot finish normally: it returns, breaks or continues on every path.
pub(super) fn exits(block: &ast::Block) -> bool {
    block.stmts.iter().any(|s| match &s.kind {
        ast::StmtKind::Return(_) | ast::StmtKind::Break | ast::StmtKind::Continue => true,
        ast::StmtKind::If {
            then_block,
            else_block: Some(else_block),
            ..
        } => exits(then_block) && exits(else_block),
        ast::StmtKind::Block(b) => exits(b),
        _ => false,
    })
}
