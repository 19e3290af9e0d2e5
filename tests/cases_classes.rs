//! The class-based cases and the reload rows: each class case's result equals its twin's on
//! every backend that runs it (short checked runs, no timing asserted), the `n/a` reasons of
//! the backends that cannot, clear errors for broken hook cases, and the reload rows' values
//! and refusals.

use std::path::Path;
use std::sync::Arc;

use hotlab::cases::matrix::MatrixOptions;
use hotlab::cases::reload::{ReloadKind, chain, reload_rows, time_reloads};
use hotlab::cases::spec::{load_dir, load_script};
use hotlab::cases::{Backend, CaseEntry, CellError, Mode, case_loader};
use hotlab::lang::SourceFile;

fn cases_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("cases")
}

const CLASS_CASES: [&str; 12] = [
    "host_call",
    "virtual_hook",
    "field_loop",
    "handle_chain",
    "new_free",
    "method_loop",
    "field_other",
    "self_method",
    "handle_method",
    "virtual_call",
    "static_fn",
    "pointer_chain",
];

#[test]
fn class_cases_match_their_twins_on_every_backend() {
    let cases = load_dir(&cases_dir()).unwrap();
    let mut jits = case_loader();
    let mut checked = 0;
    for name in CLASS_CASES {
        let case = cases
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("missing case {name}"));
        for n in [0, 1, 17, 1000] {
            let expected = case.header.twin.run(n);
            for script in &case.scripts {
                for backend in Backend::ALL {
                    let mut loaded = match backend.load(script, &mut jits) {
                        Ok((l, _)) => l,
                        Err(CellError::Unavailable(_)) => {
                            assert_eq!(script.mode, Mode::Clif, "{}", backend.name());
                            assert!(matches!(backend, Backend::Interp | Backend::Object));
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
    // 11 .hot cases on 4 backends and the .clif one on 2, 4 loop counts each.
    assert_eq!(checked, 4 * (11 * 4 + 2));
}

#[test]
fn hook_twins_count_what_the_scripts_count() {
    let cases = load_dir(&cases_dir()).unwrap();
    let host = cases.iter().find(|c| c.name == "host_call").unwrap();
    assert_eq!(host.header.entry, CaseEntry::Hook);
    assert_eq!(host.header.twin.run(10), 10);
    let virt = cases.iter().find(|c| c.name == "virtual_hook").unwrap();
    assert_eq!(virt.header.entry, CaseEntry::HookVirtual);
    // A counter: 1 + 2 + ... + 10.
    assert_eq!(virt.header.twin.run(10), 55);
}

#[test]
fn the_object_backend_runs_classes_and_host_calls_from_its_library() {
    let mut jits = case_loader();
    for name in ["field_loop", "virtual_call", "host_call", "virtual_hook"] {
        let script = load_script(&cases_dir().join(format!("{name}.hot"))).unwrap();
        let (mut loaded, times) = Backend::Object.load(&script, &mut jits).unwrap();
        // Built, linked and loaded as a library (its stages are timed).
        assert!(times.load.is_some_and(|t| !t.is_zero()), "{name}");
        let got = loaded
            .sampler(&script.header.entry.workload())
            .unwrap()
            .checked(500)
            .unwrap();
        assert_eq!(got, script.header.twin.run(500), "{name}");
    }
}

fn load_text(text: &str, entry: CaseEntry) -> String {
    let src = Arc::new(SourceFile::new("bad.hot".to_string(), text.to_string()));
    match Backend::Jit.load_source(Mode::Hot, &src, entry, &mut case_loader()) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("{text} must be refused"),
    }
}

#[test]
fn broken_hook_cases_say_what_is_expected() {
    let e = load_text(
        "class C : Hook { fn call(self) -> i64 { return 1 } }",
        CaseEntry::Hook,
    );
    assert!(
        e.contains("bad.hot") && e.contains("no module variable `target`"),
        "{e}"
    );
    let e = load_text(
        "class C { var n: i64 = 0 }\nlet target = new C()",
        CaseEntry::Hook,
    );
    assert!(
        e.contains("class `C` of `target` does not implement Hook"),
        "{e}"
    );
    let e = load_text("let target = 3", CaseEntry::HookVirtual);
    assert!(e.contains("`target` is i64, not an object"), "{e}");
    // A derived class of a Hook class is a Hook.
    let src = Arc::new(SourceFile::new(
        "ok.hot".to_string(),
        "class A : Hook { fn call(self) -> i64 { return 2 } }\nclass B : A { var k: i64 = 0 }\nlet target = new B()"
            .to_string(),
    ));
    let (mut loaded, _) = Backend::Jit
        .load_source(Mode::Hot, &src, CaseEntry::Hook, &mut case_loader())
        .unwrap();
    assert_eq!(
        loaded
            .sampler(&CaseEntry::Hook.workload())
            .unwrap()
            .checked(5)
            .unwrap(),
        10
    );
}

#[test]
fn reload_chain_steps() {
    assert_eq!(chain(100), [0, 1, 10, 100]);
    assert_eq!(chain(5), [0, 1, 5]);
    assert_eq!(chain(0), [0]);
    assert_eq!(chain(1), [0, 1]);
}

#[test]
fn a_reload_of_100_objects_is_timed() {
    for backend in [Backend::Jit, Backend::Object, Backend::Interp] {
        let ns = time_reloads(backend, 3).unwrap();
        assert!(ns > 0.0, "{}: {ns}", backend.name());
    }
}

#[test]
fn reload_rows_have_values_on_jit_object_and_interp_and_a_reason_on_jit_opt() {
    let opts = MatrixOptions {
        backends: Backend::ALL.to_vec(),
        reps: 1,
        iters: 300,
        time: 0.02,
        reloads: 10,
        pin: false,
        ..MatrixOptions::default()
    };
    let mut steps = Vec::new();
    let rows = reload_rows(&opts, &mut |s: &str| steps.push(s.to_string()));
    let kinds: Vec<ReloadKind> = rows.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [
            ReloadKind::Reload,
            ReloadKind::CallAfter(0),
            ReloadKind::CallAfter(1),
            ReloadKind::CallAfter(10)
        ]
    );
    // Three reloading backends, 4 steps each.
    assert_eq!(steps.len(), 3 * 4, "{steps:?}");
    let reloading = [Backend::Jit, Backend::Object, Backend::Interp];
    for b in reloading {
        assert!(
            rows[0].cells[&b].ns.is_some_and(|ns| ns > 0.0),
            "{}",
            b.name()
        );
    }
    for r in &rows {
        for b in reloading {
            let cell = &r.cells[&b];
            assert!(
                cell.error.is_none(),
                "{} on {}: {:?}",
                r.title,
                b.name(),
                cell.error
            );
            assert!(!cell.mismatch, "{} on {}", r.title, b.name());
            if r.kind != ReloadKind::Reload {
                assert_eq!(cell.checksum, Some(300), "{} on {}", r.title, b.name());
            }
        }
        match &r.cells[&Backend::JitOpt].error {
            Some(CellError::Unavailable(why)) => {
                assert!(
                    why.starts_with("refused: jit-opt code is not reloadable"),
                    "{why}"
                )
            }
            other => panic!("jit-opt must refuse: {other:?}"),
        }
    }
}
