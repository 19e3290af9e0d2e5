//! The module graph has no back-arrows: each top-level module of `src/` imports (`crate::X`)
//! only modules of earlier layers, and modules of one layer do not import each other. The test
//! reads every `.rs` file under `src/`, with comments and string literals blanked out, and names
//! the file, the line and the import of every path against the order.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The layers, first to last: a module may import only modules of earlier rows.
const LAYERS: &[&[&str]] = &[
    // The engine and the table writers: nothing of the crate.
    &["measure", "export"],
    // Source to a checked program.
    &["lang"],
    // The object runtime and host functions the programs call.
    &["runtime"],
    // The executable program: interp, jit, jit-opt, object, behind one facade.
    &["backend"],
    // What is measured: ladders of call-path layers, and the cases with their twins.
    &["ladder", "cases"],
    // What a job produced, defined once: the worker builds it, the session keeps it.
    &["results"],
    // Jobs in a child process (a private wire format).
    &["worker"],
    // The session model every front end reads.
    &["session"],
    // What the front ends share: failures and exit codes, snippet loading.
    &["frontend"],
    // The interactive front ends.
    &["repl", "tui"],
    // The command line: dispatches to all of the above.
    &["cli"],
];

/// Imports that the layer order allows but the design does not: the front ends read the
/// session's model, and the worker's protocol is the session's private wire format.
const THROUGH: &[(&str, &str, &str)] = &[
    ("repl", "worker", "through `session`"),
    ("tui", "worker", "through `session`"),
    ("frontend", "worker", "through `session`"),
];

/// Files that belong to no layer: the crate root and the binary.
const ROOTS: &[&str] = &["lib.rs", "main.rs"];

/// The layer of a top-level module, if it has one.
fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|row| row.contains(&module))
}

/// `text` with comments, string and char literals replaced by spaces (newlines kept, so line
/// numbers stay right).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == b'/' && next == Some(b'/') {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if c == b'/' && next == Some(b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if c == b'r' && (next == Some(b'"') || next == Some(b'#')) && !ident_before(b, i) {
            // A raw string: r"...", r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let end: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let mut k = j + 1;
            while k < b.len() && !b[k..].starts_with(&end) {
                k += 1;
            }
            let stop = (k + end.len()).min(b.len());
            for &x in &b[i..stop] {
                blank(&mut out, x);
            }
            i = stop;
        } else if c == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
                blank(&mut out, b[i]);
                i += 1;
            }
            if i < b.len() {
                out.push(b' ');
                i += 1;
            }
        } else if c == b'\'' && is_char_literal(b, i) {
            let len = char_literal_len(b, i);
            for &x in &b[i..i + len] {
                blank(&mut out, x);
            }
            i += len;
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// Whether the `'` at `i` opens a char literal (not a lifetime or a label).
fn is_char_literal(b: &[u8], i: usize) -> bool {
    match (b.get(i + 1), b.get(i + 2)) {
        (Some(b'\\'), _) => true,
        (Some(_), Some(b'\'')) => true,
        // A multi-byte UTF-8 char: its closing quote comes within four bytes.
        (Some(&x), _) if x >= 0x80 => b[i + 1..].iter().take(5).any(|&y| y == b'\''),
        _ => false,
    }
}

fn char_literal_len(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    if b.get(j) == Some(&b'\\') {
        j += 2;
    }
    while j < b.len() && b[j] != b'\'' {
        j += 1;
    }
    (j + 1 - i).min(b.len() - i)
}

/// Every top-level module named after `crate::` in `code`, with its 1-based line: plain paths
/// (`crate::lang::Span`) and groups (`crate::{lang::Span, runtime}`), nested or not.
fn crate_imports(code: &str) -> Vec<(usize, String)> {
    let b = code.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(pos) = code[from..].find("crate::") {
        let at = from + pos;
        from = at + "crate::".len();
        if ident_before(b, at) {
            continue; // `hotlab_crate::` or the like
        }
        let line = code[..at].matches('\n').count() + 1;
        let rest = &code[from..];
        let rest_trim = rest.trim_start();
        if let Some(group) = rest_trim.strip_prefix('{') {
            // The top-level names of the group: at brace depth 0, the first identifier of each
            // comma-separated item.
            let mut depth = 0usize;
            let mut expect_name = true;
            let mut name = String::new();
            let mut offset = 0;
            for (k, ch) in group.char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        offset = k;
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => expect_name = true,
                    c if expect_name && depth == 0 && (c.is_alphanumeric() || c == '_') => {
                        name.push(c)
                    }
                    _ if !name.is_empty() => {
                        let line_here = line + group[..k].matches('\n').count();
                        found.push((line_here, std::mem::take(&mut name)));
                        expect_name = false;
                    }
                    _ => {}
                }
                offset = k;
            }
            if !name.is_empty() {
                found.push((line + group[..offset].matches('\n').count(), name));
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push((line, name));
            }
        }
    }
    found
}

