//! Script objects seen from Rust: `Hook`/`Bench` implemented by script classes and called
//! through the runtime's interfaces, the leak check (no shells left after a run), and stale
//! handles raising at the script's span, on both backends where they apply.

mod common;

use hotlab::backend::interp::Interp;
use hotlab::backend::jit::{Jit, JitOptions, OptLevel};
use hotlab::backend::{Checks, Value};
use hotlab::lang::hir::GlobalId;
use hotlab::runtime::ScriptErrorKind;
use hotlab::runtime::iface::{Bench, Hook};

const HOOKS: &str = "
class Counter : Hook {
    var n: i64 = 0
    fn call(self) -> i64 { self.n += 1; return self.n }
}
class Twice : Counter {
    var extra: i64 = 0
}
class Summer : Bench {
    var bias: i64 = 7
    fn run(self, n: i64) -> i64 {
        var s = 0
        for i in 0..n { s += i }
        return s + self.bias
    }
}
var hook: Counter? = null
var child: Counter? = null
var bench: Summer? = null
fn main() -> i64 {
    hook = new Counter()
    child = new Twice()
    bench = new Summer()
    return 0
}
fn read_hook() -> i64 {
    let h: Counter = hook
    return h.n
}
";

fn jit() -> Jit {
    Jit::new(JitOptions {
        verify: true,
        ..JitOptions::default()
    })
    .unwrap()
}

#[test]
fn jit_classes_implement_hook_and_bench_for_the_host() {
    let program = common::compile_text("hooks.hot", HOOKS).unwrap();
    let mut jit = jit();
    let compiled = jit.compile(&program).unwrap();
    compiled.run_main().unwrap();
    let hook = compiled.global_handle("hook").unwrap();
    assert_eq!(hook.call().into_result().unwrap(), 1);
    assert_eq!(hook.call().into_result().unwrap(), 2);
    // The script sees what the host's calls did.
    let f = compiled.function_named("read_hook").unwrap();
    assert_eq!(compiled.call(f, &[]).unwrap(), Value::I64(2));
    // A derived class inherits the implementation.
    let child = compiled.global_handle("child").unwrap();
    assert_eq!(child.call().into_result().unwrap(), 1);
    let bench = compiled.global_handle("bench").unwrap();
    assert_eq!(bench.run(10).into_result().unwrap(), 45 + 7);
    // A class without the method says so.
    let err = bench.call().into_result().unwrap_err();
    assert!(
        matches!(err.kind, ScriptErrorKind::NotImplemented { .. }),
        "{err}"
    );
}

#[test]
fn stale_handle_raises_at_the_script_span_on_both_backends() {
    let program = common::compile_text("hooks.hot", HOOKS).unwrap();
    let read = program.function_named("read_hook").unwrap();
    let span_text =
        |e: &hotlab::runtime::ScriptError| program.source.text[e.span.range()].to_string();

    let mut jit = jit();
    let compiled = jit.compile(&program).unwrap();
    compiled.run_main().unwrap();
    let hook = compiled.global_handle("hook").unwrap();
    let runtime = &compiled.objects().unwrap().runtime;
    runtime.destroy(&hook).unwrap();
    let err = compiled.call(read, &[]).unwrap_err();
    assert_eq!(err.kind, ScriptErrorKind::StaleHandle);
    assert_eq!(span_text(&err), "h.n");

    let mut interp = Interp::new(&program, Checks::On).unwrap();
    interp.call(program.main.unwrap(), &[]).unwrap();
    let hook = interp.global_handle(GlobalId(0)).unwrap();
    interp.runtime().destroy(&hook).unwrap();
    let err = interp.call(read, &[]).unwrap_err();
    assert_eq!(err.kind, ScriptErrorKind::StaleHandle);
    assert_eq!(span_text(&err), "h.n");
}

const CHURN: &str = "
class Node {
    var value: i64 = 0
    var next: Node? = null
    fn sum(self) -> i64 {
        var s = self.value
        var at: Node? = self.next
        while at != null {
            let n: Node = at
            s += n.value
            at = n.next
        }
        return s
    }
}
fn build(k: i64) -> Node {
    var head = new Node()
    for i in 1..k {
        let n = new Node()
        n.value = i
        n.next = head
        head = n
    }
    return head
}
fn main() -> i64 {
    var total = 0
    for round in 0..20 {
        let list = build(50)
        total += list.sum()
        let other = build(3)
        if other == list { total = -1 }
        build(4)
    }
    return total
}
";

#[test]
fn no_object_outlives_a_run_on_either_backend() {
    let program = common::compile_text("churn.hot", CHURN).unwrap();
    let mut jit = jit();
    let compiled = jit.compile(&program).unwrap();
    assert_eq!(compiled.run_main().unwrap(), Value::I64(20 * 1225));
    let objects = compiled.objects().unwrap();
    let shells: usize = objects.classes.iter().map(|c| c.shell_count()).sum();
    assert_eq!(shells, 0, "the JIT leaked objects");

    let mut interp = Interp::new(&program, Checks::On).unwrap();
    assert_eq!(
        interp.call(program.main.unwrap(), &[]).unwrap(),
        Value::I64(20 * 1225)
    );
    assert_eq!(interp.shell_count(), 0, "the interpreter leaked objects");
}

#[test]
fn module_variables_release_their_objects_with_the_program() {
    let program = common::compile_text("hooks.hot", HOOKS).unwrap();
    let mut jit = jit();
    let compiled = jit.compile(&program).unwrap();
    compiled.run_main().unwrap();
    let class = compiled.objects().unwrap().classes[0].clone();
    assert_eq!(class.shell_count(), 1);
    drop(compiled);
    assert_eq!(class.shell_count(), 0);
}

