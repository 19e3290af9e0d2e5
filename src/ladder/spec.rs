//! Ladders as data: the TOML files in `micro/` that name the layers of a host-to-script call,
//! their order, and a teaching text per step.
//!
//! A ladder is cumulative: row *k* calls the script object through every layer of rows 1..=k.
//! The first step is always `native` (the twin and the floor). Until a `slot` step, the script
//! function is reached directly (the pointer bound when the shell was made); `slot` switches the
//! dispatch to a read of the class's slot table. `fused` is the optimized call and already holds
//! the slot read and every check; `direct` is `jit-opt`'s host entry: no slot table and no entry
//! word (its runtime is fixed), but still the depth budget, the detached test and the catch.
//!
//! Those are *models* of a call path (each row composed from the layers before it). The `rt-*`
//! layers and `bench` are not: each is the runtime's own code (`rt-handle` is the very call the
//! host makes through a handle; `bench` is the bench's host-call row), measured as it is, so such
//! a row stands on its own and ignores the layers before it.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

/// One layer of the host-to-script call path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    /// A plain virtual call to native code: the twin and the floor.
    Native,
    /// The snippet's method itself, reached through the pointer bound in the shell with no
    /// layer: the work its body does beyond the twin's (which only returns the value). Added
    /// after `native` when the method does such work, so that it lands on no layer.
    Body,
    /// Read the class's slot table and call the pointer found there.
    Slot,
    /// One load of the class's entry word, a branch to a slow path that waits for a reload.
    Entry,
    /// Compare the object's slot key with its class's: a detached object fails.
    Detached,
    /// Catch a `ScriptError` at the border.
    Catch,
    /// Raise and lower a per-thread call depth counter, with a limit.
    Depth,
    /// The optimized call: slot, one test for entry and detached, depth, catch out of line.
    Fused,
    /// `jit-opt`'s host entry: the method's code from the class's interface entry (no slot, no
    /// entry word), with the depth budget, the detached test and the catch.
    Direct,
    /// The runtime's own code: its slot terminal, `border::call_slot`, in a loop.
    RtSlot,
    /// The runtime's own code: its fused border, `border::fused_enter` around `call_slot`.
    RtFused,
    /// The runtime's own code: `Hook for Object` (the interface lookup, then the fused border).
    RtObject,
    /// The runtime's own code: `Hook for Handle`, the host's call through a handle (the
    /// generation check, then `Hook for Object`), in the host loop the bench runs.
    RtHandle,
    /// The bench's host-call row itself: `cases/host_call.hot` loaded on the `jit` backend and
    /// run by the backend's sampler, in the same job.
    Bench,
    /// `new` taken apart (the `new` ladder, whose floor is `Arc::new`): the object's one
    /// allocation and its free.
    NewAlloc,
    /// `new` taken apart: the allocation, the shell and the state block's header written.
    NewHeader,
    /// `new` taken apart: the allocation, shell, header and every field initializer, dropped.
    NewFields,
    /// `new` taken apart: all of the above and the live list (lock, key, bound slots), as a
    /// handle whose release frees it.
    NewList,
    /// The runtime's own `new` and release: `Runtime::new_object` (the class's border, the
    /// unload test) and the handle dropped.
    NewRuntime,
}

impl Layer {
    /// Every layer, in the seed's order.
    pub const ALL: [Layer; 19] = [
        Layer::Native,
        Layer::Body,
        Layer::Slot,
        Layer::Entry,
        Layer::Detached,
        Layer::Catch,
        Layer::Depth,
        Layer::Fused,
        Layer::Direct,
        Layer::RtSlot,
        Layer::RtFused,
        Layer::RtObject,
        Layer::RtHandle,
        Layer::Bench,
        Layer::NewAlloc,
        Layer::NewHeader,
        Layer::NewFields,
        Layer::NewList,
        Layer::NewRuntime,
    ];

