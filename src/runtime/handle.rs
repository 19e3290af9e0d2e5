//! Handles: a reference to a script object that names the generation it was made for.
//!
//! A handle is one 8-byte cell, the same bits in a Rust [`Handle`] and in a field of type `C` or
//! `C?`: the low 48 bits are the shell's address, the high 16 bits the shell's generation (the
//! shell's handle word is the cell of a current handle: `Object::WORD`); `0` is `null`. Every non-null cell owns one reference, which keeps the *shell*
//! allocated (so checking a stale handle never reads freed memory). Destroying an object bumps
//! its generation: every handle made before then is stale from that moment, whichever thread
//! holds it. A shell's generation changes at most once, so 16 bits never wrap.
//!
//! User-space addresses on x86_64 and aarch64 Linux are below 2^47 unless a program asks mmap
//! for more, so the packing is checked once per object at creation.

use std::ffi::c_void;
use std::marker::PhantomData;

use crate::runtime::border::host_enter;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
use crate::runtime::class::{Class, IfaceMethod};
use crate::runtime::depth::thread_record;
use crate::runtime::error::{ScriptError, ScriptErrorKind};
use crate::runtime::iface::{Bench, BenchRun, Hook, HookCall, IfaceSig, Returned};
use crate::runtime::object::{self, Object};

/// Bits of a handle cell that hold the shell address; the generation tag is above them.
pub(crate) const ADDR_BITS: u32 = 48;
/// The shell address of a handle cell: `cell & ADDR_MASK`.
pub(crate) const ADDR_MASK: u64 = (1 << ADDR_BITS) - 1;

/// An owned handle (one reference) to a script object, or `null`.
#[cfg_attr(
    not(feature = "thread-safe"),
    doc = "Without `thread-safe` it cannot cross threads:\n```compile_fail\nfn send<T: Send>() {}\nsend::<hotlab::runtime::handle::Handle>();\n```"
)]
#[cfg_attr(
    not(feature = "thread-safe"),
    doc = "```compile_fail\nfn sync<T: Sync>() {}\nsync::<hotlab::runtime::rt::Runtime>();\n```"
)]
#[repr(transparent)]
#[derive(PartialEq, Eq)]
pub struct Handle(u64, ThreadMarker);

/// With `thread-safe`, handles are `Send + Sync` (atomic counts, `Sync` shells). Without it the
/// counts are plain `Cell`s, so a handle must not leave its thread: a raw-pointer marker makes
/// it neither `Send` nor `Sync` (a bare `u64` would be both).
#[cfg(feature = "thread-safe")]
type ThreadMarker = PhantomData<()>;
#[cfg(not(feature = "thread-safe"))]
type ThreadMarker = PhantomData<*const ()>;

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_null() {
            return f.write_str("Handle(null)");
        }
        write!(
            f,
            "Handle({:#x} gen {})",
            self.0 & ADDR_MASK,
            self.0 >> ADDR_BITS
        )
    }
}

impl Handle {
    /// The `null` handle.
    pub const fn null() -> Handle {
        Handle(0, PhantomData)
    }

    /// Wrap a freshly made shell (its count already holds this reference).
    pub(crate) fn from_object(obj: *const Object) -> Handle {
        let addr = obj as u64;
        // On x86-64 generated code takes the address back with an arithmetic shift
        // (`cell_shell` in the JIT's lowering), so bit 47 must be clear as well: true of every
        // user-space address Linux gives a process that does not ask for more.
        let limit = if cfg!(target_arch = "x86_64") {
            ADDR_MASK >> 1
        } else {
            ADDR_MASK
        };
        assert!(
            addr & !limit == 0,
            "shell address {addr:#x} cannot be packed in a handle"
        );
        // SAFETY: the shell was just made and is not shared yet.
        let cell = unsafe { &*obj }.handle_cell();
        debug_assert_eq!(cell & ADDR_MASK, addr, "the handle word names its shell");
        Handle(cell, PhantomData)
    }

    /// Take ownership of a cell's reference (a value returned by generated code or moved out of
    /// a field).
    ///
    /// # Safety
    /// `cell` must be 0 or a handle cell that owns a reference nobody else will release.
    pub unsafe fn from_cell(cell: u64) -> Handle {
        Handle(cell, PhantomData)
    }

    /// Give up the reference as a raw cell (to store in a field or return to generated code).
    pub fn into_cell(self) -> u64 {
        let cell = self.0;
        std::mem::forget(self);
        cell
    }

    /// The raw cell, without giving up the reference.
    pub fn cell(&self) -> u64 {
        self.0
    }

    /// True for `null`.
    pub fn is_null(&self) -> bool {
        self.0 == 0
    }

    /// The shell a non-null cell refers to (without any check).
    #[inline(always)]
    pub(crate) fn cell_object(cell: u64) -> Option<*const Object> {
        (cell != 0).then_some((cell & ADDR_MASK) as *const Object)
    }

