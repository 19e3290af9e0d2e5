//! Statistics on synthetic samples: verdicts for equal, +1 %, +5 %, heavy-tailed and
//! outlier-ridden data, and the coverage of the sign-test interval over many trials.

use hotlab::measure::stats::median_ci::{DEFAULT_LEVEL, sign_test_ci};
use hotlab::measure::stats::summary::{self, summarize};
use hotlab::measure::stats::tukey;
use hotlab::measure::stats::verdict::{
    AbsVerdict, DEFAULT_BAND, Verdict, abs_verdict, ratio_verdict,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut StdRng) -> f64 {
    let u1: f64 = rng.random_range(f64::EPSILON..1.0);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// A Cauchy draw: heavy tails, no mean.
fn cauchy(rng: &mut StdRng) -> f64 {
    (std::f64::consts::PI * (rng.random::<f64>() - 0.5)).tan()
}

/// Per-round (a, b) pairs: a ≈ 1500 ps with a shared drift, b = a · effect, each with its own
/// noise from `noise`.
fn rounds(
    n: usize,
    effect: f64,
    seed: u64,
    mut noise: impl FnMut(&mut StdRng) -> f64,
) -> Vec<(f64, f64)> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let drift = 1.0 + 0.02 * ((i as f64) / 500.0).sin();
            let a = 1500.0 * drift * (1.0 + noise(&mut rng));
            let b = 1500.0 * drift * effect * (1.0 + noise(&mut rng));
            (a, b)
        })
        .collect()
}

fn verdict_of(pairs: &[(f64, f64)], band: f64) -> (Verdict, String) {
    let logs: Vec<f64> = pairs.iter().map(|(a, b)| (b / a).ln()).collect();
    let ci = sign_test_ci(&logs, DEFAULT_LEVEL).expect("enough rounds");
    let v = ratio_verdict(&ci, band, 1.0);
    (v.verdict, v.explanation)
}

#[test]
fn equal_data_is_equal() {
    let p = rounds(5000, 1.0, 1, |r| 0.005 * normal(r));
    assert_eq!(verdict_of(&p, DEFAULT_BAND).0, Verdict::Equal);
}

#[test]
fn one_percent_is_inside_the_default_band_but_resolved() {
    let p = rounds(5000, 1.01, 2, |r| 0.003 * normal(r));
    let (v, text) = verdict_of(&p, DEFAULT_BAND);
    assert_eq!(v, Verdict::Equal);
    assert!(text.contains("difference is resolved"), "{text}");
    // With a ±0.5 % band the same data is `slower`.
    assert_eq!(verdict_of(&p, 0.005).0, Verdict::Slower);
}

#[test]
fn five_percent_is_slower_and_minus_five_faster() {
    let p = rounds(3000, 1.05, 3, |r| 0.01 * normal(r));
    assert_eq!(verdict_of(&p, DEFAULT_BAND).0, Verdict::Slower);
    let p = rounds(3000, 1.0 / 1.05, 4, |r| 0.01 * normal(r));
    assert_eq!(verdict_of(&p, DEFAULT_BAND).0, Verdict::Faster);
}

#[test]
fn heavy_tailed_noise_keeps_verdicts() {
    // Cauchy noise scaled to 0.5 %: means and standard deviations are useless here.
    let p = rounds(5000, 1.05, 5, |r| (0.005 * cauchy(r)).clamp(-0.9, 50.0));
    assert_eq!(verdict_of(&p, DEFAULT_BAND).0, Verdict::Slower);
    let p = rounds(5000, 1.0, 6, |r| (0.002 * cauchy(r)).clamp(-0.9, 50.0));
    assert_eq!(verdict_of(&p, DEFAULT_BAND).0, Verdict::Equal);
}

