//! One traversal of the checked program's statements and expressions, shared by the lowering's
//! analyses (which handles a loop uses, which module variables it mentions, which vec locals it
//! may hoist, whether a call can release a reference, which locals are ever assigned).
//!
//! The walker visits every statement, place and expression in evaluation order (a
//! statement's expressions, then its blocks) and calls the visitor's method for each before
//! its children; the method says whether to walk the children ([`Walk::Children`]) or not
//! ([`Walk::Skip`]: the visitor walked what it needed itself, with [`walk_expr`] and friends).
//! A construct the walker does not know (a kind added to the HIR later) is reported to
//! [`Visitor::unknown`], and every analysis treats it as the worst case: an analysis that
//! forgets a child never concludes that something is safe.

use crate::lang::hir::{Block, Expr, ExprKind, Place, PlaceKind, Stmt, StmtKind};

/// Whether the walker goes on into a node's children.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Walk {
    /// Walk the children.
    Children,
    /// Do not: the visitor handled them (or does not care).
    Skip,
}

/// What an analysis does at each node (see the module docs). Every method defaults to walking
/// the children and recording nothing.
pub(crate) trait Visitor {
    /// A statement, before its expressions and blocks.
    fn stmt(&mut self, _s: &Stmt) -> Walk {
        Walk::Children
    }
    /// A place, before its object and index expressions. `written`: it is the place stored
    /// to or mutated (an assignment's, a push's, a pop's) or a base of one.
    fn place(&mut self, _p: &Place, _written: bool) -> Walk {
        Walk::Children
    }
    /// An expression, before its operands.
    fn expr(&mut self, _e: &Expr) -> Walk {
        Walk::Children
    }
    /// A construct this walker does not know.
    fn unknown(&mut self);
}

/// Walk every statement of `b`.
pub(crate) fn walk_block(b: &Block, v: &mut dyn Visitor) {
    for s in &b.stmts {
        walk_stmt(s, v);
    }
}

/// Walk `s` and everything in it.
pub(crate) fn walk_stmt(s: &Stmt, v: &mut dyn Visitor) {
    if v.stmt(s) == Walk::Skip {
        return;
    }
    match &s.kind {
        StmtKind::Let { init, .. } => walk_expr(init, v),
        StmtKind::Assign { place, value, .. } => {
            walk_place(place, true, v);
            walk_expr(value, v);
        }
        StmtKind::Expr(e) => walk_expr(e, v),
        StmtKind::If {
            cond,
            then_block,
            else_block,
        } => {
            walk_expr(cond, v);
            walk_block(then_block, v);
            if let Some(b) = else_block {
                walk_block(b, v);
            }
        }
        StmtKind::While { cond, body } => {
            walk_expr(cond, v);
            walk_block(body, v);
        }
        StmtKind::ForRange {
            start, end, body, ..
        } => {
            walk_expr(start, v);
            walk_expr(end, v);
            walk_block(body, v);
        }
        StmtKind::ForStep {
            start,
            end,
            step,
            body,
            ..
        } => {
            walk_expr(start, v);
            walk_expr(end, v);
            if let Some(k) = step {
                walk_expr(k, v);
            }
            walk_block(body, v);
        }
        StmtKind::ForEach { array, body, .. } => {
            walk_expr(array, v);
            walk_block(body, v);
        }
        StmtKind::Break | StmtKind::Continue => {}
        StmtKind::Return(value) => {
            if let Some(e) = value {
                walk_expr(e, v);
            }
        }
        #[allow(unreachable_patterns)]
        _ => v.unknown(),
    }
}

/// Walk place `p` (`written`: see [`Visitor::place`]).
pub(crate) fn walk_place(p: &Place, written: bool, v: &mut dyn Visitor) {
    if v.place(p, written) == Walk::Skip {
        return;
    }
    match &p.kind {
        PlaceKind::Local(_) | PlaceKind::Global(_) => {}
        PlaceKind::Field { object, .. } => walk_expr(object, v),
        PlaceKind::Index { base, index } => {
            walk_place(base, written, v);
            walk_expr(index, v);
        }
        #[allow(unreachable_patterns)]
        _ => v.unknown(),
    }
}

