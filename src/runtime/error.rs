//! `ScriptError`: a fault raised by script code at run time, reported with its script location.
//!
//! Raised from host helpers (JIT code calls them) by unwinding with
//! [`std::panic::resume_unwind`] (which skips the panic hook, so nothing is printed), and caught
//! at the host border with [`catch_script`]. The interpreter returns it as a plain `Err`.

use std::fmt;
use std::panic::{self, AssertUnwindSafe};

use crate::lang::span::{SourceFile, Span};

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptErrorKind {
    /// `/` or `%` with a zero right operand.
    #[error("division by zero")]
    DivisionByZero,
    /// An index outside `0..len`.
    #[error("index {index} out of range for length {len}")]
    IndexOutOfRange {
        /// The index used.
        index: i64,
        /// The length of the array.
        len: i64,
    },
    /// Runaway recursion: the call stack ran out.
    #[error("call stack exhausted in `{function}` (runaway recursion?)")]
    StackExhausted {
        /// The function whose call did not fit.
        function: String,
    },
    /// `v.pop()` on an empty vec.
    #[error("pop from an empty vec")]
    PopEmpty,
    /// `assert(cond)` with a false condition.
    #[error("assertion failed")]
    AssertionFailed,
    /// A Rust panic inside a host function (a bug in hotlab, contained at the border).
    #[error("host function panicked: {0}")]
    HostPanic(String),
    /// A host called a script function with the wrong number or types of arguments.
    #[error("bad call: {0}")]
    BadCall(String),
    /// A call or field access through a `null` handle.
    #[error("null handle")]
    NullHandle,
    /// A handle to an object that was destroyed (explicitly, or by an unload).
    #[error("stale handle: the object was destroyed")]
    StaleHandle,
    /// A call on an object that a reload did not migrate, or that was detached or unloaded.
    #[error("object detached")]
    ObjectDetached,
    /// Too many nested calls through the host border on one thread.
    #[error("call depth limit {limit} exceeded")]
    DepthLimit {
        /// The limit in force.
        limit: u32,
    },
    /// A call through a slot that holds no code (a method a reload removed).
    #[error("method slot {slot} of `{class}` is empty (removed by a reload?)")]
    EmptySlot {
        /// The class called.
        class: String,
        /// The slot index.
        slot: u32,
    },
    /// A host-interface call on an object whose class lacks the method.
    #[error("class `{class}` does not implement `{method}`")]
    NotImplemented {
        /// The class.
        class: String,
        /// The interface method (`Hook.call`).
        method: String,
    },
    /// Host access to a field the object's class does not have.
    #[error("class `{class}` has no field `{field}`")]
    NoSuchField {
        /// The class.
        class: String,
        /// The field asked for.
        field: String,
    },
    /// Host access to a handle field as a scalar, or the reverse.
    #[error("field `{field}` is not of the kind accessed (scalar vs handle)")]
    WrongFieldKind {
        /// The field.
        field: String,
    },
    /// Host code stored a handle to an object of the wrong class in a handle field.
    #[error("field `{field}` holds `{expected}`, not `{found}`")]
    HandleClass {
        /// The field.
        field: String,
        /// The class the field's type names.
        expected: String,
        /// The class of the object offered.
        found: String,
    },
    /// Host code stored a handle to an object of another runtime in a handle field (its class
    /// has the field's name, but its counts, layout and code are another runtime's).
    #[error("field `{field}` cannot hold an object of another runtime (class `{class}`)")]
    ForeignObject {
        /// The field.
        field: String,
        /// The class of the object offered.
        class: String,
    },
    /// `new` of a class that was unloaded.
    #[error("class `{0}` is unloaded")]
    ClassUnloaded(String),
    /// A call of a fn-typed module variable read before its initializer ran, or of a fn-typed
    /// field still `null`.
    #[error(
        "call of a closure that is not initialized yet (a module variable read before its initializer ran, or a fn-typed field still `null`)"
    )]
    NullClosure,
    /// `for i in a..b step k` with `k <= 0`.
    #[error("range step {step} is not positive")]
    StepNotPositive {
        /// The step.
        step: i64,
    },
    /// `s.slice(a, b)` with `a..b` not within `0..s.len()`.
    #[error("slice {start}..{end} out of range for a string of {len} bytes")]
    SliceOutOfRange {
        /// The first byte asked for.
        start: i64,
        /// The end asked for.
        end: i64,
        /// The string's length in bytes.
        len: i64,
    },
    /// `s.slice(a, b)` with an end inside a character's UTF-8 bytes.
    #[error("byte {at} is not on a character boundary")]
    NotCharBoundary {
        /// The offending end.
        at: i64,
    },
    /// `Runtime::destroy` or `detach` from inside a call on the same thread (a host function
    /// called by script code): refused, as the running script code relies on the handles it
    /// checked staying valid until the call returns.
    #[error("destroy or detach inside a call (only between calls, or from another thread)")]
    InsideCall,
    /// A call through the border from a thread whose thread-locals are being torn down.
    #[error("script call from an exiting thread")]
    ThreadExiting,
    /// An allocation past the job's memory limit (`--mem`), or one the system refused
    /// (`runtime::memory`).
    /// The message does not say how many bytes the operation asked for: that depends on the
    /// backend's value layout, and an error reads the same on every backend.
    #[error("out of memory: {}", oom_text(*budget))]
    OutOfMemory {
        /// The job's budget the allocation would pass; `None` when the system allocator
        /// refused it.
        budget: Option<u64>,
    },
}

