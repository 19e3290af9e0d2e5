//! Strings as bytes: `s.byte(i)` and `s.slice(a, b)`, defined once for every backend (the
//! interpreter calls the checks here; compiled code calls the `hot_str_*` helpers).

use super::values::str_text;
use super::{ScriptError, ScriptErrorKind};
use crate::lang::span::Span;

/// `s.byte(i)`: byte `i` of the UTF-8 text (0–255), or `IndexOutOfRange`.
pub fn byte_at(text: &str, i: i64) -> Result<i64, ScriptErrorKind> {
    let bytes = text.as_bytes();
    usize::try_from(i)
        .ok()
        .and_then(|k| bytes.get(k))
        .map(|&b| i64::from(b))
        .ok_or(ScriptErrorKind::IndexOutOfRange {
            index: i,
            len: bytes.len() as i64,
        })
}

/// `s.slice(a, b)`: bytes `a..b` as text, or `SliceOutOfRange` / `NotCharBoundary`.
pub fn slice(text: &str, a: i64, b: i64) -> Result<&str, ScriptErrorKind> {
    let len = text.len() as i64;
    if a < 0 || b < a || b > len {
        return Err(ScriptErrorKind::SliceOutOfRange {
            start: a,
            end: b,
            len,
        });
    }
    for at in [a, b] {
        if !text.is_char_boundary(at as usize) {
            return Err(ScriptErrorKind::NotCharBoundary { at });
        }
    }
    Ok(&text[a as usize..b as usize])
}

/// `s.byte(i)` from compiled code (`cell` borrowed); raises at the span.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_str_byte(cell: u64, i: i64, start: u32, end: u32) -> i64 {
    // SAFETY: generated code passes a str cell it holds a count through.
    match byte_at(unsafe { str_text(cell) }, i) {
        Ok(b) => b,
        Err(kind) => ScriptError::new(kind, Span::new(start as usize, end as usize)).raise(),
    }
}

/// `s.slice(a, b)` from compiled code (`cell` borrowed): a new string; raises at the span.
#[unsafe(no_mangle)]
pub extern "C-unwind" fn hot_str_slice(cell: u64, a: i64, b: i64, start: u32, end: u32) -> u64 {
    // SAFETY: generated code passes a str cell it holds a count through.
    let text = unsafe { str_text(cell) };
    // One ASCII byte is a whole character: in range, on boundaries, and a static string.
    if let (Ok(i), true) = (usize::try_from(a), b == a.wrapping_add(1))
        && let Some(one) = crate::runtime::str_block::ascii_at(text, i)
    {
        return one;
    }
    match slice(text, a, b) {
        Ok(s) => crate::runtime::str_block::str_of(s),
        Err(kind) => ScriptError::new(kind, Span::new(start as usize, end as usize)).raise(),
    }
}

/// The string helpers compiled code imports: `(symbol, address)`.
pub fn helper_symbols() -> [(&'static str, *const u8); 2] {
    [
        ("hot_str_byte", hot_str_byte as *const u8),
        ("hot_str_slice", hot_str_slice as *const u8),
    ]
}
