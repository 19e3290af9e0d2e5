//! HIR → CLIF: the function translator (statements here, expressions in `lower_expr.rs`).
//!
//! # Representation
//! - `i64` is `I64`, `f64` is `F64`, `bool` is `I8` (0 or 1) in registers; in memory every scalar
//!   is one 8-byte cell (a bool cell holds 0 or 1), so globals share one layout with the
//!   interpreter's cells and with `HostFn::call_cells` — except the elements of a bool array,
//!   packed one byte each (`[bool; N]` is `ceil(N / 8)` cells, see `hir::Type::cells`): its
//!   element stores are byte stores (`store_elem`, [`PlaceRef::Packed`]), and the runtime's
//!   array helpers and the host border (`call.rs`) convert between those bytes and cells.
//! - Scalar locals are Cranelift `Variable`s; array locals live in explicit stack slots.
//! - Every script function's signature is `(vmctx, [out], params..) -> [scalar]`:
//!   `vmctx: *mut VmCtx` comes first; a function returning an array takes a hidden out pointer
//!   next (the caller owns the memory, the callee writes the result there); an array parameter is
//!   passed as a pointer to the caller's cells and the **callee copies it** into its own slot in
//!   its prologue, before any other code runs. So the caller may pass a pointer straight into a
//!   local's slot (no call can change a caller's local), while a global array is always copied
//!   first (a call in a later argument could change it).
//! - The prologue compares the stack pointer (after the frame is allocated) with
//!   `vmctx.stack_limit` and calls `hot_raise_stack` from a cold block when it is below.

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    self, AbiParam, Block, FuncRef, InstBuilder, MemFlagsData, StackSlot, TrapCode, Value, types,
};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_module::{DataId, FuncId, Module};

use crate::backend::Checks;
use crate::lang::hir::{self, Block as HirBlock, LocalId, Place, PlaceKind, Stmt, StmtKind, Type};
use crate::lang::span::Span;

use super::helper_table::VMCTX_STACK_LIMIT;

/// Why a function could not be lowered (a checker bug or hand-built HIR that breaks the rules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LowerError(pub String);

pub(crate) type LResult<T> = Result<T, LowerError>;

pub(crate) fn bad<T>(msg: impl Into<String>) -> LResult<T> {
    Err(LowerError(msg.into()))
}

/// Module ids of the runtime helpers generated code calls.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Helpers {
    pub div_zero: FuncId,
    pub index: FuncId,
    pub assert: FuncId,
    pub stack: FuncId,
    pub fmod: FuncId,
    pub object_new: FuncId,
    /// `new` of a fixed runtime's class.
    pub object_new_fixed: FuncId,
    pub object_check: FuncId,
    pub retain: FuncId,
    pub release: FuncId,
    /// The last release of a handle to an object of a fixed runtime's class.
    pub free_last: FuncId,
    pub counts_contend: FuncId,
    pub empty_slot: FuncId,
    pub vec_retain: FuncId,
    pub vec_release: FuncId,
    pub vec_unique: FuncId,
    pub vec_push: FuncId,
    pub vec_pop: FuncId,
    pub vec_at: FuncId,
    pub str_retain: FuncId,
    pub str_release: FuncId,
    pub str_lit: FuncId,
    pub str_concat: FuncId,
    /// `s += t` into an owned variable (in place when the block is unshared).
    pub str_append: FuncId,
    pub str_build: FuncId,
    pub str_eq: FuncId,
    pub str_of_i64: FuncId,
    pub str_of_f64: FuncId,
    pub str_of_bool: FuncId,
    pub str_of_handle: FuncId,
    pub str_of_vec: FuncId,
    pub str_of_array: FuncId,
    pub array_box: FuncId,
    pub array_unbox: FuncId,
    /// The block of an array slot too large for the stack (`lower_util.rs`).
    pub array_heap: FuncId,
    pub closure_new: FuncId,
    pub closure_retain: FuncId,
    pub closure_release: FuncId,
    pub str_of_closure: FuncId,
    pub null_closure: FuncId,
    pub builtins: super::lower_builtin::BuiltinHelpers,
    /// What host entries call off their straight path (`host_entry.rs`).
    pub host: super::host_entry::HostEntryHelpers,
}

/// Everything about the program and the module a translator needs besides the function.
pub(crate) struct LowerEnv<'a> {
    pub program: &'a hir::Program,
    /// Module id of each HIR function.
    pub funcs: &'a [FuncId],
    /// Module id of each host-table entry.
    pub hosts: &'a [FuncId],
    pub helpers: Helpers,
    /// Where the globals block is.
    pub globals: GlobalsBase,
    /// First cell of each global in the block.
    pub global_cells: &'a [u64],
    pub checks: Checks,
    pub call_conv: CallConv,
    /// Address of the program's `ProgramObjects` (for `new`).
    pub objects_addr: i64,
    /// Address of its slot-offset table, and the `(class, method)` pair of each entry.
    pub slot_table_addr: i64,
    pub virtuals: &'a [(hir::ClassId, String)],
    /// Set for position-independent code: the two addresses above are unused, and the code
    /// finds the objects and the slot-offset table in these data objects of its own library,
    /// which the loader binds (see [`ObjectsData`]).
    pub objects_data: Option<ObjectsData>,
    /// The `jit-opt` lowering: the objects live in a fixed runtime (fields inline in the shell,
    /// handle checks inline, slot tables constant: `opt_object.rs`), and call-free loops keep
    /// scalar module variables in registers (`opt_globals.rs`).
    pub fixed: bool,
    /// The address of the `CountOwner` every class of the program counts its objects under
    /// (its runtime's), for JIT code, which bakes addresses in; `None`: each change reads it
    /// through the object's class (`lower_refcount.rs`).
    pub counts_owner: Option<i64>,
}

