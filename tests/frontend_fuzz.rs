//! The front end never panics: random bytes, random token streams and mutated valid programs
//! all end in a program or in diagnostics (which render).

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
