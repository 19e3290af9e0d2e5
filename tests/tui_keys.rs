//! Key handling as unit tests on the app state: keys become intents, intents become session
//! lines (effects) and state changes. No terminal, no worker.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use hotlab::ladder::bench::DEFAULT_SNIPPET;
use hotlab::session::{HistogramBucket, LiveContestant, LiveSnapshot};
use hotlab::tui::app::{App, Effect, Pane};
use hotlab::tui::model::TableState;
use hotlab::tui::theme::Theme;

fn app(text: &str) -> App {
    let ladder = hotlab::ladder::resolve("host_call").unwrap();
    App::new(Theme::default_theme(), ladder, "snippet.hot", text)
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn lines(effects: &[Effect]) -> Vec<&str> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Line { line, .. } => Some(line.as_str()),
            _ => None,
        })
        .collect()
}

fn typed(app: &mut App, s: &str) -> Vec<Effect> {
    s.chars()
        .flat_map(|c| app.on_key(key(KeyCode::Char(c))))
        .collect()
}

#[test]
fn run_measures_the_ladder_around_call_and_sends_the_text_once() {
    let mut a = app(DEFAULT_SNIPPET);
    let e = a.on_key(key(KeyCode::F(5)));
    assert_eq!(lines(&e), [":ladder host_call"]);
    match &e[0] {
        Effect::Line { text, .. } => assert_eq!(text.as_deref(), Some(DEFAULT_SNIPPET)),
        other => panic!("{other:?}"),
    }
    // While it runs, another run is queued behind it (the message says so), and Esc cancels.
    assert_eq!(a.busy.as_deref(), Some(":ladder host_call"));
    assert_eq!(lines(&a.on_key(ctrl('r'))), [":ladder host_call"]);
    assert!(a.message.as_ref().unwrap().text.contains("queued"));
    assert_eq!(a.queued.len(), 1);
    assert_eq!(a.on_key(key(KeyCode::Esc)), [Effect::Cancel]);
    assert_eq!(a.on_key(ctrl('c')), [Effect::Cancel]);
    assert!(!a.line_done(), "the queued run is next");
    assert!(a.line_done());
    // Unchanged text is not sent again.
    match &a.on_key(key(KeyCode::F(5)))[0] {
        Effect::Line { text, .. } => assert_eq!(text, &None),
        other => panic!("{other:?}"),
    }
}

#[test]
fn run_compares_run_n_with_another_backend_or_runs_main() {
    let mut a = app("fn run(n: i64) -> i64 {\n    return n\n}\n");
    assert_eq!(lines(&a.run()), [":compare interp"]);
    let mut b = app("fn main() -> i64 {\n    return 1\n}\n");
    assert_eq!(lines(&b.run()), [":run"]);
    assert_eq!(lines(&b.on_key(key(KeyCode::F(6)))), [":check"]);
}

#[test]
fn tab_cycles_panes_and_the_editor_takes_letters() {
    let mut a = app("");
    assert_eq!(a.focus, Pane::Table);
    a.on_key(key(KeyCode::Tab));
    assert_eq!(a.focus, Pane::Histogram);
    a.on_key(key(KeyCode::BackTab));
    a.on_key(key(KeyCode::BackTab));
    assert_eq!(a.focus, Pane::Editor);
    // In the editor `q` and `?` are text.
    assert!(typed(&mut a, "q?").is_empty());
    assert_eq!(a.text(), "q?\n");
    a.on_key(key(KeyCode::Esc));
    assert_eq!(a.focus, Pane::Table);
    assert_eq!(a.on_key(key(KeyCode::Char('q'))), [Effect::Quit]);
    assert_eq!(a.on_key(ctrl('q')), [Effect::Quit]);
}

#[test]
fn editing_updates_diagnostics_and_colours() {
    let mut a = app("");
    a.on_key(key(KeyCode::Char('e')));
    typed(&mut a, "fn main() -> i64 {");
    assert!(a.diagnostics[0].incomplete, "{:?}", a.diagnostics);
    a.on_key(key(KeyCode::Enter));
    typed(&mut a, "return true }");
    assert_eq!(a.diagnostics.len(), 1);
    assert!(!a.diagnostics[0].incomplete);
    assert_eq!(a.diagnostics[0].line, 2);
    // Fix it: backspace over `true }`, type `1 }`.
    for _ in 0.."true }".len() {
        a.on_key(key(KeyCode::Backspace));
    }
    typed(&mut a, "1 }");
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    assert!(!a.marks.is_empty());
}

