//! The `jit` backend: a long-lived Cranelift JIT that compiles checked programs (and `.clif`
//! files) into callable machine code in this process.
//!
//! One [`Jit`] owns the ISA, the `JITModule`, one `codegen::Context` and one
//! `FunctionBuilderContext`, both reused (cleared) for every function, as cranelift-jit-demo
//! does. Each [`Jit::compile`] defines the program's functions under fresh symbols
//! (`hot.p<serial>.<name>`), so a new version of a function (a reload) lives alongside the old
//! one and old code stays valid while anything can still call it.
//!
//! # Lifetime of code
//! Code memory and its registered unwind info belong to a shared keeper: the [`Jit`] and every
//! [`JitProgram`] hold it, and the last one dropped deregisters the frames and frees the code.
//! So a program may outlive the `Jit` that made it.

mod call;
pub mod clif;
pub(crate) mod compile;
pub(crate) mod entry;
pub(crate) mod epilogue;
pub mod helper_table;
pub(crate) mod host_entry;
pub mod layout;
pub(crate) mod lower;
mod lower_array;
mod lower_builtin;
mod lower_closure;
mod lower_downcast;
mod lower_expr;
mod lower_index;
mod lower_loop;
mod lower_object;
mod lower_range;
mod lower_refcount;
mod lower_region;
pub(crate) mod lower_unwind;
mod lower_util;
mod lower_value;

pub mod module;
mod opt_bounds;
pub(crate) mod opt_branches;
pub(crate) mod opt_cfg;
mod opt_effects;
mod opt_globals;
pub(crate) mod opt_inline;
mod opt_object;
mod opt_vec;
mod opt_walk;
mod perf_map;
pub mod unwind;

use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cranelift_codegen::ir::{self, AbiParam, types};
use cranelift_codegen::isa::unwind::UnwindInfo;
use cranelift_codegen::isa::{CallConv, OwnedTargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::{Context, print_errors, verifier};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module};

use crate::backend::Checks;
use crate::runtime::ScriptError;
use crate::runtime::host::{HostType, host_table};
use crate::runtime::sweep::{self, CodeRegistration, FrameMap};

pub(crate) use call::{GlobalsBlock, ProgramParts};
pub use call::{JitProgram, RawEntry, RawScalar};
pub use helper_table::VmCtx;
pub use module::{ReloadFailure, ReloadOutcome, ReloadRefusal, ScriptModule};

pub(crate) use lower::Helpers;
use unwind::{CatchSites, FrameParts, RegisteredFrames};

/// Which runtime a program is compiled for (Cranelift's own optimizer runs on every level:
/// see [`build_isa`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OptLevel {
    /// A reloadable program (the `jit` and `object` backends): calls through class slots,
    /// objects whose state a reload replaces, callees inlined only into host entries.
    #[default]
    None,
    /// A fixed program (`jit-opt`): fields inline in the objects, direct calls, small callees
    /// inlined, module variables in registers; no reload.
    Speed,
}

/// Options fixed when a [`Jit`] is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JitOptions {
    /// Index bounds checks in generated code.
    pub checks: Checks,
    /// Run the Cranelift verifier on every function before compiling it.
    pub verify: bool,
    /// Optimization level.
    pub opt: OptLevel,
    /// Bytes every function's code starts past its usual 64-byte line (a multiple of 16; see
    /// [`layout`]); 0 is the usual placement.
    pub code_offset: u16,
}

impl Default for JitOptions {
    fn default() -> Self {
        JitOptions {
            checks: Checks::On,
            verify: cfg!(debug_assertions),
            opt: OptLevel::None,
            code_offset: 0,
        }
    }
}

