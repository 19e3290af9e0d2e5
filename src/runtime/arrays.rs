//! Fixed arrays as generated code lays them out flat, and the helpers that show, box and unbox
//! them (`"${a}"`, `v.push(a)`, `v[i]` of a `vec<[T; N]>`, an array field).
//!
//! # Layout
//! Flat, an array is its leaves in order, outermost index first (`[[1, 2], [3, 4]]` is
//! `1 2 3 4`): one 8-byte cell each, except that the leaves of a bool array are packed one
//! byte each, every innermost row starting on a cell of its own and its bytes past the last
//! element zero (`hir::Type::cells`: `[bool; 10]` is two cells, `[[bool; 3]; 4]` four).
//! [`Flat`] reads either by leaf number; the packed one converts from and to cells
//! ([`unpack_bools`], [`pack_bools`]) where a value leaves or enters that layout.
//!
//! Boxed (in a vec's cell, a field), an array is a vec block of its elements (an 8-byte cell
//! each, a bool one byte, 0 or 1: `values::VecBlock`), rows boxed in turn: [`box_array`],
//! [`unbox_array`].

use crate::runtime::memory;
use crate::runtime::values::{ElemKind, format_cell, retain_cell, str_from, vec_block};

/// The leaves of a flat array (see the module docs), read by leaf number.
#[derive(Debug, Clone, Copy)]
pub enum Flat<'a> {
    /// One cell a leaf.
    Cells(&'a [u64]),
    /// Packed bools: rows of `width` leaves, one byte each, `row_bytes` apart.
    Bools {
        /// The array's bytes.
        bytes: &'a [u8],
        /// Leaves in one innermost row (its last length).
        width: usize,
        /// Bytes from one row's start to the next's: `width` rounded up to whole cells.
        row_bytes: usize,
    },
}

impl Flat<'_> {
    /// Leaf `i` as a cell (a bool as 0 or 1); 0 past the end.
    pub fn leaf(&self, i: usize) -> u64 {
        match *self {
            Flat::Cells(cells) => cells.get(i).copied().unwrap_or(0),
            Flat::Bools {
                bytes,
                width,
                row_bytes,
            } => {
                let at = bool_offset(i, width, row_bytes);
                u64::from(bytes.get(at).is_some_and(|&b| b != 0))
            }
        }
    }
}

/// The byte offset of leaf `i` of a packed bool array of rows `width` long, `row_bytes` apart.
fn bool_offset(i: usize, width: usize, row_bytes: usize) -> usize {
    (i / width.max(1)) * row_bytes + i % width.max(1)
}

/// How a flat bool array of shape `dims` (outermost first) lies in memory: its leaves per
/// innermost row, that row's bytes (whole cells), and the bytes of the whole array.
pub fn bool_rows(dims: &[u32]) -> (usize, usize, usize) {
    let width = dims.last().map_or(1, |&d| d as usize);
    let row_bytes = width.div_ceil(8) * 8;
    let rows: usize = dims
        .split_last()
        .map_or(1, |(_, outer)| outer.iter().map(|&d| d as usize).product());
    (width, row_bytes, rows * row_bytes)
}

/// The leaves of a flat bool array of shape `dims` packed into `cells` (see the module docs),
/// one cell each: how the host reads an array a script function returned.
pub fn unpack_bools(cells: &[u64], dims: &[u32]) -> Vec<u64> {
    let bytes: Vec<u8> = cells.iter().flat_map(|c| c.to_le_bytes()).collect();
    let (width, row_bytes, _) = bool_rows(dims);
    let flat = Flat::Bools {
        bytes: &bytes,
        width,
        row_bytes,
    };
    let n: usize = dims.iter().map(|&d| d as usize).product();
    (0..n).map(|i| flat.leaf(i)).collect()
}

/// Bools, one a leaf (true when non-zero), packed as a flat bool array of shape `dims` into
/// whole cells, padding zero: how the host passes an array to a script function.
pub fn pack_bools(leaves: &[u64], dims: &[u32]) -> Vec<u64> {
    let (width, row_bytes, total) = bool_rows(dims);
    let mut bytes = vec![0u8; total];
    for (i, &leaf) in leaves.iter().enumerate() {
        if let Some(b) = bytes.get_mut(bool_offset(i, width, row_bytes)) {
            *b = u8::from(leaf != 0);
        }
    }
    bytes
        .chunks(8)
        .map(|c| {
            let mut cell = [0u8; 8];
            cell[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(cell)
        })
        .collect()
}

/// `"${a}"` of a fixed array: the flat array of leaf kind `kind` at `ptr`, shaped by the
/// `ndims` lengths at `dims` (outermost first).
///
/// # Safety
/// `ptr` must point at the array's cells (see the module docs); `dims` at `ndims` `u32`s.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn hot_str_of_array(
    ptr: *const u64,
    kind: u64,
    dims: *const u32,
    ndims: u64,
) -> u64 {
    let kind = ElemKind::code_or_abort(kind);
    // SAFETY: the caller's contract.
    let (leaves, dims) = unsafe { array_parts(ptr, kind, dims, ndims) };
    let mut s = String::new();
    format_leaves(kind, leaves, 0, dims, &mut s);
    str_from(s)
}

