//! Where the session lives between runs: `$XDG_STATE_HOME/hotlab/session.json`, else
//! `~/.local/state/hotlab/session.json`. Written whole after every change (temporary file, then
//! rename), so a crash of the front end loses at most the command it was running.

use std::path::{Path, PathBuf};

use super::SessionState;
use crate::export::write_whole;

/// The session file's path, from `XDG_STATE_HOME` or `HOME` (`None` when neither is set).
pub fn default_path() -> Option<PathBuf> {
    let non_empty = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = non_empty("XDG_STATE_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| non_empty("HOME").map(|h| h.join(".local").join("state")))?;
    Some(base.join("hotlab").join("session.json"))
}

/// Where a fresh session moves the file it would overwrite: `session.prev.json` beside it.
pub fn previous_path(path: &Path) -> PathBuf {
    path.with_file_name("session.prev.json")
}

/// Move a saved session out of the way of a fresh one (to [`previous_path`]), so starting
/// without `--resume` loses nothing; nothing to do when there is no file.
pub fn keep_previous(path: &Path) -> Result<(), String> {
    if !path.exists() {
        return Ok(());
    }
    let prev = previous_path(path);
    std::fs::rename(path, &prev).map_err(|e| {
        format!(
            "cannot keep the saved session as {}: {e}; nothing was overwritten",
            prev.display()
        )
    })
}

/// Write the state whole, creating the directory if needed.
pub fn save(path: &Path, state: &SessionState) -> Result<(), String> {
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let json =
        serde_json::to_vec_pretty(state).map_err(|e| format!("cannot encode the session: {e}"))?;
    write_whole(path, &json).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Read a saved state; `Ok(None)` when there is no file yet.
pub fn load(path: &Path) -> Result<Option<SessionState>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    serde_json::from_str(&text).map(Some).map_err(|e| {
        format!(
            "{} is not a hotlab session (line {}, column {}: {e}); move it away to start afresh",
            path.display(),
            e.line(),
            e.column()
        )
    })
}
