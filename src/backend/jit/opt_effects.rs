//! What running some code may store into: the fields (by declaring class and index) and module
//! variables a call, its arguments and everything they call directly may write. The lowering
//! borrows a field's reference across a call (a receiver `x.w.m(..)`, an argument `f(t.left)`,
//! a string field `x.s.slice(a, b)`) when the call's effects do not include that field.
//!
//! # Why a field the code does not write keeps its value alive
//! A script gives up a reference only by storing into a field or a module variable (the old
//! value's), by releasing a local or temporary of its own frame, or by the cascade of a freed
//! object releasing its fields. A value read from `x.f`, with `x` held (a local known valid, a
//! parameter, `self`), keeps the field's reference for as long as nothing stores into `x.f`: the
//! frame's temporaries are not the field's, and `x` is not freed while held, so no cascade reaches
//! its fields. A store into the same field of *another* object of the class cannot be told
//! apart from one into `x.f`, so the effect is the field of every object of the class (and its
//! derived classes: a field keeps its index in them, keyed by the class that declares it).
//!
//! # What counts
//! A store into a field of a managed type (not `i64`, `f64`, `bool`: storing those gives up no
//! reference), a push or pop on a vec rooted at such a field, a store into a module variable;
//! a direct call adds its callee's effects, walked once per lowering and cached; a virtual call
//! adds the effects of every override of the method in the receiver's class family on
//! `jit-opt` (whose program is closed: no reload adds one), and counts as writing anything on
//! `jit`, where a reload may bring new code. A closure call, `new` (kept as before), a closure,
//! a construct the walker does not know and a walk longer than [`MAX_EFFECT_WALK`] nodes count
//! as writing anything. Host functions write no script field.

use std::collections::{HashMap, HashSet};

use crate::lang::hir::{ClassId, Expr, ExprKind, FuncId, Place, PlaceKind, Program, Stmt, Type};

use super::opt_object::derives;
use super::opt_walk::{Visitor, Walk, walk_block, walk_expr, walk_stmt};

/// A field as the effects name it: the class that declares it, and its cell index.
pub(crate) type FieldKey = (ClassId, u32);

/// What some code may store into (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Effects {
    /// Managed fields written.
    fields: HashSet<FieldKey>,
    /// A module variable written.
    globals: bool,
    /// Anything may be written.
    all: bool,
}

impl Effects {
    /// The effects of code that may write anything.
    pub(crate) fn anything() -> Effects {
        Effects {
            all: true,
            ..Effects::default()
        }
    }

    /// Whether the code may store into field `key` (of any object). A store into a module
    /// variable counts as one into every field (kept as conservative as the rule was).
    pub(crate) fn writes(&self, key: FieldKey) -> bool {
        self.all || self.globals || self.fields.contains(&key)
    }

    fn add(&mut self, other: &Effects) {
        self.all |= other.all;
        self.globals |= other.globals;
        self.fields.extend(other.fields.iter().copied());
    }
}

/// The key of field `field` of an object of type `object` (a handle type), or `None` for
/// another type.
pub(crate) fn field_key(program: &Program, object: &Type, field: u32) -> Option<FieldKey> {
    let Type::Handle { class, .. } = object else {
        return None;
    };
    // Up to the class that declares it: the highest ancestor that still has the field.
    let mut at = *class;
    while let Some(parent) = program.classes.get(at.index()).and_then(|c| c.parent) {
        match program.classes.get(parent.index()) {
            Some(p) if p.fields.len() > field as usize => at = parent,
            _ => break,
        }
    }
    Some((at, field))
}

/// The longest walk for one root function and what it calls.
const MAX_EFFECT_WALK: usize = 4000;

/// The cache of one lowering: each function's effects with everything it calls.
pub(crate) type EffectMemo = HashMap<FuncId, Effects>;

/// The effects of the code `walk` shows an [`EffectWalk`], with its direct callees'.
fn walked_effects(
    program: &Program,
    fixed: bool,
    memo: &mut EffectMemo,
    walk: impl FnOnce(&mut EffectWalk<'_>),
) -> Effects {
    let mut w = EffectWalk::new(program, fixed);
    walk(&mut w);
    let mut effects = w.effects;
    for f in w.calls {
        effects.add(&function_effects(program, fixed, f, memo));
    }
    effects
}

/// The effects of evaluating `exprs` (their own stores and their direct callees').
pub(crate) fn exprs_effects<'e>(
    program: &Program,
    fixed: bool,
    exprs: impl IntoIterator<Item = &'e Expr>,
    memo: &mut EffectMemo,
) -> Effects {
    walked_effects(program, fixed, memo, |w| {
        for e in exprs {
            walk_expr(e, w);
        }
    })
}

