//! The session's cases: those of the directory the front end's `--cases DIR` chose (else
//! `./cases`, else the one hotlab was built with), read once and kept. A command that shows or
//! loads cases (`:cases`, `:load CASE`) reads the directory again, so it sees the files as they
//! are now; `:bench` drops what was read (its worker reads the directory itself), so the code
//! of its rows comes from the files it measured. Looking a case's script up by file name (the
//! TUI does, once per row of a bench) uses what was read.

use std::path::PathBuf;
use std::sync::Arc;

use super::{Session, SessionError};
use crate::cases::Case;
use crate::cases::spec::{default_dir, load_dir};

/// The cases directory a session reads, and the cases last read there.
#[derive(Default)]
pub(super) struct CaseDir {
    /// `--cases DIR`; `None`: `./cases`, else the one hotlab was built with.
    chosen: Option<PathBuf>,
    /// The cases as last read; `None` until the first use, and after `:bench`.
    read: Option<Arc<Vec<Case>>>,
}

impl CaseDir {
    /// Forget the cases read, so the next use reads the directory again.
    pub(super) fn forget(&mut self) {
        self.read = None;
    }
}

impl Session {
    /// Read the cases from `dir` instead of the default directory (a front end's `--cases
    /// DIR`); `None`: `./cases`, else the one hotlab was built with.
    pub fn set_cases_dir(&mut self, dir: Option<PathBuf>) {
        self.cases = CaseDir {
            chosen: dir,
            read: None,
        };
    }

    /// The directory the session's cases come from.
    pub fn cases_dir(&self) -> PathBuf {
        default_dir(self.cases.chosen.as_deref())
    }

    /// The cases of [`Session::cases_dir`]: read again when `fresh`, else as last read (read
    /// the first time).
    pub(super) fn cases(&mut self, fresh: bool) -> Result<Arc<Vec<Case>>, SessionError> {
        let read = match self.cases.read.take() {
            Some(read) if !fresh => read,
            _ => Arc::new(
                load_dir(&self.cases_dir())
                    .map_err(|e| SessionError::Input(format!("error: {e}")))?,
            ),
        };
        self.cases.read = Some(Arc::clone(&read));
        Ok(read)
    }

    /// The text of the case script whose file is named `name` (`int_loop.hot`), if the
    /// session's cases have one.
    pub(super) fn case_script(&mut self, name: &str) -> Option<String> {
        let cases = self.cases(false).ok()?;
        cases
            .iter()
            .flat_map(|c| &c.scripts)
            .find(|s| super::exec::file_name(&s.path) == name)
            .map(|s| s.source.text.clone())
    }
}
