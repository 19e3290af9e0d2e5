//! Tokens: what the lexer produces and the parser consumes.
//!
//! A string literal becomes a flat run of tokens, so an interpolated expression is lexed like any
//! other code: `"a ${x + 1} b"` is `StrStart, StrText("a "), InterpOpen, Ident(x), Plus, Int(1),
//! InterpClose, StrText(" b"), StrEnd`.

use std::fmt;

use super::span::Span;

/// A token with its span.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// What it is.
    pub kind: TokenKind,
    /// Where it is.
    pub span: Span,
}

/// Every kind of token.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenKind {
    /// An identifier (type names such as `i64` are identifiers too).
    Ident(String),
    /// An integer literal's magnitude (`-` is a separate token; `9223372036854775808` is allowed
    /// here so that `-9223372036854775808` can be written).
    Int(u64),
    /// A hexadecimal, binary or octal literal above `i64::MAX`: a bit pattern, the `i64` with
    /// these 64 bits (`0xcbf29ce484222325` is negative). Smaller ones are [`TokenKind::Int`].
    Bits(u64),
    /// A float literal.
    Float(f64),
    /// `"`: a string literal starts.
    StrStart,
    /// Literal text inside a string, escapes already processed.
    StrText(String),
    /// `${` inside a string.
    InterpOpen,
    /// The `}` that closes an interpolation.
    InterpClose,
    /// `"`: a string literal ends.
    StrEnd,
    /// A keyword.
    Kw(Keyword),
    /// An operator or punctuation.
    Punct(Punct),
    /// The end of a statement: a newline where a statement may end (see the lexer's docs).
    Newline,
    /// The end of the input (always the last token).
    Eof,
}

/// Reserved words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Keyword {
    /// `let`
    Let,
    /// `var`
    Var,
    /// `fn`
    Fn,
    /// `native`
    Native,
    /// `return`
    Return,
    /// `if`
    If,
    /// `else`
    Else,
    /// `while`
    While,
    /// `for`
    For,
    /// `in`
    In,
    /// `break`
    Break,
    /// `continue`
    Continue,
    /// `true`
    True,
    /// `false`
    False,
    /// `null`
    Null,
    /// `as`
    As,
    /// `class`
    Class,
    /// `interface`
    Interface,
    /// `new`
    New,
    /// `self`
    SelfValue,
    /// `static`
    Static,
    /// `virtual`
    Virtual,
    /// `override`
    Override,
}

impl Keyword {
    /// Every keyword, for the lexer and for fuzzing.
    pub const ALL: [Keyword; 23] = [
        Keyword::Let,
        Keyword::Var,
        Keyword::Fn,
        Keyword::Native,
        Keyword::Return,
        Keyword::If,
        Keyword::Else,
        Keyword::While,
        Keyword::For,
        Keyword::In,
        Keyword::Break,
        Keyword::Continue,
        Keyword::True,
        Keyword::False,
        Keyword::Null,
        Keyword::As,
        Keyword::Class,
        Keyword::Interface,
        Keyword::New,
        Keyword::SelfValue,
        Keyword::Static,
        Keyword::Virtual,
        Keyword::Override,
    ];

    /// The keyword as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Keyword::Let => "let",
            Keyword::Var => "var",
            Keyword::Fn => "fn",
            Keyword::Native => "native",
            Keyword::Return => "return",
            Keyword::If => "if",
            Keyword::Else => "else",
            Keyword::While => "while",
            Keyword::For => "for",
            Keyword::In => "in",
            Keyword::Break => "break",
            Keyword::Continue => "continue",
            Keyword::True => "true",
            Keyword::False => "false",
            Keyword::Null => "null",
            Keyword::As => "as",
            Keyword::Class => "class",
            Keyword::Interface => "interface",
            Keyword::New => "new",
            Keyword::SelfValue => "self",
            Keyword::Static => "static",
            Keyword::Virtual => "virtual",
            Keyword::Override => "override",
        }
    }

    /// The keyword spelled `word`, if any.
    pub fn from_word(word: &str) -> Option<Keyword> {
        Keyword::ALL.iter().copied().find(|k| k.as_str() == word)
    }
}

/// Operators and punctuation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Punct {
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `[`
    LBracket,
    /// `]`
    RBracket,
    /// `{`
    LBrace,
    /// `}`
    RBrace,
    /// `,`
    Comma,
    /// `;`
    Semi,
    /// `:`
    Colon,
    /// `.`
    Dot,
    /// `..`
    DotDot,
    /// `..=`
    DotDotEq,
    /// `->`
    Arrow,
    /// `?`
    Question,
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `*`
    Star,
    /// `/`
    Slash,
    /// `%`
    Percent,
    /// `&`
    Amp,
    /// `|`
    Pipe,
    /// `^`
    Caret,
    /// `~`
    Tilde,
    /// `!`
    Bang,
    /// `<<`
    Shl,
    /// `>>`
    Shr,
    /// `>>>` (logical shift right)
    UShr,
    /// `&&`
    AndAnd,
    /// `||`
    OrOr,
    /// `==`
    EqEq,
    /// `!=`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `=`
    Eq,
    /// `+=`
    PlusEq,
    /// `-=`
    MinusEq,
    /// `*=`
    StarEq,
    /// `/=`
    SlashEq,
    /// `%=`
    PercentEq,
    /// `&=`
    AmpEq,
    /// `|=`
    PipeEq,
    /// `^=`
    CaretEq,
    /// `<<=`
    ShlEq,
    /// `>>=`
    ShrEq,
    /// `>>>=`
    UShrEq,
}

