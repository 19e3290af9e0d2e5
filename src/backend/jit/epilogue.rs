//! A peephole on Cranelift's x86-64 code: the epilogue's `mov rsp, rbp` becomes a nop where the
//! stack pointer already equals the frame pointer.
//!
//! Cranelift 0.135 ends every x86-64 function with `mov rsp, rbp; pop rbp; ret`, also when the
//! epilogue has just given the frame back (`add rsp, N`) or the function never moved `rsp`
//! after its prologue. On the machines hotlab runs on that `mov` is not free: it breaks the
//! stack engine's tracking of `rsp`, and the `pop` and `ret` behind it wait for a
//! synchronizing uop. Measured on the AMD EPYC VM, a call of a two-instruction function with
//! the frame setup: 1.90 ns with the `mov`, 1.10 ns with a 3-byte nop in its place, 1.12 ns
//! without any frame (interleaved in one run, `push rbp; mov rbp, rsp; imul; lea; ...; pop
//! rbp; ret`). Every call into script code pays it once: a host call, a virtual call, a method.
//!
//! The rewrite keeps the code's size, so the unwind information, the relocations, the frame
//! maps' return offsets and the source locations all stay as Cranelift made them. It is made
//! only where it provably changes nothing: the function's instructions write `rsp` only in its
//! prologue (`push rbp`, `mov rbp, rsp`, at most one `sub rsp, N`) and its epilogues (`add
//! rsp, N` with the same `N` right before the `mov rsp, rbp`, the `pop rbp` right after it),
//! besides calls and returns, which leave it as they found it. Then at every `mov rsp, rbp`
//! the stack pointer is the frame pointer, and the `mov` is dead. A function with any other
//! write of `rsp` (none that Cranelift makes for hotlab's code) is left as it is.

use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::{CompiledCode, Context};
use cranelift_module::{FuncId, Module, ModuleReloc, ModuleResult};
use iced_x86::{Code, Decoder, DecoderOptions, Instruction, Mnemonic, OpKind, Register};

/// `mov rsp, rbp` (REX.W 89 /r) as Cranelift encodes it.
const MOV_RSP_RBP: [u8; 3] = [0x48, 0x89, 0xec];

/// The 3-byte nop put in its place (`nop dword ptr [rax]`).
const NOP3: [u8; 3] = [0x0f, 0x1f, 0x00];

/// `module.define_function(id, ctx)` with the dead restores rewritten ([`dead_restores_of`])
/// on x86-64: compile, rewrite a copy of the bytes, define those with the same relocations.
/// `ctx` keeps the compiled code (its unwind information, call sites and source locations,
/// which the rewrite leaves valid) for the caller to read.
#[expect(
    clippy::result_large_err,
    reason = "the result of `Module::define_function`, which it stands in for"
)]
pub(crate) fn define_rewritten<M: Module>(
    module: &mut M,
    id: FuncId,
    ctx: &mut Context,
) -> ModuleResult<()> {
    if module.isa().name() != "x64" {
        return module.define_function(id, ctx);
    }
    let alignment = {
        let compiled = ctx.compile(module.isa(), &mut ControlPlane::default())?;
        u64::from(compiled.buffer.alignment)
    };
    let Some(compiled) = ctx.compiled_code() else {
        return module.define_function(id, ctx);
    };
    let mut bytes = compiled.code_buffer().to_vec();
    rewrite(&mut bytes, &dead_restores_of(compiled));
    let relocs: Vec<ModuleReloc> = compiled
        .buffer
        .relocs()
        .iter()
        .map(|r| ModuleReloc::from_mach_reloc(r, &ctx.func, id))
        .collect();
    module.define_function_bytes(id, alignment, &bytes, &relocs)
}

