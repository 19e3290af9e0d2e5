//! Issue #4: a `ScriptError` unwinding through generated code releases what the unwound frames
//! own (their managed variables and the temporaries they hold), on `jit`, `jit-opt` and
//! `object`. After an error run the thread's live vec/string/closure blocks are back where they
//! were and the program's classes have no live objects; the outcome is the interpreter's.

mod common;

use std::sync::Arc;

use hotlab::backend::Checks;
use hotlab::backend::jit::{Jit, JitError, JitOptions, OptLevel};
use hotlab::backend::object::{ObjectBackend, ObjectError, ObjectOptions};
use hotlab::lang::Program;
use hotlab::runtime::rt::Runtime;
use hotlab::runtime::values::live_blocks;

/// What a run left: its outcome, leaked blocks, and live objects of class `Node`.
#[derive(Debug, PartialEq)]
struct Left {
    outcome: String,
    blocks: i64,
    objects: usize,
}

#[derive(Clone, Copy, Debug)]
enum Backend {
    Jit,
    JitOpt,
    Object,
}

const COMPILED: [Backend; 3] = [Backend::Jit, Backend::JitOpt, Backend::Object];

/// Run `main` on `backend` with a runtime the test keeps, on a thread with `stack` bytes.
fn run(program: &Program, backend: Backend, stack: usize) -> Left {
    let program = program.clone();
    common::with_stack(stack, move || {
        let before = live_blocks();
        let runtime = Arc::new(match backend {
            Backend::JitOpt => Runtime::fixed(),
            _ => Runtime::new(),
        });
        let options = JitOptions {
            checks: Checks::On,
            verify: true,
            opt: match backend {
                Backend::JitOpt => OptLevel::Speed,
                _ => OptLevel::None,
            },
            code_offset: 0,
        };
        let result = match backend {
            Backend::Jit | Backend::JitOpt => {
                let mut jit = Jit::new(options).expect("the JIT sets up");
                match jit.compile_in(&program, Arc::clone(&runtime)) {
                    Ok((p, _)) => p.run_main(),
                    Err(JitError::Init(e)) => Err(e),
                    Err(e) => panic!("compile: {e}"),
                }
            }
            Backend::Object => {
                let object = ObjectBackend::new(ObjectOptions {
                    jit: options,
                    ..ObjectOptions::default()
                })
                .expect("the object backend sets up");
                match object.compile_in(&program, Arc::clone(&runtime)) {
                    Ok((p, _)) => p.run_main(),
                    Err(ObjectError::Init(e)) => Err(e),
                    Err(e) => panic!("compile: {e}"),
                }
            }
        };
        let outcome = common::outcome(&program, &result);
        Left {
            outcome,
            blocks: live_blocks() - before,
            objects: runtime.class("Node").map_or(0, |c| c.live_count()),
        }
    })
}

/// The interpreter's outcome starts with `expect` (an error), every compiled backend gives the
/// very same outcome, and none leaves anything behind.
fn check(name: &str, text: &str, expect: &str) {
    check_on_stack(name, text, expect, common::TEST_STACK);
}

fn check_on_stack(name: &str, text: &str, expect: &str, stack: usize) {
    let program = common::compile_text(name, text).unwrap_or_else(|d| panic!("{name}: {d:?}"));
    let (interp, interp_leaked) =
        common::outcome_and_leaked_blocks(&program, hotlab::backend::interp::run_main);
    assert!(interp.starts_with(expect), "{name}: interp gave {interp}");
    assert_eq!(interp_leaked, 0, "{name}: interp leaked");
    for backend in COMPILED {
        let left = run(&program, backend, stack);
        assert_eq!(
            left,
            Left {
                outcome: interp.clone(),
                blocks: 0,
                objects: 0
            },
            "{name} on {backend:?}"
        );
    }
}

const NODE: &str = "class Node {\n var items: vec<str> = vec<str>()\n var name: str = \"\"\n \
    var count: i64 = 0\n fn get(self, s: str, k: i64) -> i64 { return s.len() + k + self.count }\n \
    virtual fn run(self, s: str) -> i64 { return s.len() }\n}\n\
    class Sub : Node {\n override fn run(self, s: str) -> i64 { return s.len() / zero() }\n}\n\
    fn zero() -> i64 { return 0 }\n\
    fn mk() -> Node { let n = new Node(); n.name = \"n${1}\"; n.items.push(\"i${2}\"); return n }\n\
    fn nothing() -> Node? { return null }\n\
    fn take(a: str, v: vec<str>, k: i64) -> i64 { return a.len() + v.len() + k }\n\
    fn boom() -> str { let t = \"t${7}\"; return \"b${1 / zero()}\" }\n";

fn with_node(body: &str) -> String {
    format!("{NODE}{body}")
}

#[test]
fn owned_values_in_several_frames_are_released() {
    let text = with_node(
        "fn leaf(d: i64) -> i64 { let s = \"leaf${d}\"; return 10 / d }\n\
         fn mid(d: i64) -> i64 {\n var v = vec<str>()\n v.push(\"a${d}\")\n let n = mk()\n \
         n.items.push(\"m${d}\")\n let k = v\n let f = |x: i64| -> i64 { return x + k.len() }\n \
         return f(leaf(d - 1))\n}\n\
         fn main() -> i64 { let s = \"m${1}\"; let n = new Node(); return mid(1) + s.len() }\n",
    );
    check("frames.hot", &text, "error: division by zero at");
}

