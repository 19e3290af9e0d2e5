//! Expressions: names, operators, casts, calls, arrays.

use super::class::Coerced;
use super::{Checker, ModName};
use crate::lang::ast::{self, BinaryOp, UnaryOp};
use crate::lang::diag::{DiagKind, Diagnostic};
use crate::lang::hir::{BinOp, Expr, ExprKind, LogicOp, Type, UnOp};
use crate::lang::span::Span;

pub(super) fn mismatch(span: Span, expected: &Type, found: &Type) -> Diagnostic {
    Diagnostic::new(
        DiagKind::TypeMismatch,
        span,
        format!("mismatched types: expected `{expected}`, found `{found}`"),
    )
}

impl Checker {
    /// Check an expression (`None` after reporting why it is broken, or when a part of it is).
    pub(super) fn expr(&mut self, e: &ast::Expr) -> Option<Expr> {
        let span = e.span;
        let (kind, ty) = match &e.kind {
            ast::ExprKind::Int(v) => (ExprKind::Int(self.int_literal(*v, span)?), Type::I64),
            ast::ExprKind::Bits(v) => (ExprKind::Int(*v as i64), Type::I64),
            ast::ExprKind::Float(v) => (ExprKind::Float(*v), Type::F64),
            ast::ExprKind::Bool(b) => (ExprKind::Bool(*b), Type::Bool),
            ast::ExprKind::Paren(inner) => return self.expr(inner),
            ast::ExprKind::Name(name) => return self.name(name, span),
            ast::ExprKind::Unary { op, operand } => return self.unary(*op, operand, span),
            ast::ExprKind::Binary {
                op,
                op_span,
                lhs,
                rhs,
            } => return self.binary(*op, *op_span, lhs, rhs, span),
            ast::ExprKind::Cast(inner, target) => return self.cast(inner, target, span),
            ast::ExprKind::Is(inner, class) => return self.type_test(inner, class, true, span),
            ast::ExprKind::AsMaybe(inner, class) => {
                return self.type_test(inner, class, false, span);
            }
            ast::ExprKind::Call(callee, args) => return self.call(callee, args, span),
            ast::ExprKind::MethodCall {
                receiver,
                method,
                args,
            } => return self.method_call(receiver, method, args, span),
            ast::ExprKind::Index(base, index) => {
                let base = self.expr(base);
                let index = self.index_expr(index);
                let base = base?;
                let elem = self.element_type(&base.ty, base.span)?;
                (ExprKind::Index(Box::new(base), Box::new(index?)), elem)
            }
            ast::ExprKind::ArrayLit(items) => return self.array_lit(items, span),
            ast::ExprKind::ArrayRepeat(elem, count) => {
                return self.array_repeat(elem, count, span);
            }
            ast::ExprKind::Null => (ExprKind::Null, Type::Null),
            ast::ExprKind::SelfValue => return self.self_value(span),
            ast::ExprKind::Field(object, field) => return self.field(object, field, span),
            ast::ExprKind::New(class, args) => return self.new_object(class, args, span),
            ast::ExprKind::Str(parts) => return self.string(parts, span),
            ast::ExprKind::VecNew(elem) => {
                let elem = self.resolve_type(elem)?;
                (ExprKind::VecNew, Type::Vec(Box::new(elem)))
            }
            ast::ExprKind::Closure { params, ret, body } => {
                return self.lambda(params, ret.as_ref(), body, span);
            }
        };
        Some(Expr { kind, ty, span })
    }

    fn int_literal(&mut self, v: u64, span: Span) -> Option<i64> {
        match i64::try_from(v) {
            Ok(v) => Some(v),
            Err(_) => {
                self.error(
                    Diagnostic::new(
                        DiagKind::BadLiteral,
                        span,
                        format!("integer literal `{v}` does not fit in i64"),
                    )
                    .with_note(
                        "the largest i64 is 9223372036854775807; a hex, binary or octal \
                         literal may use all 64 bits (`0xFFFF_FFFF_FFFF_FFFF` is -1)",
                    ),
                );
                None
            }
        }
    }

    /// An index expression: must be `i64`.
    pub(super) fn index_expr(&mut self, index: &ast::Expr) -> Option<Expr> {
        let index = self.expr(index)?;
        if index.ty != Type::I64 {
            self.error(Diagnostic::new(
                DiagKind::TypeMismatch,
                index.span,
                format!("an index must be `i64`, found `{}`", index.ty),
            ));
            return None;
        }
        Some(index)
    }

