//! Native twins at several placements (`--layouts K`): copies of a function of the binary made
//! by `backend::relocate`, run through the twin's own type. Each copy must compute what the
//! original does, run where it was put (not jump back into the original), unwind a panic through
//! its own frame, and a function a copy cannot be made of must be refused with its reason.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use hotlab::backend::jit::layout::code_offset;
use hotlab::backend::relocate::{Refusal, RelocatedFn};
use hotlab::cases::{Twin, TwinLayouts, twins};

// Functions of known shape, with unwind entries (`.cfi_*`) as rustc writes them for its own:
// - `hotlab_test_where` calls a function outside itself (a rel32 call the copy must rewrite)
//   that returns its return address: the address of the code that called it.
// - `hotlab_test_jump_table` dispatches through a PIC jump table (offsets from the table to its
//   blocks, as LLVM writes them): a copy would jump back into the original.
// - `hotlab_test_table_loop` adds `(i & 3) + 1` for `i` from `n` down to 1, each through a
//   jump table: a twin that cannot be copied, whose work grows with `n`.
// - `hotlab_test_tail_call` tail-calls `hotlab_test_jump_table` through a register.
// - `hotlab_test_no_frame` has no unwind entry.
// - `hotlab_test_calls_in_loop` runs `n` iterations of `call hotlab_test_five_adds; dec rsi;
//   jnz`: 3 instructions of its own and 6 (five adds, `ret`) of the callee's per iteration.
// - `hotlab_test_own_loop` runs `n` iterations of 6 adds, `dec rsi; jnz` and the same call:
//   9 of its own and 6 of the callee's.
std::arch::global_asm!(
    ".pushsection .text.hotlab_test_relocate,\"ax\",@progbits",
    ".p2align 4",
    ".globl hotlab_test_where",
    ".type hotlab_test_where, @function",
    "hotlab_test_where:",
    ".cfi_startproc",
    "push rbx",
    ".cfi_def_cfa_offset 16",
    ".cfi_offset rbx, -16",
    "call hotlab_test_return_address",
    "pop rbx",
    ".cfi_def_cfa_offset 8",
    "ret",
    ".cfi_endproc",
    ".size hotlab_test_where, . - hotlab_test_where",
    ".p2align 4",
    ".type hotlab_test_return_address, @function",
    "hotlab_test_return_address:",
    ".cfi_startproc",
    "mov rax, qword ptr [rsp]",
    "ret",
    ".cfi_endproc",
    ".size hotlab_test_return_address, . - hotlab_test_return_address",
    ".p2align 4",
    ".globl hotlab_test_jump_table",
    ".type hotlab_test_jump_table, @function",
    "hotlab_test_jump_table:",
    ".cfi_startproc",
    "and esi, 3",
    "lea rax, [rip + .Lhotlab_test_table]",
    "movsxd rcx, dword ptr [rax + rsi*4]",
    "add rax, rcx",
    "jmp rax",
    ".Lhotlab_test_case0:",
    "mov eax, 10",
    "ret",
    ".Lhotlab_test_case1:",
    "mov eax, 11",
    "ret",
    ".Lhotlab_test_case2:",
    "mov eax, 12",
    "ret",
    ".Lhotlab_test_case3:",
    "mov eax, 13",
    "ret",
    ".cfi_endproc",
    ".size hotlab_test_jump_table, . - hotlab_test_jump_table",
    ".p2align 4",
    ".globl hotlab_test_tail_call",
    ".type hotlab_test_tail_call, @function",
    "hotlab_test_tail_call:",
    ".cfi_startproc",
    "lea rax, [rip + hotlab_test_jump_table]",
    "jmp rax",
    ".cfi_endproc",
    ".size hotlab_test_tail_call, . - hotlab_test_tail_call",
    ".p2align 4",
    ".globl hotlab_test_table_loop",
    ".type hotlab_test_table_loop, @function",
    "hotlab_test_table_loop:",
    ".cfi_startproc",
    "xor eax, eax",
    "test rsi, rsi",
    "je .Lhotlab_loop_done",
    "lea rdx, [rip + .Lhotlab_loop_table]",
    ".Lhotlab_loop_head:",
    "mov ecx, esi",
    "and ecx, 3",
    "movsxd rcx, dword ptr [rdx + rcx*4]",
    "add rcx, rdx",
    "jmp rcx",
    ".Lhotlab_loop_case0:",
    "add rax, 1",
    "jmp .Lhotlab_loop_next",
    ".Lhotlab_loop_case1:",
    "add rax, 2",
    "jmp .Lhotlab_loop_next",
    ".Lhotlab_loop_case2:",
    "add rax, 3",
    "jmp .Lhotlab_loop_next",
    ".Lhotlab_loop_case3:",
    "add rax, 4",
    ".Lhotlab_loop_next:",
    "dec rsi",
    "jne .Lhotlab_loop_head",
    ".Lhotlab_loop_done:",
    "ret",
    ".cfi_endproc",
    ".size hotlab_test_table_loop, . - hotlab_test_table_loop",
    ".p2align 4",
    ".globl hotlab_test_no_frame",
    ".type hotlab_test_no_frame, @function",
    "hotlab_test_no_frame:",
    "mov eax, 1",
    "ret",
    ".size hotlab_test_no_frame, . - hotlab_test_no_frame",
    ".p2align 4",
    ".globl hotlab_test_calls_in_loop",
    ".type hotlab_test_calls_in_loop, @function",
    "hotlab_test_calls_in_loop:",
    ".cfi_startproc",
    "xor eax, eax",
    "test rsi, rsi",
    "je 2f",
    "1:",
    "call hotlab_test_five_adds",
    "dec rsi",
    "jnz 1b",
    "2:",
    "ret",
    ".cfi_endproc",
    ".size hotlab_test_calls_in_loop, . - hotlab_test_calls_in_loop",
    ".p2align 4",
    ".globl hotlab_test_own_loop",
    ".type hotlab_test_own_loop, @function",
    "hotlab_test_own_loop:",
    ".cfi_startproc",
    "xor eax, eax",
    "test rsi, rsi",
    "je 2f",
    "1:",
    "add rax, 1",
    "add rax, 1",
    "add rax, 1",
    "add rax, 1",
    "add rax, 1",
    "add rax, 1",
    "call hotlab_test_five_adds",
    "dec rsi",
    "jnz 1b",
    "2:",
    "ret",
    ".cfi_endproc",
    ".size hotlab_test_own_loop, . - hotlab_test_own_loop",
    ".p2align 4",
    ".type hotlab_test_five_adds, @function",
    "hotlab_test_five_adds:",
    ".cfi_startproc",
    "add rax, 1",
    "add rax, 1",
    "add rax, 1",
    "add rax, 1",
    "add rax, 1",
    "ret",
    ".cfi_endproc",
    ".size hotlab_test_five_adds, . - hotlab_test_five_adds",
    ".popsection",
    ".pushsection .rodata.hotlab_test_relocate,\"a\",@progbits",
    ".p2align 2",
    ".Lhotlab_test_table:",
    ".long .Lhotlab_test_case0 - .Lhotlab_test_table",
    ".long .Lhotlab_test_case1 - .Lhotlab_test_table",
    ".long .Lhotlab_test_case2 - .Lhotlab_test_table",
    ".long .Lhotlab_test_case3 - .Lhotlab_test_table",
    ".Lhotlab_loop_table:",
    ".long .Lhotlab_loop_case0 - .Lhotlab_loop_table",
    ".long .Lhotlab_loop_case1 - .Lhotlab_loop_table",
    ".long .Lhotlab_loop_case2 - .Lhotlab_loop_table",
    ".long .Lhotlab_loop_case3 - .Lhotlab_loop_table",
    ".popsection",
);