fn oom_text(budget: Option<u64>) -> String {
    match budget {
        Some(b) => format!(
            "the job's limit of {} is reached (--mem SIZE sets it)",
            super::memory::show_bytes(b)
        ),
        None => "the system has no more memory for this job".to_string(),
    }
}

impl ScriptErrorKind {
    /// The error of an allocation that `why` refused.
    pub fn out_of_memory(why: super::memory::Refused) -> ScriptErrorKind {
        ScriptErrorKind::OutOfMemory {
            budget: match why {
                super::memory::Refused::Budget(b) => Some(b),
                super::memory::Refused::System => None,
            },
        }
    }
}

/// A run-time fault with the span of the failing operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// What went wrong.
    pub kind: ScriptErrorKind,
    /// The failing operation.
    pub span: Span,
}

impl ScriptError {
    /// A new error.
    pub fn new(kind: ScriptErrorKind, span: Span) -> ScriptError {
        ScriptError { kind, span }
    }

    /// `error: <what> at FILE:LINE:COL`.
    pub fn render(&self, source: &SourceFile) -> String {
        format!("error: {} at {}", self.kind, source.location(self.span))
    }

    /// Unwind to the nearest [`catch_script`] with this error. Used by host helpers that JIT
    /// code calls; every frame between must be `extern "C-unwind"` with unwind info. First the
    /// cells that the script frames being unwound own are released (`runtime::sweep`): those
    /// frames have no landing pads.
    pub fn raise(mut self) -> ! {
        let at = super::sweep::sweep();
        if self.span == Span::UNKNOWN
            && let Some(at) = at
        {
            self.span = at;
        }
        panic::resume_unwind(Box::new(self))
    }

    /// Raise `kind` at the script operation that called the raising helper: the span its call
    /// site recorded (`runtime::sweep`), else the border's that catches it.
    pub fn raise_here(kind: ScriptErrorKind) -> ! {
        ScriptError::new(kind, Span::UNKNOWN).raise()
    }
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.kind, self.span.start)
    }
}

impl std::error::Error for ScriptError {}

/// Run `f` at the host border: a `ScriptError` raised inside comes back as `Err`; any other
/// panic is turned into [`ScriptErrorKind::HostPanic`] at `border` rather than taking the host
/// down.
pub fn catch_script<R>(border: Span, f: impl FnOnce() -> R) -> Result<R, ScriptError> {
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => Ok(r),
        Err(payload) => Err(match payload.downcast::<ScriptError>() {
            Ok(mut err) => {
                if err.span == Span::UNKNOWN {
                    err.span = border;
                }
                *err
            }
            Err(other) => {
                let msg = if let Some(s) = other.downcast_ref::<&str>() {
                    (*s).to_string()
                } else if let Some(s) = other.downcast_ref::<String>() {
                    s.clone()
                } else {
                    "unknown panic payload".to_string()
                };
                ScriptError::new(ScriptErrorKind::HostPanic(msg), border)
            }
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raise_is_caught_with_its_span() {
        let err = catch_script(Span::default(), || -> i64 {
            ScriptError::new(ScriptErrorKind::DivisionByZero, Span::new(4, 5)).raise()
        })
        .unwrap_err();
        assert_eq!(err.kind, ScriptErrorKind::DivisionByZero);
        let src = SourceFile::new("a.hot", "x = 1 / 0");
        assert_eq!(err.render(&src), "error: division by zero at a.hot:1:5");
    }
}
