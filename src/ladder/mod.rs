//! The layered call micro-benchmark: ladders read from `micro/`, built and measured row by row.

pub mod aot;
mod aot_table;
pub mod bench;
pub mod clif;
pub mod code;
pub mod helpers;
pub mod path;
pub mod real;
pub mod report;
pub mod run;
pub mod spec;

pub use spec::{Ladder, LadderError, LadderProblem, Layer, Step};

use std::path::{Path, PathBuf};

/// The directory holding the shipped ladders (`micro/` at the crate root).
pub fn micro_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("micro")
}

/// The ladders shipped in the binary, so `--ladder NAME` works from any directory.
pub const BUILTIN: [(&str, &str); 4] = [
    ("host_call", include_str!("../../micro/host_call.toml")),
    ("fused", include_str!("../../micro/fused.toml")),
    ("direct", include_str!("../../micro/direct.toml")),
    ("runtime", include_str!("../../micro/runtime.toml")),
];

/// The shipped breakdown of `new` and free (its floor is `Arc::new`, not a call): resolved by
/// name like the ladders above, not cycled through with them in the TUI.
pub const NEW_LADDER: (&str, &str) = ("new", include_str!("../../micro/new.toml"));

/// Find a ladder by name (a shipped one) or by path (a `.toml` file).
pub fn resolve(name_or_path: &str) -> Result<Ladder, LadderError> {
    if let Some((name, text)) = BUILTIN
        .iter()
        .chain([&NEW_LADDER])
        .find(|(n, _)| *n == name_or_path)
    {
        return Ladder::parse(&format!("micro/{name}.toml"), text);
    }
    let path = Path::new(name_or_path);
    if path.extension().is_some() || path.exists() {
        return Ladder::load(path);
    }
    Err(LadderError {
        file: name_or_path.to_string(),
        line: 1,
        col: 1,
        key: "ladder".into(),
        problem: LadderProblem::NoSuchLadder {
            shipped: BUILTIN
                .iter()
                .chain([&NEW_LADDER])
                .map(|(n, _)| *n)
                .collect(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_ladders_parse() {
        for (name, _) in BUILTIN.into_iter().chain([NEW_LADDER]) {
            let l = resolve(name).unwrap();
            assert_eq!(l.name, name);
        }
        assert!(resolve("nope").is_err());
    }
}