    /// The object, if the handle is non-null and of the object's current generation.
    #[inline(always)]
    pub fn get(&self) -> Result<&Object, ScriptError> {
        let Some(obj) = Handle::cell_object(self.0) else {
            return Err(handle_error(ScriptErrorKind::NullHandle));
        };
        // SAFETY: a non-null handle owns a reference: the shell is allocated while `self` lives.
        let obj = unsafe { &*obj };
        if obj.handle_cell() != self.0 {
            return Err(handle_error(ScriptErrorKind::StaleHandle));
        }
        Ok(obj)
    }

    /// True when the handle is non-null and not stale.
    pub fn is_valid(&self) -> bool {
        self.get().is_ok()
    }
}

#[cold]
#[inline(never)]
fn handle_error(kind: ScriptErrorKind) -> ScriptError {
    ScriptError::new(kind, Default::default())
}

impl Clone for Handle {
    /// Another reference to the same shell, for the same generation (a stale handle clones
    /// stale).
    fn clone(&self) -> Handle {
        if let Some(obj) = Handle::cell_object(self.0) {
            // SAFETY: `self` owns a reference, so the shell is allocated.
            unsafe { &*obj }.retain();
        }
        Handle(self.0, PhantomData)
    }
}

impl Drop for Handle {
    #[inline]
    fn drop(&mut self) {
        if let Some(obj) = Handle::cell_object(self.0) {
            object::release(obj);
        }
    }
}

impl Hook for Handle {
    /// `Hook.call` through the host border, [`host_enter`], with the generation folded into its
    /// key test (see [`handle_call`]). `#[inline(always)]`, as every step inside it: the host's
    /// loop then holds the whole straight path with the result in registers; left to itself
    /// LLVM made this a call of its own, with a 240-byte frame and the `Result` through memory.
    #[inline(always)]
    extern "C-unwind" fn call(&self) -> Returned {
        handle_call::<HookCall>(self, ())
    }
}

