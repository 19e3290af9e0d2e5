//! Every ```` ```hot ```` block in `docs/*.md` is compiled and run on every backend.
//!
//! A block's first line may state what it does: `// expect: VALUE`, `// expect-error: MESSAGE at
//! LINE:COL` (a run-time error), or `// expect-compile-error: KIND` (a diagnostic of that kind,
//! e.g. `type`). A block without one must compile, and run without error if it has a `main`.

mod common;

use std::path::Path;

use hotlab::backend::Checks;

struct Block {
    file: String,
    line: usize,
    code: String,
}

fn blocks() -> Vec<Block> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let mut current: Option<Block> = None;
        for (i, line) in text.lines().enumerate() {
            match current.as_mut() {
                None if line.trim() == "```hot" => {
                    current = Some(Block {
                        file: file.clone(),
                        line: i + 1,
                        code: String::new(),
                    });
                }
                Some(_) if line.trim() == "```" => out.extend(current.take()),
                Some(block) => {
                    block.code.push_str(line);
                    block.code.push('\n');
                }
                None => {}
            }
        }
        assert!(current.is_none(), "{file}: unclosed code block");
    }
    out
}

fn run_block(block: &Block) -> Result<(), String> {
    let first = block.code.lines().next().unwrap_or_default();
    let compiled = common::compile_text("doc.hot", &block.code);
    if let Some(kind) = first.strip_prefix("// expect-compile-error: ") {
        return match compiled {
            Ok(_) => Err(format!("compiled, expected a `{kind}` diagnostic")),
            Err(d) if d.0[0].kind.code() == kind.trim() => Ok(()),
            Err(d) => Err(format!("expected a `{kind}` diagnostic, got:\n{d}")),
        };
    }
    let program = compiled.map_err(|d| format!("does not compile:\n{d}"))?;
    let expect = if let Some(v) = first.strip_prefix("// expect: ") {
        Some(v.trim().to_string())
    } else {
        first
            .strip_prefix("// expect-error: ")
            .map(|e| format!("error: {}", e.trim()))
    };
    if program.main.is_none() {
        return match expect {
            Some(_) => Err("states a result but has no `main`".to_string()),
            None => Ok(()),
        };
    }
    for (backend, run) in common::backends_for(&program) {
        let program = program.clone();
        let got = common::with_stack(common::TEST_STACK, move || {
            common::outcome(&program, &run(&program, Checks::On))
        });
        match &expect {
            Some(e) if *e != got => {
                return Err(format!("on {backend}: expected `{e}`, got `{got}`"));
            }
            None if got.starts_with("error:") => return Err(format!("on {backend}: {got}")),
            _ => {}
        }
    }
    Ok(())
}

#[test]
fn code_blocks_in_the_docs_run() {
    let blocks = blocks();
    assert!(!blocks.is_empty(), "no ```hot blocks found in docs/");
    let failures: Vec<String> = blocks
        .iter()
        .filter_map(|b| {
            run_block(b)
                .err()
                .map(|e| format!("{}:{}: {e}", b.file, b.line))
        })
        .collect();
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
