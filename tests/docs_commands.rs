//! Every `hotlab ...` example in README.md and docs/*.md (a code-block line that starts with
//! `hotlab ` or `$ hotlab `) parses with hotlab's own command line, names only files that exist
//! (paths under the repository's cases/, tests/, docs/, micro/, themes/), and the quick ones
//! (`run`, `asm`) run and succeed, or exit with the code a trailing `# exits N` names; an
//! `error: ...` line right after such a command is what it prints first on stderr. A synopsis
//! line (`[--opt]`, `A|B`) is not an example.

use std::path::Path;

use clap::Parser;

struct Example {
    place: String,
    words: Vec<String>,
    /// The exit code the example names (`# exits N`), else 0.
    exit: i32,
    /// The `error: ...` line shown after it, if any.
    error: Option<String>,
}

fn examples() -> Vec<Example> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.strip_prefix(root).unwrap().display().to_string();
        let mut in_block = false;
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.trim_start().starts_with("```") {
                in_block = !in_block;
                continue;
            }
            let Some(rest) = line
                .strip_prefix("$ hotlab")
                .or_else(|| line.strip_prefix("hotlab"))
            else {
                continue;
            };
            if !in_block || !(rest.is_empty() || rest.starts_with(' ')) {
                continue;
            }
            // The command, without a comment or a redirection.
            let exit = rest
                .split_once(" # exits ")
                .and_then(|(_, code)| code.trim().parse().ok())
                .unwrap_or(0);
            let error = lines
                .get(i + 1)
                .filter(|next| next.starts_with("error: "))
                .map(|next| next.to_string());
            let command = rest.split(" #").next().unwrap_or("");
            let command = command.split(['<', '>']).next().unwrap_or("");
            if command.contains(" [") || command.contains('|') {
                continue;
            }
            let mut words = vec!["hotlab".to_string()];
            words.extend(command.split_whitespace().map(str::to_string));
            out.push(Example {
                place: format!("{name}:{}", i + 1),
                words,
                exit,
                error,
            });
        }
    }
    out
}

#[test]
fn every_example_parses_and_names_files_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let all = examples();
    assert!(all.len() >= 15, "only {} examples found", all.len());
    for e in &all {
        if let Err(err) = hotlab::cli::Cli::try_parse_from(&e.words) {
            panic!(
                "{}: `{}` does not parse:\n{err}",
                e.place,
                e.words.join(" ")
            );
        }
        for w in &e.words[1..] {
            let repo_path = ["cases/", "tests/", "docs/", "micro/", "themes/"]
                .iter()
                .any(|d| w.starts_with(d));
            assert!(
                !repo_path || root.join(w).exists(),
                "{}: `{}` names {w}, which does not exist",
                e.place,
                e.words.join(" ")
            );
        }
    }
}

#[test]
fn the_quick_examples_run() {
    let mut ran = 0;
    for e in examples() {
        if !matches!(e.words.get(1).map(String::as_str), Some("run" | "asm")) {
            continue;
        }
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hotlab"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(&e.words[1..])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(e.exit),
            "{}: `{}` exited {:?}:\n{stderr}",
            e.place,
            e.words.join(" "),
            out.status.code(),
        );
        if let Some(error) = &e.error {
            assert_eq!(
                stderr.lines().next(),
                Some(error.as_str()),
                "{}: `{}` printed another error",
                e.place,
                e.words.join(" ")
            );
        }
        ran += 1;
    }
    assert!(ran >= 5, "only {ran} quick examples ran");
}
