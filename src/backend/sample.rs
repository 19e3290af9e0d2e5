//! What the measurement engine calls: a loaded program's workload set up on the current
//! thread ([`Sampler`]), and the one place each kind of code becomes a raw variant.
//!
//! - Compiled code (`jit`, `jit-opt`, `object`): the script's `fn NAME(n: i64) -> i64`, called
//!   directly with a context made for this thread. A script error unwinds out of the sample, so
//!   the job must run inside `catch_script`.
//! - `.clif` code: `%run(ctx, n)`, whose signature was checked to be the engine's raw ABI, behind
//!   the one typed wrapper [`ClifRun`].
//! - Loops the host runs (the interpreter's `run(n)`, the host calling a script object): one
//!   rule, [`kept_entry`]: a script error is kept and the sample returns 0; the first error is
//!   reported after the job ([`Sampler::take_error`]). A flag given to
//!   [`Sampler::stop_on_error`] is raised with the first error, so a job watching it ends at
//!   once instead of measuring to its budget.

use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::backend::Value;
use crate::backend::interp::Interp;
use crate::backend::jit::clif::ClifProgram;
use crate::backend::jit::{JitProgram, VmCtx};
use crate::lang::SourceFile;
use crate::lang::hir::FuncId;
use crate::lang::span::Span;
use crate::measure::{RawVariantFn, Variant};
use crate::runtime::{ScriptError, ScriptErrorKind, catch_script};

/// A script error raised while running a workload.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WorkloadFault {
    /// Script code raised; shown against the source its span points into.
    #[error("{}", error.render(script))]
    Script {
        /// The error.
        error: ScriptError,
        /// The script's source text.
        script: Arc<SourceFile>,
    },
    /// `.clif` code raised (a host function panicked): there is no source to show.
    #[error("{0}")]
    Clif(ScriptError),
}

impl WorkloadFault {
    /// The error the script raised.
    pub fn script_error(&self) -> &ScriptError {
        match self {
            WorkloadFault::Script { error, .. } | WorkloadFault::Clif(error) => error,
        }
    }
}

/// The typed entry of a script's `fn NAME(n: i64) -> i64` in compiled code.
pub(crate) type LoopEntry = unsafe extern "C-unwind" fn(*mut VmCtx, i64) -> i64;

/// A `.clif` script's `%run(ctx, n) -> i64 system_v`: the engine's raw ABI (its `ctx` is
/// ignored). The one place a `.clif` code address becomes a function pointer.
#[derive(Clone, Copy)]
pub(crate) struct ClifRun(RawVariantFn);

impl ClifRun {
    /// # Safety
    /// `addr` must be finalized code whose signature was checked to be `(i64, i64) -> i64
    /// system_v`, alive for as long as the returned value is used.
    pub(crate) unsafe fn new(addr: *const u8) -> ClifRun {
        // SAFETY: the caller's contract: a live function with the signature `(i64, i64) -> i64
        // system_v`, which is the engine's raw ABI (two integer arguments, an integer result,
        // the platform C convention); `*const u8` and a fn pointer have the same size.
        ClifRun(unsafe { std::mem::transmute::<*const u8, RawVariantFn>(addr) })
    }

    fn call(self, n: i64) -> Result<i64, ScriptError> {
        // SAFETY: `new`'s contract; the code ignores its context.
        catch_script(
            Span::default(),
            || unsafe { (self.0)(std::ptr::null_mut(), n as u64) } as i64,
        )
    }
}

/// A loop the host runs on a script, `n` iterations per call, returning a checksum.
pub(crate) trait HostLoop {
    /// Run it once.
    fn run(&mut self, n: u64) -> Result<i64, ScriptError>;
}

/// The interpreter's `fn NAME(n: i64) -> i64`.
pub(crate) struct InterpLoop<'a, 'p> {
    pub(crate) interp: &'a mut Interp<'p>,
    pub(crate) function: FuncId,
}

