//! The `object` backend: programs built into a shared library, loaded with `dlopen` and called
//! through the JIT's call API: results, globals, errors unwinding through library frames, raw
//! entries, the machine code compared with the JIT's, and clear errors for a missing linker.

use std::path::PathBuf;
use std::sync::Arc;

use hotlab::backend::disasm::{Syntax, disassemble};
use hotlab::backend::jit::{CompiledFunction, Jit, JitOptions, OptLevel, VmCtx};
use hotlab::backend::object::{
    Linker, ObjectBackend, ObjectError, ObjectOptions, ObjectProgram, compile_object,
};
use hotlab::backend::{Checks, Value, interp};
use hotlab::lang::{Program, SourceFile, compile};
use hotlab::runtime::{ScriptErrorKind, catch_script};

fn program(text: &str) -> Program {
    compile(Arc::new(SourceFile::new("t.hot", text))).expect("the test program checks")
}

fn options() -> ObjectOptions {
    ObjectOptions {
        jit: JitOptions {
            verify: true,
            ..JitOptions::default()
        },
        ..ObjectOptions::default()
    }
}

fn build(p: &Program) -> ObjectProgram {
    compile_object(p, &options()).unwrap_or_else(|e| panic!("object backend: {e}"))
}

const DEEP: &str = "\
fn c(d: i64) -> i64 { return 100 / d }
fn b(d: i64) -> i64 { return c(d) + 1 }
fn a(d: i64) -> i64 { return b(d) + 1 }
fn main() -> i64 { return a(0) }
";

#[test]
fn calls_and_results_match_the_interpreter() {
    let text = "\
var total: i64 = 5
let scale: f64 = 2.5
var grid = [[1, 2], [3, 4]]
fn add(a: i64, b: i64) -> i64 { total += a; return a + b }
fn half(x: f64) -> f64 { return x * scale / 2.0 }
fn flip(v: [i64; 2]) -> [i64; 2] { return [v[1], v[0]] }
fn main() -> i64 {
    grid[1][0] = add(40, 2)
    return grid[1][0] + total
}
";
    let p = program(text);
    let o = build(&p);
    assert_eq!(o.run_main(), interp::run_main(&p, Checks::On));
    assert_eq!(o.global("total"), Some(Value::I64(45)));
    assert_eq!(o.global("scale"), Some(Value::F64(2.5)));
    assert_eq!(
        o.global("grid"),
        Some(Value::Array(vec![
            Value::Array(vec![Value::I64(1), Value::I64(2)]),
            Value::Array(vec![Value::I64(42), Value::I64(4)]),
        ]))
    );
    let half = o.function_named("half").unwrap();
    assert_eq!(o.call(half, &[Value::F64(3.0)]), Ok(Value::F64(3.75)));
    let flip = o.function_named("flip").unwrap();
    let pair = Value::Array(vec![Value::I64(7), Value::I64(9)]);
    assert_eq!(
        o.call(flip, &[pair]),
        Ok(Value::Array(vec![Value::I64(9), Value::I64(7)]))
    );
    // The wrapper's argument checks are the JIT's.
    let err = o.call(half, &[Value::I64(1)]).unwrap_err();
    assert!(matches!(err.kind, ScriptErrorKind::BadCall(_)), "{err:?}");
}

#[test]
fn division_by_zero_unwinds_through_library_frames() {
    let p = program(DEEP);
    let o = build(&p);
    let want = interp::run_main(&p, Checks::On).unwrap_err();
    for _ in 0..50 {
        let got = o.run_main().unwrap_err();
        assert_eq!(got, want);
        assert_eq!(
            got.render(&p.source),
            "error: division by zero at t.hot:1:34"
        );
    }
    // The program still works after the errors.
    let a = o.function_named("a").unwrap();
    assert_eq!(o.call(a, &[Value::I64(4)]), Ok(Value::I64(27)));
}

