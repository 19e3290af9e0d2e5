//! The one way a script becomes "a program on a backend": [`load`] (or a long-lived
//! [`Loader`]) gives a [`Loaded`], which runs `main`, calls a function, lists machine code,
//! reloads a new version, and sets up a measured [`Workload`] ([`Loaded::sampler`]).
//! `hotlab run`, `hotlab asm`, `hotlab check`, `hotlab bench` and the worker's jobs all go
//! through it.
//!
//! ```text
//! source ──load──▶ Loaded ─┬─ run_main / call          (hotlab run, the worker's run jobs)
//!  (.hot: lang, checked)   ├─ machine_code             (hotlab asm, :asm)
//!                          ├─ reload                   (--reload, :reload)
//!                          └─ sampler(workload) ─▶ Sampler ─ checked / variant (check, bench)
//! ```
//!
//! A `.hot` script (any name not ending in `.clif`) goes through the front end, then the
//! backend: `jit`/`jit-opt` compile it in a JIT, `object` builds, links and loads a shared
//! library, `interp` makes an interpreter that owns the program. Each runs the module
//! initializer. A `.clif` script (raw Cranelift IR) loads on `jit`/`jit-opt` only.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::hook::{HookCell, HookError, HookVia, TARGET, target_global};
use super::interp::Interp;
use super::jit::clif::ClifProgram;
use super::jit::{
    CompiledFunction, Jit, JitError, JitOptions, JitProgram, OptLevel, ReloadFailure,
    ReloadOutcome, ReloadRefusal, ScriptModule,
};
use super::load_times::LoadTimes;
use super::object::{ObjectError, ObjectOptions, StageTimings, compile_object};
use super::sample::{ClifRun, InterpLoop, LoopEntry, Sampler, WorkloadFault};
use super::{Backend, Checks, Value};
use crate::lang::hir::{FuncId, Program, Type};
use crate::lang::{self, Diagnostics, SourceFile};
use crate::runtime::ScriptError;

/// How [`load`] builds a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOptions {
    /// Index bounds checks in generated code.
    pub checks: Checks,
    /// Run the Cranelift verifier on every function (on in debug builds).
    pub verify: bool,
    /// Load it so that [`Loaded::reload`] works (a `ScriptModule` on `jit`, `jit-opt` and
    /// `object`; the interpreter always reloads).
    pub reloadable: bool,
    /// The code placement of `jit` and `jit-opt` code ([`super::jit::layout::code_offset`]); 0 is
    /// the usual one.
    pub layout: usize,
}

impl Default for LoadOptions {
    /// The JIT's defaults (checks on, the verifier in debug builds), not reloadable.
    fn default() -> Self {
        let jit = JitOptions::default();
        LoadOptions {
            checks: jit.checks,
            verify: jit.verify,
            reloadable: false,
            layout: 0,
        }
    }
}

/// What a measured sample runs, `n` iterations at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workload {
    /// `fn NAME(n: i64) -> i64` runs n iterations and returns a checksum (a `.clif` script:
    /// `function %run(i64, i64) -> i64 system_v`, taking ctx and n).
    Loop(String),
    /// The host calls `Hook.call` n times on the object in the module variable `target`.
    Hook(HookVia),
}

/// Why a script cannot be loaded on a backend.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The backend does not run `.clif` scripts.
    #[error("{}", .0.refuses_clif().unwrap_or("the backend refuses .clif scripts"))]
    HotOnly(Backend),
    /// The `.hot` source does not compile (render the diagnostics against the source).
    #[error("the script does not compile")]
    Front(Diagnostics),
    /// The script has no such workload.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// The JIT could not be made.
    #[error(transparent)]
    Setup(JitError),
    /// Compiling (or loading a `.clif` text) failed.
    #[error(transparent)]
    Jit(JitError),
    /// The object backend could not build, link or load the library.
    #[error(transparent)]
    Object(ObjectError),
    /// The module initializer raised.
    #[error("initializer failed: {0}")]
    Init(ScriptError),
}

