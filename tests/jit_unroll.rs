//! Counted loops unrolled by four on `jit` and `jit-opt` (`lower_loop.rs`, `counted_loop`): the same
//! iterations in the same order, so the same results everywhere, for every trip count around
//! the unrolled trip's four, at the ends of the `i64` range, and with the loop variable,
//! module variables, fields and array elements written in the body.

mod common;

use common::same_everywhere;

#[test]
fn unrolled_loops_run_every_iteration_once_in_order() {
    let mut want = 0i64;
    let bounds: [(i64, i64); 14] = [
        (0, 0),
        (0, 1),
        (0, 2),
        (0, 3),
        (0, 4),
        (0, 5),
        (3, 11),
        (-5, 4),
        (7, 2),
        (i64::MAX - 6, i64::MAX),
        (i64::MIN, i64::MIN + 2),
        (i64::MIN, i64::MIN + 3),
        (i64::MIN, i64::MIN + 5),
        (i64::MIN + 1, i64::MIN),
    ];
    let mut calls = String::new();
    for (k, (a, b)) in bounds.iter().enumerate() {
        // `G = G * 3 + (i & 7)` through a module variable, and the last index seen.
        let mut g = 0i64;
        let mut last = -1i64;
        let mut count = 0i64;
        let mut i = *a;
        while i < *b {
            g = g.wrapping_mul(3).wrapping_add(i & 7);
            last = i;
            count += 1;
            i += 1;
        }
        want = want
            .wrapping_mul(31)
            .wrapping_add(g)
            .wrapping_add(last)
            .wrapping_add(count)
            .wrapping_add(k as i64);
        let lit = |v: i64| {
            if v == i64::MIN {
                "(-9223372036854775807 - 1)".to_string()
            } else {
                format!("({v})")
            }
        };
        calls.push_str(&format!(
            "    acc = acc * 31 + walk(id{}, id{}) + {k}\n",
            lit(*a),
            lit(*b)
        ));
    }
    let text = format!(
        "var G = 0\n\
         class Box {{\n    var last: i64 = -1\n    var count: i64 = 0\n}}\n\
         fn id(x: i64) -> i64 {{\n    return x\n}}\n\
         fn walk(a: i64, b: i64) -> i64 {{\n    G = 0\n    let box = new Box()\n    \
         for i in a..b {{\n        G = (G << 1) + G + (i & 7)\n        box.last = i\n        \
         box.count += 1\n    }}\n    return G + box.last + box.count\n}}\n\
         fn main() -> i64 {{\n    var acc = 0\n{calls}    return acc\n}}\n"
    );
    same_everywhere(&text, &want.to_string());
}

#[test]
fn array_elements_and_lets_in_unrolled_bodies() {
    same_everywhere(
        "fn main() -> i64 {
             var a = [0; 16]
             var acc = 0
             for n in 0..23 {
                 for i in 0..n {
                     let j = (i * 5) & 15
                     a[j] += i
                     acc += a[(i + 3) & 15] ^ j
                 }
             }
             for x in a {
                 acc = acc * 7 + x
             }
             return acc
         }",
        &{
            let mut a = [0i64; 16];
            let mut acc = 0i64;
            for n in 0..23 {
                for i in 0..n {
                    let j = ((i * 5) & 15) as usize;
                    a[j] += i;
                    acc += a[((i + 3) & 15) as usize] ^ j as i64;
                }
            }
            for x in a {
                acc = acc.wrapping_mul(7).wrapping_add(x);
            }
            acc.to_string()
        },
    );
}