#[test]
fn command_line_completes_and_runs() {
    let mut a = app("");
    a.on_key(key(KeyCode::Char(':')));
    typed(&mut a, "lad");
    a.on_key(key(KeyCode::Tab));
    assert_eq!(a.command.as_deref(), Some(":ladder "));
    typed(&mut a, "f");
    a.on_key(key(KeyCode::Tab));
    assert_eq!(a.command.as_deref(), Some(":ladder fused "));
    let e = a.on_key(key(KeyCode::Enter));
    assert_eq!(lines(&e), [":ladder fused "]);
    assert_eq!(a.command, None);
    // Several candidates: Tab cycles through them.
    a.on_key(key(KeyCode::Char(':')));
    typed(&mut a, "backend jit");
    a.on_key(key(KeyCode::Tab));
    let first = a.command.clone();
    a.on_key(key(KeyCode::Tab));
    assert_ne!(a.command, first);
    a.on_key(key(KeyCode::Esc));
    assert_eq!(a.command, None);
}

#[test]
fn layers_toggle_and_move_and_tell_the_session() {
    let mut a = app(DEFAULT_SNIPPET);
    // Row 1 is `jit slot read`.
    a.on_key(key(KeyCode::Down));
    assert_eq!(a.table.rows[a.selected].label, "jit slot read");
    let e = a.on_key(key(KeyCode::Char(' ')));
    assert_eq!(lines(&e), [":layers entry detached catch depth"]);
    assert!(e.contains(&Effect::LadderCode));
    let row = a
        .table
        .rows
        .iter()
        .find(|r| r.label == "jit slot read")
        .unwrap();
    assert!(row.disabled);
    a.on_key(key(KeyCode::Char(' ')));
    // Move `slot` after `entry`.
    let e = a.on_key(key(KeyCode::Char(']')));
    assert_eq!(lines(&e), [":layers entry slot detached catch depth"]);
    assert_eq!(a.table.rows[a.selected].label, "jit slot read");
    assert_eq!(a.table.rows[1].label, "jit entry check");
    // The native row stays.
    a.selected = 0;
    assert!(a.on_key(key(KeyCode::Char(' '))).is_empty());
    assert!(a.on_key(key(KeyCode::Char('['))).is_empty());
}

#[test]
fn ladder_backend_and_theme_switches() {
    let mut a = app(DEFAULT_SNIPPET);
    let e = a.on_key(key(KeyCode::F(7)));
    assert_eq!(a.ladder.name, "fused");
    assert_eq!(e, [Effect::LadderCode]);
    assert_eq!(a.table.title, "ladder fused");
    assert_eq!(lines(&a.on_key(key(KeyCode::F(8)))), [":backend jit-opt"]);
    assert_eq!(a.theme.name, "dark");
    a.on_key(key(KeyCode::F(9)));
    assert_eq!(a.theme.name, "light");
    a.on_key(key(KeyCode::Char('t')));
    assert_eq!(a.theme.name, "high-contrast");
    let mut plain = App::new(
        Theme::plain(),
        hotlab::ladder::resolve("host_call").unwrap(),
        "a.hot",
        "",
    );
    plain.next_theme();
    assert_eq!(plain.theme.name, "plain");
}

#[test]
fn help_and_popups_close_on_any_key() {
    let mut a = app("");
    a.on_key(key(KeyCode::Char('?')));
    assert!(a.help);
    assert!(a.on_key(key(KeyCode::Char('q'))).is_empty());
    assert!(!a.help);
    a.on_key(key(KeyCode::F(1)));
    assert!(a.help);
}

