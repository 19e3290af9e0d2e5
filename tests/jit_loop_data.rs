//! The loop and data lowerings of the Cranelift backends give what the interpreter gives:
//! module variables kept in registers through loops that call nothing (`opt_globals.rs`, now
//! on `jit` and `object` too), vec locals whose length and data are read once before a loop
//! (`opt_vec.rs`; a loop that pushes keeps the length in a register too), counted loops
//! versioned on the bounds of their `base + j` indexes (`opt_bounds.rs`), indexes by a loop variable below a length the loop cannot change, array
//! initializers written in place, and interpolations joined by one
//! `hot_str_build` into single-allocation strings (`runtime::str_block`). Each case sits on an
//! edge of one of those rules; every backend must agree, errors and their locations included,
//! and leak nothing.

mod common;

use common::same_everywhere;

#[test]
fn module_variable_cached_through_loops_with_break_and_return() {
    same_everywhere(
        "var counter = 0
         var flag = false
         fn run(n: i64) -> i64 {
             for i in 0..n {
                 counter = counter + (i & 3)
                 if counter > 1000 { flag = true
                     return counter }
                 var k = 0
                 while true {
                     k += 1
                     counter += 1
                     if k == 3 { break }
                 }
             }
             return counter
         }
         fn main() -> i64 {
             let a = run(10)
             let b = run(1000)
             return a * 100000 + b * 10 + (if_flag())
         }
         fn if_flag() -> i64 {
             if flag { return 1 }
             return 0
         }",
        "4310011",
    );
}

#[test]
fn module_variable_written_by_a_called_function_inside_the_loop() {
    // The call makes the loop keep no cache: `bump`'s writes are seen at once.
    same_everywhere(
        "var counter = 0
         fn bump() { counter = counter * 2 }
         fn main() -> i64 {
             for i in 0..10 {
                 counter += 1
                 bump()
                 counter += i
             }
             return counter
         }",
        "3059",
    );
}

#[test]
fn module_variable_current_when_the_loop_raises() {
    // The error leaves the loop early; the values written before it must be the ones the
    // next call sees (writes store through).
    same_everywhere(
        "var counter = 0
         var arr = [1, 2, 3]
         fn fill(n: i64) -> i64 {
             for i in 0..n { counter += arr[i] }
             return counter
         }
         fn main() -> i64 {
             return fill(3) * 100 + counter + fill(4)
         }",
        "error: index 3 out of range for length 3 at 4:41",
    );
}

#[test]
fn vec_element_store_then_length_read() {
    same_everywhere(
        "fn main() -> i64 {
             var v = vec<i64>()
             for k in 0..8 { v.push(k) }
             var acc = 0
             for i in 0..v.len() {
                 v[i & 7] += i
                 acc += v[(i * 3) & 7] + v.len()
             }
             return acc * 1000 + v[7]
         }",
        "104014",
    );
}

#[test]
fn vec_pushed_inside_the_loop_is_not_hoisted() {
    same_everywhere(
        "fn main() -> i64 {
             var v = vec<i64>()
             v.push(1)
             var i = 0
             while i < v.len() && i < 20 {
                 v.push(v[i] * 2)
                 v[i] += 1
                 i += 1
             }
             return v.len() * 100000 + v[19] + v[20]
         }",
        "3672865",
    );
}

#[test]
fn a_shared_vec_stays_unchanged_when_a_loop_stores_into_its_copy() {
    same_everywhere(
        "fn main() -> i64 {
             var v = vec<i64>()
             for k in 0..4 { v.push(k) }
             let w = v
             for i in 0..4 { v[i] = v[i] * 10 }
             return w[3] * 1000 + v[3] + w.len()
         }",
        "3034",
    );
}

#[test]
fn hoisted_vec_index_out_of_range_is_located_at_its_own_line() {
    same_everywhere(
        "fn main() -> i64 {
             var v = vec<i64>()
             for k in 0..4 { v.push(k) }
             var acc = 0
             for i in 0..10 {
                 acc += v[i]
             }
             return acc
         }",
        "error: index 4 out of range for length 4 at 6:25",
    );
    same_everywhere(
        "fn main() -> i64 {
             var v = vec<f64>()
             v.push(1.5)
             var i = 0
             while i < 3 {
                 v[i] = 2.0
                 i += 1
             }
             return 0
         }",
        "error: index 1 out of range for length 1 at 6:20",
    );
}

#[test]
fn storing_into_an_empty_vec_in_a_loop_raises_as_before() {
    same_everywhere(
        "fn main() -> i64 {
             var v = vec<bool>()
             for i in 0..3 { v[i] = true }
             return 0
         }",
        "error: index 0 out of range for length 0 at 3:32",
    );
    same_everywhere(
        "fn main() -> i64 {
             var v = vec<i64>()
             var n = 0
             for i in 0..3 { n += v.len() }
             return n
         }",
        "0",
    );
}

