//! The syntax tree: what the parser produces. Every node carries its byte [`Span`]; names are
//! still strings and nothing is typed yet (that is the checker's work).

use super::span::Span;

/// A whole source file.
#[derive(Debug, Clone, Default)]
pub struct Module {
    /// Top-level declarations, in order.
    pub items: Vec<Item>,
    /// The deepest nesting in the module, in the levels
    /// [`crate::lang::parser::MAX_EXPR_DEPTH`] counts.
    pub nesting: u32,
}

/// A name as written, with its span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ident {
    /// The name.
    pub name: String,
    /// Where it is written.
    pub span: Span,
}

/// A top-level declaration.
#[derive(Debug, Clone)]
pub enum Item {
    /// `var x: T = e` / `let X = e` at module level.
    Global(VarDecl),
    /// `native fn name(params) -> T`.
    Native(FnSig),
    /// `fn name(params) -> T { body }`.
    Fn(FnDecl),
    /// `class Name : Base { members }`.
    Class(ClassDecl),
    /// `interface Name { fn ... }`.
    Interface(InterfaceDecl),
}

/// A variable declaration (module level, local, or a class field).
#[derive(Debug, Clone)]
pub struct VarDecl {
    /// `var` (true) or `let` (false).
    pub mutable: bool,
    /// The name.
    pub name: Ident,
    /// The written type, if any.
    pub ty: Option<TypeExpr>,
    /// The initializer.
    pub init: Expr,
    /// The `=` token.
    pub eq_span: Span,
    /// The whole declaration.
    pub span: Span,
}

/// A function's name, parameters and return type.
#[derive(Debug, Clone)]
pub struct FnSig {
    /// The name.
    pub name: Ident,
    /// The parameters (`self` excluded: see [`FnSig::self_param`]).
    pub params: Vec<Param>,
    /// A method's `self` parameter.
    pub self_param: Option<Span>,
    /// The written return type, if any.
    pub ret: Option<TypeExpr>,
    /// From the first keyword to the end of the signature (or of the body for a `fn`).
    pub span: Span,
}

/// A parameter `name: T`.
#[derive(Debug, Clone)]
pub struct Param {
    /// The name.
    pub name: Ident,
    /// Its type.
    pub ty: TypeExpr,
}

/// A function with a body.
#[derive(Debug, Clone)]
pub struct FnDecl {
    /// Name, parameters, return type; `sig.span` covers the whole function.
    pub sig: FnSig,
    /// The body.
    pub body: Block,
}

/// How a method is declared in a class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodKind {
    /// `fn`
    Plain,
    /// `virtual fn`
    Virtual,
    /// `override fn`
    Override,
    /// `static fn`
    Static,
    /// `init(self, ...)`: the constructor `new C(...)` runs.
    Init,
}

/// A member of a class.
#[derive(Debug, Clone)]
pub enum ClassMember {
    /// `var f: T = e` / `let f = e`.
    Field(VarDecl),
    /// A method.
    Method(MethodKind, FnDecl),
}

/// `class Name : Base { ... }`.
#[derive(Debug, Clone)]
pub struct ClassDecl {
    /// The name.
    pub name: Ident,
    /// The base class or host interface after `:`.
    pub base: Option<Ident>,
    /// Fields and methods.
    pub members: Vec<ClassMember>,
    /// The whole declaration.
    pub span: Span,
}

/// `interface Name { fn m(self) -> T }` (host interfaces; scripts may not declare them).
#[derive(Debug, Clone)]
pub struct InterfaceDecl {
    /// The name.
    pub name: Ident,
    /// The method signatures.
    pub methods: Vec<FnSig>,
    /// The whole declaration.
    pub span: Span,
}

/// A written type.
#[derive(Debug, Clone)]
pub struct TypeExpr {
    /// What it is.
    pub kind: TypeKind,
    /// Where it is.
    pub span: Span,
}

/// Written types.
#[derive(Debug, Clone)]
pub enum TypeKind {
    /// A name: `i64`, `f64`, `bool`, `str`, or a class.
    Named(String),
    /// `[T; N]`; the length as written (checked against `u32` by the checker).
    Array(Box<TypeExpr>, u64),
    /// `vec<T>`.
    Vec(Box<TypeExpr>),
    /// `fn(A, B) -> R`.
    Fn(Vec<TypeExpr>, Option<Box<TypeExpr>>),
    /// `C?`.
    Nullable(Box<TypeExpr>),
}

/// A block `{ ... }`.
#[derive(Debug, Clone, Default)]
pub struct Block {
    /// The statements.
    pub stmts: Vec<Stmt>,
    /// From `{` to `}`.
    pub span: Span,
}

/// A statement with its span.
#[derive(Debug, Clone)]
pub struct Stmt {
    /// What it is.
    pub kind: StmtKind,
    /// Where it is.
    pub span: Span,
}

