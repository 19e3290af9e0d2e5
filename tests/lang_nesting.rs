//! Deep expressions through the binary: a chain of any kind (operators, casts, indexes, fields,
//! calls, method calls, `&&`) past the nesting limit is one located syntax error with exit
//! code 2 on every backend, never a stack overflow; just under the limit it runs, with the
//! same result on every backend.

use std::os::unix::process::ExitStatusExt;
use std::sync::Arc;

use assert_cmd::Command;
use hotlab::lang::parser::MAX_EXPR_DEPTH;
use hotlab::lang::{DiagKind, SourceFile};

const BACKENDS: [&str; 4] = ["interp", "jit", "jit-opt", "object"];

/// A program whose `main` returns a chain of `n` links of one shape, and the characters a
/// diagnostic about a link may point at.
fn chain(shape: &str, n: usize) -> (String, &'static [char]) {
    match shape {
        "sum" => (
            format!("fn main() -> i64 {{ return 1{} }}\n", " + 1".repeat(n)),
            &['+'],
        ),
        "cast" => (
            format!("fn main() -> i64 {{ return 1{} }}\n", " as i64".repeat(n)),
            &['a'],
        ),
        "index" => (
            format!(
                "fn main() -> i64 {{\n    let a = 1\n    return a{}\n}}\n",
                "[0]".repeat(n)
            ),
            &['['],
        ),
        "field" => (
            format!(
                "class N {{ var n: i64 = 1 }}\nfn main() -> i64 {{\n    let x = new N()\n    \
                 return x{}\n}}\n",
                ".n".repeat(n)
            ),
            &['.'],
        ),
        "call" => (
            format!(
                "fn f() -> i64 {{ return 1 }}\nfn main() -> i64 {{ return f{} }}\n",
                "()".repeat(n)
            ),
            &['('],
        ),
        "method" => (
            format!(
                "class N {{\n    fn m(self) -> N {{ return self }}\n    fn v(self) -> i64 {{ \
                 return 7 }}\n}}\nfn main() -> i64 {{\n    let x = new N()\n    return x{}.v()\n}}\n",
                ".m()".repeat(n)
            ),
            &['.'],
        ),
        "and" => (
            format!(
                "fn main() -> i64 {{\n    if true{} {{ return 1 }}\n    return 0\n}}\n",
                " && true".repeat(n)
            ),
            &['&'],
        ),
        other => panic!("no shape {other}"),
    }
}

const SHAPES: [&str; 7] = ["sum", "cast", "index", "field", "call", "method", "and"];

fn run(dir: &std::path::Path, text: &str, backend: &str) -> std::process::Output {
    let path = dir.join("deep.hot");
    std::fs::write(&path, text).unwrap();
    Command::cargo_bin("hotlab")
        .unwrap()
        .args(["run", "--backend", backend])
        .arg(&path)
        .output()
        .unwrap()
}

/// The `LINE:COL` after `deep.hot:` in a rendered diagnostic.
fn location(stderr: &str) -> (usize, usize) {
    let at = stderr.find("deep.hot:").expect("no location") + "deep.hot:".len();
    let mut parts = stderr[at..].split(|c: char| !c.is_ascii_digit());
    let line = parts.next().unwrap().parse().unwrap();
    let col = parts.next().unwrap().parse().unwrap();
    (line, col)
}

