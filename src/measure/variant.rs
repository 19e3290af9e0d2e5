//! Variants: one way of doing the unit of work. A variant runs `n` iterations and returns a
//! checksum, which the engine keeps (so callers can compare variants' results) and passes
//! through `black_box` (so the work cannot be optimised away).

use std::ffi::c_void;

/// The raw ABI for generated code: run `n` iterations with `ctx`, return a checksum.
pub type RawVariantFn = unsafe extern "C-unwind" fn(ctx: *mut c_void, n: u64) -> u64;

enum Body {
    Native(Box<dyn FnMut(u64) -> u64 + Send>),
    Raw { f: RawVariantFn, ctx: *mut c_void },
}

/// One contestant of a job.
pub struct Variant {
    name: String,
    body: Body,
    /// Instructions per op already counted (by single-stepping this code or the same code
    /// elsewhere): the job reports it rather than stepping the variant again.
    instructions: Option<f64>,
}

// SAFETY: a `Native` body is `Send` by its bound; a `Raw` body's ctx may only be built through
// `Variant::raw`, whose contract requires ctx to be usable from whichever thread runs the job.
unsafe impl Send for Variant {}

impl Variant {
    /// A Rust closure variant: `f(n)` runs `n` iterations and returns a checksum.
    pub fn native(name: impl Into<String>, f: impl FnMut(u64) -> u64 + Send + 'static) -> Variant {
        Variant {
            name: name.into(),
            body: Body::Native(Box::new(f)),
            instructions: None,
        }
    }

    /// A variant over generated code with the raw ABI.
    ///
    /// # Safety
    /// `f` must be a function with exactly this signature that, for any `n`, runs `n`
    /// iterations and returns; `ctx` must stay valid (and not be used elsewhere at the same
    /// time) for as long as the variant lives, and must be usable from whichever thread runs
    /// the job.
    pub unsafe fn raw(name: impl Into<String>, f: RawVariantFn, ctx: *mut c_void) -> Variant {
        Variant {
            name: name.into(),
            body: Body::Raw { f, ctx },
            instructions: None,
        }
    }

    /// The variant with its instructions per op already counted (`steps`): the job reports
    /// `n` instead of single-stepping it again. Only for a count of this very code, or of code
    /// that executes the same instructions (a twin's copy).
    pub fn with_instructions(mut self, n: f64) -> Variant {
        self.instructions = Some(n);
        self
    }

    /// Its instructions per op, when they were counted before the job.
    pub fn instructions(&self) -> Option<f64> {
        self.instructions
    }

    /// The variant's name as shown in results.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `n` iterations; the timed region of a sample is exactly this call.
    #[inline]
    pub fn run(&mut self, n: u64) -> u64 {
        match &mut self.body {
            Body::Native(f) => f(n),
            // SAFETY: `Variant::raw`'s contract: `f` has this ABI and `ctx` is valid and ours.
            Body::Raw { f, ctx } => unsafe { f(*ctx, n) },
        }
    }
}

impl std::fmt::Debug for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.body {
            Body::Native(_) => "native",
            Body::Raw { .. } => "raw",
        };
        write!(f, "Variant({:?}, {kind})", self.name)
    }
}
