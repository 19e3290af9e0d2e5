//! Diagnostics: every error a user can cause in the front end, with its span, rendered with the
//! source line shown and the span underlined.

use std::fmt;

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, Config, DisplayStyle, termcolor};

use super::span::{SourceFile, Span};

/// What kind of mistake a diagnostic reports, grouped by cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DiagKind {
    /// The input ended while something was still open (an unclosed bracket, string or comment,
    /// a trailing operator): a REPL shows a continuation prompt instead of the error.
    Incomplete,
    /// A character or token that does not belong where it is.
    Syntax,
    /// A literal that cannot be represented (an integer above `i64::MAX`, say).
    BadLiteral,
    /// A name that is not declared where it is used.
    UnknownName,
    /// A name declared twice where that is not allowed.
    Duplicate,
    /// A value of one type where another is needed.
    TypeMismatch,
    /// A call with the wrong number of arguments.
    Arity,
    /// A non-unit function whose end can be reached without `return`.
    MissingReturn,
    /// An assignment to a `let`, a parameter, a loop variable or a function.
    AssignToImmutable,
    /// `break` or `continue` outside a loop.
    OutsideLoop,
    /// A `native fn` that the host table does not provide, or declares differently.
    BadNative,
    /// A rule about `main` (no parameters; returns `i64`, `f64`, `bool` or nothing).
    BadMain,
    /// Part of the language that this build does not support yet.
    Unsupported,
    /// Anything else.
    Other,
    /// A class declaration is wrong: an override without a virtual base method, a missing or
    /// mistyped interface method, a field initializer that is not a constant, ...
    BadClass,
}

impl DiagKind {
    /// A short name for the kind, shown in brackets after `error`.
    pub fn code(self) -> &'static str {
        match self {
            DiagKind::Incomplete => "incomplete",
            DiagKind::Syntax => "syntax",
            DiagKind::BadLiteral => "bad-literal",
            DiagKind::UnknownName => "unknown-name",
            DiagKind::Duplicate => "duplicate",
            DiagKind::TypeMismatch => "type",
            DiagKind::Arity => "arity",
            DiagKind::MissingReturn => "missing-return",
            DiagKind::AssignToImmutable => "immutable",
            DiagKind::OutsideLoop => "outside-loop",
            DiagKind::BadNative => "native",
            DiagKind::BadMain => "main",
            DiagKind::Unsupported => "unsupported",
            DiagKind::BadClass => "class",
            DiagKind::Other => "error",
        }
    }
}

/// One error with its primary span, secondary labels and notes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// What kind of mistake.
    pub kind: DiagKind,
    /// The message (one plain sentence, no trailing period).
    pub message: String,
    /// The primary span, underlined.
    pub span: Span,
    /// Secondary spans with a short text each (e.g. "first declared here").
    pub labels: Vec<(Span, String)>,
    /// Notes shown under the source (hints, expected signatures).
    pub notes: Vec<String>,
}

impl Diagnostic {
    /// A diagnostic without labels or notes.
    pub fn new(kind: DiagKind, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            kind,
            message: message.into(),
            span,
            labels: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Add a secondary label.
    pub fn with_label(mut self, span: Span, text: impl Into<String>) -> Diagnostic {
        self.labels.push((span, text.into()));
        self
    }

    /// Add a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }
}

/// The diagnostics of one stage, in source order of discovery (never empty when returned as an
/// error).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// One diagnostic.
    pub fn one(diag: Diagnostic) -> Diagnostics {
        Diagnostics(vec![diag])
    }

    /// Whether the input only ended too early (every diagnostic is [`DiagKind::Incomplete`]):
    /// a REPL should read another line and try again. With any other error present, reading
    /// more would not help, so this is false.
    pub fn is_incomplete(&self) -> bool {
        !self.0.is_empty() && self.0.iter().all(|d| d.kind == DiagKind::Incomplete)
    }