/// The effects of running statement `s` (its expressions, its blocks, their callees').
pub(crate) fn stmt_effects(
    program: &Program,
    fixed: bool,
    s: &Stmt,
    memo: &mut EffectMemo,
) -> Effects {
    walked_effects(program, fixed, memo, |w| walk_stmt(s, w))
}

/// The effects of a call of `funcs` (one, or a virtual call's possible targets) with `args`.
pub(crate) fn call_effects(
    program: &Program,
    fixed: bool,
    funcs: &[FuncId],
    args: &[Expr],
    memo: &mut EffectMemo,
) -> Effects {
    let mut effects = exprs_effects(program, fixed, args, memo);
    for &f in funcs {
        effects.add(&function_effects(program, fixed, f, memo));
    }
    effects
}

/// The functions a virtual call of `method` on a receiver of static type `receiver` may run:
/// every override in the class family on `jit-opt` (`fixed`), `None` (anything) otherwise.
pub(crate) fn virtual_targets(
    program: &Program,
    fixed: bool,
    receiver: &Type,
    method: &str,
) -> Option<Vec<FuncId>> {
    let Type::Handle { class, .. } = receiver else {
        return None;
    };
    if !fixed {
        return None;
    }
    let mut targets: Vec<FuncId> = program
        .classes
        .iter()
        .enumerate()
        .filter(|(i, _)| derives(program, ClassId(*i as u32), *class))
        .filter_map(|(_, c)| c.method(method).map(|m| m.func))
        .collect();
    targets.sort_by_key(|f| f.0);
    targets.dedup();
    Some(targets)
}

/// The effects of running `func`: its body's and those of everything it calls.
pub(crate) fn function_effects(
    program: &Program,
    fixed: bool,
    func: FuncId,
    memo: &mut EffectMemo,
) -> Effects {
    if let Some(known) = memo.get(&func) {
        return known.clone();
    }
    let mut effects = Effects::default();
    let mut pending = vec![func];
    let mut seen: HashSet<FuncId> = HashSet::new();
    let mut nodes = 0;
    while let Some(f) = pending.pop() {
        if !seen.insert(f) {
            continue;
        }
        if let Some(known) = memo.get(&f) {
            effects.add(known);
            continue;
        }
        let Some(body) = program.functions.get(f.index()) else {
            effects = Effects::anything();
            break;
        };
        let mut w = EffectWalk::new(program, fixed);
        walk_block(&body.body, &mut w);
        nodes += w.nodes;
        effects.add(&w.effects);
        if effects.all || nodes > MAX_EFFECT_WALK {
            effects = Effects::anything();
            break;
        }
        pending.extend(w.calls);
    }
    // Only the root is cached: the functions it reached may write less than the whole.
    memo.insert(func, effects.clone());
    effects
}

/// One body's own effects, and the functions it calls (see the module docs).
struct EffectWalk<'p> {
    program: &'p Program,
    fixed: bool,
    effects: Effects,
    calls: Vec<FuncId>,
    nodes: usize,
}

impl<'p> EffectWalk<'p> {
    fn new(program: &'p Program, fixed: bool) -> Self {
        EffectWalk {
            program,
            fixed,
            effects: Effects::default(),
            calls: Vec::new(),
            nodes: 0,
        }
    }
}

