//! The checked program (HIR): the checker's output and the one input of every backend.
//!
//! Names are resolved to ids, every expression carries its [`Type`], every node its [`Span`].
//! Backends (`interp`, `jit`, later `jit-opt` and `object`) must give the same results and the
//! same script errors (the runtime's `ScriptError`s), at the same spans, for the same program.
//!
//! # Semantics the backends share
//! - Evaluation is left to right: operands, call arguments, array literal elements.
//! - `i64` arithmetic wraps. `/` and `%` by zero raise `DivisionByZero` at the operator's span
//!   (always, whatever the checks setting). `i64::MIN / -1` is `i64::MIN`, `i64::MIN % -1` is 0.
//! - Shifts take the amount modulo 64; `>>` is arithmetic, `>>>` logical. `f64 % f64` is Rust's `%` (fmod).
//!   `f64` division by zero follows IEEE 754 (no error).
//! - `x as i64` from `f64` truncates toward zero and saturates (NaN gives 0), like Rust's `as`;
//!   `as f64` from `i64` rounds to nearest; `bool as i64` is 0 or 1. A cast to the same type is
//!   allowed and does nothing.
//! - Index out of range raises `IndexOutOfRange` at the index expression's span while runtime
//!   checks are on (`--checks on`, the default). With checks off the access is unchecked.
//! - Arrays are values: `let b = a`, passing and returning an array copy it. `for x in a`
//!   iterates over a copy taken when the loop starts.
//! - For an assignment `place = value` / `place op= value`: the place's index expressions are
//!   evaluated and bounds-checked first (outermost array first), then `value`, then the store.
//!   For `op=` the place's current value is read after `value` is evaluated, just before the
//!   store (this matters when `value` calls a function that writes the same place).
//! - `for i in a..b`: `a` then `b` are evaluated once; `i` takes `a, a+1, ..` while `i < b`.
//! - A call that would exhaust the stack raises `StackExhausted` at the called function's
//!   name span (runaway recursion never crashes the process).
//! - Module globals are initialized by [`Program::init`], in declaration order, before any other
//!   function runs.
//! - Objects are the object runtime's (`runtime::object`); a handle is its 8-byte cell. Every
//!   use of a handle (field read or write, method call) checks it first and raises `NullHandle`,
//!   `StaleHandle` or `ObjectDetached` at the using expression's span (for an assignment to a
//!   field, the place's span); a [`ExprKind::NonNull`] raises `NullHandle` at its span. For
//!   `o.f = v`: `o` is evaluated and checked, then `v`, then `o` is checked again and the field
//!   stored. For `o.m(args)`: `o` is evaluated and checked, then the arguments left to right.
//! - `vec<T>` is a value with copy-on-write: a copy shares the block, and a mutation (`push`,
//!   `pop`, an element store) of a shared block copies it first. For a place with vec elements
//!   (`v[i] = x`, `v[i][j] op= x`, `v.push(x)`) the index expressions are evaluated first
//!   (outermost first), then the value, and then each vec index is checked against the vec's
//!   length *at the store* (raising `IndexOutOfRange` at the index expression): the value's
//!   calls may have changed the vec. `v.pop()` of an empty vec raises `PopEmpty` at the call.
//!   `for x in v` iterates over the vec as it was when the loop started.
//! - `str` is immutable; `+` concatenates, `==`/`!=` compare the text, `len()` counts bytes.
//!   [`ExprKind::ToStr`] shows a value as interpolation does (`runtime::values::format_cell`).
//! - A lambda `|params| -> R { body }` is its own [`Function`] (with [`Function::captures`]);
//!   the expression makes a closure holding copies of the enclosing locals the body names
//!   (capture by value: later assignments to them are not seen). Module variables are not
//!   captured: the body reads them live. Closures are values that cannot be compared.
//! - `==`/`!=` on handles compare cells (identity); the operands may be of different handle
//!   types (a class and its base, or `null`). A handle-typed expression may have a type that
//!   differs from its context's only in class (derived to base) or nullability (`null` to `C?`,
//!   `C` to `C?`): the cell is the same.

use std::fmt;
use std::sync::Arc;

use super::span::{SourceFile, Span};

mod builtin;
mod class;

