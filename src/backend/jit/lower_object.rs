//! HIR → CLIF for objects: `new`, fields, method calls (direct and through the slot table),
//! handle checks and the reference counting of handles.
//!
//! # Ownership of handles
//! A handle-typed expression yields an *owned* cell (one reference the code must give up):
//! `new` and calls return one, reading a variable or a field takes one (`hot_object_retain`).
//! A consumer uses it up: a store into a variable or a field keeps it (and releases the value it
//! replaces), anything else releases it after use. Parameters are *borrowed*: the caller keeps
//! its reference for the whole call and releases it afterwards, so a callee never releases its
//! parameters (they are immutable). `let`/`var` handle variables start null and are released
//! when the function returns. A receiver or an `==` operand that is a plain variable read is
//! borrowed instead of retained and released (nothing in the expression can change it).
//!
//! Vecs and strings (`lower_value.rs`) follow the same rules with their own retain and release
//! helpers ([`FunctionTranslator::retain_value`], [`FunctionTranslator::release_value`]).
//!
//! A `ScriptError` unwinding through a frame runs no code there: the cells its variables own are
//! in home slots and the temporaries it holds in held slots, named by stack map entries at every
//! call that can raise, and `ScriptError::raise` releases them before it unwinds
//! (`lower_unwind.rs`, `runtime::sweep`).
//!
//! # Uses of an object
//! A handle is checked inline (`check_object_inline`: null, generation, detached), with
//! `hot_object_check(cell, span)` called only on the cold path, where it raises `NullHandle`,
//! `StaleHandle` or `ObjectDetached` at the span. On `jit` the state pointer is then loaded from
//! the shell (`[shell + Object::STATE]`). A handle known valid (`self` in its method, a loop's
//! handles tested before it: `lower_region.rs`) is used with neither the check nor a new load
//! of the state pointer, which no call can change while a call runs (docs/runtime.md).

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value, types};

use crate::lang::hir::{BinOp, ClassId, Expr, ExprKind, FuncId, Type};
use crate::lang::span::Span;
use crate::runtime::object::{Object, WORD_DETACHED};

use super::lower::{FunctionTranslator, LResult, LocalSlot, PlaceRef, bad, mem};

/// Bits of a handle cell that hold the shell address.
pub(crate) const ADDR_BITS: i64 = crate::runtime::handle::ADDR_BITS as i64;

impl FunctionTranslator<'_, '_> {
    /// Give up an owned handle cell (null is fine).
    pub(crate) fn release(&mut self, cell: Value) {
        self.release_handle(cell);
    }

    /// Give up an owned value of type `ty` (nothing for a type that owns nothing).
    pub(crate) fn release_value(&mut self, ty: &Type, v: Value) {
        if let Type::Array(..) = ty {
            return self.release_cells(v, ty);
        }
        match ty {
            Type::Handle { .. } | Type::Null => self.release_handle(v),
            Type::Str => self.release_str(v),
            Type::Vec(_) => self.release_vec(v),
            Type::Fn { .. } => self.release_closure(v),
            _ => {}
        }
    }

    /// Take another reference through a value of type `ty`; returns it, now owned.
    pub(crate) fn retain_value(&mut self, ty: &Type, v: Value) -> Value {
        if let Type::Array(..) = ty {
            self.retain_cells(v, ty);
            return v;
        }
        match ty {
            Type::Handle { .. } | Type::Null => self.retain_handle(v),
            Type::Str => self.retain_str(v),
            Type::Vec(_) => self.retain_vec(v),
            Type::Fn { .. } => self.retain_closure(v),
            _ => v,
        }
    }

    /// Release every managed variable the function owns (before a return).
    pub(crate) fn release_owned(&mut self) {
        self.release_owned_but(None);
    }

