//! Numeric records: what the machine-readable exports (`--format csv|json`, `--csv`, `--json`)
//! of ladders and bench matrices hold. One record per row, one value per column, every unit in
//! the column's name (`total_ns`, `ratio_low`, `band_pct`); the prose (`adds 0.39 ns [0.39,
//! 0.39]`) is for the text and Markdown tables only. The converters read the results' own JSON
//! forms, so this layer needs none of their types.

use serde_json::{Map, Value, json};

/// Rows of numbers with named columns, and the run's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Records {
    /// What they are (`ladder`, `bench`): the JSON document's `kind`.
    pub kind: &'static str,
    /// The run's settings and context (`ladder`, `band_pct`, `reps`, ...).
    pub meta: Map<String, Value>,
    /// The columns, in order.
    pub columns: Vec<&'static str>,
    /// One map per row, keyed by column (a missing key is an empty cell / `null`).
    pub rows: Vec<Map<String, Value>>,
    /// Further record sets that belong to the run (bench: `loads`, `reloads`), JSON only.
    pub extra: Map<String, Value>,
}

impl Records {
    /// The JSON document: `kind`, the settings, `columns`, `rows` (and the extra sets).
    pub fn to_json(&self) -> Value {
        let mut doc = Map::new();
        doc.insert("kind".into(), json!(self.kind));
        for (k, v) in &self.meta {
            doc.insert(k.clone(), v.clone());
        }
        doc.insert("columns".into(), json!(self.columns));
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let mut m = Map::new();
                for c in &self.columns {
                    m.insert((*c).to_string(), r.get(*c).cloned().unwrap_or(Value::Null));
                }
                Value::Object(m)
            })
            .collect();
        doc.insert("rows".into(), Value::Array(rows));
        for (k, v) in &self.extra {
            doc.insert(k.clone(), v.clone());
        }
        Value::Object(doc)
    }

    /// CSV: the header row (the column names), then one line per row; numbers as JSON writes
    /// them, `true`/`false`, empty for `null`.
    pub fn to_csv(&self) -> String {
        let mut out = self.columns.join(",");
        out.push('\n');
        for r in &self.rows {
            let cells: Vec<String> = self
                .columns
                .iter()
                .map(|c| csv_cell(r.get(*c).unwrap_or(&Value::Null)))
                .collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out
    }
}

