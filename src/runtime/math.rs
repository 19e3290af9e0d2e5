//! The language's math builtins (`abs min max sqrt floor ceil round trunc sin cos tan atan2 exp
//! ln pow`), defined once: the interpreter calls these functions, and compiled code either
//! emits an instruction that gives the same bits (abs, min, max, sqrt, floor, ceil, trunc, and
//! `round` as a short instruction sequence) or calls the `hot_math_*` helper below, which is the
//! same Rust function. So every backend agrees bit for bit.
//!
//! # Semantics where Rust leaves a choice
//! - `min`/`max` on `f64` are IEEE 754-2019 `minimum`/`maximum`, what Cranelift's `fmin`/`fmax`
//!   compute without a call: NaN if either operand is NaN, and `-0.0` is below `0.0`. (Rust's
//!   `f64::min` instead returns the other operand when one is NaN, and either zero for `±0.0`.)
//! - `round` rounds half away from zero (`2.5` to `3.0`, `-0.5` to `-0.0`), as Rust's
//!   `f64::round`; Cranelift's `nearest` (ties to even) is not used for it.
//! - `abs` on `i64` wraps: `abs(i64::MIN)` is `i64::MIN`.
//! - `ln` is the natural logarithm; `pow` is `f64::powf`.

/// `abs(x)` on `i64` (wrapping).
pub fn abs_i64(x: i64) -> i64 {
    x.wrapping_abs()
}

/// `min(a, b)` on `f64`: NaN if either is NaN, `-0.0 < 0.0`.
pub fn min_f64(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == b {
        // Equal: only the zeros' signs can differ; the negative one is the smaller.
        if a.is_sign_negative() { a } else { b }
    } else if a < b {
        a
    } else {
        b
    }
}

/// `max(a, b)` on `f64`: NaN if either is NaN, `0.0 > -0.0`.
pub fn max_f64(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == b {
        if a.is_sign_positive() { a } else { b }
    } else if a > b {
        a
    } else {
        b
    }
}

/// `sin(x)`.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_math_sin(x: f64) -> f64 {
    x.sin()
}

/// `cos(x)`.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_math_cos(x: f64) -> f64 {
    x.cos()
}

/// `tan(x)`.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_math_tan(x: f64) -> f64 {
    x.tan()
}

/// `atan2(y, x)`.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_math_atan2(y: f64, x: f64) -> f64 {
    y.atan2(x)
}

/// `exp(x)`.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_math_exp(x: f64) -> f64 {
    x.exp()
}

/// `ln(x)`.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_math_ln(x: f64) -> f64 {
    x.ln()
}

/// `pow(x, y)`.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_math_pow(x: f64, y: f64) -> f64 {
    x.powf(y)
}

/// The math helpers compiled code imports: `(symbol, address)`.
pub fn helper_symbols() -> [(&'static str, *const u8); 7] {
    [
        ("hot_math_sin", hot_math_sin as *const u8),
        ("hot_math_cos", hot_math_cos as *const u8),
        ("hot_math_tan", hot_math_tan as *const u8),
        ("hot_math_atan2", hot_math_atan2 as *const u8),
        ("hot_math_exp", hot_math_exp as *const u8),
        ("hot_math_ln", hot_math_ln as *const u8),
        ("hot_math_pow", hot_math_pow as *const u8),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_and_max_order_zeros_and_keep_nan() {
        assert!(min_f64(0.0, -0.0).is_sign_negative());
        assert!(min_f64(-0.0, 0.0).is_sign_negative());
        assert!(max_f64(-0.0, 0.0).is_sign_positive());
        assert!(max_f64(0.0, -0.0).is_sign_positive());
        assert!(min_f64(f64::NAN, 1.0).is_nan() && max_f64(1.0, f64::NAN).is_nan());
        assert_eq!(min_f64(1.0, 2.0), 1.0);
        assert_eq!(max_f64(f64::NEG_INFINITY, 2.0), 2.0);
        assert_eq!(abs_i64(i64::MIN), i64::MIN);
    }
}
