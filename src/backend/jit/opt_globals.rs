//! Scalar module variables kept in registers through loops that call nothing (every Cranelift
//! backend: `jit`, `jit-opt`, `object`).
//!
//! A module variable lives in the globals block, and the plain lowering loads it at every read
//! and stores it at every write. In a loop such as `for i in 0..m { counter = counter + i }`
//! that puts a store and a load of the same cell on the loop's critical path every iteration
//! (store-to-load forwarding, several cycles), where a native twin keeps the value in a register.
//!
//! When a loop's condition and body make no call that could run other code (no script, method,
//! virtual or host call, no `new`, whose initializers are code), nothing but the loop itself can
//! read or write a module variable while it runs. Then each scalar module variable (`i64`,
//! `f64`, `bool`) the loop mentions is loaded once before the loop into a Cranelift `Variable`:
//! reads use the variable, and writes **store through** (the cell is updated at every write, as
//! before) and redefine it. Memory is therefore always current: a script error raised inside the
//! loop (a division by zero, an index out of range) unwinds with every module variable holding
//! its latest value, exactly as without the cache. Only the reloads of the value are gone.
//!
//! Helper calls the loop may still make (retain and release, vec and string helpers, raises)
//! never touch module variables, so they do not disqualify a loop.
//!
//! # Only what the loop writes (and `let` constants)
//! A `var` the loop only reads is not cached: it is read from memory at every read, as in
//! the plain lowering. A call on another thread may write it while this one runs, and a loop
//! waiting for that (`while !ready {}`) must see the write and end, as it does on the
//! interpreter. A variable the loop writes is the loop's own while it runs: a write by another
//! thread in between is a race with no order to this loop's (the loop may overwrite it), as
//! it is for fields. Module `let`s are never written after `<init>` and are always cached.
//!
//! # Stores sunk to the exits
//! When the loop also cannot raise (only scalar arithmetic that never fails, on locals and
//! module variables: no integer `/` or `%` by a divisor that is not a non-zero constant, no
//! index, field, handle, string or vec operation, no stepped `for`), nothing can observe a
//! module variable before the loop ends: no call runs, and no error unwinds out of it. Then
//! the stores of the variables it writes are sunk: writes only redefine the register, and the
//! values are stored once at the loop's exit (every `break` and the normal end reach it) and
//! before each `return` inside the loop, so every later reader (the code after the loop, the
//! caller, the host, the next call) sees exactly what the plain lowering would have stored.
//!
//! # On a reloadable program (`jit`, `object`)
//! A module variable's address is a constant of the code: each version of a program has its
//! own globals block, and no code of a replaced version runs again (`module.rs`). A reload
//! quiesces first: it waits until no thread is inside a call into script code
//! (`runtime::reload`), so it never happens while a frame of this loop is live, and a host
//! thread reaches a module variable only through such a call or between calls. So the rule
//! above holds unchanged: only a call inside the loop could see or make a change, and a loop
//! with a call keeps no cache.

use std::collections::HashMap;

use cranelift_codegen::ir::{GlobalValue, InstBuilder, Value, types};
use cranelift_frontend::Variable;

use crate::lang::hir::{
    BinOp, Block, Expr, ExprKind, GlobalId, Place, PlaceKind, Program, Stmt, StmtKind, Type,
};

use super::lower::{FunctionTranslator, GlobalsBase, LResult, mem, scalar_type};
use super::lower_expr::native_inline;
use super::opt_walk::{Visitor, Walk, walk_block, walk_expr, walk_stmt};

/// The cached module variables of the loops being lowered (innermost entries added last).
#[derive(Default)]
pub(crate) struct GlobalCache {
    vars: HashMap<GlobalId, Variable>,
    /// The cached variables whose stores are sunk to the loop's exits (see the module docs).
    sunk: Vec<(GlobalId, Variable)>,
    /// The globals block's address, computed once before the outermost loop that qualified
    /// (see [`FunctionTranslator::region_globals_base`]); `None` outside such a loop.
    base: Option<Value>,
    /// `jit-opt`'s data cell holding that address, made once per function.
    base_cell: Option<GlobalValue>,
    /// The module constants' values, found once per function (see [`module_constants`]).
    constants: Option<Vec<Option<Constant>>>,
}

/// The value of a module `let` whose initializer is a literal.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Constant {
    Int(i64),
    Float(f64),
    Bool(bool),
}

