//! The shape of a measurable snippet: how `hotlab check` (and `:check`) runs a file whose case
//! header names no `entry` (or that has no header).
//!
//! Four shapes are accepted, the ones LANGUAGE.md gives a measured snippet:
//!
//! - `fn run(n: i64) -> i64`: loops n times and returns a checksum;
//! - a `Bench` class (`class C : Bench { fn run(self, n: i64) -> i64 { ... } }`): the object
//!   is the module's `let target = new C()`, or hotlab appends that line when the file has
//!   none; hotlab appends `fn run(n: i64) -> i64 { return target.run(n) }` (one call per n
//!   iterations), after the file's own lines so every span still points at them;
//! - a `Hook` class (`class C : Hook { fn call(self) -> i64 { ... } }`): the host calls
//!   `call` n times on `target` (appended as for `Bench` when missing), as `entry = "hook"`;
//! - in a `.clif` file, `function %run(i64, i64) -> i64 system_v` (ctx, n).
//!
//! Anything else is refused with a message that lists the four.

use std::sync::Arc;

use super::spec::{CaseEntry, Mode, parse_header};
use crate::lang::SourceFile;
use crate::lang::hir::{Interface, Program, Type};

/// What a snippet is, as [`prepare`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// `fn run(n: i64) -> i64` (a `.clif` file: `%run`), or the entry its header names.
    Run,
    /// A `Bench` class: its object in `target` (`appended`: hotlab made it), called through the
    /// appended `fn run`.
    Bench {
        /// The class.
        class: String,
        /// Whether hotlab appended `let target = new C()`.
        appended: bool,
    },
    /// A `Hook` class: the host calls `call` on `target` n times.
    Hook {
        /// The class.
        class: String,
        /// Whether hotlab appended `let target = new C()`.
        appended: bool,
    },
}

impl Shape {
    /// Its name in messages (`run`, `Bench class C`, `Hook class C`).
    pub fn describe(&self) -> String {
        match self {
            Shape::Run => "fn run(n)".to_string(),
            Shape::Bench { class, .. } => format!("Bench class {class}"),
            Shape::Hook { class, .. } => format!("Hook class {class}"),
        }
    }
}

/// A snippet ready to measure: its source (with hotlab's lines appended when its shape needs
/// them) and how the host runs it.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The source to load; its name is the file's.
    pub source: Arc<SourceFile>,
    /// How the host runs it.
    pub entry: CaseEntry,
    /// The shape found.
    pub shape: Shape,
}

/// The shapes `check` accepts, as the error lists them.
pub const ACCEPTED: &str = concat!(
    "  fn run(n: i64) -> i64 { ... }                            loops n times, returns a checksum\n",
    "  class C : Bench { fn run(self, n: i64) -> i64 { ... } }  hotlab makes the object (or `let target = new C()`)\n",
    "  class C : Hook { fn call(self) -> i64 { ... } }          the host calls `call` n times on `target`\n",
    "  function %run(i64, i64) -> i64 system_v                  a .clif file (ctx, n)",
);

/// Why a snippet has no shape `check` can measure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("error: {file}: {why}; `check` measures one of these shapes:\n{ACCEPTED}")]
pub struct ShapeError {
    /// The file.
    pub file: String,
    /// What is missing or ambiguous.
    pub why: String,
}

/// Find the shape of `source` (see the module docs) and append what it needs. A header's
/// `entry` wins; a `.hot` file that does not compile is handed back as it is (`Run`), for the
/// loader to report its diagnostics.
pub fn prepare(mode: Mode, source: &Arc<SourceFile>) -> Result<Prepared, ShapeError> {
    let path = std::path::Path::new(&source.name);
    let unchanged = |entry: CaseEntry| Prepared {
        source: Arc::clone(source),
        entry,
        shape: Shape::Run,
    };
    if let Ok(h) = parse_header(path, mode, &source.text)
        && h.entry_given
    {
        return Ok(unchanged(h.entry));
    }
    let fail = |why: String| ShapeError {
        file: source.name.clone(),
        why,
    };
    if mode == Mode::Clif {
        return if source.text.contains("function %run(") {
            Ok(unchanged(CaseEntry::Run))
        } else {
            Err(fail("no `function %run`".into()))
        };
    }
    let Ok(program) = crate::lang::compile(Arc::clone(source)) else {
        return Ok(unchanged(CaseEntry::Run));
    };
    let found = find(&program).map_err(fail)?;
    let (shape, entry, append) = found;
    if append.is_empty() {
        return Ok(Prepared {
            source: Arc::clone(source),
            entry,
            shape,
        });
    }
    let mut text = source.text.clone();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&append);
    Ok(Prepared {
        source: Arc::new(SourceFile::new(source.name.clone(), text)),
        entry,
        shape,
    })
}

