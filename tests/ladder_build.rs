//! Every shipped ladder builds in both builds, and every row returns the native row's checksum;
//! a user-ordered ladder runs too. No timing here: these are the rows' results.

use std::sync::Arc;

use hotlab::ladder::bench::{Build, CalledMethod, DEFAULT_SNIPPET, LadderBench};
use hotlab::ladder::{self, BUILTIN, Ladder};
use hotlab::lang::{self, SourceFile};

fn snippet(text: &str) -> hotlab::lang::Program {
    lang::compile(Arc::new(SourceFile::new("t.hot", text))).expect("snippet")
}

fn check_rows(ladder: Ladder, text: &str, value: i64) {
    let name = ladder.name.clone();
    let program = snippet(text);
    let mut bench = LadderBench::build(
        ladder,
        CalledMethod::Snippet(&program),
        &[Build::Jit, Build::Aot],
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(bench.value, value);
    let n = 1000u64;
    for row in &mut bench.rows {
        let (sum, fault) = row.run(n);
        assert!(fault.is_none(), "{name}: {:?}: {fault:?}", row.path);
        assert_eq!(sum, n.wrapping_mul(value as u64), "{name}: {}", row.path);
        if row.build.is_some() {
            assert!(
                row.instructions() > 3,
                "{}: {}",
                row.path,
                row.instructions()
            );
        }
    }
}

#[test]
fn every_shipped_ladder_returns_the_native_checksum_in_both_builds() {
    for (name, _) in BUILTIN {
        check_rows(ladder::resolve(name).unwrap(), DEFAULT_SNIPPET, 1);
    }
}

#[test]
fn a_snippet_with_work_returns_its_value_on_every_row() {
    let text =
        "fn call() -> i64 {\n    var s = 0\n    for i in 0..10 { s = s + i }\n    return s\n}\n";
    check_rows(ladder::resolve("host_call").unwrap(), text, 45);
}

const USER_ORDER: &str = r#"
name = "mine"
description = "depth before slot, catch first"

[[step]]
layer = "native"
title = "native"
text = "floor"

[[step]]
layer = "depth"
title = "depth"
text = "bound pointer inside a depth check"

[[step]]
layer = "catch"
title = "catch"
text = "catch around depth"

[[step]]
layer = "slot"
title = "slot"
text = "now through the slot"

[[step]]
layer = "detached"
title = "detached"
text = "outermost"
"#;

#[test]
fn a_user_ordered_ladder_runs_in_both_builds() {
    let ladder = Ladder::parse("mine.toml", USER_ORDER).unwrap();
    let program = snippet(DEFAULT_SNIPPET);
    let bench = LadderBench::build(
        ladder.clone(),
        CalledMethod::Snippet(&program),
        &[Build::Jit, Build::Aot],
    )
    .unwrap();
    let paths: Vec<String> = bench.rows.iter().map(|r| r.path.to_string()).collect();
    assert!(
        paths.contains(&"Detached<TryCatch<Depth<Slot>>>".to_string()),
        "{paths:?}"
    );
    assert!(paths.contains(&"Depth<Bound>".to_string()), "{paths:?}");
    assert_eq!(bench.rows.len(), 1 + 2 * 4);
    check_rows(ladder, DEFAULT_SNIPPET, 1);
}