pub use builtin::Math;
pub use class::{Class, Field, Interface, Method, MethodKind};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);
        impl $name {
            /// As an index into the owning `Vec`.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id_type!(
    /// A local variable or parameter of one function (parameters come first).
    LocalId
);
id_type!(
    /// A module variable or constant.
    GlobalId
);
id_type!(
    /// A script function (including the synthesized initializer).
    FuncId
);
id_type!(
    /// A `native fn` declaration, bound to an entry of the host table.
    NativeId
);
id_type!(
    /// A script class.
    ClassId
);

/// An array value of more cells than this (512 KiB) is kept on the heap by compiled code (a
/// block allocated when the function is entered and freed when it returns or unwinds), not in
/// its stack frame. Only arrays of plain scalars get that large (`check::MAX_ARRAY_CELLS`).
pub const HEAP_SLOT_CELLS: u64 = 1 << 16;

/// A checked type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Type {
    /// The type of statements and of functions without a return type.
    Unit,
    /// 64-bit two's-complement integer.
    I64,
    /// IEEE 754 double.
    F64,
    /// `true` / `false`.
    Bool,
    /// A fixed array `[T; N]`, a value type.
    Array(Box<Type>, u32),
    /// A handle to an object of `class` or of a class derived from it: `C`, or `C?` when
    /// `nullable`. One 8-byte cell (see `runtime::handle`): the shell address and generation,
    /// 0 for `null`.
    Handle {
        /// The class named by the type.
        class: ClassId,
        /// Its name (for messages).
        name: Arc<str>,
        /// `C?`: may be `null`.
        nullable: bool,
    },
    /// The type of the `null` literal: it converts to any nullable handle type, and is never the
    /// type of a variable, field or parameter.
    Null,
    /// `vec<T>`: a growable array, a value type with copy-on-write (see
    /// `runtime::values`). One cell: 0 for the empty vec, else a counted block. The element
    /// type is a one-cell type other than an array.
    Vec(Box<Type>),
    /// `str`: an immutable UTF-8 string. One cell: 0 for `""`, else a counted block.
    Str,
    /// `fn(A, B) -> R`: a closure. One cell: a counted closure block (code and captured
    /// cells, see `runtime::closure`); 0 only in a module variable not initialized yet (calling
    /// it raises `NullClosure`).
    Fn {
        /// The parameter types.
        params: Vec<Type>,
        /// The return type ([`Type::Unit`] when none is written).
        ret: Box<Type>,
    },
}

impl Type {
    /// `i64`, `f64` or `bool`: fits in one machine register.
    pub fn is_scalar(&self) -> bool {
        matches!(self, Type::I64 | Type::F64 | Type::Bool)
    }

    /// A handle (`C`, `C?`) or the `null` literal: one cell, compared by identity.
    pub fn is_handle(&self) -> bool {
        matches!(self, Type::Handle { .. } | Type::Null)
    }

    /// A value that owns a reference (a handle, a vec, a string): copying it retains, dropping
    /// it releases. Its zero cell (null, empty) owns nothing.
    pub fn is_managed(&self) -> bool {
        matches!(
            self,
            Type::Handle { .. } | Type::Null | Type::Vec(_) | Type::Str | Type::Fn { .. }
        )
    }

    /// A managed value, or an array with managed cells somewhere inside: copying it retains
    /// those cells, dropping it releases them.
    pub fn owns_cells(&self) -> bool {
        match self {
            Type::Array(elem, _) => elem.owns_cells(),
            ty => ty.is_managed(),
        }
    }

    /// A closure, or a vec or array with closures somewhere inside: a value that holds code
    /// of the program version that made it (a reload does not keep it).
    pub fn holds_closures(&self) -> bool {
        match self {
            Type::Fn { .. } => true,
            Type::Array(elem, _) | Type::Vec(elem) => elem.holds_closures(),
            _ => false,
        }
    }

