//! The interpreter: the reference semantics of the checked program, walking the HIR directly.
//!
//! It follows the semantics in [`crate::lang::hir`]'s module docs; every other backend must
//! agree with it.
//!
//! # Representation
//! Locals live in one value stack (`Vec<Val>`): a call's frame is a window of it, and a local
//! is read by its slot number (no name lookups at run time). An array is an `Rc<Vec<Val>>`
//! shared on copy and copied on the first write to a shared one (`Rc::make_mut`), which gives
//! arrays value semantics (`let b = a`, passing, returning, `for x in a`) without copying arrays
//! that are never written.
//!
//! # Run-time checks
//! Index bounds are checked whatever [`Checks`] says: the interpreter stays memory-safe, so an
//! out-of-range index always raises `IndexOutOfRange` at the index expression. With checks off
//! that is one of the allowed outcomes of an unchecked access (other backends may read or
//! write out of bounds), so only programs that index in range give the same result everywhere.
//!
//! # Stack exhaustion
//! Each script call compares the address of a local in the interpreter's call path (a close
//! stand-in for the stack pointer) against a limit: the low end of the current thread's stack
//! (from `pthread_getattr_np`) plus [`STACK_MARGIN`], or [`RUN_STACK`] below the outermost
//! call when that is higher (a bounded depth ends runaway recursion quickly on the 256 MiB
//! script thread). Past the limit the call raises
//! `StackExhausted` at the callee's name span instead of overflowing. The margin covers the
//! deepest Rust recursion between two calls: [`LEVEL_STACK`] for each level the program's
//! source nests ([`Program::nesting`], at most [`crate::lang::parser::MAX_EXPR_DEPTH`]) on top
//! of [`STACK_MARGIN`]. Where the thread's stack cannot be queried,
//! the limit is [`FALLBACK_BUDGET`] below the stack position at the outermost `call`.

use std::rc::Rc;
use std::sync::Arc;

mod objects;
mod ops;
mod reload;
mod val;

use self::objects::{at, read_cell};
use self::ops::{apply_math, binary, check_index};
use self::val::{Closure, Lambda, Val, fits};
use super::objects::check_cell;
use super::{Checks, Value};
use crate::backend::objects as shared;
use crate::lang::hir::{
    BinOp, Block, Expr, ExprKind, FuncId, Function, GlobalId, LogicOp, Place, PlaceKind, Program,
    StmtKind, Type, UnOp,
};
use crate::lang::span::Span;
use crate::runtime::class::ClassRef;
use crate::runtime::handle::Handle;
use crate::runtime::host::{HostType, host_table};
use crate::runtime::rt::Runtime;
use crate::runtime::{ScriptError, ScriptErrorKind, catch_script};

/// Stack kept free below the limit for the Rust frames between two script calls.
pub const STACK_MARGIN: usize = 256 * 1024;

/// More stack kept free per level of the program's nesting: evaluating one level of an
/// expression takes a few hundred bytes in a release build (a 1,000-term sum in a recursive
/// function overflowed the 256 KiB margin alone).
pub const LEVEL_STACK: usize = 2 * 1024;

/// Stack a run may use when the thread's stack bounds are unknown.
pub const FALLBACK_BUDGET: usize = 1024 * 1024;

/// The most stack a run may use below its outermost call, whatever the thread has: runaway
/// recursion fills it before it raises, and filling the 256 MiB script thread took a second.
/// That is some 50,000 calls of a small function, about what the 64 MiB test threads allow.
pub const RUN_STACK: usize = 64 << 20;

/// How a statement finished.
enum Flow {
    Next,
    Break,
    Continue,
    Return(Val),
}

type R<T> = Result<T, ScriptError>;

/// Where an assignment stores: a root variable and the element indexes below it.
enum Root<'p> {
    Local(usize),
    Global(usize),
    /// Field `field` (of type `ty`) of the object in `handle`, checked at `span` when evaluated
    /// and again when the place is used: the place works on the field's runtime cells in place
    /// (see `objects::cell_place`), converting only the cell it reads or writes.
    Field {
        handle: Val,
        field: usize,
        ty: &'p Type,
        span: Span,
    },
}

/// One index of a place: an array's, checked when evaluated; a vec's, checked at the store.
#[derive(Clone, Copy)]
enum PlaceStep {
    Array(usize),
    Vec(i64, Span),
}

/// What a statement or a vec method does to a place.
#[derive(Clone, Copy)]
enum PlaceOp {
    /// `place = value`, or `place op= value` (the operator's span for its errors).
    Assign(Option<BinOp>, Span),
    /// `place.push(value)` (the call's span, for out of memory).
    Push(Span),
    /// `place.pop()`, failing at the span on an empty vec.
    Pop(Span),
}

impl PlaceOp {
    /// Where the operation's errors are reported.
    fn span(&self) -> Span {
        match *self {
            PlaceOp::Assign(_, s) | PlaceOp::Push(s) | PlaceOp::Pop(s) => s,
        }
    }
}