/// The shape of a checked program, its entry and the lines to append.
fn find(p: &Program) -> Result<(Shape, CaseEntry, String), String> {
    if p.functions
        .iter()
        .any(|f| f.name == "run" && f.class.is_none())
    {
        return Ok((Shape::Run, CaseEntry::Run, String::new()));
    }
    const WRAPPER: &str = "fn run(n: i64) -> i64 { return target.run(n) }\n";
    let interface_of = |ty: &Type| match ty {
        Type::Handle { class, .. } => {
            Some((p.class(*class).name.clone(), p.class(*class).interface))
        }
        _ => None,
    };
    if let Some(g) = p.globals.iter().find(|g| g.name == "target") {
        return match interface_of(&g.ty) {
            Some((class, Some(Interface::Bench))) => Ok((
                Shape::Bench {
                    class,
                    appended: false,
                },
                CaseEntry::Run,
                WRAPPER.to_string(),
            )),
            Some((class, Some(Interface::Hook))) => Ok((
                Shape::Hook {
                    class,
                    appended: false,
                },
                CaseEntry::Hook,
                String::new(),
            )),
            Some((class, None)) => Err(format!(
                "no `fn run`, and class `{class}` of `target` implements neither Bench nor Hook"
            )),
            None => Err("no `fn run`, and `target` is not an object".into()),
        };
    }
    let with = |want: Interface| -> Vec<&str> {
        p.classes
            .iter()
            .filter(|c| c.interface == Some(want))
            // A derived class inherits its base's interface: the base is the one to make.
            .filter(|c| c.parent.is_none_or(|b| p.class(b).interface != Some(want)))
            .map(|c| c.name.as_str())
            .collect()
    };
    let (benches, hooks) = (with(Interface::Bench), with(Interface::Hook));
    match (benches.as_slice(), hooks.as_slice()) {
        ([class], []) => Ok((
            Shape::Bench {
                class: class.to_string(),
                appended: true,
            },
            CaseEntry::Run,
            format!("let target = new {class}()\n{WRAPPER}"),
        )),
        ([], [class]) => Ok((
            Shape::Hook {
                class: class.to_string(),
                appended: true,
            },
            CaseEntry::Hook,
            format!("let target = new {class}()\n"),
        )),
        ([], []) => {
            Err("no `fn run(n: i64) -> i64` and no class implementing Bench or Hook".into())
        }
        _ => {
            let all: Vec<String> = benches
                .iter()
                .map(|c| format!("{c} : Bench"))
                .chain(hooks.iter().map(|c| format!("{c} : Hook")))
                .collect();
            Err(format!(
                "more than one class could be measured ({}): say which with `let target = new C()`",
                all.join(", ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape_of(text: &str) -> Result<(Shape, CaseEntry, String), ShapeError> {
        let source = Arc::new(SourceFile::new("s.hot", text));
        prepare(Mode::Hot, &source).map(|p| (p.shape, p.entry, p.source.text.clone()))
    }

    #[test]
    fn each_shape_is_found() {
        let (s, e, t) = shape_of("fn run(n: i64) -> i64 { return n }\n").unwrap();
        assert_eq!((s, e), (Shape::Run, CaseEntry::Run));
        assert_eq!(t, "fn run(n: i64) -> i64 { return n }\n");

        let bench = "class B : Bench { fn run(self, n: i64) -> i64 { return n } }";
        let (s, e, t) = shape_of(bench).unwrap();
        assert_eq!(
            (s, e),
            (
                Shape::Bench {
                    class: "B".into(),
                    appended: true
                },
                CaseEntry::Run
            )
        );
        assert!(
            t.starts_with(bench) && t.contains("let target = new B()\nfn run(n: i64)"),
            "{t}"
        );
        assert!(crate::lang::compile(Arc::new(SourceFile::new("s.hot", t))).is_ok());

        let own = format!("{bench}\nlet target = new B()\n");
        let (s, _, t) = shape_of(&own).unwrap();
        assert_eq!(
            s,
            Shape::Bench {
                class: "B".into(),
                appended: false
            }
        );
        assert_eq!(t.matches("let target").count(), 1, "{t}");

        let hook = "class H : Hook { fn call(self) -> i64 { return 1 } }\n";
        let (s, e, t) = shape_of(hook).unwrap();
        assert_eq!(e, CaseEntry::Hook);
        assert!(matches!(s, Shape::Hook { appended: true, .. }));
        assert!(t.ends_with("let target = new H()\n"), "{t}");
    }

    #[test]
    fn anything_else_lists_the_shapes() {
        let e = shape_of("fn main() -> i64 { return 1 }\n").unwrap_err();
        let text = e.to_string();
        assert!(text.starts_with("error: s.hot: no `fn run"), "{text}");
        assert!(
            text.contains("class C : Bench") && text.contains("%run"),
            "{text}"
        );
        let two = "class A : Bench { fn run(self, n: i64) -> i64 { return n } }\n\
                   class H : Hook { fn call(self) -> i64 { return 1 } }\n";
        let e = shape_of(two).unwrap_err();
        assert!(e.why.contains("A : Bench, H : Hook"), "{}", e.why);
        let clif = Arc::new(SourceFile::new(
            "c.clif",
            "function %f() {\nblock0:\n return\n}\n",
        ));
        assert!(prepare(Mode::Clif, &clif).is_err());
    }

    #[test]
    fn a_header_entry_wins() {
        let text = "//# twin = \"host_call\"\n//# entry = \"hook_virtual\"\n\
                    class H : Hook { fn call(self) -> i64 { return 1 } }\nlet target = new H()\n";
        let (s, e, t) = shape_of(text).unwrap();
        assert_eq!((s, e), (Shape::Run, CaseEntry::HookVirtual));
        assert_eq!(t, text);
    }
}