    /// Whether there is no diagnostic.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Each diagnostic with the source line shown and its span underlined, as a terminal would
    /// show it (`color` adds ANSI colours). At most [`MAX_SHOWN`] are rendered, then a line says
    /// how many more there are; a source line is shown once (a later diagnostic on a line
    /// already shown is one line, `FILE:LINE:COL: error[kind]: message`), so the output grows
    /// with the errors shown, not with errors times line length.
    pub fn render(&self, src: &SourceFile, color: bool) -> String {
        let file = SimpleFile::new(src.name.as_str(), src.text.as_str());
        let full = Config::default();
        let short = Config {
            display_style: DisplayStyle::Short,
            ..Config::default()
        };
        let mut shown_lines = std::collections::HashSet::new();
        let mut out = String::new();
        for diag in self.0.iter().take(MAX_SHOWN) {
            let spans = std::iter::once(diag.span).chain(diag.labels.iter().map(|l| l.0));
            let mut lines = Vec::new();
            for span in spans {
                let first = src.line_col(span.start).line;
                let last = src.line_col(span.end.max(span.start)).line;
                lines.extend(first..=last);
            }
            let repeat = lines.iter().any(|l| shown_lines.contains(l));
            shown_lines.extend(lines);
            let config = if repeat { &short } else { &full };
            let cs = to_codespan(diag, src.text.len());
            let bytes = if color {
                let mut w = termcolor::Ansi::new(Vec::new());
                emit_or_fallback(&mut w, config, &file, &cs, diag);
                w.into_inner()
            } else {
                let mut w = termcolor::NoColor::new(Vec::new());
                emit_or_fallback(&mut w, config, &file, &cs, diag);
                w.into_inner()
            };
            // codespan pads some lines with spaces; trailing ones only get in the way.
            for line in String::from_utf8_lossy(&bytes).lines() {
                out.push_str(line.trim_end_matches(' '));
                out.push('\n');
            }
        }
        if let Some(more) = self.0.len().checked_sub(MAX_SHOWN).filter(|&n| n > 0) {
            let s = if more == 1 { "" } else { "s" };
            out.push_str(&format!(
                "and {more} more error{s} (not shown: fix the first ones, the rest often follow \
                 from them)\n"
            ));
        }
        out
    }
}

/// At most this many diagnostics are rendered ([`Diagnostics::render`]).
pub const MAX_SHOWN: usize = 20;

fn emit_or_fallback(
    w: &mut dyn termcolor::WriteColor,
    config: &Config,
    file: &SimpleFile<&str, &str>,
    cs: &CsDiagnostic<()>,
    diag: &Diagnostic,
) {
    if term::emit(w, config, file, cs).is_err() {
        // Only reachable with a span outside the text; say it plainly rather than lose it.
        let _ = writeln!(w, "error: {} (at byte {})", diag.message, diag.span.start);
    }
}

/// Clamp a span into the text so rendering never fails on a span at the very end.
fn clamp(span: Span, len: usize) -> std::ops::Range<usize> {
    let start = (span.start as usize).min(len);
    let end = (span.end as usize).clamp(start, len);
    start..end
}

fn to_codespan(diag: &Diagnostic, len: usize) -> CsDiagnostic<()> {
    let mut labels = vec![Label::primary((), clamp(diag.span, len))];
    for (span, text) in &diag.labels {
        labels.push(Label::secondary((), clamp(*span, len)).with_message(text.clone()));
    }
    CsDiagnostic::error()
        .with_code(diag.kind.code())
        .with_message(diag.message.clone())
        .with_labels(labels)
        .with_notes(diag.notes.clone())
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "error[{}]: {} at {}..{}",
            self.kind.code(),
            self.message,
            self.span.start,
            self.span.end
        )
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

impl From<Diagnostic> for Diagnostics {
    fn from(diag: Diagnostic) -> Diagnostics {
        Diagnostics::one(diag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_underlines_the_span() {
        let src = SourceFile::new("t.hot", "let x = y\n");
        let d = Diagnostics::one(Diagnostic::new(
            DiagKind::UnknownName,
            Span::new(8, 9),
            "unknown name `y`",
        ));
        let text = d.render(&src, false);
        assert!(
            text.contains("error[unknown-name]: unknown name `y`"),
            "{text}"
        );
        assert!(text.contains("t.hot:1:9"), "{text}");
        assert!(text.contains("^"), "{text}");
    }

    #[test]
    fn render_survives_a_span_past_the_end() {
        let src = SourceFile::new("t.hot", "fn");
        let d = Diagnostics::one(Diagnostic::new(DiagKind::Incomplete, Span::new(2, 9), "x"));
        assert!(d.render(&src, true).contains('x'));
    }
}
