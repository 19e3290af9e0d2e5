//! Reading a snippet file: `.hot` source through the front end, or raw Cranelift IR (`.clif`).

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use super::{Failure, use_color};
use crate::lang::{self, FrontTimings, Program, SourceFile};

/// A loaded snippet.
pub enum SnippetFile {
    /// A checked hot program.
    Hot {
        /// The program.
        program: Program,
        /// Front-end timings.
        timings: FrontTimings,
    },
    /// Raw Cranelift IR text (the second script mode).
    Clif {
        /// The source.
        source: Arc<SourceFile>,
    },
}

/// Read `path` and run the front end; a diagnostic comes back rendered, with exit code 2.
pub fn load_snippet(path: &Path) -> Result<SnippetFile, Failure> {
    let name = path.display().to_string();
    let text = crate::lang::span::read_source(path)
        .map_err(|e| Failure::input(format!("error: cannot read {name}: {e}")))?;
    let source = Arc::new(SourceFile::new(name, text));
    if path.extension().is_some_and(|e| e == "clif") {
        return Ok(SnippetFile::Clif { source });
    }
    let (program, timings) = lang::compile_timed(Arc::clone(&source));
    match program {
        Ok(program) => Ok(SnippetFile::Hot { program, timings }),
        Err(diags) => Err(Failure::input(
            diags.render(&source, use_color(std::io::stderr().is_terminal())),
        )),
    }
}