/// The listing: a loop of one-cycle operations has its body four times (and once more for
/// the iterations left over) on `jit-opt` and `jit`; a loop whose body waits on a multiply of a `var`
/// has it once.
#[test]
fn light_loops_are_unrolled_and_latency_bound_ones_are_not() {
    use hotlab::backend::jit::OptLevel;
    let text = "var G = 0
                fn light(n: i64) -> i64 {
                    for i in 0..n {
                        G = G + (i & 3)
                    }
                    return G
                }
                fn heavy(n: i64) -> i64 {
                    var acc = 1
                    for i in 0..n {
                        acc = acc * 31 + (i & 3)
                    }
                    return acc
                }
                fn copier(n: i64, g: [i64; 4]) -> i64 {
                    var a = [0; 4]
                    for i in 0..n {
                        a = g
                        a[1] += i & 3
                    }
                    return a[1]
                }
                fn compound(n: i64) -> i64 {
                    var acc = 1
                    for i in 0..n {
                        acc *= 31
                        acc += i & 3
                    }
                    return acc
                }";
    let program = common::compile_text("u.hot", text).unwrap();
    let count_ands = |opt: OptLevel, name: &str| {
        common::listing(&program, opt, name)
            .iter()
            .filter(|l| l.starts_with("and ") && l.ends_with(",3"))
            .count()
    };
    assert_eq!(count_ands(OptLevel::Speed, "light"), 5);
    assert_eq!(count_ands(OptLevel::Speed, "heavy"), 1);
    // An array copy (a temporary per copy) and `acc *= 31` on a `var` are not light either.
    assert_eq!(count_ands(OptLevel::Speed, "copier"), 1);
    assert_eq!(count_ands(OptLevel::Speed, "compound"), 1);
    // jit unrolls the same loops: the copies are one version's code, and a light loop calls
    // nothing, so no reload comes between them.
    assert_eq!(count_ands(OptLevel::None, "light"), 5, "jit unrolls too");
    assert_eq!(count_ands(OptLevel::None, "heavy"), 1);
}

/// An error raised inside an unrolled copy (the seventh iteration's index, in the second trip
/// of four) is the same error at the same place on every backend.
#[test]
fn a_raise_inside_an_unrolled_copy_is_located_as_everywhere() {
    same_everywhere(
        "var G = 0
fn main() -> i64 {
    var a = [0; 6]
    for i in 0..9 {
        G = G + 1
        a[i] = i + G
    }
    return G
}
",
        "error: index 6 out of range for length 6 at 6:11",
    );
}

/// A row of an array of arrays read in place (`GN[i & 3][j]`) unrolls like an element: the
/// same sums for every trip count around four, and an index out of range in a row raised at
/// the same place on every backend.
#[test]
fn rows_of_nested_arrays_unroll_with_the_same_values_and_errors() {
    for n in 0..10 {
        let text = format!(
            "var GN = [[0; 4]; 4]
             fn main() -> i64 {{
                 for i in 0..4 {{ for j in 0..4 {{ GN[i][j] = i * 10 + j }} }}
                 var acc = 0
                 for i in 0..{n} {{
                     acc += GN[i & 3][(i >> 1) & 3] * 3 + (i & 7)
                 }}
                 return acc
             }}"
        );
        let want: i64 = (0..n)
            .map(|i: i64| ((i & 3) * 10 + ((i >> 1) & 3)) * 3 + (i & 7))
            .sum();
        same_everywhere(&text, &want.to_string());
    }
    same_everywhere(
        "var GN = [[1; 4]; 4]
         fn main() -> i64 {
             var acc = 0
             for i in 0..9 {
                 acc += GN[i & 3][i - 2]
             }
             return acc
         }",
        "error: index -2 out of range for length 4 at 5:25",
    );
}

