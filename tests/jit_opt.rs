//! The `jit-opt` backend: objects in a fixed runtime (fields inline in the shell, inline handle
//! checks, direct calls), module variables cached in call-free loops, reloads refused; and the
//! bounds-check elision for masked indexes, on every Cranelift backend.

mod common;

use std::sync::Arc;

use hotlab::backend::Value;
use hotlab::backend::jit::{Jit, JitOptions, JitProgram, OptLevel, ReloadFailure, ScriptModule};
use hotlab::lang::SourceFile;
use hotlab::lang::hir::Program;
use hotlab::runtime::ScriptErrorKind;
use hotlab::runtime::iface::Hook;
use hotlab::runtime::object::Object;
use hotlab::runtime::reload::ReloadError;

fn opt() -> JitOptions {
    JitOptions {
        verify: true,
        opt: OptLevel::Speed,
        ..JitOptions::default()
    }
}

fn compile(name: &str, text: &str) -> (Program, JitProgram) {
    let program = common::compile_text(name, text).unwrap();
    let compiled = Jit::new(opt()).unwrap().compile(&program).unwrap();
    (program, compiled)
}

fn call(p: &JitProgram, name: &str) -> Result<Value, hotlab::runtime::ScriptError> {
    let f = p.function_named(name).unwrap();
    p.call(f, &[])
}

const NODES: &str = "
class Base : Hook {
    var n: i64 = 0
    fn call(self) -> i64 {
        self.n += 1
        return self.n
    }
    virtual fn weight(self) -> i64 { return 1 }
}
class Node : Base {
    var value: i64 = 7
    var next: Node? = null
    override fn weight(self) -> i64 { return self.value }
}
var head: Node? = null
var target: Base? = null
fn main() -> i64 {
    var s = 0
    for i in 0..5 {
        let n = new Node()
        n.value = i
        n.next = head
        head = n
    }
    target = new Base()
    var at: Node? = head
    while at != null {
        let n: Node = at
        let b: Base = n
        s += b.weight() * 10 + n.value
        at = n.next
    }
    return s
}
fn first_value() -> i64 {
    let h: Node = head
    return h.value
}
fn drop_all() -> i64 {
    head = null
    target = null
    return 0
}
";

#[test]
fn objects_are_one_allocation_with_fields_after_the_shell() {
    let (_, p) = compile("nodes.hot", NODES);
    assert_eq!(p.run_main().unwrap(), Value::I64(110));
    let objects = p.objects().unwrap();
    assert!(objects.runtime.is_fixed());
    assert!(objects.classes.iter().all(|c| c.is_inline()));
    let head = p.global_handle("head").unwrap();
    let shell: &Object = head.get().unwrap();
    // The cells follow the shell: `value` (cell 1: `n` is the parent's cell 0) reads as the
    // script wrote it, at the inline offset and through the runtime's host access alike.
    let base = shell as *const Object as *const u8;
    // SAFETY: an inline object's cells start `INLINE_CELLS` bytes after its shell, and `head`
    // keeps it alive.
    let value = unsafe { *(base.add(Object::INLINE_CELLS + 8) as *const i64) };
    assert_eq!(value, 4);
    assert_eq!(shell.read_field("value").unwrap(), 4);
    shell.write_field("value", 40).unwrap();
    assert_eq!(call(&p, "first_value").unwrap(), Value::I64(40));
    // Host calls reach the method (inherited by `Node` too).
    let target = p.global_handle("target").unwrap();
    assert_eq!(target.call().into_result().unwrap(), 1);
    assert_eq!(target.call().into_result().unwrap(), 2);
    assert_eq!(head.call().into_result().unwrap(), 1);
    // Every object is freed with its last handle (the chain through `next` included).
    drop((head, target));
    call(&p, "drop_all").unwrap();
    assert_eq!(hotlab::backend::objects::shell_count(&objects.classes), 0);
}

const STALE: &str = "
class Acc {
    var x: i64 = 0
    fn add(self, v: i64) { self.x += v }
}
var a: Acc? = null
fn main() -> i64 {
    a = new Acc()
    return 0
}
fn touch() -> i64 {
    let c: Acc = a
    c.x += 1
    return c.x
}
fn call_it() -> i64 {
    let c: Acc = a
    c.add(2)
    return 0
}
fn null_field() -> i64 {
    var c: Acc? = null
    let d: Acc = c
    return d.x
}
";

