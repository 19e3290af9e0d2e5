//! A tiny builder for checked programs (HIR) by hand, for backend tests that do not go
//! through the front end.
#![allow(dead_code)]

use std::sync::Arc;

use hotlab::lang::hir::{
    BinOp, Block, Expr, ExprKind, FuncId, Function, Global, GlobalId, Local, LocalId, LogicOp,
    NativeId, NativeImport, Place, PlaceKind, Program, Stmt, StmtKind, Type, UnOp,
};
use hotlab::lang::host::host_sig;
use hotlab::lang::span::{SourceFile, Span};

pub fn sp(start: usize, end: usize) -> Span {
    Span::new(start, end)
}

fn e(kind: ExprKind, ty: Type) -> Expr {
    Expr {
        kind,
        ty,
        span: Span::default(),
    }
}

pub fn int(v: i64) -> Expr {
    e(ExprKind::Int(v), Type::I64)
}
pub fn float(v: f64) -> Expr {
    e(ExprKind::Float(v), Type::F64)
}
pub fn boolean(v: bool) -> Expr {
    e(ExprKind::Bool(v), Type::Bool)
}
pub fn local(id: LocalId, ty: Type) -> Expr {
    e(ExprKind::Local(id), ty)
}
pub fn global(id: GlobalId, ty: Type) -> Expr {
    e(ExprKind::Global(id), ty)
}
pub fn unary(op: UnOp, x: Expr) -> Expr {
    let ty = x.ty.clone();
    e(ExprKind::Unary(op, Box::new(x)), ty)
}
pub fn bin_at(op: BinOp, l: Expr, r: Expr, op_span: Span) -> Expr {
    let ty = if op.is_comparison() {
        Type::Bool
    } else {
        l.ty.clone()
    };
    e(
        ExprKind::Binary {
            op,
            op_span,
            lhs: Box::new(l),
            rhs: Box::new(r),
        },
        ty,
    )
}
pub fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
    bin_at(op, l, r, Span::default())
}
pub fn and(l: Expr, r: Expr) -> Expr {
    e(
        ExprKind::Logical(LogicOp::And, Box::new(l), Box::new(r)),
        Type::Bool,
    )
}
pub fn or(l: Expr, r: Expr) -> Expr {
    e(
        ExprKind::Logical(LogicOp::Or, Box::new(l), Box::new(r)),
        Type::Bool,
    )
}
pub fn cast(x: Expr, to: Type) -> Expr {
    e(ExprKind::Cast(Box::new(x)), to)
}
pub fn call(f: FuncId, args: Vec<Expr>, ret: Type) -> Expr {
    e(ExprKind::Call(f, args), ret)
}
pub fn call_native(n: NativeId, args: Vec<Expr>, ret: Type) -> Expr {
    e(ExprKind::CallNative(n, args), ret)
}
pub fn array(items: Vec<Expr>) -> Expr {
    let elem = items.first().map(|x| x.ty.clone()).unwrap_or(Type::I64);
    let n = items.len() as u32;
    e(ExprKind::ArrayLit(items), Type::Array(Box::new(elem), n))
}
pub fn repeat(item: Expr, n: u32) -> Expr {
    let ty = Type::Array(Box::new(item.ty.clone()), n);
    e(ExprKind::ArrayRepeat(Box::new(item), n), ty)
}
pub fn index_at(a: Expr, i: Expr, span: Span) -> Expr {
    let Type::Array(elem, _) = a.ty.clone() else {
        panic!("index of non-array")
    };
    let mut i = i;
    i.span = span;
    Expr {
        kind: ExprKind::Index(Box::new(a), Box::new(i)),
        ty: *elem,
        span,
    }
}
pub fn index(a: Expr, i: Expr) -> Expr {
    index_at(a, i, Span::default())
}
pub fn len(a: Expr) -> Expr {
    e(ExprKind::Len(Box::new(a)), Type::I64)
}
pub fn assert_at(c: Expr, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Assert(Box::new(c)),
        ty: Type::Unit,
        span,
    }
}