#[test]
fn index_out_of_range_and_assert_are_caught() {
    let text = "\
fn at(i: i64) -> i64 { let v = [1, 2, 3]; return v[i] }
fn check(x: i64) { assert(x > 0) }
fn main() -> i64 { return at(3) }
";
    let p = program(text);
    let o = build(&p);
    let err = o.run_main().unwrap_err();
    assert_eq!(err, interp::run_main(&p, Checks::On).unwrap_err());
    assert_eq!(
        err.kind,
        ScriptErrorKind::IndexOutOfRange { index: 3, len: 3 }
    );
    let check = o.function_named("check").unwrap();
    let err = o.call(check, &[Value::I64(0)]).unwrap_err();
    assert_eq!(err.kind, ScriptErrorKind::AssertionFailed);
    assert_eq!(o.call(check, &[Value::I64(1)]), Ok(Value::Unit));
}

#[test]
fn runaway_recursion_stops_at_the_stack_check() {
    let text = "\
fn down(n: i64) -> i64 {
    var pad = [n; 16]
    return down(n + 1) + pad[15]
}
fn main() -> i64 { return down(0) }
";
    let p = program(text);
    let (got, want) = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let o = build(&p);
            (
                o.run_main().unwrap_err(),
                interp::run_main(&p, Checks::On).unwrap_err(),
            )
        })
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
fn an_initializer_error_is_reported_as_such() {
    let p =
        program("let zero: i64 = 0\nlet bad: i64 = 1 / zero\nfn main() -> i64 { return bad }\n");
    match compile_object(&p, &options()) {
        Err(ObjectError::Init(e)) => assert_eq!(e.kind, ScriptErrorKind::DivisionByZero),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("the initializer divides by zero"),
    }
}

#[test]
fn raw_entry_calls_the_library_function() {
    let p = program("fn sq(x: i64) -> i64 { return x * x }\nfn main() -> i64 { return sq(3) }\n");
    let o = build(&p);
    type Sq = unsafe extern "C-unwind" fn(*mut VmCtx, i64) -> i64;
    let sq = o.raw_entry::<Sq>(o.function_named("sq").unwrap()).unwrap();
    let mut ctx = o.vm_context();
    // SAFETY: `ctx` comes from this program, which outlives the call; the signature was
    // checked by `raw_entry`.
    let got = catch_script(Default::default(), || unsafe { sq(&mut ctx, 12) });
    assert_eq!(got, Ok(144));
    let wrong = o.raw_entry::<unsafe extern "C-unwind" fn(*mut VmCtx, f64) -> i64>(
        o.function_named("sq").unwrap(),
    );
    assert!(wrong.is_err());
}

#[test]
fn code_is_the_jits_apart_from_how_imports_and_globals_are_reached() {
    let text = "\
var hits: i64 = 0
fn fib(n: i64) -> i64 {
    if n < 2 { return n }
    return fib(n - 1) + fib(n - 2)
}
fn sum(v: [i64; 4]) -> i64 {
    var s = 0
    for x in v { s += x }
    return s / v[0]
}
fn bump() -> i64 { hits += 1; return hits }
fn main() -> i64 { return fib(10) + sum([1, 2, 3, 4]) + bump() }
";
    let p = program(text);
    for opt in [OptLevel::None, OptLevel::Speed] {
        let jit_options = JitOptions {
            verify: true,
            opt,
            ..JitOptions::default()
        };
        let o = compile_object(
            &p,
            &ObjectOptions {
                jit: jit_options,
                ..ObjectOptions::default()
            },
        )
        .unwrap();
        let j = Jit::new(jit_options).unwrap().compile(&p).unwrap();
        assert_eq!(o.run_main(), j.run_main());
        for (of, jf) in o.functions().iter().zip(j.functions()) {
            assert_eq!(of.name, jf.name);
            assert_eq!(of.bytes.len(), of.size);
            // Same instructions, one for one, in every function that does not touch a global
            // (a host import is a `movabs` of its address in the JIT and a load from the GOT in
            // the library: both `mov`, then the same `call reg`).
            let (om, jm) = (mnemonics(of), mnemonics(jf));
            // (At Speed, `main` inlines `bump`: `backend/jit/opt_inline.rs`.)
            let touches_globals = of.name == "bump"
                || of.name == "<init>"
                || (opt == OptLevel::Speed && of.name == "main");
            if !touches_globals {
                assert_eq!(om, jm, "{} at {opt:?}", of.name);
                continue;
            }
            // A global is a `movabs` of its address in the JIT and a RIP-relative `lea` in
            // the library (which the JIT's unoptimized code sometimes repeats needlessly).
            assert!(om.len() <= jm.len(), "{} at {opt:?}", of.name);
            assert!(
                om.iter().any(|m| m == "lea"),
                "{} at {opt:?}: {om:?}",
                of.name
            );
        }
        for (oe, je) in o.entries().iter().zip(j.entries()) {
            assert_eq!(mnemonics(oe), mnemonics(je), "{} at {opt:?}", oe.name);
            assert_eq!(oe.size, je.size, "{} at {opt:?}", oe.name);
        }
    }
}

