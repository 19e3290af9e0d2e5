//! The terminal user interface (ratatui + crossterm): `hotlab` on a terminal, or `hotlab tui`.
//!
//! One screen over a [`crate::session::Session`]: the snippet editor, the ladder or comparison
//! table, the selected row's live histogram, counters and machine code, and a status line.
//! - [`app`]: the state and the keys' intents (no drawing, no processes: unit-tested);
//! - [`panes`]: drawing, one file per pane, colours from the [`theme`] by purpose;
//! - [`model`]: what the panes show, made from the session's results;
//! - [`keys`]: the key bindings as data, read by the key handling and the help overlay;
//! - `threads`: the session thread (its jobs, the ladder's machine code too, go on to the worker
//!   process) and a background thread for the machine probe.
//!
//! The UI thread sleeps in `crossterm::event::poll` between events: 50 ms while a job streams
//! snapshots (about 20 a second), longer when idle. See `docs/tui.md`.

pub mod app;
pub mod asm_view;
pub mod complete;
pub mod highlight;
pub mod keys;
pub mod model;
pub mod panes;
pub mod theme;
pub mod threads;
mod update;
pub mod waterfall;

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crossterm::event::{self, DisableMouseCapture, EnableMouseCapture, Event, KeyEventKind};

use crate::frontend::{Failure, exit};
use crate::session::{Session, SessionOptions};
use app::{App, Effect};
use theme::Theme;

/// Options of `hotlab tui` (and of `hotlab` with no command on a terminal).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TuiArgs {
    /// A snippet file (.hot or .clif) or a case name to load first (as `:load` does).
    #[arg(value_name = "FILE|CASE")]
    pub file: Option<String>,
    /// A shipped theme (dark, light, high-contrast) or a theme .toml file (see docs/tui.md).
    /// A bad file is reported and the default is used. NO_COLOR turns colours off.
    #[arg(long, value_name = "NAME|FILE")]
    pub theme: Option<String>,
    /// Options shared with the other interactive front ends (`--resume`).
    #[command(flatten)]
    pub front: crate::frontend::FrontArgs,
}

/// How long the UI sleeps waiting for an event while a job runs (and snapshots stream in).
const BUSY_POLL: Duration = Duration::from_millis(50);
/// … and when nothing runs.
const IDLE_POLL: Duration = Duration::from_millis(500);

/// The session and the app as `hotlab tui` opens them: a fresh session shows the `host_call`
/// ladder around the empty method.
fn open(args: &TuiArgs) -> Result<(Session, App, Option<String>), Failure> {
    let (theme, theme_err) = Theme::choose(args.theme.as_deref());
    let mut session = SessionOptions::standard()
        .and_then(|o| args.front.open(o, true))
        .map_err(|e| Failure::input(format!("error: {e}")))?;
    if let Some(file) = &args.file {
        // Loaded before the screen opens, so a bad name is an error on the terminal.
        let mut sink = crate::session::Collect::default();
        session
            .run_line(&format!(":load {file}"), &mut sink)
            .map_err(|e| Failure::input(format!("error: hotlab tui {file}: {e}")))?;
    }
    if session.state().snippet().text.trim().is_empty() {
        session.set_snippet_text(crate::ladder::bench::DEFAULT_SNIPPET);
    }
    let state = session.state().clone();
    let ladder_name = state.ladder.clone().unwrap_or_else(|| "host_call".into());
    let ladder = crate::ladder::resolve(&ladder_name)
        .or_else(|_| crate::ladder::resolve("host_call"))
        .map_err(|e| Failure::input(format!("error: {e}")))?;
    let snippet = state.snippet();
    let mut app = App::new(theme, ladder, &snippet.name, &snippet.text);
    app.cases_dir = session.cases_dir();
    app.apply_state(&state);
    if let Some(last) = state.results.last() {
        app.apply_record(last);
    }
    let theme_warning = theme_err.map(|e| format!("theme: {e} (using the default theme)"));
    // A fresh session over a saved one moves that file aside with the launch's run (its first
    // change): said as the REPL says it, and kept until the first key like the other warnings.
    let fresh = args.front.fresh_over_saved(
        &session,
        "tui",
        "with the run it starts with (hotlab tui --resume 1 reopens it)",
    );
    // Another front end on the session file is said first.
    let parts: Vec<String> = [
        session.store_note().map(str::to_string),
        fresh,
        theme_warning,
    ]
    .into_iter()
    .flatten()
    .collect();
    let warning = (!parts.is_empty()).then(|| parts.join("; "));
    Ok((session, app, warning))
}