    /// The name used in ladder files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Native => "native",
            Layer::Body => "body",
            Layer::Slot => "slot",
            Layer::Entry => "entry",
            Layer::Detached => "detached",
            Layer::Catch => "catch",
            Layer::Depth => "depth",
            Layer::Fused => "fused",
            Layer::Direct => "direct",
            Layer::RtSlot => "rt-slot",
            Layer::RtFused => "rt-fused",
            Layer::RtObject => "rt-object",
            Layer::RtHandle => "rt-handle",
            Layer::Bench => "bench",
            Layer::NewAlloc => "new-alloc",
            Layer::NewHeader => "new-header",
            Layer::NewFields => "new-fields",
            Layer::NewList => "new-list",
            Layer::NewRuntime => "new-runtime",
        }
    }

    /// True for a rung that is the runtime's own code (or the bench's row), not a model built
    /// from layers: it stands on its own, whatever steps come before it.
    pub fn is_runtime(self) -> bool {
        matches!(
            self,
            Layer::RtSlot | Layer::RtFused | Layer::RtObject | Layer::RtHandle | Layer::Bench
        ) || self.is_new()
    }

    /// True for a step of `new` and free (the `new` ladder): its floor is `Arc::new` of the same
    /// fields, not a virtual call, so it mixes with no layer of the call.
    pub fn is_new(self) -> bool {
        matches!(
            self,
            Layer::NewAlloc
                | Layer::NewHeader
                | Layer::NewFields
                | Layer::NewList
                | Layer::NewRuntime
        )
    }

    /// Parse a layer name.
    pub fn from_name(name: &str) -> Option<Layer> {
        Layer::ALL.into_iter().find(|l| l.name() == name)
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One step of a ladder.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The layer this step adds.
    pub layer: Layer,
    /// A short row label ("slot read").
    pub title: String,
    /// What the layer does, what it protects against, why it costs what it costs.
    pub text: String,
}

impl Step {
    /// The `body` step a ladder gets when the snippet's method does work its twin does not
    /// (see [`Ladder::with_body`]).
    pub fn body() -> Step {
        Step {
            layer: Layer::Body,
            title: "method body".into(),
            text: "The snippet's method itself, called through the pointer bound in the shell \
                   with no layer around it. The native twin only returns the method's value, so \
                   what this row adds is the work of the method's body (and the JIT's code \
                   against rustc's); every rung after it is measured from this row, so that \
                   work lands on no layer."
                .into(),
        }
    }
}

/// A whole ladder.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Ladder {
    /// Its name (`host_call`).
    pub name: String,
    /// One or two sentences on what it shows.
    pub description: String,
    /// The steps, in order; the first is `native`.
    #[serde(rename = "step")]
    pub steps: Vec<Step>,
}

/// A ladder file that could not be used, with where and why.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}:{line}:{col}: {key}: {problem}")]
pub struct LadderError {
    /// The file as named by the user.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// The key at fault (`step[3].layer`), or `ladder` for the whole file.
    pub key: String,
    /// What is wrong.
    pub problem: LadderProblem,
}

/// What is wrong with a ladder, and how to fix it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LadderProblem {
    /// Neither a shipped ladder's name nor a file.
    #[error("no ladder of that name (shipped: {}) and no such file", .shipped.join(", "))]
    NoSuchLadder {
        /// The shipped ladders' names.
        shipped: Vec<&'static str>,
    },
    /// The file cannot be read.
    #[error("cannot read the file: {0}")]
    Unreadable(Arc<std::io::Error>),
    /// A layer name that is none of [`Layer::ALL`] (TOML's message).
    #[error("unknown layer: {message} (layers: {})", Layer::ALL.map(|l| l.name()).join(", "))]
    UnknownLayer {
        /// TOML's message.
        message: String,
    },
    /// Not TOML, or a key missing, misspelt or of the wrong type (TOML's message).
    #[error("{0}")]
    Toml(String),
    /// No `[[step]]` at all.
    #[error("a ladder needs at least one [[step]], the first with layer = \"native\"")]
    NoSteps,
    /// The first step is another layer than `native`.
    #[error("the first step must be `native` (the floor every row is compared with), not `{0}`")]
    FirstNotNative(Layer),
    /// `native` after the first step.
    #[error("`native` may only be the first step")]
    NativeLater,
    /// A layer twice.
    #[error("layer `{0}` appears twice")]
    Twice(Layer),
    /// `body` anywhere but right after `native`.
    #[error(
        "`body` may only be the second step, right after `native` (the rows after it are measured from it)"
    )]
    BodyLater,
    /// `fused` or `direct` beside another layer.
    #[error("layer `{layer}` cannot follow `{prev}`: {}", conflict_reason(*.prev, *.layer))]
    Conflict {
        /// The layer before.
        prev: Layer,
        /// The layer that cannot follow it.
        layer: Layer,
    },
}

