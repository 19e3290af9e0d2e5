//! Each pane and the whole screen drawn into ratatui's `TestBackend` with fixed data, compared
//! with insta snapshots at 80×24 and 140×40; colours checked cell by cell where they carry
//! meaning (verdicts, diagnostics).

use hotlab::ladder::bench::{Build, DEFAULT_SNIPPET};
use hotlab::ladder::report::{Report, ReportRow};
use hotlab::measure::{AbsVerdict, Picos, Verdict};
use hotlab::session::{HistogramBucket, MeasuredComparison, MeasuredRow, Measurement, Quantile};
use hotlab::tui::app::{App, Pane};
use hotlab::tui::model::{CodeView, TableModel};
use hotlab::tui::panes::{self, render_code, render_counters, render_histogram, render_table};
use hotlab::tui::theme::Theme;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

fn buckets(center: f64) -> Vec<HistogramBucket> {
    (0..32)
        .map(|i| {
            let lo = center * 0.9 + i as f64 * center * 0.2 / 32.0;
            // A hump in the middle, a tail on the right.
            let d = (i as i64 - 12).unsigned_abs();
            HistogramBucket {
                lo_ns: lo,
                hi_ns: lo + center * 0.2 / 32.0,
                count: 200u64.saturating_sub(d * 18) + if i > 28 { 6 } else { 0 },
            }
        })
        .collect()
}

fn percentiles(center: f64) -> Vec<Quantile> {
    [
        (0.01, 0.91),
        (0.5, 0.98),
        (0.9, 1.04),
        (0.99, 1.08),
        (1.0, 1.2),
    ]
    .iter()
    .map(|&(q, f)| Quantile { q, ns: center * f })
    .collect()
}

fn row(name: &str, ns: f64) -> MeasuredRow {
    MeasuredRow {
        name: name.into(),
        samples: 240,
        dropped: 3,
        median_ns: Some(ns),
        mad_ns: Some(ns * 0.01),
        min_ns: Some(ns * 0.9),
        max_ns: Some(ns * 1.3),
        cycles_est: Some(ns * 3.0),
        outliers: 4,
        unstable: false,
        checksum: Some((1000, 499500)),
        percentiles: percentiles(ns),
        histogram: Vec::new(),
        buckets: buckets(ns),
        counters: None,
    }
}

fn compared() -> Measurement {
    Measurement {
        rows: vec![row("sum.hot (jit)", 0.74), row("sum.hot (interp)", 68.5)],
        comparisons: vec![MeasuredComparison {
            a: "sum.hot (jit)".into(),
            b: "sum.hot (interp)".into(),
            verdict: "slower".into(),
            ratio: Some(92.1),
            low: Some(90.5),
            high: Some(95.7),
            band: 0.02,
            explanation: "slower: 92.1x".into(),
            diff_ns: Some((67.8, 67.5, 68.0)),
        }],
        iters: 37924,
        rounds: 116,
        stopped: "budget".into(),
        elapsed_s: 1.0,
        cpu: Some(1),
        pin_note: None,
        timer: "tsc".into(),
        no_counters: Some("virtual machine without PMU (perf_event_open: ENOENT)".into()),
    }
}

/// A measured host_call ladder (figures of the shape this machine gives).
fn ladder_report() -> Report {
    let ladder = hotlab::ladder::resolve("host_call").unwrap();
    let mut rows = vec![ReportRow {
        step: ladder.steps[0].title.clone(),
        layer: "native".into(),
        build: None,
        path: "native".into(),
        total_ns: Some(1.52),
        previous: None,
        adds: None,
        adds_cycles: None,
        ratio: None,
        verdict: None,
        cycles: Some(4.6),
        instructions: 0,
        executed: None,
        checksum_ok: true,
        fault: None,
        why: None,
    }];
    let adds = [0.31, 0.02, 0.45, 2.10, 0.60];
    for (i, step) in ladder.steps.iter().enumerate().skip(1) {
        for (b, build) in [Build::Jit, Build::Aot].into_iter().enumerate() {
            let a = adds[i - 1] * if b == 0 { 1.0 } else { 0.8 };
            let total = 1.52 + adds[..i].iter().sum::<f64>() * if b == 0 { 1.0 } else { 0.8 };
            let adds = if a < 0.05 {
                AbsVerdict::NoCostResolved {
                    within: Picos(40.0),
                }
            } else {
                AbsVerdict::Adds {
                    diff: Picos(a * 1e3),
                    low: Picos(a * 1e3 - 30.0),
                    high: Picos(a * 1e3 + 30.0),
                }
            };
            let ratio = total / 1.52;
            rows.push(ReportRow {
                step: step.title.clone(),
                layer: step.layer.to_string(),
                build: Some(build),
                path: format!("{build} path {i}"),
                total_ns: Some(total),
                previous: Some(rows.len().saturating_sub(2)),
                adds: Some(adds),
                adds_cycles: None,
                ratio: Some((ratio, ratio - 0.02, ratio + 0.02)),
                verdict: Some(if ratio < 1.02 {
                    Verdict::Equal
                } else {
                    Verdict::Slower
                }),
                cycles: Some(total * 3.0),
                instructions: 10 + i * 4,
                executed: None,
                checksum_ok: true,
                fault: None,
                why: None,
            });
        }
    }
    Report {
        ladder: "host_call".into(),
        header: Vec::new(),
        rows,
        band: 0.02,
        bench_agreement: None,
        body: None,
    }
}

