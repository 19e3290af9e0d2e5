//! `Jit::compile`: a checked program → finalized code, unwind info registered, `<init>` run.

use std::time::{Duration, Instant};

use cranelift_codegen::ir::{self, InstBuilder, TrapCode, UserFuncName, types};
use cranelift_frontend::FunctionBuilder;
use cranelift_module::{FuncId, Linkage, Module};

use std::sync::Arc;

use crate::backend::objects::{ProgramObjects, virtual_methods};
use crate::lang::hir::{self, Program, Type};
use crate::runtime::reload::{Held, ReloadReport};
use crate::runtime::rt::Runtime;

use super::call::{GlobalsBlock, JitProgram, ProgramParts};
use super::entry::{ArgSource, build_entry, entry_signature};
use super::host_entry;
use super::lower::{GlobalsBase, LowerEnv, lower_function, scalar_type, script_signature};
use super::opt_inline::{drop_leaf_checks, inline_small_functions};
use super::{Defined, Jit, JitError};
use crate::runtime::error::{ScriptError, ScriptErrorKind};
use crate::runtime::memory::Refused;

/// A function lowered to CLIF, waiting to be defined.
pub(super) struct Lowered {
    pub id: FuncId,
    pub name: String,
    pub symbol: String,
    pub func: ir::Function,
    pub lower_time: Duration,
    /// Run the verifier even when the options say no (for IR a user wrote).
    pub verify: bool,
    /// The function returns from its exception handlers (a host entry, `host_entry.rs`): the
    /// sweep then releases what its frame owns at a catching call, as at any other, instead of
    /// leaving it to a frame that runs on.
    pub returns_from_handlers: bool,
}

impl Jit {
    /// Compile `program`: every function and its entry trampoline, finalized in one batch,
    /// then run `<init>` once. Symbols are `hot.p<serial>.<name>`, fresh for every call, so
    /// compiling a new version of a program leaves the old code valid.
    ///
    /// With `OptLevel::Speed` (the `jit-opt` backend) the objects live in a fixed runtime
    /// ([`Runtime::fixed`]): fields inline in the shell, no reload.
    pub fn compile(&mut self, program: &Program) -> Result<JitProgram, JitError> {
        self.compile_in(program, Arc::new(self.new_runtime()))
            .map(|(p, _)| p)
    }

    /// The runtime a program compiled by this JIT gets by default: fixed for
    /// `OptLevel::Speed` (`jit-opt`), reloadable otherwise.
    pub fn new_runtime(&self) -> Runtime {
        match self.options.opt {
            super::OptLevel::Speed => Runtime::fixed(),
            super::OptLevel::None => Runtime::new(),
        }
    }

    /// [`Jit::compile`] with the program's objects in `runtime`: a class the runtime already
    /// has (by name) is reloaded with this program's version (its live objects migrate, and
    /// the reports say how), the others are defined. `<init>` runs after that.
    pub fn compile_in(
        &mut self,
        program: &Program,
        runtime: Arc<Runtime>,
    ) -> Result<(JitProgram, Vec<ReloadReport>), JitError> {
        let (made, reports, held) = self.install_in(program, runtime)?;
        // (`ScriptModule::reload` keeps a reloaded program as the current version instead.)
        let made = crate::backend::objects::init_installed(made, held, JitProgram::run_init)
            .map_err(JitError::Init)?;
        Ok((made, reports))
    }

