//! `.clif` scripts in the JIT: host imports, calls within a file, clean errors, disassembly.

use hotlab::backend::Value;
use hotlab::backend::disasm::{Syntax, disassemble, instruction_count, render};
use hotlab::backend::jit::{Jit, JitError, JitOptions};

fn jit() -> Jit {
    Jit::new(JitOptions::default()).expect("jit")
}

const WITH_HOST: &str = "
function %twice_sink(i64) -> i64 {
    sig0 = (i64) -> i64 system_v
    fn0 = u0:0 sig0

block0(v0: i64):
    v1 = call fn0(v0)
    v2 = iadd v1, v1
    return v2
}

function %root(f64) -> f64 {
    sig0 = (f64) -> f64 system_v
    fn0 = u0:2 sig0

block0(v0: f64):
    v1 = call fn0(v0)
    return v1
}

function %calls_local(i64) -> i64 {
    sig0 = (i64) -> i64 system_v
    fn0 = %twice_sink sig0

block0(v0: i64):
    v1 = call fn0(v0)
    v2 = iconst.i64 1
    v3 = iadd v1, v2
    return v3
}

function %narrow(i32) -> i32 {
block0(v0: i32):
    v1 = ineg v0
    return v1
}
";

#[test]
fn host_imports_and_local_calls_run() {
    let prog = jit().load_clif(WITH_HOST).unwrap();
    assert_eq!(
        prog.run("twice_sink", &[Value::I64(21)]).unwrap(),
        [Value::I64(42)]
    );
    assert_eq!(
        prog.run("root", &[Value::F64(9.0)]).unwrap(),
        [Value::F64(3.0)]
    );
    assert_eq!(
        prog.run("calls_local", &[Value::I64(5)]).unwrap(),
        [Value::I64(11)]
    );
    assert_eq!(
        prog.run("narrow", &[Value::I64(7)]).unwrap(),
        [Value::I64(-7)]
    );
    let f = prog.function("twice_sink").unwrap();
    assert!(f.code.clif.contains("iadd"));
    assert_eq!(f.code.bytes.len(), f.code.size);
}

#[test]
fn wrong_calls_are_errors() {
    let prog = jit().load_clif(WITH_HOST).unwrap();
    assert!(matches!(
        prog.run("nope", &[]),
        Err(JitError::UnknownFunction(_))
    ));
    assert!(matches!(
        prog.run("root", &[]),
        Err(JitError::BadCall { .. })
    ));
    assert!(matches!(
        prog.run("root", &[Value::I64(1)]),
        Err(JitError::BadCall { .. })
    ));
}

#[test]
fn verifier_errors_name_the_function() {
    // v1 is an i32, the return type says i64.
    let text = "
function %broken(i64) -> i64 {
block0(v0: i64):
    v1 = iconst.i32 1
    return v1
}
";
    let err = match jit().load_clif(text) {
        Err(e) => e,
        Ok(_) => panic!("a verifier error must be reported"),
    };
    let JitError::Verifier { function, message } = &err else {
        panic!("expected a verifier error, got {err}");
    };
    assert_eq!(function, "broken");
    assert!(message.contains("return"), "{message}");
    assert!(err.to_string().contains("`broken`"));
}

#[test]
fn a_failed_file_leaves_the_jit_usable() {
    let mut jit = jit();
    let bad = "
function %ok() -> i64 {
block0:
    v0 = iconst.i64 3
    return v0
}
function %broken() -> i64 {
    sig0 = () -> i64 system_v
    fn0 = %ok sig0
block0:
    v0 = call fn0()
    v1 = iconst.i32 1
    return v1
}
";
    assert!(jit.load_clif(bad).is_err());
    let good = jit.load_clif(WITH_HOST).unwrap();
    assert_eq!(
        good.run("calls_local", &[Value::I64(1)]).unwrap(),
        [Value::I64(3)]
    );
}

#[test]
fn parse_and_import_errors_are_clear() {
    let mut jit = jit();
    let Err(JitError::Clif(msg)) = jit.load_clif("function %f( {") else {
        panic!("parse error expected")
    };
    assert!(msg.to_string().contains("line 1"), "{msg}");
    let far = "
function %f(i64) -> i64 {
    sig0 = (i64) -> i64 system_v
    fn0 = u0:99 sig0
block0(v0: i64):
    v1 = call fn0(v0)
    return v1
}
";
    let Err(JitError::Clif(msg)) = jit.load_clif(far) else {
        panic!("import error expected")
    };
    assert!(
        msg.to_string().contains("u0:99") && msg.to_string().contains("sink"),
        "{msg}"
    );
    let wrong_sig = WITH_HOST.replace("fn0 = u0:2 sig0", "fn0 = u0:0 sig0");
    let Err(JitError::Clif(msg)) = jit.load_clif(&wrong_sig) else {
        panic!("signature mismatch expected")
    };
    assert!(msg.to_string().contains("declared as"), "{msg}");
    let Err(JitError::Clif(_)) = jit.load_clif("") else {
        panic!("empty file is an error")
    };
}

#[test]
fn disassembly_of_a_tiny_function() {
    let text = "
function %add(i64, i64) -> i64 {
block0(v0: i64, v1: i64):
    v2 = iadd v0, v1
    return v2
}
";
    let prog = jit().load_clif(text).unwrap();
    let code = &prog.function("add").unwrap().code;
    let lines = disassemble(&code.bytes, code.addr, Syntax::Intel);
    assert_eq!(lines.first().map(|l| l.addr), Some(code.addr));
    assert_eq!(lines.last().map(|l| l.text.as_str()), Some("ret"));
    assert!(
        lines
            .iter()
            .any(|l| l.text.starts_with("add ") || l.text.starts_with("lea "))
    );
    assert_eq!(instruction_count(&code.bytes), lines.len());
    let listing = render(&disassemble(&code.bytes, code.addr, Syntax::Att));
    assert!(listing.contains("ret"));
}

#[test]
fn libcalls_resolve_or_are_refused() {
    let text = "
function %fl(f64) -> f64 {
    sig0 = (f64) -> f64 system_v
    fn0 = %FloorF64 sig0
block0(v0: f64):
    v1 = call fn0(v0)
    return v1
}
";
    let mut jit = jit();
    // `floor` resolves only where libm is loaded into the process; either way, no panic.
    match jit.load_clif(text) {
        Ok(prog) => assert_eq!(
            prog.run("fl", &[Value::F64(-1.5)]).unwrap(),
            [Value::F64(-2.0)]
        ),
        Err(JitError::Clif(msg)) => assert!(msg.to_string().contains("`floor`"), "{msg}"),
        Err(e) => panic!("unexpected error {e}"),
    }
    let probe = "
function %p() {
    sig0 = () system_v
    fn0 = %Probestack sig0
block0:
    call fn0()
    return
}
";
    let Err(JitError::Clif(msg)) = jit.load_clif(probe) else {
        panic!("a missing libcall must be refused")
    };
    assert!(msg.to_string().contains("__cranelift_probestack"), "{msg}");
}
