//! Sizing and round order.
//!
//! - Sizing: one iteration count shared by all variants of a job, grown until the *fastest*
//!   variant's sample is far above the timer's precision (divan's rule), then jittered per round
//!   by a random factor (nanobench's defence against aliasing with periodic disturbances).
//! - Order: a Williams balanced Latin square (Williams, "Experimental designs balanced for the
//!   estimation of residual effects of treatments", Aust. J. Sci. Res. 2, 1949). Round `r` runs
//!   row `r mod rows`: every variant takes every position equally often, each variant follows
//!   every other equally often (first-order carry-over balance; odd `k` uses the square and its
//!   mirror, `2k` rows), and consecutive rounds never use the same order for `k ≥ 2`.

use rand::Rng;

use super::units::Picos;

/// Iteration count per sample above which sizing stops growing (about 10¹² iterations).
pub const MAX_ITERS: u64 = 1 << 40;

/// How sizing ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sizing {
    /// The shared iteration count.
    pub iters: u64,
    /// The fastest variant's sample at that count (net of overhead).
    pub fastest_sample: Picos,
    /// Probes it took.
    pub probes: u32,
}

/// Grows the shared iteration count until every variant's sample (as measured by `probe`,
/// which runs each variant once with `n` iterations and returns their net sample times) is at
/// least `target`. Returns `None` when `probe` does (cancelled).
pub fn size_iterations(
    target: Picos,
    mut probe: impl FnMut(u64) -> Option<Vec<Picos>>,
) -> Option<Sizing> {
    let mut n = 1u64;
    let mut probes = 0;
    loop {
        let times = probe(n)?;
        probes += 1;
        let fastest = times
            .iter()
            .copied()
            .fold(Picos(f64::INFINITY), |a, b| if b.0 < a.0 { b } else { a });
        if fastest.0 >= target.0 || n >= MAX_ITERS {
            return Some(Sizing {
                iters: n,
                fastest_sample: fastest,
                probes,
            });
        }
        // Jump straight to the estimate once the sample is a tenth of the target (then it is
        // well above precision and the estimate is good); below that, grow tenfold.
        let next = if fastest.0 >= target.0 / 10.0 {
            (n as f64 * target.0 / fastest.0 * 1.05).ceil() as u64
        } else {
            n.saturating_mul(10)
        };
        n = next.clamp(n + 1, MAX_ITERS);
    }
}

/// The per-round iteration count: `iters` times a uniform factor in `[1 - jitter, 1 + jitter]`,
/// at least 1.
pub fn jittered(iters: u64, jitter: f64, rng: &mut impl Rng) -> u64 {
    if jitter <= 0.0 {
        return iters;
    }
    let f = rng.random_range(-jitter..=jitter);
    ((iters as f64 * (1.0 + f)).round() as u64).max(1)
}

/// The rows of a Williams balanced Latin square for `k` variants (`k` rows for even `k`, `2k`
/// for odd `k`).
pub fn williams_square(k: usize) -> Vec<Vec<usize>> {
    if k == 0 {
        return Vec::new();
    }
    let first: Vec<usize> = (0..k)
        .map(|j| match j {
            0 => 0,
            j if j % 2 == 1 => j.div_ceil(2),
            j => k - j / 2,
        })
        .collect();
    let mut rows: Vec<Vec<usize>> = (0..k)
        .map(|i| first.iter().map(|&v| (v + i) % k).collect())
        .collect();
    if k % 2 == 1 && k > 1 {
        let mirrored: Vec<Vec<usize>> = rows
            .iter()
            .map(|r| r.iter().rev().copied().collect())
            .collect();
        rows.extend(mirrored);
    }
    rows
}

/// The order of variants in each round.
#[derive(Debug, Clone)]
pub struct RoundOrder {
    rows: Vec<Vec<usize>>,
}

impl RoundOrder {
    /// The Williams design for `k` variants.
    pub fn new(k: usize) -> RoundOrder {
        RoundOrder {
            rows: williams_square(k),
        }
    }
    /// The order of round `r`.
    pub fn order(&self, r: u64) -> &[usize] {
        &self.rows[(r % self.rows.len() as u64) as usize]
    }
    /// Rounds after which the design repeats.
    pub fn period(&self) -> usize {
        self.rows.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn williams_rows_are_permutations() {
        for k in 1..9 {
            for row in williams_square(k) {
                let mut s = row.clone();
                s.sort();
                assert_eq!(s, (0..k).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn sizing_grows_until_target() {
        // Each iteration costs 3 ps; target 1 µs.
        let s = size_iterations(Picos(1e6), |n| Some(vec![Picos(3.0 * n as f64)])).unwrap();
        assert!(s.iters as f64 * 3.0 >= 1e6);
        assert!(s.iters as f64 * 3.0 < 1.2e6, "{s:?}");
    }
}