    /// The element type of an indexed value.
    pub(super) fn element_type(&mut self, ty: &Type, span: Span) -> Option<Type> {
        match ty {
            Type::Array(elem, _) | Type::Vec(elem) => Some((**elem).clone()),
            other => {
                self.error(Diagnostic::new(
                    DiagKind::TypeMismatch,
                    span,
                    format!("cannot index a value of type `{other}`"),
                ));
                None
            }
        }
    }

    fn name(&mut self, name: &str, span: Span) -> Option<Expr> {
        if let Some(id) = self.lookup_local(name) {
            let ty = match self.narrowed_type(id) {
                Some(ty) => ty,
                None => self.f.info[id.index()].ty.clone()?,
            };
            return Some(Expr {
                kind: ExprKind::Local(id),
                ty,
                span,
            });
        }
        let what = match self.lookup_module(name, span).ok()? {
            Some(ModName::Global(id)) => {
                let ty = self.global_types[id.index()].clone()?;
                return Some(Expr {
                    kind: ExprKind::Global(id),
                    ty,
                    span,
                });
            }
            Some(ModName::Func(_) | ModName::Native(_)) => {
                format!(
                    "`{name}` is a function: call it, `{name}(...)`, or wrap it in a closure to pass it as a value (`|x: i64| -> i64 {{ return {name}(x) }}`)"
                )
            }
            Some(ModName::Class(_)) => {
                format!("`{name}` is a class, not a value: make an object with `new {name}()`")
            }
            None if name == "assert" || self.is_builtin(name) => {
                format!("`{name}` is a builtin function: call it, `{name}(...)`")
            }
            None => format!("unknown name `{name}`"),
        };
        let kind = if what.starts_with("unknown") {
            DiagKind::UnknownName
        } else {
            DiagKind::TypeMismatch
        };
        self.error(Diagnostic::new(kind, span, what));
        None
    }

    fn unary(&mut self, op: UnaryOp, operand: &ast::Expr, span: Span) -> Option<Expr> {
        // `-9223372036854775808` is the negation of a literal that only fits negated.
        if let (UnaryOp::Neg, ast::ExprKind::Int(v)) = (op, &operand.kind)
            && *v <= 1 << 63
        {
            return Some(Expr {
                kind: ExprKind::Int((*v as i64).wrapping_neg()),
                ty: Type::I64,
                span,
            });
        }
        let operand = self.expr(operand)?;
        let (op, ok) = match op {
            UnaryOp::Neg => (UnOp::Neg, matches!(operand.ty, Type::I64 | Type::F64)),
            UnaryOp::Not => (UnOp::Not, operand.ty == Type::Bool),
            UnaryOp::BitNot => (UnOp::BitNot, operand.ty == Type::I64),
        };
        if !ok {
            let sym = match op {
                UnOp::Neg => "-",
                UnOp::Not => "!",
                UnOp::BitNot => "~",
            };
            self.error(Diagnostic::new(
                DiagKind::TypeMismatch,
                span,
                format!("`{sym}` cannot be applied to `{}`", operand.ty),
            ));
            return None;
        }
        let ty = operand.ty.clone();
        Some(Expr {
            kind: ExprKind::Unary(op, Box::new(operand)),
            ty,
            span,
        })
    }

