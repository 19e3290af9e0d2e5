//! Two runs row by row: a saved baseline (or an older export) against a new run, for
//! `hotlab compare OLD.json NEW.json` and `--baseline NAME`.
//!
//! A row's figure is the ratio its run measured interleaved (a ladder rung over native, a bench
//! cell over its twin, a check's script over the other side), so machine-wide drift between
//! the runs mostly cancels. The change is new / old. Its CI combines, in log space, both runs'
//! CIs and a run-to-run term: the same unchanged case reads differently in different
//! processes (code placement, the CPU it lands on), which no in-run CI covers. The verdict
//! then reads as `check`'s does: `equal` when the CI lies inside the band, `slower`/`faster`
//! when it excludes 1.0, else `unresolved`.

use serde_json::{Value, json};

use super::Table;

/// One row of a run: its key and its ratio with CI.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// What identifies the row across runs (`jit slot, read`, `jit int_loop .hot`).
    pub key: String,
    /// The in-run ratio.
    pub ratio: f64,
    /// Its CI (equal to `ratio` when the run gives none, as `bench`'s medians).
    pub low: f64,
    /// Its CI.
    pub high: f64,
}

/// The rows of an export (`ladder`, `bench` or `check` JSON, as `--format json`, `--json` or
/// `check --json` writes it), or why it is not one.
pub fn run_rows(doc: &Value) -> Result<(String, Vec<RunRow>), String> {
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let ratio = |v: &Value| {
        let r = v.get("ratio").and_then(Value::as_f64)?;
        let lo = v.get("ratio_low").and_then(Value::as_f64).unwrap_or(r);
        let hi = v.get("ratio_high").and_then(Value::as_f64).unwrap_or(r);
        (r > 0.0 && lo > 0.0 && hi > 0.0).then_some((r, lo, hi))
    };
    let rows = doc.get("rows").and_then(Value::as_array);
    let mut out = Vec::new();
    match kind {
        "ladder" => {
            for r in rows.into_iter().flatten() {
                let build = text(r, "build");
                if build.is_empty() {
                    continue;
                }
                if let Some((ratio, low, high)) = ratio(r) {
                    out.push(RunRow {
                        key: format!("{build} {}", text(r, "step")),
                        ratio,
                        low,
                        high,
                    });
                }
            }
        }
        "bench" => {
            for r in rows.into_iter().flatten() {
                if text(r, "status") != "ok" {
                    continue;
                }
                if let Some((ratio, low, high)) = ratio(r) {
                    out.push(RunRow {
                        key: format!(
                            "{} {} .{}",
                            text(r, "backend"),
                            text(r, "case"),
                            text(r, "mode")
                        ),
                        ratio,
                        low,
                        high,
                    });
                }
            }
        }
        "check" => {
            if let Some((ratio, low, high)) = ratio(doc) {
                out.push(RunRow {
                    key: format!(
                        "{} vs {} on {}",
                        text(doc, "file"),
                        text(doc, "against"),
                        text(doc, "backend")
                    ),
                    ratio,
                    low,
                    high,
                });
            }
        }
        _ if doc.get("error").is_some() => {
            return Err("it holds an error, not a run".into());
        }
        _ => {
            return Err(
                "not a hotlab export (`kind` is none of ladder, bench, check; write one with \
                 `ladder --format json`, `bench --json FILE` or `check --json`)"
                    .into(),
            );
        }
    }
    Ok((kind.to_string(), out))
}

/// How two runs are compared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompareOptions {
    /// The equivalence band as a fraction (0.08 = ±8%).
    pub band: f64,
    /// The run-to-run term as a fraction: the 95% half-width, in log space, of an unchanged
    /// row's ratio across processes.
    pub spread: f64,
}

/// The default band of a comparison across runs: wider than `check`'s ±2%, since the runs are
/// not interleaved.
pub const DEFAULT_BAND_PCT: f64 = 8.0;

/// The default run-to-run term: the ±5% an unchanged row's in-run ratio moved between
/// processes on the development machine (see docs/cli.md).
pub const DEFAULT_SPREAD_PCT: f64 = 5.0;

