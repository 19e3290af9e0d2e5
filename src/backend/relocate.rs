//! Copies of a compiled function of this binary at other places in memory, for measuring Rust
//! code (a case's native twin) at several placements as `--layouts K` does script code
//! (`jit::layout`).
//!
//! # What a copy is
//! The function's bytes, unchanged except for every 32-bit pc-relative field that reaches
//! outside the function: the displacement of a `rip`-relative operand (a static, a constant, a
//! GOT slot) and the offset of a branch or call to another function. Each is rewritten so that
//! the copy reaches the very same address as the original. Branches inside the function move
//! with it and keep their bytes. So every instruction of the copy has the original's length and
//! offset: loop heads stay on the alignment rustc gave them relative to the function's start,
//! and the function's unwind table (offsets into the function) describes the copy as it is.
//!
//! Re-encoding with iced's `BlockEncoder` was tried first and is not used: it writes rustc's
//! padding NOPs (`66 66 2e 0f 1f 84 ..`, up to 15 bytes) in their shortest form, so even with
//! `DONT_FIX_BRANCHES` 20 of the 38 twins differed from rustc's bytes and 18 came out 1 to 7
//! bytes shorter, every loop after such padding off its 16-byte alignment (a placement change
//! of its own) and the unwind table no longer matching.
//!
//! # Where the function ends, and its frame
//! The extent is the function's unwind entry (its FDE in `.eh_frame`, found with libgcc's
//! `_Unwind_Find_FDE`): rustc writes one for every function, and its range is exact, where
//! decoding forward can only guess. The copy gets its own FDE, registered with the unwinder: the
//! original's call-frame instructions, the same personality routine and the same LSDA. The
//! LSDA's call sites and landing pads are offsets from the start of the function the unwinder
//! found (`_Unwind_GetRegionStart`), so a panic that unwinds through the copy runs the copy's
//! own cleanups and is caught where the original's would be.
//!
//! # What is refused
//! A function is copied only when every reference it makes is one of those above. Refused, each
//! with its reason ([`Refusal`]): no unwind entry (or one that does not start at the
//! function); more than [`MAX_BYTES`]; a byte range that does not decode; a jump table (its
//! entries are offsets to the original's blocks: a copy would jump back into the original; see
//! [`fixups`] for how one is told from a tail call through a pointer, which is copied); a short
//! branch out of the function (its 8-bit offset cannot reach from elsewhere); a far branch; a
//! `rip`-relative reference into the function's own bytes (data in the code, or a code
//! address the copy would not move); a target more than 2 GiB from the copy (no room near
//! hotlab's code); frame instructions other than plain rules (DWARF expressions,
//! `DW_CFA_set_loc`). hotlab is a position-independent executable, so its code holds no
//! absolute addresses (they would need load-time relocations of the text): every address the
//! code uses is one of the pc-relative fields the decoder sees.
//!
//! Functions the copy calls stay where they are, in the binary, as does every static it reads.

use std::ffi::c_void;
use std::fmt;

use cranelift_codegen::gimli::{self, UnwindSection, write::CallFrameInstruction};
use iced_x86::{Decoder, DecoderOptions, Instruction, Mnemonic, OpKind};

use crate::measure::RawVariantFn;
use crate::measure::near::Pages;

use super::jit::unwind::RegisteredFrames;

/// The largest function copied (the largest twin, `nbody`, is about 4 KiB).
pub const MAX_BYTES: usize = 64 << 10;

