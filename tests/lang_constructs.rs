//! Constructors (`init`, `super.init`), type tests (`is`, `as?`) and flow typing: each misuse is
//! a diagnostic of the right kind at the exact span, and the working programs give the same
//! outcome on every backend with nothing leaked.
//!
//! In each case's source, `«` and `»` mark the expected primary span of the first diagnostic.

mod common;
use common::{diags, marked};

use hotlab::lang::DiagKind;
use hotlab::lang::hir::{ExprKind, StmtKind};

/// The first diagnostic of `src` has `kind`, the marked span, and a message containing `says`;
/// returns its rendered text.
#[track_caller]
fn case(kind: DiagKind, src: &str, says: &str) -> String {
    let (text, span) = marked(src);
    let d = diags(&text);
    let first = &d.0[0];
    assert_eq!(
        (first.kind, first.span),
        (kind, span),
        "in:\n{text}\ngot {first} (`{}`)",
        &text[first.span.range().start.min(text.len())..first.span.range().end.min(text.len())]
    );
    assert!(
        first.message.contains(says),
        "`{}` does not say `{says}`",
        first.message
    );
    format!("{first:?}")
}

const SHAPES: &str = "class A { var n: i64 = 1 }\nclass B : A { var f: i64 = 2 }\nclass U { }\n";

#[test]
fn constructor_misuse_is_a_diagnostic() {
    let p = "class P {\n    var x: i64 = 0\n    init(self, x: i64) { self.x = x }\n}\n";
    case(
        DiagKind::Arity,
        &format!("{p}fn main() -> i64 {{ let o = «new P()»; return o.x }}"),
        "`new P(...)` (its `init`) takes 1 argument but 0 were given",
    );
    case(
        DiagKind::Arity,
        &format!("{p}fn main() -> i64 {{ let o = «new P(1, 2)»; return o.x }}"),
        "takes 1 argument but 2 were given",
    );
    case(
        DiagKind::TypeMismatch,
        &format!("{p}fn main() -> i64 {{ let o = new P(«1.5»); return o.x }}"),
        "expected `i64`, found `f64`",
    );
    case(
        DiagKind::Arity,
        "class Q { var x: i64 = 0 }\nfn main() -> i64 { return «new Q(3)».x }",
        "`Q` has no `init`",
    );
    case(
        DiagKind::BadClass,
        &format!("{p}fn main() -> i64 {{ let o = new P(1); o.«init»(2); return o.x }}"),
        "`new` calls it",
    );
    case(
        DiagKind::BadClass,
        "class R { init(self) -> «i64» { return 1 } }",
        "`init` returns nothing",
    );
    case(
        DiagKind::BadClass,
        "class R { virtual fn «init»(self) { } }",
        "cannot be `virtual`",
    );
    // `super.init`: only in an `init`, only when a base class has one, with its arity.
    case(
        DiagKind::BadClass,
        &format!("{p}class D : P {{ fn m(self) {{ «super.init»(1) }} }}"),
        "only in an `init`",
    );
    case(
        DiagKind::BadClass,
        "class E { }\nclass D : E { init(self) { «super.init»() } }",
        "no base class of `D` has an `init`",
    );
    case(
        DiagKind::Arity,
        &format!("{p}class D : P {{ init(self) {{ «super.init()» }} }}"),
        "`P.init` takes 1 argument but 0 were given",
    );
    case(
        DiagKind::BadClass,
        &format!("{p}class D : P {{ init(self) {{ «super.x»(1) }} }}"),
        "only `super.init(...)`",
    );
}

