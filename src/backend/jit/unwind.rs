//! Unwind information for JIT code, registered with the system unwinder, and the personality
//! routine that lands a Rust unwind in a JIT handler block.
//!
//! cranelift-jit does not register `.eh_frame` data, and without it a `ScriptError` raised in a
//! helper cannot unwind through JIT frames (the process aborts with "failed to initiate
//! panic"). For every finalized function we write one `.eh_frame` section (a CIE, the function's
//! FDE, then a zero terminator) and hand it to libgcc's `__register_frame`, which walks the
//! whole section (why one per function: see [`RegisteredFrames`]). The sections must stay
//! alive and be deregistered before the code is freed: [`RegisteredFrames`] does both.
//!
//! # Catching in generated code
//! Cranelift's `try_call` / `try_call_indirect` name a handler block for the call's exceptional
//! return, and the compiled code lists each call site with its handler offsets
//! (`MachBufferFinalized::call_sites`), but Cranelift emits no personality routine and no LSDA.
//! A function with catching call sites ([`CatchSites`]) gets both here: its CIE names
//! [`hot_jit_personality`] and its FDE's LSDA pointer is its own sorted `(return offset,
//! handler offset)` table, kept alive with the registration. The unwinder hands the LSDA to
//! the personality untouched, so it can be any pointer; the routine looks the frame's return
//! address up in it. It claims Rust panics only (a `ScriptError` is one): in the search phase
//! it answers "handler found" at a catching site, in the cleanup phase it puts the exception
//! pointer in the first payload register (rax on x86_64, x0 on aarch64: DWARF register 0,
//! Cranelift's `exn0`), sets the pc to the handler and installs the context. Other frames of
//! generated code have no personality: the unwind passes them without running code (their
//! owned cells are the sweep's, `runtime::sweep`).
//!
//! The handler block then owns an exception that Rust still counts as panicking. It must call
//! [`take_caught`], which resumes the unwind into a `catch_unwind` of its own: Rust's
//! personality lands there in the cleanup phase (it installs catch pads in phase 2 too), and
//! `catch_unwind` finishes the panic properly (the payload is returned, the thread's panic
//! count goes back down). Deleting the exception instead aborts ("Rust panics must be
//! rethrown"), and ignoring it leaves the thread marked as panicking.
//!
//! The happy path pays nothing: a `try_call` is a plain `call` whose return address has an
//! entry in the table.

use std::any::Any;
use std::ffi::{c_int, c_void};
use std::panic::{self, AssertUnwindSafe};

use cranelift_codegen::gimli::write::{Address, EhFrame, EndianVec, FrameTable};
use cranelift_codegen::gimli::{self, RunTimeEndian};
use cranelift_codegen::isa::TargetIsa;
use cranelift_codegen::isa::unwind::UnwindInfo;
use cranelift_codegen::{FinalizedMachCallSite, FinalizedMachExceptionHandler};

use crate::runtime::sweep::UnwindContext;

unsafe extern "C" {
    fn __register_frame(begin: *const u8);
    fn __deregister_frame(begin: *const u8);
    fn _Unwind_GetIP(ctx: *mut UnwindContext) -> usize;
    fn _Unwind_GetRegionStart(ctx: *mut UnwindContext) -> usize;
    fn _Unwind_GetLanguageSpecificData(ctx: *mut UnwindContext) -> *const c_void;
    fn _Unwind_SetIP(ctx: *mut UnwindContext, ip: usize);
    fn _Unwind_SetGR(ctx: *mut UnwindContext, reg: c_int, value: usize);
}

unsafe extern "C-unwind" {
    fn _Unwind_Resume(exception: *mut c_void) -> !;
}

// The Itanium unwinder's answers and actions (unwind.h).
const URC_HANDLER_FOUND: c_int = 6;
const URC_INSTALL_CONTEXT: c_int = 7;
const URC_CONTINUE_UNWIND: c_int = 8;
const URC_FATAL_PHASE1_ERROR: c_int = 3;
const UA_SEARCH_PHASE: c_int = 1;
const UA_HANDLER_FRAME: c_int = 4;
const UA_FORCE_UNWIND: c_int = 8;

/// The exception class of a Rust panic (`panic_unwind`'s, "MOZ\0RUST" as a native-endian u64).
const RUST_EXCEPTION_CLASS: u64 = u64::from_ne_bytes(*b"MOZ\0RUST");

/// The DWARF register numbers of Cranelift's exception payload registers (`exn0`, `exn1`):
/// rax and rdx on x86_64, x0 and x1 on aarch64 (libgcc's `__builtin_eh_return_data_regno`).
const PAYLOAD_REGS: [c_int; 2] = [0, 1];

/// The catching call sites of one function: `(return address offset, handler offset)`,
/// sorted by return offset. It is the function's LSDA as [`hot_jit_personality`] reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CatchSites {
    sites: Box<[(u32, u32)]>,
}