/// Why a function was not copied: it then runs at its one placement.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No unwind entry covers the address.
    #[error("it has no unwind entry, so its extent and its frame are unknown")]
    NoFrame,
    /// The unwind entry covering the address starts elsewhere.
    #[error("its unwind entry starts {0:#x} bytes before it: it is not a function's start")]
    NotAtStart(u64),
    /// Larger than [`MAX_BYTES`].
    #[error("it is {0} bytes, more than the {MAX_BYTES} a copy may have")]
    TooLarge(usize),
    /// Its unwind entry cannot be read, or uses what a copy cannot carry.
    #[error("its unwind entry {0}")]
    Frame(String),
    /// Bytes that do not decode as an instruction.
    #[error("its bytes at +{0:#x} do not decode as an x86-64 instruction")]
    Undecodable(usize),
    /// An indirect jump through a jump table of the function's.
    #[error(
        "it dispatches through a jump table (the indirect jump at +{jump:#x}; the table at \
         {table:#x} holds offsets that lead into the original, not the copy)"
    )]
    JumpTable {
        /// The offset of the jump.
        jump: usize,
        /// The table's address.
        table: u64,
    },
    /// An indirect jump whose target cannot be told a tail call's.
    #[error(
        "it has an indirect jump at +{0:#x} that may be a jump table's (an address it takes \
         cannot be read, or the jump reads an absolute address)"
    )]
    IndirectJump(usize),
    /// A short branch to a target outside the function.
    #[error("its short branch at +{0:#x} leaves the function (8 bits cannot reach from a copy)")]
    ShortBranchOut(usize),
    /// A far branch.
    #[error("it has a far branch at +{0:#x}")]
    FarBranch(usize),
    /// A `rip`-relative operand that points into the function.
    #[error(
        "its instruction at +{0:#x} takes an address inside the function itself (data in the \
         code, or a code address a copy would not move)"
    )]
    ReadsOwnCode(usize),
    /// A pc-relative field whose bytes do not hold what the decoder says it reaches.
    #[error("its instruction at +{0:#x} has a pc-relative field in an unexpected place")]
    UnexpectedEncoding(usize),
    /// A target out of a 32-bit offset's reach from the copy.
    #[error(
        "its instruction at +{0:#x} reaches a target more than 2 GiB from the copy (no room \
         for code near hotlab's)"
    )]
    TooFar(usize),
    /// No executable memory.
    #[error("no memory for the copy: {0}")]
    Memory(String),
    /// Not an x86-64 Linux process.
    #[error("copies are made on x86-64 Linux only")]
    Unsupported,
}

/// One 32-bit pc-relative field of the copy to rewrite: at `at` bytes into the function, in an
/// instruction that starts at `instr` and ends at `end`, reaching the absolute `target`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fixup {
    at: usize,
    instr: usize,
    end: usize,
    target: u64,
}

/// The fields of `code` (a whole function that runs at `start`) a copy must rewrite, or why it
/// cannot be copied (see the module docs). `read` reads 4 bytes of the process at an address
/// (`None` where nothing is mapped).
///
/// An indirect jump is a tail call through a pointer (a GOT slot, a vtable, a function pointer
/// in a register) or a jump table's dispatch. In position-independent code LLVM's jump table
/// is 32-bit offsets from the table, which the function takes the address of with a `rip`-relative
/// `lea`, and the dispatch adds an entry to that address (`lea rT, [rip + table]; movsxd rX,
/// dword ptr [rT + rI*4]; add rX, rT; jmp rX`). So a function with an indirect jump is refused
/// when the first entry at an address it `lea`s leads into the function, or cannot be read.
fn fixups(
    code: &[u8],
    start: u64,
    read: &dyn Fn(u64) -> Option<i32>,
) -> Result<Vec<Fixup>, Refusal> {
    let end = start + code.len() as u64;
    let inside = |target: u64| (start..end).contains(&target);
    let mut decoder = Decoder::with_ip(64, code, start, DecoderOptions::NONE);
    let mut instr = Instruction::default();
    let mut out = Vec::new();
    let mut offset = 0usize;
    // The first indirect jump, and the addresses the function takes with a `lea`.
    let mut indirect = None;
    let mut taken = Vec::new();
    while decoder.can_decode() {
        decoder.decode_out(&mut instr);
        if instr.is_invalid() {
            return Err(Refusal::Undecodable(offset));
        }
        let len = instr.len();
        let bytes = &code[offset..offset + len];
        let offsets = decoder.get_constant_offsets(&instr);
        // A 32-bit field at `at` (within the instruction) that must reach `target` now.
        let field = |at: usize, target: u64| -> Result<Fixup, Refusal> {
            let raw = bytes
                .get(at..at + 4)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .ok_or(Refusal::UnexpectedEncoding(offset))?;
            let next = instr.next_ip();
            if next.wrapping_add(i32::from_le_bytes(raw) as i64 as u64) != target {
                return Err(Refusal::UnexpectedEncoding(offset));
            }
            Ok(Fixup {
                at: offset + at,
                instr: offset,
                end: offset + len,
                target,
            })
        };
        let kinds: Vec<OpKind> = (0..instr.op_count()).map(|i| instr.op_kind(i)).collect();
        if kinds
            .iter()
            .any(|k| matches!(k, OpKind::FarBranch16 | OpKind::FarBranch32))
        {
            return Err(Refusal::FarBranch(offset));
        }
        if instr.is_ip_rel_memory_operand() {
            let target = instr.ip_rel_memory_address();
            if inside(target) {
                return Err(Refusal::ReadsOwnCode(offset));
            }
            out.push(field(offsets.displacement_offset(), target)?);
            if instr.mnemonic() == Mnemonic::Lea {
                taken.push(target);
            }
        } else if kinds.iter().any(|k| {
            matches!(
                k,
                OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
            )
        }) {
            let target = instr.near_branch_target();
            if !inside(target) {
                if offsets.immediate_size() != 4 {
                    return Err(Refusal::ShortBranchOut(offset));
                }
                out.push(field(offsets.immediate_offset(), target)?);
            }
        } else if instr.mnemonic() == Mnemonic::Jmp {
            // `jmp [rip + slot]` (a tail call through the GOT) was taken above.
            match instr.op0_kind() {
                // An absolute table (`jmp [table + rI*8]`): not position-independent.
                OpKind::Memory if instr.memory_base() == iced_x86::Register::None => {
                    return Err(Refusal::IndirectJump(offset));
                }
                OpKind::Register | OpKind::Memory => {
                    indirect.get_or_insert(offset);
                }
                _ => {}
            }
        }
        offset += len;
    }
    if offset != code.len() {
        return Err(Refusal::Undecodable(offset));
    }
    if let Some(jump) = indirect {
        for table in taken {
            let entry = read(table).ok_or(Refusal::IndirectJump(jump))?;
            if inside(table.wrapping_add(entry as i64 as u64)) {
                return Err(Refusal::JumpTable { jump, table });
            }
        }
    }
    Ok(out)
}

