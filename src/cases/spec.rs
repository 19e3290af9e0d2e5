//! Case files: a script (`.hot`, or `.clif` for the second script mode) that opens with a TOML
//! header on comment lines, and `.toml` files of native-only rows.
//!
//! ```text
//! //# title = "integer arithmetic loop"   (`;#` in a .clif file)
//! //# twin = "int_loop"
//! //# unit = "one loop iteration"
//! //# checksum = "exact"
//! //# order = 10
//! //# entry = "run"                      (optional: "run", "hook" or "hook_virtual")
//! //# absent = "why there is no .clif"   (optional: the other mode's n/a reason)
//! ```
//!
//! A `.hot` and a `.clif` file with the same stem are the two modes of one case (one row). A
//! `.toml` file holds `[[row]]` tables (`name`, `title`, `twin`, `unit`, `order`) for rows that
//! are native only. A sub-directory of the cases directory is a *group* (`cases/programs/`:
//! the program suite): its cases load the same way, carry the directory's name as their
//! group, and sort after the cases at the top. Every error names the file and the line. See
//! `docs/cases.md`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::twins::{Twin, twin_named};
use crate::lang::SourceFile;

/// A script mode: how a case's script is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// `.hot` source.
    Hot,
    /// Raw Cranelift IR.
    Clif,
}

impl Mode {
    /// The file extension, with the dot (`.hot`), as column headers show it.
    pub fn label(self) -> &'static str {
        match self {
            Mode::Hot => ".hot",
            Mode::Clif => ".clif",
        }
    }

    fn header_prefix(self) -> &'static str {
        match self {
            Mode::Hot => "//#",
            Mode::Clif => ";#",
        }
    }
}

/// How the host runs a case's script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseEntry {
    /// `fn run(n: i64) -> i64` loops `n` times (a `.clif` script: `%run(ctx, n)`).
    #[default]
    Run,
    /// The host calls `Hook.call` `n` times on the object in the module variable `target`,
    /// through its `Handle` (the generation check, then the runtime's fused call path).
    Hook,
    /// As `Hook`, but through a `&dyn Hook` that is the object's shell: a native virtual call
    /// whose implementation is the script's method.
    HookVirtual,
}

impl CaseEntry {
    /// Its name in a header (`entry = "..."`).
    pub fn name(self) -> &'static str {
        match self {
            CaseEntry::Run => "run",
            CaseEntry::Hook => "hook",
            CaseEntry::HookVirtual => "hook_virtual",
        }
    }
}

/// How the script's result is checked against its twin's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChecksumRule {
    /// Equal, bit for bit.
    Exact,
    /// Equal within this absolute difference.
    Within(u64),
}

impl ChecksumRule {
    fn parse(text: &str) -> Option<ChecksumRule> {
        match text.trim() {
            "exact" => Some(ChecksumRule::Exact),
            t => t
                .strip_prefix("within ")
                .and_then(|n| n.trim().parse().ok())
                .map(ChecksumRule::Within),
        }
    }

    /// Whether `script` passes against `twin`.
    pub fn accepts(self, script: i64, twin: i64) -> bool {
        match self {
            ChecksumRule::Exact => script == twin,
            ChecksumRule::Within(d) => script.abs_diff(twin) <= d,
        }
    }
}

/// A header's values before they are checked (a native row's, or a script header's with its
/// defaults filled in).
#[derive(Debug)]
struct RawHeader {
    title: String,
    twin: String,
    unit: String,
    checksum: String,
    order: i64,
    entry: CaseEntry,
    entry_given: bool,
    absent: Option<String>,
}

/// The keys a script header may have.
const HEADER_KEYS: [&str; 7] = [
    "title", "twin", "unit", "checksum", "order", "entry", "absent",
];

/// The unit of a header that names none.
pub const DEFAULT_UNIT: &str = "one call of run";