impl Ladder {
    /// Parse and validate a ladder from TOML text; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Ladder, LadderError> {
        let ladder: Ladder = toml::from_str(text).map_err(|e| {
            let offset = e.span().map(|s| s.start).unwrap_or(0);
            let message = e.message().trim().to_string();
            let problem = if message.starts_with("unknown variant") {
                LadderProblem::UnknownLayer { message }
            } else {
                LadderProblem::Toml(message)
            };
            error_at(file, text, offset, problem)
        })?;
        ladder.validate(file, text)?;
        Ok(ladder)
    }

    /// Read and parse a ladder file.
    pub fn load(path: &Path) -> Result<Ladder, LadderError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| LadderError {
            file: file.clone(),
            line: 1,
            col: 1,
            key: "ladder".into(),
            problem: LadderProblem::Unreadable(e.into()),
        })?;
        Ladder::parse(&file, &text)
    }

    fn validate(&self, file: &str, text: &str) -> Result<(), LadderError> {
        let at_step = |i: usize, problem: LadderProblem| {
            let offset = step_offset(text, i).unwrap_or(0);
            let mut err = error_at(file, text, offset, problem);
            err.key = format!("step[{}].layer", i + 1);
            err
        };
        let Some(first) = self.steps.first() else {
            return Err(LadderError {
                file: file.into(),
                line: 1,
                col: 1,
                key: "step".into(),
                problem: LadderProblem::NoSteps,
            });
        };
        if first.layer != Layer::Native {
            return Err(at_step(0, LadderProblem::FirstNotNative(first.layer)));
        }
        let mut seen: Vec<Layer> = Vec::new();
        for (i, step) in self.steps.iter().enumerate().skip(1) {
            let l = step.layer;
            if l == Layer::Native {
                return Err(at_step(i, LadderProblem::NativeLater));
            }
            if seen.contains(&l) {
                return Err(at_step(i, LadderProblem::Twice(l)));
            }
            if l == Layer::Body && i != 1 {
                return Err(at_step(i, LadderProblem::BodyLater));
            }
            if let Some(prev) = seen.iter().find(|p| conflicts(**p, l)) {
                return Err(at_step(
                    i,
                    LadderProblem::Conflict {
                        prev: *prev,
                        layer: l,
                    },
                ));
            }
            seen.push(l);
        }
        Ok(())
    }

    /// True when the ladder measures the method's body as its own row (a `body` step).
    pub fn has_body(&self) -> bool {
        self.steps.iter().any(|s| s.layer == Layer::Body)
    }

    /// The ladder with a `body` step right after `native` ([`Step::body`]), unless it has one
    /// already or is a ladder of `new` (whose rungs never call the method).
    pub fn with_body(mut self) -> Ladder {
        let new = self.steps.iter().any(|s| s.layer.is_new());
        if !self.has_body() && !new && !self.steps.is_empty() {
            self.steps.insert(1, Step::body());
        }
        self
    }

    /// The set of layers active at each row (row 0 is native and has none).
    pub fn cumulative(&self) -> Vec<Vec<Layer>> {
        let mut acc = Vec::new();
        self.steps
            .iter()
            .map(|s| {
                if s.layer != Layer::Native {
                    acc.push(s.layer);
                }
                acc.clone()
            })
            .collect()
    }
}

fn conflicts(a: Layer, b: Layer) -> bool {
    if a.is_new() != b.is_new() {
        // The steps of `new` are measured against `Arc::new`, the call's against a virtual call.
        return true;
    }
    if a == Layer::Body || b == Layer::Body {
        // The bare method: every path of the call stands on it.
        return false;
    }
    if a.is_runtime() || b.is_runtime() {
        // A runtime rung is a whole call of its own; it composes with nothing.
        return false;
    }
    let whole = |l| matches!(l, Layer::Fused | Layer::Direct);
    (whole(a) || whole(b)) && a != b
}

fn conflict_reason(a: Layer, b: Layer) -> &'static str {
    if a.is_new() != b.is_new() {
        "the `new-*` steps measure `new` and free against `Arc::new`, the other layers a call against a virtual call; a ladder holds one kind"
    } else if a == Layer::Direct || b == Layer::Direct {
        "`direct` is jit-opt's whole host entry (no slot, no entry word; depth, detached test and catch included); it stands alone after `native`"
    } else {
        "`fused` already holds the slot read and every check; it stands alone after `native`"
    }
}

/// Byte offset of the `layer` value of step `i` (0-based), for error positions.
fn step_offset(text: &str, i: usize) -> Option<usize> {
    let mut count = 0usize;
    let mut in_step = false;
    let mut offset = 0usize;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with("[[step]]") {
            in_step = count == i;
            count += 1;
        } else if trimmed.starts_with('[') {
            in_step = false;
        } else if in_step && trimmed.starts_with("layer") {
            let eq = line.find('=')?;
            let val = line[eq + 1..].len() - line[eq + 1..].trim_start().len();
            return Some(offset + eq + 1 + val);
        }
        offset += line.len();
    }
    None
}

