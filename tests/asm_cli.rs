//! `hotlab asm`: the jit-opt build (`--opt`), `--checks off`, and native twins (`--twin`).

use assert_cmd::Command;

fn hotlab() -> Command {
    Command::cargo_bin("hotlab").unwrap()
}

fn stdout(args: &[&str]) -> String {
    let out = hotlab().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The instruction count in the header of function `name`'s listing.
fn instructions(listing: &str, name: &str) -> usize {
    let header = listing
        .lines()
        .find(|l| l.starts_with(&format!("; {name} ")))
        .unwrap_or_else(|| panic!("no header for {name} in\n{listing}"));
    let before = header.split(" instructions").next().unwrap();
    before.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn checks_off_drops_the_bounds_checks() {
    // Not `cases/array_index.hot`: its masked indexes (`i & 255`) need no check either way.
    let file = "tests/fixtures/asm/unmasked_index.hot";
    let on = stdout(&["asm", file, "--fn", "run"]);
    let off = stdout(&["asm", file, "--fn", "run", "--checks", "off"]);
    assert!(
        instructions(&off, "run") < instructions(&on, "run"),
        "on:\n{on}\noff:\n{off}"
    );
}

#[test]
fn opt_compiles_as_jit_opt() {
    let none = stdout(&["asm", "cases/int_loop.hot", "--fn", "run", "--ir"]);
    let speed = stdout(&["asm", "cases/int_loop.hot", "--fn", "run", "--ir", "--opt"]);
    assert_ne!(none, speed, "--opt changed nothing");
}

#[test]
fn twin_shows_the_native_code() {
    let s = stdout(&["asm", "--twin", "int_loop"]);
    assert!(s.starts_with("; twin int_loop — "), "{s}");
    assert!(
        instructions(&s.replace("; twin ", "; "), "int_loop") > 3,
        "{s}"
    );
}

#[test]
fn unknown_twin_lists_the_twins() {
    let out = hotlab().args(["asm", "--twin", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no twin named `nope`") && err.contains("int_loop"),
        "{err}"
    );
}

/// The object backend's listing is the loaded library's code: the same instructions as the
/// jit's, with host addresses loaded from the GOT (`mov rax,[..]`) instead of `movabs`.
#[test]
fn backend_object_shows_the_loaded_library_code() {
    let jit = stdout(&[
        "asm",
        "cases/int_loop.hot",
        "--fn",
        "run",
        "--backend",
        "jit",
    ]);
    let object = stdout(&[
        "asm",
        "cases/int_loop.hot",
        "--fn",
        "run",
        "--backend",
        "object",
    ]);
    assert_eq!(
        instructions(&jit, "run"),
        instructions(&object, "run"),
        "jit:\n{jit}\nobject:\n{object}"
    );
    assert!(!jit.contains("mov rax,["), "{jit}");
    assert!(object.contains("mov rax,["), "{object}");
    let opt = stdout(&["asm", "cases/int_loop.hot", "--fn", "run", "--ir", "--opt"]);
    let jit_opt = stdout(&[
        "asm",
        "cases/int_loop.hot",
        "--fn",
        "run",
        "--ir",
        "--backend",
        "jit-opt",
    ]);
    let strip = |s: &str| -> Vec<String> {
        // Addresses differ between two compilations; the instructions do not.
        s.lines()
            .map(|l| l.get(18..).unwrap_or(l).to_string())
            .collect()
    };
    assert_eq!(strip(&opt).len(), strip(&jit_opt).len());
}

#[test]
fn backend_interp_has_no_machine_code() {
    let out = hotlab()
        .args(["asm", "cases/int_loop.hot", "--backend", "interp"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("makes no machine code"), "{err}");
}

#[test]
fn backend_object_refuses_clif() {
    let out = hotlab()
        .args(["asm", "cases/int_loop.clif", "--backend", "object"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(".hot snippets only"), "{err}");
}

/// Call targets and loaded helper addresses are written by name: a runtime helper loaded
/// into a register, a direct call of another script function.
#[test]
fn calls_are_named_by_symbol() {
    let pick = stdout(&[
        "asm",
        "cases/programs/fasta.hot",
        "--fn",
        "Table.pick",
        "--opt",
    ]);
    assert!(pick.contains("mov rax,hot_str_slice"), "{pick}");
    let fasta = stdout(&["asm", "cases/programs/fasta.hot", "--fn", "fasta", "--opt"]);
    assert!(fasta.contains("call random"), "{fasta}");
}

/// The constants after a function's code are listed as data (`.quad`), not decoded, and the
/// header's instruction count is the number of instruction lines.
#[test]
fn constants_after_the_code_are_data_and_not_counted() {
    let listing = stdout(&["asm", "cases/programs/fasta.hot", "--fn", "random", "--opt"]);
    // Source-line marks (`; 12: ...`) are not instructions.
    let body: Vec<&str> = listing
        .lines()
        .skip(1)
        .filter(|l| !l.is_empty() && !l.starts_with("; "))
        .collect();
    let data = body.iter().filter(|l| l.contains(" .quad 0x")).count();
    assert!(data > 0, "{listing}");
    let code = body
        .iter()
        .filter(|l| !l.contains(" .quad 0x") && !l.contains(" .byte 0x"))
        .count();
    assert_eq!(instructions(&listing, "random"), code, "{listing}");
    // Nothing after the first data line is an instruction.
    let first = body
        .iter()
        .position(|l| l.contains(" .quad 0x") || l.contains(" .byte 0x"));
    assert!(
        body[first.unwrap()..]
            .iter()
            .all(|l| l.contains(" .quad 0x") || l.contains(" .byte 0x")),
        "{listing}"
    );
}

/// Whether a listing holds the prologue's stack check: the stack pointer read into a register
/// to be compared with the limit (`mov rax,rsp`; the frame setup's `mov rbp,rsp` aside).
fn stack_checked(listing: &str) -> bool {
    listing
        .lines()
        .any(|l| l.contains(",rsp") && !l.contains("mov rbp,rsp"))
}

#[test]
fn leaves_have_no_stack_check_on_every_backend() {
    let file = "tests/fixtures/asm/leaf.hot";
    for backend in ["jit", "jit-opt", "object"] {
        let listing = |f: &str| stdout(&["asm", file, "--fn", f, "--backend", backend]);
        for leaf in ["leaf", "Sq.area"] {
            let s = listing(leaf);
            assert!(!stack_checked(&s), "{backend} {leaf}:\n{s}");
        }
        // Recursion, a closure call, a frame too big for a leaf's room: checked.
        for checked in ["down", "twice", "big"] {
            let s = listing(checked);
            assert!(stack_checked(&s), "{backend} {checked}:\n{s}");
        }
    }
}

/// A `.hot` listing marks the source line each run of instructions comes from, and a call
/// through a register loaded with a helper's address names the helper; a twin's calls through
/// its GOT are named by what the slot holds.
#[test]
fn listings_mark_source_lines_and_name_register_calls() {
    let listing = stdout(&["asm", "cases/new_free.hot", "--fn", "run"]);
    assert!(listing.contains("\n; 20: let o = new One()\n"), "{listing}");
    assert!(listing.contains("; hot_object_new\n"), "{listing}");
    let marks: Vec<&str> = listing.lines().filter(|l| l.starts_with("; ")).collect();
    assert!(marks.len() > 3, "{listing}");
    let twin = stdout(&["asm", "--twin", "new_free"]);
    assert!(twin.contains("call qword ptr [hot_sink@got]"), "{twin}");
    assert!(!twin.contains("call qword ptr [5"), "{twin}");
}

#[test]
fn jit_opt_inlines_a_chain_of_small_calls_flat() {
    // `total` (inlined into `run`) calls `Worker.mix` through a handle field: callees are
    // inlined first, so `run` makes no call of `mix` on jit-opt, and jit keeps the call.
    let opt = stdout(&[
        "asm",
        "cases/handle_method.hot",
        "--backend",
        "jit-opt",
        "--fn",
        "run",
    ]);
    assert!(!opt.contains("call Worker.mix"), "{opt}");
    assert!(!opt.contains("call Boss.total"), "{opt}");
    let jit = stdout(&["asm", "cases/handle_method.hot", "--fn", "Boss.total"]);
    assert!(jit.contains("Worker.mix"), "{jit}");
}

#[test]
fn jit_opt_inlines_a_loop_free_function_at_its_only_call_site() {
    // tests/fixtures/asm/one_site.hot: `step` (over the ordinary inline size, no loop, one
    // call site) goes into `run`; `walk` (a loop) and `twice` (two call sites) stay calls. On
    // jit only host entries take bodies: `run` calls all three.
    let file = "tests/fixtures/asm/one_site.hot";
    let count = |s: &str, what: &str| s.lines().filter(|l| l.contains(what)).count();
    let opt = stdout(&["asm", file, "--backend", "jit-opt", "--fn", "run"]);
    assert_eq!(count(&opt, "call step"), 0, "{opt}");
    assert_eq!(count(&opt, "call walk"), 1, "{opt}");
    assert_eq!(count(&opt, "call twice"), 2, "{opt}");
    let jit = stdout(&["asm", file, "--backend", "jit", "--fn", "run"]);
    assert_eq!(count(&jit, "call step"), 1, "{jit}");
}

#[test]
fn a_function_that_calls_itself_is_unrolled_by_one_level_on_every_backend() {
    // Each recursive call site of `fib` takes a copy of its body, whose own two calls stay
    // calls: four calls of `fib` in its listing. `down`'s copy brings its own division check
    // (the error test in tests/jit_inline.rs raises in it). `even` and `odd` call each other:
    // nothing is inlined into them. `big` holds a local array too big to copy.
    let file = "tests/fixtures/asm/self_call.hot";
    for backend in ["jit", "jit-opt", "object"] {
        let listing = |f: &str| stdout(&["asm", file, "--fn", f, "--backend", backend]);
        let count = |s: &str, what: &str| s.lines().filter(|l| l.contains(what)).count();
        let fib = listing("fib");
        assert_eq!(count(&fib, "call fib"), 4, "{backend}:\n{fib}");
        // The copy runs in the function's frame: one stack check, as before.
        assert_eq!(count(&fib, "; hot_raise_stack"), 1, "{backend}:\n{fib}");
        let down = listing("down");
        assert_eq!(
            count(&down, "; hot_raise_div_zero"),
            2,
            "{backend}:\n{down}"
        );
        let even = listing("even");
        assert_eq!(count(&even, "call odd"), 1, "{backend}:\n{even}");
        // Slots over `MAX_SELF_SLOT_BYTES`: the recursion keeps its frames (and its depth).
        let big = listing("big");
        assert_eq!(count(&big, "call big"), 2, "{backend}:\n{big}");
    }
}

#[test]
fn a_loop_below_a_length_it_cannot_change_indexes_without_a_check() {
    // `hash` and `sum` loop over `0..x.len()` of a local they do not change: no bounds check,
    // so no call of the helper that raises; `cut` assigns its string in the loop and `from`
    // starts at a variable: both keep the check. On every Cranelift backend.
    let file = "tests/fixtures/asm/length_loops.hot";
    for backend in ["jit", "jit-opt", "object"] {
        for (f, helper, checked) in [
            ("hash", "hot_str_byte", false),
            ("cut", "hot_str_byte", true),
            ("sum", "hot_vec_at", false),
            ("from", "hot_vec_at", true),
        ] {
            let listing = stdout(&["asm", file, "--fn", f, "--backend", backend]);
            assert_eq!(
                listing.contains(helper),
                checked,
                "{backend} {f}: {listing}"
            );
        }
    }
}
