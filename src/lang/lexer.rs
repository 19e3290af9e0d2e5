//! The lexer: source text to [`Token`]s.
//!
//! # Where a statement ends
//! A statement ends at `;` or at a newline. A newline counts (becomes a [`TokenKind::Newline`])
//! only where a statement can end:
//! - the token before it can end a statement: a name, a literal, the end of a string, `)`, `]`,
//!   `}`, `?`, or one of `true false null self break continue return`; and
//! - it is not inside `( )`, `[ ]` or a string's `${ }` (newlines inside `{ }` blocks count).
//!
//! So a line that ends with an operator, a comma, `=` or an opening bracket continues on the next
//! line, and `f(a,\n b)` is one call; `a\n+ b` is two statements (write the operator at the end
//! of the line to continue). A block comment that spans lines counts as a newline; consecutive
//! newlines become one token. At the end of the input, a final statement end is added by the
//! same rule, so `let x = 1` needs no trailing newline.

use super::diag::{DiagKind, Diagnostic, Diagnostics};
use super::span::{SourceFile, Span};
use super::token::{Keyword, Punct, Token, TokenKind};

/// What an opening bracket in the stack is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Delim {
    Paren,
    Bracket,
    Brace,
    /// `${` inside a string: its `}` resumes the string.
    Interp,
}

struct Lexer<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    tokens: Vec<Token>,
    delims: Vec<Delim>,
    diags: Vec<Diagnostic>,
}

