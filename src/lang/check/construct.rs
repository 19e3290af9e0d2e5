//! Constructors (`init`, `new C(args)`, `super.init(args)`) and type tests (`o is D`,
//! `o as? D`).
//!
//! `new C(args)` of a class with an `init` (its own or inherited) is a call of the class's
//! synthesized constructor `C.new(args)`, whose body is `let o = new C(); o.init(args); return
//! o`: the arguments are evaluated first, then the object is made with its field initializers,
//! then `init` runs on it. Every backend runs it as any other function, so `new` means the
//! same everywhere, and a reload (which never calls a constructor) needs nothing new.

use super::{Checker, FnSigInfo};
use crate::lang::ast;
use crate::lang::diag::{DiagKind, Diagnostic};
use crate::lang::hir::{
    BinOp, Block, ClassId, Expr, ExprKind, Function, Local, LocalId, Stmt, StmtKind, Type,
};
use crate::lang::span::Span;

impl Checker {
    /// The body of `C.new` (see the module docs), with `sig` its signature.
    pub(super) fn constructor(&mut self, class: ClassId, sig: FnSigInfo) -> Function {
        let span = sig.name_span;
        let object_ty = self.handle_type(class, false);
        let init = self.classes[class.index()]
            .methods
            .iter()
            .find(|m| m.name == "init")
            .map(|m| m.func);
        let mut locals: Vec<Local> = sig
            .params
            .iter()
            .enumerate()
            .map(|(i, ty)| Local {
                name: format!("arg{i}"),
                ty: ty.clone().unwrap_or(Type::Unit),
                mutable: false,
                span,
            })
            .collect();
        let object = LocalId(locals.len() as u32);
        locals.push(Local {
            name: "object".to_string(),
            ty: object_ty.clone(),
            mutable: false,
            span,
        });
        let read = |id: LocalId, ty: &Type| Expr {
            kind: ExprKind::Local(id),
            ty: ty.clone(),
            span,
        };
        let stmt = |kind| Stmt { kind, span };
        let mut stmts = vec![stmt(StmtKind::Let {
            local: object,
            init: Expr {
                kind: ExprKind::New(class),
                ty: object_ty.clone(),
                span,
            },
        })];
        if let Some(init) = init {
            let args = locals[..sig.params.len()]
                .iter()
                .enumerate()
                .map(|(i, l)| read(LocalId(i as u32), &l.ty))
                .collect();
            stmts.push(stmt(StmtKind::Expr(Expr {
                kind: ExprKind::MethodCall {
                    object: Box::new(read(object, &object_ty)),
                    func: init,
                    args,
                },
                ty: Type::Unit,
                span,
            })));
        }
        stmts.push(stmt(StmtKind::Return(Some(read(object, &object_ty)))));
        Function {
            name: sig.name,
            param_count: sig.params.len() as u32,
            ret: object_ty,
            locals,
            body: Block { stmts },
            span,
            name_span: span,
            class: Some(class),
            captures: None,
        }
    }

    /// `new C(args)`: `C.new(args)` for a class with an `init`, else a bare object (which takes
    /// no arguments).
    pub(super) fn construct(
        &mut self,
        id: ClassId,
        class: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
    ) -> Option<Expr> {
        let Some(ctor) = self.classes[id.index()].ctor else {
            if !args.is_empty() {
                self.error(
                    Diagnostic::new(
                        DiagKind::Arity,
                        span,
                        format!(
                            "`new {}()` takes no arguments: `{}` has no `init`",
                            class.name, class.name
                        ),
                    )
                    .with_note(format!(
                        "declare a constructor in `{}`: `init(self, a: T) {{ self.f = a }}`",
                        class.name
                    )),
                );
                return None;
            }
            return Some(Expr {
                kind: ExprKind::New(id),
                ty: self.handle_type(id, false),
                span,
            });
        };
        let checked: Vec<Option<Expr>> = args.iter().map(|a| self.expr(a)).collect();
        let sig = self.sigs[ctor.index()].clone();
        let label = Some((sig.name_span, "`init` declared here".to_string()));
        let what = format!("`new {}(...)` (its `init`)", class.name);
        let args = self.check_call_args(&what, &sig.params, checked, span, label)?;
        Some(Expr {
            kind: ExprKind::Call(ctor, args),
            ty: self.handle_type(id, false),
            span,
        })
    }

