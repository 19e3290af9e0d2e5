//! Where the session lives between runs: `$XDG_STATE_HOME/hotlab/session.json`, else
//! `~/.local/state/hotlab/session.json`. Written whole after every change (temporary file, then
//! rename), so a crash of the front end loses at most the command it was running.
//!
//! Nothing saved is lost: a fresh session's first real change moves the saved file to
//! `session.prev.json`, and an older `session.prev.json` to `session.prev.2.json`, and so on
//! ([`GENERATIONS`] kept). A front end holds the file with a lock beside it
//! (`session.lock`, the holder's pid); a second front end on the same file is told so and saves
//! to a copy of its own ([`copy_path`]).

use std::path::{Path, PathBuf};

use super::SessionState;
use crate::export::write_whole;

/// The session file's path, from `XDG_STATE_HOME` or `HOME` (`None` when neither is set).
pub fn default_path() -> Option<PathBuf> {
    state_path().ok()
}

/// The session file's path, from `XDG_STATE_HOME` (an absolute path) or `HOME`, or why there
/// is none, in words a user can act on.
pub fn state_path() -> Result<PathBuf, NoStateDir> {
    let non_empty = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let xdg = non_empty("XDG_STATE_HOME");
    let base = xdg
        .clone()
        .filter(|p| p.is_absolute())
        .or_else(|| non_empty("HOME").map(|h| h.join(".local").join("state")))
        .ok_or(NoStateDir {
            relative_xdg: xdg.filter(|p| !p.is_absolute()),
        })?;
    Ok(base.join("hotlab").join("session.json"))
}

/// No state directory can be found: `HOME` is unset and `XDG_STATE_HOME` is unset, empty or
/// relative (the XDG rule ignores a relative one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no state directory for the session file: HOME is not set and XDG_STATE_HOME is {}; set \
     XDG_STATE_HOME (an absolute path) or HOME to keep sessions",
    match &.relative_xdg {
        Some(p) => format!("relative ({}), which the XDG rule ignores", p.display()),
        None => "not set".to_string(),
    }
)]
pub struct NoStateDir {
    /// A relative `XDG_STATE_HOME` that was ignored.
    pub relative_xdg: Option<PathBuf>,
}

/// Previous sessions kept: `session.prev.json` (the newest), then `session.prev.2.json` up to
/// `session.prev.10.json`.
pub const GENERATIONS: usize = 10;

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".into())
}

/// Where a fresh session moves the file it would overwrite: `session.prev.json` beside it.
pub fn previous_path(path: &Path) -> PathBuf {
    path.with_file_name(format!("{}.prev.json", stem(path)))
}

/// The `n`th previous session (1 is [`previous_path`], the newest).
pub fn generation_path(path: &Path, n: usize) -> PathBuf {
    if n <= 1 {
        previous_path(path)
    } else {
        path.with_file_name(format!("{}.prev.{n}.json", stem(path)))
    }
}

/// Why the session file could not be kept, read or written; each says what and where.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A kept generation could not be moved down.
    #[error("cannot move {} to {}: {error}; nothing was overwritten", .from.display(), .to.display())]
    Shift {
        /// The generation.
        from: PathBuf,
        /// Where it was to go.
        to: PathBuf,
        /// Why not.
        error: std::io::Error,
    },
    /// The saved session could not become the previous one.
    #[error("cannot keep the saved session as {}: {error}; nothing was overwritten", .prev.display())]
    Keep {
        /// The previous session's path.
        prev: PathBuf,
        /// Why not.
        error: std::io::Error,
    },
    /// The state directory could not be made.
    #[error("cannot create {}: {error}", .dir.display())]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// Why not.
        error: std::io::Error,
    },
    /// The state could not be encoded.
    #[error("cannot encode the session: {0}")]
    Encode(serde_json::Error),
    /// The file could not be written.
    #[error("cannot write {}: {error}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why not.
        error: std::io::Error,
    },
    /// The file could not be read.
    #[error("cannot read {}: {error}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why not.
        error: std::io::Error,
    },
    /// The file is not a session (where it stops being one).
    #[error(
        "{} is not a hotlab session (line {}, column {}: {error}); move it away to start afresh",
        .path.display(),
        .error.line(),
        .error.column()
    )]
    NotASession {
        /// The file.
        path: PathBuf,
        /// The parse error, with its line and column.
        error: serde_json::Error,
    },
}

/// Move a saved session out of the way of a fresh one (to [`previous_path`], the older
/// generations one step down, the oldest of [`GENERATIONS`] dropped), so starting without
/// `--resume` loses nothing; nothing to do when there is no file.
pub fn keep_previous(path: &Path) -> Result<(), StoreError> {
    if !path.exists() {
        return Ok(());
    }
    for n in (1..GENERATIONS).rev() {
        let from = generation_path(path, n);
        if from.exists() {
            let to = generation_path(path, n + 1);
            std::fs::rename(&from, &to).map_err(|error| StoreError::Shift {
                from: from.clone(),
                to: to.clone(),
                error,
            })?;
        }
    }
    let prev = previous_path(path);
    std::fs::rename(path, &prev).map_err(|error| StoreError::Keep {
        prev: prev.clone(),
        error,
    })
}

