//! The JIT on hand-built HIR: one test per group of constructs, semantics from hir.rs.

mod jit_support;

use hotlab::backend::jit::{Jit, JitOptions, JitProgram, VmCtx};
use hotlab::backend::{Checks, Value};
use hotlab::lang::hir::{BinOp, Program, Type, UnOp};
use hotlab::runtime::ScriptErrorKind;
use jit_support::*;

fn jit() -> Jit {
    Jit::new(JitOptions {
        verify: true,
        ..JitOptions::default()
    })
    .expect("jit")
}

fn compile(p: &Program) -> JitProgram {
    jit().compile(p).expect("compile")
}

fn i(v: i64) -> Value {
    Value::I64(v)
}

#[test]
fn integer_arithmetic_wraps_and_divides_like_hir_says() {
    let mut p = program();
    let ops = [
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
    let ids: Vec<_> = ops
        .iter()
        .map(|op| {
            p.func(op.symbol(), &[Type::I64, Type::I64], Type::I64, |f| {
                let (a, b) = (f.param(0), f.param(1));
                vec![ret(Some(bin(
                    *op,
                    local(a, Type::I64),
                    local(b, Type::I64),
                )))]
            })
        })
        .collect();
    let prog = compile(&p.finish());
    let cases = [
        (i64::MAX, 1),
        (i64::MIN, -1),
        (-7, 2),
        (7, -2),
        (-7, -2),
        (1, 65),
        (-256, 68),
        (12345, 0),
    ];
    for (op, id) in ops.iter().zip(&ids) {
        for (a, b) in cases {
            let got = prog.call(*id, &[i(a), i(b)]);
            let want = match op {
                BinOp::Add => Some(a.wrapping_add(b)),
                BinOp::Sub => Some(a.wrapping_sub(b)),
                BinOp::Mul => Some(a.wrapping_mul(b)),
                BinOp::Div => a.checked_div(b).or((b != 0).then_some(i64::MIN)),
                BinOp::Rem => a.checked_rem(b).or((b != 0).then_some(0)),
                BinOp::BitAnd => Some(a & b),
                BinOp::BitOr => Some(a | b),
                BinOp::BitXor => Some(a ^ b),
                BinOp::Shl => Some(a.wrapping_shl(b as u32)),
                _ => Some(a.wrapping_shr(b as u32)),
            };
            match want {
                Some(w) => assert_eq!(got, Ok(i(w)), "{a} {} {b}", op.symbol()),
                None => assert_eq!(got.unwrap_err().kind, ScriptErrorKind::DivisionByZero),
            }
        }
    }
}

#[test]
fn floats_casts_and_comparisons() {
    let mut p = program();
    let rem = p.func("rem", &[Type::F64, Type::F64], Type::F64, |f| {
        vec![ret(Some(bin(
            BinOp::Rem,
            local(f.param(0), Type::F64),
            local(f.param(1), Type::F64),
        )))]
    });
    let to_int = p.func("to_int", &[Type::F64], Type::I64, |f| {
        vec![ret(Some(cast(local(f.param(0), Type::F64), Type::I64)))]
    });
    let to_float = p.func("to_float", &[Type::I64], Type::F64, |f| {
        vec![ret(Some(cast(local(f.param(0), Type::I64), Type::F64)))]
    });
    let bool_int = p.func("bool_int", &[Type::Bool], Type::I64, |f| {
        vec![ret(Some(cast(local(f.param(0), Type::Bool), Type::I64)))]
    });
    let lt = p.func("lt", &[Type::F64, Type::F64], Type::Bool, |f| {
        vec![ret(Some(bin(
            BinOp::Lt,
            local(f.param(0), Type::F64),
            local(f.param(1), Type::F64),
        )))]
    });
    let ne = p.func("ne", &[Type::F64, Type::F64], Type::Bool, |f| {
        vec![ret(Some(bin(
            BinOp::Ne,
            local(f.param(0), Type::F64),
            local(f.param(1), Type::F64),
        )))]
    });
    let neg = p.func("neg", &[Type::F64], Type::F64, |f| {
        vec![ret(Some(unary(UnOp::Neg, local(f.param(0), Type::F64))))]
    });
    let prog = compile(&p.finish());
    let f = Value::F64;
    assert!(
        prog.call(rem, &[f(-7.5), f(2.0)])
            .unwrap()
            .same_as(&f(-1.5))
    );
    let Ok(Value::F64(nan)) = prog.call(rem, &[f(1.0), f(0.0)]) else {
        panic!("f64 % 0.0 must be a float")
    };
    assert!(nan.is_nan());
    for x in [f64::NAN, 1e300, -1e300, -2.9, 2.9, f64::INFINITY] {
        assert_eq!(prog.call(to_int, &[f(x)]), Ok(i(x as i64)), "{x}");
    }
    assert_eq!(prog.call(to_float, &[i(-3)]), Ok(f(-3.0)));
    assert_eq!(prog.call(bool_int, &[Value::Bool(true)]), Ok(i(1)));
    assert_eq!(
        prog.call(lt, &[f(f64::NAN), f(1.0)]),
        Ok(Value::Bool(false))
    );
    assert_eq!(
        prog.call(ne, &[f(f64::NAN), f(f64::NAN)]),
        Ok(Value::Bool(true))
    );
    assert!(prog.call(neg, &[f(0.0)]).unwrap().same_as(&f(-0.0)));
}

#[test]
fn short_circuit_skips_the_right_operand() {
    let mut p = program();
    let hits = p.global("hits", Type::I64);
    let touch = p.func("touch", &[], Type::Bool, |_| {
        vec![
            assign_op(place_global(hits, Type::I64), BinOp::Add, int(1), sp(0, 1)),
            ret(Some(boolean(true))),
        ]
    });
    let f = p.func("f", &[Type::Bool, Type::Bool], Type::Bool, |f| {
        let (a, b) = (local(f.param(0), Type::Bool), local(f.param(1), Type::Bool));
        vec![ret(Some(or(
            and(a, call(touch, vec![], Type::Bool)),
            and(b, unary(UnOp::Not, boolean(false))),
        )))]
    });
    let prog = compile(&p.finish());
    let b = Value::Bool;
    assert_eq!(prog.call(f, &[b(false), b(true)]), Ok(b(true)));
    assert_eq!(prog.global("hits"), Some(i(0)));
    assert_eq!(prog.call(f, &[b(true), b(false)]), Ok(b(true)));
    assert_eq!(prog.global("hits"), Some(i(1)));
    assert_eq!(prog.call(f, &[b(false), b(false)]), Ok(b(false)));
}

#[test]
fn loops_break_continue_and_globals_with_init() {
    let mut p = program();
    let base = p.global("base", Type::I64);
    // sum of i in 0..n, skipping multiples of 3, stopping at 50, plus the global base
    let sum = p.func("sum", &[Type::I64], Type::I64, |f| {
        let n = f.param(0);
        let acc = f.var("acc", Type::I64);
        let i = f.var("i", Type::I64);
        vec![
            let_(acc, global(base, Type::I64)),
            for_range(
                i,
                int(0),
                local(n, Type::I64),
                vec![
                    if_(
                        bin(
                            BinOp::Eq,
                            bin(BinOp::Rem, local(i, Type::I64), int(3)),
                            int(0),
                        ),
                        vec![cont()],
                        None,
                    ),
                    if_(
                        bin(BinOp::Gt, local(i, Type::I64), int(50)),
                        vec![brk()],
                        None,
                    ),
                    assign_op(
                        place_local(acc, Type::I64),
                        BinOp::Add,
                        local(i, Type::I64),
                        sp(0, 1),
                    ),
                ],
            ),
            ret(Some(local(acc, Type::I64))),
        ]
    });
    let count = p.func("count", &[Type::I64], Type::I64, |f| {
        let n = f.param(0);
        let k = f.var("k", Type::I64);
        vec![
            let_(k, int(0)),
            while_(
                bool_true(),
                vec![
                    if_(
                        bin(BinOp::Ge, local(k, Type::I64), local(n, Type::I64)),
                        vec![brk()],
                        None,
                    ),
                    assign(
                        place_local(k, Type::I64),
                        bin(BinOp::Add, local(k, Type::I64), int(1)),
                    ),
                ],
            ),
            ret(Some(local(k, Type::I64))),
        ]
    });
    let prog = compile(&p.finish_with_init(vec![assign(place_global(base, Type::I64), int(1000))]));
    let want: i64 = 1000
        + (0..100)
            .filter(|i| i % 3 != 0)
            .take_while(|i| *i <= 50)
            .sum::<i64>();
    assert_eq!(prog.call(sum, &[i(100)]), Ok(i(want)));
    assert_eq!(prog.call(sum, &[i(-5)]), Ok(i(1000)));
    assert_eq!(prog.call(count, &[i(17)]), Ok(i(17)));
    assert_eq!(prog.global("base"), Some(i(1000)));
}

fn bool_true() -> hotlab::lang::hir::Expr {
    boolean(true)
}

#[test]
fn arrays_are_values() {
    let mut p = program();
    let ga = p.global("ga", arr(Type::I64, 3));
    // fn bump(a: [i64; 3]) -> [i64; 3] { a[0] += 1 ... } : params are immutable, so copy first
    let bump = p.func("bump", &[arr(Type::I64, 3)], arr(Type::I64, 3), |f| {
        let a = f.param(0);
        let b = f.var("b", arr(Type::I64, 3));
        vec![
            let_(b, local(a, arr(Type::I64, 3))),
            assign_op(
                place_index(place_local(b, arr(Type::I64, 3)), int(0), sp(1, 2)),
                BinOp::Add,
                int(1),
                sp(0, 1),
            ),
            ret(Some(local(b, arr(Type::I64, 3)))),
        ]
    });
    let main = p.func("main", &[], Type::I64, |f| {
        let a = f.var("a", arr(Type::I64, 3));
        let m = f.var("m", arr(arr(Type::I64, 3), 2));
        let x = f.var("x", Type::I64);
        let total = f.var("total", Type::I64);
        let ty3 = arr(Type::I64, 3);
        vec![
            let_(a, array(vec![int(1), int(2), int(3)])),
            // the call gets a copy: a stays [1, 2, 3]
            let_(
                m,
                array(vec![
                    call(bump, vec![local(a, ty3.clone())], ty3.clone()),
                    repeat(int(7), 3),
                ]),
            ),
            // m[1][2] = a[0] + 10
            assign(
                place_index(
                    place_index(place_local(m, arr(ty3.clone(), 2)), int(1), sp(2, 3)),
                    int(2),
                    sp(3, 4),
                ),
                bin(BinOp::Add, index(local(a, ty3.clone()), int(0)), int(10)),
            ),
            // for x in a { a[0] = 100; total += x } iterates over the copy
            let_(total, int(0)),
            for_each(
                x,
                local(a, ty3.clone()),
                vec![
                    assign(
                        place_index(place_local(a, ty3.clone()), int(0), sp(4, 5)),
                        int(100),
                    ),
                    assign_op(
                        place_local(total, Type::I64),
                        BinOp::Add,
                        local(x, Type::I64),
                        sp(0, 1),
                    ),
                ],
            ),
            assign(place_global(ga, ty3.clone()), local(a, ty3.clone())),
            // total (6) * 1000 + m[0][0] (2) * 100 + m[1][2] (11) + len (3) * 1_000_000
            ret(Some(bin(
                BinOp::Add,
                bin(
                    BinOp::Add,
                    bin(BinOp::Mul, local(total, Type::I64), int(1000)),
                    bin(
                        BinOp::Mul,
                        index(index(local(m, arr(ty3.clone(), 2)), int(0)), int(0)),
                        int(100),
                    ),
                ),
                bin(
                    BinOp::Add,
                    index(index(local(m, arr(ty3.clone(), 2)), int(1)), int(2)),
                    bin(BinOp::Mul, len(local(m, arr(ty3, 2))), int(1_000_000)),
                ),
            ))),
        ]
    });
    let prog = compile(&p.finish());
    assert_eq!(prog.call(main, &[]), Ok(i(2_000_000 + 6000 + 200 + 11)));
    assert_eq!(
        prog.global("ga"),
        Some(Value::Array(vec![i(100), i(2), i(3)]))
    );
    let arg = Value::Array(vec![i(5), i(6), i(7)]);
    assert_eq!(
        prog.call(bump, &[arg]),
        Ok(Value::Array(vec![i(6), i(6), i(7)]))
    );
}

#[test]
fn index_out_of_range_is_reported_at_its_span_only_with_checks_on() {
    let build = || {
        let mut p = program();
        let get = p.func("get", &[arr(Type::I64, 4), Type::I64], Type::I64, |f| {
            vec![ret(Some(index_at(
                local(f.param(0), arr(Type::I64, 4)),
                local(f.param(1), Type::I64),
                sp(40, 45),
            )))]
        });
        (p.finish(), get)
    };
    let (prog, get) = build();
    let a = Value::Array(vec![i(1), i(2), i(3), i(4)]);
    let on = compile(&prog);
    assert_eq!(on.call(get, &[a.clone(), i(3)]), Ok(i(4)));
    for bad in [4, -1, i64::MIN] {
        let err = on.call(get, &[a.clone(), i(bad)]).unwrap_err();
        assert_eq!(
            err.kind,
            ScriptErrorKind::IndexOutOfRange { index: bad, len: 4 }
        );
        assert_eq!(err.span, sp(40, 45));
        assert_eq!(
            err.render(on.source()),
            "error: index ".to_string() + &format!("{bad} out of range for length 4 at t.hot:2:1")
        );
    }
    let mut off = Jit::new(JitOptions {
        checks: Checks::Off,
        verify: true,
        ..JitOptions::default()
    })
    .unwrap();
    let off = off.compile(&prog).unwrap();
    assert_eq!(off.call(get, &[a, i(2)]), Ok(i(3)));
    // Nothing branches in the unchecked code (a leaf has no stack check:
    // `opt_inline::drop_leaf_checks`); the checked one branches on the bound.
    assert_eq!(off.functions()[get.index()].clif.matches("brif").count(), 0);
    assert_eq!(on.functions()[get.index()].clif.matches("brif").count(), 1);
}

#[test]
fn natives_and_assert() {
    let mut p = program();
    let sqrt = p.native("sqrt");
    let sink = p.native("sink");
    let f = p.func("f", &[Type::F64], Type::F64, |f| {
        vec![
            expr(assert_at(
                bin(
                    BinOp::Eq,
                    call_native(sink, vec![int(3)], Type::I64),
                    int(3),
                ),
                sp(1, 2),
            )),
            ret(Some(call_native(
                sqrt,
                vec![local(f.param(0), Type::F64)],
                Type::F64,
            ))),
        ]
    });
    let g = p.func("g", &[Type::I64], Type::Unit, |f| {
        vec![expr(assert_at(
            bin(BinOp::Lt, local(f.param(0), Type::I64), int(10)),
            sp(50, 60),
        ))]
    });
    let prog = compile(&p.finish());
    assert_eq!(prog.call(f, &[Value::F64(16.0)]), Ok(Value::F64(4.0)));
    assert_eq!(prog.call(g, &[i(3)]), Ok(Value::Unit));
    let err = prog.call(g, &[i(30)]).unwrap_err();
    assert_eq!(err.kind, ScriptErrorKind::AssertionFailed);
    assert_eq!(err.span, sp(50, 60));
}

#[test]
fn bad_arguments_are_an_error_not_a_crash() {
    let mut p = program();
    let f = p.func("f", &[Type::I64], Type::I64, |f| {
        vec![ret(Some(local(f.param(0), Type::I64)))]
    });
    let prog = compile(&p.finish());
    assert!(matches!(
        prog.call(f, &[]).unwrap_err().kind,
        ScriptErrorKind::BadCall(_)
    ));
    assert!(matches!(
        prog.call(f, &[Value::F64(1.0)]).unwrap_err().kind,
        ScriptErrorKind::BadCall(_)
    ));
    assert!(matches!(
        prog.run_main().unwrap_err().kind,
        ScriptErrorKind::BadCall(_)
    ));
}

#[test]
fn raw_entry_is_typed_and_checked() {
    let mut p = program();
    let f = p.func("twice", &[Type::I64], Type::I64, |f| {
        vec![ret(Some(bin(
            BinOp::Mul,
            local(f.param(0), Type::I64),
            int(2),
        )))]
    });
    let prog = compile(&p.finish());
    type I2I = unsafe extern "C-unwind" fn(*mut VmCtx, i64) -> i64;
    type F2F = unsafe extern "C-unwind" fn(*mut VmCtx, f64) -> f64;
    let entry: I2I = prog.raw_entry(f).unwrap();
    assert!(prog.raw_entry::<F2F>(f).is_err());
    let mut ctx = prog.vm_context();
    // SAFETY: the context comes from the program, which outlives the call; `twice` cannot
    // raise.
    let got = unsafe { entry(&mut ctx, 21) };
    assert_eq!(got, 42);
}

#[test]
fn function_records_have_code_and_ir() {
    let mut p = program();
    p.func("one", &[], Type::I64, |_| vec![ret(Some(int(1)))]);
    let prog = compile(&p.finish());
    let one = &prog.functions()[0];
    assert!(one.size > 0 && one.bytes.len() == one.size && one.addr != 0);
    // A leaf (it calls no script code): no stack check.
    assert!(one.clif.contains("return"), "{}", one.clif);
    assert!(!one.clif.contains("get_stack_pointer"), "{}", one.clif);
    assert!(one.compile_time.as_nanos() > 0);
    assert_eq!(prog.entries()[0].name, "one.entry");
}

/// A program touching most constructs, for whole-program checks.
fn everything() -> (Program, hotlab::lang::hir::FuncId) {
    let mut p = program();
    let g = p.global("g", arr(Type::F64, 2));
    let sqrt = p.native("sqrt");
    let fib = p.declare("fib", &[Type::I64], Type::I64, sp(3, 6));
    p.define(fib, |f| {
        let n = local(f.param(0), Type::I64);
        vec![
            if_(
                bin(BinOp::Lt, n.clone(), int(2)),
                vec![ret(Some(n.clone()))],
                None,
            ),
            ret(Some(bin(
                BinOp::Add,
                call(fib, vec![bin(BinOp::Sub, n.clone(), int(1))], Type::I64),
                call(fib, vec![bin(BinOp::Sub, n, int(2))], Type::I64),
            ))),
        ]
    });
    let main = p.func("main", &[], Type::I64, |f| {
        let x = f.var("x", Type::F64);
        let k = f.var("k", Type::I64);
        vec![
            let_(
                x,
                call_native(
                    sqrt,
                    vec![index(global(g, arr(Type::F64, 2)), int(1))],
                    Type::F64,
                ),
            ),
            let_(k, int(0)),
            while_(
                bin(BinOp::Lt, local(k, Type::I64), int(5)),
                vec![assign_op(
                    place_local(k, Type::I64),
                    BinOp::Add,
                    int(1),
                    sp(0, 1),
                )],
            ),
            ret(Some(bin(
                BinOp::Add,
                call(fib, vec![int(20)], Type::I64),
                bin(
                    BinOp::Add,
                    cast(local(x, Type::F64), Type::I64),
                    local(k, Type::I64),
                ),
            ))),
        ]
    });
    let init = vec![assign(
        place_global(g, arr(Type::F64, 2)),
        array(vec![float(1.0), float(49.0)]),
    )];
    (p.finish_with_init(init), main)
}

#[test]
fn optimized_code_gives_the_same_results() {
    let (p, main) = everything();
    let want = Value::I64(6765 + 7 + 5);
    assert_eq!(compile(&p).call(main, &[]), Ok(want.clone()));
    let mut opt = Jit::new(JitOptions {
        opt: hotlab::backend::jit::OptLevel::Speed,
        verify: true,
        ..JitOptions::default()
    })
    .unwrap();
    assert_eq!(opt.compile(&p).unwrap().run_main(), Ok(want));
}

#[test]
fn clif_text_of_every_function_reparses_and_verifies() {
    let (p, _) = everything();
    let mut jit = jit();
    jit.set_disasm(true);
    let prog = jit.compile(&p).unwrap();
    let isa = cranelift_native::builder()
        .unwrap()
        .finish(cranelift_codegen::settings::Flags::new(
            cranelift_codegen::settings::builder(),
        ))
        .unwrap();
    for f in prog.functions().iter().chain(prog.entries()) {
        let parsed = cranelift_reader::parse_functions(&f.clif).expect("CLIF text parses");
        cranelift_codegen::verify_function(&parsed[0], &*isa).expect("CLIF verifies");
        assert!(
            f.vcode.as_deref().is_some_and(|v| v.contains("ret")),
            "{}: {:?}",
            f.name,
            f.vcode
        );
    }
}

#[test]
fn large_and_nested_arrays_copy_by_loop() {
    let mut p = program();
    let row = arr(Type::I64, 20);
    let grid = arr(row.clone(), 30);
    let main = p.func("main", &[], Type::I64, |f| {
        let g = f.var("g", grid.clone());
        let r = f.var("r", row.clone());
        let x = f.var("x", Type::I64);
        let total = f.var("total", Type::I64);
        let h = f.var("h", grid.clone());
        vec![
            // g = [[3; 20]; 30]; h = g; g[29][19] = 1000; total = sum of h (unchanged copy)
            let_(g, repeat(repeat(int(3), 20), 30)),
            let_(h, local(g, grid.clone())),
            assign(
                place_index(
                    place_index(place_local(g, grid.clone()), int(29), sp(0, 1)),
                    int(19),
                    sp(0, 1),
                ),
                int(1000),
            ),
            let_(total, int(0)),
            for_each(
                r,
                local(h, grid.clone()),
                vec![for_each(
                    x,
                    local(r, row.clone()),
                    vec![assign_op(
                        place_local(total, Type::I64),
                        BinOp::Add,
                        local(x, Type::I64),
                        sp(0, 1),
                    )],
                )],
            ),
            // + g[29][19] read through a copy of the row
            ret(Some(bin(
                BinOp::Add,
                local(total, Type::I64),
                index(index(local(g, grid.clone()), int(29)), int(19)),
            ))),
        ]
    });
    let prog = compile(&p.finish());
    assert_eq!(prog.call(main, &[]), Ok(i(3 * 600 + 1000)));
}

#[test]
fn init_faults_and_bad_hir_are_errors_and_the_jit_goes_on() {
    let mut jit = jit();
    let mut p = program();
    let g = p.global("g", Type::I64);
    let bad_init = p.finish_with_init(vec![assign(
        place_global(g, Type::I64),
        bin_at(BinOp::Rem, int(1), int(0), sp(9, 10)),
    )]);
    match jit.compile(&bad_init) {
        Err(hotlab::backend::jit::JitError::Init(e)) => {
            assert_eq!(e.kind, ScriptErrorKind::DivisionByZero);
            assert_eq!(e.span, sp(9, 10));
        }
        Err(e) => panic!("expected an init error, got {e}"),
        Ok(_) => panic!("expected an init error"),
    }
    let mut p = program();
    p.func("oops", &[], Type::Unit, |_| vec![brk()]);
    match jit.compile(&p.finish()) {
        Err(e @ hotlab::backend::jit::JitError::Lower { .. }) => {
            assert!(e.to_string().contains("`oops`"), "{e}");
        }
        Err(e) => panic!("expected a lowering error, got {e}"),
        Ok(_) => panic!("expected a lowering error"),
    }
    let (p, main) = everything();
    assert_eq!(
        jit.compile(&p).unwrap().call(main, &[]),
        Ok(i(6765 + 7 + 5))
    );
}
