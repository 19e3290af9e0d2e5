//! A ladder made real: the snippet compiled by the JIT, a runtime class whose `call` method is
//! that code, one object of it, and one row per step and build, each a variant of one
//! measurement job.
//!
//! **The method ABI.** The snippet's `fn call() -> i64` is compiled as a script function,
//! `extern "C-unwind" fn(vmctx) -> i64`, and put in the class's slot as the method
//! `extern "C-unwind" fn(vmctx, this) -> i64`. On SysV x86-64 (the only target hotlab's JIT
//! builds for) arguments travel in registers (`rdi`, `rsi`), so the callee simply never reads
//! `rsi`: calling a function with one argument more than it takes is well defined at the machine
//! level, and no wrapper frame is added to the path being measured.

use std::ffi::c_void;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::aot::{CALL_SLOT, aot_fn};
use super::clif::row_clif;
use super::code::{CodeBlock, rust_function_bytes};
use super::helpers::RowCtx;
use super::path::Path;
use super::real::{HOST_CALL_CASE, HOST_CALL_CASE_NAME, rung_fn};
use super::spec::{Ladder, Layer};
use crate::backend::hook::HookCell;
use crate::backend::jit::clif::{ClifFunction, ClifProgram};
use crate::backend::jit::{Jit, JitOptions, JitProgram, OptLevel, VmCtx};
use crate::backend::{Backend, HookVia, LoadOptions, Loaded, Sampler, Value, Workload};
use crate::lang::Program;
use crate::lang::SourceFile;
use crate::measure::{JobResult, MeasureError, Observer, RawVariantFn, Settings, Variant};
use crate::runtime::ScriptError;
use crate::runtime::class::{ClassDef, ClassRef, DefineError, Field, FieldType, Init, MethodDef};
use crate::runtime::handle::Handle;
use crate::runtime::iface::{Hook, HookCall, Returned, Signature};
use crate::runtime::rt::Runtime;

/// The snippet used when none is given: the empty method.
pub const DEFAULT_SNIPPET: &str =
    "// The empty method: what a call costs when the method does nothing.
fn call() -> i64 {
    return 1
}
";

/// True when the program's `call` does more than return a literal (`return 1`): work its
/// native twin, which only returns the value, does not do.
pub fn method_does_work(program: &Program) -> bool {
    use crate::lang::hir::{ExprKind, StmtKind};
    let Some(id) = program.function_named("call") else {
        return false;
    };
    // A literal, or an operator applied to one (`return -1`): a constant, no work.
    fn constant(e: &crate::lang::hir::Expr) -> bool {
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) => true,
            ExprKind::Unary(_, inner) => constant(inner),
            _ => false,
        }
    }
    match program.function(id).body.stmts.as_slice() {
        [only] => !matches!(&only.kind, StmtKind::Return(Some(e)) if constant(e)),
        _ => true,
    }
}

/// The ladder as it is measured around `program`'s `call`: with a `method body` row
/// ([`Ladder::with_body`]) when the method does work its native twin does not
/// ([`method_does_work`]), so that work lands on no layer. [`LadderBench::build`] measures this
/// ladder; a front end draws its plan from it, so the table keeps its shape when the rows come.
pub fn around_method(ladder: Ladder, program: &Program) -> Ladder {
    if method_does_work(program) {
        ladder.with_body()
    } else {
        ladder
    }
}

/// How a row's call path is compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Build {
    /// Emitted as Cranelift IR around the snippet's function.
    Jit,
    /// Compiled by rustc from the runtime's `CallPath` wrappers.
    Aot,
    /// Not a model: the runtime's own functions (the `rt-*` rungs), or the bench's row itself.
    Runtime,
}

impl fmt::Display for Build {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Build::Jit => "jit",
            Build::Aot => "aot",
            Build::Runtime => "runtime",
        })
    }
}

/// The method the class gets: the snippet's code, or (for tests) any code with the method ABI.
pub enum CalledMethod<'a> {
    /// A checked program with `fn call() -> i64`.
    Snippet(&'a Program),
    /// `extern "C-unwind" fn(vmctx, this) -> i64`, with the value one call returns.
    Code {
        /// The code.
        code: *const c_void,
        /// What the native twin returns.
        value: i64,
    },
}