/// The lock file of a session file: `session.lock` beside `session.json`.
pub fn lock_path(path: &Path) -> PathBuf {
    path.with_file_name(format!("{}.lock", stem(path)))
}

/// Where a front end saves when another one holds the session file: `session.copy-PID.json`.
pub fn copy_path(path: &Path) -> PathBuf {
    path.with_file_name(format!("{}.copy-{}.json", stem(path), std::process::id()))
}

/// Session files locked by this process, by canonical path (the kernel's lock cannot tell two
/// sessions of one process apart by itself, and one file may be spelled two ways).
static HELD: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// A held session file: an exclusive `flock` on its lock file, released by the kernel when the
/// descriptor closes (this is dropped, or the process dies: a stale lock cannot outlive its
/// holder); the lock file is removed when this is dropped.
#[derive(Debug)]
pub struct StoreLock {
    file: PathBuf,
    store: PathBuf,
    /// The locked descriptor, open for as long as the session holds the file.
    _handle: std::fs::File,
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        // Removed while still locked: a front end that opened this file meanwhile finds, once
        // it has the lock, that the name no longer leads to it, and starts again (see `lock`).
        let _ = std::fs::remove_file(&self.file);
        if let Ok(mut held) = HELD.lock() {
            held.retain(|p| p != &self.store);
        }
    }
}

/// `path` with its directory canonical, so that two spellings of one file compare equal.
fn canonical(path: &Path) -> PathBuf {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(dir), path.file_name()) {
        (Ok(dir), Some(name)) => dir.join(name),
        _ => path.to_path_buf(),
    }
}

/// Whether two paths name one file (the directories compared canonical).
pub fn same_file(a: &Path, b: &Path) -> bool {
    canonical(a) == canonical(b)
}

/// Whether the open `file` is the file `path` names now (same device and inode).
fn names(file: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Hold the session file `path` for this front end: an exclusive lock on its lock file, which
/// names this process for the message another front end shows.
pub fn lock(path: &Path) -> Result<StoreLock, LockError> {
    use std::io::{Seek, Write};
    use std::os::fd::AsRawFd;
    let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
    let file = lock_path(path);
    if let Some(dir) = file.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| LockError::Io(format!("cannot create {}: {e}", dir.display())))?;
    }
    let store = canonical(path);
    if held.iter().any(|p| p == &store) {
        return Err(LockError::InUse(std::process::id()));
    }
    let io = |e: std::io::Error| LockError::Io(format!("cannot lock {}: {e}", file.display()));
    for _ in 0..8 {
        let mut handle = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&file)
            .map_err(io)?;
        // SAFETY: `flock` on a descriptor `handle` owns and keeps open; no memory is involved.
        let r = unsafe { libc::flock(handle.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                return Err(LockError::InUse(read_holder(&file).unwrap_or(0)));
            }
            return Err(io(e));
        }
        // The holder before may have removed the name after this process opened it: the lock
        // is then on a file nobody else will look at. Start again on the name as it is now.
        if !names(&handle, &file) {
            continue;
        }
        handle.set_len(0).map_err(io)?;
        handle.rewind().map_err(io)?;
        writeln!(handle, "{}", std::process::id())
            .map_err(|e| LockError::Io(format!("cannot write {}: {e}", file.display())))?;
        held.push(store.clone());
        return Ok(StoreLock {
            file,
            store,
            _handle: handle,
        });
    }
    Err(LockError::Io(format!(
        "cannot take {}: other front ends keep replacing it",
        file.display()
    )))
}

fn read_holder(lock: &Path) -> Option<u32> {
    std::fs::read_to_string(lock).ok()?.trim().parse().ok()
}

/// Why a session file cannot be held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockError {
    /// Another front end (this pid) holds it.
    InUse(u32),
    /// The lock file cannot be written (a read-only directory, say).
    Io(String),
}

/// Write the state whole, creating the directory if needed.
pub fn save(path: &Path, state: &SessionState) -> Result<(), StoreError> {
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir).map_err(|error| StoreError::CreateDir {
            dir: dir.to_path_buf(),
            error,
        })?;
    }
    let json = serde_json::to_vec_pretty(state).map_err(StoreError::Encode)?;
    write_whole(path, &json).map_err(|error| StoreError::Write {
        path: path.to_path_buf(),
        error,
    })
}

/// Read a saved state; `Ok(None)` when there is no file yet.
pub fn load(path: &Path) -> Result<Option<SessionState>, StoreError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(StoreError::Read {
                path: path.to_path_buf(),
                error,
            });
        }
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|error| StoreError::NotASession {
            path: path.to_path_buf(),
            error,
        })
}