/// The offsets of the dead `mov rsp, rbp` instructions of a function Cranelift compiled for
/// x86-64 (none when the whole function does not allow the rewrite; see the module docs).
/// The `object` backend applies them to the function's bytes in the object file.
pub(crate) fn dead_restores_of(compiled: &CompiledCode) -> Vec<u32> {
    let relocated: Vec<u32> = compiled.buffer.relocs().iter().map(|r| r.offset).collect();
    dead_restore_offsets(compiled.code_buffer(), &relocated)
}

/// The offsets of the dead `mov rsp, rbp` instructions of `code` (one function's bytes as
/// Cranelift emitted them, its constants after the code, the fields at `relocated` not filled
/// in yet).
fn dead_restore_offsets(code: &[u8], relocated: &[u32]) -> Vec<u32> {
    let len = crate::backend::disasm::code_len_relocated(code, 0, relocated);
    let mut decoder = Decoder::new(64, &code[..len], DecoderOptions::NONE);
    let mut insts: Vec<Instruction> = Vec::new();
    while decoder.can_decode() {
        let inst = decoder.decode();
        // An indirect jump may be a jump table's (its entries follow it inline and would be
        // decoded as instructions, misaligning what comes after): no rewrite.
        let indirect = inst.mnemonic() == Mnemonic::Jmp && inst.op0_kind() != OpKind::NearBranch64;
        if inst.is_invalid() || indirect {
            return Vec::new();
        }
        insts.push(inst);
    }
    // Code ends in a jump, a return or a trap: anything else means the constants were taken to
    // start too early, and rsp writes after that point would go unseen.
    let ends = insts
        .last()
        .is_some_and(|i| matches!(i.mnemonic(), Mnemonic::Ret | Mnemonic::Jmp | Mnemonic::Ud2));
    if !ends {
        return Vec::new();
    }
    let Some(restores) = dead_restores(&insts) else {
        return Vec::new();
    };
    restores
        .into_iter()
        .map(|at| at as u32)
        .filter(|&at| code.get(at as usize..at as usize + 3) == Some(&MOV_RSP_RBP[..]))
        .collect()
}

/// Write the nop over each `mov rsp, rbp` at `offsets` of `code` (from [`dead_restores_of`]).
/// Returns how many were rewritten: an offset whose bytes are not that `mov` is left alone.
pub(crate) fn rewrite(code: &mut [u8], offsets: &[u32]) -> usize {
    let mut done = 0;
    for &at in offsets {
        let at = at as usize;
        if code.get(at..at + 3) == Some(&MOV_RSP_RBP[..]) {
            code[at..at + 3].copy_from_slice(&NOP3);
            done += 1;
        }
    }
    done
}

/// Rewrite each dead `mov rsp, rbp` of `code` (relocations applied, or none) into a nop.
#[cfg(test)]
fn drop_dead_frame_restores(code: &mut [u8]) -> usize {
    let offsets = dead_restore_offsets(code, &[]);
    rewrite(code, &offsets)
}

/// The offsets of the `mov rsp, rbp` instructions of `insts` that are dead, or `None` when the
/// function writes `rsp` in any way the rule does not cover.
fn dead_restores(insts: &[Instruction]) -> Option<Vec<u64>> {
    if insts.len() < 2
        || insts[0].code() != Code::Push_r64
        || insts[0].op0_register() != Register::RBP
        || !is_mov(&insts[1], Register::RBP, Register::RSP)
    {
        return None;
    }
    let frame = insts.get(2).and_then(|i| rsp_imm(i, Mnemonic::Sub));
    let body_start = if frame.is_some() { 3 } else { 2 };
    let mut restores = Vec::new();
    for (k, inst) in insts.iter().enumerate().skip(body_start) {
        if is_mov(inst, Register::RSP, Register::RBP) {
            // With a frame, the epilogue gave it back just before.
            if let Some(n) = frame
                && insts.get(k - 1).and_then(|p| rsp_imm(p, Mnemonic::Add)) != Some(n)
            {
                return None;
            }
            let pops_rbp = insts
                .get(k + 1)
                .is_some_and(|n| n.code() == Code::Pop_r64 && n.op0_register() == Register::RBP);
            if !pops_rbp {
                return None;
            }
            restores.push(inst.ip());
        } else if inst.code() == Code::Pop_r64 && inst.op0_register() == Register::RBP {
            if !insts
                .get(k - 1)
                .is_some_and(|p| is_mov(p, Register::RSP, Register::RBP))
            {
                return None;
            }
        } else if let Some(n) = rsp_imm(inst, Mnemonic::Add) {
            if Some(n) != frame
                || !insts
                    .get(k + 1)
                    .is_some_and(|m| is_mov(m, Register::RSP, Register::RBP))
            {
                return None;
            }
        } else if writes_rsp(inst) {
            return None;
        }
    }
    Some(restores)
}

