//! Verdicts from intervals, by equivalence testing with an interval inside a band (the
//! confidence-interval form of Schuirmann's two one-sided tests, "A comparison of the two
//! one-sided tests procedure…", J. Pharmacokinet. Biopharm. 15, 1987):
//!
//! - `equal`: the CI of the median ratio lies entirely inside the band `[1/(1+b), 1+b]`
//!   (symmetric in log space; `b` defaults to 2 %). A 95 % CI inside the band is the 90 %-TOST
//!   decision at the 5 % level, so `equal` is conservative.
//! - `slower` / `faster`: otherwise, when the CI excludes 1.0.
//! - `unresolved`: neither — the data cannot tell, and the verdict says how much longer a run
//!   would need, from the CI half-width shrinking as 1/√(rounds).
//!
//! "No difference found" is never turned into `equal`.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::median_ci::MedianCi;
use crate::measure::units::{Picos, Ratio};

/// The default equivalence band (±2 %).
pub const DEFAULT_BAND: f64 = 0.02;

/// How B compares with A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The ratio's CI lies inside the equivalence band.
    Equal,
    /// B is slower than A: the ratio's CI lies above 1.0.
    Slower,
    /// B is faster than A: the ratio's CI lies below 1.0.
    Faster,
    /// The data cannot tell; see the explanation.
    Unresolved,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Equal => "equal",
            Verdict::Slower => "slower",
            Verdict::Faster => "faster",
            Verdict::Unresolved => "unresolved",
        })
    }
}

/// A ratio verdict with its numbers and one sentence for people.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RatioVerdict {
    /// The verdict.
    pub verdict: Verdict,
    /// Median of the per-round ratios B/A.
    pub ratio: Ratio,
    /// Its CI.
    pub low: Ratio,
    /// Its CI.
    pub high: Ratio,
    /// The band used (0.02 = ±2 %).
    pub band: f64,
    /// A sentence: the verdict with its numbers, and for `unresolved` what would resolve it.
    pub explanation: String,
}

/// The verdict for a CI of per-round natural-log ratios (B over A). `collect_secs` is how long
/// the collection that produced the CI ran, to phrase "run about 3x longer (--time 3)".
pub fn ratio_verdict(log_ci: &MedianCi, band: f64, collect_secs: f64) -> RatioVerdict {
    let lb = (1.0 + band).ln();
    let (lo, hi) = (log_ci.low, log_ci.high);
    let ci = log_ci.map(f64::exp);
    let pct = band * 100.0;
    let ci_text = format!("[{:.4}x, {:.4}x]", ci.low, ci.high);
    let (verdict, explanation) = if lo >= -lb && hi <= lb {
        let note = if lo > 0.0 || hi < 0.0 {
            " (a difference is resolved, but it is smaller than the band)"
        } else {
            ""
        };
        (
            Verdict::Equal,
            format!(
                "equal within ±{pct:.0}%: ratio {:.4}x, CI {ci_text}{note}",
                ci.estimate
            ),
        )
    } else if lo > 0.0 {
        (
            Verdict::Slower,
            format!("slower: {:.4}x, CI {ci_text}", ci.estimate),
        )
    } else if hi < 0.0 {
        (
            Verdict::Faster,
            format!("faster: {:.4}x, CI {ci_text}", ci.estimate),
        )
    } else {
        (
            Verdict::Unresolved,
            unresolved_sentence(lo, hi, lb, pct, &ci_text, collect_secs),
        )
    };
    RatioVerdict {
        verdict,
        ratio: Ratio(ci.estimate),
        low: Ratio(ci.low),
        high: Ratio(ci.high),
        band,
        explanation,
    }
}

fn unresolved_sentence(lo: f64, hi: f64, lb: f64, pct: f64, ci: &str, secs: f64) -> String {
    let w = (hi - lo) / 2.0;
    let c = (hi + lo) / 2.0;
    // Half-width needed: inside the band if the centre is inside it, else clear of 1.0.
    let needed = if c.abs() < lb { lb - c.abs() } else { c.abs() };
    let factor = (w / needed).powi(2);
    let what = format!("the CI {ci} straddles the ±{pct:.0}% band");
    if !factor.is_finite() || factor > 50.0 {
        format!(
            "unresolved: {what} and sits on its edge: no practical run length settles it; \
             widen the band or reduce noise (pin to a quiet CPU)"
        )
    } else {
        let f = (factor * 1.2).ceil().max(2.0);
        let t = (secs * f).ceil().max(1.0);
        format!(
            "unresolved: {what}: run about {f:.0}x longer (--time {t:.0}) or pin to a quiet CPU"
        )
    }
}

