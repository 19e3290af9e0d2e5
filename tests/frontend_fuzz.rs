//! The front end never panics: random bytes, random token streams and mutated valid programs
//! all end in a program or in diagnostics (which render). Long flat expressions and long
//! chains (100,000 terms, casts, indexes, fields, calls) end in one clear error or a program,
//! never a stack overflow: each runs on a thread with the 2 MiB stack of a spawned thread, the
//! smallest a caller of the front end has.

mod common;

use std::sync::Arc;

use hotlab::lang::token::{Keyword, Punct};
use hotlab::lang::{SourceFile, compile};
use proptest::prelude::*;

fn front_end(text: &str) {
    let src = Arc::new(SourceFile::new("fuzz.hot", text));
    if let Err(d) = compile(src.clone()) {
        assert!(!d.is_empty());
        let _ = d.render(&src, false);
    }
}

/// The front end's answer on a 2 MiB thread: the program, or the rendered diagnostics and how
/// many there are.
fn on_small_stack(text: String) -> Result<(), (usize, String)> {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let src = Arc::new(SourceFile::new("long.hot", text));
            match compile(src.clone()) {
                Ok(_) => Ok(()),
                Err(d) => Err((d.0.len(), d.render(&src, false))),
            }
        })
        .unwrap()
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// `fn main() -> i64 { <prelude> let r = <expr> return 1 }` with `expr` made of `terms`
/// repetitions of `each` between `head` and `tail`.
fn long(prelude: &str, head: &str, each: &str, terms: usize, tail: &str) -> String {
    format!(
        "class N {{ var n: N? = null; var v: i64 = 1 }}\nfn id(x: i64) -> i64 {{ return x }}\n\
         fn main() -> i64 {{\n    {prelude}\n    let r = {head}{}{tail}\n    return 1\n}}\n",
        each.repeat(terms)
    )
}

/// The shapes of long expressions: name, prelude, head, repeated part, tail.
const LONG_SHAPES: [(&str, &str, &str, &str, &str); 9] = [
    ("sum", "", "1", " + 1", ""),
    ("mixed operators", "", "1", " * 1 - 1 + 1 & 1 | 1", ""),
    ("comparisons", "", "1 < 2", " && 3 >= 2", ""),
    ("logic", "", "true", " && true || false", ""),
    ("casts", "", "1", " as f64 as i64", ""),
    ("index chain", "let a = [1]", "a", "[0]", ""),
    ("field chain", "let x = new N()", "x", ".n", ""),
    ("nested calls", "", "", "id(", "1"),
    ("unary", "", "", "-", "1"),
];

/// A shape of 100 terms compiles or gives one error; 100,000 terms of it give exactly one
/// error, which says the expression (or its brackets) nests too deeply, and where.
#[test]
fn long_flat_expressions_and_chains_are_one_error_or_a_program() {
    for (name, prelude, head, each, tail) in LONG_SHAPES {
        // `id(` leaves its brackets open: close them.
        let close = |n: usize| {
            if each == "id(" {
                ")".repeat(n)
            } else {
                String::new()
            }
        };
        let short = format!("{tail}{}", close(100));
        // 100 terms are within the limit: a program, or one error (`a[0][0]` of a flat array
        // is one type error, not one per index).
        if let Err((n, d)) = on_small_stack(long(prelude, head, each, 100, &short)) {
            assert_eq!(n, 1, "{name}: 100 terms give {n} diagnostics:\n{d}");
        }
        let tail_long = format!("{tail}{}", close(100_000));
        match on_small_stack(long(prelude, head, each, 100_000, &tail_long)) {
            Ok(()) => panic!("{name}: 100,000 terms compiled past the depth limit"),
            Err((n, d)) => {
                assert_eq!(
                    n,
                    1,
                    "{name}: {n} diagnostics:\n{}",
                    &d[..d.len().min(2000)]
                );
                // Operator chains count levels; calls and prefix operators nest like brackets.
                assert!(
                    d.contains("expression nested too deeply: more than 4000 levels")
                        || d.contains("nesting is too deep (more than 128 levels)"),
                    "{name}: {}",
                    &d[..d.len().min(2000)]
                );
                assert!(
                    d.contains("long.hot:5:"),
                    "{name}: {}",
                    &d[..d.len().min(2000)]
                );
                // Each source line is shown once, not once per term.
                assert!(
                    d.len() < 4 * 100_000 * each.len().max(2),
                    "{name}: {} bytes",
                    d.len()
                );
            }
        }
    }
}

/// One token's spelling, from the whole vocabulary.
fn token() -> impl Strategy<Value = String> {
    let keywords: Vec<String> = Keyword::ALL
        .iter()
        .map(|k| k.as_str().to_string())
        .collect();
    let puncts: Vec<String> = Punct::ALL.iter().map(|p| p.as_str().to_string()).collect();
    prop_oneof![
        3 => proptest::sample::select(keywords),
        4 => proptest::sample::select(puncts),
        2 => proptest::sample::select(vec![
            "x", "y", "main", "f", "i64", "f64", "bool", "str", "vec", "sink", "sqrt", "assert",
            "len", "push", "a_1",
        ])
        .prop_map(str::to_string),
        1 => any::<u64>().prop_map(|v| v.to_string()),
        1 => proptest::sample::select(vec![
            "0x2A", "1_000", "1.5", "2e-3", "9223372036854775808", "0", "-1",
        ])
        .prop_map(str::to_string),
        1 => proptest::sample::select(vec!["\"s\"", "\"a ${x} b\"", "\"", "${", "/*", "*/", "//"])
            .prop_map(str::to_string),
        2 => proptest::sample::select(vec!["\n", ";", "\n\n"]).prop_map(str::to_string),
    ]
}

/// Every golden program, as seeds for mutation.
fn goldens() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    out.sort();
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        front_end(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn random_text_never_panics(text in "\\PC{0,120}") {
        front_end(&text);
    }

    #[test]
    fn random_token_streams_never_panic(tokens in proptest::collection::vec(token(), 0..80)) {
        front_end(&tokens.join(" "));
        front_end(&tokens.concat());
    }

    #[test]
    fn mutated_programs_never_panic(
        pick in any::<prop::sample::Index>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..3, token()), 1..6),
    ) {
        let goldens = goldens();
        let mut text = goldens[pick.index(goldens.len())].clone();
        for (at, kind, tok) in edits {
            let mut at = at.index(text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            match kind {
                0 => text.insert_str(at, &tok),
                1 => {
                    let mut end = (at + tok.len()).min(text.len());
                    while !text.is_char_boundary(end) {
                        end -= 1;
                    }
                    text.replace_range(at..end, "");
                }
                _ => text.truncate(at),
            }
        }
        front_end(&text);
    }

    #[test]
    fn generated_programs_compile(seed in any::<u64>()) {
        let text = common::generator::program(seed);
        if let Err(d) = common::compile_text("gen.hot", &text) {
            panic!("generated program does not compile:\n{text}\n{d}");
        }
    }
}