impl Bench for Handle {
    /// `Bench.run` through the host border (see [`handle_call`]).
    #[inline(always)]
    extern "C-unwind" fn run(&self, n: i64) -> Returned {
        handle_call::<BenchRun>(self, (n,))
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
impl Hook for Object {
    /// `Hook.call`: a jump into the class's host entry for it ([`shell_call`]).
    extern "C-unwind" fn call(&self) -> Returned {
        shell_call::<HookCall>(self, ())
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
impl Bench for Object {
    /// `Bench.run`: a jump into the class's host entry for it ([`shell_call`]).
    extern "C-unwind" fn run(&self, n: i64) -> Returned {
        shell_call::<BenchRun>(self, (n,))
    }
}

/// [`shell_call`] written out for x86_64 Linux: the class, the thread's record from the thread
/// pointer ([`RECORD_TP_OFFSET`](crate::runtime::depth::RECORD_TP_OFFSET)), the jump. As Rust,
/// the thread-local's address was compiled as a call the linker later relaxed, so the function
/// kept a frame and saved registers around an access that is two instructions.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
impl Hook for Object {
    /// `Hook.call`: `(rdi = this)` → the host entry's `(rdi = this, rsi = record)`.
    #[unsafe(naked)]
    extern "C-unwind" fn call(&self) -> Returned {
        // The host entry returns the pair in rax:rdx itself. Every class's entry is a valid
        // `HookEntry` (never null), and the record offset was set before the first class.
        core::arch::naked_asm!(
            "mov rax, qword ptr [rdi + {class}]",
            "mov rsi, qword ptr fs:[0]",
            "add rsi, qword ptr [rip + {offset}]",
            "jmp qword ptr [rax + {entry}]",
            class = const Object::CLASS,
            entry = const Class::HOST_ENTRY + 8 * IfaceMethod::HookCall as usize,
            offset = sym crate::runtime::depth::RECORD_TP_OFFSET,
        )
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
impl Bench for Object {
    /// `Bench.run`: `(rdi = this, rsi = n)` → `(rdi = this, rsi = record, rdx = n)`.
    #[unsafe(naked)]
    extern "C-unwind" fn run(&self, n: i64) -> Returned {
        core::arch::naked_asm!(
            "mov rdx, rsi",
            "mov rax, qword ptr [rdi + {class}]",
            "mov rsi, qword ptr fs:[0]",
            "add rsi, qword ptr [rip + {offset}]",
            "jmp qword ptr [rax + {entry}]",
            class = const Object::CLASS,
            entry = const Class::HOST_ENTRY + 8 * IfaceMethod::BenchRun as usize,
            offset = sym crate::runtime::depth::RECORD_TP_OFFSET,
        )
    }
}

/// A host interface call on an object's shell (a `&dyn Hook` that is the shell): the class's
/// host entry for the method ([`Class::host_entry`](crate::runtime::class::Class::host_entry)),
/// called with this thread's record. With nothing after the call and the same result type, the
/// call is a tail jump: the shell's vtable entry is three loads and a `jmp`, and what runs then
/// is either the border of [`host_enter`] (the Rust host entry) or the JIT's own entry, which
/// folds the same tests and inlines a small method (`backend/jit/host_entry.rs`).
#[cfg_attr(all(target_arch = "x86_64", target_os = "linux"), allow(dead_code))]
#[inline(always)]
fn shell_call<S: IfaceSig>(obj: &Object, args: S::Args) -> Returned {
    let entry = obj.class().host_entry(S::METHOD);
    // SAFETY: a class's host entry for a method always has that method's host-entry signature
    // (the Rust one or the JIT's), `obj` is a live shell of that class, and the record is this
    // thread's.
    unsafe { S::enter(entry, obj, thread_record(), args) }
}

/// A host interface call through a handle: null is tested here; the generation is tested by the
/// border's slow path only, because a destroyed object also fails the border's key test (see
/// [`host_enter`]).
#[inline(always)]
fn handle_call<S: IfaceSig>(h: &Handle, args: S::Args) -> Returned {
    let Some(obj) = Handle::cell_object(h.0) else {
        return Returned::from(Err(Box::new(handle_error(ScriptErrorKind::NullHandle))));
    };
    // SAFETY: a non-null handle owns a reference: the shell is allocated while `h` lives.
    let obj = unsafe { &*obj };
    host_enter::<S>(obj, Some(h.0 >> ADDR_BITS), args).into()
}

/// For generated code: take another reference (`let b = a`). Returns the same cell.
pub extern "C-unwind" fn hot_handle_retain(cell: u64) -> u64 {
    if let Some(obj) = Handle::cell_object(cell) {
        // SAFETY: generated code passes cells it holds a reference through.
        unsafe { &*obj }.retain();
    }
    cell
}

/// For generated code: release a reference (a handle local going out of scope).
pub extern "C-unwind" fn hot_handle_release(cell: u64) {
    // SAFETY: generated code gives up a reference it owns.
    drop(unsafe { Handle::from_cell(cell) });
}

/// For generated code: the shell of a handle, or a raised `ScriptError` (null or stale).
pub extern "C-unwind" fn hot_handle_check(cell: u64) -> *const c_void {
    let h = std::mem::ManuallyDrop::new(Handle(cell, PhantomData));
    match h.get() {
        Ok(obj) => obj as *const Object as *const c_void,
        Err(e) => e.raise(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::class::ClassDef;
    use crate::runtime::rt::Runtime;

    extern "C-unwind" fn nine(_: *mut c_void, _: *const Object) -> i64 {
        9
    }

    fn class_def() -> ClassDef {
        crate::runtime::class::hook_class_def(nine as *const c_void)
    }

    /// Call the object from the host with its class's slot table emptied under it, then with
    /// its code cleared as an unload clears it.
    fn call_with_empty_slots(rt: &Runtime) -> (Result<i64, ScriptError>, Result<i64, ScriptError>) {
        let class = rt.define(class_def()).unwrap();
        let h = rt.new_object(&class).unwrap();
        assert_eq!(h.call().into_result().unwrap(), 9);
        for s in &class.slots {
            s.store(std::ptr::null_mut(), std::sync::atomic::Ordering::Release);
        }
        let slots_gone = h.call().into_result();
        class.clear_code();
        (slots_gone, h.call().into_result())
    }

    #[test]
    fn a_host_call_uses_the_interface_entry_not_the_slot_table() {
        // Both runtimes call the interface entry resolved at definition (and at each reload,
        // under the quiesce that keeps calls out) ...
        for rt in [Runtime::fixed(), Runtime::new()] {
            let (slots_gone, cleared) = call_with_empty_slots(&rt);
            assert_eq!(slots_gone.unwrap(), 9);
            // ... and an empty entry is the empty slot's error.
            assert_eq!(
                cleared.unwrap_err().kind,
                ScriptErrorKind::EmptySlot {
                    class: "C".into(),
                    slot: 0
                }
            );
        }
    }

    #[test]
    fn a_destroyed_objects_handle_is_stale_and_a_detached_ones_is_detached() {
        let rt = Runtime::new();
        let class = rt.define(class_def()).unwrap();
        let a = rt.new_object(&class).unwrap();
        let b = rt.new_object(&class).unwrap();
        rt.destroy(&a).unwrap();
        rt.detach(&b).unwrap();
        assert_eq!(
            a.call().into_result().unwrap_err().kind,
            ScriptErrorKind::StaleHandle
        );
        assert_eq!(
            b.call().into_result().unwrap_err().kind,
            ScriptErrorKind::ObjectDetached
        );
        assert_eq!(
            Handle::null().call().into_result().unwrap_err().kind,
            ScriptErrorKind::NullHandle
        );
    }
}