/// The top-level module a file under `src/` belongs to (`None` for the crate roots).
fn module_of(relative: &Path) -> Option<String> {
    let mut parts = relative.components();
    let first = parts.next()?.as_os_str().to_string_lossy().into_owned();
    if parts.next().is_some() {
        return Some(first);
    }
    if ROOTS.contains(&first.as_str()) {
        return None;
    }
    Some(first.trim_end_matches(".rs").to_string())
}

/// The imports of `files` (path relative to `src/`, text) against the layer order, one line
/// each: `src/FILE:LINE: MODULE (layer N) imports crate::OTHER (layer M) ...`.
fn violations(files: &[(PathBuf, String)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut unplaced = BTreeSet::new();
    for (path, text) in files {
        let Some(module) = module_of(path) else {
            continue;
        };
        let Some(own) = layer(&module) else {
            unplaced.insert(module);
            continue;
        };
        for (line, target) in crate_imports(&code_only(text)) {
            if target == module || target == "self" || target == "super" {
                continue;
            }
            let shown = format!("src/{}:{line}", path.display());
            if let Some((_, _, how)) = THROUGH
                .iter()
                .find(|(from, to, _)| *from == module && *to == target)
            {
                out.push(format!(
                    "{shown}: `{module}` imports `crate::{target}`: it reaches it {how} only"
                ));
                continue;
            }
            match layer(&target) {
                None => {
                    unplaced.insert(target);
                }
                Some(l) if l < own => {}
                Some(l) if l == own => out.push(format!(
                    "{shown}: `{module}` imports `crate::{target}`, a module of its own layer \
                     ({}): peers must not import each other",
                    LAYERS[own].join(", ")
                )),
                Some(l) => out.push(format!(
                    "{shown}: `{module}` (layer {}) imports `crate::{target}` (layer {}), a later \
                     layer: a back-arrow",
                    own + 1,
                    l + 1
                )),
            }
        }
    }
    for module in unplaced {
        out.push(format!(
            "module `{module}` has no place in LAYERS (tests/architecture.rs): give it one"
        ));
    }
    out
}

fn sources(dir: &Path, base: &Path, out: &mut Vec<(PathBuf, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sources(&path, base, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path.strip_prefix(base).unwrap().to_path_buf(), text));
        }
    }
}

#[test]
fn the_module_graph_follows_the_layer_order() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &src, &mut files);
    assert!(
        files.len() > 50,
        "read only {} files under src/",
        files.len()
    );
    let found = violations(&files);
    assert!(
        found.is_empty(),
        "{} import(s) against the layer order (tests/architecture.rs LAYERS):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn every_layer_is_a_module_of_the_crate() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for module in LAYERS.iter().flat_map(|row| row.iter()) {
        assert!(
            src.join(module).is_dir() || src.join(format!("{module}.rs")).is_file(),
            "LAYERS names `{module}`, which is not a module under src/"
        );
    }
}

fn file(path: &str, text: &str) -> (PathBuf, String) {
    (PathBuf::from(path), text.to_string())
}

#[test]
fn a_back_arrow_is_named_with_its_file_and_line() {
    let files = [file(
        "lang/check.rs",
        "//! checks\nuse crate::lang::Span;\n\nuse crate::runtime::host::HostFn;\n",
    )];
    let found = violations(&files);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("src/lang/check.rs:4: `lang` (layer 2) imports `crate::runtime`"),
        "{}",
        found[0]
    );
}

#[test]
fn groups_nested_paths_and_peers_are_read() {
    let files = [
        file(
            "tui/app.rs",
            "use crate::{\n    session::Session,\n    cli::{Failure, exit},\n    lang::{self, Span},\n};\n",
        ),
        file("ladder/run.rs", "fn f() { crate::cases::twin(); }\n"),
        file("cli/mod.rs", "use crate::{tui, repl::run};\n"),
        file("repl/mod.rs", "use crate::worker::protocol::Job;\n"),
    ];
    let found = violations(&files);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(found[0].starts_with("src/tui/app.rs:3: `tui` (layer 10) imports `crate::cli`"));
    assert!(found[1].starts_with("src/ladder/run.rs:1: `ladder` imports `crate::cases`"));
    assert!(found[1].contains("peers must not import each other"));
    assert!(found[2].starts_with("src/repl/mod.rs:1: `repl` imports `crate::worker`"));
    assert!(found[2].ends_with("through `session` only"));
}

#[test]
fn comments_strings_and_new_modules_are_handled() {
    let files = [
        file(
            "lang/hir.rs",
            "/// See [`x`](crate::runtime::ScriptError).\n/* crate::cli */\nconst S: &str = \
             \"crate::tui\";\nconst R: &str = r#\"crate::repl \"q\"\"#;\nfn f<'a>(c: char) -> bool { c == '\"' }\n",
        ),
        file("gadget/mod.rs", "use crate::lang::Span;\n"),
    ];
    let found = violations(&files);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].contains("module `gadget` has no place in LAYERS"));
}
