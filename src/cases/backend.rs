//! Backends of the matrix: how a case's script becomes code that runs `run(n)`, and the one
//! place where that code is turned into the engine's raw variant.
//!
//! Adding a backend is one arm in [`Backend::load`] (and its name in [`Backend`]); everything
//! else — checked runs, variants, timings, tables — works on [`Loaded`] and [`Runner`].

use std::ffi::c_void;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::hook::{HookCell, hook_entry, target_global};
use super::spec::{Entry, Mode, ScriptFile};
pub use super::times::LoadTimes;
use crate::backend::Checks;
use crate::backend::interp::Interp;
use crate::backend::jit::clif::ClifProgram;
use crate::backend::jit::{Jit, JitOptions, JitProgram, OptLevel, VmCtx};
use crate::backend::object::{ObjectOptions, ObjectProgram, compile_object};
use crate::lang::hir::{FuncId, GlobalId, Program, Type};
use crate::lang::{self, SourceFile, Span};
use crate::measure::{RawVariantFn, Variant};
use crate::runtime::{ScriptError, catch_script};

/// A backend of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// Cranelift JIT, no optimization (reloadable).
    Jit,
    /// Cranelift JIT, `OptLevel::Speed`.
    JitOpt,
    /// Cranelift object file, linked and loaded with dlopen.
    Object,
    /// The reference interpreter.
    Interp,
}

impl Backend {
    /// Every backend, in table order.
    pub const ALL: [Backend; 4] = [
        Backend::Jit,
        Backend::JitOpt,
        Backend::Object,
        Backend::Interp,
    ];

