//! Intervals that hold across runs. The sign-test interval (`median_ci`) treats rounds as
//! independent; on a real machine they are not: the clock, the other tenants of the host and
//! the caches drift, so neighbouring rounds share an offset, and the interval of one run can
//! exclude where the next run lands. The remedy used here is the batch-means method of
//! simulation output analysis (Law & Kelton, "Simulation Modeling and Analysis", §9.5.3): the
//! values, in collection order, are cut into contiguous blocks; the block medians are close to
//! independent even when rounds are not, and a Student-t interval over them
//! (`t(B-1) · sd / √B`, at 99%) measures the slow variation. The interval reported is the union of the
//! sign-test interval and this one, so it is never narrower than before and widens exactly when
//! the run drifted.

use super::median_ci::MedianCi;
use super::summary::median;

/// Fewest values per block.
pub const MIN_BLOCK: usize = 8;
/// Most blocks.
pub const MAX_BLOCKS: usize = 10;
/// Fewest blocks for a between-block term (with fewer, the interval is left as it is).
pub const MIN_BLOCKS: usize = 4;

/// The 99.5% quantile of Student's t with `df` degrees of freedom (df 3..=9, the block counts
/// used; a larger `df` gets 9's, which is conservative). The between-block term is a 99%
/// interval: block medians are only nearly independent, and with a 95% term the union covered
/// 92% of drifting synthetic runs (the test below), short of the 19 in 20 asked of it.
fn t995(df: usize) -> f64 {
    const T: [f64; 7] = [5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250];
    T[df.clamp(3, 9) - 3]
}

/// The between-block interval for `values` in collection order: the mean of the block
/// medians ± its Student-t half-width, and the block count; `None` when there are too few
/// values for [`MIN_BLOCKS`] blocks of [`MIN_BLOCK`].
pub fn block_interval(values: &[f64]) -> Option<(f64, f64, usize)> {
    let n = values.len();
    let b = (n / MIN_BLOCK).min(MAX_BLOCKS);
    if b < MIN_BLOCKS {
        return None;
    }
    let medians: Vec<f64> = (0..b)
        .map(|i| {
            let end = if i + 1 == b { n } else { (i + 1) * n / b };
            median(&values[i * n / b..end])
        })
        .collect();
    let mean = medians.iter().sum::<f64>() / b as f64;
    let var = medians.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (b - 1) as f64;
    let hw = t995(b - 1) * var.sqrt() / (b as f64).sqrt();
    Some((mean - hw, mean + hw, b))
}

/// `ci` (a sign-test interval of `values`' median) widened to cover the between-block
/// interval too. The estimate stays the median of all values.
pub fn widened(values: &[f64], ci: MedianCi) -> MedianCi {
    match block_interval(values) {
        Some((low, high, _)) => MedianCi {
            low: ci.low.min(low),
            high: ci.high.max(high),
            ..ci
        },
        None => ci,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::stats::median_ci::{DEFAULT_LEVEL, sign_test_ci};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// A run of `n` rounds around `truth` whose rounds drift: an offset shared by stretches of
    /// 20 rounds (the machine's state changing now and then), plus independent noise.
    fn drifting_run(rng: &mut StdRng, truth: f64, n: usize) -> Vec<f64> {
        let mut offset = 0.0;
        (0..n)
            .map(|i| {
                if i % 20 == 0 {
                    offset = rng.random_range(-1.0..1.0) * 4e-4;
                }
                truth + offset + rng.random_range(-1.0..1.0) * 1e-4
            })
            .collect()
    }

    fn covers(ci: &MedianCi, truth: f64) -> bool {
        ci.low <= truth && truth <= ci.high
    }

    #[test]
    fn on_drifting_runs_the_widened_interval_covers_and_the_sign_test_alone_does_not() {
        let mut rng = StdRng::seed_from_u64(7);
        let truth = 1.25f64.ln();
        let (mut plain, mut wide) = (0, 0);
        let runs = 400;
        for _ in 0..runs {
            let v = drifting_run(&mut rng, truth, 200);
            let ci = sign_test_ci(&v, DEFAULT_LEVEL).unwrap();
            plain += covers(&ci, truth) as usize;
            wide += covers(&widened(&v, ci), truth) as usize;
        }
        // The sign test treats the 200 rounds as independent: far too narrow.
        assert!(plain < runs * 70 / 100, "sign test covered {plain}/{runs}");
        // Batch means: at least 95% (19 of 20).
        assert!(wide >= runs * 95 / 100, "widened covered {wide}/{runs}");
    }

    #[test]
    fn on_independent_rounds_the_interval_barely_changes() {
        let mut rng = StdRng::seed_from_u64(11);
        let mut ratio_sum = 0.0;
        let runs = 200;
        for _ in 0..runs {
            let v: Vec<f64> = (0..200).map(|_| rng.random_range(-1.0..1.0)).collect();
            let ci = sign_test_ci(&v, DEFAULT_LEVEL).unwrap();
            let w = widened(&v, ci);
            ratio_sum += (w.high - w.low) / (ci.high - ci.low);
        }
        let mean = ratio_sum / runs as f64;
        // Never narrower; with no drift about 1.5x the sign-test interval (the 99% block term
        // over 10 blocks): the price of an interval that holds for the next run.
        assert!((1.0..1.6).contains(&mean), "mean widening {mean}");
    }

    #[test]
    fn few_values_have_no_block_term() {
        assert!(block_interval(&[1.0; 31]).is_none());
        assert_eq!(block_interval(&[1.0; 32]).unwrap(), (1.0, 1.0, 4));
        assert_eq!(block_interval(&[1.0; 1000]).unwrap().2, MAX_BLOCKS);
    }
}
