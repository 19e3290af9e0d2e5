//! Verdicts over code layouts. Where a function's code falls relative to cache lines and pages
//! changes its speed (Mytkowicz et al., "Producing Wrong Data Without Doing Anything Obviously
//! Wrong!", ASPLOS 2009; Curtsinger & Berger's Stabilizer randomizes layout for this reason), so a
//! ratio measured with one placement describes that placement, not the code. With `K` layouts the
//! same comparison is measured `K` times in the same interleaved rounds, once per placement of
//! the script's code, and:
//!
//! - each round's log ratio is the mean over the layouts of that round's per-layout log ratios,
//!   so the estimate is the ratio of the code averaged over its placements;
//! - its interval is the sign-test interval of those round values (widened across blocks of
//!   rounds, as every interval in hotlab is), widened again by the between-layout term: the
//!   per-layout medians are `K` draws from the population of placements, so the mean over them
//!   carries a Student-t error `t(K-1) · sd / √K`, added in quadrature to each side;
//! - the layout spread is the largest per-layout ratio over the smallest, minus one.

use super::blocks;
use super::median_ci::{DEFAULT_LEVEL, MedianCi, sign_test_ci};
use super::summary::median;

/// The 97.5% quantile of Student's t with `df` degrees of freedom (a 95% two-sided term), for
/// df 1..=15; larger df get 15's, which is conservative.
fn t975(df: usize) -> f64 {
    const T: [f64; 15] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131,
    ];
    T[df.clamp(1, 15) - 1]
}

/// A log-ratio interval over layouts.
#[derive(Debug, Clone, PartialEq)]
pub struct LayoutInterval {
    /// The interval of the mean-over-layouts log ratio, with the between-layout term.
    pub ci: MedianCi,
    /// Each layout's median log ratio, in layout order (`NaN` for a layout with no rounds).
    pub per_layout: Vec<f64>,
    /// Largest per-layout ratio over the smallest, minus one (0.03 = 3%).
    pub spread: f64,
    /// The between-layout half-width added in quadrature (log units).
    pub layout_term: f64,
}