    /// Its name on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Jit => "jit",
            Backend::JitOpt => "jit-opt",
            Backend::Object => "object",
            Backend::Interp => "interp",
        }
    }

    /// One line for `--list`.
    pub fn describe(self) -> &'static str {
        match self {
            Backend::Jit => "Cranelift JIT in process, no optimization",
            Backend::JitOpt => "Cranelift JIT, optimized for speed (OptLevel::Speed)",
            Backend::Object => "Cranelift object file, linked and dlopen'ed",
            Backend::Interp => "the reference interpreter over the checked program",
        }
    }

    /// The Cranelift optimization level this backend compiles at (`jit-opt`: speed; the
    /// others: none, the interpreter compiling nothing).
    pub fn opt_level(self) -> OptLevel {
        match self {
            Backend::JitOpt => OptLevel::Speed,
            _ => OptLevel::None,
        }
    }

    /// Why this backend cannot run scripts of `mode`, or `None` when it can.
    pub fn unavailable(self, mode: Mode) -> Option<&'static str> {
        match (self, mode) {
            (Backend::Object, Mode::Clif) => Some("the object backend runs .hot scripts only"),
            (Backend::Interp, Mode::Clif) => Some("the interpreter runs .hot scripts only"),
            _ => None,
        }
    }

    /// Compile or load `script` for this backend, timing each stage.
    pub fn load(
        self,
        script: &ScriptFile,
        jits: &mut Jits,
    ) -> Result<(Loaded, LoadTimes), CellError> {
        self.load_source(script.mode, &script.source, script.header.entry, jits)
    }

    /// Compile or load a script's source of this `mode` (its name is its path), to be run as
    /// `entry` says.
    pub fn load_source(
        self,
        mode: Mode,
        source: &Arc<SourceFile>,
        entry: Entry,
        jits: &mut Jits,
    ) -> Result<(Loaded, LoadTimes), CellError> {
        let script = Script { mode, source };
        if let Some(why) = self.unavailable(script.mode) {
            return Err(CellError::Unavailable(why.to_string()));
        }
        if entry != Entry::Run && mode != Mode::Hot {
            return Err(CellError::Failed(format!(
                "{}: `entry = \"{}\"` needs a .hot script (a class the host calls)",
                source.name,
                entry.name()
            )));
        }
        let start = Instant::now();
        let name = &script.source.name;
        let failed = |m: String| CellError::Failed(format!("{name}: {m}"));
        let mut times = LoadTimes::default();
        let loaded = match (self, script.mode) {
            (Backend::Jit | Backend::JitOpt, Mode::Clif) => {
                let t = Instant::now();
                check_clif_signature(&script.source.text).map_err(failed)?;
                times.parse = Some(t.elapsed());
                let jit = jits.get(self).map_err(failed)?;
                let t = Instant::now();
                let program = jit
                    .load_clif(&script.source.text)
                    .map_err(|e| failed(e.to_string()))?;
                let wall = t.elapsed();
                let f = program
                    .function("run")
                    .ok_or_else(|| failed("no `%run` function".into()))?;
                times.compile = Some(f.code.compile_time);
                times.load = Some(
                    wall.saturating_sub(
                        program
                            .functions()
                            .iter()
                            .map(|f| f.code.compile_time)
                            .sum(),
                    ),
                );
                let addr = f.code.addr as *const u8;
                Loaded::Clif { program, addr }
            }
            (_, Mode::Hot) => {
                let (program, front) = lang::compile_timed(Arc::clone(script.source));
                times.parse = Some(front.lex + front.parse);
                times.check = Some(front.check);
                let program =
                    program.map_err(|d| CellError::Failed(d.render(script.source, false)))?;
                let start = match entry {
                    Entry::Run => Start::Run(run_function(&program).map_err(failed)?),
                    hook => Start::Hook(target_global(&program).map_err(failed)?, hook),
                };
                match self {
                    Backend::Interp => {
                        let t = Instant::now();
                        // Making an interpreter runs the module initializer: its "load".
                        Interp::new(&program, Checks::On)
                            .map_err(|e| CellError::Failed(e.render(script.source)))?;
                        times.load = Some(t.elapsed());
                        match start {
                            Start::Run(run) => Loaded::Interp {
                                program: Box::new(program),
                                run,
                            },
                            Start::Hook(target, entry) => Loaded::InterpHook {
                                program: Box::new(program),
                                target,
                                entry,
                            },
                        }
                    }
                    Backend::Jit | Backend::JitOpt => {
                        let jit = jits.get(self).map_err(failed)?;
                        let t = Instant::now();
                        let compiled = jit.compile(&program).map_err(|e| failed(e.to_string()))?;
                        let wall = t.elapsed();
                        let lower: Duration =
                            compiled.functions().iter().map(|f| f.lower_time).sum();
                        let compile: Duration = compiled
                            .functions()
                            .iter()
                            .chain(compiled.entries())
                            .map(|f| f.compile_time)
                            .sum();
                        times.lower = Some(lower);
                        times.compile = Some(compile);
                        times.load = Some(wall.saturating_sub(lower + compile));
                        match start {
                            Start::Run(run) => Loaded::Jit {
                                program: compiled,
                                run,
                            },
                            Start::Hook(_, entry) => Loaded::JitHook {
                                program: compiled,
                                entry,
                            },
                        }
                    }
                    Backend::Object => {
                        let options = ObjectOptions::default();
                        let compiled = compile_object(&program, &options)
                            .map_err(|e| failed(e.to_string()))?;
                        let t = compiled.timings();
                        times.lower = Some(t.lower);
                        times.compile = Some(t.define + t.emit);
                        times.load = Some(t.link + t.load + t.init);
                        match start {
                            Start::Run(run) => Loaded::Object {
                                program: Box::new(compiled),
                                run,
                            },
                            Start::Hook(_, entry) => Loaded::JitHook {
                                // The library stays loaded while the program lives.
                                program: compiled.into_program(),
                                entry,
                            },
                        }
                    }
                }
            }
            (Backend::Interp | Backend::Object, Mode::Clif) => {
                unreachable!("refused by `unavailable` above")
            }
        };
        times.total = start.elapsed();
        Ok((loaded, times))
    }
}

/// What a loaded script starts from.
#[derive(Clone, Copy)]
enum Start {
    /// Its `run`.
    Run(FuncId),
    /// The host's calls on the object in this module variable.
    Hook(GlobalId, Entry),
}