    /// The HIR operator for `op` on operands of type `ty`, if that type supports it.
    pub(super) fn binary_op_for(
        &mut self,
        op: BinaryOp,
        ty: &Type,
        op_span: Span,
    ) -> Option<BinOp> {
        let (bin, ok) = match op {
            BinaryOp::Add => (BinOp::Add, is_number(ty) || *ty == Type::Str),
            BinaryOp::Sub => (BinOp::Sub, is_number(ty)),
            BinaryOp::Mul => (BinOp::Mul, is_number(ty)),
            BinaryOp::Div => (BinOp::Div, is_number(ty)),
            BinaryOp::Rem => (BinOp::Rem, is_number(ty)),
            BinaryOp::BitAnd => (BinOp::BitAnd, *ty == Type::I64),
            BinaryOp::BitOr => (BinOp::BitOr, *ty == Type::I64),
            BinaryOp::BitXor => (BinOp::BitXor, *ty == Type::I64),
            BinaryOp::Shl => (BinOp::Shl, *ty == Type::I64),
            BinaryOp::Shr => (BinOp::Shr, *ty == Type::I64),
            BinaryOp::UShr => (BinOp::UShr, *ty == Type::I64),
            BinaryOp::Eq => (BinOp::Eq, ty.is_scalar() || *ty == Type::Str),
            BinaryOp::Ne => (BinOp::Ne, ty.is_scalar() || *ty == Type::Str),
            BinaryOp::Lt => (BinOp::Lt, is_number(ty)),
            BinaryOp::Le => (BinOp::Le, is_number(ty)),
            BinaryOp::Gt => (BinOp::Gt, is_number(ty)),
            BinaryOp::Ge => (BinOp::Ge, is_number(ty)),
            BinaryOp::And | BinaryOp::Or => {
                self.error(Diagnostic::new(
                    DiagKind::Syntax,
                    op_span,
                    format!("`{}` has no compound assignment", op.symbol()),
                ));
                return None;
            }
        };
        if !ok {
            self.error(Diagnostic::new(
                DiagKind::TypeMismatch,
                op_span,
                format!("`{}` cannot be applied to `{ty}`", op.symbol()),
            ));
            return None;
        }
        Some(bin)
    }

    fn binary(
        &mut self,
        op: BinaryOp,
        op_span: Span,
        lhs: &ast::Expr,
        rhs: &ast::Expr,
        span: Span,
    ) -> Option<Expr> {
        let lhs_ast = lhs;
        let lhs = self.expr(lhs);
        let rhs = match op {
            // The right operand runs only when the left one was true (`&&`) or false (`||`).
            BinaryOp::And | BinaryOp::Or => {
                let facts = self.facts(lhs_ast, op == BinaryOp::And);
                self.with_facts(facts, &[], |ck| ck.expr(rhs))
            }
            _ => self.expr(rhs),
        };
        let (lhs, rhs) = (lhs?, rhs?);
        if let Some(logic) = match op {
            BinaryOp::And => Some(LogicOp::And),
            BinaryOp::Or => Some(LogicOp::Or),
            _ => None,
        } {
            for side in [&lhs, &rhs] {
                if side.ty != Type::Bool {
                    self.error(Diagnostic::new(
                        DiagKind::TypeMismatch,
                        side.span,
                        format!(
                            "`{}` needs `bool` operands, found `{}`",
                            op.symbol(),
                            side.ty
                        ),
                    ));
                    return None;
                }
            }
            return Some(Expr {
                kind: ExprKind::Logical(logic, Box::new(lhs), Box::new(rhs)),
                ty: Type::Bool,
                span,
            });
        }
        if let (Type::Fn { .. }, BinaryOp::Eq | BinaryOp::Ne) = (&lhs.ty, op) {
            self.error(
                Diagnostic::new(
                    DiagKind::TypeMismatch,
                    op_span,
                    format!(
                        "closures cannot be compared: `{}` {} ...",
                        lhs.ty,
                        op.symbol()
                    ),
                )
                .with_label(lhs.span, format!("`{}`", lhs.ty))
                .with_note("a closure has no identity or equality; compare what it computes"),
            );
            return None;
        }
        if lhs.ty.is_handle() || rhs.ty.is_handle() {
            return self.handle_compare(op, op_span, lhs, rhs, span);
        }
        if lhs.ty != rhs.ty {
            let mut d = Diagnostic::new(
                DiagKind::TypeMismatch,
                op_span,
                format!(
                    "mismatched types: `{}` {} `{}`",
                    lhs.ty,
                    op.symbol(),
                    rhs.ty
                ),
            )
            .with_label(lhs.span, format!("`{}`", lhs.ty))
            .with_label(rhs.span, format!("`{}`", rhs.ty));
            if is_number(&lhs.ty) && is_number(&rhs.ty) {
                d = d.with_note("there are no implicit conversions: convert one side with `as`");
            }
            self.error(d);
            return None;
        }
        let bin = self.binary_op_for(op, &lhs.ty, op_span)?;
        let ty = if bin.is_comparison() {
            Type::Bool
        } else {
            lhs.ty.clone()
        };
        Some(Expr {
            kind: ExprKind::Binary {
                op: bin,
                op_span,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            },
            ty,
            span,
        })
    }