#[test]
fn live_snapshots_fill_the_plan_rows() {
    let mut a = app(DEFAULT_SNIPPET);
    let p = LiveSnapshot {
        phase: "collect".into(),
        rounds: 10,
        elapsed_ms: 500.0,
        budget_ms: Some(1000.0),
        iters: 1000,
        variants: vec![
            LiveContestant {
                name: "native virtual call".into(),
                samples: 10,
                dropped: 0,
                median_ns: Some(1.5),
                histogram: vec![],
                buckets: vec![HistogramBucket {
                    lo_ns: 1.0,
                    hi_ns: 2.0,
                    count: 10,
                }],
                percentiles: vec![],
            },
            LiveContestant {
                name: "jit slot read".into(),
                samples: 10,
                dropped: 1,
                median_ns: Some(3.0),
                histogram: vec![],
                buckets: vec![],
                percentiles: vec![],
            },
        ],
    };
    let rows = a.table.rows.len();
    a.table.apply_live(&p, ":ladder host_call");
    assert_eq!(a.table.state, TableState::Live);
    assert_eq!(a.table.rows.len(), rows, "plan rows are kept");
    assert_eq!(a.table.rows[1].total_ns, Some(3.0));
    assert_eq!(a.table.rows[1].ratio.unwrap().0, 2.0);
    assert_eq!(a.table.progress, Some(0.5));
    assert_eq!(a.table.rows[0].buckets.len(), 1);
}

#[test]
fn mouse_click_selects_a_row() {
    use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    let mut a = app(DEFAULT_SNIPPET);
    let table = ratatui::layout::Rect::new(0, 0, 80, 15);
    let click = MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: 5,
        row: 5,
        modifiers: KeyModifiers::NONE,
    };
    assert!(a.on_mouse(click, table));
    assert_eq!(a.selected, 3);
}

