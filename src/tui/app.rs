//! The TUI's state and what the user can ask of it. Keys become actions through the bindings
//! table ([`super::keys`]) and [`App::on_key`]; actions ([`App::act`]) change the state and may
//! hand work to the session ([`Effect`]). Nothing here draws or talks to a process, so the key handling is unit-tested.

use crossterm::event::{KeyCode, KeyEvent, MouseButton, MouseEvent, MouseEventKind};
use tui_textarea::TextArea;

use super::complete::{common_prefix, complete};
use super::highlight::{self, DiagView, Mark};
use super::keys::{self, Action, Context};
use super::model::{CodeView, TableModel, TableRow, TableState};
use super::theme::{BUILTIN, Theme};
use crate::ladder::Ladder;
use crate::lang::Program;
use crate::session::Backend;

/// The panes, in Tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    /// The snippet editor.
    Editor,
    /// The ladder or comparison table.
    Table,
    /// The selected row's histogram.
    Histogram,
    /// The selected row's counters.
    Counters,
    /// The selected row's machine code.
    Code,
}

impl Pane {
    const ORDER: [Pane; 5] = [
        Pane::Editor,
        Pane::Table,
        Pane::Histogram,
        Pane::Counters,
        Pane::Code,
    ];
}

/// Work for the session (or the terminal loop).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Run a session line; `text` is the editor's snippet, set first when it changed.
    Line {
        /// The `:command` line.
        line: String,
        /// The snippet text to set before it.
        text: Option<String>,
    },
    /// Cancel the running job.
    Cancel,
    /// Recompute the ladder's machine code (the ladder, its layers or the snippet changed).
    LadderCode,
    /// Build the machine code of these snippets' functions on these backends (the rows of a
    /// comparison or a check), for the code pane.
    FunctionCode(Vec<(String, String)>),
    /// Leave.
    Quit,
}

/// A message in the status area.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The text (may be several lines).
    pub text: String,
    /// An error (drawn in the error colour).
    pub error: bool,
}

/// What the status line shows about the machine and the session.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StatusInfo {
    /// The worker's CPU.
    pub cpu: Option<usize>,
    /// Time budget, seconds.
    pub time_s: f64,
    /// Timer kind and precision (`tsc 9.8 ns`).
    pub timer: Option<String>,
    /// Health warnings (`governor powersave`, `VM`).
    pub health: Vec<String>,
    /// Why hardware counters do not open on this machine, if they do not.
    pub no_pmu: Option<String>,
}

/// The whole state of the TUI.
pub struct App {
    /// The snippet editor.
    pub editor: TextArea<'static>,
    /// The current snippet's name.
    pub snippet_name: String,
    /// The session's snippet names.
    pub snippets: Vec<String>,
    /// The session's cases directory (`--cases`), whose cases `:load` completes.
    pub cases_dir: std::path::PathBuf,
    /// Colour marks of the editor's text.
    pub marks: Vec<Mark>,
    /// The front end's diagnostics of the editor's text.
    pub diagnostics: Vec<DiagView>,
    /// The editor's text as the front end checked it, when it compiles: the plan is drawn
    /// around its method (a method that does work gets a body row).
    pub program: Option<Program>,
    /// The table.
    pub table: TableModel,
    /// The selected row.
    pub selected: usize,
    /// The focused pane.
    pub focus: Pane,
    /// The theme.
    pub theme: Theme,
    /// The backend.
    pub backend: Backend,
    /// The ladder (as shipped), and the order and choice of its steps.
    pub ladder: Ladder,
    /// Step indices in measuring order (step 0, native, stays first).
    pub order: Vec<usize>,
    /// Per step: measured or left out.
    pub enabled: Vec<bool>,
    /// Machine code per step (or per function).
    pub code: Vec<CodeView>,
    /// Scroll of the code pane.
    pub code_scroll: u16,
    /// Show the diff (true) or the whole listing.
    pub code_diff: bool,
    /// The last message.
    pub message: Option<Message>,
    /// The line being run by the session, if any.
    pub busy: Option<String>,
    /// Lines sent to the session while another ran, in order: they run after it (a key is
    /// never dropped because a job runs).
    pub queued: std::collections::VecDeque<String>,
    /// The command line, while typing one.
    pub command: Option<String>,
    /// The cursor in the command line, in characters (after the `:` at least).
    pub command_cursor: usize,
    /// Machine code of the snippets' functions, per `snippet@backend` (the code of a
    /// comparison's or a check's rows), or why there is none.
    pub functions: Vec<(String, Result<Vec<CodeView>, String>)>,
    /// The code pane shows each instruction's address and bytes (a key toggles them).
    pub code_addresses: bool,
    /// The histogram pane shows the ladder's waterfall instead.
    pub waterfall: bool,
    /// The message is a warning from the start, kept over later ones until a key is pressed.
    pub keep_warning: bool,
    /// The message answers the last key only (`no completion`): the next key clears it.
    pub fleeting_message: bool,
    /// Completion candidates of the command line, and which one Tab shows next.
    pub completion: (Vec<String>, usize),
    /// The help overlay is shown.
    pub help: bool,
    /// The last message is shown as a popup (it has several lines).
    pub popup: bool,
    /// The first line of the popup on screen (↑ ↓ PgUp PgDn Home End scroll it).
    pub popup_scroll: u16,
    /// Machine and settings for the status line.
    pub status: StatusInfo,
    /// The text the session last saw (to send the editor's text only when it changed).
    pub synced_text: String,
}