/// Why a script has not the workload asked for.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// No function of that name.
    #[error("no `fn {0}(n: i64) -> i64`")]
    NoFunction(String),
    /// The function is not `fn NAME(n: i64) -> i64`.
    #[error("`{function}` must be `fn {function}(n: i64) -> i64`, not ({params}) -> {ret}")]
    NotALoop {
        /// The function.
        function: String,
        /// Its parameter types.
        params: String,
        /// Its result type.
        ret: String,
    },
    /// A `.clif` loop must be `%run`.
    #[error("a measured .clif snippet needs `function %run(i64, i64) -> i64 system_v`")]
    ClifNotRun,
    /// The `.clif` text does not parse.
    #[error("cannot parse .clif: {0}")]
    ClifParse(String),
    /// The `.clif` text has no `%run`.
    #[error("no `function %run(i64, i64) -> i64 system_v` (ctx, n) in the file")]
    NoClifRun,
    /// `%run` has another signature.
    #[error("`%run` must be `(i64, i64) -> i64 system_v` (ctx, n), not `{0}`")]
    ClifSignature(String),
    /// Host calls need a class, so a `.hot` script.
    #[error("`entry = \"{}\"` needs a .hot script (a class the host calls)", .0.name())]
    HookNeedsHot(HookVia),
    /// The script has no object the host can call.
    #[error(transparent)]
    Hook(#[from] HookError),
    /// The compiled function refused the loop's signature.
    #[error(transparent)]
    Entry(JitError),
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// No script function of that name.
    #[error("no function named `{0}`")]
    NoFunction(String),
    /// The script raised.
    #[error(transparent)]
    Raised(WorkloadFault),
    /// A `.clif` function could not be called, or raised.
    #[error(transparent)]
    Clif(JitError),
}

/// Builds programs, keeping one JIT per runtime (reloadable, fixed) across loads (so a load's time is
/// the program's, not the JIT's set-up).
pub struct Loader {
    options: LoadOptions,
    jit: Option<Jit>,
    jit_opt: Option<Jit>,
}

/// Load `source` on `backend` (a one-off [`Loader`]).
pub fn load(
    source: Arc<SourceFile>,
    backend: Backend,
    options: &LoadOptions,
) -> Result<Loaded, LoadError> {
    Loader::new(*options).load(source, backend, None)
}

impl Loader {
    /// A loader building with `options`.
    pub fn new(options: LoadOptions) -> Loader {
        Loader {
            options,
            jit: None,
            jit_opt: None,
        }
    }

    /// Load `source` on `backend`, timing each stage. With a `workload`, check first that the
    /// script has it (before compiling), so [`Loaded::sampler`] can set it up.
    pub fn load(
        &mut self,
        source: Arc<SourceFile>,
        backend: Backend,
        workload: Option<&Workload>,
    ) -> Result<Loaded, LoadError> {
        let start = Instant::now();
        if is_clif(&source) {
            return self.load_clif(source, backend, workload, start);
        }
        let (program, front) = lang::compile_timed(Arc::clone(&source));
        let mut times = LoadTimes {
            parse: Some(front.lex + front.parse),
            check: Some(front.check),
            ..LoadTimes::default()
        };
        let program = program.map_err(LoadError::Front)?;
        if let Some(w) = workload {
            check_workload(&program, w)?;
        }
        let mut loaded = self.build(program, backend, &mut times)?;
        times.total = start.elapsed();
        loaded.times = times;
        Ok(loaded)
    }

    /// Load a program that already went through the front end.
    pub fn load_checked(
        &mut self,
        program: Program,
        backend: Backend,
    ) -> Result<Loaded, LoadError> {
        let start = Instant::now();
        let mut times = LoadTimes::default();
        let mut loaded = self.build(program, backend, &mut times)?;
        times.total = start.elapsed();
        loaded.times = times;
        Ok(loaded)
    }

    fn jit_options(&self, opt: OptLevel) -> JitOptions {
        JitOptions {
            checks: self.options.checks,
            verify: self.options.verify,
            opt,
            code_offset: super::jit::layout::code_offset(self.options.layout),
        }
    }