/// 4 bytes of this process at `addr`, if they lie in a readable segment of a loaded object (the
/// executable's text, read-only data, data and bss are): reading elsewhere could fault.
fn read_mapped(addr: u64) -> Option<i32> {
    struct Find {
        addr: u64,
        found: bool,
    }
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _: libc::size_t,
        data: *mut c_void,
    ) -> libc::c_int {
        // SAFETY: `dl_iterate_phdr` hands each loaded object's info, valid during the call;
        // `data` is the `Find` passed below.
        let (info, find) = unsafe { (&*info, &mut *data.cast::<Find>()) };
        for k in 0..usize::from(info.dlpi_phnum) {
            // SAFETY: `dlpi_phdr` points at `dlpi_phnum` program headers.
            let ph = unsafe { &*info.dlpi_phdr.add(k) };
            let lo = info.dlpi_addr.wrapping_add(ph.p_vaddr);
            let hi = lo.wrapping_add(ph.p_memsz);
            if ph.p_type == libc::PT_LOAD
                && ph.p_flags & libc::PF_R != 0
                && lo <= find.addr
                && find.addr.checked_add(4).is_some_and(|e| e <= hi)
            {
                find.found = true;
                return 1;
            }
        }
        0
    }
    let mut find = Find { addr, found: false };
    // SAFETY: the callback only reads the headers it is given and writes `find`.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&mut find as *mut Find).cast()) };
    if !find.found {
        return None;
    }
    // SAFETY: the 4 bytes lie in a readable, loaded segment, mapped for the object's life (the
    // executable's: the process's).
    Some(unsafe { (addr as *const i32).read_unaligned() })
}

/// `code` with `fixups` rewritten for a copy at `at`.
fn relocated(code: &[u8], fixups: &[Fixup], at: u64) -> Result<Vec<u8>, Refusal> {
    let mut out = code.to_vec();
    for f in fixups {
        let next = at.wrapping_add(f.end as u64);
        let delta = f.target.wrapping_sub(next) as i64;
        let rel = i32::try_from(delta).map_err(|_| Refusal::TooFar(f.instr))?;
        out[f.at..f.at + 4].copy_from_slice(&rel.to_le_bytes());
    }
    Ok(out)
}

