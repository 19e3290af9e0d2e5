//! Bad inputs: each gives a diagnostic of the right kind at the exact span.
//!
//! In each case's source, `«` and `»` mark the expected primary span of the first diagnostic
//! (they are removed before compiling).

mod common;
use common::{diags, marked};

use hotlab::lang::{DiagKind, SourceFile};

/// Strip the markers; return the text and the marked span.
#[track_caller]
fn case(kind: DiagKind, src: &str) {
    let (text, span) = marked(src);
    let d = diags(&text);
    let first = &d.0[0];
    assert_eq!(
        (first.kind, first.span),
        (kind, span),
        "in:\n{text}\ngot {first} (`{}`)",
        &text[first.span.range().start.min(text.len())..first.span.range().end.min(text.len())]
    );
}

#[test]
fn lexical_errors() {
    case(DiagKind::Syntax, "let x = 1 «$» 2");
    case(DiagKind::Incomplete, "let s = \"abc«»");
    case(DiagKind::Incomplete, "«/*» never closed");
    case(DiagKind::BadLiteral, "let x = «99999999999999999999»");
    case(DiagKind::BadLiteral, "let x = «12ab»");
    case(DiagKind::BadLiteral, "let x = «0x»");
    case(DiagKind::Syntax, "let s = \"a«\\q»\"");
    case(DiagKind::Incomplete, "let s = \"a ${ 1 + «»");
}

#[test]
fn syntax_errors() {
    case(DiagKind::Incomplete, "fn main() {«»");
    case(DiagKind::Incomplete, "fn main() { let x = 1 +«»");
    case(DiagKind::Incomplete, "fn f(a: i64,«»");
    case(DiagKind::Incomplete, "let x = [1, 2«»");
    case(DiagKind::Syntax, "fn main() { let «=» 1 }");
    case(DiagKind::Syntax, "fn main() { x = «=» 1 }");
    case(DiagKind::Syntax, "fn main() { let x = 1 «2» }");
    case(DiagKind::Syntax, "fn main() { if 1 < 2 «<» 3 { } }");
    case(DiagKind::Syntax, "«x» = 1");
    case(DiagKind::Syntax, "fn main() { «fn» inner() {} }");
    case(DiagKind::Syntax, "var x: i64«\n»fn main() {}");
    case(DiagKind::Syntax, "fn main() { let a = [1, 2«;» 3] }");
    case(DiagKind::Syntax, "fn main() { let a = 1 «)» }");
    case(DiagKind::Syntax, "fn f(«1»: i64) {}");
    case(DiagKind::Syntax, "fn main() {\n    let a = 1\n    «+» 2\n}");
    let deep = format!("let x = {}«1»{}", "(".repeat(300), ")".repeat(300));
    let (text, _) = marked(&deep);
    let d = diags(&text);
    assert_eq!(d.0[0].kind, DiagKind::Syntax);
    assert!(d.0[0].message.contains("too deep"), "{}", d.0[0]);
}

#[test]
fn name_errors() {
    case(DiagKind::UnknownName, "fn main() -> i64 { return «y» }");
    case(DiagKind::UnknownName, "fn main() { «g»() }");
    case(DiagKind::UnknownName, "fn f(a: «Foo») {}");
    case(DiagKind::UnknownName, "let A = «B»\nlet B = 1");
    case(DiagKind::UnknownName, "fn f() { let a = [1]\n a.«foo»() }");
    case(
        DiagKind::UnknownName,
        "fn f() { { let x = 1 }\n let y = «x» }",
    );
    case(
        DiagKind::UnknownName,
        "fn f() { for i in 0..3 { }\n let y = «i» }",
    );
    case(DiagKind::Duplicate, "fn f() {}\nfn «f»() {}");
    case(DiagKind::Duplicate, "fn f(a: i64, «a»: i64) {}");
    case(DiagKind::Duplicate, "var f = 1\nfn «f»() {}");
    case(DiagKind::Duplicate, "fn «assert»(x: bool) {}");
}