#[test]
fn array_initializers_in_place() {
    same_everywhere(
        "fn main() -> i64 {
             var acc = 0
             for r in 0..3 {
                 var a = [r + 1; 40]
                 var g = [[r; 3]; 2]
                 a[r] = 100
                 g[1][2] = 7
                 acc = acc * 10 + a[0] + a[39] + g[0][0] + g[1][2]
             }
             return acc
         }",
        "10935",
    );
}

#[test]
fn interpolations_show_every_part_once() {
    same_everywhere(
        "fn name(k: i64) -> str { return \"n${k}\" }
         fn main() -> str {
             let s = \"abc\"
             let x = -1234567
             let f = 2.5
             let b = false
             return \"${x}|${f}|${b}|${s}|${name(7)}|${true}|${0}|\" + s + \"é\"
         }",
        "-1234567|2.5|false|abc|n7|true|0|abcé",
    );
}

#[test]
fn interpolation_part_that_raises_leaks_nothing() {
    same_everywhere(
        "fn name(k: i64) -> str { return \"n${k}\" }
         fn main() -> str {
             let v = [1, 2]
             var i = 0
             var out = \"\"
             while i < 3 {
                 out = \"${name(i)}:${v[i]}\"
                 i += 1
             }
             return out
         }",
        "error: index 2 out of range for length 2 at 7:38",
    );
}

#[test]
fn string_lengths_inline() {
    same_everywhere(
        "fn main() -> i64 {
             let e = \"\"
             let s = \"héllo\"
             var acc = 0
             for i in 0..5 {
                 let t = \"item ${i * 100}\"
                 acc += t.len() + e.len() + s.len()
             }
             return acc
         }",
        "68",
    );
}

#[test]
fn rotated_while_short_circuits_and_continues() {
    // `v[i]` would raise past the end: `&&` must not evaluate it there, at the top test or the
    // bottom one; `continue` goes to the bottom test.
    same_everywhere(
        "fn main() -> i64 {
             let v = [3, 1, 4, 1, 5]
             var i = 0
             var acc = 0
             while i < 5 && v[i] != 9 {
                 i += 1
                 if i == 2 || !(i != 4) { continue }
                 acc = acc * 10 + i
             }
             var j = 0
             while !(j >= 3) || j == 3 { j += 1 }
             return acc * 100 + j
         }",
        "13504",
    );
}

#[test]
fn while_condition_that_raises_is_located() {
    same_everywhere(
        "fn main() -> i64 {
             let v = [1, 1, 1]
             var i = 0
             while v[i] == 1 || i < 0 { i += 1 }
             return i
         }",
        "error: index 3 out of range for length 3 at 4:20",
    );
}

#[test]
fn while_condition_with_a_call_runs_it_each_time() {
    same_everywhere(
        "var calls = 0
         fn more(i: i64) -> bool {
             calls += 1
             return i < 4
         }
         fn main() -> i64 {
             var i = 0
             while more(i) && i >= 0 { i += 1 }
             if calls > 3 && more(100) { return -1 }
             return calls * 10 + i
         }",
        "64",
    );
}

/// A reload between two calls on the reloadable backends: a module variable a call-free loop
/// kept in a register is current in the cell after the loop, carried over by the reload, and
/// the new version's loop (its own globals block) starts from it.
#[test]
fn reload_between_two_calls_keeps_the_cached_module_variable() {
    use std::sync::Arc;

    use hotlab::backend::Value;
    use hotlab::backend::jit::{JitOptions, ScriptModule};
    use hotlab::backend::object::ObjectOptions;
    use hotlab::lang::{SourceFile, compile};

    let v1 = "var counter = 0
        fn bump(n: i64) -> i64 {
            for i in 0..n { counter += i & 3 }
            return counter
        }
        fn main() -> i64 { return bump(10) }";
    let v2 = "var extra = 5
        var counter = 0
        fn bump(n: i64) -> i64 {
            for i in 0..n { counter += (i & 3) * 10 }
            return counter
        }
        fn after_reload() -> i64 { return bump(4) + extra }
        fn main() -> i64 { return bump(2) }";
    let program = || compile(Arc::new(SourceFile::new("v1.hot", v1.to_string()))).unwrap();
    let modules = [
        ScriptModule::new(program(), JitOptions::default()).unwrap(),
        ScriptModule::new_object(program(), ObjectOptions::default()).unwrap(),
    ];
    for mut module in modules {
        assert_eq!(module.run_main().unwrap(), Value::I64(13));
        let outcome = module
            .reload(Arc::new(SourceFile::new("v2.hot", v2.to_string())))
            .unwrap();
        assert_eq!(outcome.globals_kept, ["counter"]);
        assert_eq!(outcome.after_reload, Some(Value::I64(13 + 60 + 5)));
        assert_eq!(module.run_main().unwrap(), Value::I64(13 + 60 + 10));
    }
}