    /// [`Self::release_owned`], except variable `kept`, whose reference the caller takes (a
    /// `return x` of an owned local moves it out: no retain for the caller, no release here).
    pub(crate) fn release_owned_but(&mut self, kept: Option<cranelift_frontend::Variable>) {
        for (var, ty) in self.owned.clone() {
            if Some(var) == kept {
                continue;
            }
            let v = self.builder.use_var(var);
            self.release_value(&ty, v);
        }
        self.release_owned_arrays();
    }

    /// The variable of `e` when it reads a managed local this function owns (not a parameter,
    /// a capture or a borrowed `let`): what a `return e` can move out.
    pub(crate) fn owned_local_var(&self, e: &Expr) -> Option<cranelift_frontend::Variable> {
        let ExprKind::Local(id) = e.kind else {
            return None;
        };
        let LocalSlot::Scalar(var) = self.local(id).ok()? else {
            return None;
        };
        (e.ty.is_managed() && self.owned.iter().any(|(v, _)| *v == var)).then_some(var)
    }

    /// The handle cell of a live shell: its handle word without the detached bit (its
    /// address and its generation).
    ///
    /// Only `self` is made this way, at a method's entry, from the shell its caller checked
    /// and holds for the whole call: the load may move and, when the method never uses
    /// `self` as a value (`return self`, `f(self)`), goes away (`readonly`, `can_move`). A
    /// generation changed meanwhile by another thread's destroy is a race with no order to the
    /// call's accesses (`lower_region.rs`, "The rule that makes it sound").
    pub(crate) fn cell_of_shell(&mut self, shell: Value) -> Value {
        let flags = mem().with_readonly().with_can_move();
        // Only a `load` that is readonly, notrap and movable is pure to the optimizer, so an
        // unused one is removed.
        let word = self
            .builder
            .ins()
            .load(types::I64, flags, shell, Object::WORD as i32);
        self.builder.ins().band_imm_s(word, !(WORD_DETACHED as i64))
    }

    /// The shell of a handle, checked inline at `span`: the helper runs only on the cold path
    /// that raises (on `jit` and `jit-opt` alike: the layout of the shell is the same).
    pub(crate) fn check_object(&mut self, cell: Value, span: Span) -> Value {
        self.check_object_inline(cell, span)
    }

    /// A handle, vec or string expression, borrowed when it is a variable read:
    /// `(cell, owned)`.
    pub(crate) fn handle_operand(&mut self, e: &Expr) -> LResult<(Value, bool)> {
        if let ExprKind::Local(id) = &e.kind
            && let LocalSlot::Scalar(var) = self.local(*id)?
        {
            return Ok((self.builder.use_var(var), false));
        }
        Ok((self.translate_expr(e)?, true))
    }

    /// [`Self::handle_operand`] of a vec or string used by an operation during which no code
    /// runs once it is evaluated (`nothing_runs`: an element read by a [pure](super::lower_index::pure_index)
    /// index, a length, a compare with another such read): a [`borrowable_read`] is read
    /// without a reference, borrowed from the field or the vec element that holds it
    /// (`lower_region.rs`, "Borrowed reads": nothing can store into that place before the
    /// operation is done with the value).
    pub(crate) fn borrowed_operand(
        &mut self,
        e: &Expr,
        nothing_runs: bool,
    ) -> LResult<(Value, bool)> {
        if nothing_runs && borrowable_read(e) && !matches!(e.kind, ExprKind::Local(_)) {
            return Ok((self.borrowed_read(e)?, false));
        }
        self.handle_operand(e)
    }

    /// The value of a [`borrowable_read`], not retained.
    fn borrowed_read(&mut self, e: &Expr) -> LResult<Value> {
        match &e.kind {
            ExprKind::Index(vec, index) => self.translate_vec_index_borrowed(vec, index, e),
            _ => self.borrowed_cell(e),
        }
    }

    pub(crate) fn done_with(&mut self, cell: Value, owned: bool) {
        if owned {
            self.release(cell);
        }
    }