#[test]
fn a_real_ladder_report_fills_the_table() {
    // The report form `hotlab ladder --format report` prints is the one a ladder job's result
    // carries (`--format json` is the numeric records).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hotlab"))
        .args(["ladder", "--time", "0.2", "--format", "report"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = hotlab::tui::model::TableModel::from_report_json(&v, "x").unwrap();
    assert_eq!(t.title, "ladder host_call");
    assert_eq!(t.rows.len(), 11);
    assert_eq!(t.rows[0].verdict.as_deref(), Some("baseline"));
    assert_eq!(t.rows[1].label, "jit slot read");
    assert!(t.rows.iter().all(|r| r.total_ns.is_some()));
    assert!(t.rows[1].instructions.unwrap() > 0);
    assert!(t.rows[1..].iter().all(|r| r.ratio.is_some()));
    // Its rows find their step's code.
    let mut a = app(DEFAULT_SNIPPET);
    a.table = t;
    // The code comes from the worker, as in the TUI.
    let mut session = hotlab::session::Session::new(hotlab::session::SessionOptions {
        exe: env!("CARGO_BIN_EXE_hotlab").into(),
        store: None,
    });
    let steps = session
        .ladder_code(a.chosen_ladder(), DEFAULT_SNIPPET)
        .unwrap();
    a.code = hotlab::tui::model::CodeView::from_steps(&steps);
    a.selected = 3;
    assert!(
        a.selected_code()
            .unwrap()
            .title
            .starts_with("jit entry check")
    );
    assert!(a.selected_code().unwrap().diff.is_some());
}

#[test]
fn a_long_popup_scrolls_and_other_keys_close_it() {
    let mut a = app("");
    let text: String = (1..=40).map(|i| format!("line {i}\n")).collect();
    a.message = Some(hotlab::tui::app::Message { text, error: false });
    a.popup = true;
    assert!(a.on_key(key(KeyCode::Down)).is_empty());
    assert!(a.popup, "a scrolling key keeps the popup");
    assert_eq!(a.popup_scroll, 1);
    a.on_key(key(KeyCode::PageDown));
    assert_eq!(a.popup_scroll, 11);
    a.on_key(key(KeyCode::End));
    assert_eq!(a.popup_scroll, 39, "the last line at most");
    a.on_key(key(KeyCode::Down));
    assert_eq!(a.popup_scroll, 39);
    a.on_key(key(KeyCode::Home));
    assert_eq!(a.popup_scroll, 0);
    a.on_key(key(KeyCode::Up));
    assert_eq!(a.popup_scroll, 0);
    // Any other key closes it and does what it does on the screen: no key is lost to a popup.
    assert_eq!(lines(&a.on_key(key(KeyCode::Char('r')))), [":run"]);
    assert!(!a.popup);
}

/// The app in a state where bindings of `scope` apply.
fn app_in(scope: hotlab::tui::keys::Scope) -> App {
    use hotlab::tui::keys::Scope;
    let mut a = app("fn call() -> i64 {\n    return 1\n}\n");
    a.selected = 3;
    match scope {
        Scope::Busy => a.busy = Some(":ladder host_call".into()),
        Scope::Popup => {
            let text: String = (1..=40).map(|i| format!("line {i}\n")).collect();
            a.message = Some(hotlab::tui::app::Message { text, error: false });
            a.popup = true;
            a.popup_scroll = 5;
        }
        Scope::CommandLine => a.command = Some(":he".into()),
        Scope::Editor => a.focus = Pane::Editor,
        Scope::CodePane => {
            a.focus = Pane::Code;
            a.code_scroll = 20;
        }
        _ => {}
    }
    a
}

/// What a key changes, to compare two apps.
fn seen(a: &App) -> String {
    format!(
        "{:?} {} {} {:?} {} {} {} {} {:?} {:?} {:?} {:?} {}",
        a.focus,
        a.help,
        a.popup,
        a.command,
        a.selected,
        a.code_scroll,
        a.code_diff,
        a.popup_scroll,
        a.message,
        a.order,
        a.enabled,
        a.backend,
        a.theme.name
    )
}

#[test]
fn every_binding_in_the_table_reaches_its_action() {
    for b in hotlab::tui::keys::bindings() {
        let Some(event) = b.key.event() else {
            continue;
        };
        let (mut by_key, mut by_action) = (app_in(b.scope), app_in(b.scope));
        let effects = by_key.on_key(event);
        assert_eq!(effects, by_action.act(b.action), "{b:?}");
        assert_eq!(seen(&by_key), seen(&by_action), "{b:?}");
    }
}

#[test]
fn fast_key_sequences_all_take_effect() {
    // `b b b` moves three backends, even while the first `:backend` line runs.
    let mut a = app(DEFAULT_SNIPPET);
    let e = typed(&mut a, "bbb");
    assert_eq!(
        lines(&e),
        [":backend jit-opt", ":backend interp", ":backend object"]
    );
    assert_eq!(a.backend.name(), "object");
    // `j j j` right after Space moves three rows, though Space's `:layers` line runs.
    let mut a = app(DEFAULT_SNIPPET);
    a.selected = 1;
    let e = typed(&mut a, " jjj");
    assert_eq!(lines(&e).len(), 1, "{e:?}");
    assert_eq!(a.selected, 4);
    // After a multi-line answer (a popup), the next key is not lost: `c` closes it and checks,
    // `:` closes it and opens the command line with every letter typed after it.
    let mut a = app(DEFAULT_SNIPPET);
    a.say("loaded int_loop.hot: run, main\ntwin: int_loop", false);
    a.popup = true;
    assert_eq!(lines(&a.on_key(key(KeyCode::Char('c')))), [":check"]);
    assert!(!a.popup);
    a.say("one\ntwo", false);
    a.popup = true;
    a.line_done();
    typed(&mut a, ":ladder");
    assert_eq!(a.command.as_deref(), Some(":ladder"));
    assert_eq!(lines(&a.on_key(key(KeyCode::Enter))), [":ladder"]);
}

#[test]
fn the_command_line_edits_like_a_shell() {
    let mut a = app("");
    typed(&mut a, ":set time 0.5");
    a.on_key(ctrl('w'));
    assert_eq!(a.command.as_deref(), Some(":set time "));
    a.on_key(key(KeyCode::Home));
    typed(&mut a, "x");
    assert_eq!(a.command.as_deref(), Some(":xset time "));
    a.on_key(key(KeyCode::Delete));
    assert_eq!(a.command.as_deref(), Some(":xet time "));
    a.on_key(key(KeyCode::End));
    typed(&mut a, "1");
    assert_eq!(a.command.as_deref(), Some(":xet time 1"));
    a.on_key(ctrl('u'));
    assert_eq!(a.command.as_deref(), Some(":"), "Ctrl-U keeps the colon");
    typed(&mut a, "show");
    a.on_key(key(KeyCode::Left));
    a.on_key(key(KeyCode::Backspace));
    assert_eq!(a.command.as_deref(), Some(":shw"));
    assert_eq!(a.command_cursor, 3);
}

#[test]
fn tab_completes_cases_twins_ladders_and_snippets() {
    let mut a = app("");
    a.snippets = vec!["snippet.hot".into(), "other.hot".into()];
    let complete = |a: &mut App, line: &str| {
        a.command = None;
        typed(a, line);
        a.on_key(key(KeyCode::Tab));
        a.command.clone().unwrap_or_default()
    };
    assert_eq!(complete(&mut a, ":load int_l"), ":load int_loop ");
    assert_eq!(complete(&mut a, ":twin int_l"), ":twin int_loop ");
    assert_eq!(complete(&mut a, ":ladder fu"), ":ladder fused ");
    assert_eq!(complete(&mut a, ":snippet oth"), ":snippet other.hot ");
    assert_eq!(
        complete(&mut a, ":check --vs oth"),
        ":check --vs other.hot "
    );
}

#[test]
fn a_bench_fills_the_table_with_its_own_cells() {
    let mut a = app(DEFAULT_SNIPPET);
    // A bench's snapshots name the cell that runs; they have no rows. The plan's rows must not
    // stay on screen emptied as if they were the bench's.
    let p = LiveSnapshot {
        phase: "1/4 int_loop (jit)".into(),
        rounds: 1,
        elapsed_ms: 800.0,
        budget_ms: None,
        iters: 4,
        variants: vec![],
    };
    a.table.apply_live(&p, ":bench int_loop");
    assert!(a.table.rows.is_empty(), "{:?}", a.table.rows);
    assert_eq!(a.table.note, "1/4 int_loop (jit), 0.8 s");
    // Its result: each backend's twin and script cells, with their figures.
    let cell = |ns: f64, ratio: f64| {
        serde_json::json!({"ns": ns, "ratio": ratio, "checksum": 7, "mismatch": false,
                           "error": null})
    };
    let json = serde_json::json!({
        "reps": 1, "time": 0.25, "elapsed": 1.2, "iters": 10000, "loads": [], "reloads": [],
        "tables": [
            {"backend": "jit", "unavailable": null, "rows": [
                {"case": "int_loop", "title": "integer arithmetic loop", "group": null,
                 "unit": "one loop iteration", "twin": "int_loop", "native_ns": 0.87,
                 "native_checksum": 7, "native_only": false,
                 "cells": {"hot": cell(1.08, 1.25), "clif": cell(1.09, 1.26)}}]},
            {"backend": "interp", "unavailable": null, "rows": [
                {"case": "int_loop", "title": "integer arithmetic loop", "group": null,
                 "unit": "one loop iteration", "twin": "int_loop", "native_ns": 0.88,
                 "native_checksum": 7, "native_only": false,
                 "cells": {"hot": cell(226.7, 262.8), "clif": {"ns": null, "ratio": null,
                     "checksum": null, "mismatch": false,
                     "error": {"kind": "unavailable", "reason": "the interpreter runs .hot"}}}}]}
        ]
    });
    let record = hotlab::session::JobRecord {
        command: ":bench int_loop".into(),
        backend: hotlab::session::Backend::Jit,
        snippets: vec![],
        finished: 0,
        output: hotlab::session::JobReport::Bench(hotlab::session::BenchResult {
            text: "the matrix".into(),
            markdown: String::new(),
            csv: String::new(),
            json,
            problems: 0,
            errors: vec![],
            failed: false,
            mismatched: false,
        }),
        rows: vec![],
        stopped: None,
    };
    a.apply_record(&record);
    assert_eq!(a.table.state, TableState::Done);
    let labels: Vec<&str> = a.table.rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "twin int_loop (jit)",
            "int_loop.clif (jit)",
            "int_loop.hot (jit)",
            "twin int_loop (interp)",
            "int_loop.clif (interp)",
            "int_loop.hot (interp)",
        ]
    );
    let hot = &a.table.rows[2];
    assert_eq!(hot.total_ns, Some(1.08));
    assert_eq!(hot.ratio, Some((1.25, None)));
    assert_eq!(a.table.rows[0].total_ns, Some(0.87));
    assert_eq!(a.table.rows[4].verdict.as_deref(), Some("n/a"));
    assert!(a.table.note.starts_with("4 cell(s)"), "{}", a.table.note);
    // The script rows' code is asked for (the case's script, by its file name).
    let asked = a.request_missing_code();
    assert!(
        asked.iter().any(|e| matches!(e, Effect::FunctionCode(p)
            if p.contains(&("int_loop.hot".to_string(), "jit".to_string())))),
        "{asked:?}"
    );
}