/// The interval for per-round, per-layout log ratios: `rounds[r][k]` is round `r`'s log ratio
/// at layout `k` (`None` when a sample of that pair was dropped). `None` when fewer than six
/// rounds have every layout.
pub fn layout_interval(rounds: &[Vec<Option<f64>>]) -> Option<LayoutInterval> {
    let k = rounds.first().map_or(0, Vec::len);
    if k == 0 {
        return None;
    }
    let complete: Vec<f64> = rounds
        .iter()
        .filter_map(|r| {
            let v: Option<Vec<f64>> = r.iter().copied().collect();
            v.map(|v| v.iter().sum::<f64>() / v.len() as f64)
        })
        .collect();
    let pooled = sign_test_ci(&complete, DEFAULT_LEVEL).map(|c| blocks::widened(&complete, c))?;
    let per_layout: Vec<f64> = (0..k)
        .map(|j| {
            let v: Vec<f64> = rounds.iter().filter_map(|r| r[j]).collect();
            if v.is_empty() { f64::NAN } else { median(&v) }
        })
        .collect();
    let finite: Vec<f64> = per_layout
        .iter()
        .copied()
        .filter(|m| m.is_finite())
        .collect();
    let (layout_term, spread) = if finite.len() >= 2 {
        let n = finite.len() as f64;
        let mean = finite.iter().sum::<f64>() / n;
        let var = finite.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let term = t975(finite.len() - 1) * var.sqrt() / n.sqrt();
        let max = finite.iter().copied().fold(f64::MIN, f64::max);
        let min = finite.iter().copied().fold(f64::MAX, f64::min);
        (term, (max - min).exp() - 1.0)
    } else {
        (0.0, 0.0)
    };
    let e = pooled.estimate;
    // The run-level term (`blocks::RUN_LEVEL`) too: the placements vary within this run, the
    // rest of what is constant for a run does not.
    let widen = |side: f64| (side.powi(2) + layout_term.powi(2) + blocks::RUN_LEVEL.powi(2)).sqrt();
    let ci = MedianCi {
        low: e - widen(e - pooled.low),
        high: e + widen(pooled.high - e),
        ..pooled
    };
    Some(LayoutInterval {
        ci,
        per_layout,
        spread,
        layout_term,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn rounds(offsets: &[f64], n: usize, noise: f64, seed: u64) -> Vec<Vec<Option<f64>>> {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                offsets
                    .iter()
                    .map(|o| Some(o + noise * (rng.random::<f64>() - 0.5)))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn one_layout_is_the_plain_interval() {
        let r = rounds(&[0.1], 200, 0.01, 1);
        let li = layout_interval(&r).unwrap();
        let plain: Vec<f64> = r.iter().map(|r| r[0].unwrap()).collect();
        let ci = blocks::across_runs(
            &plain,
            sign_test_ci(&plain, DEFAULT_LEVEL).unwrap(),
            blocks::RUN_LEVEL,
        );
        assert!((li.ci.low - ci.low).abs() < 1e-15 && (li.ci.high - ci.high).abs() < 1e-15);
        assert_eq!((li.ci.estimate, li.ci.n), (ci.estimate, ci.n));
        assert_eq!(li.spread, 0.0);
        assert_eq!(li.layout_term, 0.0);
    }

    #[test]
    fn layouts_that_differ_widen_the_interval_and_show_their_spread() {
        // Four placements at 1.00x, 1.05x, 1.00x and 1.05x of each other (log offsets).
        let a = 0.05f64.ln_1p();
        let offsets = [0.0, a, 0.0, a];
        let r = rounds(&offsets, 400, 0.002, 2);
        let li = layout_interval(&r).unwrap();
        assert!((li.spread - 0.05).abs() < 0.005, "{}", li.spread);
        // The estimate is the mean placement; its interval covers what a new placement may
        // bring, far wider than one placement's run-level interval.
        assert!((li.ci.estimate - a / 2.0).abs() < 0.002, "{:?}", li.ci);
        assert!(li.ci.low < 0.01 && li.ci.high > a - 0.01, "{:?}", li.ci);
        let one: Vec<Vec<Option<f64>>> = r.iter().map(|r| vec![r[0]]).collect();
        let single = layout_interval(&one).unwrap();
        assert!(
            li.ci.high - li.ci.low > 5.0 * (single.ci.high - single.ci.low),
            "{:?} vs {:?}",
            li.ci,
            single.ci
        );
    }

    #[test]
    fn layouts_that_agree_cost_little_width() {
        let r = rounds(&[0.2; 4], 400, 0.01, 3);
        let li = layout_interval(&r).unwrap();
        let pooled: Vec<f64> = r
            .iter()
            .map(|r| r.iter().map(|v| v.unwrap()).sum::<f64>() / 4.0)
            .collect();
        let base = blocks::widened(&pooled, sign_test_ci(&pooled, DEFAULT_LEVEL).unwrap());
        assert!(li.ci.low <= base.low && li.ci.high >= base.high);
        assert!(
            li.ci.high - li.ci.low < 2.0 * (base.high - base.low),
            "{:?} vs {base:?}",
            li.ci
        );
        assert!(li.spread < 0.01, "{}", li.spread);
    }

    #[test]
    fn rounds_missing_a_layout_are_left_out_of_the_pooled_values() {
        let mut r = rounds(&[0.0, 0.0], 50, 0.01, 4);
        for row in r.iter_mut().take(10) {
            row[1] = None;
        }
        let li = layout_interval(&r).unwrap();
        assert_eq!(li.ci.n, 40);
        let few: Vec<Vec<Option<f64>>> = (0..5).map(|_| vec![Some(0.0), None]).collect();
        assert_eq!(layout_interval(&few), None);
    }
}
