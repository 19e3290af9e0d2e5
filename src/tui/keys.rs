//! The TUI's key bindings as data: one table of which key does what where, and what the help
//! says about it. The key handling ([`crate::tui::app::App::on_key`]) looks a key up here
//! ([`action`]) and the help overlay draws [`HELP`], so a key cannot be bound without being
//! described, nor described without being bound.
//!
//! The editor's own text keys (tui-textarea) and the command line's typing (letters,
//! Backspace) are not bindings: a key no binding takes goes to them.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::Pane;

/// What the user asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Leave (the session is saved).
    Quit,
    /// Cancel the running job.
    Cancel,
    /// Show the key help.
    Help,
    /// Run: the ladder around `fn call`, `run(n)` against another backend, or `main`.
    Run,
    /// Check the snippet against its native twin.
    Check,
    /// The next shipped ladder.
    NextLadder,
    /// The next backend.
    NextBackend,
    /// The next shipped theme.
    NextTheme,
    /// Leave the selected row's layer out, or put it back.
    ToggleLayer,
    /// Move the selected row's layer one step earlier.
    LayerEarlier,
    /// Move the selected row's layer one step later.
    LayerLater,
    /// Focus the next pane.
    NextPane,
    /// Focus the previous pane.
    PreviousPane,
    /// Focus the editor.
    Edit,
    /// Leave the editor (focus the table).
    LeaveEditor,
    /// Select the row above.
    SelectUp,
    /// Select the row below.
    SelectDown,
    /// Select the first row.
    SelectFirst,
    /// Select the last row.
    SelectLast,
    /// Scroll the code pane up a line.
    CodeUp,
    /// Scroll the code pane down a line.
    CodeDown,
    /// Scroll the code pane up a page.
    CodePageUp,
    /// Scroll the code pane down a page.
    CodePageDown,
    /// The code pane: the diff from the step before, or the whole listing.
    ToggleDiff,
    /// The code pane: show each instruction's address and bytes, or only the instructions.
    ToggleAddresses,
    /// The histogram pane: the ladder's waterfall (what each rung adds), or the histogram.
    ToggleWaterfall,
    /// Open the command line.
    CommandLine,
    /// Run the command line.
    CommandRun,
    /// Complete the command line's word (Tab again: the next candidate).
    CommandComplete,
    /// Leave the command line.
    CommandLeave,
    /// Clear the message.
    ClearMessage,
    /// Scroll the popup up a line.
    PopupUp,
    /// Scroll the popup down a line.
    PopupDown,
    /// Scroll the popup up a page.
    PopupPageUp,
    /// Scroll the popup down a page.
    PopupPageDown,
    /// The popup's first line.
    PopupTop,
    /// The popup's last line.
    PopupBottom,
    /// The mouse: a click selects a row, the wheel moves the selection (or scrolls a popup).
    /// A mouse event carries a position, so `App::on_mouse` carries it out.
    Mouse,
}

impl Action {
    /// Every action.
    pub const ALL: [Action; 38] = [
        Action::Quit,
        Action::Cancel,
        Action::Help,
        Action::Run,
        Action::Check,
        Action::NextLadder,
        Action::NextBackend,
        Action::NextTheme,
        Action::ToggleLayer,
        Action::LayerEarlier,
        Action::LayerLater,
        Action::NextPane,
        Action::PreviousPane,
        Action::Edit,
        Action::LeaveEditor,
        Action::SelectUp,
        Action::SelectDown,
        Action::SelectFirst,
        Action::SelectLast,
        Action::CodeUp,
        Action::CodeDown,
        Action::CodePageUp,
        Action::CodePageDown,
        Action::ToggleDiff,
        Action::ToggleAddresses,
        Action::ToggleWaterfall,
        Action::CommandLine,
        Action::CommandRun,
        Action::CommandComplete,
        Action::CommandLeave,
        Action::ClearMessage,
        Action::PopupUp,
        Action::PopupDown,
        Action::PopupPageUp,
        Action::PopupPageDown,
        Action::PopupTop,
        Action::PopupBottom,
        Action::Mouse,
    ];
}