#[test]
fn a_message_about_the_snippet_clears_when_the_snippet_is_typed_into() {
    let mut a = app("");
    a.say("snippet.hot is empty: write a fn main or a fn call", true);
    a.on_key(key(KeyCode::Char('e')));
    assert!(
        a.message.is_some(),
        "focusing the editor changes nothing yet"
    );
    typed(&mut a, "fn");
    assert_eq!(
        a.message, None,
        "the message described the text before the edit"
    );
}

#[test]
fn a_new_command_clears_the_last_commands_message() {
    let mut a = app("");
    a.say("snippet.hot is empty: write a fn main or a fn call", true);
    typed(&mut a, ":show");
    a.on_key(key(KeyCode::Enter));
    assert_eq!(a.busy.as_deref(), Some(":show"));
    assert_eq!(a.message, None, "the message was about the last command");
}

#[test]
fn no_completion_lasts_one_key() {
    for next in [KeyCode::Esc, KeyCode::Home, KeyCode::Char('w')] {
        let mut a = app("");
        typed(&mut a, ":zzz");
        a.on_key(key(KeyCode::Tab));
        assert_eq!(a.message.as_ref().unwrap().text, "no completion");
        a.on_key(key(KeyCode::Esc));
        a.on_key(key(next));
        assert_eq!(a.message, None, "after {next:?}");
    }
}