fn code() -> Vec<CodeView> {
    let ladder = hotlab::ladder::resolve("host_call").unwrap();
    ladder
        .steps
        .iter()
        .enumerate()
        .skip(1)
        .map(|(i, s)| CodeView {
            title: format!("jit {} — {} instructions", s.title, 10 + i * 4),
            key: s.title.clone(),
            listing: vec![
                "r1_loop:".into(),
                "    push rbp".into(),
                "    mov rbp, rsp".into(),
                "    mov rax, qword ptr [rdi+0x10]".into(),
                "    call rax".into(),
                "    pop rbp".into(),
                "    ret".into(),
            ],
            diff: (i > 1).then(|| {
                (
                    vec![
                        " r1_loop:".into(),
                        "     push rbp".into(),
                        "+    mov rcx, qword ptr [rdi+0x18]".into(),
                        "+    test rcx, rcx".into(),
                        "-    nop".into(),
                        "     call rax".into(),
                    ],
                    2,
                    1,
                )
            }),
            instructions: 10 + i * 4,
            addressed: None,
        })
        .collect()
}

fn ladder_app(theme: Theme) -> App {
    let ladder = hotlab::ladder::resolve("host_call").unwrap();
    let mut app = App::new(theme, ladder, "snippet.hot", DEFAULT_SNIPPET);
    app.table = TableModel::from_report(
        &ladder_report(),
        "300 rounds of 20000 iterations, 3.00 s, stopped by budget",
    );
    app.code = code();
    app.selected = 3;
    app.status.cpu = Some(1);
    app.status.timer = Some("tsc 9.8 ns".into());
    app.status.health = vec!["hypervisor".into()];
    app
}

fn compare_app() -> App {
    let ladder = hotlab::ladder::resolve("host_call").unwrap();
    let text = "fn run(n: i64) -> i64 {\n    var s = 0\n    for i in 0..n {\n        s += i\n    }\n    return s\n}\n";
    let mut app = App::new(Theme::default_theme(), ladder, "sum.hot", text);
    app.table = TableModel::from_measured(&compared(), ":compare interp");
    app.selected = 1;
    app
}

fn screen(app: &App, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| panes::render(f, app)).unwrap();
    t
}

fn pane(w: u16, h: u16, draw: impl FnOnce(Rect, &mut Buffer)) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| {
        let area = f.area();
        draw(area, f.buffer_mut())
    })
    .unwrap();
    t
}

#[test]
fn whole_screen_ladder_80x24() {
    insta::assert_snapshot!(screen(&ladder_app(Theme::default_theme()), 80, 24).backend());
}

#[test]
fn whole_screen_ladder_140x40() {
    insta::assert_snapshot!(screen(&ladder_app(Theme::default_theme()), 140, 40).backend());
}

#[test]
fn whole_screen_compare_80x24() {
    insta::assert_snapshot!(screen(&compare_app(), 80, 24).backend());
}

#[test]
fn whole_screen_compare_140x40() {
    insta::assert_snapshot!(screen(&compare_app(), 140, 40).backend());
}

#[test]
fn table_pane() {
    let app = ladder_app(Theme::default_theme());
    insta::assert_snapshot!(pane(90, 16, |a, b| render_table(&app, a, b)).backend());
}

