//! The typed call wrapper: the one place that turns a code address into a Rust function
//! pointer and calls it.
//!
//! [`JitProgram::call`] checks the arguments against the HIR signature, packs them into 8-byte
//! cells, sets up a [`VmCtx`] for the current thread, and calls the function's entry trampoline
//! (`extern "C-unwind" fn(vmctx, args, out)`) inside [`catch_script`], so a `ScriptError`
//! raised anywhere below comes back as `Err`. [`JitProgram::raw_entry`] hands out the bare
//! function, typed, for benchmarks.

use std::cell::Cell;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::backend::Value;
use crate::backend::objects::{self, ProgramObjects};
use crate::lang::hir::{FuncId, Program, Type};
use crate::lang::span::{SourceFile, Span};
use crate::runtime::handle::Handle;
use crate::runtime::reload::{Held, ReloadReport};
use crate::runtime::{ScriptError, ScriptErrorKind, catch_script};

use super::helper_table::VmCtx;
use super::lower_value::elem_kind;
use super::{CompiledFunction, JitError};
use crate::runtime::{arrays, values};

/// The one function-pointer type the host calls generated code through.
type EntryFn = unsafe extern "C-unwind" fn(*mut VmCtx, *const u64, *mut u64);

/// Call the trampoline at `entry` inside `catch_script` at `border`.
///
/// # Safety
/// `entry` must be finalized code with the trampoline signature, still alive; `args` must hold
/// the cells it reads and `out` room for the cells it writes.
pub(crate) unsafe fn call_entry(
    entry: *const u8,
    vmctx: &mut VmCtx,
    args: &[u64],
    out: &mut [u64],
    border: Span,
) -> Result<(), ScriptError> {
    // SAFETY: the caller guarantees `entry` is live code with exactly this signature;
    // `*const u8` and a fn pointer have the same size and representation.
    let f: EntryFn = unsafe { std::mem::transmute::<*const u8, EntryFn>(entry) };
    let (ctx, a, o) = (vmctx as *mut VmCtx, args.as_ptr(), out.as_mut_ptr());
    // SAFETY: the pointers are valid for the whole call (borrowed for it); the C-unwind ABI
    // lets a `ScriptError` unwind out of the generated code into `catch_script`.
    catch_script(border, || unsafe { f(ctx, a, o) })
}

/// Everything `Jit::compile` hands over to make a [`JitProgram`].
pub(crate) struct ProgramParts<'a> {
    pub program: &'a Program,
    pub functions: Vec<CompiledFunction>,
    pub entries: Vec<CompiledFunction>,
    /// The host entries (`host_entry.rs`), each with the HIR index of the method it enters.
    pub host_entries: Vec<(usize, CompiledFunction)>,
    pub globals: GlobalsBlock,
    pub global_cells: Vec<u64>,
    pub largest_frame: usize,
    /// Whatever keeps the code alive: the JIT's code keeper, or a loaded shared library.
    pub keeper: Arc<dyn Send + Sync>,
}

/// The cells of a program's module variables.
pub(crate) enum GlobalsBlock {
    /// A block the program owns; JIT code has its address baked in.
    Owned(Box<[u64]>),
    /// `len` cells at `ptr`: a data object inside a loaded shared library (the `object`
    /// backend), kept mapped by the program's keeper.
    Foreign { ptr: *const u64, len: usize },
}

// SAFETY: the block is only read through `&JitProgram`, which is not `Sync`, and script code
// that writes it runs on the thread that holds the program; moving the pointer to another
// thread moves that exclusive use with it.
unsafe impl Send for GlobalsBlock {}

impl GlobalsBlock {
    fn cells(&self) -> &[u64] {
        match self {
            GlobalsBlock::Owned(cells) => cells,
            // SAFETY: `ptr` points to `len` initialized cells that stay mapped while the keeper
            // lives (the program holds both); no script code runs while the slice is borrowed,
            // because calls need `&self` too and the program is not `Sync`.
            GlobalsBlock::Foreign { ptr, len } => unsafe { std::slice::from_raw_parts(*ptr, *len) },
        }
    }

    fn cells_mut(&mut self) -> &mut [u64] {
        match self {
            GlobalsBlock::Owned(cells) => cells,
            // SAFETY: as in `cells`; `&mut self` makes this the only borrow, and the library's
            // data object is writable (script code writes it).
            GlobalsBlock::Foreign { ptr, len } => unsafe {
                std::slice::from_raw_parts_mut(ptr.cast_mut(), *len)
            },
        }
    }
}

