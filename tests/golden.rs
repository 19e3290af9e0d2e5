//! Golden programs: every `tests/golden/*.hot` runs on every backend and must give the outcome
//! its first line states: `// expect: VALUE` or `// expect-error: MESSAGE at LINE:COL`.
//! A later leading comment line `// checks: off` runs it with run-time checks off.

mod common;

use std::path::Path;

use hotlab::backend::Checks;

struct Case {
    name: String,
    text: String,
    expect: String,
    checks: Checks,
}

fn load(path: &Path) -> Case {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let first = text.lines().next().unwrap_or_default();
    let expect = if let Some(v) = first.strip_prefix("// expect: ") {
        v.trim().to_string()
    } else if let Some(e) = first.strip_prefix("// expect-error: ") {
        format!("error: {}", e.trim())
    } else {
        panic!("{name}: the first line must be `// expect: ...` or `// expect-error: ...`");
    };
    let checks = if text
        .lines()
        .take_while(|l| l.starts_with("//"))
        .any(|l| l.trim() == "// checks: off")
    {
        Checks::Off
    } else {
        Checks::On
    };
    Case {
        name,
        text,
        expect,
        checks,
    }
}

fn cases() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hot"))
        .collect();
    paths.sort();
    paths.iter().map(|p| load(p)).collect()
}

#[test]
fn golden_programs_on_every_backend() {
    let cases = cases();
    assert!(cases.len() >= 30, "only {} golden programs", cases.len());
    let mut failures = Vec::new();
    for case in cases {
        let program = match common::compile_text(&case.name, &case.text) {
            Ok(p) => p,
            Err(d) => {
                failures.push(format!("{}: does not compile:\n{}", case.name, d));
                continue;
            }
        };
        for (backend, run) in common::backends_for(&program) {
            let program = program.clone();
            let checks = case.checks;
            let got = common::with_stack(common::TEST_STACK, move || {
                let result = run(&program, checks);
                common::outcome(&program, &result)
            });
            if got != case.expect {
                failures.push(format!(
                    "{} on {backend}: expected `{}`, got `{got}`",
                    case.name, case.expect
                ));
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// Runaway recursion stops with `StackExhausted` on a small (2 MiB) thread too, also when each
/// call nests expressions and blocks as deeply as the parser allows.
#[test]
fn runaway_recursion_is_an_error_on_a_small_stack() {
    let nested_expr = format!("{}n{}", "(1 + ".repeat(60), ")".repeat(60));
    let nested_blocks = format!("{}x += 1{}", "if true { ".repeat(40), " }".repeat(40));
    let text = format!(
        "fn down(n: i64) -> i64 {{\n    var x = {nested_expr}\n    {nested_blocks}\n    \
         return down(x + 1) + [down(n + 2)][0]\n}}\nfn main() -> i64 {{ return down(0) }}\n"
    );
    let program = common::compile_text("deep.hot", &text).unwrap();
    for (backend, run) in common::backends() {
        let program = program.clone();
        let got = common::with_stack(2 << 20, move || {
            common::outcome(&program, &run(&program, Checks::On))
        });
        assert_eq!(
            got, "error: call stack exhausted in `down` (runaway recursion?) at 1:4",
            "{backend}"
        );
    }
}

/// A deep but finite recursion completes on the default test stack.
#[test]
fn recursion_a_thousand_deep_fits_a_small_stack() {
    let text = "fn sum(n: i64) -> i64 {\n if n == 0 { return 0 }\n return n + sum(n - 1)\n}\n\
                fn main() -> i64 { return sum(1000) }\n";
    let program = common::compile_text("sum.hot", text).unwrap();
    for (backend, run) in common::backends() {
        let program = program.clone();
        let got = common::with_stack(2 << 20, move || {
            common::outcome(&program, &run(&program, Checks::On))
        });
        assert_eq!(got, "500500", "{backend}");
    }
}
