//! What the front ends share (`cli`, `repl`, `tui`): a [`Failure`] with its [`exit`] code, the
//! colour rule ([`use_color`]), the options that open a session ([`FrontArgs`]), and reading a
//! snippet file ([`snippet`]). It sits below the front ends, so none of them imports another.

pub mod baseline;
pub mod config;
pub mod snippet;

pub use snippet::{SnippetFile, load_snippet};

use crate::session::{Session, SessionError, SessionOptions};

/// Exit codes shared by every command (documented in `--help` and docs/cli.md, both printed
/// from [`exit::TABLE`]; a test checks that the three agree).
pub mod exit {
    /// Success; for `check` (and a baseline comparison): `equal`.
    pub const OK: u8 = 0;
    /// The script raised a `ScriptError` at run time.
    pub const SCRIPT_ERROR: u8 = 1;
    /// Bad input: a diagnostic in the snippet, an unreadable file, a bad option.
    pub const BAD_INPUT: u8 = 2;
    /// `check`: the script is slower than the other side; `--baseline`/`compare`: a row got
    /// slower.
    pub const SLOWER: u8 = 3;
    /// `check`: the data cannot tell (see the line for what would resolve it).
    pub const UNRESOLVED: u8 = 4;
    /// `check`/`bench`/`ladder`: a script's result differs from its twin's (or the other
    /// snippet's, or the native row's).
    pub const RESULT_DIFFERS: u8 = 5;
    /// Script code crashed the worker process that ran it (a signal: SIGSEGV, SIGILL, SIGFPE,
    /// SIGTRAP, ...); hotlab itself goes on and reports it.
    pub const CRASHED: u8 = 6;
    /// The command did not finish within its time limit (`--limit`); the worker was stopped.
    pub const TIMED_OUT: u8 = 7;
    /// `check`: the script is faster than the other side.
    pub const FASTER: u8 = 8;
    /// Interrupted (Ctrl-C, SIGINT; 128 + 2, the shell's code for it): `check` prints the
    /// verdict on the rounds so far, marked partial. Never a pass, whatever that verdict says.
    pub const INTERRUPTED: u8 = 130;
    /// The reader of hotlab's output went away (a closed pipe: `hotlab ladder | head -3`;
    /// 128 + 13, the shell's code for SIGPIPE): hotlab stopped writing and exited, as other
    /// Unix tools do, but by an exit, not the signal.
    pub const OUTPUT_CLOSED: u8 = 141;

    /// Every code with its name (as `--json` errors give it as `kind`) and its meaning.
    pub const TABLE: [(u8, &str, &str); 11] = [
        (OK, "ok", "success; `check`: equal within the band"),
        (
            SCRIPT_ERROR,
            "script_error",
            "the script raised an error at run time; `doctor`: a self-check missed",
        ),
        (
            BAD_INPUT,
            "bad_input",
            "bad input: a diagnostic in the snippet, an unreadable file, a bad option",
        ),
        (
            SLOWER,
            "slower",
            "`check`: slower than the other side; `--baseline`, `compare`: a row got slower",
        ),
        (UNRESOLVED, "unresolved", "`check`: the data cannot tell"),
        (
            RESULT_DIFFERS,
            "results_differ",
            "a result differs from its twin's (`check`, `bench`, `ladder`)",
        ),
        (
            CRASHED,
            "crashed",
            "script code crashed the worker process running it (a signal)",
        ),
        (TIMED_OUT, "timed_out", "it did not finish within `--limit`"),
        (FASTER, "faster", "`check`: faster than the other side"),
        (
            INTERRUPTED,
            "interrupted",
            "interrupted (Ctrl-C); `check`: the answer on the rounds so far, marked partial",
        ),
        (
            OUTPUT_CLOSED,
            "output_closed",
            "the reader of its output went away (a pipe closed early, as by `head`)",
        ),
    ];

    /// The name of a code (`bad_input`), `unknown` for one not in the table.
    pub fn kind(code: u8) -> &'static str {
        TABLE
            .iter()
            .find(|(c, _, _)| *c == code)
            .map_or("unknown", |(_, k, _)| k)
    }

    /// The table as `--help` prints it: one `  CODE  meaning` line per code.
    pub fn help_text() -> String {
        TABLE
            .iter()
            .map(|(c, _, m)| format!("  {c}  {m}\n"))
            .collect()
    }
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
    /// The error as the one JSON document `--json` prints:
    /// `{"error": {"kind", "message", "location", "exit_code"}}`, `location` the first
    /// `FILE:LINE[:COL]` the message names (or `null`).
    pub fn to_json(&self) -> serde_json::Value {
        let message = strip_ansi(self.message.trim_end());
        let message = message
            .strip_prefix("error: ")
            .unwrap_or(&message)
            .to_string();
        serde_json::json!({
            "error": {
                "kind": exit::kind(self.code),
                "message": message,
                "location": location_in(&message),
                "exit_code": self.code,
            }
        })
    }

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