/// The element a place's path leads to from its root, making shared arrays and vecs unique on
/// the way and checking vec indexes against the lengths they have now.
fn walk<'v>(mut slot: &'v mut Val, path: &[PlaceStep]) -> R<&'v mut Val> {
    for step in path {
        slot = match (slot, *step) {
            (Val::A(items), PlaceStep::Array(i)) => &mut val::unique_items(items)[i],
            (vec, PlaceStep::Vec(i, span)) => {
                let items = vec.vec_mut();
                let i = check_index(i, items.len() as i64, span)?;
                &mut items[i]
            }
            (_, PlaceStep::Array(_)) => {
                unreachable!("checked program: an array index on a non-array")
            }
        };
    }
    Ok(slot)
}

/// An interpreter over one checked program, with the program's module variables.
pub struct Interp<'p> {
    program: &'p Program,
    checks: Checks,
    globals: Vec<Val>,
    /// Every active frame's locals; the current frame starts at `base`.
    stack: Vec<Val>,
    base: usize,
    /// Below this stack address a call raises `StackExhausted` (0 until the first call).
    stack_limit: usize,
    /// The runtime classes of the program's classes, by `ClassId` (declared after every value
    /// that may hold a handle, so those are released first).
    classes: Vec<ClassRef>,
    runtime: Arc<Runtime>,
    /// The `vmctx` of the classes (see `objects::HostLink`); `None` only once dropped.
    host: Option<Box<objects::HostLink>>,
    /// What the closures of each lambda share (how they are shown, their blocks' descriptor),
    /// by `FuncId` (made on first use).
    closure_names: Vec<Option<Rc<Lambda>>>,
}

impl Drop for Interp<'_> {
    fn drop(&mut self) {
        // Values first, so the objects only they held are freed; a class whose objects the
        // host still holds keeps its link (its trampolines read it): leaked on purpose.
        self.globals.clear();
        self.stack.clear();
        if shared::shell_count(&self.classes) > 0 {
            std::mem::forget(self.host.take());
        }
    }
}

