//! Host entries: the host border of a method that implements a host interface (`Hook.call`,
//! `Bench.run`), made in generated code, so that a host call through a `&dyn Hook` on the
//! object's shell is one virtual call, as a native one is.
//!
//! The Rust border ([`host_enter`](crate::runtime::border::host_enter)) calls the method's code
//! indirectly, after its tests, under a catch: behind the shell's vtable that made two calls per
//! host call (the vtable's Rust function, then the script's code), where a native `&dyn Hook`
//! makes one. Here the shell's vtable function only jumps ([`Class::host_entry`]), and the host
//! entry JIT code makes is the border itself, with the method inlined when it is small
//! (`opt_inline`, on `jit` too: the entry is made and replaced with its method's version):
//!
//! ```text
//! entry(obj, rec [, n]) -> (value, fault):
//!     room = rec.room; rec.room = room - 1            // depth, and the in-call marker
//!     class = obj.class
//!     go on if room != 0 && obj.key == class.entry    // depth limit, registration, detached,
//!          && class.host_entry[m] == entry            //   pending reload, a replaced entry
//!     vmctx = class.vmctx
//!     go in if sp >= vmctx.stack_limit                // the stack (the method's check is gone
//!                                                     //   when it is inlined)
//!     else: rec.room = room; return slow(obj, rec, room [, n])   // the Rust border's answers
//!     v = try_call method(vmctx, obj [, n])            // [default: handler]
//!     rec.room = room; return (v, 0)
//! handler(exn):                                        // a raise inside the method
//!     rec.room = room; return (0, caught(exn))
//! ```
//!
//! The same tests in the same order as the Rust border: the marker store comes before the
//! entry-word load (Cranelift neither moves loads above stores nor merges them across one), so
//! the reloader's handshake (`runtime::depth`) holds. The slow path is the Rust border's
//! (`host_enter_slow`), which reports every failure as it does, and runs the method's own code
//! (with its own stack check) when only this entry's extra tests failed.
//!
//! A `ScriptError` raised inside the method unwinds to the handler (the JIT's personality
//! routine, `unwind.rs`), which finishes the panic and returns the error: a catch that costs
//! nothing when nothing is raised. The sweep (`runtime::sweep`) releases what the entry's frame
//! owns at the raising call, then stops at the entry's Rust caller: the entry returns from its
//! handler, so nothing of its frame lives on (see [`Lowered::returns_from_handlers`](super::compile::Lowered)).

use std::ffi::c_void;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    self, AbiParam, BlockArg, BlockCall, ExceptionTableData, ExceptionTableItem, InstBuilder, types,
};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Linkage, Module};

use crate::backend::objects::method_sig;
use crate::lang::hir::{self, MethodKind, Program};
use crate::runtime::ScriptError;
use crate::runtime::border::host_enter_slow;
use crate::runtime::class::{Class, IfaceMethod};
use crate::runtime::depth::ThreadRecord;
use crate::runtime::iface::{BenchRun, HookCall};
use crate::runtime::object::Object;

use super::helper_table::VMCTX_STACK_LIMIT;
use super::lower::mem;

/// The Rust helpers a host entry calls off its straight path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostEntryHelpers {
    /// `hot_host_slow_call(obj, rec, room) -> (value, fault)`.
    slow_call: FuncId,
    /// `hot_host_slow_run(obj, rec, room, n) -> (value, fault)`.
    slow_run: FuncId,
    /// `hot_host_caught(exn) -> fault`.
    caught: FuncId,
}