/// `text` without ANSI escape sequences (`ESC [ ... letter`).
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            if chars.next() == Some('[') {
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The first `FILE:LINE` or `FILE:LINE:COL` in `message` (FILE a word with a `.` in it).
pub fn location_in(message: &str) -> Option<String> {
    for word in message.split(|c: char| c.is_whitespace() || "()`,;'\"".contains(c)) {
        let word = word.trim_end_matches([':', '.']);
        let mut parts = word.split(':');
        let (Some(file), Some(line)) = (parts.next(), parts.next()) else {
            continue;
        };
        let col = parts.next();
        let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if file.contains('.') && number(line) && col.is_none_or(number) && parts.next().is_none() {
            return Some(word.to_string());
        }
    }
    None
}

/// `--color`: when output carries colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, with `NO_COLOR` unset or empty.
    #[default]
    Auto,
    /// Always (also into a pipe or a file).
    Always,
    /// Never.
    Never,
}

/// The process's `--color` (0 auto, 1 always, 2 never).
static COLOR: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Set the process's `--color`. `never` also sets `NO_COLOR` and `always` clears it, so the
/// parts that read `NO_COLOR` themselves (the TUI's theme, the REPL) follow the flag. Call it
/// first thing in `main`, before any thread starts.
pub fn set_color(choice: ColorChoice) {
    let code = match choice {
        ColorChoice::Auto => 0,
        ColorChoice::Always => 1,
        ColorChoice::Never => 2,
    };
    COLOR.store(code, std::sync::atomic::Ordering::Relaxed);
    match choice {
        ColorChoice::Auto => {}
        // SAFETY: called at the start of `main`, before hotlab starts any thread, so nothing
        // reads the environment concurrently.
        ColorChoice::Never => unsafe { std::env::set_var("NO_COLOR", "1") },
        // SAFETY: as above.
        ColorChoice::Always => unsafe { std::env::remove_var("NO_COLOR") },
    }
}

/// Whether stderr/stdout should carry colour: `--color always`, or with `auto` a terminal and
/// `NO_COLOR` unset or empty.
pub fn use_color(stream_is_tty: bool) -> bool {
    match COLOR.load(std::sync::atomic::Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => stream_is_tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    }
}

/// The options every interactive front end (`hotlab repl`, `hotlab tui`) shares: flatten it
/// into the subcommand's arguments and open the session with [`FrontArgs::open`].
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FrontArgs {
    /// Go on with a saved session instead of starting afresh: the last one (no value), the
    /// Nth before it (`hotlab sessions` lists them: 1 is the newest kept), or a NAME there
    /// (`prev.3`, `copy-1234`) or a path. A snippet FILE goes before --resume.
    #[arg(long, value_name = "N|NAME", num_args = 0..=1, default_missing_value = "0")]
    pub resume: Option<String>,
    /// Save the session even when stdin is not a terminal: a piped run (a script) saves
    /// nothing by default, so it never replaces an interactive session.
    #[arg(long)]
    pub save: bool,
    /// The cases directory that :cases, :load CASE and :bench read (default: ./cases, else the
    /// one hotlab was built with), as `hotlab bench --cases` does.
    #[arg(long, value_name = "DIR")]
    pub cases: Option<std::path::PathBuf>,
}

impl FrontArgs {
    /// The saved session with `--resume`, else a fresh one (which, at its first change, moves
    /// the saved session file to `session.prev.json` rather than overwrite it). A piped run
    /// (`interactive` false) without `--save` reads a resumed session but writes nothing.
    /// Without a state directory the session is not saved, and says so. Its cases come from
    /// `--cases DIR` when given (not a directory: an error).
    pub fn open(
        &self,
        options: SessionOptions,
        interactive: bool,
    ) -> Result<Session, SessionError> {
        if let Some(dir) = &self.cases
            && !dir.is_dir()
        {
            return Err(SessionError::Input(format!(
                "--cases {}: not a directory (give the directory that holds the case files)",
                dir.display()
            )));
        }
        let mut options = options;
        let saved = options.store.clone();
        if !interactive && !self.save {
            options.store = None;
        }
        let mut session = match (&self.resume, &saved) {
            (None, _) => Session::new(options),
            (Some(which), Some(path)) => {
                let from = crate::session::generations::find(path, which)?;
                if !from.exists() {
                    // Nothing saved yet: a fresh session on the file.
                    Session::resume(options)?
                } else {
                    Session::resume_from(options, &from)?
                }
            }
            (Some(_), None) => {
                let why = crate::session::store::state_path()
                    .err()
                    .map_or("no session file".to_string(), |e| e.to_string());
                return Err(SessionError::Input(format!("cannot resume: {why}")));
            }
        };
        if saved.is_none()
            && (interactive || self.save)
            && let Err(why) = crate::session::store::state_path()
        {
            session.add_notes([format!("{why}; this session is not saved")]);
        }
        session.set_cases_dir(self.cases.clone());
        Ok(session)
    }

    /// What a fresh session opened over a saved one tells the user, the REPL and the TUI alike:
    /// the saved file is not lost but moved to `session.prev.json` (older ones down the
    /// generations) `when` (at the session's first change). `None` with `--resume`, or when
    /// there is no saved file or this session saves nothing.
    pub fn fresh_over_saved(&self, session: &Session, command: &str, when: &str) -> Option<String> {
        if self.resume.is_some() {
            return None;
        }
        let path = session.store_path().filter(|p| p.exists())?;
        Some(format!(
            "a saved session exists (hotlab {command} --resume goes on with it); this fresh one \
             moves it to {} {when}",
            crate::session::store::previous_path(path).display()
        ))
    }
}
