//! What the front ends share (`cli`, `repl`, `tui`): a [`Failure`] with its [`exit`] code, the
//! colour rule ([`use_color`]), the options that open a session ([`FrontArgs`]), and reading a
//! snippet file ([`snippet`]). It sits below the front ends, so none of them imports another.

pub mod snippet;

pub use snippet::{SnippetFile, load_snippet};

use crate::session::{Session, SessionError, SessionOptions};

/// Exit codes shared by every command (documented in `--help` and docs/cli.md).
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// The script raised a `ScriptError` at run time.
    pub const SCRIPT_ERROR: u8 = 1;
    /// Bad input: a diagnostic in the snippet, an unreadable file, a bad option.
    pub const BAD_INPUT: u8 = 2;
    /// `check`: the two sides differ (slower or faster).
    pub const DIFFERS: u8 = 3;
    /// `check`: the data cannot tell (see the line for what would resolve it).
    pub const UNRESOLVED: u8 = 4;
    /// `check`/`bench`: a script's result differs from its twin's (or the other snippet's).
    pub const RESULT_DIFFERS: u8 = 5;
    /// Script code crashed the worker process that ran it (a signal: SIGSEGV, SIGILL, SIGFPE,
    /// SIGTRAP, ...); hotlab itself goes on and reports it.
    pub const CRASHED: u8 = 6;
    /// The command did not finish within its time limit (`--limit`); the worker was stopped.
    pub const TIMED_OUT: u8 = 7;
}

/// An error that already says what went wrong and where, with the exit code to use.
#[derive(Debug)]
pub struct Failure {
    /// The message, printed to stderr as is (diagnostics are pre-rendered).
    pub message: String,
    /// The exit code.
    pub code: u8,
}

impl Failure {
    /// Bad input: exit code 2.
    pub fn input(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            code: exit::BAD_INPUT,
        }
    }

    /// A script fault: exit code 1.
    pub fn script(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            code: exit::SCRIPT_ERROR,
        }
    }

    /// Script code crashed the process that ran it: exit code 6.
    pub fn crashed(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            code: exit::CRASHED,
        }
    }

    /// The command ran past its time limit: exit code 7.
    pub fn timed_out(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            code: exit::TIMED_OUT,
        }
    }
}

/// Whether stderr/stdout should carry colour: a terminal, and `NO_COLOR` unset or empty.
pub fn use_color(stream_is_tty: bool) -> bool {
    stream_is_tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The options every interactive front end (`hotlab repl`, `hotlab tui`) shares: flatten it
/// into the subcommand's arguments and open the session with [`FrontArgs::open`].
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FrontArgs {
    /// Go on with the saved session (snippets, settings, results, history) from the session
    /// file in the XDG state directory, instead of starting afresh.
    #[arg(long)]
    pub resume: bool,
}

impl FrontArgs {
    /// The saved session with `--resume`, else a fresh one (which, at its first change, moves
    /// the saved session file to `session.prev.json` rather than overwrite it).
    pub fn open(&self, options: SessionOptions) -> Result<Session, SessionError> {
        if self.resume {
            Session::resume(options)
        } else {
            Ok(Session::new(options))
        }
    }
}
