//! The program suite (`cases/programs/`): `hotlab bench` finds it as the group `programs`
//! (after the micro cases, selected by `--filter programs`), each program's script gives its
//! twin's checksum on every backend through the bench's own loader (a checked run, not timed),
//! and the twins reproduce the classics' published figures.

use std::path::Path;

use hotlab::cases::matrix::MatrixOptions;
use hotlab::cases::spec::load_dir;
use hotlab::cases::{Backend, Case, case_loader, twin_named};

const PROGRAMS: [&str; 6] = [
    "nbody",
    "spectral_norm",
    "fannkuch",
    "binary_trees",
    "mandelbrot",
    "richards",
];

fn cases() -> Vec<Case> {
    load_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("cases")).unwrap()
}

#[test]
fn bench_finds_the_programs_group_after_the_micro_cases() {
    let cases = cases();
    let programs: Vec<&Case> = cases
        .iter()
        .filter(|c| c.group.as_deref() == Some("programs"))
        .collect();
    let names: Vec<&str> = programs.iter().map(|c| c.name.as_str()).collect();
    for want in PROGRAMS {
        assert!(names.contains(&want), "missing program {want}: {names:?}");
    }
    for c in &programs {
        assert!(
            c.scripts
                .iter()
                .all(|s| s.path.parent().unwrap().ends_with("programs")),
            "{}",
            c.name
        );
        assert_eq!(c.header.twin.name, c.name, "a program's twin has its name");
    }
    // Every program row comes after every case at the top.
    let first = cases.iter().position(|c| c.group.is_some()).unwrap();
    assert!(cases[first..].iter().all(|c| c.group.is_some()));
    assert!(cases[..first].iter().any(|c| c.name == "int_loop"));

    // `--filter programs` selects the group and nothing else; a name still selects one row.
    let opts = MatrixOptions {
        filter: Some("programs".into()),
        ..MatrixOptions::default()
    };
    let selected: Vec<&str> = cases
        .iter()
        .filter(|c| opts.selects(c))
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(selected, names);
    let opts = MatrixOptions {
        filter: Some("richards".into()),
        ..MatrixOptions::default()
    };
    assert_eq!(cases.iter().filter(|c| opts.selects(c)).count(), 1);
    assert!(!opts.selects_reloads());
}

#[test]
fn every_program_matches_its_twin_on_every_backend() {
    let cases = cases();
    let mut jits = case_loader();
    let mut checked = 0;
    for case in cases
        .iter()
        .filter(|c| c.group.as_deref() == Some("programs"))
    {
        let script = case.scripts.first().unwrap();
        for backend in Backend::ALL {
            let (mut loaded, _) = backend
                .load(script, &mut jits)
                .unwrap_or_else(|e| panic!("{} on {}: {e}", case.name, backend.name()));
            let mut sampler = loaded.sampler(&case.header.entry.workload()).unwrap();
            for n in [0, 1, 200] {
                let got = sampler.checked(n).unwrap();
                assert_eq!(
                    got,
                    case.header.twin.run(n),
                    "{} on {} with n = {n}",
                    case.name,
                    backend.name()
                );
                checked += 1;
            }
        }
    }
    assert!(
        checked >= PROGRAMS.len() * 4 * 3,
        "only {checked} checks ran"
    );
}

#[test]
fn twins_reproduce_the_classics() {
    let twin = |name: &str| twin_named(name).unwrap();
    // Richards with the idle task's classic count of 1000: 2322 packets queued, 928 holds.
    assert_eq!(twin("richards").run(1000), 2322 * 100_000 + 928);
    // n-body after 1000 steps: energy -0.169087605 (the benchmark's published output).
    let energy = |n: i64| twin("nbody").run(n) as f64 / 1e12;
    assert!(
        (energy(1000) - -0.169087605).abs() < 1e-9,
        "{}",
        energy(1000)
    );
    // Before the first step: -0.169075164.
    assert!((energy(0) - -0.169075164).abs() < 1e-9, "{}", energy(0));
    // fannkuch-redux(7): checksum 228, 16 flips at most, over all 5040 permutations.
    assert_eq!(twin("fannkuch").run(5040), 228 * 100 + 16);
    // Starting over after the last permutation gives the same figures again.
    assert_eq!(twin("fannkuch").run(2 * 5040), 2 * 228 * 100 + 16);
    // binary-trees: a tree of depth d has 2^(d+1) - 1 nodes (depth 4: 31, the long-lived one).
    assert_eq!(twin("binary_trees").run(1), 31 * 5 * 1000 + 31);
    // spectral-norm of the 32x32 cut converges to 1.2741...
    let s = twin("spectral_norm").run(100_000) as f64 / 1e12;
    assert!((s - 1.2741).abs() < 1e-4, "{s}");
    // mandelbrot: the image repeats after its 4096 pixels (64 bytes of hash per round).
    let one = twin("mandelbrot").run(4096);
    assert_ne!(one, 0);
    assert_eq!(twin("mandelbrot").run(0), 0);
}

#[test]
fn bench_filter_programs_shows_the_group_table() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hotlab"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "bench",
            "--filter",
            "programs",
            "--backend",
            "jit-opt",
            "--reps",
            "1",
            "--time",
            "0.02",
            "--iters",
            "100",
            "--no-load",
        ])
        .output()
        .unwrap();
    let s = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{s}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = s
        .split("programs: ratio to the native twin")
        .nth(1)
        .unwrap_or_else(|| panic!("no group table in:\n{s}"));
    for title in [
        "n-body (5 bodies)",
        "Richards (OS task scheduler)",
        "geometric mean",
    ] {
        assert!(table.contains(title), "{title} missing in:\n{table}");
    }
    // The micro cases are not selected, and no reload rows run.
    assert!(!s.contains("integer arithmetic loop"), "{s}");
    assert!(!s.contains("reload of 100 objects"), "{s}");
}