/// A bounds check that cannot fail is not emitted, on `jit` and `jit-opt`: the second check of
/// an index already checked against the same length on the straight path (a swap), and the
/// checks of a loop over `0..n` with `let n = 7` on 7-arrays. The swap keeps one check per
/// index; the copy loop none.
#[test]
fn checks_that_cannot_fail_are_left_out() {
    use hotlab::backend::jit::OptLevel;
    let text = "fn swap(a: [i64; 7], lo: i64, hi: i64) -> i64 {
                    var p = a
                    let t = p[lo]
                    p[lo] = p[hi]
                    p[hi] = t
                    return p[0] * 10 + p[6]
                }
                fn copy(a: [i64; 7], k: i64) -> i64 {
                    let n = 7
                    var p = [0; 7]
                    var s = 0
                    while s < k {
                        for i in 0..n {
                            p[i] = a[i]
                        }
                        s += p[s & 3]
                    }
                    return s
                }";
    let program = common::compile_text("checks.hot", text).unwrap();
    for opt in [OptLevel::None, OptLevel::Speed] {
        // A bounds check: an unsigned compare with the length, then `jae` to its raise.
        let checks = |name: &str| {
            let lines = common::listing(&program, opt, name);
            lines
                .windows(2)
                .filter(|w| w[0].starts_with("cmp ") && w[0].ends_with(",7"))
                .filter(|w| w[1].starts_with("jae "))
                .count()
        };
        assert_eq!(checks("swap"), 2, "{opt:?}: one check per index");
        assert_eq!(checks("copy"), 0, "{opt:?}: the loop's range is known");
    }
}

/// A handle `let` made by `new` is valid where it is first used: no handle check follows a
/// `new` on `jit` or `jit-opt`, where a handle read from a parameter is checked, and a `var`
/// assigned later is checked as before. The values are everyone's.
#[test]
fn a_handle_new_made_is_not_checked() {
    use hotlab::backend::jit::OptLevel;
    let text = "class N {
                    var v: i64 = 0
                    var next: N? = null
                }
                fn id(x: i64) -> i64 {
                    return x
                }
                fn made(k: i64) -> i64 {
                    let n = new N()
                    n.v = id(k)
                    n.next = new N()
                    return n.v
                }
                fn given(n: N, k: i64) -> i64 {
                    n.v = id(k)
                    return n.v
                }
                fn main() -> i64 {
                    var n = new N()
                    n.v = 4
                    n = new N()
                    n.v += 5
                    return made(3) * 100 + given(n, 7) * 10 + n.v
                }";
    same_everywhere(text, "377");
    let program = common::compile_text("new.hot", text).unwrap();
    for opt in [OptLevel::None, OptLevel::Speed] {
        // A handle check compares the cell with the shell's handle word (`[shell+38h]`),
        // which nothing else in these functions reads.
        let checks = |name: &str| {
            common::listing(&program, opt, name)
                .iter()
                .filter(|l| l.contains("+38h]") && !l.contains("[rsp") && !l.contains("[rbp"))
                .count()
        };
        assert_eq!(checks("made"), 0, "{opt:?}");
        assert!(checks("given") >= 1, "{opt:?}");
        assert!(
            checks("main") >= 1,
            "{opt:?}: a var assigned again is checked"
        );
    }
}