/// The module `let`s that `<init>` assigns exactly once, at its top level, from a literal
/// (or a negated one): by global index. Nothing else can write a `let`, and `<init>` runs
/// before any other code, so every read sees that value. (Only for a program that is never
/// reloaded: a reload keeps the old version's value of a `let` of the same name and type.)
fn module_constants(program: &Program) -> Vec<Option<Constant>> {
    let mut found: Vec<Option<Constant>> = vec![None; program.globals.len()];
    let mut stores = vec![0u32; program.globals.len()];
    let Some(init) = program.functions.get(program.init.index()) else {
        return found;
    };
    let mut w = GlobalStores(&mut stores);
    walk_block(&init.body, &mut w);
    for s in &init.body.stmts {
        // Code `<init>` calls before a `let` is assigned would read it as 0: from the first
        // statement that runs other code on, no constant.
        if !runs_no_code_stmt(program, s) {
            break;
        }
        if let StmtKind::Assign {
            place,
            op: None,
            value,
            ..
        } = &s.kind
            && let PlaceKind::Global(id) = place.kind
            && let Some(g) = program.globals.get(id.index())
            && !g.mutable
            && stores[id.index()] == 1
        {
            found[id.index()] = literal(value);
        }
    }
    found
}

/// Whether statement `s` cannot run other code (no call, no `new`).
fn runs_no_code_stmt(program: &Program, s: &Stmt) -> bool {
    let mut w = GlobalsWalk {
        program,
        found: Vec::new(),
        written: Vec::new(),
        any: false,
        calls: false,
    };
    walk_stmt(s, &mut w);
    !w.calls
}

/// A literal's value (`-1.5` included).
fn literal(e: &Expr) -> Option<Constant> {
    match &e.kind {
        ExprKind::Int(v) => Some(Constant::Int(*v)),
        ExprKind::Float(v) => Some(Constant::Float(*v)),
        ExprKind::Bool(v) => Some(Constant::Bool(*v)),
        ExprKind::Unary(crate::lang::hir::UnOp::Neg, x) => match literal(x)? {
            Constant::Int(v) => Some(Constant::Int(v.wrapping_neg())),
            Constant::Float(v) => Some(Constant::Float(-v)),
            Constant::Bool(_) => None,
        },
        _ => None,
    }
}

/// Counts the stores into each module variable.
struct GlobalStores<'a>(&'a mut Vec<u32>);

impl Visitor for GlobalStores<'_> {
    fn place(&mut self, p: &Place, written: bool) -> Walk {
        if let (PlaceKind::Global(id), true) = (&p.kind, written)
            && let Some(n) = self.0.get_mut(id.index())
        {
            *n += 1;
        }
        Walk::Children
    }

    fn unknown(&mut self) {
        // A construct the walk does not know could store anywhere: no constants.
        self.0.iter_mut().for_each(|n| *n = u32::MAX);
    }
}

/// The scalar module variables a loop mentions (its head expressions `head`: condition, range
/// bounds, array; and its body), or `None` when it makes a call that could run other code (see
/// the module docs). Unknown expression kinds count as calls.
pub(crate) fn loop_globals(program: &Program, head: &[&Expr], body: &Block) -> Option<LoopGlobals> {
    let mut w = GlobalsWalk {
        program,
        found: Vec::new(),
        written: Vec::new(),
        any: false,
        calls: false,
    };
    for e in head {
        walk_expr(e, &mut w);
    }
    walk_block(body, &mut w);
    if w.calls {
        return None;
    }
    let mut quiet = RaiseFree(true);
    for e in head {
        walk_expr(e, &mut quiet);
    }
    walk_block(body, &mut quiet);
    Some(LoopGlobals {
        scalars: w.found,
        written: w.written,
        raises: !quiet.0,
        any: w.any,
    })
}

/// What a loop that calls nothing mentions of the module variables.
pub(crate) struct LoopGlobals {
    /// The scalar ones, cached in registers.
    pub scalars: Vec<GlobalId>,
    /// The module variables it assigns.
    pub written: Vec<GlobalId>,
    /// Whether it may raise (a division, an index, a handle check, ...).
    pub raises: bool,
    /// Whether it mentions any (an array's elements too): then the globals block's address is
    /// computed once before the loop.
    pub any: bool,
}

/// Whether evaluating `e` cannot run other code (no call of any kind, no `new`): nothing it does
/// can destroy, detach or reload an object, or write a module variable.
pub(crate) fn runs_no_code(program: &Program, e: &Expr) -> bool {
    let mut w = GlobalsWalk {
        program,
        found: Vec::new(),
        written: Vec::new(),
        any: false,
        calls: false,
    };
    walk_expr(e, &mut w);
    !w.calls
}

struct GlobalsWalk<'a> {
    program: &'a Program,
    found: Vec<GlobalId>,
    written: Vec<GlobalId>,
    any: bool,
    /// A call that could run other code, or a construct the walk does not know.
    calls: bool,
}