    /// Release an operand from [`Self::handle_operand`] of type `ty` if it was owned.
    pub(crate) fn done_with_value(&mut self, ty: &Type, v: Value, owned: bool) {
        if owned {
            self.release_value(ty, v);
        }
    }

    /// Check a handle at `span` again and return the address of its field `field` (state
    /// loaded now): the root of a vec place in a field, resolved after the place's indexes and
    /// the value ran (their calls may have destroyed or reloaded the object).
    pub(crate) fn checked_field_addr(&mut self, cell: Value, field: u32, span: Span) -> Value {
        let shell = self.check_object(cell, span);
        self.field_addr(shell, field)
    }

    /// Address of field `field` of a checked shell (state loaded now).
    pub(crate) fn field_addr(&mut self, shell: Value, field: u32) -> Value {
        if self.env.fixed {
            return self.inline_field_addr(shell, field);
        }
        let state = self
            .builder
            .ins()
            .load(types::I64, mem(), shell, Object::STATE as i32);
        self.builder.ins().iadd_imm_s(state, i64::from(field) * 8)
    }

    pub(crate) fn translate_new(&mut self, class: ClassId, span: Span) -> LResult<Value> {
        let objects = self.objects_ptr()?;
        let class = self.builder.ins().iconst(types::I32, i64::from(class.0));
        let (start, end) = self.span_args(span);
        let helper = if self.env.fixed {
            self.env.helpers.object_new_fixed
        } else {
            self.env.helpers.object_new
        };
        Ok(self.call_helper(helper, &[objects, class, start, end])[0])
    }

    /// `o.f`: check `o`, load the cell (retained when it is a handle), release `o`.
    pub(crate) fn translate_field(
        &mut self,
        object: &Expr,
        field: u32,
        e: &Expr,
    ) -> LResult<Value> {
        if let Some(c) = self.checked_handle(object) {
            // Known valid here (`lower_region.rs`): no check, no reference to take.
            let addr = self.checked_field(c, field);
            return self.load_cell_owned(addr, &e.ty);
        }
        if let Some(cell) = self.borrowed_field_cell(object)? {
            // `self.w.f`: borrowed from the field (no retain and release), as nothing runs
            // between the read of `self.w` and that of `f`.
            let shell = self.check_object(cell, e.span);
            let addr = self.field_addr(shell, field);
            return self.load_cell_owned(addr, &e.ty);
        }
        let (cell, owned) = self.handle_operand(object)?;
        // `o().f`: the handle is held across its check.
        let held = self.hold_if(owned, &object.ty, cell);
        let shell = self.check_object(cell, e.span);
        // A local's check may hold for the rest of the block (`lower_region.rs`).
        let c = self.note_checked(object, shell);
        let addr = self.checked_field(c, field);
        // A field's array is boxed in its cell: read as an unboxed copy.
        let v = self.load_cell_owned(addr, &e.ty)?;
        self.unhold(held);
        self.done_with(cell, owned);
        Ok(v)
    }