/// Where a binding applies. A key is looked up in the scopes that apply, in [`PRECEDENCE`]
/// order: the first binding found wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Always, over an overlay and in the command line too.
    Anywhere,
    /// While a job runs.
    Busy,
    /// While a popup shows output.
    Popup,
    /// While typing a command line.
    CommandLine,
    /// On the screen (no overlay, no command line), in the editor too.
    Screen,
    /// In the editor.
    Editor,
    /// In the code pane.
    CodePane,
    /// In the table, histogram and counters panes.
    ListPanes,
    /// In every pane but the editor.
    Panes,
}

/// The order in which scopes are searched.
pub const PRECEDENCE: [Scope; 9] = [
    Scope::Anywhere,
    Scope::Busy,
    Scope::Popup,
    Scope::CommandLine,
    Scope::Screen,
    Scope::Editor,
    Scope::CodePane,
    Scope::ListPanes,
    Scope::Panes,
];

/// Which modifiers a key binding wants. Shift is never looked at (`G`, `?` and Shift-Tab
/// carry it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ctrl {
    /// With or without Ctrl.
    Any,
    /// With Ctrl.
    Held,
    /// Without Ctrl.
    Not,
}

/// A key (or the mouse).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// A key code, with or without Ctrl.
    Code(KeyCode, Ctrl),
    /// The mouse (clicks and the wheel; see [`Action::Mouse`]).
    Mouse,
}

impl Key {
    /// Whether `event` is this key.
    pub fn matches(self, event: &KeyEvent) -> bool {
        let Key::Code(code, ctrl) = self else {
            return false;
        };
        let held = event.modifiers.contains(KeyModifiers::CONTROL);
        code == event.code
            && match ctrl {
                Ctrl::Any => true,
                Ctrl::Held => held,
                Ctrl::Not => !held,
            }
    }

    /// How the help writes it (`F5`, `Ctrl-R`, `space`, `↑`).
    pub fn name(self) -> String {
        let Key::Code(code, ctrl) = self else {
            return "mouse".into();
        };
        let base = match code {
            KeyCode::Char(' ') => "space".to_string(),
            KeyCode::Char(c) if ctrl == Ctrl::Held => c.to_ascii_uppercase().to_string(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::F(n) => format!("F{n}"),
            KeyCode::Up => "↑".into(),
            KeyCode::Down => "↓".into(),
            KeyCode::PageUp => "PgUp".into(),
            KeyCode::PageDown => "PgDn".into(),
            KeyCode::BackTab => "Shift-Tab".into(),
            other => format!("{other:?}"),
        };
        if ctrl == Ctrl::Held {
            format!("Ctrl-{base}")
        } else {
            base
        }
    }

    /// A key event that is this key (the mouse has none).
    pub fn event(self) -> Option<KeyEvent> {
        let Key::Code(code, ctrl) = self else {
            return None;
        };
        let modifiers = if ctrl == Ctrl::Held {
            KeyModifiers::CONTROL
        } else {
            KeyModifiers::NONE
        };
        Some(KeyEvent::new(code, modifiers))
    }
}

/// A key, where it applies, and what it does there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding {
    /// The key.
    pub key: Key,
    /// Where.
    pub scope: Scope,
    /// What.
    pub action: Action,
}

/// One line of the help and the bindings it describes.
#[derive(Debug, Clone, Copy)]
pub struct HelpEntry {
    /// The keys the line names, in groups: the help writes a group's key names with spaces
    /// between them (`[ ]`: earlier, later) and the groups with commas (`[ ], K J`).
    pub keys: &'static [&'static [Binding]],
    /// Bindings the line describes without naming their key in the key column (the text
    /// says what they do: `Esc leaves the editor`).
    pub also: &'static [Binding],
    /// What the line says.
    pub help: &'static str,
}