/// Checks that `copy` (at `at`) is `code` (at `start`) moved: the same instructions, of the
/// same lengths at the same offsets, each reaching the same address outside the function or
/// the same place inside it. `Err` names the first instruction that is not.
fn same_code(code: &[u8], start: u64, copy: &[u8], at: u64) -> Result<(), usize> {
    if code.len() != copy.len() {
        return Err(0);
    }
    let end = start + code.len() as u64;
    let moved = |target: u64| {
        if (start..end).contains(&target) {
            target - start + at
        } else {
            target
        }
    };
    let a = Decoder::with_ip(64, code, start, DecoderOptions::NONE);
    let b = Decoder::with_ip(64, copy, at, DecoderOptions::NONE);
    let mut offset = 0;
    for (x, y) in a.into_iter().zip(b) {
        let branch = |i: &Instruction| {
            (0..i.op_count()).any(|k| {
                matches!(
                    i.op_kind(k),
                    OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
                )
            })
        };
        let same = x.code() == y.code()
            && x.len() == y.len()
            && (!x.is_ip_rel_memory_operand()
                || moved(x.ip_rel_memory_address()) == y.ip_rel_memory_address())
            && (!branch(&x) || moved(x.near_branch_target()) == y.near_branch_target());
        if !same {
            return Err(offset);
        }
        offset += x.len();
    }
    if offset == code.len() {
        Ok(())
    } else {
        Err(offset)
    }
}

/// libgcc's `struct dwarf_eh_bases`.
#[repr(C)]
struct DwarfEhBases {
    tbase: *mut c_void,
    dbase: *mut c_void,
    func: *mut c_void,
}

unsafe extern "C" {
    /// libgcc's lookup of the FDE covering `pc` (registered frames, then every loaded
    /// object's `.eh_frame_hdr`); null when there is none.
    fn _Unwind_Find_FDE(pc: *mut c_void, bases: *mut DwarfEhBases) -> *const u8;
}

/// What a copy needs of the original's unwind entry: its extent, and its frame table rebuilt
/// for any address ([`OriginalFrame::table_at`]).
struct OriginalFrame {
    len: usize,
    code_alignment: u8,
    data_alignment: i8,
    return_address: gimli::Register,
    /// The personality routine's address (resolved, not the GOT slot).
    personality: Option<u64>,
    lsda: Option<u64>,
    initial: Vec<CallFrameInstruction>,
    /// The function's instructions with their offsets into it.
    rules: Vec<(u32, CallFrameInstruction)>,
}