/// Why compiling or loading failed.
#[derive(Debug, thiserror::Error)]
pub enum JitError {
    /// The host cannot run Cranelift code, or a setting was refused.
    #[error("cannot set up the JIT: {0}")]
    Setup(String),
    /// The HIR breaks a rule the lowering relies on (a checker bug, or hand-built HIR).
    #[error("cannot lower `{function}`: {message}")]
    Lower {
        /// The function.
        function: String,
        /// What is wrong.
        message: String,
    },
    /// The Cranelift verifier rejected a function.
    #[error("Cranelift verifier rejected `{function}`:\n{message}")]
    Verifier {
        /// The function.
        function: String,
        /// The verifier's listing with the errors.
        message: String,
    },
    /// Cranelift failed to compile or link a function.
    #[error("cannot compile `{function}`: {message}")]
    Compile {
        /// The function.
        function: String,
        /// Cranelift's message.
        message: String,
    },
    /// A `.clif` text could not be parsed or does not follow the import convention.
    #[error(transparent)]
    Clif(#[from] clif::ClifError),
    /// No function with that name.
    #[error("no function named `{0}`")]
    UnknownFunction(String),
    /// A function was called with the wrong number or types of arguments.
    #[error("cannot call `{function}`: {message}")]
    BadCall {
        /// The function.
        function: String,
        /// What did not match.
        message: String,
    },
    /// The object runtime refused the program's classes (a reload that changes a method's
    /// signature or a class's parent, ...).
    #[error(transparent)]
    Objects(#[from] crate::backend::objects::ObjectsError),
    /// The program's initializer raised an error.
    #[error("initializer failed: {0}")]
    Init(ScriptError),
    /// Running a `.clif` function raised an error (a host function panicked).
    #[error("{0}")]
    Run(ScriptError),
}

/// The machine code, IR and timings of one compiled function.
#[derive(Debug, Clone)]
pub struct CompiledFunction {
    /// The name (script name, `.clif` name, or `<name>.entry` for a trampoline).
    pub name: String,
    /// The module symbol (unique per version).
    pub symbol: String,
    /// Finalized address of the first instruction.
    pub addr: u64,
    /// Code size in bytes.
    pub size: usize,
    /// The finalized bytes (relocations applied).
    pub bytes: Vec<u8>,
    /// The CLIF text before compilation.
    pub clif: String,
    /// Cranelift's own listing (VCode), when disassembly capture is on.
    pub vcode: Option<String>,
    /// Time to build the IR (HIR lowering; zero for `.clif`).
    pub lower_time: Duration,
    /// Time to verify (when on), compile and emit it.
    pub compile_time: Duration,
    /// The cells its frame owns at each call that can raise (released by the sweep when a
    /// `ScriptError` unwinds through it: `runtime::sweep`).
    pub frame_map: Arc<FrameMap>,
}

/// A function defined in the module but not yet finalized.
struct Defined {
    id: FuncId,
    info: CompiledFunction,
    unwind: Option<UnwindInfo>,
    /// Its `try_call` sites and their handlers (for the personality routine's LSDA).
    catches: CatchSites,
}

/// What compiling one function gives: code size, Cranelift's listing, unwind info, frame map,
/// catching call sites.
type DefinedParts = (
    usize,
    Option<String>,
    Option<UnwindInfo>,
    Arc<FrameMap>,
    CatchSites,
);

/// What must live as long as any code from the module can run.
struct Parked {
    module: Option<JITModule>,
    frames: Vec<RegisteredFrames>,
    /// The functions' frame maps, registered for the sweep.
    maps: Vec<CodeRegistration>,
}

/// Shared owner of code memory and unwind registrations (see the module docs).
pub(crate) struct CodeKeeper(Mutex<Parked>);

impl Drop for CodeKeeper {
    fn drop(&mut self) {
        let parked = match self.0.get_mut() {
            Ok(p) => p,
            Err(poisoned) => poisoned.into_inner(),
        };
        // Deregister before the code goes away.
        parked.frames.clear();
        parked.maps.clear();
        if let Some(module) = parked.module.take() {
            // SAFETY: this is the last owner: the `Jit` and every `JitProgram` (the only ways
            // to reach the code) are gone, so no pointer into the module is used again.
            unsafe { module.free_memory() };
        }
    }
}

/// The long-lived Cranelift JIT (see the module docs).
pub struct Jit {
    module: ManuallyDrop<JITModule>,
    ctx: Context,
    fctx: FunctionBuilderContext,
    keeper: Arc<CodeKeeper>,
    options: JitOptions,
    call_conv: CallConv,
    hosts: Vec<FuncId>,
    helpers: Helpers,
    serial: u64,
    disasm: bool,
}

/// Every symbol generated code may import, with its address: the host table's functions and
/// the runtime's helpers (also what `hotlab asm` names a call target by).
pub fn imported_symbols() -> Vec<(&'static str, *const u8)> {
    let mut symbols: Vec<(&'static str, *const u8)> =
        host_table().iter().map(|h| (h.symbol, h.ptr)).collect();
    symbols.extend(helper_table::helper_symbols());
    symbols.extend(crate::runtime::values::helper_symbols());
    symbols.extend(crate::runtime::closure::helper_symbols());
    symbols.extend(lower_downcast::helper_symbols());
    symbols.extend(host_entry::helper_symbols());
    symbols.extend(crate::runtime::math::helper_symbols());
    symbols.extend(crate::runtime::output::helper_symbols());
    symbols.extend(crate::runtime::strings::helper_symbols());
    symbols.extend(crate::runtime::ranges::helper_symbols());
    symbols
}

impl Jit {
    /// A JIT for this machine with `options`.
    pub fn new(options: JitOptions) -> Result<Jit, JitError> {
        let isa = build_isa(false)?;
        let call_conv = isa.default_call_conv();
        let mut builder = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
        for (symbol, ptr) in imported_symbols() {
            builder.symbol(symbol, ptr);
        }
        // Code near the host's text (see `near`), at the layout's offset.
        builder.memory_provider(Box::new(layout::CodeMemory::new(options.code_offset)));
        let mut module = JITModule::new(builder);
        let (hosts, helpers) = declare_imports(&mut module, call_conv)?;
        let ctx = module.make_context();
        Ok(Jit {
            module: ManuallyDrop::new(module),
            ctx,
            fctx: FunctionBuilderContext::new(),
            keeper: Arc::new(CodeKeeper(Mutex::new(Parked {
                module: None,
                frames: Vec::new(),
                maps: Vec::new(),
            }))),
            options,
            call_conv,
            hosts,
            helpers,
            serial: 0,
            disasm: false,
        })
    }

    /// The options this JIT was made with.
    pub fn options(&self) -> JitOptions {
        self.options
    }

    /// Capture Cranelift's own listing ([`CompiledFunction::vcode`]) for functions compiled
    /// from now on.
    pub fn set_disasm(&mut self, on: bool) {
        // Kept here and applied per function: `Context::clear` resets it.
        self.disasm = on;
    }

    /// A fresh version number for symbols.
    fn next_serial(&mut self) -> u64 {
        self.serial += 1;
        self.serial
    }

    /// Verify (when on) and compile the function in `self.ctx` as `id`, then clear the context.
    fn define(&mut self, lowered: compile::Lowered) -> Result<Defined, JitError> {
        let compile::Lowered {
            id,
            name,
            symbol,
            func,
            lower_time,
            verify,
            returns_from_handlers,
        } = lowered;
        self.ctx.func = func;
        let clif = self.ctx.func.display().to_string();
        self.ctx.set_disasm(self.disasm);
        let start = Instant::now();
        let result = self.define_current(id, &name, verify, returns_from_handlers);
        let compile_time = start.elapsed();
        let defined = result.map(|(size, vcode, unwind, frame_map, catches)| Defined {
            id,
            info: CompiledFunction {
                name,
                symbol,
                addr: 0,
                size,
                bytes: Vec::new(),
                clif,
                vcode,
                lower_time,
                compile_time,
                frame_map,
            },
            unwind,
            catches,
        });
        self.module.clear_context(&mut self.ctx);
        defined
    }

    fn define_current(
        &mut self,
        id: FuncId,
        name: &str,
        verify: bool,
        returns_from_handlers: bool,
    ) -> Result<DefinedParts, JitError> {
        if verify && let Err(errors) = verifier::verify_function(&self.ctx.func, self.module.isa())
        {
            return Err(JitError::Verifier {
                function: name.to_string(),
                message: print_errors::pretty_verifier_error(&self.ctx.func, None, errors),
            });
        }
        epilogue::define_rewritten(&mut *self.module, id, &mut self.ctx).map_err(|e| {
            JitError::Compile {
                function: name.to_string(),
                message: match e {
                    cranelift_module::ModuleError::Compilation(err) => {
                        print_errors::pretty_error(&self.ctx.func, err)
                    }
                    other => other.to_string(),
                },
            }
        })?;
        let compiled = self.ctx.compiled_code().ok_or_else(|| JitError::Compile {
            function: name.to_string(),
            message: "no compiled code after define".into(),
        })?;
        let size = compiled.code_buffer().len();
        let vcode = compiled.vcode.clone();
        let unwind = compiled
            .create_unwind_info(self.module.isa())
            .map_err(|e| JitError::Compile {
                function: name.to_string(),
                message: format!("unwind info: {e}"),
            })?;
        let catches = CatchSites::of(compiled.buffer.call_sites());
        let sweep_stops = if returns_from_handlers {
            Vec::new()
        } else {
            catches.returns()
        };
        let frame_map = lower_unwind::frame_map(&compiled.buffer)
            .with_catches(sweep_stops)
            .with_origin(name, lower_unwind::source_locs(&compiled.buffer));
        Ok((size, vcode, unwind, Arc::new(frame_map), catches))
    }

    /// Finalize everything defined, register its unwind info, and fill in addresses and bytes.
    fn finalize(
        &mut self,
        defined: Vec<Defined>,
        source: Option<Arc<crate::lang::span::SourceFile>>,
    ) -> Result<Vec<CompiledFunction>, JitError> {
        self.module
            .finalize_definitions()
            .map_err(|e| JitError::Setup(format!("cannot finalize code: {e}")))?;
        let mut frames = Vec::new();
        let mut maps = Vec::with_capacity(defined.len());
        let mut out = Vec::with_capacity(defined.len());
        for mut d in defined {
            let ptr = self.module.get_finalized_function(d.id);
            d.info.addr = ptr as u64;
            // SAFETY: `ptr` is finalized code of `size` bytes (the emitted buffer), mapped
            // readable and executable for as long as the module lives.
            d.info.bytes = unsafe { std::slice::from_raw_parts(ptr, d.info.size) }.to_vec();
            if let Some(info) = d.unwind.take() {
                frames.push(FrameParts {
                    code: ptr,
                    info,
                    catches: std::mem::take(&mut d.catches),
                });
            }
            maps.push((ptr as usize, d.info.size, Arc::clone(&d.info.frame_map)));
            out.push(d.info);
        }
        perf_map::append(&out);
        // Into the keeper, which drops it before freeing the code.
        let maps = sweep::register(maps, source);
        self.lock_keeper().maps.push(maps);
        // SAFETY: every address is the start of the finalized function its info describes; the
        // registration goes into the keeper, which drops it before freeing the code.
        let registered = unsafe { RegisteredFrames::register(self.module.isa(), frames) }
            .map_err(|e| JitError::Setup(e.to_string()))?;
        if let Some(r) = registered {
            self.lock_keeper().frames.push(r);
        }
        Ok(out)
    }

    fn lock_keeper(&self) -> std::sync::MutexGuard<'_, Parked> {
        match self.keeper.0.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    pub(crate) fn keeper(&self) -> Arc<CodeKeeper> {
        Arc::clone(&self.keeper)
    }
}

impl Drop for Jit {
    fn drop(&mut self) {
        // SAFETY: `module` is taken exactly once, here, and never used afterwards.
        let module = unsafe { ManuallyDrop::take(&mut self.module) };
        // Park the module in the keeper: programs made by this JIT may still run its code.
        self.lock_keeper().module = Some(module);
    }
}

/// Declare the host table (in table order: `.clif` files name them `u0:0`, `u0:1`, ...) and
/// the runtime helpers as imports of `module`. The JIT resolves them to addresses given to its
/// builder; the `object` backend's shared library resolves them at `dlopen` against the
/// executable's exported `hot_*` symbols.
pub(crate) fn declare_imports(
    module: &mut dyn Module,
    call_conv: CallConv,
) -> Result<(Vec<FuncId>, Helpers), JitError> {
    let setup = |e: cranelift_module::ModuleError| JitError::Setup(e.to_string());
    // Host imports first, in table order: `.clif` files name them `u0:0`, `u0:1`, ...
    let mut hosts = Vec::new();
    for host in host_table() {
        let mut sig = ir::Signature::new(call_conv);
        for p in host.sig.params {
            sig.params.push(AbiParam::new(host_type(*p)));
        }
        if host.sig.ret != HostType::Unit {
            sig.returns.push(AbiParam::new(host_type(host.sig.ret)));
        }
        hosts.push(
            module
                .declare_function(host.symbol, Linkage::Import, &sig)
                .map_err(setup)?,
        );
    }
    let host = host_entry::HostEntryHelpers::declare(module, call_conv).map_err(JitError::Setup)?;
    // Errors as strings: `ModuleError` is too large to pass around by value.
    let mut declare = |name: &str, params: &[ir::Type], ret: Option<ir::Type>| {
        let mut sig = ir::Signature::new(call_conv);
        sig.params.extend(params.iter().map(|t| AbiParam::new(*t)));
        sig.returns.extend(ret.map(AbiParam::new));
        module
            .declare_function(name, Linkage::Import, &sig)
            .map_err(|e| JitError::Setup(format!("{name}: {e}")))
    };
    let (i32t, i64t, f64t) = (types::I32, types::I64, types::F64);
    let helpers = Helpers {
        div_zero: declare("hot_raise_div_zero", &[i32t, i32t], None)?,
        index: declare("hot_raise_index", &[i64t, i64t, i32t, i32t], None)?,
        assert: declare("hot_raise_assert", &[i32t, i32t], None)?,
        stack: declare("hot_raise_stack", &[i64t, i32t, i32t, i32t], None)?,
        fmod: declare("hot_fmod", &[f64t, f64t], Some(f64t))?,
        object_new: declare("hot_object_new", &[i64t, i32t, i32t, i32t], Some(i64t))?,
        object_new_fixed: declare(
            "hot_object_new_fixed",
            &[i64t, i32t, i32t, i32t],
            Some(i64t),
        )?,
        object_check: declare("hot_object_check", &[i64t, i32t, i32t], Some(i64t))?,
        retain: declare("hot_object_retain", &[i64t], Some(i64t))?,
        release: declare("hot_object_release", &[i64t], None)?,
        free_last: declare("hot_object_free_last", &[i64t], None)?,
        counts_contend: declare("hot_counts_contend", &[i64t], None)?,
        empty_slot: declare("hot_raise_empty_slot", &[i64t, i32t, i32t], None)?,
        vec_retain: declare("hot_vec_retain", &[i64t], Some(i64t))?,
        vec_release: declare("hot_vec_release", &[i64t], None)?,
        vec_unique: declare("hot_vec_unique", &[i64t, i64t], Some(i64t))?,
        vec_push: declare("hot_vec_push", &[i64t, i64t], None)?,
        vec_pop: declare("hot_vec_pop", &[i64t, i32t, i32t], Some(i64t))?,
        vec_at: declare("hot_vec_at", &[i64t, i64t, i32t, i32t], Some(i64t))?,
        str_retain: declare("hot_str_retain", &[i64t], Some(i64t))?,
        str_release: declare("hot_str_release", &[i64t], None)?,
        str_lit: declare("hot_str_lit", &[i64t, i64t], Some(i64t))?,
        str_concat: declare("hot_str_concat", &[i64t, i64t], Some(i64t))?,
        str_append: declare("hot_str_append", &[i64t, i64t], Some(i64t))?,
        str_build: declare("hot_str_build", &[i64t, i64t], Some(i64t))?,
        str_eq: declare("hot_str_eq", &[i64t, i64t], Some(types::I8))?,
        str_of_i64: declare("hot_str_of_i64", &[i64t], Some(i64t))?,
        str_of_f64: declare("hot_str_of_f64", &[f64t], Some(i64t))?,
        str_of_bool: declare("hot_str_of_bool", &[types::I8], Some(i64t))?,
        str_of_handle: declare("hot_str_of_handle", &[i64t], Some(i64t))?,
        str_of_vec: declare("hot_str_of_vec", &[i64t], Some(i64t))?,
        str_of_array: declare("hot_str_of_array", &[i64t, i64t, i64t, i64t], Some(i64t))?,
        array_box: declare("hot_array_box", &[i64t, i64t, i64t, i64t], Some(i64t))?,
        array_unbox: declare("hot_array_unbox", &[i64t, i64t, i64t, i64t, i64t], None)?,
        array_heap: declare("hot_array_heap", &[i64t], Some(i64t))?,
        closure_new: declare("hot_closure_new", &[i64t, i64t], Some(i64t))?,
        closure_retain: declare("hot_closure_retain", &[i64t], Some(i64t))?,
        closure_release: declare("hot_closure_release", &[i64t], None)?,
        str_of_closure: declare("hot_str_of_closure", &[i64t], Some(i64t))?,
        null_closure: declare("hot_raise_null_closure", &[i32t, i32t], None)?,
        builtins: lower_builtin::BuiltinHelpers::declare(&mut declare)?,
        host,
    };
    Ok((hosts, helpers))
}

fn host_type(t: HostType) -> ir::Type {
    match t {
        HostType::I64 | HostType::Unit => types::I64,
        HostType::F64 => types::F64,
        HostType::Bool => types::I8,
    }
}

/// The ISA for this machine; `pic` for code linked into a shared library.
///
/// Every backend runs Cranelift's optimizer (`opt_level=speed`) on each function: GVN,
/// loop-invariant code motion, redundant-load elimination, constant folding, magic-number
/// division. It works inside one function, so a reloadable program (`jit`, `object`) keeps its
/// meaning under reload: what a reload can change is never a `readonly` load, and a call is a
/// barrier to every load and store. What differs between `jit` and `jit-opt` is the runtime
/// ([`OptLevel`]): slots and reload, or direct calls, inline fields and inlined callees.
pub(crate) fn build_isa(pic: bool) -> Result<OwnedTargetIsa, JitError> {
    let setup = |e: String| JitError::Setup(e);
    let mut flags = settings::builder();
    for (name, value) in [
        ("opt_level", "speed"),
        ("is_pic", if pic { "true" } else { "false" }),
        ("use_colocated_libcalls", "false"),
        ("unwind_info", "true"),
        // Every function starts on a 64-byte cache line, in JIT memory and in a shared library
        // alike: where a loop falls relative to cache lines (and so its speed) then depends on
        // its own code only, not on the functions compiled before it, and the jit and object
        // backends place the same code the same way.
        ("log2_min_function_alignment", "6"),
        // We run the verifier ourselves (when asked) to report errors with the function name.
        ("enable_verifier", "false"),
    ] {
        flags
            .set(name, value)
            .map_err(|e| setup(format!("{name}={value}: {e}")))?;
    }
    let isa_builder = cranelift_native::builder().map_err(|e| setup(e.to_string()))?;
    isa_builder
        .finish(settings::Flags::new(flags))
        .map_err(|e| setup(e.to_string()))
}

#[cfg(test)]
mod send_check {
    fn is_send<T: Send>() {}

    /// A session may build the JIT and its programs on one thread and hand them to a worker.
    #[test]
    fn jit_and_programs_can_move_to_another_thread() {
        is_send::<super::Jit>();
        is_send::<super::JitProgram>();
        is_send::<super::clif::ClifProgram>();
    }
}