    /// The long-lived JIT of `backend`'s runtime (reloadable or fixed).
    fn jit(&mut self, backend: Backend) -> Result<&mut Jit, LoadError> {
        let options = self.jit_options(backend.opt_level());
        let slot = match backend.opt_level() {
            OptLevel::Speed => &mut self.jit_opt,
            OptLevel::None => &mut self.jit,
        };
        if slot.is_none() {
            *slot = Some(Jit::new(options).map_err(LoadError::Setup)?);
        }
        Ok(slot.as_mut().expect("made above"))
    }

    fn load_clif(
        &mut self,
        source: Arc<SourceFile>,
        backend: Backend,
        workload: Option<&Workload>,
        start: Instant,
    ) -> Result<Loaded, LoadError> {
        if backend.refuses_clif().is_some() {
            return Err(LoadError::HotOnly(backend));
        }
        let mut times = LoadTimes::default();
        match workload {
            Some(Workload::Hook(how)) => return Err(WorkloadError::HookNeedsHot(*how).into()),
            Some(Workload::Loop(f)) if f != "run" => return Err(WorkloadError::ClifNotRun.into()),
            Some(Workload::Loop(_)) => {
                let t = Instant::now();
                check_clif_signature(&source.text)?;
                times.parse = Some(t.elapsed());
            }
            None => {}
        }
        let jit = self.jit(backend)?;
        let t = Instant::now();
        let program = jit.load_clif(&source.text).map_err(LoadError::Jit)?;
        let wall = t.elapsed();
        let compiled: Duration = program
            .functions()
            .iter()
            .map(|f| f.code.compile_time)
            .sum();
        times.compile = Some(match (workload, program.function("run")) {
            (Some(_), Some(run)) => run.code.compile_time,
            _ => compiled,
        });
        times.load = Some(wall.saturating_sub(compiled));
        times.total = start.elapsed();
        Ok(Loaded {
            backend,
            source,
            times,
            object_stages: None,
            code: Code::Clif(program),
        })
    }

    /// Build a checked program on `backend`, filling in the stage times.
    fn build(
        &mut self,
        program: Program,
        backend: Backend,
        times: &mut LoadTimes,
    ) -> Result<Loaded, LoadError> {
        let source = Arc::clone(&program.source);
        let mut object_stages = None;
        let code = match backend {
            Backend::Interp => {
                let t = Instant::now();
                // Making an interpreter runs the module initializer: its "load".
                let interp =
                    OwnedInterp::new(program, self.options.checks).map_err(LoadError::Init)?;
                times.load = Some(t.elapsed());
                Code::Interp(Box::new(interp))
            }
            _ if self.options.reloadable => {
                let t = Instant::now();
                let module = if backend == Backend::Object {
                    let options = ObjectOptions {
                        jit: self.jit_options(OptLevel::None),
                        ..ObjectOptions::default()
                    };
                    ScriptModule::new_object(program, options).map_err(object_error)?
                } else {
                    let options = self.jit_options(backend.opt_level());
                    ScriptModule::new(program, options).map_err(jit_error)?
                };
                jit_times(module.current(), t.elapsed(), times);
                Code::Module(Box::new(module))
            }
            Backend::Object => {
                let options = ObjectOptions {
                    jit: self.jit_options(OptLevel::None),
                    ..ObjectOptions::default()
                };
                let compiled = compile_object(&program, &options).map_err(object_error)?;
                let t = compiled.timings();
                times.lower = Some(t.lower);
                times.compile = Some(t.define + t.emit);
                times.load = Some(t.link + t.load + t.init);
                object_stages = Some(t);
                Code::Native(Box::new(Native {
                    // The library stays loaded while the program lives.
                    code: compiled.into_program(),
                    checked: program,
                }))
            }
            Backend::Jit | Backend::JitOpt => {
                let jit = self.jit(backend)?;
                let t = Instant::now();
                let code = jit.compile(&program).map_err(jit_error)?;
                jit_times(&code, t.elapsed(), times);
                Code::Native(Box::new(Native {
                    code,
                    checked: program,
                }))
            }
        };
        Ok(Loaded {
            backend,
            source,
            times: LoadTimes::default(),
            object_stages,
            code,
        })
    }
}

