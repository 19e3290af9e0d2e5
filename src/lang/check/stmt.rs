//! Statements, places and the "every path returns" analysis.

use super::class::Coerced;
use super::{Checker, LocalWhat, ModName};
use crate::lang::ast::{self, ForIter};
use crate::lang::diag::{DiagKind, Diagnostic};
use crate::lang::hir::{Block, Expr, ExprKind, Place, PlaceKind, Stmt, StmtKind, Type};

impl Checker {
    /// A block in a scope of its own.
    pub(super) fn block(&mut self, block: &ast::Block) -> Block {
        self.open_scope();
        let mut out = Block::default();
        self.block_into(block, &mut out);
        self.close_scope();
        out
    }

    fn block_into(&mut self, block: &ast::Block, out: &mut Block) {
        let (narrowed, broken) = (self.f.narrowed.len(), self.f.broken.len());
        for (i, stmt) in block.stmts.iter().enumerate() {
            if let ast::StmtKind::Block(inner) = &stmt.kind {
                // A nested block is only a scope: its statements join this block.
                self.open_scope();
                self.block_into(inner, out);
                self.close_scope();
                continue;
            }
            if let Some(s) = self.statement(|ck| ck.stmt(stmt)) {
                out.stmts.push(s);
            }
            // After `if x == null { return }`, the rest of the block has `x` non-null.
            if let ast::StmtKind::If {
                cond,
                then_block,
                else_block,
            } = &stmt.kind
            {
                let rest = &block.stmts[i + 1..];
                if super::narrow::exits(then_block) {
                    let facts = self.facts(cond, false);
                    self.add_facts(facts, rest);
                } else if else_block.as_ref().is_some_and(super::narrow::exits) {
                    let facts = self.facts(cond, true);
                    self.add_facts(facts, rest);
                }
            }
        }
        self.f.narrowed.truncate(narrowed);
        self.f.broken.truncate(broken);
    }

    /// The initializer of a `let`/`var` with its type (checked against the annotation).
    pub(super) fn var_init(&mut self, decl: &ast::VarDecl) -> Option<(Type, Expr)> {
        let init = self.expr(&decl.init);
        let annotated = match &decl.ty {
            Some(t) => Some((self.resolve_type(t)?, t.span)),
            None => None,
        };
        let init = init?;
        if let Some((ty, span)) = annotated {
            return match self.coerce(init, &ty) {
                Coerced::Ok(init) => Some((ty, init)),
                Coerced::Reported => None,
                Coerced::Mismatch(init) => {
                    self.error(
                        Diagnostic::new(
                            DiagKind::TypeMismatch,
                            init.span,
                            format!("mismatched types: expected `{ty}`, found `{}`", init.ty),
                        )
                        .with_label(span, "the declared type"),
                    );
                    None
                }
            };
        } else if init.ty == Type::Null {
            self.error(
                Diagnostic::new(
                    DiagKind::TypeMismatch,
                    init.span,
                    "`null` alone does not say which class it is a handle to",
                )
                .with_note(format!(
                    "write the type: `var {}: C? = null`",
                    decl.name.name
                )),
            );
            return None;
        } else if init.ty == Type::Unit {
            self.error(Diagnostic::new(
                DiagKind::TypeMismatch,
                init.span,
                "this expression has no value to store",
            ));
            return None;
        }
        Some((init.ty.clone(), init))
    }

