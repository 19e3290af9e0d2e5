//! The session's lab commands through the session API, with the worker process: cases, twins
//! and `:check`; ladders and `:layers`; `:reload` of the live module (and a class typed again);
//! `.clif` snippets measured; `:bench`; cancel of measuring and of endless jobs; `--resume`.

use std::sync::atomic::Ordering;
use std::time::Duration;

mod session_support;

use hotlab::frontend::FrontArgs;
use hotlab::session::JobReport;
use hotlab::session::{Collect, Session, SessionError};
use hotlab::worker::WorkerError;
use session_support::{fails, line, options, session};

#[test]
fn cases_load_with_their_twin_and_check_against_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut s = session(dir.path());
    let cases = line(&mut s, ":cases");
    assert!(
        cases.contains("int_loop") && cases.contains(".hot .clif"),
        "{cases}"
    );
    let loaded = line(&mut s, ":load int_loop");
    assert!(loaded.contains("case int_loop") && loaded.contains("loaded int_loop.hot: run"));
    assert_eq!(s.state().twin.as_deref(), Some("int_loop"));
    assert!(line(&mut s, ":twin").contains("int_loop"));

    line(&mut s, ":set time 0.1");
    let check = line(&mut s, ":check");
    assert!(
        check.starts_with("int_loop.hot on jit vs twin int_loop: "),
        "{check}"
    );
    assert!(check.contains("results equal"), "{check}");
    match &s.state().results.last().expect("recorded").output {
        JobReport::Checked(a) => {
            assert!(a.results_equal);
            assert_eq!(a.n, 10_000);
            assert!(a.ratio > 0.0);
        }
        other => panic!("{other:?}"),
    }

    // Against another snippet: a loop that sums differently differs in its result.
    line(&mut s, ":snippet other.hot");
    line(
        &mut s,
        "fn run(n: i64) -> i64 {\n    var s = 0\n    for i in 0..n { s += i }\n    return s\n}",
    );
    line(&mut s, ":snippet int_loop.hot");
    let vs = line(&mut s, ":check --vs other.hot");
    assert!(
        vs.contains("vs other.hot") && vs.contains("RESULTS DIFFER"),
        "{vs}"
    );

    // The .clif mode of the case is measured too.
    assert!(line(&mut s, ":load int_loop.clif").contains("loaded int_loop.clif: run"));
    let clif = line(&mut s, ":check");
    assert!(
        clif.contains("int_loop.clif on jit vs twin int_loop"),
        "{clif}"
    );
    assert!(clif.contains("results equal"), "{clif}");

    let json = dir.path().join("check.json");
    line(&mut s, &format!(":export json {}", json.display()));
    let text = std::fs::read_to_string(&json).expect("exported");
    assert!(text.contains("\"output\": \"checked\""), "{text}");
}