    /// [`Jit::compile_in`] without running `<init>`: once this returns, the runtime's classes
    /// run the new code, so the caller must keep the program (and run `<init>`) whatever
    /// happens next (a reload switches to it even when its `<init>` raises). For a reload,
    /// calls from other threads are held out until the returned [`Held`] goes.
    pub(crate) fn install_in(
        &mut self,
        program: &Program,
        runtime: Arc<Runtime>,
    ) -> Result<(JitProgram, Vec<ReloadReport>, Option<Held>), JitError> {
        let objects = Box::new(ProgramObjects::new(runtime, program));
        let virtuals = virtual_methods(program);
        let serial = self.next_serial();
        let (global_cells, total_cells) = global_layout(program).map_err(JitError::Init)?;
        // Zero cells are every type's zero value (0, 0.0, false), which `<init>` overwrites.
        let mut globals = Vec::new();
        if globals.try_reserve_exact(total_cells as usize).is_err() {
            return Err(JitError::Init(globals_refused(program, Refused::System)));
        }
        globals.resize(total_cells as usize, 0u64);
        let globals = globals.into_boxed_slice();

        let module_err = |name: &str, e: cranelift_module::ModuleError| JitError::Compile {
            function: name.to_string(),
            message: e.to_string(),
        };
        let mut funcs = Vec::with_capacity(program.functions.len());
        let mut entries = Vec::with_capacity(program.functions.len());
        for f in &program.functions {
            let sig = script_signature(f, self.call_conv);
            let symbol = format!("hot.p{serial}.{}", f.name);
            let id = self
                .module
                .declare_function(&symbol, Linkage::Local, &sig)
                .map_err(|e| module_err(&f.name, e))?;
            funcs.push(id);
            let entry = self
                .module
                .declare_function(
                    &format!("{symbol}.entry"),
                    Linkage::Local,
                    &entry_signature(self.call_conv),
                )
                .map_err(|e| module_err(&f.name, e))?;
            entries.push(entry);
        }
        // A host entry for each method that implements a host interface's (`host_entry.rs`).
        let host_methods = host_entry::entry_methods(program);
        let mut host_ids = Vec::with_capacity(host_methods.len());
        for &(f, m) in &host_methods {
            let name = &program.functions[f].name;
            let id = self
                .module
                .declare_function(
                    &format!("hot.p{serial}.{name}.host"),
                    Linkage::Local,
                    &host_entry::entry_signature(m, self.call_conv),
                )
                .map_err(|e| module_err(name, e))?;
            host_ids.push(id);
        }

        // Lower everything first: a HIR problem then leaves nothing half-defined.
        let env = LowerEnv {
            program,
            funcs: &funcs,
            hosts: &self.hosts,
            helpers: self.helpers,
            globals: GlobalsBase::Addr(globals.as_ptr() as i64),
            global_cells: &global_cells,
            checks: self.options.checks,
            call_conv: self.call_conv,
            objects_addr: &*objects as *const ProgramObjects as i64,
            slot_table_addr: objects.slot_offsets.as_ptr() as i64,
            virtuals: &virtuals,
            objects_data: None,
            fixed: objects.runtime.is_fixed(),
            // Every class of the program is defined by its runtime (`Runtime::define`), which
            // gives it the runtime's count owner.
            counts_owner: Some(objects.runtime.counts_owner() as i64),
        };
        let mut lowered = Vec::with_capacity(program.functions.len() * 2);
        let mut largest_frame = 0u64;
        for (i, f) in program.functions.iter().enumerate() {
            let start = Instant::now();
            let mut func = ir::Function::with_name_signature(
                UserFuncName::user(0, funcs[i].as_u32()),
                script_signature(f, env.call_conv),
            );
            let slot_bytes =
                lower_function(&mut func, &mut self.fctx, &env, &mut *self.module, i as u32)
                    .map_err(|e| JitError::Lower {
                        function: f.name.clone(),
                        message: e.0,
                    })?;
            largest_frame = largest_frame.max(slot_bytes);
            lowered.push(Lowered {
                id: funcs[i],
                name: f.name.clone(),
                symbol: format!("hot.p{serial}.{}", f.name),
                func,
                lower_time: start.elapsed(),
                verify: self.options.verify,
                returns_from_handlers: false,
            });
        }
        for (&(f, m), &id) in host_methods.iter().zip(&host_ids) {
            let start = Instant::now();
            let name = &program.functions[f].name;
            let mut func = ir::Function::with_name_signature(
                UserFuncName::user(0, id.as_u32()),
                host_entry::entry_signature(m, self.call_conv),
            );
            host_entry::build_entry(
                &mut func,
                &mut self.fctx,
                &mut *self.module,
                &self.helpers.host,
                (funcs[f], id),
                m,
                env.fixed,
            );
            lowered.push(Lowered {
                id,
                name: format!("{name}.host"),
                symbol: format!("hot.p{serial}.{name}.host"),
                func,
                lower_time: start.elapsed(),
                verify: self.options.verify,
                returns_from_handlers: true,
            });
        }
        {
            // jit-opt: small callees inlined into their direct callers (`opt_inline.rs`); jit
            // (reloadable, where a direct call of a method is bound at run time): only into
            // the host entries, which are replaced with their method's version. Both: a
            // function that calls itself takes its own body once (its copy is of the same
            // version, and no reload comes while a thread is inside a call).
            let start = Instant::now();
            let speed = self.options.opt == super::OptLevel::Speed;
            let frame = inline_small_functions(
                lowered.iter_mut().map(|l| (l.id, &mut l.func)),
                |id| speed || host_ids.contains(&id),
                self.helpers.stack,
                self.helpers.array_heap,
            )
            .map_err(|(id, message)| JitError::Compile {
                function: lowered
                    .iter()
                    .find(|l| l.id == id)
                    .map_or_else(String::new, |l| l.name.clone()),
                message,
            })?;
            largest_frame = largest_frame.max(frame);
            // The pass's time, shared out: each function's lowering includes its part.
            let share = start.elapsed() / lowered.len().max(1) as u32;
            for l in &mut lowered {
                l.lower_time += share;
            }
        }
        // Every backend: a function that calls no script code needs no stack check.
        drop_leaf_checks(
            lowered.iter_mut().map(|l| (l.id, &mut l.func)),
            self.helpers.stack,
        );
        // Every backend: decided branches folded, then cold targets first (`opt_cfg.rs`).
        for l in &mut lowered {
            super::opt_cfg::shape_branches(&mut l.func);
        }
        for (i, f) in program.functions.iter().enumerate() {
            let start = Instant::now();
            let mut func = ir::Function::with_name_signature(
                UserFuncName::user(0, entries[i].as_u32()),
                entry_signature(self.call_conv),
            );
            build_entry(
                &mut func,
                &mut self.fctx,
                &mut *self.module,
                funcs[i],
                &entry_args(f),
            );
            lowered.push(Lowered {
                id: entries[i],
                name: format!("{}.entry", f.name),
                symbol: format!("hot.p{serial}.{}.entry", f.name),
                func,
                lower_time: start.elapsed(),
                verify: self.options.verify,
                returns_from_handlers: false,
            });
        }

        // In `lowered`'s order: the functions, their host entries, the entry trampolines.
        let mut compiled = self.define_and_finalize(lowered, Some(Arc::clone(&program.source)))?;
        let entry_code = compiled.split_off(program.functions.len() + host_methods.len());
        let host_code = compiled.split_off(program.functions.len());
        let host_entries = host_methods
            .iter()
            .map(|&(f, _)| f)
            .zip(host_code)
            .collect();
        let parts = ProgramParts {
            program,
            functions: compiled,
            entries: entry_code,
            host_entries,
            globals: GlobalsBlock::Owned(globals),
            global_cells,
            largest_frame: largest_frame as usize,
            keeper: self.keeper(),
        };
        let mut jit_program = JitProgram::new(parts);
        let (reports, held) = jit_program
            .install_objects(program, objects)
            .map_err(JitError::Objects)?;
        Ok((jit_program, reports, held))
    }

