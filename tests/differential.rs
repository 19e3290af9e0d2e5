//! Random well-typed programs (from `common/gen.rs`): each passes the checker, every backend
//! gives a deterministic outcome, and `jit` == `interp` == `object` (the last for programs
//! without classes), values and errors (kind and location) alike. Programs use vecs and strings
//! too, and the backends' vec and string blocks are all freed after each run, also after a run
//! that stops with an error.

mod common;

use std::collections::BTreeMap;

use hotlab::backend::Checks;
use proptest::prelude::*;

/// Each backend's outcome for a generated program (panics with the program if it does not
/// compile).
fn outcomes(text: &str) -> Vec<(&'static str, String)> {
    let program = match common::compile_text("gen.hot", text) {
        Ok(p) => p,
        Err(d) => panic!("generated program does not compile:\n{text}\n{d}"),
    };
    common::backends_for(&program)
        .into_iter()
        .map(|(name, run)| {
            let before = hotlab::runtime::values::live_blocks();
            let out = common::outcome(&program, &run(&program, Checks::On));
            let leaked = hotlab::runtime::values::live_blocks() - before;
            // Error runs too: an error releases what the unwound frames held (issue #4).
            assert_eq!(leaked, 0, "{name} leaked {leaked} blocks on:\n{text}");
            (name, out)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn generated_programs_run_deterministically(text in common::generator::arb_program()) {
        let first = outcomes(&text);
        let second = outcomes(&text);
        prop_assert_eq!(&first, &second, "program:\n{}", text);
        let (reference, expected) = &first[0];
        for (name, got) in &first[1..] {
            prop_assert_eq!(got, expected, "{} differs from {} on:\n{}", name, reference, text);
        }
    }
}

/// The generator reaches every kind of outcome, so the property above means something.
#[test]
fn generator_covers_values_and_errors() {
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut made, mut called) = (0, 0);
    // The v2 additions (and bool arrays) the generator writes, and in how many programs each
    // appears.
    let mut additions: BTreeMap<&str, usize> = BTreeMap::new();
    for seed in 0..400 {
        let text = common::generator::program(seed);
        for construct in [
            ">>>",
            "0xFFFF_FFFF_FFFF_FFFF",
            "abs(",
            "min(",
            "round(",
            "..=",
            " step ",
            // Bool arrays: a module variable, a parameter, a nested local, a field's element.
            "var gb",
            ": [bool; ",
            " = [[",
            ".flags[",
            // A function that calls itself (unrolled by one level on the compiled backends).
            "if d <= 0 { return",
        ] {
            *additions.entry(construct).or_default() += usize::from(text.contains(construct));
        }
        *additions.entry("a call of rK").or_default() += usize::from(calls_a_recursion(&text));
        // Closures: made (`let c.. = |..| -> i64 {`) and called (`c..(`).
        made += usize::from(text.contains("| -> i64 { return"));
        called += usize::from(calls_a_closure(&text));
        let (_, out) = &outcomes(&text)[0];
        let kind = if out.contains("division by zero") {
            "division by zero"
        } else if out.contains("out of range") {
            "index out of range"
        } else if out.contains("pop from an empty vec") {
            "pop from an empty vec"
        } else if out.starts_with("error") {
            "other error"
        } else {
            "value"
        };
        *kinds.entry(kind).or_default() += 1;
    }
    println!("{kinds:?} {additions:?}");
    for kind in [
        "value",
        "division by zero",
        "index out of range",
        "pop from an empty vec",
    ] {
        assert!(kinds.get(kind).copied().unwrap_or(0) >= 10, "{kinds:?}");
    }
    assert_eq!(kinds.get("other error"), None, "{kinds:?}");
    assert!(additions.values().all(|&n| n >= 10), "{additions:?}");
    assert!(
        made >= 40 && called >= 20,
        "closures made in {made}, called in {called}"
    );
}

/// Whether `text` calls its function that calls itself from outside it (`rK((..) & 7`).
fn calls_a_recursion(text: &str) -> bool {
    let Some(at) = text.find("\nfn r") else {
        return false;
    };
    let name: String = text[at + 4..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    text.contains(&format!("{name}(("))
}

/// Whether `text` calls a closure variable (`c12(`; closures are named `c` and a number).
fn calls_a_closure(text: &str) -> bool {
    let bytes = text.as_bytes();
    (1..bytes.len()).any(|i| {
        let starts = bytes[i] == b'c' && !bytes[i - 1].is_ascii_alphanumeric();
        let digits = bytes[i + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        starts && digits > 0 && bytes.get(i + 1 + digits) == Some(&b'(')
    })
}

/// Print one generated program (`cargo test --test differential show -- --nocapture`).
#[test]
fn show_a_generated_program() {
    let text = common::generator::program(7);
    assert!(text.contains("fn main() -> i64"));
    println!("{text}");
}

// The edges of jit and jit-opt's lowering rules (`backend/jit/lower_region.rs`,
// `opt_globals.rs`, `opt_inline.rs`): each program's value or error (kind and place) must be the
// same on every backend, and no block may be left behind.

const NODE: &str =
    "class N {\n    var v: i64 = 0\n    var next: N? = null\n    var s: str = \"\"\n}\n";

/// A check made in one statement is reused by the later ones of its block only: a handle
/// checked inside an `if` is checked again after it, so a null one fails there.
#[test]
fn a_check_inside_a_branch_is_not_reused_after_it() {
    let text = format!(
        "{NODE}fn f(x: N?, c: bool) -> i64 {{\n    if c {{\n        x.v = 1\n    }}\n    return x.v\n}}\nfn main() -> i64 {{\n    let a = new N()\n    a.v = 4\n    return f(a, false) + f(null, false)\n}}\n"
    );
    common::same_everywhere(&text, "error: null handle at 10:12");
}

/// After `a != null && a.v > 0` (the right side may not run), `a` is checked again.
#[test]
fn a_check_on_the_right_of_and_is_not_reused() {
    let text = format!(
        "{NODE}fn f(a: N?) -> i64 {{\n    var s = 0\n    if a != null && a.v > 0 {{\n        s = 1\n    }}\n    return s + a.v\n}}\nfn main() -> i64 {{\n    return f(null)\n}}\n"
    );
    common::same_everywhere(&text, "error: null handle at 11:16");
}

/// A `var` assigned after its check is checked again at its next use.
#[test]
fn an_assigned_var_is_checked_again() {
    let text = format!(
        "{NODE}fn main() -> i64 {{\n    var p: N? = new N()\n    p.v = 3\n    let t = p.v\n    p = p.next\n    return t + p.v\n}}\n"
    );
    common::same_everywhere(&text, "error: null handle at 11:16");
}

/// A handle freed inside a loop (its last reference dropped by a field store) while a local
/// read from a vec and a `let` still hold others: values, and the strings all freed.
#[test]
fn a_handle_freed_inside_a_loop() {
    let text = format!(
        "{NODE}fn main() -> i64 {{\n    let a = new N()\n    var nodes = vec<N>()\n    var s = 0\n    for i in 0..5 {{\n        let m = new N()\n        m.v = i\n        m.s = \"n${{i}}\"\n        a.next = m\n        nodes.push(m)\n    }}\n    for i in 0..5 {{\n        let b = nodes[i]\n        let c: N = a.next\n        a.next = null\n        s += b.v * 10 + c.v + b.s.len()\n        a.next = new N()\n    }}\n    return s\n}}\n"
    );
    common::same_everywhere(&text, "114");
}

/// `let x = v[i]` borrows its element: the value read stays right when later statements read
/// `v` again, return `x`, store it and compare it; a bad index still fails at its own place.
#[test]
fn a_borrowed_element_of_a_vec() {
    let text = "fn pick(v: vec<str>, i: i64) -> str {\n    let x = v[i]\n    let y = v[i + 1]\n    if x == y {\n        return \"same\"\n    }\n    return x + y\n}\nfn main() -> i64 {\n    var v = vec<str>()\n    v.push(\"ab\")\n    v.push(\"cde\")\n    v.push(\"cde\")\n    let s = pick(v, 0) + pick(v, 1)\n    return s.len() * 100 + pick(v, 2).len()\n}\n";
    common::same_everywhere(text, "error: index 3 out of range for length 3 at 3:13");
    let text = text.replace("pick(v, 2).len()", "v.len()");
    common::same_everywhere(&text, "903");
}

/// A vec argument next to a `pop` of the same vec: the first argument is the vec as it was
/// before the pop (evaluated first), on every backend.
#[test]
fn a_vec_argument_beside_a_pop_of_it() {
    let text = "fn f(a: vec<i64>, x: i64) -> i64 {\n    return a.len() * 100 + x\n}\nfn main() -> i64 {\n    var v = vec<i64>()\n    v.push(1)\n    v.push(2)\n    return f(v, v.pop()) * 10 + v.len()\n}\n";
    common::same_everywhere(text, "2021");
}

/// Vec and closure counts are changed inline: a vec shared by a `let`, a field, a vec of vecs
/// and a closure's capture, each copy pushed to (a shared block is copied, the others keep
/// theirs), a loop over a vec its body replaces, and every block freed by its last release.
#[test]
fn vecs_and_closures_shared_and_released_inline() {
    let text = "class Box {\n    var items: vec<i64> = vec<i64>()\n}\nfn sum(v: vec<i64>) -> i64 {\n    var s = 0\n    for x in v {\n        s += x\n    }\n    return s\n}\nfn main() -> i64 {\n    var v = vec<i64>()\n    v.push(1)\n    v.push(2)\n    let kept = v\n    let b = new Box()\n    b.items = v\n    var all = vec<vec<i64>>()\n    all.push(v)\n    all.push(v)\n    let f = |k: i64| -> i64 { return sum(v) * k }\n    let g = f\n    v.push(4)\n    b.items.push(8)\n    var w = v\n    for x in w {\n        w = vec<i64>()\n        w.push(x)\n    }\n    return sum(v) * 100000 + sum(kept) * 10000 + sum(b.items) * 1000 + sum(all[1]) * 100 + g(2) * 10 + sum(w)\n}\n";
    common::same_everywhere(text, "741364");
}

/// The same handle and string locals passed twice, and to a method, borrowed: values, and no
/// string left behind.
#[test]
fn locals_passed_as_arguments() {
    let text = format!(
        "{NODE}fn two(a: N, b: N, s: str, t: str) -> i64 {{\n    a.v += 1\n    return a.v + b.v + s.len() + t.len()\n}}\nfn main() -> i64 {{\n    let n = new N()\n    let s = \"xyz\" + \"w\"\n    var r = 0\n    for i in 0..3 {{\n        r += two(n, n, s, s)\n    }}\n    return r\n}}\n"
    );
    common::same_everywhere(&text, "36");
}

/// Handle compares read the cells in place: a walk to a list's end, `a.next == b.next` with
/// nulls, and a compare through a null handle failing at the field.
#[test]
fn handle_compares_in_place() {
    let text = format!(
        "{NODE}fn main() -> i64 {{\n    let a = new N()\n    a.next = new N()\n    a.next.next = new N()\n    var p: N = a\n    var k = 0\n    while p.next != null {{\n        p = p.next\n        k += 1\n    }}\n    let b = new N()\n    if a.next.next.next == b.next {{\n        k += 10\n    }}\n    let z: N? = p.next\n    if z.next == null {{\n        k += 100\n    }}\n    return k\n}}\n"
    );
    common::same_everywhere(&text, "error: null handle at 21:8");
}

/// Module variables a call-free loop writes are stored at its exits (its end, a `break`, a
/// `return` inside it) and seen by the code after it; a loop that may raise stores each write,
/// so an error leaves the value written before it for the next call to see.
#[test]
fn module_variables_written_in_loops() {
    let text = "var counter: i64 = 0\nvar other: i64 = 5\nfn early() -> i64 {\n    for i in 0..10 {\n        counter += i\n        if i == 4 {\n            return counter\n        }\n    }\n    return -1\n}\nfn broken() -> i64 {\n    while true {\n        other += 1\n        if other > 8 {\n            break\n        }\n    }\n    return other\n}\nfn seen() -> i64 {\n    return counter * 1000 + other\n}\nfn main() -> i64 {\n    let a = early()\n    let b = broken()\n    for i in 0..3 {\n        counter = counter + (i & 3)\n    }\n    return a * 1000000 + b * 100000 + seen()\n}\n";
    common::same_everywhere(text, "10913009");
    let raising = "var counter: i64 = 0\nfn step(d: i64) -> i64 {\n    for i in 0..10 {\n        counter += 1\n        counter += 10 / (d - i)\n    }\n    return counter\n}\nfn main() -> i64 {\n    counter = step(3)\n    return counter\n}\n";
    common::same_everywhere(raising, "error: division by zero at 5:23");
}

/// An error raised in a method small enough to be inlined (on jit-opt) is reported at its own
/// line, not its caller's.
#[test]
fn an_error_in_an_inlined_method_is_located_at_its_own_line() {
    let text = format!(
        "{NODE}fn get(n: N?) -> i64 {{\n    return n.v\n}}\nfn main() -> i64 {{\n    let a = new N()\n    var s = 0\n    for i in 0..3 {{\n        s += get(a)\n    }}\n    return s + get(a.next)\n}}\n"
    );
    common::same_everywhere(&text, "error: null handle at 7:12");
}

/// Strings built by `+=` (appended in place when the variable's block is its own): a copy
/// kept by a `let`, a field, a vec and a closure keeps its old text; `u += u`; one-byte
/// slices (static strings) and a two-byte one joined; every block freed.
#[test]
fn strings_appended_in_place_keep_every_other_copy() {
    let text = r#"class Box {
    var s: str = ""
}
fn grow(n: i64) -> str {
    var s = ""
    for i in 0..n {
        s += "x"
    }
    return s
}
fn main() -> i64 {
    var s = grow(100)
    let t = s
    s += "y"
    var u = "ab"
    u += u
    u += u
    let b = new Box()
    b.s = u
    u += "!"
    var v = vec<str>()
    v.push(u)
    u += "?"
    let f = |k: i64| -> i64 { return s.len() * k }
    s += "zz"
    var w = ""
    for i in 0..5 {
        w += "héllo".slice(3 * (i % 2), 3 * (i % 2) + 1)
        w += "héllo".slice(1, 3)
    }
    return t.len() * 100000000 + s.len() * 100000 + u.len() * 1000 + b.s.len() * 100 + v[0].len() * 10 + f(1) - 101 + w.len() + (u == "abababab!?") as i64
}
"#;
    common::same_everywhere(text, "10010310906");
}

/// `b.s.slice(..)` borrows the field only when its offsets cannot store into it: a call in
/// the offsets that replaces `b.s` leaves the slice reading the string it started with;
/// `s.byte(i)` read inline, out of range at its own place (also on the empty string); a
/// one-byte slice inside a character fails where it always did.
#[test]
fn string_slices_and_bytes_of_fields_and_locals() {
    common::same_everywhere(
        r#"class Box {
    var s: str = ""
}
fn swap(b: Box) -> i64 {
    b.s = "zzzzzz" + "y"
    return 1
}
fn main() -> i64 {
    let b = new Box()
    b.s = "abc" + "def"
    let x = b.s.slice(0, swap(b))
    let y = b.s.slice(2, 3)
    var acc = 0
    for i in 0..b.s.len() {
        acc = acc * 7 + b.s.byte(i) + b.s.slice(i, i + 1).len()
    }
    return x.byte(0) * 1000000 + y.byte(0) * 1000 + acc % 1000
}
"#,
        "97122610",
    );
    common::same_everywhere(
        r#"fn main() -> i64 {
    var w = ""
    for i in 0..3 {
        w += "héllo".slice(i, i + 1)
    }
    return w.len()
}
"#,
        "error: byte 2 is not on a character boundary at 4:14",
    );
    common::same_everywhere(
        r#"fn main() -> i64 {
    let s = "abc" + "d"
    var h = 0
    for i in 0..5 {
        h = h * 31 + s.byte(i)
    }
    return h
}
"#,
        "error: index 4 out of range for length 4 at 5:22",
    );
    common::same_everywhere(
        r#"fn main() -> i64 {
    let s = ""
    return s.byte(0)
}
"#,
        "error: index 0 out of range for length 0 at 3:12",
    );
}