/// `hotlab tui`.
pub fn run(args: &TuiArgs) -> Result<ExitCode, Failure> {
    let (session, mut app, warning) = open(args)?;
    if let Some(w) = &warning {
        // Also on stderr, so it stays visible after the screen closes.
        eprintln!("{w}");
        app.warn(w.clone());
    }
    let cancel = session.cancel_flag();
    let threads::Threads {
        requests: lines,
        from_session,
        from_background,
    } = threads::spawn(session).map_err(|e| Failure::input(format!("error: {e}")))?;
    let code_request = |app: &App| {
        threads::ThreadRequest::Code(threads::CodeRequest {
            ladder: app.chosen_ladder(),
            text: app.text(),
        })
    };
    let _ = lines.send(code_request(&app));

    let mut terminal = ratatui::try_init()
        .map_err(|e| Failure::input(format!("error: cannot open the terminal: {e}")))?;
    let _ = crossterm::execute!(std::io::stdout(), EnableMouseCapture);
    // A resumed result's rows (a check's, a comparison's) need their snippets' code.
    let mut effects = app.request_missing_code();
    if args.front.resume.is_none() {
        effects.extend(app.run());
    }
    let mut table_area = ratatui::layout::Rect::default();
    let mut dirty = true;
    let mut quit = false;
    let result = loop {
        for e in std::mem::take(&mut effects) {
            match e {
                Effect::Quit => {
                    cancel.store(true, Ordering::Relaxed);
                    quit = true;
                }
                Effect::Cancel => cancel.store(true, Ordering::Relaxed),
                Effect::LadderCode => {
                    let _ = lines.send(code_request(&app));
                }
                Effect::FunctionCode(pairs) => {
                    let _ = lines.send(threads::ThreadRequest::Functions {
                        pairs,
                        text: app.text(),
                    });
                }
                Effect::Line { line, text } => {
                    // The app marked it running (or queued behind the running one).
                    let request = threads::ThreadRequest::Line(threads::LineRequest { line, text });
                    if lines.send(request).is_err() {
                        app.busy = None;
                        app.queued.clear();
                        app.say("the session thread ended", true);
                    }
                }
            }
        }
        if quit {
            break Ok(());
        }
        if dirty {
            if let Err(e) = terminal.draw(|f| {
                table_area = panes::layout(f.area(), &app).table;
                panes::render(f, &app);
            }) {
                break Err(e);
            }
            dirty = false;
        }
        let timeout = if app.busy.is_some() {
            BUSY_POLL
        } else {
            IDLE_POLL
        };
        // Every event that has arrived is handled before the next draw, in order: keys typed
        // fast (or while a pane redraws) are all taken, none waits behind a frame.
        let mut wait = timeout;
        let mut failed = None;
        loop {
            match event::poll(wait) {
                Ok(true) => match event::read() {
                    Ok(Event::Key(k)) if k.kind != KeyEventKind::Release => {
                        effects.extend(app.on_key(k));
                        dirty = true;
                    }
                    Ok(Event::Mouse(m)) => dirty |= app.on_mouse(m, table_area),
                    Ok(Event::Resize(..)) => dirty = true,
                    Ok(_) => {}
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                },
                Ok(false) => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
            wait = Duration::ZERO;
            if effects.contains(&Effect::Quit) {
                break;
            }
        }
        if let Some(e) = failed {
            break Err(e);
        }
        while let Ok(msg) = from_session.try_recv() {
            effects.extend(app.on_session(msg));
            dirty = true;
        }
        while let Ok(msg) = from_background.try_recv() {
            app.on_background(msg);
            dirty = true;
        }
    };
    let _ = crossterm::execute!(std::io::stdout(), DisableMouseCapture);
    ratatui::restore();
    let _ = std::io::stdout().flush();
    // The session thread saves after every line; closing the channel ends it.
    drop(lines);
    result.map_err(|e| Failure::input(format!("error: terminal: {e}")))?;
    Ok(ExitCode::from(exit::OK))
}
