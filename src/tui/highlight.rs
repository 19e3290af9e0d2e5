//! Hot syntax highlighting and diagnostics for the editor, from the language's own lexer and
//! front end: what is coloured as a keyword is exactly what the compiler takes for one.

use std::sync::Arc;

use crate::lang::token::TokenKind;
use crate::lang::{self, DiagKind, Program, SourceFile};

/// What a stretch of source is, for colouring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenClass {
    /// A keyword.
    Keyword,
    /// A number literal.
    Number,
    /// A string literal (quotes and text).
    Str,
    /// A comment.
    Comment,
}

/// A coloured byte range of the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    /// Start byte.
    pub start: usize,
    /// End byte.
    pub end: usize,
    /// What it is.
    pub class: TokenClass,
}

/// A diagnostic as the editor shows it: under its span, with its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiagView {
    /// Start byte of the span.
    pub start: usize,
    /// End byte of the span (at least start + 1 when drawn).
    pub end: usize,
    /// 1-based line and column of the start.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// `error[type]: expected i64, found bool`.
    pub message: String,
    /// The input is unfinished (an open bracket): shown softer than an error.
    pub incomplete: bool,
}

/// Colour marks for `text`. A text the lexer rejects is marked up to the first error.
pub fn marks(text: &str) -> Vec<Mark> {
    let src = SourceFile::new("snippet", text);
    let tokens = match lang::lex(&src) {
        Ok(t) => t,
        Err(d) => {
            let cut = d.0.iter().map(|d| d.span.start as usize).min().unwrap_or(0);
            let cut = floor_char(text, cut);
            lang::lex(&SourceFile::new("snippet", &text[..cut])).unwrap_or_default()
        }
    };
    let mut out = Vec::new();
    let mut last = 0usize;
    for t in &tokens {
        let (start, end) = (t.span.start as usize, t.span.end as usize);
        comments(text, last, start.min(text.len()), &mut out);
        last = last.max(end);
        let class = match &t.kind {
            TokenKind::Kw(_) => TokenClass::Keyword,
            TokenKind::Int(_) | TokenKind::Bits(_) | TokenKind::Float(_) => TokenClass::Number,
            TokenKind::StrStart | TokenKind::StrText(_) | TokenKind::StrEnd => TokenClass::Str,
            _ => continue,
        };
        if end > start {
            out.push(Mark { start, end, class });
        }
    }
    comments(text, last, text.len(), &mut out);
    out
}

/// Comments in a gap between tokens (the lexer skips them).
fn comments(text: &str, from: usize, to: usize, out: &mut Vec<Mark>) {
    if from >= to || to > text.len() || !text.is_char_boundary(from) || !text.is_char_boundary(to) {
        return;
    }
    let gap = &text[from..to];
    let mut i = 0;
    while i < gap.len() {
        let rest = &gap[i..];
        if rest.starts_with("//") {
            let end = rest.find('\n').unwrap_or(rest.len());
            out.push(Mark {
                start: from + i,
                end: from + i + end,
                class: TokenClass::Comment,
            });
            i += end;
        } else if rest.starts_with("/*") {
            let end = rest.find("*/").map_or(rest.len(), |e| e + 2);
            out.push(Mark {
                start: from + i,
                end: from + i + end,
                class: TokenClass::Comment,
            });
            i += end;
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
}

fn floor_char(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The front end's diagnostics for `text` (empty when it compiles). `.clif` text is not checked
/// here: the worker reports its errors.
pub fn diagnostics(name: &str, text: &str) -> Vec<DiagView> {
    check(name, text).1
}

/// `text` through the front end, as the worker compiles a snippet: the checked program when it
/// compiles (none for `.clif` or empty text), else its diagnostics.
pub fn check(name: &str, text: &str) -> (Option<Program>, Vec<DiagView>) {
    if name.ends_with(".clif") || text.trim().is_empty() {
        return (None, Vec::new());
    }
    let src = Arc::new(SourceFile::new(name, text));
    match lang::compile(Arc::clone(&src)) {
        Ok(program) => (Some(program), Vec::new()),
        Err(d) => {
            let views =
                d.0.iter()
                    .map(|d| {
                        let start = floor_char(text, d.span.start as usize);
                        let lc = src.line_col(start as u32);
                        DiagView {
                            start,
                            end: floor_char(text, (d.span.end as usize).max(start)),
                            line: lc.line as usize,
                            col: lc.col as usize,
                            message: format!("error[{}]: {}", d.kind.code(), d.message),
                            incomplete: d.kind == DiagKind::Incomplete,
                        }
                    })
                    .collect();
            (None, views)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_numbers_strings_comments() {
        let text = "// c\nfn main() -> i64 { return 42 }\nlet s = \"hi\"";
        let m = marks(text);
        let of = |c| {
            m.iter()
                .filter(|x| x.class == c)
                .map(|x| &text[x.start..x.end])
                .collect::<Vec<_>>()
        };
        assert_eq!(of(TokenClass::Comment), ["// c"]);
        assert_eq!(of(TokenClass::Keyword), ["fn", "return", "let"]);
        assert_eq!(of(TokenClass::Number), ["42"]);
        assert!(
            of(TokenClass::Str).contains(&"hi"),
            "{:?}",
            of(TokenClass::Str)
        );
    }

    #[test]
    fn a_lexer_error_keeps_the_marks_before_it() {
        let m = marks("fn f() -> i64 { return 1 }\n$");
        assert!(m.iter().any(|x| x.class == TokenClass::Keyword));
    }

    #[test]
    fn diagnostics_at_their_span() {
        let text = "fn main() -> i64 {\n    return true\n}\n";
        let d = diagnostics("a.hot", text);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].line, 2);
        assert_eq!(&text[d[0].start..d[0].end], "true");
        assert!(d[0].message.starts_with("error[type]"), "{}", d[0].message);
        assert!(diagnostics("a.hot", "fn main() -> i64 { return 1 }").is_empty());
    }
}
