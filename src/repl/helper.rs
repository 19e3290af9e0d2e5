//! The line editor's helper: completion (commands, case names, ladder names, twins, layers,
//! settings, file paths), hints (the rest of a command and its usage), and highlighting of hot
//! code and commands.

use std::borrow::Cow;

use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::highlight::{CmdKind, Highlighter};
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

use super::style;
use crate::session::command::{COMMANDS, help_for};

/// Names the completer offers besides commands and files, read once when the REPL starts.
#[derive(Debug, Default, Clone)]
pub struct Names {
    /// Case names (from the cases directory).
    pub cases: Vec<String>,
    /// Shipped ladder names.
    pub ladders: Vec<String>,
    /// Native twin names.
    pub twins: Vec<String>,
}

impl Names {
    /// The names of this build and of the cases in `dir` (the session's cases directory).
    pub fn load(dir: &std::path::Path) -> Names {
        let cases = crate::cases::load_dir(dir)
            .map(|cs| cs.into_iter().map(|c| c.name).collect())
            .unwrap_or_default();
        Names {
            cases,
            ladders: crate::ladder::BUILTIN
                .iter()
                .map(|(n, _)| n.to_string())
                .collect(),
            twins: crate::cases::twins()
                .iter()
                .map(|t| t.name.to_string())
                .collect(),
        }
    }
}

/// The REPL's rustyline helper.
pub struct ReplHelper {
    names: Names,
    files: FilenameCompleter,
    color: bool,
}

impl ReplHelper {
    /// A helper; `color` says whether to highlight.
    pub fn new(names: Names, color: bool) -> ReplHelper {
        ReplHelper {
            names,
            files: FilenameCompleter::new(),
            color,
        }
    }

    /// The words completing the argument of `command` (without `:`), for `prefix`.
    fn argument_words(&self, command: &str, index: usize) -> (Vec<String>, bool) {
        let strs = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let layers = || {
            crate::ladder::Layer::ALL
                .iter()
                .filter(|l| **l != crate::ladder::Layer::Native)
                .map(|l| l.name().to_string())
                .collect::<Vec<_>>()
        };
        let backends = || {
            crate::session::SESSION_BACKENDS
                .iter()
                .map(|b| b.name().to_string())
                .collect::<Vec<_>>()
        };
        match (command, index) {
            ("help", 0) => (COMMANDS.iter().map(|c| c.name.to_string()).collect(), false),
            ("backend", 0) => (backends(), false),
            ("twin", 0) => (self.names.twins.clone(), false),
            ("ladder", 0) => (self.names.ladders.clone(), true),
            ("load", 0) => (self.names.cases.clone(), true),
            ("bench", 0) => (self.names.cases.clone(), false),
            ("layers", _) => {
                let mut v = layers();
                v.extend(
                    layers()
                        .iter()
                        .flat_map(|l| [format!("+{l}"), format!("-{l}")]),
                );
                v.push("reset".into());
                (v, false)
            }
            ("set", 0) => (
                strs(&["time", "band", "cpu", "checks", "limit", "mem"]),
                false,
            ),
            ("export", 0) => (strs(&["md", "csv", "json"]), false),
            ("check", 0) => (strs(&["--vs"]), false),
            ("compare", 0) => (backends(), true),
            ("export", 1) | ("save", 0) | ("check", 1) | ("snippet", 0) => (Vec::new(), true),
            _ => (Vec::new(), false),
        }
    }
}

/// The command a `:` line names, resolving aliases.
fn command_of(word: &str) -> Option<&'static str> {
    help_for(word).map(|c| c.name)
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let head = &line[..pos];
        if !head.trim_start().starts_with(':') {
            return Ok((pos, Vec::new()));
        }
        let start = head.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let word = &head[start..];
        let words: Vec<&str> = head.split_whitespace().collect();
        let typing_command = !head[..start].contains(|c: char| !c.is_whitespace());
        if typing_command {
            let prefix = word.trim_start_matches(':');
            let mut names: Vec<&str> = COMMANDS
                .iter()
                .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
                .filter(|n| n.starts_with(prefix))
                .collect();
            names.sort();
            let pairs = names
                .into_iter()
                .map(|n| Pair {
                    display: format!(":{n}"),
                    replacement: format!(":{n} "),
                })
                .collect();
            return Ok((start, pairs));
        }
        let Some(command) = words.first().and_then(|w| command_of(w)) else {
            return Ok((pos, Vec::new()));
        };
        // Index of the argument being typed.
        let index = if word.is_empty() {
            words.len().saturating_sub(1)
        } else {
            words.len().saturating_sub(2)
        };
        let (candidates, files) = self.argument_words(command, index);
        let mut pairs: Vec<Pair> = candidates
            .into_iter()
            .filter(|c| c.starts_with(word))
            .map(|c| Pair {
                display: c.clone(),
                replacement: c,
            })
            .collect();
        if files {
            let (file_start, found) = self.files.complete(line, pos, ctx)?;
            if file_start == start {
                pairs.extend(found);
            } else if pairs.is_empty() {
                return Ok((file_start, found));
            }
        }
        Ok((start, pairs))
    }
}