fn textarea(text: &str) -> TextArea<'static> {
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut t = TextArea::new(if lines.is_empty() {
        vec![String::new()]
    } else {
        lines
    });
    t.set_tab_length(4);
    t
}

impl App {
    /// A new state on `ladder` with `text` in the editor.
    pub fn new(theme: Theme, ladder: Ladder, snippet_name: &str, text: &str) -> App {
        let n = ladder.steps.len();
        let mut app = App {
            editor: textarea(text),
            snippet_name: snippet_name.to_string(),
            snippets: vec![snippet_name.to_string()],
            cases_dir: crate::cases::spec::default_dir(None),
            marks: Vec::new(),
            diagnostics: Vec::new(),
            program: None,
            table: TableModel::plan(&ladder, &vec![true; n], &["jit", "aot"]),
            selected: 0,
            focus: Pane::Table,
            theme,
            backend: Backend::Jit,
            ladder,
            order: (0..n).collect(),
            enabled: vec![true; n],
            code: Vec::new(),
            code_scroll: 0,
            code_diff: true,
            message: None,
            busy: None,
            queued: std::collections::VecDeque::new(),
            command: None,
            command_cursor: 0,
            functions: Vec::new(),
            code_addresses: false,
            waterfall: false,
            keep_warning: false,
            fleeting_message: false,
            completion: (Vec::new(), 0),
            help: false,
            popup: false,
            popup_scroll: 0,
            status: StatusInfo {
                time_s: 1.0,
                ..StatusInfo::default()
            },
            synced_text: String::new(),
        };
        app.edited();
        app
    }

    /// The editor's text.
    pub fn text(&self) -> String {
        let mut t = self.editor.lines().join("\n");
        if !t.is_empty() {
            t.push('\n');
        }
        t
    }

    /// Replace the editor's text (a snippet loaded or switched by a command).
    pub fn set_text(&mut self, name: &str, text: &str) {
        self.editor = textarea(text);
        self.snippet_name = name.to_string();
        self.synced_text = text.to_string();
        self.edited();
    }

    /// Recompute highlighting, diagnostics and the program after an edit; a plan follows the
    /// method (a body row comes or goes).
    fn edited(&mut self) {
        let text = self.text();
        self.marks = highlight::marks(&text);
        (self.program, self.diagnostics) = highlight::check(&self.snippet_name, &text);
        if self.table.state == TableState::Plan {
            self.replan();
        }
    }

    /// The ladder with its steps in the chosen order and choice.
    pub fn chosen_ladder(&self) -> Ladder {
        let mut l = self.ladder.clone();
        l.steps = self
            .order
            .iter()
            .filter(|&&i| self.enabled[i])
            .map(|&i| self.ladder.steps[i].clone())
            .collect();
        l
    }

    /// The ladder the worker will measure: the chosen steps around the editor's method, with
    /// the rows the method adds (a body row, decided as the ladder decides it).
    pub fn measured_ladder(&self) -> Ladder {
        let chosen = self.chosen_ladder();
        match &self.program {
            Some(p) => crate::ladder::bench::around_method(chosen, p),
            None => chosen,
        }
    }