fn mnemonics(f: &CompiledFunction) -> Vec<String> {
    let mut all: Vec<String> = disassemble(&f.bytes, f.addr, Syntax::Intel)
        .into_iter()
        .map(|l| l.text.split_whitespace().next().unwrap_or("").to_string())
        .collect();
    let end = all
        .iter()
        .rposition(|m| matches!(m.as_str(), "ret" | "jmp" | "ud2"))
        .map_or(all.len(), |i| i + 1);
    all.truncate(end);
    all
}

#[test]
fn the_library_exists_while_the_program_lives() {
    let p = program(DEEP);
    let o = build(&p);
    let path = o.library_path().to_path_buf();
    assert!(path.exists());
    assert!(o.object_size() > 0);
    let t = o.timings();
    assert!(t.link > std::time::Duration::ZERO && t.load > std::time::Duration::ZERO);
    assert_eq!(t.total(), t.stages().iter().map(|s| s.1).sum());
    drop(o);
    assert!(!path.exists(), "the temp dir is removed with the program");
    assert!(!path.parent().unwrap().exists());
}

#[test]
fn a_missing_linker_is_a_clear_error() {
    let p = program(DEEP);
    let missing = PathBuf::from("/nonexistent/ld-for-hotlab");
    let err = compile_object(
        &p,
        &ObjectOptions {
            linker: Linker::Ld(missing.clone()),
            ..options()
        },
    )
    .err()
    .expect("no such linker");
    assert!(
        matches!(&err, ObjectError::NoLinker { linker, .. } if *linker == missing),
        "{err}"
    );
    assert!(
        err.to_string().contains("/nonexistent/ld-for-hotlab"),
        "{err}"
    );
}

#[test]
fn a_failing_link_reports_the_linkers_stderr() {
    // `false` runs and fails without a word; `cc` with a bad flag fails with a message.
    let p = program(DEEP);
    let err = compile_object(
        &p,
        &ObjectOptions {
            linker: Linker::Ld(PathBuf::from("false")),
            ..options()
        },
    )
    .err()
    .expect("`false` fails");
    assert!(matches!(err, ObjectError::Link { .. }), "{err}");
    assert!(err.to_string().contains("program.o"), "{err}");
}

#[test]
fn the_compiler_driver_links_too() {
    let p = program(DEEP);
    let o = compile_object(
        &p,
        &ObjectOptions {
            linker: Linker::Cc(PathBuf::from("cc")),
            ..options()
        },
    )
    .unwrap();
    assert_eq!(
        o.run_main().unwrap_err().kind,
        ScriptErrorKind::DivisionByZero
    );
}

#[test]
fn one_backend_builds_several_programs_that_live_side_by_side() {
    // Same symbol names (`hot.main`, `hot:globals`) in both libraries: each is loaded
    // `RTLD_LOCAL` and bound to itself, so neither sees the other's.
    let backend = ObjectBackend::new(options()).unwrap();
    let a = backend
        .compile(&program(
            "var g: i64 = 1\nfn main() -> i64 { g += 10; return g }\n",
        ))
        .unwrap();
    let b = backend
        .compile(&program(
            "var g: i64 = 2\nfn main() -> i64 { g *= 100; return g }\n",
        ))
        .unwrap();
    assert_ne!(a.library_path(), b.library_path());
    assert_eq!(a.run_main(), Ok(Value::I64(11)));
    assert_eq!(b.run_main(), Ok(Value::I64(200)));
    assert_eq!(a.run_main(), Ok(Value::I64(21)));
    assert_eq!(a.global("g"), Some(Value::I64(21)));
    assert_eq!(b.global("g"), Some(Value::I64(200)));
    drop(a);
    assert_eq!(b.run_main(), Ok(Value::I64(20000)));
}

