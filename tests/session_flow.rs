//! A session driven through its commands, as a REPL would: code, :run on every backend, :asm,
//! :ir, :compare, exports, :save/:load, bad input, and faults that leave the session usable.
//! The session file goes to a temporary directory.

mod session_support;

use hotlab::session::SessionError;
use session_support::{fails, line, session};

const SUM: &str = "fn run(n: i64) -> i64 {\n    var s = 0\n    for i in 0..n { s += i }\n    return s\n}\nfn main() -> i64 { return run(10) }\n";

#[test]
fn a_session_runs_snippets_on_every_backend_and_exports() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("sum.hot");
    std::fs::write(&file, SUM).expect("write");
    let mut s = session(dir.path());

    assert!(
        line(&mut s, &format!(":load {}", file.display())).contains("loaded sum.hot: run, main")
    );
    for backend in ["jit", "jit-opt", "interp", "object"] {
        line(&mut s, &format!(":backend {backend}"));
        let out = line(&mut s, ":run");
        assert!(out.starts_with("45 ") && out.contains(backend), "{out}");
    }
    // The object backend's machine code is listed like the JIT's.
    let asm = line(&mut s, ":asm main");
    assert!(asm.contains("; main —") && asm.contains("ret"), "{asm}");
    line(&mut s, ":backend jit");
    let e = fails(&mut s, ":run run");
    assert!(
        e.to_string().contains("`run` takes 1 argument(s), got 0"),
        "{e}"
    );
    let asm = line(&mut s, ":asm main");
    assert!(asm.contains("; main —") && asm.contains("ret"), "{asm}");
    let ir = line(&mut s, ":ir run");
    assert!(ir.contains("function"), "{ir}");

    line(&mut s, ":set time 0.3");
    let cmp = line(&mut s, ":compare interp");
    assert!(
        cmp.contains("sum.hot (jit)") && cmp.contains("sum.hot (interp)"),
        "{cmp}"
    );
    assert!(cmp.contains("baseline"), "{cmp}");

    let md = dir.path().join("r.md");
    let csv = dir.path().join("r.csv");
    let json = dir.path().join("r.json");
    line(&mut s, &format!(":export md {}", md.display()));
    line(&mut s, &format!(":export csv {}", csv.display()));
    line(&mut s, &format!(":export json {}", json.display()));
    let md = std::fs::read_to_string(md).expect("md");
    assert!(
        md.contains("| variant") && md.contains("sum.hot (interp)"),
        "{md}"
    );
    let csv = std::fs::read_to_string(csv).expect("csv");
    assert!(csv.starts_with("variant,ns/op"), "{csv}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).expect("json")).expect("valid");
    assert_eq!(json["output"]["output"], "measured");
    assert_eq!(json["output"]["rows"].as_array().map(Vec::len), Some(2));
    let cmp = line(&mut s, ":compare object");
    assert!(cmp.contains("sum.hot (object)"), "{cmp}");

    // Code lines are added only when the whole snippet still compiles.
    let before = s.state().snippet().text.clone();
    assert!(matches!(
        fails(&mut s, "fn broken( {"),
        SessionError::Job(_)
    ));
    assert_eq!(s.state().snippet().text, before);
    assert!(line(&mut s, "fn three() -> i64 { return 3 }").contains("three"));
    assert!(line(&mut s, ":run three").starts_with("3 "));

    let saved = dir.path().join("copy.hot");
    line(&mut s, &format!(":save {}", saved.display()));
    assert!(
        std::fs::read_to_string(&saved)
            .expect("saved")
            .contains("fn three")
    );
    assert_eq!(line(&mut s, ":quit"), "<quit>");
}

#[test]
fn bad_input_says_what_is_wrong() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut s = session(dir.path());
    for (l, says) in [
        (":check", "is empty"),
        (":reload", "is empty"),
        (":check --vs b.hot", "is empty"),
        (":layers slott", "no layer named `slott`"),
        (":layers fused slot", "cannot follow `fused`"),
        (":ladder nope", "no ladder of that name"),
        (":load no_such_case", "neither a file nor a case"),
        (":twin nope", "no twin named `nope`"),
    ] {
        let e = fails(&mut s, l);
        assert!(matches!(e, SessionError::Input(_)), "{l}: {e:?}");
        assert!(e.to_string().contains(says), "{l}: {e}");
    }
    assert!(matches!(fails(&mut s, ":bogus"), SessionError::Command(_)));
    assert!(
        matches!(fails(&mut s, ":run"), SessionError::Input(_)),
        "empty snippet"
    );
    assert!(
        matches!(fails(&mut s, ":export md x.md"), SessionError::Input(_)),
        "no result yet"
    );
    assert!(matches!(
        fails(&mut s, ":load /nonexistent/x.hot"),
        SessionError::Input(_)
    ));
    assert!(line(&mut s, ":help").contains(":compare"));
    assert!(line(&mut s, ":help set").contains("limit SECONDS"));
    assert!(line(&mut s, ":history").contains(":help set"));
}

#[test]
fn a_hanging_snippet_is_stopped_and_the_session_goes_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut s = session(dir.path());
    line(&mut s, ":set limit 1");
    line(
        &mut s,
        "fn main() -> i64 {\n    var i = 0\n    while true { i += 1 }\n    return i\n}",
    );
    let e = fails(&mut s, ":run");
    assert_eq!(
        e.to_string(),
        "the snippet did not finish within 1 s: it was stopped (a new worker takes the next job)"
    );
    line(&mut s, ":clear");
    line(&mut s, "fn main() -> i64 { return 7 }");
    assert!(line(&mut s, ":run").starts_with("7 "));
}