/// The signature of one script function, as the host border needs it.
#[derive(Debug, Clone)]
struct BorderSignature {
    name: String,
    params: Vec<Type>,
    ret: Type,
    name_span: Span,
}

/// A compiled program: callable functions, its globals, and its machine code.
///
/// `Send` but not `Sync`: script code writes the globals block without synchronization, so
/// one thread at a time may call into it.
pub struct JitProgram {
    source: Arc<SourceFile>,
    sigs: Vec<BorderSignature>,
    /// Function names for `StackExhausted` (the `VmCtx` points at them; a boxed slice keeps
    /// them in place when the program moves).
    names: Box<[String]>,
    functions: Vec<CompiledFunction>,
    entries: Vec<CompiledFunction>,
    host_entries: Vec<(usize, CompiledFunction)>,
    globals: GlobalsBlock,
    global_layout: Vec<(String, Type, u64)>,
    largest_frame: usize,
    init: FuncId,
    main: Option<FuncId>,
    /// The program's objects (`new`, slot offsets), once installed; boxed, generated code
    /// embeds its address. Dropped after the globals released their handles.
    objects: Option<Box<ProgramObjects>>,
    /// The context host calls through a class's slots pass (`Hook`, `Bench`): made for the
    /// thread that compiled the program.
    method_ctx: MethodCtx,
    _keeper: Arc<dyn Send + Sync>,
    _not_sync: PhantomData<Cell<()>>,
}

impl JitProgram {
    pub(crate) fn new(parts: ProgramParts<'_>) -> JitProgram {
        let program = parts.program;
        let sigs = program
            .functions
            .iter()
            .map(|f| BorderSignature {
                name: f.name.clone(),
                // A lambda's code takes its closure first, which the host cannot make: a call
                // from the host is refused as a bad argument.
                params: f
                    .is_lambda()
                    .then(|| Type::Fn {
                        params: f.param_types().cloned().collect(),
                        ret: Box::new(f.ret.clone()),
                    })
                    .into_iter()
                    .chain(f.param_types().cloned())
                    .collect(),
                ret: f.ret.clone(),
                name_span: f.name_span,
            })
            .collect();
        JitProgram {
            source: Arc::clone(&program.source),
            sigs,
            names: program.functions.iter().map(|f| f.name.clone()).collect(),
            functions: parts.functions,
            entries: parts.entries,
            host_entries: parts.host_entries,
            globals: parts.globals,
            global_layout: program
                .globals
                .iter()
                .zip(parts.global_cells)
                .map(|(g, cell)| (g.name.clone(), g.ty.clone(), cell))
                .collect(),
            method_ctx: MethodCtx(Box::new(VmCtx {
                stack_limit: 0,
                names: std::ptr::null(),
                names_len: 0,
            })),
            objects: None,
            largest_frame: parts.largest_frame,
            init: program.init,
            main: program.main,
            _keeper: parts.keeper,
            _not_sync: PhantomData,
        }
    }

    /// Install the program's objects: the classes are defined in (or, when the runtime has a
    /// class of that name, reloaded into) `objects.runtime` with this program's method code,
    /// and the slot offsets filled. Nothing runs before this (`<init>` may make objects).
    pub(crate) fn install_objects(
        &mut self,
        program: &Program,
        mut objects: Box<ProgramObjects>,
    ) -> Result<(Vec<ReloadReport>, Option<Held>), objects::ObjectsError> {
        *self.method_ctx.0 = VmCtx::for_current_thread(&self.names, self.largest_frame);
        let vmctx = &mut *self.method_ctx.0 as *mut VmCtx as *mut c_void;
        let functions = &self.functions;
        let host_entries = &self.host_entries;
        let installed = objects::install_classes(&objects.runtime, program, vmctx, |m| {
            let f = m.func.index();
            objects::MethodCode {
                code: functions[f].addr as *const c_void,
                host_entry: host_entries
                    .iter()
                    .find(|(i, _)| *i == f)
                    .map_or(std::ptr::null(), |(_, e)| e.addr as *const c_void),
            }
        })?;
        objects.install(program, installed.classes);
        // jit-opt's virtual calls do not test the slot for empty (`lower_object.rs`).
        if objects.runtime.is_fixed()
            && let Some(method) = objects.empty_slot()
        {
            return Err(objects::ObjectsError::EmptySlot(method));
        }
        self.objects = Some(objects);
        Ok((installed.reports, installed.held))
    }

