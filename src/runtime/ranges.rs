//! Stepped and inclusive ranges (`for i in a..=b step k`): the error compiled code raises for a
//! step that is not positive (the interpreter raises the same kind at the same span).

use super::{ScriptError, ScriptErrorKind};
use crate::lang::span::Span;

/// `step k` with `k <= 0`, at the span of `step`.
#[unsafe(no_mangle)]
#[cold]
pub extern "C-unwind" fn hot_raise_step(step: i64, start: u32, end: u32) -> ! {
    ScriptError::new(
        ScriptErrorKind::StepNotPositive { step },
        Span::new(start as usize, end as usize),
    )
    .raise()
}

/// The range helper compiled code imports: `(symbol, address)`.
pub fn helper_symbols() -> [(&'static str, *const u8); 1] {
    [("hot_raise_step", hot_raise_step as *const u8)]
}