/// Where position-independent code finds the program's objects: data objects of its shared
/// library, bound when it is loaded (`ProgramObjects::bind_library`), addressed PC-relative.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ObjectsData {
    /// One cell holding the address of the program's `ProgramObjects`.
    pub objects: DataId,
    /// The slot-offset table (one cell per virtual method, as `ProgramObjects::slot_offsets`).
    pub slot_table: DataId,
}

/// Where generated code finds the globals block.
#[derive(Debug, Clone, Copy)]
pub(crate) enum GlobalsBase {
    /// At this address, baked into the code as a constant (JIT code).
    Addr(i64),
    /// At this module data object, addressed PC-relative (position-independent code in a
    /// shared library).
    Data(DataId),
}

/// The register type of a scalar.
pub(crate) fn scalar_type(ty: &Type) -> Option<ir::Type> {
    match ty {
        Type::I64 => Some(types::I64),
        Type::F64 => Some(types::F64),
        Type::Bool => Some(types::I8),
        // A handle, a vec and a string are one 8-byte cell.
        Type::Handle { .. } | Type::Null | Type::Vec(_) | Type::Str | Type::Fn { .. } => {
            Some(types::I64)
        }
        Type::Unit | Type::Array(..) => None,
    }
}

/// Whether a place indexes a vec, or a field's array, somewhere (its stores follow the vec
/// order: see `hir`). A field's array is boxed in its cell, walked like an array in a vec's.
pub(crate) fn place_has_vec_index(place: &Place) -> bool {
    match &place.kind {
        PlaceKind::Index { base, .. } => {
            matches!(base.ty, Type::Vec(_))
                || matches!(base.kind, PlaceKind::Field { .. })
                || place_has_vec_index(base)
        }
        _ => false,
    }
}

/// The CLIF signature of a script function (see the module docs).
pub(crate) fn script_signature(f: &hir::Function, call_conv: CallConv) -> ir::Signature {
    signature_of(f.is_lambda(), f.param_types(), &f.ret, call_conv)
}

/// The CLIF signature of a closure's code: `(vmctx, env, [out], params..) -> [scalar]`.
pub(crate) fn closure_signature(params: &[Type], ret: &Type, call_conv: CallConv) -> ir::Signature {
    signature_of(true, params.iter(), ret, call_conv)
}

fn signature_of<'t>(
    lambda: bool,
    params: impl Iterator<Item = &'t Type>,
    ret: &Type,
    call_conv: CallConv,
) -> ir::Signature {
    let ptr = types::I64;
    let mut sig = ir::Signature::new(call_conv);
    sig.params.push(AbiParam::new(ptr));
    if lambda {
        sig.params.push(AbiParam::new(ptr));
    }
    if matches!(ret, Type::Array(..)) {
        sig.params.push(AbiParam::new(ptr));
    }
    for ty in params {
        sig.params
            .push(AbiParam::new(scalar_type(ty).unwrap_or(ptr)));
    }
    if let Some(ret) = scalar_type(ret) {
        sig.returns.push(AbiParam::new(ret));
    }
    sig
}

pub(crate) fn mem() -> MemFlagsData {
    MemFlagsData::trusted()
}

/// Where a local lives.
#[derive(Debug, Clone, Copy)]
pub(crate) enum LocalSlot {
    Unit,
    Scalar(Variable),
    Array(StackSlot),
}

/// `break` and `continue` targets of the innermost loop.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoopTargets {
    pub(crate) continue_block: Block,
    pub(crate) exit_block: Block,
}

/// A resolved assignment target.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PlaceRef {
    Var(Variable),
    /// A scalar module variable cached in `var` by a loop (`opt_globals.rs`): read from the
    /// variable, written to both.
    Global {
        addr: Value,
        var: Variable,
    },
    /// Memory at this address holding a value of the place's type.
    Mem(Value),
    /// The byte at this address: a bool element of a packed array ([`Type::cells`]), stored
    /// as one byte (a whole-cell store would overwrite its neighbours).
    Packed(Value),
}