const CLASSES: &str = "\
class Shape {
    var size: i64 = 2
    virtual fn area(self) -> i64 { return self.size * self.size }
}
class Tri : Shape {
    override fn area(self) -> i64 { return self.size * self.size / 2 }
}
class Counter : Hook {
    var n: i64 = 0
    var next: Counter? = null
    fn call(self) -> i64 { self.n += 1; return self.n }
}
var kept: Counter? = null
let target = new Counter()
fn total(s: Shape) -> i64 { return s.area() }
fn broken() -> i64 {
    let c = new Counter()
    let n: Counter = c.next
    return n.n
}
fn main() -> i64 {
    let a = new Shape()
    let t = new Tri()
    t.size = 6
    let c = new Counter()
    c.call()
    kept = c
    return total(a) * 100 + total(t) + c.call() * 10000
}
";

/// Classes run from the library: `new`, fields, virtual dispatch through the bound slot
/// table, a `Hook` object the host calls through its handle (into the library's method), and
/// a null-handle error raised inside a library method unwinds to the border.
#[test]
fn classes_run_from_the_library_like_on_the_jit() {
    use hotlab::runtime::iface::Hook;
    let p = program(CLASSES);
    let o = build(&p);
    let j = Jit::new(options().jit).unwrap().compile(&p).unwrap();
    assert_eq!(o.run_main(), Ok(Value::I64(2 * 10000 + 4 * 100 + 18)));
    assert_eq!(o.run_main(), j.run_main());

    let target = o.global_handle("target").unwrap();
    assert_eq!(target.call().into_result().unwrap(), 1);
    assert_eq!(target.call().into_result().unwrap(), 2);
    let kept = o.global_handle("kept").unwrap();
    // main ran twice on the library: the second `kept` has been called twice.
    assert_eq!(kept.call().into_result().unwrap(), 3);

    // The objects live in the program's runtime: freed with their last handle.
    let objects = o.as_program().objects().unwrap();
    drop((target, kept));
    let live = hotlab::backend::objects::shell_count(&objects.classes);
    // `target` and `kept` are still held by the module variables.
    assert_eq!(live, 2);
    let err = o
        .call(o.function_named("broken").unwrap(), &[])
        .unwrap_err();
    assert_eq!(err.kind, ScriptErrorKind::NullHandle, "{err}");
    // At the same place as on the JIT.
    let on_jit = j
        .call(j.function_named("broken").unwrap(), &[])
        .unwrap_err();
    assert_eq!(err, on_jit);
}

/// Class code is the JIT's too: a method that reads and writes fields and calls helpers is the
/// same instructions; a virtual call differs only in forming the slot table's address (a
/// RIP-relative `lea` for the JIT's `movabs`), and `new` in one load of the objects' address.
#[test]
fn class_code_is_the_jits_apart_from_how_the_tables_are_reached() {
    let p = program(CLASSES);
    let o = build(&p);
    let j = Jit::new(options().jit).unwrap().compile(&p).unwrap();
    let mut compared = 0;
    for (of, jf) in o.functions().iter().zip(j.functions()) {
        assert_eq!(of.name, jf.name);
        let (om, jm) = (mnemonics(of), mnemonics(jf));
        match of.name.as_str() {
            "Counter.call" | "Shape.area" | "Tri.area" => {
                assert_eq!(om, jm, "{}", of.name);
                compared += 1;
            }
            "total" => {
                // The slot table: `lea` here, `movabs` (a `mov`) in the JIT; nothing else.
                assert_eq!(om.len(), jm.len(), "{om:?}\n{jm:?}");
                let differ: Vec<_> = om.iter().zip(&jm).filter(|(a, b)| a != b).collect();
                assert_eq!(differ, [(&"lea".to_string(), &"mov".to_string())]);
                compared += 1;
            }
            _ => {}
        }
    }
    assert_eq!(compared, 4, "method names changed?");
}