/// The unwind entry of the function at `addr`.
///
/// # Safety
/// `addr` must be code of this process.
unsafe fn original_frame(addr: usize) -> Result<OriginalFrame, Refusal> {
    let mut bases = DwarfEhBases {
        tbase: std::ptr::null_mut(),
        dbase: std::ptr::null_mut(),
        func: std::ptr::null_mut(),
    };
    // SAFETY: a lookup; `bases` is written only when an FDE is found.
    let fde = unsafe { _Unwind_Find_FDE(addr as *mut c_void, &mut bases) };
    if fde.is_null() {
        return Err(Refusal::NoFrame);
    }
    let bad = |what: &str| Refusal::Frame(what.to_string());
    // SAFETY: libgcc returned an FDE of a loaded object's `.eh_frame`, which starts with its
    // length and its CIE pointer (readable, unaligned).
    let (length, cie_pointer) = unsafe {
        (
            fde.cast::<u32>().read_unaligned(),
            fde.add(4).cast::<u32>().read_unaligned(),
        )
    };
    if length == u32::MAX {
        return Err(bad("is in the 64-bit DWARF format"));
    }
    // In `.eh_frame` the CIE pointer counts back from its own field to the CIE.
    let fde_at = fde as usize;
    let cie_at = (fde_at + 4)
        .checked_sub(cie_pointer as usize)
        .ok_or_else(|| bad("points at no CIE"))?;
    let entry_end = fde_at + 4 + length as usize;
    // SAFETY: the CIE and the FDE lie in the same mapped `.eh_frame`, CIE first; the section
    // is read-only data for the life of the process.
    let section = unsafe { std::slice::from_raw_parts(cie_at as *const u8, entry_end - cie_at) };
    let eh_frame = gimli::EhFrame::new(section, gimli::NativeEndian::default());
    let bases = gimli::BaseAddresses::default()
        .set_eh_frame(cie_at as u64)
        .set_text(bases.tbase as u64)
        .set_got(bases.dbase as u64);
    let parsed = eh_frame
        .fde_from_offset(
            &bases,
            gimli::EhFrameOffset(fde_at - cie_at),
            gimli::EhFrame::cie_from_offset,
        )
        .map_err(|e| Refusal::Frame(format!("cannot be read: {e}")))?;
    let start = parsed.initial_address();
    if start != addr as u64 {
        return Err(Refusal::NotAtStart((addr as u64).wrapping_sub(start)));
    }
    let len = usize::try_from(parsed.len()).unwrap_or(usize::MAX);
    if len > MAX_BYTES {
        return Err(Refusal::TooLarge(len));
    }
    if len == 0 {
        return Err(bad("covers no bytes"));
    }
    let cie = parsed.cie();
    let code_alignment = u8::try_from(cie.code_alignment_factor())
        .map_err(|_| bad("has a code alignment factor above 255"))?;
    let data_alignment = i8::try_from(cie.data_alignment_factor())
        .map_err(|_| bad("has a data alignment factor out of range"))?;
    let resolve = |p: gimli::Pointer| match p {
        gimli::Pointer::Direct(a) => a,
        // SAFETY: an indirect pointer of a loaded object's CIE names a GOT slot of that object,
        // mapped and filled in by the loader before any code ran.
        gimli::Pointer::Indirect(slot) => unsafe { (slot as *const u64).read_unaligned() },
    };
    let personality = cie.personality().map(resolve);
    let lsda = parsed.lsda().map(resolve);
    let convert = |mut it: gimli::CallFrameInstructionIter<'_, _>| {
        let mut offset = 0u32;
        let mut out = Vec::new();
        while let Some(i) = it
            .next()
            .map_err(|e| Refusal::Frame(format!("cannot be read: {e}")))?
        {
            if let Some(w) = write_rule(i, cie, &mut offset)? {
                out.push((offset, w));
            }
        }
        Ok::<_, Refusal>(out)
    };
    let initial = convert(cie.instructions(&eh_frame, &bases))?
        .into_iter()
        .map(|(_, i)| i)
        .collect();
    let rules = convert(parsed.instructions(&eh_frame, &bases))?;
    Ok(OriginalFrame {
        len,
        code_alignment,
        data_alignment,
        return_address: cie.return_address_register(),
        personality,
        lsda,
        initial,
        rules,
    })
}

