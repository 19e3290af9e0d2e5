//! The reload rows of the matrix: the reload of 100 objects with 65 fields (time per reload),
//! and a host-to-script call after N reloads (N = 0, 1, 10, 100, capped by `--reloads`).
//!
//! Both run on a [`ScriptModule`] (the JIT's reloadable program, the one `hotlab run --reload`
//! uses). The reload time is the runtime's own figure, [`ReloadReport::total`]: quiescing,
//! building the new state blocks, swapping them and the slots; the compile of the new version
//! happens before it and is not in it, as in the seed. The call rows call `Hook.call` through a
//! `Handle` (as the `host_call` case does) on an object made by the first version and migrated
//! by every reload, beside the same twin.
//!
//! [`ReloadReport::total`]: crate::runtime::reload::ReloadReport

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use super::backend::{Backend, CellError, Runner};
use super::hook::{HookCell, TARGET};
use super::matrix::{Cell, MatrixOptions, measure, settings};
use super::spec::Entry;
use super::twins::{Twin, twin_named};
use crate::backend::Checks;
use crate::backend::Value;
use crate::backend::jit::{JitOptions, OptLevel, ScriptModule};
use crate::lang::SourceFile;

/// Objects alive during the timed reload.
pub const OBJECTS: usize = 100;
/// Fields of their class (64 `i64` and the `next` handle that chains them).
pub const FIELDS: usize = 65;

/// What a reload row measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReloadKind {
    /// The time of one reload (no twin).
    Reload,
    /// A host-to-script call after this many reloads.
    CallAfter(u64),
}

/// One reload row: a cell per backend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReloadRow {
    /// What it measures.
    pub kind: ReloadKind,
    /// Its title.
    pub title: String,
    /// What one op is.
    pub unit: String,
    /// The twin's median ns per call (call rows).
    pub native_ns: Option<f64>,
    /// A cell per backend (`ns` per op: per reload, or per call).
    pub cells: BTreeMap<Backend, Cell>,
}

impl Backend {
    /// Why this backend has no reload rows, or `None` when it reloads.
    pub fn reload_refusal(self) -> Option<&'static str> {
        match self {
            Backend::Jit => None,
            Backend::JitOpt => Some(
                "refused: jit-opt code is not reloadable (optimized for one version of the \
                 program; hotlab reloads on jit only)",
            ),
            Backend::Object => Some(
                "the object backend does not run classes yet (a reload there would load a new \
                 library)",
            ),
            Backend::Interp => Some(
                "the interpreter has no reload yet (ScriptModule and `hotlab run --reload` are \
                 jit only)",
            ),
        }
    }
}

/// The N of the call-after-N rows: 0, 1, 10, 100, ... up to `max` (which is always one).
pub fn chain(max: u64) -> Vec<u64> {
    let mut out = vec![0];
    let mut n = 0u64;
    while n < max {
        n = if n == 0 {
            1
        } else {
            n.saturating_mul(10).min(max)
        };
        out.push(n);
    }
    out
}

/// The source of the many-fields class: `extra` adds one field (so reloads alternate between
/// adding and removing it). `fn build(k)` makes `k` objects chained from `head`.
pub fn fields_source(extra: bool) -> String {
    let mut s = String::from("class Big {\n");
    for i in 0..FIELDS - 1 {
        s.push_str(&format!("    var f{i}: i64 = {i}\n"));
    }
    s.push_str("    var next: Big? = null\n");
    if extra {
        s.push_str("    var extra: i64 = 7\n");
    }
    s.push_str(
        "}\n\nvar head: Big? = null\n\nfn build(k: i64) -> i64 {\n    for i in 0..k {\n        \
         let o = new Big()\n        o.f0 = i\n        o.next = head\n        head = o\n    }\n    \
         return k\n}\n",
    );
    s
}

/// The source of the call rows' class, version `v`: the empty method of the `host_call` case
/// (so the same twin is fair), on an object with a field to migrate. The versions differ in a
/// constant; each reload compiles and installs new code.
pub fn call_source(v: u64) -> String {
    format!(
        "// version {v}\nclass Counter : Hook {{\n    var calls: i64 = 0\n    fn call(self) -> i64 {{\n        \
         return 1\n    }}\n}}\n\nlet {TARGET} = new Counter()\nlet version = {v}\n"
    )
}

fn source(name: &str, text: String) -> Arc<SourceFile> {
    Arc::new(SourceFile::new(name.to_string(), text))
}

fn module(name: &str, text: String) -> Result<ScriptModule, String> {
    let src = source(name, text);
    let program = crate::lang::compile(Arc::clone(&src)).map_err(|d| d.render(&src, false))?;
    let options = JitOptions {
        checks: Checks::On,
        verify: false,
        opt: OptLevel::None,
    };
    ScriptModule::new(program, options).map_err(|e| e.to_string())
}

