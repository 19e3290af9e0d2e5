//! Calls of the builtin functions that need no declaration: the math builtins (`abs`, `min`,
//! `max`, `sqrt`, ...). A module's own `fn` or `native fn` of the same name takes precedence.

use super::Checker;
use crate::lang::ast;
use crate::lang::diag::{DiagKind, Diagnostic};
use crate::lang::hir::{Expr, ExprKind, Math, Type};
use crate::lang::span::Span;

impl Checker {
    /// Whether `name` (not declared by the module) is a builtin function.
    pub(super) fn is_builtin(&self, name: &str) -> bool {
        !self.names.contains_key(name) && Math::NAMES.contains(&name)
    }

    /// `name(args)` of a math builtin.
    pub(super) fn math_call(&mut self, name: &str, args: &[ast::Expr], span: Span) -> Option<Expr> {
        let checked: Vec<Option<Expr>> = args.iter().map(|a| self.expr(a)).collect();
        let want = if matches!(name, "min" | "max" | "atan2" | "pow") {
            2
        } else {
            1
        };
        if args.len() != want {
            let plural = if want == 1 { "" } else { "s" };
            self.error(Diagnostic::new(
                DiagKind::Arity,
                span,
                format!(
                    "`{name}` takes {want} argument{plural} but {} {} given",
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
            ));
            return None;
        }
        let args: Vec<Expr> = checked.into_iter().collect::<Option<_>>()?;
        let first = &args[0];
        let math = match Math::resolve(name, &first.ty)? {
            Ok(m) => m,
            Err(takes) => {
                let mut d = Diagnostic::new(
                    DiagKind::TypeMismatch,
                    first.span,
                    format!("`{name}` takes {takes}, found `{}`", first.ty),
                );
                if first.ty == Type::I64 {
                    d = d.with_note("there are no implicit conversions: write `x as f64`");
                }
                self.error(d);
                return None;
            }
        };
        let ty = math.ty();
        if let Some(other) = args[1..].iter().find(|a| a.ty != ty) {
            self.error(
                Diagnostic::new(
                    DiagKind::TypeMismatch,
                    other.span,
                    format!(
                        "mismatched types: `{name}` of `{ty}` needs `{ty}` here, found `{}`",
                        other.ty
                    ),
                )
                .with_label(first.span, format!("`{ty}`")),
            );
            return None;
        }
        Some(Expr {
            kind: ExprKind::Math(math, args),
            ty,
            span,
        })
    }
}
