//! The additions for real snippets (LANGUAGE.md v2): each misuse is a diagnostic of the right
//! kind at the exact span. (The working programs are golden programs and docs examples, run on
//! every backend.)
//!
//! In each case's source, `«` and `»` mark the expected primary span of the first diagnostic.

mod common;
use common::{diags, marked};

use hotlab::lang::{DiagKind, SourceFile};

/// The first diagnostic of `src` has `kind`, the marked span, and a message containing `says`.
#[track_caller]
fn case(kind: DiagKind, src: &str, says: &str) {
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
}

#[track_caller]
fn compiles(text: &str) {
    if let Err(d) = common::compile_text("ok.hot", text) {
        panic!("does not compile:\n{text}\n{d}");
    }
}

#[test]
fn a_closing_brace_ends_only_block_statements() {
    compiles("fn f(n: i64) -> bool { if n == 0 { return true } return f(n - 1) }");
    compiles("fn a() { } fn b() { while false { } for i in 0..1 { } { } }");
    case(
        DiagKind::Syntax,
        "fn f() { let a = 1 «let» b = 2 }",
        "expected the end of the statement",
    );
    case(
        DiagKind::Syntax,
        "fn f() { let g = || { } «let» b = 2 }",
        "expected the end of the statement",
    );
}

#[test]
fn bit_pattern_literals() {
    compiles(
        "let A = 0xFFFF_FFFF_FFFF_FFFF\nlet B = 0b1000000000000000000000000000000000000000000000000000000000000000",
    );
    case(
        DiagKind::BadLiteral,
        "let x = «0x1_0000_0000_0000_0000»",
        "more than 64 bits",
    );
    case(
        DiagKind::BadLiteral,
        "let x = «18446744073709551615»",
        "does not fit in i64",
    );
    case(
        DiagKind::BadLiteral,
        "let x = «9223372036854775808»",
        "does not fit",
    );
    case(
        DiagKind::TypeMismatch,
        "let x = 1.5 «>>>» 2.5",
        "cannot be applied to `f64`",
    );
    case(
        DiagKind::TypeMismatch,
        "fn f() { var x = true\n x «>>>=» 1 }",
        "cannot be applied to `bool`",
    );
    // `>>>` closes three nested vec types.
    compiles("fn f() -> i64 { let v = vec<vec<vec<i64>>>()\n return v.len() >>> 1 }");
}

#[test]
fn math_builtin_misuse() {
    case(
        DiagKind::Arity,
        "let x = «min(1)»",
        "`min` takes 2 arguments but 1 was given",
    );
    case(
        DiagKind::Arity,
        "let x = «sqrt(1.0, 2.0)»",
        "takes 1 argument",
    );
    case(
        DiagKind::TypeMismatch,
        "let x = sqrt(«4»)",
        "`sqrt` takes `f64`, found `i64`",
    );
    case(
        DiagKind::TypeMismatch,
        "let x = abs(«true»)",
        "`abs` takes `i64` or `f64`",
    );
    case(
        DiagKind::TypeMismatch,
        "let x = max(1, «2.0»)",
        "mismatched types",
    );
    case(
        DiagKind::TypeMismatch,
        "let x = pow(2.0, «3»)",
        "mismatched types",
    );
    case(
        DiagKind::TypeMismatch,
        "let f = «floor»",
        "builtin function",
    );
    // A module's own function of the same name takes precedence.
    compiles("fn min(a: str) -> str { return a }\nlet s = min(\"x\")");
    compiles("native fn sqrt(x: f64) -> f64\nlet r = sqrt(2.0)");
}

#[test]
fn sources_render_without_panics() {
    // Every case above renders with its source (no span past the end).
    let text = "let x = min(1)";
    let d = diags(text);
    let rendered = d.render(&SourceFile::new("case.hot", text), false);
    assert!(rendered.contains("min(1)"), "{rendered}");
}

#[test]
fn string_byte_misuse() {
    case(
        DiagKind::Arity,
        "let x = «\"ab\".byte()»",
        "`byte` takes 1 argument but 0 were given",
    );
    case(
        DiagKind::Arity,
        "let x = «\"ab\".slice(1)»",
        "`slice` takes 2 arguments",
    );
    case(
        DiagKind::TypeMismatch,
        "let x = \"ab\".byte(«1.0»)",
        "byte offsets, `i64`",
    );
    case(
        DiagKind::UnknownName,
        "let x = \"ab\".«bytes»(1)",
        "no method `bytes` on `str`",
    );
}

/// A string made for the call (owned) is released when the offsets' evaluation or the helper
/// raises, on every backend (`same_everywhere` counts live blocks).
#[test]
fn string_bytes_release_their_temporaries_on_errors() {
    common::same_everywhere(
        "fn z() -> i64 { return 0 }
         fn main() -> i64 { return (\"a${z()}\" + \"bc\").slice(1, 10 / z()).len() }",
        "error: division by zero at 2:67",
    );
    common::same_everywhere(
        "fn main() -> i64 { let s = \"x${1}\" + \"é\"\n return (s + \"!\").slice(0, 3).len() }",
        "error: byte 3 is not on a character boundary at 2:9",
    );
    common::same_everywhere(
        "fn main() -> i64 { var n = 0\n for i in 0..5 { n += (\"ab${i}\").byte(i % 3) }\n return n }",
        &(97 + 98 + 50 + 97 + 98).to_string(),
    );
}

#[test]
fn range_misuse() {
    case(
        DiagKind::Other,
        "fn f() { for i in 0..10 step «0» { } }",
        "must be positive, not 0",
    );
    case(
        DiagKind::Other,
        "fn f() { for i in 0..=10 step «-1» { } }",
        "must be positive, not -1",
    );
    case(
        DiagKind::TypeMismatch,
        "fn f() { for i in 0..10 step «1.5» { } }",
        "must be `i64`",
    );
    case(
        DiagKind::TypeMismatch,
        "fn f() { for i in 0..=«true» { } }",
        "range bound must be `i64`",
    );
    // `step` is a word only after a range: a name elsewhere.
    compiles(
        "fn step(x: i64) -> i64 { return x }\nfn g() -> i64 { return step(3) }\nfn f() -> i64 { let step = 2\n var s = 0\n for i in 0..9 step step { s += i }\n return s }",
    );
}

#[test]
fn field_initializers_are_constant_expressions_or_diagnostics() {
    compiles(
        "let K = 2.5\nlet N = 3\nclass C { var a: f64 = -1.5 * K\n var b: [i64; 3] = [N + 1; 3]\n var c: i64 = (K * 4.0) as i64 }",
    );
    // A module `var` is not a constant: a diagnostic, not a field dropped silently.
    case(
        DiagKind::BadClass,
        "var X: i64 = 1\nclass C { var a: i64 = «X» }",
        "must be a constant expression",
    );
    case(
        DiagKind::BadClass,
        "fn f() -> i64 { return 1 }\nclass C { var a: i64 = «f() + 1» }",
        "must be a constant expression",
    );
    case(
        DiagKind::BadClass,
        "let Z = 0\nclass C { var a: i64 = «1 / Z» }",
        "must be a constant expression",
    );
    case(
        DiagKind::BadClass,
        "class C { var s: str = «\"a${1}\"» }",
        "must be a constant expression",
    );
}