struct Script<'a> {
    mode: Mode,
    source: &'a Arc<SourceFile>,
}

/// Why a cell has no time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "reason", rename_all = "snake_case")]
pub enum CellError {
    /// The backend cannot run this (shown `n/a`; not an error).
    Unavailable(String),
    /// Loading or running failed (shown `error`; `bench` exits non-zero).
    Failed(String),
}

impl std::fmt::Display for CellError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CellError::Unavailable(r) => write!(f, "n/a: {r}"),
            CellError::Failed(r) => f.write_str(r),
        }
    }
}

/// The long-lived JITs, one per JIT backend, made on first use.
#[derive(Default)]
pub struct Jits {
    jit: Option<Jit>,
    jit_opt: Option<Jit>,
}

impl Jits {
    fn get(&mut self, backend: Backend) -> Result<&mut Jit, String> {
        let slot = match backend {
            Backend::JitOpt => &mut self.jit_opt,
            _ => &mut self.jit,
        };
        if slot.is_none() {
            let options = JitOptions {
                checks: Checks::On,
                // Off, as in a release build: load times then show compile work only.
                verify: false,
                opt: backend.opt_level(),
            };
            *slot = Some(Jit::new(options).map_err(|e| e.to_string())?);
        }
        slot.as_mut()
            .ok_or_else(|| "the JIT was not made".to_string())
    }
}

/// The `run` function of a checked program, with its signature checked.
pub fn run_function(program: &Program) -> Result<FuncId, String> {
    let id = program.function_named("run").ok_or(
        "no `fn run(n: i64) -> i64`: a case loops n times in `run` and returns a checksum",
    )?;
    let f = program.function(id);
    let params: Vec<&Type> = f.param_types().collect();
    if params != [&Type::I64] || f.ret != Type::I64 {
        return Err(format!(
            "`run` must be `fn run(n: i64) -> i64`, not ({}) -> {}",
            params
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            f.ret
        ));
    }
    Ok(id)
}

/// Check that a `.clif` text has `function %run(i64, i64) -> i64 system_v` (ctx, n): the
/// engine's raw ABI, so it can be called directly.
pub fn check_clif_signature(text: &str) -> Result<(), String> {
    use cranelift_codegen::ir::types::I64;
    use cranelift_codegen::isa::CallConv;
    let functions =
        cranelift_reader::parse_functions(text).map_err(|e| format!("cannot parse .clif: {e}"))?;
    let f = functions
        .iter()
        .find(|f| f.name.to_string() == "%run")
        .ok_or("no `function %run(i64, i64) -> i64 system_v` (ctx, n) in the file")?;
    let sig = &f.signature;
    let params: Vec<_> = sig.params.iter().map(|p| p.value_type).collect();
    let returns: Vec<_> = sig.returns.iter().map(|p| p.value_type).collect();
    if params != [I64, I64] || returns != [I64] || sig.call_conv != CallConv::SystemV {
        return Err(format!(
            "`%run` must be `(i64, i64) -> i64 system_v` (ctx, n), not `{sig}`"
        ));
    }
    Ok(())
}

/// A script ready to run on one backend.
pub enum Loaded {
    /// JIT-compiled `.hot`.
    Jit {
        /// The program.
        program: JitProgram,
        /// Its `run`.
        run: FuncId,
    },
    /// JIT-compiled `.clif`.
    Clif {
        /// The program.
        program: ClifProgram,
        /// The address of `%run`, whose signature was checked.
        addr: *const u8,
    },
    /// `.hot` built by the object backend (a `.so` loaded with dlopen).
    Object {
        /// The program.
        program: Box<ObjectProgram>,
        /// Its `run`.
        run: FuncId,
    },
    /// A checked program for the interpreter.
    Interp {
        /// The program.
        program: Box<Program>,
        /// Its `run`.
        run: FuncId,
    },
    /// JIT-compiled `.hot` (or a `.so` built by the object backend, which the program keeps
    /// loaded) whose object in `target` the host calls (see `cases::hook`).
    JitHook {
        /// The program (its module variable `target` holds the object).
        program: JitProgram,
        /// How the host calls it.
        entry: Entry,
    },
    /// A checked program whose object in `target` the host calls, interpreted.
    InterpHook {
        /// The program.
        program: Box<Program>,
        /// The module variable `target`.
        target: GlobalId,
        /// How the host calls it.
        entry: Entry,
    },
}

