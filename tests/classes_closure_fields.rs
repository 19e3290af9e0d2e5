//! Fields holding closures (`fn(..)`, `vec<fn(..)>`) on every backend: calling a closure read
//! from a field, replacing it, interpolating it, a field not initialized (`= null`), the blocks
//! freed with the object, and what a reload does with such fields (resets them) on every
//! backend that reloads.

mod common;

use common::{same_everywhere, source};
use hotlab::backend::interp::Interp;
use hotlab::backend::jit::{JitOptions, ReloadOutcome, ScriptModule};
use hotlab::backend::object::ObjectOptions;
use hotlab::backend::{Checks, Value};
use hotlab::lang::compile;
use hotlab::runtime::values::live_blocks;

const HOLDER: &str = "class Holder {\n var f: fn(i64) -> i64 = null\n \
                      var fs = vec<fn(i64) -> i64>()\n var name = \"h\"\n}\n";

#[test]
fn a_closure_read_from_a_field_is_called_replaced_and_shown() {
    same_everywhere(
        &format!(
            "{HOLDER}fn main() -> str {{\n let h = new Holder()\n var out = \"${{h.f}} \"\n \
             let k = 10\n let tag = \"t\"\n \
             h.f = |x: i64| -> i64 {{ return x + k + tag.len() }}\n \
             out += \"${{(h.f)(1)}} \"\n h.f = |x: i64| -> i64 {{ return x * 3 }}\n \
             let g = h.f\n out += \"${{g(2)}} ${{h.f}}\"\n return out\n}}\n"
        ),
        "<fn: not initialized> 12 6 <fn(i64) -> i64>",
    );
}

#[test]
fn a_vec_of_closures_in_a_field_keeps_each_closure_and_its_captures() {
    same_everywhere(
        &format!(
            "{HOLDER}fn main() -> str {{\n let h = new Holder()\n \
             for i in 0..4 {{\n var words = vec<str>()\n words.push(\"w${{i}}\")\n \
             h.fs.push(|x: i64| -> i64 {{ return x * i + words[0].len() }})\n }}\n \
             h.fs[1] = h.fs[3]\n let last = h.fs.pop()\n var sum = 0\n \
             for g in h.fs {{ sum += g(10) }}\n \
             return \"${{sum}} ${{last(1)}} ${{h.fs.len()}} ${{h.fs}}\"\n}}\n"
        ),
        // 0*10+2 + 3*10+2 + 2*10+2 = 56; last: 1*3+2.
        "56 5 3 [<fn(i64) -> i64>, <fn(i64) -> i64>, <fn(i64) -> i64>]",
    );
}

#[test]
fn calling_a_field_not_initialized_raises_null_closure() {
    same_everywhere(
        &format!("{HOLDER}fn main() -> i64 {{\n let h = new Holder()\n return (h.f)(1)\n}}\n"),
        "error: call of a closure that is not initialized yet (a module variable read before its \
         initializer ran, or a fn-typed field still `null`) at 8:10",
    );
}

const ARRAYS: &str = "class Table {\n var ops: [fn(i64) -> i64; 3] = [null; 3]\n \
                      var grid: [[fn(i64) -> i64; 2]; 2] = [[null, null], [null; 2]]\n}\n";

#[test]
fn an_array_of_closures_in_a_field_starts_not_initialized_and_holds_closures() {
    same_everywhere(
        &format!(
            "{ARRAYS}fn main() -> str {{\n let t = new Table()\n var out = \"${{t.ops}} \"\n \
             let k = 5\n t.ops[0] = |x: i64| -> i64 {{ return x + k }}\n \
             t.ops[2] = |x: i64| -> i64 {{ return x * k }}\n \
             t.grid[1][0] = t.ops[2]\n \
             out += \"${{t.ops[0](1)}} ${{t.grid[1][0](2)}} ${{t.grid}}\"\n return out\n}}\n"
        ),
        "[<fn: not initialized>, <fn: not initialized>, <fn: not initialized>] 6 10 \
         [[<fn: not initialized>, <fn: not initialized>], [<fn(i64) -> i64>, <fn: not initialized>]]",
    );
    same_everywhere(
        &format!("{ARRAYS}fn main() -> i64 {{\n let t = new Table()\n return t.ops[1](1)\n}}\n"),
        "error: call of a closure that is not initialized yet (a module variable read before its \
         initializer ran, or a fn-typed field still `null`) at 7:9",
    );
}

const CHURN: &str = "class Holder {\n var f: fn(i64) -> i64 = null\n \
                     var fs = vec<fn(i64) -> i64>()\n}\n\
                     fn main() -> i64 {\n var total = 0\n for i in 0..20 {\n \
                     let h = new Holder()\n let s = \"captured ${i}\"\n \
                     h.f = |x: i64| -> i64 { return x + s.len() }\n h.fs.push(h.f)\n \
                     h.fs.push(|x: i64| -> i64 { return x })\n total += (h.fs[0])(i)\n }\n \
                     return total\n}\n";

