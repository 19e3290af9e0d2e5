//! `hotlab repl`: a line REPL over the session (rustyline). Hot code typed at the prompt goes
//! into the current snippet (a continuation prompt while a definition is open); `:commands`
//! run on the session (`:help` lists them). History lives in the XDG state directory beside the
//! session file; completion, hints and highlighting come from [`helper`], colours from
//! [`style`]. Ctrl-C while a job runs cancels the job; at the prompt it clears the input;
//! Ctrl-D quits.
//!
//! With stdin not a terminal the REPL reads the whole input as a script: no prompts, no colour,
//! each command's output in order, lines starting with `#` skipped, and exit code 1 when any
//! command failed. See `docs/repl.md`.

pub mod helper;
pub mod style;

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::{CompletionType, Config, Editor};

use crate::frontend::FrontArgs;
use crate::session::merge::incomplete_in;
use crate::session::{LineFlow, LiveSnapshot, Session, SessionOptions, Sink, interrupt, store};

/// The prompt.
pub const PROMPT: &str = "hot> ";
/// The prompt while a definition is open.
pub const CONTINUE: &str = "...> ";

const REPL_HELP: &str = "\
Type hot code to define functions and classes (a definition typed again replaces the old one;
a class typed again is reloaded into the live module, see :reload), or :commands (:help lists
them). With stdin not a terminal, the input is a script: no prompts, no colour, `#` lines
skipped, exit code 1 if any command failed, so `hotlab repl < experiment.repl` is a reproducible
experiment. History: $XDG_STATE_HOME/hotlab/repl_history. See docs/repl.md.";

/// Options of `hotlab repl`.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(after_help = REPL_HELP)]
pub struct ReplArgs {
    /// A snippet file (.hot or .clif) or a case name to load first.
    #[arg(value_name = "FILE|CASE")]
    pub file: Option<String>,
    /// Options shared with the other interactive front ends.
    #[command(flatten)]
    pub front: FrontArgs,
    /// Print each input line after a prompt before its output (a transcript of a script).
    #[arg(long)]
    pub echo: bool,
}

/// Where the REPL's output goes: stdout (coloured on a terminal), errors to stderr, and a live
/// progress line on stderr while a job measures.
struct Printer {
    color: bool,
    live: bool,
    progress_shown: bool,
    last_progress: Option<Instant>,
    /// The width the session's output fits (none: a pipe without `COLUMNS`); errors wrap to
    /// it too.
    width: Option<usize>,
}

impl Printer {
    fn clear_progress(&mut self) {
        if self.progress_shown {
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
            self.progress_shown = false;
        }
    }

    fn error(&mut self, message: &str) {
        self.clear_progress();
        let message = message.trim_end();
        let text = if message.starts_with("error") || message.starts_with("cancelled") {
            message.to_string()
        } else {
            format!("error: {message}")
        };
        let text = crate::session::fit::wrap_prose(&text, self.width);
        // Errors go after everything printed before them.
        let _ = std::io::stdout().flush();
        if self.color {
            eprintln!("{}", style::output(&text));
        } else {
            eprintln!("{text}");
        }
    }
}

impl Sink for Printer {
    fn text(&mut self, text: &str) {
        self.clear_progress();
        if text.is_empty() {
            return;
        }
        if self.color {
            println!("{}", style::output(text));
        } else {
            println!("{text}");
        }
    }

    fn progress(&mut self, p: &LiveSnapshot) {
        if !self.live {
            return;
        }
        let now = Instant::now();
        if self
            .last_progress
            .is_some_and(|t| now - t < Duration::from_millis(100))
        {
            return;
        }
        self.last_progress = Some(now);
        let mut line = format!(
            "{}: {} rounds, {:.1}",
            p.phase,
            p.rounds,
            p.elapsed_ms / 1e3
        );
        if let Some(b) = p.budget_ms {
            line.push_str(&format!("/{:.1}", b / 1e3));
        }
        line.push_str(" s");
        for v in &p.variants {
            if let Some(m) = v.median_ns {
                line.push_str(&format!(" · {} {m:.2} ns", v.name));
            }
        }
        // One line that fits the terminal, redrawn in place (a wider one would wrap and leave
        // copies above the table), with room after it for the `^C` the terminal echoes on
        // Ctrl-C: an echo that wrapped would leave a `^` beside a line no longer redrawn.
        let width = crossterm::terminal::size().map_or(80, |(w, _)| usize::from(w));
        let tail = "  (Ctrl-C cancels)";
        let room = width.saturating_sub(tail.chars().count() + 3);
        let line: String = if line.chars().count() > room {
            let cut: String = line.chars().take(room.saturating_sub(1)).collect();
            format!("{cut}…")
        } else {
            line
        };
        eprint!("\r\x1b[2K{line}{tail}");
        let _ = std::io::stderr().flush();
        self.progress_shown = true;
    }
}