    /// `o.f = value` / `o.f op= value`: check `o`, evaluate the value, read for `op=`, store; a
    /// handle, vec or string field releases the value it held. `o` is checked once: the value's
    /// calls cannot destroy, detach or reload it (the rule in `lower_region.rs`), and its state
    /// address is taken after the value ran.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn translate_field_assign(
        &mut self,
        object: &Expr,
        field: u32,
        ty: &Type,
        op: Option<BinOp>,
        op_span: Span,
        value: &Expr,
        span: Span,
    ) -> LResult<()> {
        if let Some(c) = self.checked_handle(object) {
            return self.store_field_value(c, field, ty, op, op_span, value, span);
        }
        let (cell, owned) = self.handle_operand(object)?;
        let cell_held = self.hold_if(owned, &object.ty, cell);
        let shell = self.check_object(cell, span);
        let c = self.note_checked(object, shell);
        self.store_field_value(c, field, ty, op, op_span, value, span)?;
        self.unhold(cell_held);
        self.done_with(cell, owned);
        Ok(())
    }

    /// Evaluate `value` and store it into field `field` of checked handle `c` (the place at
    /// `place`). A handle read without running code (`o.f = p.g`, `o.f = x`) is read without
    /// a count of its own, and both counts then change at once (`swap_handle_counts`): nothing
    /// runs between the read and the change that could release its object.
    #[allow(clippy::too_many_arguments)]
    fn store_field_value(
        &mut self,
        c: super::lower_region::Checked,
        field: u32,
        ty: &Type,
        op: Option<BinOp>,
        op_span: Span,
        value: &Expr,
        place: Span,
    ) -> LResult<()> {
        if self.swaps_counts(ty, op, value) && self.move_site(place).is_none() {
            let v = self.borrowed_arg_cell(value)?;
            let addr = self.checked_field(c, field);
            let old = self.load_value(addr, ty)?;
            self.store_value(addr, ty, v)?;
            self.swap_handle_counts(v, old);
            return Ok(());
        }
        let v = self.translate_expr(value)?;
        // A field's array is boxed in its cell, as in a vec's (`lower_array.rs`); arrays take
        // no compound operator, so `op` is `None` for one.
        let (v, cell_ty) = self.box_if_array(v, ty)?;
        let addr = self.checked_field(c, field);
        self.store_field(addr, &cell_ty, op, op_span, v, place)
    }

    /// Store `v` into the field at `addr` (the place at `place`): as any store, except at a
    /// move (`lower_region.rs`, `field_lets`), where the field's old reference goes to the
    /// borrowed `let` that read it instead of being released.
    fn store_field(
        &mut self,
        addr: Value,
        ty: &Type,
        op: Option<BinOp>,
        op_span: Span,
        v: Value,
        place: Span,
    ) -> LResult<()> {
        if op.is_none()
            && let Some(x) = self.move_site(place)
            && let Some(&owner) = self.field_owners.get(&x)
        {
            let old = self.load_value(addr, ty)?;
            self.store_value(addr, ty, v)?;
            self.def_var(owner, old);
            if self.pending_var_move == Some(x) {
                self.pending_var_move = None;
            }
            return Ok(());
        }
        self.store_to(PlaceRef::Mem(addr), ty, op, op_span, v)
    }

    /// A method call: the receiver is checked at the call's span, the arguments evaluated, and
    /// the method called with the shell as `this` (directly, or through the class's slot when
    /// `virtual_method` is set); then the receiver and handle arguments are released.
    pub(crate) fn translate_method_call(
        &mut self,
        object: &Expr,
        func: FuncId,
        virtual_method: Option<&str>,
        args: &[Expr],
        e: &Expr,
    ) -> LResult<Value> {
        // jit-opt: a virtual call with one possible target is a direct call of it.
        let virtual_method =
            virtual_method.filter(|m| !self.sole_virtual_target(&object.ty, m, func));
        // `self.w.m(args)` of a call that cannot store into `w` (its arguments, the method or
        // on jit-opt every override, and what they call) borrows `self.w`: nothing can
        // release the field's reference while the call runs (`opt_effects.rs`).
        let targets = match virtual_method {
            None => Some(vec![func]),
            Some(m) => {
                super::opt_effects::virtual_targets(self.env.program, self.env.fixed, &object.ty, m)
            }
        };
        let effects = self.call_effects(targets.as_deref(), args);
        let borrowed = if pure_cell(object) && self.path_unwritten(object, &effects) {
            self.borrowed_field_cell(object)?
        } else {
            None
        };
        let fields_borrowed: Vec<bool> = args
            .iter()
            .map(|a| self.borrowable_arg(a, &effects))
            .collect();
        // A local known valid (`lower_region.rs`) is borrowed and not checked again.
        let (shell, receiver) = match (self.checked_handle(object), borrowed) {
            (Some(c), _) => (c.shell, None),
            (None, Some(cell)) => (self.check_object(cell, e.span), None),
            (None, None) => {
                let (cell, owned) = self.handle_operand(object)?;
                // The receiver and the arguments are held through the call (borrowed by the
                // callee).
                let held = self.hold_if(owned, &object.ty, cell);
                let shell = self.check_object(cell, e.span);
                let shell = self.note_checked(object, shell).shell;
                (shell, Some((cell, owned, held)))
            }
        };
        let mut values = vec![self.vmctx, shell];
        let mut owned_args = Vec::new();
        let mut held = Vec::new();
        for (i, arg) in args.iter().enumerate() {
            if self.borrowed_arg(args, i) {
                // Borrowed from the caller's local (see `borrowed_arg`).
                let (v, _) = self.handle_operand(arg)?;
                values.push(v);
                continue;
            }
            if fields_borrowed[i] {
                // `m(t.left)`: nothing the call runs stores into `left` (see `effects`).
                values.push(self.borrowed_arg_cell(arg)?);
                continue;
            }
            let v = self.translate_expr(arg)?;
            held.push(self.hold(&arg.ty, v));
            if arg.ty.owns_cells() {
                owned_args.push((arg.ty.clone(), v));
            }
            values.push(v);
        }
        let results = match virtual_method {
            None => {
                let Some(&callee) = self.env.funcs.get(func.index()) else {
                    return bad(format!("call of unknown method #{}", func.0));
                };
                self.call_helper(callee, &values)
            }
            Some(name) => {
                let code = self.slot_code(object, name, shell, e.span)?;
                let sig = self.env.program.function(func);
                let sig = super::lower::script_signature(sig, self.env.call_conv);
                let sig_ref = self.builder.import_signature(sig);
                let call = self.builder.ins().call_indirect(sig_ref, code, &values);
                self.attach_owned_cells(call);
                self.builder.inst_results(call).to_vec()
            }
        };
        self.unhold_all(held);
        for (ty, v) in owned_args {
            self.release_value(&ty, v);
        }
        if let Some((cell, owned, receiver_held)) = receiver {
            self.unhold(receiver_held);
            self.done_with(cell, owned);
        }
        Ok(match results.first() {
            Some(v) => *v,
            None => self.unit(),
        })
    }

    /// The code in the slot of `method` of the object's class, raising `EmptySlot` when empty
    /// (never, in a fixed runtime: no test there). Neither the class's slot nor the offset
    /// table is a `readonly` load outside a fixed runtime: a reload changes them.
    fn slot_code(
        &mut self,
        object: &Expr,
        method: &str,
        shell: Value,
        span: Span,
    ) -> LResult<Value> {
        let Type::Handle { class, .. } = &object.ty else {
            return bad("a method call on a value that is not a handle");
        };
        let Some(k) = self
            .env
            .virtuals
            .iter()
            .position(|(c, m)| c == class && m == method)
        else {
            return bad(format!("no slot for virtual method `{method}`"));
        };
        // A fixed runtime's classes are never reloaded: the offset, the class pointer and the
        // slot are constants once code runs (the class's slot table is its vtable).
        let flags = if self.env.fixed {
            super::opt_object::fixed()
        } else {
            mem()
        };
        let table = self.slot_table_entry(k)?;
        let offset = self.builder.ins().load(types::I64, flags, table, 0);
        let class_ptr = self
            .builder
            .ins()
            .load(types::I64, flags, shell, Object::CLASS as i32);
        let slot_addr = self.builder.ins().iadd(class_ptr, offset);
        let code = self.builder.ins().load(types::I64, flags, slot_addr, 0);
        // A fixed runtime's slots all hold code from before any code runs (its install checks:
        // `ProgramObjects::empty_slot`) and are never reloaded: no test. (The object backend's
        // library is installed another way and keeps it.)
        if self.env.fixed && self.env.objects_data.is_none() {
            return Ok(code);
        }
        let empty = self.builder.ins().icmp_imm_s(IntCC::Equal, code, 0);
        let helper = self.env.helpers.empty_slot;
        self.cold_raise(empty, |t| {
            let (start, end) = t.span_args(span);
            t.call_helper(helper, &[offset, start, end]);
        });
        Ok(code)
    }

    /// A `C?` where a `C` is needed: `NullHandle` at the span when null. The value is not held:
    /// it raises only when the value is null, which owns nothing.
    pub(crate) fn translate_non_null(&mut self, inner: &Expr, span: Span) -> LResult<Value> {
        let v = self.translate_expr(inner)?;
        self.raise_if_null(v, span);
        Ok(v)
    }

    /// Raise `NullHandle` at `span` when handle cell `v` is null.
    pub(crate) fn raise_if_null(&mut self, v: Value, span: Span) {
        let null = self.builder.ins().icmp_imm_s(IntCC::Equal, v, 0);
        let helper = self.env.helpers.object_check;
        self.cold_raise(null, |t| {
            let (start, end) = t.span_args(span);
            // Raises `NullHandle` for the null cell.
            t.call_helper(helper, &[v, start, end]);
        });
    }

    /// `a == b` / `a != b` on handles: the same cell (same object and generation, or both null).
    pub(crate) fn translate_handle_compare(
        &mut self,
        op: BinOp,
        lhs: &Expr,
        rhs: &Expr,
    ) -> LResult<Value> {
        let cc = match op {
            BinOp::Eq => IntCC::Equal,
            BinOp::Ne => IntCC::NotEqual,
            _ => return bad("an ordering operator on handles"),
        };
        if pure_cell(lhs) && pure_cell(rhs) {
            // `p.next == null`, `a.f != b`: no code runs between the reads and the compare,
            // so the cells are compared where they are, with no reference taken.
            let l = self.borrowed_cell(lhs)?;
            let r = self.borrowed_cell(rhs)?;
            return Ok(self.builder.ins().icmp(cc, l, r));
        }
        let (l, l_owned) = self.handle_operand(lhs)?;
        let l_held = self.hold_if(l_owned, &lhs.ty, l);
        let (r, r_owned) = self.handle_operand(rhs)?;
        let v = self.builder.ins().icmp(cc, l, r);
        self.unhold(l_held);
        self.done_with(l, l_owned);
        self.done_with(r, r_owned);
        Ok(v)
    }

    /// The cell of `e`, one [`pure_cell`] accepts, not retained: a local's, `null`, or a field
    /// read through such a cell (checked at the field's span, as `translate_field` does).
    pub(crate) fn borrowed_cell(&mut self, e: &Expr) -> LResult<Value> {
        match &e.kind {
            ExprKind::Null => Ok(self.builder.ins().iconst(types::I64, 0)),
            ExprKind::Local(id) => match self.local(*id)? {
                LocalSlot::Scalar(var) => Ok(self.builder.use_var(var)),
                _ => bad("a handle local without a variable"),
            },
            ExprKind::Field(object, field) => {
                let c = match self.checked_handle(object) {
                    Some(c) => c,
                    None => {
                        let cell = self.borrowed_cell(object)?;
                        let shell = self.check_object(cell, e.span);
                        self.note_checked(object, shell)
                    }
                };
                let addr = self.checked_field(c, *field);
                self.load_value(addr, &e.ty)
            }
            _ => bad("a borrowed cell of an expression that runs code"),
        }
    }

    /// Release the managed arguments (handles, vecs, strings, arrays of them) of a finished
    /// call.
    pub(crate) fn release_args(&mut self, args: &[Expr], values: &[Value]) {
        self.release_args_but(args, values, &[]);
    }

    /// [`Self::release_args`] of a call made with `fields_borrowed` (the handle field read
    /// arguments passed borrowed, see `call_operands`).
    pub(crate) fn release_args_but(
        &mut self,
        args: &[Expr],
        values: &[Value],
        fields_borrowed: &[bool],
    ) {
        for (i, (arg, v)) in args.iter().zip(values).enumerate() {
            let borrowed = self.borrowed_arg(args, i) || fields_borrowed.get(i) == Some(&true);
            if !borrowed {
                self.release_value(&arg.ty, *v);
            }
        }
    }

    /// Which arguments of a call of `funcs` (`None`: unknown targets) with `args` are handle
    /// field reads passed borrowed: those whose fields the call cannot write
    /// (`lower_region.rs`, "Borrowed reads").
    pub(crate) fn field_args_borrowed(
        &mut self,
        funcs: Option<&[FuncId]>,
        args: &[Expr],
    ) -> Vec<bool> {
        let effects = self.call_effects(funcs, args);
        args.iter()
            .map(|a| self.borrowable_arg(a, &effects))
            .collect()
    }

    /// Whether argument `a` of a call with `effects` can be passed borrowed: a handle cell read
    /// without running code ([`pure_cell`]: a local, a field of one, ...) whose fields the call
    /// cannot write, as it is or made non-null (`C?` passed as a `C`: `f(self.current)`).
    fn borrowable_arg(&self, a: &Expr, effects: &super::opt_effects::Effects) -> bool {
        let read = match &a.kind {
            ExprKind::NonNull(inner) => inner,
            _ => a,
        };
        pure_cell(read) && self.path_unwritten(read, effects)
    }

    /// The cell of an argument [`Self::borrowable_arg`] allowed, not retained; a non-null one
    /// raises `NullHandle` at its span when null, where evaluating it would have.
    pub(crate) fn borrowed_arg_cell(&mut self, a: &Expr) -> LResult<Value> {
        match &a.kind {
            ExprKind::NonNull(inner) => {
                let v = self.borrowed_cell(inner)?;
                self.raise_if_null(v, a.span);
                Ok(v)
            }
            _ => self.borrowed_cell(a),
        }
    }

    /// Whether argument `i` of a call with `args` is passed borrowed: a managed local (not an
    /// array) read as it is. The callee borrows its parameters, the caller's local holds the
    /// reference through the call, and nothing the callee runs can assign the caller's local.
    /// Nothing in the arguments can either, except a vec push or pop, so a vec is borrowed only
    /// when no argument pushes or pops.
    pub(crate) fn borrowed_arg(&self, args: &[Expr], i: usize) -> bool {
        let Some(arg) = args.get(i) else {
            return false;
        };
        let ExprKind::Local(id) = arg.kind else {
            return false;
        };
        if !arg.ty.is_managed() || !matches!(self.local(id), Ok(LocalSlot::Scalar(_))) {
            return false;
        }
        !matches!(arg.ty, Type::Vec(_)) || !args.iter().any(super::lower_region::mutates_a_vec)
    }
}

/// Whether `e`, a managed value (a string, a vec, a handle, a closure), can be read without
/// running code and without a reference for a use during which nothing else runs: a local, a
/// field of a [`pure_cell`] (`self.name`, `a.b.v`), or an element of a vec that is one of those
/// by an index that runs no code (`keys[i]`, `self.v[i]`, `w[i][j]`).
pub(crate) fn borrowable_read(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Local(_) => true,
        ExprKind::Field(object, _) => pure_cell(object),
        ExprKind::Index(vec, index) => {
            matches!(vec.ty, Type::Vec(_))
                && super::lower_index::pure_index(index)
                && borrowable_read(vec)
        }
        _ => false,
    }
}

/// Whether `e` is a handle cell that can be read without running code: `null`, a handle local,
/// or a handle field of one (`a.b.c`).
pub(crate) fn pure_cell(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Null => true,
        ExprKind::Local(_) => e.ty.is_handle(),
        ExprKind::Field(object, _) => e.ty.is_handle() && pure_cell(object),
        _ => false,
    }
}
