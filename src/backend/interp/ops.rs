//! Operators and index checks on interpreter values.

use super::{R, Val};
use crate::lang::hir::{BinOp, Math};
use crate::lang::span::Span;
use crate::runtime::math;
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
                room(x.len() + y.len(), span)?;
                let mut s = String::new();
                s.try_reserve_exact(x.len() + y.len())
                    .map_err(|_| refused(span))?;
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

/// `OutOfMemory` at `span` unless `bytes` more fit under the job's memory limit
/// (`runtime::memory`): before each allocation a script asks for, as the compiled backends'
/// helpers check.
#[inline]
pub(super) fn room(bytes: usize, span: Span) -> R<()> {
    crate::runtime::memory::room(bytes)
        .map_err(|why| ScriptError::new(ScriptErrorKind::out_of_memory(why), span))
}

/// `OutOfMemory` at `span` for an allocation the system refused under the job's limit.
#[cold]
pub(super) fn refused(span: Span) -> ScriptError {
    ScriptError::new(
        ScriptErrorKind::out_of_memory(crate::runtime::memory::Refused::System),
        span,
    )
}

/// A math builtin on its evaluated arguments (see `runtime::math`).
pub(super) fn apply_math(m: Math, args: &[Val]) -> Val {
    let i = |k: usize| args[k].int();
    let f = |k: usize| match args[k] {
        Val::F(x) => x,
        _ => unreachable!("checked program: a float builtin on a non-float"),
    };
    match m {
        Math::AbsI => Val::I(math::abs_i64(i(0))),
        Math::MinI => Val::I(i(0).min(i(1))),
        Math::MaxI => Val::I(i(0).max(i(1))),
        Math::AbsF => Val::F(f(0).abs()),
        Math::MinF => Val::F(math::min_f64(f(0), f(1))),
        Math::MaxF => Val::F(math::max_f64(f(0), f(1))),
        Math::Sqrt => Val::F(f(0).sqrt()),
        Math::Floor => Val::F(f(0).floor()),
        Math::Ceil => Val::F(f(0).ceil()),
        Math::Round => Val::F(f(0).round()),
        Math::Trunc => Val::F(f(0).trunc()),
        Math::Sin => Val::F(math::hot_math_sin(f(0))),
        Math::Cos => Val::F(math::hot_math_cos(f(0))),
        Math::Tan => Val::F(math::hot_math_tan(f(0))),
        Math::Atan2 => Val::F(math::hot_math_atan2(f(0), f(1))),
        Math::Exp => Val::F(math::hot_math_exp(f(0))),
        Math::Ln => Val::F(math::hot_math_ln(f(0))),
        Math::Pow => Val::F(math::hot_math_pow(f(0), f(1))),
    }
}