    /// A handle (a new reference) to the object in a handle-typed module variable: the host
    /// can call it through `Hook`/`Bench`, read its fields, or destroy it. `None` if there is no
    /// such variable; a `null` handle if it holds none.
    pub fn global_handle(&self, name: &str) -> Option<Handle> {
        let (_, ty, cell) = self.global_layout.iter().find(|(n, _, _)| n == name)?;
        if !ty.is_handle() {
            return None;
        }
        let cell = crate::runtime::handle::hot_handle_retain(self.globals.cells()[*cell as usize]);
        // SAFETY: `hot_handle_retain` took the reference this handle now owns.
        Some(unsafe { Handle::from_cell(cell) })
    }

    /// The program's objects (its runtime and classes), once installed.
    pub fn objects(&self) -> Option<&ProgramObjects> {
        self.objects.as_deref()
    }

    /// The globals block and each global's (name, type, first cell), for carrying module
    /// variables over to a reloaded program.
    pub(crate) fn globals_mut(&mut self) -> (&mut [u64], &[(String, Type, u64)]) {
        (self.globals.cells_mut(), &self.global_layout)
    }

    /// The source the program's spans point into.
    pub fn source(&self) -> &SourceFile {
        &self.source
    }

    /// Machine code, CLIF and timings of each script function, by HIR function id.
    pub fn functions(&self) -> &[CompiledFunction] {
        &self.functions
    }

    /// The host entries (`host_entry.rs`): the host border of each method that implements a
    /// host interface, in generated code.
    pub fn host_entries(&self) -> impl Iterator<Item = &CompiledFunction> {
        self.host_entries.iter().map(|(_, f)| f)
    }

    /// The entry trampolines, by HIR function id.
    pub fn entries(&self) -> &[CompiledFunction] {
        &self.entries
    }

    /// Look up a function by name.
    pub fn function_named(&self, name: &str) -> Option<FuncId> {
        self.sigs
            .iter()
            .position(|s| s.name == name)
            .map(|i| FuncId(i as u32))
    }

    /// A context for calls from the current thread (see [`VmCtx::for_current_thread`]).
    /// Valid while this program lives.
    pub fn vm_context(&self) -> VmCtx {
        VmCtx::for_current_thread(&self.names, self.largest_frame)
    }

    /// Call function `f` with `args`. Wrong arity or types give a `BadCall` error at the
    /// function's name; a fault in the script gives its `ScriptError`.
    pub fn call(&self, f: FuncId, args: &[Value]) -> Result<Value, ScriptError> {
        let Some(sig) = self.sigs.get(f.index()) else {
            return Err(bad_call(format!("no function #{}", f.0), Span::default()));
        };
        if args.len() != sig.params.len() {
            return Err(bad_call(
                format!(
                    "`{}` takes {} argument(s), got {}",
                    sig.name,
                    sig.params.len(),
                    args.len()
                ),
                sig.name_span,
            ));
        }
        let mut cells = Vec::new();
        // Vec and string arguments are made for the call and released after it (parameters
        // are borrowed).
        let mut made = ArgCells(Vec::new());
        for (i, (arg, ty)) in args.iter().zip(&sig.params).enumerate() {
            if !pack(arg, ty, &mut cells, &mut made.0) {
                return Err(bad_call(
                    format!(
                        "argument {} of `{}` must be {ty}, got {arg}",
                        i + 1,
                        sig.name
                    ),
                    sig.name_span,
                ));
            }
        }
        let mut out = vec![0u64; sig.ret.cells().max(1) as usize];
        let mut ctx = self.vm_context();
        // SAFETY: entries[f] is this program's finalized trampoline for `f`, alive while
        // `self` (and its keeper) lives; `cells` holds every parameter cell it reads, laid out
        // as `entry_args` expects, and `out` has room for the result cells.
        unsafe {
            call_entry(
                self.entries[f.index()].addr as *const u8,
                &mut ctx,
                &cells,
                &mut out,
                sig.name_span,
            )?
        };
        drop(made);
        let mut at = 0;
        let value = unpack(&sig.ret, &out, &mut at);
        // The returned references are the host's; a `Value` names an object without owning
        // it, and holds a copy of a vec or string, so the references go now.
        release_cells(&sig.ret, &mut out);
        Ok(value)
    }