/// An accumulation `p op= e` in an unrolled loop is computed from one base per trip of four
/// (`lower_loop.rs`, `Reassoc`): for every operator it takes (`+ - ^ | &`, compound or
/// `p = p op e`), every place (a local, a module variable, a field) and every trip count around
/// four, in range and for-each loops over arrays and vecs, the same values as a plain loop;
/// forms that are not an accumulation (`s = i - s`, `t = u + e`) are left alone; and where the operand reads the place's cell (the
/// same local, module variable or field, also through another handle to the same object),
/// it is not reassociated and still gives the plain loop's values.
#[test]
fn reassociated_accumulations_give_the_plain_loops_values() {
    for n in 0..10i64 {
        let text = format!(
            "var G = 7
             var A = [3, 1, 4, 1, 5, 9, 2, 6]
             class C {{
                 var x: i64 = 5
                 var y: i64 = 2
             }}
             fn main() -> i64 {{
                 var add = 1
                 for i in 0..{n} {{ add += i & 3 }}
                 var sub = 100
                 for i in 0..{n} {{ sub -= i * 3 }}
                 var xor = 0
                 for i in 0..{n} {{ xor ^= i * 37 }}
                 var or = 0
                 for i in 0..{n} {{ or = or | (1 << i) }}
                 var and = -1
                 for i in 0..{n} {{ and &= ~(1 << (i * 2)) }}
                 G = 7
                 for i in 0..{n} {{ G = G + A[i & 7] }}
                 let c = new C()
                 for i in 0..{n} {{ c.x += c.y + i }}
                 for i in 0..{n} {{ c.y -= A[(i * 3) & 7] }}
                 let d = c
                 var self_read = 1
                 for i in 0..{n} {{ self_read += self_read & i }}
                 for i in 0..{n} {{ c.x += d.x & 5 }}
                 for i in 0..{n} {{ G = G + (G >> 1) }}
                 var swapped = 3
                 for i in 0..{n} {{ swapped = i - swapped }}
                 var other = 4
                 for i in 0..{n} {{ other = add + (i & 1) }}
                 var each = 0
                 for x in A {{ each -= x * {n} }}
                 var v = vec<i64>()
                 for i in 0..{n} {{ v.push(i * 5) }}
                 for x in v {{ each ^= x + 1 }}
                 return add + sub * 3 + xor * 5 + or * 7 + and * 11 + G * 13 + c.x * 17 + c.y * 19 + self_read * 23 + swapped * 29 + other * 31 + each * 37
             }}"
        );
        let a = [3i64, 1, 4, 1, 5, 9, 2, 6];
        let (mut add, mut sub, mut xor, mut or, mut and) = (1i64, 100i64, 0i64, 0i64, -1i64);
        let (mut g, mut cx, mut cy, mut self_read) = (7i64, 5i64, 2i64, 1i64);
        for i in 0..n {
            add += i & 3;
            sub -= i * 3;
            xor ^= i * 37;
            or |= 1 << i;
            and &= !(1 << (i * 2));
            g += a[(i & 7) as usize];
        }
        for i in 0..n {
            cx += cy + i;
        }
        for i in 0..n {
            cy -= a[((i * 3) & 7) as usize];
        }
        for i in 0..n {
            self_read += self_read & i;
        }
        for _ in 0..n {
            cx += cx & 5;
        }
        for _ in 0..n {
            g += g >> 1;
        }
        let mut swapped = 3i64;
        for i in 0..n {
            swapped = i - swapped;
        }
        let mut other = 4i64;
        for i in 0..n {
            other = add + (i & 1);
        }
        let mut each = 0i64;
        for x in a {
            each -= x * n;
        }
        for i in 0..n {
            each ^= i * 5 + 1;
        }
        let want = add
            + sub * 3
            + xor * 5
            + or * 7
            + and * 11
            + g * 13
            + cx * 17
            + cy * 19
            + self_read * 23
            + swapped * 29
            + other * 31
            + each * 37;
        same_everywhere(&text, &want.to_string());
    }
}

/// A raise in a reassociated copy (the index of the eleventh iteration, in the third trip of
/// four) is the same error at the same place on every backend.
#[test]
fn a_raise_inside_a_reassociated_copy_is_located_as_everywhere() {
    same_everywhere(
        "class C {
    var x: i64 = 0
}
fn main() -> i64 {
    var a = [1; 10]
    let c = new C()
    for i in 0..12 {
        c.x += a[i] * 2
    }
    return c.x
}
",
        "error: index 10 out of range for length 10 at 8:16",
    );
}