#[test]
fn stale_detached_and_null_handles_raise_at_their_place() {
    let (program, p) = compile("stale.hot", STALE);
    p.run_main().unwrap();
    assert_eq!(call(&p, "touch").unwrap(), Value::I64(1));
    let runtime = Arc::clone(&p.objects().unwrap().runtime);
    let handle = p.global_handle("a").unwrap();

    runtime.detach(&handle).unwrap();
    let e = call(&p, "touch").unwrap_err();
    assert_eq!(e.kind, ScriptErrorKind::ObjectDetached);
    assert_eq!(program.source.line_col(e.span.start).to_string(), "13:5");
    let e = call(&p, "call_it").unwrap_err();
    assert_eq!(e.kind, ScriptErrorKind::ObjectDetached);
    assert_eq!(program.source.line_col(e.span.start).to_string(), "18:5");

    runtime.destroy(&handle).unwrap();
    let e = call(&p, "touch").unwrap_err();
    assert_eq!(e.kind, ScriptErrorKind::StaleHandle);
    assert_eq!(program.source.line_col(e.span.start).to_string(), "13:5");

    let e = call(&p, "null_field").unwrap_err();
    assert_eq!(e.kind, ScriptErrorKind::NullHandle);
    assert_eq!(program.source.line_col(e.span.start).to_string(), "23:18");
}

#[test]
fn a_jit_opt_module_refuses_reloads_and_changes_nothing() {
    let v1 = "class C { var x: i64 = 5 }\nvar c: C? = null\nfn main() -> i64 { c = new C()\n return 1 }\n";
    let v2 = "class C { var x: i64 = 5\n var y: i64 = 6 }\nvar c: C? = null\nfn main() -> i64 { return 2 }\n";
    let program = common::compile_text("v1.hot", v1).unwrap();
    let mut module = ScriptModule::new(program, opt()).unwrap();
    assert_eq!(module.run_main().unwrap(), Value::I64(1));
    let err = module
        .reload(Arc::new(SourceFile::new("v2.hot", v2)))
        .unwrap_err();
    let ReloadFailure::Refused(refusal) = &err else {
        panic!("expected a refusal, got {err}");
    };
    let msg = refusal.to_string();
    assert!(
        msg.contains("jit-opt") && msg.contains("cannot be reloaded"),
        "{msg}"
    );
    assert_eq!(module.run_main().unwrap(), Value::I64(1));

    // The runtime refuses too, whoever asks.
    let runtime = module.runtime();
    let class = runtime.class("C").unwrap();
    let def = class_def_of(v2);
    let e = runtime.reload(&class, def).unwrap_err();
    assert_eq!(e, ReloadError::Fixed("C".into()));
    assert!(e.to_string().contains("cannot be reloaded"), "{e}");
    assert_eq!(class.version().fields.len(), 1);

    // The same module on `jit` reloads.
    let program = common::compile_text("v1.hot", v1).unwrap();
    let mut module = ScriptModule::new(program, JitOptions::default()).unwrap();
    module.run_main().unwrap();
    module
        .reload(Arc::new(SourceFile::new("v2.hot", v2)))
        .unwrap();
}

fn class_def_of(text: &str) -> hotlab::runtime::class::ClassDef {
    let program = common::compile_text("def.hot", text).unwrap();
    hotlab::backend::objects::class_def(
        &program,
        hotlab::lang::hir::ClassId(0),
        None,
        std::ptr::null_mut(),
        |_| std::ptr::null::<std::ffi::c_void>(),
    )
}

#[test]
fn cached_module_variables_are_current_when_a_loop_raises() {
    // The loop calls nothing, so `total` and `steps` live in registers inside it; the division
    // by zero at i = 7 unwinds out of the loop, and the cells must hold the values of i = 6.
    let text = "
var total: i64 = 0
var steps: i64 = 0
fn main() -> i64 {
    for i in 0..10 {
        steps = steps + 1
        total = total + 100 / (7 - i)
    }
    return total
}
fn read() -> i64 { return total * 1000 + steps }
";
    for (backend, opt) in [("jit", OptLevel::None), ("jit-opt", OptLevel::Speed)] {
        let program = common::compile_text("cache.hot", text).unwrap();
        let p = Jit::new(JitOptions {
            verify: true,
            opt,
            ..JitOptions::default()
        })
        .unwrap()
        .compile(&program)
        .unwrap();
        let e = p.run_main().unwrap_err();
        assert_eq!(e.kind, ScriptErrorKind::DivisionByZero, "{backend}");
        // 100/7 + 100/6 + 100/5 + 100/4 + 100/3 + 100/2 + 100/1 = 14+16+20+25+33+50+100.
        assert_eq!(
            call(&p, "read").unwrap(),
            Value::I64(258 * 1000 + 8),
            "{backend}"
        );
    }
}

