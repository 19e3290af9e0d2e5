//! Hot reload of classes with `vec<T>` and `str` fields: a field kept by name and type keeps its
//! value (no double release, no leak), a removed counted field is released, a field retyped
//! between counted types (`vec<i64>` → `str`, `vec<i64>` → `vec<f64>`) is re-initialized and
//! reported, and a method whose parameter changes between cell types is refused.

mod common;

use common::source;
use hotlab::backend::Value;
use hotlab::backend::jit::{JitOptions, ReloadFailure, ScriptModule};
use hotlab::lang::compile;
use hotlab::runtime::values::live_blocks;

const V1: &str = r#"
class Bag {
    var items: vec<i64> = vec<i64>()
    var name: str = "one"
    var gone: vec<str> = vec<str>()
    var tags: vec<i64> = vec<i64>()
    var ratios: vec<i64> = vec<i64>()
    fn size(self, v: vec<i64>) -> i64 { return v.len() + self.items.len() }
}
var a: Bag? = null
fn main() -> i64 {
    let b = new Bag()
    b.items.push(1)
    b.items.push(2)
    b.name += "-x"
    b.gone.push("bye")
    b.tags.push(9)
    b.ratios.push(4)
    a = b
    return b.size(b.items)
}
"#;

/// Keeps `items` and `name`, removes `gone`, retypes `tags` to `str` and `ratios` to
/// `vec<f64>`, adds `extra`.
const V2: &str = r#"
class Bag {
    var items: vec<i64> = vec<i64>()
    var name: str = "two"
    var tags: str = "fresh"
    var ratios: vec<f64> = vec<f64>()
    var extra: str = "new"
    fn size(self, v: vec<i64>) -> i64 { return v.len() * 10 + self.items.len() }
}
var a: Bag? = null
fn after_reload() -> i64 {
    let b: Bag = a
    assert(b.name == "one-x")
    assert(b.tags == "fresh" && b.extra == "new" && b.ratios.len() == 0)
    b.items.push(3)
    return b.size(b.items) * 1000 + b.items[0] * 100 + b.items[2]
}
"#;

/// `size` takes a `str` where it took a `vec<i64>`: one machine signature, another method.
const RESIGNED: &str = r#"
class Bag {
    var items: vec<i64> = vec<i64>()
    var name: str = "one"
    fn size(self, v: str) -> i64 { return v.len() }
}
var a: Bag? = null
"#;

#[test]
fn counted_fields_migrate_without_leaks() {
    let before = live_blocks();
    {
        let program = compile(source("v1.hot", V1)).unwrap();
        let mut module = ScriptModule::new(program, JitOptions::default()).unwrap();
        assert_eq!(module.run_main().unwrap(), Value::I64(4));

        let refused = module.reload(source("resigned.hot", RESIGNED));
        assert!(
            matches!(refused, Err(ReloadFailure::Refused(_))),
            "a `vec<i64>` → `str` parameter must be refused: {refused:?}"
        );

        let outcome = module.reload(source("v2.hot", V2)).unwrap();
        let report = &outcome.classes[0];
        assert_eq!(report.kept, ["items", "name"]);
        assert_eq!(report.retyped, ["tags", "ratios"]);
        assert_eq!(report.added, ["extra"]);
        assert_eq!(report.removed, ["gone"]);
        // size: 3 * 10 + 3; items[0] = 1, items[2] = 3.
        assert_eq!(outcome.after_reload, Some(Value::I64(33 * 1000 + 100 + 3)));
    }
    assert_eq!(live_blocks(), before, "vec or string blocks leaked");
}
