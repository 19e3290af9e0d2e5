//! Case loading (good and bad headers) and every case's script result against its twin on
//! jit, jit-opt, object and interp (not timed: one checked run with a small n).

use std::path::Path;

use hotlab::cases::spec::{load_dir, load_script, parse_header};
use hotlab::cases::{Backend, CellError, ChecksumRule, Mode, case_loader};

fn cases_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("cases")
}

#[test]
fn shipped_cases_load_with_twins_and_modes() {
    let cases = load_dir(&cases_dir()).unwrap();
    let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    for want in [
        "int_loop",
        "float_loop",
        "array_index",
        "call_native",
        "recursive",
        "module_var",
        "module_fn",
        "loop_sum",
        "aligned_read",
        "unaligned_read",
        "atomic_inc",
        "mutex_inc_2t",
    ] {
        assert!(names.contains(&want), "missing case {want}: {names:?}");
    }
    let int = cases.iter().find(|c| c.name == "int_loop").unwrap();
    assert!(int.script(Mode::Hot).is_some() && int.script(Mode::Clif).is_some());
    assert_eq!(int.header.twin.name, "int_loop");
    assert!(
        cases
            .iter()
            .find(|c| c.name == "atomic_inc")
            .unwrap()
            .native_only()
    );
    // Sorted by order.
    let orders: Vec<i64> = cases.iter().map(|c| c.header.order).collect();
    assert!(orders.windows(2).all(|w| w[0] <= w[1]), "{orders:?}");
}

#[test]
fn every_script_matches_its_twin_on_every_backend() {
    let cases = load_dir(&cases_dir()).unwrap();
    let mut jits = case_loader();
    let mut checked = 0;
    for case in &cases {
        for n in [0, 1, 777] {
            let expected = case.header.twin.run(n);
            for script in &case.scripts {
                for backend in Backend::ALL {
                    let mut loaded = match backend.load(script, &mut jits) {
                        Ok((l, _)) => l,
                        Err(CellError::Unavailable(why)) => {
                            let clif = matches!(backend, Backend::Interp | Backend::Object)
                                && script.mode == Mode::Clif;
                            let classes = backend == Backend::Object
                                && why.contains("does not run classes yet");
                            assert!(
                                clif || classes,
                                "{} refused {}",
                                backend.name(),
                                script.path.display()
                            );
                            continue;
                        }
                        Err(e) => panic!("{} on {}: {e}", script.path.display(), backend.name()),
                    };
                    let got = loaded
                        .sampler(&script.header.entry.workload())
                        .unwrap()
                        .checked(n)
                        .unwrap();
                    assert_eq!(
                        got,
                        expected,
                        "{} on {} with n = {n}",
                        script.path.display(),
                        backend.name()
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 3 * (8 * 4 + 5 * 2), "only {checked} checks ran");
}

#[test]
fn object_backend_refuses_clif_with_a_reason() {
    let script = load_script(&cases_dir().join("int_loop.clif")).unwrap();
    match Backend::Object.load(&script, &mut case_loader()) {
        Err(CellError::Unavailable(why)) => assert!(why.contains(".hot scripts only"), "{why}"),
        _ => panic!("object must be n/a for .clif"),
    }
}

fn bad(text: &str) -> String {
    parse_header(Path::new("x.hot"), Mode::Hot, text)
        .unwrap_err()
        .to_string()
}

#[test]
fn bad_headers_name_the_file_and_line() {
    let good = "//# title = \"t\"\n//# twin = \"int_loop\"\n//# unit = \"u\"\n//# checksum = \"exact\"\nfn run(n: i64) -> i64 { return n }\n";
    let h = parse_header(Path::new("x.hot"), Mode::Hot, good).unwrap();
    assert_eq!(h.checksum, ChecksumRule::Exact);
    assert_eq!(h.order, 100);

    let e = bad("fn run(n: i64) -> i64 { return n }\n");
    assert!(e.starts_with("x.hot:1: no case header"), "{e}");
    let e =
        bad("//# title = \"t\"\n//# twin = \"nope\"\n//# unit = \"u\"\n//# checksum = \"exact\"\n");
    assert!(e.starts_with("x.hot:2: unknown twin `nope`"), "{e}");
    let e = bad(
        "//# title = \"t\"\n//# twin = \"int_loop\"\n//# unit = \"u\"\n//# checksum = \"close\"\n",
    );
    assert!(e.starts_with("x.hot:4: unknown checksum rule"), "{e}");
    let e = bad("//# title = \"t\"\n//# twin = \"int_loop\"\n//# titel = \"u\"\n");
    assert!(
        e.starts_with("x.hot:3: bad header") && e.contains("titel"),
        "{e}"
    );
    // Only `twin` is needed: title, unit and checksum have defaults.
    let h = parse_header(
        Path::new("d/loop_sum.hot"),
        Mode::Hot,
        "//# twin = \"int_loop\"\n",
    )
    .unwrap();
    assert_eq!(
        (h.title.as_str(), h.unit.as_str()),
        ("loop_sum", "one call of run")
    );
    assert_eq!(h.checksum, ChecksumRule::Exact);
    assert!(!h.entry_given);
    let e = bad("//# title = \"t\"\n");
    assert!(e.contains("missing `twin`"), "{e}");
    // Every problem at once, each with its line.
    let e = bad(
        "//# twin = \"nope\"\n//# titel = \"u\"\n//# checksum = \"close\"\n//# order = \"x\"\n",
    );
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 4, "{e}");
    assert!(lines[0].starts_with("x.hot:1: unknown twin `nope`"), "{e}");
    assert!(
        lines[1].starts_with("x.hot:2: bad header: `titel`: unknown key"),
        "{e}"
    );
    assert!(
        lines[2].starts_with("x.hot:3: unknown checksum rule"),
        "{e}"
    );
    assert!(
        lines[3].starts_with("x.hot:4: bad header: `order`: expected an integer"),
        "{e}"
    );
    let e = bad("//# title = \"t\n");
    assert!(e.starts_with("x.hot:1: bad header"), "{e}");
    let within = "//# title = \"t\"\n//# twin = \"int_loop\"\n//# unit = \"u\"\n//# checksum = \"within 3\"\n";
    let h = parse_header(Path::new("x.hot"), Mode::Hot, within).unwrap();
    assert!(h.checksum.accepts(10, 13) && !h.checksum.accepts(10, 14));
}

#[test]
fn a_directory_with_disagreeing_modes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let head = |twin: &str, p: &str| {
        format!(
            "{p} title = \"t\"\n{p} twin = \"{twin}\"\n{p} unit = \"u\"\n{p} checksum = \"exact\"\n"
        )
    };
    std::fs::write(dir.path().join("a.hot"), head("int_loop", "//#")).unwrap();
    std::fs::write(dir.path().join("a.clif"), head("float_loop", ";#")).unwrap();
    let e = load_dir(dir.path()).unwrap_err().to_string();
    assert!(e.contains("a.hot") && e.contains("names twin"), "{e}");
    let e = load_dir(&dir.path().join("missing"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot read the cases directory"), "{e}");
}