#[test]
fn type_test_misuse_is_a_diagnostic() {
    case(
        DiagKind::TypeMismatch,
        &format!("{SHAPES}fn f(a: A) -> bool {{ return a is «U» }}"),
        "`is U` can never succeed: `U` and `A` are unrelated classes",
    );
    case(
        DiagKind::TypeMismatch,
        &format!("{SHAPES}fn f(a: A?) -> U? {{ return a as? «U» }}"),
        "`as? U` can never succeed",
    );
    case(
        DiagKind::TypeMismatch,
        &format!("{SHAPES}fn f(x: i64) -> bool {{ return «x» is A }}"),
        "this is a `i64`",
    );
    case(
        DiagKind::UnknownName,
        &format!("{SHAPES}fn f(a: A) -> bool {{ return a is «Z» }}"),
        "unknown class `Z`",
    );
    // `as?` gives a nullable handle: using it as a `B` needs a test (or a run-time check).
    case(
        DiagKind::TypeMismatch,
        &format!("{SHAPES}fn f(a: A) -> i64 {{ let b = a as? B\n let c: U = «b»\n return 0 }}"),
        "expected `U`, found `B?`",
    );
}

#[test]
fn flow_typing_narrows_until_an_assignment_breaks_it() {
    // Narrowed: a `let`, a parameter, a `var` its block does not assign.
    for body in [
        "if a is B { return a.f }\nreturn 0",
        "var v = a\nif v is B { return v.f }\nreturn 0",
        "if !(a is B) { return 0 }\nreturn a.f",
        "if a is B && a.f > 1 { return a.f }\nreturn 0",
        "if !(a is B) || a.f > 1 { return 1 }\nreturn 0",
        "var v = a\nwhile v is B { return v.f }\nreturn 0",
        "if a is B { } else { return 0 }\nreturn a.f",
    ] {
        let text = format!("{SHAPES}fn f(a: A) -> i64 {{\n{body}\n}}");
        if let Err(d) = common::compile_text("ok.hot", &text) {
            panic!("does not compile:\n{text}\n{d}");
        }
    }
    // An assignment anywhere in the block keeps the declared type, and the diagnostic says why.
    let d = case(
        DiagKind::UnknownName,
        &format!(
            "{SHAPES}fn f(a: A) -> i64 {{\n var v = a\n if v is B {{\n  let n = v.«f»\n  v = new A()\n  return n\n }}\n return 0\n}}"
        ),
        "no field `f` on `A`",
    );
    assert!(
        d.contains("only in a block that does not assign `v`"),
        "{d}"
    );
    case(
        DiagKind::UnknownName,
        &format!(
            "{SHAPES}fn f(a: A) -> i64 {{\n var v = a\n if !(v is B) {{ return 0 }}\n v = a\n return v.«f»\n}}"
        ),
        "no field `f` on `A`",
    );
    // Not narrowed in a closure's body (it runs later, maybe after the local changed).
    case(
        DiagKind::UnknownName,
        &format!(
            "{SHAPES}fn f(a: A) -> i64 {{\n if a is B {{ let g = || -> i64 {{ return a.«f» }}\n return g() }}\n return 0\n}}"
        ),
        "no field `f` on `A`",
    );
}

#[test]
fn a_narrowed_nullable_needs_no_run_time_check() {
    let text = "class T { var n: i64 = 1 }\nfn id(t: T) -> i64 { return t.n }\nfn f(t: T?) -> i64 {\n    if t != null { return id(t) }\n    return id(t)\n}";
    let program = common::compile_text("narrow.hot", text).unwrap_or_else(|d| panic!("{d}"));
    let f = program.function(program.function_named("f").expect("f"));
    let StmtKind::If { then_block, .. } = &f.body.stmts[0].kind else {
        panic!("{:?}", f.body.stmts[0]);
    };
    let StmtKind::Return(Some(call)) = &then_block.stmts[0].kind else {
        panic!("{then_block:?}");
    };
    let ExprKind::Call(_, args) = &call.kind else {
        panic!("{call:?}");
    };
    assert!(matches!(args[0].kind, ExprKind::Local(_)), "{:?}", args[0]);
    // Outside the `if`: the `T?` converts with a check, which raises for `null`.
    let StmtKind::Return(Some(call)) = &f.body.stmts[1].kind else {
        panic!("{:?}", f.body.stmts[1]);
    };
    let ExprKind::Call(_, args) = &call.kind else {
        panic!("{call:?}");
    };
    assert!(
        matches!(args[0].kind, ExprKind::NonNull(_)),
        "{:?}",
        args[0]
    );
}

