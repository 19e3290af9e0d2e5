//! Which function a call through a register reaches, for its name in a listing: what each
//! general register was loaded with on the straight path before the call (`mov rax,hot_sink`
//! ... `call rax`), or, for a register the whole function writes only once (a callee-saved
//! register rustc loads from the GOT before a loop: `mov rbp,[malloc@got]` ... `call rbp`),
//! that one value after its load. Anything else the code writes forgets what a register held.

use std::collections::{HashMap, HashSet};

use iced_x86::{Decoder, DecoderOptions, Instruction, Mnemonic, OpKind, Register};

use super::Names;

/// The 64-bit register a 32-, 16- or 8-bit general register is part of (others as they are).
fn full(r: Register) -> Register {
    use Register::*;
    const PARTS: [[Register; 4]; 16] = [
        [RAX, EAX, AX, AL],
        [RCX, ECX, CX, CL],
        [RDX, EDX, DX, DL],
        [RBX, EBX, BX, BL],
        [RSP, ESP, SP, SPL],
        [RBP, EBP, BP, BPL],
        [RSI, ESI, SI, SIL],
        [RDI, EDI, DI, DIL],
        [R8, R8D, R8W, R8L],
        [R9, R9D, R9W, R9L],
        [R10, R10D, R10W, R10L],
        [R11, R11D, R11W, R11L],
        [R12, R12D, R12W, R12L],
        [R13, R13D, R13W, R13L],
        [R14, R14D, R14W, R14L],
        [R15, R15D, R15W, R15L],
    ];
    match r {
        AH => RAX,
        CH => RCX,
        DH => RDX,
        BH => RBX,
        _ => PARTS
            .iter()
            .find(|parts| parts.contains(&r))
            .map_or(r, |parts| parts[0]),
    }
}

/// The registers a call may change (System V).
const CALLER_SAVED: [Register; 9] = [
    Register::RAX,
    Register::RCX,
    Register::RDX,
    Register::RSI,
    Register::RDI,
    Register::R8,
    Register::R9,
    Register::R10,
    Register::R11,
];

/// What one instruction writes.
struct Writes {
    /// The register it names first, and the address it loads into it when it is one.
    dest: Option<(Register, Option<u64>)>,
    /// The other registers it may change.
    others: Others,
}

enum Others {
    None,
    CallerSaved,
    All,
}

fn writes(instr: &Instruction, names: &Names) -> Writes {
    use Mnemonic::*;
    // These read the register they name first.
    let reads_first = matches!(instr.mnemonic(), Push | Cmp | Test | Bt | Call | Jmp);
    let dest =
        (instr.op_count() > 0 && instr.op0_kind() == OpKind::Register && !reads_first).then(|| {
            let loaded = match instr.mnemonic() {
                Mov if matches!(
                    instr.op1_kind(),
                    OpKind::Immediate64 | OpKind::Immediate32to64 | OpKind::Immediate32
                ) =>
                {
                    Some(instr.immediate(1))
                }
                Mov if instr.is_ip_rel_memory_operand() => {
                    names.slot(instr.ip_rel_memory_address())
                }
                Lea if instr.is_ip_rel_memory_operand() => Some(instr.ip_rel_memory_address()),
                _ => None,
            };
            (full(instr.op0_register()), loaded)
        });
    let others = match instr.mnemonic() {
        Call => Others::CallerSaved,
        // Instructions that write registers they do not name first.
        Mul | Div | Idiv | Imul | Xchg | Xadd | Cmpxchg | Cmpxchg16b | Cpuid | Rdtsc | Rdtscp
        | Syscall | Leave | Movsb | Movsw | Movsd | Movsq | Stosb | Stosw | Stosd | Stosq
        | Lodsb | Lodsw | Lodsd | Lodsq | Scasb | Scasw | Scasd | Scasq | Cmpsb | Cmpsw | Cmpsd
        | Cmpsq => Others::All,
        // Those that write no general register.
        Ret | Ud2 | Int3 | Nop | Pause | Lfence | Mfence | Sfence | Endbr64 | Hlt | Vzeroupper => {
            Others::None
        }
        // Any other without operands (`cqo`) writes some.
        _ if instr.op_count() == 0 => Others::All,
        _ => Others::None,
    };
    Writes { dest, others }
}