/// An array's flat cells, one a leaf, as one owned cell (a vec element): a vec block of its
/// elements, each row boxed the same way when `dims` has more than one length (outermost
/// first). The references of `cells` move in.
pub fn box_array(kind: ElemKind, cells: &[u64], dims: &[u32]) -> u64 {
    box_leaves(kind, Flat::Cells(cells), 0, dims)
}

/// [`box_array`] of the leaves of `leaves` from leaf `first` on.
fn box_leaves(kind: ElemKind, leaves: Flat<'_>, first: usize, dims: &[u32]) -> u64 {
    let Some((&n, inner)) = dims.split_first() else {
        return leaves.leaf(first);
    };
    let step = inner.iter().map(|&d| d as usize).product::<usize>();
    let items = (0..n as usize).map(|i| match inner {
        [] => leaves.leaf(first + i),
        _ => box_leaves(kind, leaves, first + i * step, inner),
    });
    let kind = if inner.is_empty() {
        kind
    } else {
        ElemKind::Vec
    };
    crate::runtime::values::vec_from_cells(kind, items.collect())
}

/// Give each leaf of the boxed array in `cell` (see [`box_array`]) of shape `dims`, numbered
/// from `first`, to `put`, each with a reference of its own.
///
/// # Safety
/// `cell` must be a boxed array of shape `dims` whose owner keeps it alive during the call.
pub unsafe fn unbox_array(
    kind: ElemKind,
    cell: u64,
    dims: &[u32],
    first: usize,
    put: &mut dyn FnMut(usize, u64),
) {
    let Some((_, inner)) = dims.split_first() else {
        put(first, retain_cell(kind, cell));
        return;
    };
    let step = inner.iter().map(|&d| d as usize).product::<usize>();
    // SAFETY: the caller's contract.
    let Some(block) = (unsafe { vec_block(cell) }) else {
        return;
    };
    for (i, c) in block.cells().enumerate() {
        if inner.is_empty() {
            put(first + i, retain_cell(kind, c));
        } else {
            // SAFETY: a row of a boxed array is a boxed array of shape `inner`.
            unsafe { unbox_array(kind, c, inner, first + i * step, put) };
        }
    }
}

/// `v.push(a)` / `v[i] = a` of an array: the flat array at `ptr` (of leaf kind `kind`,
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
    let (leaves, dims) = unsafe { array_parts(ptr, kind, dims, ndims) };
    let n: usize = dims.iter().map(|&d| d as usize).product();
    memory::ensure(8usize.saturating_mul(n));
    box_leaves(kind, leaves, 0, dims)
}

/// `v[i]` of a vec of arrays: the boxed array in `cell` (borrowed) unboxed into the flat
/// array at `out`, each leaf retained (a packed bool array's padding zeroed).
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
    if kind == ElemKind::Bool {
        let (width, row_bytes, bytes) = bool_rows(dims);
        // SAFETY: the caller's contract: `out` has room for the packed array's bytes.
        let out = unsafe { std::slice::from_raw_parts_mut(out.cast::<u8>(), bytes) };
        out.fill(0);
        // SAFETY: the caller's contract.
        unsafe {
            unbox_array(kind, cell, dims, 0, &mut |i, c| {
                if let Some(b) = out.get_mut(bool_offset(i, width, row_bytes)) {
                    *b = u8::from(c != 0);
                }
            })
        };
        return;
    }
    // SAFETY: the caller's contract: `out` has room for `total` cells.
    let out = unsafe { std::slice::from_raw_parts_mut(out, total) };
    // SAFETY: the caller's contract.
    unsafe {
        unbox_array(kind, cell, dims, 0, &mut |i, c| {
            if let Some(o) = out.get_mut(i) {
                *o = c;
            }
        })
    };
}