    fn cast(&mut self, inner: &ast::Expr, target: &ast::TypeExpr, span: Span) -> Option<Expr> {
        let inner = self.expr(inner);
        let target = self.resolve_type(target)?;
        let inner = inner?;
        let ok = match (&inner.ty, &target) {
            (a, b) if a == b => a.is_scalar(),
            (Type::I64, Type::F64) | (Type::F64, Type::I64) | (Type::Bool, Type::I64) => true,
            _ => false,
        };
        if !ok {
            self.error(
                Diagnostic::new(
                    DiagKind::TypeMismatch,
                    span,
                    format!("cannot cast `{}` to `{target}`", inner.ty),
                )
                .with_note(
                    "casts go between `i64` and `f64`, from `bool` to `i64`, or to the same type",
                ),
            );
            return None;
        }
        Some(Expr {
            kind: ExprKind::Cast(Box::new(inner)),
            ty: target,
            span,
        })
    }

    fn call(&mut self, callee: &ast::Expr, args: &[ast::Expr], span: Span) -> Option<Expr> {
        let ast::ExprKind::Name(name) = &callee.kind else {
            return self.closure_call(callee, args, span);
        };
        if let Some(id) = self.lookup_local(name) {
            if let Some(Type::Fn { .. }) | None = &self.f.info[id.index()].ty {
                return self.closure_call(callee, args, span);
            }
            let decl = self.f.locals[id.index()].span;
            self.error(
                Diagnostic::new(
                    DiagKind::TypeMismatch,
                    callee.span,
                    format!("`{name}` is a variable, not a function"),
                )
                .with_label(decl, "declared here"),
            );
            return None;
        }
        if let Some((ModName::Global(id), _)) = self.names.get(name)
            && let Some(Type::Fn { .. }) = self.global_types[id.index()]
        {
            return self.closure_call(callee, args, span);
        }
        if self.is_builtin(name) {
            return self.builtin_call(name, args, span);
        }
        let checked: Vec<Option<Expr>> = args.iter().map(|a| self.expr(a)).collect();
        let (params, ret, decl_span, make): (Vec<Option<Type>>, Option<Type>, Option<Span>, _) =
            match self.lookup_module(name, callee.span).ok()? {
                Some(ModName::Func(id)) => {
                    let sig = &self.sigs[id.index()];
                    let make: Box<dyn FnOnce(Vec<Expr>) -> ExprKind> =
                        Box::new(move |a| ExprKind::Call(id, a));
                    (
                        sig.params.clone(),
                        sig.ret.clone(),
                        Some(sig.name_span),
                        make,
                    )
                }
                Some(ModName::Native(id)) => {
                    let n = &self.natives[id.index()];
                    let make: Box<dyn FnOnce(Vec<Expr>) -> ExprKind> =
                        Box::new(move |a| ExprKind::CallNative(id, a));
                    let params = n.params.iter().cloned().map(Some).collect();
                    (params, Some(n.ret.clone()), Some(n.span), make)
                }
                None if name == "assert" => {
                    let make: Box<dyn FnOnce(Vec<Expr>) -> ExprKind> = Box::new(|mut a| {
                        ExprKind::Assert(Box::new(a.pop().expect("assert has one argument")))
                    });
                    (vec![Some(Type::Bool)], Some(Type::Unit), None, make)
                }
                Some(ModName::Global(_)) => {
                    self.error(Diagnostic::new(
                        DiagKind::TypeMismatch,
                        callee.span,
                        format!("`{name}` is a variable, not a function"),
                    ));
                    return None;
                }
                Some(ModName::Class(_)) => {
                    self.error(
                        Diagnostic::new(
                            DiagKind::TypeMismatch,
                            callee.span,
                            format!("`{name}` is a class, not a function"),
                        )
                        .with_note(format!("make an object with `new {name}()`, call a static function with `{name}.f()`")),
                    );
                    return None;
                }
                None => {
                    self.error(Diagnostic::new(
                        DiagKind::UnknownName,
                        callee.span,
                        format!("unknown function `{name}`"),
                    ));
                    return None;
                }
            };
        let label = decl_span.map(|d| (d, "declared here".to_string()));
        let out = self.check_call_args(&format!("`{name}`"), &params, checked, span, label);
        let ret = ret?;
        let out = out?;
        Some(Expr {
            kind: make(out),
            ty: ret,
            span,
        })
    }

