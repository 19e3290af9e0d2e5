//! What JIT code sees of the host at run time: the [`VmCtx`] every script function receives,
//! the cold `hot_raise_*` helpers that turn a failed check into a [`ScriptError`], and the
//! stack budget that keeps runaway recursion from crashing the process.
//!
//! The helpers are `#[unsafe(no_mangle)] extern "C-unwind"` with `hot_` names so that the
//! later `object` backend can import them by symbol from the executable, exactly as the JIT
//! does. They receive spans as two `u32` constants baked into the code, so no per-program
//! table is needed to report a location.

use crate::backend::objects::{ProgramObjects, check_cell};
use crate::lang::span::Span;
use crate::runtime::object::Object;
use crate::runtime::{ScriptError, ScriptErrorKind};

/// The context every script function takes as its hidden first parameter.
///
/// `#[repr(C)]`: generated code loads `stack_limit` at offset 0.
#[repr(C)]
#[derive(Debug)]
pub struct VmCtx {
    /// The lowest stack pointer a script function may run with; a prologue that finds the stack
    /// pointer below it raises `StackExhausted` instead of going on.
    pub stack_limit: usize,
    /// Names of the program's functions, indexed by HIR function id (for `StackExhausted`).
    /// May be null: the error then names the function by its index.
    pub names: *const String,
    /// Number of entries at `names`.
    pub names_len: usize,
}

/// Byte offset of [`VmCtx::stack_limit`] (generated code loads it).
pub(crate) const VMCTX_STACK_LIMIT: i32 = 0;

/// Stack kept free below the limit for the raise path (the helper, the unwinder, the panic
/// machinery). Measured needs are a few KiB; this leaves a wide margin.
pub const RAISE_RESERVE: usize = 256 * 1024;

/// Stack kept free below the limit for one leaf function, one that calls no script code and
/// so has no stack check of its own (`opt_inline::drop_leaf_checks`): its slots (at most
/// 16 KiB), spills and frame setup, below a caller that passed its check.
pub const LEAF_ROOM: usize = 64 * 1024;

/// The most stack compiled script code may use below the point where its context is made:
/// 8 MiB, a native program's main thread. Runaway recursion fills it before it raises, and the
/// error then unwinds every frame (twice, as the unwinder searches and then cleans up, at a
/// few hundred ns a frame): filling the 256 MiB script thread took 7-35 s.
pub const SCRIPT_STACK: usize = 8 << 20;

impl VmCtx {
    /// A context for the current thread: the limit leaves [`RAISE_RESERVE`], [`LEAF_ROOM`] and
    /// `largest_frame` bytes (the biggest frame one script function allocates before its check
    /// runs) above the lowest usable address of this thread's stack, and lets script code use
    /// at most [`SCRIPT_STACK`] below here.
    ///
    /// The stack bounds come from `pthread_getattr_np` (cached per thread). When they cannot be
    /// read, the limit is placed 512 KiB (and the leaf's room) below the current stack pointer,
    /// which fits the smallest stacks Rust gives threads by default (2 MiB).
    pub fn for_current_thread(names: &[String], largest_frame: usize) -> VmCtx {
        let reserve = (RAISE_RESERVE + LEAF_ROOM).saturating_add(largest_frame);
        let here = approximate_sp();
        let stack_limit = match stack_low() {
            Some(low) => low
                .saturating_add(reserve)
                .max(here.saturating_sub(SCRIPT_STACK)),
            None => here.saturating_sub(512 * 1024 + LEAF_ROOM + largest_frame),
        };
        VmCtx {
            stack_limit,
            names: names.as_ptr(),
            names_len: names.len(),
        }
    }
}

/// The lowest usable address of the current thread's stack (one page above its start: glibc
/// reports the main thread's stack from the rlimit, its guard page just below). Read once per
/// thread (`runtime::counts::this_stack`).
fn stack_low() -> Option<usize> {
    crate::runtime::counts::this_stack().map(|(lo, _)| lo + 4096)
}

/// An address close to the current stack pointer (a local's address).
#[inline(never)]
fn approximate_sp() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

fn span(start: u32, end: u32) -> Span {
    Span { start, end }
}