    /// The table's plan for the current ladder, order and choice, with every row the
    /// measurement will have (a method body row), so the table keeps its shape when it runs.
    pub fn replan(&mut self) {
        let mut l = self.ladder.clone();
        l.steps = self
            .order
            .iter()
            .map(|&i| self.ladder.steps[i].clone())
            .collect();
        let mut enabled: Vec<bool> = self.order.iter().map(|&i| self.enabled[i]).collect();
        // A step the measured ladder has and the plan lacks goes in after its step before.
        let measured = self.measured_ladder();
        for (k, step) in measured.steps.iter().enumerate() {
            if l.steps.contains(step) {
                continue;
            }
            let at = k
                .checked_sub(1)
                .and_then(|b| l.steps.iter().position(|s| *s == measured.steps[b]))
                .map_or(0, |j| j + 1);
            l.steps.insert(at, step.clone());
            enabled.insert(at, true);
        }
        self.table = TableModel::plan(&l, &enabled, &["jit", "aot"]);
        self.selected = self.selected.min(self.table.rows.len().saturating_sub(1));
    }

    /// The plan for a new order or choice of layers, over a finished ladder's table: its rows
    /// keep their numbers and histograms (a left-out row says so) until the next run brings
    /// rows of its own. Any other table becomes the plain plan.
    fn replan_keeping_results(&mut self) {
        let old = self.table.clone();
        self.replan();
        let kept = old.state == TableState::Done
            && old.rows.iter().any(|r| r.step.is_some())
            && self
                .table
                .rows
                .iter()
                .any(|r| old.rows.iter().any(|o| o.label == r.label));
        if !kept {
            return;
        }
        let rows = self
            .table
            .rows
            .iter()
            .map(|r| match old.rows.iter().find(|o| o.label == r.label) {
                Some(o) => TableRow {
                    disabled: r.disabled,
                    ..o.clone()
                },
                None => r.clone(),
            })
            .collect();
        self.table = TableModel {
            rows,
            note: "layers changed: F5 measures the new choice (the numbers are the last run's)"
                .into(),
            ..old
        };
    }

    /// Switch to another ladder (all its steps, in its order).
    pub fn set_ladder(&mut self, ladder: Ladder) {
        let n = ladder.steps.len();
        self.ladder = ladder;
        self.order = (0..n).collect();
        self.enabled = vec![true; n];
        self.replan();
    }

    fn text_if_changed(&mut self) -> Option<String> {
        let t = self.text();
        (t != self.synced_text).then(|| {
            self.synced_text = t.clone();
            // The snippet's functions change with it.
            self.functions.clear();
            t
        })
    }

    /// A line for the session. While another runs it is queued behind it (the session runs
    /// lines in order) and the message says so; nothing is refused.
    fn line(&mut self, line: impl Into<String>) -> Vec<Effect> {
        let line = line.into();
        let text = self.text_if_changed();
        // The last message described the last command; a warning from the start stays (see
        // [`App::say`]).
        if !self.keep_warning {
            self.message = None;
        }
        match &self.busy {
            Some(running) => {
                self.say(
                    format!("queued {line} after {running} (Esc cancels the running job)"),
                    false,
                );
                self.queued.push_back(line.clone());
            }
            None => self.busy = Some(line.clone()),
        }
        vec![Effect::Line { line, text }]
    }

    /// The session finished the running line: the next queued one runs. True when nothing
    /// more is waiting.
    pub fn line_done(&mut self) -> bool {
        self.busy = self.queued.pop_front();
        self.busy.is_none()
    }

    /// Show a message.
    pub fn say(&mut self, text: impl Into<String>, error: bool) {
        let text = text.into();
        // A warning from the start (a bad theme, another front end on the session file) stays
        // until a key is pressed: the launch's own run must not cover it a second later.
        self.message = Some(match &self.message {
            Some(m) if self.keep_warning && m.error && !error => Message {
                text: format!("{} · {text}", m.text.lines().next().unwrap_or("")),
                error: true,
            },
            _ => Message { text, error },
        });
    }

    /// Show a warning that stays until the next key (see [`App::say`]).
    pub fn warn(&mut self, text: impl Into<String>) {
        self.say(text, true);
        self.keep_warning = true;
    }

    fn defines(&self, f: &str) -> bool {
        let needle = format!("fn {f}(");
        self.editor.lines().iter().any(|l| l.contains(&needle))
    }

