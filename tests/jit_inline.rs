//! Inlining on `jit-opt` (`backend/jit/opt_inline.rs`): small functions and methods inlined at
//! their direct call sites give the same values, errors and error locations (an error raised in
//! an inlined function is located at its own line) on every backend, and an error unwinding out
//! of an inlined body releases what both the callee and the caller held.

mod common;

use common::same_everywhere;

#[test]
fn inlined_functions_and_methods_compute_the_same() {
    same_everywhere(
        "fn mix(a: i64, b: i64) -> i64 { return a * 3 + b }
         class K {
             var k: i64 = 5
             fn get(self, x: i64) -> i64 { return self.k * x }
             static fn twice(x: i64) -> i64 { return x + x }
         }
         fn main() -> i64 {
             let o = new K()
             var acc = 0
             for i in 0..100 { acc = mix(acc, o.get(i)) & 0xffffff; acc += K.twice(i) }
             return acc
         }",
        "10625358",
    );
}

#[test]
fn an_error_in_an_inlined_function_is_located_at_its_own_line() {
    same_everywhere(
        "fn div(a: i64, b: i64) -> i64 {
             return a / b
         }
         fn main() -> i64 {
             var acc = 0
             for i in 0..10 { acc += div(100, 5 - i) }
             return acc
         }",
        "error: division by zero at 2:23",
    );
    same_everywhere(
        "class C {
             var a: [i64; 3] = [1, 2, 3]
             fn at(self, i: i64) -> i64 {
                 return self.a[i]
             }
         }
         fn main() -> i64 {
             let c = new C()
             var s = 0
             for i in 0..5 { s += c.at(i) }
             return s
         }",
        "error: index 3 out of range for length 3 at 4:25",
    );
    same_everywhere(
        "class N { var v: i64 = 1; var next: N? = null
             fn after(self) -> i64 { return self.next.v }
         }
         fn main() -> i64 { let n = new N(); return n.after() }",
        "error: null handle at 2:45",
    );
}

#[test]
fn an_error_in_an_inlined_body_releases_the_cells_of_both_frames() {
    // The caller holds an owned string argument and a string local; the callee a string of
    // its own: all are released when the division raises in the inlined body.
    same_everywhere(
        r#"fn f(s: str, d: i64) -> i64 {
               let t = s + "!"
               return t.len() / d
           }
           fn main() -> i64 {
               let keep = "kept" + "1"
               var acc = keep.len()
               for i in 0..4 { acc += f("x" + "y", 2 - i) }
               return acc
           }"#,
        "error: division by zero at 3:31",
    );
}

#[test]
fn inlined_bodies_keep_their_data_symbols() {
    // String literals and closure descriptors are data objects of the module: an inlined body
    // names them in its caller.
    same_everywhere(
        r#"fn greet(n: i64) -> str { return "hello ${n}" }
           fn adder(k: i64) -> fn(i64) -> i64 { return |x: i64| -> i64 { return x + k } }
           fn main() -> i64 {
               let f = adder(5)
               let s = greet(7) + " and " + greet(8)
               return f(s.len())
           }"#,
        "24",
    );
}

#[test]
fn runaway_recursion_is_still_a_stack_error_of_the_recursing_function() {
    // `step` runs only after the recursive call returns, so the recursion's frames are
    // `down`'s alone and its own prologue check runs out, with or without inlining. (Which
    // check runs out first when several functions recurse together depends on where their
    // frames fall against the limit; see `call_graph` in `opt_inline.rs`.)
    same_everywhere(
        "fn step(n: i64) -> i64 { return n + 1 }
         fn down(n: i64) -> i64 {
             return down(n + 1) + step(n)
         }
         fn main() -> i64 { return step(down(0)) }",
        "error: call stack exhausted in `down` (runaway recursion?) at 2:13",
    );
}

#[test]
fn a_chain_of_small_calls_inlines_flat_and_computes_the_same() {
    // `total`'s loop calls `mix` through a handle field, and `mix` calls an accessor: inlined
    // callees first, so `run` holds all three bodies (see the listing test in asm_cli.rs).
    same_everywhere(
        r#"class W {
               var k: i64 = 3
               fn key(self) -> i64 { return self.k }
               fn mix(self, a: i64, b: i64) -> i64 { return (a * self.key() + b) & 0xffff }
               fn tag(self) -> str { return "w${self.k}" }
           }
           class B {
               var w: W? = null
               fn total(self, n: i64) -> i64 {
                   var acc = 0
                   for i in 0..n { acc = self.w.mix(acc, i) }
                   return acc + self.w.tag().len()
               }
           }
           fn main() -> i64 {
               let b = new B()
               b.w = new W()
               return b.total(1000)
           }"#,
        "5334",
    );
}

#[test]
fn an_error_two_inlined_calls_deep_is_located_at_its_own_line_and_releases_every_frame() {
    // `at` raises inside `get`, itself inlined into `sum`'s loop, inlined into `main`: the
    // error names `at`'s line, and the strings each of the three functions holds are released
    // (the leak check of `same_everywhere`).
    same_everywhere(
        r#"class C {
               var a: [i64; 3] = [1, 2, 3]
               fn at(self, i: i64) -> i64 {
                   return self.a[i]
               }
               fn get(self, i: i64, s: str) -> i64 {
                   let t = s + "?"
                   return self.at(i) + t.len()
               }
           }
           fn sum(c: C, n: i64) -> i64 {
               let keep = "k" + "eep"
               var s = keep.len()
               for i in 0..n { s += c.get(i, "x" + "y") }
               return s
           }
           fn main() -> i64 { return sum(new C(), 5) }"#,
        "error: index 3 out of range for length 3 at 4:27",
    );
    same_everywhere(
        "class N { var v: i64 = 1; var next: N? = null
             fn value(self) -> i64 { return self.v }
             fn after(self) -> i64 { return self.next.value() }
         }
         fn main() -> i64 { let n = new N(); n.next = new N(); return n.after() + n.next.after() }",
        "error: null handle at 3:45",
    );
}

