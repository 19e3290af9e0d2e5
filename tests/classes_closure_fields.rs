//! Fields holding closures (`fn(..)`, `vec<fn(..)>`) on every backend: calling a closure read
//! from a field, replacing it, interpolating it, a field not initialized (`= null`), the blocks
//! freed with the object, and reload migration of such fields on the JIT and the interpreter.

mod common;

use common::{same_everywhere, source};
use hotlab::backend::interp::Interp;
use hotlab::backend::jit::{JitOptions, ReloadFailure, ScriptModule};
use hotlab::backend::{Checks, Value};
use hotlab::lang::compile;
use hotlab::runtime::ScriptErrorKind;
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
}
var a: Holder? = null
fn main() -> i64 {
    let h = new Holder()
    let k = 100
    h.f = |x: i64| -> i64 { return x + k }
    h.fs.push(h.f)
    h.g = |x: i64| -> i64 { return x }
    a = h
    return (h.f)(1)
}
"#;

/// Keeps `f` and `fs` (same full type), retypes `g` (`fn(i64) -> bool`).
const V2: &str = r#"
class Holder {
    var f: fn(i64) -> i64 = null
    var fs = vec<fn(i64) -> i64>()
    var g: fn(i64) -> bool = null
}
var a: Holder? = null
fn shown() -> str {
    let h: Holder = a
    return "${h.f} ${h.fs} ${h.g}"
}
fn refresh() -> i64 {
    let h: Holder = a
    h.f = |x: i64| -> i64 { return x * 2 }
    h.g = |x: i64| -> bool { return x > 0 }
    return (h.f)(21)
}
fn after_reload() -> i64 {
    let h: Holder = a
    return (h.f)(1) + (h.fs[0])(2)
}
"#;

const SHOWN: &str = "<fn(i64) -> i64> [<fn(i64) -> i64>] <fn: not initialized>";

#[test]
fn the_jit_keeps_closure_fields_by_full_type_over_a_reload() {
    let before = live_blocks();
    {
        let program = compile(source("v1.hot", V1)).unwrap();
        let mut module = ScriptModule::new(program, JitOptions::default()).unwrap();
        assert_eq!(module.run_main().unwrap(), Value::I64(101));
        let outcome = module.reload(source("v2.hot", V2)).unwrap();
        let report = &outcome.classes[0];
        assert_eq!(report.kept, ["f", "fs"]);
        assert_eq!(report.retyped, ["g"]);
        // The kept closures run the first version's code.
        assert_eq!(outcome.after_reload, Some(Value::I64(101 + 102)));
        let call = |name: &str| {
            let f = module.program().function_named(name).unwrap();
            module.current().call(f, &[]).unwrap()
        };
        assert_eq!(call("shown"), Value::Str(SHOWN.into()));
        assert_eq!(call("refresh"), Value::I64(42));
    }
    assert_eq!(live_blocks(), before, "closure blocks leaked");
}

#[test]
fn the_interpreter_keeps_closure_fields_by_full_type_over_a_reload() {
    let before = live_blocks();
    let v1 = compile(source("v1.hot", V1)).unwrap();
    let v2 = compile(source("v2.hot", V2)).unwrap();
    {
        let mut interp = Interp::new(&v1, Checks::On).unwrap();
        assert_eq!(interp.call(v1.main.unwrap(), &[]).unwrap(), Value::I64(101));
        // The classes reload (reported as on the JIT); `after_reload` calls a closure of the
        // first version, which the interpreter cannot run: a clear error, not a wrong call.
        match interp.reload(&v2) {
            Err(ReloadFailure::AfterReload(e)) => match &e.kind {
                ScriptErrorKind::BadCall(why) => {
                    assert!(why.contains("earlier version"), "{why}");
                    assert!(why.contains("<closure 1 in main>"), "{why}");
                }
                other => panic!("expected a BadCall, got {other:?}"),
            },
            other => panic!("expected after_reload to fail, got {other:?}"),
        }
        let shown = v2.function_named("shown").unwrap();
        assert_eq!(interp.call(shown, &[]).unwrap(), Value::Str(SHOWN.into()));
        let refresh = v2.function_named("refresh").unwrap();
        assert_eq!(interp.call(refresh, &[]).unwrap(), Value::I64(42));
    }
    assert_eq!(live_blocks(), before, "closure blocks leaked");
}

#[test]
fn the_interpreter_reports_closure_fields_kept_and_retyped() {
    // Without an `after_reload` that calls an old closure, the reload succeeds with the
    // same report as the JIT's.
    let v1 = compile(source("v1.hot", V1)).unwrap();
    let v2_text = V2.replace("fn after_reload()", "fn unused()");
    let v2 = compile(source("v2.hot", &v2_text)).unwrap();
    let mut interp = Interp::new(&v1, Checks::On).unwrap();
    interp.call(v1.main.unwrap(), &[]).unwrap();
    let outcome = interp.reload(&v2).unwrap();
    assert_eq!(outcome.classes[0].kept, ["f", "fs"]);
    assert_eq!(outcome.classes[0].retyped, ["g"]);
}