/// Lowers one HIR function into a CLIF function.
pub(crate) struct FunctionTranslator<'a, 'b> {
    pub(crate) builder: FunctionBuilder<'b>,
    pub(crate) env: &'a LowerEnv<'a>,
    pub(super) module: &'a mut dyn Module,
    pub(crate) func: &'a hir::Function,
    index: u32,
    pub(crate) vmctx: Value,
    out_ptr: Option<Value>,
    locals: Vec<LocalSlot>,
    pub(crate) loops: Vec<LoopTargets>,
    pub(super) refs: HashMap<FuncId, FuncRef>,
    /// Bytes of explicit stack slots (the frame size the stack check must leave room for).
    pub(super) slot_bytes: u64,
    /// Variables of managed types (`let`/`var`/loop variables and hidden loop snapshots, not
    /// parameters) the function owns a reference through: released when it returns. Added by
    /// `own_var`, which gives each a home slot (`lower_unwind.rs`).
    pub(crate) owned: Vec<(Variable, Type)>,
    /// Array slots whose managed cells the function owns (`lower_array.rs`): zeroed after the
    /// stack check, released when it returns.
    pub(crate) owned_arrays: Vec<(StackSlot, Type)>,
    /// Array slots too large for the stack (`lower_util.rs`, [`hir::HEAP_SLOT_CELLS`]): the
    /// one-cell slot that holds the block's vec cell, the block's cells, and where its
    /// allocation is reported.
    pub(crate) heap_slots: Vec<(StackSlot, u64, Option<Span>)>,
    /// Every call that can raise, for the heap slots' stack map entries (added once the whole
    /// function is lowered: the slots are only all known then).
    pub(crate) raising_calls: Vec<ir::Inst>,
    /// Module variables cached by the loops being lowered (`opt_globals.rs`).
    pub(crate) global_cache: super::opt_globals::GlobalCache,
    /// Vec locals hoisted by the loops being lowered (`opt_vec.rs`).
    pub(crate) vec_cache: super::opt_vec::VecCache,
    /// Home slots and held temporaries (`lower_unwind.rs`).
    pub(crate) cells: super::lower_unwind::OwnedCells,
    /// The data object of each array shape's lengths (`array_shape`), by their bytes.
    pub(crate) shapes: HashMap<Vec<u8>, ir::GlobalValue>,
    /// Handles known valid in the code being lowered (`lower_region.rs`).
    pub(crate) checked: super::lower_region::CheckedHandles,
    /// The loop variables of the counted loops being lowered whose range is known,
    /// `0 <= i < bound`, and the index values read from them (`lower_util.rs`,
    /// `check_index`).
    pub(crate) ranges: super::lower_util::KnownRanges,
    /// The index sites of the loops versioned on their bounds (`opt_bounds.rs`).
    pub(crate) in_bounds: super::opt_bounds::InBounds,
    /// The variable that owns the reference a store moves out of a field: for a borrowed field
    /// `let` (`lower_region.rs`, `field_lets`) an owned variable of its own (0 while the `let`
    /// borrows), for a `var` assigned from the field just before (`var_moves`) the `var`'s own.
    pub(crate) field_owners: HashMap<LocalId, Variable>,
    /// The `var` whose `x = o.f` of a var move was just lowered: the next statement's store
    /// must take the field's reference for it (checked after that statement).
    pub(crate) pending_var_move: Option<LocalId>,
    /// `let` locals bound to a lambda expression, with the lambda's function: never null (a
    /// lambda always makes a block, or raises) and always that function's code, so a call of
    /// one is a direct call with no null test (`translate_call_closure`).
    pub(crate) closure_lets: HashMap<LocalId, hir::FuncId>,
    /// The span of the expression or statement being lowered: what a helper call made now
    /// reports an error at when the helper has no span of its own (`call_helper`).
    pub(crate) span: Span,
    /// The accumulation the unrolled loop being lowered reassociates (`lower_loop.rs`).
    pub(crate) reassoc: Option<super::lower_loop::Reassoc>,
}

/// Lower HIR function `index` into `func` (whose name and signature are already set).
/// Returns the bytes of explicit stack slots it allocated.
pub(crate) fn lower_function(
    func: &mut ir::Function,
    fctx: &mut FunctionBuilderContext,
    env: &LowerEnv<'_>,
    module: &mut dyn Module,
    index: u32,
) -> LResult<u64> {
    let hir_fn = env.program.function(hir::FuncId(index));
    let config = module.target_config();
    let builder = FunctionBuilder::new(&mut *func, &mut *fctx);
    let mut t = FunctionTranslator {
        builder,
        env,
        module,
        func: hir_fn,
        index,
        vmctx: Value::from_u32(0),
        out_ptr: None,
        locals: Vec::new(),
        loops: Vec::new(),
        refs: HashMap::new(),
        slot_bytes: 0,
        owned: Vec::new(),
        owned_arrays: Vec::new(),
        heap_slots: Vec::new(),
        raising_calls: Vec::new(),
        global_cache: Default::default(),
        vec_cache: Default::default(),
        cells: Default::default(),
        shapes: HashMap::new(),
        checked: Default::default(),
        ranges: Default::default(),
        in_bounds: Default::default(),
        field_owners: HashMap::new(),
        pending_var_move: None,
        closure_lets: Default::default(),
        span: hir_fn.name_span,
        reassoc: None,
    };
    t.enter_span(hir_fn.name_span);
    match t.translate_function() {
        Ok(()) => {
            let bytes = t.slot_bytes;
            t.builder.finalize(config);
            Ok(bytes)
        }
        Err(e) => {
            drop(t);
            // A builder dropped half-way leaves its context dirty, and the next
            // `FunctionBuilder::new` would assert: start the reused context afresh.
            *fctx = FunctionBuilderContext::new();
            Err(e)
        }
    }
}

