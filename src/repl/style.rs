//! Colours of the REPL, by meaning: hot code by token kind, and results by what they say.
//! Verdicts use a colour-blind safe pair: blue for an improvement (`faster`), orange for a
//! regression (`slower`, `!`, `RESULTS DIFFER`, errors); `equal` is bold, `unresolved` dim.
//! Nothing is coloured when colour is off (a pipe, or `NO_COLOR`).

use crate::lang::token::{Keyword, TokenKind};
use crate::lang::{self, SourceFile};

/// Bold.
pub const BOLD: &str = "\x1b[1m";
/// Dim (hints, comments, unresolved).
pub const DIM: &str = "\x1b[2m";
/// Blue: improvements, keywords.
pub const BLUE: &str = "\x1b[38;5;33m";
/// Orange: regressions and errors.
pub const ORANGE: &str = "\x1b[38;5;208m";
/// Cyan: literals.
pub const CYAN: &str = "\x1b[36m";
/// Magenta: commands.
pub const MAGENTA: &str = "\x1b[35m";
/// Back to normal.
pub const RESET: &str = "\x1b[0m";

fn paint(out: &mut String, style: &str, text: &str) {
    if text.is_empty() {
        return;
    }
    out.push_str(style);
    out.push_str(text);
    out.push_str(RESET);
}

/// The text between tokens: comments dim, the rest as is.
fn gap(out: &mut String, text: &str) {
    let mut rest = text;
    while !rest.is_empty() {
        match rest.find("//") {
            Some(i) => {
                out.push_str(&rest[..i]);
                let end = rest[i..].find('\n').map_or(rest.len(), |e| i + e);
                paint(out, DIM, &rest[i..end]);
                rest = &rest[end..];
            }
            None => {
                out.push_str(rest);
                break;
            }
        }
    }
}

/// Hot code with keywords, literals and comments coloured; text the lexer cannot read yet
/// (an unfinished string) is left plain.
pub fn hot_code(text: &str) -> Option<String> {
    let source = SourceFile::new("<input>", text);
    let tokens = lang::lex(&source).ok()?;
    let mut out = String::with_capacity(text.len() * 2);
    let mut at = 0usize;
    // Strings are several tokens: colour from the opening quote to the closing one.
    let mut string_from: Option<usize> = None;
    for t in &tokens {
        let r = t.span.range();
        if r.start < at || r.end > text.len() {
            continue;
        }
        match &t.kind {
            TokenKind::StrStart if string_from.is_none() => {
                gap(&mut out, &text[at..r.start]);
                string_from = Some(r.start);
                at = r.start;
                continue;
            }
            TokenKind::StrEnd => {
                if let Some(s) = string_from.take() {
                    paint(&mut out, CYAN, &text[s..r.end]);
                    at = r.end;
                }
                continue;
            }
            _ if string_from.is_some() => continue,
            _ => {}
        }
        gap(&mut out, &text[at..r.start]);
        let word = &text[r.clone()];
        match &t.kind {
            TokenKind::Kw(Keyword::True | Keyword::False | Keyword::Null) => {
                paint(&mut out, CYAN, word)
            }
            TokenKind::Kw(_) => paint(&mut out, &format!("{BOLD}{BLUE}"), word),
            TokenKind::Int(_) | TokenKind::Bits(_) | TokenKind::Float(_) => {
                paint(&mut out, CYAN, word)
            }
            _ => out.push_str(word),
        }
        at = r.end;
    }
    if let Some(s) = string_from {
        at = s;
    }
    gap(&mut out, &text[at.min(text.len())..]);
    Some(out)
}

/// A `:command` line: the command bold magenta, its arguments plain.
pub fn command_line(text: &str) -> String {
    let lead = text.len() - text.trim_start().len();
    let end = text[lead..]
        .find(char::is_whitespace)
        .map_or(text.len(), |i| lead + i);
    format!(
        "{}{BOLD}{MAGENTA}{}{RESET}{}",
        &text[..lead],
        &text[lead..end],
        &text[end..]
    )
}

fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Output with verdicts and problems coloured by meaning (see the module docs).
pub fn output(text: &str) -> String {
    const WORDS: [(&str, &str); 7] = [
        ("faster", BLUE),
        ("slower", ORANGE),
        ("equal", BOLD),
        ("unresolved", DIM),
        ("RESULTS DIFFER", ORANGE),
        ("DIFFER", ORANGE),
        ("error", ORANGE),
    ];
    let mut out = String::with_capacity(text.len() + 64);
    let mut i = 0;
    let bytes = text.as_bytes();
    'scan: while i < text.len() {
        let before_ok = i == 0 || !text[..i].chars().next_back().is_some_and(word_char);
        if before_ok {
            for (w, style) in WORDS {
                if text[i..].starts_with(w) {
                    let end = i + w.len();
                    let after_ok = !text[end..].chars().next().is_some_and(word_char);
                    if after_ok {
                        paint(&mut out, style, w);
                        i = end;
                        continue 'scan;
                    }
                }
            }
        }
        // A lone `!` in a table cell marks a result that differs from its twin.
        if bytes[i] == b'!'
            && (i == 0 || bytes[i - 1] == b' ')
            && (i + 1 == bytes.len() || matches!(bytes[i + 1], b' ' | b'\n'))
        {
            paint(&mut out, ORANGE, "!");
            i += 1;
            continue;
        }
        let c = text[i..].chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(s: &str) -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find('\x1b') {
            out.push_str(&rest[..i]);
            let end = rest[i..].find('m').map_or(rest.len(), |e| i + e + 1);
            rest = &rest[end..];
        }
        out.push_str(rest);
        out
    }

    #[test]
    fn highlighting_keeps_the_text() {
        let code = "fn main() -> i64 { // sum\n    let s = \"a ${1 + 2} b\"\n    return 42 }";
        let h = hot_code(code).unwrap();
        assert_eq!(plain(&h), code);
        assert!(h.contains(&format!("{BOLD}{BLUE}fn{RESET}")), "{h:?}");
        assert!(h.contains(&format!("{CYAN}42{RESET}")), "{h:?}");
        assert!(h.contains(&format!("{DIM}// sum{RESET}")), "{h:?}");
        assert_eq!(plain(&command_line(":load  x.hot")), ":load  x.hot");
    }

    #[test]
    fn verdicts_are_coloured_by_meaning() {
        let o = output("a: slower; b: faster; equal ok; unequal; !\nx ! y");
        assert!(o.contains(&format!("{ORANGE}slower{RESET}")), "{o:?}");
        assert!(o.contains(&format!("{BLUE}faster{RESET}")), "{o:?}");
        assert!(o.contains(&format!("{BOLD}equal{RESET}")), "{o:?}");
        assert!(o.contains("unequal"), "only whole words: {o:?}");
        assert_eq!(
            plain(&o),
            "a: slower; b: faster; equal ok; unequal; !\nx ! y"
        );
    }
}