fn jit_error(e: JitError) -> LoadError {
    match e {
        JitError::Init(e) => LoadError::Init(e),
        other => LoadError::Jit(other),
    }
}

fn object_error(e: ObjectError) -> LoadError {
    match e {
        ObjectError::Init(e) | ObjectError::Compile(JitError::Init(e)) => LoadError::Init(e),
        other => LoadError::Object(other),
    }
}

/// Lower and compile times of JIT code, and the rest of `wall` as its load.
fn jit_times(code: &JitProgram, wall: Duration, times: &mut LoadTimes) {
    let lower: Duration = code.functions().iter().map(|f| f.lower_time).sum();
    let compile: Duration = code
        .functions()
        .iter()
        .chain(code.entries())
        .map(|f| f.compile_time)
        .sum();
    times.lower = Some(lower);
    times.compile = Some(compile);
    times.load = Some(wall.saturating_sub(lower + compile));
}

/// Whether a source is raw Cranelift IR (its name ends in `.clif`).
pub fn is_clif(source: &SourceFile) -> bool {
    source.name.ends_with(".clif")
}

/// Check that a checked program has `workload`.
fn check_workload(program: &Program, workload: &Workload) -> Result<(), WorkloadError> {
    match workload {
        Workload::Loop(f) => loop_function(program, f).map(drop),
        Workload::Hook(_) => target_global(program).map(drop).map_err(Into::into),
    }
}

/// The function `name` of a checked program, checked to be `fn NAME(n: i64) -> i64`.
fn loop_function(program: &Program, name: &str) -> Result<FuncId, WorkloadError> {
    let id = program
        .function_named(name)
        .ok_or_else(|| WorkloadError::NoFunction(name.to_string()))?;
    let f = program.function(id);
    let params: Vec<&Type> = f.param_types().collect();
    if params != [&Type::I64] || f.ret != Type::I64 {
        return Err(WorkloadError::NotALoop {
            function: name.to_string(),
            params: params
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            ret: f.ret.to_string(),
        });
    }
    Ok(id)
}

/// Check that a `.clif` text has `function %run(i64, i64) -> i64 system_v` (ctx, n): the
/// engine's raw ABI, so it can be called directly.
fn check_clif_signature(text: &str) -> Result<(), WorkloadError> {
    use cranelift_codegen::ir::types::I64;
    use cranelift_codegen::isa::CallConv;
    let functions = cranelift_reader::parse_functions(text)
        .map_err(|e| WorkloadError::ClifParse(e.to_string()))?;
    let f = functions
        .iter()
        .find(|f| f.name.to_string() == "%run")
        .ok_or(WorkloadError::NoClifRun)?;
    let sig = &f.signature;
    let params: Vec<_> = sig.params.iter().map(|p| p.value_type).collect();
    let returns: Vec<_> = sig.returns.iter().map(|p| p.value_type).collect();
    if params != [I64, I64] || returns != [I64] || sig.call_conv != CallConv::SystemV {
        return Err(WorkloadError::ClifSignature(sig.to_string()));
    }
    Ok(())
}

/// An interpreter that owns the programs it runs: the first version and each one a reload
/// gave it.
struct OwnedInterp {
    /// Declared first, so it drops before the programs it borrows.
    interp: Interp<'static>,
    /// Every version, behind `Arc`s that nothing else holds: their addresses never change and
    /// nothing mutates them while the interpreter lives.
    versions: Vec<Arc<Program>>,
}

impl OwnedInterp {
    fn new(program: Program, checks: Checks) -> Result<OwnedInterp, ScriptError> {
        let program = Arc::new(program);
        // SAFETY: see `borrow`.
        let interp = Interp::new(unsafe { borrow(&program) }, checks)?;
        Ok(OwnedInterp {
            interp,
            versions: vec![program],
        })
    }