#[test]
fn type_errors() {
    case(DiagKind::TypeMismatch, "let x = 1 «+» 2.0");
    case(DiagKind::TypeMismatch, "let x: f64 = «1»");
    case(DiagKind::TypeMismatch, "fn f() -> i64 { return «true» }");
    case(DiagKind::TypeMismatch, "fn f() { return «1» }");
    case(DiagKind::TypeMismatch, "fn f() -> i64 { «return» }");
    case(DiagKind::TypeMismatch, "fn f() { if «1» { } }");
    case(DiagKind::TypeMismatch, "fn f() { while «1.0» { } }");
    case(
        DiagKind::TypeMismatch,
        "fn g(a: i64) {}\nfn f() { g(«true») }",
    );
    case(DiagKind::TypeMismatch, "let a = [1, «true»]");
    case(
        DiagKind::TypeMismatch,
        "fn f() -> i64 { let x = 1\n return «x».len() }",
    );
    case(DiagKind::TypeMismatch, "let x = «true as f64»");
    case(DiagKind::TypeMismatch, "let x = «1.5 as bool»");
    case(DiagKind::TypeMismatch, "let x = 1\nlet y = «x»[0]");
    case(DiagKind::TypeMismatch, "let a = [1]\nlet y = a[«true»]");
    case(DiagKind::TypeMismatch, "let x = «1» && true");
    case(DiagKind::TypeMismatch, "let x = «!1»");
    case(DiagKind::TypeMismatch, "let x = «-true»");
    case(DiagKind::TypeMismatch, "let x = true «+» false");
    case(DiagKind::TypeMismatch, "let x = 1.0 «&» 2.0");
    case(DiagKind::TypeMismatch, "let x = [1] «==» [1]");
    case(DiagKind::TypeMismatch, "fn g() {}\nlet x = «g()»");
    case(DiagKind::TypeMismatch, "fn f() { let x = 1\n «x»() }");
    case(DiagKind::TypeMismatch, "fn f() { for x in «5» { } }");
    case(DiagKind::TypeMismatch, "fn f() { for x in 0..«1.0» { } }");
    case(DiagKind::TypeMismatch, "fn f() { var x = 1\n x = «2.0» }");
    case(
        DiagKind::TypeMismatch,
        "fn f() { var x = true\n x «+=» true }",
    );
    case(DiagKind::TypeMismatch, "fn g() {}\nfn f() { let h = «g» }");
}

#[test]
fn call_and_return_errors() {
    case(DiagKind::Arity, "fn g(a: i64) {}\nfn f() { «g(1, 2)» }");
    case(DiagKind::Arity, "fn f() { «assert()» }");
    case(
        DiagKind::Arity,
        "fn f() -> i64 { let a = [1]\n return «a.len(1)» }",
    );
    case(
        DiagKind::MissingReturn,
        "fn f(a: i64) -> i64 { if a > 0 { return 1 } «}»",
    );
    case(
        DiagKind::MissingReturn,
        "fn f() -> i64 { while true { break } «}»",
    );
    case(
        DiagKind::MissingReturn,
        "fn f(a: i64) -> i64 {\n    if a > 0 { return 1 } else { }\n«}»",
    );
}

#[test]
fn mutability_and_loop_errors() {
    case(
        DiagKind::AssignToImmutable,
        "fn f() { let x = 1\n «x» = 2 }",
    );
    case(DiagKind::AssignToImmutable, "fn f(a: i64) { «a» += 1 }");
    case(
        DiagKind::AssignToImmutable,
        "fn f() { for i in 0..3 { «i» = 1 } }",
    );
    case(DiagKind::AssignToImmutable, "let K = 1\nfn f() { «K» = 2 }");
    case(DiagKind::AssignToImmutable, "fn g() {}\nfn f() { «g» = 1 }");
    case(
        DiagKind::AssignToImmutable,
        "fn f() { let a = [1, 2]\n «a»[0] = 5 }",
    );
    case(DiagKind::OutsideLoop, "fn f() { «break» }");
    case(DiagKind::OutsideLoop, "fn f() { if true { «continue» } }");
    case(DiagKind::Other, "fn f() { «1 + 2» = 3 }");
}

