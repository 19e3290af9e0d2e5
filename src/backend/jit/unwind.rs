//! Unwind information for JIT code, registered with the system unwinder.
//!
//! cranelift-jit does not register `.eh_frame` data, and without it a `ScriptError` raised in a
//! helper cannot unwind through JIT frames (the process aborts with "failed to initiate
//! panic"). For every batch of finalized functions we write one `.eh_frame` section (a CIE and
//! one FDE per function, then a zero terminator) and hand it to libgcc's `__register_frame`,
//! which walks the whole section. The section must stay alive and be deregistered before the
//! code is freed: [`RegisteredFrames`] does both.

use cranelift_codegen::gimli::RunTimeEndian;
use cranelift_codegen::gimli::write::{Address, EhFrame, EndianVec, FrameTable};
use cranelift_codegen::isa::TargetIsa;
use cranelift_codegen::isa::unwind::UnwindInfo;

unsafe extern "C" {
    fn __register_frame(begin: *const u8);
    fn __deregister_frame(begin: *const u8);
}

/// One registered `.eh_frame` section; deregistered on drop.
#[derive(Debug)]
pub(crate) struct RegisteredFrames {
    section: Box<[u8]>,
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
    ) -> Result<Option<RegisteredFrames>, String> {
        let Some(cie) = isa.create_systemv_cie() else {
            return Ok(None);
        };
        let mut table = FrameTable::default();
        let cie_id = table.add_cie(cie);
        let mut any = false;
        for (ptr, info) in functions {
            if let UnwindInfo::SystemV(info) = info {
                table.add_fde(cie_id, info.to_fde(Address::Constant(*ptr as u64)));
                any = true;
            }
        }
        if !any {
            return Ok(None);
        }
        let endian = if isa.endianness() == cranelift_codegen::ir::Endianness::Little {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let mut eh_frame = EhFrame(EndianVec::new(endian));
        table
            .write_eh_frame(&mut eh_frame)
            .map_err(|e| format!("cannot write .eh_frame: {e}"))?;
        let mut bytes = eh_frame.0.into_vec();
        // libgcc stops walking the section at a zero length word.
        bytes.extend_from_slice(&[0, 0, 0, 0]);
        let section = bytes.into_boxed_slice();
        // SAFETY: `section` is a complete `.eh_frame` with a terminator; it is kept alive in
        // the returned value until `Drop` deregisters it, and the caller guarantees the code
        // it describes outlives the registration.
        unsafe { __register_frame(section.as_ptr()) };
        Ok(Some(RegisteredFrames { section }))
    }
}

impl Drop for RegisteredFrames {
    fn drop(&mut self) {
        // SAFETY: the section was registered by `register` with this very pointer and is still
        // alive (we own it); it is deregistered exactly once.
        unsafe { __deregister_frame(self.section.as_ptr()) };
    }
}