/// Why a ladder could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The snippet lacks `fn call() -> i64` or has another signature.
    #[error("the snippet must define `fn call() -> i64` (the method the ladder calls): {0}")]
    NoCall(NoCall),
    /// JIT compilation failed.
    #[error("cannot compile: {0}")]
    Jit(#[from] crate::backend::jit::JitError),
    /// The first call of `call` raised.
    #[error("the snippet's `call` raised an error on its first call: {0}")]
    Raised(ScriptError),
    /// The runtime refused the class or the object, or a row's code is not there.
    #[error("cannot make the script object: {0}")]
    Runtime(RowSetupError),
}

/// How the snippet's `call` is not the `fn call() -> i64` a ladder needs.
#[derive(Debug, thiserror::Error)]
pub enum NoCall {
    /// There is none.
    #[error("there is no function `call`")]
    Missing,
    /// It has another signature.
    #[error("{0}")]
    Signature(crate::backend::jit::JitError),
    /// It returned something other than an `i64`.
    #[error("it returned {0}")]
    Returned(Value),
}

/// What failed in making the script object and the rows around it.
#[derive(Debug, thiserror::Error)]
pub enum RowSetupError {
    /// The runtime refused the class.
    #[error("{0}")]
    Define(DefineError),
    /// The class's `call` is not in slot 0, where the rows read it.
    #[error("`call` did not get slot 0")]
    Slot,
    /// The object could not be made or reached.
    #[error("{0}")]
    Object(ScriptError),
    /// The binary has no ahead-of-time function for this path.
    #[error("no aot function for {0}")]
    NoAot(Path),
    /// Row `i`'s `.clif` function is missing from the compiled text.
    #[error("row {0} was not compiled")]
    NotCompiled(usize),
    /// A row function lacks the raw ABI.
    #[error("`{0}` does not have the raw ABI (i64, i64) -> i64")]
    NotRaw(String),
    /// The bench's host-call case (the `bench` rung) did not load on the `jit` backend.
    #[error("the bench's case {name}: {0}", name = super::real::HOST_CALL_CASE_NAME)]
    BenchCase(String),
}

/// The native twin: a Rust object behind `&dyn Hook` returning what the snippet returns.
#[derive(Debug)]
pub struct NativeTwin {
    value: i64,
}

impl Hook for NativeTwin {
    #[inline(never)]
    extern "C-unwind" fn call(&self) -> Returned {
        Returned::ok(std::hint::black_box(self.value))
    }
}

/// How a row runs its loop of `n` calls: the native twin's Rust loop, or a raw-ABI function
/// (an `aot` loop or a `jit` row's generated one).
enum RowLoop {
    Native(Arc<NativeTwin>),
    /// The floor of a `new` ladder: `Arc::new` of the same field, read, dropped.
    NativeNew,
    Raw(RawVariantFn),
    /// The bench's own sampler (the `bench` rung). Owned (from `Box::into_raw`, freed on drop);
    /// it borrows the bench's loaded case, which the `LadderBench` drops after its rows.
    Bench(*mut Sampler<'static>),
}

/// One row: a step of the ladder in one build.
pub struct LadderRow {
    /// Index of the step in the ladder.
    pub step: usize,
    /// The build (`None` for the native row).
    pub build: Option<Build>,
    /// The call path.
    pub path: Path,
    /// The row's machine code (empty for the native row).
    pub code: Vec<CodeBlock>,
    /// The generated IR (`jit` rows).
    pub clif: String,
    row_loop: RowLoop,
    /// Owned (from `Box::into_raw`, freed on drop): a raw pointer so that a row may be entered
    /// again from inside its own call (recursion through the border) without aliasing a `&mut`.
    ctx: *mut RowCtx,
}

impl Drop for LadderRow {
    fn drop(&mut self) {
        // SAFETY: `ctx` came from `Box::into_raw` and is freed only here.
        drop(unsafe { Box::from_raw(self.ctx) });
        if let RowLoop::Bench(s) = self.row_loop {
            // SAFETY: as `ctx`; the program it borrows is still alive (see `RowLoop::Bench`).
            drop(unsafe { Box::from_raw(s) });
        }
    }
}

impl LadderRow {
    /// `jit slot read` / `native`.
    pub fn label(&self, ladder: &Ladder) -> String {
        let title = &ladder.steps[self.step].title;
        match self.build {
            Some(b) => format!("{b} {title}"),
            None => title.clone(),
        }
    }

    /// Instructions of the row's call-path code (0 for native).
    pub fn instructions(&self) -> usize {
        self.code.iter().map(CodeBlock::instructions).sum()
    }