impl<'a, 'b> FunctionTranslator<'a, 'b> {
    fn translate_function(&mut self) -> LResult<()> {
        let entry_block = self.builder.create_block();
        self.builder
            .append_block_params_for_function_params(entry_block);
        self.builder.switch_to_block(entry_block);
        self.builder.seal_block(entry_block);
        let params = self.builder.block_params(entry_block).to_vec();
        self.vmctx = params[0];
        let mut next = 1;
        let env = self.func.is_lambda().then(|| params[1]);
        if env.is_some() {
            next = 2;
        }
        if matches!(self.func.ret, Type::Array(..)) {
            self.out_ptr = Some(params[next]);
            next += 1;
        }
        self.translate_stack_check();
        self.start_owned_cells();
        // The owned array slots are zeroed in a block of their own, filled once the whole body
        // is lowered (a `for` loop's snapshot slot is only known then), which runs right after
        // the stack check.
        let init_block = self.builder.create_block();
        let start_block = self.builder.create_block();
        self.builder.ins().jump(init_block, &[]);
        self.builder.switch_to_block(start_block);

        let func: &'a hir::Function = self.func;
        let captures: &'a [LocalId] = func.captures.as_deref().unwrap_or(&[]);
        for (i, local) in self.func.locals.iter().enumerate() {
            let borrowed =
                i < self.func.param_count as usize || captures.iter().any(|c| c.index() == i);
            let slot = match &local.ty {
                Type::Unit => LocalSlot::Unit,
                ty @ Type::Array(..) if ty.owns_cells() && !borrowed => {
                    LocalSlot::Array(self.new_owned_slot(ty))
                }
                Type::Array(..) => LocalSlot::Array(self.new_slot(local.ty.cells())),
                ty => {
                    let ty = scalar_type(ty).unwrap_or(types::I64);
                    LocalSlot::Scalar(self.builder.declare_var(ty))
                }
            };
            self.locals.push(slot);
        }
        let param_count = func.param_count;
        self.analyze_locals(&func.body, &func.locals, |y| {
            y.0 < param_count || captures.contains(&y)
        });
        for (i, local) in self.func.locals.iter().enumerate() {
            if let (true, LocalSlot::Scalar(var)) = (local.ty.is_managed(), self.locals[i])
                && i >= self.func.param_count as usize
                && !captures.iter().any(|c| c.index() == i)
                && !self.borrowed_let(LocalId(i as u32))
            {
                // Starts as null (empty) so the first store has nothing to release.
                self.own_var(var, &local.ty);
            }
        }
        for x in self.moved_lets() {
            let ty = self.local_type(x)?;
            let owner = self.builder.declare_var(types::I64);
            self.own_var(owner, &ty);
            self.field_owners.insert(x, owner);
        }
        // A `var` a store moves a field's reference into owns it itself (`var_moves`).
        for x in self.var_movers() {
            if let LocalSlot::Scalar(var) = self.local(x)? {
                self.field_owners.insert(x, var);
            }
        }
        for i in 0..self.func.param_count as usize {
            let mut arg = *params
                .get(next + i)
                .ok_or_else(|| LowerError("parameter count does not match".into()))?;
            if i == 0 && self.func.is_method() {
                // The method ABI passes the shell, which the caller checked; `self` is a
                // handle cell to it.
                self.enter_method(arg);
                arg = self.cell_of_shell(arg);
            }
            match self.locals[i] {
                LocalSlot::Scalar(var) => self.def_var(var, arg),
                LocalSlot::Array(slot) => {
                    let dst = self.slot_addr(slot);
                    let cells = self.func.locals[i].ty.cells();
                    self.copy_cells(dst, arg, cells);
                }
                LocalSlot::Unit => {}
            }
        }

        if let Some(env) = env {
            self.load_captures(env, captures)?;
        }

        self.translate_block(&self.func.body)?;
        if self.func.ret == Type::Unit {
            self.release_owned();
            self.builder.ins().return_(&[]);
        } else {
            // The checker guarantees every path of a non-unit function returns: this block is
            // unreachable.
            self.builder.ins().trap(TrapCode::unwrap_user(1));
        }
        self.builder.switch_to_block(init_block);
        self.builder.seal_block(init_block);
        self.zero_owned_arrays();
        self.alloc_heap_slots();
        self.builder.ins().jump(start_block, &[]);
        self.builder.seal_block(start_block);
        self.finish_heap_slots();
        Ok(())
    }

    /// The span of the function's name (where its entry's errors are reported).
    pub(crate) fn func_name_span(&self) -> Span {
        self.func.name_span
    }