    fn stmt(&mut self, stmt: &ast::Stmt) -> Option<Stmt> {
        let kind = match &stmt.kind {
            ast::StmtKind::Var(decl) => {
                let checked = self.var_init(decl);
                let what = if decl.mutable {
                    LocalWhat::Var
                } else {
                    LocalWhat::Let
                };
                // Declared even when broken, so later uses do not report it as unknown.
                let local = self.add_local(&decl.name, checked.as_ref().map(|c| c.0.clone()), what);
                StmtKind::Let {
                    local,
                    init: checked?.1,
                }
            }
            ast::StmtKind::Assign {
                target,
                op,
                op_span,
                value,
            } => {
                let place = self.place(target);
                let value = self.expr(value)?;
                let place = place?;
                let op = match op {
                    Some(op) => {
                        let op = self.binary_op_for(*op, &place.ty, *op_span)?;
                        Some(op)
                    }
                    None => None,
                };
                let value = match self.coerce(value, &place.ty) {
                    Coerced::Ok(v) => v,
                    Coerced::Reported => return None,
                    Coerced::Mismatch(v) => v,
                };
                if value.ty != place.ty {
                    self.error(
                        Diagnostic::new(
                            DiagKind::TypeMismatch,
                            value.span,
                            format!(
                                "mismatched types: expected `{}`, found `{}`",
                                place.ty, value.ty
                            ),
                        )
                        .with_label(place.span, format!("this has type `{}`", place.ty)),
                    );
                    return None;
                }
                StmtKind::Assign {
                    place,
                    op,
                    op_span: *op_span,
                    value,
                }
            }
            ast::StmtKind::Expr(e) => StmtKind::Expr(self.expr(e)?),
            ast::StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                let checked = self.condition(cond, "if");
                let facts = self.facts(cond, true);
                let then_block =
                    self.with_facts(facts, &then_block.stmts, |ck| ck.block(then_block));
                let else_block = else_block.as_ref().map(|b| {
                    let facts = self.facts(cond, false);
                    self.with_facts(facts, &b.stmts, |ck| ck.block(b))
                });
                let cond = checked;
                StmtKind::If {
                    cond: cond?,
                    then_block,
                    else_block,
                }
            }
            ast::StmtKind::While { cond, body } => {
                let checked = self.condition(cond, "while");
                self.f.loops.push(false);
                let facts = self.facts(cond, true);
                let body = self.with_facts(facts, &body.stmts, |ck| ck.block(body));
                self.f.loops.pop();
                let cond = checked;
                StmtKind::While { cond: cond?, body }
            }
            ast::StmtKind::For { var, iter, body } => self.for_loop(var, iter, body)?,
            ast::StmtKind::Break | ast::StmtKind::Continue => {
                let is_break = matches!(stmt.kind, ast::StmtKind::Break);
                let Some(has_break) = self.f.loops.last_mut() else {
                    let word = if is_break { "break" } else { "continue" };
                    self.error(Diagnostic::new(
                        DiagKind::OutsideLoop,
                        stmt.span,
                        format!("`{word}` outside of a loop"),
                    ));
                    return None;
                };
                if is_break {
                    *has_break = true;
                    StmtKind::Break
                } else {
                    StmtKind::Continue
                }
            }
            ast::StmtKind::Return(value) => self.return_stmt(value.as_ref(), stmt)?,
            // Flattened by `block_into`.
            ast::StmtKind::Block(_) => return None,
        };
        Some(Stmt {
            kind,
            span: stmt.span,
        })
    }

    fn condition(&mut self, cond: &ast::Expr, keyword: &str) -> Option<Expr> {
        let cond = self.expr(cond)?;
        if cond.ty != Type::Bool {
            self.error(Diagnostic::new(
                DiagKind::TypeMismatch,
                cond.span,
                format!(
                    "the condition of `{keyword}` must be `bool`, found `{}`",
                    cond.ty
                ),
            ));
            return None;
        }
        Some(cond)
    }

    fn for_loop(
        &mut self,
        var: &ast::Ident,
        iter: &ForIter,
        body: &ast::Block,
    ) -> Option<StmtKind> {
        let span_of = |e: &ast::Expr| e.span;
        let (header, var_ty) = match iter {
            ForIter::Range {
                start,
                end,
                inclusive,
                step,
            } => {
                let start_e = self.expr(start);
                let end_e = self.expr(end);
                let step_e = step.as_ref().map(|b| (self.expr(&b.0), b.1));
                let mut ok = true;
                for e in [&start_e, &end_e].into_iter().flatten() {
                    if e.ty != Type::I64 {
                        self.error(Diagnostic::new(
                            DiagKind::TypeMismatch,
                            e.span,
                            format!("a range bound must be `i64`, found `{}`", e.ty),
                        ));
                        ok = false;
                    }
                }
                let step = match step_e {
                    None => Some(None),
                    Some((Some(k), at)) => self.range_step(k).map(|k| Some(Box::new((k, at)))),
                    Some((None, _)) => None,
                };
                let header = match (start_e, end_e, step) {
                    (Some(s), Some(e), Some(step)) if ok => {
                        Some(Header::Range(s, e, *inclusive, step))
                    }
                    _ => None,
                };
                (header, Some(Type::I64))
            }
            ForIter::Each(array) => {
                let array_e = self.expr(array);
                match array_e {
                    Some(a) => match &a.ty {
                        Type::Array(elem, _) | Type::Vec(elem) => {
                            let elem = (**elem).clone();
                            (Some(Header::Each(a)), Some(elem))
                        }
                        other => {
                            self.error(Diagnostic::new(
                                DiagKind::TypeMismatch,
                                span_of(array),
                                format!(
                                    "`for ... in` needs an array, a vec or a range, found `{other}`"
                                ),
                            ));
                            (None, None)
                        }
                    },
                    None => (None, None),
                }
            }
        };
        self.open_scope();
        let local = self.add_local(var, var_ty, LocalWhat::LoopVar);
        self.f.loops.push(false);
        let body = self.block(body);
        self.f.loops.pop();
        self.close_scope();
        Some(match header? {
            Header::Range(start, end, false, None) => StmtKind::ForRange {
                var: local,
                start,
                end,
                body,
            },
            Header::Range(start, end, inclusive, step) => {
                let step_span = step.as_ref().map_or(end.span, |b| b.1);
                StmtKind::ForStep {
                    var: local,
                    start,
                    end,
                    inclusive,
                    step: step.map(|b| b.0),
                    step_span,
                    body,
                }
            }
            Header::Each(array) => StmtKind::ForEach {
                var: local,
                array,
                body,
            },
        })
    }

    /// A range's `step k`: `i64`, and not a constant that is not positive.
    fn range_step(&mut self, k: Expr) -> Option<Expr> {
        if k.ty != Type::I64 {
            self.error(Diagnostic::new(
                DiagKind::TypeMismatch,
                k.span,
                format!("a range step must be `i64`, found `{}`", k.ty),
            ));
            return None;
        }
        if let ExprKind::Int(v) = k.kind
            && v <= 0
        {
            self.error(
                Diagnostic::new(
                    DiagKind::Other,
                    k.span,
                    format!("a range step must be positive, not {v}"),
                )
                .with_note(
                    "to count down, count up and subtract: `for j in 0..n { let i = n - 1 - j }`",
                ),
            );
            return None;
        }
        Some(k)
    }

    fn return_stmt(&mut self, value: Option<&ast::Expr>, stmt: &ast::Stmt) -> Option<StmtKind> {
        let value = match value {
            Some(v) => Some(self.expr(v)?),
            None => None,
        };
        let ret = self.f.ret.clone()?;
        let value = match value {
            Some(v) => match self.coerce(v, &ret) {
                Coerced::Ok(v) | Coerced::Mismatch(v) => Some(v),
                Coerced::Reported => return None,
            },
            None => None,
        };
        let found = value.as_ref().map_or(Type::Unit, |v| v.ty.clone());
        if found != ret {
            let msg = match (&value, ret == Type::Unit) {
                (Some(_), true) => {
                    "this function returns nothing, so `return` takes no value".to_string()
                }
                (None, _) => format!("`return` needs a value of type `{ret}`"),
                (Some(_), false) => {
                    format!("mismatched types: expected `{ret}`, found `{found}`")
                }
            };
            let span = value.as_ref().map_or(stmt.span, |v| v.span);
            self.error(Diagnostic::new(DiagKind::TypeMismatch, span, msg));
            return None;
        }
        Some(StmtKind::Return(value))
    }

    /// An assignable place.
    fn place(&mut self, target: &ast::Expr) -> Option<Place> {
        self.place_for(target, "assign to")
    }

    /// A place that can be changed, for an operation described by `verb` ("assign to",
    /// "push to").
    pub(super) fn place_for(&mut self, target: &ast::Expr, verb: &str) -> Option<Place> {
        let span = target.span;
        match &target.kind {
            ast::ExprKind::Paren(inner) => self.place_for(inner, verb),
            ast::ExprKind::Name(name) => {
                if let Some(id) = self.lookup_local(name) {
                    let info = self.f.info[id.index()].clone();
                    let ty = info.ty?;
                    if info.what != LocalWhat::Var {
                        let what = match info.what {
                            LocalWhat::Capture => {
                                "captured by this closure (a copy made when the closure was \
                                 created; the closure cannot change it)"
                            }
                            LocalWhat::Param => "a parameter",
                            LocalWhat::LoopVar => "a loop variable",
                            _ => "declared with `let`",
                        };
                        let decl = self.f.locals[id.index()].span;
                        let mut d = Diagnostic::new(
                            DiagKind::AssignToImmutable,
                            span,
                            format!("cannot {verb} `{name}`: it is {what}"),
                        )
                        .with_label(decl, "declared here");
                        if info.what == LocalWhat::Let {
                            d = d.with_note("declare it with `var` to change it");
                        }
                        self.error(d);
                        return None;
                    }
                    return Some(Place {
                        kind: PlaceKind::Local(id),
                        ty,
                        span,
                    });
                }
                match self.lookup_module(name, span).ok()? {
                    Some(ModName::Global(id)) => {
                        let ty = self.global_types[id.index()].clone()?;
                        if !self.globals[id.index()].mutable {
                            let decl = self.globals[id.index()].span;
                            self.error(
                                Diagnostic::new(
                                    DiagKind::AssignToImmutable,
                                    span,
                                    format!("cannot {verb} `{name}`: it is a module constant"),
                                )
                                .with_label(decl, "declared with `let` here"),
                            );
                            return None;
                        }
                        Some(Place {
                            kind: PlaceKind::Global(id),
                            ty,
                            span,
                        })
                    }
                    Some(_) => {
                        self.error(Diagnostic::new(
                            DiagKind::AssignToImmutable,
                            span,
                            format!("cannot {verb} `{name}`: it is not a variable"),
                        ));
                        None
                    }
                    None => {
                        self.error(Diagnostic::new(
                            DiagKind::UnknownName,
                            span,
                            format!("unknown name `{name}`"),
                        ));
                        None
                    }
                }
            }
            ast::ExprKind::Index(base, index) => {
                let base = self.place_for(base, verb);
                let index = self.index_expr(index);
                let base = base?;
                let elem = self.element_type(&base.ty, base.span)?;
                Some(Place {
                    kind: PlaceKind::Index {
                        base: Box::new(base),
                        index: Box::new(index?),
                    },
                    ty: elem,
                    span,
                })
            }
            ast::ExprKind::Field(object, field) => self.field_place(object, field, span),
            _ => {
                self.error(
                    Diagnostic::new(
                        DiagKind::Other,
                        span,
                        format!("cannot {verb} this expression"),
                    )
                    .with_note("it must be a variable, a field, or an element of an array or vec"),
                );
                None
            }
        }
    }
}