/// The typed entry of a script's `run` in JIT code.
type JitRunFn = unsafe extern "C-unwind" fn(*mut VmCtx, i64) -> i64;

/// A loaded script set up to be called from the current thread.
pub enum Runner<'a> {
    /// JIT code and its context.
    Jit {
        /// The entry.
        entry: JitRunFn,
        /// Its context (stack limit of this thread).
        vmctx: Box<VmCtx>,
        /// Keeps the code alive.
        _program: &'a JitProgram,
    },
    /// `.clif` code (its `ctx` parameter is ignored).
    Clif {
        /// The entry, in the engine's ABI.
        entry: RawVariantFn,
        /// Keeps the code alive.
        _program: &'a ClifProgram,
    },
    /// An interpreter.
    Interp(Box<InterpCell<'a>>),
    /// The host calling a script object (see `cases::hook`).
    Hook(Box<HookCell<'a>>),
}

/// What the interpreter's raw entry works on.
pub struct InterpCell<'a> {
    interp: Interp<'a>,
    run: FuncId,
    error: Option<ScriptError>,
    source: &'a lang::SourceFile,
}

impl Loaded {
    /// Set up calls from the current thread.
    pub fn runner(&self) -> Result<Runner<'_>, String> {
        Ok(match self {
            Loaded::Jit { program, run } => Runner::Jit {
                entry: program
                    .raw_entry::<JitRunFn>(*run)
                    .map_err(|e| e.to_string())?,
                vmctx: Box::new(program.vm_context()),
                _program: program,
            },
            Loaded::Object { program, run } => Runner::Jit {
                entry: program
                    .as_program()
                    .raw_entry::<JitRunFn>(*run)
                    .map_err(|e| e.to_string())?,
                vmctx: Box::new(program.vm_context()),
                _program: program.as_program(),
            },
            Loaded::Clif { program, addr } => Runner::Clif {
                // SAFETY: `addr` is `%run` of `program`, finalized and alive while the borrow
                // lasts; `check_clif_signature` proved its signature is
                // `(i64, i64) -> i64 system_v`, which is the engine's raw ABI (two integer
                // arguments, an integer result, the platform C convention).
                entry: unsafe { std::mem::transmute::<*const u8, RawVariantFn>(*addr) },
                _program: program,
            },
            Loaded::Interp { program, run } => Runner::Interp(Box::new(InterpCell {
                interp: Interp::new(program, Checks::On).map_err(|e| e.render(&program.source))?,
                run: *run,
                error: None,
                source: &program.source,
            })),
            Loaded::JitHook { program, entry } => Runner::Hook(Box::new(HookCell::compiled(
                program.global_handle(super::hook::TARGET),
                *entry,
                program.source(),
            )?)),
            Loaded::InterpHook {
                program,
                target,
                entry,
            } => {
                let interp =
                    Interp::new(program, Checks::On).map_err(|e| e.render(&program.source))?;
                Runner::Hook(Box::new(HookCell::interpreted(
                    interp,
                    *target,
                    *entry,
                    &program.source,
                )?))
            }
        })
    }
}