#[test]
fn constructors_and_type_tests_run_the_same_everywhere() {
    common::same_everywhere(
        "class S { var v: str = \"\"\n init(self, a: str, n: i64) { self.v = a + \"${n}\" } }\n\
         class T : S { var w: vec<i64> = vec<i64>()\n init(self) { super.init(\"t\", 7); self.w.push(1) } }\n\
         fn main() -> str {\n let t = new T()\n let s: S = t\n let back = s as? T\n\
         if back == null { return \"lost\" }\n return \"${t.v} ${back.w} ${s is T} ${new S(\"s\", 1) as? T}\"\n}",
        "t7 [1] true null",
    );
    // A temporary that fails the test is released; one that passes is kept.
    common::same_everywhere(
        "class A { var s: str = \"a\" }\nclass B : A { }\n\
         fn make(k: i64) -> A { if k == 0 { return new A() } return new B() }\n\
         fn main() -> i64 {\n var n = 0\n for k in 0..4 {\n  if make(k % 2) is B { n += 1 }\n  let b = make(k) as? B\n  if b != null { n += 10 }\n }\n return n\n}",
        "32",
    );
    // An error in `init` unwinds through the constructor without leaking the new object.
    common::same_everywhere(
        "class A { var s: str = \"x\"\n var v: vec<str> = vec<str>()\n init(self, d: i64) { self.v.push(\"y\"); self.s = \"${10 / d}\" } }\n\
         fn main() -> i64 { let a = new A(2)\n let b = new A(0)\n return a.s.len() + b.s.len() }",
        "error: division by zero at 3:56",
    );
}

/// A class with a constructor reloads like any other: a migrated object keeps its fields, an
/// added field takes its initializer, and `init` is not run again (only `new` runs it), on
/// every backend that reloads.
#[test]
fn a_class_with_init_reloads_without_running_init_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let v1 = dir.path().join("v1.hot");
    let v2 = dir.path().join("v2.hot");
    std::fs::write(
        &v1,
        "class Acc {\n    var n: i64 = 0\n    var step: i64 = 1\n    init(self, start: i64, step: i64) { self.n = start; self.step = step }\n    fn add(self) -> i64 { self.n += self.step; return self.n }\n}\nvar a: Acc? = null\nfn main() -> i64 { a = new Acc(10, 5); return a.add() }\n",
    )
    .unwrap();
    std::fs::write(
        &v2,
        "class Acc {\n    var n: i64 = 0\n    var step: i64 = 1\n    var scale: i64 = 3\n    init(self, start: i64, step: i64) { self.n = start * 100; self.step = step; self.scale = 7 }\n    fn add(self) -> i64 { self.n += self.step * self.scale; return self.n }\n}\nvar a: Acc? = null\nfn after_reload() -> i64 { let fresh = new Acc(1, 1)\n return a.add() * 1000 + fresh.scale }\n",
    )
    .unwrap();
    for backend in ["jit", "object", "interp"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hotlab"))
            .args(["run"])
            .arg(&v1)
            .args(["--backend", backend, "--reload"])
            .arg(&v2)
            .output()
            .expect("hotlab runs");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "{backend}: {stderr}");
        // main: 10 + 5; after the reload: 15 + 5 * 3 (the added field's initializer), and a new
        // object's `init` sets scale 7.
        assert_eq!(stdout, "15\n30007\n", "{backend}: {stderr}");
        assert!(
            stderr.contains("1 object(s) migrated; kept [n, step] added [scale]"),
            "{backend}: {stderr}"
        );
    }
}