impl HelpEntry {
    /// The key column: `F5, r, Ctrl-R`.
    pub fn label(&self) -> String {
        self.keys
            .iter()
            .map(|group| {
                let mut names: Vec<String> = Vec::new();
                for b in group.iter() {
                    let name = b.key.name();
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
                names.join(" ")
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Every binding of the line.
    pub fn bindings(&self) -> impl Iterator<Item = &'static Binding> + use<> {
        let keys: &'static [&'static [Binding]] = self.keys;
        let also: &'static [Binding] = self.also;
        keys.iter().flat_map(|g| g.iter()).chain(also.iter())
    }
}

const fn key(code: KeyCode, scope: Scope, action: Action) -> Binding {
    Binding {
        key: Key::Code(code, Ctrl::Any),
        scope,
        action,
    }
}

const fn ch(c: char, scope: Scope, action: Action) -> Binding {
    key(KeyCode::Char(c), scope, action)
}

const fn ctrl(c: char, scope: Scope, action: Action) -> Binding {
    Binding {
        key: Key::Code(KeyCode::Char(c), Ctrl::Held),
        scope,
        action,
    }
}

use Action as A;
use Scope as S;

/// Every line of the help overlay, in its order, with the bindings it describes.
pub const HELP: &[HelpEntry] = &[
    HelpEntry {
        keys: &[
            &[key(KeyCode::F(5), S::Screen, A::Run)],
            &[ch('r', S::Panes, A::Run)],
            &[ctrl('r', S::Screen, A::Run)],
        ],
        also: &[],
        help: "run: ladder around fn call, run(n) on 2 backends, or main",
    },
    HelpEntry {
        keys: &[
            &[key(KeyCode::F(6), S::Screen, A::Check)],
            &[ch('c', S::Panes, A::Check)],
            &[ctrl('k', S::Screen, A::Check)],
        ],
        also: &[],
        help: "check: the snippet against its native twin",
    },
    HelpEntry {
        keys: &[
            &[key(KeyCode::F(7), S::Screen, A::NextLadder)],
            &[ch('l', S::Panes, A::NextLadder)],
        ],
        also: &[],
        help: "next ladder (host_call, fused, direct, runtime)",
    },
    HelpEntry {
        keys: &[
            &[key(KeyCode::F(8), S::Screen, A::NextBackend)],
            &[ch('b', S::Panes, A::NextBackend)],
        ],
        also: &[],
        help: "next backend (jit, jit-opt, interp, object)",
    },
    HelpEntry {
        keys: &[
            &[key(KeyCode::F(9), S::Screen, A::NextTheme)],
            &[ch('t', S::Panes, A::NextTheme)],
        ],
        also: &[],
        help: "next theme (dark, light, high-contrast)",
    },
    HelpEntry {
        keys: &[&[ch(' ', S::Panes, A::ToggleLayer)]],
        also: &[],
        help: "leave the selected row's layer out, or put it back",
    },
    HelpEntry {
        keys: &[
            &[
                ch('[', S::Panes, A::LayerEarlier),
                ch(']', S::Panes, A::LayerLater),
            ],
            &[
                ch('K', S::Panes, A::LayerEarlier),
                ch('J', S::Panes, A::LayerLater),
            ],
        ],
        also: &[],
        help: "move the selected row's layer earlier or later",
    },
    HelpEntry {
        keys: &[
            &[Binding {
                key: Key::Code(KeyCode::Tab, Ctrl::Not),
                scope: S::Screen,
                action: A::NextPane,
            }],
            &[key(KeyCode::BackTab, S::Screen, A::PreviousPane)],
        ],
        also: &[],
        help: "next or previous pane",
    },
    HelpEntry {
        keys: &[
            &[ch('e', S::ListPanes, A::Edit)],
            &[ch('i', S::ListPanes, A::Edit)],
            &[key(KeyCode::Enter, S::ListPanes, A::Edit)],
        ],
        also: &[key(KeyCode::Esc, S::Editor, A::LeaveEditor)],
        help: "edit the snippet (Esc leaves the editor)",
    },
    HelpEntry {
        keys: &[
            &[
                key(KeyCode::Up, S::ListPanes, A::SelectUp),
                key(KeyCode::Down, S::ListPanes, A::SelectDown),
                key(KeyCode::Up, S::CodePane, A::CodeUp),
                key(KeyCode::Down, S::CodePane, A::CodeDown),
            ],
            &[
                ch('j', S::ListPanes, A::SelectDown),
                ch('k', S::ListPanes, A::SelectUp),
                ch('j', S::CodePane, A::CodeDown),
                ch('k', S::CodePane, A::CodeUp),
            ],
        ],
        also: &[
            key(KeyCode::Home, S::Panes, A::SelectFirst),
            key(KeyCode::End, S::Panes, A::SelectLast),
            key(KeyCode::PageUp, S::CodePane, A::CodePageUp),
            key(KeyCode::PageDown, S::CodePane, A::CodePageDown),
        ],
        help: "select a row (in the code pane: scroll)",
    },
    HelpEntry {
        keys: &[&[Binding {
            key: Key::Mouse,
            scope: S::Anywhere,
            action: A::Mouse,
        }]],
        also: &[],
        help: "click a row to select it; the wheel moves the selection",
    },
    HelpEntry {
        keys: &[&[ch('d', S::Panes, A::ToggleDiff)]],
        also: &[],
        help: "code pane: diff from the step before, or the whole listing",
    },
    HelpEntry {
        keys: &[&[ch('a', S::Panes, A::ToggleAddresses)]],
        also: &[],
        help: "code pane: offsets and bytes, or instructions only",
    },
    HelpEntry {
        keys: &[&[ch('w', S::Panes, A::ToggleWaterfall)]],
        also: &[],
        help: "waterfall of what each ladder rung adds, or histogram",
    },
    HelpEntry {
        keys: &[&[ch(':', S::Panes, A::CommandLine)]],
        also: &[
            key(KeyCode::Enter, S::CommandLine, A::CommandRun),
            key(KeyCode::Tab, S::CommandLine, A::CommandComplete),
            key(KeyCode::Esc, S::CommandLine, A::CommandLeave),
        ],
        help: "command line (Tab completes, Ctrl-U/W delete; :help)",
    },
    HelpEntry {
        keys: &[
            &[
                key(KeyCode::Esc, S::Busy, A::Cancel),
                key(KeyCode::Esc, S::Panes, A::ClearMessage),
            ],
            &[ctrl('c', S::Busy, A::Cancel)],
        ],
        also: &[],
        help: "cancel the running job (Esc also clears a message)",
    },
    HelpEntry {
        keys: &[
            &[ch('?', S::Panes, A::Help)],
            &[key(KeyCode::F(1), S::Screen, A::Help)],
        ],
        also: &[],
        help: "this help",
    },
    HelpEntry {
        keys: &[
            &[ch('q', S::Panes, A::Quit)],
            &[ctrl('q', S::Anywhere, A::Quit)],
        ],
        also: &[ctrl('c', S::Screen, A::Quit)],
        help: "quit (the session is saved; hotlab tui --resume reopens it)",
    },
];

/// The popup's scrolling keys; its title names them (any other key closes it).
pub const POPUP: HelpEntry = HelpEntry {
    keys: &[
        &[
            key(KeyCode::Up, S::Popup, A::PopupUp),
            key(KeyCode::Down, S::Popup, A::PopupDown),
        ],
        &[key(KeyCode::PageUp, S::Popup, A::PopupPageUp)],
        &[key(KeyCode::PageDown, S::Popup, A::PopupPageDown)],
        &[key(KeyCode::Home, S::Popup, A::PopupTop)],
        &[key(KeyCode::End, S::Popup, A::PopupBottom)],
    ],
    also: &[
        ch('k', S::Popup, A::PopupUp),
        ch('j', S::Popup, A::PopupDown),
        ch(' ', S::Popup, A::PopupPageDown),
        ch('g', S::Popup, A::PopupTop),
        ch('G', S::Popup, A::PopupBottom),
    ],
    help: "scroll; other keys close",
};

/// Every binding: the help's lines, then the popup's.
pub fn bindings() -> impl Iterator<Item = &'static Binding> {
    HELP.iter()
        .chain(std::iter::once(&POPUP))
        .flat_map(HelpEntry::bindings)
}

/// What the screen is in when a key arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context {
    /// A job runs.
    pub busy: bool,
    /// A popup shows output.
    pub popup: bool,
    /// The help overlay is shown.
    pub help: bool,
    /// The command line is open.
    pub command: bool,
    /// The focused pane.
    pub focus: Pane,
}

