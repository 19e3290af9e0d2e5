//! Byte spans and source files: every AST and HIR node carries a [`Span`] into its [`SourceFile`].

use std::fmt;

/// A half-open byte range `start..end` into a source file's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Span {
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// No span yet: an error raised by a runtime helper that does not know the script
    /// operation; `ScriptError::raise` or the catching border fills it in.
    pub const UNKNOWN: Span = Span {
        start: u32::MAX,
        end: u32::MAX,
    };

    /// A span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    /// The smallest span that covers both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// As a `Range<usize>` for slicing and for diagnostics.
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// A named source text with a line index, so spans can be shown as `file:line:col`.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The name shown in messages (usually the path as the user wrote it).
    pub name: String,
    /// The whole text.
    pub text: String,
    line_starts: Vec<u32>,
}

/// A 1-based line and column (column counted in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineCol {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub col: u32,
}

impl fmt::Display for LineCol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

impl SourceFile {
    /// Index `text` under `name`.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        let text = text.into();
        let mut line_starts = vec![0u32];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(i as u32 + 1);
            }
        }
        SourceFile {
            name: name.into(),
            text,
            line_starts,
        }
    }

    /// Line and column of a byte offset (clamped to the text).
    pub fn line_col(&self, offset: u32) -> LineCol {
        let offset = offset.min(self.text.len() as u32);
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line] as usize;
        let mut end = offset as usize;
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let col = self.text[start..end].chars().count() as u32 + 1;
        LineCol {
            line: line as u32 + 1,
            col,
        }
    }

    /// `name:line:col` of a span's start.
    pub fn location(&self, span: Span) -> String {
        format!("{}:{}", self.name, self.line_col(span.start))
    }
}

/// The text of a source file, like `std::fs::read_to_string`, but a file that is not UTF-8
/// says where: `not valid UTF-8 at line 2, column 1 (byte 0xff)`.
pub fn read_source(path: &std::path::Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        let good = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
        let line = good.matches('\n').count() + 1;
        let col = good.rsplit('\n').next().unwrap_or_default().chars().count() + 1;
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "not valid UTF-8 at line {line}, column {col} (byte 0x{:02x})",
                bytes[at]
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_utf8_says_where() {
        let dir = std::env::temp_dir().join(format!("hotlab-utf8-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("bad.hot");
        std::fs::write(&p, b"fn main() -> i64 {\n  r\xc3\xa9 \xff\n}\n").unwrap();
        let e = read_source(&p).unwrap_err();
        assert_eq!(
            e.to_string(),
            "not valid UTF-8 at line 2, column 6 (byte 0xff)"
        );
        std::fs::write(&p, "fine\n").unwrap();
        assert_eq!(read_source(&p).unwrap(), "fine\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn line_col_counts_from_one() {
        let f = SourceFile::new("t.hot", "ab\ncdé\nx");
        assert_eq!(f.line_col(0), LineCol { line: 1, col: 1 });
        assert_eq!(f.line_col(3), LineCol { line: 2, col: 1 });
        assert_eq!(f.line_col(8), LineCol { line: 3, col: 1 });
        assert_eq!(f.location(Span::new(4, 5)), "t.hot:2:2");
    }
}
