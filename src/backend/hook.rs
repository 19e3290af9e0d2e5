//! Host-to-script calls: scripts that the host calls, not the other way round.
//!
//! A script measured with [`Workload::Hook`](super::Workload) or `HookVirtual` defines a class
//! implementing the host interface `Hook` and a module variable `target` holding one object of
//! it. The host (this module, in Rust) calls `Hook.call` on that object `n` times and sums the
//! results:
//!
//! - [`HookVia::Handle`]: through the object's [`Handle`], the way a host holding a handle calls
//!   a script (the runtime's `Hook for Handle`: the generation check, then the fused path:
//!   depth, the entry-word compare, the slot load and the indirect call, the catch of script
//!   errors);
//! - [`HookVia::Virtual`]: through a `&dyn Hook` that is the object's shell (`Hook for
//!   Object`): a native virtual call whose implementation is the script's method, as the seed's
//!   native base class with a script override.
//!
//! The native twins run the very same loop, [`hook_loop`], over a Rust object behind a
//! `&dyn Hook` (one virtual call per iteration), so both sides differ only in what a call is.

use crate::backend::interp::Interp;
use crate::lang::hir::{GlobalId, Interface, Program, Type};
use crate::runtime::ScriptError;
use crate::runtime::handle::Handle;
use crate::runtime::iface::Hook;

use super::sample::HostLoop;

/// The module variable a hook script's object lives in.
pub const TARGET: &str = "target";

/// How the host calls the object in `target`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookVia {
    /// Through its handle (`entry = "hook"`).
    Handle,
    /// Through a `&dyn Hook` that is its shell (`entry = "hook_virtual"`).
    Virtual,
}

impl HookVia {
    /// Its name in a case header (`entry = "..."`).
    pub fn name(self) -> &'static str {
        match self {
            HookVia::Handle => "hook",
            HookVia::Virtual => "hook_virtual",
        }
    }
}

/// Why a script has no object the host can call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    /// No module variable `target`.
    #[error("no module variable `{TARGET}`: {WANT}")]
    NoTarget,
    /// `target` is not a handle.
    #[error("`{TARGET}` is {ty}, not an object: {WANT}")]
    NotAnObject {
        /// Its type, as the script writes it.
        ty: String,
    },
    /// `target`'s class does not implement `Hook`.
    #[error("class `{class}` of `{TARGET}` does not implement Hook: {WANT}")]
    NotAHook {
        /// The class.
        class: String,
    },
    /// `target` holds `null`.
    #[error("`{TARGET}` holds no object")]
    Null,
}

const WANT: &str =
    "a hook case needs `let target = new C()` with `class C : Hook` (the object the host calls)";

/// `n` calls of `h.call()`, summed (wrapping); the first error stops the loop. Inlined into
/// each caller, so the script side and the twin side run the same loop around their call.
#[inline(always)]
pub fn hook_loop<H: Hook + ?Sized>(h: &H, n: u64) -> Result<i64, ScriptError> {
    let mut sum = 0i64;
    for _ in 0..n {
        sum = sum.wrapping_add(h.call().into_result()?);
    }
    Ok(sum)
}

/// `n` calls on `target` the way `how` says.
#[inline(always)]
fn calls(target: &Handle, how: HookVia, n: u64) -> Result<i64, ScriptError> {
    match how {
        HookVia::Virtual => {
            let shell = target.get()?;
            hook_loop(std::hint::black_box(shell as &dyn Hook), n)
        }
        HookVia::Handle => {
            // A copy of the cell that owns no reference (the caller's handle keeps the object):
            // a local whose address never escapes, so its bits stay in a register across the
            // calls instead of being reloaded from the caller's `HookCell` after each one.
            // SAFETY: `target` holds the reference for the whole loop; the copy is never dropped.
            let local = std::mem::ManuallyDrop::new(unsafe { Handle::from_cell(target.cell()) });
            hook_loop(&*local, n)
        }
    }
}

/// The global `target` of a hook script, checked: a handle to an object of a class that
/// implements `Hook` (itself or through a base class).
pub fn target_global(program: &Program) -> Result<GlobalId, HookError> {
    let (i, g) = program
        .globals
        .iter()
        .enumerate()
        .find(|(_, g)| g.name == TARGET)
        .ok_or(HookError::NoTarget)?;
    let Type::Handle { class, .. } = &g.ty else {
        return Err(HookError::NotAnObject {
            ty: g.ty.to_string(),
        });
    };
    let mut c = Some(*class);
    while let Some(id) = c {
        let class = program.class(id);
        if class.interface == Some(Interface::Hook) {
            return Ok(GlobalId(i as u32));
        }
        c = class.parent;
    }
    Err(HookError::NotAHook {
        class: program.class(*class).name.clone(),
    })
}

/// The host's calls on a script object, set up from the current thread.
pub struct HookCell<'a, 'p> {
    target: Handle,
    how: HookVia,
    /// The interpreter whose objects these are (host calls into interpreted methods go through
    /// it); `None` for compiled code.
    interp: Option<&'a mut Interp<'p>>,
}

impl<'a, 'p> HookCell<'a, 'p> {
    /// Calls on compiled code's object (`target`: from `global_handle(TARGET)`).
    pub fn compiled(target: Option<Handle>, how: HookVia) -> Result<Self, HookError> {
        Ok(HookCell {
            target: non_null(target)?,
            how,
            interp: None,
        })
    }

    /// Calls on the object in module variable `target` of an interpreter.
    pub fn interpreted(
        interp: &'a mut Interp<'p>,
        target: GlobalId,
        how: HookVia,
    ) -> Result<Self, HookError> {
        Ok(HookCell {
            target: non_null(interp.global_handle(target))?,
            how,
            interp: Some(interp),
        })
    }
}

impl HostLoop for HookCell<'_, '_> {
    fn run(&mut self, n: u64) -> Result<i64, ScriptError> {
        let (target, how) = (&self.target, self.how);
        match &mut self.interp {
            Some(interp) => interp.host_calls(|| calls(target, how, n)),
            None => calls(target, how, n),
        }
    }
}

fn non_null(target: Option<Handle>) -> Result<Handle, HookError> {
    match target {
        Some(h) if !h.is_null() => Ok(h),
        _ => Err(HookError::Null),
    }
}