#[test]
fn vec_of_handles_hoisted_when_the_loop_frees_an_object_holding_it() {
    // `bs` is hoisted (the loop calls nothing: `sqrt` is an instruction); overwriting `h.keep`
    // frees the last reference to a `Holder` whose field holds `bs` too, which changes only
    // the count of `bs`'s block; a null element raises at its own line on the last round.
    same_everywhere(
        "native fn sqrt(x: f64) -> f64
         class B {
             var x: f64 = 4.0
             var v: f64 = 0.0
         }
         class Holder {
             var items: vec<B?> = vec<B?>()
         }
         class Keep {
             var keep: Holder? = null
         }
         var total = 0.0
         fn walk(bs: vec<B?>, k: Keep, rounds: i64) -> f64 {
             for r in 0..rounds {
                 for i in 0..bs.len() {
                     let b = bs[i]
                     let s = sqrt(b.x)
                     total += s
                     b.v += s
                     k.keep = null
                 }
             }
             return total
         }
         fn main() -> i64 {
             var bs = vec<B?>()
             for i in 0..3 { bs.push(new B()) }
             let h = new Holder()
             h.items = bs
             let k = new Keep()
             k.keep = h
             let a = walk(bs, k, 2)
             bs.push(null)
             let t = walk(bs, k, 1)
             return 0
         }",
        "error: null handle at 17:35",
    );
    same_everywhere(
        "native fn sqrt(x: f64) -> f64
         class B {
             var x: f64 = 9.0
         }
         fn main() -> i64 {
             var bs = vec<B>()
             for i in 0..4 {
                 let b = new B()
                 b.x = (i * i) as f64
                 bs.push(b)
             }
             var acc = 0.0
             for i in 0..bs.len() {
                 for j in i + 1..bs.len() {
                     acc += sqrt(bs[i].x + bs[j].x)
                 }
             }
             return (acc * 1000.0) as i64
         }",
        "15003",
    );
}

#[test]
fn a_vec_of_handles_stored_into_in_the_loop_is_not_hoisted() {
    // The store `bs[i] = ...` replaces an element (a count of two objects): the loop keeps
    // the plain index, and each round reads what the last one stored.
    same_everywhere(
        "class B {
             var x: i64 = 1
         }
         fn main() -> i64 {
             var bs = vec<B>()
             for i in 0..4 { bs.push(new B()) }
             var acc = 0
             for i in 0..12 {
                 let b = bs[i % 4]
                 acc += b.x
                 let c = new B()
                 c.x = b.x + i
                 bs[(i + 1) % 4] = c
             }
             return acc * 100 + bs[0].x
         }",
        "23267",
    );
}

/// A counted loop over `0..x.len()` of a string or vec local that the loop cannot change
/// indexes `x` by its variable without a bounds check. Where the loop can change the length (a
/// pop, an assignment), starts below 0, or calls code that could, the check stays, and an
/// index past the end raises at its own place on every backend.
#[test]
fn an_index_below_a_length_the_loop_cannot_change() {
    let text = r#"class O {
    var v: vec<i64> = vec<i64>()
    fn drop_last(self) -> i64 {
        return self.v.pop()
    }
}
fn hash(s: str) -> i64 {
    var h = 7
    for i in 0..s.len() { h = h * 31 + s.byte(i) }
    return h
}
fn sum(v: vec<i64>) -> i64 {
    var t = 0
    for i in 0..v.len() { t = t * 3 + v[i] }
    return t
}
fn shrinking(v: vec<i64>) -> i64 {
    var w = v
    var t = 0
    for i in 0..w.len() {
        w.pop()
        t = t * 3 + w[i]
    }
    return t
}
fn cut(s: str) -> i64 {
    var t = s
    var h = 0
    for i in 0..t.len() {
        t = t.slice(1, t.len())
        h = h * 31 + t.byte(i)
    }
    return h
}
fn borrowed(v: vec<i64>, o: O) -> i64 {
    var t = 0
    for i in 0..v.len() { t = t * 3 + o.drop_last() * 0 + v[i] }
    return t
}
fn from(v: vec<i64>, k: i64) -> i64 {
    var t = 0
    for i in k..v.len() { t = t * 3 + v[i] }
    return t
}
fn main() -> i64 {
    let o = new O()
    for i in 0..6 { o.v.push(i + 1) }
    var w = vec<i64>()
    w.push(5)
    return hash("hot") + hash("") + sum(o.v) * 1000 + sum(w) + from(o.v, 2) * 10000000 + LAST
}
"#;
    for (last, want) in [
        ("0", "1380855050"),
        ("borrowed(o.v, o)", "1380855593"),
        (
            "shrinking(o.v)",
            "error: index 3 out of range for length 2 at 22:21",
        ),
        (
            "cut(\"abcd\")",
            "error: index 2 out of range for length 1 at 31:22",
        ),
    ] {
        same_everywhere(&text.replace("LAST", last), want);
    }
    same_everywhere(
        &text
            .replace("from(o.v, 2)", "from(o.v, -1)")
            .replace("LAST", "0"),
        "error: index -1 out of range for length 6 at 42:39",
    );
}

