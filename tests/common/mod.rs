//! Helpers shared by the integration tests: the backends under test, compiling from text, and
//! running on a thread with a known stack.
#![allow(dead_code)]

#[path = "gen.rs"]
pub mod generator;
pub mod reload_probe;

use std::sync::Arc;

use hotlab::backend::{Checks, Value};
use hotlab::lang::{Diagnostics, Program, SourceFile, compile};
use hotlab::runtime::ScriptError;

/// Run a program's `main` with checks on or off.
pub type RunMain = fn(&Program, Checks) -> Result<Value, ScriptError>;

/// The backends that run `program`: all of them (the object backend runs classes too).
pub fn backends_for(_program: &Program) -> Vec<(&'static str, RunMain)> {
    backends()
}

/// Every backend the harnesses run a program on, by name.
pub fn backends() -> Vec<(&'static str, RunMain)> {
    vec![
        ("interp", hotlab::backend::interp::run_main),
        ("jit", jit_run_main),
        ("jit-opt", jit_opt_run_main),
        ("object", object_run_main),
    ]
}

/// Build a shared library with the verifier on, load it and run `main` (the `object` backend).
/// A build or load failure is a bug (or a host without `ld`), so it panics with the reason.
pub fn object_run_main(program: &Program, checks: Checks) -> Result<Value, ScriptError> {
    use hotlab::backend::jit::JitOptions;
    use hotlab::backend::object::{ObjectError, ObjectOptions, compile_object};
    let options = ObjectOptions {
        jit: JitOptions {
            checks,
            verify: true,
            ..JitOptions::default()
        },
        ..ObjectOptions::default()
    };
    match compile_object(program, &options) {
        Ok(loaded) => loaded.run_main(),
        Err(ObjectError::Init(e)) => Err(e),
        Err(e) => panic!(
            "{}: the object backend cannot build a checked program: {e}",
            program.source.name
        ),
    }
}

/// Compile with the Cranelift verifier on and run `main` on the JIT. A compile failure is a bug
/// (the checker accepted the program), so it panics with the reason.
pub fn jit_run_main(program: &Program, checks: Checks) -> Result<Value, ScriptError> {
    jit_run_main_at(program, checks, hotlab::backend::jit::OptLevel::None)
}

/// [`jit_run_main`] on `jit-opt`: `OptLevel::Speed`, objects in a fixed runtime (fields inline,
/// inline handle checks), module variables cached in call-free loops.
pub fn jit_opt_run_main(program: &Program, checks: Checks) -> Result<Value, ScriptError> {
    jit_run_main_at(program, checks, hotlab::backend::jit::OptLevel::Speed)
}

fn jit_run_main_at(
    program: &Program,
    checks: Checks,
    opt: hotlab::backend::jit::OptLevel,
) -> Result<Value, ScriptError> {
    use hotlab::backend::jit::{Jit, JitError, JitOptions};
    let mut jit = Jit::new(JitOptions {
        checks,
        verify: true,
        opt,
        code_offset: 0,
    })
    .expect("the JIT sets up on this host");
    match jit.compile(program) {
        Ok(compiled) => compiled.run_main(),
        Err(JitError::Init(e)) => Err(e),
        Err(e) => panic!(
            "{}: the JIT cannot compile a checked program: {e}",
            program.source.name
        ),
    }
}

/// Compile source text under a file name.
pub fn compile_text(name: &str, text: &str) -> Result<Program, Diagnostics> {
    compile(Arc::new(SourceFile::new(name, text)))
}

/// A source file of `text` named `name`.
pub fn source(name: &str, text: &str) -> Arc<SourceFile> {
    Arc::new(SourceFile::new(name, text.to_string()))
}

/// The path of a hot-reload fixture (`tests/fixtures/reload/NAME`).
pub fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/reload/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// A run's outcome as one line: the value, or `error: <what> at LINE:COL`.
pub fn outcome(program: &Program, result: &Result<Value, ScriptError>) -> String {
    match result {
        Ok(v) => v.to_string(),
        Err(e) => format!(
            "error: {} at {}",
            e.kind,
            program.source.line_col(e.span.start)
        ),
    }
}

/// Run `text`'s `main` on every backend; each must give `want` and leave no block behind
/// (error runs too: an error unwinding through compiled frames releases what they own).
#[track_caller]
pub fn same_everywhere(text: &str, want: &str) {
    let program = compile_text("same_everywhere.hot", text).unwrap_or_else(|d| panic!("{d}"));
    for (backend, run) in backends_for(&program) {
        let (got, leaked) = outcome_and_leaked_blocks(&program, run);
        assert_eq!(got, want, "{backend} on:\n{text}");
        assert_eq!(leaked, 0, "{backend} leaked {leaked} blocks on:\n{text}");
    }
}

/// Run `program`'s `main` with `run` on a thread with [`TEST_STACK`]: its outcome, and how many
/// vec, string and closure blocks it left behind on that thread.
pub fn outcome_and_leaked_blocks(program: &Program, run: RunMain) -> (String, i64) {
    let program = program.clone();
    with_stack(TEST_STACK, move || {
        let before = hotlab::runtime::values::live_blocks();
        let got = outcome(&program, &run(&program, Checks::On));
        (got, hotlab::runtime::values::live_blocks() - before)
    })
}

/// Run `f` on a fresh thread with `stack` bytes of stack, returning its result.
pub fn with_stack<T: Send + 'static>(stack: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(f)
        .expect("spawn test thread")
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// The stack the harnesses give a program (deep recursion is part of some tests). The
/// interpreter's release build uses more than 1.6 KB of Rust stack per script call (its eval
/// functions inline into large frames), so `deep_recursion.hot`'s 10 000 levels need more than
/// 16 MiB there; `hotlab run` gives scripts 256 MiB.
pub const TEST_STACK: usize = 64 << 20;

/// `src` with its `«` and `»` markers removed, and the span they enclosed.
pub fn marked(src: &str) -> (String, hotlab::lang::Span) {
    let start = src.find('«').expect("no « marker");
    let text = src.replacen('«', "", 1);
    let end = text.find('»').expect("no » marker");
    (
        text.replacen('»', "", 1),
        hotlab::lang::Span::new(start, end),
    )
}

/// The diagnostics of `text`, which must not compile.
pub fn diags(text: &str) -> Diagnostics {
    match compile_text("case.hot", text) {
        Ok(_) => panic!("compiled without error:\n{text}"),
        Err(d) => d,
    }
}

/// The instructions (Intel syntax, one string each) of function `name` of `program` compiled
/// by the JIT at `opt` (jit: `OptLevel::None`, jit-opt: `OptLevel::Speed`), verified.
pub fn listing(program: &Program, opt: hotlab::backend::jit::OptLevel, name: &str) -> Vec<String> {
    use hotlab::backend::disasm::{Syntax, disassemble};
    use hotlab::backend::jit::{Jit, JitOptions};
    let compiled = Jit::new(JitOptions {
        opt,
        verify: true,
        ..JitOptions::default()
    })
    .unwrap()
    .compile(program)
    .unwrap();
    let id = compiled
        .function_named(name)
        .unwrap_or_else(|| panic!("no function {name}"));
    let code = &compiled.functions()[id.index()];
    disassemble(&code.bytes, code.addr, Syntax::Intel)
        .into_iter()
        .map(|l| l.text)
        .collect()
}