#[test]
fn closures_in_fields_go_with_their_object() {
    let program = common::compile_text("churn.hot", CHURN).unwrap();
    // i + len("captured i"): 10 for i < 10, 11 after.
    let want = Value::I64((0..20).map(|i| i + if i < 10 { 10 } else { 11 }).sum());
    let before = live_blocks();
    {
        let module = ScriptModule::new(program.clone(), JitOptions::default()).unwrap();
        assert_eq!(module.run_main().unwrap(), want);
        let shells: usize = module
            .current()
            .objects()
            .iter()
            .flat_map(|o| o.classes.iter())
            .map(|c| c.shell_count())
            .sum();
        assert_eq!(shells, 0, "the JIT leaked objects");
    }
    assert_eq!(live_blocks(), before, "the JIT leaked blocks");
    {
        let mut interp = Interp::new(&program, Checks::On).unwrap();
        assert_eq!(interp.call(program.main.unwrap(), &[]).unwrap(), want);
        assert_eq!(interp.shell_count(), 0, "the interpreter leaked objects");
    }
    assert_eq!(live_blocks(), before, "the interpreter leaked blocks");
}

const V1: &str = r#"
class Holder {
    var f: fn(i64) -> i64 = null
    var fs = vec<fn(i64) -> i64>()
    var g: fn(i64) -> i64 = null
    var n: i64 = 0
}
var a: Holder? = null
var keep: fn(i64) -> i64 = |x: i64| -> i64 { return x }
fn main() -> i64 {
    let h = new Holder()
    let k = 100
    h.f = |x: i64| -> i64 { return x + k }
    h.fs.push(h.f)
    h.g = |x: i64| -> i64 { return x }
    h.n = 7
    a = h
    keep = h.f
    return (h.f)(1)
}
"#;

/// `f` and `fs` keep their full types but hold closures of the first version: reset. `g` is
/// retyped (`fn(i64) -> bool`), `n` kept; `keep` holds a closure: the new initializer's.
const V2: &str = r#"
class Holder {
    var f: fn(i64) -> i64 = null
    var fs = vec<fn(i64) -> i64>()
    var g: fn(i64) -> bool = null
    var n: i64 = 0
}
var a: Holder? = null
var keep: fn(i64) -> i64 = |x: i64| -> i64 { return x + 1000 }
fn shown() -> str {
    let h: Holder = a
    return "${h.f} ${h.fs} ${h.g} ${h.n}"
}
fn refresh() -> i64 {
    let h: Holder = a
    h.f = |x: i64| -> i64 { return x * 2 }
    h.g = |x: i64| -> bool { return x > 0 }
    return (h.f)(21)
}
fn after_reload() -> i64 {
    let h: Holder = a
    return h.fs.len() * 10 + keep(1)
}
"#;

/// What the reload of V1 to V2 did on one backend, and `shown()` and `refresh()` after it.
#[derive(Debug, PartialEq)]
struct Reloaded {
    kept: Vec<String>,
    reset: Vec<String>,
    retyped: Vec<String>,
    globals_kept: Vec<String>,
    after_reload: Option<Value>,
    shown: Value,
    refresh: Value,
}

impl Reloaded {
    fn new(outcome: ReloadOutcome, shown: Value, refresh: Value) -> Reloaded {
        let class = &outcome.classes[0];
        Reloaded {
            kept: class.kept.clone(),
            reset: class.reset.clone(),
            retyped: class.retyped.clone(),
            globals_kept: outcome.globals_kept,
            after_reload: outcome.after_reload,
            shown,
            refresh,
        }
    }
}

fn reload_compiled(object: bool) -> Reloaded {
    let program = compile(source("v1.hot", V1)).unwrap();
    let mut module = if object {
        ScriptModule::new_object(program, ObjectOptions::default()).unwrap()
    } else {
        ScriptModule::new(program, JitOptions::default()).unwrap()
    };
    assert_eq!(module.run_main().unwrap(), Value::I64(101));
    let outcome = module.reload(source("v2.hot", V2)).unwrap();
    let call = |name: &str| {
        let f = module.program().function_named(name).unwrap();
        module.current().call(f, &[]).unwrap()
    };
    let (shown, refresh) = (call("shown"), call("refresh"));
    Reloaded::new(outcome, shown, refresh)
}

fn reload_interp() -> Reloaded {
    let v1 = compile(source("v1.hot", V1)).unwrap();
    let v2 = compile(source("v2.hot", V2)).unwrap();
    let mut interp = Interp::new(&v1, Checks::On).unwrap();
    assert_eq!(interp.call(v1.main.unwrap(), &[]).unwrap(), Value::I64(101));
    let outcome = interp.reload(&v2).unwrap();
    let mut call = |name: &str| {
        let f = v2.function_named(name).unwrap();
        interp.call(f, &[]).unwrap()
    };
    let (shown, refresh) = (call("shown"), call("refresh"));
    Reloaded::new(outcome, shown, refresh)
}

#[test]
fn a_reload_resets_what_holds_closures_on_every_backend() {
    // No code of a replaced version runs again: a field or module variable holding closures
    // takes the new version's initializer, even when its type is the same.
    let want = Reloaded {
        kept: vec!["n".into()],
        reset: vec!["f".into(), "fs".into()],
        retyped: vec!["g".into()],
        globals_kept: vec!["a".into()],
        after_reload: Some(Value::I64(1001)),
        shown: Value::Str("<fn: not initialized> [] <fn: not initialized> 7".into()),
        refresh: Value::I64(42),
    };
    for (backend, run) in [
        ("jit", (|| reload_compiled(false)) as fn() -> Reloaded),
        ("object", || reload_compiled(true)),
        ("interp", reload_interp),
    ] {
        let before = live_blocks();
        assert_eq!(run(), want, "{backend}");
        assert_eq!(live_blocks(), before, "{backend} leaked blocks");
    }
}