fn s(kind: StmtKind) -> Stmt {
    Stmt {
        kind,
        span: Span::default(),
    }
}
pub fn let_(local: LocalId, init: Expr) -> Stmt {
    s(StmtKind::Let { local, init })
}
pub fn place_local(id: LocalId, ty: Type) -> Place {
    Place {
        kind: PlaceKind::Local(id),
        ty,
        span: Span::default(),
    }
}
pub fn place_global(id: GlobalId, ty: Type) -> Place {
    Place {
        kind: PlaceKind::Global(id),
        ty,
        span: Span::default(),
    }
}
pub fn place_index(base: Place, i: Expr, span: Span) -> Place {
    let Type::Array(elem, _) = base.ty.clone() else {
        panic!("index of non-array place")
    };
    let mut i = i;
    i.span = span;
    Place {
        kind: PlaceKind::Index {
            base: Box::new(base),
            index: Box::new(i),
        },
        ty: *elem,
        span,
    }
}
pub fn assign(place: Place, value: Expr) -> Stmt {
    s(StmtKind::Assign {
        place,
        op: None,
        op_span: Span::default(),
        value,
    })
}
pub fn assign_op(place: Place, op: BinOp, value: Expr, op_span: Span) -> Stmt {
    s(StmtKind::Assign {
        place,
        op: Some(op),
        op_span,
        value,
    })
}
pub fn expr(x: Expr) -> Stmt {
    s(StmtKind::Expr(x))
}
pub fn if_(cond: Expr, then: Vec<Stmt>, els: Option<Vec<Stmt>>) -> Stmt {
    s(StmtKind::If {
        cond,
        then_block: Block { stmts: then },
        else_block: els.map(|stmts| Block { stmts }),
    })
}
pub fn while_(cond: Expr, body: Vec<Stmt>) -> Stmt {
    s(StmtKind::While {
        cond,
        body: Block { stmts: body },
    })
}
pub fn for_range(var: LocalId, start: Expr, end: Expr, body: Vec<Stmt>) -> Stmt {
    s(StmtKind::ForRange {
        var,
        start,
        end,
        body: Block { stmts: body },
    })
}
pub fn for_each(var: LocalId, array: Expr, body: Vec<Stmt>) -> Stmt {
    s(StmtKind::ForEach {
        var,
        array,
        body: Block { stmts: body },
    })
}
pub fn brk() -> Stmt {
    s(StmtKind::Break)
}
pub fn cont() -> Stmt {
    s(StmtKind::Continue)
}
pub fn ret(x: Option<Expr>) -> Stmt {
    s(StmtKind::Return(x))
}

/// Locals of the function being built.
pub struct Fb {
    locals: Vec<Local>,
}

impl Fb {
    pub fn param(&self, i: u32) -> LocalId {
        LocalId(i)
    }
    pub fn var(&mut self, name: &str, ty: Type) -> LocalId {
        self.locals.push(Local {
            name: name.into(),
            ty,
            mutable: true,
            span: Span::default(),
        });
        LocalId(self.locals.len() as u32 - 1)
    }
}

pub struct ProgramBuilder {
    source: Arc<SourceFile>,
    globals: Vec<Global>,
    natives: Vec<NativeImport>,
    functions: Vec<Function>,
}

pub fn program() -> ProgramBuilder {
    // A long text so that every span used in tests maps to a line and column.
    let text = (0..40).map(|_| " ".repeat(39) + "\n").collect::<String>();
    ProgramBuilder {
        source: Arc::new(SourceFile::new("t.hot", text)),
        globals: Vec::new(),
        natives: Vec::new(),
        functions: Vec::new(),
    }
}

impl ProgramBuilder {
    pub fn global(&mut self, name: &str, ty: Type) -> GlobalId {
        self.globals.push(Global {
            name: name.into(),
            ty,
            mutable: true,
            span: Span::default(),
        });
        GlobalId(self.globals.len() as u32 - 1)
    }

    pub fn native(&mut self, name: &str) -> NativeId {
        let (host, f) = host_sig(name).expect("host function");
        self.natives.push(NativeImport {
            name: name.into(),
            host,
            params: f.params.iter().map(|p| p.to_type()).collect(),
            ret: f.ret.to_type(),
            span: Span::default(),
        });
        NativeId(self.natives.len() as u32 - 1)
    }

    /// Declare a function (body added by `define`).
    pub fn declare(&mut self, name: &str, params: &[Type], ret: Type, name_span: Span) -> FuncId {
        let locals = params
            .iter()
            .enumerate()
            .map(|(i, ty)| Local {
                name: format!("p{i}"),
                ty: ty.clone(),
                mutable: false,
                span: Span::default(),
            })
            .collect();
        self.functions.push(Function {
            name: name.into(),
            param_count: params.len() as u32,
            ret,
            locals,
            body: Block::default(),
            span: name_span,
            name_span,
            class: None,
            captures: None,
        });
        FuncId(self.functions.len() as u32 - 1)
    }

    pub fn define(&mut self, id: FuncId, body: impl FnOnce(&mut Fb) -> Vec<Stmt>) {
        let f = &mut self.functions[id.index()];
        let mut fb = Fb {
            locals: std::mem::take(&mut f.locals),
        };
        let stmts = body(&mut fb);
        f.locals = fb.locals;
        f.body = Block { stmts };
    }

    pub fn func(
        &mut self,
        name: &str,
        params: &[Type],
        ret: Type,
        body: impl FnOnce(&mut Fb) -> Vec<Stmt>,
    ) -> FuncId {
        let id = self.declare(name, params, ret, Span::default());
        self.define(id, body);
        id
    }

    /// Add `<init>` with `init` as its body and build the program.
    pub fn finish_with_init(mut self, init: Vec<Stmt>) -> Program {
        let id = self.declare("<init>", &[], Type::Unit, Span::default());
        self.define(id, |_| init);
        let main = self
            .functions
            .iter()
            .position(|f| f.name == "main")
            .map(|i| FuncId(i as u32));
        Program {
            source: self.source,
            globals: self.globals,
            natives: self.natives,
            functions: self.functions,
            init: id,
            main,
            classes: Vec::new(),
            nesting: 0,
        }
    }

    pub fn finish(self) -> Program {
        self.finish_with_init(Vec::new())
    }
}

pub fn arr(elem: Type, n: u32) -> Type {
    Type::Array(Box::new(elem), n)
}