    /// Number of 8-byte cells a value of this type occupies in memory: one per scalar, except
    /// that an array of bools packs its elements one byte each, `[bool; N]` in `ceil(N / 8)`
    /// cells (the bytes past the last element zero). An array of such arrays is its rows'
    /// cells one after the other, each row a whole number of cells, so that a row is an array
    /// value of its own: `[[bool; 3]; 4]` is four cells, one a row.
    pub fn cells(&self) -> u64 {
        match self {
            Type::Unit => 0,
            Type::I64
            | Type::F64
            | Type::Bool
            | Type::Handle { .. }
            | Type::Null
            | Type::Vec(_)
            | Type::Str
            | Type::Fn { .. } => 1,
            Type::Array(elem, n) if **elem == Type::Bool => u64::from(*n).div_ceil(8),
            Type::Array(elem, n) => elem.cells() * u64::from(*n),
        }
    }

    /// Bytes between two neighbouring elements of this type in an array: 1 for a `bool`
    /// (packed, see [`Type::cells`]), its cells' bytes for anything else.
    pub fn stride(&self) -> u64 {
        match self {
            Type::Bool => 1,
            ty => ty.cells() * 8,
        }
    }

    /// Number of scalars a value of this type holds (an array's leaves; 1 for a one-cell
    /// value, 0 for unit): what the checker's limits on arrays count, whatever their layout.
    pub fn scalars(&self) -> u64 {
        match self {
            Type::Unit => 0,
            Type::Array(elem, n) => elem.scalars().saturating_mul(u64::from(*n)),
            _ => 1,
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Unit => f.write_str("()"),
            Type::I64 => f.write_str("i64"),
            Type::F64 => f.write_str("f64"),
            Type::Bool => f.write_str("bool"),
            Type::Array(elem, n) => write!(f, "[{elem}; {n}]"),
            Type::Handle { name, nullable, .. } => {
                write!(f, "{name}{}", if *nullable { "?" } else { "" })
            }
            Type::Null => f.write_str("null"),
            Type::Vec(elem) => write!(f, "vec<{elem}>"),
            Type::Str => f.write_str("str"),
            Type::Fn { params, ret } => {
                f.write_str("fn(")?;
                for (i, p) in params.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{p}")?;
                }
                f.write_str(")")?;
                if **ret != Type::Unit {
                    write!(f, " -> {ret}")?;
                }
                Ok(())
            }
        }
    }
}

/// A whole checked module.
#[derive(Debug, Clone)]
pub struct Program {
    /// The source every span points into.
    pub source: Arc<SourceFile>,
    /// Module variables (`var`) and constants (`let`), in declaration order.
    pub globals: Vec<Global>,
    /// `native fn` declarations, each bound to a host table entry.
    pub natives: Vec<NativeImport>,
    /// Script functions, in declaration order, then the synthesized initializer.
    pub functions: Vec<Function>,
    /// The synthesized function (named `<init>`) that assigns every global its initializer.
    /// Its body is one `Assign` to a [`PlaceKind::Global`] per global, in declaration order,
    /// with the declaration's `=` as `op_span`; it is the only function that assigns `let`
    /// globals. Before it runs, every global holds its type's zero value.
    pub init: FuncId,
    /// `fn main()`, if the module has one.
    pub main: Option<FuncId>,
    /// Script classes, parents before their children.
    pub classes: Vec<Class>,
    /// How deeply the source nests ([`crate::lang::ast::Module::nesting`]): the HIR's
    /// expressions go about as deep, which tells a backend walking them recursively how much
    /// stack that takes (0 when unknown: the program was not parsed from source).
    pub nesting: u32,
}

impl Program {
    /// The function with this id.
    pub fn function(&self, id: FuncId) -> &Function {
        &self.functions[id.index()]
    }

    /// The class with this id.
    pub fn class(&self, id: ClassId) -> &Class {
        &self.classes[id.index()]
    }

    /// Look up a class by name.
    pub fn class_named(&self, name: &str) -> Option<ClassId> {
        self.classes
            .iter()
            .position(|c| c.name == name)
            .map(|i| ClassId(i as u32))
    }

    /// Look up a script function by name.
    pub fn function_named(&self, name: &str) -> Option<FuncId> {
        self.functions
            .iter()
            .position(|f| f.name == name)
            .map(|i| FuncId(i as u32))
    }
}

/// A module variable or constant.
#[derive(Debug, Clone)]
pub struct Global {
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: Type,
    /// `var` (true) or `let` (false).
    pub mutable: bool,
    /// The declaration.
    pub span: Span,
}

