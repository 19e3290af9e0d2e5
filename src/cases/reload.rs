//! The reload rows of the matrix: the reload of 100 objects with 65 fields (time per reload),
//! and a host-to-script call after N reloads (N = 0, 1, 10, 100, capped by `--reloads`).
//!
//! `jit` and `object` run them on a [`ScriptModule`] (the reloadable program `hotlab run
//! --reload` uses; on `object` each version is a new shared library), `interp` on an
//! [`Interp`] and its [`Interp::reload`]. The reload time is the runtime's own figure,
//! [`ReloadReport::total`]: quiescing, building the new state blocks, swapping them and the
//! slots; the compile (and on `object` the link and load) of the new version happens before it
//! and is not in it, as in the seed. The call rows call `Hook.call` through a `Handle` (as the
//! `host_call` case does) on an object made by the first version and migrated by every reload,
//! beside the same twin.
//!
//! [`ReloadReport::total`]: crate::runtime::reload::ReloadReport

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use super::backend::{Backend, CellError, Sampler};
use super::matrix::{Cell, MatrixOptions, measure, settings};
use super::twins::{Twin, twin_named};
use crate::backend::Checks;
use crate::backend::HookVia;
use crate::backend::Value;
use crate::backend::hook::{HookCell, TARGET, target_global};
use crate::backend::interp::Interp;
use crate::backend::jit::{
    JitError, JitOptions, OptLevel, ReloadFailure, ReloadOutcome, ScriptModule,
};
use crate::backend::object::{ObjectError, ObjectOptions};
use crate::lang::{Diagnostics, Program, SourceFile};
use crate::runtime::ScriptError;

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
            Backend::Jit | Backend::Object | Backend::Interp => None,
            Backend::JitOpt => Some(
                "refused: jit-opt code is not reloadable (optimized for one version of the \
                 program; the other backends reload)",
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

/// Why a reload row has no figure. The sources are fixed, so every one of these is a hotlab
/// bug or a backend failing, shown in the row's cell.
#[derive(Debug, thiserror::Error)]
pub enum ReloadRowError {
    /// A version of the row's source did not compile.
    #[error("{}", .diagnostics.render(.file, false))]
    Compile {
        /// The version's source.
        file: Arc<SourceFile>,
        /// What the front end reported.
        diagnostics: Diagnostics,
    },
    /// The JIT could not make a module of the first version.
    #[error(transparent)]
    Jit(#[from] JitError),
    /// The object backend could not make a module of the first version.
    #[error(transparent)]
    Object(#[from] ObjectError),
    /// The interpreter raised while running the first version's initializers.
    #[error("{}", .error.render(.file))]
    Init {
        /// The version's source.
        file: Arc<SourceFile>,
        /// The error, at its span.
        error: ScriptError,
    },
    /// The source has no `build` function.
    #[error("no `build` in the reload source")]
    NoBuild,
    /// `build` raised.
    #[error("{0}")]
    Build(ScriptError),
    /// `build` made another number of objects than it was asked for.
    #[error("`build` returned {0}")]
    Built(Value),
    /// Reload `k` (1-based) failed.
    #[error("reload {k}: {failure}")]
    Reload {
        /// Which reload.
        k: u64,
        /// Why (boxed: the other causes are a few words).
        failure: Box<ReloadFailure>,
    },
    /// Reload `k` left class `Big` as it was.
    #[error("reload {k}: class `Big` was not reloaded")]
    NotReloaded {
        /// Which reload.
        k: u64,
    },
    /// Reload `k` migrated another number of objects than there are.
    #[error("reload {k}: {migrated} objects migrated, not {OBJECTS}")]
    Migrated {
        /// Which reload.
        k: u64,
        /// How many it migrated.
        migrated: usize,
    },
}

fn source(name: &str, text: String) -> Arc<SourceFile> {
    Arc::new(SourceFile::new(name.to_string(), text))
}

fn compile(name: &str, text: String) -> Result<Program, ReloadRowError> {
    let src = source(name, text);
    crate::lang::compile(Arc::clone(&src)).map_err(|diagnostics| ReloadRowError::Compile {
        file: src,
        diagnostics,
    })
}

/// A reloadable module of `backend` (`jit` or `object`).
fn module(backend: Backend, name: &str, text: String) -> Result<ScriptModule, ReloadRowError> {
    let program = compile(name, text)?;
    let options = JitOptions {
        checks: Checks::On,
        verify: false,
        opt: OptLevel::None,
        code_offset: 0,
    };
    match backend {
        Backend::Object => {
            let options = ObjectOptions {
                jit: options,
                ..ObjectOptions::default()
            };
            Ok(ScriptModule::new_object(program, options)?)
        }
        _ => Ok(ScriptModule::new(program, options)?),
    }
}

/// The report of class `Big` in reload `k` (1-based), checked to have migrated every object;
/// its time in ns.
fn migrated_ns(
    k: u64,
    outcome: Result<ReloadOutcome, ReloadFailure>,
) -> Result<f64, ReloadRowError> {
    let outcome = outcome.map_err(|failure| ReloadRowError::Reload {
        k,
        failure: Box::new(failure),
    })?;
    let report = outcome
        .classes
        .iter()
        .find(|r| r.class == "Big")
        .ok_or(ReloadRowError::NotReloaded { k })?;
    if report.migrated != OBJECTS {
        return Err(ReloadRowError::Migrated {
            k,
            migrated: report.migrated,
        });
    }
    Ok(report.total.as_secs_f64() * 1e9)
}

fn check_built(made: Value) -> Result<(), ReloadRowError> {
    if made != Value::I64(OBJECTS as i64) {
        return Err(ReloadRowError::Built(made));
    }
    Ok(())
}

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Median ns of `reloads` reloads of [`OBJECTS`] objects with [`FIELDS`] fields on `backend`
/// (one that reloads), each checked to have migrated every object.
pub fn time_reloads(backend: Backend, reloads: usize) -> Result<f64, ReloadRowError> {
    let reloads = reloads.max(1);
    if backend == Backend::Interp {
        // The interpreter runs borrowed programs: both versions compiled first.
        let versions = [
            compile("reload_fields.hot", fields_source(true))?,
            compile("reload_fields.hot", fields_source(false))?,
        ];
        let first = compile("reload_fields.hot", fields_source(false))?;
        let mut interp = Interp::new(&first, Checks::On).map_err(|error| ReloadRowError::Init {
            file: Arc::clone(&first.source),
            error,
        })?;
        let build = first
            .function_named("build")
            .ok_or(ReloadRowError::NoBuild)?;
        check_built(
            interp
                .call(build, &[Value::I64(OBJECTS as i64)])
                .map_err(ReloadRowError::Build)?,
        )?;
        let times = (0..reloads)
            .map(|k| migrated_ns(k as u64 + 1, interp.reload(&versions[k % 2])))
            .collect::<Result<_, _>>()?;
        return Ok(median(times));
    }
    let mut m = module(backend, "reload_fields.hot", fields_source(false))?;
    let build = m
        .current()
        .function_named("build")
        .ok_or(ReloadRowError::NoBuild)?;
    check_built(
        m.current()
            .call(build, &[Value::I64(OBJECTS as i64)])
            .map_err(ReloadRowError::Build)?,
    )?;
    let mut times = Vec::new();
    for k in 0..reloads {
        let v = source("reload_fields.hot", fields_source(k % 2 == 0));
        times.push(migrated_ns(k as u64 + 1, m.reload(v))?);
    }
    Ok(median(times))
}

fn call_twin() -> &'static Twin {
    twin_named("host_call").expect("the host_call twin exists")
}

/// The call rows on `backend` (one that reloads): for each N of `chain`, reload up to N
/// times, then check a call loop against its twin and measure it. One `(twin ns, cell)` per N.
pub fn call_chain(
    backend: Backend,
    ns: &[u64],
    opts: &MatrixOptions,
    progress: &mut dyn FnMut(&str),
) -> Vec<(Option<f64>, Cell)> {
    let twin = call_twin();
    let expected = twin.run(opts.iters);
    let mut out = Vec::new();
    // The cells of the rows not reached: failed, with the text of `e`.
    let fail_rest = |out: &mut Vec<(Option<f64>, Cell)>, e: &dyn std::fmt::Display| {
        let e = e.to_string();
        out.extend(
            ns[out.len()..]
                .iter()
                .map(|_| (None, Cell::failed(CellError::Failed(e.clone())))),
        );
    };
    if backend == Backend::Interp {
        // Every version compiled first: the interpreter runs borrowed programs.
        let max = ns.iter().copied().max().unwrap_or(0);
        let versions: Result<Vec<Program>, ReloadRowError> = (0..=max)
            .map(|v| compile("reload_call.hot", call_source(v)))
            .collect();
        let versions = match versions {
            Ok(v) => v,
            Err(e) => {
                fail_rest(&mut out, &e);
                return out;
            }
        };
        let mut interp = match Interp::new(&versions[0], Checks::On) {
            Ok(i) => i,
            Err(e) => {
                let error = ReloadRowError::Init {
                    file: Arc::clone(&versions[0].source),
                    error: e,
                };
                fail_rest(&mut out, &error);
                return out;
            }
        };
        let mut done = 0u64;
        for &n in ns {
            progress(&format!("call after {n} reloads"));
            let reloaded = reload_until(&mut done, n, |k| {
                interp.reload(&versions[k as usize]).map(drop)
            });
            if let Err(e) = reloaded {
                fail_rest(&mut out, &e);
                return out;
            }
            let program = interp.program();
            let target = match target_global(program) {
                Ok(t) => t,
                Err(e) => {
                    fail_rest(&mut out, &e);
                    return out;
                }
            };
            let cell = match HookCell::interpreted(&mut interp, target, HookVia::Handle) {
                Ok(c) => c,
                Err(e) => {
                    fail_rest(&mut out, &e);
                    return out;
                }
            };
            let runner = Sampler::hook(cell, Arc::clone(&program.source));
            let mut runners = vec![(format!("call after {n}"), runner)];
            out.push(measure_calls(&mut runners, twin, expected, opts));
        }
        return out;
    }
    let mut m = match module(backend, "reload_call.hot", call_source(0)) {
        Ok(m) => m,
        Err(e) => {
            fail_rest(&mut out, &e);
            return out;
        }
    };
    let mut done = 0u64;
    for &n in ns {
        progress(&format!("call after {n} reloads"));
        let reloaded = reload_until(&mut done, n, |k| {
            m.reload(source("reload_call.hot", call_source(k)))
                .map(drop)
        });
        if let Err(e) = reloaded {
            fail_rest(&mut out, &e);
            return out;
        }
        let cell = HookCell::compiled(m.current().global_handle(TARGET), HookVia::Handle);
        let mut runners = match cell {
            Ok(c) => vec![(
                format!("call after {n}"),
                Sampler::hook(c, Arc::clone(&m.program().source)),
            )],
            Err(e) => {
                out.push((None, Cell::failed(CellError::Failed(e.to_string()))));
                continue;
            }
        };
        out.push(measure_calls(&mut runners, twin, expected, opts));
    }
    out
}

/// Reload versions `done + 1 ..= n` with `reload` (given the version number), counting them
/// in `done`; the first failure says which reload it was.
fn reload_until(
    done: &mut u64,
    n: u64,
    mut reload: impl FnMut(u64) -> Result<(), ReloadFailure>,
) -> Result<(), ReloadRowError> {
    while *done < n {
        *done += 1;
        reload(*done).map_err(|failure| ReloadRowError::Reload {
            k: *done,
            failure: Box::new(failure),
        })?;
    }
    Ok(())
}

/// Check the one runner's call loop against the twin's `expected` checksum and measure it
/// beside the twin: `(twin ns, cell)`.
fn measure_calls(
    runners: &mut [(String, Sampler<'_>)],
    twin: &Twin,
    expected: i64,
    opts: &MatrixOptions,
) -> (Option<f64>, Cell) {
    let got = match runners[0].1.checked(opts.iters) {
        Ok(v) => v,
        Err(e) => return (None, Cell::failed(CellError::Failed(e.to_string()))),
    };
    let s = settings(opts.time, opts.pin, twin);
    let mut cell = Cell {
        ns: None,
        ratio: None,
        checksum: Some(got),
        mismatch: got != expected,
        error: None,
    };
    match measure(twin, runners, &s, opts.reps) {
        Ok(v) => {
            (cell.ns, cell.ratio) = v[1];
            (v[0].0, cell)
        }
        Err(e) => {
            cell.error = Some(CellError::Failed(e.to_string()));
            (None, cell)
        }
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
                r.cells.insert(
                    backend,
                    Cell::failed(CellError::Unavailable(why.to_string())),
                );
            }
            continue;
        }
        progress("reload of 100 objects");
        let cell = match time_reloads(backend, 2 * opts.reps + 1) {
            Ok(ns) => Cell {
                ns: Some(ns),
                ratio: None,
                checksum: None,
                mismatch: false,
                error: None,
            },
            Err(e) => Cell::failed(CellError::Failed(e.to_string())),
        };
        rows[0].cells.insert(backend, cell);
        for (k, (native, cell)) in call_chain(backend, &ns, opts, progress)
            .into_iter()
            .enumerate()
        {
            rows[k + 1].native_ns = rows[k + 1].native_ns.or(native);
            rows[k + 1].cells.insert(backend, cell);
        }
    }
    rows
}