fn default_order() -> i64 {
    100
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRow {
    name: String,
    title: String,
    twin: String,
    unit: String,
    #[serde(default = "default_order")]
    order: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNativeFile {
    #[serde(default)]
    row: Vec<RawRow>,
}

/// A case's header, checked.
#[derive(Debug, Clone)]
pub struct Header {
    /// The row's title.
    pub title: String,
    /// The native twin.
    pub twin: &'static Twin,
    /// What one operation is (the unit of the times).
    pub unit: String,
    /// How results are compared.
    pub checksum: ChecksumRule,
    /// Where the row goes (smaller first).
    pub order: i64,
    /// How the host runs the script.
    pub entry: CaseEntry,
    /// Whether the header names the entry (`entry = "..."`); without it, `hotlab check` finds
    /// the snippet's shape (see [`super::shape`]).
    pub entry_given: bool,
    /// Why the case has no script of its other mode (shown as that cell's `n/a` reason).
    pub absent: Option<String>,
}

/// One script file of a case.
#[derive(Debug, Clone)]
pub struct ScriptFile {
    /// Its mode.
    pub mode: Mode,
    /// Where it was read from.
    pub path: PathBuf,
    /// Its text (spans of diagnostics point into it).
    pub source: Arc<SourceFile>,
    /// Its header.
    pub header: Header,
}

/// A row of the matrix: a case with its scripts, or a native-only row (no scripts).
#[derive(Debug, Clone)]
pub struct Case {
    /// The file stem (or the `name` of a native-only row): what `--filter` matches.
    pub name: String,
    /// The sub-directory the case is in (`programs` for `cases/programs/`); `None` at the top.
    /// `--filter` matches it too.
    pub group: Option<String>,
    /// The header (of the `.hot` file when there are two).
    pub header: Header,
    /// The scripts, `.hot` first.
    pub scripts: Vec<ScriptFile>,
}

impl Case {
    /// The script of this mode, if the case has one.
    pub fn script(&self, mode: Mode) -> Option<&ScriptFile> {
        self.scripts.iter().find(|s| s.mode == mode)
    }

    /// True for rows that have no script.
    pub fn native_only(&self) -> bool {
        self.scripts.is_empty()
    }
}

/// A problem in a case file, with where it is.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{path}:{line}: {problem}")]
pub struct CaseError {
    /// The file.
    pub path: String,
    /// The 1-based line (0 when the whole file is meant).
    pub line: usize,
    /// What is wrong.
    pub problem: CaseProblem,
}

/// What is wrong in a case file, and how to fix it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CaseProblem {
    /// A script that is neither `.hot` nor `.clif`.
    #[error("a case script must end in .hot or .clif")]
    NotAScript,
    /// The file cannot be read.
    #[error("cannot read: {0}")]
    Unreadable(Arc<std::io::Error>),
    /// The cases directory cannot be listed.
    #[error("cannot read the cases directory: {0}")]
    UnreadableDir(Arc<std::io::Error>),
    /// The script does not open with header lines.
    #[error(
        "no case header: the file must open with `{prefix} twin = \"...\"` lines \
         (twin, and optionally title, unit, checksum, order, entry; see docs/cases.md)"
    )]
    NoHeader {
        /// The header lines' comment prefix (`//#`, `;#`).
        prefix: &'static str,
    },
    /// The header is not valid TOML, or lacks or misspells a key (TOML's message).
    #[error("bad header: {0}")]
    BadHeader(String),
    /// The header names a twin there is none of.
    #[error("unknown twin `{name}`; known twins: {}", .known.join(", "))]
    UnknownTwin {
        /// The name given.
        name: String,
        /// The twins there are.
        known: Vec<&'static str>,
    },
    /// The checksum rule is neither `exact` nor `within N`.
    #[error("unknown checksum rule `{0}`: use \"exact\" or \"within N\" (N an integer)")]
    UnknownChecksum(String),
    /// Several problems in one header, each with its line (all of them are reported at once).
    #[error("{}", several(.0))]
    Several(Vec<CaseError>),
    /// A key that must have text is empty.
    #[error("`{0}` must not be empty")]
    Empty(&'static str),
    /// The two modes of a case name different twins.
    #[error("names twin `{this}`, but the other mode of case `{case}` names `{other}`")]
    TwinsDisagree {
        /// The twin this script names.
        this: String,
        /// The case.
        case: String,
        /// The twin its other mode names.
        other: String,
    },
    /// Two native rows (or a row and a script) share a name.
    #[error("row `{0}` is defined twice")]
    DefinedTwice(String),
}

/// The first problem, then each other one on a line of its own with its file and line.
fn several(all: &[CaseError]) -> String {
    let mut out = all.first().map_or(String::new(), |e| e.problem.to_string());
    for e in all.iter().skip(1) {
        out.push_str(&format!("\n{e}"));
    }
    out
}

