//! Unwind information for JIT code, registered with the system unwinder.
//!
//! cranelift-jit does not register `.eh_frame` data, and without it a `ScriptError` raised in a
//! helper cannot unwind through JIT frames (the process aborts with "failed to initiate
//! panic"). For every finalized function we write one `.eh_frame` section (a CIE, the function's
//! FDE, then a zero terminator) and hand it to libgcc's `__register_frame`, which walks the
//! whole section (why one per function: see [`RegisteredFrames`]). The sections must stay
//! alive and be deregistered before the code is freed: [`RegisteredFrames`] does both.

use cranelift_codegen::gimli::RunTimeEndian;
use cranelift_codegen::gimli::write::{Address, EhFrame, EndianVec, FrameTable};
use cranelift_codegen::isa::TargetIsa;
use cranelift_codegen::isa::unwind::UnwindInfo;

unsafe extern "C" {
    fn __register_frame(begin: *const u8);
    fn __deregister_frame(begin: *const u8);
}

/// The unwind information of a function could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write .eh_frame: {0}")]
pub(crate) struct EhFrameError(cranelift_codegen::gimli::write::Error);

/// Registered `.eh_frame` sections, one per function; deregistered on drop.
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
}

impl RegisteredFrames {
    /// Write and register the frames of `functions` (`(code address, unwind info)`).
    ///
    /// Returns `Ok(None)` when there is nothing to register.
    ///
    /// # Safety
    /// Every address must be the start of finalized code described by its unwind info, and the
    /// returned value must be dropped before that code is freed.
    pub(crate) unsafe fn register(
        isa: &dyn TargetIsa,
        functions: &[(*const u8, UnwindInfo)],
    ) -> Result<Option<RegisteredFrames>, EhFrameError> {
        let endian = if isa.endianness() == cranelift_codegen::ir::Endianness::Little {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let mut sections = Vec::new();
        for (ptr, info) in functions {
            let UnwindInfo::SystemV(info) = info else {
                continue;
            };
            let Some(cie) = isa.create_systemv_cie() else {
                return Ok(None);
            };
            let mut table = FrameTable::default();
            let cie_id = table.add_cie(cie);
            table.add_fde(cie_id, info.to_fde(Address::Constant(*ptr as u64)));
            let mut eh_frame = EhFrame(EndianVec::new(endian));
            table.write_eh_frame(&mut eh_frame).map_err(EhFrameError)?;
            let mut bytes = eh_frame.0.into_vec();
            // libgcc stops walking the section at a zero length word.
            bytes.extend_from_slice(&[0, 0, 0, 0]);
            sections.push(bytes.into_boxed_slice());
        }
        if sections.is_empty() {
            return Ok(None);
        }
        for section in &sections {
            // SAFETY: `section` is a complete `.eh_frame` with a terminator; it is kept alive
            // in the returned value until `Drop` deregisters it, and the caller guarantees the
            // code it describes outlives the registration.
            unsafe { __register_frame(section.as_ptr()) };
        }
        Ok(Some(RegisteredFrames { sections }))
    }
}

impl Drop for RegisteredFrames {
    fn drop(&mut self) {
        for section in &self.sections {
            // SAFETY: the section was registered by `register` with this very pointer and is
            // still alive (we own it); it is deregistered exactly once.
            unsafe { __deregister_frame(section.as_ptr()) };
        }
    }
}