unsafe extern "C-unwind" {
    safe fn hotlab_test_where(ctx: *mut c_void, n: u64) -> u64;
    safe fn hotlab_test_jump_table(ctx: *mut c_void, n: u64) -> u64;
    safe fn hotlab_test_table_loop(ctx: *mut c_void, n: u64) -> u64;
    safe fn hotlab_test_tail_call(ctx: *mut c_void, n: u64) -> u64;
    safe fn hotlab_test_no_frame(ctx: *mut c_void, n: u64) -> u64;
    safe fn hotlab_test_calls_in_loop(ctx: *mut c_void, n: u64) -> u64;
    safe fn hotlab_test_own_loop(ctx: *mut c_void, n: u64) -> u64;
}

/// A one-thread twin of a test's function.
fn one_thread(
    name: &'static str,
    f: extern "C-unwind" fn(*mut c_void, u64) -> u64,
    doc: &'static str,
) -> Twin {
    Twin {
        name,
        f,
        doc,
        threads: 1,
    }
}

/// Every twin of the binary: copied to three more placements, each computing what the original
/// does; or left at its one placement with the reason: rustc wrote a jump table (a `match` on
/// an enum, as in Richards), most of its instructions run in functions it calls, or it has a
/// second thread.
#[test]
fn every_twin_copied_to_four_placements_computes_what_the_original_does() {
    let mut refused = Vec::new();
    let mut in_callees = Vec::new();
    let mut shares = Vec::new();
    for t in twins() {
        let placed = TwinLayouts::new(t, 4);
        if let Some(why) = placed.unplaced() {
            if why.contains("functions it calls") || why.contains("where its instructions run") {
                let own = match placed.own_share() {
                    Some(s) => format!("{s:.2}"),
                    None => why.to_string(),
                };
                in_callees.push((t.name, own));
            } else if t.threads > 1 {
                assert!(why.contains("second thread"), "{why}");
            } else {
                assert!(why.contains("jump table"), "{why}");
                refused.push(t.name);
            }
            assert_eq!(placed.layouts(), 1, "{}", t.name);
            assert_eq!(placed.run(0, 257), t.run(257), "{}", t.name);
            continue;
        }
        assert_eq!(t.threads, 1, "{}", t.name);
        let per_op = placed.instructions().expect("stepped");
        let own = placed.own_share().expect("stepped");
        assert!(per_op > 0.0 && own >= 0.5, "{}: {per_op} {own}", t.name);
        shares.push((t.name, own));
        assert_eq!(placed.layouts(), 4, "{}", t.name);
        let mut addrs: Vec<usize> = (0..4).map(|k| placed.addr(k)).collect();
        assert_eq!(
            addrs[0], t.f as usize,
            "{}: layout 0 is the original",
            t.name
        );
        for (k, &a) in addrs.iter().enumerate().skip(1) {
            assert_eq!(a % 4096, usize::from(code_offset(k)), "{} @{k}", t.name);
        }
        addrs.sort();
        addrs.dedup();
        assert_eq!(addrs.len(), 4, "{}: four distinct places", t.name);
        for n in [0, 1, 257] {
            let want = t.run(n);
            for k in 0..4 {
                assert_eq!(placed.run(k, n), want, "{} @{k}, n = {n}", t.name);
            }
        }
    }
    eprintln!("left at one placement (a jump table): {refused:?}");
    eprintln!("left at one placement (their time in callees): {in_callees:?}");
    eprintln!("placed, with their own share of the instructions: {shares:?}");
    let in_callees: Vec<&str> = in_callees.into_iter().map(|(n, _)| n).collect();
    // The twins of the figures and of the tests have no `match`, and their loops are
    // their own: they are placed.
    for name in ["host_call", "int_loop", "call_native"] {
        assert!(!refused.contains(&name), "{name}: {refused:?}");
        assert!(!in_callees.contains(&name), "{name}: {in_callees:?}");
    }
    // The reviewer's: the loop is `Mixer::total`'s, `depth`'s.
    for name in ["self_method", "recursive"] {
        assert!(in_callees.contains(&name), "{name}: {in_callees:?}");
    }
    assert!(
        (refused.len() + in_callees.len()) * 2 <= twins().len(),
        "most twins are placed: {refused:?} {in_callees:?}"
    );
}

