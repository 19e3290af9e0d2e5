//! The JIT on real `.hot` source: results and errors equal the interpreter's, the call
//! wrapper and raw entries on front-end programs, disassembly of compiled script code.

use std::sync::Arc;

use hotlab::backend::disasm::{Syntax, disassemble};
use hotlab::backend::jit::{Jit, JitOptions, JitProgram, VmCtx};
use hotlab::backend::{Checks, Value, interp};
use hotlab::lang::{Program, SourceFile, compile};
use hotlab::runtime::ScriptErrorKind;

fn program(text: &str) -> Program {
    compile(Arc::new(SourceFile::new("t.hot", text))).expect("the test program checks")
}

fn jit(p: &Program) -> JitProgram {
    Jit::new(JitOptions {
        verify: true,
        ..JitOptions::default()
    })
    .unwrap()
    .compile(p)
    .unwrap()
}

const DEEP: &str = "\
fn c(d: i64) -> i64 { return 100 / d }
fn b(d: i64) -> i64 { return c(d) + 1 }
fn a(d: i64) -> i64 { return b(d) + 1 }
fn main() -> i64 { return a(0) }
";

#[test]
fn division_by_zero_deep_in_source_matches_the_interpreter() {
    let p = program(DEEP);
    let compiled = jit(&p);
    let want = interp::run_main(&p, Checks::On).unwrap_err();
    for _ in 0..100 {
        let got = compiled.run_main().unwrap_err();
        assert_eq!(got, want);
        assert_eq!(
            got.render(&p.source),
            "error: division by zero at t.hot:1:34"
        );
    }
    let a = compiled.function_named("a").unwrap();
    assert_eq!(compiled.call(a, &[Value::I64(4)]), Ok(Value::I64(27)));
}

#[test]
fn runaway_recursion_in_source_matches_the_interpreter() {
    let text = "\
fn down(n: i64) -> i64 {
    var pad = [n; 16]
    return down(n + 1) + pad[15]
}
fn main() -> i64 { return down(0) }
";
    let p = program(text);
    let run = move || {
        let compiled = jit(&p);
        let got = compiled.run_main().unwrap_err();
        let want = interp::run_main(&p, Checks::On).unwrap_err();
        (got, want)
    };
    let (got, want) = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(run)
        .unwrap()
        .join()
        .expect("no crash");
    assert_eq!(
        got.kind,
        ScriptErrorKind::StackExhausted {
            function: "down".into()
        }
    );
    assert_eq!(got, want);
}

#[test]
fn a_program_of_many_constructs_agrees_with_the_interpreter() {
    let text = "\
native fn sqrt(x: f64) -> f64
var hits: i64 = 0
let TABLE = [3, 1, 4, 1, 5, 9, 2, 6]
fn touch() -> bool { hits += 1; return true }
fn sorted(a: [i64; 8]) -> [i64; 8] {
    var b = a
    for i in 0..8 {
        for j in 0..7 - i {
            if b[j] > b[j + 1] { let t = b[j]; b[j] = b[j + 1]; b[j + 1] = t }
        }
    }
    return b
}
fn main() -> i64 {
    let s = sorted(TABLE)
    var acc = 0
    for x in s { acc = acc * 10 + x }
    if false && touch() { acc += 1000 }
    if true || touch() { acc += 1 }
    let r = sqrt(2.0) * 1000.0
    return acc + r as i64 + hits + TABLE[0] + (-7 % 3) + (7.5 % 2.0) as i64
}
";
    let p = program(text);
    let want = interp::run_main(&p, Checks::On).unwrap();
    let got = jit(&p).run_main().unwrap();
    assert!(got.same_as(&want), "jit {got} interp {want}");
    assert_eq!(got, Value::I64(11234569 + 1 + 1414 + 3 - 1 + 1));
}

#[test]
fn raw_entry_and_disassembly_of_a_script_function() {
    let p = program("fn add(a: i64, b: i64) -> i64 { return a + b }\n");
    let compiled = jit(&p);
    let add = compiled.function_named("add").unwrap();
    let f: unsafe extern "C-unwind" fn(*mut VmCtx, i64, i64) -> i64 =
        compiled.raw_entry(add).unwrap();
    let mut ctx = compiled.vm_context();
    // SAFETY: the context comes from the live program; `add` cannot raise.
    assert_eq!(unsafe { f(&mut ctx, 40, 2) }, 42);
    let code = &compiled.functions()[add.index()];
    let lines = disassemble(&code.bytes, code.addr, Syntax::Intel);
    assert!(lines.iter().any(|l| l.text == "ret"));
    let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
    // A leaf: no stack check, so no cold raise call; its epilogue's dead `mov rsp,rbp` is a
    // nop (`backend/jit/epilogue.rs`), right before `pop rbp`.
    assert!(!texts.iter().any(|t| t.starts_with("call")), "{texts:#?}");
    assert!(!texts.contains(&"mov rsp,rbp"), "{texts:#?}");
    let pop = texts.iter().position(|t| *t == "pop rbp").unwrap();
    assert_eq!(texts[pop - 1], "nop [rax]", "{texts:#?}");
}