#[test]
fn interpreted_classes_implement_hook_and_bench_inside_host_calls() {
    let program = common::compile_text("hooks.hot", HOOKS).unwrap();
    let mut interp = Interp::new(&program, Checks::On).unwrap();
    interp.call(program.main.unwrap(), &[]).unwrap();
    let hook = interp.global_handle(GlobalId(0)).unwrap();
    let child = interp.global_handle(GlobalId(1)).unwrap();
    let bench = interp.global_handle(GlobalId(2)).unwrap();
    // Outside `host_calls` the interpreter is not reachable: a clear error, not a crash.
    let err = hook.call().into_result().unwrap_err();
    assert!(matches!(err.kind, ScriptErrorKind::BadCall(_)), "{err}");
    let (a, b, c) = interp.host_calls(|| {
        (
            hook.call().into_result().unwrap() + hook.call().into_result().unwrap(),
            child.call().into_result().unwrap(),
            bench.run(10).into_result().unwrap(),
        )
    });
    assert_eq!((a, b, c), (1 + 2, 1, 45 + 7));
    let read = program.function_named("read_hook").unwrap();
    assert_eq!(interp.call(read, &[]).unwrap(), Value::I64(2));
}

const COUNTED: &str = r#"
class Leaf { var name: str = "leaf" }
class Tree {
    var tags: vec<str> = vec<str>()
    var leaves: vec<Leaf> = vec<Leaf>()
    var grid: vec<vec<i64>> = vec<vec<i64>>()
    var title: str = ""
    fn grow(self, i: i64) {
        let l = new Leaf()
        l.name += "-${i}"
        self.leaves.push(l)
        self.tags.push(l.name)
        self.grid.push(vec<i64>())
        self.grid[self.grid.len() - 1].push(i)
    }
}
var keep: Tree? = null
fn main() -> i64 {
    var total = 0
    for round in 0..10 {
        let t = new Tree()
        for i in 0..5 { t.grow(i) }
        let copy = t.tags
        t.tags[0] = "changed"
        t.title = copy[0] + t.tags[0]
        t.leaves.pop()
        total += t.title.len() + t.leaves.len() + t.grid[4][0]
        keep = t
    }
    keep = null
    return total
}
"#;

/// Objects with vec and string fields (holding handles, nested vecs, strings) are freed with
/// their fields' blocks on both backends: no shell and no block outlives the run.
#[test]
fn counted_fields_are_freed_with_their_objects() {
    use hotlab::runtime::values::live_blocks;
    let program = common::compile_text("counted.hot", COUNTED).unwrap();
    // title: "leaf-0" + "changed" = 13; 4 leaves; grid[4][0] = 4.
    let want = Value::I64(10 * (13 + 4 + 4));
    let before = live_blocks();
    {
        let mut jit = jit();
        let compiled = jit.compile(&program).unwrap();
        assert_eq!(compiled.run_main().unwrap(), want);
        let objects = compiled.objects().unwrap();
        let shells: usize = objects.classes.iter().map(|c| c.shell_count()).sum();
        assert_eq!(shells, 0, "the JIT leaked objects");
    }
    assert_eq!(live_blocks(), before, "the JIT leaked vec or string blocks");
    {
        let mut interp = Interp::new(&program, Checks::On).unwrap();
        assert_eq!(interp.call(program.main.unwrap(), &[]).unwrap(), want);
        assert_eq!(interp.shell_count(), 0, "the interpreter leaked objects");
    }
    assert_eq!(
        live_blocks(),
        before,
        "the interpreter leaked vec or string blocks"
    );
}

/// Stores of a handle read without running code (`p = p.next`, `o.f = o.f.next`, `o.f = x`)
/// change both counts in one window (`swap_handle_counts`): here the old object is often the
/// last holder of the new one, so its free would release the new object too if its count had
/// not been taken first. Same results everywhere, and no object outlives the run.
const SWAPS: &str = "class N {
    var next: N? = null
    var v: i64 = 0
}
class Box {
    var f: N? = null
}
fn chain(k: i64) -> N {
    var head = new N()
    for i in 1..k {
        let n = new N()
        n.v = i
        n.next = head
        head = n
    }
    return head
}
fn main() -> i64 {
    var total = 0
    for round in 0..10 {
        // The only holder of each node is the one before it: each step frees the old one.
        var p: N? = chain(6)
        while p != null {
            total += p.v
            p = p.next
        }
        let b = new Box()
        b.f = chain(4)
        while b.f != null {
            total += b.f.v * 10
            b.f = b.f.next
        }
        // A local into a field and back: the same object on both sides.
        var q: N? = chain(2)
        b.f = q
        b.f = b.f
        q = b.f
        q = q
        total += q.v * 100
    }
    return total
}
";

#[test]
fn handle_stores_that_swap_counts_free_what_they_drop_and_nothing_else() {
    common::same_everywhere(SWAPS, "1750");
    let program = common::compile_text("swaps.hot", SWAPS).unwrap();
    for opt in [OptLevel::None, OptLevel::Speed] {
        let mut jit = Jit::new(JitOptions {
            verify: true,
            opt,
            ..JitOptions::default()
        })
        .unwrap();
        let compiled = jit.compile(&program).unwrap();
        assert_eq!(compiled.run_main().unwrap(), Value::I64(1750), "{opt:?}");
        let objects = compiled.objects().unwrap();
        let shells: usize = objects.classes.iter().map(|c| c.shell_count()).sum();
        assert_eq!(shells, 0, "{opt:?}: the JIT leaked objects");
    }
}