#[test]
fn a_ladder_is_measured_with_the_layers_chosen() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut s = session(dir.path());
    line(&mut s, ":set time 0.1");
    let layers = line(&mut s, ":layers -catch -depth");
    assert!(
        layers.contains("native > slot > entry > detached (chosen"),
        "{layers}"
    );
    let mut out = Collect::default();
    s.run_line(":ladder", &mut out).expect("ladder");
    let text = out.all();
    assert!(
        text.contains("ladder host_call around the default empty method"),
        "{text}"
    );
    assert!(
        text.contains("jit slot read") || text.contains("slot read"),
        "{text}"
    );
    assert!(
        !text.contains("try/catch"),
        "the dropped layer is not measured: {text}"
    );
    assert!(out.progress > 0, "progress streamed");

    // The snippet's `call` is the method once it has one; reordering keeps the step texts.
    line(&mut s, "fn call() -> i64 {\n    return 7\n}");
    line(&mut s, ":layers depth slot");
    let text = line(&mut s, ":ladder");
    assert!(text.contains("around snippet.hot"), "{text}");
    let depth = text.find("call depth").expect("depth row");
    let slot = text.find("slot read").expect("slot row");
    assert!(depth < slot, "depth measured before slot: {text}");
    match &s.state().results.last().expect("recorded").output {
        JobReport::Ladder(l) => {
            assert!(l.all_ok, "every checksum equals the native row's");
            assert_eq!(l.table.rows.len(), 5, "native, and two steps in two builds");
        }
        other => panic!("{other:?}"),
    }
    // Another ladder starts from its file again.
    let fused = line(&mut s, ":ladder fused");
    assert!(fused.contains("fused call"), "{fused}");
    assert!(line(&mut s, ":layers").contains("native > fused (as in the ladder file)"));
    let md = dir.path().join("ladder.md");
    line(&mut s, &format!(":export md {}", md.display()));
    assert!(
        std::fs::read_to_string(&md)
            .expect("md")
            .contains("| fused call")
    );
    // What `:layers` lists as not measured is the ladder's own family: the runtime ladder's
    // rungs beside the call's layers, the steps of `new` only beside the `new` ladder.
    line(&mut s, ":ladder runtime");
    let runtime = line(&mut s, ":layers");
    assert!(runtime.contains("not measured: slot"), "{runtime}");
    assert!(!runtime.contains("new-alloc"), "{runtime}");
    line(&mut s, ":ladder new");
    let new = line(&mut s, ":layers");
    assert!(new.starts_with("ladder new: native > new-alloc"), "{new}");
    assert!(
        !new.contains("rt-slot") && !new.contains("not measured: slot"),
        "{new}"
    );
}

const V1: &str = "class Counter {\n    var n: i64 = 0\n    fn bump(self) -> i64 { self.n += 1; return self.n }\n}\nvar c: Counter? = null\nfn main() -> i64 {\n    let x = new Counter()\n    x.bump()\n    c = x\n    return x.n\n}";

#[test]
fn reload_migrates_the_live_module_and_a_class_typed_again_reloads() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut s = session(dir.path());
    line(&mut s, V1);
    let started = line(&mut s, ":reload");
    assert_eq!(
        started,
        "module started from snippet.hot: classes [Counter]\nmain = 1"
    );
    // `:run` now calls into the live module: its object keeps counting.
    assert!(line(&mut s, ":run main").contains("on jit, live module"));

    let again = line(
        &mut s,
        "class Counter {\n    var n: i64 = 0\n    var step: i64 = 10\n    fn bump(self) -> i64 { self.n += self.step; return self.n }\n}",
    );
    assert!(again.contains("(replaced class Counter)"), "{again}");
    assert!(
        again.contains("class Counter v2: 1 object(s) migrated; kept [n] added [step]"),
        "{again}"
    );
    line(
        &mut s,
        "fn after_reload() -> i64 {\n    let x: Counter = c\n    return x.bump()\n}",
    );
    let reloaded = line(&mut s, ":reload");
    // The object made by main kept n = 1, then bumped by 10.
    assert!(reloaded.contains("after_reload = 11"), "{reloaded}");
    assert!(reloaded.contains("module variables kept: c"), "{reloaded}");
    let run = line(&mut s, ":run after_reload");
    assert!(run.starts_with("21 "), "{run}");

    // A version that does not compile changes nothing.
    assert!(matches!(
        fails(&mut s, "fn broken( {}"),
        SessionError::Job(_)
    ));
    assert!(line(&mut s, ":run after_reload").starts_with("31 "));
}

#[test]
fn clif_snippets_are_measured() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut s = session(dir.path());
    line(&mut s, ":snippet sum.clif");
    line(
        &mut s,
        // n iterations of work: sizing refuses a run(n) whose time does not grow with n.
        "function %run(i64, i64) -> i64 system_v {\nblock0(v0: i64, v1: i64):\n    v2 = iconst.i64 0\n    jump block1(v2, v2)\nblock1(v3: i64, v4: i64):\n    v5 = icmp slt v3, v1\n    brif v5, block2, block3\nblock2:\n    v6 = iadd v4, v3\n    v8 = iconst.i64 1\n    v7 = iadd v3, v8\n    jump block1(v7, v6)\nblock3:\n    return v4\n}",
    );
    line(&mut s, ":set time 0.1");
    let cmp = line(&mut s, ":compare jit-opt");
    assert!(
        cmp.contains("sum.clif (jit)") && cmp.contains("sum.clif (jit-opt)"),
        "{cmp}"
    );
    match &s.state().results.last().expect("recorded").output {
        JobReport::Measured(m) => {
            assert_eq!(m.rows.len(), 2);
            assert!(m.rows.iter().all(|r| r.samples > 0), "{m:?}");
        }
        other => panic!("{other:?}"),
    }
    line(&mut s, ":backend interp");
    let e = fails(&mut s, ":compare jit");
    assert!(
        e.to_string()
            .contains("interp backend runs .hot snippets only"),
        "{e}"
    );
}