#[test]
fn native_and_main_errors() {
    case(DiagKind::BadNative, "native fn «nope»()");
    case(DiagKind::BadNative, "«native fn sink(x: f64) -> i64»");
    case(DiagKind::BadNative, "«native fn sqrt(x: f64)»");
    case(DiagKind::BadMain, "fn main(«a: i64») {}");
    case(
        DiagKind::BadMain,
        "fn main() -> «[i64; 2]» { return [1, 2] }",
    );
}

#[test]
fn array_errors() {
    case(DiagKind::Other, "let a = «[]»");
    case(DiagKind::Other, "let n = 3\nlet a = [0; «n»]");
    case(DiagKind::Other, "let a = [0; «-1»]");
    case(DiagKind::Other, "let a = «[\"s\"; 100000]»");
    case(DiagKind::Other, "fn f(a: «[[i64; 100000]; 100000]») {}");
    case(DiagKind::BadLiteral, "let x = «9223372036854775808»");
    case(DiagKind::BadLiteral, "let x = -(«9223372036854775808»)");
}

#[test]
fn unsupported_parts_are_errors_not_panics() {
    case(
        DiagKind::Unsupported,
        "«interface Hook» { fn call(self) -> i64 }",
    );
    case(DiagKind::TypeMismatch, "let n = «null»");
    case(DiagKind::UnknownName, "fn f() { let o = new «C»() }");
    // A field of array type starts at constants only: an array literal or repeat of literals.
    case(
        DiagKind::BadClass,
        "fn f() -> str { return \"x\" }\nclass C { var a: [str; 2] = «[f(), \"y\"]» }",
    );
    case(
        DiagKind::TypeMismatch,
        "class C { var a: [i64; 3] = «[1, 2]» }",
    );
    // A fn field starts `= null`: a lambda is no literal a reload could give an added field.
    case(
        DiagKind::BadClass,
        "class C { var f: fn(i64) -> i64 = «|x: i64| -> i64 { return x }» }",
    );
}

#[test]
fn vec_and_string_errors() {
    case(DiagKind::TypeMismatch, "let s: str = «1»");
    case(
        DiagKind::TypeMismatch,
        "fn f() { var v = vec<i64>()\n v.push(«1.5») }",
    );
    case(
        DiagKind::TypeMismatch,
        "fn f() { let a = [1]\n «a».push(2) }",
    );
    case(
        DiagKind::AssignToImmutable,
        "fn f() { let v = vec<i64>()\n «v».push(2) }",
    );
    case(
        DiagKind::AssignToImmutable,
        "fn f(v: vec<i64>) -> i64 { return «v».pop() }",
    );
    case(
        DiagKind::Other,
        "fn g() -> vec<i64> { return vec<i64>() }\nfn f() { «g()».push(1) }",
    );
    case(
        DiagKind::Arity,
        "fn f() { var v = vec<i64>()\n «v.push()» }",
    );
    case(
        DiagKind::Arity,
        "fn f() { var v = vec<i64>()\n «v.pop(1)» }",
    );
    case(
        DiagKind::UnknownName,
        "fn f() { var v = vec<i64>()\n v.«insert»(1) }",
    );
    case(
        DiagKind::TypeMismatch,
        "fn f() { var v = vec<i64>()\n v[«true»] = 1 }",
    );
    case(
        DiagKind::TypeMismatch,
        "fn f() -> bool { return vec<i64>() «==» vec<i64>() }",
    );
    case(
        DiagKind::TypeMismatch,
        "fn f() -> bool { return \"a\" «<» \"b\" }",
    );
    case(
        DiagKind::TypeMismatch,
        "fn f() -> str { return \"a\" «+» 1 }",
    );
    case(
        DiagKind::TypeMismatch,
        "fn u() {}\nfn f() -> str { return \"x ${«u()»}\" }",
    );
    case(
        DiagKind::TypeMismatch,
        "fn f() -> i64 { return «\"ab\"».pop() }",
    );
    case(DiagKind::TypeMismatch, "fn f() { for c in «\"ab\"» { } }");
    // Vec and string fields work; their initializers are constants, as every field's.
    case(DiagKind::BadClass, "class C { var s: str = «\"a${1}\"» }");
    case(
        DiagKind::BadClass,
        "fn make() -> vec<i64> { return vec<i64>() }\nclass C { var v: vec<i64> = «make()» }",
    );
}