/// Statements.
#[derive(Debug, Clone)]
pub enum StmtKind {
    /// `let` / `var`.
    Var(VarDecl),
    /// `target = value` or `target op= value`.
    Assign {
        /// What is assigned to.
        target: Expr,
        /// The compound operator (`+` for `+=`), if any.
        op: Option<BinaryOp>,
        /// The `=` / `op=` token.
        op_span: Span,
        /// The value.
        value: Expr,
    },
    /// An expression for its effects.
    Expr(Expr),
    /// `if cond { } else ...`.
    If {
        /// The condition.
        cond: Expr,
        /// Taken when true.
        then_block: Block,
        /// `else { }` or `else if ...` (a block holding one `If`).
        else_block: Option<Block>,
    },
    /// `while cond { }`.
    While {
        /// The condition.
        cond: Expr,
        /// The body.
        body: Block,
    },
    /// `for x in a..b { }` or `for x in e { }`.
    For {
        /// The loop variable.
        var: Ident,
        /// What is iterated over.
        iter: ForIter,
        /// The body.
        body: Block,
    },
    /// `break`
    Break,
    /// `continue`
    Continue,
    /// `return` / `return e`.
    Return(Option<Expr>),
    /// A nested block `{ }` (a scope).
    Block(Block),
}

/// What a `for` loop walks.
#[derive(Debug, Clone)]
pub enum ForIter {
    /// `a..b`, `a..=b`, either with `step k`.
    Range {
        /// The first value.
        start: Expr,
        /// The bound.
        end: Expr,
        /// `..=`: `end` is included.
        inclusive: bool,
        /// `step k`, with the span of `step`.
        step: Option<Box<(Expr, Span)>>,
    },
    /// An array (or a vec).
    Each(Expr),
}

/// An expression with its span.
#[derive(Debug, Clone)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where it is.
    pub span: Span,
    /// How many levels deep the tree under this node goes, the node included (1 for a leaf;
    /// a closure counts the blocks and statements of its body). The parser keeps it, with the
    /// levels around the expression, within [`crate::lang::parser::MAX_EXPR_DEPTH`].
    pub nesting: u32,
}

/// Expressions.
#[derive(Debug, Clone)]
pub enum ExprKind {
    /// An integer literal's magnitude (may be `2^63`: only valid right after a `-`).
    Int(u64),
    /// A hex, binary or octal literal above `i64::MAX`: the `i64` with these bits.
    Bits(u64),
    /// A float literal.
    Float(f64),
    /// `true` / `false`.
    Bool(bool),
    /// `null`.
    Null,
    /// A string literal with its literal parts and interpolations.
    Str(Vec<StrPart>),
    /// A name.
    Name(String),
    /// `self`.
    SelfValue,
    /// `( e )`.
    Paren(Box<Expr>),
    /// A prefix operator.
    Unary {
        /// The operator.
        op: UnaryOp,
        /// The operand.
        operand: Box<Expr>,
    },
    /// An infix operator (including `&&` and `||`).
    Binary {
        /// The operator.
        op: BinaryOp,
        /// The operator token.
        op_span: Span,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
    },
    /// `e as T`.
    Cast(Box<Expr>, TypeExpr),
    /// `e is D`: a type test.
    Is(Box<Expr>, Ident),
    /// `e as? D`: a downcast (a `D?`, `null` when `e` is not a `D`).
    AsMaybe(Box<Expr>, Ident),
    /// `callee(args)`.
    Call(Box<Expr>, Vec<Expr>),
    /// `receiver.method(args)`.
    MethodCall {
        /// The receiver.
        receiver: Box<Expr>,
        /// The method name.
        method: Ident,
        /// The arguments.
        args: Vec<Expr>,
    },
    /// `base.field`.
    Field(Box<Expr>, Ident),
    /// `base[index]`.
    Index(Box<Expr>, Box<Expr>),
    /// `[a, b, c]`.
    ArrayLit(Vec<Expr>),
    /// `[e; n]`.
    ArrayRepeat(Box<Expr>, Box<Expr>),
    /// `new C(args)`.
    New(Ident, Vec<Expr>),
    /// `vec<T>()`.
    VecNew(TypeExpr),
    /// `|params| -> R { body }`.
    Closure {
        /// The parameters.
        params: Vec<Param>,
        /// The return type.
        ret: Option<TypeExpr>,
        /// The body.
        body: Block,
    },
}

/// A part of a string literal.
#[derive(Debug, Clone)]
pub enum StrPart {
    /// Literal text.
    Text(String),
    /// `${ e }`.
    Interp(Expr),
}

/// Prefix operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-`
    Neg,
    /// `!`
    Not,
    /// `~`
    BitNot,
}

/// Infix operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
    /// `&`
    BitAnd,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `<<`
    Shl,
    /// `>>`
    Shr,
    /// `>>>` (logical)
    UShr,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `&&`
    And,
    /// `||`
    Or,
}

impl BinaryOp {
    /// Binding strength, higher binds tighter (Rust's order; `as` and prefix operators bind
    /// tighter than all of these).
    pub fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 1,
            BinaryOp::And => 2,
            BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge => 3,
            BinaryOp::BitOr => 4,
            BinaryOp::BitXor => 5,
            BinaryOp::BitAnd => 6,
            BinaryOp::Shl | BinaryOp::Shr | BinaryOp::UShr => 7,
            BinaryOp::Add | BinaryOp::Sub => 8,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => 9,
        }
    }

    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
            BinaryOp::BitAnd => "&",
            BinaryOp::BitOr => "|",
            BinaryOp::BitXor => "^",
            BinaryOp::Shl => "<<",
            BinaryOp::Shr => ">>",
            BinaryOp::UShr => ">>>",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::And => "&&",
            BinaryOp::Or => "||",
        }
    }

    /// Comparisons do not chain: `a < b < c` is a syntax error, as in Rust.
    pub fn is_comparison(self) -> bool {
        self.precedence() == 3
    }
}