/// `/` or `%` by zero at the operator span `start..end`.
#[unsafe(no_mangle)]
#[cold]
pub extern "C-unwind" fn hot_raise_div_zero(start: u32, end: u32) -> ! {
    ScriptError::new(ScriptErrorKind::DivisionByZero, span(start, end)).raise()
}

/// Index `index` out of `0..len` at the index expression `start..end`.
#[unsafe(no_mangle)]
#[cold]
pub extern "C-unwind" fn hot_raise_index(index: i64, len: i64, start: u32, end: u32) -> ! {
    ScriptError::new(
        ScriptErrorKind::IndexOutOfRange { index, len },
        span(start, end),
    )
    .raise()
}

/// `assert(false)` at `start..end`.
#[unsafe(no_mangle)]
#[cold]
pub extern "C-unwind" fn hot_raise_assert(start: u32, end: u32) -> ! {
    ScriptError::new(ScriptErrorKind::AssertionFailed, span(start, end)).raise()
}

/// The prologue of function `func` found the stack pointer below the limit; `start..end` is
/// its name span.
///
/// # Safety
/// `vmctx` must point to a live [`VmCtx`] whose `names` is null or points to `names_len`
/// live strings.
#[unsafe(no_mangle)]
#[cold]
pub unsafe extern "C-unwind" fn hot_raise_stack(
    vmctx: *const VmCtx,
    func: u32,
    start: u32,
    end: u32,
) -> ! {
    // SAFETY: the caller (generated code) passes the context it was called with, which the
    // call wrapper keeps alive for the whole call; `names` is null or owned by the program.
    let names = unsafe {
        vmctx
            .as_ref()
            .filter(|ctx| !ctx.names.is_null())
            .map(|ctx| std::slice::from_raw_parts(ctx.names, ctx.names_len))
    };
    let function = names
        .and_then(|names| names.get(func as usize).cloned())
        .unwrap_or_else(|| format!("function #{func}"));
    ScriptError::new(
        ScriptErrorKind::StackExhausted { function },
        span(start, end),
    )
    .raise()
}

/// `f64 % f64` with Rust's semantics (fmod: the sign of the dividend).
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_fmod(a: f64, b: f64) -> f64 {
    a % b
}

/// `new C()`: class `class` of the program's objects; raises at the span if the class cannot
/// make objects (unloaded).
///
/// # Safety
/// `objects` must be the program's [`ProgramObjects`], with its classes installed.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn hot_object_new(
    objects: *const ProgramObjects,
    class: u32,
    start: u32,
    end: u32,
) -> u64 {
    // SAFETY: the caller's contract; the program (which owns the box) outlives its code's calls.
    let objects = unsafe { &*objects };
    match objects.runtime.new_object(&objects.classes[class as usize]) {
        Ok(h) => h.into_cell(),
        Err(mut e) => {
            e.span = span(start, end);
            e.raise()
        }
    }
}

/// `new C()` in the code of a fixed runtime (`jit-opt`), whose classes no reload or unload can
/// reach (`Runtime::unload` refuses them): [`hot_object_new`] without `Runtime::new_object`'s
/// unload test and the unboxing of its error; the class's border stays (the depth room, a
/// pending collect).
///
/// # Safety
/// As [`hot_object_new`]; the runtime is fixed.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn hot_object_new_fixed(
    objects: *const ProgramObjects,
    class: u32,
    start: u32,
    end: u32,
) -> u64 {
    // SAFETY: the caller's contract; the program (which owns the box) outlives its code's calls.
    let objects = unsafe { &*objects };
    let class = &objects.classes[class as usize];
    debug_assert!(class.is_inline());
    let made = crate::runtime::border::class_enter(class, || {
        crate::runtime::object::new_inline_object(class)
    });
    match made {
        Ok(h) => h.into_cell(),
        Err(mut e) => {
            e.span = span(start, end);
            (*e).raise()
        }
    }
}

/// The shell of a handle about to be used, or a raised `NullHandle`, `StaleHandle` or
/// `ObjectDetached` at the span.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_object_check(cell: u64, start: u32, end: u32) -> *const Object {
    // SAFETY: generated code passes a cell it holds a reference through, for this call.
    match unsafe { check_cell(cell, span(start, end)) } {
        Ok(obj) => obj,
        Err(e) => e.raise(),
    }
}