impl HostEntryHelpers {
    /// Declare the helpers in `module` (imports by symbol, see [`helper_symbols`]).
    pub(crate) fn declare(
        module: &mut dyn Module,
        call_conv: CallConv,
    ) -> Result<HostEntryHelpers, String> {
        let i64t = types::I64;
        let mut declare = |name: &str, params: &[ir::Type], returns: &[ir::Type]| {
            let mut sig = ir::Signature::new(call_conv);
            sig.params.extend(params.iter().map(|t| AbiParam::new(*t)));
            sig.returns
                .extend(returns.iter().map(|t| AbiParam::new(*t)));
            module
                .declare_function(name, Linkage::Import, &sig)
                .map_err(|e| format!("{name}: {e}"))
        };
        Ok(HostEntryHelpers {
            slow_call: declare(
                "hot_host_slow_call",
                &[i64t, i64t, types::I32],
                &[i64t, i64t],
            )?,
            slow_run: declare(
                "hot_host_slow_run",
                &[i64t, i64t, types::I32, i64t],
                &[i64t, i64t],
            )?,
            caught: declare("hot_host_caught", &[i64t], &[i64t])?,
        })
    }
}

/// The symbols of the host entries' helpers, for the JIT's import table.
pub fn helper_symbols() -> [(&'static str, *const u8); 3] {
    [
        ("hot_host_slow_call", hot_host_slow_call as *const u8),
        ("hot_host_slow_run", hot_host_slow_run as *const u8),
        ("hot_host_caught", hot_host_caught as *const u8),
    ]
}

/// The slow path of a host entry of `Hook.call` (see the module docs): the room is back to
/// `room`, and the Rust border answers.
///
/// # Safety
/// `obj` must be a live shell and `rec` the calling thread's record.
#[unsafe(no_mangle)]
#[cold]
pub unsafe extern "C-unwind" fn hot_host_slow_call(
    obj: &Object,
    rec: *const ThreadRecord,
    room: u32,
) -> crate::runtime::iface::Returned {
    // SAFETY: the caller's contract.
    let rec = unsafe { &*rec };
    host_enter_slow::<HookCall>(rec, obj, None, room, ()).into()
}

/// [`hot_host_slow_call`] for `Bench.run`.
///
/// # Safety
/// As [`hot_host_slow_call`].
#[unsafe(no_mangle)]
#[cold]
pub unsafe extern "C-unwind" fn hot_host_slow_run(
    obj: &Object,
    rec: *const ThreadRecord,
    room: u32,
    n: i64,
) -> crate::runtime::iface::Returned {
    // SAFETY: the caller's contract.
    let rec = unsafe { &*rec };
    host_enter_slow::<BenchRun>(rec, obj, None, room, (n,)).into()
}

/// A host entry's handler block: the Rust panic it caught (`exn0`) as the boxed error the
/// entry returns, converted as every border converts one.
///
/// # Safety
/// `exception` must be what the JIT's personality routine handed to the handler block, on
/// this thread, not finished before.
#[unsafe(no_mangle)]
#[cold]
pub unsafe extern "C-unwind" fn hot_host_caught(exception: *mut c_void) -> *mut ScriptError {
    // SAFETY: the caller's contract is `take_caught`'s.
    let payload = unsafe { super::unwind::take_caught(exception) };
    Box::into_raw(crate::runtime::border::caught(payload))
}

/// The host-interface method a script method implements, if any: a method with `self` named
/// like one and of its signature (what the runtime's interface entries resolve by, see
/// `Class::find_iface_slots`).
pub(crate) fn implements(program: &Program, m: &hir::Method) -> Option<IfaceMethod> {
    if m.kind == MethodKind::Static {
        return None;
    }
    let sig = method_sig(program, m.func)?;
    IfaceMethod::ALL
        .into_iter()
        .find(|i| i.name() == m.name && i.sig() == sig)
}

/// The functions of `program` that get a host entry, by HIR function index, each with the
/// method it implements (once per function, in function order).
pub(crate) fn entry_methods(program: &Program) -> Vec<(usize, IfaceMethod)> {
    let mut out: Vec<(usize, IfaceMethod)> = program
        .classes
        .iter()
        .enumerate()
        .flat_map(|(c, class)| {
            class
                .methods
                .iter()
                .filter(move |m| m.owner.index() == c)
                .filter_map(|m| Some((m.func.index(), implements(program, m)?)))
        })
        .collect();
    out.sort_unstable_by_key(|&(f, _)| f);
    out.dedup_by_key(|&mut (f, _)| f);
    out
}

/// The machine signature of a host entry of `m`: `(obj, rec [, n]) -> (value, fault)`.
pub(crate) fn entry_signature(m: IfaceMethod, call_conv: CallConv) -> ir::Signature {
    let mut sig = ir::Signature::new(call_conv);
    sig.params.push(AbiParam::new(types::I64));
    sig.params.push(AbiParam::new(types::I64));
    if m == IfaceMethod::BenchRun {
        sig.params.push(AbiParam::new(types::I64));
    }
    sig.returns.push(AbiParam::new(types::I64));
    sig.returns.push(AbiParam::new(types::I64));
    sig
}

/// Build into `func` (named and signed as [`entry_signature`] says, declared as `me`) the host
/// entry of `m` for the script method `body` (see the module docs). `fixed`: the class is of a
/// fixed runtime, which no reload changes, so the entry need not test that it is still the
/// class's.
pub(crate) fn build_entry(
    func: &mut ir::Function,
    fctx: &mut FunctionBuilderContext,
    module: &mut dyn Module,
    helpers: &HostEntryHelpers,
    (body, me): (FuncId, FuncId),
    m: IfaceMethod,
    fixed: bool,
) {
    let body_ref = module.declare_func_in_func(body, func);
    let me_ref = module.declare_func_in_func(me, func);
    let slow_ref = module.declare_func_in_func(
        match m {
            IfaceMethod::HookCall => helpers.slow_call,
            IfaceMethod::BenchRun => helpers.slow_run,
        },
        func,
    );
    let caught_ref = module.declare_func_in_func(helpers.caught, func);
    let config = module.target_config();
    let mut b = FunctionBuilder::new(func, fctx);
    let entry = b.create_block();
    let keyed = b.create_block();
    let checked = b.create_block();
    let call = b.create_block();
    let done = b.create_block();
    let handler = b.create_block();
    let slow = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.append_block_param(done, types::I64);
    b.append_block_param(handler, types::I64);
    b.append_block_param(handler, types::I64);
    b.set_cold_block(handler);
    b.set_cold_block(slow);

    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let (obj, rec, args) = (params[0], params[1], &params[2..]);
    let room_at = ThreadRecord::ROOM as i32;
    let room = b.ins().load(types::I32, mem(), rec, room_at);
    let less = b.ins().iadd_imm_s(room, -1);
    b.ins().store(mem(), less, rec, room_at);
    let class = b.ins().load(types::I64, mem(), obj, Object::CLASS as i32);
    let key = b.ins().load(types::I64, mem(), obj, Object::KEY as i32);
    let word = b.ins().load(types::I64, mem(), class, Class::ENTRY as i32);
    // One branch per test (each a fused compare-and-jump), in the Rust border's order.
    let more = b.ins().icmp_imm_s(IntCC::NotEqual, room, 0);
    b.ins().brif(more, keyed, &[], slow, &[]);
    b.switch_to_block(keyed);
    let attached = b.ins().icmp(IntCC::Equal, key, word);
    b.ins().brif(attached, checked, &[], slow, &[]);
    b.switch_to_block(checked);
    if !fixed {
        // A reloadable class: this entry is the one of the version whose code it holds.
        let current_at = (Class::HOST_ENTRY + 8 * m as usize) as i32;
        let current = b.ins().load(types::I64, mem(), class, current_at);
        let this = b.ins().func_addr(types::I64, me_ref);
        let mine = b.ins().icmp(IntCC::Equal, current, this);
        let next = b.create_block();
        b.ins().brif(mine, next, &[], slow, &[]);
        b.switch_to_block(next);
    }
    // The class's context only once the key test passed (an unloaded class's may be gone),
    // then the stack check ([`drop_stack_check`] removes it when the entry calls no script
    // code: a leaf, as `opt_inline::drop_leaf_checks` has it).
    let stack_block = b.create_block();
    b.ins().jump(stack_block, &[]);
    b.switch_to_block(stack_block);
    let vmctx = b.ins().load(types::I64, mem(), class, Class::VMCTX as i32);
    let sp = b.ins().get_stack_pointer(types::I64);
    let limit = b.ins().load(types::I64, mem(), vmctx, VMCTX_STACK_LIMIT);
    let stack = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, sp, limit);
    b.ins().brif(stack, call, &[], slow, &[]);

    b.switch_to_block(call);
    let body_sig = b.func.dfg.ext_funcs[body_ref].signature;
    let pool = &mut b.func.dfg.value_lists;
    let normal = BlockCall::new(done, [BlockArg::TryCallRet(0)], pool);
    let caught = BlockCall::new(
        handler,
        [BlockArg::TryCallExn(0), BlockArg::TryCallExn(1)],
        pool,
    );
    let table = b.func.dfg.exception_tables.push(ExceptionTableData::new(
        body_sig,
        normal,
        [ExceptionTableItem::Default(caught)],
    ));
    let mut call_args = vec![vmctx, obj];
    call_args.extend_from_slice(args);
    b.ins().try_call(body_ref, &call_args, table);

    b.switch_to_block(done);
    let value = b.block_params(done)[0];
    b.ins().store(mem(), room, rec, room_at);
    let none = b.ins().iconst(types::I64, 0);
    b.ins().return_(&[value, none]);

    b.switch_to_block(handler);
    let exception = b.block_params(handler)[0];
    b.ins().store(mem(), room, rec, room_at);
    let call = b.ins().call(caught_ref, &[exception]);
    let fault = b.inst_results(call)[0];
    let zero = b.ins().iconst(types::I64, 0);
    b.ins().return_(&[zero, fault]);

    b.switch_to_block(slow);
    b.ins().store(mem(), room, rec, room_at);
    let mut slow_args = vec![obj, rec, room];
    slow_args.extend_from_slice(args);
    let call = b.ins().call(slow_ref, &slow_args);
    let out = b.inst_results(call).to_vec();
    b.ins().return_(&out);

    b.seal_all_blocks();
    b.finalize(config);
}