#[test]
fn leaving_a_layer_out_of_a_finished_ladder_keeps_its_numbers_until_the_next_run() {
    let mut a = app(DEFAULT_SNIPPET);
    let contestant = |name: &str, ns: f64| LiveContestant {
        name: name.into(),
        samples: 10,
        dropped: 0,
        median_ns: Some(ns),
        histogram: vec![],
        buckets: vec![HistogramBucket {
            lo_ns: ns,
            hi_ns: ns + 1.0,
            count: 10,
        }],
        percentiles: vec![],
    };
    let p = LiveSnapshot {
        phase: "collect".into(),
        rounds: 10,
        elapsed_ms: 1000.0,
        budget_ms: Some(1000.0),
        iters: 1000,
        variants: vec![
            contestant("native virtual call", 1.5),
            contestant("jit slot read", 3.0),
        ],
    };
    a.table.apply_live(&p, ":ladder host_call");
    a.table.state = TableState::Done;
    // Select `jit slot read` and leave its layer out.
    a.selected = 1;
    let e = a.on_key(key(KeyCode::Char(' ')));
    assert!(lines(&e)[0].starts_with(":layers"), "{:?}", lines(&e));
    assert_eq!(a.table.state, TableState::Done, "not back to the plan");
    let row = a
        .table
        .rows
        .iter()
        .find(|r| r.label == "jit slot read")
        .unwrap();
    assert!(row.disabled, "the left-out row says so");
    assert_eq!(row.total_ns, Some(3.0), "and keeps its number");
    assert_eq!(a.table.rows[0].buckets.len(), 1, "the histogram stays");
    // The next run's rows replace them.
    a.table.apply_live(&p, ":ladder host_call");
    assert_eq!(a.table.state, TableState::Live);
    // A plan (nothing measured) stays a plan.
    let mut b = app(DEFAULT_SNIPPET);
    b.selected = 1;
    b.on_key(key(KeyCode::Char(' ')));
    assert_eq!(b.table.state, TableState::Plan);
}