fn err(path: &Path, line: usize, problem: CaseProblem) -> CaseError {
    CaseError {
        path: path.display().to_string(),
        line,
        problem,
    }
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Turn a `toml` error into a `CaseError` at the right line of the file: `lines[k]` is the
/// file line of line `k` of the parsed text.
fn toml_error(path: &Path, parsed: &str, lines: &[usize], e: &toml::de::Error) -> CaseError {
    let k = e.span().map(|s| line_of(parsed, s.start)).unwrap_or(1);
    let line = lines.get(k - 1).copied().unwrap_or(1);
    err(
        path,
        line,
        CaseProblem::BadHeader(e.message().trim().to_string()),
    )
}

fn check_header(
    path: &Path,
    raw: RawHeader,
    lines: &[usize],
    parsed: &str,
) -> Result<Header, CaseError> {
    check_header_with(path, raw, lines, parsed, Vec::new())
}

/// [`check_header`], adding its problems to those already found.
fn check_header_with(
    path: &Path,
    raw: RawHeader,
    lines: &[usize],
    parsed: &str,
    mut problems: Vec<CaseError>,
) -> Result<Header, CaseError> {
    // The line of a key, for errors about its value.
    let line_of_key = |key: &str| {
        parsed
            .lines()
            .position(|l| l.trim_start().starts_with(key))
            .and_then(|k| lines.get(k).copied())
            .unwrap_or(1)
    };
    let twin = twin_named(&raw.twin);
    // An empty name is a missing `twin`, reported where the key's absence was found.
    if twin.is_none() && !raw.twin.is_empty() {
        let known = super::twins::twins().iter().map(|t| t.name).collect();
        problems.push(err(
            path,
            line_of_key("twin"),
            CaseProblem::UnknownTwin {
                name: raw.twin.clone(),
                known,
            },
        ));
    }
    let checksum = ChecksumRule::parse(&raw.checksum);
    if checksum.is_none() {
        problems.push(err(
            path,
            line_of_key("checksum"),
            CaseProblem::UnknownChecksum(raw.checksum.clone()),
        ));
    }
    for (key, value) in [("title", &raw.title), ("unit", &raw.unit)] {
        if value.trim().is_empty() {
            problems.push(err(path, line_of_key(key), CaseProblem::Empty(key)));
        }
    }
    match (twin, checksum) {
        (Some(twin), Some(checksum)) if problems.is_empty() => Ok(Header {
            title: raw.title,
            twin,
            unit: raw.unit,
            checksum,
            order: raw.order,
            entry: raw.entry,
            entry_given: raw.entry_given,
            absent: raw.absent,
        }),
        _ => Err(one_or_several(problems)),
    }
}

/// One problem as itself, more as [`CaseProblem::Several`] at the first one's line.
fn one_or_several(mut problems: Vec<CaseError>) -> CaseError {
    problems.sort_by_key(|e| e.line);
    if problems.len() == 1 {
        return problems.remove(0);
    }
    CaseError {
        path: problems[0].path.clone(),
        line: problems[0].line,
        problem: CaseProblem::Several(problems),
    }
}

/// A script header's table, read key by key: defaults for the keys it leaves out (`title` the
/// file's name, `unit` "one call of run", `checksum` "exact", `order` 100, `entry` found from
/// the snippet), and every problem (an unknown key, a value of the wrong type, no `twin`)
/// collected rather than the first one only.
fn raw_header(
    path: &Path,
    table: &toml::Table,
    lines: &[usize],
    parsed: &str,
) -> (RawHeader, Vec<CaseError>) {
    let line_of_key = |key: &str| {
        parsed
            .lines()
            .position(|l| {
                l.trim_start()
                    .strip_prefix(key)
                    .is_some_and(|r| r.trim_start().starts_with('='))
            })
            .and_then(|k| lines.get(k).copied())
            .unwrap_or_else(|| lines.first().copied().unwrap_or(1))
    };
    let mut problems = Vec::new();
    let bad = |key: &str, why: String| {
        err(
            path,
            line_of_key(key),
            CaseProblem::BadHeader(format!("`{key}`: {why}")),
        )
    };
    for key in table.keys() {
        if !HEADER_KEYS.contains(&key.as_str()) {
            problems.push(bad(
                key,
                format!("unknown key (the keys are {})", HEADER_KEYS.join(", ")),
            ));
        }
    }
    let mut text = |key: &str| match table.get(key) {
        None => None,
        Some(toml::Value::String(s)) => Some(s.clone()),
        Some(other) => {
            problems.push(bad(
                key,
                format!("expected a string, found {}", other.type_str()),
            ));
            None
        }
    };
    let twin = text("twin");
    let title = text("title");
    let unit = text("unit");
    let checksum = text("checksum");
    let absent = text("absent");
    let entry_text = text("entry");
    let entry = match entry_text.as_deref() {
        None => None,
        Some("run") => Some(CaseEntry::Run),
        Some("hook") => Some(CaseEntry::Hook),
        Some("hook_virtual") => Some(CaseEntry::HookVirtual),
        Some(other) => {
            problems.push(bad(
                "entry",
                format!("unknown entry `{other}`: use \"run\", \"hook\" or \"hook_virtual\""),
            ));
            None
        }
    };
    let order = match table.get("order") {
        None => default_order(),
        Some(toml::Value::Integer(i)) => *i,
        Some(other) => {
            problems.push(bad(
                "order",
                format!("expected an integer, found {}", other.type_str()),
            ));
            default_order()
        }
    };
    if twin.is_none() && table.get("twin").is_none_or(|v| v.is_str()) {
        let known: Vec<&str> = super::twins::twins().iter().map(|t| t.name).collect();
        problems.push(err(
            path,
            lines.first().copied().unwrap_or(1),
            CaseProblem::BadHeader(format!(
                "missing `twin`: name the native twin to compare with (`twin = \"int_loop\"`; \
                 known twins: {})",
                known.join(", ")
            )),
        ));
    }
    let file_name = path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    let raw = RawHeader {
        title: title.unwrap_or(file_name),
        twin: twin.unwrap_or_default(),
        unit: unit.unwrap_or_else(|| DEFAULT_UNIT.to_string()),
        checksum: checksum.unwrap_or_else(|| "exact".to_string()),
        order,
        entry_given: entry.is_some(),
        entry: entry.unwrap_or_default(),
        absent,
    };
    (raw, problems)
}

/// Read the header of a script's text (`mode` says the comment prefix).
pub fn parse_header(path: &Path, mode: Mode, text: &str) -> Result<Header, CaseError> {
    let prefix = mode.header_prefix();
    let mut parsed = String::new();
    let mut lines = Vec::new();
    for (k, line) in text.lines().enumerate() {
        match line.trim_start().strip_prefix(prefix) {
            Some(rest) => {
                parsed.push_str(rest);
                parsed.push('\n');
                lines.push(k + 1);
            }
            None => break,
        }
    }
    if lines.is_empty() {
        return Err(err(path, 1, CaseProblem::NoHeader { prefix }));
    }
    let table: toml::Table =
        toml::from_str(&parsed).map_err(|e| toml_error(path, &parsed, &lines, &e))?;
    let (raw, problems) = raw_header(path, &table, &lines, &parsed);
    // The values' problems (an unknown twin, a bad checksum rule) join the keys' ones.
    check_header_with(path, raw, &lines, &parsed, problems)
}

/// Read one script file and its header.
pub fn load_script(path: &Path) -> Result<ScriptFile, CaseError> {
    let mode = match path.extension().and_then(|e| e.to_str()) {
        Some("hot") => Mode::Hot,
        Some("clif") => Mode::Clif,
        _ => return Err(err(path, 0, CaseProblem::NotAScript)),
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| err(path, 0, CaseProblem::Unreadable(e.into())))?;
    let header = parse_header(path, mode, &text)?;
    Ok(ScriptFile {
        mode,
        path: path.to_path_buf(),
        source: Arc::new(SourceFile::new(path.display().to_string(), text)),
        header,
    })
}

/// Read a `.toml` file of native-only rows.
pub fn load_native_rows(path: &Path) -> Result<Vec<Case>, CaseError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| err(path, 0, CaseProblem::Unreadable(e.into())))?;
    let lines: Vec<usize> = (1..=text.lines().count().max(1)).collect();
    let raw: RawNativeFile =
        toml::from_str(&text).map_err(|e| toml_error(path, &text, &lines, &e))?;
    raw.row
        .into_iter()
        .map(|r| {
            let at = text
                .find(&format!("\"{}\"", r.name))
                .map_or(1, |o| line_of(&text, o));
            let header = RawHeader {
                title: r.title,
                twin: r.twin,
                unit: r.unit,
                checksum: "exact".into(),
                order: r.order,
                entry: CaseEntry::Run,
                entry_given: true,
                absent: None,
            };
            let header = check_header(path, header, &[], "").map_err(|mut e| {
                e.line = at;
                e
            })?;
            Ok(Case {
                name: r.name,
                group: None,
                header,
                scripts: Vec::new(),
            })
        })
        .collect()
}