    /// Run `n` calls directly (not timed): the checksum, and the first fault if any.
    ///
    /// Must be called on the thread that built the bench (the row holds its call record).
    pub fn run(&mut self, n: u64) -> (u64, Option<ScriptError>) {
        self.take_fault();
        // SAFETY: this thread built the row (the caller's duty, as documented).
        let sum = unsafe { self.enter(n) };
        (sum, self.take_fault())
    }

    /// Run `n` calls; may be re-entered from inside the row's own method (a fault stays in the
    /// context until [`LadderRow::take_fault`]).
    ///
    /// # Safety
    /// Call it on the thread that built the bench, while the bench lives.
    pub unsafe fn enter(&self, n: u64) -> u64 {
        match &self.row_loop {
            RowLoop::Native(t) => native_loop(t, n),
            RowLoop::NativeNew => native_new_loop(n),
            // SAFETY: `f` is this row's function with the raw ABI and `ctx` its live context
            // (see `LadderBench::build`), used on the thread that made it.
            RowLoop::Raw(f) => unsafe { f(self.ctx as *mut c_void, n) },
            RowLoop::Bench(s) => {
                // SAFETY: the sampler is this row's, set up on this thread (the caller's duty);
                // nothing else uses it while the row runs.
                match unsafe { (**s).checked(n as i64) } {
                    Ok(v) => v as u64,
                    Err(e) => {
                        // SAFETY: `ctx` is live and this row's.
                        let ctx = unsafe { &mut *self.ctx };
                        ctx.fault
                            .get_or_insert_with(|| Box::new(e.script_error().clone()));
                        0
                    }
                }
            }
        }
    }

