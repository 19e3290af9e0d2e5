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
    Block, Expr, ExprKind, GlobalId, Place, PlaceKind, Program, Stmt, StmtKind,
};

use super::lower::{FunctionTranslator, GlobalsBase, LResult, mem, scalar_type};

/// The cached module variables of the loops being lowered (innermost entries added last).
#[derive(Default)]
pub(crate) struct GlobalCache {
    vars: HashMap<GlobalId, Variable>,
    /// The globals block's address, computed once before the outermost loop that qualified
    /// (see [`FunctionTranslator::region_globals_base`]); `None` outside such a loop.
    base: Option<Value>,
    /// `jit-opt`'s data cell holding that address, made once per function.
    base_cell: Option<GlobalValue>,
}

/// The scalar module variables a loop mentions (its head expressions `head`: condition, range
/// bounds, array; and its body), or `None` when it makes a call that could run other code (see
/// the module docs). Unknown expression kinds count as calls.
pub(crate) fn loop_globals(program: &Program, head: &[&Expr], body: &Block) -> Option<LoopGlobals> {
    let mut w = GlobalsWalk {
        program,
        found: Vec::new(),
        any: false,
    };
    let ok = head.iter().all(|e| w.expr(e)) && w.block(body);
    ok.then_some(LoopGlobals {
        scalars: w.found,
        any: w.any,
    })
}

/// What a loop that calls nothing mentions of the module variables.
pub(crate) struct LoopGlobals {
    /// The scalar ones, cached in registers.
    pub scalars: Vec<GlobalId>,
    /// Whether it mentions any (an array's elements too): then the globals block's address is
    /// computed once before the loop.
    pub any: bool,
}

/// Whether evaluating `e` cannot run other code (no call of any kind, no `new`): nothing it does
/// can destroy, detach or reload an object, or write a module variable.
pub(crate) fn runs_no_code(program: &Program, e: &Expr) -> bool {
    GlobalsWalk {
        program,
        found: Vec::new(),
        any: false,
    }
    .expr(e)
}

struct GlobalsWalk<'a> {
    program: &'a Program,
    found: Vec<GlobalId>,
    any: bool,
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

    fn block(&mut self, b: &Block) -> bool {
        b.stmts.iter().all(|s| self.stmt(s))
    }

    fn stmt(&mut self, s: &Stmt) -> bool {
        match &s.kind {
            StmtKind::Let { init, .. } => self.expr(init),
            StmtKind::Assign { place, value, .. } => self.place(place) && self.expr(value),
            StmtKind::Expr(e) => self.expr(e),
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                self.expr(cond)
                    && self.block(then_block)
                    && else_block.as_ref().is_none_or(|b| self.block(b))
            }
            StmtKind::While { cond, body } => self.expr(cond) && self.block(body),
            StmtKind::ForRange {
                start, end, body, ..
            } => self.expr(start) && self.expr(end) && self.block(body),
            StmtKind::ForStep {
                start,
                end,
                step,
                body,
                ..
            } => {
                self.expr(start)
                    && self.expr(end)
                    && step.as_ref().is_none_or(|k| self.expr(k))
                    && self.block(body)
            }
            StmtKind::ForEach { array, body, .. } => self.expr(array) && self.block(body),
            StmtKind::Break | StmtKind::Continue => true,
            StmtKind::Return(v) => v.as_ref().is_none_or(|v| self.expr(v)),
        }
    }

    fn place(&mut self, p: &Place) -> bool {
        match &p.kind {
            PlaceKind::Local(_) => true,
            PlaceKind::Global(id) => {
                self.global(*id);
                true
            }
            PlaceKind::Field { object, .. } => self.expr(object),
            PlaceKind::Index { base, index } => self.place(base) && self.expr(index),
        }
    }

    fn expr(&mut self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Local(_)
            | ExprKind::Null
            | ExprKind::VecNew
            | ExprKind::StrLit(_) => true,
            ExprKind::Global(id) => {
                self.global(*id);
                true
            }
            ExprKind::Unary(_, x)
            | ExprKind::Cast(x)
            | ExprKind::Len(x)
            | ExprKind::Assert(x)
            | ExprKind::NonNull(x)
            | ExprKind::ToStr(x)
            | ExprKind::Field(x, _)
            | ExprKind::ArrayRepeat(x, _) => self.expr(x),
            ExprKind::Binary { lhs, rhs, .. }
            | ExprKind::Logical(_, lhs, rhs)
            | ExprKind::Index(lhs, rhs) => self.expr(lhs) && self.expr(rhs),
            // A math builtin's helper (`sin`, ...) touches no module variable.
            ExprKind::ArrayLit(xs) | ExprKind::Math(_, xs) => xs.iter().all(|x| self.expr(x)),
            ExprKind::VecPush(place, x) => self.place(place) && self.expr(x),
            ExprKind::VecPop(place) => self.place(place),
            // Calls, `new` (initializers are code), and anything this walk does not know.
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }
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
            let ty = self.env.program.globals[id.index()].ty.clone();
            let Some(ir_ty) = scalar_type(&ty) else {
                continue;
            };
            let addr = self.global_addr(id)?;
            let v = self.load_value(addr, &ty)?;
            let var = self.builder.declare_var(ir_ty);
            self.def_var(var, v);
            self.global_cache.vars.insert(id, var);
        }
        let result = self.with_hoisted_vecs(head, body, lower);
        self.global_cache.vars.clear();
        self.global_cache.base = None;
        result
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