    fn method_call(
        &mut self,
        receiver: &ast::Expr,
        method: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
    ) -> Option<Expr> {
        if let ast::ExprKind::Name(name) = &receiver.kind
            && name == "super"
            && self.lookup_local(name).is_none()
            && !self.names.contains_key(name)
        {
            return self.super_call(receiver.span, method, args, span);
        }
        if let ast::ExprKind::Name(name) = &receiver.kind
            && self.lookup_local(name).is_none()
            && let Some((ModName::Class(class), _)) = self.names.get(name)
        {
            let class = *class;
            return self.static_call(class, method, args, span);
        }
        let recv = self.expr(receiver)?;
        if let Type::Handle { class, .. } = recv.ty {
            return self.object_call(recv, class, method, args, span);
        }
        if matches!(method.name.as_str(), "push" | "pop") {
            return self.vec_mutation(recv, receiver, method, args, span);
        }
        if recv.ty == Type::Str && matches!(method.name.as_str(), "byte" | "slice") {
            return self.str_bytes(recv, method, args, span);
        }
        match method.name.as_str() {
            "len" => {
                if !args.is_empty() {
                    self.error(Diagnostic::new(
                        DiagKind::Arity,
                        span,
                        format!("`len` takes no arguments but {} were given", args.len()),
                    ));
                    return None;
                }
                if !matches!(recv.ty, Type::Array(..) | Type::Vec(_) | Type::Str) {
                    self.error(Diagnostic::new(
                        DiagKind::TypeMismatch,
                        recv.span,
                        format!(
                            "`.len()` needs an array, a vec or a string, found `{}`",
                            recv.ty
                        ),
                    ));
                    return None;
                }
                Some(Expr {
                    kind: ExprKind::Len(Box::new(recv)),
                    ty: Type::I64,
                    span,
                })
            }
            other => {
                let note = match recv.ty {
                    Type::Vec(_) => "vecs have `len()`, `push(x)` and `pop()`",
                    Type::Str => "strings have `len()`, `byte(i)` and `slice(a, b)`",
                    _ => "arrays have one method, `len()`",
                };
                self.error(
                    Diagnostic::new(
                        DiagKind::UnknownName,
                        method.span,
                        format!("no method `{other}` on `{}`", recv.ty),
                    )
                    .with_note(note),
                );
                None
            }
        }
    }

    fn array_lit(&mut self, items: &[ast::Expr], span: Span) -> Option<Expr> {
        if items.is_empty() {
            self.error(
                Diagnostic::new(
                    DiagKind::Other,
                    span,
                    "an empty array literal has no element type",
                )
                .with_note(
                    "write `[0; 0]` for `[i64; 0]`, `[\"\"; 0]` for `[str; 0]`: a repeat of zero \
                     items of the element type",
                ),
            );
            return None;
        }
        let checked: Vec<Option<Expr>> = items.iter().map(|e| self.expr(e)).collect();
        let mut out = Vec::with_capacity(items.len());
        for item in checked {
            out.push(item?);
        }
        let mut elem = out[0].ty.clone();
        // Handles and `null` mix: `[h, null]` is an array of `C?` (`C` the first handle's class).
        let nullable = |t: &Type| matches!(t, Type::Null | Type::Handle { nullable: true, .. });
        if out.iter().any(|e| nullable(&e.ty))
            && let Some(Type::Handle { class, .. }) = out
                .iter()
                .map(|e| &e.ty)
                .find(|t| t.is_handle() && **t != Type::Null)
        {
            elem = self.handle_type(*class, true);
        }
        let first = out[0].span;
        let mut items = Vec::with_capacity(out.len());
        for item in out {
            match self.coerce(item, &elem) {
                Coerced::Ok(e) => items.push(e),
                Coerced::Mismatch(bad) => {
                    let d = mismatch(bad.span, &elem, &bad.ty)
                        .with_label(first, "the first element sets the element type");
                    self.error(d);
                    return None;
                }
                Coerced::Reported => return None,
            }
        }
        let out = items;
        if elem == Type::Unit {
            self.error(Diagnostic::new(
                DiagKind::TypeMismatch,
                out[0].span,
                "an array element must have a value",
            ));
            return None;
        }
        let ty = self.array_type(elem, out.len() as u64, span)?;
        Some(Expr {
            kind: ExprKind::ArrayLit(out),
            ty,
            span,
        })
    }

