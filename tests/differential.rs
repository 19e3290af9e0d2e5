//! Random well-typed programs (from `common/gen.rs`): each passes the checker, every backend
//! gives a deterministic outcome, and `jit` == `interp` == `object` (the last for programs
//! without classes), values and errors (kind and location) alike. Programs use vecs and strings
//! too, and the backends' vec and string blocks are all freed after each run, also after a run
//! that stops with an error.

mod common;

use std::collections::BTreeMap;

use hotlab::backend::Checks;
use proptest::prelude::*;

/// Each backend's outcome for a generated program (panics with the program if it does not
/// compile).
fn outcomes(text: &str) -> Vec<(&'static str, String)> {
    let program = match common::compile_text("gen.hot", text) {
        Ok(p) => p,
        Err(d) => panic!("generated program does not compile:\n{text}\n{d}"),
    };
    common::backends_for(&program)
        .into_iter()
        .map(|(name, run)| {
            let before = hotlab::runtime::values::live_blocks();
            let out = common::outcome(&program, &run(&program, Checks::On));
            let leaked = hotlab::runtime::values::live_blocks() - before;
            // Error runs too: an error releases what the unwound frames held (issue #4).
            assert_eq!(leaked, 0, "{name} leaked {leaked} blocks on:\n{text}");
            (name, out)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn generated_programs_run_deterministically(text in common::generator::arb_program()) {
        let first = outcomes(&text);
        let second = outcomes(&text);
        prop_assert_eq!(&first, &second, "program:\n{}", text);
        let (reference, expected) = &first[0];
        for (name, got) in &first[1..] {
            prop_assert_eq!(got, expected, "{} differs from {} on:\n{}", name, reference, text);
        }
    }
}

/// The generator reaches every kind of outcome, so the property above means something.
#[test]
fn generator_covers_values_and_errors() {
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut made, mut called) = (0, 0);
    // The v2 additions the generator writes, and in how many programs each appears.
    let mut additions: BTreeMap<&str, usize> = BTreeMap::new();
    for seed in 0..400 {
        let text = common::generator::program(seed);
        for construct in [
            ">>>",
            "0xFFFF_FFFF_FFFF_FFFF",
            "abs(",
            "min(",
            "round(",
            "..=",
            " step ",
        ] {
            *additions.entry(construct).or_default() += usize::from(text.contains(construct));
        }
        // Closures: made (`let c.. = |..| -> i64 {`) and called (`c..(`).
        made += usize::from(text.contains("| -> i64 { return"));
        called += usize::from(calls_a_closure(&text));
        let (_, out) = &outcomes(&text)[0];
        let kind = if out.contains("division by zero") {
            "division by zero"
        } else if out.contains("out of range") {
            "index out of range"
        } else if out.contains("pop from an empty vec") {
            "pop from an empty vec"
        } else if out.starts_with("error") {
            "other error"
        } else {
            "value"
        };
        *kinds.entry(kind).or_default() += 1;
    }
    println!("{kinds:?}");
    for kind in [
        "value",
        "division by zero",
        "index out of range",
        "pop from an empty vec",
    ] {
        assert!(kinds.get(kind).copied().unwrap_or(0) >= 10, "{kinds:?}");
    }
    assert_eq!(kinds.get("other error"), None, "{kinds:?}");
    assert!(additions.values().all(|&n| n >= 10), "{additions:?}");
    assert!(
        made >= 40 && called >= 20,
        "closures made in {made}, called in {called}"
    );
}

/// Whether `text` calls a closure variable (`c12(`; closures are named `c` and a number).
fn calls_a_closure(text: &str) -> bool {
    let bytes = text.as_bytes();
    (1..bytes.len()).any(|i| {
        let starts = bytes[i] == b'c' && !bytes[i - 1].is_ascii_alphanumeric();
        let digits = bytes[i + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        starts && digits > 0 && bytes.get(i + 1 + digits) == Some(&b'(')
    })
}

/// Print one generated program (`cargo test --test differential show -- --nocapture`).
#[test]
fn show_a_generated_program() {
    let text = common::generator::program(7);
    assert!(text.contains("fn main() -> i64"));
    println!("{text}");
}