#[test]
fn a_copy_runs_where_it_was_put_and_reaches_what_the_original_reaches() {
    let f = hotlab_test_where as hotlab::measure::RawVariantFn;
    let original = f as usize;
    // SAFETY: a function of this binary.
    let returned = unsafe { f(std::ptr::null_mut(), 0) } as usize;
    assert!(
        (original..original + 16).contains(&returned),
        "{returned:#x} vs {original:#x}"
    );
    for k in [1, 2, 3, 5] {
        // SAFETY: a function of this binary.
        let copy = unsafe { RelocatedFn::new(f, code_offset(k)) }.expect("copied");
        assert_eq!(copy.len(), 8, "push, call rel32, pop, ret");
        assert_eq!(copy.addr() % 4096, usize::from(code_offset(k)));
        // SAFETY: the copy has the original's type; it ignores its arguments.
        let returned = unsafe { (copy.entry())(std::ptr::null_mut(), 0) } as usize;
        // The call inside the copy returned into the copy: the copy ran, and its rewritten call
        // reached the helper outside it.
        assert_eq!(returned, copy.addr() + 6, "layout {k}");
    }
}

static GUARDS_DROPPED: AtomicUsize = AtomicUsize::new(0);

struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        GUARDS_DROPPED.fetch_add(1, Ordering::SeqCst);
    }
}

