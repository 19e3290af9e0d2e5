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
