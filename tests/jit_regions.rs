//! Handle checks once per region (`backend/jit/lower_region.rs`) on `jit`: a reload between two
//! calls is seen by the second (its loops and `self` use the migrated state at the new
//! offsets), and an object detached between two calls fails the second at the place of its
//! first use, inside a loop too.

use std::sync::Arc;

use hotlab::backend::Value;
use hotlab::backend::jit::{JitOptions, ScriptModule};
use hotlab::lang::{SourceFile, compile};
use hotlab::runtime::ScriptErrorKind;
use hotlab::runtime::iface::Hook;

const V1: &str = "\
class Acc : Hook {
    var x: i64 = 0
    fn call(self) -> i64 {
        for i in 0..10 {
            self.x += 1
        }
        return self.x
    }
}
var a: Acc? = null
fn sum(n: i64) -> i64 {
    let c = a
    var s = 0
    for i in 0..n {
        c.x += 1
        s += c.x
    }
    return s
}
fn main() -> i64 {
    a = new Acc()
    return a.call()
}
";

/// V1 with a field before `x` (so `x` moves) and other code.
const V2: &str = "\
class Acc : Hook {
    var pad: i64 = 7
    var x: i64 = 0
    fn call(self) -> i64 {
        for i in 0..10 {
            self.x += 2
        }
        return self.x + self.pad
    }
}
var a: Acc? = null
fn sum(n: i64) -> i64 {
    let c = a
    var s = 0
    for i in 0..n {
        c.x += 10
        s += c.x + c.pad
    }
    return s
}
fn main() -> i64 {
    a = new Acc()
    return a.call()
}
";

fn module(text: &str) -> ScriptModule {
    let program = compile(Arc::new(SourceFile::new("v1.hot", text))).unwrap();
    ScriptModule::new(program, JitOptions::default()).unwrap()
}

fn call(
    module: &ScriptModule,
    name: &str,
    args: &[Value],
) -> Result<Value, hotlab::runtime::ScriptError> {
    let p = module.current();
    p.call(p.function_named(name).unwrap(), args)
}

#[test]
fn a_reload_between_two_calls_is_seen_by_the_second() {
    let mut m = module(V1);
    assert_eq!(m.run_main().unwrap(), Value::I64(10));
    let held = m.current().global_handle("a").unwrap();
    assert_eq!(held.call().into_result().unwrap(), 20);
    // x = 21, 22, 23.
    assert_eq!(call(&m, "sum", &[Value::I64(3)]).unwrap(), Value::I64(66));

    m.reload(Arc::new(SourceFile::new("v2.hot", V2))).unwrap();
    // `x` kept (23) at its new offset, `pad` initialized: 23 + 20 + 7.
    assert_eq!(held.call().into_result().unwrap(), 50);
    // x = 53, 63: (53 + 7) + (63 + 7).
    assert_eq!(call(&m, "sum", &[Value::I64(2)]).unwrap(), Value::I64(130));
    assert_eq!(held.call().into_result().unwrap(), 90);
}

#[test]
fn an_object_detached_between_calls_fails_at_its_first_use() {
    let m = module(V1);
    assert_eq!(m.run_main().unwrap(), Value::I64(10));
    let held = m.current().global_handle("a").unwrap();
    assert_eq!(call(&m, "sum", &[Value::I64(2)]).unwrap(), Value::I64(23));
    m.runtime().detach(&held).unwrap();

    // The host call fails at the border ...
    assert_eq!(
        held.call().into_result().unwrap_err().kind,
        ScriptErrorKind::ObjectDetached
    );
    // ... a loop's handle, tested before the loop, fails at its first use in the loop ...
    let e = call(&m, "sum", &[Value::I64(2)]).unwrap_err();
    assert_eq!(e.kind, ScriptErrorKind::ObjectDetached);
    let at = V1.find("c.x += 1").unwrap();
    assert_eq!(e.span.start as usize, at);
    // ... and a loop that does not run never touches it.
    assert_eq!(call(&m, "sum", &[Value::I64(0)]).unwrap(), Value::I64(0));
}