    fn reload(&mut self, next: Program) -> Result<ReloadOutcome, ReloadFailure> {
        let next = Arc::new(next);
        // SAFETY: see `borrow`; `next` is kept below for as long as the interpreter lives.
        let version = unsafe { borrow(&next) };
        self.versions.push(next);
        self.interp.reload(version)
    }

    fn program(&self) -> &Program {
        self.interp.program()
    }
}

/// A program behind an `Arc` as the interpreter's `'static` borrow.
///
/// # Safety
/// The `Arc` must be kept in [`OwnedInterp::versions`] of the interpreter that gets the
/// reference, which drops (its `interp` field first) before the program; the reference must
/// not leave the `OwnedInterp` with a lifetime longer than a borrow of it.
unsafe fn borrow(program: &Arc<Program>) -> &'static Program {
    // SAFETY: the caller's contract: the program outlives every use of the reference.
    unsafe { &*Arc::as_ptr(program) }
}

/// The code of a loaded program.
enum Code {
    /// `.hot` compiled by a JIT, or built into a shared library that the program keeps
    /// loaded.
    Native(Box<Native>),
    /// `.hot` as a reloadable module (jit, jit-opt, object).
    Module(Box<ScriptModule>),
    /// `.hot` in the interpreter.
    Interp(Box<OwnedInterp>),
    /// `.clif` compiled by a JIT.
    Clif(ClifProgram),
}

/// Compiled code and the checked program it was compiled from.
struct Native {
    checked: Program,
    code: JitProgram,
}

/// A program on a backend (see the module docs).
pub struct Loaded {
    backend: Backend,
    source: Arc<SourceFile>,
    times: LoadTimes,
    object_stages: Option<StageTimings>,
    code: Code,
}

impl Loaded {
    /// The backend it was loaded on.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The source of the current version.
    pub fn source(&self) -> &Arc<SourceFile> {
        match self.program() {
            Some(p) => &p.source,
            None => &self.source,
        }
    }

    /// The time each stage of the load took.
    pub fn times(&self) -> LoadTimes {
        self.times
    }

    /// The object backend's own stage times (lower, define, emit, link, load, init).
    pub fn object_stages(&self) -> Option<StageTimings> {
        self.object_stages
    }

    /// The checked program of the current version (`None` for `.clif`).
    pub fn program(&self) -> Option<&Program> {
        match &self.code {
            Code::Native(n) => Some(&n.checked),
            Code::Module(m) => Some(m.program()),
            Code::Interp(i) => Some(i.program()),
            Code::Clif(_) => None,
        }
    }

    /// The compiled code of the current version (`None` for the interpreter and `.clif`).
    fn native(&self) -> Option<&JitProgram> {
        match &self.code {
            Code::Native(n) => Some(&n.code),
            Code::Module(m) => Some(m.current()),
            Code::Interp(_) | Code::Clif(_) => None,
        }
    }

    /// Call `fn main()` (a `.clif` script: `%main`); see [`Loaded::call`].
    pub fn run_main(&mut self) -> Result<Vec<Value>, CallError> {
        self.call("main")
    }

    /// Call the function `name` with no arguments: one value per result (a script function
    /// has one).
    pub fn call(&mut self, name: &str) -> Result<Vec<Value>, CallError> {
        let source = Arc::clone(self.source());
        let raised = |error| {
            CallError::Raised(WorkloadFault::Script {
                error,
                script: source,
            })
        };
        if let Code::Clif(program) = &self.code {
            return program.run(name, &[]).map_err(CallError::Clif);
        }
        let id = self
            .program()
            .and_then(|p| p.function_named(name))
            .ok_or_else(|| CallError::NoFunction(name.to_string()))?;
        let value = if let Code::Interp(i) = &mut self.code {
            i.interp.call(id, &[])
        } else {
            match self.native() {
                Some(code) => code.call(id, &[]),
                None => unreachable!("every other kind of code is compiled"),
            }
        };
        value.map(|v| vec![v]).map_err(raised)
    }