    /// Call `fn main()`.
    pub fn run_main(&self) -> Result<Value, ScriptError> {
        match self.main {
            Some(main) => self.call(main, &[]),
            None => Err(bad_call(
                "the program has no `fn main`".into(),
                Span::default(),
            )),
        }
    }

    pub(crate) fn run_init(&self) -> Result<Value, ScriptError> {
        self.call(self.init, &[])
    }

    /// The current value of a module variable or constant.
    pub fn global(&self, name: &str) -> Option<Value> {
        let (_, ty, cell) = self.global_layout.iter().find(|(n, _, _)| n == name)?;
        let mut at = *cell as usize;
        Some(unpack(ty, self.globals.cells(), &mut at))
    }

    /// The bare function `f`, typed as `F` (e.g.
    /// `unsafe extern "C-unwind" fn(*mut VmCtx, i64) -> i64`), for benchmarks that call it
    /// in a loop without the wrapper. Only scalar signatures are offered.
    ///
    /// Calling it is `unsafe`: pass a context from [`JitProgram::vm_context`], call it only
    /// while this program lives, and inside [`catch_script`] (a script fault unwinds).
    pub fn raw_entry<F: RawEntry>(&self, f: FuncId) -> Result<F, JitError> {
        let Some(sig) = self.sigs.get(f.index()) else {
            return Err(JitError::UnknownFunction(format!("#{}", f.0)));
        };
        let want: Vec<Type> = F::params();
        if want.contains(&Type::Unit) || want != sig.params || F::ret() != sig.ret {
            return Err(JitError::BadCall {
                function: sig.name.clone(),
                message: format!(
                    "its signature is ({}) -> {}, not ({}) -> {}",
                    list(&sig.params),
                    sig.ret,
                    list(&want),
                    F::ret()
                ),
            });
        }
        // SAFETY: the signature was checked against the HIR one above, and script functions
        // are compiled with exactly that ABI (vmctx first, scalars in registers).
        Ok(unsafe { F::from_code(self.functions[f.index()].addr as *const u8) })
    }
}

/// The boxed context of host calls through slots.
struct MethodCtx(Box<VmCtx>);

// SAFETY: the context's `names` points into the owning program's boxed names, which move with
// the program; generated code only reads it. Sending the program sends both together.
unsafe impl Send for MethodCtx {}

impl JitProgram {
    /// Release what the module variables hold (each left zero). A program whose code never
    /// runs again (a version a reload replaced) lets its objects and blocks go this way.
    pub(crate) fn release_globals(&mut self) {
        for (_, ty, cell) in &self.global_layout {
            let at = *cell as usize;
            release_cells(ty, &mut self.globals.cells_mut()[at..]);
        }
    }
}

impl Drop for JitProgram {
    fn drop(&mut self) {
        // Globals own their handles; the objects (and the runtime) go after them.
        self.release_globals();
    }
}