impl<'p> Interp<'p> {
    /// An interpreter for `program` with its module variables initialized (runs `<init>`).
    pub fn new(program: &'p Program, checks: Checks) -> Result<Interp<'p>, ScriptError> {
        crate::backend::jit::compile::globals_fit(program)?;
        let globals = initial_globals(program);
        let runtime = Arc::new(Runtime::new());
        // Interpreted methods have no machine code: the host interfaces' methods get
        // trampolines into the interpreter, the others empty slots.
        let host = Box::new(objects::HostLink::new());
        let vmctx = &*host as *const objects::HostLink as *mut std::ffi::c_void;
        let classes =
            shared::define_classes(&runtime, program, vmctx, |m| objects::slot_code(program, m))
                .map_err(|e| {
                    ScriptError::new(
                        ScriptErrorKind::BadCall(format!("the runtime refused a class: {e}")),
                        Span::default(),
                    )
                })?;
        let mut interp = Interp {
            program,
            checks,
            globals,
            stack: Vec::new(),
            base: 0,
            stack_limit: 0,
            classes,
            runtime,
            host: Some(host),
            closure_names: vec![None; program.functions.len()],
        };
        interp.call(program.init, &[])?;
        Ok(interp)
    }

    /// The checks setting it was made with (see the module docs: bounds are always checked).
    pub fn checks(&self) -> Checks {
        self.checks
    }

    /// The object runtime the program's objects live in.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// The runtime class of a program class.
    pub fn class_ref(&self, id: crate::lang::hir::ClassId) -> &ClassRef {
        &self.classes[id.index()]
    }

    /// Objects of the program's classes not freed yet (0 when nothing holds a handle).
    pub fn shell_count(&self) -> usize {
        shared::shell_count(&self.classes)
    }

    /// Module variable `i`, an array's zero made first if nothing made it yet (code `<init>`
    /// calls may read or write a later variable, which holds its zero value then): a large
    /// one asks the job's memory limit, at `span`.
    fn global_slot(&mut self, i: usize, span: Span) -> R<&mut Val> {
        if matches!(self.globals[i], Val::Unit)
            && let ty @ Type::Array(..) = &self.program.globals[i].ty
        {
            self.globals[i] = zero_val(ty, span)?;
        }
        Ok(&mut self.globals[i])
    }

    /// A handle (a new reference) to the object in a handle-typed module variable (`None` for
    /// another type).
    pub fn global_handle(&self, id: GlobalId) -> Option<Handle> {
        match &self.globals[id.index()] {
            Val::H(h) => Some(h.clone()),
            _ => None,
        }
    }

    /// The current value of a module variable.
    pub fn global(&self, id: GlobalId) -> Value {
        match &self.globals[id.index()] {
            Val::Unit => Value::zero(&self.program.globals[id.index()].ty),
            v => v.to_value(),
        }
    }

    /// Call a script function.
    ///
    /// # Panics
    /// If `args` do not match the function's parameters in number and type (a host bug).
    pub fn call(&mut self, f: FuncId, args: &[Value]) -> Result<Value, ScriptError> {
        let func = self.program.function(f);
        if func.is_lambda() {
            return Err(ScriptError::new(
                ScriptErrorKind::BadCall(format!(
                    "`{}` is a lambda's body: it runs only through its closure",
                    func.name
                )),
                func.name_span,
            ));
        }
        let params: Vec<&Type> = func.param_types().collect();
        assert!(
            params.len() == args.len() && args.iter().zip(&params).all(|(a, t)| fits(a, t)),
            "Interp::call: arguments {args:?} do not match `{}`'s parameters {params:?}",
            func.name
        );
        let outer = self.stack_limit == 0;
        if outer {
            self.stack_limit = stack_limit(self.program.nesting);
        }
        let saved_len = self.stack.len();
        let saved_base = self.base;
        self.stack.extend(args.iter().map(Val::from_value));
        // The runtime's helpers the interpreter shares (a field's vec pushed, a string stored
        // in a field) raise as they do for compiled code: caught here, at the call.
        let result = catch_script(func.name_span, || self.invoke(f, saved_len)).and_then(|r| r);
        // On an error the frames above are abandoned mid-way: drop them all.
        self.stack.truncate(saved_len);
        self.base = saved_base;
        if outer {
            self.stack_limit = 0;
        }
        result.map(|v| v.to_value())
    }

    /// Run function `f` whose arguments are on the stack from `base`.
    fn invoke(&mut self, f: FuncId, base: usize) -> R<Val> {
        let func = self.program.function(f);
        let marker = 0u8;
        if (std::hint::black_box(&marker) as *const u8 as usize) < self.stack_limit {
            return Err(ScriptError::new(
                ScriptErrorKind::StackExhausted {
                    function: func.name.clone(),
                },
                func.name_span,
            ));
        }
        self.stack.resize(base + func.locals.len(), Val::Unit);
        let saved_base = std::mem::replace(&mut self.base, base);
        let flow = self.block(&func.body)?;
        self.base = saved_base;
        self.stack.truncate(base);
        Ok(match flow {
            Flow::Return(v) => v,
            _ => Val::Unit,
        })
    }

    fn block(&mut self, block: &'p Block) -> R<Flow> {
        for stmt in &block.stmts {
            match self.stmt(&stmt.kind)? {
                Flow::Next => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Next)
    }

    fn stmt(&mut self, stmt: &'p StmtKind) -> R<Flow> {
        match stmt {
            StmtKind::Let { local, init } => {
                let v = self.eval(init)?;
                self.stack[self.base + local.index()] = v;
            }
            StmtKind::Assign {
                place,
                op,
                op_span,
                value,
            } => self.assign(place, *op, *op_span, value)?,
            StmtKind::Expr(e) => {
                self.eval(e)?;
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                if self.eval(cond)?.bool() {
                    return self.block(then_block);
                } else if let Some(b) = else_block {
                    return self.block(b);
                }
            }
            StmtKind::While { cond, body } => {
                while self.eval(cond)?.bool() {
                    match self.block(body)? {
                        Flow::Break => break,
                        Flow::Next | Flow::Continue => {}
                        ret @ Flow::Return(_) => return Ok(ret),
                    }
                }
            }
            StmtKind::ForRange {
                var,
                start,
                end,
                body,
            } => {
                let mut i = self.eval(start)?.int();
                let end = self.eval(end)?.int();
                let slot = self.base + var.index();
                while i < end {
                    self.stack[slot] = Val::I(i);
                    match self.block(body)? {
                        Flow::Break => break,
                        Flow::Next | Flow::Continue => {}
                        ret @ Flow::Return(_) => return Ok(ret),
                    }
                    i += 1;
                }
            }
            StmtKind::ForStep {
                var,
                start,
                end,
                inclusive,
                step,
                step_span,
                body,
            } => {
                let head = (start, end, step.as_ref(), *step_span);
                return self.for_step(*var, head, *inclusive, body);
            }
            StmtKind::ForEach { var, array, body } => {
                // Held (a count of its elements) while the body runs: what the body does to the
                // variable or the field it came from copies first, so the loop sees the array or
                // vec as it was. A vec from a field stays in its block, each element converted
                // as it is reached.
                let items = self.eval(array)?;
                let slot = self.base + var.index();
                for i in 0..items.len() {
                    self.stack[slot] = items.item(i as i64, array.span)?;
                    match self.block(body)? {
                        Flow::Break => break,
                        Flow::Next | Flow::Continue => {}
                        ret @ Flow::Return(_) => return Ok(ret),
                    }
                }
            }
            StmtKind::Break => return Ok(Flow::Break),
            StmtKind::Continue => return Ok(Flow::Continue),
            StmtKind::Return(value) => {
                let v = match value {
                    Some(e) => self.eval(e)?,
                    None => Val::Unit,
                };
                return Ok(Flow::Return(v));
            }
        }
        Ok(Flow::Next)
    }

    /// `for var in start..end step k` / `start..=end`: see hir's `ForStep` (out of `stmt`,
    /// whose frame every block level pays for).
    #[inline(never)]
    fn for_step(
        &mut self,
        var: crate::lang::hir::LocalId,
        (start, end, step, step_span): (&'p Expr, &'p Expr, Option<&'p Expr>, Span),
        inclusive: bool,
        body: &'p Block,
    ) -> R<Flow> {
        let mut i = self.eval(start)?.int();
        let end = self.eval(end)?.int();
        let k = match step {
            Some(k) => self.eval(k)?.int(),
            None => 1,
        };
        if k <= 0 {
            return Err(ScriptError::new(
                ScriptErrorKind::StepNotPositive { step: k },
                step_span,
            ));
        }
        let slot = self.base + var.index();
        let mut more = if inclusive { i <= end } else { i < end };
        while more {
            self.stack[slot] = Val::I(i);
            match self.block(body)? {
                Flow::Break => break,
                Flow::Next | Flow::Continue => {}
                ret @ Flow::Return(_) => return Ok(ret),
            }
            // What is left to `end` as an unsigned number (exact: `i <= end`).
            let left = end.wrapping_sub(i) as u64;
            more = if inclusive {
                left >= k as u64
            } else {
                left > k as u64
            };
            i = i.wrapping_add(k);
        }
        Ok(Flow::Next)
    }

    /// `place = value` / `place op= value`: indexes (checked) first, then the value, then the
    /// current value is read (for `op=`) and the result stored.
    fn assign(
        &mut self,
        place: &'p Place,
        op: Option<BinOp>,
        op_span: Span,
        value: &'p Expr,
    ) -> R<()> {
        self.place_op(place, Some(value), PlaceOp::Assign(op, op_span))?;
        Ok(())
    }

    /// Evaluate a place's indexes, then `value` (if any), then walk to the place and do `op`
    /// on it with the value. A place in a field is walked through the field's runtime cells
    /// (making shared vecs unique on the way, as compiled code does): no whole vec is converted.
    fn place_op(&mut self, place: &'p Place, value: Option<&'p Expr>, op: PlaceOp) -> R<Val> {
        let mut path = Vec::new();
        let root = self.resolve_place(place, &mut path)?;
        let v = match value {
            Some(e) => self.eval(e)?,
            None => Val::Unit,
        };
        // Copying a shared vec or array on the way, converting a value into a field's cell,
        // growing a vec: the runtime's allocations raise `OutOfMemory` past the job's limit,
        // here caught at the operation, as compiled code reports it.
        let at = op.span();
        catch_script(at, || self.place_apply(root, &path, v, op)).and_then(|r| r)
    }

    /// The rest of [`Self::place_op`]: walk to the place and do `op` there.
    fn place_apply(&mut self, root: Root<'p>, path: &[PlaceStep], v: Val, op: PlaceOp) -> R<Val> {
        if let (Root::Global(i), [], PlaceOp::Assign(None, _)) = (&root, path, &op) {
            // A whole module variable replaced: its old value is not read, so a module array
            // not made yet is not made only to be dropped (it doubled `<init>`'s memory).
            self.globals[*i] = v;
            return Ok(Val::Unit);
        }
        let slot = match root {
            Root::Local(i) => walk(&mut self.stack[self.base + i], path)?,
            Root::Global(i) => walk(self.global_slot(i, op.span())?, path)?,
            Root::Field {
                handle,
                field,
                ty,
                span,
            } => {
                // Checked again: the indexes' and the value's calls may have changed the object.
                // SAFETY: `handle` owns a reference while the cell is used.
                let obj = unsafe { check_cell(handle.handle().cell(), span) }?;
                // SAFETY: the object is checked attached and no script code runs until `op`
                // is done with the cell.
                let (cell, ty) = unsafe { objects::cell_place(obj, field, ty, path) }?;
                // SAFETY: `cell_place`'s cell, used before anything else touches the object.
                return unsafe { objects::cell_op(cell, ty, op, v) };
            }
        };
        Ok(match op {
            PlaceOp::Assign(None, _) => {
                *slot = v;
                Val::Unit
            }
            PlaceOp::Assign(Some(op), span) => {
                *slot = binary(op, span, &*slot, &v)?;
                Val::Unit
            }
            PlaceOp::Push(span) => {
                let items = slot.vec_mut();
                if items.len() == items.capacity() {
                    let grow = std::mem::size_of::<Val>() * items.capacity().max(4);
                    ops::room(grow, span)?;
                    items.try_reserve(1).map_err(|_| ops::refused(span))?;
                }
                items.push(v);
                Val::Unit
            }
            PlaceOp::Pop(span) => slot
                .vec_mut()
                .pop()
                .ok_or_else(|| ScriptError::new(ScriptErrorKind::PopEmpty, span))?,
        })
    }

    /// Evaluate a place's indexes, outermost first; an array index is checked against its
    /// array's length now, a vec index later (see [`walk`]).
    fn resolve_place(&mut self, place: &'p Place, path: &mut Vec<PlaceStep>) -> R<Root<'p>> {
        match &place.kind {
            PlaceKind::Local(id) => Ok(Root::Local(id.index())),
            PlaceKind::Global(id) => Ok(Root::Global(id.index())),
            PlaceKind::Index { base, index } => {
                let root = self.resolve_place(base, path)?;
                let i = self.eval(index)?.int();
                path.push(match &base.ty {
                    Type::Array(_, n) => {
                        PlaceStep::Array(check_index(i, i64::from(*n), index.span)?)
                    }
                    Type::Vec(_) => PlaceStep::Vec(i, index.span),
                    _ => unreachable!("checked program: indexing a non-array place"),
                });
                Ok(root)
            }
            PlaceKind::Field { object, field } => {
                let handle = self.receiver(object, place.span)?;
                Ok(Root::Field {
                    handle,
                    field: *field as usize,
                    ty: &place.ty,
                    span: place.span,
                })
            }
        }
    }

    fn eval(&mut self, e: &'p Expr) -> R<Val> {
        Ok(match &e.kind {
            ExprKind::Int(v) => Val::I(*v),
            ExprKind::Float(v) => Val::F(*v),
            ExprKind::Bool(v) => Val::B(*v),
            ExprKind::Local(id) => self.stack[self.base + id.index()].clone(),
            ExprKind::Global(id) => self.global_slot(id.index(), e.span)?.clone(),
            ExprKind::Unary(op, operand) => {
                let v = self.eval(operand)?;
                match (op, v) {
                    (UnOp::Neg, Val::I(x)) => Val::I(x.wrapping_neg()),
                    (UnOp::Neg, Val::F(x)) => Val::F(-x),
                    (UnOp::Not, Val::B(x)) => Val::B(!x),
                    (UnOp::BitNot, Val::I(x)) => Val::I(!x),
                    _ => unreachable!("checked program: bad unary operand"),
                }
            }
            ExprKind::Binary {
                op,
                op_span,
                lhs,
                rhs,
            } => {
                let a = self.eval(lhs)?;
                let b = self.eval(rhs)?;
                binary(*op, *op_span, &a, &b)?
            }
            ExprKind::Logical(op, lhs, rhs) => {
                let a = self.eval(lhs)?.bool();
                match (op, a) {
                    (LogicOp::And, false) => Val::B(false),
                    (LogicOp::Or, true) => Val::B(true),
                    _ => Val::B(self.eval(rhs)?.bool()),
                }
            }
            ExprKind::Cast(inner) => {
                let v = self.eval(inner)?;
                match (v, &e.ty) {
                    (Val::I(x), Type::F64) => Val::F(x as f64),
                    (Val::F(x), Type::I64) => Val::I(x as i64),
                    (Val::B(x), Type::I64) => Val::I(i64::from(x)),
                    (same, _) => same,
                }
            }
            ExprKind::Call(f, args) => {
                let base = self.stack.len();
                for arg in args {
                    let v = self.eval(arg)?;
                    self.stack.push(v);
                }
                self.invoke(*f, base)?
            }
            ExprKind::CallNative(id, args) => {
                let import = &self.program.natives[id.index()];
                let mut cells = Vec::with_capacity(args.len());
                for arg in args {
                    cells.push(match self.eval(arg)? {
                        Val::I(x) => x as u64,
                        Val::F(x) => x.to_bits(),
                        Val::B(x) => u64::from(x),
                        _ => unreachable!("checked program: native arguments are scalars"),
                    });
                }
                let host = &host_table()[import.host];
                let raw = catch_script(e.span, || (host.call_cells)(&cells))?;
                match host.sig.ret {
                    HostType::I64 => Val::I(raw as i64),
                    HostType::F64 => Val::F(f64::from_bits(raw)),
                    HostType::Bool => Val::B(raw != 0),
                    HostType::Unit => Val::Unit,
                }
            }
            ExprKind::ArrayLit(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(self.eval(item)?);
                }
                Val::A(Rc::new(out))
            }
            ExprKind::ArrayRepeat(item, n) => {
                let v = self.eval(item)?;
                ops::room(std::mem::size_of::<Val>() * *n as usize, e.span)?;
                let mut out = Vec::new();
                out.try_reserve_exact(*n as usize)
                    .map_err(|_| ops::refused(e.span))?;
                out.resize(*n as usize, v);
                Val::A(Rc::new(out))
            }
            ExprKind::Index(base, index) => {
                let arr = self.eval(base)?;
                let i = self.eval(index)?.int();
                arr.item(i, e.span)?
            }
            ExprKind::Len(_)
            | ExprKind::VecNew
            | ExprKind::VecPush(..)
            | ExprKind::VecPop(_)
            | ExprKind::StrLit(_)
            | ExprKind::ToStr(_)
            | ExprKind::Print(_)
            | ExprKind::StrByte(..)
            | ExprKind::StrSlice(..)
            | ExprKind::Closure { .. }
            | ExprKind::CallClosure(..) => self.eval_value_op(e)?,
            ExprKind::Math(m, args) => self.eval_math(*m, args)?,
            ExprKind::Null => Val::H(Handle::null()),
            ExprKind::New(class) => Val::H(
                // A raise from the runtime's allocations is caught here, at the `new`.
                catch_script(e.span, || {
                    self.runtime.new_object(&self.classes[class.index()])
                })
                .and_then(|r| r)
                .map_err(|err| at(err, e.span))?,
            ),
            ExprKind::Field(object, field) => {
                let v = self.eval(object)?;
                // SAFETY: `v` owns the handle's reference while the cell is read.
                let obj = unsafe { check_cell(v.handle().cell(), e.span) }?;
                read_cell(obj, *field as usize, &e.ty)
            }
            ExprKind::MethodCall { object, func, args } => {
                let this = self.receiver(object, e.span)?;
                self.call_method(*func, this, args)?
            }
            ExprKind::VirtualCall {
                object,
                method,
                args,
                ..
            } => {
                let this = self.receiver(object, e.span)?;
                // SAFETY: checked by `receiver`; `this` owns a reference.
                let obj = unsafe { check_cell(this.handle().cell(), e.span) }?;
                let func = self.dispatch(obj, method);
                self.call_method(func, this, args)?
            }
            ExprKind::Downcast(inner, class) => {
                let v = self.eval(inner)?;
                if v.handle().is_null() {
                    return Ok(v);
                }
                // SAFETY: `v` owns the handle's reference while the class is read.
                let obj = unsafe { check_cell(v.handle().cell(), e.span) }?;
                if shared::instance_of(obj, &self.classes[class.index()]) {
                    v
                } else {
                    Val::H(Handle::null())
                }
            }
            ExprKind::NonNull(inner) => {
                let v = self.eval(inner)?;
                if v.handle().is_null() {
                    return Err(ScriptError::new(ScriptErrorKind::NullHandle, e.span));
                }
                v
            }
            ExprKind::Assert(cond) => {
                if !self.eval(cond)?.bool() {
                    return Err(ScriptError::new(ScriptErrorKind::AssertionFailed, e.span));
                }
                Val::Unit
            }
        })
    }
}

impl<'p> Interp<'p> {
    /// A math builtin: out of `eval`, as [`Interp::eval_value_op`] is.
    #[inline(never)]
    fn eval_math(&mut self, m: crate::lang::hir::Math, args: &'p [Expr]) -> R<Val> {
        let mut vals = [Val::Unit, Val::Unit];
        for (slot, arg) in vals.iter_mut().zip(args) {
            *slot = self.eval(arg)?;
        }
        Ok(apply_math(m, &vals[..args.len()]))
    }

    /// Vecs, strings and `len()`: out of `eval`, whose stack frame every level of script
    /// recursion pays for.
    #[inline(never)]
    fn eval_value_op(&mut self, e: &'p Expr) -> R<Val> {
        Ok(match &e.kind {
            ExprKind::Len(array) => Val::I(match self.eval(array)? {
                Val::S(s) => s.len(),
                v => v.len(),
            } as i64),
            ExprKind::VecNew => Val::V(Rc::new(Vec::new())),
            ExprKind::VecPush(place, value) => {
                self.place_op(place, Some(value), PlaceOp::Push(e.span))?
            }
            ExprKind::VecPop(place) => self.place_op(place, None, PlaceOp::Pop(e.span))?,
            ExprKind::StrLit(text) => Val::S(Rc::new(text.clone())),
            ExprKind::ToStr(inner) => {
                let v = self.eval(inner)?;
                // Showing grows the text within the job's memory limit (a raise, caught here).
                let out = catch_script(e.span, || {
                    let mut out = String::new();
                    v.show(&mut out, false);
                    out
                })?;
                Val::S(Rc::new(out))
            }
            ExprKind::StrByte(s, i) => {
                let s = self.eval(s)?;
                let i = self.eval(i)?.int();
                let Val::S(text) = s else {
                    unreachable!("checked program: byte() of a non-string")
                };
                Val::I(
                    crate::runtime::strings::byte_at(&text, i)
                        .map_err(|k| ScriptError::new(k, e.span))?,
                )
            }
            ExprKind::StrSlice(s, a, b) => {
                let s = self.eval(s)?;
                let a = self.eval(a)?.int();
                let b = self.eval(b)?.int();
                let Val::S(text) = s else {
                    unreachable!("checked program: slice() of a non-string")
                };
                let part = crate::runtime::strings::slice(&text, a, b)
                    .map_err(|k| ScriptError::new(k, e.span))?;
                ops::room(part.len(), e.span)?;
                Val::S(Rc::new(part.to_string()))
            }
            ExprKind::Print(inner) => {
                match self.eval(inner)? {
                    Val::S(s) => crate::runtime::output::print_line(&s),
                    v => {
                        let out = catch_script(e.span, || {
                            let mut out = String::new();
                            v.show(&mut out, false);
                            out
                        })?;
                        crate::runtime::output::print_line(&out);
                    }
                }
                Val::Unit
            }
            ExprKind::Closure { func, captures } => {
                let mut cells = Vec::with_capacity(captures.len());
                for c in captures {
                    cells.push(self.eval(c)?);
                }
                ops::room(std::mem::size_of::<Closure>() + 16 * cells.len(), e.span)?;
                let lambda = self.lambda(*func, &e.ty);
                let code: *const Function = self.program.function(*func);
                Val::C(Rc::new(Closure::new(code, lambda, cells)))
            }
            ExprKind::CallClosure(callee, args) => {
                let Val::C(closure) = self.eval(callee)? else {
                    return Err(ScriptError::new(ScriptErrorKind::NullClosure, callee.span));
                };
                let base = self.stack.len();
                for arg in args {
                    let v = self.eval(arg)?;
                    self.stack.push(v);
                }
                let id = self.closure_func(&closure, callee.span)?;
                let func = self.program.function(id);
                if let Some(locals) = &func.captures {
                    self.stack.resize(base + func.locals.len(), Val::Unit);
                    for (local, cell) in locals.iter().zip(&closure.cells) {
                        self.stack[base + local.index()] = cell.clone();
                    }
                }
                self.invoke(id, base)?
            }
            _ => unreachable!("eval_value_op: not a vec, string or closure operation"),
        })
    }
}

impl Interp<'_> {
    /// The function a closure calls in the running program version. A closure made by a version
    /// a reload replaced cannot be reached (the reload resets every field and module variable
    /// holding closures, as on the compiled backends); should one be, it is refused rather than
    /// run against the new version's state.
    fn closure_func(&self, closure: &Closure, span: Span) -> R<FuncId> {
        let funcs = &self.program.functions;
        let size = std::mem::size_of::<Function>();
        let offset = (closure.code as usize).wrapping_sub(funcs.as_ptr() as usize);
        if offset < funcs.len() * size {
            return Ok(FuncId((offset / size) as u32));
        }
        // SAFETY: as `Closure::code` says, the version that made it is still borrowed.
        let name = unsafe { &(*closure.code).name };
        Err(ScriptError::new(
            ScriptErrorKind::BadCall(format!(
                "this closure (`{name}`) was made by a version of the program that a reload \
                 replaced, whose code does not run again (a hotlab bug: the reload should have \
                 reset it)"
            )),
            span,
        ))
    }

    /// What the closures of lambda `func` (of type `ty`) share, made once per lambda.
    fn lambda(&mut self, func: FuncId, ty: &Type) -> Rc<Lambda> {
        let slot = &mut self.closure_names[func.index()];
        slot.get_or_insert_with(|| Rc::new(Lambda::new(format!("<{ty}>").into())))
            .clone()
    }
}

/// The lowest stack address a call may start at on this thread, for a program nesting
/// `nesting` levels deep.
fn stack_limit(nesting: u32) -> usize {
    let margin = STACK_MARGIN.saturating_add(LEVEL_STACK.saturating_mul(nesting as usize));
    let here = {
        let marker = 0u8;
        std::hint::black_box(&marker) as *const u8 as usize
    };
    match thread_stack_low() {
        Some(low) if low < here => low
            .saturating_add(margin)
            .max(here.saturating_sub(RUN_STACK)),
        _ => here.saturating_sub(FALLBACK_BUDGET),
    }
}

/// The low end of the current thread's stack, if the platform tells; asked once per thread
/// (`runtime::counts::this_stack`). (On the main thread glibc reads `/proc/self/maps` to answer:
/// about 74 µs, which every outermost host call into an interpreted object paid before the
/// cache.)
fn thread_stack_low() -> Option<usize> {
    crate::runtime::counts::this_stack().map(|(lo, _)| lo)
}

/// Run a program's `main` (after `<init>`) with the interpreter.
///
/// # Panics
/// If the program has no `main`: check [`Program::main`] first.
pub fn run_main(program: &Program, checks: Checks) -> Result<Value, ScriptError> {
    let main = program
        .main
        .expect("run_main: the program has no `main` (check Program::main first)");
    let mut interp = Interp::new(program, checks)?;
    interp.call(main, &[])
}

/// The module variables before `<init>` runs: zero values, an array unmade (`Unit`) because
/// `<init>` usually assigns it first and a large one would be built twice (see
/// `Interp::global_slot`).
fn initial_globals(program: &Program) -> Vec<Val> {
    program
        .globals
        .iter()
        .map(|g| match g.ty {
            Type::Array(..) => Val::Unit,
            _ => Val::from_value(&Value::zero(&g.ty)),
        })
        .collect()
}

/// The zero value of type `ty` (`0`, `0.0`, `false`, null, empty, arrays of them), an array's
/// cells first asked of the job's memory limit at `span` (the rows of a nested array are one
/// shared zero row until written).
fn zero_val(ty: &Type, span: Span) -> R<Val> {
    let Type::Array(elem, n) = ty else {
        return Ok(Val::from_value(&Value::zero(ty)));
    };
    let n = *n as usize;
    ops::room(std::mem::size_of::<Val>().saturating_mul(n), span)?;
    let row = zero_val(elem, span)?;
    let mut out = Vec::new();
    out.try_reserve_exact(n).map_err(|_| ops::refused(span))?;
    out.resize(n, row);
    Ok(Val::A(Rc::new(out)))
}

#[cfg(test)]
mod tests {
    use super::objects::UNIQUE_BLOCKS;
    use super::val::{CONVERSIONS, DESCRIPTORS};
    use super::*;
    use crate::lang::{SourceFile, compile};

    const N: i64 = 2000;

    /// Run `main` of `text`: its value, the values converted to or from runtime cells, and the
    /// blocks field vecs were made unique into.
    fn run_counted(text: &str) -> (Value, u64, Vec<u64>) {
        let program = compile(Arc::new(SourceFile::new("t.hot", text.to_string())))
            .unwrap_or_else(|d| panic!("{d}"));
        CONVERSIONS.with(|c| c.set(0));
        UNIQUE_BLOCKS.with(|b| b.borrow_mut().clear());
        let v = run_main(&program, Checks::On).unwrap_or_else(|e| panic!("{e}"));
        (v, CONVERSIONS.with(|c| c.get()), UNIQUE_BLOCKS.take())
    }

    #[test]
    fn pushes_into_a_field_vec_stay_in_its_block_and_convert_only_the_pushed_items() {
        let (v, conversions, blocks) = run_counted(&format!(
            "class Bag {{ var items = vec<i64>() }}\n\
             fn main() -> i64 {{\n let b = new Bag()\n for i in 0..{N} {{ b.items.push(i) }}\n \
             var s = 0\n for i in 0..b.items.len() {{ s += b.items[i] }}\n \
             for x in b.items {{ s += x }}\n b.items[0] += 1\n return s + b.items.pop()\n}}\n"
        ));
        assert_eq!(v, Value::I64(N * (N - 1) + N - 1));
        // One conversion per push, per element read (twice) and for `+=` and `pop`: linear.
        // Converting the field's vec at each push would be about N * N / 2.
        assert!(
            conversions <= 3 * N as u64 + 10,
            "{conversions} conversions for {N} pushes"
        );
        // The unique block is the same across all the pushes (and the `+=`, the `pop`).
        assert_eq!(blocks.len(), N as usize + 2);
        assert!(blocks.iter().all(|&b| b == blocks[0]), "a unique vec moved");
    }

    #[test]
    fn a_shared_field_vec_is_copied_once_then_grows_in_place() {
        let (v, _, blocks) = run_counted(
            "class Bag { var vv = vec<vec<i64>>() }\n\
             fn main() -> str {\n let b = new Bag()\n b.vv.push(vec<i64>())\n \
             b.vv[0].push(1)\n var seen = \"\"\n \
             for row in b.vv {\n b.vv[0].push(2)\n b.vv[0].push(3)\n seen = \"${row}\"\n }\n \
             b.vv[0][1] = 20\n return \"${seen} ${b.vv}\"\n}\n",
        );
        assert_eq!(v, Value::Str("[1] [[1, 20, 3]]".into()));
        // push, [0].push (outer, inner); the loop shares the outer block: its first push copies
        // each level once, the rest go in place.
        let distinct: std::collections::BTreeSet<_> = blocks.iter().collect();
        assert_eq!(blocks.len(), 1 + 2 + 2 * 3);
        assert_eq!(
            distinct.len(),
            4,
            "outer and inner, before and after the copy: {blocks:?}"
        );
    }

    #[test]
    fn closures_stored_in_fields_intern_one_descriptor_per_lambda() {
        DESCRIPTORS.with(|d| d.set(0));
        let (v, _, _) = run_counted(&format!(
            "class Holder {{ var f: fn(i64) -> i64 = null\n var fs = vec<fn(i64) -> i64>() }}\n\
             fn main() -> i64 {{\n let h = new Holder()\n var s = 0\n for i in 0..{N} {{\n \
             h.f = |x: i64| -> i64 {{ return x + i }}\n h.fs.push(h.f)\n s += (h.f)(1)\n }}\n \
             h.f = |x: i64| -> i64 {{ return x * 2 }}\n \
             return s + (h.fs[{N} - 1])(0) + (h.f)(5)\n}}\n"
        ));
        assert_eq!(v, Value::I64(N + N * (N - 1) / 2 + (N - 1) + 10));
        // {N} stores of one lambda's closures, {N} stores of closures read back from the
        // field (their blocks' descriptor), one of another lambda's: two descriptors.
        assert_eq!(DESCRIPTORS.with(|d| d.get()), 2);
    }

    #[test]
    fn reading_a_field_vec_as_a_value_converts_no_element_and_stays_a_copy() {
        let (v, conversions, blocks) = run_counted(&format!(
            "class Bag {{ var items = vec<i64>() }}\n\
             fn size(v: vec<i64>) -> i64 {{ return v.len() }}\n\
             fn main() -> str {{\n let b = new Bag()\n for i in 0..{N} {{ b.items.push(i) }}\n \
             var s = 0\n for i in 0..{N} {{\n let v = b.items\n s += v.len() + size(b.items)\n }}\n \
             let before = b.items\n b.items.push({N})\n b.items[0] = -1\n \
             var w = before\n w.push(7)\n b.items = w\n w[1] = 5\n \
             return \"${{s}} ${{before.len()}} ${{before[0]}} ${{b.items.len()}} ${{b.items[0]}} \
             ${{b.items[1]}} ${{w[1]}}\"\n}}\n"
        ));
        assert_eq!(
            v,
            Value::Str(format!("{} {N} 0 {} 0 1 5", 2 * N * N, N + 1))
        );
        // The pushes, `w.push` converting `before` once, `b.items = w` storing a local vec
        // (converted: it is not a block), a few single elements. Converting the field's vec at
        // each of the 2 * N reads would be 2 * N * N more.
        assert!(
            conversions <= 3 * N as u64 + 20,
            "{conversions} conversions for {N} pushes and {} reads",
            2 * N
        );
        // The push after `let before = b.items` copied the block `before` shares.
        assert_eq!(blocks.len(), N as usize + 2);
        assert_ne!(
            blocks[N as usize], blocks[0],
            "`before` was changed in place"
        );
    }

    #[test]
    fn a_field_vec_read_as_a_value_is_returned_and_shown_whole() {
        let text = "class Bag { var vv = vec<vec<str>>() }\n\
                    fn rows() -> vec<vec<str>> {\n let b = new Bag()\n b.vv.push(vec<str>())\n \
                    b.vv[0].push(\"a\")\n let row = b.vv[0]\n b.vv[0][0] = \"${b.vv} ${row}\"\n \
                    return b.vv\n}\n";
        let program = compile(Arc::new(SourceFile::new("t.hot", text.to_string())))
            .unwrap_or_else(|d| panic!("{d}"));
        let mut interp = Interp::new(&program, Checks::On).unwrap_or_else(|e| panic!("{e}"));
        let rows = program.function_named("rows").expect("declared");
        let v = interp.call(rows, &[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            v,
            Value::Vec(vec![Value::Vec(vec![Value::Str(
                r#"[["a"]] ["a"]"#.into()
            )])])
        );
    }
}