    /// Run: measure the ladder around `fn call`, compare `fn run(n)` across backends, or
    /// print `main`'s value.
    pub fn run(&mut self) -> Vec<Effect> {
        if self.defines("call") {
            let line = format!(":ladder {}", self.ladder.name);
            self.line(line)
        } else if self.defines("run") {
            let other = if self.backend == Backend::Interp {
                "jit"
            } else {
                "interp"
            };
            self.line(format!(":compare {other}"))
        } else {
            self.line(":run")
        }
    }

    /// The verdict against the twin.
    pub fn check(&mut self) -> Vec<Effect> {
        self.line(":check")
    }

    /// The next shipped ladder.
    pub fn next_ladder(&mut self) -> Vec<Effect> {
        let names: Vec<&str> = crate::ladder::BUILTIN.iter().map(|(n, _)| *n).collect();
        let i = names.iter().position(|n| *n == self.ladder.name);
        let next = names[i.map_or(0, |i| (i + 1) % names.len())];
        match crate::ladder::resolve(next) {
            Ok(l) => {
                self.set_ladder(l);
                // Choosing is not measuring: F5 sends `:ladder NAME`, which records the name.
                self.say(format!("ladder {next}: F5 measures it"), false);
                vec![Effect::LadderCode]
            }
            Err(err) => {
                self.say(err.to_string(), true);
                Vec::new()
            }
        }
    }

    /// The next backend.
    pub fn next_backend(&mut self) -> Vec<Effect> {
        let order = crate::session::SESSION_BACKENDS;
        let i = order.iter().position(|b| *b == self.backend);
        let b = order[i.map_or(0, |i| (i + 1) % order.len())];
        // Taken at once, so `b b b` moves three backends even while the first line runs.
        self.backend = b;
        self.line(format!(":backend {}", b.name()))
    }

    /// The next shipped theme.
    pub fn next_theme(&mut self) {
        if !self.theme.color {
            self.say("NO_COLOR is set: themes are off", false);
            return;
        }
        let i = BUILTIN.iter().position(|(n, _)| *n == self.theme.name);
        let (name, _) = BUILTIN[i.map_or(0, |i| (i + 1) % BUILTIN.len())];
        match Theme::load(name) {
            Ok(t) => {
                self.theme = t;
                self.say(format!("theme {name}"), false);
            }
            Err(e) => self.say(e.to_string(), true),
        }
    }

    /// The step of the selected row, as an index into `order`.
    fn selected_step(&self) -> Option<usize> {
        let title = self.table.rows.get(self.selected)?.step.as_ref()?;
        self.order
            .iter()
            .position(|&i| &self.ladder.steps[i].title == title)
    }

    fn layers_changed(&mut self) -> Vec<Effect> {
        let keep_title = self
            .table
            .rows
            .get(self.selected)
            .and_then(|r| r.step.clone());
        let keep_build = self
            .table
            .rows
            .get(self.selected)
            .and_then(|r| r.build.clone());
        self.replan_keeping_results();
        if let Some(i) = self
            .table
            .rows
            .iter()
            .position(|r| r.step == keep_title && r.build == keep_build)
        {
            self.selected = i;
        }
        let layers: Vec<&str> = self
            .chosen_ladder()
            .steps
            .iter()
            .skip(1)
            .map(|s| s.layer.name())
            .collect();
        let mut e = self.line(format!(":layers {}", layers.join(" ")));
        e.push(Effect::LadderCode);
        e
    }

    /// Leave the selected row's layer out of the ladder, or put it back.
    pub fn toggle_layer(&mut self) -> Vec<Effect> {
        match self.selected_step() {
            Some(0) | None => {
                self.say("the native row is the floor: it is always measured", false);
                Vec::new()
            }
            Some(pos) => {
                let step = self.order[pos];
                self.enabled[step] = !self.enabled[step];
                self.layers_changed()
            }
        }
    }

    /// Move the selected row's layer one step earlier (`up`) or later.
    pub fn move_layer(&mut self, up: bool) -> Vec<Effect> {
        let Some(pos) = self.selected_step().filter(|&p| p > 0) else {
            self.say("the native row is the floor: it stays first", false);
            return Vec::new();
        };
        let to = if up { pos - 1 } else { pos + 1 };
        if to == 0 || to >= self.order.len() {
            return Vec::new();
        }
        self.order.swap(pos, to);
        self.layers_changed()
    }