    /// The first fault recorded since the last take.
    pub fn take_fault(&self) -> Option<ScriptError> {
        let kept = match self.row_loop {
            // SAFETY: the sampler is this row's and not running (as for `ctx` below).
            RowLoop::Bench(s) => unsafe { (*s).take_error() }.map(|e| e.script_error().clone()),
            _ => None,
        };
        // SAFETY: `ctx` is live; nothing runs the row while this plain read-modify happens on
        // the row's thread (generated code only writes it inside a call).
        unsafe { (*self.ctx).fault.take().map(|e| *e) }.or(kept)
    }
}

/// The field of the `new` ladder's objects, in the native twin.
struct NativeOne {
    n: i64,
}

/// The `new` ladder's floor: `n` times an `Arc` of one `i64` field made, read and dropped (the
/// bench's `new_free` twin; the black box keeps the allocation real).
fn native_new_loop(n: u64) -> u64 {
    let mut s = 0i64;
    for i in 0..n as i64 {
        let o = std::hint::black_box(Arc::new(NativeOne { n: i }));
        s = s.wrapping_add(o.n);
    }
    s as u64
}

fn native_loop(twin: &NativeTwin, n: u64) -> u64 {
    let hook: &dyn Hook = std::hint::black_box(twin);
    let mut sum = 0u64;
    for _ in 0..n {
        sum = sum.wrapping_add(hook.call().into_result().unwrap_or(0) as u64);
    }
    sum
}

/// A built ladder. Fields drop in order: rows, then the object, the class and the runtime,
/// then the code, then the context the code was given.
pub struct LadderBench {
    /// The ladder.
    pub ladder: Ladder,
    /// The rows, in step order (the native row first, then each step's builds).
    pub rows: Vec<LadderRow>,
    /// The bench's host-call case on the `jit` backend, when a `bench` rung measures it (after
    /// `rows`: the rung's sampler borrows it, and drops first).
    _bench_case: Option<Box<Loaded>>,
    /// What one call returns (the native twin's value).
    pub value: i64,
    handle: Handle,
    class: ClassRef,
    /// Boxed: the `new-*` rungs' contexts point at it.
    runtime: Box<Runtime>,
    _clif: Option<ClifProgram>,
    _program: Option<JitProgram>,
    _jit: Jit,
    _vmctx: Box<VmCtx>,
}

impl LadderBench {
    /// Build every row of `ladder` for `builds`, on the calling thread (which must be the one
    /// that measures: the rows hold its call record and stack limit).
    pub fn build(
        mut ladder: Ladder,
        method: CalledMethod<'_>,
        builds: &[Build],
    ) -> Result<LadderBench, BuildError> {
        let mut jit = Jit::new(JitOptions {
            opt: OptLevel::Speed,
            ..JitOptions::default()
        })?;
        let (program, code, value, mut vmctx) = match method {
            CalledMethod::Snippet(p) => {
                ladder = around_method(ladder, p);
                let program = jit.compile(p)?;
                let id = program
                    .function_named("call")
                    .ok_or(BuildError::NoCall(NoCall::Missing))?;
                program
                    .raw_entry::<unsafe extern "C-unwind" fn(*mut VmCtx) -> i64>(id)
                    .map_err(|e| BuildError::NoCall(NoCall::Signature(e)))?;
                let value = match program.call(id, &[]).map_err(BuildError::Raised)? {
                    Value::I64(v) => v,
                    other => return Err(BuildError::NoCall(NoCall::Returned(other))),
                };
                let addr = program.functions()[id.index()].addr as *const c_void;
                let vmctx = Box::new(program.vm_context());
                (Some(program), addr, value, vmctx)
            }
            CalledMethod::Code { code, value } => (
                None,
                code,
                value,
                Box::new(VmCtx::for_current_thread(&[], 0)),
            ),
        };
        // The `direct` path is the host entry of a fixed runtime (`jit-opt`'s), sound only there.
        let runtime = Box::new(if ladder.steps.iter().any(|s| s.layer == Layer::Direct) {
            Runtime::fixed()
        } else {
            Runtime::new()
        });
        // A `new` ladder's objects have one `i64` field, which each rung writes and reads (as
        // the bench's `new_free` case does); a call ladder's have none.
        let new_ladder = ladder.steps.iter().any(|s| s.layer.is_new());
        let fields = if new_ladder {
            vec![Field {
                name: "n".into(),
                ty: FieldType::I64,
                init: Init::Bits(0),
            }]
        } else {
            vec![]
        };
        let class = runtime
            .define(ClassDef {
                name: "Snippet".into(),
                parent: None,
                fields,
                methods: vec![MethodDef {
                    name: "call".into(),
                    sig: HookCall::sig(),
                    code,
                    host_entry: std::ptr::null(),
                }],
                vmctx: &mut *vmctx as *mut VmCtx as *mut c_void,
            })
            .map_err(|e| BuildError::Runtime(RowSetupError::Define(e)))?;
        if class.slot_of("call").map(|s| s.get()) != Some(CALL_SLOT) {
            return Err(BuildError::Runtime(RowSetupError::Slot));
        }
        let object = |e| BuildError::Runtime(RowSetupError::Object(e));
        let handle = runtime.new_object(&class).map_err(object)?;
        let obj = handle.get().map_err(object)?;

        let twin = Arc::new(NativeTwin { value });
        // Declared before `rows`, so that on an early return (`?` below) the rows, whose bench
        // sampler borrows this case, are dropped first (locals drop in reverse order).
        let mut bench_case: Option<Box<Loaded>> = None;
        let mut rows = Vec::new();
        for (step, layers) in ladder.cumulative().into_iter().enumerate() {
            let path = match Path::of(&layers) {
                Path::Native if new_ladder => Path::NativeNew,
                path => path,
            };
            let builds: Vec<Option<Build>> = match path {
                Path::Native | Path::NativeNew => vec![None],
                Path::Runtime(_) => vec![Some(Build::Runtime)],
                _ => builds.iter().copied().map(Some).collect(),
            };
            for build in builds {
                let row_loop = match build {
                    None if new_ladder => RowLoop::NativeNew,
                    None => RowLoop::Native(Arc::clone(&twin)),
                    Some(Build::Runtime) => {
                        let Path::Runtime(layer) = path else {
                            unreachable!("only runtime rungs have the runtime build")
                        };
                        let mut ctx = RowCtx::new(obj);
                        if layer.is_new() {
                            ctx.new_in = Some((class.clone(), &*runtime as *const Runtime));
                        }
                        let (row_loop, code) = if layer == Layer::Bench {
                            // One bench rung per ladder (a layer appears once): a second
                            // `insert` would drop the case the first row's sampler borrows.
                            debug_assert!(bench_case.is_none(), "two bench rungs");
                            let loaded = bench_case.insert(Box::new(load_host_call_case()?));
                            let loaded: *mut Loaded = &mut **loaded;
                            // SAFETY: the box's contents stay where they are until the `LadderBench`
                            // drops it, after its rows (field order), so the sampler's borrow,
                            // widened to 'static here, never outlives what it borrows.
                            let sampler = unsafe { &mut *loaded }
                                .sampler(&Workload::Hook(HookVia::Handle))
                                .map_err(|e| {
                                    BuildError::Runtime(RowSetupError::BenchCase(e.to_string()))
                                })?;
                            let sampler: Sampler<'static> =
                                // SAFETY: as above; only the lifetime changes.
                                unsafe { std::mem::transmute::<Sampler<'_>, Sampler<'static>>(sampler) };
                            (
                                RowLoop::Bench(Box::into_raw(Box::new(sampler))),
                                host_loop_code(),
                            )
                        } else {
                            if layer == Layer::RtHandle {
                                ctx.hook = Some(
                                    HookCell::compiled(Some(handle.clone()), HookVia::Handle)
                                        .map_err(|e| {
                                            BuildError::Runtime(RowSetupError::BenchCase(
                                                e.to_string(),
                                            ))
                                        })?,
                                );
                            }
                            let (f, addr) = rung_fn(layer).ok_or_else(|| {
                                BuildError::Runtime(RowSetupError::NoAot(path.clone()))
                            })?;
                            let code = vec![CodeBlock {
                                name: format!("{path}"),
                                addr: addr as u64,
                                // SAFETY: `addr` is a function of this binary.
                                bytes: unsafe { rust_function_bytes(addr) },
                            }];
                            (RowLoop::Raw(f), code)
                        };
                        rows.push(LadderRow {
                            step,
                            build,
                            code,
                            path: path.clone(),
                            clif: String::new(),
                            row_loop,
                            ctx: Box::into_raw(Box::new(ctx)),
                        });
                        continue;
                    }
                    // Filled in below, once the whole `.clif` text is compiled.
                    Some(Build::Jit) => RowLoop::Native(Arc::clone(&twin)),
                    Some(Build::Aot) => {
                        let (f, lp) = aot_fn(&path).ok_or_else(|| {
                            BuildError::Runtime(RowSetupError::NoAot(path.clone()))
                        })?;
                        rows.push(LadderRow {
                            step,
                            build,
                            code: vec![CodeBlock {
                                name: format!("aot_loop::<{path}>"),
                                addr: lp as u64,
                                // SAFETY: `lp` is a monomorphized function of this binary.
                                bytes: unsafe { rust_function_bytes(lp) },
                            }],
                            path: path.clone(),
                            clif: String::new(),
                            row_loop: RowLoop::Raw(f),
                            ctx: Box::into_raw(Box::new(RowCtx::new(obj))),
                        });
                        continue;
                    }
                };
                rows.push(LadderRow {
                    step,
                    build,
                    path: path.clone(),
                    code: Vec::new(),
                    clif: String::new(),
                    row_loop,
                    ctx: Box::into_raw(Box::new(RowCtx::new(obj))),
                });
            }
        }

        let mut text = String::new();
        for (i, row) in rows.iter_mut().enumerate() {
            if row.build == Some(Build::Jit) {
                row.clif = row_clif(i, &row.path);
                text.push_str(&row.clif);
            }
        }
        let clif = if text.is_empty() {
            None
        } else {
            Some(jit.load_clif(&text)?)
        };
        if let Some(clif) = &clif {
            for (i, row) in rows.iter_mut().enumerate() {
                if row.build != Some(Build::Jit) {
                    continue;
                }
                let prefix = format!("r{i}_");
                let entry = clif
                    .function(&format!("r{i}_row"))
                    .ok_or(BuildError::Runtime(RowSetupError::NotCompiled(i)))?;
                // SAFETY: `%rK_row` is generated by `row_clif` with exactly the raw ABI
                // `(i64 ctx, i64 n) -> i64` (checked here), and its code lives while `clif`
                // (kept in the bench) does.
                let f = unsafe { raw_fn(entry)? };
                row.row_loop = RowLoop::Raw(f);
                row.code = clif
                    .functions()
                    .iter()
                    .filter(|f| f.name.starts_with(&prefix) && !f.name.ends_with("_row"))
                    .map(|f| CodeBlock {
                        name: f.name.clone(),
                        addr: f.code.addr,
                        bytes: f.code.bytes.clone(),
                    })
                    .collect();
            }
        }
        Ok(LadderBench {
            ladder,
            rows,
            _bench_case: bench_case,
            value,
            handle,
            class,
            runtime,
            _clif: clif,
            _program: program,
            _jit: jit,
            _vmctx: vmctx,
        })
    }

