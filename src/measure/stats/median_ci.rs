//! A distribution-free confidence interval for a median from order statistics: the interval
//! inverted from the sign test (Hollander, Wolfe & Chicken, "Nonparametric Statistical
//! Methods", 3rd ed., 2014, §3.6; Conover, "Practical Nonparametric Statistics", §3.2).
//!
//! For `n` independent values, the number below the true median is Binomial(n, ½). With `k` the
//! largest integer such that `P(B ≤ k-1) ≤ α/2`, the interval `[x₍k₎, x₍n-k+1₎]` covers the
//! median with probability `1 - 2·P(B ≤ k-1) ≥ 1 - α` for *any* continuous distribution — no
//! normality, no bootstrap resampling. The exact coverage is reported; it lies a little above
//! the nominal level for small `n` and approaches it as `n` grows. It needs `n ≥ 6` at 95 %.
//!
//! Applied to per-round differences and per-round log-ratios, it gives intervals for the median
//! difference and (after `exp`, which preserves order) for the median ratio.

use serde::Serialize;

use super::summary::{quantile_sorted, sorted};

/// The nominal coverage used throughout hotlab.
pub const DEFAULT_LEVEL: f64 = 0.95;

/// A median with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MedianCi {
    /// The sample median.
    pub estimate: f64,
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// Exact coverage of this interval (≥ the nominal level asked for).
    pub coverage: f64,
    /// Number of values.
    pub n: usize,
}

impl MedianCi {
    /// Half the interval's width.
    pub fn half_width(&self) -> f64 {
        (self.high - self.low) / 2.0
    }
    /// Applies an increasing function to all three points (e.g. `exp` for log-ratios).
    pub fn map(&self, f: impl Fn(f64) -> f64) -> MedianCi {
        MedianCi {
            estimate: f(self.estimate),
            low: f(self.low),
            high: f(self.high),
            ..*self
        }
    }
}

/// The 1-based order-statistic index `k` and the exact coverage for `n` values at `level`;
/// `None` when `n` is too small for any interval at that level.
pub fn order_index(n: usize, level: f64) -> Option<(usize, f64)> {
    let alpha_half = (1.0 - level) / 2.0;
    // cdf(j) = P(B ≤ j), accumulated from log-pmfs so large n does not underflow 0.5^n.
    let ln_half = 0.5f64.ln();
    let mut ln_pmf = n as f64 * ln_half; // P(B = 0)
    let mut cdf = 0.0;
    let mut best: Option<(usize, f64)> = None;
    for j in 0..n.div_ceil(2) {
        cdf += ln_pmf.exp();
        if cdf > alpha_half {
            break;
        }
        // P(B ≤ j) ≤ α/2, so k = j + 1 works.
        best = Some((j + 1, 1.0 - 2.0 * cdf));
        ln_pmf += ((n - j) as f64 / (j + 1) as f64).ln();
    }
    best
}

/// The sign-test interval for the median of `values` at `level` (e.g. 0.95); `None` when there
/// are too few values (NaNs are ignored).
pub fn sign_test_ci(values: &[f64], level: f64) -> Option<MedianCi> {
    let s = sorted(values);
    let n = s.len();
    let (k, coverage) = order_index(n, level)?;
    Some(MedianCi {
        estimate: quantile_sorted(&s, 0.5),
        low: s[k - 1],
        high: s[n - k],
        coverage,
        n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_indices() {
        // n = 10 at 95 %: k = 2, coverage 1 - 2·11/1024 ≈ 0.9785 (Conover table A3).
        let (k, c) = order_index(10, 0.95).unwrap();
        assert_eq!(k, 2);
        assert!((c - (1.0 - 22.0 / 1024.0)).abs() < 1e-12);
        assert!(order_index(5, 0.95).is_none());
        // Large n: k ≈ n/2 - 1.96·√n/2.
        let (k, c) = order_index(10_000, 0.95).unwrap();
        assert!((4900..=4903).contains(&k), "{k}");
        assert!((0.95..0.952).contains(&c));
    }
}
