//! Calls of the builtin functions that need no declaration: `print` and the math builtins
//! (`abs`, `min`, `max`, `sqrt`, ...). A module's own `fn` or `native fn` of the same name
//! takes precedence.

use super::Checker;
use crate::lang::ast;
use crate::lang::diag::{DiagKind, Diagnostic};
use crate::lang::hir::{Expr, ExprKind, Math, Type};
use crate::lang::span::Span;

impl Checker {
    /// Whether `name` (not declared by the module) is a builtin function.
    pub(super) fn is_builtin(&self, name: &str) -> bool {
        !self.names.contains_key(name) && (name == "print" || Math::NAMES.contains(&name))
    }

    /// A call of a builtin function (`is_builtin(name)`).
    pub(super) fn builtin_call(
        &mut self,
        name: &str,
        args: &[ast::Expr],
        span: Span,
    ) -> Option<Expr> {
        if name == "print" {
            return self.print_call(args, span);
        }
        self.math_call(name, args, span)
    }

    /// `print(e)`: any value that has a text form (everything but a unit call).
    fn print_call(&mut self, args: &[ast::Expr], span: Span) -> Option<Expr> {
        let checked: Vec<Option<Expr>> = args.iter().map(|a| self.expr(a)).collect();
        if args.len() != 1 {
            self.error(
                Diagnostic::new(
                    DiagKind::Arity,
                    span,
                    format!(
                        "`print` takes 1 argument but {} {} given",
                        args.len(),
                        if args.len() == 1 { "was" } else { "were" }
                    ),
                )
                .with_note("print several values with one string: `print(\"${a} ${b}\")`"),
            );
            return None;
        }
        let arg = checked.into_iter().next().flatten()?;
        if arg.ty == Type::Unit {
            self.error(Diagnostic::new(
                DiagKind::TypeMismatch,
                arg.span,
                "`print` needs a value, and this expression has none to show",
            ));
            return None;
        }
        Some(Expr {
            kind: ExprKind::Print(Box::new(arg)),
            ty: Type::Unit,
            span,
        })
    }

    /// `name(args)` of a math builtin.
    fn math_call(&mut self, name: &str, args: &[ast::Expr], span: Span) -> Option<Expr> {
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

impl Checker {
    /// `s.byte(i)` / `s.slice(a, b)` on a checked string `recv`: `i64` arguments.
    pub(super) fn str_bytes(
        &mut self,
        recv: Expr,
        method: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
    ) -> Option<Expr> {
        let name = method.name.as_str();
        let want = if name == "byte" { 1 } else { 2 };
        let checked: Vec<Option<Expr>> = args.iter().map(|a| self.expr(a)).collect();
        if args.len() != want {
            let usage = if want == 1 {
                "s.byte(i)"
            } else {
                "s.slice(a, b)"
            };
            self.error(
                Diagnostic::new(
                    DiagKind::Arity,
                    span,
                    format!(
                        "`{name}` takes {want} argument{} but {} {} given",
                        if want == 1 { "" } else { "s" },
                        args.len(),
                        if args.len() == 1 { "was" } else { "were" }
                    ),
                )
                .with_note(format!("`{usage}`, in bytes of the UTF-8 text")),
            );
            return None;
        }
        let mut out = Vec::with_capacity(want);
        for arg in checked {
            let arg = arg?;
            if arg.ty != Type::I64 {
                self.error(Diagnostic::new(
                    DiagKind::TypeMismatch,
                    arg.span,
                    format!("`{name}` takes byte offsets, `i64`, found `{}`", arg.ty),
                ));
                return None;
            }
            out.push(arg);
        }
        let mut out = out.into_iter();
        let (recv, first) = (Box::new(recv), Box::new(out.next()?));
        let (kind, ty) = match out.next() {
            None => (ExprKind::StrByte(recv, first), Type::I64),
            Some(second) => (ExprKind::StrSlice(recv, first, Box::new(second)), Type::Str),
        };
        Some(Expr { kind, ty, span })
    }
}