impl CatchSites {
    /// The sites of compiled code that have a handler (a `default` one, or any tag: generated
    /// code catches every Rust panic at a `try_call`).
    pub(crate) fn of<'a>(call_sites: impl Iterator<Item = FinalizedMachCallSite<'a>>) -> Self {
        let mut sites: Vec<(u32, u32)> = call_sites
            .filter_map(|site| {
                let handler = site.exception_handlers.iter().find_map(|h| match h {
                    FinalizedMachExceptionHandler::Default(at)
                    | FinalizedMachExceptionHandler::Tag(_, at) => Some(*at),
                    FinalizedMachExceptionHandler::Context(_) => None,
                })?;
                Some((site.ret_addr, handler))
            })
            .collect();
        sites.sort_unstable();
        CatchSites {
            sites: sites.into_boxed_slice(),
        }
    }

    /// Whether no call site catches.
    pub(crate) fn is_empty(&self) -> bool {
        self.sites.is_empty()
    }

    /// The return offsets of the catching sites (the sweep stops at them).
    pub(crate) fn returns(&self) -> Vec<u32> {
        self.sites.iter().map(|s| s.0).collect()
    }

    /// The handler of the call whose return address is `ret` bytes into the function.
    fn handler(&self, ret: u32) -> Option<u32> {
        let i = self.sites.binary_search_by_key(&ret, |s| s.0).ok()?;
        Some(self.sites[i].1)
    }
}

/// The personality routine of generated functions with catching call sites (see the module
/// docs). Called by the unwinder only, for frames whose FDE it is named in.
///
/// # Safety
/// `ctx` must be the unwinder's context of a frame whose LSDA is a live [`CatchSites`].
unsafe extern "C" fn hot_jit_personality(
    version: c_int,
    actions: c_int,
    class: u64,
    exception: *mut c_void,
    ctx: *mut UnwindContext,
) -> c_int {
    if version != 1 {
        return URC_FATAL_PHASE1_ERROR;
    }
    // SAFETY: the unwinder passes the context of a frame described by one of our FDEs, whose
    // LSDA is the `CatchSites` registered with it (alive until deregistered).
    let (handler, start) = unsafe {
        let sites = &*(_Unwind_GetLanguageSpecificData(ctx) as *const CatchSites);
        let start = _Unwind_GetRegionStart(ctx);
        let ret = _Unwind_GetIP(ctx).wrapping_sub(start);
        (
            u32::try_from(ret).ok().and_then(|r| sites.handler(r)),
            start,
        )
    };
    let Some(handler) = handler else {
        return URC_CONTINUE_UNWIND;
    };
    if class != RUST_EXCEPTION_CLASS || actions & UA_FORCE_UNWIND != 0 {
        // A foreign exception or a forced unwind (thread cancellation) is not ours to stop.
        return URC_CONTINUE_UNWIND;
    }
    if actions & UA_SEARCH_PHASE != 0 {
        return URC_HANDLER_FOUND;
    }
    if actions & UA_HANDLER_FRAME == 0 {
        return URC_CONTINUE_UNWIND;
    }
    // SAFETY: this frame is the handler frame of the cleanup phase: the unwinder installs the
    // registers we set and resumes at `handler`, a block of this very function that takes the
    // exception pointer in `exn0`.
    unsafe {
        _Unwind_SetGR(ctx, PAYLOAD_REGS[0], exception as usize);
        _Unwind_SetGR(ctx, PAYLOAD_REGS[1], 0);
        _Unwind_SetIP(ctx, start + handler as usize);
    }
    URC_INSTALL_CONTEXT
}

/// Finish catching the Rust panic whose exception a JIT handler block received (`exn0`):
/// returns its payload, and the thread no longer counts as panicking (see the module docs).
///
/// # Safety
/// `exception` must be the exception pointer that [`hot_jit_personality`] handed to a handler
/// block on this thread, not finished before.
pub unsafe fn take_caught(exception: *mut c_void) -> Box<dyn Any + Send> {
    // SAFETY: per the contract the exception is a live Rust panic in flight on this thread;
    // resuming it continues its cleanup phase from here, into this `catch_unwind`.
    match panic::catch_unwind(AssertUnwindSafe(|| -> () {
        unsafe { _Unwind_Resume(exception) }
    })) {
        Err(payload) => payload,
        Ok(()) => unreachable!("_Unwind_Resume returned"),
    }
}

/// The unwind information of a function could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write .eh_frame: {0}")]
pub(crate) struct EhFrameError(cranelift_codegen::gimli::write::Error);

/// One finalized function to register: its code address, unwind info and catching sites.
pub(crate) struct FrameParts {
    /// The finalized code's first instruction.
    pub code: *const u8,
    /// Cranelift's unwind info for it.
    pub info: UnwindInfo,
    /// Its catching call sites (often none).
    pub catches: CatchSites,
}