/// The width `COLUMNS` gives a piped session (`COLUMNS=80 hotlab repl < script`): a positive
/// number, else none.
fn columns_env() -> Option<usize> {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&w| w > 0)
}

/// The width output fits: the terminal's as it is now (`live`), else the one `COLUMNS` names.
fn front_width(live: bool) -> Option<usize> {
    if live {
        crossterm::terminal::size()
            .ok()
            .map(|(w, _)| usize::from(w))
    } else {
        columns_env()
    }
}

/// What a script or a session loop counts.
struct Run {
    failed: usize,
    /// Whether the last command failed (a terminal session's exit code follows it).
    last_failed: bool,
    quit: bool,
}

impl Run {
    /// Hand one complete input to the session.
    fn input(&mut self, session: &mut Session, printer: &mut Printer, input: &str) {
        // Tables fit the terminal as it is now (a compact layout under 120 columns); piped,
        // the width `COLUMNS` names, if any (else the full layout).
        printer.width = front_width(printer.live);
        session.set_width(printer.width);
        self.last_failed = false;
        match session.run_line(input, printer) {
            Ok(LineFlow::Quit) => self.quit = true,
            Ok(LineFlow::Continue) => {}
            Err(e) => {
                self.failed += 1;
                self.last_failed = true;
                printer.error(&e.to_string());
            }
        }
        printer.clear_progress();
    }
}

/// Collects lines into complete inputs: a `:command` is one line, code runs until every
/// definition is closed.
#[derive(Default)]
struct PendingInput {
    text: String,
}

impl PendingInput {
    /// Add a line of code for the snippet `snippet`; returns a complete input when there is
    /// one.
    fn push(&mut self, line: &str, snippet: &str) -> Option<String> {
        if self.text.is_empty() {
            let t = line.trim_start();
            if t.is_empty() || t.starts_with('#') {
                return None;
            }
            if t.starts_with(':') {
                return Some(line.trim().to_string());
            }
        }
        self.text.push_str(line);
        self.text.push('\n');
        if incomplete_in(snippet, &self.text) {
            None
        } else {
            let done = std::mem::take(&mut self.text);
            Some(done.trim_end().to_string())
        }
    }

    fn open(&self) -> bool {
        !self.text.is_empty()
    }
}

/// The REPL history file: beside the session file.
pub fn history_path() -> Option<PathBuf> {
    store::default_path().and_then(|p| p.parent().map(|d| d.join("repl_history")))
}

/// `hotlab repl`.
pub fn run(args: &ReplArgs) -> ExitCode {
    let stdin_tty = std::io::stdin().is_terminal();
    let color = stdin_tty && crate::frontend::use_color(std::io::stdout().is_terminal());
    let mut printer = Printer {
        color,
        live: stdin_tty && std::io::stderr().is_terminal(),
        progress_shown: false,
        last_progress: None,
        width: front_width(stdin_tty && std::io::stderr().is_terminal()),
    };
    let session = SessionOptions::standard().and_then(|o| args.front.open(o, stdin_tty));
    let mut session = match session {
        Ok(s) => s,
        Err(e) => {
            printer.error(&e.to_string());
            return ExitCode::from(crate::frontend::exit::BAD_INPUT);
        }
    };
    if let Some(note) = session.store_note() {
        // Piped or not: two front ends on one file must never pass unnoticed.
        for line in note.lines() {
            let line = crate::session::fit::wrap_prose(&format!("note: {line}"), printer.width);
            eprintln!("{line}");
        }
    }
    if let Err(e) = interrupt::install(session.cancel_flag()) {
        printer.error(&format!("Ctrl-C will not cancel jobs: {e}"));
    }
    let mut run = Run {
        failed: 0,
        last_failed: false,
        quit: false,
    };
    if stdin_tty {
        let s = session.state();
        if args.front.resume.is_some() {
            println!(
                "resumed: {} snippet(s), current {}, {} result(s), {} history line(s)",
                s.snippets.len(),
                s.snippet().name,
                s.results.len(),
                s.history.len()
            );
        } else if let Some(notice) = args.front.fresh_over_saved(
            &session,
            "repl",
            "at its first change (commands that only look change nothing)",
        ) {
            println!("{notice}");
        }
        println!("hotlab repl: type hot code or :commands (:help lists them); Ctrl-D quits");
    }
    if let Some(file) = &args.file {
        run.input(&mut session, &mut printer, &format!(":load {file}"));
        if run.last_failed && !std::path::Path::new(file).exists() {
            // Neither a file nor a case: bad input, as for every command naming a file.
            return ExitCode::from(crate::frontend::exit::BAD_INPUT);
        }
    }
    if !run.quit {
        if stdin_tty {
            interactive(&mut session, &mut printer, &mut run, color);
        } else {
            script(&mut session, &mut printer, &mut run, args.echo);
        }
    }
    // A script fails when any command did; a person at a terminal leaves with 0 unless the
    // last command failed (an error typed and fixed long ago is not the session's outcome).
    let failed = if stdin_tty {
        run.last_failed
    } else {
        run.failed > 0
    };
    if failed {
        ExitCode::from(crate::frontend::exit::SCRIPT_ERROR)
    } else {
        ExitCode::SUCCESS
    }
}

