//! A native twin at K placements, for `--layouts K`: script code is compiled K times, each JIT
//! starting its functions at another offset (`backend::jit::layout`); the twin is Rust code in
//! the hotlab binary, placed once by the linker, and moves by whole cycles between builds with
//! no change to it. So under `--layouts K` the twin runs at K placements too: layout 0 is the
//! function where rustc put it, layout `k > 0` a copy of it (`backend::relocate`) starting
//! [`code_offset`]`(k)` bytes into fresh pages near hotlab's code — 16, 32 or 48 bytes into a
//! cache line, at places 1 KiB apart in the page, always on rustc's 16-byte function alignment.
//!
//! Only the twin's own function moves; the functions it calls and the statics it reads stay
//! where they are. A twin that cannot be copied runs at its one placement, and
//! [`TwinLayouts::unplaced`] says why.
//!
//! Twins may panic (a bounds check, a failed allocation's unwinding): a copy carries the
//! original's unwind entry, registered at the copy, so a panic unwinds through it as it does
//! through the original (see `backend::relocate`).
//!
//! The copies are freed when the value is dropped: the caller drops it after the job whose
//! variants run them.

use std::ffi::c_void;

use super::twins::Twin;
use crate::backend::MAX_LAYOUTS;
use crate::backend::jit::layout::code_offset;
use crate::backend::relocate::RelocatedFn;
use crate::measure::{RawVariantFn, Variant};

/// A twin's placements: the original, then its copies.
#[derive(Debug)]
pub struct TwinLayouts<'t> {
    twin: &'t Twin,
    copies: Vec<RelocatedFn>,
    /// Why the twin runs at its one placement though more were asked for.
    unplaced: Option<String>,
}

impl<'t> TwinLayouts<'t> {
    /// The twin where rustc put it, and nothing else.
    pub fn one(twin: &'t Twin) -> TwinLayouts<'t> {
        TwinLayouts {
            twin,
            copies: Vec::new(),
            unplaced: None,
        }
    }

    /// The twin at `layouts` placements (at most [`MAX_LAYOUTS`]), or at its one placement
    /// with the reason when it cannot be copied.
    pub fn new(twin: &'t Twin, layouts: usize) -> TwinLayouts<'t> {
        let mut copies = Vec::new();
        for k in 1..layouts.clamp(1, MAX_LAYOUTS) {
            // SAFETY: a twin's `f` is a function compiled into this binary.
            match unsafe { RelocatedFn::new(twin.f, code_offset(k)) } {
                Ok(c) => copies.push(c),
                Err(why) => {
                    // Every copy or none: a twin measured at some placements only would weigh
                    // its original more than the rest.
                    return TwinLayouts {
                        twin,
                        copies: Vec::new(),
                        unplaced: Some(format!("twin {} cannot be copied: {why}", twin.name)),
                    };
                }
            }
        }
        TwinLayouts {
            twin,
            copies,
            unplaced: None,
        }
    }

    /// The twin.
    pub fn twin(&self) -> &'t Twin {
        self.twin
    }

    /// Its placements (1 when it is not copied).
    pub fn layouts(&self) -> usize {
        1 + self.copies.len()
    }

    /// Why it runs at its one placement though more were asked for.
    pub fn unplaced(&self) -> Option<&str> {
        self.unplaced.as_deref()
    }

    /// The function at layout `k` (the original for 0), with the twin's type.
    ///
    /// # Panics
    /// When `k` is not below [`TwinLayouts::layouts`].
    fn entry(&self, k: usize) -> RawVariantFn {
        match k {
            0 => self.twin.f,
            _ => self.copies[k - 1].entry(),
        }
    }

    /// The address of layout `k`'s code.
    pub fn addr(&self, k: usize) -> usize {
        self.entry(k) as usize
    }

    /// Layout `k`'s name in a job: the twin's, with ` @k` when there is more than one.
    pub fn name(&self, k: usize) -> String {
        if self.layouts() == 1 {
            self.twin.name.to_string()
        } else {
            format!("{} @{k}", self.twin.name)
        }
    }

    /// Run `n` iterations at layout `k` and return the checksum as the script's `i64`.
    pub fn run(&self, k: usize, n: i64) -> i64 {
        // SAFETY: the original or a copy of it (same type, same code moved); twins ignore ctx.
        unsafe { (self.entry(k))(std::ptr::null_mut(), n as u64) as i64 }
    }

    /// Layout `k` as a job's variant.
    ///
    /// # Safety
    /// The variant must be dropped before `self` (which frees the copies).
    pub unsafe fn variant(&self, k: usize) -> Variant {
        // SAFETY: the twin's function or its copy, which runs `n` iterations for any `n`; twins
        // ignore their context (null) and are plain Rust code usable from any thread; the copy
        // outlives the variant (the caller's contract).
        unsafe { Variant::raw(self.name(k), self.entry(k), std::ptr::null_mut::<c_void>()) }
    }
}