#[test]
fn held_string_operands_and_call_arguments_are_released() {
    let text = with_node("fn main() -> i64 {\n let s = \"p${3}\" + boom()\n return s.len()\n}\n");
    check("concat.hot", &text, "error: division by zero at");
    let text = with_node(
        "fn main() -> i64 {\n var v = vec<str>()\n v.push(\"x${1}\")\n \
         return take(\"a${1}\", v, 1 / zero())\n}\n",
    );
    check("args.hot", &text, "error: division by zero at");
    let text = with_node(
        "fn inner(a: str, n: Node) -> i64 { return a.len() / zero() }\n\
         fn main() -> i64 { return inner(\"a${1}\", mk()) }\n",
    );
    check("callee.hot", &text, "error: division by zero at");
}

#[test]
fn method_virtual_and_closure_calls_release_receivers_and_arguments() {
    let text = with_node("fn main() -> i64 { return mk().get(\"a${1}\", 1 / zero()) }\n");
    check("method.hot", &text, "error: division by zero at");
    let text = with_node(
        "fn base() -> Node { let n: Node = new Sub(); return n }\n\
         fn main() -> i64 { return base().run(\"q${1}\") }\n",
    );
    check("virtual.hot", &text, "error: division by zero at");
    let text = with_node(
        "fn make(k: i64) -> fn(i64) -> i64 {\n var v = vec<str>()\n v.push(\"c${k}\")\n \
         return |x: i64| -> i64 { return x / (k - v.len() - 2) }\n}\n\
         fn main() -> i64 { return make(3)(4) }\n",
    );
    check("closure.hot", &text, "error: division by zero at");
}

#[test]
fn handle_checks_and_vec_paths_release_what_they_hold() {
    let text = with_node(
        "fn main() -> i64 {\n let s = \"keep${1}\"\n let n: Node = nothing()\n return n.count\n}\n",
    );
    check("nonnull.hot", &text, "error: null handle at");
    let text = with_node(
        "fn main() -> i64 {\n let s = \"keep${1}\"\n let m = mk()\n return nothing().count + m.count\n}\n",
    );
    check("null_field.hot", &text, "error: null handle at");
    let text = with_node(
        "fn main() -> i64 {\n var v = vec<str>()\n v.push(\"a${1}\")\n v[5] = \"b${2}\"\n \
         return v.len()\n}\n",
    );
    check(
        "store.hot",
        &text,
        "error: index 5 out of range for length 1 at",
    );
    let text = with_node(
        "fn main() -> i64 {\n let s = \"s${1}\"\n mk().items[3] = \"b${2}\" + s\n return 0\n}\n",
    );
    check(
        "field_store.hot",
        &text,
        "error: index 3 out of range for length 1 at",
    );
    let text = with_node(
        "fn main() -> i64 {\n let n = mk()\n n.name = \"v${1}\" + boom()\n return 0\n}\n",
    );
    check("field_assign.hot", &text, "error: division by zero at");
    let text = with_node(
        "fn main() -> i64 {\n var v = vec<str>()\n mk().items.push(\"p${v.len() / zero()}\")\n \
         return 0\n}\n",
    );
    check("push.hot", &text, "error: division by zero at");
    let text = with_node(
        "fn main() -> i64 {\n let m = mk()\n return m.items[m.count + 4].len() + m.count\n}\n",
    );
    check(
        "index.hot",
        &text,
        "error: index 4 out of range for length 1 at",
    );
    let text = with_node(
        "fn main() -> i64 {\n let e = mk() == mk()\n let d = mk() == base()\n return 0\n}\n\
         fn base() -> Node { let t = \"t${1}\"; let x = 1 / zero(); return mk() }\n",
    );
    check("compare.hot", &text, "error: division by zero at");
}

#[test]
fn runaway_recursion_releases_every_frames_string() {
    let text = "fn down(n: i64) -> i64 {\n let s = \"d${n}\"\n return down(n + 1) + s.len()\n}\n\
                fn main() -> i64 { return down(0) }\n";
    check_on_stack(
        "deep.hot",
        text,
        "error: call stack exhausted in `down` (runaway recursion?) at 1:4",
        4 << 20,
    );
}

#[test]
fn loops_over_vecs_release_their_snapshot() {
    let text = "fn main() -> i64 {\n var v = vec<str>()\n v.push(\"a${1}\")\n v.push(\"b${2}\")\n \
                var t = 0\n for x in v {\n  let y = x + \"!\"\n  t += y.len() - 3 + 1 / (1 - t)\n }\n \
                return t\n}\n";
    check("foreach.hot", text, "error: division by zero at");
}

/// Arrays that own cells: an array local, a `for x in a` snapshot and an array argument held
/// through the call that raises, in several frames; a vec of arrays with an element store out
/// of range.
#[test]
fn owned_arrays_and_array_temporaries_are_released() {
    let text = with_node(
        "fn sum(a: [str; 2], k: i64) -> i64 { let c = a; return c[0].len() / k }\n\
         fn mid(d: i64) -> i64 {\n var names = [\"a${d}\", \"b${d}\"]\n var total = 0\n \
         for s in names {\n let nodes: [Node?; 2] = [mk(), null]\n \
         total += sum([s + \"!\", \"c${d}\"], d - 1)\n }\n return total\n}\n\
         fn main() -> i64 { let keep = [[\"x${1}\"], [\"y${2}\"]]; return mid(1) }\n",
    );
    check("arrays.hot", &text, "error: division by zero at");
    let text = with_node(
        "fn main() -> i64 {\n var v = vec<[str; 2]>()\n v.push([\"p${1}\", \"q${2}\"])\n \
         let row = [\"r${3}\", \"s${4}\"]\n v[3] = row\n return v.len()\n}\n",
    );
    check("vec_of_arrays.hot", &text, "error: index 3 out of range");
}
