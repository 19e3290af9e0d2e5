//! Vecs and strings beyond the golden programs: no leaks (every block freed when its last owner
//! goes), and vec and string values crossing the host border.

mod common;

use hotlab::backend::{Checks, Value};
use hotlab::runtime::values::live_blocks;

const PROGRAM: &str = r#"
class Item { var n: i64 = 0 }
var kept = vec<str>()

fn build(n: i64) -> vec<vec<str>> {
    var out = vec<vec<str>>()
    for i in 0..n {
        var row = vec<str>()
        row.push("row ${i}")
        row.push("${[i, i + 1]}")
        out.push(row)
    }
    return out
}

fn main() -> i64 {
    var rows = build(5)
    let copy = rows
    rows[0][0] = "changed"
    rows.pop()
    kept.push(copy[1][0] + "!")
    var items = vec<Item>()
    for i in 0..4 {
        let it = new Item()
        it.n = i
        items.push(it)
    }
    var total = 0
    for it in items { total += it.n }
    for row in copy {
        for s in row { total += s.len() }
        if total > 1000 { return 0 }
    }
    return total
}
"#;

/// Every backend frees every vec and string block (and object) a run made, when the program
/// goes: the count of live blocks on the running thread is back where it was.
#[test]
fn runs_leave_no_blocks_behind() {
    let program = common::compile_text("leak.hot", PROGRAM).unwrap();
    for (backend, run) in common::backends_for(&program) {
        let (got, leaked) = common::outcome_and_leaked_blocks(&program, run);
        assert_eq!(got, "61", "{backend}");
        assert_eq!(leaked, 0, "{backend} leaked {leaked} blocks");
    }
}

/// A run that stops with an error in the interpreter frees everything too.
#[test]
fn an_interpreted_error_leaves_no_blocks_behind() {
    let text =
        "fn main() -> i64 {\n var v = vec<str>()\n v.push(\"a${1}\")\n return v.len() / 0\n}\n";
    let program = common::compile_text("err.hot", text).unwrap();
    let leaked = common::with_stack(common::TEST_STACK, move || {
        let before = live_blocks();
        let r = hotlab::backend::interp::run_main(&program, Checks::On);
        assert!(r.is_err());
        live_blocks() - before
    });
    assert_eq!(leaked, 0);
}

/// The host passes vecs and strings in and gets them back, on the JIT and the interpreter.
#[test]
fn vecs_and_strings_cross_the_border() {
    let text = "fn tag(v: vec<i64>, s: str) -> vec<str> {\n var out = vec<str>()\n \
                for x in v { out.push(s + \"${x}\") }\n return out\n}\n";
    let program = common::compile_text("border.hot", text).unwrap();
    let f = program.function_named("tag").unwrap();
    let args = [
        Value::Vec(vec![Value::I64(1), Value::I64(2)]),
        Value::Str("n".into()),
    ];
    let want = Value::Vec(vec![Value::Str("n1".into()), Value::Str("n2".into())]);
    let before = live_blocks();
    let mut interp = hotlab::backend::interp::Interp::new(&program, Checks::On).unwrap();
    assert_eq!(interp.call(f, &args).unwrap(), want);
    let mut jit = hotlab::backend::jit::Jit::new(Default::default()).unwrap();
    let compiled = jit.compile(&program).unwrap();
    assert_eq!(compiled.call(f, &args).unwrap(), want);
    assert_eq!(want.to_string(), r#"["n1", "n2"]"#);
    let bad = compiled.call(
        f,
        &[
            Value::Vec(vec![Value::Bool(true)]),
            Value::Str(String::new()),
        ],
    );
    assert!(bad.is_err());
    drop(compiled);
    assert_eq!(live_blocks(), before);
}