/// Walk expression `e` and its operands.
pub(crate) fn walk_expr(e: &Expr, v: &mut dyn Visitor) {
    if v.expr(e) == Walk::Skip {
        return;
    }
    match &e.kind {
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Bool(_)
        | ExprKind::Local(_)
        | ExprKind::Global(_)
        | ExprKind::Null
        | ExprKind::VecNew
        | ExprKind::StrLit(_)
        | ExprKind::New(_) => {}
        ExprKind::Unary(_, x)
        | ExprKind::Cast(x)
        | ExprKind::Len(x)
        | ExprKind::Assert(x)
        | ExprKind::NonNull(x)
        | ExprKind::ToStr(x)
        | ExprKind::Print(x)
        | ExprKind::Field(x, _)
        | ExprKind::Downcast(x, _)
        | ExprKind::ArrayRepeat(x, _) => walk_expr(x, v),
        ExprKind::Binary { lhs, rhs, .. }
        | ExprKind::Logical(_, lhs, rhs)
        | ExprKind::Index(lhs, rhs)
        | ExprKind::StrByte(lhs, rhs) => {
            walk_expr(lhs, v);
            walk_expr(rhs, v);
        }
        ExprKind::StrSlice(s, a, b) => {
            walk_expr(s, v);
            walk_expr(a, v);
            walk_expr(b, v);
        }
        ExprKind::ArrayLit(xs)
        | ExprKind::Call(_, xs)
        | ExprKind::CallNative(_, xs)
        | ExprKind::Math(_, xs)
        | ExprKind::Closure { captures: xs, .. } => {
            for x in xs {
                walk_expr(x, v);
            }
        }
        ExprKind::MethodCall { object, args, .. } | ExprKind::VirtualCall { object, args, .. } => {
            walk_expr(object, v);
            for x in args {
                walk_expr(x, v);
            }
        }
        ExprKind::CallClosure(callee, args) => {
            walk_expr(callee, v);
            for x in args {
                walk_expr(x, v);
            }
        }
        ExprKind::VecPush(place, x) => {
            walk_place(place, true, v);
            walk_expr(x, v);
        }
        ExprKind::VecPop(place) => walk_place(place, true, v),
        #[allow(unreachable_patterns)]
        _ => v.unknown(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::hir::{ExprKind, LocalId, Program};

    /// Counts the nodes and the local reads the walker reaches.
    #[derive(Default)]
    struct Count {
        nodes: usize,
        locals: Vec<LocalId>,
        unknown: bool,
    }

    impl Visitor for Count {
        fn stmt(&mut self, _s: &Stmt) -> Walk {
            self.nodes += 1;
            Walk::Children
        }
        fn place(&mut self, _p: &Place, _written: bool) -> Walk {
            self.nodes += 1;
            Walk::Children
        }
        fn expr(&mut self, e: &Expr) -> Walk {
            self.nodes += 1;
            if let ExprKind::Local(id) = e.kind {
                self.locals.push(id);
            }
            Walk::Children
        }
        fn unknown(&mut self) {
            self.unknown = true;
        }
    }

    fn program(src: &str) -> Program {
        let source = crate::lang::SourceFile::new("t.hot", src.to_string());
        crate::lang::compile(std::sync::Arc::new(source)).unwrap_or_else(|d| panic!("{d}"))
    }

    #[test]
    fn every_operand_of_every_construct_is_reached() {
        let p = program(
            "fn f(a: i64, v: vec<i64>, s: str) -> i64 {\n\
             var x = a\n\
             for i in 0..=a step 2 { x += v[i] + s.byte(i) }\n\
             while x > a && a < 3 { x = x - 1 }\n\
             print(s.slice(a, x))\n\
             return min(x, a)\n}\n",
        );
        let f = p.functions.iter().find(|f| f.name == "f").expect("f");
        let mut c = Count::default();
        walk_block(&f.body, &mut c);
        assert!(!c.unknown);
        // `a` (local 0) is read in the `var`, the stepped range's end, both operands of the
        // `&&`, the slice and the min.
        let reads_of_a = c.locals.iter().filter(|l| l.0 == 0).count();
        assert_eq!(reads_of_a, 6);
        // `v` and `s` are reached inside the stepped loop's body and the print.
        assert!(c.locals.iter().any(|l| l.0 == 1));
        assert!(c.locals.iter().filter(|l| l.0 == 2).count() >= 2);
    }

    /// A visitor that skips what it handles itself does not see those children.
    #[test]
    fn skip_stops_at_the_node() {
        struct SkipCalls(usize);
        impl Visitor for SkipCalls {
            fn expr(&mut self, e: &Expr) -> Walk {
                if let ExprKind::Call(..) = e.kind {
                    return Walk::Skip;
                }
                if let ExprKind::Local(_) = e.kind {
                    self.0 += 1;
                }
                Walk::Children
            }
            fn unknown(&mut self) {}
        }
        let p =
            program("fn g(a: i64) -> i64 { return a }\nfn f(b: i64) -> i64 { return g(b) + b }\n");
        let mut v = SkipCalls(0);
        let f = p.functions.iter().find(|f| f.name == "f").expect("f");
        walk_block(&f.body, &mut v);
        assert_eq!(v.0, 1);
    }
}