#[test]
fn a_function_that_calls_itself_takes_its_own_body_and_computes_the_same() {
    // `depth` and `fib` (two recursive call sites) are unrolled by one level on jit-opt
    // (`inline_self`); `count` walks a tree of handles, whose counts the copy changes as the
    // function does (the leak check of `same_everywhere`); `label` builds strings.
    same_everywhere(
        r#"fn depth(k: i64) -> i64 {
               if k == 0 { return 0 }
               return depth(k - 1) * 3 + k
           }
           fn fib(n: i64) -> i64 {
               if n < 2 { return n }
               return fib(n - 1) + fib(n - 2)
           }
           class T {
               var l: T? = null
               var r: T? = null
               var v: i64 = 1
           }
           fn make(d: i64) -> T {
               let t = new T()
               t.v = d
               if d > 0 { t.l = make(d - 1); t.r = make(d - 1) }
               return t
           }
           fn count(t: T?) -> i64 {
               if t == null { return 0 }
               return t.v + count(t.l) + count(t.r)
           }
           fn label(n: i64) -> str {
               if n == 0 { return "." }
               return "${n}" + label(n - 1)
           }
           fn main() -> i64 {
               var s = 0
               for k in 0..12 { s += depth(k) + fib(k) }
               return s + count(make(6)) + label(9).len()
           }"#,
        "199610",
    );
}

#[test]
fn an_error_in_a_function_unrolled_into_itself_is_located_at_its_line_and_releases_every_level() {
    // The division raises at an odd depth, inside the copy of `down` in its own frame (the
    // listing test in asm_cli.rs shows the copy), and at an even one, in the function itself:
    // the same located error, and the string each level holds across its call released.
    for limit in ["5", "6"] {
        same_everywhere(
            &format!(
                r#"fn down(n: i64, s: str) -> i64 {{
                       if n == {limit} {{ return s.len() / (n - {limit}) }}
                       return down(n + 1, s + ".") + 1
                   }}
                   fn main() -> i64 {{ return down(0, "x" + "y") }}"#
            ),
            "error: division by zero at 2:51",
        );
    }
    // Runaway: the recursion still stops in the function's own check, one frame in two levels.
    same_everywhere(
        "fn deep(n: i64) -> i64 {
             if n < 0 { return 0 }
             return deep(n + 1) * 2 + 1
         }
         fn main() -> i64 { return deep(0) }",
        "error: call stack exhausted in `deep` (runaway recursion?) at 1:4",
    );
}

#[test]
fn a_function_with_one_call_site_inlined_whole_computes_and_fails_the_same() {
    // `step` is over the ordinary size but has no loop and one call site: jit-opt takes it
    // into `run`'s loop (tests/asm_cli.rs reads the listing). Its division raises at its own
    // line on the last round, where the loop's handles and the fresh nodes must all be
    // released; one round fewer computes the same value everywhere.
    let text = include_str!("fixtures/asm/one_site.hot");
    same_everywhere(text, "error: division by zero at 25:34");
    same_everywhere(
        &text.replace("return run(1001)", "return run(1000)"),
        "4020309629",
    );
}

#[test]
fn joined_and_repeated_conditions_go_straight_to_their_targets_and_compute_the_same() {
    // `opt_cfg.rs`: `||` / `&&` joined then tested, inlined predicates with several returns,
    // a null test repeated under itself; the second operand runs only when it must (its call
    // counts), and one raises at its own place on the last round.
    let text = "class T {
             var state: i64 = 0
             var next: T? = null
             fn held(self) -> bool {
                 return (self.state & 4) != 0 || self.state == 2
             }
             fn pick(self, k: i64) -> bool {
                 if k > 6 { return true }
                 if k < 2 { return false }
                 return self.state == k
             }
         }
         var calls = 0
         fn probe(x: i64) -> bool {
             calls += 1
             return 100 / (x - 9) > 0
         }
         fn main() -> i64 {
             let t = new T()
             var acc = 0
             for i in 0..40 {
                 t.state = i & 7
                 if t.held() { acc += 1 }
                 if t.pick(i % 9) && !t.held() { acc += 10 }
                 if t.held() || probe(i % 8) { acc += 100 }
                 var w = 0
                 while w < 3 && (t.state == 1 || w == 0) { w += 1 }
                 acc += w * 1000
                 let u: T = t
                 if u.held() { acc += 10000 }
             }
             var total = acc * 1000 + calls
             for i in 0..12 {
                 if i == 20 || probe(i) { total += 1 }
             }
             return total
         }";
    same_everywhere(text, "error: division by zero at 16:25");
    // The same rounds without the one that raises.
    same_everywhere(
        &text.replace("for i in 0..12 {", "for i in 0..9 {"),
        "302585015",
    );
    same_everywhere(
        "class T {
             var state: i64 = 0
             fn held(self) -> bool {
                 return (self.state & 4) != 0 || self.state == 2
             }
         }
         fn main() -> i64 {
             let t = new T()
             var acc = 0
             for i in 0..40 {
                 t.state = i & 7
                 if t.held() { acc += 1 }
                 if !t.held() && i > 3 { acc += 100 }
                 if t.held() == (i % 3 == 0) { acc += 10000 }
             }
             return acc
         }",
        "171225",
    );
}