#[test]
fn histogram_pane() {
    let app = compare_app();
    insta::assert_snapshot!(pane(60, 14, |a, b| render_histogram(&app, a, b, false)).backend());
}

#[test]
fn counters_pane_without_pmu() {
    let app = compare_app();
    let t = pane(60, 9, |a, b| render_counters(&app, a, b, false));
    insta::assert_snapshot!(t.backend());
}

#[test]
fn counters_pane_with_pmu() {
    let mut app = compare_app();
    app.table.rows[1].counters = Some(serde_json::json!({
        "per_op": [["cycles", 205.1], ["instructions", 610.0], ["branches", 120.0],
                   ["branch_misses", 0.02]],
        "ipc": 2.97, "samples": 116, "unscheduled_samples": 0, "multiplexed": false
    }));
    insta::assert_snapshot!(pane(60, 10, |a, b| render_counters(&app, a, b, false)).backend());
}

#[test]
fn code_pane_diff_and_listing() {
    let mut app = ladder_app(Theme::default_theme());
    app.selected = 3; // jit entry check: has a diff from slot read
    insta::assert_snapshot!(
        "code_diff",
        pane(60, 10, |a, b| render_code(&app, a, b, false)).backend()
    );
    app.code_diff = false;
    insta::assert_snapshot!(
        "code_listing",
        pane(60, 10, |a, b| render_code(&app, a, b, false)).backend()
    );
}

#[test]
fn editor_pane_with_a_diagnostic() {
    let ladder = hotlab::ladder::resolve("host_call").unwrap();
    let text = "fn call() -> i64 {\n    return true\n}\n";
    let mut app = App::new(Theme::default_theme(), ladder, "bad.hot", text);
    app.focus = Pane::Editor;
    let t = pane(50, 7, |a, b| panes::render_editor(&app, a, b));
    insta::assert_snapshot!(t.backend());
    // `true` (line 2, after the 4-space indent and `return `) is drawn in the error colour.
    let buf = t.backend().buffer();
    let x = (1 + 3 + 4 + 7) as u16; // border, "2 " gutter of width 2 + space, indent, `return `
    let cell = &buf[(x, 2)];
    assert_eq!(cell.symbol(), "t");
    assert_eq!(cell.fg, app.theme.colors.error);
    assert!(cell.modifier.contains(ratatui::style::Modifier::UNDERLINED));
}

#[test]
fn help_overlay() {
    let mut app = ladder_app(Theme::default_theme());
    app.help = true;
    insta::assert_snapshot!(screen(&app, 80, 24).backend());
}

#[test]
fn a_popup_taller_than_the_screen_scrolls() {
    let mut app = ladder_app(Theme::default_theme());
    let text: String = (1..=40).map(|i| format!("output line {i}\n")).collect();
    app.message = Some(hotlab::tui::app::Message { text, error: false });
    app.popup = true;
    app.popup_scroll = 5;
    let t = screen(&app, 80, 24);
    let shown = format!("{:?}", t.backend());
    assert!(shown.contains("output 6-27 of 40"), "{shown}");
    assert!(shown.contains("output line 6 "), "{shown}");
    assert!(!shown.contains("output line 5 "), "{shown}");
    // Scrolled past the end: the last screenful shows.
    app.popup_scroll = 39;
    let shown = format!("{:?}", screen(&app, 80, 24).backend());
    assert!(shown.contains("output 19-40 of 40"), "{shown}");
    assert!(shown.contains("output line 40"), "{shown}");
}

#[test]
fn verdicts_are_coloured_by_meaning() {
    let app = compare_app();
    let t = screen(&app, 80, 24);
    let buf = t.backend().buffer();
    let find = |word: &str| {
        let area = buf.area;
        for y in 0..area.height {
            let line: String = (0..area.width).map(|x| buf[(x, y)].symbol()).collect();
            if let Some(i) = line.find(word) {
                let x = line[..i].chars().count() as u16;
                return buf[(x, y)].fg;
            }
        }
        panic!("{word} not on screen");
    };
    assert_eq!(find("slower"), app.theme.colors.regression);
    assert_eq!(find("baseline"), app.theme.colors.muted);
}

#[test]
fn plain_theme_draws_no_colour() {
    let t = screen(&ladder_app(Theme::plain()), 80, 24);
    let buf = t.backend().buffer();
    for cell in buf.content() {
        assert_eq!(cell.fg, ratatui::style::Color::Reset, "{cell:?}");
        assert_eq!(cell.bg, ratatui::style::Color::Reset, "{cell:?}");
    }
}

