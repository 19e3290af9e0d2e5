//! Host-to-script calls: cases whose script the host calls, not the other way round.
//!
//! A case with `entry = "hook"` or `entry = "hook_virtual"` defines a class implementing the
//! host interface `Hook` and a module variable `target` holding one object of it. The host (this
//! module, in Rust) calls `Hook.call` on that object `n` times and sums the results:
//!
//! - `hook`: through the object's [`Handle`], the way a host holding a handle calls a script
//!   (the runtime's `Hook for Handle`: the generation check, then the fused path: depth, the
//!   entry-word compare, the slot load and the indirect call, the catch of script errors);
//! - `hook_virtual`: through a `&dyn Hook` that is the object's shell (`Hook for Object`): a
//!   native virtual call whose implementation is the script's method, as the seed's native base
//!   class with a script override.
//!
//! The native twins run the very same loop, [`hook_loop`], over a Rust object behind a
//! `&dyn Hook` (one virtual call per iteration), so both sides differ only in what a call is.

use std::ffi::c_void;

use crate::backend::interp::Interp;
use crate::lang::SourceFile;
use crate::lang::hir::{GlobalId, Interface, Program, Type};
use crate::runtime::ScriptError;
use crate::runtime::handle::Handle;
use crate::runtime::iface::Hook;

use super::spec::Entry;

/// The module variable a hook case's object lives in.
pub const TARGET: &str = "target";

/// `n` calls of `h.call()`, summed (wrapping); the first error stops the loop. Inlined into
/// each caller, so the script side and the twin side run the same loop around their call.
#[inline(always)]
pub fn hook_loop<H: Hook + ?Sized>(h: &H, n: u64) -> Result<i64, ScriptError> {
    let mut sum = 0i64;
    for _ in 0..n {
        sum = sum.wrapping_add(h.call()?);
    }
    Ok(sum)
}

/// `n` calls on `target` the way `entry` says.
#[inline(always)]
fn calls(target: &Handle, entry: Entry, n: u64) -> Result<i64, ScriptError> {
    match entry {
        Entry::HookVirtual => {
            let shell = target.get()?;
            hook_loop(std::hint::black_box(shell as &dyn Hook), n)
        }
        _ => hook_loop(target, n),
    }
}

/// The global `target` of a hook case, checked: a handle to an object of a class that
/// implements `Hook` (itself or through a base class).
pub fn target_global(program: &Program) -> Result<GlobalId, String> {
    let want = "a hook case needs `let target = new C()` with `class C : Hook` (the object the \
                host calls)";
    let (i, g) = program
        .globals
        .iter()
        .enumerate()
        .find(|(_, g)| g.name == TARGET)
        .ok_or_else(|| format!("no module variable `{TARGET}`: {want}"))?;
    let Type::Handle { class, .. } = &g.ty else {
        return Err(format!("`{TARGET}` is {}, not an object: {want}", g.ty));
    };
    let mut c = Some(*class);
    while let Some(id) = c {
        let class = program.class(id);
        if class.interface == Some(Interface::Hook) {
            return Ok(GlobalId(i as u32));
        }
        c = class.parent;
    }
    Err(format!(
        "class `{}` of `{TARGET}` does not implement Hook: {want}",
        program.class(*class).name
    ))
}

/// A hook case set up to be called from the current thread.
pub struct HookCell<'a> {
    target: Handle,
    entry: Entry,
    /// The interpreter whose objects these are (host calls into interpreted methods go through
    /// it); `None` for compiled code.
    interp: Option<Interp<'a>>,
    error: Option<ScriptError>,
    source: &'a SourceFile,
}

impl<'a> HookCell<'a> {
    /// Calls on compiled code.
    pub fn compiled(
        target: Option<Handle>,
        entry: Entry,
        source: &'a SourceFile,
    ) -> Result<HookCell<'a>, String> {
        Ok(HookCell {
            target: non_null(target)?,
            entry,
            interp: None,
            error: None,
            source,
        })
    }

    /// Calls on the objects of an interpreter.
    pub fn interpreted(
        interp: Interp<'a>,
        target: GlobalId,
        entry: Entry,
        source: &'a SourceFile,
    ) -> Result<HookCell<'a>, String> {
        Ok(HookCell {
            target: non_null(interp.global_handle(target))?,
            entry,
            interp: Some(interp),
            error: None,
            source,
        })
    }

    /// `n` calls; the checksum or the rendered error.
    pub fn checked(&mut self, n: i64) -> Result<i64, String> {
        let r = self.run(n.max(0) as u64);
        r.map_err(|e| e.render(self.source))
    }

    fn run(&mut self, n: u64) -> Result<i64, ScriptError> {
        let (target, entry) = (&self.target, self.entry);
        match &mut self.interp {
            Some(interp) => interp.host_calls(|| calls(target, entry, n)),
            None => calls(target, entry, n),
        }
    }

    /// The interpreter of an interpreted cell, back (to reload it and make another cell).
    pub fn into_interp(self) -> Option<Interp<'a>> {
        self.interp
    }

    /// An error raised during measurement, rendered.
    pub fn take_error(&mut self) -> Option<String> {
        self.error.take().map(|e| e.render(self.source))
    }
}

fn non_null(target: Option<Handle>) -> Result<Handle, String> {
    match target {
        Some(h) if !h.is_null() => Ok(h),
        _ => Err(format!("`{TARGET}` holds no object")),
    }
}

/// The raw-ABI entry of a hook case: `ctx` is its `HookCell`. An error is kept in the cell and
/// the sample returns 0 (the matrix reports it after the job).
pub extern "C-unwind" fn hook_entry(ctx: *mut c_void, n: u64) -> u64 {
    // SAFETY: `Runner::variant` passes a pointer to a live, boxed `HookCell` that nothing else
    // uses while the variant runs (see its contract).
    let cell = unsafe { &mut *(ctx as *mut HookCell<'_>) };
    match cell.run(n) {
        Ok(v) => v as u64,
        Err(e) => {
            cell.error.get_or_insert(e);
            0
        }
    }
}