/// `mov dst, src` between two 64-bit registers.
fn is_mov(inst: &Instruction, dst: Register, src: Register) -> bool {
    inst.mnemonic() == Mnemonic::Mov
        && inst.op_count() == 2
        && inst.op0_kind() == OpKind::Register
        && inst.op1_kind() == OpKind::Register
        && inst.op0_register() == dst
        && inst.op1_register() == src
}

/// `N` when `inst` is `add rsp, N` / `sub rsp, N` (as `mnemonic` says) with an immediate.
fn rsp_imm(inst: &Instruction, mnemonic: Mnemonic) -> Option<u64> {
    let imm = matches!(
        inst.op1_kind(),
        OpKind::Immediate8to64 | OpKind::Immediate32to64 | OpKind::Immediate8 | OpKind::Immediate32
    );
    (inst.mnemonic() == mnemonic
        && inst.op_count() == 2
        && inst.op0_kind() == OpKind::Register
        && inst.op0_register() == Register::RSP
        && imm)
        .then(|| inst.immediate(1))
}

/// Whether `inst` may change `rsp` other than as a call or return does (which leave it as
/// they found it): a push or pop, `enter`/`leave`, or any instruction with `rsp` (or a part
/// of it) as a register operand other than as a source of a plain `mov`.
fn writes_rsp(inst: &Instruction) -> bool {
    if matches!(
        inst.mnemonic(),
        Mnemonic::Call | Mnemonic::Ret | Mnemonic::Jmp | Mnemonic::Ud2 | Mnemonic::Nop
    ) {
        return false;
    }
    if matches!(
        inst.mnemonic(),
        Mnemonic::Push
            | Mnemonic::Pop
            | Mnemonic::Pushfq
            | Mnemonic::Popfq
            | Mnemonic::Enter
            | Mnemonic::Leave
    ) {
        return true;
    }
    (0..inst.op_count()).any(|i| {
        inst.op_kind(i) == OpKind::Register
            && matches!(
                inst.op_register(i),
                Register::RSP | Register::ESP | Register::SP | Register::SPL
            )
            && !(i == 1 && inst.mnemonic() == Mnemonic::Mov)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // push rbp; mov rbp,rsp; mov rax,[rsi+48h]; add rax,1; mov rsp,rbp; pop rbp; ret
    const LEAF: &[u8] = &[
        0x55, 0x48, 0x89, 0xe5, 0x48, 0x8b, 0x46, 0x48, 0x48, 0x83, 0xc0, 0x01, 0x48, 0x89, 0xec,
        0x5d, 0xc3,
    ];

    #[test]
    fn a_frameless_body_loses_its_restore() {
        let mut code = LEAF.to_vec();
        assert_eq!(drop_dead_frame_restores(&mut code), 1);
        assert_eq!(&code[12..15], &NOP3);
        assert_eq!(&code[..12], &LEAF[..12]);
        assert_eq!(&code[15..], &LEAF[15..]);
    }

    #[test]
    fn a_frame_given_back_first_loses_its_restore() {
        // push rbp; mov rbp,rsp; sub rsp,20h; mov [rsp],rbx; mov rbx,[rsp]; add rsp,20h;
        // mov rsp,rbp; pop rbp; ret
        let mut code = vec![
            0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x20, 0x48, 0x89, 0x1c, 0x24, 0x48, 0x8b,
            0x1c, 0x24, 0x48, 0x83, 0xc4, 0x20, 0x48, 0x89, 0xec, 0x5d, 0xc3,
        ];
        assert_eq!(drop_dead_frame_restores(&mut code), 1);
        assert_eq!(&code[20..23], &NOP3);
    }

    #[test]
    fn other_writes_of_rsp_keep_the_restore() {
        // A frame not given back (`add rsp,10h` where the prologue took 20h).
        let mut short = vec![
            0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x20, 0x48, 0x83, 0xc4, 0x10, 0x48, 0x89,
            0xec, 0x5d, 0xc3,
        ];
        let before = short.clone();
        assert_eq!(drop_dead_frame_restores(&mut short), 0);
        assert_eq!(short, before);
        // A push in the body.
        let mut pushed = vec![0x55, 0x48, 0x89, 0xe5, 0x53, 0x48, 0x89, 0xec, 0x5d, 0xc3];
        assert_eq!(drop_dead_frame_restores(&mut pushed), 0);
        // `sub rsp, rax` (a dynamic allocation).
        let mut dynamic = vec![
            0x55, 0x48, 0x89, 0xe5, 0x48, 0x29, 0xc4, 0x48, 0x89, 0xec, 0x5d, 0xc3,
        ];
        assert_eq!(drop_dead_frame_restores(&mut dynamic), 0);
        // No frame setup at all.
        let mut bare = vec![0x48, 0x89, 0xec, 0x5d, 0xc3];
        assert_eq!(drop_dead_frame_restores(&mut bare), 0);
    }

    #[test]
    fn a_jump_table_or_a_cut_short_body_keeps_the_restore() {
        // push rbp; mov rbp,rsp; jmp rax (a jump table's dispatch); mov rsp,rbp; pop rbp; ret
        let mut table = vec![
            0x55, 0x48, 0x89, 0xe5, 0xff, 0xe0, 0x48, 0x89, 0xec, 0x5d, 0xc3,
        ];
        assert_eq!(drop_dead_frame_restores(&mut table), 0);
        // push rbp; mov rbp,rsp; mov rsp,rbp; pop rbp; nop: code that does not end in a jump,
        // a return or a trap was cut before its end.
        let mut cut = vec![0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xec, 0x5d, 0x90];
        assert_eq!(drop_dead_frame_restores(&mut cut), 0);
    }

    #[test]
    fn an_unrelocated_got_load_is_no_constant() {
        // push rbp; mov rbp,rsp; mov rax,[rip+0] (a GOT load, its field at 7 not filled in
        // yet); call rax; mov rsp,rbp; pop rbp; ret
        let code = [
            0x55, 0x48, 0x89, 0xe5, 0x48, 0x8b, 0x05, 0x00, 0x00, 0x00, 0x00, 0xff, 0xd0, 0x48,
            0x89, 0xec, 0x5d, 0xc3,
        ];
        // Read as a constant, the load's target (the call) would end the code before the
        // epilogue: nothing found.
        assert_eq!(dead_restore_offsets(&code, &[]), Vec::<u32>::new());
        assert_eq!(dead_restore_offsets(&code, &[7]), vec![13]);
    }

    #[test]
    fn a_read_of_rsp_is_no_write() {
        // push rbp; mov rbp,rsp; mov rax,rsp; cmp rax,[rdi]; mov rsp,rbp; pop rbp; ret
        let mut code = vec![
            0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xe0, 0x48, 0x3b, 0x07, 0x48, 0x89, 0xec, 0x5d,
            0xc3,
        ];
        assert_eq!(drop_dead_frame_restores(&mut code), 1);
    }
}