fn csv_cell(v: &Value) -> String {
    let s = match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

/// A finite number, else `null`.
fn num(v: Option<f64>) -> Value {
    v.filter(|x| x.is_finite())
        .map_or(Value::Null, |x| json!(x))
}

fn f(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

/// The columns of a ladder's records.
pub const LADDER_COLUMNS: [&str; 19] = [
    "step",
    "layer",
    "build",
    "path",
    "total_ns",
    "previous",
    "adds",
    "adds_ns",
    "adds_low_ns",
    "adds_high_ns",
    "adds_cycles",
    "ratio",
    "ratio_low",
    "ratio_high",
    "verdict",
    "cycles",
    "instructions",
    "checksum_ok",
    "fault",
];

/// A ladder's records from its report's JSON (`ladder::report::Report`): `adds` is `adds`,
/// `saves` or `no_cost_resolved` (then `adds_ns` is empty and the low/high columns are
/// ±within); the native row's ratio is 1.
pub fn ladder_records(report: &Value) -> Records {
    let mut meta = Map::new();
    meta.insert(
        "ladder".into(),
        report.get("ladder").cloned().unwrap_or(Value::Null),
    );
    meta.insert("band_pct".into(), num(f(report, "band").map(|b| b * 100.0)));
    if let Some([r, lo, hi]) = report
        .get("bench_agreement")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        meta.insert(
            "bench_agreement".into(),
            json!({"ratio": r, "ratio_low": lo, "ratio_high": hi}),
        );
    }
    if let Some(value) = report.get("body").filter(|b| !b.is_null()) {
        // The method's body is measured as its own rows (`layer` `body`): what the twin
        // returns, the value the body computes.
        meta.insert("body_twin_returns".into(), value.clone());
    }
    meta.insert(
        "header".into(),
        report.get("header").cloned().unwrap_or(json!([])),
    );
    let rows = report
        .get("rows")
        .and_then(Value::as_array)
        .map(|rows| rows.iter().map(ladder_row).collect())
        .unwrap_or_default();
    Records {
        kind: "ladder",
        meta,
        columns: LADDER_COLUMNS.to_vec(),
        rows,
        extra: Map::new(),
    }
}

fn ladder_row(r: &Value) -> Map<String, Value> {
    let mut m = Map::new();
    for key in [
        "step", "layer", "build", "path", "previous", "verdict", "fault",
    ] {
        m.insert(key.into(), r.get(key).cloned().unwrap_or(Value::Null));
    }
    m.insert("total_ns".into(), num(f(r, "total_ns")));
    m.insert("adds_cycles".into(), num(f(r, "adds_cycles")));
    m.insert("cycles".into(), num(f(r, "cycles")));
    m.insert(
        "instructions".into(),
        r.get("instructions").cloned().unwrap_or(Value::Null),
    );
    m.insert(
        "checksum_ok".into(),
        r.get("checksum_ok").cloned().unwrap_or(Value::Null),
    );
    let ps = |a: &Value, k: &str| num(f(a, k).map(|p| p / 1e3));
    if let Some(a) = r.get("adds").filter(|a| !a.is_null()) {
        let kind = a.get("kind").and_then(Value::as_str).unwrap_or("");
        m.insert("adds".into(), json!(kind));
        if kind == "no_cost_resolved" {
            let w = f(a, "within").map(|p| p / 1e3);
            m.insert("adds_low_ns".into(), num(w.map(|w| -w)));
            m.insert("adds_high_ns".into(), num(w));
        } else {
            m.insert("adds_ns".into(), ps(a, "diff"));
            m.insert("adds_low_ns".into(), ps(a, "low"));
            m.insert("adds_high_ns".into(), ps(a, "high"));
        }
    }
    let native = r.get("build").is_none_or(Value::is_null);
    match r.get("ratio").and_then(Value::as_array).map(Vec::as_slice) {
        Some([x, lo, hi]) => {
            m.insert("ratio".into(), x.clone());
            m.insert("ratio_low".into(), lo.clone());
            m.insert("ratio_high".into(), hi.clone());
        }
        _ if native => {
            m.insert("ratio".into(), json!(1.0));
        }
        _ => {}
    }
    m
}

/// The columns of a bench matrix's records (one per backend, case and mode).
pub const BENCH_COLUMNS: [&str; 15] = [
    "backend",
    "case",
    "group",
    "title",
    "unit",
    "twin",
    "mode",
    "time_ns",
    "native_ns",
    "ratio",
    "result",
    "native_result",
    "mismatch",
    "status",
    "reason",
];

/// A bench matrix's records from its JSON (`cases::matrix::Matrix`): one row per backend, case
/// and mode (`mode` empty for a native-only row), then the reload rows (`group` `reload`);
/// `status` is `ok`, `n/a`, `error` or `native_only`; results as strings (64-bit checksums lose
/// digits as JSON doubles). The load section goes to the JSON document as `loads` (µs
/// columns).
pub fn bench_records(m: &Value) -> Records {
    let mut meta = Map::new();
    meta.insert("reps".into(), m.get("reps").cloned().unwrap_or(Value::Null));
    meta.insert(
        "iters".into(),
        m.get("iters").cloned().unwrap_or(Value::Null),
    );
    meta.insert("time_s".into(), num(f(m, "time")));
    meta.insert("elapsed_s".into(), num(f(m, "elapsed")));
    let mut rows = Vec::new();
    let empty = Vec::new();
    for t in m.get("tables").and_then(Value::as_array).unwrap_or(&empty) {
        let backend = t.get("backend").cloned().unwrap_or(Value::Null);
        for r in t.get("rows").and_then(Value::as_array).unwrap_or(&empty) {
            let base = |mode: Value| {
                let mut row = Map::new();
                row.insert("backend".into(), backend.clone());
                for key in ["case", "group", "title", "unit", "twin"] {
                    row.insert(key.into(), r.get(key).cloned().unwrap_or(Value::Null));
                }
                row.insert("mode".into(), mode);
                row.insert("native_ns".into(), num(f(r, "native_ns")));
                row.insert(
                    "native_result".into(),
                    r.get("native_checksum")
                        .and_then(Value::as_i64)
                        .map_or(Value::Null, |c| json!(c.to_string())),
                );
                row
            };
            let cells = r.get("cells").and_then(Value::as_object);
            if r.get("native_only").and_then(Value::as_bool) == Some(true)
                || cells.is_none_or(Map::is_empty)
            {
                let mut row = base(Value::Null);
                row.insert("status".into(), json!("native_only"));
                rows.push(row);
                continue;
            }
            for (mode, c) in cells.into_iter().flatten() {
                let mut row = base(json!(mode));
                row.insert("time_ns".into(), num(f(c, "ns")));
                row.insert("ratio".into(), num(f(c, "ratio")));
                row.insert(
                    "result".into(),
                    c.get("checksum")
                        .and_then(Value::as_i64)
                        .map_or(Value::Null, |c| json!(c.to_string())),
                );
                row.insert(
                    "mismatch".into(),
                    c.get("mismatch").cloned().unwrap_or(json!(false)),
                );
                cell_status(c, &mut row);
                rows.push(row);
            }
        }
        if let Some(why) = t.get("unavailable").filter(|w| !w.is_null()) {
            let mut row = Map::new();
            row.insert("backend".into(), backend.clone());
            row.insert("status".into(), json!("n/a"));
            row.insert("reason".into(), why.clone());
            rows.push(row);
        }
    }
    reload_records(
        m.get("reloads").and_then(Value::as_array).unwrap_or(&empty),
        &mut rows,
    );
    let mut extra = Map::new();
    let loads: Vec<Value> = m
        .get("loads")
        .and_then(Value::as_array)
        .unwrap_or(&empty)
        .iter()
        .map(|l| {
            let mut row = Map::new();
            for key in ["case", "mode", "backend"] {
                row.insert(key.into(), l.get(key).cloned().unwrap_or(Value::Null));
            }
            if let Some(t) = l.get("times").and_then(Value::as_object) {
                for (k, v) in t {
                    row.insert(format!("{k}_us"), v.clone());
                }
            }
            Value::Object(row)
        })
        .collect();
    extra.insert("loads".into(), Value::Array(loads));
    Records {
        kind: "bench",
        meta,
        columns: BENCH_COLUMNS.to_vec(),
        rows,
        extra,
    }
}

/// The reload rows as records of the main table: `case` is `reload` or
/// `call_after_N_reloads`, `mode` `hot`.
fn reload_records(reloads: &[Value], rows: &mut Vec<Map<String, Value>>) {
    for r in reloads {
        let case = match r.get("kind") {
            Some(Value::String(k)) => k.clone(),
            Some(Value::Object(o)) => o
                .get("call_after")
                .map_or("reload".into(), |n| format!("call_after_{n}_reloads")),
            _ => "reload".into(),
        };
        let cells = r.get("cells").and_then(Value::as_object);
        for (backend, c) in cells.into_iter().flatten() {
            let mut row = Map::new();
            row.insert("backend".into(), json!(backend));
            row.insert("case".into(), json!(case));
            row.insert("group".into(), json!("reload"));
            for key in ["title", "unit"] {
                row.insert(key.into(), r.get(key).cloned().unwrap_or(Value::Null));
            }
            row.insert("mode".into(), json!("hot"));
            row.insert("time_ns".into(), num(f(c, "ns")));
            row.insert("native_ns".into(), num(f(r, "native_ns")));
            row.insert("ratio".into(), num(f(c, "ratio")));
            cell_status(c, &mut row);
            rows.push(row);
        }
    }
}

/// A cell's `status` and `reason` (`ok`, `n/a` with why, `error` with the message).
fn cell_status(c: &Value, row: &mut Map<String, Value>) {
    let (status, reason) = match c.get("error").filter(|e| !e.is_null()) {
        None => ("ok", Value::Null),
        Some(e) => (
            if e.get("kind").and_then(Value::as_str) == Some("unavailable") {
                "n/a"
            } else {
                "error"
            },
            e.get("reason").cloned().unwrap_or(Value::Null),
        ),
    };
    row.insert("status".into(), json!(status));
    row.insert("reason".into(), reason);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ladder_report_becomes_one_number_per_column() {
        let report = json!({
            "ladder": "host_call", "band": 0.02, "header": ["machine"],
            "bench_agreement": null,
            "rows": [
                {"step": "native", "layer": "native", "build": null, "path": "f", "total_ns": 1.5,
                 "previous": null, "adds": null, "adds_cycles": null, "ratio": null,
                 "verdict": null, "cycles": 4.0, "instructions": 3, "checksum_ok": true,
                 "fault": null},
                {"step": "slot, read", "layer": "slot", "build": "jit", "path": "g",
                 "total_ns": 1.89, "previous": 0,
                 "adds": {"kind": "adds", "diff": 390.0, "low": 380.0, "high": 400.0},
                 "adds_cycles": 1.0, "ratio": [1.12, 1.11, 1.13], "verdict": "slower",
                 "cycles": 5.0, "instructions": 7, "checksum_ok": true, "fault": null}
            ]
        });
        let r = ladder_records(&report);
        let csv = r.to_csv();
        let mut lines = csv.lines();
        assert_eq!(lines.next().unwrap(), LADDER_COLUMNS.join(","));
        assert_eq!(
            lines.next().unwrap(),
            "native,native,,f,1.5,,,,,,,1.0,,,,4.0,3,true,"
        );
        assert_eq!(
            lines.next().unwrap(),
            "\"slot, read\",slot,jit,g,1.89,0,adds,0.39,0.38,0.4,1.0,1.12,1.11,1.13,slower,5.0,7,true,"
        );
        let j = r.to_json();
        assert_eq!(j["kind"], "ladder");
        assert_eq!(j["band_pct"], 2.0);
        assert_eq!(j["rows"][1]["ratio_high"], 1.13);
        assert_eq!(j["rows"][1]["adds_ns"], 0.39);
    }

    #[test]
    fn a_bench_matrix_becomes_a_row_per_cell() {
        let m = json!({
            "reps": 3, "iters": 100, "time": 0.25, "elapsed": 2.0,
            "tables": [{"backend": "jit", "unavailable": null, "rows": [
                {"case": "int_loop", "title": "t", "group": null, "unit": "u", "twin": "int_loop",
                 "native_ns": 1.0, "native_checksum": 700775371729480341i64, "native_only": false,
                 "cells": {
                    "hot": {"ns": 1.2, "ratio": 1.2, "checksum": 700775371729480341i64,
                            "mismatch": false, "error": null},
                    "clif": {"ns": null, "ratio": null, "checksum": null, "mismatch": false,
                             "error": {"kind": "unavailable", "reason": "no clif"}}}},
                {"case": "alloc", "title": "a", "group": null, "unit": "u", "twin": "alloc",
                 "native_ns": 9.0, "native_checksum": 1, "native_only": true, "cells": {}}
            ]}],
            "loads": [{"case": "int_loop", "mode": "hot", "backend": "jit",
                       "times": {"parse": 1.5, "total": 20.0}}],
            "reloads": []
        });
        let r = bench_records(&m);
        assert_eq!(r.rows.len(), 3);
        let j = r.to_json();
        let mode = |m: &str| {
            j["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["mode"] == m)
                .unwrap()
                .clone()
        };
        assert_eq!(mode("clif")["status"], "n/a");
        assert_eq!(mode("hot")["result"], "700775371729480341");
        assert_eq!(mode("hot")["ratio"], 1.2);
        assert_eq!(j["rows"][2]["status"], "native_only");
        assert_eq!(j["loads"][0]["total_us"], 20.0);
        assert!(r.to_csv().starts_with("backend,case,group,"));
    }
}