    /// Define every lowered function, then finalize them as one batch. If one fails, the rest
    /// of the batch is defined as trapping stubs so that no finalized code can refer to a
    /// symbol that was declared but never defined.
    pub(super) fn define_and_finalize(
        &mut self,
        lowered: Vec<Lowered>,
        source: Option<Arc<crate::lang::span::SourceFile>>,
    ) -> Result<Vec<super::CompiledFunction>, JitError> {
        let mut defined: Vec<Defined> = Vec::with_capacity(lowered.len());
        let mut failure = None;
        for l in lowered {
            if failure.is_some() {
                self.define_stub(l.id, l.func.signature.clone());
                continue;
            }
            let sig = l.func.signature.clone();
            let id = l.id;
            match self.define(l) {
                Ok(d) => defined.push(d),
                Err(e) => {
                    self.define_stub(id, sig);
                    failure = Some(e);
                }
            }
        }
        let compiled = self.finalize(defined, source)?;
        match failure {
            Some(e) => Err(e),
            None => Ok(compiled),
        }
    }

    /// Define `id` as a function that only traps (it is never called: its program failed).
    fn define_stub(&mut self, id: FuncId, sig: ir::Signature) {
        self.ctx.func = ir::Function::with_name_signature(UserFuncName::user(0, id.as_u32()), sig);
        let config = self.module.target_config();
        let mut b = FunctionBuilder::new(&mut self.ctx.func, &mut self.fctx);
        let block = b.create_block();
        b.append_block_params_for_function_params(block);
        b.switch_to_block(block);
        b.seal_block(block);
        b.ins().trap(TrapCode::unwrap_user(4));
        b.finalize(config);
        // A stub this small cannot fail to compile; if it somehow did, the symbol stays
        // undefined, which is what we were avoiding, so there is nothing better to do.
        let _ = self.module.define_function(id, &mut self.ctx);
        self.module.clear_context(&mut self.ctx);
    }
}