/// A `LadderError` at a byte offset; the key is read back from the text (`step[N].key`).
fn error_at(file: &str, text: &str, offset: usize, problem: LadderProblem) -> LadderError {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|p| p + 1).unwrap_or(0);
    let col = before[line_start..].chars().count() + 1;
    let line_text = text[line_start..].lines().next().unwrap_or("");
    let key = line_text
        .split_once('=')
        .map(|(k, _)| k.trim().to_string())
        .filter(|k| !k.is_empty() && !k.starts_with('['))
        .unwrap_or_else(|| "ladder".to_string());
    let steps_before = before
        .lines()
        .filter(|l| l.trim_start().starts_with("[[step]]"))
        .count();
    let key = if steps_before > 0 && key != "ladder" {
        format!("step[{steps_before}].{key}")
    } else {
        key
    };
    LadderError {
        file: file.into(),
        line,
        col,
        key,
        problem,
    }
}

#[cfg(test)]
mod tests {
    use super::super::resolve;
    use super::*;

    const GOOD: &str = r#"
name = "t"
description = "d"

[[step]]
layer = "native"
title = "native"
text = "floor"

[[step]]
layer = "slot"
title = "slot"
text = "reads the slot"
"#;

    #[test]
    fn parses_and_accumulates() {
        let l = Ladder::parse("t.toml", GOOD).unwrap();
        assert_eq!(l.steps.len(), 2);
        assert_eq!(l.cumulative(), vec![vec![], vec![Layer::Slot]]);
    }

    #[test]
    fn unknown_layer_names_file_line_and_key() {
        let bad = GOOD.replace("\"slot\"\ntitle", "\"slt\"\ntitle");
        let err = Ladder::parse("micro/t.toml", &bad).unwrap_err();
        assert_eq!((err.line, err.key.as_str()), (11, "step[2].layer"));
        assert!(err.problem.to_string().contains("unknown layer"), "{err}");
        assert!(err.to_string().starts_with("micro/t.toml:11:"), "{err}");
    }

    #[test]
    fn unknown_key_is_named() {
        let bad = GOOD.replace("text = \"floor\"", "text = \"floor\"\ncolour = 3");
        let err = Ladder::parse("t.toml", &bad).unwrap_err();
        assert_eq!(err.line, 9);
        assert!(err.problem.to_string().contains("colour"), "{err}");
    }

    #[test]
    fn first_step_must_be_native_and_layers_unique() {
        let bad = GOOD.replacen("\"native\"\ntitle", "\"depth\"\ntitle", 1);
        let err = Ladder::parse("t.toml", &bad).unwrap_err();
        assert_eq!((err.line, err.key.as_str()), (6, "step[1].layer"));
        let twice = format!("{GOOD}\n[[step]]\nlayer = \"slot\"\ntitle = \"x\"\ntext = \"y\"\n");
        let err = Ladder::parse("t.toml", &twice).unwrap_err();
        assert_eq!((err.line, err.key.as_str()), (16, "step[3].layer"));
        assert!(err.problem.to_string().contains("twice"));
    }

    #[test]
    fn fused_stands_alone() {
        let bad = format!("{GOOD}\n[[step]]\nlayer = \"fused\"\ntitle = \"x\"\ntext = \"y\"\n");
        let err = Ladder::parse("t.toml", &bad).unwrap_err();
        assert!(err.problem.to_string().contains("stands alone"), "{err}");
    }

    #[test]
    fn problems_read_as_before() {
        let bad = GOOD.replacen("\"native\"\ntitle", "\"depth\"\ntitle", 1);
        let err = Ladder::parse("t.toml", &bad).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.toml:6:9: step[1].layer: the first step must be `native` (the floor every row is \
             compared with), not `depth`"
        );
        let none = Ladder::parse("t.toml", "name = \"x\"\ndescription = \"d\"\nstep = []\n");
        assert_eq!(
            none.unwrap_err().to_string(),
            "t.toml:1:1: step: a ladder needs at least one [[step]], the first with layer = \"native\""
        );
        let err = resolve("nope").unwrap_err();
        assert_eq!(
            err.to_string(),
            "nope:1:1: ladder: no ladder of that name (shipped: host_call, fused, direct, runtime, new) \
             and no such file"
        );
    }

    #[test]
    fn malformed_toml_has_a_position() {
        let err = Ladder::parse("t.toml", "name = \"x\"\ndescription = \n").unwrap_err();
        assert_eq!(err.line, 2);
    }
}