/// More edges of the rule above: an unrolled loop with `continue` and `break`, nested loops
/// (the outer variable indexes only its own string), a copy-on-write store into a shared vec
/// inside the loop (no check needed, and the kept copy unchanged); and where the checks stay: the
/// outer variable used on the inner string, a derived index `i + 1`, a module variable's or a
/// field's length ending the range while the loop changes it.
#[test]
fn an_index_below_a_length_edges() {
    let text = r#"var G = vec<i64>()
class B {
    var s: str = "abc"
}
fn unrolled(v: vec<i64>) -> i64 {
    var t = 0
    for i in 0..v.len() {
        if v[i] % 7 == 0 { continue }
        if v[i] > 95 { break }
        t = t * 3 % 1000003 + v[i]
    }
    return t
}
fn nested(s: str, u: str) -> i64 {
    var h = 0
    for i in 0..s.len() {
        for j in 0..u.len() { h = h * 7 + u.byte(j) + s.byte(i) }
    }
    return h
}
fn outer_on_inner(s: str, u: str) -> i64 {
    var h = 0
    for i in 0..s.len() {
        for j in 0..u.len() { h = h + u.byte(i) }
    }
    return h
}
fn derived(s: str) -> i64 {
    var h = 0
    for i in 0..s.len() { h = h + s.byte(i + 1) }
    return h
}
fn shared_store(v: vec<i64>) -> i64 {
    var a = v
    let keep = a
    for i in 0..a.len() { a[i] = a[i] * 2 }
    return a[0] * 1000 + keep[0] + a.len()
}
fn global_end() -> i64 {
    var t = 0
    for i in 0..G.len() {
        G.pop()
        t = t + G[i]
    }
    return t
}
fn field_end(b: B) -> i64 {
    var h = 0
    for i in 0..b.s.len() {
        b.s = b.s.slice(1, b.s.len())
        h = h + b.s.byte(i)
    }
    return h
}
fn main() -> i64 {
    var v = vec<i64>()
    for k in 0..103 { v.push(k) }
    for k in 0..6 { G.push(k) }
    let a = unrolled(v)
    let b = nested("ab", "xyz")
    let c = shared_store(v)
    return a * 1000000 + b % 1000 * 1000 + c % 1000 + LAST
}
"#;
    for (last, want) in [
        ("0", "61037089103"),
        (
            "outer_on_inner(\"abc\", \"xy\")",
            "error: index 2 out of range for length 2 at 24:39",
        ),
        (
            "derived(\"abc\")",
            "error: index 3 out of range for length 3 at 30:35",
        ),
        (
            "global_end()",
            "error: index 3 out of range for length 2 at 43:17",
        ),
        (
            "field_end(new B())",
            "error: index 1 out of range for length 1 at 51:17",
        ),
    ] {
        same_everywhere(&text.replace("LAST", last), want);
    }
}

/// A loop that pushes to a vec local keeps its length, data and capacity in registers: pushes
/// onto the empty vec and across growth, from a nested loop, beside reads of the vec and its
/// length and element stores in the same loop, with a `break`, and an index error raised
/// between pushes; and the same program with the vec read as a value (not hoisted).
#[test]
fn loops_that_push_keep_the_length_in_a_register() {
    // `v` and `f` are hoisted by the outer loop (read only by index and length, pushed to,
    // stored by element): pushes onto the empty vecs and across growth, from the nested loop,
    // a `break`, and an index error between pushes.
    let text = r#"fn run(n: i64, stop: i64, bad: i64) -> vec<i64> {
    var v = vec<i64>()
    var f = vec<bool>()
    let w = v
    for i in 0..n {
        v.push(i * 2 + v.len())
        if i == bad { v[v.len() + 1] = 5 }
        f.push(i % 2 == 0)
        for k in 0..i % 3 { v.push(v.len() + k); f.push(f[k]) }
        if v.len() > stop { break }
        if f[i] { v[i] += 1 }
    }
    v.push(w.len() * 1000)
    v.push(f.len())
    return v
}
fn main() -> str {
    let a = run(20, 1000, -1)
    let b = run(30, 12, -1)
    let c = run(80, 1000, -1)
    let d = run(10, 1000, BAD)
    return "${a.len()} ${a[a.len() - 2]} ${a[7]} ${b} ${c.len()} ${c[c.len() - 1]} ${run(0, 5, -1)} ${d}"
}
"#;
    same_everywhere(
        &text.replace("BAD", "-1"),
        "41 0 16 [1, 3, 3, 8, 5, 6, 12, 15, 8, 19, 10, 12, 24, 0, 13] 161 159 [0, 0] \
         [1, 3, 3, 8, 5, 6, 12, 16, 9, 19, 10, 12, 24, 27, 14, 31, 16, 18, 36, 0, 19]",
    );
    same_everywhere(
        &text.replace("BAD", "0"),
        "error: index 2 out of range for length 1 at 7:25",
    );
    same_everywhere(
        &text.replace("BAD", "5"),
        "error: index 11 out of range for length 10 at 7:25",
    );
    // Read as a value (`return v`), `v` is not hoisted: the plain pushes, the same results.
    let plain = r#"fn run(n: i64, stop: i64) -> vec<i64> {
    var v = vec<i64>()
    var f = vec<f64>()
    v.push(7)
    let w = v
    for i in 0..n {
        v.push(i * 2 + v[i / 2])
        f.push(1.5 * (i as f64))
        for k in 0..i % 3 { v.push(v.len() + k) }
        if v.len() > stop { break }
        if i == 50 { return v }
    }
    v.push(w.len() * 1000 + w[0])
    v.push(f.len())
    return v
}
fn main() -> str {
    let a = run(20, 1000)
    let b = run(30, 12)
    let c = run(80, 1000)
    return "${a.len()} ${a[a.len() - 2]} ${a[7]} ${b} ${c.len()} ${c[c.len() - 1]} ${run(0, 5)} ${IDX}"
}
"#;
    same_everywhere(
        &plain.replace(" ${IDX}", ""),
        "42 1007 13 [7, 7, 9, 3, 11, 5, 7, 13, 17, 9, 19, 11, 13, 1007, 6] 103 103 [7, 1007, 0]",
    );
    same_everywhere(
        &plain.replace(" ${IDX}", " ${a[a.len()]}"),
        "error: index 42 out of range for length 42 at 21:99",
    );
}