    fn array_repeat(&mut self, elem: &ast::Expr, count: &ast::Expr, span: Span) -> Option<Expr> {
        let elem = self.expr(elem);
        let ast::ExprKind::Int(n) = count.kind else {
            self.error(
                Diagnostic::new(
                    DiagKind::Other,
                    count.span,
                    "the length in `[e; N]` must be a non-negative integer literal",
                )
                .with_note("array lengths are part of the type, so they are known when checking"),
            );
            return None;
        };
        let elem = elem?;
        if elem.ty == Type::Unit {
            self.error(Diagnostic::new(
                DiagKind::TypeMismatch,
                elem.span,
                "an array element must have a value",
            ));
            return None;
        }
        let ty = self.array_type(elem.ty.clone(), n, span)?;
        Some(Expr {
            kind: ExprKind::ArrayRepeat(Box::new(elem), n as u32),
            ty,
            span,
        })
    }
}

impl Checker {
    /// `v.push(x)` / `v.pop()`: `recv` is the checked receiver, which must be a vec in a place
    /// that can be changed.
    fn vec_mutation(
        &mut self,
        recv: Expr,
        receiver: &ast::Expr,
        method: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
    ) -> Option<Expr> {
        let name = method.name.as_str();
        let Type::Vec(elem) = &recv.ty else {
            self.error(Diagnostic::new(
                DiagKind::TypeMismatch,
                recv.span,
                format!("`{name}` needs a vec, found `{}`", recv.ty),
            ));
            return None;
        };
        let elem = (**elem).clone();
        let want = usize::from(name == "push");
        if args.len() != want {
            self.error(Diagnostic::new(
                DiagKind::Arity,
                span,
                format!(
                    "`{name}` takes {want} argument{} but {} {} given",
                    if want == 1 { "" } else { "s" },
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
            ));
            return None;
        }
        let verb = if name == "push" {
            "push to"
        } else {
            "pop from"
        };
        let place = self.place_for(receiver, verb)?;
        if name == "pop" {
            return Some(Expr {
                kind: ExprKind::VecPop(Box::new(place)),
                ty: elem,
                span,
            });
        }
        let value = self.expr(&args[0])?;
        let value = match self.coerce(value, &elem) {
            Coerced::Ok(v) => v,
            Coerced::Reported => return None,
            Coerced::Mismatch(v) => {
                self.error(
                    mismatch(v.span, &elem, &v.ty)
                        .with_label(recv.span, format!("this is a `{}`", recv.ty)),
                );
                return None;
            }
        };
        Some(Expr {
            kind: ExprKind::VecPush(Box::new(place), Box::new(value)),
            ty: Type::Unit,
            span,
        })
    }

    /// A string literal: its text and interpolations joined with `+` (left to right).
    fn string(&mut self, parts: &[ast::StrPart], span: Span) -> Option<Expr> {
        let mut pieces = Vec::new();
        let mut ok = true;
        for part in parts {
            match part {
                ast::StrPart::Text(t) if t.is_empty() => {}
                ast::StrPart::Text(t) => pieces.push(Expr {
                    kind: ExprKind::StrLit(t.clone()),
                    ty: Type::Str,
                    span,
                }),
                ast::StrPart::Interp(e) => match self.expr(e) {
                    Some(e) if e.ty == Type::Str => pieces.push(e),
                    Some(e) if e.ty == Type::Unit => {
                        self.error(Diagnostic::new(
                            DiagKind::TypeMismatch,
                            e.span,
                            "this expression has no value to show in a string",
                        ));
                        ok = false;
                    }
                    Some(e) => pieces.push(Expr {
                        span: e.span,
                        kind: ExprKind::ToStr(Box::new(e)),
                        ty: Type::Str,
                    }),
                    None => ok = false,
                },
            }
        }
        if !ok {
            return None;
        }
        let mut pieces = pieces.into_iter();
        let first = pieces.next().unwrap_or(Expr {
            kind: ExprKind::StrLit(String::new()),
            ty: Type::Str,
            span,
        });
        Some(pieces.fold(first, |lhs, rhs| Expr {
            kind: ExprKind::Binary {
                op: BinOp::Add,
                op_span: span,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            },
            ty: Type::Str,
            span,
        }))
    }
}

fn is_number(ty: &Type) -> bool {
    matches!(ty, Type::I64 | Type::F64)
}