#[test]
fn the_light_theme_paints_its_background_on_every_cell() {
    // Issue #19: `--theme light` left the terminal's background (ESC[49m) under #202020 text:
    // dark on dark on a dark terminal. Every cell, gaps, borders and overlays too, lies on the
    // theme's background unless it has its own (the selection, the status line).
    let theme = Theme::load("light").unwrap();
    let bg = theme.colors.background;
    assert_ne!(bg, ratatui::style::Color::Reset);
    let own = [theme.colors.selection_bg, theme.colors.status_bg];
    for help in [false, true] {
        let mut app = ladder_app(theme.clone());
        app.help = help;
        for (w, h) in [(80, 24), (140, 40)] {
            let t = screen(&app, w, h);
            let buf = t.backend().buffer();
            for cell in buf.content() {
                assert!(
                    cell.bg == bg || own.contains(&cell.bg),
                    "help {help} {w}x{h}: {cell:?}"
                );
            }
            let text = buf
                .content()
                .iter()
                .filter(|c| c.fg == theme.colors.text)
                .count();
            assert!(text > 0, "some ordinary text is drawn");
        }
    }
    // The dark theme keeps the terminal's own background.
    let t = screen(&ladder_app(Theme::default_theme()), 80, 24);
    assert!(
        t.backend()
            .buffer()
            .content()
            .iter()
            .any(|c| c.bg == ratatui::style::Color::Reset)
    );
}

#[test]
fn tiny_terminals_do_not_panic() {
    for (w, h) in [(1, 1), (10, 5), (30, 8), (80, 10), (200, 60)] {
        screen(&ladder_app(Theme::default_theme()), w, h);
        screen(&compare_app(), w, h);
    }
}

/// A finished ladder job as the session thread reports it: its record keeps each row's
/// distribution from the job's last live snapshot (the report carries none).
fn ladder_done(rows: Vec<hotlab::session::RowDistribution>) -> hotlab::session::JobRecord {
    let report = serde_json::to_value(ladder_report()).unwrap();
    hotlab::session::JobRecord {
        command: ":ladder host_call".into(),
        backend: hotlab::session::Backend::Jit,
        snippets: vec!["snippet.hot".into()],
        finished: 0,
        output: hotlab::session::JobReport::Ladder(hotlab::session::LadderResult {
            ladder: "host_call".into(),
            method: "snippet.hot".into(),
            note: None,
            header: Vec::new(),
            table: hotlab::export::Table::new("ladder", &["step"]),
            all_ok: true,
            report,
        }),
        rows,
        stopped: None,
    }
}

fn live_of(report: &Report) -> hotlab::session::LiveSnapshot {
    hotlab::session::LiveSnapshot {
        phase: "collect".into(),
        rounds: 40,
        elapsed_ms: 900.0,
        budget_ms: Some(1000.0),
        iters: 2000,
        variants: report
            .rows
            .iter()
            .map(|r| hotlab::session::LiveContestant {
                name: match r.build {
                    Some(b) => format!("{b} {}", r.step),
                    None => r.step.clone(),
                },
                samples: 456,
                dropped: 2,
                median_ns: r.total_ns,
                histogram: Vec::new(),
                buckets: buckets(r.total_ns.unwrap_or(1.0)),
                percentiles: percentiles(r.total_ns.unwrap_or(1.0)),
            })
            .collect(),
    }
}