/// A one-byte ASCII slice is its static string, found inline on the JIT backends: equal to
/// the literal, stored in a field and a vec, joined and shown; the edges (the last byte, one
/// past the end, a negative start, the empty string, a reversed range) go to the helper and
/// fail where they always did.
#[test]
fn one_byte_slices_are_static_strings_on_every_backend() {
    common::same_everywhere(
        r#"class Box {
    var s: str = ""
}
fn main() -> str {
    let s = "abc" + "xyz"
    let b = new Box()
    var v = vec<str>()
    var eq = 0
    for i in 0..s.len() {
        let c = s.slice(i, i + 1)
        if c == "x" { eq += 1 }
        b.s = c
        v.push(c)
    }
    return "${v} ${b.s} ${eq} ${s.slice(5, 6)}${s.slice(0, 2)}"
}
"#,
        r#"["a", "b", "c", "x", "y", "z"] z 1 zab"#,
    );
    for (expr, error) in [
        (
            "s.slice(6, 7)",
            "error: slice 6..7 out of range for a string of 6 bytes at 3:12",
        ),
        (
            "s.slice(-1, 0)",
            "error: slice -1..0 out of range for a string of 6 bytes at 3:12",
        ),
        (
            "\"\".slice(0, 1)",
            "error: slice 0..1 out of range for a string of 0 bytes at 3:12",
        ),
        (
            "s.slice(3, 2)",
            "error: slice 3..2 out of range for a string of 6 bytes at 3:12",
        ),
    ] {
        let text = format!(
            "fn main() -> i64 {{\n    let s = \"abc\" + \"xyz\"\n    return {expr}.len()\n}}\n"
        );
        common::same_everywhere(&text, error);
    }
}