/// One call-frame instruction as gimli writes it (`None`: it only advances `offset`, or pads),
/// its factored offsets made plain.
fn write_rule<R: gimli::Reader<Offset = usize>>(
    i: gimli::CallFrameInstruction<usize>,
    cie: &gimli::CommonInformationEntry<R>,
    offset: &mut u32,
) -> Result<Option<CallFrameInstruction>, Refusal> {
    use gimli::CallFrameInstruction as I;
    use gimli::write::CallFrameInstruction as W;
    let data = cie.data_alignment_factor();
    let range = || Refusal::Frame("has an offset out of range".into());
    // A factored data offset made plain.
    let scaled = |factored: i64| {
        factored
            .checked_mul(data)
            .and_then(|x| i32::try_from(x).ok())
            .ok_or_else(range)
    };
    let unsigned = |factored: u64| {
        i64::try_from(factored)
            .map_err(|_| range())
            .and_then(scaled)
    };
    let plain = |x: u64| i32::try_from(x).map_err(|_| range());
    Ok(Some(match i {
        I::AdvanceLoc { delta } => {
            let by = u64::from(delta) * cie.code_alignment_factor();
            *offset = u32::try_from(u64::from(*offset) + by)
                .map_err(|_| Refusal::Frame("advances past 4 GiB".into()))?;
            return Ok(None);
        }
        I::Nop => return Ok(None),
        I::DefCfa { register, offset } => W::Cfa(register, plain(offset)?),
        I::DefCfaSf {
            register,
            factored_offset,
        } => W::Cfa(register, scaled(factored_offset)?),
        I::DefCfaRegister { register } => W::CfaRegister(register),
        I::DefCfaOffset { offset } => W::CfaOffset(plain(offset)?),
        I::DefCfaOffsetSf { factored_offset } => W::CfaOffset(scaled(factored_offset)?),
        I::Undefined { register } => W::Undefined(register),
        I::SameValue { register } => W::SameValue(register),
        I::Offset {
            register,
            factored_offset,
        } => W::Offset(register, unsigned(factored_offset)?),
        I::OffsetExtendedSf {
            register,
            factored_offset,
        } => W::Offset(register, scaled(factored_offset)?),
        I::ValOffset {
            register,
            factored_offset,
        } => W::ValOffset(register, unsigned(factored_offset)?),
        I::ValOffsetSf {
            register,
            factored_offset,
        } => W::ValOffset(register, scaled(factored_offset)?),
        I::Register {
            dest_register,
            src_register,
        } => W::Register(dest_register, src_register),
        I::Restore { register } => W::Restore(register),
        I::RememberState => W::RememberState,
        I::RestoreState => W::RestoreState,
        I::ArgsSize { size } => W::ArgsSize(
            u32::try_from(size)
                .map_err(|_| Refusal::Frame("has an args size out of range".into()))?,
        ),
        I::SetLoc { .. } => return Err(Refusal::Frame("sets its location absolutely".into())),
        I::DefCfaExpression { .. } | I::Expression { .. } | I::ValExpression { .. } => {
            return Err(Refusal::Frame("uses a DWARF expression".into()));
        }
        I::NegateRaState => return Err(Refusal::Frame("signs return addresses".into())),
    }))
}

impl OriginalFrame {
    /// The frame table of a copy at `at`: one CIE (the original's rules, its personality and
    /// LSDA as absolute addresses) and the copy's FDE.
    fn table_at(&self, at: u64) -> gimli::write::FrameTable {
        use gimli::write::{Address, CommonInformationEntry, FrameDescriptionEntry, FrameTable};
        let encoding = gimli::Encoding {
            format: gimli::Format::Dwarf32,
            version: 1,
            address_size: 8,
        };
        let mut cie = CommonInformationEntry::new(
            encoding,
            self.code_alignment,
            self.data_alignment,
            self.return_address,
        );
        cie.personality = self
            .personality
            .map(|p| (gimli::DW_EH_PE_absptr, Address::Constant(p)));
        cie.lsda_encoding = self.lsda.map(|_| gimli::DW_EH_PE_absptr);
        for i in &self.initial {
            cie.add_instruction(i.clone());
        }
        // `len` is at most MAX_BYTES.
        let mut fde = FrameDescriptionEntry::new(Address::Constant(at), self.len as u32);
        fde.lsda = self.lsda.map(Address::Constant);
        for (offset, i) in &self.rules {
            fde.add_instruction(*offset, i.clone());
        }
        let mut table = FrameTable::default();
        let id = table.add_cie(cie);
        table.add_fde(id, fde);
        table
    }
}

/// A copy of a function of this binary in executable pages near hotlab's code, with its
/// registered unwind entry; freed (the entry first) on drop.
pub struct RelocatedFn {
    entry: RawVariantFn,
    len: usize,
    /// Deregistered before the pages are freed (`Drop`).
    frames: Option<RegisteredFrames>,
    pages: Option<Pages>,
}

// SAFETY: the pages and the registration are owned by this value; the code is only executed
// after construction, from any thread.
unsafe impl Send for RelocatedFn {}

