//! The ladder's machine code for a front end that shows it beside the measurement (the TUI's
//! code pane). It is built by a worker job like every other, so a crash while building it ends
//! only the worker.

use super::results::JobReport;
use super::{Collect, Session, SessionError};
use crate::ladder::Ladder;
use crate::ladder::code::StepCode;
use crate::worker::protocol::{SnippetSource, WorkerJob};

impl Session {
    /// Each step's `jit` machine code of `ladder` around `text`'s `fn call() -> i64` (the
    /// default empty method when the text has no `fn call(`), with each step's diff from the
    /// step before. `text` is the current snippet's (it need not be set first); nothing is
    /// recorded in the results or the history.
    pub fn ladder_code(
        &mut self,
        ladder: Ladder,
        text: &str,
    ) -> Result<Vec<StepCode>, SessionError> {
        let snippet = SnippetSource {
            name: self.state.snippet().name.clone(),
            text: text.to_string(),
        };
        let limit = self.limit();
        match self.job(
            WorkerJob::LadderCode { ladder, snippet },
            limit,
            &mut Collect::default(),
        )? {
            JobReport::LadderCode { steps } => Ok(steps),
            other => Err(SessionError::Input(format!(
                "unexpected answer from the worker: {other:?}"
            ))),
        }
    }

    /// The machine code of a snippet's functions on `backend` (the TUI's code pane for the
    /// rows of a comparison or a check), built in the worker and recorded nowhere. The
    /// snippet is one of the session's, by name, with `text` for the current one, or else a
    /// case's script by its file name (a `:bench` row's, `int_loop.hot`) in the session's
    /// cases directory.
    pub fn function_code(
        &mut self,
        snippet: &str,
        backend: crate::backend::Backend,
        text: &str,
    ) -> Result<Vec<crate::session::FunctionListing>, SessionError> {
        let text = if self.state.snippet().name == snippet {
            text.to_string()
        } else if let Some(s) = self.state.snippets.iter().find(|s| s.name == snippet) {
            s.text.clone()
        } else {
            self.case_script(snippet).ok_or_else(|| {
                SessionError::Input(format!("no snippet or case script named {snippet}"))
            })?
        };
        let job = WorkerJob::Asm {
            snippet: SnippetSource {
                name: snippet.to_string(),
                text,
            },
            backend,
            function: None,
        };
        let limit = self.limit();
        match self.job(job, limit, &mut Collect::default())? {
            JobReport::Asm { listings } => Ok(listings),
            other => Err(SessionError::Input(format!(
                "unexpected answer from the worker: {other:?}"
            ))),
        }
    }
}