    /// `super.m(args)`: only `super.init(args)`, in a class's `init`, calling its base's.
    pub(super) fn super_call(
        &mut self,
        receiver: Span,
        method: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
    ) -> Option<Expr> {
        let in_init = self.f.self_class.filter(|c| {
            self.f.lambda.is_none()
                && self.f.fn_name == format!("{}.init", self.classes[c.index()].name)
        });
        if method.name != "init" || in_init.is_none() {
            let msg = if method.name != "init" {
                format!(
                    "`super.{}`: only `super.init(...)` calls a base class",
                    method.name
                )
            } else {
                "`super.init(...)` is called only in an `init`".to_string()
            };
            self.error(
                Diagnostic::new(DiagKind::BadClass, receiver.to(method.span), msg).with_note(
                    "a class's `init` may run its base's with `super.init(...)`; to call a \
                     base's method, call it on `self` (a virtual one dispatches)",
                ),
            );
            return None;
        }
        let class = in_init?;
        let info = &self.classes[class.index()];
        let name = info.name.clone();
        let base_init = info.parent.and_then(|p| {
            let base = &self.classes[p.index()];
            let m = base.methods.iter().find(|m| m.name == "init")?;
            Some((m.func, base.name.clone()))
        });
        let Some((func, base)) = base_init else {
            let note = match info.parent {
                Some(p) => format!("`{}` has no `init`", self.classes[p.index()].name),
                None => format!("`{name}` has no base class"),
            };
            self.error(
                Diagnostic::new(
                    DiagKind::BadClass,
                    receiver.to(method.span),
                    format!("`super.init`: no base class of `{name}` has an `init`"),
                )
                .with_note(note),
            );
            return None;
        };
        let checked: Vec<Option<Expr>> = args.iter().map(|a| self.expr(a)).collect();
        let sig = self.sigs[func.index()].clone();
        let label = Some((sig.name_span, format!("`{base}.init` declared here")));
        let args =
            self.check_call_args(&format!("`{base}.init`"), &sig.params, checked, span, label)?;
        let object = self.self_value(receiver)?;
        Some(Expr {
            kind: ExprKind::MethodCall {
                object: Box::new(object),
                func,
                args,
            },
            ty: Type::Unit,
            span,
        })
    }

    /// `o.init(...)` outside `new`: reported.
    pub(super) fn init_called(&mut self, class_name: &str, method: &ast::Ident) {
        self.error(
            Diagnostic::new(
                DiagKind::BadClass,
                method.span,
                format!("`init` is `{class_name}`'s constructor: `new` calls it"),
            )
            .with_note(format!(
                "make an object with `new {class_name}(...)`; inside a derived class's `init`, \
                 run the base's with `super.init(...)`"
            )),
        );
    }

    /// `o is D` (`is_test`) or `o as? D`: `o` a handle of a class related to `D`.
    pub(super) fn type_test(
        &mut self,
        object: &ast::Expr,
        class: &ast::Ident,
        is_test: bool,
        span: Span,
    ) -> Option<Expr> {
        let object = self.expr(object);
        let target = self.class_named(class)?;
        let object = object?;
        let word = if is_test { "is" } else { "as?" };
        let Type::Handle { class: from, .. } = object.ty else {
            self.error(
                Diagnostic::new(
                    DiagKind::TypeMismatch,
                    object.span,
                    format!(
                        "`{word} {}` tests an object's class; this is a `{}`",
                        class.name, object.ty
                    ),
                )
                .with_note("`is` and `as?` apply to handles (`C` or `C?`)"),
            );
            return None;
        };
        if !self.derives(target, from) && !self.derives(from, target) {
            let from_name = self.classes[from.index()].name.clone();
            let mut d = Diagnostic::new(
                DiagKind::TypeMismatch,
                class.span,
                format!(
                    "`{word} {}` can never succeed: `{}` and `{from_name}` are unrelated classes",
                    class.name, class.name
                ),
            )
            .with_label(object.span, format!("this is a `{}`", object.ty))
            .with_note(format!(
                "a `{from_name}` handle holds a `{from_name}` or a class derived from it"
            ));
            if let Some((at, note)) = self.narrow_note(&object) {
                d = d.with_label(at, "assigned here").with_note(note);
            }
            self.error(d);
            return None;
        }
        let cast = Expr {
            kind: ExprKind::Downcast(Box::new(object), target),
            ty: self.handle_type(target, true),
            span,
        };
        if !is_test {
            return Some(cast);
        }
        let null = Expr {
            kind: ExprKind::Null,
            ty: Type::Null,
            span,
        };
        Some(Expr {
            kind: ExprKind::Binary {
                op: BinOp::Ne,
                op_span: span,
                lhs: Box::new(cast),
                rhs: Box::new(null),
            },
            ty: Type::Bool,
            span,
        })
    }
}