impl CompareOptions {
    /// The options from percentages as the command line gives them (`hotlab compare --band
    /// --run-spread`, `--baseline NAME --baseline-band --run-spread`), or why they are out of
    /// range; `band_flag` is the band's option name, for the message.
    pub fn from_pct(band_pct: f64, spread_pct: f64, band_flag: &str) -> Result<Self, String> {
        if !(band_pct > 0.0 && band_pct < 100.0) {
            return Err(format!(
                "{band_flag} {band_pct} is out of range: give a percentage in (0, 100), e.g. \
                 {band_flag} {DEFAULT_BAND_PCT}"
            ));
        }
        if !(0.0..100.0).contains(&spread_pct) {
            return Err(format!(
                "--run-spread {spread_pct} is out of range: give a percentage in [0, 100), e.g. \
                 --run-spread {DEFAULT_SPREAD_PCT}"
            ));
        }
        Ok(CompareOptions {
            band: band_pct / 100.0,
            spread: spread_pct / 100.0,
        })
    }
}

/// The help of the band option of a comparison across runs (`compare --band`,
/// `--baseline-band`).
pub const BAND_HELP: &str = "Equivalence band of the comparison across runs, in percent: `equal` needs the \
     change's CI inside ±PCT%";

/// The help of `--run-spread`.
pub const SPREAD_HELP: &str = "The run-to-run term, in percent: how far an unchanged row's ratio moves between two \
     processes (two runs are not interleaved); raise it on a loaded machine (docs/cli.md)";

/// One compared row.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The row's key.
    pub key: String,
    /// The old run's ratio.
    pub old: f64,
    /// The new run's.
    pub new: f64,
    /// new / old.
    pub change: f64,
    /// Its CI.
    pub low: f64,
    /// Its CI.
    pub high: f64,
    /// `equal`, `slower`, `faster` or `unresolved`.
    pub verdict: &'static str,
}

/// The comparison of two runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The rows both runs have, in the new run's order.
    pub changes: Vec<Change>,
    /// Rows only the old run has.
    pub gone: Vec<String>,
    /// Rows only the new run has.
    pub added: Vec<String>,
    /// The options used.
    pub options: CompareOptions,
}

impl Comparison {
    /// Whether a row got slower (`compare` and `--baseline` exit 3).
    pub fn slower(&self) -> bool {
        self.changes.iter().any(|c| c.verdict == "slower")
    }
}

/// Compare `new` with `old` row by row.
pub fn compare(old: &[RunRow], new: &[RunRow], options: CompareOptions) -> Comparison {
    let half = |r: &RunRow| (r.high.ln() - r.low.ln()).abs() / 2.0;
    let spread = (1.0 + options.spread).ln();
    let lb = (1.0 + options.band).ln();
    let mut changes = Vec::new();
    let mut added = Vec::new();
    for n in new {
        let Some(o) = old.iter().find(|o| o.key == n.key) else {
            added.push(n.key.clone());
            continue;
        };
        let c = n.ratio.ln() - o.ratio.ln();
        let h = (half(o).powi(2) + half(n).powi(2) + spread.powi(2)).sqrt();
        let (lo, hi) = (c - h, c + h);
        let verdict = if lo >= -lb && hi <= lb {
            "equal"
        } else if lo > 0.0 {
            "slower"
        } else if hi < 0.0 {
            "faster"
        } else {
            "unresolved"
        };
        changes.push(Change {
            key: n.key.clone(),
            old: o.ratio,
            new: n.ratio,
            change: c.exp(),
            low: lo.exp(),
            high: hi.exp(),
            verdict,
        });
    }
    let gone = old
        .iter()
        .filter(|o| !new.iter().any(|n| n.key == o.key))
        .map(|o| o.key.clone())
        .collect();
    Comparison {
        changes,
        gone,
        added,
        options,
    }
}

/// The sentence under every comparison: what not interleaving the two runs costs.
pub fn cost_note(options: &CompareOptions) -> String {
    format!(
        "The two runs were not interleaved: each change's CI combines both runs' CIs with a \
         run-to-run term of ±{:.0}% (how far an unchanged row's ratio moves between processes), \
         and `equal` means inside ±{:.0}%. A change smaller than about ±{:.0}% cannot be told \
         from that noise; to resolve ±2%, measure both versions interleaved in one run \
         (`hotlab check OLD --vs NEW`).",
        options.spread * 100.0,
        options.band * 100.0,
        options.spread * 100.0
    )
}