impl Hinter for ReplHelper {
    type Hint = String;

    fn hint(&self, line: &str, pos: usize, _: &Context<'_>) -> Option<String> {
        if pos < line.len() || !line.starts_with(':') || line.contains(char::is_whitespace) {
            return None;
        }
        let typed = &line[1..];
        if typed.is_empty() {
            return None;
        }
        // A unique command for what is typed: the rest of its name and its arguments.
        let exact = COMMANDS
            .iter()
            .find(|c| c.name == typed || c.aliases.contains(&typed));
        let c = match exact {
            Some(c) => c,
            None => {
                let mut matching = COMMANDS.iter().filter(|c| c.name.starts_with(typed));
                let first = matching.next()?;
                if matching.next().is_some() {
                    return None;
                }
                first
            }
        };
        let usage_args = c.usage.split_once(' ').map_or("", |(_, a)| a);
        let rest = c.name.strip_prefix(typed).unwrap_or("");
        let mut hint = rest.to_string();
        if !usage_args.is_empty() {
            hint.push(' ');
            hint.push_str(usage_args);
        }
        hint.push_str(&format!("  — {}", c.summary));
        Some(hint)
    }
}

impl Highlighter for ReplHelper {
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> Cow<'l, str> {
        if !self.color {
            return Cow::Borrowed(line);
        }
        if line.trim_start().starts_with(':') {
            return Cow::Owned(style::command_line(line));
        }
        match style::hot_code(line) {
            Some(h) => Cow::Owned(h),
            None => Cow::Borrowed(line),
        }
    }

    fn highlight_hint<'h>(&self, hint: &'h str) -> Cow<'h, str> {
        if self.color {
            Cow::Owned(format!("{}{hint}{}", style::DIM, style::RESET))
        } else {
            Cow::Borrowed(hint)
        }
    }

    fn highlight_char(&self, _line: &str, _pos: usize, kind: CmdKind) -> bool {
        self.color && kind != CmdKind::MoveCursor
    }
}

impl Validator for ReplHelper {}

impl Helper for ReplHelper {}

#[cfg(test)]
mod tests {
    use super::*;
    use rustyline::history::DefaultHistory;

    fn helper() -> ReplHelper {
        ReplHelper::new(
            Names {
                cases: vec!["int_loop".into(), "float_loop".into()],
                ladders: vec!["host_call".into(), "fused".into()],
                twins: vec!["int_loop".into()],
            },
            false,
        )
    }

    fn complete(line: &str) -> Vec<String> {
        let h = DefaultHistory::new();
        let ctx = Context::new(&h);
        let (_, pairs) = helper().complete(line, line.len(), &ctx).unwrap();
        pairs.into_iter().map(|p| p.replacement).collect()
    }

    #[test]
    fn completes_commands_and_their_arguments() {
        assert_eq!(complete(":lad"), vec![":ladder "]);
        assert!(complete(":l").contains(&":load ".to_string()));
        assert_eq!(complete(":ladder f"), vec!["fused"]);
        assert!(complete(":load int").contains(&"int_loop".to_string()));
        assert_eq!(complete(":backend jit-"), vec!["jit-opt"]);
        assert!(complete(":layers -ca").contains(&"-catch".to_string()));
        assert!(complete("fn ma").is_empty());
    }

    #[test]
    fn hints_show_the_usage() {
        let h = DefaultHistory::new();
        let ctx = Context::new(&h);
        let hint = helper().hint(":lad", 4, &ctx).unwrap();
        assert!(hint.starts_with("der [NAME|FILE]"), "{hint}");
        assert!(helper().hint(":c", 2, &ctx).is_none(), "ambiguous");
        assert!(
            helper().hint(":s", 2, &ctx).is_some(),
            "an alias of :snippet"
        );
    }
}