/// A field read passed borrowed across a call only when nothing the call may run (its
/// arguments, a direct callee, every override of a virtual one on jit-opt) stores into that
/// field (`opt_effects.rs`): a receiver whose override clears the field holding it, a field
/// argument next to a later argument that clears the field, direct and virtual calls that
/// clear a field a `let` read. Values, and every block freed.
#[test]
fn field_reads_are_borrowed_only_across_calls_that_cannot_write_them() {
    common::same_everywhere(
        r#"class N {
    var v: i64 = 0
    var next: N? = null
    var s: str = ""
    virtual fn poke(self, o: N) -> i64 { return 0 }
}
class Clear : N {
    override fn poke(self, o: N) -> i64 {
        o.next = null
        junk = mk(92)
        return 1
    }
}
var junk: N? = null
fn mk(v: i64) -> N {
    let n = new N()
    n.v = v
    n.s = "n${v}"
    return n
}
fn clear(o: N) {
    o.next = null
    junk = mk(91)
}
fn via_call(o: N) -> i64 {
    let x: N = o.next
    clear(o)
    return x.v + x.s.len()
}
fn via_virtual(o: N, k: N) -> i64 {
    let x: N = o.next
    let c = k.poke(o)
    return x.v * 10 + c + x.s.len()
}
fn consume(o: N, n: N) -> i64 {
    o.next = null
    junk = mk(93)
    return n.v + n.s.len()
}
fn main() -> i64 {
    let a = new N()
    a.next = mk(5)
    let r1 = via_call(a)
    a.next = mk(6)
    let r2 = via_virtual(a, new Clear())
    a.next = mk(7)
    let r3 = via_virtual(a, new N())
    a.next = mk(8)
    let r4 = consume(a, a.next)
    return r1 * 1000000 + r2 * 10000 + r3 * 100 + r4
}
"#,
        "7637210",
    );
    common::same_everywhere(
        r#"class Task {
    var s: str = ""
    virtual fn run(self, t: Tcb) -> i64 { return 1 }
}
class Killer : Task {
    override fn run(self, t: Tcb) -> i64 {
        t.task = null
        let z = new Killer()
        z.s = "zzzzzzz"
        junk = z
        self.s = self.s + "xy"
        return self.s.len() * 10
    }
}
var junk: Task? = null
class Tcb {
    var task: Task? = null
    fn go(self) -> i64 { return self.task.run(self) }
}
fn main() -> i64 {
    let t = new Tcb()
    t.task = new Killer()
    let a = t.go()
    t.task = new Task()
    let b = t.go()
    if t.task == null {
        return -1
    }
    return a + b
}
"#,
        "21",
    );
    common::same_everywhere(
        r#"class N {
    var v: i64 = 0
    var next: N? = null
    var s: str = ""
    fn add(self, n: N, k: i64) -> i64 { return n.v + n.s.len() + k + self.v }
}
var junk: N? = null
fn mk(v: i64) -> N {
    let n = new N()
    n.v = v
    n.s = "n${v}"
    return n
}
fn g(n: N, k: i64) -> i64 {
    return n.v + n.s.len() + k
}
fn clr(o: N) -> i64 {
    o.next = null
    junk = mk(97)
    return 100
}
fn main() -> i64 {
    let a = new N()
    a.next = mk(5)
    let r = g(a.next, clr(a))
    a.next = mk(6)
    let q = a.add(a.next, clr(a))
    return r * 1000 + q
}
"#,
        "107108",
    );
}

/// `let p: N = n` of a parameter is an alias (no reference of its own): stored into two
/// fields, returned, compared; a null one fails at the `let`'s value.
#[test]
fn a_let_of_a_parameter_is_an_alias() {
    let text = r#"class N {
    var v: i64 = 0
    var next: N? = null
    var s: str = ""
}
class H {
    var cur: N? = null
    var keep: N? = null
}
fn put(h: H, n: N?) -> N? {
    if n != null {
        let p: N = n
        h.cur = p
        h.keep = p
        return p
    }
    return null
}
fn main() -> i64 {
    let h = new H()
    let n = new N()
    n.v = 4
    n.s = "x${n.v}"
    let r = put(h, n)
    h.cur = null
    if r == h.keep && put(h, null) == null {
        return r.v + h.keep.s.len()
    }
    return -1
}
"#;
    common::same_everywhere(text, "6");
    let null = text.replace("if n != null {", "if true {");
    common::same_everywhere(&null, "error: null handle at 12:20");
}