/// The dims of an array passed by generated code, and its leaf count (their product).
///
/// # Safety
/// `dims` points to `ndims` lengths that outlive `'a`.
unsafe fn array_dims<'a>(dims: *const u32, ndims: u64) -> (&'a [u32], usize) {
    // SAFETY: the caller's contract.
    let dims = unsafe { std::slice::from_raw_parts(dims, ndims as usize) };
    (dims, dims.iter().map(|&d| d as usize).product())
}

/// The leaves and dims of a flat array of leaf kind `kind` passed by generated code.
///
/// # Safety
/// As [`hot_str_of_array`].
unsafe fn array_parts<'a>(
    ptr: *const u64,
    kind: ElemKind,
    dims: *const u32,
    ndims: u64,
) -> (Flat<'a>, &'a [u32]) {
    // SAFETY: the caller's contract.
    let (dims, total) = unsafe { array_dims(dims, ndims) };
    if kind == ElemKind::Bool {
        let (width, row_bytes, bytes) = bool_rows(dims);
        // SAFETY: the caller's contract: a packed bool array's bytes at `ptr`.
        let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), bytes) };
        let flat = Flat::Bools {
            bytes,
            width,
            row_bytes,
        };
        return (flat, dims);
    }
    // SAFETY: the caller's contract.
    (
        Flat::Cells(unsafe { std::slice::from_raw_parts(ptr, total) }),
        dims,
    )
}

/// Append an array's flat cells, one a leaf, shaped by `dims`.
pub fn format_array(kind: ElemKind, cells: &[u64], dims: &[u32], out: &mut String) {
    format_leaves(kind, Flat::Cells(cells), 0, dims, out);
}

/// [`format_array`] of the leaves of `leaves` from leaf `first` on.
fn format_leaves(kind: ElemKind, leaves: Flat<'_>, first: usize, dims: &[u32], out: &mut String) {
    let Some((&n, inner)) = dims.split_first() else {
        format_cell(kind, leaves.leaf(first), out);
        return;
    };
    let step = inner.iter().map(|&d| d as usize).product::<usize>();
    out.push('[');
    for i in 0..n as usize {
        memory::reserve_text(out, 24);
        if i > 0 {
            out.push_str(", ");
        }
        format_leaves(kind, leaves, first + i * step, inner, out);
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

    /// `[[bool; 3]; 2]` is two cells, a row each, its bytes past the third zero; `[bool; 10]`
    /// is two cells, the second holding two bytes.
    #[test]
    fn bool_arrays_pack_one_byte_a_leaf_each_row_in_whole_cells() {
        let leaves = [1, 0, 1, 0, 1, 1];
        let cells = pack_bools(&leaves, &[2, 3]);
        assert_eq!(cells, [0x01_00_01, 0x01_01_00]);
        assert_eq!(unpack_bools(&cells, &[2, 3]), leaves);
        let ten: Vec<u64> = (0..10).map(|i| u64::from(i % 3 == 0)).collect();
        let cells = pack_bools(&ten, &[10]);
        assert_eq!(cells, [0x0001_0000_0100_0001, 0x0100]);
        assert_eq!(unpack_bools(&cells, &[10]), ten);
    }

    /// Shown, boxed and unboxed from packed bytes as from cells.
    #[test]
    fn packed_bools_are_shown_boxed_and_unboxed() {
        let cells = pack_bools(&[1, 0, 0, 0, 1, 1], &[2, 3]);
        let dims = [2u32, 3];
        let kind = ElemKind::Bool as u64;
        // SAFETY: `cells` holds a packed [[bool; 3]; 2], `dims` its two lengths.
        let s = unsafe { hot_str_of_array(cells.as_ptr(), kind, dims.as_ptr(), 2) };
        // SAFETY: `s` is the string cell just made.
        assert_eq!(
            unsafe { crate::runtime::values::str_text(s) },
            "[[true, false, false], [false, true, true]]"
        );
        crate::runtime::values::hot_str_release(s);
        // SAFETY: as above.
        let boxed = unsafe { hot_array_box(cells.as_ptr(), kind, dims.as_ptr(), 2) };
        let mut out = [u64::MAX; 2];
        // SAFETY: `boxed` is a boxed [[bool; 3]; 2]; `out` has its two cells.
        unsafe { hot_array_unbox(boxed, out.as_mut_ptr(), kind, dims.as_ptr(), 2) };
        assert_eq!(out, cells.as_slice(), "padding comes back zero");
        crate::runtime::values::hot_vec_release(boxed);
    }
}
