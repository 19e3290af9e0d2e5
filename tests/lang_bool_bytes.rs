//! `[bool; N]` takes N bytes on the compiled backends (`jit`, `jit-opt`, `object`): its
//! elements are packed one byte each into `ceil(N / 8)` cells, every row of a nested
//! `[[bool; M]; N]` a whole number of cells of its own (`hir::Type::cells`). Everything a
//! script can do with such arrays gives the interpreter's results and errors, at its locations:
//! elements read and written, literals and fills of every length around a cell, nested rows,
//! `print` and interpolation, `for`, `len`, parameters and results, closures, module variables,
//! class fields (boxed, and kept by a reload), vecs of them, and the host
//! border. A frame holding `[bool; 8192]` is 8 KiB, so recursion holding one goes as deep as
//! on the interpreter. A `vec<bool>` and a boxed bool array (a field, a vec's row) keep one
//! byte an element in their block too (`runtime::values::VecBlock`).

mod common;

use std::sync::Arc;

use assert_cmd::Command;
use common::{fixture, same_everywhere};
use hotlab::backend::{Checks, Value};
use hotlab::lang::{SourceFile, compile};

/// Elements read and written, literals and fills of lengths on both sides of a cell's eight
/// bytes (neighbours must keep their values: a whole-cell store would overwrite them), a
/// written element read back through a copy, `len`, `for`, and the arrays shown.
#[test]
fn elements_literals_and_fills_of_every_length_around_a_cell() {
    let text = r#"
fn count(a: [bool; 17]) -> i64 {
    var n = 0
    for b in a { if b { n += 1 } }
    return n
}

fn main() -> str {
    var a = [false; 17]
    a[0] = true
    a[7] = true
    a[8] = true
    a[16] = true
    a[8] = false
    var t = [true; 9]
    t[4] = false
    let lit = [true, false, true, true, false, false, true, false, true]
    var c = a
    c[1] = true
    var one = [true]
    one[0] = !one[0]
    var e = [true; 8]
    e[7] = false
    let big = [true; 100]
    return "${a} ${count(a)} ${count(c)} ${a.len()} ${t} ${lit} ${lit[8]} ${one} ${e} ${big[99]} ${big.len()}"
}
"#;
    same_everywhere(
        text,
        "[true, false, false, false, false, false, false, true, false, false, false, false, false, \
         false, false, false, true] 3 4 17 [true, true, true, true, false, true, true, true, true] \
         [true, false, true, true, false, false, true, false, true] true [false] [true, true, \
         true, true, true, true, true, false] true 100",
    );
}

/// `[[bool; 3]; 4]`: each row its own cell; rows written whole and by element, read, copied,
/// iterated, shown, and passed as a row.
#[test]
fn nested_rows_are_arrays_of_their_own() {
    let text = r#"
fn any(r: [bool; 3]) -> bool {
    for b in r { if b { return true } }
    return false
}

fn main() -> str {
    var m = [[false; 3]; 4]
    m[1][2] = true
    m[3] = [true, false, true]
    let row = m[3]
    var m2 = m
    m2[0][0] = true
    var hits = 0
    for r in m { if any(r) { hits += 1 } }
    let lit = [[true, true, false], [false, false, true]]
    return "${m} ${row} ${m2[0]} ${m[0]} ${hits} ${lit[1][2]} ${m.len()} ${m[0].len()} ${any(m[1])}"
}
"#;
    same_everywhere(
        text,
        "[[false, false, false], [false, false, true], [false, false, false], [true, false, true]] \
         [true, false, true] [true, false, false] [false, false, false] 2 true 4 3 true",
    );
}

/// Every element equal, element by element, however the arrays were made: a fill, a literal,
/// element stores, a result, a field, a vec element.
#[test]
fn equal_arrays_compare_equal_element_by_element() {
    let text = r#"
class Box { var f: [bool; 10] = [false; 10] }

fn made(k: i64) -> [bool; 10] {
    var a = [false; 10]
    a[k] = true
    return a
}

fn same(a: [bool; 10], b: [bool; 10]) -> bool {
    for i in 0..10 { if a[i] != b[i] { return false } }
    return "${a}" == "${b}"
}

fn main() -> str {
    var x = [false; 10]
    x[9] = true
    let y = [false, false, false, false, false, false, false, false, false, true]
    let o = new Box()
    o.f[9] = true
    var v = vec<[bool; 10]>()
    v.push(y)
    return "${same(x, y)} ${same(x, made(9))} ${same(x, o.f)} ${same(v[0], x)} ${same(x, made(8))} ${x[9] == y[9]}"
}
"#;
    same_everywhere(text, "true true true true false true");
}