const BASE: &str = "class A {\n    var n: i64 = 0\n    var next: A? = null\n    virtual fn v(self, x: i64) -> i64 { return x }\n    fn plain(self) -> i64 { return 1 }\n    static fn make() -> A { return new A() }\n}\n";

#[track_caller]
fn class_case(kind: DiagKind, src: &str) {
    case(kind, &format!("{BASE}{src}"));
}

#[test]
fn class_errors() {
    // Names: classes, fields, methods, bases.
    class_case(DiagKind::UnknownName, "fn f(a: A) -> i64 { return a.«m» }");
    class_case(
        DiagKind::UnknownName,
        "fn f(a: A) -> i64 { return a.«m»() }",
    );
    class_case(DiagKind::UnknownName, "fn f() -> i64 { return A.«nope»() }");
    class_case(DiagKind::UnknownName, "fn f(a: «B») { }");
    class_case(DiagKind::UnknownName, "class B : «Nope» { }");
    class_case(
        DiagKind::TypeMismatch,
        "fn f(a: A) -> i64 { return a.«make»() }",
    );
    class_case(
        DiagKind::TypeMismatch,
        "fn f() -> i64 { return A.«plain»() }",
    );
    class_case(DiagKind::TypeMismatch, "fn f(a: A) -> i64 { return «5».n }");
    class_case(DiagKind::TypeMismatch, "fn f() { let a = «A» }");
    // Arguments.
    class_case(
        DiagKind::TypeMismatch,
        "fn f(a: A) -> i64 { return a.v(«true») }",
    );
    class_case(DiagKind::Arity, "fn f(a: A) -> i64 { return «a.v()» }");
    class_case(DiagKind::Arity, "fn f() { let a = «new A(1)» }");
    // `self`.
    class_case(DiagKind::BadClass, "fn f() -> i64 { return «self».n }");
    class_case(DiagKind::BadClass, "fn f(«self») { }");
    class_case(DiagKind::BadClass, "class B { fn «m»() { } }");
    class_case(DiagKind::BadClass, "class B { static fn m(«self») { } }");
    // Overrides.
    class_case(
        DiagKind::BadClass,
        "class B : A { override fn «w»(self) { } }",
    );
    class_case(
        DiagKind::BadClass,
        "class B : A { fn «v»(self, x: i64) -> i64 { return 2 } }",
    );
    class_case(
        DiagKind::BadClass,
        "class B : A { override fn «plain»(self) -> i64 { return 2 } }",
    );
    class_case(
        DiagKind::BadClass,
        "class B : A { override fn «v»(self, x: f64) -> i64 { return 2 } }",
    );
    class_case(DiagKind::BadClass, "class «B» : C { }\nclass C : B { }");
    class_case(DiagKind::Duplicate, "class B : A { var «n»: i64 = 1 }");
    // Host interfaces.
    class_case(DiagKind::BadClass, "class «H» : Hook { var n: i64 = 0 }");
    class_case(
        DiagKind::BadClass,
        "class H : Hook { fn «call»(self) -> f64 { return 1.0 } }",
    );
    class_case(
        DiagKind::BadClass,
        "class B : Bench { fn «run»(self) -> i64 { return 1 } }",
    );
    class_case(DiagKind::TypeMismatch, "fn f(h: «Hook») { }");
    // Fields.
    class_case(DiagKind::BadClass, "class B { var n: i64 = «1 / 0» }");
    class_case(DiagKind::BadClass, "class B { var a: «A» = new A() }");
    class_case(
        DiagKind::AssignToImmutable,
        "class B { let k: i64 = 1 }\nfn f(b: B) { «b.k» = 2 }",
    );
    // Handles and null.
    class_case(DiagKind::TypeMismatch, "fn f() { let a: A = «null» }");
    class_case(
        DiagKind::TypeMismatch,
        "fn f(a: A) { a.next = new A(); var b: A = a; b = «1» }",
    );
    class_case(
        DiagKind::TypeMismatch,
        "class B { }\nfn f(a: A, b: B) -> bool { return a «==» b }",
    );
    class_case(
        DiagKind::TypeMismatch,
        "fn f(a: A, b: A) -> bool { return a «<» b }",
    );
    class_case(DiagKind::TypeMismatch, "fn f(a: A) { var x: «i64?» = 0 }");
}