impl RelocatedFn {
    /// A copy of `f` starting `offset` bytes into fresh pages near hotlab's code (see the
    /// module docs for what is rewritten and what is refused).
    ///
    /// # Safety
    /// `f` must be a function compiled into this binary.
    pub unsafe fn new(f: RawVariantFn, offset: u16) -> Result<RelocatedFn, Refusal> {
        if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
            return Err(Refusal::Unsupported);
        }
        let start = f as usize;
        // SAFETY: the caller's contract: `f` is code of this process.
        let frame = unsafe { original_frame(start) }?;
        // SAFETY: the unwind entry says the function's bytes are `start..start + len`, mapped
        // (text) for the life of the process.
        let code = unsafe { std::slice::from_raw_parts(start as *const u8, frame.len) };
        let fixups = fixups(code, start as u64, &read_mapped)?;
        let offset = usize::from(offset);
        let pages = Pages::new(offset + code.len()).map_err(|e| Refusal::Memory(e.to_string()))?;
        // SAFETY: within the fresh pages (`offset + len` bytes of them).
        let at = unsafe { pages.ptr().add(offset) };
        let copy = match relocated(code, &fixups, at as u64) {
            Ok(c) => c,
            Err(e) => {
                // SAFETY: fresh pages nothing points into.
                unsafe { pages.free() };
                return Err(e);
            }
        };
        if let Err(k) = same_code(code, start as u64, &copy, at as u64) {
            // SAFETY: as above.
            unsafe { pages.free() };
            return Err(Refusal::UnexpectedEncoding(k));
        }
        // SAFETY: `copy.len()` bytes fit at `at` (see above); the pages are writable.
        unsafe { std::ptr::copy_nonoverlapping(copy.as_ptr(), at, copy.len()) };
        if let Err(e) = pages.make_executable() {
            // SAFETY: as above.
            unsafe { pages.free() };
            return Err(Refusal::Memory(e.to_string()));
        }
        // SAFETY: the table describes the copy just made executable at `at`; the registration
        // is dropped before the pages (`Drop`).
        let frames = match unsafe { RegisteredFrames::register_table(&frame.table_at(at as u64)) } {
            Ok(r) => r,
            Err(e) => {
                // SAFETY: nothing ran or points into the pages yet.
                unsafe { pages.free() };
                return Err(Refusal::Frame(format!(
                    "cannot be written for the copy: {e}"
                )));
            }
        };
        // SAFETY: the bytes at `at` are `f`'s, moved with every pc-relative reach kept (checked
        // by `same_code`), so they are a function with `f`'s type.
        let entry = unsafe { std::mem::transmute::<*mut u8, RawVariantFn>(at) };
        Ok(RelocatedFn {
            entry,
            len: copy.len(),
            frames: Some(frames),
            pages: Some(pages),
        })
    }

    /// The copy, with the original's type.
    pub fn entry(&self) -> RawVariantFn {
        self.entry
    }

    /// Its first byte's address.
    pub fn addr(&self) -> usize {
        self.entry as usize
    }

    /// Its length in bytes (the original's).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty (never: a copied function has bytes).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for RelocatedFn {
    fn drop(&mut self) {
        // The unwind entry first: pages freed while it is registered could be handed to new
        // code whose own entry would then overlap it.
        drop(self.frames.take());
        if let Some(pages) = self.pages.take() {
            // SAFETY: the owner no longer runs the copy (it drops its variants first) and no
            // frame of it is live: nothing points into the pages.
            unsafe { pages.free() };
        }
    }
}

