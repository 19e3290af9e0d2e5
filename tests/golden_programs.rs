//! The program suite as golden programs: each `cases/programs/*.hot` with a `main` that calls
//! its `run(n)`, on every backend (interp, jit, jit-opt, object) through `run_main`, for a few
//! n (including ones that wrap the programs' fixed cycles). Every backend must give the twin's
//! checksum, and leave no vec, string or closure block behind.

mod common;

use std::path::Path;

use hotlab::cases::spec::load_dir;

/// The n each program runs with: 0, 1, a few hundred, and one past its cycle where it has one.
fn sizes(name: &str) -> Vec<i64> {
    let mut n = vec![0, 1, 300];
    match name {
        "fannkuch" => n.push(5_100), // 5040 permutations, then from the identity again
        "mandelbrot" => n.push(4_200), // 64 x 64 pixels, then the first row again
        _ => {}
    }
    n
}

#[test]
fn programs_give_their_twins_checksum_on_every_backend() {
    let cases = load_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("cases")).unwrap();
    let programs: Vec<_> = cases
        .iter()
        .filter(|c| c.group.as_deref() == Some("programs"))
        .collect();
    assert!(programs.len() >= 6, "only {} programs", programs.len());
    let mut failures = Vec::new();
    for case in programs {
        let script = case.scripts.first().unwrap();
        for n in sizes(&case.name) {
            let text = format!(
                "{}\nfn main() -> i64 {{ return run({n}) }}\n",
                script.source.text
            );
            let name = format!("{}.hot", case.name);
            let program = common::compile_text(&name, &text).unwrap_or_else(|d| panic!("{d}"));
            let want = case.header.twin.run(n).to_string();
            for (backend, run) in common::backends_for(&program) {
                let (got, leaked) = common::outcome_and_leaked_blocks(&program, run);
                if got != want || leaked != 0 {
                    failures.push(format!(
                        "{name} with n = {n} on {backend}: expected {want}, got {got} \
                         ({leaked} blocks left)"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