/// `let x = o.f` borrows the field's reference while nothing may store into the field; a
/// store `o.f = value` through the same `o` moves the field's old reference into `x` instead
/// of releasing it (`lower_region.rs`, `field_lets`). Values, errors and their places, and
/// every node's string freed (a node leaked or freed twice would show).
#[test]
fn a_borrowed_field_let_and_the_store_that_moves_its_reference() {
    // the field holds the last reference and the `let` is used after the move
    common::same_everywhere(
        r#"class N {
    var v: i64 = 0
    var next: N? = null
    var s: str = ""
}
var junk: N? = null
fn mk(v: i64) -> N {
    let n = new N()
    n.v = v
    n.s = "n${v}"
    return n
}
fn take(o: N) -> i64 {
    let x: N = o.next
    o.next = null
    junk = mk(98)
    x.s = x.s + "!"
    return x.v * 10 + x.s.len()
}
fn take_twice(o: N) -> i64 {
    let x: N = o.next
    o.next = x.next
    o.next = null
    return x.v + x.s.len()
}
fn main() -> i64 {
    let a = new N()
    a.next = mk(7)
    let r = take(a)
    a.next = mk(3)
    a.next.next = mk(4)
    let q = take_twice(a)
    if a.next == null {
        return r * 100 + q
    }
    return -1
}
"#,
        "7305",
    );
    // a move on one branch only, and a `return` of the `let` after it
    common::same_everywhere(
        r#"class N {
    var v: i64 = 0
    var next: N? = null
    var s: str = ""
}
var junk: N? = null
fn mk(v: i64) -> N {
    let n = new N()
    n.v = v
    n.s = "n${v}"
    return n
}
fn half(o: N, c: bool) -> i64 {
    let x: N = o.next
    if c {
        o.next = null
        junk = mk(96)
    }
    return x.v * 10 + x.s.len()
}
fn keep_and_return(o: N) -> N {
    let x: N = o.next
    o.next = null
    return x
}
fn main() -> i64 {
    let a = new N()
    a.next = mk(3)
    let r = half(a, false)
    let q = half(a, true)
    a.next = mk(4)
    let k = keep_and_return(a)
    if a.next == null {
        return r * 10000 + q * 100 + k.v
    }
    return -1
}
"#,
        "323204",
    );
    // a store through another local that may alias the object (no move, no borrow)
    common::same_everywhere(
        r#"class N {
    var v: i64 = 0
    var next: N? = null
    var s: str = ""
}
var junk: N? = null
fn mk(v: i64) -> N {
    let n = new N()
    n.v = v
    n.s = "n${v}"
    return n
}
fn alias(o: N, p: N) -> i64 {
    let x: N = o.next
    p.next = null
    junk = mk(99)
    return x.v * 10 + x.s.len()
}
fn main() -> i64 {
    let a = new N()
    a.next = mk(5)
    let r = alias(a, a)
    let b = new N()
    b.next = mk(6)
    return r * 100 + alias(b, a)
}
"#,
        "5262",
    );
    // the scheduler loop: `let t = h.cur`, then `h.cur = t.next` or `h.cur = t.run(h)`
    common::same_everywhere(
        r#"class N {
    var v: i64 = 0
    var next: N? = null
    var s: str = ""
}
class H {
    var cur: N? = null
}
var junk: N? = null
fn step(t: N) -> N? {
    junk = build(1)
    return t.next
}
fn build(n: i64) -> N? {
    var head: N? = null
    for i in 0..n {
        let m = new N()
        m.v = i
        m.s = "n${i}"
        m.next = head
        head = m
    }
    return head
}
fn walk(h: H) -> i64 {
    var s = 0
    while h.cur != null {
        let t: N = h.cur
        if t.v % 3 == 0 {
            h.cur = t.next
            junk = build(1)
            s += t.s.len()
        } else {
            h.cur = step(t)
            s += t.v
        }
    }
    return s
}
fn main() -> i64 {
    let h = new H()
    h.cur = build(20)
    let a = walk(h)
    h.cur = build(7)
    return a * 1000 + walk(h)
}
"#,
        "144018",
    );
    // an error after the move (the moved reference released by the unwinding)
    common::same_everywhere(
        r#"class Node {
    var count: i64 = 0
    var next: Node? = null
    var name: str = ""
}
fn mk(v: i64) -> Node {
    let n = new Node()
    n.count = v
    n.name = "n${v}"
    return n
}
fn f(o: Node, d: i64, e: i64) -> i64 {
    let x: Node = o.next
    let k = 10 / d
    o.next = null
    let j = 10 / e
    return x.count + k + j
}
fn main() -> i64 {
    let a = new Node()
    a.next = mk(1)
    let r = f(a, 1, 1)
    a.next = mk(2)
    return r + f(a, 1, 0)
}
"#,
        "error: division by zero at 16:16",
    );
    // an error before the move (nothing of the `let` to release)
    common::same_everywhere(
        r#"class Node {
    var count: i64 = 0
    var next: Node? = null
    var name: str = ""
}
fn mk(v: i64) -> Node {
    let n = new Node()
    n.count = v
    n.name = "n${v}"
    return n
}
fn f(o: Node, d: i64, e: i64) -> i64 {
    let x: Node = o.next
    let k = 10 / d
    o.next = null
    let j = 10 / e
    return x.count + k + j
}
fn main() -> i64 {
    let a = new Node()
    a.next = mk(1)
    let r = f(a, 1, 1)
    a.next = mk(2)
    return r + f(a, 0, 1)
}
"#,
        "error: division by zero at 14:16",
    );
}

/// The review's two cases of borrowed field `let`s: one read through another borrowed `let`
/// (`let o = q.next; let x = o.f; q.next = null` frees `o`'s object and with it `x`'s unless
/// `x` holds its own reference), and two stores on one path after a `let` (`if c { o.next =
/// a }` then `if d { o.next = b }`: only one can move the reference into `x`, or the first
/// one's object leaks, and its string with it).
#[test]
fn borrowed_field_lets_through_other_borrows_and_two_stores_on_one_path() {
    common::same_everywhere(
        r#"class N {
    var v: i64 = 0
    var next: N? = null
    var f: N? = null
    var s: str = ""
}
fn clear(q: N) {
    q.next = null
}
fn build() -> N {
    let q = new N()
    let n = new N()
    let m = new N()
    m.v = 42
    m.s = "m" + "42"
    n.f = m
    q.next = n
    return q
}
fn g(q: N) -> i64 {
    let o: N = q.next
    let x: N = o.f
    q.next = null
    return x.v + x.s.len()
}
fn h(q: N) -> i64 {
    let o: N = q.next
    let x: N = o.f
    clear(q)
    return x.v + x.s.len()
}
fn main() -> i64 {
    return g(build()) * 100 + h(build())
}
"#,
        "4545",
    );
    common::same_everywhere(
        r#"class N {
    var v: i64 = 0
    var next: N? = null
    var s: str = ""
}
fn mk(v: i64) -> N {
    let n = new N()
    n.v = v
    n.s = "n${v}"
    return n
}
fn f(o: N, a: N, b: N, c: bool, d: bool) -> i64 {
    let x: N = o.next
    if c {
        o.next = a
    }
    if d {
        o.next = b
    }
    return x.v + x.s.len()
}
fn main() -> i64 {
    var r = 0
    for i in 0..4 {
        let o = mk(1)
        o.next = mk(7)
        r = r * 100 + f(o, mk(2), mk(3), i % 2 == 1, i >= 2)
    }
    return r
}
"#,
        "9090909",
    );
}