impl GlobalsWalk<'_> {
    fn global(&mut self, id: GlobalId) {
        self.any = true;
        let ty = &self.program.globals[id.index()].ty;
        let scalar = matches!(
            ty,
            crate::lang::hir::Type::I64
                | crate::lang::hir::Type::F64
                | crate::lang::hir::Type::Bool
        );
        if scalar && !self.found.contains(&id) {
            self.found.push(id);
        }
    }
}

impl Visitor for GlobalsWalk<'_> {
    fn place(&mut self, p: &Place, written: bool) -> Walk {
        if let PlaceKind::Global(id) = p.kind {
            self.global(id);
            if written && !self.written.contains(&id) {
                self.written.push(id);
            }
        }
        Walk::Children
    }

    fn expr(&mut self, e: &Expr) -> Walk {
        match &e.kind {
            ExprKind::Global(id) => self.global(*id),
            // A native made as an instruction (`sqrt`) runs no code.
            ExprKind::CallNative(n, _) if native_inline(self.program, *n) => {}
            // Calls, `new` (initializers are code), closures. A math builtin's helper (`sin`,
            // ...), `print`, and the string helpers touch no module variable.
            ExprKind::Call(..)
            | ExprKind::CallNative(..)
            | ExprKind::MethodCall { .. }
            | ExprKind::VirtualCall { .. }
            | ExprKind::CallClosure(..)
            | ExprKind::Closure { .. }
            | ExprKind::New(_) => {
                self.calls = true;
                return Walk::Skip;
            }
            _ => {}
        }
        Walk::Children
    }

    fn unknown(&mut self) {
        self.calls = true;
    }
}

/// Whether code cannot raise: only scalar arithmetic that never fails (no `/` or `%` of
/// integers), comparisons, casts, math builtins, locals and module variables, in
/// assignments, `if`s and loops that cannot raise either (a stepped `for` checks its step).
struct RaiseFree(bool);

impl Visitor for RaiseFree {
    fn stmt(&mut self, s: &Stmt) -> Walk {
        match &s.kind {
            StmtKind::Let { .. }
            | StmtKind::Assign { .. }
            | StmtKind::Expr(_)
            | StmtKind::If { .. }
            | StmtKind::While { .. }
            | StmtKind::ForRange { .. }
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Return(_) => Walk::Children,
            _ => {
                self.0 = false;
                Walk::Skip
            }
        }
    }

    fn place(&mut self, p: &Place, _written: bool) -> Walk {
        if !matches!(p.kind, PlaceKind::Local(_) | PlaceKind::Global(_)) || !scalar(&p.ty) {
            self.0 = false;
        }
        Walk::Children
    }

    fn expr(&mut self, e: &Expr) -> Walk {
        let quiet = match &e.kind {
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Local(_)
            | ExprKind::Global(_)
            | ExprKind::Unary(..)
            | ExprKind::Logical(..)
            | ExprKind::Cast(_)
            | ExprKind::Math(..) => scalar(&e.ty),
            // An integer `/` or `%` raises on a zero divisor (and `MIN / -1`), unless the
            // divisor is a constant that is neither.
            ExprKind::Binary { op, lhs, rhs, .. } => {
                let divides = matches!(op, BinOp::Div | BinOp::Rem) && lhs.ty == Type::I64;
                scalar(&lhs.ty)
                    && (!divides || matches!(rhs.kind, ExprKind::Int(c) if c != 0 && c != -1))
            }
            _ => false,
        };
        if !quiet {
            self.0 = false;
            return Walk::Skip;
        }
        Walk::Children
    }

    fn unknown(&mut self) {
        self.0 = false;
    }
}

/// A scalar type (`i64`, `f64`, `bool`).
fn scalar(ty: &Type) -> bool {
    matches!(ty, Type::I64 | Type::F64 | Type::Bool)
}

impl FunctionTranslator<'_, '_> {
    /// Lower a loop with the scalar module variables it mentions cached (see the module docs)
    /// when the loop calls nothing; plainly otherwise. Its vec locals may be hoisted too
    /// (`opt_vec.rs`).
    pub(crate) fn with_cached_globals<T>(
        &mut self,
        head: &[&Expr],
        body: &Block,
        lower: impl FnOnce(&mut Self) -> LResult<T>,
    ) -> LResult<T> {
        // A base already: inside a loop that qualified, whose walk covered this one too.
        if self.global_cache.base.is_some() {
            return self.with_hoisted_vecs(head, body, lower);
        }
        let Some(found) = loop_globals(self.env.program, head, body) else {
            return self.with_hoisted_vecs(head, body, lower);
        };
        if !found.any {
            return self.with_hoisted_vecs(head, body, lower);
        }
        let base = self.region_globals_base()?;
        self.global_cache.base = Some(base);
        for id in found.scalars {
            if self.env.fixed && self.module_constant_known(id) {
                // An immediate at each read.
                continue;
            }
            let global = &self.env.program.globals[id.index()];
            // A variable the loop only reads is read from memory each time: another thread's
            // call may write it (`while !ready {}` ends when it does).
            let written = found.written.contains(&id);
            if global.mutable && !written {
                continue;
            }
            let ty = global.ty.clone();
            let Some(ir_ty) = scalar_type(&ty) else {
                continue;
            };
            let addr = self.global_addr(id)?;
            let v = self.load_value(addr, &ty)?;
            let var = self.builder.declare_var(ir_ty);
            self.def_var(var, v);
            self.global_cache.vars.insert(id, var);
            if written && !found.raises {
                self.global_cache.sunk.push((id, var));
            }
        }
        let result = self.with_hoisted_vecs(head, body, lower);
        // The loop's exits come here: the sunk stores are made once.
        self.store_sunk_globals()?;
        self.global_cache.sunk.clear();
        self.global_cache.vars.clear();
        self.global_cache.base = None;
        result
    }