fn histogram_text(app: &App) -> String {
    let t = pane(60, 14, |area, buf| render_histogram(app, area, buf, false));
    let b = t.backend().buffer();
    (0..b.area.height)
        .map(|y| {
            (0..b.area.width)
                .map(|x| b[(x, y)].symbol().to_string())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_histogram_stays_after_a_ladder_ends_and_after_resume() {
    use hotlab::tui::threads::FromSession;
    let ladder = hotlab::ladder::resolve("host_call").unwrap();
    let mut app = App::new(
        Theme::default_theme(),
        ladder,
        "snippet.hot",
        DEFAULT_SNIPPET,
    );
    let effects = app.on_key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::F(5),
        crossterm::event::KeyModifiers::NONE,
    ));
    assert!(!effects.is_empty());
    let live = live_of(&ladder_report());
    app.on_session(FromSession::Progress(live.clone()));
    app.selected = 3;
    let during = histogram_text(&app);
    assert!(during.contains("n=456"), "{during}");
    // The job ends: the session recorded each row's distribution from the last snapshot.
    let kept: Vec<_> = live
        .variants
        .iter()
        .map(hotlab::session::RowDistribution::from_live)
        .collect();
    let record = ladder_done(kept);
    let state = hotlab::session::SessionState::default();
    app.on_session(FromSession::Done {
        line: ":ladder host_call".into(),
        texts: Vec::new(),
        error: None,
        quit: false,
        state: Box::new(state.clone()),
        record: Some(Box::new(record.clone())),
    });
    let after = histogram_text(&app);
    assert!(after.contains("n=456"), "{after}");
    assert!(after.contains("p50") && after.contains('█'), "{after}");
    assert!(!after.contains("no samples"), "{after}");
    // --resume: a new app from the record as the session file keeps it.
    let saved: hotlab::session::JobRecord =
        serde_json::from_str(&serde_json::to_string(&record).unwrap()).unwrap();
    assert_eq!(saved.rows.len(), record.rows.len());
    let ladder = hotlab::ladder::resolve("host_call").unwrap();
    let mut resumed = App::new(
        Theme::default_theme(),
        ladder,
        "snippet.hot",
        DEFAULT_SNIPPET,
    );
    resumed.apply_state(&state);
    resumed.apply_record(&saved);
    resumed.selected = 3;
    let text = histogram_text(&resumed);
    assert!(text.contains("n=456") && text.contains('█'), "{text}");
    assert_eq!(
        text.replace(char::is_whitespace, ""),
        after.replace(char::is_whitespace, ""),
        "the same histogram as before the resume"
    );
}

#[test]
fn a_comparison_fills_the_table_even_with_a_ladder_row_selected() {
    use hotlab::tui::threads::FromSession;
    let mut app = ladder_app(Theme::default_theme());
    app.selected = 9;
    app.busy = Some(":compare interp".into());
    let mut live = live_of(&ladder_report());
    live.variants.truncate(2);
    live.variants[0].name = "sum.hot (jit)".into();
    live.variants[1].name = "sum.hot (interp)".into();
    let effects = app.on_session(FromSession::Progress(live));
    assert_eq!(app.table.rows.len(), 2);
    assert!(app.selected < 2, "the selection moved onto the new rows");
    let t = screen(&app, 140, 40);
    let all: String = t
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect();
    assert!(all.contains("sum.hot (interp)"), "{all}");
    // The interp row has no machine code, and says so instead of showing the ladder's.
    app.selected = 1;
    match app.row_code() {
        Some(Err(why)) => assert!(why.contains("interp"), "{why}"),
        other => panic!("{other:?}"),
    }
    // The jit row's code is asked for, once.
    assert_eq!(
        effects,
        [hotlab::tui::app::Effect::FunctionCode(vec![(
            "sum.hot".to_string(),
            "jit".to_string()
        )])]
    );
    assert!(app.missing_functions().is_empty());
}

/// The text of row `y` of a drawn buffer.
fn buffer_line(t: &Terminal<TestBackend>, y: u16) -> String {
    let b = t.backend().buffer();
    (0..b.area.width)
        .map(|x| b[(x, y)].symbol().to_string())
        .collect()
}

#[test]
fn the_histogram_summary_never_cuts_the_sample_count() {
    let mut app = compare_app();
    app.table.rows[1].samples.0 = 2143;
    for w in [24u16, 30, 38, 60] {
        let t = pane(w, 14, |a, b| render_histogram(&app, a, b, false));
        let line = buffer_line(&t, 1);
        assert!(line.contains("n=2143"), "{w}: {line:?}");
    }
}

/// The note counts every round; the histogram (and the median) only the samples the OS did not
/// disturb: a row with dropped samples says of how many rounds its histogram is, so `562 rounds`
/// in the table and the histogram's count describe the same rounds (#19).
#[test]
fn the_histogram_count_says_of_how_many_rounds_it_is() {
    let mut m = compared();
    m.rounds = 562;
    m.rows[0].samples = 562;
    m.rows[0].dropped = 0;
    m.rows[1].samples = 440;
    m.rows[1].dropped = 122;
    let mut app = compare_app();
    app.table = TableModel::from_measured(&m, ":compare interp");
    let table = pane(80, 8, |a, b| render_table(&app, a, b));
    let note: Vec<String> = (0..8).map(|y| buffer_line(&table, y)).collect();
    assert!(note.iter().any(|l| l.contains("562 rounds")), "{note:#?}");
    for (selected, count) in [(1, "n=440 of 562 "), (0, "n=562 ")] {
        app.selected = selected;
        let t = pane(46, 14, |a, b| render_histogram(&app, a, b, false));
        let line = buffer_line(&t, 1);
        assert!(line.contains(count), "{selected}: {line:?}");
    }
}

/// A check's or a bench's twin row shows the twin's machine code (rustc's, from this binary)
/// under a title that names it with its size, as a script row's does (#19).
#[test]
fn a_twin_row_shows_the_twins_code_under_its_name() {
    let mut app = compare_app();
    let twin = |label: &str| hotlab::tui::model::TableRow {
        label: label.into(),
        ok: true,
        ..Default::default()
    };
    app.table.rows = vec![
        twin("twin int_loop"),
        twin("twin field_loop (jit)"),
        twin("twin no_such_twin"),
    ];
    app.request_missing_code();
    for (selected, name) in [(0, "int_loop"), (1, "field_loop")] {
        app.selected = selected;
        let code = app.selected_code().expect("the twin's code");
        assert!(code.instructions > 0, "{name}");
        let t = pane(90, 12, |a, b| render_code(&app, a, b, false));
        let title = buffer_line(&t, 0);
        assert!(
            title.contains(&format!("code: native {name} — "))
                && title.contains(&format!("{} instructions", code.instructions)),
            "{title:?}"
        );
        let body: Vec<String> = (1..12).map(|y| buffer_line(&t, y)).collect();
        let first = code.listing.iter().find(|l| !l.trim().is_empty()).unwrap();
        assert!(body.iter().any(|l| l.contains(first.trim())), "{body:#?}");
    }
    app.selected = 2;
    let t = pane(90, 6, |a, b| render_code(&app, a, b, false));
    let text: Vec<String> = (0..6).map(|y| buffer_line(&t, y)).collect();
    assert!(text[0].contains("twin no_such_twin"), "{text:#?}");
    assert!(text[1].contains("no twin named no_such_twin"), "{text:#?}");
}

#[test]
fn table_labels_get_the_room_and_marks_keep_columns_aligned() {
    let mut app = ladder_app(Theme::default_theme());
    app.table.rows[1].label = "int_loop.hot (jit-opt)".into();
    let adds = app.table.rows[2].adds.expect("a rung with adds");
    app.table.rows[2].why = Some(hotlab::ladder::report::Saving::WithinNoise {
        saved_ns: 0.1,
        band_ns: 0.2,
    });
    app.table.rows[3].adds = Some(adds);
    app.table.rows[3].why = None;
    // The table pane of a 120-column screen (72 cells inside) and a wider one.
    let t = pane(74, 16, |a, b| render_table(&app, a, b));
    let narrow: Vec<String> = (0..16).map(|y| buffer_line(&t, y)).collect();
    assert!(
        narrow.iter().any(|l| l.contains("native virtual call ")),
        "{narrow:#?}"
    );
    let t = pane(100, 16, |a, b| render_table(&app, a, b));
    let text: Vec<String> = (0..16).map(|y| buffer_line(&t, y)).collect();
    assert!(
        text.iter().any(|l| l.contains("int_loop.hot (jit-opt)")),
        "{text:#?}"
    );
    // The ratio column (`1.23x`, right-aligned) ends at the same cell on the marked row and
    // the unmarked one.
    let ratio_end = |l: &str| {
        let cells: Vec<char> = l.chars().collect();
        (1..cells.len()).find(|&i| cells[i] == 'x' && cells[i - 1].is_ascii_digit())
    };
    let (marked, plain) = (&text[4], &text[5]);
    assert!(marked.contains('*') && !plain.contains('*'), "{text:#?}");
    assert!(ratio_end(marked).is_some(), "{text:#?}");
    assert_eq!(ratio_end(marked), ratio_end(plain), "{text:#?}");
}

/// Every row's cells stay in their columns, whatever their numbers: a CI that rounds to zero
/// (`< ±0.001`) beside a four-digit difference, a ratio over 1000x (#19: such an adds cell
/// was two cells wider than its column and pushed the row's ratio and verdict out of line).
#[test]
fn every_table_row_keeps_its_cells_in_their_columns() {
    let mut app = compare_app();
    let mut m = compared();
    m.rows.push(row("sum.hot (object)", 1234.5));
    m.comparisons.push(MeasuredComparison {
        a: "sum.hot (interp)".into(),
        b: "sum.hot (object)".into(),
        verdict: "slower".into(),
        ratio: Some(1668.2),
        low: Some(1668.1),
        high: Some(1668.3),
        band: 0.02,
        explanation: "slower".into(),
        diff_ns: Some((1166.0, 1165.9996, 1166.0004)),
    });
    m.comparisons.push(MeasuredComparison {
        a: "sum.hot (jit)".into(),
        ..m.comparisons[1].clone()
    });
    app.table = TableModel::from_measured(&m, ":compare object");
    for w in [74u16, 80, 120] {
        let t = pane(w, 8, |a, b| render_table(&app, a, b));
        let lines: Vec<String> = (0..8).map(|y| buffer_line(&t, y)).collect();
        assert!(lines[4].contains("< ±0.001"), "{w}: {lines:#?}");
        assert!(lines[4].contains("1668.20x"), "{w}: {lines:#?}");
        // Cells, not bytes: `±` is one cell.
        let ratio_end = lines[1].chars().collect::<String>().find("ratio").unwrap();
        let header_end = lines[1][..ratio_end].chars().count() + "ratio".len();
        for row in &lines[2..5] {
            let cells: Vec<char> = row.chars().collect();
            let end = (1..cells.len())
                .find(|&i| cells[i] == 'x' && cells[i - 1].is_ascii_digit())
                .map(|i| i + 1);
            assert_eq!(end, Some(header_end), "{w}: {lines:#?}");
            // The verdict starts one cell after it.
            assert_eq!(cells[header_end], ' ', "{w}: {row:?}");
            assert!(cells[header_end + 1].is_alphabetic(), "{w}: {row:?}");
        }
    }
}

#[test]
fn histogram_marks_that_share_a_line_are_not_cut() {
    let mut app = compare_app();
    // All the samples in one bucket: p50, p90 and p99 share its line.
    let r = &mut app.table.rows[1];
    r.buckets = vec![HistogramBucket {
        lo_ns: 1.0,
        hi_ns: 2.0,
        count: 100,
    }];
    r.percentiles = percentiles(1.5);
    let t = pane(42, 8, |a, b| render_histogram(&app, a, b, false));
    let text: Vec<String> = (0..8).map(|y| buffer_line(&t, y)).collect();
    assert!(text.iter().any(|l| l.contains("p50 p90 p99")), "{text:#?}");
}

/// A method that does work gets a body row its plan did not have: while live, the row goes in
/// after the native row, named as the ladder's step, and the planned rows keep theirs.
#[test]
fn a_live_body_row_takes_its_place_in_the_planned_table() {
    let ladder = hotlab::ladder::resolve("host_call").unwrap();
    let mut t = TableModel::plan(&ladder, &vec![true; ladder.steps.len()], &["jit", "aot"]);
    let contestant = |name: &str| hotlab::session::LiveContestant {
        name: name.into(),
        samples: 10,
        dropped: 0,
        median_ns: Some(2.0),
        histogram: Vec::new(),
        buckets: Vec::new(),
        percentiles: Vec::new(),
    };
    let names = [
        "native virtual call",
        "jit method body",
        "aot method body",
        "jit slot read",
        "aot slot read",
    ];
    let live = hotlab::session::LiveSnapshot {
        phase: "collect".into(),
        rounds: 4,
        elapsed_ms: 100.0,
        budget_ms: Some(1000.0),
        iters: 100,
        variants: names.iter().map(|n| contestant(n)).collect(),
    };
    t.apply_live(&live, "ladder host_call");
    let labels: Vec<&str> = t.rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels[..5], names);
    let body = &t.rows[1];
    assert_eq!(body.step.as_deref(), Some("method body"));
    assert_eq!(body.layer.as_deref(), Some("body"));
    assert_eq!(body.build.as_deref(), Some("jit"));
    assert_eq!(t.rows[3].step.as_deref(), Some("slot read"));
    // The plan's other rows stay, still waiting for numbers.
    assert!(t.rows.iter().any(|r| r.label == "aot call depth"));
}