#[test]
fn bench_runs_the_cases_matching_a_filter() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut s = session(dir.path());
    line(&mut s, ":set time 0.05");
    let text = line(&mut s, ":bench int_loop");
    assert!(text.contains("int_loop"), "{text}");
    assert!(!text.contains("float_loop"), "filtered: {text}");
    let e = fails(&mut s, ":bench no_such_case");
    assert!(e.to_string().contains("no case in"), "{e}");
}

fn cancel_after(s: &Session, after: Duration) -> std::thread::JoinHandle<()> {
    let flag = s.cancel_flag();
    std::thread::spawn(move || {
        std::thread::sleep(after);
        flag.store(true, Ordering::Relaxed);
    })
}

#[test]
fn cancel_stops_measuring_and_endless_jobs_and_the_session_goes_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut s = session(dir.path());
    line(
        &mut s,
        "fn run(n: i64) -> i64 {\n    var s = 0\n    for i in 0..n { s += i }\n    return s\n}",
    );
    line(
        &mut s,
        "fn spin() -> i64 {\n    var i = 0\n    while true { i += 1 }\n    return i\n}",
    );
    line(&mut s, ":set time 600");
    line(&mut s, ":set limit 600");

    // A measurement: stopped with the samples it has, or ended by killing the worker.
    let setter = cancel_after(&s, Duration::from_millis(1500));
    let mut out = Collect::default();
    let r = s.run_line(":compare interp", &mut out);
    setter.join().expect("setter");
    match r {
        Ok(_) => match &s.state().results.last().expect("recorded").output {
            JobReport::Measured(m) => assert_eq!(m.stopped, "cancelled"),
            other => panic!("{other:?}"),
        },
        Err(SessionError::Worker(WorkerError::Cancelled { job })) => assert_eq!(job, "measure job"),
        Err(e) => panic!("{e}"),
    }

    // An endless loop cannot stop by itself: the worker is killed at once, not at the limit.
    let setter = cancel_after(&s, Duration::from_millis(500));
    let e = fails(&mut s, ":run spin");
    setter.join().expect("setter");
    assert!(
        matches!(e, SessionError::Worker(WorkerError::Cancelled { .. })),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "cancelled: the snippet was stopped");
    line(&mut s, ":set time 0.1");
    line(&mut s, "fn main() -> i64 { return run(10) }");
    assert!(line(&mut s, ":run").starts_with("45 "));
}

#[test]
fn resume_is_a_flag_of_the_front_ends() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut s = FrontArgs::default()
        .open(options(dir.path()), true)
        .expect("fresh");
    line(&mut s, ":backend jit-opt");
    line(&mut s, ":layers -catch");
    line(&mut s, "fn main() -> i64 { return 2 }");
    let before = s.state().clone();
    drop(s);
    let resumed = FrontArgs {
        resume: Some("0".into()),
        ..FrontArgs::default()
    }
    .open(options(dir.path()), true)
    .expect("resumed");
    assert_eq!(resumed.state(), &before);
    assert_eq!(resumed.state().layers.as_deref().map(|l| l.len()), Some(4));
    let fresh = FrontArgs::default()
        .open(options(dir.path()), true)
        .expect("fresh");
    assert!(fresh.state().history.is_empty());
}

