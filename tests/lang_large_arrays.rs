//! Arrays of plain scalars past the stack's size (`[bool; 1_000_000]`, `[[i64; 1000]; 1000]`):
//! compiled code keeps an array slot above `hir::HEAP_SLOT_CELLS` cells on the heap (a block
//! made at entry, freed at every return and by the unwinder), so they work as locals,
//! temporaries, parameters, results, module variables, fields and vec elements on every
//! backend alike, recursion holding them does not exhaust the stack, and an error raised with
//! one in a frame frees it. Arrays whose cells own references keep their limit, a diagnostic.

mod common;

use common::{diags, same_everywhere};
use hotlab::lang::hir::HEAP_SLOT_CELLS;

/// Locals, in-place initializers, a result through the out pointer, a parameter copied in,
/// `for` over one, a module variable, nested rows, a field and a vec of large arrays.
#[test]
fn large_arrays_are_values_on_every_backend() {
    let text = r#"
class Grid { var cells: [i64; 100000] = [0; 100000] }
var G = [1.5; 300000]

fn fill(k: i64) -> [i64; 200000] {
    var a = [0; 200000]
    for i in 0..200000 { a[i] = i * k }
    return a
}

fn total(a: [i64; 200000]) -> i64 {
    var s = 0
    for x in a { s += x }
    return s
}

fn sieve(n: i64) -> i64 {
    var composite = [false; 1000000]
    var count = 0
    for i in 2..n {
        if !composite[i] {
            count += 1
            var j = i * i
            while j < n { composite[j] = true; j += i }
        }
    }
    return count
}

fn main() -> str {
    let b = fill(3)
    var c = b
    c[7] = -1
    G[299999] = 2.5
    var m = [[1; 1000]; 1000]
    m[999][998] = 5
    let row = m[999]
    let g = new Grid()
    g.cells[99999] = 9
    var v = vec<[i64; 100000]>()
    v.push(g.cells)
    v[0][1] = 4
    return "${total(b)} ${total(fill(2))} ${b[7]} ${c[7]} ${sieve(1000000)} ${G[299999] + G[0]} ${row[998] + m[0][0]} ${g.cells[99999]} ${v[0][1] + v[0][99999]} ${g.cells[1]}"
}
"#;
    same_everywhere(text, "59999700000 39999800000 21 -1 78498 4.0 6 9 13 0");
}

/// Each level of a recursion holds a 2 MiB array: 200 levels are 400 MiB, far past the
/// 8 MiB compiled code may use of its stack.
#[test]
fn recursion_holding_large_arrays_keeps_to_the_heap() {
    let text = r#"
fn deep(d: i64) -> i64 {
    var a = [d; 250000]
    if d == 0 { return a[249999] }
    return deep(d - 1) + a[5]
}
fn main() -> i64 { return deep(200) }
"#;
    same_everywhere(text, "20100");
}

/// An error raised in a frame holding large arrays (its own, and its callers') is located as
/// always and frees every block (`same_everywhere` counts them).
#[test]
fn an_error_with_large_arrays_in_the_frames_frees_them() {
    let text = r#"
fn inner(a: [i64; 100000], k: i64) -> i64 {
    var b = a
    b[0] = 1
    return b[k]
}
fn outer(k: i64) -> i64 {
    let a = [2; 100000]
    let s = "held ${k}"
    return inner(a, k) + s.len()
}
fn main() -> i64 { return outer(3) + outer(100000) }
"#;
    same_everywhere(
        text,
        "error: index 100000 out of range for length 100000 at 5:12",
    );
}

/// Runaway recursion whose frames each hold a large array on the stack and one on the heap:
/// the stack check at a frame's entry raises before the frame has made its heap block, so the
/// unwinder must not release what the stack held where the block's cell will be (it did: a
/// stale pointer of a deeper frame's, freed twice, or garbage; the worker crashed). The
/// interpreter keeps its arrays off the stack and runs out of memory first, so this is the
/// compiled backends' own case.
#[test]
fn stack_exhausted_before_a_frame_made_its_heap_blocks_frees_nothing_of_it() {
    let text = r#"
fn rec(d: i64) -> i64 {
    var s = [d + 7777; 60000]
    var h = [d; 65537]
    let t = "${d} ${s[2]}"
    return rec(d + 1) + h[1] + s[1] + t.len()
}
fn main() -> i64 { return rec(0) }
"#;
    let program = common::compile_text("exhausted.hot", text).unwrap_or_else(|d| panic!("{d}"));
    for (backend, run) in common::backends() {
        if backend == "interp" {
            continue;
        }
        for _ in 0..3 {
            let (got, leaked) = common::outcome_and_leaked_blocks(&program, run);
            assert_eq!(
                got, "error: call stack exhausted in `rec` (runaway recursion?) at 2:4",
                "{backend}"
            );
            assert_eq!(leaked, 0, "{backend}");
        }
    }
}

/// The slot size that goes to the heap is one past what an array owning references may hold,
/// so such an array never does (its cells are named one by one for the unwinder).
#[test]
fn arrays_owning_references_keep_their_limit() {
    assert_eq!(HEAP_SLOT_CELLS, hotlab::lang::check::MAX_ARRAY_CELLS);
    let d = diags("fn main() -> i64 {\n    let a = [\"x\"; 70000]\n    return a.len()\n}\n");
    let text = d.to_string();
    assert!(
        text.contains(
            "an array of `str` holds at most 65536 of them in all (use a `vec<str>` for more)"
        ),
        "{text}"
    );
    let d = diags("fn main() -> i64 {\n    let a = [[0; 100000]; 100000]\n    return a.len()\n}\n");
    assert!(
        d.to_string()
            .contains("at most 4294967296 scalars fit in one array"),
        "{d}"
    );
    let d = diags("fn main() -> i64 {\n    let a = [0; 4294967296]\n    return a.len()\n}\n");
    assert!(
        d.to_string()
            .contains("an array holds at most 4294967295 elements"),
        "{d}"
    );
}

/// A small function holding a large array, called in a loop and recursively: its block is made
/// at each call's entry and its address is read once per call (movable loads), so it is never
/// inlined into a caller's loop or into itself, where the copy would make it again at each
/// round after the loads had moved out of the loop. Every call sees its own fresh array.
#[test]
fn functions_holding_large_arrays_stay_calls() {
    let text = r#"
fn sieve(n: i64) -> i64 {
    var flags = [true; 600001]
    flags[0] = false
    flags[1] = false
    var i = 2
    while i * i <= n {
        if flags[i] {
            var j = i * i
            while j <= n { flags[j] = false; j += i }
        }
        i += 1
    }
    var count = 0
    for k in 0..n + 1 { if flags[k] { count += 1 } }
    return count
}

fn deep(n: i64) -> i64 {
    var a = [0; 70000]
    a[n] = n
    if n == 0 { return a[0] }
    return deep(n - 1) + a[n] + a[n + 1]
}

fn main() -> i64 {
    var acc = 0
    for r in 0..6 { acc = acc * 3 + sieve(600000 - r * 7) }
    return acc + deep(30)
}
"#;
    same_everywhere(text, "17871963");
}
