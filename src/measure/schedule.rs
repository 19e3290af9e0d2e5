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
    /// A variant whose time did not grow with the count: sizing stopped there, since no count
    /// would make its sample long enough (`run(n)` that does not run n iterations).
    pub flat: Option<FlatWork>,
}

/// A variant whose sample time did not grow with the count (see [`size_iterations`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlatWork {
    /// The variant's index.
    pub variant: usize,
    /// The smallest count of the window: at `to` the variant took at most [`FLAT_GROWTH`]
    /// times as long as here (times below the noise floor counting as the floor).
    pub from: u64,
    /// The largest.
    pub to: u64,
}

/// Sizing calls a variant flat by either of two rules, both of which a disturbed probe can
/// only delay (a disturbance adds time, so it makes work look *less* flat):
///
/// - *Ratio*: its times over a window of counts growing this much (seven tenfold probes) are
///   all above the noise floor (the target times [`NOISE_SHARE`]) and stay within
///   [`FLAT_GROWTH`] of each other. Linear work cannot pass: a million iterations of even the
///   cheapest loop body take far longer than a call's fixed cost. (A thousand did not: a
///   volatile field loop at 0.2 ns per iteration with a 60 ns call, an allocation and a sink,
///   grows only 4x from n = 1 to n = 1000, and was called flat in about one bench run of
///   three.) This tells flat work with a measurable fixed cost after seven probes, the same
///   count at which the per-iteration rule decides at the default target.
/// - *Per iteration*: at a count where [`FLAT_PER_ITER`] per iteration is well above the noise
///   floor (ten floors), the variant took less than that. No work done per iteration is that
///   cheap. This tells flat work whose net time is noise: once the timer's overhead is
///   subtracted it scatters around zero, even below it, so no window of it is within a ratio
///   (the ratio rule alone let sizing grow the count until the *other* variants' probes took
///   minutes). At the default target it decides by a count of a million.
pub const FLAT_SPAN: u64 = 1_000_000;
/// The tenfold probes in the ratio rule's window: from one end of [`FLAT_SPAN`] to the other.
const FLAT_WINDOW: usize = FLAT_SPAN.ilog10() as usize + 1;
/// See [`FLAT_SPAN`].
pub const FLAT_GROWTH: f64 = 4.0;
/// The share of the sizing target below which a probe's time is noise: the default target is
/// a thousand timer precisions (see `Settings::precision_factor`), so the floor is one.
pub const NOISE_SHARE: f64 = 1e-3;
/// Half a picosecond: the per-iteration time below which work does not grow with n. The
/// fastest real loop body (a vectorized byte add, 64 per cycle at 5 GHz) takes 3 ps.
pub const FLAT_PER_ITER: Picos = Picos(0.5);

/// The first variant whose times in `history` (oldest first, one entry per probe) are flat by
/// the ratio rule over its last [`FLAT_WINDOW`] tenfold probes, or by the per-iteration rule at its last
/// probe (see [`FLAT_SPAN`]).
fn flat_variant(history: &[(u64, Vec<Picos>)], floor: f64) -> Option<FlatWork> {
    let (last_n, last) = history.last()?;
    let per_iter_bound = *last_n as f64 * FLAT_PER_ITER.0;
    if per_iter_bound >= 10.0 * floor
        && let Some(variant) = (0..last.len()).find(|&v| last[v].0 < per_iter_bound)
    {
        // The smallest count at which it took at least a FLAT_GROWTH-th of its last time
        // (times below the floor count as the floor: noise is as long as any of it).
        let from = history
            .iter()
            .find(|(_, t)| t[variant].0.max(floor) * FLAT_GROWTH >= last[variant].0)
            .map_or(*last_n, |(n, _)| *n);
        return Some(FlatWork {
            variant,
            from,
            to: *last_n,
        });
    }
    let window = history
        .len()
        .checked_sub(FLAT_WINDOW)
        .map(|i| &history[i..])?;
    let (from_n, to_n) = (window[0].0, window[FLAT_WINDOW - 1].0);
    if to_n / from_n.max(1) < FLAT_SPAN {
        return None;
    }
    (0..last.len())
        .find(|&v| {
            let times = window.iter().map(|(_, t)| t[v].0);
            let (lo, hi) = times.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), t| {
                (lo.min(t), hi.max(t))
            });
            lo >= floor && hi <= lo * FLAT_GROWTH
        })
        .map(|variant| FlatWork {
            variant,
            from: from_n,
            to: to_n,
        })
}