/// Registered `.eh_frame` sections, one per function, and the catching functions' LSDAs;
/// deregistered on drop.
///
/// One section per function, not one per batch: libgcc 12 keeps registered objects sorted by
/// their lowest address and, for a pc, searches only the first object that starts at or below
/// it. A batch whose functions sit in two code blocks spans the blocks between them, which
/// may hold another module's functions (tests compile on several threads at once); their
/// lookups then stop at the wrong object and a `ScriptError` aborts the process with "failed
/// to initiate panic, error 5". Functions never overlap, so per-function objects never do.
#[derive(Debug)]
pub(crate) struct RegisteredFrames {
    sections: Vec<Box<[u8]>>,
    /// The LSDAs the sections point at (boxed: their addresses are in the FDEs, so they must
    /// not move when the vector grows).
    #[allow(clippy::vec_box)]
    _lsdas: Vec<Box<CatchSites>>,
}

impl RegisteredFrames {
    /// Write and register the frames of `functions`.
    ///
    /// Returns `Ok(None)` when there is nothing to register.
    ///
    /// # Safety
    /// Every address must be the start of finalized code described by its unwind info and
    /// catching sites, and the returned value must be dropped before that code is freed.
    pub(crate) unsafe fn register(
        isa: &dyn TargetIsa,
        functions: Vec<FrameParts>,
    ) -> Result<Option<RegisteredFrames>, EhFrameError> {
        let endian = if isa.endianness() == cranelift_codegen::ir::Endianness::Little {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let mut sections = Vec::new();
        let mut lsdas = Vec::new();
        for f in functions {
            let UnwindInfo::SystemV(info) = &f.info else {
                continue;
            };
            let Some(mut cie) = isa.create_systemv_cie() else {
                return Ok(None);
            };
            let mut fde = info.to_fde(Address::Constant(f.code as u64));
            if !f.catches.is_empty() {
                let lsda = Box::new(f.catches);
                cie.personality = Some((
                    gimli::DW_EH_PE_absptr,
                    Address::Constant(hot_jit_personality as *const () as u64),
                ));
                cie.lsda_encoding = Some(gimli::DW_EH_PE_absptr);
                fde.lsda = Some(Address::Constant(&*lsda as *const CatchSites as u64));
                lsdas.push(lsda);
            }
            let mut table = FrameTable::default();
            let cie_id = table.add_cie(cie);
            table.add_fde(cie_id, fde);
            sections.push(section(&table, endian)?);
        }
        if sections.is_empty() {
            return Ok(None);
        }
        for section in &sections {
            // SAFETY: `section` is a complete `.eh_frame` with a terminator; it is kept alive
            // in the returned value until `Drop` deregisters it, and the caller guarantees the
            // code it describes outlives the registration. The LSDAs it names live as long.
            unsafe { __register_frame(section.as_ptr()) };
        }
        Ok(Some(RegisteredFrames {
            sections,
            _lsdas: lsdas,
        }))
    }
}

/// `table` as an `.eh_frame` section libgcc can walk: the table, then a zero length word (where
/// libgcc stops).
fn section(table: &FrameTable, endian: RunTimeEndian) -> Result<Box<[u8]>, EhFrameError> {
    let mut eh_frame = EhFrame(EndianVec::new(endian));
    table.write_eh_frame(&mut eh_frame).map_err(EhFrameError)?;
    let mut bytes = eh_frame.0.into_vec();
    bytes.extend_from_slice(&[0, 0, 0, 0]);
    Ok(bytes.into_boxed_slice())
}

impl RegisteredFrames {
    /// Write and register the frame table of one function that is not Cranelift's (a copy of
    /// a function of this binary, `backend::relocate`): one CIE and the function's FDE, whose
    /// personality and LSDA, if any, are addresses that outlive the registration.
    ///
    /// # Safety
    /// The FDE must describe finalized code at its address, and the returned value must be
    /// dropped before that code is freed.
    pub(crate) unsafe fn register_table(
        table: &FrameTable,
    ) -> Result<RegisteredFrames, EhFrameError> {
        let endian = if cfg!(target_endian = "little") {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let section = section(table, endian)?;
        // SAFETY: a complete `.eh_frame` with a terminator, kept alive in the returned value
        // until `Drop` deregisters it; the caller guarantees the code outlives it.
        unsafe { __register_frame(section.as_ptr()) };
        Ok(RegisteredFrames {
            sections: vec![section],
            _lsdas: Vec::new(),
        })
    }
}

impl Drop for RegisteredFrames {
    fn drop(&mut self) {
        // Newest first: libgcc 12 finds the object to deregister by walking its list of
        // registered objects from the newest (and, once sorted for lookups, from the highest
        // address, which code mapped later has). Oldest first walked the whole list for each
        // section: 10,000 functions took a minute to free.
        for section in self.sections.iter().rev() {
            // SAFETY: the section was registered by `register` with this very pointer and is
            // still alive (we own it); it is deregistered exactly once.
            unsafe { __deregister_frame(section.as_ptr()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catch_sites_are_found_by_return_offset_only() {
        let sites = CatchSites {
            sites: vec![(0x10, 0x80), (0x40, 0x90)].into_boxed_slice(),
        };
        assert_eq!(sites.handler(0x10), Some(0x80));
        assert_eq!(sites.handler(0x40), Some(0x90));
        assert_eq!(sites.handler(0x11), None);
        assert_eq!(sites.returns(), vec![0x10, 0x40]);
        assert!(CatchSites::default().is_empty());
    }
}
