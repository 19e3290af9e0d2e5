//! The machine code of a row's call path: its bytes (for `jit`, the generated loop and inner
//! functions; for `aot`, rustc's monomorphized loop function), instruction counts, and each
//! step's listing with the address-free diff from the step before ([`StepCode`]), which
//! `hotlab asm --ladder` prints and the TUI's code pane shows (through the worker's
//! `ladder_code` job).

use iced_x86::{Decoder, DecoderOptions, Instruction, Mnemonic, OpKind};
use serde::{Deserialize, Serialize};

use super::Ladder;
use super::bench::{Build, BuildError, CalledMethod, LadderBench};
use crate::backend::disasm::{self, Syntax};
use crate::lang::Program;

/// One function of a row's path.
#[derive(Debug, Clone)]
pub struct CodeBlock {
    /// Its name (`r3_loop`, `aot_loop<Depth<Slot>>`).
    pub name: String,
    /// Where it runs.
    pub addr: u64,
    /// Its machine code.
    pub bytes: Vec<u8>,
}

impl CodeBlock {
    /// Instructions in the block.
    pub fn instructions(&self) -> usize {
        disasm::instruction_count(&self.bytes)
    }

    /// The listing without addresses or encodings, with branch and call targets inside the
    /// block written as offsets (so two rows' listings compare line by line).
    pub fn listing(&self, syntax: Syntax) -> Vec<String> {
        let end = self.addr + self.bytes.len() as u64;
        disasm::disassemble_in_process(&self.bytes, self.addr, syntax)
            .into_iter()
            .map(|l| {
                let mut text = l.text;
                // Targets inside the block become `+0x1c`; outside ones (helpers) stay absolute
                // but are stable within one process.
                if let Some(pos) = text.rfind(' ') {
                    let arg = text[pos + 1..].trim_end_matches('h');
                    if let Ok(target) = u64::from_str_radix(arg, 16)
                        && (self.addr..end).contains(&target)
                    {
                        text = format!("{} +{:#x}", &text[..pos], target - self.addr);
                    }
                }
                text
            })
            .collect()
    }
}

/// The machine code rustc made of a native twin, recovered from its address in this binary:
/// its length in bytes and its instructions (`hotlab asm --twin`, the TUI's code pane).
///
/// # Safety
/// As [`rust_function_bytes`]: `addr` is a twin's `f`, a function compiled into this binary.
pub unsafe fn twin_machine_code(addr: usize, syntax: Syntax) -> (usize, Vec<disasm::Line>) {
    // SAFETY: the caller's guarantee is the one `rust_function_bytes` needs.
    let bytes = unsafe { rust_function_bytes(addr) };
    let lines = disasm::disassemble_in_process(&bytes, addr as u64, syntax);
    (bytes.len(), lines)
}

/// The extent of a compiled Rust function that starts at `addr`: decode forward, following the
/// furthest forward branch target seen, and stop at the first `ret`, `jmp` or `ud2` past it.
/// Rust functions are contiguous and this recovers their length without a symbol table; capped
/// at 4 KiB.
///
/// # Safety
/// `addr` must be the start of a function in this process's code (readable memory).
pub unsafe fn rust_function_bytes(addr: usize) -> Vec<u8> {
    const CAP: usize = 4096;
    // SAFETY: the caller guarantees the code is mapped; functions this small are followed by
    // more code of the same text segment, so reading up to the cap stays inside it.
    let window = unsafe { std::slice::from_raw_parts(addr as *const u8, CAP) };
    let mut decoder = Decoder::with_ip(64, window, addr as u64, DecoderOptions::NONE);
    let mut instr = Instruction::default();
    let mut furthest = addr as u64;
    while decoder.can_decode() {
        decoder.decode_out(&mut instr);
        let next = instr.next_ip();
        let branch = instr.op_count() == 1
            && matches!(
                instr.op0_kind(),
                OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
            )
            && instr.mnemonic() != Mnemonic::Call;
        if branch
            && instr.near_branch_target() > furthest
            && instr.near_branch_target() < addr as u64 + CAP as u64
        {
            furthest = instr.near_branch_target();
        }
        let ends = matches!(
            instr.mnemonic(),
            Mnemonic::Jmp | Mnemonic::Ret | Mnemonic::Ud2 | Mnemonic::Int3
        ) || instr.is_invalid();
        if ends && next > furthest {
            return window[..(next - addr as u64) as usize].to_vec();
        }
    }
    window.to_vec()
}

