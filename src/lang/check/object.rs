//! Expressions on objects: `self`, `new C()`, fields, method and static calls, and `==`/`!=`
//! between handles.

use super::{Checker, ModName};
use crate::lang::ast::{self, BinaryOp};
use crate::lang::diag::{DiagKind, Diagnostic};
use crate::lang::hir::{
    BinOp, ClassId, Expr, ExprKind, FuncId, MethodKind, Place, PlaceKind, Type,
};
use crate::lang::span::Span;

impl Checker {
    pub(super) fn self_value(&mut self, span: Span) -> Option<Expr> {
        let Some(class) = self.f.self_class else {
            self.error(
                Diagnostic::new(DiagKind::BadClass, span, "`self` outside a method")
                    .with_note("only methods (a `fn` with `self` inside a `class`) have `self`"),
            );
            return None;
        };
        // A method's local 0 is `self`; a lambda in a method captures it by its name (a
        // keyword, so no other local has it).
        let local = if self.f.lambda.is_some() {
            self.lookup_local("self")?
        } else {
            crate::lang::hir::LocalId(0)
        };
        Some(Expr {
            kind: ExprKind::Local(local),
            ty: self.handle_type(class, false),
            span,
        })
    }

    pub(super) fn new_object(
        &mut self,
        class: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
    ) -> Option<Expr> {
        let id = self.class_named(class)?;
        self.construct(id, class, args, span)
    }

    pub(super) fn class_named(&mut self, class: &ast::Ident) -> Option<ClassId> {
        match self.names.get(&class.name) {
            Some((ModName::Class(id), _)) => Some(*id),
            _ => {
                self.error(Diagnostic::new(
                    DiagKind::UnknownName,
                    class.span,
                    format!("unknown class `{}`", class.name),
                ));
                None
            }
        }
    }

    /// The object and cell index of `object.field` (for reading and for assigning).
    fn field_of(
        &mut self,
        object: &ast::Expr,
        field: &ast::Ident,
    ) -> Option<(Expr, u32, Type, bool)> {
        let object = self.expr(object)?;
        let Type::Handle { class, .. } = object.ty else {
            self.error(Diagnostic::new(
                DiagKind::TypeMismatch,
                object.span,
                format!(
                    "`.{}`: only objects have fields, found `{}`",
                    field.name, object.ty
                ),
            ));
            return None;
        };
        let info = &self.classes[class.index()];
        let Some(index) = info.fields.iter().position(|f| f.field.name == field.name) else {
            let names: Vec<&str> = info.fields.iter().map(|f| f.field.name.as_str()).collect();
            let note = if names.is_empty() {
                format!("`{}` has no fields", info.name)
            } else {
                format!("the fields of `{}` are: {}", info.name, names.join(", "))
            };
            let msg = format!("no field `{}` on `{}`", field.name, info.name);
            let mut d = Diagnostic::new(DiagKind::UnknownName, field.span, msg).with_note(note);
            if let Some((at, why)) = self.narrow_note(&object) {
                d = d.with_label(at, "assigned here").with_note(why);
            }
            self.error(d);
            return None;
        };
        let f = &info.fields[index];
        let (ty, mutable) = (f.field.ty.clone(), f.mutable);
        Some((object, index as u32, ty, mutable))
    }

    pub(super) fn field(
        &mut self,
        object: &ast::Expr,
        field: &ast::Ident,
        span: Span,
    ) -> Option<Expr> {
        let (object, index, ty, _) = self.field_of(object, field)?;
        Some(Expr {
            kind: ExprKind::Field(Box::new(object), index),
            ty,
            span,
        })
    }

    pub(super) fn field_place(
        &mut self,
        object: &ast::Expr,
        field: &ast::Ident,
        span: Span,
    ) -> Option<Place> {
        let (object, index, ty, mutable) = self.field_of(object, field)?;
        if !mutable {
            self.error(
                Diagnostic::new(
                    DiagKind::AssignToImmutable,
                    span,
                    format!(
                        "cannot assign to `{}`: the field is declared with `let`",
                        field.name
                    ),
                )
                .with_note("declare it with `var` to change it"),
            );
            return None;
        }
        Some(Place {
            kind: PlaceKind::Field {
                object: Box::new(object),
                field: index,
            },
            ty,
            span,
        })
    }