impl fmt::Debug for RelocatedFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RelocatedFn({:#x}, {} bytes)", self.addr(), self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Memory where nothing is mapped.
    fn nothing(_: u64) -> Option<i32> {
        None
    }

    fn plan(code: &[u8]) -> Result<Vec<Fixup>, Refusal> {
        fixups(code, 0x10_0000, &nothing)
    }

    /// lea rax, [rip + 0x100]; movsxd rcx, dword ptr [rax + rdi*4]; add rax, rcx; jmp rax
    const DISPATCH: [u8; 16] = [
        0x48, 0x8d, 0x05, 0x00, 0x01, 0x00, 0x00, 0x48, 0x63, 0x0c, 0xb8, 0x48, 0x01, 0xc8, 0xff,
        0xe0,
    ];

    #[test]
    fn a_jump_table_dispatch_is_refused() {
        // The table at 0x10_0107 (the lea's end + 0x100); its first entry leads back to +0x4.
        let table = 0x10_0107u64;
        let memory = |at: u64| (at == table).then_some(-0x103);
        assert_eq!(
            fixups(&DISPATCH, 0x10_0000, &memory),
            Err(Refusal::JumpTable { jump: 14, table })
        );
        // A table that cannot be read cannot be ruled out.
        assert_eq!(plan(&DISPATCH), Err(Refusal::IndirectJump(14)));
        // jmp qword ptr [rax*8 + 0x1000] (an absolute table: not position-independent)
        let code = [0xff, 0x24, 0xc5, 0x00, 0x10, 0x00, 0x00];
        assert_eq!(plan(&code), Err(Refusal::IndirectJump(0)));
    }

    #[test]
    fn a_tail_call_through_a_register_or_a_vtable_is_copied() {
        // The same code whose `lea` takes the address of something else (a static whose first
        // word, read as an offset, leads nowhere near the function): the jump is a tail call.
        let memory = |_: u64| Some(0x40);
        let f = fixups(&DISPATCH, 0x10_0000, &memory).expect("a tail call");
        assert_eq!(f.len(), 1, "the lea's displacement");
        // mov rax, [rdi]; jmp qword ptr [rax + 0x18] (a trait method, tail-called)
        let code = [0x48, 0x8b, 0x07, 0xff, 0x60, 0x18];
        assert_eq!(plan(&code), Ok(Vec::new()));
    }

    #[test]
    fn a_tail_call_through_a_got_slot_is_rewritten() {
        // jmp qword ptr [rip + 0x2000]
        let code = [0xff, 0x25, 0x00, 0x20, 0x00, 0x00];
        let f = plan(&code).unwrap();
        assert_eq!(
            f,
            [Fixup {
                at: 2,
                instr: 0,
                end: 6,
                target: 0x10_0000 + 6 + 0x2000
            }]
        );
        let copy = relocated(&code, &f, 0x20_0000).unwrap();
        // The copy reaches the same slot from 1 MiB further on.
        assert_eq!(copy[..2], code[..2]);
        let rel = i32::from_le_bytes(copy[2..6].try_into().unwrap());
        assert_eq!(0x20_0006i64 + rel as i64, 0x10_2006);
        assert_eq!(same_code(&code, 0x10_0000, &copy, 0x20_0000), Ok(()));
        // And a copy that was not rewritten is not the same code.
        assert_eq!(same_code(&code, 0x10_0000, &code, 0x20_0000), Err(0));
    }

    #[test]
    fn branches_inside_stay_and_calls_out_are_rewritten() {
        // 0: test rdi, rdi; 3: je +5 (to 10); 5: call rel32 (out); 10: ret
        let code = [
            0x48, 0x85, 0xff, 0x74, 0x05, 0xe8, 0x00, 0x00, 0x01, 0x00, 0xc3,
        ];
        let f = plan(&code).unwrap();
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!((f[0].at, f[0].end), (6, 10));
        let copy = relocated(&code, &f, 0x10_0000 + 0x40).unwrap();
        assert_eq!(
            copy[..6],
            code[..6],
            "the short branch inside keeps its bytes"
        );
        assert_eq!(same_code(&code, 0x10_0000, &copy, 0x10_0040), Ok(()));
    }

    #[test]
    fn unsupported_shapes_are_refused_with_where() {
        // A short jump out: jmp -0x10
        assert_eq!(plan(&[0x90, 0xeb, 0xee]), Err(Refusal::ShortBranchOut(1)));
        // A rip-relative read of its own bytes: nop; mov rax, [rip - 8] (into itself)
        assert_eq!(
            plan(&[0x90, 0x48, 0x8b, 0x05, 0xf8, 0xff, 0xff, 0xff]),
            Err(Refusal::ReadsOwnCode(1))
        );
        // Bytes that do not decode (a lone 0x0f 0x0b is ud2, valid; 0x06 is invalid in 64-bit)
        assert_eq!(plan(&[0x90, 0x06]), Err(Refusal::Undecodable(1)));
        // An instruction cut by the end of the function.
        assert_eq!(plan(&[0x90, 0xe8, 0x00]), Err(Refusal::Undecodable(1)));
        // A target 2 GiB or more from the copy.
        let code = [0xe8, 0x00, 0x00, 0x00, 0x00];
        let f = plan(&code).unwrap();
        assert_eq!(
            relocated(&code, &f, 0x10_0000 + (3 << 30)),
            Err(Refusal::TooFar(0))
        );
    }
}
