//! Fixed arrays as generated code lays them out flat (one cell a leaf, outermost index first),
//! and the helpers that show, box and unbox them (`"${a}"`, `v.push(a)`, `v[i]` of a
//! `vec<[T; N]>`, an array field). Boxed (in a vec's cell, a field), an array is a vec block of
//! its elements, rows boxed in turn: [`box_array`], [`unbox_array`].

use crate::runtime::memory;
use crate::runtime::values::{
    ElemKind, format_cell, retain_cell, str_from, vec_block, vec_from_cells,
};

/// `"${a}"` of a fixed array: the cells of leaf kind `kind` at `ptr`, shaped by the `ndims`
/// lengths at `dims` (outermost first).
///
/// # Safety
/// `ptr` must point at the product of the dims cells; `dims` at `ndims` `u32`s.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn hot_str_of_array(
    ptr: *const u64,
    kind: u64,
    dims: *const u32,
    ndims: u64,
) -> u64 {
    let kind = ElemKind::code_or_abort(kind);
    // SAFETY: the caller's contract.
    let (cells, dims) = unsafe { array_parts(ptr, dims, ndims) };
    let mut s = String::new();
    format_array(kind, cells, dims, &mut s);
    str_from(s)
}

/// An array's flat cells as one owned cell (a vec element): a vec block of its elements,
/// each row boxed the same way when `dims` has more than one length (outermost first). The
/// references of `cells` move in.
pub fn box_array(kind: ElemKind, cells: &[u64], dims: &[u32]) -> u64 {
    let Some((&n, inner)) = dims.split_first() else {
        return cells.first().copied().unwrap_or(0);
    };
    if inner.is_empty() {
        return vec_from_cells(kind, cells.to_vec());
    }
    let step = inner.iter().map(|&d| d as usize).product::<usize>();
    let rows = (0..n as usize)
        .map(|i| box_array(kind, &cells[i * step..(i + 1) * step], inner))
        .collect();
    vec_from_cells(ElemKind::Vec, rows)
}

/// Write the flat cells of the boxed array in `cell` (see [`box_array`]) to `out`, each taking
/// its own reference.
///
/// # Safety
/// `cell` must be a boxed array of shape `dims` whose owner keeps it alive during the call.
pub unsafe fn unbox_array(kind: ElemKind, cell: u64, dims: &[u32], out: &mut [u64]) {
    let Some((_, inner)) = dims.split_first() else {
        if let Some(o) = out.first_mut() {
            *o = retain_cell(kind, cell);
        }
        return;
    };
    let step = inner.iter().map(|&d| d as usize).product::<usize>();
    // SAFETY: the caller's contract.
    let Some(block) = (unsafe { vec_block(cell) }) else {
        return;
    };
    for (i, c) in block.cells().enumerate() {
        let Some(row) = out.get_mut(i * step..(i + 1) * step) else {
            return;
        };
        if inner.is_empty() {
            row[0] = retain_cell(kind, c);
        } else {
            // SAFETY: a row of a boxed array is a boxed array of shape `inner`.
            unsafe { unbox_array(kind, c, inner, row) };
        }
    }
}

/// `v.push(a)` / `v[i] = a` of an array: the array's cells at `ptr` (of leaf kind `kind`,
/// shaped by the `ndims` lengths at `dims`) boxed into one new cell; their references move in.
///
/// # Safety
/// As [`hot_str_of_array`].
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn hot_array_box(
    ptr: *const u64,
    kind: u64,
    dims: *const u32,
    ndims: u64,
) -> u64 {
    let kind = ElemKind::code_or_abort(kind);
    // SAFETY: the caller's contract.
    let (cells, dims) = unsafe { array_parts(ptr, dims, ndims) };
    memory::ensure(8 * cells.len());
    box_array(kind, cells, dims)
}

/// `v[i]` of a vec of arrays: the boxed array in `cell` (borrowed) unboxed into the cells at
/// `out`, each retained.
///
/// # Safety
/// As [`hot_str_of_array`] for `out`; `cell` a boxed array of that shape, kept alive by the
/// caller.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn hot_array_unbox(
    cell: u64,
    out: *mut u64,
    kind: u64,
    dims: *const u32,
    ndims: u64,
) {
    let kind = ElemKind::code_or_abort(kind);
    // SAFETY: the caller's contract.
    let (dims, total) = unsafe { array_dims(dims, ndims) };
    // SAFETY: the caller's contract: `out` has room for `total` cells.
    let out = unsafe { std::slice::from_raw_parts_mut(out, total) };
    // SAFETY: the caller's contract.
    unsafe { unbox_array(kind, cell, dims, out) };
}

/// The dims of an array passed by generated code, and its cell count (their product).
///
/// # Safety
/// `dims` points to `ndims` lengths that outlive `'a`.
unsafe fn array_dims<'a>(dims: *const u32, ndims: u64) -> (&'a [u32], usize) {
    // SAFETY: the caller's contract.
    let dims = unsafe { std::slice::from_raw_parts(dims, ndims as usize) };
    (dims, dims.iter().map(|&d| d as usize).product())
}

/// The cells and dims of an array passed by generated code.
///
/// # Safety
/// As [`hot_str_of_array`].
unsafe fn array_parts<'a>(ptr: *const u64, dims: *const u32, ndims: u64) -> (&'a [u64], &'a [u32]) {
    // SAFETY: the caller's contract.
    let (dims, total) = unsafe { array_dims(dims, ndims) };
    // SAFETY: the caller's contract.
    (unsafe { std::slice::from_raw_parts(ptr, total) }, dims)
}

/// Append an array's flat cells shaped by `dims`.
pub fn format_array(kind: ElemKind, cells: &[u64], dims: &[u32], out: &mut String) {
    let Some((&n, inner)) = dims.split_first() else {
        if let Some(&c) = cells.first() {
            format_cell(kind, c, out);
        }
        return;
    };
    let step = inner.iter().map(|&d| d as usize).product::<usize>();
    out.push('[');
    for i in 0..n as usize {
        memory::reserve_text(out, 24);
        if i > 0 {
            out.push_str(", ");
        }
        format_array(kind, &cells[i * step..(i + 1) * step], inner, out);
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_are_shown_by_their_dims() {
        let cells: Vec<u64> = (1..=6).collect();
        let mut out = String::new();
        format_array(ElemKind::I64, &cells, &[2, 3], &mut out);
        assert_eq!(out, "[[1, 2, 3], [4, 5, 6]]");
        let mut out = String::new();
        format_array(ElemKind::F64, &[1.5f64.to_bits()], &[], &mut out);
        assert_eq!(out, "1.5");
    }
}