impl Context {
    /// Whether bindings of `scope` apply.
    pub fn applies(&self, scope: Scope) -> bool {
        let screen = !self.popup && !self.help && !self.command;
        let pane = screen && self.focus != Pane::Editor;
        match scope {
            Scope::Anywhere => true,
            // Esc in the command line leaves it, even while a job runs.
            Scope::Busy => self.busy && !self.command,
            Scope::Popup => self.popup,
            Scope::CommandLine => self.command && !self.popup && !self.help,
            Scope::Screen => screen,
            Scope::Editor => screen && self.focus == Pane::Editor,
            Scope::CodePane => pane && self.focus == Pane::Code,
            Scope::ListPanes => pane && self.focus != Pane::Code,
            Scope::Panes => pane,
        }
    }
}

/// The action `event` asks for in `context`, if a binding takes it.
pub fn action(event: &KeyEvent, context: &Context) -> Option<Action> {
    PRECEDENCE
        .iter()
        .filter(|s| context.applies(**s))
        .find_map(|scope| {
            bindings()
                .find(|b| b.scope == *scope && b.key.matches(event))
                .map(|b| b.action)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A context in which `scope` applies and as little else as can be.
    fn context_for(scope: Scope) -> Context {
        let mut c = Context {
            busy: false,
            popup: false,
            help: false,
            command: false,
            focus: Pane::Table,
        };
        match scope {
            Scope::Busy => c.busy = true,
            Scope::Popup => c.popup = true,
            Scope::CommandLine => c.command = true,
            Scope::Editor => c.focus = Pane::Editor,
            Scope::CodePane => c.focus = Pane::Code,
            Scope::Anywhere | Scope::Screen | Scope::ListPanes | Scope::Panes => {}
        }
        assert!(c.applies(scope), "{scope:?}");
        c
    }

    #[test]
    fn every_action_is_bound_and_in_the_help() {
        // A new action must be listed in `ALL` (this match does not compile without it).
        for a in Action::ALL {
            match a {
                A::Quit
                | A::Cancel
                | A::Help
                | A::Run
                | A::Check
                | A::NextLadder
                | A::NextBackend
                | A::NextTheme
                | A::ToggleLayer
                | A::LayerEarlier
                | A::LayerLater
                | A::NextPane
                | A::PreviousPane
                | A::Edit
                | A::LeaveEditor
                | A::SelectUp
                | A::SelectDown
                | A::SelectFirst
                | A::SelectLast
                | A::CodeUp
                | A::CodeDown
                | A::CodePageUp
                | A::CodePageDown
                | A::ToggleDiff
                | A::ToggleAddresses
                | A::ToggleWaterfall
                | A::CommandLine
                | A::CommandRun
                | A::CommandComplete
                | A::CommandLeave
                | A::ClearMessage
                | A::PopupUp
                | A::PopupDown
                | A::PopupPageUp
                | A::PopupPageDown
                | A::PopupTop
                | A::PopupBottom
                | A::Mouse => {}
            }
            let entry = HELP
                .iter()
                .chain(std::iter::once(&POPUP))
                .find(|e| e.bindings().any(|b| b.action == a));
            let entry = entry.unwrap_or_else(|| panic!("{a:?} has no key"));
            assert!(!entry.help.is_empty() && !entry.label().is_empty(), "{a:?}");
        }
    }

    #[test]
    fn every_binding_is_reachable() {
        for b in bindings() {
            let Some(event) = b.key.event() else {
                assert_eq!(b.action, Action::Mouse);
                continue;
            };
            let c = context_for(b.scope);
            assert_eq!(action(&event, &c), Some(b.action), "{b:?} in {c:?}");
        }
    }

    #[test]
    fn no_key_is_bound_twice_in_one_scope() {
        let all: Vec<&Binding> = bindings().collect();
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert!(!(a.key == b.key && a.scope == b.scope), "{a:?} and {b:?}");
            }
        }
    }

    #[test]
    fn labels_are_the_help_as_it_was_written() {
        let labels: Vec<String> = HELP.iter().map(HelpEntry::label).collect();
        assert_eq!(
            labels,
            [
                "F5, r, Ctrl-R",
                "F6, c, Ctrl-K",
                "F7, l",
                "F8, b",
                "F9, t",
                "space",
                "[ ], K J",
                "Tab, Shift-Tab",
                "e, i, Enter",
                "↑ ↓, j k",
                "mouse",
                "d",
                "a",
                "w",
                ":",
                "Esc, Ctrl-C",
                "?, F1",
                "q, Ctrl-Q",
            ]
        );
    }
}