/// Piped stdin: every line in order, no prompts (with `--echo`, each line after one).
fn script(session: &mut Session, printer: &mut Printer, run: &mut Run, echo: bool) {
    let mut block = PendingInput::default();
    let mut opened_at = 0;
    for (n, line) in std::io::stdin().lock().lines().enumerate() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                run.failed += 1;
                printer.error(&format!("cannot read stdin: {e}"));
                return;
            }
        };
        if echo && (block.open() || !line.trim().is_empty()) {
            let prompt = if block.open() { CONTINUE } else { PROMPT };
            println!("{prompt}{line}");
        }
        if !block.open() {
            opened_at = n + 1;
        }
        let current = session.state().snippet().name.clone();
        if let Some(input) = block.push(&line, &current) {
            run.input(session, printer, &input);
            if run.quit {
                return;
            }
        }
    }
    if block.open() {
        run.failed += 1;
        printer.error(&format!(
            "the input ends inside the definition that starts on line {opened_at} (a bracket \
             or a string is still open)"
        ));
    }
}

/// A terminal: rustyline with history, completion, hints and highlighting.
fn interactive(session: &mut Session, printer: &mut Printer, run: &mut Run, color: bool) {
    let config = Config::builder()
        .auto_add_history(false)
        .history_ignore_space(true)
        .completion_type(CompletionType::List)
        .max_history_size(10_000)
        .and_then(|b| b.history_ignore_dups(true))
        .map(|b| b.build());
    let editor = config.map_err(|e| e.to_string()).and_then(|c| {
        Editor::<helper::ReplHelper, FileHistory>::with_config(c).map_err(|e| e.to_string())
    });
    let mut rl = match editor {
        Ok(rl) => rl,
        Err(e) => {
            run.failed += 1;
            printer.error(&format!("cannot start the line editor: {e}"));
            return;
        }
    };
    rl.set_helper(Some(helper::ReplHelper::new(
        helper::Names::load(&session.cases_dir()),
        color,
    )));
    let history = history_path();
    if let Some(p) = &history {
        // No history yet is fine.
        let _ = rl.load_history(p);
    }
    let mut block = PendingInput::default();
    loop {
        let prompt = if block.open() { CONTINUE } else { PROMPT };
        match rl.readline(prompt) {
            Ok(line) => {
                // rustyline keeps its own SIGINT handler while the editor lives: Ctrl-C during
                // the job must reach the session's cancel flag instead.
                if let Err(e) = interrupt::restore() {
                    printer.error(&format!("Ctrl-C will not cancel this job: {e}"));
                }
                let current = session.state().snippet().name.clone();
                let complete = block.push(&line, &current);
                // History keeps whole entries: a multi-line definition is one entry (Up
                // recalls all of it), added when it is complete.
                if let Some(entry) = complete.as_deref().filter(|e| !e.trim().is_empty()) {
                    let _ = rl.add_history_entry(entry);
                    if let Some(p) = &history {
                        if let Some(dir) = p.parent() {
                            let _ = std::fs::create_dir_all(dir);
                        }
                        let _ = rl.save_history(p);
                    }
                }
                if let Some(input) = complete {
                    run.input(session, printer, &input);
                    if run.quit {
                        return;
                    }
                }
            }
            // Ctrl-C at the prompt: drop what is typed (and an open definition).
            Err(ReadlineError::Interrupted) => block = PendingInput::default(),
            Err(ReadlineError::Eof) => return,
            Err(e) => {
                printer.error(&format!("cannot read a line: {e}"));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_join_lines_until_definitions_close() {
        let mut b = PendingInput::default();
        let hot = "snippet.hot";
        assert_eq!(b.push(":help", hot), Some(":help".into()));
        assert_eq!(b.push("# a comment", hot), None);
        assert_eq!(b.push("", hot), None);
        assert_eq!(b.push("fn main() -> i64 {", hot), None);
        assert!(b.open());
        assert_eq!(b.push("    return 1", hot), None);
        assert_eq!(
            b.push("}", hot),
            Some("fn main() -> i64 {\n    return 1\n}".into())
        );
        assert!(!b.open());
        assert_eq!(b.push("let x = 1", hot), Some("let x = 1".into()));
        assert_eq!(b.push("function %f() -> i64 {", "f.clif"), None);
        assert!(b.push("}", "f.clif").is_some());
    }
}