    /// The prologue's stack check: `sp < vmctx.stack_limit` → `hot_raise_stack`.
    fn translate_stack_check(&mut self) {
        let sp = self.builder.ins().get_stack_pointer(types::I64);
        let limit = self
            .builder
            .ins()
            .load(types::I64, mem(), self.vmctx, VMCTX_STACK_LIMIT);
        let exhausted = self.builder.ins().icmp(IntCC::UnsignedLessThan, sp, limit);
        let overflow_block = self.builder.create_block();
        let body_block = self.builder.create_block();
        self.builder.set_cold_block(overflow_block);
        self.builder
            .ins()
            .brif(exhausted, overflow_block, &[], body_block, &[]);

        self.builder.switch_to_block(overflow_block);
        self.builder.seal_block(overflow_block);
        let span = self.func.name_span;
        let index = self.builder.ins().iconst(types::I32, i64::from(self.index));
        let (start, end) = self.span_args(span);
        let helper = self.env.helpers.stack;
        // The raise runs before the entry's init block has zeroed and filled the heap slots:
        // its stack map must not name them (`finish_heap_slots` adds them to every raising call
        // it knows), or the unwinder would release whatever the stack held there.
        let known = self.raising_calls.len();
        self.call_helper(helper, &[self.vmctx, index, start, end]);
        self.raising_calls.truncate(known);
        self.builder.ins().trap(TrapCode::unwrap_user(2));

        self.builder.switch_to_block(body_block);
        self.builder.seal_block(body_block);
    }

    pub(crate) fn translate_block(&mut self, block: &HirBlock) -> LResult<()> {
        // What a statement's checks prove holds for the rest of its block (`lower_region.rs`).
        let scope = self.start_scope();
        for stmt in &block.stmts {
            self.in_statement(stmt, |t| t.translate_stmt(stmt))?;
        }
        self.end_scope(scope);
        Ok(())
    }

    fn translate_stmt(&mut self, stmt: &Stmt) -> LResult<()> {
        // After a var move's read, this statement is its store, which must take the field's
        // reference for the `var` (`store_field`): else the `var` would hold a cell it does
        // not own while counted as owning it.
        let expected = self.pending_var_move;
        self.translate_stmt_kind(stmt)?;
        if expected.is_some() && self.pending_var_move == expected {
            return Err(LowerError(
                "a var move's store did not take the field's reference".into(),
            ));
        }
        Ok(())
    }

