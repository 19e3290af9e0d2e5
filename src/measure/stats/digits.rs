//! How many digits a nanosecond figure and its CI are shown with: enough that a CI that is not
//! zero never reads as zero (`±0.00` would claim a precision the run does not have), and a CI
//! that rounds to zero is said to be below what is shown. One place, so the ladder table, the
//! REPL, the TUI's table and its waterfall all say the same thing.

/// Below this a half-width is shown as `< ±0.001`.
const SMALLEST: f64 = 0.0005;

/// Half a CI in ns, with its sign: `±0.34`, `±0.004` (three decimals under 0.01 ns), or
/// `< ±0.001` when it rounds to zero even then (identical rounds: the CI has no width).
pub fn ci_half(half_ns: f64) -> String {
    let half = half_ns.abs();
    if !half.is_finite() {
        "±?".into()
    } else if half < SMALLEST {
        "< ±0.001".into()
    } else {
        // Two decimals once they show it non-zero (0.0096 is `±0.01`, not `±0.010`).
        format!("±{half:.0$}", if half < 0.0095 { 3 } else { 2 })
    }
}

/// Decimals for a figure in ns: two, or three under 0.1 ns (hundredths must stay visible).
pub fn decimals(ns: f64) -> usize {
    if ns.abs() < 0.1 { 3 } else { 2 }
}

/// Decimals for an estimate and its CI `[low, high]`: [`decimals`] of the bound nearer zero,
/// and more (up to four) while the two bounds differ but would print alike.
pub fn ci_decimals(low: f64, high: f64) -> usize {
    let mut p = decimals(low.abs().min(high.abs()));
    while p < 4 && low != high && format!("{low:.p$}") == format!("{high:.p$}") {
        p += 1;
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ci_is_never_shown_as_zero() {
        assert_eq!(ci_half(0.25), "±0.25");
        assert_eq!(ci_half(-0.25), "±0.25");
        assert_eq!(ci_half(0.004), "±0.004");
        assert_eq!(ci_half(0.04), "±0.04");
        assert_eq!(ci_half(0.0099), "±0.01");
        assert_eq!(ci_half(0.0), "< ±0.001");
        assert_eq!(ci_half(0.0004), "< ±0.001");
        assert_eq!(ci_half(f64::NAN), "±?");
    }

    #[test]
    fn bounds_get_the_digits_that_tell_them_apart() {
        assert_eq!(ci_decimals(0.85, 0.95), 2);
        assert_eq!(ci_decimals(0.017, 0.018), 3);
        assert_eq!(ci_decimals(6.681, 6.684), 3);
        assert_eq!(ci_decimals(6.68, 6.68), 2);
        assert_eq!(ci_decimals(1.0, 1.000_01), 4);
    }
}
