//! Constant expressions: what a field initializer may be (a reload gives an added field its
//! value without running code, so the checker computes it). Literals (`-1.5` included), module
//! `let` constants, arithmetic, comparisons and casts of those, array literals and repeats of
//! those, `null`, `vec<T>()` and string literals (and `+` of them).
//!
//! Module constants are checked before the classes ([`Checker::declare_constants`]) when their
//! initializer has the form of a constant expression, so a field initializer can name them.

use super::{Checker, FnState};
use crate::lang::ast::{self, Item};
use crate::lang::hir::{BinOp, Expr, ExprKind, GlobalId, LogicOp, Type, UnOp};

/// A constant's value.
#[derive(Debug, Clone)]
pub(super) enum Const {
    I(i64),
    F(f64),
    B(bool),
    /// `null` or the empty vec.
    Zero,
    S(String),
    Array(Vec<Const>),
}

impl Const {
    /// Append its leaves, flat, outermost first: the bits and, for a non-empty string, its text
    /// (as `hir::Field` keeps them).
    pub(super) fn leaves(&self, out: &mut Vec<(u64, Option<String>)>) {
        match self {
            Const::I(v) => out.push((*v as u64, None)),
            Const::F(v) => out.push((v.to_bits(), None)),
            Const::B(b) => out.push((u64::from(*b), None)),
            Const::Zero => out.push((0, None)),
            Const::S(s) => out.push((0, (!s.is_empty()).then(|| s.clone()))),
            Const::Array(items) => items.iter().for_each(|c| c.leaves(out)),
        }
    }
}

/// Whether an initializer has the form of a constant expression (names may still turn out to
/// be something else: checking it decides).
fn const_form(e: &ast::Expr) -> bool {
    match &e.kind {
        ast::ExprKind::Int(_)
        | ast::ExprKind::Bits(_)
        | ast::ExprKind::Float(_)
        | ast::ExprKind::Bool(_)
        | ast::ExprKind::Null
        | ast::ExprKind::Name(_)
        | ast::ExprKind::VecNew(_) => true,
        ast::ExprKind::Str(parts) => parts.iter().all(|p| matches!(p, ast::StrPart::Text(_))),
        ast::ExprKind::Paren(x) | ast::ExprKind::Unary { operand: x, .. } => const_form(x),
        ast::ExprKind::Cast(x, _) => const_form(x),
        ast::ExprKind::Binary { lhs, rhs, .. } => const_form(lhs) && const_form(rhs),
        ast::ExprKind::ArrayLit(items) => items.iter().all(const_form),
        ast::ExprKind::ArrayRepeat(item, _) => const_form(item),
        _ => false,
    }
}

impl Checker {
    /// Pass 1a: the module `let` constants whose initializer has a constant's form are checked
    /// quietly (their diagnostics come when pass 2 checks them again) and, when they are
    /// constants, typed and kept, before the classes' fields are checked.
    pub(super) fn declare_constants(&mut self, module: &ast::Module) {
        let mut index = 0;
        for item in &module.items {
            let Item::Global(decl) = item else { continue };
            let id = GlobalId(index as u32);
            index += 1;
            if decl.mutable || !const_form(&decl.init) {
                continue;
            }
            self.f = FnState {
                global_limit: Some(id.index()),
                fn_name: decl.name.name.clone(),
                ..FnState::default()
            };
            let diags = std::mem::take(&mut self.diags);
            let checked = self.statement(|ck| ck.var_init(decl));
            self.diags = diags;
            if let Some((ty, init)) = checked
                && self.fold(&init).is_some()
            {
                self.global_types[id.index()] = Some(ty);
                self.constants.insert(id, init);
            }
        }
        self.f = FnState::default();
    }