/// A `native fn` declaration, resolved against the host table.
#[derive(Debug, Clone)]
pub struct NativeImport {
    /// The script-side name (equal to the host function's name).
    pub name: String,
    /// The host function's id: its index into [`host_signatures`](super::host::host_signatures)
    /// (and so into the runtime's host table).
    pub host: usize,
    /// Parameter types (scalars only).
    pub params: Vec<Type>,
    /// Return type (a scalar or unit).
    pub ret: Type,
    /// The declaration.
    pub span: Span,
}

/// A script function.
#[derive(Debug, Clone)]
pub struct Function {
    /// Its name (`<init>` for the initializer).
    pub name: String,
    /// Number of parameters: locals `0..param_count` are the parameters, in order.
    pub param_count: u32,
    /// The return type ([`Type::Unit`] when none is written).
    pub ret: Type,
    /// Every local of the body, parameters first.
    pub locals: Vec<Local>,
    /// The body. A function returning non-unit ends every path with `return` (the checker
    /// guarantees it); a unit function may fall off the end.
    pub body: Block,
    /// The whole declaration.
    pub span: Span,
    /// The name in the declaration (where `StackExhausted` is reported).
    pub name_span: Span,
    /// For a method or static function: its class. A method's local 0 is `self` (a handle of
    /// that class, never null: the caller checked it).
    pub class: Option<ClassId>,
    /// For a lambda's body: the locals its captured values go to, in the order of the
    /// closure's cells (immutable, filled from the closure at entry and borrowed from it like
    /// parameters: the caller keeps the closure alive for the call). `None` for a function
    /// declared with `fn`.
    pub captures: Option<Vec<LocalId>>,
}

impl Function {
    /// A method (not a static function): local 0 is `self`.
    pub fn is_method(&self) -> bool {
        // `self` is a keyword: no other local can have the name.
        self.class.is_some()
            && self.param_count > 0
            && self.locals.first().is_some_and(|l| l.name == "self")
    }

    /// The body of a lambda (called through a closure, with its captures).
    pub fn is_lambda(&self) -> bool {
        self.captures.is_some()
    }

    /// Parameter types, in order.
    pub fn param_types(&self) -> impl Iterator<Item = &Type> {
        self.locals[..self.param_count as usize]
            .iter()
            .map(|l| &l.ty)
    }
}

/// A local variable or parameter.
#[derive(Debug, Clone)]
pub struct Local {
    /// Its name (locals in different scopes may share a name; ids differ).
    pub name: String,
    /// Its type.
    pub ty: Type,
    /// `var` (true) or `let`/parameter/loop variable (false).
    pub mutable: bool,
    /// The declaration.
    pub span: Span,
}

/// A sequence of statements (a scope).
#[derive(Debug, Clone, Default)]
pub struct Block {
    /// The statements, in order.
    pub stmts: Vec<Stmt>,
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
    /// `let x = e` / `var x: T = e`: initialize a fresh local.
    Let {
        /// The local being declared.
        local: LocalId,
        /// Its initializer.
        init: Expr,
    },
    /// `place = value`, or `place op= value` when `op` is set.
    Assign {
        /// Where to store.
        place: Place,
        /// The compound operator, if any (an arithmetic or bitwise [`BinOp`]).
        op: Option<BinOp>,
        /// The span of the operator token (`=` or `+=`...), where a compound `/=` by zero is
        /// reported.
        op_span: Span,
        /// The value.
        value: Expr,
    },
    /// An expression evaluated for its effects.
    Expr(Expr),
    /// `if cond { then } else { els }`; `else if` is an `els` block holding one `If`.
    If {
        /// The condition (bool).
        cond: Expr,
        /// Taken when true.
        then_block: Block,
        /// Taken when false.
        else_block: Option<Block>,
    },
    /// `while cond { body }`.
    While {
        /// The condition (bool).
        cond: Expr,
        /// The body.
        body: Block,
    },
    /// `for var in start..end { body }` over i64.
    ForRange {
        /// The loop variable (immutable, i64).
        var: LocalId,
        /// Inclusive start.
        start: Expr,
        /// Exclusive end.
        end: Expr,
        /// The body.
        body: Block,
    },
    /// `for var in start..end step k` or `for var in start..=end [step k]` over i64: `start`,
    /// `end`, then `step` are evaluated once; a step that is not positive raises
    /// `StepNotPositive` at `step_span` (the `step` word). `var` takes `start`, `start + k`, ...
    /// while it is below `end` (or at most `end` when `inclusive`); the loop ends before a step
    /// would pass `end`, so it never overflows (`0..=i64::MAX` ends).
    ForStep {
        /// The loop variable (immutable, i64).
        var: LocalId,
        /// The first value.
        start: Expr,
        /// The bound.
        end: Expr,
        /// `..=`: `end` is included.
        inclusive: bool,
        /// `step k` (`None`: 1).
        step: Option<Expr>,
        /// The `step` word (where a step that is not positive is reported).
        step_span: Span,
        /// The body.
        body: Block,
    },
    /// `for var in array { body }` over an array or a vec.
    ForEach {
        /// The loop variable (immutable, the element type).
        var: LocalId,
        /// The array or vec (evaluated once, iterated as a copy).
        array: Expr,
        /// The body.
        body: Block,
    },
    /// `break` out of the innermost loop.
    Break,
    /// `continue` the innermost loop.
    Continue,
    /// `return` or `return e`.
    Return(Option<Expr>),
}