/// `print` of bool arrays: the same lines on every backend.
#[test]
fn print_shows_bool_arrays_on_every_backend() {
    let text = r#"
var G = [false; 9]
fn main() -> i64 {
    G[8] = true
    print(G)
    var m = [[true; 2]; 2]
    m[1][0] = false
    print(m)
    print([true, false])
    print("${m[1]}!")
    return 0
}
"#;
    let program = common::compile_text("print.hot", text).unwrap();
    for (backend, run) in common::backends_for(&program) {
        let program = program.clone();
        let (outcome, printed) = common::with_stack(common::TEST_STACK, move || {
            hotlab::runtime::output::capture_on_this_thread();
            let r = run(&program, Checks::On);
            let o = common::outcome(&program, &r);
            (o, hotlab::runtime::output::take_captured())
        });
        assert_eq!(outcome, "0", "{backend}");
        assert_eq!(
            printed,
            "[false, false, false, false, false, false, false, false, true]\n\
             [[true, true], [false, true]]\n[true, false]\n[false, true]!\n",
            "{backend}"
        );
    }
}

/// An index out of range raises at the interpreter's location on every backend: a read at
/// the whole index expression, a store at its index, a row's element at the inner index.
#[test]
fn out_of_range_indexes_raise_where_the_interpreter_does() {
    let read = "fn main() -> i64 {\n    let a = [true; 9]\n    var k = 9\n    if a[k] { return 1 }\n    return 0\n}\n";
    same_everywhere(read, "error: index 9 out of range for length 9 at 4:8");
    let store = "fn main() -> i64 {\n    var a = [true; 16]\n    let k = -1\n    a[k] = false\n    return 0\n}\n";
    same_everywhere(store, "error: index -1 out of range for length 16 at 4:7");
    let nested = "var M = [[false; 3]; 4]\nfn main() -> i64 {\n    let k = 3\n    M[k][k] = true\n    return 0\n}\n";
    same_everywhere(nested, "error: index 3 out of range for length 3 at 4:10");
    let field = "class C { var f: [bool; 5] = [false; 5] }\nfn main() -> bool {\n    let c = new C()\n    let k = 5\n    return c.f[k]\n}\n";
    same_everywhere(field, "error: index 5 out of range for length 5 at 5:12");
}

/// A bool array passed in, changed by the callee (its own copy), returned, and captured by a
/// closure; the caller's stays as it was.
#[test]
fn parameters_results_and_captures_are_copies() {
    let text = r#"
fn flip(a: [bool; 11], k: i64) -> [bool; 11] {
    var b = a
    b[k] = !b[k]
    return b
}

fn main() -> str {
    let a = [false; 11]
    let b = flip(a, 10)
    let c = flip(flip(b, 3), 10)
    let f = |i: i64| -> bool { return c[i] }
    return "${a[10]} ${b[10]} ${c} ${f(3)} ${f(4)}"
}
"#;
    same_everywhere(
        text,
        "false true [false, false, false, true, false, false, false, false, false, false, false] \
         true false",
    );
}

/// Module variables: `var G = [false; 1000000]` (a million bytes, not eight million), written
/// and counted; one shorter than a cell; a nested one.
#[test]
fn module_variables_hold_packed_arrays() {
    let text = r#"
var G = [false; 1000000]
var S = [true; 3]
var N = [[false; 9]; 2]

fn mark(step: i64) {
    var i = 0
    while i < 1000000 { G[i] = true; i += step }
}

fn main() -> str {
    mark(7)
    S[1] = false
    N[1][8] = true
    var n = 0
    for b in G { if b { n += 1 } }
    return "${n} ${G[999999]} ${G[999998]} ${S} ${N[1]} ${N[0][8]}"
}
"#;
    same_everywhere(
        text,
        "142858 true false [true, false, true] [false, false, false, false, false, false, false, \
         false, true] false",
    );
}