#[test]
fn chains_past_the_limit_are_one_located_error_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    for shape in SHAPES {
        for n in [10_000, 100_000] {
            let (text, at) = chain(shape, n);
            for backend in BACKENDS {
                let out = run(dir.path(), &text, backend);
                let err = String::from_utf8_lossy(&out.stderr);
                let what = format!("{shape} x{n} on {backend}");
                assert_eq!(
                    out.status.signal(),
                    None,
                    "{what}: killed by a signal: {err}"
                );
                assert_eq!(out.status.code(), Some(2), "{what}: {err}");
                assert!(out.stdout.is_empty(), "{what}: printed a result");
                assert!(
                    err.starts_with(&format!(
                        "error[syntax]: expression nested too deeply: more than \
                         {MAX_EXPR_DEPTH} levels"
                    )),
                    "{what}: {err}"
                );
                assert!(err.contains("split the expression with `let`"), "{what}");
                assert_eq!(err.matches("error[").count(), 1, "{what}: {err}");
                // The location points at a link of the chain, and the span is underlined.
                let (line, col) = location(&err);
                let c = text.lines().nth(line - 1).unwrap().chars().nth(col - 1);
                assert!(
                    c.is_some_and(|c| at.contains(&c)),
                    "{what}: {line}:{col} is {c:?}"
                );
                assert!(err.contains('^'), "{what}: nothing underlined: {err}");
            }
        }
    }
}

#[test]
fn chains_just_under_the_limit_run_alike_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let n = MAX_EXPR_DEPTH as usize - 10;
    for (shape, want) in [
        ("sum", format!("{}", n + 1)),
        ("cast", "1".to_string()),
        ("method", "7".to_string()),
        ("and", "1".to_string()),
    ] {
        let (text, _) = chain(shape, n);
        for backend in BACKENDS {
            let out = run(dir.path(), &text, backend);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{shape} on {backend}: {err}");
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim(),
                want,
                "{shape} on {backend}"
            );
        }
    }
}

#[test]
fn a_chain_inside_a_closure_counts_with_the_chain_around_it() {
    let half = MAX_EXPR_DEPTH as usize / 2;
    let text = |outer: usize| {
        format!(
            "fn main() -> i64 {{ return (|x: i64| -> i64 {{ return x{} }})(1){} }}\n",
            " + 1".repeat(half),
            " + 1".repeat(outer)
        )
    };
    let compile = |t: String| hotlab::lang::compile(Arc::new(SourceFile::new("deep.hot", t)));
    assert!(compile(text(half / 2)).is_ok());
    let d = compile(text(half + 10)).unwrap_err();
    assert_eq!(d.0.len(), 1, "{d}");
    assert_eq!(d.0[0].kind, DiagKind::Syntax);
    assert!(d.0[0].message.contains("nested too deeply"), "{d}");
}

#[test]
fn deep_lines_in_a_long_file_report_each_once() {
    // Every broken statement is reported once, and the good ones around it still check.
    let deep = format!("    let a = 1{}\n", " + 1".repeat(5_000));
    let text = format!("fn main() -> i64 {{\n{deep}    let b = 2\n{deep}    return b\n}}\n");
    let d = hotlab::lang::compile(Arc::new(SourceFile::new("deep.hot", text))).unwrap_err();
    assert_eq!(d.0.len(), 2, "{d}");
    assert!(d.0.iter().all(|d| d.message.contains("nested too deeply")));
}

#[test]
fn asm_lowers_a_chain_just_under_the_limit_without_overflowing() {
    // `hotlab asm` lowers in its own process: on the large stack `run` uses, not the 8 MiB main
    // thread (a method chain near the limit needs a few MiB there).
    let dir = tempfile::tempdir().unwrap();
    let n = MAX_EXPR_DEPTH as usize - 10;
    for shape in ["sum", "method"] {
        let (text, _) = chain(shape, n);
        let path = dir.path().join(format!("{shape}.hot"));
        std::fs::write(&path, &text).unwrap();
        for backend in ["jit", "jit-opt", "object"] {
            let out = Command::cargo_bin("hotlab")
                .unwrap()
                .args(["asm", "--backend", backend, "--fn", "main"])
                .arg(&path)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.signal(), None, "{shape} on {backend}: {err}");
            assert_eq!(out.status.code(), Some(0), "{shape} on {backend}: {err}");
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("; main"),
                "{shape} on {backend}"
            );
        }
    }
}
