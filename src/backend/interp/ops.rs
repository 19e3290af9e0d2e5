//! Operators and index checks on interpreter values.

use super::{R, Val};
use crate::lang::hir::BinOp;
use crate::lang::span::Span;
use crate::runtime::{ScriptError, ScriptErrorKind};

pub(super) fn check_index(i: i64, len: i64, span: Span) -> R<usize> {
    if (0..len).contains(&i) {
        Ok(i as usize)
    } else {
        Err(ScriptError::new(
            ScriptErrorKind::IndexOutOfRange { index: i, len },
            span,
        ))
    }
}

pub(super) fn div_zero(span: Span) -> ScriptError {
    ScriptError::new(ScriptErrorKind::DivisionByZero, span)
}

/// A binary operator on two values of the same type.
pub(super) fn binary(op: BinOp, span: Span, a: &Val, b: &Val) -> R<Val> {
    Ok(match (a, b) {
        (Val::I(x), Val::I(y)) => {
            let (x, y) = (*x, *y);
            match op {
                BinOp::Add => Val::I(x.wrapping_add(y)),
                BinOp::Sub => Val::I(x.wrapping_sub(y)),
                BinOp::Mul => Val::I(x.wrapping_mul(y)),
                BinOp::Div if y == 0 => return Err(div_zero(span)),
                BinOp::Div => Val::I(x.wrapping_div(y)),
                BinOp::Rem if y == 0 => return Err(div_zero(span)),
                BinOp::Rem => Val::I(x.wrapping_rem(y)),
                BinOp::BitAnd => Val::I(x & y),
                BinOp::BitOr => Val::I(x | y),
                BinOp::BitXor => Val::I(x ^ y),
                // `wrapping_sh*` take the amount modulo 64.
                BinOp::Shl => Val::I(x.wrapping_shl(y as u32)),
                BinOp::Shr => Val::I(x.wrapping_shr(y as u32)),
                BinOp::UShr => Val::I((x as u64).wrapping_shr(y as u32) as i64),
                BinOp::Eq => Val::B(x == y),
                BinOp::Ne => Val::B(x != y),
                BinOp::Lt => Val::B(x < y),
                BinOp::Le => Val::B(x <= y),
                BinOp::Gt => Val::B(x > y),
                BinOp::Ge => Val::B(x >= y),
            }
        }
        (Val::F(x), Val::F(y)) => {
            let (x, y) = (*x, *y);
            match op {
                BinOp::Add => Val::F(x + y),
                BinOp::Sub => Val::F(x - y),
                BinOp::Mul => Val::F(x * y),
                BinOp::Div => Val::F(x / y),
                BinOp::Rem => Val::F(x % y),
                BinOp::Eq => Val::B(x == y),
                BinOp::Ne => Val::B(x != y),
                BinOp::Lt => Val::B(x < y),
                BinOp::Le => Val::B(x <= y),
                BinOp::Gt => Val::B(x > y),
                BinOp::Ge => Val::B(x >= y),
                _ => unreachable!("checked program: bitwise operator on f64"),
            }
        }
        (Val::H(x), Val::H(y)) => match op {
            BinOp::Eq => Val::B(x.cell() == y.cell()),
            BinOp::Ne => Val::B(x.cell() != y.cell()),
            _ => unreachable!("checked program: arithmetic on handles"),
        },
        (Val::B(x), Val::B(y)) => match op {
            BinOp::Eq => Val::B(x == y),
            BinOp::Ne => Val::B(x != y),
            _ => unreachable!("checked program: arithmetic on bool"),
        },
        (Val::S(x), Val::S(y)) => match op {
            BinOp::Add => {
                let mut s = String::with_capacity(x.len() + y.len());
                s.push_str(x);
                s.push_str(y);
                Val::S(std::rc::Rc::new(s))
            }
            BinOp::Eq => Val::B(x == y),
            BinOp::Ne => Val::B(x != y),
            _ => unreachable!("checked program: `{}` on str", op.symbol()),
        },
        _ => unreachable!("checked program: operands of different types"),
    })
}