/// Sums `0..n`, panicking at 7: a guard in its frame makes the unwind run a landing pad of this
/// very function.
extern "C-unwind" fn panics_at_seven(_: *mut c_void, n: u64) -> u64 {
    let _guard = Guard;
    let mut acc = 0;
    for i in 0..std::hint::black_box(n) {
        if i == 7 {
            panic!("seven, in a copy");
        }
        acc += i;
    }
    acc
}

#[test]
fn a_panic_unwinds_through_a_copy_and_runs_its_cleanup() {
    // SAFETY: a function of this binary.
    let copy = unsafe { RelocatedFn::new(panics_at_seven, code_offset(3)) }.expect("copied");
    let f = copy.entry();
    // SAFETY: the copy has the original's type.
    assert_eq!(unsafe { f(std::ptr::null_mut(), 5) }, 10);
    let before = GUARDS_DROPPED.load(Ordering::SeqCst);
    // SAFETY: as above.
    let caught = std::panic::catch_unwind(|| unsafe { f(std::ptr::null_mut(), 100) });
    let payload = caught.expect_err("the copy panics at 7");
    assert_eq!(
        payload.downcast_ref::<&str>().copied(),
        Some("seven, in a copy")
    );
    assert_eq!(
        GUARDS_DROPPED.load(Ordering::SeqCst) - before,
        1,
        "the copy's landing pad dropped its guard"
    );
    // And it runs again after the panic.
    // SAFETY: as above.
    assert_eq!(unsafe { f(std::ptr::null_mut(), 7) }, 21);
}