/// An absolute-difference verdict for ladder steps ("adds 0.9 ns [0.85, 0.95]").
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AbsVerdict {
    /// B costs more than A: the CI of the difference lies above zero.
    Adds {
        /// Median per-round difference.
        diff: Picos,
        /// CI low.
        low: Picos,
        /// CI high.
        high: Picos,
    },
    /// B costs less than A: the CI lies below zero.
    Saves {
        /// Median per-round difference (negative).
        diff: Picos,
        /// CI low.
        low: Picos,
        /// CI high.
        high: Picos,
    },
    /// The CI contains zero: any cost is within ±`within`.
    NoCostResolved {
        /// The larger of |CI low| and |CI high|.
        within: Picos,
    },
}

/// The absolute verdict for a CI of per-round differences in picoseconds per op.
pub fn abs_verdict(diff_ci: &MedianCi) -> AbsVerdict {
    let (diff, low, high) = (
        Picos(diff_ci.estimate),
        Picos(diff_ci.low),
        Picos(diff_ci.high),
    );
    if diff_ci.low > 0.0 {
        AbsVerdict::Adds { diff, low, high }
    } else if diff_ci.high < 0.0 {
        AbsVerdict::Saves { diff, low, high }
    } else {
        AbsVerdict::NoCostResolved {
            within: Picos(diff_ci.low.abs().max(diff_ci.high.abs())),
        }
    }
}

impl fmt::Display for AbsVerdict {
    /// Digits from [`super::digits`]: the CI's bounds never print alike unless they are, and a
    /// bound that rounds to zero is said as one (`±0.000` would promise more).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use super::digits::{ci_decimals, ci_half};
        let ns = |p: Picos| p.nanos();
        match *self {
            AbsVerdict::Adds { diff, low, high } => {
                let p = ci_decimals(ns(low), ns(high));
                write!(
                    f,
                    "adds {:.p$} ns [{:.p$}, {:.p$}]",
                    ns(diff),
                    ns(low),
                    ns(high)
                )
            }
            AbsVerdict::Saves { diff, low, high } => {
                let p = ci_decimals(ns(low), ns(high));
                write!(
                    f,
                    "saves {:.p$} ns [{:.p$}, {:.p$}]",
                    -ns(diff),
                    -ns(high),
                    -ns(low)
                )
            }
            AbsVerdict::NoCostResolved { within } => {
                write!(f, "no cost resolved: within {} ns", ci_half(ns(within)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ci(lo: f64, est: f64, hi: f64) -> MedianCi {
        MedianCi {
            estimate: est,
            low: lo,
            high: hi,
            coverage: 0.95,
            n: 100,
        }
    }

    #[test]
    fn unresolved_says_how_long() {
        let v = ratio_verdict(&ci(0.97f64.ln(), 1.0f64.ln(), 1.04f64.ln()), 0.02, 1.0);
        assert_eq!(v.verdict, Verdict::Unresolved);
        assert!(
            v.explanation.contains("[0.9700x, 1.0400x]"),
            "{}",
            v.explanation
        );
        assert!(v.explanation.contains("--time"), "{}", v.explanation);
    }

    #[test]
    fn abs_display() {
        let a = abs_verdict(&ci(850.0, 900.0, 950.0));
        assert_eq!(a.to_string(), "adds 0.90 ns [0.85, 0.95]");
        let z = abs_verdict(&ci(-30.0, 1.0, 40.0));
        assert_eq!(z.to_string(), "no cost resolved: within ±0.04 ns");
        // Identical rounds: a bound under what three decimals show.
        let zero = abs_verdict(&ci(-0.2, 0.0, 0.3));
        assert_eq!(zero.to_string(), "no cost resolved: within < ±0.001 ns");
    }
}
