//! Closures beyond the golden programs: capture semantics on every backend, no leaks (every
//! closure block and what it captured freed when its last owner goes), the checker's
//! diagnostics for closures, and closures at the host border.

mod common;

use common::same_everywhere;
use hotlab::backend::{Checks, Value};
use hotlab::lang::{DiagKind, Span};
use hotlab::runtime::values::live_blocks;

#[test]
fn later_assignments_to_a_captured_variable_are_not_seen() {
    same_everywhere(
        "fn main() -> i64 {\n var k = 1\n let f = || -> i64 { return k }\n k = 2\n \
         let g = || -> i64 { return k }\n k = 3\n return f() * 100 + g() * 10 + k\n}\n",
        "123",
    );
}

#[test]
fn a_captured_vec_is_a_copy_on_write_copy() {
    same_everywhere(
        "fn main() -> str {\n var v = vec<str>()\n v.push(\"a\")\n \
         let show = || -> str { return \"${v}\" }\n v[0] = \"b\"\n v.push(\"c\")\n \
         var w = v\n w.pop()\n return show() + \"${v}${w}\"\n}\n",
        r#"["a"]["b", "c"]["b"]"#,
    );
}

#[test]
fn closures_are_returned_stored_passed_and_nested() {
    same_everywhere(
        "fn compose(f: fn(i64) -> i64, g: fn(i64) -> i64) -> fn(i64) -> i64 {\n \
         return |x: i64| -> i64 { return g(f(x)) }\n}\n\
         fn scale(k: i64) -> fn(i64) -> i64 { return |x: i64| -> i64 { return x * k } }\n\
         fn main() -> i64 {\n var fs = vec<fn(i64) -> i64>()\n fs.push(scale(2))\n \
         fs.push(compose(scale(3), |x: i64| -> i64 { return x + 1 }))\n \
         let a = 5\n let deep = || -> fn() -> i64 { return || -> i64 { return a } }\n \
         return fs[0](10) * 1000 + fs[1](10) * 10 + deep()()\n}\n",
        "20315",
    );
}

#[test]
fn closures_capture_handles_strings_and_arrays() {
    same_everywhere(
        "class Box { var n: i64 = 0\n fn adder(self) -> fn(i64) { return |d: i64| { self.n += d } } }\n\
         fn main() -> str {\n let b = new Box()\n let add = b.adder()\n add(2)\n add(3)\n \
         var arr = [1, 2, 3]\n let s = \"x\"\n let f = || -> str { return s + \"${arr}\" }\n \
         arr[0] = 9\n return \"${b.n} \" + f() + \" ${arr}\"\n}\n",
        "5 x[1, 2, 3] [9, 2, 3]",
    );
}

/// A closure held in a module variable is freed with the program, and an object only a closure
/// captured is freed with the closure.
#[test]
fn module_closures_and_captured_objects_are_freed() {
    same_everywhere(
        "class Node { var v: i64 = 7 }\n\
         var keep: fn() -> i64 = || -> i64 { return 0 }\n\
         fn main() -> i64 {\n let n = new Node()\n keep = || -> i64 { return n.v }\n \
         var tmp = vec<fn() -> i64>()\n tmp.push(keep)\n tmp.push(keep)\n \
         return keep() + tmp.len()\n}\n",
        "9",
    );
}

#[test]
fn runaway_recursion_through_closures_is_an_error() {
    same_everywhere(
        "var f: fn(i64) -> i64 = |x: i64| -> i64 { return x }\n\
         fn main() -> i64 {\n f = |x: i64| -> i64 { return f(x + 1) + 1 }\n return f(0)\n}\n",
        "error: call stack exhausted in `<closure 2 in main>` (runaway recursion?) at 3:6",
    );
}

fn first_diag(text: &str) -> (DiagKind, Span, String) {
    let (text, span) = {
        let start = text.find('«').expect("no « marker");
        let t = text.replacen('«', "", 1);
        let end = t.find('»').expect("no » marker");
        (t.replacen('»', "", 1), Span::new(start, end))
    };
    match common::compile_text("case.hot", &text) {
        Ok(_) => panic!("compiled without error:\n{text}"),
        Err(d) => {
            let first = &d.0[0];
            assert_eq!(first.span, span, "span of {first} in:\n{text}");
            (first.kind, first.span, first.message.clone())
        }
    }
}