impl Punct {
    /// Every operator, longest spelling first (the lexer takes the first that matches).
    pub const ALL: [Punct; 47] = [
        Punct::UShrEq,
        Punct::DotDotEq,
        Punct::UShr,
        Punct::ShlEq,
        Punct::ShrEq,
        Punct::DotDot,
        Punct::Arrow,
        Punct::Shl,
        Punct::Shr,
        Punct::AndAnd,
        Punct::OrOr,
        Punct::EqEq,
        Punct::NotEq,
        Punct::Le,
        Punct::Ge,
        Punct::PlusEq,
        Punct::MinusEq,
        Punct::StarEq,
        Punct::SlashEq,
        Punct::PercentEq,
        Punct::AmpEq,
        Punct::PipeEq,
        Punct::CaretEq,
        Punct::LParen,
        Punct::RParen,
        Punct::LBracket,
        Punct::RBracket,
        Punct::LBrace,
        Punct::RBrace,
        Punct::Comma,
        Punct::Semi,
        Punct::Colon,
        Punct::Dot,
        Punct::Question,
        Punct::Plus,
        Punct::Minus,
        Punct::Star,
        Punct::Slash,
        Punct::Percent,
        Punct::Amp,
        Punct::Pipe,
        Punct::Caret,
        Punct::Tilde,
        Punct::Bang,
        Punct::Lt,
        Punct::Gt,
        Punct::Eq,
    ];

    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Punct::LParen => "(",
            Punct::RParen => ")",
            Punct::LBracket => "[",
            Punct::RBracket => "]",
            Punct::LBrace => "{",
            Punct::RBrace => "}",
            Punct::Comma => ",",
            Punct::Semi => ";",
            Punct::Colon => ":",
            Punct::Dot => ".",
            Punct::DotDot => "..",
            Punct::DotDotEq => "..=",
            Punct::Arrow => "->",
            Punct::Question => "?",
            Punct::Plus => "+",
            Punct::Minus => "-",
            Punct::Star => "*",
            Punct::Slash => "/",
            Punct::Percent => "%",
            Punct::Amp => "&",
            Punct::Pipe => "|",
            Punct::Caret => "^",
            Punct::Tilde => "~",
            Punct::Bang => "!",
            Punct::Shl => "<<",
            Punct::Shr => ">>",
            Punct::AndAnd => "&&",
            Punct::OrOr => "||",
            Punct::EqEq => "==",
            Punct::NotEq => "!=",
            Punct::Lt => "<",
            Punct::Le => "<=",
            Punct::Gt => ">",
            Punct::Ge => ">=",
            Punct::Eq => "=",
            Punct::PlusEq => "+=",
            Punct::MinusEq => "-=",
            Punct::StarEq => "*=",
            Punct::SlashEq => "/=",
            Punct::PercentEq => "%=",
            Punct::AmpEq => "&=",
            Punct::PipeEq => "|=",
            Punct::CaretEq => "^=",
            Punct::ShlEq => "<<=",
            Punct::ShrEq => ">>=",
            Punct::UShr => ">>>",
            Punct::UShrEq => ">>>=",
        }
    }
}

impl TokenKind {
    /// Whether a statement may end right after this token, so that a newline following it ends
    /// the statement (see the lexer's module docs).
    pub fn can_end_statement(&self) -> bool {
        match self {
            TokenKind::Ident(_)
            | TokenKind::Int(_)
            | TokenKind::Bits(_)
            | TokenKind::Float(_)
            | TokenKind::StrEnd => true,
            TokenKind::Kw(k) => matches!(
                k,
                Keyword::True
                    | Keyword::False
                    | Keyword::Null
                    | Keyword::SelfValue
                    | Keyword::Break
                    | Keyword::Continue
                    | Keyword::Return
            ),
            TokenKind::Punct(p) => matches!(
                p,
                Punct::RParen | Punct::RBracket | Punct::RBrace | Punct::Question
            ),
            _ => false,
        }
    }
}

impl fmt::Display for TokenKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenKind::Ident(name) => write!(f, "`{name}`"),
            TokenKind::Int(v) => write!(f, "`{v}`"),
            TokenKind::Bits(v) => write!(f, "`{v:#x}`"),
            TokenKind::Float(v) => write!(f, "`{v:?}`"),
            TokenKind::StrStart => f.write_str("a string"),
            TokenKind::StrText(_) => f.write_str("string text"),
            TokenKind::InterpOpen => f.write_str("`${`"),
            TokenKind::InterpClose => f.write_str("`}`"),
            TokenKind::StrEnd => f.write_str("the end of a string"),
            TokenKind::Kw(k) => write!(f, "`{}`", k.as_str()),
            TokenKind::Punct(p) => write!(f, "`{}`", p.as_str()),
            TokenKind::Newline => f.write_str("the end of the statement"),
            TokenKind::Eof => f.write_str("the end of the input"),
        }
    }
}