/// How the trampoline of script function `f` fills in its arguments (cells in parameter
/// order; see `call.rs` for the packing).
pub(crate) fn entry_args(f: &hir::Function) -> Vec<ArgSource> {
    let mut args = vec![ArgSource::Vmctx];
    let mut cell = 0u64;
    if f.is_lambda() {
        // A lambda's env (the closure cell) comes first among the argument cells.
        args.push(ArgSource::Cell {
            cell: 0,
            ty: types::I64,
        });
        cell = 1;
    }
    if matches!(f.ret, Type::Array(..)) {
        args.push(ArgSource::Out);
    }
    for ty in f.param_types() {
        match scalar_type(ty) {
            Some(ty) => args.push(ArgSource::Cell { cell, ty }),
            None => args.push(ArgSource::CellsPtr { cell }),
        }
        cell += ty.cells();
    }
    args
}

/// Where each module variable's cells start in the globals block, and how many cells the block
/// has (at least one): checked against the job's memory limit before anything is allocated, so
/// a `var G = [0; 4_000_000_000]` raises `OutOfMemory` at its initializer, as the interpreter
/// does when it makes the value, not an abort.
pub(crate) fn global_layout(program: &Program) -> Result<(Vec<u64>, u64), ScriptError> {
    let mut global_cells = Vec::with_capacity(program.globals.len());
    let mut total_cells = 0u64;
    for g in &program.globals {
        global_cells.push(total_cells);
        total_cells = total_cells.saturating_add(g.ty.cells());
    }
    let total_cells = total_cells.max(1);
    if let Err(why) = crate::runtime::memory::room(cells_bytes(total_cells)) {
        return Err(globals_refused(program, why));
    }
    Ok((global_cells, total_cells))
}

/// Whether the program's module variables, as the compiled backends lay them out (8 bytes a
/// cell), fit the job's memory limit: the interpreter asks this before its `<init>` runs, as
/// the compiled backends do before theirs, so every backend refuses a program whose module
/// variables cannot fit with the same error at the same variable, before any initializer has
/// run (the interpreter's values take 16 bytes an element, so it may still run out later,
/// while `<init>` makes them).
pub(crate) fn globals_fit(program: &Program) -> Result<(), ScriptError> {
    global_layout(program).map(drop)
}

/// Bytes of `cells` cells (saturating).
fn cells_bytes(cells: u64) -> usize {
    usize::try_from(cells.saturating_mul(8)).unwrap_or(usize::MAX)
}

/// The error for a globals block that `why` refused: `OutOfMemory` raised by `<init>` at the
/// initializer of the first module variable that does not fit with those before it (where the
/// interpreter raises it), so every backend reports the same error at the same place.
pub(crate) fn globals_refused(program: &Program, why: Refused) -> ScriptError {
    use crate::lang::hir::{PlaceKind, StmtKind};
    // Past the budget: the first variable that does not fit with those before it; refused by
    // the system: the largest, whose allocation is the one that fails.
    let at = match why {
        Refused::Budget(_) => {
            let mut cells = 0u64;
            program.globals.iter().position(|g| {
                cells = cells.saturating_add(g.ty.cells());
                crate::runtime::memory::room(cells_bytes(cells)).is_err()
            })
        }
        Refused::System => {
            (0..program.globals.len()).max_by_key(|&i| program.globals[i].ty.cells())
        }
    }
    .unwrap_or(program.globals.len().saturating_sub(1));
    let init = program.function(program.init);
    let span = init
        .body
        .stmts
        .iter()
        .find_map(|s| match &s.kind {
            StmtKind::Assign { place, value, .. }
                if matches!(place.kind, PlaceKind::Global(g) if g.0 as usize == at) =>
            {
                Some(value.span)
            }
            _ => None,
        })
        .or_else(|| program.globals.get(at).map(|g| g.span))
        .unwrap_or(init.span);
    ScriptError::new(ScriptErrorKind::out_of_memory(why), span)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A parameter after an array of 2^32 cells (the largest a plain array may be) starts at
    /// cell 2^32 + 1: the layout counts cells in 64 bits (it wrapped to 1 in 32).
    #[test]
    fn arguments_after_the_largest_array_keep_their_cells() {
        let text = "fn f(k: i64, a: [[i64; 2]; 2147483648], b: f64) -> f64 {\n    return b\n}\n";
        let source = Arc::new(crate::lang::SourceFile::new("a.hot", text));
        let program = crate::lang::compile(source).expect("the program checks");
        let f = program
            .functions
            .iter()
            .find(|f| f.name == "f")
            .expect("f is there");
        let cells: Vec<u64> = entry_args(f)
            .iter()
            .filter_map(|a| match a {
                ArgSource::Cell { cell, .. } | ArgSource::CellsPtr { cell } => Some(*cell),
                _ => None,
            })
            .collect();
        assert_eq!(cells, [0, 1, (1 << 32) + 1]);
    }
}