/// Grows the shared iteration count until every variant's sample (as measured by `probe`,
/// which runs each variant once with `n` iterations and returns their net sample times) is at
/// least `target`, or a variant's time does not grow with the count (`flat`: no count would
/// make its sample long enough). Returns `None` when `probe` does (cancelled).
pub fn size_iterations(
    target: Picos,
    mut probe: impl FnMut(u64) -> Option<Vec<Picos>>,
) -> Option<Sizing> {
    let floor = (target.0 * NOISE_SHARE).max(1.0);
    let mut n = 1u64;
    let mut probes = 0;
    // The tenfold probes so far, to tell work that does not grow with n.
    let mut tenfold: Vec<(u64, Vec<Picos>)> = Vec::new();
    loop {
        let times = probe(n)?;
        probes += 1;
        let fastest = times
            .iter()
            .copied()
            .fold(Picos(f64::INFINITY), |a, b| if b.0 < a.0 { b } else { a });
        let done = fastest.0 >= target.0 || n >= MAX_ITERS;
        let flat = if done {
            None
        } else {
            tenfold.push((n, times));
            flat_variant(&tenfold, floor)
        };
        if done || flat.is_some() {
            return Some(Sizing {
                iters: n,
                fastest_sample: fastest,
                probes,
                flat,
            });
        }
        // Jump straight to the estimate once the sample is a tenth of the target (then it is
        // well above precision and the estimate is good); below that, grow tenfold.
        let next = if fastest.0 >= target.0 / 10.0 {
            tenfold.clear();
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
        assert_eq!(s.flat, None);
    }

    /// The default target: a thousand precisions of a 20 ns timer (noise floor 20 ns).
    const TARGET: Picos = Picos(20e6);

    #[test]
    fn sizing_stops_at_work_that_does_not_grow_with_n() {
        // The second variant takes 1 µs whatever n is (above the per-iteration rule's bound
        // at a million); the first 1 ns per iteration.
        let s = size_iterations(TARGET, |n| Some(vec![Picos(1e3 * n as f64), Picos(1e6)])).unwrap();
        let flat = s.flat.expect("flat work is told");
        assert_eq!(flat.variant, 1);
        assert_eq!((flat.from, flat.to), (1, 1_000_000));
        assert_eq!(s.probes, 7);
    }

    #[test]
    fn a_cheap_loop_behind_a_costly_call_is_not_flat() {
        // bench's field loop twin: 0.2 ns per iteration behind a 60 ns call (an allocation, a
        // sink), so n = 1000 takes only 4.3 times n = 1; the old thousandfold window called it
        // flat whenever noise shaved a few ns off n = 1000.
        let noise = [0.0, 4e3, -2e3, 1e3];
        let mut i = 0;
        let s = size_iterations(TARGET, |n| {
            i += 1;
            Some(vec![Picos(
                60e3 + 200.0 * n as f64 - noise[i % noise.len()],
            )])
        })
        .unwrap();
        assert_eq!(s.flat, None, "{s:?}");
        assert!(s.iters as f64 * 200.0 >= TARGET.0 * 0.9, "{s:?}");
    }

    #[test]
    fn flat_work_lost_in_the_noise_is_told_by_a_million() {
        // Net of the timer's overhead, a call that ignores n scatters around zero (some probes
        // negative); the other variant is linear. Each probe is disturbed differently.
        let noise = [-3e3, 5e3, 0.0, 12e3, -8e3, 2e3, 30e3, -1e3];
        let mut i = 0;
        let s = size_iterations(TARGET, |n| {
            i += 1;
            Some(vec![Picos(noise[i % noise.len()]), Picos(1e3 * n as f64)])
        })
        .unwrap();
        let flat = s.flat.expect("flat work is told");
        assert_eq!(flat.variant, 0);
        assert_eq!((flat.from, flat.to), (1, 1_000_000));
        assert_eq!(s.probes, 7);
    }

    #[test]
    fn flat_work_longer_than_a_tenth_of_the_target_is_told() {
        // 5 µs whatever n is: sizing jumps to estimates that never reach the target.
        let s = size_iterations(TARGET, |_| Some(vec![Picos(5e6)])).unwrap();
        let flat = s.flat.expect("flat work is told");
        assert_eq!(flat.variant, 0);
        assert!(flat.to < 1 << 30, "{s:?}");
    }

    #[test]
    fn the_fastest_linear_loop_is_not_flat_however_noisy() {
        // 3 ps per iteration (a vectorized byte add), a call costing nothing net, and probes
        // disturbed by up to 30 ns.
        let noise = [-3e3, 5e3, 0.0, 12e3, -8e3, 2e3, 30e3, -1e3];
        let mut i = 0;
        let s = size_iterations(TARGET, |n| {
            i += 1;
            Some(vec![Picos(3.0 * n as f64 + noise[i % noise.len()])])
        })
        .unwrap();
        assert_eq!(s.flat, None);
        assert!(s.iters as f64 * 3.0 >= TARGET.0 * 0.9, "{s:?}");
    }

    #[test]
    fn one_disturbed_probe_does_not_make_linear_work_flat() {
        // 1 ns per iteration plus a 50 ns call; the probe at n = 10 was disturbed (5 µs).
        let s = size_iterations(Picos(1e9), |n| {
            let t = 50e3 + 1e3 * n as f64;
            Some(vec![Picos(if n == 10 { 5e6 } else { t })])
        })
        .unwrap();
        assert_eq!(s.flat, None);
        assert!(s.iters >= 1_000_000, "{s:?}");
    }
}
