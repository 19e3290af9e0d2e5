//! The ladder's waterfall: bars that float on the rungs before them in their build, as long as
//! what each rung adds, with its CI; drawn for the terminal and as an SVG file
//! (`hotlab ladder --format svg`).

use hotlab::tui::model::{Adds, TableModel, TableRow};
use hotlab::tui::waterfall::{Waterfall, svg, text_lines};

fn row(step: &str, build: Option<&str>, total: f64, adds: Option<(f64, f64, f64)>) -> TableRow {
    TableRow {
        label: match build {
            Some(b) => format!("{b} {step}"),
            None => step.into(),
        },
        step: Some(step.into()),
        build: build.map(str::to_string),
        total_ns: Some(total),
        adds: adds.map(|(ns, low, high)| Adds { ns, low, high }),
        ok: true,
        ..TableRow::default()
    }
}

fn table() -> TableModel {
    let mut t = TableModel::plan(
        &hotlab::ladder::resolve("host_call").unwrap(),
        &[true; 6],
        &["jit", "aot"],
    );
    t.title = "ladder host_call".into();
    t.rows = vec![
        row("native virtual call", None, 1.5, None),
        row("slot read", Some("jit"), 2.0, Some((0.5, 0.4, 0.6))),
        row("slot read", Some("aot"), 1.8, Some((0.3, 0.2, 0.4))),
        row("entry check", Some("jit"), 2.1, Some((0.1, -0.05, 0.2))),
        row("entry check", Some("aot"), 2.6, Some((0.8, 0.7, 0.9))),
    ];
    t
}

#[test]
fn bars_float_on_the_rungs_before_them() {
    let w = Waterfall::from_table(&table()).expect("a measured ladder");
    assert_eq!(w.steps, ["native virtual call", "slot read", "entry check"]);
    assert_eq!(w.builds, ["jit", "aot"]);
    let bar = |step: &str, build: Option<&str>| {
        w.bars
            .iter()
            .find(|b| b.step == step && b.build.as_deref() == build)
            .unwrap()
            .clone()
    };
    assert_eq!(bar("native virtual call", None).to(), 1.5);
    assert_eq!(bar("slot read", Some("jit")).from, 1.5);
    assert_eq!(bar("entry check", Some("jit")).from, 2.0);
    assert!((bar("entry check", Some("aot")).from - 1.8).abs() < 1e-9);
    assert!(
        !bar("entry check", Some("jit")).resolved(),
        "its CI includes 0"
    );
    assert!(bar("entry check", Some("aot")).resolved());
    // The terminal's lines: one per bar, fitting the width, with what each adds.
    let lines = text_lines(&w, 70);
    assert_eq!(lines.len(), 5);
    assert!(
        lines.iter().all(|(_, l, _)| l.chars().count() <= 70),
        "{lines:?}"
    );
    assert!(lines[1].1.contains("+0.50 ±0.10"), "{lines:?}");
    assert!(lines[0].1.contains("1.50 floor"), "{lines:?}");
    // A plan (nothing measured) has no waterfall.
    let plan = TableModel::plan(
        &hotlab::ladder::resolve("host_call").unwrap(),
        &[true; 6],
        &["jit", "aot"],
    );
    assert!(Waterfall::from_table(&plan).is_none());
}

#[test]
fn the_svg_has_a_bar_per_rung_and_build_with_whiskers() {
    let w = Waterfall::from_table(&table()).unwrap();
    let doc = svg(&w, 960, 540).expect("drawn");
    assert!(doc.starts_with("<svg"), "{}", &doc[..80.min(doc.len())]);
    for name in [
        "native virtual call",
        "slot read",
        "entry check",
        "jit",
        "aot",
        "+0.50",
    ] {
        assert!(doc.contains(name), "{name} in the SVG");
    }
    // 5 bars plus the legend's 3 swatches and the background.
    assert!(doc.matches("<rect").count() >= 8, "{doc}");
    // Whiskers: 3 lines per measured rung.
    assert!(doc.matches("<polyline").count() + doc.matches("<path").count() >= 12);
}

