//! A case's script on a backend: loaded through the one facade ([`crate::backend::Loader`])
//! for the workload its header's `entry` names, and why a cell of the matrix has no time.

use std::sync::Arc;

use serde::Serialize;

use super::spec::{CaseEntry, Mode, ScriptFile};
pub use crate::backend::{Backend, LoadTimes, Loaded, Loader, Sampler};
use crate::backend::{HookVia, LoadError, LoadOptions, Workload, WorkloadError};
use crate::lang::SourceFile;

impl Backend {
    /// Why this backend cannot run scripts of `mode`, or `None` when it can.
    pub fn unavailable(self, mode: Mode) -> Option<&'static str> {
        match mode {
            Mode::Clif => self.refuses_clif(),
            Mode::Hot => None,
        }
    }

    /// Load `script` for this backend, timing each stage.
    pub fn load(
        self,
        script: &ScriptFile,
        loader: &mut Loader,
    ) -> Result<(Loaded, LoadTimes), CellError> {
        self.load_source(script.mode, &script.source, script.header.entry, loader)
    }

    /// Load a script's source of this `mode` (its name is its path), to be run as `entry`
    /// says.
    pub fn load_source(
        self,
        mode: Mode,
        source: &Arc<SourceFile>,
        entry: CaseEntry,
        loader: &mut Loader,
    ) -> Result<(Loaded, LoadTimes), CellError> {
        if let Some(why) = self.unavailable(mode) {
            return Err(CellError::Unavailable(why.to_string()));
        }
        match loader.load(Arc::clone(source), self, Some(&entry.workload())) {
            Ok(loaded) => {
                let times = loaded.times();
                Ok((loaded, times))
            }
            Err(e) => Err(cell_error(e, self, source)),
        }
    }
}

impl CaseEntry {
    /// What a measured sample of a script with this entry runs.
    pub fn workload(self) -> Workload {
        match self {
            CaseEntry::Run => Workload::Loop("run".into()),
            CaseEntry::Hook => Workload::Hook(HookVia::Handle),
            CaseEntry::HookVirtual => Workload::Hook(HookVia::Virtual),
        }
    }
}

/// The loader of a matrix or a check: JITs without the verifier (as in a release build, so
/// load times show compile work only), bounds checks on.
pub fn case_loader() -> Loader {
    layout_loader(0)
}

/// [`case_loader`] placing `jit` and `jit-opt` code at layout `k` (0: the usual placement).
pub fn layout_loader(k: usize) -> Loader {
    Loader::new(LoadOptions {
        verify: false,
        layout: k,
        ..LoadOptions::default()
    })
}

/// A load error as a cell shows it (`n/a` with its reason, or the message of an `error`).
fn cell_error(e: LoadError, backend: Backend, source: &SourceFile) -> CellError {
    let name = &source.name;
    match e {
        LoadError::HotOnly(_) => CellError::Unavailable(e.to_string()),
        LoadError::Front(d) => CellError::Failed(d.render(source, false)),
        LoadError::Init(err) if backend == Backend::Interp => CellError::Failed(err.render(source)),
        LoadError::Workload(WorkloadError::NoFunction(_)) => CellError::Failed(format!(
            "{name}: no `fn run(n: i64) -> i64`: a case loops n times in `run` and returns a \
             checksum"
        )),
        other => CellError::Failed(format!("{name}: {other}")),
    }
}

/// Why a cell has no time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "reason", rename_all = "snake_case")]
pub enum CellError {
    /// The backend cannot run this (shown `n/a`; not an error).
    Unavailable(String),
    /// Loading or running failed (shown `error`; `bench` exits non-zero).
    Failed(String),
}

impl std::fmt::Display for CellError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CellError::Unavailable(r) => write!(f, "n/a: {r}"),
            CellError::Failed(r) => f.write_str(r),
        }
    }
}
