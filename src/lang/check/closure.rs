//! Lambdas and closure calls: `|a: i64| -> i64 { body }`, `fn(A) -> R` values, `f(x)` of any
//! expression of a fn type.
//!
//! A lambda's body is checked as a function of its own, with the enclosing functions' states
//! kept on [`Checker::enclosing`]. A name the body does not declare is looked up outward: an
//! enclosing local becomes a *capture* (a new immutable local of the lambda, filled from the
//! closure at entry), and so does it in every lambda in between (nested lambdas capture
//! through). Module names are not captured: the body reads module variables live, as any
//! function does.

use std::collections::HashMap;

use super::class::Coerced;
use super::{Checker, FnState, LocalInfo, LocalWhat};
use crate::lang::ast;
use crate::lang::diag::{DiagKind, Diagnostic};
use crate::lang::hir::{Expr, ExprKind, FuncId, Function, Local, LocalId, Type};
use crate::lang::span::Span;

/// What a lambda's body captured: `(inner local, the enclosing function's local)` in the
/// order of the closure's cells.
#[derive(Debug, Clone, Default)]
pub(super) struct Captures {
    by_name: HashMap<String, LocalId>,
    list: Vec<(LocalId, LocalId)>,
}

impl Captures {
    /// The capture local for `name`, if captured already.
    pub(super) fn get(&self, name: &str) -> Option<LocalId> {
        self.by_name.get(name).copied()
    }
}

/// Resolve `name` in the last state of `states` (its outer functions before it), capturing it
/// from outside when that state is a lambda's.
pub(super) fn resolve_capture(states: &mut [FnState], name: &str) -> Option<LocalId> {
    let (last, outer) = states.split_last_mut()?;
    if let Some(id) = last.visible(name) {
        return Some(id);
    }
    last.lambda.as_ref()?;
    let outer_id = resolve_capture(outer, name)?;
    let from = outer.last()?;
    let ty = from.info[outer_id.index()].ty.clone();
    let span = from.locals[outer_id.index()].span;
    let id = LocalId(last.locals.len() as u32);
    last.locals.push(Local {
        name: name.to_string(),
        ty: ty.clone().unwrap_or(Type::Unit),
        mutable: false,
        span,
    });
    last.info.push(LocalInfo {
        ty,
        what: LocalWhat::Capture,
    });
    let captures = last.lambda.as_mut()?;
    captures.by_name.insert(name.to_string(), id);
    captures.list.push((id, outer_id));
    Some(id)
}

impl Checker {
    /// `|params| -> ret { body }`: a new closure.
    pub(super) fn lambda(
        &mut self,
        params: &[ast::Param],
        ret: Option<&ast::TypeExpr>,
        body: &ast::Block,
        span: Span,
    ) -> Option<Expr> {
        let param_types = self.param_types(params);
        let ret_ty = match ret {
            Some(t) => self.resolve_type(t),
            None => Some(Type::Unit),
        };
        let head = Span::new(span.start as usize, span.start as usize + 1);
        // Unique (symbols of the `object` backend), named after the declared function.
        self.lambda_count += 1;
        let name = format!("<closure {} in {}>", self.lambda_count, self.f.fn_name);
        let state = FnState {
            ret: ret_ty.clone(),
            self_class: self.f.self_class,
            fn_name: self.f.fn_name.clone(),
            lambda: Some(Captures::default()),
            ..FnState::default()
        };
        self.enclosing.push(std::mem::replace(&mut self.f, state));
        self.f.scope_marks.push(0);
        for (p, ty) in params.iter().zip(&param_types) {
            self.add_local(&p.name, ty.clone(), LocalWhat::Param);
        }
        // The body's statements report on their own; the lambda is one expression of the
        // enclosing statement.
        let reported = std::mem::replace(&mut self.reported, false);
        let errors_before = self.diags.len();
        let hir_body = self.block(body);
        let ret_span = ret.map_or(head, |t| t.span);
        self.check_falls_off(
            &hir_body,
            &ret_ty,
            errors_before,
            body.span,
            ret_span,
            &name,
        );
        let clean = self.diags.len() == errors_before;
        self.reported = reported || !clean;
        let state = std::mem::replace(&mut self.f, self.enclosing.pop().unwrap_or_default());
        let captures = state.lambda.unwrap_or_default().list;
        let params: Vec<Type> = param_types.into_iter().collect::<Option<_>>()?;
        let ret_ty = ret_ty?;
        if !clean {
            return None;
        }
        let mut values = Vec::with_capacity(captures.len());
        for &(_, outer) in &captures {
            let ty = self.f.info[outer.index()].ty.clone()?;
            values.push(Expr {
                kind: ExprKind::Local(outer),
                ty,
                span,
            });
        }
        let func = FuncId((self.sigs.len() + self.lambdas.len()) as u32);
        self.lambdas.push(Function {
            name,
            param_count: params.len() as u32,
            ret: ret_ty.clone(),
            locals: state.locals,
            body: hir_body,
            span,
            name_span: head,
            class: None,
            captures: Some(captures.iter().map(|&(inner, _)| inner).collect()),
        });
        Some(Expr {
            kind: ExprKind::Closure {
                func,
                captures: values,
            },
            ty: Type::Fn {
                params,
                ret: Box::new(ret_ty),
            },
            span,
        })
    }