/// Take another reference (a handle read from a variable or a field). Returns the cell.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_object_retain(cell: u64) -> u64 {
    crate::runtime::handle::hot_handle_retain(cell)
}

/// Release a reference the code owns (a temporary used up, a variable overwritten or going).
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_object_release(cell: u64) {
    crate::runtime::handle::hot_handle_release(cell)
}

/// Free an object of a fixed runtime's class whose last reference generated code gives up
/// (it found the count at 1): `object::free_last`, without the general release's second count
/// change.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_object_free_last(cell: u64) {
    if let Some(obj) = crate::runtime::handle::Handle::cell_object(cell) {
        crate::runtime::object::free_last(obj);
    }
}

/// A count change on a thread that does not own the object's runtime, which is not shared
/// yet: claim or share it (`runtime::counts`), so the change that follows can be atomic.
#[unsafe(no_mangle)]
#[cold]
pub extern "C-unwind" fn hot_counts_contend(owner: u64) {
    let owner = owner as *const crate::runtime::counts::CountOwner;
    // SAFETY: generated code passes the `CountOwner` a live object's class points at (`[class
    // + Class::COUNTS]`), or its program's runtime's (baked into JIT code), which is the same
    // one: every class of a runtime holds the runtime's owner, and the live objects the code
    // changes counts of keep their classes. The owner is an `Arc` made by `Arc::new`: taking one
    // more strong count and wrapping it gives an `Arc` that is dropped here.
    let owner = unsafe {
        std::sync::Arc::increment_strong_count(owner);
        std::sync::Arc::from_raw(owner)
    };
    crate::runtime::counts::contend(&owner);
}

/// A virtual call found an empty slot (a reload removed the method).
#[unsafe(no_mangle)]
#[cold]
pub extern "C-unwind" fn hot_raise_empty_slot(slot_offset: u64, start: u32, end: u32) -> ! {
    let slot = slot_offset.saturating_sub(crate::runtime::class::Class::SLOTS as u64) / 8;
    ScriptError::new(
        ScriptErrorKind::EmptySlot {
            class: "(virtual call)".to_string(),
            slot: slot as u32,
        },
        span(start, end),
    )
    .raise()
}

/// A call of a closure cell that is 0 (a module variable read before its initializer ran).
#[unsafe(no_mangle)]
#[cold]
pub extern "C-unwind" fn hot_raise_null_closure(start: u32, end: u32) -> ! {
    ScriptError::new(ScriptErrorKind::NullClosure, span(start, end)).raise()
}

/// The helpers generated code imports for raising and for objects: `(symbol, address)`.
pub fn helper_symbols() -> [(&'static str, *const u8); 14] {
    [
        (
            "hot_raise_null_closure",
            hot_raise_null_closure as *const u8,
        ),
        ("hot_object_new", hot_object_new as *const u8),
        ("hot_object_new_fixed", hot_object_new_fixed as *const u8),
        ("hot_object_check", hot_object_check as *const u8),
        ("hot_object_retain", hot_object_retain as *const u8),
        ("hot_object_release", hot_object_release as *const u8),
        ("hot_object_free_last", hot_object_free_last as *const u8),
        ("hot_counts_contend", hot_counts_contend as *const u8),
        ("hot_raise_empty_slot", hot_raise_empty_slot as *const u8),
        ("hot_raise_div_zero", hot_raise_div_zero as *const u8),
        ("hot_raise_index", hot_raise_index as *const u8),
        ("hot_raise_assert", hot_raise_assert as *const u8),
        ("hot_raise_stack", hot_raise_stack as *const u8),
        ("hot_fmod", hot_fmod as *const u8),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_lies_below_the_current_stack_pointer() {
        let ctx = VmCtx::for_current_thread(&[], 0);
        assert!(ctx.stack_limit < approximate_sp());
        assert!(ctx.stack_limit > 0);
    }

    #[test]
    fn fmod_follows_rust() {
        assert_eq!(hot_fmod(-7.5, 2.0), -1.5);
        assert!(hot_fmod(1.0, 0.0).is_nan());
    }
}