#[test]
fn outliers_are_counted_and_do_not_move_the_verdict() {
    // One sample in seven (of A and of B alike) hit by an interrupt that triples it.
    let mut i = 0u32;
    let p = rounds(3000, 1.05, 7, |r| {
        i += 1;
        let spike = if i.is_multiple_of(7) { 2.0 } else { 0.0 };
        0.005 * normal(r) + spike
    });
    assert_eq!(verdict_of(&p, DEFAULT_BAND).0, Verdict::Slower);
    let a: Vec<f64> = p.iter().map(|x| x.0).collect();
    let o = tukey::classify(&summary::sorted(&a));
    assert!(o.high_severe >= 100, "{o:?}");
    let s = summarize(&a).unwrap();
    assert!((s.median / 1500.0 - 1.0).abs() < 0.03, "{s:?}");
}

#[test]
fn too_noisy_is_unresolved_and_says_what_to_do() {
    let p = rounds(40, 1.0, 8, |r| 0.05 * normal(r));
    let (v, text) = verdict_of(&p, DEFAULT_BAND);
    assert_eq!(v, Verdict::Unresolved);
    assert!(text.contains("straddles the ±2% band"), "{text}");
    assert!(text.contains("longer") || text.contains("widen"), "{text}");
}

#[test]
fn absolute_verdicts_for_ladder_steps() {
    let p = rounds(3000, 1.0, 9, |r| 0.002 * normal(r));
    let d: Vec<f64> = p.iter().map(|(a, b)| b - a + 900.0).collect();
    match abs_verdict(&sign_test_ci(&d, DEFAULT_LEVEL).unwrap()) {
        AbsVerdict::Adds { diff, low, high } => {
            assert!(low.0 < diff.0 && diff.0 < high.0);
            assert!((diff.0 - 900.0).abs() < 10.0);
        }
        other => panic!("expected adds, got {other:?}"),
    }
    let d: Vec<f64> = p.iter().map(|(a, b)| b - a).collect();
    let v = abs_verdict(&sign_test_ci(&d, DEFAULT_LEVEL).unwrap());
    assert!(matches!(v, AbsVerdict::NoCostResolved { .. }), "{v:?}");
    // The differences are fractions of a picosecond: a bound that three decimals of a ns
    // would show as 0.000 is said as under 0.001.
    assert_eq!(v.to_string(), "no cost resolved: within < ±0.001 ns");
}

/// The interval's coverage over 2000 trials. The exact coverage of the n = 101 interval is
/// 0.9540 (≥ 95 % nominal); with 2000 trials the observed share has a standard error of about
/// 0.4 %, so [0.935, 0.975] holds it with overwhelming probability for every seed.
#[test]
fn sign_test_interval_covers_the_median() {
    let mut rng = StdRng::seed_from_u64(42);
    for dist in ["exponential", "lognormal", "cauchy"] {
        let true_median = match dist {
            "exponential" => std::f64::consts::LN_2,
            _ => {
                if dist == "lognormal" {
                    1.0
                } else {
                    0.0
                }
            }
        };
        let mut covered = 0;
        let mut coverage = 0.0;
        for _ in 0..2000 {
            let xs: Vec<f64> = (0..101)
                .map(|_| match dist {
                    "exponential" => -(1.0 - rng.random::<f64>()).ln(),
                    "lognormal" => normal(&mut rng).exp(),
                    _ => cauchy(&mut rng),
                })
                .collect();
            let ci = sign_test_ci(&xs, DEFAULT_LEVEL).unwrap();
            coverage = ci.coverage;
            if ci.low <= true_median && true_median <= ci.high {
                covered += 1;
            }
        }
        let share = covered as f64 / 2000.0;
        assert!((0.935..=0.975).contains(&share), "{dist}: {share}");
        assert!((coverage - 0.9540).abs() < 0.001, "{coverage}");
    }
}

#[test]
fn unstable_flag_follows_the_spread() {
    let mut rng = StdRng::seed_from_u64(10);
    let calm: Vec<f64> = (0..1000)
        .map(|_| 1000.0 * (1.0 + 0.005 * normal(&mut rng)))
        .collect();
    let wild: Vec<f64> = (0..1000)
        .map(|_| 1000.0 * (1.0 + 0.2 * normal(&mut rng)))
        .collect();
    assert!(!summarize(&calm).unwrap().unstable());
    assert!(summarize(&wild).unwrap().unstable());
}