fn list(types: &[Type]) -> String {
    types
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn bad_call(message: String, span: Span) -> ScriptError {
    ScriptError::new(ScriptErrorKind::BadCall(message), span)
}

/// The vec and string cells made for a call's arguments, released when it drops.
struct ArgCells(Vec<(Type, u64)>);

impl Drop for ArgCells {
    fn drop(&mut self) {
        for (ty, cell) in self.0.drain(..) {
            release_cell(&ty, cell);
        }
    }
}

/// Release the reference a cell of a managed type owns.
pub(crate) fn release_cell(ty: &Type, cell: u64) {
    values::release_cell(elem_kind(ty), cell);
}

/// Release the references the managed cells of a flat value of type `ty` at the start of
/// `cells` own (an array's managed elements, or the one cell of a managed value), zeroing them.
pub(crate) fn release_cells(ty: &Type, cells: &mut [u64]) {
    for (i, kind) in crate::backend::objects::owned_cells(ty) {
        if let Some(c) = cells.get_mut(i as usize) {
            values::release_cell(kind, std::mem::take(c));
        }
    }
}

/// Take another reference through each managed cell of a flat value of type `ty` at the start
/// of `cells`.
pub(crate) fn retain_cells(ty: &Type, cells: &[u64]) {
    for (i, kind) in crate::backend::objects::owned_cells(ty) {
        if let Some(&c) = cells.get(i as usize) {
            values::retain_cell(kind, c);
        }
    }
}

/// A new owned cell for a host value of a one-cell type `ty` (`None` on a mismatch): a vec or
/// string is made, a scalar is its bits, a handle can only be `null`.
fn make_cell(v: &Value, ty: &Type) -> Option<u64> {
    match (v, ty) {
        (Value::I64(x), Type::I64) => Some(*x as u64),
        (Value::F64(x), Type::F64) => Some(x.to_bits()),
        (Value::Bool(b), Type::Bool) => Some(u64::from(*b)),
        (Value::Handle(0), Type::Handle { nullable: true, .. }) => Some(0),
        (Value::Str(s), Type::Str) => Some(values::str_from(s.clone())),
        // A vec, or an array boxed in a vec's cell.
        (Value::Vec(items), Type::Vec(elem)) | (Value::Array(items), Type::Array(elem, _)) => {
            if let Type::Array(_, n) = ty
                && items.len() != *n as usize
            {
                return None;
            }
            let mut cells = Vec::with_capacity(items.len());
            for item in items {
                match make_cell(item, elem) {
                    Some(c) => cells.push(c),
                    None => {
                        for c in cells {
                            release_cell(elem, c);
                        }
                        return None;
                    }
                }
            }
            Some(values::vec_from_cells(elem_kind(elem), cells))
        }
        _ => None,
    }
}

/// Append `v`'s cells if it has type `ty`; false on a mismatch. Cells made for vecs and
/// strings are also recorded in `made` (the caller releases them after the call).
fn pack(v: &Value, ty: &Type, cells: &mut Vec<u64>, made: &mut Vec<(Type, u64)>) -> bool {
    if let Some(dims) = bool_dims(ty) {
        // Packed, one byte an element (`hir::Type::cells`).
        let mut leaves = Vec::new();
        if !bool_leaves(v, ty, &mut leaves) {
            return false;
        }
        cells.extend(arrays::pack_bools(&leaves, &dims));
        return true;
    }
    match (v, ty) {
        (Value::Unit, Type::Unit) => true,
        (Value::I64(x), Type::I64) => {
            cells.push(*x as u64);
            true
        }
        (Value::F64(x), Type::F64) => {
            cells.push(x.to_bits());
            true
        }
        (Value::Bool(b), Type::Bool) => {
            cells.push(u64::from(*b));
            true
        }
        // The host holds no references to pass: only `null` goes in.
        (Value::Handle(0), Type::Handle { nullable: true, .. }) => {
            cells.push(0);
            true
        }
        (Value::Array(items), Type::Array(elem, n)) if items.len() == *n as usize => {
            items.iter().all(|item| pack(item, elem, cells, made))
        }
        (Value::Vec(_) | Value::Str(_), _) => match make_cell(v, ty) {
            Some(cell) => {
                cells.push(cell);
                made.push((ty.clone(), cell));
                true
            }
            None => false,
        },
        _ => false,
    }
}

/// The lengths of a bool array type, outermost first (`[[bool; 3]; 4]`: 4, 3); `None` for
/// any other type.
fn bool_dims(ty: &Type) -> Option<Vec<u32>> {
    let mut dims = Vec::new();
    let mut leaf = ty;
    while let Type::Array(elem, n) = leaf {
        dims.push(*n);
        leaf = elem;
    }
    (*leaf == Type::Bool && !dims.is_empty()).then_some(dims)
}

/// Append the leaves of `v`, a bool or an array of them of type `ty`, as cells (0 or 1);
/// false on a mismatch.
fn bool_leaves(v: &Value, ty: &Type, out: &mut Vec<u64>) -> bool {
    match (v, ty) {
        (Value::Bool(b), Type::Bool) => {
            out.push(u64::from(*b));
            true
        }
        (Value::Array(items), Type::Array(elem, n)) if items.len() == *n as usize => {
            items.iter().all(|item| bool_leaves(item, elem, out))
        }
        _ => false,
    }
}

/// The value of type `ty` (a bool or an array of them) of the leaves from `*at` on, advancing
/// it.
fn bool_value(ty: &Type, leaves: &[u64], at: &mut usize) -> Value {
    match ty {
        Type::Array(elem, n) => {
            Value::Array((0..*n).map(|_| bool_value(elem, leaves, at)).collect())
        }
        _ => {
            let leaf = leaves.get(*at).copied().unwrap_or(0);
            *at += 1;
            Value::Bool(leaf != 0)
        }
    }
}

/// Read a value of type `ty` from `cells` at `*at`, advancing it.
pub(crate) fn unpack(ty: &Type, cells: &[u64], at: &mut usize) -> Value {
    if let Some(dims) = bool_dims(ty) {
        // Packed, one byte an element (`hir::Type::cells`).
        let n = ty.cells() as usize;
        let packed = cells.get(*at..).unwrap_or_default();
        let leaves = arrays::unpack_bools(&packed[..n.min(packed.len())], &dims);
        *at += n;
        return bool_value(ty, &leaves, &mut 0);
    }
    let mut next = || {
        let c = cells.get(*at).copied().unwrap_or(0);
        *at += 1;
        c
    };
    match ty {
        Type::Unit => Value::Unit,
        Type::I64 => Value::I64(next() as i64),
        Type::F64 => Value::F64(f64::from_bits(next())),
        Type::Bool => Value::Bool(next() & 0xff != 0),
        Type::Array(elem, n) => Value::Array((0..*n).map(|_| unpack(elem, cells, at)).collect()),
        Type::Handle { .. } | Type::Null => Value::Handle(next()),
        Type::Vec(_) | Type::Str => unpack_cell(ty, next()),
        Type::Fn { .. } => {
            let mut shown = String::new();
            let cell = next();
            if cell != 0 {
                crate::runtime::closure::format_closure(cell, &mut shown);
            }
            Value::Fn(shown)
        }
    }
}

/// The value of one cell of type `ty` (a vec's or string's contents copied out).
fn unpack_cell(ty: &Type, cell: u64) -> Value {
    match ty {
        // SAFETY: the cell comes from a program value that holds its count while it is read.
        Type::Str => Value::Str(unsafe { values::str_text(cell) }.to_string()),
        Type::Vec(elem) | Type::Array(elem, _) => {
            // SAFETY: as above (an array in a vec's cell is boxed as a vec block).
            let block = unsafe { values::vec_block(cell) };
            let items = block.into_iter().flat_map(|b| b.cells());
            let items = items.map(|c| unpack_cell(elem, c)).collect();
            match ty {
                Type::Vec(_) => Value::Vec(items),
                _ => Value::Array(items),
            }
        }
        ty => unpack(ty, &[cell], &mut 0),
    }
}

/// A scalar that can cross the border in a register.
pub trait RawScalar: Copy {
    /// Its script type.
    fn ty() -> Type;
}

impl RawScalar for i64 {
    fn ty() -> Type {
        Type::I64
    }
}

impl RawScalar for f64 {
    fn ty() -> Type {
        Type::F64
    }
}

impl RawScalar for bool {
    fn ty() -> Type {
        Type::Bool
    }
}

impl RawScalar for () {
    fn ty() -> Type {
        Type::Unit
    }
}

/// A Rust function-pointer type matching a script function's ABI
/// (`unsafe extern "C-unwind" fn(*mut VmCtx, A, B..) -> R`).
///
/// # Safety
/// Implementors must be function-pointer types whose ABI is the one the JIT compiles for
/// `params()` and `ret()`.
pub unsafe trait RawEntry: Copy {
    /// Parameter types (after the hidden `vmctx`).
    fn params() -> Vec<Type>;
    /// Return type.
    fn ret() -> Type;
    /// # Safety
    /// `code` must be finalized code of a function with this signature.
    unsafe fn from_code(code: *const u8) -> Self;
}

macro_rules! raw_entry {
    ($($arg:ident),*) => {
        // SAFETY: `vmctx` then scalars in registers is exactly `script_signature` for scalar
        // parameters and a scalar (or no) result, under the platform's default C ABI.
        unsafe impl<R: RawScalar, $($arg: RawScalar),*> RawEntry
            for unsafe extern "C-unwind" fn(*mut VmCtx, $($arg),*) -> R
        {
            fn params() -> Vec<Type> {
                vec![$($arg::ty()),*]
            }
            fn ret() -> Type {
                R::ty()
            }
            unsafe fn from_code(code: *const u8) -> Self {
                // SAFETY: the caller guarantees the signature; a code address and a fn
                // pointer have the same size and representation.
                unsafe { std::mem::transmute_copy::<*const u8, Self>(&code) }
            }
        }
    };
}

raw_entry!();
raw_entry!(A);
raw_entry!(A, B);
raw_entry!(A, B, C);
raw_entry!(A, B, C, D);
