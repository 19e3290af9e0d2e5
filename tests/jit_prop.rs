//! Random integer and float expressions: the JIT against a reference evaluator written from
//! the hir.rs semantics (wrapping, checked division, masked shifts, saturating casts).

mod jit_support;

use hotlab::backend::Value;
use hotlab::backend::jit::{Jit, JitOptions};
use hotlab::lang::hir::{BinOp, Expr, Type, UnOp};
use hotlab::runtime::ScriptErrorKind;
use jit_support::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum E {
    A,
    B,
    Lit(i64),
    Neg(Box<E>),
    Not(Box<E>),
    Bin(BinOp, Box<E>, Box<E>),
    /// `(x as f64 * 0.5) as i64`: a float round trip with a saturating cast back.
    Half(Box<E>),
}

const OPS: [BinOp; 10] = [
    BinOp::Add,
    BinOp::Sub,
    BinOp::Mul,
    BinOp::Div,
    BinOp::Rem,
    BinOp::BitAnd,
    BinOp::BitOr,
    BinOp::BitXor,
    BinOp::Shl,
    BinOp::Shr,
];

fn tree() -> impl Strategy<Value = E> {
    let leaf = prop_oneof![
        Just(E::A),
        Just(E::B),
        prop_oneof![
            Just(0i64),
            Just(-1),
            Just(1),
            Just(i64::MIN),
            Just(i64::MAX),
            any::<i64>()
        ]
        .prop_map(E::Lit),
    ];
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|e| E::Neg(Box::new(e))),
            inner.clone().prop_map(|e| E::Not(Box::new(e))),
            inner.clone().prop_map(|e| E::Half(Box::new(e))),
            (0..OPS.len(), inner.clone(), inner).prop_map(|(op, l, r)| E::Bin(
                OPS[op],
                Box::new(l),
                Box::new(r)
            )),
        ]
    })
}

/// `None` for division by zero.
fn eval(e: &E, a: i64, b: i64) -> Option<i64> {
    Some(match e {
        E::A => a,
        E::B => b,
        E::Lit(v) => *v,
        E::Neg(x) => eval(x, a, b)?.wrapping_neg(),
        E::Not(x) => !eval(x, a, b)?,
        E::Half(x) => (eval(x, a, b)? as f64 * 0.5) as i64,
        E::Bin(op, l, r) => {
            let (l, r) = (eval(l, a, b)?, eval(r, a, b)?);
            match op {
                BinOp::Add => l.wrapping_add(r),
                BinOp::Sub => l.wrapping_sub(r),
                BinOp::Mul => l.wrapping_mul(r),
                BinOp::Div if r == 0 => return None,
                BinOp::Div => l.wrapping_div(r),
                BinOp::Rem if r == 0 => return None,
                BinOp::Rem => l.wrapping_rem(r),
                BinOp::BitAnd => l & r,
                BinOp::BitOr => l | r,
                BinOp::BitXor => l ^ r,
                BinOp::Shl => l.wrapping_shl(r as u32),
                _ => l.wrapping_shr(r as u32),
            }
        }
    })
}

fn to_hir(e: &E, a: &Expr, b: &Expr) -> Expr {
    match e {
        E::A => a.clone(),
        E::B => b.clone(),
        E::Lit(v) => int(*v),
        E::Neg(x) => unary(UnOp::Neg, to_hir(x, a, b)),
        E::Not(x) => unary(UnOp::BitNot, to_hir(x, a, b)),
        E::Half(x) => cast(
            bin(BinOp::Mul, cast(to_hir(x, a, b), Type::F64), float(0.5)),
            Type::I64,
        ),
        E::Bin(op, l, r) => bin_at(*op, to_hir(l, a, b), to_hir(r, a, b), sp(7, 8)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn jit_agrees_with_the_reference(e in tree(), a in any::<i64>(), b in -3i64..70) {
        let mut p = program();
        let f = p.func("f", &[Type::I64, Type::I64], Type::I64, |f| {
            let (pa, pb) = (local(f.param(0), Type::I64), local(f.param(1), Type::I64));
            vec![ret(Some(to_hir(&e, &pa, &pb)))]
        });
        let mut jit = Jit::new(JitOptions { verify: true, ..JitOptions::default() }).unwrap();
        let prog = jit.compile(&p.finish()).unwrap();
        let got = prog.call(f, &[Value::I64(a), Value::I64(b)]);
        match eval(&e, a, b) {
            Some(want) => prop_assert_eq!(got, Ok(Value::I64(want))),
            None => {
                let err = got.unwrap_err();
                prop_assert_eq!(err.kind, ScriptErrorKind::DivisionByZero);
                prop_assert_eq!(err.span, sp(7, 8));
            }
        }
    }
}