    /// The machine code of each function, then of the host entries of the methods that
    /// implement a host interface (`None` on the interpreter, which makes none).
    pub fn machine_code(&self) -> Option<Vec<&CompiledFunction>> {
        match &self.code {
            Code::Clif(program) => Some(program.functions().iter().map(|f| &f.code).collect()),
            Code::Interp(_) => None,
            _ => self
                .native()
                .map(|code| code.functions().iter().chain(code.host_entries()).collect()),
        }
    }

    /// Reload from a new version of the source (its classes replace the running ones, live
    /// objects migrate; see `ScriptModule::reload`). Needs a program loaded
    /// [`reloadable`](LoadOptions::reloadable) (or on the interpreter).
    pub fn reload(&mut self, source: Arc<SourceFile>) -> Result<ReloadOutcome, ReloadFailure> {
        match &mut self.code {
            Code::Module(m) => m.reload(source),
            Code::Interp(i) => {
                let next = lang::compile(source).map_err(ReloadFailure::Compile)?;
                i.reload(next)
            }
            Code::Native(_) | Code::Clif(_) => Err(ReloadRefusal::NotReloadable.into()),
        }
    }

    /// Set up `workload` to be run from the current thread.
    pub fn sampler(&mut self, workload: &Workload) -> Result<Sampler<'_>, WorkloadError> {
        let source = Arc::clone(self.source());
        match &mut self.code {
            Code::Clif(program) => clif_sampler(program, workload, &source),
            Code::Interp(owned) => match workload {
                Workload::Loop(f) => {
                    let function = loop_function(owned.program(), f)?;
                    let body = InterpLoop {
                        interp: &mut owned.interp,
                        function,
                    };
                    Ok(Sampler::interp(body, source))
                }
                Workload::Hook(how) => {
                    let target = target_global(owned.program())?;
                    let cell = HookCell::interpreted(&mut owned.interp, target, *how)?;
                    Ok(Sampler::hook(cell, source))
                }
            },
            Code::Native(n) => native_sampler(&n.checked, &n.code, workload, source),
            Code::Module(m) => {
                let m: &ScriptModule = m;
                native_sampler(m.program(), m.current(), workload, source)
            }
        }
    }
}

/// The `%run` of a `.clif` program as a sampler.
fn clif_sampler<'a>(
    program: &'a ClifProgram,
    workload: &Workload,
    source: &SourceFile,
) -> Result<Sampler<'a>, WorkloadError> {
    let run = match workload {
        Workload::Loop(f) if f == "run" => program.function("run"),
        Workload::Loop(_) => return Err(WorkloadError::ClifNotRun),
        Workload::Hook(how) => return Err(WorkloadError::HookNeedsHot(*how)),
    };
    let run = run.ok_or(WorkloadError::NoClifRun)?;
    check_clif_signature(&source.text)?;
    // SAFETY: `%run` is finalized code of `program`, which the sampler borrows for as long as
    // it lives; `check_clif_signature` just proved its signature is the engine's raw ABI.
    let entry = unsafe { ClifRun::new(run.code.addr as *const u8) };
    Ok(Sampler::clif(entry, program))
}

/// A workload of compiled code as a sampler.
fn native_sampler<'a>(
    program: &Program,
    code: &'a JitProgram,
    workload: &Workload,
    source: Arc<SourceFile>,
) -> Result<Sampler<'a>, WorkloadError> {
    match workload {
        Workload::Loop(f) => {
            let function = loop_function(program, f)?;
            let entry: LoopEntry = code.raw_entry(function).map_err(WorkloadError::Entry)?;
            Ok(Sampler::native(entry, code, source))
        }
        Workload::Hook(how) => {
            target_global(program)?;
            let cell = HookCell::compiled(code.global_handle(TARGET), *how)?;
            Ok(Sampler::hook(cell, source))
        }
    }
}