    /// `callee(args)` where `callee` is a value (of a fn type, else an error).
    pub(super) fn closure_call(
        &mut self,
        callee: &ast::Expr,
        args: &[ast::Expr],
        span: Span,
    ) -> Option<Expr> {
        let callee = self.expr(callee);
        let checked: Vec<Option<Expr>> = args.iter().map(|a| self.expr(a)).collect();
        let callee = callee?;
        let Type::Fn { params, ret } = &callee.ty else {
            self.error(
                Diagnostic::new(
                    DiagKind::TypeMismatch,
                    callee.span,
                    format!("a value of type `{}` cannot be called", callee.ty),
                )
                .with_note("only functions and closures (`fn(..)` values) can be called"),
            );
            return None;
        };
        let params: Vec<Option<Type>> = params.iter().cloned().map(Some).collect();
        let ret = (**ret).clone();
        let what = format!("this `{}`", callee.ty);
        let label = (callee.span, format!("this is a `{}`", callee.ty));
        let args = self.check_call_args(&what, &params, checked, span, Some(label))?;
        Some(Expr {
            kind: ExprKind::CallClosure(Box::new(callee), args),
            ty: ret,
            span,
        })
    }

    /// Check a call's arguments against its parameters: the count (an `arity` error naming
    /// `what`, with `label`), then each argument's type.
    pub(super) fn check_call_args(
        &mut self,
        what: &str,
        params: &[Option<Type>],
        checked: Vec<Option<Expr>>,
        span: Span,
        label: Option<(Span, String)>,
    ) -> Option<Vec<Expr>> {
        if params.len() != checked.len() {
            let plural = if params.len() == 1 { "" } else { "s" };
            let mut d = Diagnostic::new(
                DiagKind::Arity,
                span,
                format!(
                    "{what} takes {} argument{plural} but {} {} given",
                    params.len(),
                    checked.len(),
                    if checked.len() == 1 { "was" } else { "were" }
                ),
            );
            if let Some((at, text)) = label {
                d = d.with_label(at, text);
            }
            self.error(d);
            return None;
        }
        let mut out = Vec::with_capacity(checked.len());
        let mut ok = true;
        for (arg, param) in checked.into_iter().zip(params) {
            match (arg, param) {
                (Some(arg), Some(param)) => match self.coerce(arg, param) {
                    Coerced::Ok(arg) => out.push(arg),
                    Coerced::Mismatch(arg) => {
                        let mut d = super::expr::mismatch(arg.span, param, &arg.ty);
                        if let Some((at, why)) = self.narrow_note(&arg) {
                            d = d.with_label(at, "assigned here").with_note(why);
                        }
                        self.error(d);
                        ok = false;
                    }
                    Coerced::Reported => ok = false,
                },
                _ => ok = false,
            }
        }
        ok.then_some(out)
    }
}