/// A checked `for` header.
enum Header {
    /// `start`, `end`, inclusive, `step k` with the span of `step`.
    Range(
        Expr,
        Expr,
        bool,
        Option<Box<(Expr, crate::lang::span::Span)>>,
    ),
    /// `for x in array`.
    Each(Expr),
}

/// Whether running the block can never reach its end: some statement always returns, or loops
/// forever (`while true` with no `break` of its own).
pub(super) fn block_diverges(block: &Block) -> bool {
    block.stmts.iter().any(stmt_diverges)
}

fn stmt_diverges(stmt: &Stmt) -> bool {
    match &stmt.kind {
        StmtKind::Return(_) => true,
        StmtKind::If {
            then_block,
            else_block: Some(else_block),
            ..
        } => block_diverges(then_block) && block_diverges(else_block),
        StmtKind::While { cond, body } => {
            matches!(cond.kind, ExprKind::Bool(true)) && !has_own_break(body)
        }
        _ => false,
    }
}

/// Whether a loop body contains a `break` that leaves this loop (not an inner one).
fn has_own_break(block: &Block) -> bool {
    block.stmts.iter().any(|s| match &s.kind {
        StmtKind::Break => true,
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => has_own_break(then_block) || else_block.as_ref().is_some_and(has_own_break),
        _ => false,
    })
}