/// Lex a whole source file. The token list always ends with [`TokenKind::Eof`].
pub fn lex(src: &SourceFile) -> Result<Vec<Token>, Diagnostics> {
    let mut lx = Lexer {
        text: &src.text,
        bytes: src.text.as_bytes(),
        pos: 0,
        tokens: Vec::new(),
        delims: Vec::new(),
        diags: Vec::new(),
    };
    lx.run();
    if lx.diags.is_empty() {
        Ok(lx.tokens)
    } else {
        Err(Diagnostics(lx.diags))
    }
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> u8 {
        self.bytes.get(self.pos + ahead).copied().unwrap_or(0)
    }

    fn push(&mut self, kind: TokenKind, start: usize) {
        self.tokens.push(Token {
            kind,
            span: Span::new(start, self.pos),
        });
    }

    fn error(&mut self, kind: DiagKind, start: usize, end: usize, msg: impl Into<String>) {
        self.diags
            .push(Diagnostic::new(kind, Span::new(start, end), msg));
    }

    /// A newline at `at`: a statement end if the rule in the module docs allows it.
    fn newline(&mut self, at: usize, len: usize) {
        if matches!(
            self.delims.last(),
            Some(Delim::Paren | Delim::Bracket | Delim::Interp)
        ) {
            return;
        }
        if self
            .tokens
            .last()
            .is_some_and(|t| t.kind.can_end_statement())
        {
            self.tokens.push(Token {
                kind: TokenKind::Newline,
                span: Span::new(at, at + len),
            });
        }
    }

    fn run(&mut self) {
        while self.pos < self.bytes.len() {
            let start = self.pos;
            let c = self.bytes[self.pos];
            match c {
                b'\n' => {
                    self.pos += 1;
                    self.newline(start, 1);
                }
                b' ' | b'\t' | b'\r' => self.pos += 1,
                b'/' if self.peek(1) == b'/' => {
                    while self.pos < self.bytes.len() && self.bytes[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                b'/' if self.peek(1) == b'*' => self.block_comment(),
                b'"' => {
                    self.pos += 1;
                    self.push(TokenKind::StrStart, start);
                    self.string_body();
                }
                b'0'..=b'9' => self.number(),
                b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                    while self.peek(0).is_ascii_alphanumeric() || self.peek(0) == b'_' {
                        self.pos += 1;
                    }
                    let word = &self.text[start..self.pos];
                    let kind = match Keyword::from_word(word) {
                        Some(k) => TokenKind::Kw(k),
                        None => TokenKind::Ident(word.to_string()),
                    };
                    self.push(kind, start);
                }
                _ => self.punct(),
            }
        }
        if self.delims.contains(&Delim::Interp) {
            let at = self.text.len();
            self.error(
                DiagKind::Incomplete,
                at,
                at,
                "unterminated string: the input ends inside `${ }`",
            );
        }
        let end = self.text.len();
        self.newline(end, 0);
        self.tokens.push(Token {
            kind: TokenKind::Eof,
            span: Span::new(end, end),
        });
    }

    fn block_comment(&mut self) {
        let start = self.pos;
        self.pos += 2;
        let mut depth = 1;
        let mut newline_at = None;
        while depth > 0 {
            if self.pos >= self.bytes.len() {
                self.error(
                    DiagKind::Incomplete,
                    start,
                    start + 2,
                    "unterminated block comment",
                );
                return;
            }
            match (self.bytes[self.pos], self.peek(1)) {
                (b'/', b'*') => {
                    depth += 1;
                    self.pos += 2;
                }
                (b'*', b'/') => {
                    depth -= 1;
                    self.pos += 2;
                }
                (b'\n', _) => {
                    newline_at.get_or_insert(self.pos);
                    self.pos += 1;
                }
                _ => self.pos += 1,
            }
        }
        if let Some(at) = newline_at {
            self.newline(at, 1);
        }
    }

    /// Lex string text up to the closing `"` or the next `${`.
    fn string_body(&mut self) {
        let mut text = String::new();
        let mut text_start = self.pos;
        loop {
            if self.pos >= self.bytes.len() {
                self.flush_text(&mut text, text_start);
                let at = self.text.len();
                self.error(DiagKind::Incomplete, at, at, "unterminated string");
                return;
            }
            let start = self.pos;
            match self.bytes[self.pos] {
                b'"' => {
                    self.flush_text(&mut text, text_start);
                    self.pos += 1;
                    self.push(TokenKind::StrEnd, start);
                    return;
                }
                b'$' if self.peek(1) == b'{' => {
                    self.flush_text(&mut text, text_start);
                    self.pos += 2;
                    self.push(TokenKind::InterpOpen, start);
                    self.delims.push(Delim::Interp);
                    return;
                }
                b'\\' => {
                    if text.is_empty() {
                        text_start = start;
                    }
                    self.pos += 1;
                    let Some(ch) = self.text[self.pos..].chars().next() else {
                        continue;
                    };
                    self.pos += ch.len_utf8();
                    match ch {
                        'n' => text.push('\n'),
                        't' => text.push('\t'),
                        'r' => text.push('\r'),
                        '0' => text.push('\0'),
                        '\\' => text.push('\\'),
                        '"' => text.push('"'),
                        '$' => text.push('$'),
                        _ => self.error(
                            DiagKind::Syntax,
                            start,
                            self.pos,
                            format!("unknown escape `\\{ch}` in a string"),
                        ),
                    }
                }
                _ => {
                    if text.is_empty() {
                        text_start = start;
                    }
                    let ch = self.text[self.pos..].chars().next().unwrap_or('\0');
                    self.pos += ch.len_utf8().max(1);
                    text.push(ch);
                }
            }
        }
    }

    fn flush_text(&mut self, text: &mut String, start: usize) {
        if !text.is_empty() {
            self.push(TokenKind::StrText(std::mem::take(text)), start);
        }
    }

    fn number(&mut self) {
        let start = self.pos;
        let radix = match (self.peek(0), self.peek(1) | 0x20) {
            (b'0', b'x') => 16,
            (b'0', b'b') => 2,
            (b'0', b'o') => 8,
            _ => 10,
        };
        let mut is_float = false;
        if radix != 10 {
            self.pos += 2;
            while self.peek(0).is_ascii_alphanumeric() || self.peek(0) == b'_' {
                self.pos += 1;
            }
        } else {
            self.digits();
            if self.peek(0) == b'.' && self.peek(1).is_ascii_digit() {
                is_float = true;
                self.pos += 1;
                self.digits();
            }
            let sign = usize::from(matches!(self.peek(1), b'+' | b'-'));
            if matches!(self.peek(0), b'e' | b'E') && self.peek(1 + sign).is_ascii_digit() {
                is_float = true;
                self.pos += 1 + sign;
                self.digits();
            }
            // A letter right after a number is a typo worth naming (`12ab`), not two tokens.
            while self.peek(0).is_ascii_alphanumeric() || self.peek(0) == b'_' {
                self.pos += 1;
            }
        }
        let written = &self.text[start..self.pos];
        let clean: String = written.chars().filter(|&c| c != '_').collect();
        if is_float {
            match clean.parse::<f64>() {
                Ok(v) => self.push(TokenKind::Float(v), start),
                Err(_) => self.bad_number(start, written),
            }
            return;
        }
        let digits = if radix == 10 { &clean[..] } else { &clean[2..] };
        if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
            self.bad_number(start, written);
            return;
        }
        match u64::from_str_radix(digits, radix) {
            // A hex, binary or octal literal is a bit pattern: all 64 bits may be used.
            Ok(v) if radix != 10 && v > i64::MAX as u64 => self.push(TokenKind::Bits(v), start),
            Ok(v) => self.push(TokenKind::Int(v), start),
            Err(_) => {
                let msg = if radix == 10 {
                    format!("integer literal `{written}` does not fit in i64")
                } else {
                    format!("integer literal `{written}` has more than 64 bits")
                };
                self.error(DiagKind::BadLiteral, start, self.pos, msg);
                // Keep going with a placeholder so later errors still show.
                self.push(TokenKind::Int(0), start);
            }
        }
    }

    fn bad_number(&mut self, start: usize, written: &str) {
        let msg = format!("`{written}` is not a valid number");
        self.error(DiagKind::BadLiteral, start, self.pos, msg);
        self.push(TokenKind::Int(0), start);
    }

    fn digits(&mut self) {
        while self.peek(0).is_ascii_digit() || self.peek(0) == b'_' {
            self.pos += 1;
        }
    }

    fn punct(&mut self) {
        let start = self.pos;
        let rest = &self.bytes[self.pos..];
        let Some(p) = Punct::ALL
            .iter()
            .copied()
            .find(|p| rest.starts_with(p.as_str().as_bytes()))
        else {
            let ch = self.text[self.pos..].chars().next().unwrap_or('\0');
            self.pos += ch.len_utf8().max(1);
            self.error(
                DiagKind::Syntax,
                start,
                self.pos,
                format!("unexpected character `{}`", ch.escape_default()),
            );
            return;
        };
        self.pos += p.as_str().len();
        match p {
            Punct::LParen => self.delims.push(Delim::Paren),
            Punct::LBracket => self.delims.push(Delim::Bracket),
            Punct::LBrace => self.delims.push(Delim::Brace),
            Punct::RParen => self.close(Delim::Paren),
            Punct::RBracket => self.close(Delim::Bracket),
            Punct::RBrace => {
                if self.delims.last() == Some(&Delim::Interp) {
                    self.delims.pop();
                    self.push(TokenKind::InterpClose, start);
                    self.string_body();
                    return;
                }
                self.close(Delim::Brace);
            }
            _ => {}
        }
        self.push(TokenKind::Punct(p), start);
    }

    /// Pop a matching opener; a stray closer is left for the parser to report.
    fn close(&mut self, delim: Delim) {
        if self.delims.last() == Some(&delim) {
            self.delims.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<TokenKind> {
        lex(&SourceFile::new("t", text))
            .unwrap()
            .into_iter()
            .map(|t| t.kind)
            .collect()
    }

    #[test]
    fn numbers() {
        assert_eq!(
            kinds("42 0x2A 1_000 1.5 2e-3 0b101"),
            vec![
                TokenKind::Int(42),
                TokenKind::Int(42),
                TokenKind::Int(1000),
                TokenKind::Float(1.5),
                TokenKind::Float(0.002),
                TokenKind::Int(5),
                TokenKind::Newline,
                TokenKind::Eof
            ]
        );
        assert_eq!(kinds("9223372036854775808")[0], TokenKind::Int(1 << 63));
        assert_eq!(
            kinds("0xcbf29ce484222325 0x7FFF_FFFF_FFFF_FFFF 0b1")[..3],
            [
                TokenKind::Bits(0xcbf29ce484222325),
                TokenKind::Int(i64::MAX as u64),
                TokenKind::Int(1)
            ]
        );
        assert!(lex(&SourceFile::new("t", "0x1_0000_0000_0000_0000")).is_err());
        assert_eq!(
            kinds("a >>> b >>>= 1")[1..4],
            [
                TokenKind::Punct(Punct::UShr),
                TokenKind::Ident("b".into()),
                TokenKind::Punct(Punct::UShrEq)
            ]
        );
    }

    #[test]
    fn ranges_are_not_floats() {
        assert_eq!(
            kinds("0..10")[..3],
            [
                TokenKind::Int(0),
                TokenKind::Punct(Punct::DotDot),
                TokenKind::Int(10)
            ]
        );
    }

    #[test]
    fn newlines_follow_the_rule() {
        let k = kinds("a +\n b\nf(1,\n2)\n\n");
        let newlines = k.iter().filter(|t| **t == TokenKind::Newline).count();
        assert_eq!(newlines, 2);
    }

    #[test]
    fn interpolation_is_flat() {
        assert_eq!(
            kinds(r#""a ${x} b""#),
            vec![
                TokenKind::StrStart,
                TokenKind::StrText("a ".into()),
                TokenKind::InterpOpen,
                TokenKind::Ident("x".into()),
                TokenKind::InterpClose,
                TokenKind::StrText(" b".into()),
                TokenKind::StrEnd,
                TokenKind::Newline,
                TokenKind::Eof
            ]
        );
    }

    #[test]
    fn open_things_are_incomplete() {
        for text in ["\"abc", "/* x", "\"a ${ x"] {
            let err = lex(&SourceFile::new("t", text)).unwrap_err();
            assert!(err.is_incomplete(), "{text}: {err}");
        }
        let err = lex(&SourceFile::new("t", "a $ b")).unwrap_err();
        assert!(!err.is_incomplete());
    }
}