#[test]
fn the_ladders_code_is_built_in_the_worker_and_recorded_nowhere() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut s = session(dir.path());
    let ladder = hotlab::ladder::resolve("host_call").expect("shipped ladder");
    // One per step but the native one, which has no jit build.
    let steps = ladder.steps.len() - 1;
    // No `fn call`: the default empty method.
    let code = s
        .ladder_code(ladder.clone(), "fn main() -> i64 {\n    return 0\n}\n")
        .expect("ladder code");
    assert_eq!(code.len(), steps);
    assert!(code[0].diff.is_none() && code[1..].iter().all(|c| c.diff.is_some()));
    assert!(code.iter().all(|c| !c.listing.is_empty()));
    assert!(s.worker_pid().is_some());
    assert!(s.state().results.is_empty() && s.state().history.is_empty());
    // A `call` that does not compile: the editor shows why.
    let err = s
        .ladder_code(ladder, "fn call() -> i64 {\n    return x\n}\n")
        .expect_err("does not compile");
    assert_eq!(
        err.to_string(),
        "the snippet does not compile (see the editor)"
    );
}

/// A cases directory of its own (`--cases DIR`): two cases the default directory lacks.
fn own_cases() -> tempfile::TempDir {
    let cases = tempfile::tempdir().expect("temp dir");
    let script = |helper: &str| {
        format!(
            "//# twin = \"int_loop\"\nfn {helper}(x: i64) -> i64 {{\n    return x + 1\n}}\n\
             fn run(n: i64) -> i64 {{\n    return {helper}(n)\n}}\n"
        )
    };
    std::fs::write(cases.path().join("mine.hot"), script("only_in_mine")).expect("write");
    std::fs::write(cases.path().join("kept.hot"), script("only_in_kept")).expect("write");
    cases
}

#[test]
fn a_case_from_the_cases_directory_shows_its_script_and_is_read_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = own_cases();
    let mut s = FrontArgs {
        cases: Some(cases.path().to_path_buf()),
        ..FrontArgs::default()
    }
    .open(options(dir.path()), true)
    .expect("opens");
    assert_eq!(s.cases_dir(), cases.path());
    // A `:bench` row of that directory's case names its script: its code is listed.
    let jit = hotlab::session::Backend::Jit;
    let listings = s.function_code("mine.hot", jit, "").expect("the script");
    let names: Vec<&str> = listings.iter().map(|l| l.name.as_str()).collect();
    assert!(
        names.contains(&"only_in_mine") && names.contains(&"run"),
        "{names:?}"
    );
    // The default directory's cases are not this session's.
    let e = s.function_code("int_loop.hot", jit, "").unwrap_err();
    assert!(e.to_string().contains("int_loop.hot"), "{e}");
    // Read once: a script that is gone from the directory is still the one read…
    std::fs::remove_file(cases.path().join("mine.hot")).expect("remove");
    assert!(s.function_code("mine.hot", jit, "").is_ok());
    // …until a command that looks at the directory reads it again.
    let listed = line(&mut s, ":cases");
    assert!(
        listed.contains("kept") && !listed.contains("mine"),
        "{listed}"
    );
    assert!(s.function_code("mine.hot", jit, "").is_err());
    let loaded = line(&mut s, ":load kept");
    assert!(loaded.contains("loaded kept.hot: "), "{loaded}");
    assert!(s.state().snippet().text.contains("only_in_kept"));
}

#[test]
fn cases_that_are_not_a_directory_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let e = FrontArgs {
        cases: Some(dir.path().join("nowhere")),
        ..FrontArgs::default()
    }
    .open(options(dir.path()), true)
    .unwrap_err();
    assert!(
        e.to_string().contains("--cases") && e.to_string().contains("nowhere"),
        "{e}"
    );
}

#[test]
fn a_case_scripts_code_is_listed_without_loading_it() {
    // A `:bench` row names a case's script (`int_loop.hot`) that is not a session snippet.
    let dir = tempfile::tempdir().expect("temp dir");
    let mut s = session(dir.path());
    let listings = s
        .function_code("int_loop.hot", hotlab::session::Backend::Jit, "")
        .expect("the case script's code");
    assert!(listings.iter().any(|l| l.name == "run"), "{listings:?}");
    let e = s
        .function_code("no_such.hot", hotlab::session::Backend::Jit, "")
        .unwrap_err();
    assert!(e.to_string().contains("no_such.hot"), "{e}");
}