/// What the registers hold while a listing is decoded, one instruction after the other.
pub(super) struct Registers {
    /// On the straight path since the last jump target.
    held: HashMap<Register, u64>,
    /// The registers the function writes once (besides restoring them with `pop` in an
    /// epilogue), with a known address: `(where, value)`.
    once: HashMap<Register, (u64, u64)>,
    /// Where each register is popped.
    pops: HashMap<Register, Vec<u64>>,
    /// The targets of the jumps inside the function.
    targets: HashSet<u64>,
}

impl Registers {
    /// Ready for the function `code` at `addr` (read once through first).
    pub(super) fn new(code: &[u8], addr: u64, names: &Names) -> Registers {
        let mut decoder = Decoder::with_ip(64, code, addr, DecoderOptions::NONE);
        let mut instr = Instruction::default();
        let mut targets = HashSet::new();
        let mut defs: HashMap<Register, Vec<(u64, Option<u64>)>> = HashMap::new();
        let mut pops: HashMap<Register, Vec<u64>> = HashMap::new();
        let mut clobbered_all = false;
        while decoder.can_decode() {
            decoder.decode_out(&mut instr);
            if instr.is_invalid() {
                continue;
            }
            if instr.mnemonic() != Mnemonic::Call
                && matches!(
                    instr.op0_kind(),
                    OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
                )
            {
                targets.insert(instr.near_branch_target());
            }
            let w = writes(&instr, names);
            match w.dest {
                Some((r, _)) if instr.mnemonic() == Mnemonic::Pop => {
                    pops.entry(r).or_default().push(instr.ip());
                }
                Some((r, value)) => defs.entry(r).or_default().push((instr.ip(), value)),
                None => {}
            }
            match w.others {
                Others::None => {}
                Others::CallerSaved => {
                    for r in CALLER_SAVED {
                        defs.entry(r).or_default().push((instr.ip(), None));
                    }
                }
                Others::All => clobbered_all = true,
            }
        }
        let once = if clobbered_all {
            HashMap::new()
        } else {
            defs.into_iter()
                .filter_map(|(r, d)| match d[..] {
                    [(at, Some(value))] => Some((r, (at, value))),
                    _ => None,
                })
                .collect()
        };
        Registers {
            held: HashMap::new(),
            once,
            pops,
            targets,
        }
    }

    /// The address the indirect call or jump `instr` goes to, when known.
    pub(super) fn called(&mut self, instr: &Instruction) -> Option<u64> {
        if self.targets.contains(&instr.ip()) {
            // Reached from elsewhere too: what the straight path loaded is not known here.
            self.held.clear();
        }
        let indirect = matches!(instr.mnemonic(), Mnemonic::Call | Mnemonic::Jmp);
        if !indirect || instr.op0_kind() != OpKind::Register {
            return None;
        }
        let r = full(instr.op0_register());
        self.held.get(&r).copied().or_else(|| {
            let &(at, value) = self.once.get(&r)?;
            let ip = instr.ip();
            let popped = self
                .pops
                .get(&r)
                .is_some_and(|p| p.iter().any(|&p| at < p && p < ip));
            (at < ip && !popped).then_some(value)
        })
    }

    /// Follow what `instr` writes.
    pub(super) fn after(&mut self, instr: &Instruction, names: &Names) {
        let w = writes(instr, names);
        if let Some((r, loaded)) = w.dest {
            match loaded {
                Some(value) => self.held.insert(r, value),
                None => self.held.remove(&r),
            };
        }
        match w.others {
            Others::None => {}
            Others::CallerSaved => {
                for r in CALLER_SAVED {
                    self.held.remove(&r);
                }
            }
            Others::All => self.held.clear(),
        }
    }
}