impl Visitor for EffectWalk<'_> {
    /// A written place: a field of a managed type (also as the base of a vec or array place
    /// written through it), or a module variable.
    fn place(&mut self, p: &Place, written: bool) -> Walk {
        if !written {
            return Walk::Children;
        }
        match &p.kind {
            PlaceKind::Global(_) => self.effects.globals = true,
            PlaceKind::Field { object, field }
                if !matches!(p.ty, Type::I64 | Type::F64 | Type::Bool) =>
            {
                match field_key(self.program, &object.ty, *field) {
                    Some(key) => {
                        self.effects.fields.insert(key);
                    }
                    None => self.effects.all = true,
                }
            }
            _ => {}
        }
        Walk::Children
    }

    fn expr(&mut self, e: &Expr) -> Walk {
        self.nodes += 1;
        match &e.kind {
            ExprKind::Call(f, _) | ExprKind::MethodCall { func: f, .. } => {
                self.calls.push(*f);
                Walk::Children
            }
            ExprKind::VirtualCall { object, method, .. } => {
                match virtual_targets(self.program, self.fixed, &object.ty, method) {
                    Some(targets) => self.calls.extend(targets),
                    None => self.effects.all = true,
                }
                Walk::Children
            }
            // A closure call runs code not known here; `new` and closures count as before
            // (conservatively).
            ExprKind::CallClosure(..) | ExprKind::Closure { .. } | ExprKind::New(_) => {
                self.effects.all = true;
                Walk::Skip
            }
            _ => Walk::Children,
        }
    }

    fn unknown(&mut self) {
        self.effects.all = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(text: &str) -> Program {
        let source = crate::lang::SourceFile::new("t.hot", text.to_string());
        crate::lang::compile(std::sync::Arc::new(source)).unwrap_or_else(|d| panic!("{d}"))
    }

    fn func(p: &Program, name: &str) -> FuncId {
        let i = p
            .functions
            .iter()
            .position(|f| f.name == name)
            .unwrap_or_else(|| panic!("no function {name}"));
        FuncId(i as u32)
    }

    const CLASSES: &str = "class A {\n    var next: A? = null\n    var n: i64 = 0\n    virtual fn run(self) -> i64 { return self.n }\n}\nclass B : A {\n    var other: A? = null\n    override fn run(self) -> i64 {\n        self.next = null\n        return 1\n    }\n}\n";

    #[test]
    fn a_scalar_store_writes_nothing_and_a_handle_store_its_declaring_field() {
        let p = program(&format!(
            "{CLASSES}fn scalar(a: A) {{\n    a.n = 3\n}}\nfn link(b: B) {{\n    b.next = null\n    b.other = null\n}}\nfn both(b: B) {{\n    scalar(b)\n    link(b)\n}}\nfn main() -> i64 {{ return 0 }}\n"
        ));
        let mut memo = EffectMemo::new();
        assert_eq!(
            function_effects(&p, true, func(&p, "scalar"), &mut memo),
            Effects::default()
        );
        let link = function_effects(&p, true, func(&p, "link"), &mut memo);
        let a = ClassId(p.classes.iter().position(|c| c.name == "A").unwrap() as u32);
        let b = ClassId(p.classes.iter().position(|c| c.name == "B").unwrap() as u32);
        // `next` is A's field (index 0), `other` B's own (index 2).
        assert!(link.writes((a, 0)) && link.writes((b, 2)) && !link.writes((b, 0)));
        let both = function_effects(&p, true, func(&p, "both"), &mut memo);
        assert_eq!(both, link);
    }

    #[test]
    fn a_virtual_call_runs_every_override_on_jit_opt_and_anything_on_jit() {
        let p = program(&format!(
            "{CLASSES}fn call(a: A) -> i64 {{\n    return a.run()\n}}\nfn main() -> i64 {{ return 0 }}\n"
        ));
        let a = ClassId(p.classes.iter().position(|c| c.name == "A").unwrap() as u32);
        let fixed = function_effects(&p, true, func(&p, "call"), &mut EffectMemo::new());
        assert!(fixed.writes((a, 0)) && !fixed.writes((a, 1)) && !fixed.all);
        let reloadable = function_effects(&p, false, func(&p, "call"), &mut EffectMemo::new());
        assert!(reloadable.all);
    }

    #[test]
    fn a_vec_or_array_in_a_field_written_through_and_a_module_variable_count() {
        let p = program(
            "class C {\n    var items: vec<i64> = vec<i64>()\n    var cells: [i64; 4] = [0; 4]\n    var n: i64 = 0\n}\nvar g: i64 = 0\nfn push(c: C) {\n    c.items.push(1)\n}\nfn store(c: C) {\n    c.cells[1] = 2\n}\nfn global() {\n    g = 1\n}\nfn main() -> i64 { return 0 }\n",
        );
        let c = ClassId(0);
        let mut memo = EffectMemo::new();
        let push = function_effects(&p, true, func(&p, "push"), &mut memo);
        assert!(push.writes((c, 0)) && !push.writes((c, 1)));
        let store = function_effects(&p, true, func(&p, "store"), &mut memo);
        assert!(store.writes((c, 1)) && !store.writes((c, 0)));
        // A module variable written counts as every field (conservatively).
        let global = function_effects(&p, true, func(&p, "global"), &mut memo);
        assert!(global.writes((c, 0)) && global.writes((c, 2)));
    }

    #[test]
    fn a_closure_call_writes_anything() {
        let p = program(
            "class C {\n    var next: C? = null\n}\nfn call(f: fn(i64) -> i64) -> i64 {\n    return f(1)\n}\nfn main() -> i64 { return 0 }\n",
        );
        let effects = function_effects(&p, true, func(&p, "call"), &mut EffectMemo::new());
        assert!(effects.writes((ClassId(0), 0)));
    }

    #[test]
    fn a_call_in_an_argument_counts() {
        let p = program(&format!(
            "{CLASSES}fn clear(a: A) -> i64 {{\n    a.next = null\n    return 0\n}}\nfn main() -> i64 {{\n    let a = new A()\n    return clear(a)\n}}\n"
        ));
        let main = &p.functions[func(&p, "main").index()];
        let hir_stmt = main.body.stmts.last().expect("a return");
        let crate::lang::hir::StmtKind::Return(Some(e)) = &hir_stmt.kind else {
            panic!("not a return");
        };
        let effects = exprs_effects(&p, true, [e], &mut EffectMemo::new());
        assert_ne!(effects, Effects::default());
    }
}