/// `is` and `as?` are walked by the lowering's analyses (they stopped every borrowed `let`,
/// alias and module-variable register in the function before): a downcast of a parameter
/// alias and of a borrowed field `let`, inside a loop that writes a module variable; the
/// `let` of a null field fails at its place.
#[test]
fn downcasts_beside_borrowed_lets_and_module_variables() {
    common::same_everywhere(
        r#"class A {
    var v: i64 = 0
    var next: A? = null
    var s: str = ""
}
class B : A {
    var w: i64 = 0
}
var count: i64 = 0
fn kind(a: A?) -> i64 {
    let p: A = a
    let n: A = p.next
    var k = 0
    if p is B {
        k += 1
    }
    let b = n as? B
    if b != null {
        k += b.w * 10
    }
    for i in 0..3 {
        count += 1
        if n is B {
            count += 100
        }
    }
    return k + n.s.len() * 1000
}
fn main() -> i64 {
    let x = new B()
    x.w = 4
    x.s = "ab" + "c"
    let y = new A()
    y.next = x
    let z = new B()
    z.next = y
    y.s = "xy" + "z"
    let r = kind(y) + kind(z) * 100000
    return r * 1000 + count
}
"#,
        "300103040306",
    );
    common::same_everywhere(
        r#"class A {
    var v: i64 = 0
    var next: A? = null
    var s: str = ""
}
class B : A {
    var w: i64 = 0
}
var count: i64 = 0
fn kind(a: A?) -> i64 {
    let p: A = a
    let n: A = p.next
    var k = 0
    if p is B {
        k += 1
    }
    let b = n as? B
    if b != null {
        k += b.w * 10
    }
    for i in 0..3 {
        count += 1
        if n is B {
            count += 100
        }
    }
    return k + n.s.len() * 1000
}
fn main() -> i64 {
    let x = new B()
    x.w = 4
    x.s = "ab" + "c"
    let y = new A()
    y.next = x
    let z = new B()
    z.next = y
    y.s = "xy" + "z"
    let r = kind(y) + kind(z) * 100000
    return r * 1000 + count + kind(x)
}
"#,
        "error: null handle at 12:16",
    );
}

/// `let x = t.items[i]` of an element of a field's array borrows the element while nothing may
/// store into `items` (a store into another field does not count); a call that clears the
/// element, one that replaces the whole array, and a store into the element itself make the
/// `let` take its own reference (the element is freed under it otherwise: a new object right
/// after would reuse its memory); a null element fails at the `let`'s value.
#[test]
fn a_borrowed_element_of_a_field_array() {
    common::same_everywhere(
        r#"class N {
    var v: i64 = 0
    var s: str = ""
}
class T {
    var items: [N?; 4] = [null; 4]
    var other: N? = null
}
fn mk(v: i64) -> N {
    let n = new N()
    n.v = v
    n.s = "n${v}"
    return n
}
fn clear(t: T, i: i64) {
    t.items[i] = null
}
fn swap(t: T) {
    var fresh: [N?; 4] = [null; 4]
    fresh[0] = mk(90)
    t.items = fresh
}
fn read(t: T, i: i64) -> i64 {
    let x = t.items[i]
    t.other = mk(5)
    return x.v + x.s.len()
}
fn read_clear(t: T, i: i64) -> i64 {
    let x = t.items[i]
    clear(t, i)
    let junk = mk(77)
    return x.v + x.s.len() + junk.v * 0
}
fn read_swap(t: T) -> i64 {
    let x: N = t.items[1]
    swap(t)
    let junk = mk(78)
    return x.v + x.s.len() + junk.v * 0
}
fn read_store(t: T, i: i64) -> i64 {
    let x = t.items[i]
    t.items[i] = mk(i * 100)
    return x.v + x.s.len()
}
fn main() -> i64 {
    let t = new T()
    for i in 0..4 {
        t.items[i] = mk(i + 10)
    }
    let a = read(t, 0)
    let b = read_clear(t, 1)
    t.items[1] = mk(21)
    let c = read_swap(t)
    t.items[2] = mk(32)
    let d = read_store(t, 2)
    let e = t.items[2].v
    return a * 100000000 + b * 1000000 + c * 10000 + d * 100 + e
}
"#,
        "1314243700",
    );
    common::same_everywhere(
        r#"class N {
    var v: i64 = 0
}
class T {
    var items: [N?; 4] = [null; 4]
}
fn get(t: T, i: i64) -> i64 {
    let x: N = t.items[i]
    return x.v
}
fn main() -> i64 {
    let t = new T()
    t.items[0] = new N()
    return get(t, 0) + get(t, 1) + get(t, 7)
}
"#,
        "error: null handle at 8:16",
    );
}

/// A `C?` field passed where a `C` is wanted (`f(self.current)`) is borrowed like a plain field
/// argument when the call cannot write the field: the same values, the null raised at the
/// argument's own span and in argument order (an earlier argument's error first), and every
/// block freed.
#[test]
fn a_non_null_field_argument_is_borrowed_and_checked_in_order() {
    common::same_everywhere(
        r#"class T {
    var v: i64 = 0
    var s: str = ""
}
class S {
    var cur: T? = null
    var other: T? = null
    fn pair(self) -> i64 { return both(self.cur, self.other) + self.cur.v }
}
fn both(a: T, b: T) -> i64 { return a.v * 10 + b.v + a.s.len() }
fn main() -> i64 {
    let s = new S()
    let t = new T()
    t.v = 4
    t.s = "four"
    s.cur = t
    s.other = new T()
    s.other.v = 2
    var acc = 0
    for i in 0..3 { acc += s.pair() }
    return acc
}
"#,
        "150",
    );
    common::same_everywhere(
        r#"class T { var v: i64 = 0 }
class S {
    var cur: T? = null
    var other: T? = null
}
fn both(a: T, b: T) -> i64 { return a.v + b.v }
fn main() -> i64 {
    let s = new S()
    s.other = new T()
    return both(s.other, s.cur) + both(s.cur, s.other)
}
"#,
        "error: null handle at 10:26",
    );
}

