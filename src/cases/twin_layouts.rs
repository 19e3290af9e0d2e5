//! A native twin at K placements, for `--layouts K`: script code is compiled K times, each JIT
//! starting its functions at another offset (`backend::jit::layout`); the twin is Rust code in
//! the hotlab binary, placed once by the linker, and moves by whole cycles between builds with
//! no change to it. So under `--layouts K` the twin runs at K placements too: layout 0 is the
//! function where rustc put it, layout `k > 0` a copy of it (`backend::relocate`) starting
//! [`code_offset`]`(k)` bytes into fresh pages near hotlab's code — 16, 32 or 48 bytes into a
//! cache line, at places 1 KiB apart in the page, always on rustc's 16-byte function alignment.
//!
//! Only the twin's own function moves; the functions it calls and the statics it reads stay
//! where they are. So a copy is worth measuring only when the twin's time is spent in its own
//! function: the first copy is single-stepped over a few iterations (`measure::steps`), counting
//! its instructions and those whose address lies in the copy, and a twin that runs fewer than
//! half of its instructions per op in its own function ([`MIN_OWN_SHARE`]: its loop is in a
//! callee rustc did not inline) is not placed, nor is one whose count cannot be made (too long to
//! step). Nor is a two-thread twin: its second thread runs
//! the original functions and is not stepped. A twin that is not placed runs at its one
//! placement, and [`TwinLayouts::unplaced`] says why. The stepped count is the twin's
//! instructions per op for the job too (every placement executes the same instructions), so
//! the twin is stepped once per check, not once more.
//!
//! Twins may panic (a bounds check, a failed allocation's unwinding): a copy carries the
//! original's unwind entry, registered at the copy, so a panic unwinds through it as it does
//! through the original (see `backend::relocate`).
//!
//! The copies are freed when the value is dropped: the caller drops it after the job whose
//! variants run them.

use std::ffi::c_void;
use std::sync::atomic::AtomicBool;

use super::twins::Twin;
use crate::backend::MAX_LAYOUTS;
use crate::backend::jit::layout::code_offset;
use crate::backend::relocate::RelocatedFn;
use crate::measure::steps;
use crate::measure::{RawVariantFn, Variant};

/// The least share of a placed twin's instructions per op that must run in its own function.
pub const MIN_OWN_SHARE: f64 = 0.5;

/// A twin's placements: the original, then its copies.
#[derive(Debug)]
pub struct TwinLayouts<'t> {
    twin: &'t Twin,
    copies: Vec<RelocatedFn>,
    /// Why the twin runs at its one placement though more were asked for.
    unplaced: Option<String>,
    /// Its instructions per op, when its copy was stepped.
    instructions: Option<f64>,
    /// The share of those that run in its own function.
    own_share: Option<f64>,
}

impl<'t> TwinLayouts<'t> {
    /// The twin where rustc put it, and nothing else.
    pub fn one(twin: &'t Twin) -> TwinLayouts<'t> {
        TwinLayouts {
            twin,
            copies: Vec::new(),
            unplaced: None,
            instructions: None,
            own_share: None,
        }
    }

    /// The twin at `layouts` placements (at most [`MAX_LAYOUTS`]), or at its one placement
    /// with the reason when it cannot be copied or a copy would not move its hot code.
    pub fn new(twin: &'t Twin, layouts: usize) -> TwinLayouts<'t> {
        TwinLayouts::new_cancellable(twin, layouts, None)
    }

    /// [`TwinLayouts::new`], whose stepping of the copy stops once `cancel` is set (the twin is
    /// then left at its one placement, "where its instructions run is not known": the job it is
    /// for stops at once too).
    pub fn new_cancellable(
        twin: &'t Twin,
        layouts: usize,
        cancel: Option<&AtomicBool>,
    ) -> TwinLayouts<'t> {
        let at_one = |reason: String| TwinLayouts {
            unplaced: Some(reason),
            ..TwinLayouts::one(twin)
        };
        let unplaced = |why: String| at_one(format!("twin {} cannot be placed: {why}", twin.name));
        let layouts = layouts.clamp(1, MAX_LAYOUTS);
        if layouts > 1 && twin.threads > 1 {
            return unplaced("its second thread runs code that is not copied".to_string());
        }
        let mut copies = Vec::new();
        for k in 1..layouts {
            // SAFETY: a twin's `f` is a function compiled into this binary.
            match unsafe { RelocatedFn::new(twin.f, code_offset(k)) } {
                Ok(c) => copies.push(c),
                Err(why) => {
                    // Every copy or none: a twin measured at some placements only would weigh
                    // its original more than the rest.
                    return at_one(format!("twin {} cannot be copied: {why}", twin.name));
                }
            }
        }
        let (mut instructions, mut own_share) = (None, None);
        if let Some(first) = copies.first() {
            // SAFETY: the copy runs `n` iterations of the twin for any `n` and ignores its
            // context; it lives (in `copies`) past the variant, dropped at the end of this block.
            let mut v = unsafe { Variant::raw(twin.name, first.entry(), std::ptr::null_mut()) };
            let extent = first.addr()..first.addr() + first.len();
            // Warm first, as the job's own count runs after its rounds: a first allocation of a
            // size (malloc's slow path) in the stepped 1-iteration run would make it longer
            // than the 3-iteration run's share of it, and the count per op low.
            v.run(3);
            match steps::instructions_inside(&mut v, extent, cancel) {
                Ok(inside) if inside.share() < MIN_OWN_SHARE => {
                    let mut t = unplaced(format!(
                        "{:.0}% of its instructions run in functions it calls, which stay where \
                         rustc put them",
                        (1.0 - inside.share()) * 100.0
                    ));
                    t.instructions = Some(inside.per_op);
                    t.own_share = Some(inside.share());
                    return t;
                }
                Ok(inside) => {
                    instructions = Some(inside.per_op);
                    own_share = Some(inside.share());
                }
                // Without the count nothing says the copies move the twin's hot code.
                Err(e) => {
                    return unplaced(format!("where its instructions run is not known ({e})"));
                }
            }
        }
        TwinLayouts {
            twin,
            copies,
            unplaced: None,
            instructions,
            own_share,
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
        let v =
            unsafe { Variant::raw(self.name(k), self.entry(k), std::ptr::null_mut::<c_void>()) };
        // Counted on the first copy; the original and every copy execute the same instructions
        // (a copy differs in its pc-relative fields only).
        match self.instructions {
            Some(n) => v.with_instructions(n),
            None => v,
        }
    }

    /// Its instructions per op, counted by stepping its first copy (`None` with one placement,
    /// or when the count could not be made).
    pub fn instructions(&self) -> Option<f64> {
        self.instructions
    }

    /// The share of its instructions per op that run in its own function (its first copy),
    /// when it was stepped.
    pub fn own_share(&self) -> Option<f64> {
        self.own_share
    }
}