#[test]
fn hotlab_ladder_writes_an_svg() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("ladder.svg");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_hotlab"))
        .args(["ladder", "--time", "0.3", "--format", "svg", "-o"])
        .arg(&out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("runs");
    assert!(status.success(), "{status:?}");
    let doc = std::fs::read_to_string(&out).expect("written");
    assert!(doc.starts_with("<svg") && doc.trim_end().ends_with("</svg>"));
    assert!(doc.contains("slot read") && doc.contains("ladder host_call"));
}

#[test]
fn a_rung_that_saves_goes_left_from_where_the_rungs_before_it_ended() {
    let mut t = table();
    t.rows = vec![
        row("native virtual call", None, 1.0, None),
        row("slot read", Some("jit"), 5.0, Some((4.0, 3.9, 4.1))),
        row("entry check", Some("jit"), 3.64, Some((-1.36, -1.4, -1.3))),
    ];
    let w = Waterfall::from_table(&t).unwrap();
    let lines = text_lines(&w, 60);
    let (up, down) = (&lines[1].1, &lines[2].1);
    assert!(down.contains("◀") && !down.contains('█'), "{lines:?}");
    assert!(!up.contains("◀"), "{lines:?}");
    // The saving ends where the rung before it ended, and starts further left.
    let cells = |l: &str| l.chars().collect::<Vec<_>>();
    let bar_end = |l: &str| cells(l).iter().rposition(|c| "█▏▎▍▌▋▊▉▒".contains(*c));
    let bar_start = |l: &str| cells(l).iter().position(|c| "█◀".contains(*c));
    assert_eq!(bar_end(down), bar_end(up), "{lines:?}");
    assert!(bar_start(down) > bar_start(up), "{lines:?}");
    assert!(down.contains("-1.36 ±0.05"), "{lines:?}");
}

#[test]
fn the_ci_is_never_cut_the_rung_names_shorten_first() {
    let mut t = table();
    t.rows = vec![
        row("native virtual call", None, 1.0, None),
        row("slot read", Some("jit"), 1.27, Some((0.27, 0.265, 0.275))),
    ];
    let w = Waterfall::from_table(&t).unwrap();
    for width in [30, 40, 60] {
        for (_, l, _) in text_lines(&w, width) {
            assert!(l.chars().count() <= width, "{width}: {l:?}");
        }
        let lines = text_lines(&w, width);
        assert!(lines[1].1.ends_with("+0.27 ±0.005"), "{width}: {lines:?}");
    }
}

/// In a narrow pane a rung whose title does not fit is named by its layer (`detached`,
/// `catch`), not by a cut title (`detached ch…`), and no line is wider than the pane.
#[test]
fn narrow_panes_name_rungs_by_their_layer() {
    let ladder = hotlab::ladder::resolve("host_call").unwrap();
    let mut t = table();
    t.rows = ladder
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut r = if i == 0 {
                row(&s.title, None, 1.6, None)
            } else {
                row(
                    &s.title,
                    Some("jit"),
                    1.6 + 0.27 * i as f64,
                    Some((0.27, 0.27, 0.27)),
                )
            };
            r.layer = Some(s.layer.to_string());
            r
        })
        .collect();
    let w = Waterfall::from_table(&t).unwrap();
    let wide = text_lines(&w, 100);
    assert!(wide[3].1.starts_with("detached check "), "{wide:?}");
    for width in [34, 40] {
        let lines = text_lines(&w, width);
        for (_, l, _) in &lines {
            assert!(l.chars().count() <= width, "{width}: {l:?}");
            assert!(!l.contains('…'), "{width}: a cut name: {l:?}");
        }
        let names: Vec<&str> = lines
            .iter()
            .map(|(_, l, _)| l.split_whitespace().next().unwrap())
            .collect();
        assert_eq!(
            names,
            ["native", "slot", "entry", "detached", "catch", "depth"],
            "{width}: {lines:?}"
        );
    }
}