/// A `var` that walks a chain of objects (`var peek: P = queue`, then only `peek = peek.link`)
/// owns no reference when nothing writes `link` while it walks (`lower_region.rs`,
/// `chase_vars`), as in a queue append whose last step stores through it: the same values, an
/// error in the middle of a walk at its own span, every block freed; a walk beside a store that
/// cuts the chain keeps its references and computes the same.
#[test]
fn a_var_walking_a_chain_owns_nothing_and_computes_the_same() {
    common::same_everywhere(
        r#"class P {
    var link: P? = null
    var id: i64 = 0
    var s: str = ""
    fn add_to(self, queue: P?) -> P {
        self.link = null
        if queue == null {
            return self
        }
        var peek: P = queue
        while peek.link != null {
            peek = peek.link
        }
        peek.link = self
        return queue
    }
}
fn count(q: P?) -> i64 {
    if q == null { return 0 }
    var n = 0
    var at: P = q
    n += at.id + at.s.len()
    while at.link != null {
        at = at.link
        n += at.id + at.s.len()
    }
    return n
}
fn main() -> i64 {
    var q: P? = null
    for i in 0..6 {
        let p = new P()
        p.id = i * 10
        p.s = "p${i}"
        q = p.add_to(q)
    }
    var total = count(q)
    for k in 0..3 {
        let head: P = q
        q = head.link
        total = total * 3 + count(q) + head.add_to(q).id
    }
    return total
}
"#,
        "6584",
    );
    common::same_everywhere(
        r#"class P {
    var link: P? = null
    var id: i64 = 0
}
fn last_id(q: P) -> i64 {
    var at: P = q
    for i in 0..10 {
        at = at.link
    }
    return at.id
}
fn main() -> i64 {
    let a = new P()
    a.link = new P()
    a.link.id = 7
    a.link.link = new P()
    return last_id(a)
}
"#,
        "error: null handle at 8:14",
    );
    common::same_everywhere(
        r#"class P {
    var link: P? = null
    var id: i64 = 0
}
fn cut(q: P, other: P) -> i64 {
    var at: P = q
    var n = 0
    while at.link != null {
        other.link = null
        at = at.link
        n += at.id
    }
    return n
}
fn main() -> i64 {
    let a = new P()
    var t = a
    for i in 1..5 {
        let p = new P()
        p.id = i
        t.link = p
        t = p
    }
    return cut(a, a.link) * 100 + cut(a, new P())
}
"#,
        "101",
    );
}

/// Bounds checks the JIT leaves out (an index already checked on the straight path, a loop over
/// `0..n` with `let n = 4` on a 4-array, a mask `i & m` with `let m = 3`) leave every failing
/// check failing where it did: the store's index checked before its right side's, a check
/// inside a branch not reused after it, a `let` bound larger than the array, a check against a
/// longer array not taken for one against a shorter.
#[test]
fn bounds_checks_known_to_pass_are_left_out_and_the_rest_fail_where_they_did() {
    common::same_everywhere(
        "fn main() -> i64 {\n    let n = 4\n    let m = 3\n    var a = [0; 4]\n    var s = 0\n    for i in 0..n {\n        a[i] = a[i] + i * 10\n    }\n    for i in 0..9 {\n        s = s * 3 + a[i & m] + a[i & m]\n    }\n    var lo = 0\n    var hi = n - 1\n    while lo < hi {\n        let t = a[lo]\n        a[lo] = a[hi]\n        a[hi] = t\n        lo += 1\n        hi -= 1\n    }\n    return s * 10000 + a[0] * 100 + a[3]\n}\n",
        "885603000",
    );
    common::same_everywhere(
        "fn main() -> i64 {\n    var a = [1, 2, 3]\n    var i = 2\n    a[i] = a[i] + 1\n    i += 1\n    a[i] = a[i] + 1\n    return a[0]\n}\n",
        "error: index 3 out of range for length 3 at 6:7",
    );
    common::same_everywhere(
        "fn f(a: [i64; 4], i: i64, c: bool) -> i64 {\n    var s = 0\n    if c {\n        s = a[i]\n    }\n    return s + a[i]\n}\nfn main() -> i64 {\n    let a = [1, 2, 3, 4]\n    return f(a, 1, true) * 100 + f(a, 9, false)\n}\n",
        "error: index 9 out of range for length 4 at 6:16",
    );
    common::same_everywhere(
        "fn main() -> i64 {\n    let n = 5\n    let m = 4\n    var a = [0; 4]\n    var s = 0\n    for i in 0..m {\n        a[i] = i + m\n    }\n    for i in 0..n {\n        s += a[i & 3] + a[i]\n    }\n    return s\n}\n",
        "error: index 4 out of range for length 4 at 10:25",
    );
    common::same_everywhere(
        "fn main() -> i64 {\n    var a = [1, 2, 3, 4, 5]\n    var b = [1, 2, 3]\n    var i = 3\n    let x = a[i]\n    return x + b[i]\n}\n",
        "error: index 3 out of range for length 3 at 6:16",
    );
}

/// An index into an array (fixed length) in a store's place is checked before the stored value
/// runs, on every backend, as the interpreter does; also for an array in a field (boxed) and an
/// array in a vec's cell. A vec's index is checked after the value (the value may push or pop).
/// Found by the generator: `o.a[2] = 10 / o.v.len()` raised the division on the JIT backends.
#[test]
fn an_array_index_in_a_place_is_checked_before_the_value() {
    common::same_everywhere(
        "class C {\n    var a: [i64; 2] = [0, 0]\n    var v: vec<i64> = vec<i64>()\n}\nfn main() -> i64 {\n    let o = new C()\n    o.a[2] = 10 / o.v.len()\n    return 0\n}\n",
        "error: index 2 out of range for length 2 at 7:9",
    );
    common::same_everywhere(
        "class C {\n    var a: [[i64; 2]; 2] = [[0, 0], [0, 0]]\n}\nfn main() -> i64 {\n    var v = vec<i64>()\n    let o = new C()\n    o.a[1][3] = 10 / v.len()\n    return 0\n}\n",
        "error: index 3 out of range for length 2 at 7:12",
    );
    common::same_everywhere(
        "fn main() -> i64 {\n    var v = vec<[i64; 2]>()\n    v.push([1, 2])\n    var w = vec<i64>()\n    v[0][1] = 7\n    v[0][3] = 10 / w.len()\n    return 0\n}\n",
        "error: index 3 out of range for length 2 at 6:10",
    );
    common::same_everywhere(
        "fn main() -> i64 {\n    var v = vec<i64>()\n    v.push(1)\n    let z = v.len() - 1\n    v[5] = 10 / z\n    return 0\n}\n",
        "error: division by zero at 5:15",
    );
    // A compound store and a push on an array field's element: the index first too.
    common::same_everywhere(
        "class C {\n    var a: [i64; 2] = [0, 0]\n}\nfn main() -> i64 {\n    var w = vec<i64>()\n    let o = new C()\n    o.a[2] += 10 / w.len()\n    return 0\n}\n",
        "error: index 2 out of range for length 2 at 7:9",
    );
    common::same_everywhere(
        "class C {\n    var a: [vec<i64>; 2] = [vec<i64>(), vec<i64>()]\n}\nfn main() -> i64 {\n    var w = vec<i64>()\n    let o = new C()\n    o.a[5].push(10 / w.len())\n    return 0\n}\n",
        "error: index 5 out of range for length 2 at 7:9",
    );
}