/// Counted loops tested once for the bounds of their `base + j` indexes: rows read and
/// stored in range, a base past the end or negative (the error at the first index out of
/// range, as before), a loop that breaks before its bound passes the vec's length, a base the
/// loop assigns, a range starting below zero, and a base whose sum would wrap.
#[test]
fn loops_versioned_on_their_index_bounds_raise_where_they_did() {
    let text = r#"fn sum_from(v: vec<i64>, base: i64, n: i64) -> i64 {
    var s = 0
    for j in 0..n { s += v[base + j] * (j + 1) }
    return s
}
fn run(off: i64, cut: i64) -> i64 {
    var v = vec<i64>()
    for i in 0..20 { v.push(i * i) }
    var w = vec<f64>()
    for i in 0..20 { w.push(0.5 * (i as f64)) }
    var acc = 0
    for r in 0..4 {
        let row = r * 5
        for j in 0..5 { v[row + j] += j }
        for j in 1..4 { acc += v[j + row] - v[row] }
        var t = 0.0
        for j in 0..5 { t += w[row + j] }
        acc += t as i64
    }
    for j in 0..100 {
        if j == cut { break }
        acc += v[j]
    }
    var k = 0
    for j in 0..5 { acc += v[k + j]; k += 1 }
    for j in -2..3 { acc += v[j + 2] }
    return acc + sum_from(v, off, 5)
}
fn main() -> i64 {
    return run(OFF, CUT)
}
"#;
    let run = |off: &str, cut: &str| text.replace("OFF", off).replace("CUT", cut);
    for (off, cut, want) in [
        ("3", "10", "1539"),
        ("15", "10", "5754"),
        (
            "16",
            "10",
            "error: index 20 out of range for length 20 at 3:26",
        ),
        (
            "-1",
            "10",
            "error: index -1 out of range for length 20 at 3:26",
        ),
        (
            "3",
            "25",
            "error: index 20 out of range for length 20 at 22:16",
        ),
        (
            "9223372036854775807",
            "3",
            "error: index 9223372036854775807 out of range for length 20 at 3:26",
        ),
    ] {
        same_everywhere(&run(off, cut), want);
    }
}

/// Masked indexes `x & c` of a hoisted vec tested once (`c < len`) before a counted loop: in
/// range, a mask one past the length (the error at its first use), a negative mask (no test:
/// the checks raise as before), a mask read from a variable (not a literal: checked).
#[test]
fn loops_versioned_on_masked_indexes_raise_where_they_did() {
    let text = r#"fn run(n: i64, size: i64, mask: i64) -> i64 {
    var v = vec<i64>()
    for k in 0..size { v.push(k) }
    var acc = 0
    for i in 0..n {
        v[i & MASK] += i
        acc += v[(i * 7) & 255] + v[MASK & i]
    }
    for i in 0..n { acc += v[i & mask] }
    return acc
}
fn main() -> i64 {
    return run(1000, SIZE, 255)
}
"#;
    let run = |mask: &str, size: &str| text.replace("MASK", mask).replace("SIZE", size);
    for (mask, size, want) in [
        ("255", "256", "3909728"),
        ("15", "256", "13571256"),
        (
            "255",
            "255",
            "error: index 255 out of range for length 255 at 7:16",
        ),
        (
            "-256",
            "256",
            "error: index 256 out of range for length 256 at 6:11",
        ),
    ] {
        same_everywhere(&run(mask, size), want);
    }
}