/// A unified diff of two listings without addresses: `  ` kept, `- ` removed, `+ ` added
/// (longest common subsequence; listings are a few hundred lines at most).
pub fn diff(before: &[String], after: &[String]) -> (Vec<String>, usize, usize) {
    let (n, m) = (before.len(), after.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if before[i] == after[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let (mut out, mut added, mut removed) = (Vec::new(), 0, 0);
    while i < n || j < m {
        if i < n && j < m && before[i] == after[j] {
            out.push(format!("  {}", before[i]));
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push(format!("+ {}", after[j]));
            added += 1;
            j += 1;
        } else {
            out.push(format!("- {}", before[i]));
            removed += 1;
            i += 1;
        }
    }
    (out, added, removed)
}

/// The machine code of one step of a ladder in one build, and what changed from the step before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepCode {
    /// The step's title.
    pub title: String,
    /// The layer it adds.
    pub layer: String,
    /// The row's label in a measured ladder (`jit slot read`).
    pub label: String,
    /// The call path as a Rust type.
    pub path: String,
    /// Instructions in the row's call-path code.
    pub instructions: usize,
    /// The generated Cranelift IR (`jit` rows).
    pub clif: String,
    /// The listing: each function's name, then its instructions, without addresses.
    pub listing: Vec<String>,
    /// The unified diff from the step before (`None` for the first step), with the numbers of
    /// added and removed lines.
    pub diff: Option<(Vec<String>, usize, usize)>,
}

/// Each step's call-path machine code for one build of a built ladder, with its diff from the
/// step before.
pub fn step_code(bench: &LadderBench, want: Build, syntax: Syntax) -> Vec<StepCode> {
    let mut out: Vec<StepCode> = Vec::new();
    for row in bench
        .rows
        .iter()
        .filter(|r| r.build == Some(want) || r.build == Some(Build::Runtime))
    {
        let listing: Vec<String> = row
            .code
            .iter()
            .flat_map(|c| {
                std::iter::once(format!("{}:", c.name))
                    .chain(c.listing(syntax).into_iter().map(|l| format!("    {l}")))
            })
            .collect();
        let step = &bench.ladder.steps[row.step];
        // Against the step before's listing, kept in `out` (no copy).
        let diff = out
            .last()
            .filter(|before| !before.listing.is_empty())
            .map(|before| diff(&before.listing, &listing));
        out.push(StepCode {
            title: step.title.clone(),
            layer: step.layer.to_string(),
            label: row.label(&bench.ladder),
            path: row.path.to_string(),
            instructions: row.instructions(),
            clif: row.clif.clone(),
            listing,
            diff,
        });
    }
    out
}

/// Build `ladder`'s rows of one build around `program`'s `fn call` and return each step's code
/// ([`step_code`]): what `hotlab asm --ladder` prints and the worker's `ladder_code` job answers.
pub fn ladder_code(
    ladder: Ladder,
    program: &Program,
    build: Build,
    syntax: Syntax,
) -> Result<Vec<StepCode>, BuildError> {
    let bench = LadderBench::build(ladder, CalledMethod::Snippet(program), &[build])?;
    Ok(step_code(&bench, build, syntax))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_marks_added_and_removed_lines() {
        let a: Vec<String> = ["mov", "call", "ret"].map(String::from).to_vec();
        let b: Vec<String> = ["mov", "cmp", "call", "ret"].map(String::from).to_vec();
        let (lines, added, removed) = diff(&a, &b);
        assert_eq!((added, removed), (1, 0));
        assert_eq!(lines[1], "+ cmp");
        let (_, added, removed) = diff(&b, &a);
        assert_eq!((added, removed), (0, 1));
    }

    #[test]
    fn extent_of_a_rust_function_ends_at_its_return() {
        #[inline(never)]
        fn f(x: u64) -> u64 {
            if std::hint::black_box(x) > 3 {
                x * 7
            } else {
                x + 1
            }
        }
        std::hint::black_box(f(2));
        // SAFETY: `f` is a function of this process.
        let bytes = unsafe { rust_function_bytes(f as *const () as usize) };
        assert!(!bytes.is_empty() && bytes.len() < 4096);
        let last = disasm::disassemble(&bytes, 0, Syntax::Intel);
        let last = last.last().unwrap();
        assert!(
            ["ret", "jmp", "int3", "ud2"]
                .iter()
                .any(|m| last.text.starts_with(m)),
            "{}",
            last.text
        );
    }
}