#[test]
fn interface_signature_error_names_the_expected_signature() {
    let d = diags("class H : Bench { fn run(self) -> i64 { return 1 } }");
    let notes = d.0[0].notes.join("\n");
    assert!(notes.contains("fn run(self, _: i64) -> i64"), "{notes}");
    let d = diags("class H : Hook { }");
    assert!(d.0[0].message.contains("has no method `call`"), "{d}");
    assert!(d.0[0].notes[0].contains("fn call(self) -> i64"), "{d}");
}

#[test]
fn several_errors_per_file_but_one_per_statement() {
    let text = "fn f() -> i64 {\n    let a = x + y\n    let b: bool = 1\n    return c\n}\n";
    let d = diags(text);
    let kinds: Vec<_> = d.0.iter().map(|d| d.kind).collect();
    assert_eq!(
        kinds,
        [
            DiagKind::UnknownName,
            DiagKind::TypeMismatch,
            DiagKind::UnknownName
        ],
        "{d}"
    );
    // A broken `let` still declares its name: no follow-on "unknown name `a`".
    let d = diags("fn f() -> i64 {\n    let a = nope\n    return a + 1\n}\n");
    assert_eq!(d.0.len(), 1, "{d}");
    // Syntax errors in several statements are all reported.
    let d = diags("fn f() {\n    let = 1\n    x = = 2\n    let y = 3 3\n}\n");
    assert_eq!(d.0.len(), 3, "{d}");
}

#[test]
fn incomplete_means_only_more_input_is_missing() {
    for text in [
        "fn main() {",
        "fn main() {\n    let x = (1 +",
        "let x = \"unclosed",
        "/* comment",
        "fn f() -> i64 { return 1 +",
        "fn main() -> i64 { if true {",
    ] {
        let d = diags(text);
        assert!(d.is_incomplete(), "{text:?}: {d}");
    }
    for text in ["fn main() { let = 1", "fn main() { ) ", "let x = 1 +\n)"] {
        let d = diags(text);
        assert!(!d.is_incomplete(), "{text:?}: {d}");
    }
}

#[test]
fn rendered_diagnostics() {
    let render = |text: &str| {
        let d = diags(text);
        d.render(&SourceFile::new("case.hot", text), false)
    };
    insta::assert_snapshot!(
        render("fn main() -> i64 {\n    let x = 1 + 2.5\n    return x\n}\n"),
        @r"
    error[type]: mismatched types: `i64` + `f64`
      ┌─ case.hot:2:15
      │
    2 │     let x = 1 + 2.5
      │             - ^ --- `f64`
      │             │
      │             `i64`
      │
      = there are no implicit conversions: convert one side with `as`
    "
    );
    insta::assert_snapshot!(
        render("fn add(a: i64, b: i64) -> i64 { return a + b }\nfn main() -> i64 {\n    return add(1)\n}\n"),
        @r"
    error[arity]: `add` takes 2 arguments but 1 was given
      ┌─ case.hot:3:12
      │
    1 │ fn add(a: i64, b: i64) -> i64 { return a + b }
      │    --- declared here
    2 │ fn main() -> i64 {
    3 │     return add(1)
      │            ^^^^^^
    "
    );
    insta::assert_snapshot!(
        render("let LIMIT = 10\nfn main() {\n    LIMIT = 3\n}\n"),
        @r"
    error[immutable]: cannot assign to `LIMIT`: it is a module constant
      ┌─ case.hot:3:5
      │
    1 │ let LIMIT = 10
      │ -------------- declared with `let` here
    2 │ fn main() {
    3 │     LIMIT = 3
      │     ^^^^^
    "
    );
    insta::assert_snapshot!(
        render("fn main() {\n    let a = [1, 2\n"),
        @r"
    error[incomplete]: unexpected end of input: expected `]`
      ┌─ case.hot:3:1
      │
    3 │
      │ ^
    "
    );
}