#[test]
fn closure_diagnostics() {
    let (kind, _, msg) = first_diag(
        "fn main() -> i64 {\n var n = 0\n let inc = || { «n» += 1 }\n inc()\n return n\n}\n",
    );
    assert_eq!(kind, DiagKind::AssignToImmutable);
    assert!(msg.contains("captured by this closure"), "{msg}");

    let (kind, _, msg) = first_diag(
        "fn main() -> i64 {\n let f = |x: i64| -> i64 { return x }\n return «f(1, 2)»\n}\n",
    );
    assert_eq!(kind, DiagKind::Arity);
    assert!(msg.contains("takes 1 argument but 2 were given"), "{msg}");

    let (kind, _, msg) = first_diag(
        "fn main() -> i64 {\n let f = |x: i64| -> i64 { return x }\n return f(«true»)\n}\n",
    );
    assert_eq!(kind, DiagKind::TypeMismatch);
    assert!(msg.contains("expected `i64`, found `bool`"), "{msg}");

    let (kind, _, msg) = first_diag("fn main() -> i64 {\n let x = 3\n return «x»(1)\n}\n");
    assert_eq!(kind, DiagKind::TypeMismatch);
    assert!(msg.contains("variable, not a function"), "{msg}");

    let (kind, _, msg) = first_diag("fn main() -> i64 {\n return («1 + 2»)(1)\n}\n");
    assert_eq!(kind, DiagKind::TypeMismatch);
    assert!(msg.contains("cannot be called"), "{msg}");

    let (kind, _, _) =
        first_diag("fn main() -> i64 {\n let f = || -> i64 { return «nope» }\n return f()\n}\n");
    assert_eq!(kind, DiagKind::UnknownName);

    let (kind, _, msg) =
        first_diag("fn main() -> bool {\n let f = || {}\n let g = f\n return f «==» g\n}\n");
    assert_eq!(kind, DiagKind::TypeMismatch);
    assert!(msg.contains("cannot be compared"), "{msg}");

    let (kind, _, _) = first_diag(
        "fn main() -> i64 {\n let f = |x: i64| -> i64 { if x > 0 { return 1 } «}»\n return 0\n}\n",
    );
    assert_eq!(kind, DiagKind::MissingReturn);

    let (kind, _, _) = first_diag(
        "fn main() -> i64 {\n let f: fn(i64) -> bool = «|x: i64| -> i64 { return x }»\n return 0\n}\n",
    );
    assert_eq!(kind, DiagKind::TypeMismatch);

    // A local declared after the lambda is not in scope in its body.
    let (kind, _, _) = first_diag(
        "fn main() -> i64 {\n let f = || -> i64 { return «later» }\n let later = 1\n return f()\n}\n",
    );
    assert_eq!(kind, DiagKind::UnknownName);
}

/// The host sees a closure as its shown type, and cannot pass one in or call a lambda's body.
#[test]
fn closures_at_the_host_border() {
    let text = "var f: fn(i64) -> i64 = |x: i64| -> i64 { return x }\n\
                fn main() -> i64 { return f(1) }\n";
    let program = common::compile_text("border.hot", text).unwrap();
    let before = live_blocks();
    let mut jit = hotlab::backend::jit::Jit::new(Default::default()).unwrap();
    let compiled = jit.compile(&program).unwrap();
    assert_eq!(
        compiled.global("f"),
        Some(Value::Fn("<fn(i64) -> i64>".into()))
    );
    let lambda = compiled.function_named("<closure 1 in f>").unwrap();
    assert!(compiled.call(lambda, &[Value::I64(1)]).is_err());
    let mut interp = hotlab::backend::interp::Interp::new(&program, Checks::On).unwrap();
    let id = program.globals.iter().position(|g| g.name == "f").unwrap();
    assert_eq!(
        interp
            .global(hotlab::lang::hir::GlobalId(id as u32))
            .to_string(),
        "<fn(i64) -> i64>"
    );
    assert!(
        interp
            .call(hotlab::lang::hir::FuncId(lambda.0), &[Value::I64(1)])
            .is_err()
    );
    drop(interp);
    drop(compiled);
    assert_eq!(live_blocks(), before);
}