    /// Focus the next (or previous) pane.
    pub fn cycle_pane(&mut self, forward: bool) {
        let i = Pane::ORDER
            .iter()
            .position(|p| *p == self.focus)
            .unwrap_or(0);
        let n = Pane::ORDER.len();
        self.focus = Pane::ORDER[if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        }];
    }

    /// Select another row.
    pub fn select(&mut self, delta: isize) {
        let n = self.table.rows.len();
        if n == 0 {
            return;
        }
        self.selected = (self.selected as isize + delta).clamp(0, n as isize - 1) as usize;
        self.code_scroll = 0;
    }

    /// The code of the selected row: its step (ladder) or the first listing.
    pub fn selected_code(&self) -> Option<&CodeView> {
        self.row_code()?.ok()
    }

    /// The machine code of the selected row: a ladder row's step, a comparison's or a check's
    /// row's `run` (else its first function) on that row's backend; or why there is none (the
    /// interpreter, a twin, code not built yet). `None` when there is no row.
    pub fn row_code(&self) -> Option<Result<&CodeView, String>> {
        let row = self.table.rows.get(self.selected)?;
        if let Some(step) = &row.step {
            return Some(self.code.iter().find(|c| &c.key == step).ok_or_else(|| {
                if self.code.is_empty() {
                    "no machine code yet (the ladder's code is built in the background; :asm \
                     lists the snippet's)"
                        .to_string()
                } else if row.build.is_none() {
                    "the native row has no generated code: select a jit row".to_string()
                } else {
                    format!("no machine code for {step}")
                }
            }));
        }
        if let Some(twin) = super::model::twin_of(row) {
            let key = twin_key(twin);
            return Some(match self.functions.iter().find(|(k, _)| *k == key) {
                Some((_, Ok(views))) => views
                    .first()
                    .ok_or_else(|| format!("no machine code for the twin {twin}")),
                Some((_, Err(e))) => Err(e.clone()),
                None => Err(format!("disassembling the twin {twin}…")),
            });
        }
        let Some(backend) = &row.backend else {
            return Some(Err(format!("no machine code for {}", row.label)));
        };
        if backend == "interp" {
            return Some(Err(
                "the interp backend makes no machine code: it runs the checked program".into(),
            ));
        }
        let key = format!("{}@{backend}", row.snippet.as_deref().unwrap_or(""));
        Some(match self.functions.iter().find(|(k, _)| *k == key) {
            Some((_, Ok(views))) => views
                .iter()
                .find(|c| c.key == "run")
                .or_else(|| views.first())
                .ok_or_else(|| "the snippet has no functions".to_string()),
            Some((_, Err(e))) => Err(e.clone()),
            None => Err(format!("building the machine code of {key}…")),
        })
    }

    /// Disassemble the twins of the table's twin rows whose code is not known yet: they are
    /// built into this binary, so no worker job is needed.
    pub fn disassemble_twins(&mut self) {
        let twins: Vec<String> = self
            .table
            .rows
            .iter()
            .filter_map(super::model::twin_of)
            .map(str::to_string)
            .collect();
        for twin in twins {
            let key = twin_key(&twin);
            if !self.functions.iter().any(|(k, _)| *k == key) {
                let code = CodeView::of_twin(&twin).map(|v| vec![v]);
                self.functions.push((key, code));
            }
        }
    }

    /// The `snippet@backend` pairs of the table's rows whose machine code is not known yet.
    pub fn missing_functions(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for r in &self.table.rows {
            if let (Some(s), Some(b)) = (&r.snippet, &r.backend) {
                let key = format!("{s}@{b}");
                if b != "interp"
                    && !self.functions.iter().any(|(k, _)| *k == key)
                    && !out.iter().any(|(s2, b2)| s2 == s && b2 == b)
                {
                    out.push((s.clone(), b.clone()));
                }
            }
        }
        out
    }

    /// What the screen is in, for looking keys up.
    fn key_context(&self) -> Context {
        Context {
            busy: self.busy.is_some(),
            popup: self.popup,
            help: self.help,
            command: self.command.is_some(),
            focus: self.focus,
        }
    }

    /// A key: the bound action ([`keys::action`]), or else the key closes an overlay, types
    /// into the command line, or edits the editor's text.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        self.keep_warning = false;
        if std::mem::take(&mut self.fleeting_message) {
            self.message = None;
        }
        if let Some(action) = keys::action(&key, &self.key_context()) {
            return self.act(action);
        }
        if self.help {
            self.help = false;
        } else if self.popup {
            // A popup shows output: a key that does not scroll it closes it and does what it
            // does on the screen, so no key is lost to a popup.
            self.popup = false;
            return self.on_key(key);
        } else if self.command.is_some() {
            self.type_command(key);
        } else if self.focus == Pane::Editor && self.editor.input(key) {
            self.edited();
            // A message about the snippet (`snippet.hot is empty`, a check's answer) described
            // the text before this edit.
            self.message = None;
            self.popup = false;
        }
        Vec::new()
    }

    /// Carry out an action.
    pub fn act(&mut self, action: Action) -> Vec<Effect> {
        match action {
            Action::Quit => return vec![Effect::Quit],
            Action::Cancel => {
                self.say("cancelling…", false);
                return vec![Effect::Cancel];
            }
            Action::Help => self.help = true,
            Action::Run => return self.run(),
            Action::Check => return self.check(),
            Action::NextLadder => return self.next_ladder(),
            Action::NextBackend => return self.next_backend(),
            Action::NextTheme => self.next_theme(),
            Action::ToggleLayer => return self.toggle_layer(),
            Action::LayerEarlier => return self.move_layer(true),
            Action::LayerLater => return self.move_layer(false),
            Action::NextPane => self.cycle_pane(true),
            Action::PreviousPane => self.cycle_pane(false),
            Action::Edit => self.focus = Pane::Editor,
            Action::LeaveEditor => self.focus = Pane::Table,
            Action::SelectUp => self.select(-1),
            Action::SelectDown => self.select(1),
            Action::SelectFirst => self.select(isize::MIN / 2),
            Action::SelectLast => self.select(isize::MAX / 2),
            Action::CodeUp => self.code_scroll = self.code_scroll.saturating_sub(1),
            Action::CodeDown => self.code_scroll = self.code_scroll.saturating_add(1),
            Action::CodePageUp => self.code_scroll = self.code_scroll.saturating_sub(10),
            Action::CodePageDown => self.code_scroll = self.code_scroll.saturating_add(10),
            Action::ToggleDiff => self.code_diff = !self.code_diff,
            Action::ToggleAddresses => self.code_addresses = !self.code_addresses,
            Action::ToggleWaterfall => {
                self.waterfall = !self.waterfall;
                if self.waterfall && self.focus != Pane::Histogram && self.focus != Pane::Table {
                    self.focus = Pane::Histogram;
                }
            }
            Action::CommandLine => {
                self.command = Some(":".into());
                self.command_cursor = 1;
                self.completion = (Vec::new(), 0);
            }
            Action::CommandRun => return self.run_command(),
            Action::CommandComplete => self.complete_command(),
            Action::CommandLeave => self.command = None,
            Action::ClearMessage => self.message = None,
            Action::PopupUp
            | Action::PopupDown
            | Action::PopupPageUp
            | Action::PopupPageDown
            | Action::PopupTop
            | Action::PopupBottom => self.scroll_popup(action),
            // A mouse event carries a position: `on_mouse` carries it out.
            Action::Mouse => {}
        }
        Vec::new()
    }

    fn run_command(&mut self) -> Vec<Effect> {
        let Some(line) = self.command.take() else {
            return Vec::new();
        };
        if line.trim() == ":" {
            return Vec::new();
        }
        self.line(line)
    }

    fn complete_command(&mut self) {
        self.complete_line();
        self.command_cursor = self.command.as_ref().map_or(0, |c| c.chars().count());
    }

    fn complete_line(&mut self) {
        let Some(cmd) = self.command.as_mut() else {
            return;
        };
        if self.completion.0.is_empty() {
            let c = complete(cmd, &self.snippets, &self.cases_dir);
            let prefix = common_prefix(&c);
            if c.len() == 1 {
                *cmd = format!("{} ", c[0]);
            } else if prefix.len() > cmd.len() {
                *cmd = prefix;
            } else if !c.is_empty() {
                *cmd = c[0].clone();
                self.completion = (c, 1);
                return;
            } else {
                self.say("no completion", false);
                self.fleeting_message = true;
            }
            self.completion = (Vec::new(), 0);
        } else {
            let (c, i) = &mut self.completion;
            *cmd = c[*i % c.len()].clone();
            *i += 1;
        }
    }

    /// The command line's own editing: letters type at the cursor, Backspace and Delete
    /// delete (Backspace on the empty line leaves it), ← → Home End (Ctrl-A Ctrl-E) move,
    /// Ctrl-U deletes to the start, Ctrl-W the word before the cursor, Ctrl-K to the end.
    fn type_command(&mut self, key: KeyEvent) {
        use crossterm::event::KeyModifiers;
        let Some(cmd) = self.command.as_mut() else {
            return;
        };
        let mut chars: Vec<char> = cmd.chars().collect();
        // The `:` stays: the cursor is after it.
        let mut at = self.command_cursor.clamp(1, chars.len().max(1));
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Backspace if chars.len() <= 1 => {
                self.command = None;
                self.completion = (Vec::new(), 0);
                return;
            }
            KeyCode::Backspace if at > 1 => {
                at -= 1;
                chars.remove(at);
            }
            KeyCode::Delete if at < chars.len() => {
                chars.remove(at);
            }
            KeyCode::Left => at = at.saturating_sub(1).max(1),
            KeyCode::Right => at = (at + 1).min(chars.len()),
            KeyCode::Home => at = 1,
            KeyCode::End => at = chars.len(),
            KeyCode::Char('a') if ctrl => at = 1,
            KeyCode::Char('e') if ctrl => at = chars.len(),
            KeyCode::Char('u') if ctrl => {
                chars.drain(1..at);
                at = 1;
            }
            KeyCode::Char('k') if ctrl => chars.truncate(at),
            KeyCode::Char('w') if ctrl => {
                let mut from = at;
                while from > 1 && chars[from - 1] == ' ' {
                    from -= 1;
                }
                while from > 1 && chars[from - 1] != ' ' {
                    from -= 1;
                }
                chars.drain(from..at);
                at = from;
            }
            KeyCode::Char(_) if ctrl => return,
            KeyCode::Char(ch) => {
                chars.insert(at, ch);
                at += 1;
            }
            _ => return,
        }
        *cmd = chars.into_iter().collect();
        self.command_cursor = at;
        self.completion = (Vec::new(), 0);
    }

    /// A mouse event: a click on a row of the table (drawn at `table`) selects it; the wheel
    /// moves the selection.
    pub fn on_mouse(&mut self, m: MouseEvent, table: ratatui::layout::Rect) -> bool {
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                // The table pane: a border line and a header line above the first row.
                let first = table.y + 2;
                if m.column >= table.x
                    && m.column < table.x + table.width
                    && m.row >= first
                    && m.row < table.y + table.height.saturating_sub(2)
                {
                    let visible = (table.height as usize).saturating_sub(4).max(1);
                    let offset = super::panes::table_offset(self.selected, visible);
                    let i = offset + (m.row - first) as usize;
                    if i < self.table.rows.len() {
                        self.selected = i;
                        self.focus = Pane::Table;
                        self.code_scroll = 0;
                        return true;
                    }
                }
                false
            }
            MouseEventKind::ScrollDown if self.popup => {
                self.scroll_popup(Action::PopupDown);
                true
            }
            MouseEventKind::ScrollUp if self.popup => {
                self.scroll_popup(Action::PopupUp);
                true
            }
            MouseEventKind::ScrollDown => {
                self.select(1);
                true
            }
            MouseEventKind::ScrollUp => {
                self.select(-1);
                true
            }
            _ => false,
        }
    }

    /// Scroll the popup. The render clamps the scroll to the popup's height; here it stays
    /// within the text.
    fn scroll_popup(&mut self, action: Action) {
        let lines = self
            .message
            .as_ref()
            .map_or(0, |m| m.text.trim_end().lines().count());
        let last = u16::try_from(lines.saturating_sub(1)).unwrap_or(u16::MAX);
        let page = 10;
        self.popup_scroll = match action {
            Action::PopupUp => self.popup_scroll.saturating_sub(1),
            Action::PopupDown => self.popup_scroll.saturating_add(1),
            Action::PopupPageUp => self.popup_scroll.saturating_sub(page),
            Action::PopupPageDown => self.popup_scroll.saturating_add(page),
            Action::PopupTop => 0,
            Action::PopupBottom => last,
            _ => self.popup_scroll,
        }
        .min(last);
    }

    /// Whether the table shows a finished or running measurement.
    pub fn measured(&self) -> bool {
        self.table.state != TableState::Plan
    }
}

/// Where a twin's code is kept among [`App::functions`].
fn twin_key(twin: &str) -> String {
    format!("twin {twin}")
}
