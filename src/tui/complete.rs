//! Completion for the `:` command line: command names, then each command's arguments
//! (backends, ladders, settings, export formats, snippet names, files).

use std::path::Path;

use crate::session::command::COMMANDS;

/// Completions of `line` (the whole command line, starting with `:`), as whole lines, sorted.
/// `snippets` are the session's snippet names, `cases` its cases directory.
pub fn complete(line: &str, snippets: &[String], cases: &Path) -> Vec<String> {
    let Some(rest) = line.strip_prefix(':') else {
        return Vec::new();
    };
    let Some((cmd, arg)) = rest.split_once(' ') else {
        let mut names: Vec<String> = COMMANDS
            .iter()
            .filter(|c| c.name.starts_with(rest))
            .map(|c| format!(":{}", c.name))
            .collect();
        names.sort();
        return names;
    };
    let (done, word) = match arg.rsplit_once(' ') {
        Some((d, w)) => (format!("{d} "), w),
        None => (String::new(), arg),
    };
    let backends = || {
        crate::session::SESSION_BACKENDS
            .iter()
            .map(|b| b.name().to_string())
            .collect()
    };
    // An alias completes as its command does (the typed alias stays on the line).
    let name = crate::session::command::help_for(cmd).map_or(cmd, |c| c.name);
    // A command whose arguments are all there takes no more (`:load int_loop` then Tab).
    let takes = match name {
        "layers" => usize::MAX,
        "set" | "export" | "check" => 2,
        _ => 1,
    };
    if done.split_whitespace().count() >= takes {
        return Vec::new();
    }
    // `:layers -catch +depth` toggles a layer: the sign stays, the name completes.
    let (sign, word) = match word.chars().next() {
        Some(c @ ('+' | '-')) if name == "layers" => (c.to_string(), &word[1..]),
        _ => (String::new(), word),
    };
    let options: Vec<String> = match name {
        "help" => COMMANDS.iter().map(|c| c.name.to_string()).collect(),
        "backend" => backends(),
        "ladder" => crate::ladder::BUILTIN
            .iter()
            .map(|(n, _)| n.to_string())
            .collect(),
        // The native floor is always measured: it is no layer to choose.
        "layers" => crate::ladder::Layer::ALL
            .iter()
            .filter(|l| **l != crate::ladder::Layer::Native)
            .map(|l| l.name().to_string())
            .chain((sign.is_empty() && done.is_empty()).then(|| "reset".to_string()))
            .collect(),
        "set" if done.is_empty() => ["time", "band", "cpu", "checks", "limit", "mem"]
            .map(String::from)
            .to_vec(),
        "set" if done.trim() == "checks" => ["on", "off"].map(String::from).to_vec(),
        "set" if done.trim() == "cpu" => vec!["auto".into()],
        "export" if done.is_empty() => ["md", "csv", "json"].map(String::from).to_vec(),
        "snippet" => snippets.to_vec(),
        "twin" => crate::cases::twins()
            .iter()
            .map(|t| t.name.to_string())
            .collect(),
        "check" if done.is_empty() => vec!["--vs".into()],
        "check" => {
            let mut v = snippets.to_vec();
            v.extend(files(word));
            v
        }
        "load" => {
            let mut v = case_names(cases);
            v.extend(files(word));
            v
        }
        "compare" => {
            let mut v: Vec<String> = backends();
            v.extend(snippets.iter().cloned());
            v.extend(files(word));
            v
        }
        "save" | "export" => files(word),
        _ => Vec::new(),
    };
    let mut out: Vec<String> = options
        .into_iter()
        .filter(|o| o.starts_with(word))
        .map(|o| format!(":{cmd} {done}{sign}{o}"))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The cases `:load` takes by name (those of `dir`, else the ones built in).
fn case_names(dir: &Path) -> Vec<String> {
    match crate::cases::spec::load_dir(dir) {
        Ok(cases) => cases.into_iter().map(|c| c.name).collect(),
        Err(_) => crate::cases::twins()
            .iter()
            .map(|t| t.name.to_string())
            .collect(),
    }
}

/// Paths starting with `prefix` (directories end with `/`).
fn files(prefix: &str) -> Vec<String> {
    let (dir, stem) = match prefix.rfind('/') {
        Some(i) => (&prefix[..=i], &prefix[i + 1..]),
        None => ("", prefix),
    };
    let read = if dir.is_empty() { "." } else { dir };
    let Ok(entries) = std::fs::read_dir(read) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with(stem) || (name.starts_with('.') && !stem.starts_with('.')) {
                return None;
            }
            let slash = if e.path().is_dir() { "/" } else { "" };
            Some(format!("{dir}{name}{slash}"))
        })
        .collect()
}

/// The longest common prefix of the candidates (what Tab fills in before cycling).
pub fn common_prefix(candidates: &[String]) -> String {
    let Some(first) = candidates.first() else {
        return String::new();
    };
    let mut end = first.len();
    for c in &candidates[1..] {
        end = end.min(
            first
                .char_indices()
                .zip(c.chars())
                .find(|((_, a), b)| a != b)
                .map_or(end.min(c.len()), |((i, _), _)| i),
        );
    }
    first[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_then_arguments() {
        assert_eq!(complete(":lad", &[], Path::new("cases")), [":ladder"]);
        assert_eq!(
            complete(":backend j", &[], Path::new("cases")),
            [":backend jit", ":backend jit-opt"]
        );
        assert_eq!(
            complete(":ladder f", &[], Path::new("cases")),
            [":ladder fused"]
        );
        assert_eq!(
            complete(":set ch", &[], Path::new("cases")),
            [":set checks"]
        );
        assert_eq!(
            complete(":set checks o", &[], Path::new("cases")),
            [":set checks off", ":set checks on"]
        );
        assert_eq!(
            complete(
                ":snippet b",
                &["a.hot".into(), "b.hot".into()],
                Path::new("cases")
            ),
            [":snippet b.hot"]
        );
        assert!(complete("code", &[], Path::new("cases")).is_empty());
    }

    #[test]
    fn common_prefix_of_candidates() {
        let c = complete(":backend j", &[], Path::new("cases"));
        assert_eq!(common_prefix(&c), ":backend jit");
        assert_eq!(common_prefix(&[]), "");
    }
}