/// A vec field read and stored through a handle known valid for the loop (`self` in a method)
/// is hoisted like a vec local: a sift-down over `self.v` with its length read in the loop, a
/// block shared with a local before the stores (which keeps its old elements), one object
/// passed as two handles, one storing and one reading the same field (not hoisted: both see
/// every store), and index errors inside such loops at their places.
#[test]
fn vec_fields_of_known_handles_are_hoisted_like_locals() {
    let text = r#"class Heap {
    var v = vec<i64>()
    var n = 0
    fn sift(self, start: i64, end: i64) -> i64 {
        var root = start
        var steps = 0
        while true {
            var child = 2 * root + 1
            if child >= end { break }
            if child + 1 < end && self.v[child] < self.v[child + 1] { child += 1 }
            if self.v[root] < self.v[child] {
                let t = self.v[root]; self.v[root] = self.v[child]; self.v[child] = t
                root = child
                steps += self.v.len() - self.n
            } else { break }
        }
        return steps
    }
}
fn mirror(a: Heap, b: Heap, k: i64) -> i64 {
    var acc = 0
    for i in 0..k {
        a.v[i] = a.v[i] + 100
        acc += b.v[i]
    }
    return acc
}
fn main() -> i64 {
    let h = new Heap()
    for i in 0..50 { h.v.push((i * 37) % 50) }
    h.n = 10
    let keep = h.v
    var acc = 0
    var start = 25
    while start > 0 { start -= 1; acc += h.sift(start, 50) }
    acc += mirror(h, h, 5) * 1000
    acc += keep[0] + keep[49] * 10 + h.v[0] * 100000
    return acc + LAST
}
"#;
    same_everywhere(&text.replace("LAST", "0"), "15632450");
    same_everywhere(
        &text.replace("LAST", "h.sift(24, 60)"),
        "error: index 50 out of range for length 50 at 10:51",
    );
    same_everywhere(
        &text.replace("LAST", "mirror(h, h, 51)"),
        "error: index 50 out of range for length 50 at 23:18",
    );
}

/// A hoisted vec field's `base + j` indexes version the loop on their bounds like a local's:
/// rows read and stored in range, a row past the end and a negative one raising at the first
/// index out of range.
#[test]
fn vec_field_indexes_version_loops_on_their_bounds() {
    let text = r#"class Grid {
    var cells = vec<i64>()
    var w = 8
    fn row_sum(self, r: i64, n: i64) -> i64 {
        var s = 0
        let base = r * self.w
        for j in 0..n { s += self.cells[base + j] * (j + 1); self.cells[j + base] += 1 }
        return s
    }
}
fn main() -> i64 {
    let g = new Grid()
    for i in 0..64 { g.cells.push(i * 3) }
    var acc = 0
    for r in 0..8 { acc += g.row_sum(r, 8) }
    return acc * 10 + g.cells[63] + ROW
}
"#;
    same_everywhere(&text.replace("ROW", "0"), "282430");
    same_everywhere(
        &text.replace("ROW", "g.row_sum(7, 9)"),
        "error: index 64 out of range for length 64 at 7:30",
    );
    same_everywhere(
        &text.replace("ROW", "g.row_sum(-1, 3)"),
        "error: index -8 out of range for length 64 at 7:30",
    );
}

