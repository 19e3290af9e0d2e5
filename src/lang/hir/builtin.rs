//! The language's builtin functions: math on numbers (see `runtime::math` for their exact
//! semantics, shared by every backend).

use super::Type;

/// A math builtin, resolved to the operand type: `abs(x)` on an `i64` is [`Math::AbsI`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Math {
    /// `abs(i64)`, wrapping (`abs(i64::MIN)` is `i64::MIN`).
    AbsI,
    /// `min(i64, i64)`.
    MinI,
    /// `max(i64, i64)`.
    MaxI,
    /// `abs(f64)`: the sign bit cleared.
    AbsF,
    /// `min(f64, f64)`: IEEE 754-2019 `minimum` (NaN wins, `-0.0 < 0.0`).
    MinF,
    /// `max(f64, f64)`: IEEE 754-2019 `maximum`.
    MaxF,
    /// `sqrt(f64)`.
    Sqrt,
    /// `floor(f64)`.
    Floor,
    /// `ceil(f64)`.
    Ceil,
    /// `round(f64)`: half away from zero.
    Round,
    /// `trunc(f64)`: toward zero.
    Trunc,
    /// `sin(f64)`.
    Sin,
    /// `cos(f64)`.
    Cos,
    /// `tan(f64)`.
    Tan,
    /// `atan2(y: f64, x: f64)`.
    Atan2,
    /// `exp(f64)`.
    Exp,
    /// `ln(f64)`: the natural logarithm.
    Ln,
    /// `pow(x: f64, y: f64)`.
    Pow,
}

impl Math {
    /// Every builtin's name as written; `abs`, `min` and `max` take `i64` or `f64`.
    pub const NAMES: [&'static str; 15] = [
        "abs", "min", "max", "sqrt", "floor", "ceil", "round", "trunc", "sin", "cos", "tan",
        "atan2", "exp", "ln", "pow",
    ];

    /// The builtin `name` on operands of type `operand` (the first argument's), if there is
    /// one; `Err` with the types it takes when `name` is a math builtin but not on that type.
    pub fn resolve(name: &str, operand: &Type) -> Option<Result<Math, &'static str>> {
        let int = *operand == Type::I64;
        let float = *operand == Type::F64;
        let (m, ok, takes) = match name {
            "abs" if int => (Math::AbsI, true, ""),
            "min" if int => (Math::MinI, true, ""),
            "max" if int => (Math::MaxI, true, ""),
            "abs" => (Math::AbsF, float, "`i64` or `f64`"),
            "min" => (Math::MinF, float, "`i64` or `f64`"),
            "max" => (Math::MaxF, float, "`i64` or `f64`"),
            "sqrt" => (Math::Sqrt, float, "`f64`"),
            "floor" => (Math::Floor, float, "`f64`"),
            "ceil" => (Math::Ceil, float, "`f64`"),
            "round" => (Math::Round, float, "`f64`"),
            "trunc" => (Math::Trunc, float, "`f64`"),
            "sin" => (Math::Sin, float, "`f64`"),
            "cos" => (Math::Cos, float, "`f64`"),
            "tan" => (Math::Tan, float, "`f64`"),
            "atan2" => (Math::Atan2, float, "`f64`"),
            "exp" => (Math::Exp, float, "`f64`"),
            "ln" => (Math::Ln, float, "`f64`"),
            "pow" => (Math::Pow, float, "`f64`"),
            _ => return None,
        };
        Some(if ok { Ok(m) } else { Err(takes) })
    }

    /// How many arguments it takes.
    pub fn arity(self) -> usize {
        match self {
            Math::MinI | Math::MaxI | Math::MinF | Math::MaxF | Math::Atan2 | Math::Pow => 2,
            _ => 1,
        }
    }

    /// Its operands' (and result's) type.
    pub fn ty(self) -> Type {
        match self {
            Math::AbsI | Math::MinI | Math::MaxI => Type::I64,
            _ => Type::F64,
        }
    }

    /// Its name as written.
    pub fn name(self) -> &'static str {
        match self {
            Math::AbsI | Math::AbsF => "abs",
            Math::MinI | Math::MinF => "min",
            Math::MaxI | Math::MaxF => "max",
            Math::Sqrt => "sqrt",
            Math::Floor => "floor",
            Math::Ceil => "ceil",
            Math::Round => "round",
            Math::Trunc => "trunc",
            Math::Sin => "sin",
            Math::Cos => "cos",
            Math::Tan => "tan",
            Math::Atan2 => "atan2",
            Math::Exp => "exp",
            Math::Ln => "ln",
            Math::Pow => "pow",
        }
    }
}