/// Load every case in `dir`: scripts paired by stem, native-only rows, then the cases of each
/// sub-directory (a group, one level deep), sorted by group (the top first), `order`, then
/// name. Names must be unique, across groups too; the two modes of a case must name the same
/// twin.
pub fn load_dir(dir: &Path) -> Result<Vec<Case>, CaseError> {
    let mut cases: Vec<Case> = Vec::new();
    for sub in load_group(dir, None, &mut cases)? {
        let group = sub.file_name().map(|s| s.to_string_lossy().into_owned());
        load_group(&sub, group, &mut cases)?;
    }
    cases.sort_by(|a, b| {
        (&a.group, a.header.order, &a.name).cmp(&(&b.group, b.header.order, &b.name))
    });
    Ok(cases)
}

/// Load the cases of one directory into `cases` as `group`; the sub-directories it holds
/// (sorted; hidden ones skipped).
fn load_group(
    dir: &Path,
    group: Option<String>,
    cases: &mut Vec<Case>,
) -> Result<Vec<PathBuf>, CaseError> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| err(dir, 0, CaseProblem::UnreadableDir(e.into())))?;
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    let mut subs = Vec::new();
    for path in paths {
        if path.is_dir() {
            let hidden = path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'));
            if !hidden {
                subs.push(path);
            }
            continue;
        }
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        match ext {
            "hot" | "clif" => {
                let script = load_script(&path)?;
                let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
                let name = stem.unwrap_or_default();
                if let Some(case) = cases.iter_mut().find(|c| c.name == name) {
                    if case.group != group {
                        return Err(err(&path, 0, CaseProblem::DefinedTwice(name)));
                    }
                    if case.header.twin.name != script.header.twin.name {
                        return Err(err(
                            &path,
                            1,
                            CaseProblem::TwinsDisagree {
                                this: script.header.twin.name.to_string(),
                                case: name,
                                other: case.header.twin.name.to_string(),
                            },
                        ));
                    }
                    if script.mode == Mode::Hot {
                        case.header = script.header.clone();
                    }
                    case.scripts.push(script);
                    case.scripts.sort_by_key(|s| s.mode);
                } else {
                    cases.push(Case {
                        name,
                        group: group.clone(),
                        header: script.header.clone(),
                        scripts: vec![script],
                    });
                }
            }
            "toml" => {
                for mut row in load_native_rows(&path)? {
                    if cases.iter().any(|c| c.name == row.name) {
                        return Err(err(&path, 0, CaseProblem::DefinedTwice(row.name)));
                    }
                    row.group = group.clone();
                    cases.push(row);
                }
            }
            _ => {}
        }
    }
    Ok(subs)
}

/// The cases directory: `dir` when given, else `./cases` when it exists, else the one in the
/// source tree hotlab was built from.
pub fn default_dir(dir: Option<&Path>) -> PathBuf {
    match dir {
        Some(d) => d.to_path_buf(),
        None if Path::new("cases").is_dir() => PathBuf::from("cases"),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("cases"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_read_as_before() {
        let e = parse_header(Path::new("x.clif"), Mode::Clif, "function %f() {}\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "x.clif:1: no case header: the file must open with `;# twin = \"...\"` lines \
             (twin, and optionally title, unit, checksum, order, entry; see docs/cases.md)"
        );
        let e = err(
            Path::new("c"),
            3,
            CaseProblem::UnknownChecksum("close".into()),
        );
        assert_eq!(
            e.to_string(),
            "c:3: unknown checksum rule `close`: use \"exact\" or \"within N\" (N an integer)"
        );
        let e = err(
            Path::new("a.hot"),
            1,
            CaseProblem::TwinsDisagree {
                this: "x".into(),
                case: "a".into(),
                other: "y".into(),
            },
        );
        assert_eq!(
            e.to_string(),
            "a.hot:1: names twin `x`, but the other mode of case `a` names `y`"
        );
    }
}