    /// The faults rows recorded while measured (taken out of their contexts).
    pub fn take_faults(&mut self) -> Vec<Option<ScriptError>> {
        self.rows.iter_mut().map(|r| r.take_fault()).collect()
    }

    /// The script object every row calls.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Its class.
    pub fn class(&self) -> &ClassRef {
        &self.class
    }

    /// The runtime that owns them.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Measure every row, interleaved, in one job on the calling thread (the native row is the
    /// baseline).
    pub fn measure(
        &mut self,
        settings: Settings,
        cancel: &AtomicBool,
        observer: &mut dyn Observer,
    ) -> Result<JobResult, MeasureError> {
        let mut job = crate::measure::Job::new(Settings {
            baseline: 0,
            ..settings
        });
        let ladder = &self.ladder;
        for row in &mut self.rows {
            let name = row.label(ladder);
            let v = match &row.row_loop {
                RowLoop::Native(t) => {
                    let t = Arc::clone(t);
                    Variant::native(name, move |n| native_loop(&t, n))
                }
                RowLoop::NativeNew => Variant::native(name, native_new_loop),
                // SAFETY: the row's function has the raw ABI; its context lives in the row,
                // which outlives the job (the job is dropped at the end of this function), and
                // the job runs on this thread, the one the context was made on.
                RowLoop::Raw(f) => unsafe { Variant::raw(name, *f, row.ctx as *mut c_void) },
                // SAFETY: the bench's own variant of its sampler, which the row owns and which
                // outlives the job; run on this thread, the one it was set up on.
                RowLoop::Bench(s) => unsafe { (**s).variant(&name) },
            };
            job = job.with(v);
        }
        job.run(cancel, observer)
    }
}

/// The machine code of the bench's host loop (`HookCell::run`, which its sampler's entry
/// calls once per sample): the code of the `bench` row's calls.
fn host_loop_code() -> Vec<CodeBlock> {
    use crate::backend::sample::HostLoop;
    let f: fn(&mut HookCell<'static, 'static>, u64) -> Result<i64, ScriptError> =
        <HookCell<'static, 'static> as HostLoop>::run;
    let addr = f as *const c_void as usize;
    vec![CodeBlock {
        name: "HookCell::run".into(),
        addr: addr as u64,
        // SAFETY: `addr` is a function of this binary.
        bytes: unsafe { rust_function_bytes(addr) },
    }]
}

/// The bench's host-call case loaded on the `jit` backend as `hotlab bench` loads it (the
/// cases' loader options: no verifier, checks on).
fn load_host_call_case() -> Result<Loaded, BuildError> {
    let source = Arc::new(SourceFile::new(HOST_CALL_CASE_NAME, HOST_CALL_CASE));
    let options = LoadOptions {
        verify: false,
        ..LoadOptions::default()
    };
    crate::backend::load(source, Backend::Jit, &options)
        .map_err(|e| BuildError::Runtime(RowSetupError::BenchCase(e.to_string())))
}

/// The row function of a compiled `.clif` row, typed, after checking its signature.
///
/// # Safety
/// The function must have been generated with the raw ABI semantics (a loop of `n` calls).
unsafe fn raw_fn(f: &ClifFunction) -> Result<RawVariantFn, BuildError> {
    use cranelift_codegen::ir::types::I64;
    if f.params != [I64, I64] || f.returns != [I64] {
        return Err(BuildError::Runtime(RowSetupError::NotRaw(f.name.clone())));
    }
    // SAFETY: checked above; the address is finalized code; fn pointers and addresses have one
    // representation.
    Ok(unsafe { std::mem::transmute::<usize, RawVariantFn>(f.code.addr as usize) })
}

#[cfg(test)]
mod tests {
    use super::method_does_work;

    fn program(text: &str) -> crate::lang::Program {
        let source = crate::lang::SourceFile::new("m.hot", text.to_string());
        crate::lang::compile(std::sync::Arc::new(source)).unwrap_or_else(|d| panic!("{d}"))
    }

    #[test]
    fn a_constant_is_no_work_and_anything_else_is() {
        assert!(!method_does_work(&program("fn call() -> i64 { return 1 }")));
        assert!(!method_does_work(&program(
            "fn call() -> i64 { return -1 }"
        )));
        assert!(!method_does_work(&program(
            "fn call() -> i64 { return (~7) }"
        )));
        assert!(method_does_work(&program(
            "fn call() -> i64 { var s = 0\n for i in 0..10 { s += i }\n return s }"
        )));
        assert!(method_does_work(&program(
            "fn k() -> i64 { return 2 }\nfn call() -> i64 { return k() }"
        )));
    }
}