impl HostLoop for InterpLoop<'_, '_> {
    fn run(&mut self, n: u64) -> Result<i64, ScriptError> {
        match self.interp.call(self.function, &[Value::I64(n as i64)])? {
            Value::I64(v) => Ok(v),
            other => Err(ScriptError::new(
                ScriptErrorKind::BadCall(format!("the loop returned {other}, not an i64")),
                Span::default(),
            )),
        }
    }
}

/// A host loop and the first error a measured sample of it raised.
struct Kept<'a, L> {
    body: L,
    error: Option<ScriptError>,
    source: Arc<SourceFile>,
    /// Raised with the first error (the job's cancel flag), when one is given.
    stop: Option<&'a AtomicBool>,
}

/// The one rule for host loops measured through the raw ABI: a script error is kept in the
/// cell and the sample returns 0 (the error is reported after the job).
extern "C-unwind" fn kept_entry<L: HostLoop>(ctx: *mut c_void, n: u64) -> u64 {
    // SAFETY: `Sampler::variant` passes a pointer to a live, boxed `Kept<L>` that nothing else
    // uses while the variant runs (see its contract).
    let cell = unsafe { &mut *(ctx as *mut Kept<'_, L>) };
    match cell.body.run(n) {
        Ok(v) => v as u64,
        Err(e) => {
            cell.error.get_or_insert(e);
            if let Some(stop) = cell.stop {
                stop.store(true, Ordering::Relaxed);
            }
            0
        }
    }
}

/// A [`Kept`] loop, whatever its body.
trait HostSampler<'a> {
    fn stop_on_error(&mut self, flag: &'a AtomicBool);
    fn checked(&mut self, n: i64) -> Result<i64, WorkloadFault>;
    /// # Safety
    /// As [`Sampler::variant`].
    unsafe fn variant(&mut self, name: &str) -> Variant;
    fn take_error(&mut self) -> Option<WorkloadFault>;
}

impl<'a, L: HostLoop> HostSampler<'a> for Kept<'a, L> {
    fn stop_on_error(&mut self, flag: &'a AtomicBool) {
        self.stop = Some(flag);
    }

    fn checked(&mut self, n: i64) -> Result<i64, WorkloadFault> {
        let source = &self.source;
        self.body
            .run(n.max(0) as u64)
            .map_err(|error| WorkloadFault::Script {
                error,
                script: Arc::clone(source),
            })
    }

    unsafe fn variant(&mut self, name: &str) -> Variant {
        let ctx = self as *mut Kept<'a, L> as *mut c_void;
        // SAFETY: `kept_entry::<L>` takes exactly this boxed cell, valid while the sampler
        // lives (the caller's contract).
        unsafe { Variant::raw(name, kept_entry::<L>, ctx) }
    }

    fn take_error(&mut self) -> Option<WorkloadFault> {
        let source = &self.source;
        self.error.take().map(|error| WorkloadFault::Script {
            error,
            script: Arc::clone(source),
        })
    }
}

enum Kind<'a> {
    /// Compiled code and its context.
    Native {
        entry: LoopEntry,
        vmctx: Box<VmCtx>,
        source: Arc<SourceFile>,
        _program: &'a JitProgram,
    },
    /// `.clif` code.
    Clif {
        entry: ClifRun,
        _program: &'a ClifProgram,
    },
    /// A loop the host runs.
    Host(Box<dyn HostSampler<'a> + 'a>),
}

/// A loaded program's workload set up to be called from the current thread: run it once
/// ([`Sampler::checked`]), or hand it to the engine ([`Sampler::variant`]).
pub struct Sampler<'a>(Kind<'a>);

