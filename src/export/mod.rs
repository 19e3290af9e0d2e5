//! Exports: one table model, one file per format, and files written whole.
//!
//! Results (ladders, comparisons, bench matrices) turn themselves into a [`Table`] for the text,
//! Markdown and CSV formats; JSON is the result's own serde form, so it keeps every number.

pub mod compare;
mod csv;
mod markdown;
pub mod records;
mod text;

use std::io::Write;
use std::path::Path;

pub use csv::render_csv;
pub use markdown::render_markdown;
pub use text::{DIFFERS_PAINT, render_text, render_text_painted, verdict_paint};

/// How a column is aligned in text and Markdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Text columns.
    Left,
    /// Number columns.
    Right,
}

/// A column header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The header text.
    pub name: String,
    /// Its alignment.
    pub align: Align,
}

/// A table of already formatted cells, with a title and notes (legend, caveats).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    /// Shown above the table (a heading in Markdown).
    pub title: String,
    /// The columns.
    pub columns: Vec<Column>,
    /// The rows; each has one cell per column.
    pub rows: Vec<Vec<String>>,
    /// Lines shown under the table.
    pub notes: Vec<String>,
}

impl Table {
    /// A table with these columns: names starting with `>` are right-aligned (the `>` is dropped).
    pub fn new(title: impl Into<String>, columns: &[&str]) -> Table {
        Table {
            title: title.into(),
            columns: columns
                .iter()
                .map(|c| match c.strip_prefix('>') {
                    Some(name) => Column {
                        name: name.to_string(),
                        align: Align::Right,
                    },
                    None => Column {
                        name: c.to_string(),
                        align: Align::Left,
                    },
                })
                .collect(),
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Append a row (padded or cut to the column count).
    pub fn push(&mut self, cells: Vec<String>) {
        let mut cells = cells;
        cells.resize(self.columns.len(), String::new());
        self.rows.push(cells);
    }
}

/// An output format chosen with `--format`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
pub enum Format {
    /// Aligned text for a terminal.
    Table,
    /// A GitHub-flavoured Markdown table.
    Markdown,
    /// Comma-separated values (RFC 4180 quoting).
    Csv,
    /// The result's own JSON form.
    Json,
}

impl Format {
    /// The format a file name suggests (`.md`, `.csv`, `.json`), else `None`.
    pub fn from_extension(path: &Path) -> Option<Format> {
        match path.extension()?.to_str()? {
            "md" | "markdown" => Some(Format::Markdown),
            "csv" => Some(Format::Csv),
            "json" => Some(Format::Json),
            "txt" => Some(Format::Table),
            _ => None,
        }
    }
}

/// Write `bytes` to `path` whole: to a temporary file in the same directory, then renamed over
/// the target, so a reader never sees half a file and a failure leaves the old one. `-` is stdout.
pub fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if path == Path::new("-") {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes)?;
        return out.flush();
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other(format!("{} is not a file name", path.display())))?;
    let tmp = dir.join(format!(
        ".{}.tmp{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn sample() -> Table {
        let mut t = Table::new("Ladder host_call", &["step", ">ns", ">ratio"]);
        t.push(vec!["native".into(), "1.46".into(), "1.0x".into()]);
        t.push(vec!["slot, read".into(), "3.51".into(), "2.4x".into()]);
        t.notes.push("ns per call".into());
        t
    }

    #[test]
    fn write_whole_replaces_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.csv");
        write_whole(&p, b"a").unwrap();
        write_whole(&p, b"bb").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"bb");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert!(write_whole(&dir.path().join("no/such/dir/x"), b"a").is_err());
    }

    #[test]
    fn formats() {
        let t = sample();
        insta::assert_snapshot!(render_text(&t), @r"
        Ladder host_call
        step          ns  ratio
        ----------  ----  -----
        native      1.46   1.0x
        slot, read  3.51   2.4x
        ns per call
        ");
        insta::assert_snapshot!(render_markdown(&t), @r"
        ### Ladder host_call

        | step | ns | ratio |
        | :--- | ---: | ---: |
        | native | 1.46 | 1.0x |
        | slot, read | 3.51 | 2.4x |

        ns per call
        ");
        insta::assert_snapshot!(render_csv(&t), @r#"
        step,ns,ratio
        native,1.46,1.0x
        "slot, read",3.51,2.4x
        "#);
        assert_eq!(
            Format::from_extension(Path::new("a.md")),
            Some(Format::Markdown)
        );
    }
}