/// A store through the same object whose place or value reads the borrowed `let x = o.f`, when
/// `x` is not used after it (`o.f = x.next`, `o.f = x.step(o)`): a plain write, whose release
/// of the old reference comes after the value ran (`lower_region.rs`, `rest_keeps_field`) —
/// the old object often held its last reference in the field, and its string must be freed
/// once. On one branch and on both, in a loop (a queue walked as Richards' scheduler does),
/// and with an error in the value after the read (the borrowed `x` still valid there).
#[test]
fn a_store_that_reads_the_borrowed_let_for_the_last_time_releases_it_once() {
    let text = r#"class N {
    var v: i64 = 0
    var next: N? = null
    var s: str = ""
    fn step(self, o: Q) -> N? {
        o.hops += 1
        return self.next
    }
}
class Q {
    var head: N? = null
    var hops: i64 = 0
    fn push(self, v: i64) {
        let n = new N()
        n.v = v
        n.s = "n${v}"
        n.next = self.head
        self.head = n
    }
    fn drain(self, k: i64) -> i64 {
        var total = 0
        while self.head != null {
            let t: N = self.head
            total += t.v * 10 + t.s.len()
            if t.v % 2 == 0 {
                self.head = t.next
            } else {
                self.head = t.step(self)
            }
            total += 100 / (k - t.v)
        }
        return total
    }
}
fn main() -> i64 {
    let q = new Q()
    for i in 0..6 { q.push(i) }
    let a = q.drain(10)
    for i in 0..3 { q.push(i) }
    let b = q.drain(1)
    return a * 1000 + b + q.hops
}
"#;
    // Both queues drained with k = 10 (no division by zero): the interpreter's value.
    common::same_everywhere(&text.replace("q.drain(1)", "q.drain(10)"), "245073");
    // k = 1: the second queue's node of v = 1 divides by zero after `self.head` was set past
    // it: the error at its place, every string freed.
    common::same_everywhere(text, "error: division by zero at 30:26");
}

/// The same plain write with `x` used nowhere after the store, so the store is not a move but
/// the plain write itself (`rest_keeps_field`, `!later`), and an error raised inside the value,
/// by the call that reads `x`'s next: the field still holds its reference then, and every node
/// and string is released once.
#[test]
fn a_plain_write_whose_value_raises_keeps_the_field_and_frees_once() {
    let text = r#"class N {
    var v: i64 = 0
    var next: N? = null
    var s: str = ""
    fn pass(self, o: Q, k: i64) -> N? {
        o.hops += 100 / (k - self.v)
        return self.next
    }
}
class Q {
    var head: N? = null
    var hops: i64 = 0
    fn push(self, v: i64) {
        let n = new N()
        n.v = v
        n.s = "n${v}"
        n.next = self.head
        self.head = n
    }
    fn drain(self, k: i64) -> i64 {
        var total = 0
        while self.head != null {
            let t: N = self.head
            total += t.v * 10 + t.s.len()
            self.head = t.pass(self, k)
        }
        return total
    }
}
fn main() -> i64 {
    let q = new Q()
    for i in 0..6 { q.push(i) }
    let a = q.drain(10)
    for i in 0..3 { q.push(i) }
    let b = q.drain(1)
    return a * 1000 + b + q.hops
}
"#;
    common::same_everywhere(&text.replace("q.drain(1)", "q.drain(10)"), "162152");
    common::same_everywhere(text, "error: division by zero at 6:23");
}

/// Nodes holding a string each (a node leaked or freed twice leaves or frees its string) in a
/// queue, the start of the var-move tests' programs.
const NODE_QUEUE: &str = r#"class N {
    var v: i64 = 0
    var next: N? = null
    var s: str = ""
}
class Q {
    var head: N? = null
}
fn mk(v: i64) -> N {
    let n = new N()
    n.v = v
    n.s = "n${v}"
    return n
}
"#;

/// `x = o.f` right before `o.f = v` (a queue's pop): the field's reference moves to the `var`
/// instead of a retain and a release that cancel (`lower_region.rs`, `var_moves`). Values,
/// errors and their places, and every node's string freed once (a node leaked or freed twice
/// would show), when `v` raises too.
#[test]
fn a_var_popped_from_a_field_takes_its_reference() {
    let text = &format!(
        "{NODE_QUEUE}{}",
        r#"fn fill(q: Q, k: i64) {
    for i in 0..k {
        let n = mk(i + 1)
        n.next = q.head
        q.head = n
    }
}
fn boom(n: N?, k: i64) -> N? {
    if k == 3 {
        return mk(100 / (k - 3))
    }
    return n
}
fn drain(q: Q) -> i64 {
    var x: N? = mk(50)
    var total = 0
    while q.head != null {
        x = q.head
        q.head = x.next
        total = total * 10 + x.v + x.s.len() - 2
    }
    return total + x.v * 1000000
}
fn same(q: Q) -> i64 {
    var x: N? = null
    x = q.head
    q.head = x
    return x.v
}
fn through_a_call(q: Q, k: i64) -> i64 {
    var x: N? = mk(60)
    var n = 0
    while n < k {
        x = q.head
        q.head = boom(x.next, n)
        n += 1
    }
    return x.v
}
fn main() -> i64 {
    let q = new Q()
    fill(q, 4)
    let a = same(q)
    let d = drain(q)
    fill(q, 5)
    let c = through_a_call(q, 2)
    return d * 1000 + a * 100 + c
}
"#
    );
    common::same_everywhere(text, "1004321404");
    // The queue runs dry: `x.next` of a null `x` raises at its place, `x` holding nothing of
    // its own (its old node was released by the assignment).
    let dry = text.replace("fill(q, 5)", "fill(q, 0)");
    common::same_everywhere(&dry, "error: null handle at 49:23");
    // The store's value raises (a call that divides by zero): the field keeps its reference.
    let raise = text.replace("through_a_call(q, 2)", "through_a_call(q, 5)");
    common::same_everywhere(&raise, "error: division by zero at 24:23");
}

/// The error paths inside a var move (its `var`'s home slot empty between the read and the
/// store): `x` held a node before the read (released once, at the read), then the store's
/// value raises, by a null `x` and by a division that allocates nothing (a store whose value
/// makes an object is no move: `new` may write any field).
#[test]
fn a_var_move_whose_store_value_raises_releases_each_node_once() {
    let text = &format!(
        "{NODE_QUEUE}{}",
        r#"fn pick(n: N?, d: i64) -> N? {
    return n
}
fn popd(q: Q) -> i64 {
    var x: N? = mk(70)
    x = q.head
    q.head = x.next
    return x.v
}
fn pops(q: Q, k: i64) -> i64 {
    var x: N? = mk(80)
    var total = 0
    for i in 0..k {
        x = q.head
        q.head = pick(x.next, 100 / (3 - i))
        total = total * 10 + x.v
    }
    return total
}
fn main() -> i64 {
    let q = new Q()
    for i in 0..5 {
        let n = mk(i + 1)
        n.next = q.head
        q.head = n
    }
    let a = pops(q, 3)
    let b = popd(q)
    return a * 10 + b
}
"#
    );
    common::same_everywhere(text, "5432");
    let divides = text.replace("pops(q, 3)", "pops(q, 4)");
    common::same_everywhere(&divides, "error: division by zero at 29:35");
    let dry = text.replace("for i in 0..5 {", "for i in 0..3 {");
    common::same_everywhere(&dry, "error: null handle at 21:14");
}

/// A `let` bound to a lambda is never null, so its calls have no null test; a `let` bound to
/// anything else (a fn-typed field still `null`) keeps the test and raises where it did.
#[test]
fn a_let_bound_to_a_lambda_is_called_without_a_null_test() {
    let text = r#"class O {
    var g: fn(i64) -> i64 = null
}
fn run(o: O, n: i64) -> i64 {
    let k = n + 1
    let f = |a: i64, b: i64| -> i64 { return a * k + b }
    var acc = 0
    for i in 0..n {
        acc = f(acc, i) % 1000003
    }
    let h = o.g
    return acc * 10 + LAST
}
fn main() -> i64 {
    let o = new O()
    return run(o, 50)
}
"#;
    common::same_everywhere(&text.replace("LAST", "0"), "7428230");
    common::same_everywhere(
        &text.replace("LAST", "h(1)"),
        "error: call of a closure that is not initialized yet (a module variable read before its initializer ran, or a fn-typed field still `null`) at 12:23",
    );
}