impl<'a> Sampler<'a> {
    pub(crate) fn native(
        entry: LoopEntry,
        program: &'a JitProgram,
        source: Arc<SourceFile>,
    ) -> Sampler<'a> {
        Sampler(Kind::Native {
            entry,
            vmctx: Box::new(program.vm_context()),
            source,
            _program: program,
        })
    }

    pub(crate) fn clif(entry: ClifRun, program: &'a ClifProgram) -> Sampler<'a> {
        Sampler(Kind::Clif {
            entry,
            _program: program,
        })
    }

    pub(crate) fn interp<'p: 'a>(body: InterpLoop<'a, 'p>, source: Arc<SourceFile>) -> Self {
        Sampler(Kind::Host(Box::new(Kept {
            body,
            error: None,
            source,
            stop: None,
        })))
    }

    /// The host's calls on a script object (errors shown against `source`).
    pub fn hook<'p: 'a>(cell: super::hook::HookCell<'a, 'p>, source: Arc<SourceFile>) -> Self {
        Sampler(Kind::Host(Box::new(Kept {
            body: cell,
            error: None,
            source,
            stop: None,
        })))
    }

    /// Run the workload once with `n`, outside any measurement, and return its checksum.
    pub fn checked(&mut self, n: i64) -> Result<i64, WorkloadFault> {
        match &mut self.0 {
            Kind::Native {
                entry,
                vmctx,
                source,
                ..
            } => {
                let (f, ctx) = (*entry, &mut **vmctx as *mut VmCtx);
                // SAFETY: `entry` is the program's loop function, alive while `_program` is
                // borrowed, called with its own context, inside `catch_script` as `raw_entry`
                // requires.
                catch_script(Span::default(), || unsafe { f(ctx, n) }).map_err(|error| {
                    WorkloadFault::Script {
                        error,
                        script: Arc::clone(source),
                    }
                })
            }
            Kind::Clif { entry, .. } => entry.call(n).map_err(WorkloadFault::Clif),
            Kind::Host(cell) => cell.checked(n),
        }
    }

    /// An engine variant named `name` that runs the workload through the raw ABI.
    ///
    /// # Safety
    /// The variant points into `self`: drop it (and the job holding it) before `self`, and run
    /// it on the current thread only. Compiled code may unwind a `ScriptError`: run the job
    /// inside `catch_script`.
    pub unsafe fn variant(&mut self, name: &str) -> Variant {
        match &mut self.0 {
            Kind::Native { entry, vmctx, .. } => {
                // SAFETY: `LoopEntry` and `RawVariantFn` have the same ABI: a pointer and a
                // 64-bit integer in, a 64-bit integer out, under the C convention;
                // `*mut VmCtx`/`*mut c_void` and `i64`/`u64` pass in the same registers.
                let raw = unsafe { std::mem::transmute::<LoopEntry, RawVariantFn>(*entry) };
                let ctx = &mut **vmctx as *mut VmCtx as *mut c_void;
                // SAFETY: `ctx` is the boxed context of this sampler, valid while it lives
                // (the caller's contract), and used by this variant only.
                unsafe { Variant::raw(name, raw, ctx) }
            }
            // SAFETY: the entry ignores its context; the code lives while `self` does.
            Kind::Clif { entry, .. } => unsafe {
                Variant::raw(name, entry.0, std::ptr::null_mut())
            },
            // SAFETY: the caller's contract, passed on.
            Kind::Host(cell) => unsafe { cell.variant(name) },
        }
    }

    /// Raise `flag` when a host loop keeps its first error while measured (pass the job's
    /// cancel flag: the job then ends at once and the caller reports [`Sampler::take_error`]).
    /// Compiled code needs none: its errors unwind out of the job.
    pub fn stop_on_error(&mut self, flag: &'a AtomicBool) {
        if let Kind::Host(cell) = &mut self.0 {
            cell.stop_on_error(flag);
        }
    }

    /// The first script error a host loop kept during measurement (compiled code's errors
    /// unwind instead).
    pub fn take_error(&mut self) -> Option<WorkloadFault> {
        match &mut self.0 {
            Kind::Host(cell) => cell.take_error(),
            _ => None,
        }
    }
}