/// Bounds versioning's other edges: an outer loop's variable and inline products in a base
/// (`a[i * m + off + j]`), bool and masked sites, one `j` indexing several vecs whose lengths
/// differ (each test on its own vec), a loop inside a loop versioned on a handle (and a null
/// handle), a base the loop assigns and a nested loop's variable in an index.
#[test]
fn bounds_versioning_covers_nested_shared_and_handle_versioned_loops() {
    let c1 = r#"fn run(n: i64, m: i64, off: i64, mask: i64) -> i64 {
    var a = vec<i64>()
    for i in 0..n { a.push(i * 3 + 1) }
    var f = vec<bool>()
    for i in 0..n { f.push(i % 3 == 1) }
    var acc = 0
    for i in 0..m {
        for j in 0..m {
            acc += a[i * m + off + j] * (j + 1)
            if f[j + i * m] { acc += 7 }
            acc += a[i & MASK]
            acc += a[(j * 5) & 7]
        }
        f[i] = !f[i]
    }
    return acc
}
fn main() -> i64 {
    return run(N, M, OFF, 0)
}
"#;
    let c1 = |args: &str, mask: &str| c1.replace("N, M, OFF", args).replace("MASK", mask);
    same_everywhere(&c1("40, 6, 2", "31"), "8580");
    same_everywhere(&c1("40, 6, 2", "63"), "8580");
    same_everywhere(
        &c1("40, 6, 5", "31"),
        "error: index 40 out of range for length 40 at 9:20",
    );
    let d1 = r#"fn run(la: i64, lb: i64, lc: i64, n: i64, base: i64) -> i64 {
    var a = vec<i64>()
    var b = vec<i64>()
    var c = vec<bool>()
    for i in 0..la { a.push(i) }
    for i in 0..lb { b.push(i * 2) }
    for i in 0..lc { c.push(i % 2 == 0) }
    var s = 0
    for j in 0..n {
        a[j] = b[j] + b[base + j]
        if c[j] { a[j] += 1 }
        c[j + base] = a[j] > 3
        s += a[j]
    }
    var t = 0
    for i in 0..c.len() { if c[i] { t += 1 } }
    return s * 1000 + t
}
fn main() -> i64 {
    return run(ARGS)
}
"#;
    for (args, want) in [
        ("10, 10, 10, 5, 2", "64007"),
        (
            "10, 10, 10, 9, 2",
            "error: index 10 out of range for length 10 at 10:23",
        ),
        (
            "4, 10, 10, 5, 2",
            "error: index 4 out of range for length 4 at 10:11",
        ),
        (
            "10, 6, 10, 5, 2",
            "error: index 6 out of range for length 6 at 10:23",
        ),
        (
            "10, 10, 6, 5, 2",
            "error: index 6 out of range for length 6 at 12:11",
        ),
    ] {
        same_everywhere(&d1.replace("ARGS", args), want);
    }
    let v1 = r#"class P { var k = 2 }
fn run(p: P?, n: i64, base: i64) -> i64 {
    var v = vec<i64>()
    for i in 0..10 { v.push(i) }
    var s = 0
    for j in 0..n {
        s += v[base + j] * p.k
        v[j] += 1
    }
    return s
}
fn main() -> i64 {
    let p = new P()
    return run(P_ARG, N, B)
}
"#;
    for (args, want) in [
        ("p, 5, 3", "50"),
        (
            "p, 5, 6",
            "error: index 10 out of range for length 10 at 7:14",
        ),
        ("null, 5, 3", "error: null handle at 7:28"),
        (
            "p, 11, 0",
            "error: index 10 out of range for length 10 at 7:14",
        ),
    ] {
        same_everywhere(&v1.replace("P_ARG, N, B", args), want);
    }
    let v2 = r#"fn run(n: i64) -> i64 {
    var v = vec<i64>()
    for i in 0..20 { v.push(i) }
    var s = 0
    var k = 0
    for j in 0..n {
        var q = 0
        while q < 2 { k += 1; q += 1 }
        s += v[k + 0]
        for t in 0..3 { s += v[j + t] + v[t * 2 + j] }
    }
    return s
}
fn main() -> i64 {
    return run(N)
}
"#;
    same_everywhere(&v2.replace("run(N)", "run(3)"), "57");
    same_everywhere(
        &v2.replace("run(N)", "run(18)"),
        "error: index 20 out of range for length 20 at 9:14",
    );
}

/// A loop whose vec indexes were tested before it is unrolled like an array loop (no branch is
/// left in its copies): a reduction over a vec, a store into the vec ahead of the element the
/// next copies read, and the plain copy's errors at their places.
#[test]
fn loops_without_index_checks_unroll_and_keep_their_order() {
    let text = r#"fn total(v: vec<i64>, n: i64) -> i64 {
    var s = 0
    for i in 0..n { s += v[i] ^ (i & 3) }
    return s
}
fn shift(n: i64, base: i64) -> i64 {
    var w = vec<i64>()
    for i in 0..20 { w.push(i) }
    for j in 0..n { w[j + base] = w[j] + 1 }
    var s = 0
    for j in 0..20 { s = s * 3 + w[j] }
    return s
}
fn main() -> i64 {
    var v = vec<i64>()
    for i in 0..1000 { v.push(i * 7) }
    var acc = 0
    for r in 0..30 { acc = (acc + total(v, 1000 - (r & 1))) & 0xffffffff }
    return acc + shift(13, 7) + LAST
}
"#;
    for (last, want) in [
        ("0", "971686030"),
        (
            "total(v, 1001)",
            "error: index 1000 out of range for length 1000 at 3:26",
        ),
        (
            "shift(14, 7)",
            "error: index 20 out of range for length 20 at 9:23",
        ),
        (
            "shift(14, -1)",
            "error: index -1 out of range for length 20 at 9:23",
        ),
    ] {
        same_everywhere(&text.replace("LAST", last), want);
    }
}