/// The interpreter behind the engine's raw ABI; a script error is kept in the cell and the
/// sample returns 0 (the matrix reports the error after the job).
extern "C-unwind" fn interp_entry(ctx: *mut c_void, n: u64) -> u64 {
    // SAFETY: `Runner::variant` passes a pointer to a live, boxed `InterpCell` that nothing
    // else uses while the variant runs (see its contract).
    let cell = unsafe { &mut *(ctx as *mut InterpCell<'_>) };
    match cell
        .interp
        .call(cell.run, &[crate::backend::Value::I64(n as i64)])
    {
        Ok(crate::backend::Value::I64(v)) => v as u64,
        Ok(_) => 0,
        Err(e) => {
            cell.error.get_or_insert(e);
            0
        }
    }
}

impl Runner<'_> {
    /// Run `run(n)` once, outside any measurement, and return its checksum.
    pub fn checked(&mut self, n: i64) -> Result<i64, String> {
        match self {
            Runner::Jit {
                entry,
                vmctx,
                _program,
            } => {
                let (f, ctx) = (*entry, &mut **vmctx as *mut VmCtx);
                // SAFETY: `entry` is the program's `run`, alive while `_program` is borrowed,
                // called with its own context, inside `catch_script` as `raw_entry` requires.
                catch_script(Span::default(), || unsafe { f(ctx, n) })
                    .map_err(|e| e.render(_program.source()))
            }
            Runner::Clif { entry, .. } => {
                let f = *entry;
                // SAFETY: the signature was checked; `ctx` is unused by `.clif` cases.
                catch_script(
                    Span::default(),
                    || unsafe { f(std::ptr::null_mut(), n as u64) } as i64,
                )
                .map_err(|e| format!("{e}"))
            }
            Runner::Interp(cell) => {
                let run = cell.run;
                match cell.interp.call(run, &[crate::backend::Value::I64(n)]) {
                    Ok(crate::backend::Value::I64(v)) => Ok(v),
                    Ok(other) => Err(format!("`run` returned {other}, not an i64")),
                    Err(e) => Err(e.render(cell.source)),
                }
            }
            Runner::Hook(cell) => cell.checked(n),
        }
    }

    /// An engine variant that calls `run(n)` through the raw ABI.
    ///
    /// # Safety
    /// The variant points into `self`: drop it (and the job holding it) before `self`, and run
    /// it on the current thread only. JIT code may unwind a `ScriptError`: run the job inside
    /// `catch_script`.
    pub unsafe fn variant(&mut self, name: &str) -> Variant {
        match self {
            Runner::Jit { entry, vmctx, .. } => {
                // SAFETY: `JitRunFn` and `RawVariantFn` have the same ABI: a pointer and a
                // 64-bit integer in, a 64-bit integer out, under the C convention;
                // `*mut VmCtx`/`*mut c_void` and `i64`/`u64` pass in the same registers.
                let raw = unsafe { std::mem::transmute::<JitRunFn, RawVariantFn>(*entry) };
                let ctx = &mut **vmctx as *mut VmCtx as *mut c_void;
                // SAFETY: `ctx` is the boxed context of this runner, valid while it lives
                // (the caller's contract), and used by this variant only.
                unsafe { Variant::raw(name, raw, ctx) }
            }
            // SAFETY: the entry ignores its context; the code lives while `self` does.
            Runner::Clif { entry, .. } => unsafe {
                Variant::raw(name, *entry, std::ptr::null_mut())
            },
            Runner::Interp(cell) => {
                let ctx = &mut **cell as *mut InterpCell<'_> as *mut c_void;
                // SAFETY: `interp_entry` takes exactly this boxed cell, valid while `self`
                // lives (the caller's contract).
                unsafe { Variant::raw(name, interp_entry, ctx) }
            }
            Runner::Hook(cell) => {
                let ctx = &mut **cell as *mut HookCell<'_> as *mut c_void;
                // SAFETY: `hook_entry` takes exactly this boxed cell, valid while `self` lives
                // (the caller's contract).
                unsafe { Variant::raw(name, hook_entry, ctx) }
            }
        }
    }

    /// A script error raised during measurement (interpreter and host calls; JIT errors
    /// unwind).
    pub fn take_error(&mut self) -> Option<String> {
        match self {
            Runner::Interp(cell) => cell.error.take().map(|e| e.render(cell.source)),
            Runner::Hook(cell) => cell.take_error(),
            _ => None,
        }
    }
}