/// Median ns of `reloads` reloads of [`OBJECTS`] objects with [`FIELDS`] fields on `jit`,
/// each checked to have migrated every object.
pub fn time_reloads(reloads: usize) -> Result<f64, String> {
    let mut m = module("reload_fields.hot", fields_source(false))?;
    let build = m
        .current()
        .function_named("build")
        .ok_or("no `build` in the reload source")?;
    let made = m
        .current()
        .call(build, &[Value::I64(OBJECTS as i64)])
        .map_err(|e| e.to_string())?;
    if made != Value::I64(OBJECTS as i64) {
        return Err(format!("`build` returned {made}"));
    }
    let mut times = Vec::new();
    for k in 0..reloads.max(1) {
        let v = source("reload_fields.hot", fields_source(k % 2 == 0));
        let outcome = m.reload(v).map_err(|e| format!("reload {}: {e}", k + 1))?;
        let report = outcome
            .classes
            .iter()
            .find(|r| r.class == "Big")
            .ok_or_else(|| format!("reload {}: class `Big` was not reloaded", k + 1))?;
        if report.migrated != OBJECTS {
            return Err(format!(
                "reload {}: {} objects migrated, not {OBJECTS}",
                k + 1,
                report.migrated
            ));
        }
        times.push(report.total.as_secs_f64() * 1e9);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

fn call_twin() -> &'static Twin {
    twin_named("host_call").expect("the host_call twin exists")
}

/// The call rows on `jit`: for each N of `chain`, reload up to N times, then check a call loop
/// against its twin and measure it. One `(twin ns, cell)` per N.
pub fn call_chain(
    ns: &[u64],
    opts: &MatrixOptions,
    progress: &mut dyn FnMut(&str),
) -> Vec<(Option<f64>, Cell)> {
    let mut out = Vec::new();
    let mut m = match module("reload_call.hot", call_source(0)) {
        Ok(m) => m,
        Err(e) => return ns.iter().map(|_| (None, failed(e.clone()))).collect(),
    };
    let twin = call_twin();
    let expected = twin.run(opts.iters);
    let mut done = 0u64;
    for &n in ns {
        progress(&format!("call after {n} reloads"));
        while done < n {
            done += 1;
            let v = source("reload_call.hot", call_source(done));
            if let Err(e) = m.reload(v) {
                let e = format!("reload {done}: {e}");
                out.extend(ns[out.len()..].iter().map(|_| (None, failed(e.clone()))));
                return out;
            }
        }
        let current = m.current();
        let cell = HookCell::compiled(current.global_handle(TARGET), Entry::Hook, current.source());
        let mut runners = match cell {
            Ok(c) => vec![(format!("call after {n}"), Runner::Hook(Box::new(c)))],
            Err(e) => {
                out.push((None, failed(e)));
                continue;
            }
        };
        let got = match runners[0].1.checked(opts.iters) {
            Ok(v) => v,
            Err(e) => {
                out.push((None, failed(e)));
                continue;
            }
        };
        let s = settings(opts.time, opts.pin, twin);
        let mut cell = Cell {
            ns: None,
            ratio: None,
            checksum: Some(got),
            mismatch: got != expected,
            error: None,
        };
        match measure(twin, &mut runners, &s, opts.reps) {
            Ok(v) => {
                (cell.ns, cell.ratio) = v[1];
                out.push((v[0].0, cell));
            }
            Err(e) => {
                cell.error = Some(CellError::Failed(e));
                out.push((None, cell));
            }
        }
    }
    out
}

fn failed(e: String) -> Cell {
    Cell {
        ns: None,
        ratio: None,
        checksum: None,
        mismatch: false,
        error: Some(CellError::Failed(e)),
    }
}

fn unavailable(why: &str) -> Cell {
    Cell {
        ns: None,
        ratio: None,
        checksum: None,
        mismatch: false,
        error: Some(CellError::Unavailable(why.to_string())),
    }
}

/// Number of progress steps [`reload_rows`] reports.
pub fn steps(opts: &MatrixOptions) -> usize {
    let reloading = opts
        .backends
        .iter()
        .filter(|b| b.reload_refusal().is_none())
        .count();
    reloading * (1 + chain(opts.reloads).len())
}

/// Every reload row, with a cell per backend of `opts`.
pub fn reload_rows(opts: &MatrixOptions, progress: &mut dyn FnMut(&str)) -> Vec<ReloadRow> {
    let ns = chain(opts.reloads);
    let mut rows = vec![ReloadRow {
        kind: ReloadKind::Reload,
        title: format!("reload of {OBJECTS} objects with {FIELDS} fields"),
        unit: "one reload (migration, not the compile)".into(),
        native_ns: None,
        cells: BTreeMap::new(),
    }];
    rows.extend(ns.iter().map(|&n| ReloadRow {
        kind: ReloadKind::CallAfter(n),
        title: format!("call after {n} reloads"),
        unit: "one host-to-script call (Hook.call through a handle)".into(),
        native_ns: None,
        cells: BTreeMap::new(),
    }));
    for &backend in &opts.backends {
        if let Some(why) = backend.reload_refusal() {
            for r in &mut rows {
                r.cells.insert(backend, unavailable(why));
            }
            continue;
        }
        progress("reload of 100 objects");
        let cell = match time_reloads(2 * opts.reps + 1) {
            Ok(ns) => Cell {
                ns: Some(ns),
                ratio: None,
                checksum: None,
                mismatch: false,
                error: None,
            },
            Err(e) => failed(e),
        };
        rows[0].cells.insert(backend, cell);
        for (k, (native, cell)) in call_chain(&ns, opts, progress).into_iter().enumerate() {
            rows[k + 1].native_ns = rows[k + 1].native_ns.or(native);
            rows[k + 1].cells.insert(backend, cell);
        }
    }
    rows
}
