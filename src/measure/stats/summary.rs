//! Robust location and spread: median, MAD, min, max, p10/p90.
//!
//! Quantiles interpolate linearly between order statistics (Hyndman & Fan, "Sample quantiles
//! in statistical packages", Am. Stat. 50(4), 1996, definition 7 — R's and NumPy's default).
//! MAD is the raw median absolute deviation from the median (not scaled by 1.4826), so
//! `MAD / median` reads as a typical relative deviation; nanobench flags results whose relative
//! spread exceeds a few percent as unstable, and so do we ([`UNSTABLE_MAD_RATIO`]).

use serde::Serialize;

/// Relative spread (MAD / median) above which a variant is flagged unstable.
pub const UNSTABLE_MAD_RATIO: f64 = 0.03;

/// Quantile `q` in `[0, 1]` of ascending `sorted` data (type 7); NaN when empty.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
            let lo = h.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
        }
    }
}

/// Ascending copy of `values` without NaNs.
pub fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The median of `values` (NaN when empty).
pub fn median(values: &[f64]) -> f64 {
    quantile_sorted(&sorted(values), 0.5)
}

/// Location and spread of one sample set, in the unit of its input.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Median.
    pub median: f64,
    /// Median absolute deviation from the median (raw).
    pub mad: f64,
    /// Smallest value.
    pub min: f64,
    /// 10th percentile.
    pub p10: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Largest value.
    pub max: f64,
}

impl Summary {
    /// `MAD / |median|` (infinite for a zero median).
    pub fn mad_ratio(&self) -> f64 {
        if self.median == 0.0 {
            f64::INFINITY
        } else {
            self.mad / self.median.abs()
        }
    }

    /// Whether the spread is above [`UNSTABLE_MAD_RATIO`].
    pub fn unstable(&self) -> bool {
        self.mad_ratio() > UNSTABLE_MAD_RATIO
    }
}

/// Summarises `values`; `None` when there are none (NaNs are ignored).
pub fn summarize(values: &[f64]) -> Option<Summary> {
    let s = sorted(values);
    if s.is_empty() {
        return None;
    }
    let median = quantile_sorted(&s, 0.5);
    let dev = sorted(&s.iter().map(|x| (x - median).abs()).collect::<Vec<_>>());
    Some(Summary {
        n: s.len(),
        median,
        mad: quantile_sorted(&dev, 0.5),
        min: s[0],
        p10: quantile_sorted(&s, 0.1),
        p90: quantile_sorted(&s, 0.9),
        max: s[s.len() - 1],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_summary() {
        let s = summarize(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!((s.median, s.mad, s.min, s.max), (3.0, 1.0, 1.0, 5.0));
        assert!((s.p10 - 1.4).abs() < 1e-12);
        assert!(summarize(&[]).is_none());
    }
}
