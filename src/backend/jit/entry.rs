//! Entry trampolines: one generated function per callable function, with the single signature
//! `extern "C-unwind" fn(vmctx, args: *const u64, out: *mut u64)`.
//!
//! The host cannot name a Rust fn-pointer type for every script signature, so the typed call
//! wrapper (`call.rs`) packs arguments into 8-byte cells and calls the trampoline, which loads
//! them into registers, calls the real function and stores its results into `out`. Benchmarks
//! that want the bare function use `JitProgram::raw_entry` instead.

use cranelift_codegen::ir::{self, AbiParam, InstBuilder, types};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Module};

use super::lower::mem;

/// Where the trampoline finds one argument of the target.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ArgSource {
    /// The trampoline's own `vmctx` parameter.
    Vmctx,
    /// The trampoline's `out` pointer (a hidden out parameter for an array result).
    Out,
    /// A scalar of this register type in cell `cell` of `args`.
    Cell { cell: u64, ty: ir::Type },
    /// The address of cell `cell` of `args` (an array argument).
    CellsPtr { cell: u64 },
}

/// The trampoline signature.
pub(crate) fn entry_signature(call_conv: CallConv) -> ir::Signature {
    let mut sig = ir::Signature::new(call_conv);
    for _ in 0..3 {
        sig.params.push(AbiParam::new(types::I64));
    }
    sig
}

/// Build the trampoline body into `func` (name and signature already set).
pub(crate) fn build_entry(
    func: &mut ir::Function,
    fctx: &mut FunctionBuilderContext,
    module: &mut dyn Module,
    target: FuncId,
    args: &[ArgSource],
) {
    let config = module.target_config();
    let mut b = FunctionBuilder::new(func, fctx);
    let entry_block = b.create_block();
    b.append_block_params_for_function_params(entry_block);
    b.switch_to_block(entry_block);
    b.seal_block(entry_block);
    let params = b.block_params(entry_block).to_vec();
    let (vmctx, cells, out) = (params[0], params[1], params[2]);

    let mut values = Vec::with_capacity(args.len());
    for arg in args {
        let v = match *arg {
            ArgSource::Vmctx => vmctx,
            ArgSource::Out => out,
            ArgSource::Cell { cell, ty } => load_cell(&mut b, cells, cell, ty),
            ArgSource::CellsPtr { cell } => b.ins().iadd_imm_s(cells, cell_offset(cell)),
        };
        values.push(v);
    }
    let callee = module.declare_func_in_func(target, b.func);
    let call = b.ins().call(callee, &values);
    let results = b.inst_results(call).to_vec();
    for (k, v) in results.into_iter().enumerate() {
        store_cell(&mut b, out, k as i32, v);
    }
    b.ins().return_(&[]);
    b.finalize(config);
}

/// The byte offset of cell `cell` (below 2^32 + a few: parameters of arrays up to 2^32 cells).
fn cell_offset(cell: u64) -> i64 {
    i64::try_from(cell.saturating_mul(8)).unwrap_or(i64::MAX)
}

fn load_cell(b: &mut FunctionBuilder<'_>, cells: ir::Value, cell: u64, ty: ir::Type) -> ir::Value {
    // Past an array parameter of 2^28 cells or more the offset outgrows a load's immediate.
    let (cells, offset) = match i32::try_from(cell_offset(cell)) {
        Ok(offset) => (cells, offset),
        Err(_) => (b.ins().iadd_imm_s(cells, cell_offset(cell)), 0),
    };
    if ty.is_float() {
        // Little-endian: an f32 sits in the low four bytes of its cell.
        return b.ins().load(ty, mem(), cells, offset);
    }
    let word = b.ins().load(types::I64, mem(), cells, offset);
    if ty == types::I64 {
        word
    } else {
        b.ins().ireduce(ty, word)
    }
}

fn store_cell(b: &mut FunctionBuilder<'_>, out: ir::Value, k: i32, v: ir::Value) {
    let ty = b.func.dfg.value_type(v);
    let v = if ty.is_int() && ty.bits() < 64 {
        // Sign-extend: a bool (I8) is 0 or 1 either way, and a `.clif` i8/i16/i32 result is
        // shown as the signed number it holds.
        b.ins().sextend(types::I64, v)
    } else {
        v
    };
    b.ins().store(mem(), v, out, k * 8);
}