#[test]
fn a_jump_table_is_refused_and_its_twin_runs_at_one_placement() {
    assert_eq!(hotlab_test_jump_table(std::ptr::null_mut(), 2), 12);
    let f = hotlab_test_jump_table as hotlab::measure::RawVariantFn;
    // SAFETY: a function of this binary.
    let refused = unsafe { RelocatedFn::new(f, code_offset(1)) }.expect_err("refused");
    // `and esi, 3` (3 bytes), `lea` (7), `movsxd` (4), `add` (3): the `jmp rax` is at +17;
    // the table is where the `lea` (at +3, 7 bytes) points.
    // SAFETY: the function's bytes, mapped text.
    let disp = unsafe { ((f as usize + 6) as *const i32).read_unaligned() };
    let table = (f as usize + 10).wrapping_add(disp as isize as usize) as u64;
    assert_eq!(refused, Refusal::JumpTable { jump: 17, table });
    assert!(refused.to_string().contains("jump table"), "{refused}");

    let twin = one_thread("jump_table", hotlab_test_jump_table, "a PIC jump table");
    let placed = TwinLayouts::new(&twin, 4);
    assert_eq!(placed.layouts(), 1);
    let why = placed.unplaced().expect("a reason");
    assert!(
        why.contains("twin jump_table cannot be copied")
            && why.contains("jump table (the indirect jump at +0x11"),
        "{why}"
    );
    assert_eq!(placed.name(0), "jump_table");
    assert_eq!(placed.run(0, 3), 13);
    // Asked for one placement, nothing is copied and nothing is refused.
    assert_eq!(TwinLayouts::new(&twin, 1).unplaced(), None);
}

/// A check under `--layouts 2` whose twin cannot be copied: the script has two placements, the
/// twin one, and the answer says why.
#[test]
fn a_check_whose_twin_cannot_be_copied_says_so() {
    use hotlab::cases::Mode;
    use hotlab::cases::check::{Against, CheckOptions, Script, check};
    use hotlab::lang::SourceFile;

    assert_eq!(
        hotlab_test_table_loop(std::ptr::null_mut(), 5),
        2 + 1 + 4 + 3 + 2
    );
    let twin: &'static Twin = Box::leak(Box::new(one_thread(
        "table_loop",
        hotlab_test_table_loop,
        "a loop through a jump table",
    )));
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/cases/int_loop.clif");
    let script = Script {
        mode: Mode::Clif,
        source: std::sync::Arc::new(SourceFile::new(
            "int_loop.clif",
            std::fs::read_to_string(path).unwrap(),
        )),
    };
    let options = CheckOptions {
        backend: hotlab::cases::Backend::Jit,
        band: 0.02,
        time: 0.3,
        iters: 1000,
        layouts: 2,
    };
    let a = check(&script, &Against::Twin(twin), &options).expect("an answer");
    assert_eq!((a.layouts, a.other_layouts), (2, 1), "{a:?}");
    let why = a.other_unplaced.as_deref().expect("a reason");
    assert!(why.contains("twin table_loop cannot be copied") && why.contains("jump table"));
    assert!(
        a.explanation.contains(why) && a.explanation.contains("so it ran at its one placement"),
        "{}",
        a.explanation
    );
    assert_eq!(a.layout_ratios.len(), 2, "{a:?}");
    assert_eq!(
        (a.layout_ns.len(), a.other_layout_ns.len()),
        (2, 1),
        "{a:?}"
    );
    // The sums differ from int_loop's: the answer says so (the check still measured).
    assert!(!a.results_equal);
}

/// An indirect jump that is not a jump table's (here a tail call through a register, which
/// rustc writes for a tail call of a function pointer) is copied.
#[test]
fn a_tail_call_through_a_register_is_copied() {
    assert_eq!(hotlab_test_tail_call(std::ptr::null_mut(), 1), 11);
    let f = hotlab_test_tail_call as hotlab::measure::RawVariantFn;
    // SAFETY: a function of this binary.
    let copy = unsafe { RelocatedFn::new(f, code_offset(6)) }.expect("copied");
    // SAFETY: the copy has the original's type.
    assert_eq!(unsafe { (copy.entry())(std::ptr::null_mut(), 3) }, 13);
}

