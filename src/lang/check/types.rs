//! Written types to checked types.

use super::{Checker, MAX_ARRAY_CELLS, MAX_PLAIN_ARRAY_CELLS, ModName};
use crate::lang::ast::{TypeExpr, TypeKind};
use crate::lang::diag::{DiagKind, Diagnostic};
use crate::lang::hir::Type;

impl Checker {
    /// The checked type a written type stands for (`None` after reporting why not).
    pub(super) fn resolve_type(&mut self, t: &TypeExpr) -> Option<Type> {
        match &t.kind {
            TypeKind::Named(name) => match name.as_str() {
                "i64" => Some(Type::I64),
                "f64" => Some(Type::F64),
                "bool" => Some(Type::Bool),
                "str" => Some(Type::Str),
                _ => {
                    let diag = match self.names.get(name) {
                        Some((ModName::Class(id), _)) => return Some(self.handle_type(*id, false)),
                        _ if crate::lang::hir::Interface::named(name).is_some() => Diagnostic::new(
                            DiagKind::TypeMismatch,
                            t.span,
                            format!(
                                "`{name}` is a host interface, not a type: use the class that implements it"
                            ),
                        ),
                        _ => Diagnostic::new(
                            DiagKind::UnknownName,
                            t.span,
                            format!("unknown type `{name}`"),
                        )
                        .with_note(
                            "the types are `i64`, `f64`, `bool`, `str`, arrays `[T; N]`, `vec<T>`, `fn(A) -> R` and classes",
                        ),
                    };
                    self.error(diag);
                    None
                }
            },
            TypeKind::Array(elem, len) => {
                let elem = self.resolve_type(elem)?;
                self.array_type(elem, *len, t.span)
            }
            TypeKind::Vec(elem) => {
                // Any element type: an array element is boxed in one cell (docs/runtime.md).
                Some(Type::Vec(Box::new(self.resolve_type(elem)?)))
            }
            TypeKind::Fn(params, ret) => {
                let params: Vec<Option<Type>> =
                    params.iter().map(|p| self.resolve_type(p)).collect();
                let ret = match ret {
                    Some(r) => self.resolve_type(r)?,
                    None => Type::Unit,
                };
                Some(Type::Fn {
                    params: params.into_iter().collect::<Option<_>>()?,
                    ret: Box::new(ret),
                })
            }
            TypeKind::Nullable(inner) => match self.resolve_type(inner)? {
                Type::Handle { class, .. } => Some(self.handle_type(class, true)),
                other => {
                    self.error(Diagnostic::new(
                        DiagKind::TypeMismatch,
                        t.span,
                        format!("only class handles can be nullable, not `{other}`"),
                    ));
                    None
                }
            },
        }
    }

    /// `[elem; len]`, if it is not too large.
    pub(super) fn array_type(
        &mut self,
        elem: Type,
        len: u64,
        span: crate::lang::span::Span,
    ) -> Option<Type> {
        // Scalars, not cells: a bool array's limit is its elements', packed or not.
        let cells = elem.scalars().saturating_mul(len);
        let message = if elem.owns_cells() && cells > MAX_ARRAY_CELLS {
            Some(format!(
                "this array is too large: an array of `{elem}` holds at most {MAX_ARRAY_CELLS} \
                 of them in all (use a `vec<{elem}>` for more)",
                elem = leaf_type(&elem),
            ))
        } else if len > u64::from(u32::MAX) {
            Some(format!(
                "this array is too large: an array holds at most {} elements",
                u32::MAX
            ))
        } else if cells > MAX_PLAIN_ARRAY_CELLS {
            Some(format!(
                "this array is too large: at most {MAX_PLAIN_ARRAY_CELLS} scalars fit in one \
                 array"
            ))
        } else {
            None
        };
        if let Some(message) = message {
            self.error(Diagnostic::new(DiagKind::Other, span, message));
            return None;
        }
        Some(Type::Array(Box::new(elem), len as u32))
    }
}

/// The scalar type at the bottom of nested arrays (`str` of `[[str; 2]; 3]`).
fn leaf_type(ty: &Type) -> &Type {
    match ty {
        Type::Array(elem, _) => leaf_type(elem),
        ty => ty,
    }
}