/// The comparison as a table (text, Markdown): one row per compared row, the cost of not
/// interleaving and the unmatched rows as notes.
pub fn table(c: &Comparison, title: &str) -> Table {
    let mut t = Table::new(
        title,
        &[
            "row",
            ">old ratio",
            ">new ratio",
            ">change",
            ">CI",
            "verdict",
        ],
    );
    for ch in &c.changes {
        t.push(vec![
            ch.key.clone(),
            format!("{:.3}x", ch.old),
            format!("{:.3}x", ch.new),
            format!("{:.3}x", ch.change),
            format!("[{:.3}, {:.3}]", ch.low, ch.high),
            ch.verdict.to_string(),
        ]);
    }
    t.notes.push(cost_note(&c.options));
    if !c.gone.is_empty() {
        t.notes
            .push(format!("only in the old run: {}", c.gone.join(", ")));
    }
    if !c.added.is_empty() {
        t.notes
            .push(format!("only in the new run: {}", c.added.join(", ")));
    }
    t
}

/// The comparison as JSON: `band_pct`, `run_spread_pct`, `rows` (key, old and new ratio,
/// `change`, `change_low`, `change_high`, verdict), `only_old`, `only_new`, `slower`.
pub fn to_json(c: &Comparison) -> Value {
    json!({
        "kind": "comparison",
        "band_pct": c.options.band * 100.0,
        "run_spread_pct": c.options.spread * 100.0,
        "rows": c.changes.iter().map(|ch| json!({
            "row": ch.key,
            "old_ratio": ch.old,
            "new_ratio": ch.new,
            "change": ch.change,
            "change_low": ch.low,
            "change_high": ch.high,
            "verdict": ch.verdict,
        })).collect::<Vec<_>>(),
        "only_old": c.gone,
        "only_new": c.added,
        "slower": c.slower(),
        "note": cost_note(&c.options),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: &str, ratio: f64, half: f64) -> RunRow {
        RunRow {
            key: key.into(),
            ratio,
            low: ratio * (1.0 - half),
            high: ratio * (1.0 + half),
        }
    }

    #[test]
    fn changes_read_against_the_band_with_the_run_to_run_term() {
        let options = CompareOptions {
            band: 0.08,
            spread: 0.05,
        };
        let old = [
            row("a", 1.19, 0.01),
            row("b", 1.0, 0.01),
            row("c", 2.0, 0.01),
            row("gone", 1.0, 0.0),
        ];
        let new = [
            row("a", 1.25, 0.01),
            row("b", 1.5, 0.01),
            row("c", 1.0, 0.01),
            row("d", 1.0, 0.0),
        ];
        let c = compare(&old, &new, options);
        let verdicts: Vec<&str> = c.changes.iter().map(|c| c.verdict).collect();
        // 1.19 -> 1.25 (+5%) is what an unchanged case does between processes: not `slower`.
        assert_eq!(verdicts, ["unresolved", "slower", "faster"]);
        assert!(c.slower());
        assert_eq!(c.gone, ["gone"]);
        assert_eq!(c.added, ["d"]);
        let same = compare(&old[..1], &old[..1], options);
        assert_eq!(same.changes[0].verdict, "equal");
        let t = super::super::render_text(&table(&c, "t"));
        assert!(
            t.contains("not interleaved") && t.contains("only in the old run: gone"),
            "{t}"
        );
    }

    #[test]
    fn exports_give_their_rows() {
        let ladder = json!({"kind": "ladder", "rows": [
            {"step": "native", "build": null, "ratio": 1.0},
            {"step": "slot", "build": "jit", "ratio": 1.1, "ratio_low": 1.0, "ratio_high": 1.2}]});
        let (kind, rows) = run_rows(&ladder).unwrap();
        assert_eq!(kind, "ladder");
        assert_eq!(
            rows,
            [RunRow {
                key: "jit slot".into(),
                ratio: 1.1,
                low: 1.0,
                high: 1.2
            }]
        );
        let check = json!({"kind": "check", "file": "a.hot", "against": "twin x", "backend": "jit",
                           "ratio": 1.0, "ratio_low": 0.99, "ratio_high": 1.01});
        assert_eq!(run_rows(&check).unwrap().1[0].key, "a.hot vs twin x on jit");
        assert!(
            run_rows(&json!({"a": 1}))
                .unwrap_err()
                .contains("not a hotlab export")
        );
    }
}