#[test]
fn code_without_an_unwind_entry_or_not_at_a_start_is_refused() {
    assert_eq!(hotlab_test_no_frame(std::ptr::null_mut(), 0), 1);
    let f = hotlab_test_no_frame as hotlab::measure::RawVariantFn;
    // SAFETY: a function of this binary.
    let refused = unsafe { RelocatedFn::new(f, 16) }.expect_err("refused");
    assert_eq!(refused, Refusal::NoFrame);
    // One byte into a function (its second instruction, `call`): its entry starts before it.
    let inside = (hotlab_test_where as *const () as usize + 1) as *const ();
    // SAFETY: code of this binary, only read (refused before anything runs).
    let g = unsafe { std::mem::transmute::<*const (), hotlab::measure::RawVariantFn>(inside) };
    // SAFETY: as above.
    let refused = unsafe { RelocatedFn::new(g, 16) }.expect_err("refused");
    assert_eq!(refused, Refusal::NotAtStart(1));
}

/// The share of a copy's instructions that run in it, counted by single-stepping: exact, the
/// same on every count, and the copy is the one stepped (the original's extent holds none).
#[test]
fn the_share_of_instructions_in_a_copy_is_counted_exactly() {
    use hotlab::measure::Variant;
    use hotlab::measure::steps::instructions_inside;

    assert_eq!(hotlab_test_calls_in_loop(std::ptr::null_mut(), 4), 20);
    assert_eq!(hotlab_test_own_loop(std::ptr::null_mut(), 4), 44);
    for (f, own, total) in [
        (
            hotlab_test_calls_in_loop as hotlab::measure::RawVariantFn,
            3.0,
            9.0,
        ),
        (hotlab_test_own_loop, 9.0, 15.0),
    ] {
        // SAFETY: a function of this binary.
        let copy = unsafe { RelocatedFn::new(f, code_offset(2)) }.expect("copied");
        // SAFETY: the copy runs `n` iterations and ignores its (null) context; it outlives `v`.
        let mut v = unsafe { Variant::raw("copy", copy.entry(), std::ptr::null_mut()) };
        let extent = copy.addr()..copy.addr() + copy.len();
        for _ in 0..3 {
            let inside = instructions_inside(&mut v, extent.clone(), None).unwrap();
            assert_eq!((inside.inside_per_op, inside.per_op), (own, total));
        }
        let original = f as usize..f as usize + copy.len();
        let inside = instructions_inside(&mut v, original, None).unwrap();
        assert_eq!((inside.inside_per_op, inside.per_op), (0.0, total));
    }
}

/// A twin whose loop is in a callee is not placed, with the share in the reason; one whose
/// loop is its own is, and its stepped count is its variants' count.
#[test]
fn a_twin_whose_loop_is_in_a_callee_is_not_placed() {
    let callee = one_thread(
        "calls_in_loop",
        hotlab_test_calls_in_loop,
        "a loop whose work is in a callee",
    );
    let placed = TwinLayouts::new(&callee, 4);
    assert_eq!(placed.layouts(), 1);
    assert_eq!(
        placed.unplaced(),
        Some(
            "twin calls_in_loop cannot be placed: 67% of its instructions run in functions it \
             calls, which stay where rustc put them"
        )
    );
    assert_eq!(placed.instructions(), Some(9.0));
    // SAFETY: dropped before `placed`.
    let v = unsafe { placed.variant(0) };
    assert_eq!(v.instructions(), Some(9.0));
    drop(v);

    let own = one_thread(
        "own_loop",
        hotlab_test_own_loop,
        "a loop of its own that calls",
    );
    let placed = TwinLayouts::new(&own, 4);
    assert_eq!((placed.layouts(), placed.unplaced()), (4, None));
    assert_eq!(placed.own_share(), Some(0.6));
    for k in 0..4 {
        // SAFETY: dropped before `placed`.
        let v = unsafe { placed.variant(k) };
        assert_eq!(v.instructions(), Some(15.0), "layout {k}");
    }
    // One placement asked for: nothing is copied or stepped.
    assert_eq!(TwinLayouts::new(&callee, 1).instructions(), None);

    let two = Twin { threads: 2, ..own };
    let placed = TwinLayouts::new(&two, 4);
    assert_eq!(placed.layouts(), 1);
    assert_eq!(
        placed.unplaced(),
        Some("twin own_loop cannot be placed: its second thread runs code that is not copied")
    );
}