    /// The value of a checked constant expression (`None`: not a constant).
    pub(super) fn fold(&self, e: &Expr) -> Option<Const> {
        Some(match &e.kind {
            ExprKind::Int(v) => Const::I(*v),
            ExprKind::Float(v) => Const::F(*v),
            ExprKind::Bool(b) => Const::B(*b),
            ExprKind::Null | ExprKind::VecNew => Const::Zero,
            ExprKind::StrLit(s) => Const::S(s.clone()),
            ExprKind::Global(id) => self.fold(self.constants.get(id)?)?,
            ExprKind::ArrayLit(items) => {
                Const::Array(items.iter().map(|x| self.fold(x)).collect::<Option<_>>()?)
            }
            ExprKind::ArrayRepeat(item, n) => Const::Array(vec![self.fold(item)?; *n as usize]),
            ExprKind::Unary(op, x) => match (op, self.fold(x)?) {
                (UnOp::Neg, Const::I(v)) => Const::I(v.wrapping_neg()),
                (UnOp::Neg, Const::F(v)) => Const::F(-v),
                (UnOp::Not, Const::B(b)) => Const::B(!b),
                (UnOp::BitNot, Const::I(v)) => Const::I(!v),
                _ => return None,
            },
            ExprKind::Cast(x) => match (self.fold(x)?, &e.ty) {
                (Const::I(v), Type::F64) => Const::F(v as f64),
                (Const::F(v), Type::I64) => Const::I(v as i64),
                (Const::B(b), Type::I64) => Const::I(i64::from(b)),
                (same, _) => same,
            },
            ExprKind::Logical(op, a, b) => match (op, self.fold(a)?, self.fold(b)?) {
                (LogicOp::And, Const::B(a), Const::B(b)) => Const::B(a && b),
                (LogicOp::Or, Const::B(a), Const::B(b)) => Const::B(a || b),
                _ => return None,
            },
            ExprKind::Binary { op, lhs, rhs, .. } => binary(*op, self.fold(lhs)?, self.fold(rhs)?)?,
            _ => return None,
        })
    }
}

/// `a op b` on constants, as the backends compute it (`None` for division by zero).
fn binary(op: BinOp, a: Const, b: Const) -> Option<Const> {
    Some(match (a, b) {
        (Const::I(x), Const::I(y)) => match op {
            BinOp::Add => Const::I(x.wrapping_add(y)),
            BinOp::Sub => Const::I(x.wrapping_sub(y)),
            BinOp::Mul => Const::I(x.wrapping_mul(y)),
            BinOp::Div if y != 0 => Const::I(x.wrapping_div(y)),
            BinOp::Rem if y != 0 => Const::I(x.wrapping_rem(y)),
            BinOp::Div | BinOp::Rem => return None,
            BinOp::BitAnd => Const::I(x & y),
            BinOp::BitOr => Const::I(x | y),
            BinOp::BitXor => Const::I(x ^ y),
            BinOp::Shl => Const::I(x.wrapping_shl(y as u32)),
            BinOp::Shr => Const::I(x.wrapping_shr(y as u32)),
            BinOp::UShr => Const::I((x as u64).wrapping_shr(y as u32) as i64),
            BinOp::Eq => Const::B(x == y),
            BinOp::Ne => Const::B(x != y),
            BinOp::Lt => Const::B(x < y),
            BinOp::Le => Const::B(x <= y),
            BinOp::Gt => Const::B(x > y),
            BinOp::Ge => Const::B(x >= y),
        },
        (Const::F(x), Const::F(y)) => match op {
            BinOp::Add => Const::F(x + y),
            BinOp::Sub => Const::F(x - y),
            BinOp::Mul => Const::F(x * y),
            BinOp::Div => Const::F(x / y),
            BinOp::Rem => Const::F(x % y),
            BinOp::Eq => Const::B(x == y),
            BinOp::Ne => Const::B(x != y),
            BinOp::Lt => Const::B(x < y),
            BinOp::Le => Const::B(x <= y),
            BinOp::Gt => Const::B(x > y),
            BinOp::Ge => Const::B(x >= y),
            _ => return None,
        },
        (Const::B(x), Const::B(y)) => match op {
            BinOp::Eq => Const::B(x == y),
            BinOp::Ne => Const::B(x != y),
            _ => return None,
        },
        (Const::S(x), Const::S(y)) => match op {
            BinOp::Add => Const::S(x + &y),
            BinOp::Eq => Const::B(x == y),
            BinOp::Ne => Const::B(x != y),
            _ => return None,
        },
        _ => return None,
    })
}