/// Replace the stack check of a host entry that calls no script code (its method inlined, and
/// a leaf) by a jump: as a leaf's own check is dropped, the limit keeps room for its frame.
/// False when `func` has no such check.
pub(crate) fn drop_stack_check(func: &mut ir::Function) -> bool {
    use ir::Opcode::{Brif, GetStackPointer, Icmp, Load};
    let found = func.layout.blocks().find_map(|block| {
        let insts: Vec<ir::Inst> = func.layout.block_insts(block).collect();
        let opcodes: Vec<ir::Opcode> = insts.iter().map(|&i| func.dfg.insts[i].opcode()).collect();
        (opcodes == [Load, GetStackPointer, Load, Icmp, Brif]).then_some(insts)
    });
    let Some(insts) = found else {
        return false;
    };
    let ir::InstructionData::Brif { blocks, .. } = func.dfg.insts[insts[4]] else {
        return false;
    };
    let go = blocks[0].block(&func.dfg.value_lists);
    func.replace(insts[4]).jump(go, &[]);
    for &inst in &insts[1..4] {
        func.layout.remove_inst(inst);
    }
    // The context, when the inlined method does not use it either (a load is not removed as
    // dead code).
    let vmctx = func.dfg.first_result(insts[0]);
    let used = func.layout.blocks().any(|b| {
        func.layout
            .block_insts(b)
            .any(|i| func.dfg.inst_values(i).any(|v| v == vmctx))
    });
    if !used {
        func.layout.remove_inst(insts[0]);
    }
    true
}