/// A call of a `let` bound to a lambda is a direct call of the lambda (inlined on `jit-opt`
/// when small): captures of every kind, an array result, a lambda calling a captured one (an
/// indirect call inside), a `let` made again in each round of a loop with a new capture, and
/// an error raised inside the lambda while the caller holds owned temporaries, located at the
/// lambda's own line.
#[test]
fn a_let_bound_lambda_is_called_directly() {
    let text = r#"class P {
    var v: i64 = 0
}
fn run(p: P, n: i64, d: i64) -> i64 {
    let name = "ab" + "cd"
    let inc = |x: i64| -> i64 { return x + p.v }
    let pair = |x: i64| -> [i64; 2] { return [x, inc(x) + name.len()] }
    var acc = 0
    for i in 0..n {
        let scale = i % 3
        let f = |a: i64| -> i64 { return a * scale + 100 / (d - i) }
        let q = pair(i)
        acc = (acc + f(q[1]) + q[0]) % 1000003
        p.v += 1
    }
    return acc
}
fn main() -> i64 {
    let p = new P()
    return run(p, 20, LIMIT) * 10 + p.v
}
"#;
    common::same_everywhere(&text.replace("LIMIT", "40"), "6940");
    common::same_everywhere(
        &text.replace("LIMIT", "12"),
        "error: division by zero at 11:58",
    );
}

/// Element reads and lengths of a vec field borrow the field's block when nothing runs
/// between the field's read and the element's (a pure index); a store into a vec field of a
/// handle known valid walks from the field's address. A managed element read out stays alive
/// after the field is replaced; a call in the index or the value still sees the field as it is
/// then; an index that raises, a null object and an index out of range raise where they did.
#[test]
fn vec_fields_read_in_place_and_stored_through_a_known_handle() {
    let text = r#"class Box {
    var v = vec<i64>()
    var names = vec<str>()
    var next: Box? = null
    fn swap_in(self, i: i64, j: i64) {
        let t = self.v[i]
        self.v[i] = self.v[j]
        self.v[j] = t
    }
    fn grow(self) -> i64 {
        self.v = vec<i64>()
        for k in 7..12 { self.v.push(k) }
        return 1
    }
}
fn run(b: Box, d: i64) -> i64 {
    for i in 0..6 { b.v.push(i * i); b.names.push("n${i}") }
    b.swap_in(0, 5)
    let s = b.names[2]
    b.names = vec<str>()
    var acc = s.len() * 1000 + b.v.len()
    let c = new Box()
    c.next = b
    acc += c.next.v[1] * 100 + c.next.v.len()
    b.v[b.grow()] = b.v[0] + 100
    acc += b.v[1] * 10 + b.v[4 / d]
    return acc + LAST
}
fn main() -> i64 {
    let b = new Box()
    return run(b, 2)
}
"#;
    common::same_everywhere(&text.replace("LAST", "c.v.len()"), "3191");
    common::same_everywhere(
        &text.replace("LAST", "c.v[0]"),
        "error: index 0 out of range for length 0 at 27:18",
    );
    common::same_everywhere(
        &text.replace("(b, 2)", "(b, 0)").replace("LAST", "0"),
        "error: division by zero at 26:32",
    );
    common::same_everywhere(
        &text.replace("c.next = b", "").replace("LAST", "0"),
        "error: null handle at 24:12",
    );
}

/// Pushes and pops are inline while the buffer has room (and the vec an element): strings
/// pushed across growth, popped to empty and pushed again, a copy made after inline pushes
/// (it sees every element), a vec of vecs and of arrays, and the pop of the empty vec raising
/// at its place.
#[test]
fn inline_pushes_and_pops_keep_every_element() {
    let text = r#"fn run(n: i64) -> i64 {
    var v = vec<str>()
    var acc = 0
    for i in 0..n {
        v.push("s${i}")
        if i % 3 == 2 { acc += v.pop().len() }
    }
    let snap = v
    v.push("tail")
    var w = vec<vec<i64>>()
    var a = vec<[i64; 2]>()
    for i in 0..n {
        var inner = vec<i64>()
        for k in 0..i % 5 { inner.push(k * i) }
        w.push(inner)
        a.push([i, i * i])
    }
    while w.len() > LIMIT {
        let x = w.pop()
        let y = a.pop()
        acc += x.len() * 100 + y[1] % 7
    }
    for i in 0..snap.len() { acc += snap[i].len() }
    return acc * 1000 + v.len() * 10 + snap.len() + EXTRA
}
fn main() -> i64 {
    return run(40)
}
"#;
    common::same_everywhere(&text.replace("LIMIT", "1").replace("EXTRA", "0"), "8189307");
    common::same_everywhere(
        &text.replace("LIMIT", "-1").replace("EXTRA", "0"),
        "error: pop from an empty vec at 19:17",
    );
}

/// A compare of two reads that run no code (locals, fields of handle locals, vec elements by
/// pure indexes, a vec of vecs' inner elements) and the length of such a read borrow their
/// strings; a compare whose other side is a call that replaces the field keeps the value read
/// before the call, and an index out of range on the right raises at its place.
#[test]
fn strings_compared_and_measured_in_place() {
    let text = r#"class Named {
    var name: str = ""
    var tags = vec<str>()
    fn rename(self, s: str) -> str {
        self.name = s
        return s
    }
}
fn run(a: Named, b: Named, k: i64) -> i64 {
    var keys = vec<str>()
    var grid = vec<vec<i64>>()
    for i in 0..8 {
        keys.push("k${i % 3}")
        a.tags.push("t${i}")
        var row = vec<i64>()
        for j in 0..i { row.push(i * j) }
        grid.push(row)
    }
    var acc = 0
    for i in 0..8 {
        for j in 0..8 {
            if keys[i] == keys[j] { acc += 1 }
            if keys[i] != a.tags[j] { acc += 10 }
        }
        acc += keys[i].len() + a.tags[i].len() * 100 + grid[i].len() * 1000
        if i > 2 { acc += grid[i][i - 2] * 10000 }
    }
    if a.name == b.name { acc += 7 }
    if a.name == a.rename("x") { acc += 1000000 }
    if a.name == "x" { acc += 3000000 }
    return acc + LAST
}
fn main() -> i64 {
    let a = new Named()
    let b = new Named()
    return run(a, b, 9)
}
"#;
    common::same_everywhere(&text.replace("LAST", "0"), "3880285");
    common::same_everywhere(
        &text
            .replace("LAST", "0")
            .replace("keys[i] == keys[j]", "keys[i] == keys[k]"),
        "error: index 9 out of range for length 8 at 22:27",
    );
}

/// `(x + k) * c` is lowered as `x * c + k * c` (the copies of an unrolled loop share one
/// multiply): equal results when the sums and products wrap, for negative constants and for
/// chains of additions.
#[test]
fn products_of_sums_with_constants_wrap_alike() {
    let text = r#"fn main() -> i64 {
    var acc = 0
    let big = 9223372036854775807
    for i in 0..37 {
        acc = acc * 31 + (i + 5) * 7 + ((i + 1) + 2) * -3 + (big + i) * 3 + (i - 4) * 9
        acc = acc ^ ((acc + 1) * 1099511628211)
    }
    return acc
}
"#;
    common::same_everywhere(text, "-1281664344637630157");
}