#[test]
fn masked_indexes_lose_their_check_and_others_keep_it() {
    let ok = "fn main() -> i64 {
    var a = [0; 256]
    var s = 0
    for i in 0..1000 {
        a[i & 255] += i
        s += a[(i * 7) & 255]
        s += a[255 & i]
    }
    return s
}";
    let program = common::compile_text("masked.hot", ok).unwrap();
    let expect = hotlab::backend::interp::run_main(&program, hotlab::backend::Checks::On).unwrap();
    for (backend, run) in common::backends() {
        let got = run(&program, hotlab::backend::Checks::On).unwrap();
        assert_eq!(got, expect, "{backend}");
    }
    // The masked accesses have no check: the only call left in `main` is the stack check's.
    let compiled = Jit::new(opt()).unwrap().compile(&program).unwrap();
    let main = &compiled.functions()[program.main.unwrap().index()];
    assert_eq!(main.clif.matches("call fn").count(), 1, "{}", main.clif);

    // Masks that do not prove the range keep their checks: with i = 511 each must fault.
    for index in [
        "i & 256",
        "(i & 255) + 1",
        "i & -1",
        "i | 255",
        "i % 256 + 256",
    ] {
        let text = format!(
            "fn main() -> i64 {{\n    let i = 511\n    var a = [0; 256]\n    a[{index}] = 1\n    \
             return 0\n}}"
        );
        let program = common::compile_text("unmasked.hot", &text).unwrap();
        for (backend, run) in common::backends() {
            let e = run(&program, hotlab::backend::Checks::On)
                .expect_err(&format!("{backend}: `a[{index}]` with i = 511 must fault"));
            assert!(
                matches!(e.kind, ScriptErrorKind::IndexOutOfRange { .. }),
                "{backend}: {:?}",
                e.kind
            );
            assert_eq!(
                program.source.line_col(e.span.start).to_string(),
                "4:7",
                "{backend}: {index}"
            );
        }
    }
}

/// On jit-opt the last release of a handle frees the object without a second count change
/// (`hot_object_free_last`), and `new` skips `Runtime::new_object`'s unload test
/// (`hot_object_new_fixed`): every object is freed with its last reference — one whose fields
/// hold the last references of others (a chain freed from its head), one with string and vec
/// fields, one the host detached — and the class's counts of shells and detached ones end at
/// zero.
#[test]
fn the_last_release_frees_every_object_once() {
    use hotlab::runtime::values::live_blocks;
    let text = r#"
class Leaf {
    var s: str = ""
    var v: vec<i64> = vec<i64>()
    var next: Leaf? = null
}
var kept: Leaf? = null
fn chain(k: i64) -> Leaf {
    var head = new Leaf()
    for i in 0..k {
        let n = new Leaf()
        n.s = "leaf-${i}"
        n.v.push(i)
        n.next = head
        head = n
    }
    return head
}
fn churn() -> i64 {
    var total = 0
    for round in 0..50 {
        let c = chain(round % 7)
        total += c.s.len() + c.v.len()
        let o = new Leaf()
        o.next = c
    }
    kept = new Leaf()
    return total
}
fn drop_kept() -> i64 {
    kept = null
    return 0
}
"#;
    let before = live_blocks();
    let (_, p) = compile("free_last.hot", text);
    // 42 rounds of 50 make a chain of at least one leaf: "leaf-N" and one element, 7.
    assert_eq!(call(&p, "churn").unwrap(), Value::I64(294));
    let objects = p.objects().unwrap();
    let class = objects.runtime.class("Leaf").unwrap();
    assert_eq!(class.shell_count(), 1, "only `kept` is left");
    // The host detaches `kept` and lets its handle go: the script's release is the last.
    let held = p.global_handle("kept").unwrap();
    objects.runtime.detach(&held).unwrap();
    drop(held);
    assert_eq!((class.shell_count(), class.live_count()), (1, 0));
    assert_eq!(call(&p, "drop_kept").unwrap(), Value::I64(0));
    assert_eq!((class.shell_count(), class.live_count()), (0, 0));
    drop(p);
    assert_eq!(
        live_blocks(),
        before,
        "vec or string blocks outlived their objects"
    );
}