#[test]
fn tab_completes_layer_toggles_and_stops_after_the_last_argument() {
    let cases = hotlab::cases::spec::default_dir(None);
    let complete =
        |line: &str, snippets: &[String]| hotlab::tui::complete::complete(line, snippets, &cases);
    assert_eq!(complete(":layers -ca", &[]), [":layers -catch"]);
    let d = complete(":layers -catch +d", &[]);
    assert!(d.contains(&":layers -catch +depth".to_string()), "{d:?}");
    assert!(
        d.iter().all(|c| c.starts_with(":layers -catch +d")),
        "{d:?}"
    );
    assert_eq!(complete(":layers sl", &[]), [":layers slot"]);
    assert!(complete(":load int_loop ", &[]).is_empty());
    assert!(complete(":backend jit ", &[]).is_empty());
    assert!(complete(":set checks on ", &[]).is_empty());
    // Through the keys: the first Tab finishes the name, a second adds nothing.
    let mut a = app("");
    typed(&mut a, ":backend jit-o");
    a.on_key(key(KeyCode::Tab));
    assert_eq!(a.command.as_deref(), Some(":backend jit-opt "));
    a.on_key(key(KeyCode::Tab));
    assert_eq!(a.command.as_deref(), Some(":backend jit-opt "));
}

/// A `call` that does work its native twin does not: the ladder measures its body as a row.
const WORK: &str = "fn call() -> i64 {\n    var s = 0\n    for i in 0..10 {\n        s += i\n    }\n    return s\n}\n";

fn labels(a: &App) -> Vec<String> {
    a.table.rows.iter().map(|r| r.label.clone()).collect()
}

#[test]
fn the_plan_has_the_body_row_from_the_start_and_keeps_its_shape_while_measured() {
    let mut a = app(WORK);
    assert_eq!(a.table.state, TableState::Plan);
    let planned = labels(&a);
    assert_eq!(
        planned[..3],
        ["native virtual call", "jit method body", "aot method body"]
    );
    let body = &a.table.rows[1];
    assert_eq!(body.step.as_deref(), Some("method body"));
    assert_eq!(body.build.as_deref(), Some("jit"));
    // Measured through the session as the TUI measures it: every live snapshot and the result
    // have the plan's rows, in its order.
    struct Live(Vec<LiveSnapshot>);
    impl hotlab::session::Sink for Live {
        fn text(&mut self, _: &str) {}
        fn progress(&mut self, p: &LiveSnapshot) {
            self.0.push(p.clone());
        }
    }
    let mut session = hotlab::session::Session::new(hotlab::session::SessionOptions {
        exe: env!("CARGO_BIN_EXE_hotlab").into(),
        store: None,
    });
    session
        .run_line(":set time 0.2", &mut Live(Vec::new()))
        .unwrap();
    let run = a.on_key(key(KeyCode::F(5)));
    assert_eq!(lines(&run), [":ladder host_call"]);
    session.set_snippet_text(WORK);
    let mut live = Live(Vec::new());
    session.run_line(":ladder host_call", &mut live).unwrap();
    assert!(!live.0.is_empty(), "the ladder streams snapshots");
    for p in live.0 {
        a.on_session(hotlab::tui::threads::FromSession::Progress(p));
        assert_eq!(labels(&a), planned);
    }
    a.apply_record(session.state().results.last().expect("recorded"));
    assert_eq!(a.table.state, TableState::Done);
    assert_eq!(labels(&a), planned);
}

#[test]
fn the_plan_follows_the_method_as_it_is_edited() {
    let has_body = |a: &App| labels(a).iter().any(|l| l.ends_with("method body"));
    let mut a = app(DEFAULT_SNIPPET);
    assert!(!has_body(&a), "{:?}", labels(&a));
    a.set_text("snippet.hot", WORK);
    assert!(has_body(&a), "{:?}", labels(&a));
    // A layer left out stays marked beside the body row.
    a.selected = labels(&a)
        .iter()
        .position(|l| l == "jit slot read")
        .unwrap();
    a.on_key(key(KeyCode::Char(' ')));
    assert!(has_body(&a));
    let slot = a.table.rows.iter().find(|r| r.label == "jit slot read");
    assert!(slot.unwrap().disabled);
    // Back to a method that only returns a constant: no body row (nor for one that does not
    // compile, which the ladder cannot measure).
    a.set_text("snippet.hot", DEFAULT_SNIPPET);
    assert!(!has_body(&a), "{:?}", labels(&a));
    a.set_text("snippet.hot", "fn call() -> i64 {\n    return x\n}\n");
    assert!(!has_body(&a));
}