    /// The value of module variable `id` when it is a constant of a program that is never
    /// reloaded (`jit-opt`): an immediate instead of a load (see [`module_constants`]).
    pub(crate) fn module_constant(&mut self, id: GlobalId) -> Option<Value> {
        if !self.env.fixed || !self.module_constant_known(id) {
            return None;
        }
        let program = self.env.program;
        let constants = self
            .global_cache
            .constants
            .get_or_insert_with(|| module_constants(program));
        Some(match constants.get(id.index()).copied().flatten()? {
            Constant::Int(v) => self.builder.ins().iconst(types::I64, v),
            Constant::Float(v) => self.builder.ins().f64const(v),
            Constant::Bool(v) => self.builder.ins().iconst(types::I8, i64::from(v)),
        })
    }

    /// Store the module variables whose stores the loop being lowered sinks (see the module
    /// docs): at its exit, and before a `return` inside it.
    pub(crate) fn store_sunk_globals(&mut self) -> LResult<()> {
        for (id, var) in self.global_cache.sunk.clone() {
            let ty = self.env.program.globals[id.index()].ty.clone();
            let addr = self.global_addr(id)?;
            let v = self.builder.use_var(var);
            self.store_value(addr, &ty, v)?;
        }
        Ok(())
    }

    /// Whether module variable `id` is a constant [`Self::module_constant`] folds.
    fn module_constant_known(&mut self, id: GlobalId) -> bool {
        let program = self.env.program;
        if self.func_index() == program.init.0 {
            // `<init>` reads its `let`s from memory, in the order it writes them.
            return false;
        }
        let constants = self
            .global_cache
            .constants
            .get_or_insert_with(|| module_constants(program));
        matches!(constants.get(id.index()), Some(Some(_)))
    }

    /// Whether the stores of module variable `id` are sunk out of the loop being lowered.
    pub(crate) fn sunk_global(&self, id: GlobalId) -> bool {
        self.global_cache.sunk.iter().any(|(g, _)| *g == id)
    }

    /// The globals block's address as a value computed here, before a loop, and kept in a
    /// register through it, rather than a constant that the code generator materializes again
    /// (a 10-byte `movabs`) at each use inside the loop. On `jit` (no egraph) a constant
    /// defined before the loop stays where it is; `jit-opt`'s egraph rematerializes constants
    /// in every block that uses them, so there the address is loaded from a data cell of the
    /// module (once per loop entry). Position-independent code (`object`) takes the symbol's
    /// address, which is not rematerialized either.
    fn region_globals_base(&mut self) -> LResult<Value> {
        match self.env.globals {
            GlobalsBase::Addr(base) if self.env.fixed => {
                let gv = match self.global_cache.base_cell {
                    Some(gv) => gv,
                    None => {
                        let gv = self.data_global(base.to_le_bytes().to_vec())?;
                        self.global_cache.base_cell = Some(gv);
                        gv
                    }
                };
                let cell = self.builder.ins().symbol_value(types::I64, gv);
                Ok(self.builder.ins().load(types::I64, mem(), cell, 0))
            }
            GlobalsBase::Addr(base) => Ok(self.builder.ins().iconst(types::I64, base)),
            GlobalsBase::Data(data) => self.data_object_addr(data, 0),
        }
    }

    /// Inside a loop that computed the globals block's address before it, that address.
    pub(crate) fn region_base(&self) -> Option<Value> {
        self.global_cache.base
    }

    /// The variable caching module variable `id` in the loop being lowered, if any.
    pub(crate) fn cached_global(&self, id: GlobalId) -> Option<Variable> {
        self.global_cache.vars.get(&id).copied()
    }

    /// Read a cached module variable.
    pub(crate) fn read_cached(&mut self, var: Variable) -> Value {
        self.builder.use_var(var)
    }
}