/// An assignable location.
#[derive(Debug, Clone)]
pub struct Place {
    /// What it is.
    pub kind: PlaceKind,
    /// The type stored there.
    pub ty: Type,
    /// Where it is written.
    pub span: Span,
}

/// Assignable locations.
#[derive(Debug, Clone)]
pub enum PlaceKind {
    /// A mutable local.
    Local(LocalId),
    /// A mutable module variable (or, in `<init>` only, a constant being initialized).
    Global(GlobalId),
    /// A field of an object: `object` is evaluated and checked (null, stale) first, then the
    /// value, then the store. The cell is `state + 8*field` of the object's current state.
    Field {
        /// The object (a handle expression).
        object: Box<Expr>,
        /// The field's cell index.
        field: u32,
    },
    /// An element of an array or vec place; bounds-checked at the span of `index` (the
    /// subscript). See the module docs for the order.
    Index {
        /// The array.
        base: Box<Place>,
        /// The index (i64).
        index: Box<Expr>,
    },
}

/// An expression with its type and span.
#[derive(Debug, Clone)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Its checked type.
    pub ty: Type,
    /// Where it is.
    pub span: Span,
}

/// Expressions.
#[derive(Debug, Clone)]
pub enum ExprKind {
    /// An `i64` literal.
    Int(i64),
    /// An `f64` literal.
    Float(f64),
    /// A `bool` literal.
    Bool(bool),
    /// Read a local.
    Local(LocalId),
    /// Read a module variable or constant.
    Global(GlobalId),
    /// A unary operator.
    Unary(UnOp, Box<Expr>),
    /// A binary operator; both operands have the same type.
    Binary {
        /// The operator.
        op: BinOp,
        /// Span of the operator token (where division by zero is reported).
        op_span: Span,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
    },
    /// `&&` / `||`, short-circuit.
    Logical(LogicOp, Box<Expr>, Box<Expr>),
    /// `e as T`; the target is this expression's `ty`.
    Cast(Box<Expr>),
    /// A call of a script function.
    Call(FuncId, Vec<Expr>),
    /// A call of a host function.
    CallNative(NativeId, Vec<Expr>),
    /// `[a, b, c]`.
    ArrayLit(Vec<Expr>),
    /// `[e; N]`.
    ArrayRepeat(Box<Expr>, u32),
    /// `a[i]`; bounds-checked at this expression's span.
    Index(Box<Expr>, Box<Expr>),
    /// `a.len()` of an array, a vec or a string (an array is evaluated for its effects).
    Len(Box<Expr>),
    /// The builtin `assert(cond)`: raises `AssertionFailed` at this span when false.
    Assert(Box<Expr>),
    /// `null`.
    Null,
    /// `new C()`: a fresh object with every field at its initializer.
    New(ClassId),
    /// `o.f`: the handle is checked (null raises `NullHandle`, a destroyed object `StaleHandle`)
    /// at this expression's span, then cell `field` is read.
    Field(Box<Expr>, u32),
    /// `o.m(args)` of a non-virtual method: the receiver is evaluated and checked (at this
    /// expression's span), then the arguments, then `func` is called with the receiver first.
    MethodCall {
        /// The receiver.
        object: Box<Expr>,
        /// The method's function.
        func: FuncId,
        /// The arguments after `self`.
        args: Vec<Expr>,
    },
    /// `o.m(args)` of a virtual method: like `MethodCall`, but the function is the one the
    /// object's class has for `method` (its own or inherited override).
    VirtualCall {
        /// The receiver.
        object: Box<Expr>,
        /// The method name (slot indices are the runtime's, per class family).
        method: String,
        /// The implementation in the receiver's static class (its signature is every
        /// override's).
        func: FuncId,
        /// The arguments after `self`.
        args: Vec<Expr>,
    },
    /// A `C?` used where a `C` is needed: raises `NullHandle` at this span when null.
    NonNull(Box<Expr>),
    /// `e as? D` (and, compared with `null`, `e is D`): the handle `e` when its object's class
    /// is `D` or derives from it, else `null` (the reference `e` held is then given up). `null`
    /// gives `null`; a handle to a destroyed or detached object raises `StaleHandle` /
    /// `ObjectDetached` at this span, as any use of it does. The type is `D?`.
    Downcast(Box<Expr>, ClassId),
    /// `vec<T>()`: the empty vec (a zero cell).
    VecNew,
    /// `place.push(value)`: see the module docs for the order; the value moves into the vec.
    VecPush(Box<Place>, Box<Expr>),
    /// `place.pop()`: the last element, moved out; `PopEmpty` at this span when empty.
    VecPop(Box<Place>),
    /// A string literal's text (interpolations are `+` of [`ExprKind::ToStr`] parts).
    StrLit(String),
    /// A value shown as a string (an interpolation `${e}` of a non-`str` value).
    ToStr(Box<Expr>),
    /// A lambda expression: a new closure of lambda function `func` (its
    /// [`Function::captures`] locals) holding `captures`, evaluated left to right in the
    /// enclosing function when the expression runs (capture by value: each is a copy, owned by
    /// the closure).
    Closure {
        /// The lambda's body.
        func: FuncId,
        /// The captured values, in the order of the lambda's capture locals.
        captures: Vec<Expr>,
    },
    /// A call of a closure value: `callee` (of a [`Type::Fn`]) is evaluated first, then the
    /// arguments left to right; a closure cell of 0 raises `NullClosure` at the callee's span.
    CallClosure(Box<Expr>, Vec<Expr>),
    /// A math builtin on its arguments (evaluated left to right, [`Math::arity`] of them, of
    /// [`Math::ty`]); never raises.
    Math(Math, Vec<Expr>),
    /// `print(e)`: `e` shown (a `str` as it is, any other value as `"${e}"` shows it), then a
    /// newline, written to the program's output (`runtime::output`). Unit; never raises.
    Print(Box<Expr>),
    /// `s.byte(i)`: the string, then the index; byte `i` of its UTF-8 text (0–255), or
    /// `IndexOutOfRange` at this expression's span (whatever the checks setting).
    StrByte(Box<Expr>, Box<Expr>),
    /// `s.slice(a, b)`: the string, then `a`, then `b`; bytes `a..b` as a new string, or
    /// `SliceOutOfRange` / `NotCharBoundary` at this expression's span.
    StrSlice(Box<Expr>, Box<Expr>, Box<Expr>),
}

/// Unary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// `-x` (i64 wrapping, f64).
    Neg,
    /// `!b` (bool).
    Not,
    /// `~x` (i64).
    BitNot,
}

/// Binary operators (non-short-circuit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
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
    /// `&` (i64)
    BitAnd,
    /// `|` (i64)
    BitOr,
    /// `^` (i64)
    BitXor,
    /// `<<` (i64)
    Shl,
    /// `>>` (i64, arithmetic)
    Shr,
    /// `>>>` (i64, logical: zeros shift in)
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
}

impl BinOp {
    /// Comparison operators yield `bool`.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }

    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::UShr => ">>>",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
        }
    }
}

/// Short-circuit operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogicOp {
    /// `&&`
    And,
    /// `||`
    Or,
}