    fn translate_stmt_kind(&mut self, stmt: &Stmt) -> LResult<()> {
        match &stmt.kind {
            StmtKind::Let { local, init } => self.translate_let(*local, init),
            StmtKind::Assign {
                place,
                op,
                op_span,
                value,
            } => self.translate_assign(place, *op, *op_span, value),
            StmtKind::Expr(e) => {
                let v = self.translate_expr(e)?;
                self.release_value(&e.ty, v);
                Ok(())
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => self.translate_if(cond, then_block, else_block.as_ref()),
            // Loops are versioned on the handles they use (`lower_region.rs`).
            StmtKind::While { cond, body } => self.versioned_loop(&[cond], body, &mut |t| {
                t.with_cached_globals(&[cond], body, |t| t.translate_while(cond, body))
            }),
            StmtKind::ForRange {
                var,
                start,
                end,
                body,
            } => self.versioned_loop(&[start, end], body, &mut |t| {
                t.with_cached_globals(&[start, end], body, |t| {
                    t.translate_for_range(*var, start, end, body)
                })
            }),
            StmtKind::ForStep {
                var,
                start,
                end,
                inclusive,
                step,
                step_span,
                body,
            } => {
                let head: Vec<&hir::Expr> = [start, end].into_iter().chain(step).collect();
                self.with_cached_globals(&head, body, |t| {
                    t.translate_for_step(super::lower_range::StepLoop {
                        var: *var,
                        start,
                        end,
                        inclusive: *inclusive,
                        step: step.as_ref(),
                        step_span: *step_span,
                        body,
                    })
                })
            }
            StmtKind::ForEach { var, array, body } => {
                self.versioned_loop(&[array], body, &mut |t| {
                    t.with_cached_globals(&[array], body, |t| {
                        t.translate_for_each(*var, array, body)
                    })
                })
            }
            StmtKind::Break => self.translate_jump_out(true),
            StmtKind::Continue => self.translate_jump_out(false),
            StmtKind::Return(value) => self.translate_return(value.as_ref()),
        }
    }

    /// The index of the function being lowered.
    pub(crate) fn func_index(&self) -> u32 {
        self.index
    }

    pub(crate) fn local(&self, id: LocalId) -> LResult<LocalSlot> {
        match self.locals.get(id.index()) {
            Some(slot) => Ok(*slot),
            None => bad(format!("unknown local #{}", id.0)),
        }
    }

    /// The type of a local.
    pub(crate) fn local_type(&self, id: LocalId) -> LResult<Type> {
        match self.func.locals.get(id.index()) {
            Some(l) => Ok(l.ty.clone()),
            None => bad(format!("unknown local #{}", id.0)),
        }
    }

    fn translate_let(&mut self, local: LocalId, init: &hir::Expr) -> LResult<()> {
        if let (hir::ExprKind::Int(c), hir::Type::I64) = (&init.kind, &init.ty)
            && self
                .func
                .locals
                .get(local.index())
                .is_some_and(|l| !l.mutable)
        {
            // Its value everywhere it is read (`KnownRanges::let_ints`); the variable is still
            // defined for code that reads the slot itself.
            self.ranges.note_let_int(local, *c);
        }
        if let LocalSlot::Array(slot) = self.local(local)? {
            // A heap slot's allocation is reported at the initializer, as the interpreter's.
            self.note_heap_slot_span(slot, init.span);
            if self.let_array_in_place(slot, init)? {
                return Ok(());
            }
        }
        if let Some(read) = self.borrowed_field_let(local, init)
            && let LocalSlot::Scalar(var) = self.local(local)?
        {
            // `let x = o.f`: the field's reference stays the field's (`lower_region.rs`); the
            // one a move gave the previous `x` (a `let` in a loop runs again) goes.
            if let Some(&owner) = self.field_owners.get(&local) {
                let old = self.builder.use_var(owner);
                let zero = self.builder.ins().iconst(types::I64, 0);
                self.def_var(owner, zero);
                self.release_value(&init.ty, old);
            }
            let (inner, non_null) = match &init.kind {
                hir::ExprKind::NonNull(inner) => (&**inner, true),
                _ => (init, false),
            };
            let value = match (&inner.kind, read.element) {
                (hir::ExprKind::Index(array, index), true) => self
                    .translate_index_borrowed(array, index, inner)?
                    .ok_or_else(|| LowerError("a borrowed element not read in place".into()))?,
                _ => self.borrowed_cell(inner)?,
            };
            if non_null {
                self.raise_if_null(value, init.span);
            }
            self.def_var(var, value);
            return Ok(());
        }
        if self.borrowed_let(local)
            && let (LocalSlot::Scalar(var), hir::ExprKind::Index(vec, index)) =
                (self.local(local)?, &init.kind)
        {
            // `let x = v[i]`: the element's reference stays `v`'s (`lower_region.rs`).
            let value = self.translate_vec_index_borrowed(vec, index, init)?;
            self.def_var(var, value);
            return Ok(());
        }
        if self.borrowed_let(local)
            && let (LocalSlot::Scalar(var), Some(y)) =
                (self.local(local)?, super::lower_region::alias_source(init))
            && let LocalSlot::Scalar(from) = self.local(y)?
        {
            // `let x = p`: an alias of a parameter or capture (`lower_region.rs`).
            let value = self.builder.use_var(from);
            if let hir::ExprKind::NonNull(_) = init.kind {
                self.raise_if_null(value, init.span);
            }
            self.def_var(var, value);
            return Ok(());
        }
        let value = self.translate_expr(init)?;
        match self.local(local)? {
            LocalSlot::Scalar(var) if init.ty.is_managed() => {
                // A `let` in a loop runs again: the previous value goes.
                let old = self.builder.use_var(var);
                self.def_var(var, value);
                self.release_value(&init.ty, old);
                if let hir::ExprKind::Closure { func, .. } = init.kind
                    && self
                        .func
                        .locals
                        .get(local.index())
                        .is_some_and(|l| !l.mutable)
                {
                    self.closure_lets.insert(local, func);
                }
                if let hir::ExprKind::New(_) = init.kind {
                    // A handle `new` just made is valid: its first use needs no check.
                    self.note_new(local, value);
                }
            }
            LocalSlot::Scalar(var) => self.def_var(var, value),
            LocalSlot::Array(slot) if init.ty.owns_cells() => {
                // Zeroed at entry; a `let` in a loop runs again: the previous cells go.
                let dst = self.slot_addr(slot);
                self.replace_cells(dst, &init.ty, value);
            }
            LocalSlot::Array(slot) => {
                let dst = self.slot_addr(slot);
                self.copy_cells(dst, value, init.ty.cells());
            }
            LocalSlot::Unit => {}
        }
        Ok(())
    }

    fn translate_assign(
        &mut self,
        place: &Place,
        op: Option<hir::BinOp>,
        op_span: Span,
        value: &hir::Expr,
    ) -> LResult<()> {
        // Order (hir.rs): the place's indexes (checked, outermost first), then the value, then
        // the store; a compound operator reads the old value last, just before the store.
        if let Some((op, operand)) = self.reassoc_begin(place, op, value) {
            // A copy of an unrolled accumulation (`lower_loop.rs`, `Reassoc`): `p = p op e`
            // as `p op= e` (`e` does not read `p`), its store folded into the trip's.
            let done = self.translate_assign(place, Some(op), op_span, operand);
            self.reassoc_end();
            return done;
        }
        if let PlaceKind::Field { object, field } = &place.kind {
            return self
                .translate_field_assign(object, *field, &place.ty, op, op_span, value, place.span);
        }
        if let (PlaceKind::Local(id), None) = (&place.kind, op)
            && self.var_move_read(place.span)
            && self.field_owners.contains_key(id)
            && let LocalSlot::Scalar(var) = self.local(*id)?
        {
            // `x = o.f` right before `o.f = v` moves the field's reference to `x`
            // (`lower_region.rs`, `var_moves`): the field's cell without a count, `x`'s home
            // slot empty until the move, then `x`'s old value released as a plain assignment
            // does (a release never raises).
            let old = self.builder.use_var(var);
            let cell = self.borrowed_arg_cell(value)?;
            self.builder.def_var(var, cell);
            self.clear_home(var);
            self.release_value(&place.ty, old);
            self.pending_var_move = Some(*id);
            return Ok(());
        }
        if let (PlaceKind::Local(id), None) = (&place.kind, op)
            && self.borrowed_let(*id)
            && let LocalSlot::Scalar(var) = self.local(*id)?
        {
            // `x = x.g` of a `var` that walks a chain owning nothing (`lower_region.rs`,
            // `chase_vars`): the field's reference stays the field's, as the `var`'s first
            // value stayed the parameter's.
            let v = self.borrowed_arg_cell(value)?;
            self.def_var(var, v);
            return Ok(());
        }
        if place_has_vec_index(place) {
            let path = self.translate_vec_path(place)?;
            let value_v = self.translate_expr(value)?;
            // An array in a vec's cell is boxed (`lower_array.rs`).
            let (value_v, ty) = self.box_if_array(value_v, &place.ty)?;
            // Held while the path is walked (`v[i] = s` with `i` out of range).
            let held = self.hold(&ty, value_v);
            let target = self.walk_vec_path(&path)?;
            self.unhold(held);
            self.store_to(target, &ty, op, op_span, value_v)?;
            self.finish_vec_path(path);
            return Ok(());
        }
        if matches!(place.kind, PlaceKind::Local(_) | PlaceKind::Global(_))
            && self.swaps_counts(&place.ty, op, value)
        {
            // `p = p.next` into a handle variable: the new cell read without a count, then both
            // counts changed in one window (`lower_refcount.rs`, `swap_handle_counts`). Nothing
            // runs between the read and the change that could release the new cell's object.
            let target = self.translate_place(place)?;
            let new = self.borrowed_arg_cell(value)?;
            let old = self.read_place(target, &place.ty)?;
            self.write_place(target, &place.ty, new)?;
            self.swap_handle_counts(new, old);
            return Ok(());
        }
        let target = self.translate_place(place)?;
        let value = self.translate_expr(value)?;
        self.store_to(target, &place.ty, op, op_span, value)
    }

    /// Store an evaluated `value` into a resolved place (`op=`: read the old value first). A
    /// managed place releases the value it held.
    pub(crate) fn store_to(
        &mut self,
        target: PlaceRef,
        ty: &Type,
        op: Option<hir::BinOp>,
        op_span: Span,
        value: Value,
    ) -> LResult<()> {
        if let Some(r) = self.reassoc.as_mut()
            && r.take_store()
        {
            return self.reassoc_store(target, ty, op_span, value);
        }
        if let (Type::Array(..), true, PlaceRef::Mem(addr)) = (ty, ty.owns_cells(), target) {
            self.replace_cells(addr, ty, value);
            return Ok(());
        }
        let old = if op.is_some() || ty.is_managed() {
            Some(self.read_place(target, ty)?)
        } else {
            None
        };
        if let (Some(hir::BinOp::Add), Some(old), PlaceRef::Var(var), Type::Str) =
            (op, old, target, ty)
            && self.owned.iter().any(|(v, _)| *v == var)
        {
            // `s += t` into a variable that owns its count (nobody borrows from a `var`: a
            // call's argument is done when the call returns, a capture or a store takes its
            // own count): the old count moves into the append, which may write in place.
            let joined = self.str_append(old, value);
            self.release_value(ty, value);
            return self.write_place(target, ty, joined);
        }
        let value = match (op, old) {
            (Some(op), Some(old)) if *ty == Type::Str => {
                // `s += t`: a new string; `t` (owned) goes here, `old` below.
                let joined = self.binary_values(op, op_span, ty, old, value)?;
                self.release_value(ty, value);
                joined
            }
            // `x *= c` of a `var`: a chain a loop may carry (`mul_values`).
            (Some(hir::BinOp::Mul), Some(old)) if *ty == Type::I64 => {
                let chain = matches!(target, PlaceRef::Var(_));
                self.mul_values(old, value, chain)
            }
            (Some(op), Some(old)) => self.binary_values(op, op_span, ty, old, value)?,
            _ => value,
        };
        self.write_place(target, ty, value)?;
        if let (true, Some(old)) = (ty.is_managed(), old) {
            self.release_value(ty, old);
        }
        Ok(())
    }

    /// Resolve a place to a variable or an address, evaluating and checking its indexes.
    pub(crate) fn translate_place(&mut self, place: &Place) -> LResult<PlaceRef> {
        match &place.kind {
            PlaceKind::Local(id) => match self.local(*id)? {
                LocalSlot::Scalar(var) => Ok(PlaceRef::Var(var)),
                LocalSlot::Array(slot) => Ok(PlaceRef::Mem(self.slot_addr(slot))),
                LocalSlot::Unit => bad("assignment to a unit local"),
            },
            PlaceKind::Global(id) => {
                let addr = self.global_addr(*id)?;
                Ok(match self.cached_global(*id) {
                    // Stored at the loop's exits (`opt_globals.rs`).
                    Some(var) if self.sunk_global(*id) => PlaceRef::Var(var),
                    Some(var) => PlaceRef::Global { addr, var },
                    None => PlaceRef::Mem(addr),
                })
            }
            PlaceKind::Index { base, index } => {
                let PlaceRef::Mem(base_addr) = self.translate_place(base)? else {
                    return bad("indexing a place that is not an array");
                };
                let Type::Array(elem, len) = &base.ty else {
                    return bad("indexing a place that is not an array");
                };
                let idx = self.translate_expr(index)?;
                let addr = self.element_addr(base_addr, idx, elem, *len, index.span);
                Ok(match **elem {
                    Type::Bool => PlaceRef::Packed(addr),
                    _ => PlaceRef::Mem(addr),
                })
            }
            PlaceKind::Field { .. } => bad("a field place inside another place"),
        }
    }

    pub(crate) fn read_place(&mut self, place: PlaceRef, ty: &Type) -> LResult<Value> {
        match place {
            PlaceRef::Var(var) | PlaceRef::Global { var, .. } => Ok(self.builder.use_var(var)),
            PlaceRef::Mem(addr) | PlaceRef::Packed(addr) => self.load_value(addr, ty),
        }
    }

    pub(crate) fn write_place(&mut self, place: PlaceRef, ty: &Type, value: Value) -> LResult<()> {
        match place {
            PlaceRef::Var(var) => {
                self.def_var(var, value);
                Ok(())
            }
            PlaceRef::Mem(addr) => self.store_value(addr, ty, value),
            PlaceRef::Packed(addr) => self.store_elem(addr, ty, value),
            PlaceRef::Global { addr, var } => {
                self.def_var(var, value);
                self.store_value(addr, ty, value)
            }
        }
    }

    fn translate_if(
        &mut self,
        cond: &hir::Expr,
        then_body: &HirBlock,
        else_body: Option<&HirBlock>,
    ) -> LResult<()> {
        let then_block = self.builder.create_block();
        let else_block = self.builder.create_block();
        let merge_block = self.builder.create_block();
        // `a && b` as two branches (`lower_loop.rs`).
        self.translate_branch(cond, then_block, else_block)?;

        self.builder.switch_to_block(then_block);
        self.builder.seal_block(then_block);
        self.translate_block(then_body)?;
        self.builder.ins().jump(merge_block, &[]);

        self.builder.switch_to_block(else_block);
        self.builder.seal_block(else_block);
        if let Some(body) = else_body {
            self.translate_block(body)?;
        }
        self.builder.ins().jump(merge_block, &[]);

        self.builder.switch_to_block(merge_block);
        self.builder.seal_block(merge_block);
        Ok(())
    }

    fn translate_jump_out(&mut self, is_break: bool) -> LResult<()> {
        let Some(targets) = self.loops.last().copied() else {
            return bad("break or continue outside a loop");
        };
        let target = if is_break {
            targets.exit_block
        } else {
            targets.continue_block
        };
        self.builder.ins().jump(target, &[]);
        self.start_dead_block();
        Ok(())
    }

    fn translate_return(&mut self, value: Option<&hir::Expr>) -> LResult<()> {
        if let Some(e) = value
            && let Some(var) = self.owned_local_var(e)
        {
            // `return x` of an owned local: its reference moves to the caller.
            let v = self.builder.use_var(var);
            self.store_sunk_globals()?;
            self.release_owned_but(Some(var));
            self.builder.ins().return_(&[v]);
            self.start_dead_block();
            return Ok(());
        }
        match value {
            Some(e) => {
                let v = self.translate_expr(e)?;
                self.store_sunk_globals()?;
                match (&e.ty, self.out_ptr) {
                    (Type::Array(..), Some(out)) => {
                        // The cells (owned) move to the caller.
                        self.copy_cells(out, v, e.ty.cells());
                        self.release_owned();
                        self.builder.ins().return_(&[]);
                    }
                    (Type::Unit, _) => {
                        self.release_owned();
                        self.builder.ins().return_(&[]);
                    }
                    (ty, _) if ty.is_scalar() || ty.is_managed() => {
                        // A returned handle, vec or string is owned by the caller from here.
                        self.release_owned();
                        self.builder.ins().return_(&[v]);
                    }
                    _ => return bad("return value does not match the function"),
                }
            }
            None => {
                self.store_sunk_globals()?;
                self.release_owned();
                self.builder.ins().return_(&[]);
            }
        }
        self.start_dead_block();
        Ok(())
    }

    /// After a terminator: code that follows (in the same HIR block) is unreachable; give it a
    /// block of its own with no predecessors.
    fn start_dead_block(&mut self) {
        let dead = self.builder.create_block();
        self.builder.switch_to_block(dead);
        self.builder.seal_block(dead);
    }
}