/// Recursion holding a `[bool; 8192]` in each frame: 500 levels are 4 MiB at one byte an
/// element, within the 8 MiB compiled code may use of its stack; at eight bytes (32 MiB) the
/// compiled backends raised `call stack exhausted` where the interpreter went on. Each frame
/// also holds a `[bool; 1000000]`, kept on the heap either way.
#[test]
fn recursion_holding_bool_arrays_goes_as_deep_as_on_the_interpreter() {
    let text = r#"
fn deep(d: i64) -> i64 {
    var seen = [false; 8192]
    var wide = [false; 1000000]
    seen[d] = true
    wide[999999 - d] = true
    if d == 0 { return 1 }
    var n = 0
    for b in seen { if b { n += 1 } }
    return deep(d - 1) + n + (wide[999999 - d] as i64)
}
fn main() -> i64 { return deep(500) }
"#;
    same_everywhere(text, "1001");
}

/// The frame of a function holding a `[bool; 8192]` is about 8 KiB on every compiled backend
/// (it was 64 KiB): the size its prologue takes from the stack pointer.
#[cfg(target_arch = "x86_64")]
#[test]
fn a_frame_holding_8192_bools_is_about_8_kib() {
    let dir = std::env::temp_dir().join(format!("hotlab-bool-frame-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sieve.hot");
    std::fs::write(
        &file,
        "fn sieve(n: i64) -> i64 {\n    var composite = [false; 8192]\n    var count = 0\n    \
         for i in 2..n {\n        if !composite[i] {\n            count += 1\n            \
         var j = i * i\n            while j < n { composite[j] = true; j += i }\n        }\n    \
         }\n    return count\n}\nfn main() -> i64 { return sieve(8192) }\n",
    )
    .unwrap();
    for backend in ["jit", "jit-opt", "object"] {
        let out = Command::cargo_bin("hotlab")
            .unwrap()
            .args([
                "asm",
                file.to_str().unwrap(),
                "--fn",
                "sieve",
                "--backend",
                backend,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{backend}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let listing = String::from_utf8(out.stdout).unwrap();
        let frame = listing
            .lines()
            .find_map(|l| l.split("sub rsp,").nth(1))
            .and_then(|imm| u64::from_str_radix(imm.trim().trim_end_matches('h'), 16).ok())
            .unwrap_or_else(|| panic!("{backend}: no `sub rsp` in\n{listing}"));
        assert!(
            (8192..8192 + 1024).contains(&frame),
            "{backend}: a frame of {frame} bytes for [bool; 8192]:\n{listing}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Fields and vec elements box an array one cell an element (as before); storing and reading
/// them converts from and to the packed layout, nested rows included.
#[test]
fn fields_and_vec_elements_convert_from_and_to_packed_arrays() {
    let text = r#"
class Grid {
    var f: [bool; 9] = [true, false, false, false, false, false, false, false, true]
    var m: [[bool; 3]; 2] = [[false; 3]; 2]
}

fn main() -> str {
    let g = new Grid()
    g.f[4] = true
    g.m[1][2] = true
    var local = g.f
    local[0] = false
    g.m[0] = [true, true, false]
    var v = vec<[[bool; 3]; 2]>()
    v.push(g.m)
    v[0][1][0] = true
    let back = v[0]
    return "${g.f} ${local[0]} ${g.m} ${back} ${v.len()} ${g.f[8]}"
}
"#;
    same_everywhere(
        text,
        "[true, false, false, false, true, false, false, false, true] false \
         [[true, true, false], [false, false, true]] [[true, true, false], [true, false, true]] \
         1 true",
    );
}

/// The host passes a nested bool array in and reads one back (packed and unpacked at the
/// border), and reads a module variable: the interpreter's values on every compiled backend.
#[test]
fn the_host_passes_and_reads_bool_arrays() {
    use hotlab::backend::interp::Interp;
    use hotlab::backend::jit::{Jit, JitOptions, OptLevel};
    use hotlab::backend::object::{ObjectOptions, compile_object};
    let text = "var G = [true; 10]\n\
        fn flip(m: [[bool; 3]; 2], i: i64) -> [[bool; 3]; 2] {\n    var r = m\n    \
        r[i][i] = !r[i][i]\n    G[9] = false\n    return r\n}\n";
    let program = compile(Arc::new(SourceFile::new("host.hot", text))).unwrap();
    let f = program.function_named("flip").unwrap();
    let b = Value::Bool;
    let arg = Value::Array(vec![
        Value::Array(vec![b(true), b(false), b(true)]),
        Value::Array(vec![b(false), b(false), b(true)]),
    ]);
    let args = [arg, Value::I64(1)];
    let want = Value::Array(vec![
        Value::Array(vec![b(true), b(false), b(true)]),
        Value::Array(vec![b(false), b(true), b(true)]),
    ]);
    let mut interp = Interp::new(&program, Checks::On).unwrap();
    assert_eq!(interp.call(f, &args).unwrap(), want, "interp");
    let global = interp.global(hotlab::lang::hir::GlobalId(0));
    for opt in [OptLevel::None, OptLevel::Speed] {
        let mut jit = Jit::new(JitOptions {
            opt,
            ..JitOptions::default()
        })
        .unwrap();
        let compiled = jit.compile(&program).unwrap();
        assert_eq!(compiled.call(f, &args).unwrap(), want, "{opt:?}");
        assert_eq!(compiled.global("G").unwrap(), global, "{opt:?}");
    }
    let object = compile_object(&program, &ObjectOptions::default()).unwrap();
    assert_eq!(object.call(f, &args).unwrap(), want, "object");
    assert_eq!(object.global("G").unwrap(), global, "object");
    // A wrongly shaped array is refused, not packed.
    let short = Value::Array(vec![Value::Array(vec![b(true)])]);
    assert!(
        object.call(f, &[short, Value::I64(0)]).is_err(),
        "a [[bool; 1]; 1] passed as a [[bool; 3]; 2]"
    );
}

/// A class whose field is a bool array, and a bool-array module variable, keep their values
/// across a reload on every backend that reloads.
#[test]
fn a_bool_array_field_is_kept_across_a_reload() {
    for backend in ["jit", "object", "interp"] {
        Command::cargo_bin("hotlab")
            .unwrap()
            .args([
                "run",
                &fixture("bools_v1.hot"),
                "--backend",
                backend,
                "--reload",
                &fixture("bools_v2.hot"),
            ])
            .assert()
            .success()
            // main: 3 set of 12; after_reload: 3 kept + 1 set, the module variable's 2 kept.
            .stdout("3\n402\n");
    }
}

/// A `vec<bool>` keeps a byte an element: pushes (in a loop that keeps the vec's length in a
/// register, across the buffer's growth, onto the empty vec), element stores next to other
/// elements, copy-on-write of a shared block, pops, `for`, a field's vec stored through a
/// handle, rows of a `vec<[bool; 3]>` and a field's boxed array, shown, and every index error
/// at its place: the interpreter's results on every backend.
#[test]
fn vecs_of_bools_keep_a_byte_an_element() {
    let text = r#"
class Marks {
    var seen = vec<bool>()
    var row: [bool; 5] = [false; 5]
}

fn fill(n: i64) -> vec<bool> {
    var v = vec<bool>()
    for i in 0..n {
        v.push(i % 3 == 0)
        if i > 2 && v[i - 1] { v.push(false) }
        if v.len() > 40 { v[v.len() - 41] = true }
    }
    return v
}

fn main() -> str {
    var v = fill(45)
    let w = v
    v[1] = true
    v[2] = !v[2]
    var count = 0
    for f in v { if f { count += 1 } }
    for f in w { if f { count += 100 } }
    let last = v.pop()
    var rows = vec<[bool; 3]>()
    for i in 0..4 { rows.push([i == 1, true, i > 2]) }
    rows[2][0] = true
    rows[0][2] = rows[2][0]
    let m = new Marks()
    for i in 0..9 { m.seen.push(i % 2 == 1) }
    m.seen[4] = true
    m.seen[5] = false
    m.row[3] = true
    let p = m.seen.pop()
    var empty = vec<bool>()
    var none = 0
    for f in empty { if f { none += 1 } }
    return "${count} ${last} ${v.len()} ${w.len()} ${v[0]}${v[1]}${v[2]}${w[1]}${w[2]} ${rows} ${m.seen} ${m.row} ${p} ${none} ${LAST}"
}
"#;
    same_everywhere(
        &text.replace("${LAST}", "${v[0]}"),
        "2425 false 55 56 truetruetruetruefalse \
         [[false, true, true], [true, true, false], [true, true, false], [false, true, true]] \
         [false, true, false, true, true, false, false, true] \
         [false, false, false, true, false] false 0 true",
    );
    same_everywhere(
        &text.replace("${LAST}", "${v[58]}"),
        "error: index 58 out of range for length 55 at 39:130",
    );
    same_everywhere(
        &text.replace("${LAST}", "${m.seen[8]}"),
        "error: index 8 out of range for length 8 at 39:130",
    );
    // Raised inside the loop that pushes, at the read past the last push.
    same_everywhere(
        &text.replace("${LAST}", "").replace("v[i - 1]", "v[i + 1]"),
        "error: index 4 out of range for length 4 at 11:21",
    );
}