    pub(super) fn static_call(
        &mut self,
        class: ClassId,
        method: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
    ) -> Option<Expr> {
        let info = &self.classes[class.index()];
        let class_name = info.name.clone();
        let Some(m) = info.methods.iter().find(|m| m.name == method.name).cloned() else {
            self.error(Diagnostic::new(
                DiagKind::UnknownName,
                method.span,
                format!("no static function `{}` in `{class_name}`", method.name),
            ));
            return None;
        };
        if m.kind != MethodKind::Static {
            self.error(
                Diagnostic::new(
                    DiagKind::TypeMismatch,
                    method.span,
                    format!(
                        "`{class_name}.{}` is a method: call it on an object",
                        method.name
                    ),
                )
                .with_note(format!(
                    "`let o = new {class_name}()` then `o.{}(...)`",
                    method.name
                )),
            );
            return None;
        }
        let (args, ret) = self.call_args(m.func, args, span)?;
        Some(Expr {
            kind: ExprKind::Call(m.func, args),
            ty: ret,
            span,
        })
    }

    pub(super) fn object_call(
        &mut self,
        object: Expr,
        class: ClassId,
        method: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
    ) -> Option<Expr> {
        let info = &self.classes[class.index()];
        let class_name = info.name.clone();
        let Some(m) = info.methods.iter().find(|m| m.name == method.name).cloned() else {
            let names: Vec<&str> = info
                .methods
                .iter()
                .filter(|m| m.kind != MethodKind::Static)
                .map(|m| m.name.as_str())
                .collect();
            let note = if names.is_empty() {
                format!("`{class_name}` has no methods")
            } else {
                format!("the methods of `{class_name}` are: {}", names.join(", "))
            };
            let mut d = Diagnostic::new(
                DiagKind::UnknownName,
                method.span,
                format!("no method `{}` on `{class_name}`", method.name),
            )
            .with_note(note);
            if let Some((at, why)) = self.narrow_note(&object) {
                d = d.with_label(at, "assigned here").with_note(why);
            }
            self.error(d);
            return None;
        };
        if m.name == "init" {
            self.init_called(&class_name, method);
            return None;
        }
        if m.kind == MethodKind::Static {
            self.error(Diagnostic::new(
                DiagKind::TypeMismatch,
                method.span,
                format!(
                    "`{}` is a static function of `{class_name}`: call it as `{class_name}.{}()`",
                    method.name, method.name
                ),
            ));
            return None;
        }
        let (args, ret) = self.call_args(m.func, args, span)?;
        let object = Box::new(object);
        let kind = if m.is_virtual() {
            ExprKind::VirtualCall {
                object,
                method: m.name.clone(),
                func: m.func,
                args,
            }
        } else {
            ExprKind::MethodCall {
                object,
                func: m.func,
                args,
            }
        };
        Some(Expr {
            kind,
            ty: ret,
            span,
        })
    }

    /// The arguments of a call of `func` (after `self`), converted to its parameter types.
    fn call_args(
        &mut self,
        func: FuncId,
        args: &[ast::Expr],
        span: Span,
    ) -> Option<(Vec<Expr>, Type)> {
        let checked: Vec<Option<Expr>> = args.iter().map(|a| self.expr(a)).collect();
        let sig = self.sigs[func.index()].clone();
        let label = Some((sig.name_span, "declared here".to_string()));
        let out = self.check_call_args(
            &format!("`{}`", sig.name),
            &sig.params,
            checked,
            span,
            label,
        )?;
        Some((out, sig.ret?))
    }

    /// `a == b` / `a != b` where a side is a handle: identity, between handles of related classes
    /// or `null`.
    pub(super) fn handle_compare(
        &mut self,
        op: BinaryOp,
        op_span: Span,
        lhs: Expr,
        rhs: Expr,
        span: Span,
    ) -> Option<Expr> {
        let bin = match op {
            BinaryOp::Eq => BinOp::Eq,
            BinaryOp::Ne => BinOp::Ne,
            _ => {
                self.error(
                    Diagnostic::new(
                        DiagKind::TypeMismatch,
                        op_span,
                        format!("`{}` cannot be applied to handles", op.symbol()),
                    )
                    .with_note("handles compare with `==` and `!=` (same object, or both null)"),
                );
                return None;
            }
        };
        let related = match (&lhs.ty, &rhs.ty) {
            (Type::Null, t) | (t, Type::Null) => t.is_handle(),
            (Type::Handle { class: a, .. }, Type::Handle { class: b, .. }) => {
                self.derives(*a, *b) || self.derives(*b, *a)
            }
            _ => false,
        };
        if !related {
            self.error(
                Diagnostic::new(
                    DiagKind::TypeMismatch,
                    op_span,
                    format!("cannot compare `{}` with `{}`", lhs.ty, rhs.ty),
                )
                .with_label(lhs.span, format!("`{}`", lhs.ty))
                .with_label(rhs.span, format!("`{}`", rhs.ty)),
            );
            return None;
        }
        Some(Expr {
            kind: ExprKind::Binary {
                op: bin,
                op_span,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            },
            ty: Type::Bool,
            span,
        })
    }
}
