//! Outliers by Tukey's fences (Tukey, "Exploratory Data Analysis", 1977), drawn as criterion's
//! `tukey.rs` draws them:
//!
//! ```text
//!          LS       |   LM    |           |    HM   |       HS
//!  ---------|-------|---------|-----------|---------|-------|---------
//!        q1-3iqr  q1-1.5iqr   q1          q3    q3+1.5iqr  q3+3iqr
//! ```
//!
//! Outliers are counted and reported, never silently dropped: the medians the verdicts rest on
//! are robust to them already.

use serde::Serialize;

use super::summary::quantile_sorted;

/// Counts of values beyond each fence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Outliers {
    /// Below `q1 - 3 iqr`.
    pub low_severe: usize,
    /// Between `q1 - 3 iqr` and `q1 - 1.5 iqr`.
    pub low_mild: usize,
    /// Between `q3 + 1.5 iqr` and `q3 + 3 iqr`.
    pub high_mild: usize,
    /// Above `q3 + 3 iqr`.
    pub high_severe: usize,
}

impl Outliers {
    /// All outliers.
    pub fn total(&self) -> usize {
        self.low_severe + self.low_mild + self.high_mild + self.high_severe
    }
}

/// Classifies ascending `sorted` values against Tukey's fences.
pub fn classify(sorted: &[f64]) -> Outliers {
    let q1 = quantile_sorted(sorted, 0.25);
    let q3 = quantile_sorted(sorted, 0.75);
    let iqr = q3 - q1;
    let (ls, lm, hm, hs) = (
        q1 - 3.0 * iqr,
        q1 - 1.5 * iqr,
        q3 + 1.5 * iqr,
        q3 + 3.0 * iqr,
    );
    let mut o = Outliers::default();
    for &x in sorted {
        if x < ls {
            o.low_severe += 1;
        } else if x < lm {
            o.low_mild += 1;
        } else if x > hs {
            o.high_severe += 1;
        } else if x > hm {
            o.high_mild += 1;
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences() {
        let mut v: Vec<f64> = (0..100).map(|i| 100.0 + (i % 10) as f64).collect();
        v.extend([200.0, 118.0, 50.0]);
        v.sort_by(f64::total_cmp);
        let o = classify(&v);
        assert_eq!((o.high_severe, o.low_severe, o.total()), (1, 1, 3));
    }
}
