//! `sqrt` as the machine's instruction on the compiled backends (`lower_expr.rs`): the same
//! bits as the host function the interpreter calls, for ordinary values, zeros, infinities,
//! negative numbers and NaN.

mod common;

use common::same_everywhere;

#[test]
fn sqrt_gives_the_host_functions_bits() {
    same_everywhere(
        "native fn sqrt(x: f64) -> f64
         fn bits(x: f64) -> i64 { return (x * 1000000.0) as i64 }
         fn main() -> i64 {
             var acc = 0
             for i in 0..100 { acc += bits(sqrt(i as f64 * 0.37)) }
             let inf = 1.0 / 0.0
             assert(sqrt(inf) == inf)
             assert(sqrt(-0.0) == 0.0)
             let nan = sqrt(-1.0)
             assert(nan != nan)
             assert(sqrt(0.0 - inf) != sqrt(0.0 - inf))
             return acc
         }",
        "402352155",
    );
}

/// The math builtins that x86-64 has instructions for compile to them, on `jit` and `jit-opt`:
/// the only call left in each function is the cold stack-limit raise.
#[test]
fn math_builtins_are_instructions_not_calls() {
    use hotlab::backend::jit::OptLevel;
    let text = "fn f(x: f64, y: f64) -> f64 {
                    return floor(x) + ceil(y) + trunc(x) + round(y) + sqrt(x) + abs(y) + min(x, y) + max(x, y)
                }
                fn g(a: i64, b: i64) -> i64 { return abs(a) + min(a, b) * max(a, b) }
                fn h(x: f64) -> f64 { return sin(x) }";
    let program = common::compile_text("m.hot", text).unwrap();
    for opt in [OptLevel::None, OptLevel::Speed] {
        let listing = |name: &str| common::listing(&program, opt, name);
        let calls = |lines: &[String]| lines.iter().filter(|l| l.starts_with("call")).count();
        let f = listing("f");
        for op in ["roundsd", "sqrtsd", "minsd", "maxsd"] {
            assert!(
                f.iter().any(|l| l.contains(op)),
                "{opt:?}: no {op} in\n{f:#?}"
            );
        }
        // Leaves: not even a stack check's raise (`opt_inline::drop_leaf_checks`).
        assert_eq!(calls(&f), 0, "{opt:?}: f calls:\n{f:#?}");
        let g = listing("g");
        assert_eq!(calls(&g), 0, "{opt:?}: g calls:\n{g:#?}");
        assert!(g.iter().any(|l| l.starts_with("cmov")), "{opt:?}: {g:#?}");
        let h = listing("h");
        // `sin` is a call of the runtime's function, the only one: a function that calls
        // only the runtime has no stack check.
        assert_eq!(
            calls(&h),
            1,
            "{opt:?}: sin is a call of the runtime's function:\n{h:#?}"
        );
    }
}

/// Integer `abs`, `min` and `max` at the ends of the range, the same everywhere.
#[test]
fn integer_math_at_the_extremes() {
    same_everywhere(
        "fn main() -> i64 {
             let lo = -9223372036854775808
             let hi = 9223372036854775807
             assert(abs(lo) == lo && abs(hi) == hi && abs(-hi) == hi)
             assert(min(lo, hi) == lo && max(lo, hi) == hi && min(-1, 0) == -1)
             var acc = 0
             for i in -50..50 { acc = acc * 31 + abs(i * 0x10000000000000) + min(i, 7) - max(i, -7) }
             return acc
         }",
        &interp_value(),
    );
}

fn interp_value() -> String {
    let mut acc: i64 = 0;
    for i in -50i64..50 {
        acc = acc
            .wrapping_mul(31)
            .wrapping_add(i.wrapping_mul(0x10000000000000).wrapping_abs())
            .wrapping_add(i.min(7))
            .wrapping_sub(i.max(-7));
    }
    acc.to_string()
}

/// A multiply by a constant `2^k ± 1` is a shift and an add or subtract on `jit` and `jit-opt` where
/// that is faster (`mul_values`), with the same wrapping value everywhere, at the ends of the
/// range too.
#[test]
fn multiplies_by_two_to_the_k_plus_or_minus_one_are_shifts_with_the_same_value() {
    use hotlab::backend::jit::OptLevel;
    let constants = [
        3i64,
        5,
        7,
        9,
        15,
        17,
        31,
        33,
        1023,
        4611686018427387905,
        i64::MAX,
    ];
    let xs = [
        0i64,
        1,
        -1,
        2,
        12345,
        -987654321,
        i64::MAX,
        i64::MIN,
        i64::MIN + 1,
    ];
    let mut body = String::new();
    let mut want = 0i64;
    for (ci, c) in constants.iter().enumerate() {
        for (xi, x) in xs.iter().enumerate() {
            body.push_str(&format!(
                "    t = x{xi}\n    t *= {c}\n    acc = acc * 3 + t + {c} * x{xi} + {ci}\n"
            ));
            want = want
                .wrapping_mul(3)
                .wrapping_add(x.wrapping_mul(*c))
                .wrapping_add(c.wrapping_mul(*x))
                .wrapping_add(ci as i64);
        }
    }
    let lets: String = xs
        .iter()
        .enumerate()
        .map(|(i, x)| format!("    let x{i} = id({x})\n"))
        .collect();
    let text = format!(
        "fn id(x: i64) -> i64 {{\n    return x\n}}\n\
         fn m(x: i64) -> i64 {{\n    var a = x\n    a = a * 31 + x\n    a *= 33\n    \
         return a + x * 7 + x * 5\n}}\n\
         fn main() -> i64 {{\n{lets}    var acc = 0\n    var t = 0\n{body}    return acc\n}}\n"
    )
    .replace("id(-9223372036854775808)", "id(-9223372036854775807 - 1)");
    same_everywhere(&text, &want.to_string());
    let program = common::compile_text("m.hot", &text).unwrap();
    // jit and jit-opt alike.
    for opt in [OptLevel::None, OptLevel::Speed] {
        let lines = common::listing(&program, opt, "m");
        // On a `var` (a chain a loop may carry) `* 31` and `* 33` are shifts; `x * 5` a `lea`;
        // `x * 7` of a parameter stays one `imul` (off a chain, fewer instructions win).
        let imuls: Vec<&String> = lines.iter().filter(|l| l.starts_with("imul")).collect();
        assert!(imuls.len() == 1 && imuls[0].ends_with(",7"), "{lines:#?}");
        assert!(lines.iter().any(|l| l.starts_with("shl")), "{lines:#?}");
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("lea") && l.contains("*4]")),
            "{lines:#?}"
        );
    }
}
