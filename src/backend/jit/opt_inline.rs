//! `jit-opt`: small script functions and methods inlined at their direct call sites, with
//! Cranelift's inliner (`Context::inline`), before the optimizer runs.
//!
//! # Which calls
//! Only direct `call`s of script functions: module functions, static methods, and methods
//! called on an object of a known class (statically bound, a direct `call` on `jit-opt`, which
//! has no reload to rebind it), and calls of a `let` bound to a lambda (`lower_closure.rs`).
//! Virtual calls and other closure calls are `call_indirect` and stay calls.
//! A callee is inlined when it is *small*: at most [`MAX_CALLEE_INSTS`] CLIF instructions
//! outside its cold blocks (the raise paths), or at most [`MAX_ONE_SITE_INSTS`] when it has no
//! loop and the call is its only call site in the program, and it does not call itself. A
//! function that calls itself (and is on no cycle with another) takes its own body once at its
//! recursive call sites instead ([`inline_self`], at most [`MAX_SELF_INSTS`] and
//! [`MAX_SELF_SLOT_BYTES`] of slots): the recursion unrolled by one level, half its calls. That
//! one is done on `jit` (and `object`) too: the copy is the same function of the same version,
//! and a reload waits until no thread is inside a call, so none comes between a level and the
//! next. A caller grows by at most [`MAX_GROWTH_INSTS`] inlined instructions, so compile time
//! stays linear in the program. Functions are visited callees first, and a body is taken after
//! its own small callees went into it, so a chain of small calls inlines
//! flat (as long as the whole stays small); calls inside an inlined body are not visited again.
//!
//! # Why it stays correct
//! - **Error locations** are data in the IR: every raise helper takes its span as two
//!   constants, which move with the inlined instructions. An error raised in an inlined function
//!   is reported at its own line, as before. No error names its call stack.
//! - **Unwinding.** A `ScriptError` unwinds as a Rust panic, and `runtime::sweep` releases what
//!   each frame owns from the stack map entries of the call it unwinds through
//!   (`lower_unwind.rs`). Cranelift's inliner gives every call of the inlined body the entries
//!   of the call site it replaces (the caller's home slots and held temporaries) besides the
//!   callee's own, remapped to the callee's slots, which become the caller's. So an error in
//!   the inlined body releases both frames' cells, as two frames did. The lowering makes no
//!   `try_call` (there are no handlers in JIT code), so no exception table needs merging.
//! - **The stack check.** An inlined body runs in its caller's frame, which has passed its own
//!   check with the merged frame's size, so the body's prologue check is dropped: its `brif` to
//!   the `hot_raise_stack` block becomes a jump. (A callee that calls itself is inlined only
//!   into itself, so runaway recursion still fails in the recursing function's own check, with
//!   the same located error, one frame in two levels.)
//! - **Leaves** (every backend, [`drop_leaf_checks`]): a small function that calls no script
//!   code has no check at all; the limit keeps room for one such frame.
//! - **Frame size.** The stack check leaves room for the largest frame; the caller's frame size
//!   is taken after inlining (its slots and the inlined ones).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use cranelift_codegen::Context;
use cranelift_codegen::inline::{Inline, InlineCommand};
use cranelift_codegen::ir::{self, ExternalName, InstBuilder, InstructionData, Opcode};
use cranelift_module::FuncId;

/// The largest callee inlined, in CLIF instructions outside cold blocks (a field read with its
/// inline handle check and a few operations is about 35; a method with a short loop, as
/// fasta's `Table.pick` and `Out.line`, 100 to 150).
const MAX_CALLEE_INSTS: usize = 160;

/// The most slot bytes a leaf may have and still lose its stack check ([`drop_leaf_checks`]).
const LEAF_SLOT_BYTES: u64 = 16 * 1024;

/// The most CLIF instructions a leaf may have and still lose its stack check (its spills stay
/// well inside [`LEAF_ROOM`](super::helper_table::LEAF_ROOM) with its slots).
const LEAF_INSTS: usize = 2000;

/// The largest function that calls itself whose body is inlined into itself once
/// ([`inline_self`]), in CLIF instructions outside cold blocks: a recursive accessor, a tree
/// walk or a `fib` is 20 to 60; each recursive call site gains a copy (and see
/// [`MAX_SELF_SLOT_BYTES`]).
const MAX_SELF_INSTS: usize = 80;

/// The most slot bytes a function that calls itself may have and still take its own body:
/// each recursive call site's copy brings slots of its own (Cranelift gives every inlined body
/// its own), so with `k` sites a frame of `(1 + k) * F` bytes covers two levels, where two
/// frames of `F` did; and the limit keeps room for the largest frame below every function of
/// the program (`VmCtx::for_current_thread`). A few handle, string and small array slots stay
/// under this; a recursion over a big local array keeps its depth.
const MAX_SELF_SLOT_BYTES: u64 = 512;

/// The largest callee without a loop inlined at its only call site in the program (one direct
/// `call` or a host entry's `try_call`), in CLIF instructions outside cold blocks: a method the
/// program calls from one place (Richards' `Tcb.run` from the scheduler's loop, about 350)
/// loses its frame, its argument moves and its saved registers. (The function itself stays, for
/// the callers this count does not see: its entry trampoline, virtual and closure calls, and on
/// `jit` its runtime-bound calls; on `jit` only a host entry takes such a body.) A callee with a
/// loop pays its call once per loop, and taken into its caller's loop it made the caller's
/// registers worse (n-body's `advance` in `run`: 1035 -> 1082
/// executed instructions a step), so it is inlined only when small. Still within the caller's
/// [`MAX_GROWTH_INSTS`].
const MAX_ONE_SITE_INSTS: usize = 600;

/// How many inlined instructions one caller may gain.
const MAX_GROWTH_INSTS: usize = 2000;

/// Inline the small callees of the functions of `funcs` that `into` names (a program's
/// script functions as lowered, `(module id, CLIF)`, and its host entries; see the module
/// docs): every function for `OptLevel::Speed` (`jit-opt`, and the `object` backend at that
/// level, whose code is the JIT's), only the host entries otherwise; at every level a function
/// that calls itself (alone on its cycle) takes its own body once ([`inline_self`]). `stack` is the
/// `hot_raise_stack` helper, `array_heap` the `hot_array_heap` one: a function that calls it
/// (one with a large array in a heap block, `lower_util.rs`' heap slots) is never inlined,
/// since its loads of the block's address are movable on the promise that the block is made
/// once, at its entry, before anything runs; an inlined copy in a caller's loop would make it
/// again at each round. Returns the largest frame's slot bytes after inlining, or the function
/// that failed and why.
pub(crate) fn inline_small_functions<'f>(
    funcs: impl IntoIterator<Item = (FuncId, &'f mut ir::Function)>,
    into: impl Fn(FuncId) -> bool,
    stack: FuncId,
    array_heap: FuncId,
) -> Result<u64, (FuncId, String)> {
    let mut funcs: Vec<(FuncId, &mut ir::Function)> = funcs.into_iter().collect();
    let (order, recursive, self_calling) = {
        let view: Vec<(FuncId, &ir::Function)> = funcs.iter().map(|(id, f)| (*id, &**f)).collect();
        call_graph(&view)
    };
    let mut bodies = InlineBodies {
        bodies: HashMap::new(),
        recursive,
        sites: call_sites(funcs.iter().map(|(_, f)| &**f)),
    };
    // Callees before their callers: a body is taken after its own small callees went into it,
    // so a chain of small calls (a loop calling a method that reads a field through an
    // accessor) is flat wherever its head is inlined.
    for at in order {
        let (id, func) = &mut funcs[at];
        if self_calling.contains(&id.as_u32()) {
            let lowered = std::mem::replace(&mut **func, ir::Function::new());
            **func = if calls(&lowered, array_heap) {
                lowered
            } else {
                inline_self(*id, lowered, stack).map_err(|e| (*id, e))?
            };
        } else if into(*id) {
            let lowered = std::mem::replace(&mut **func, ir::Function::new());
            **func = bodies.inline_into(*id, lowered).map_err(|e| (*id, e))?;
        }
        if !calls(func, array_heap) {
            bodies.offer(*id, func, stack);
        }
    }
    Ok(funcs.iter().map(|(_, f)| slot_bytes(f)).max().unwrap_or(0))
}

/// The bodies of the functions that may be inlined, by module function index, each with its
/// stack check dropped (see the module docs).
struct InlineBodies {
    bodies: HashMap<u32, (ir::Function, usize)>,
    /// The functions on a cycle of direct calls (see [`call_graph`]).
    recursive: HashSet<u32>,
    /// How many direct call sites each function has in the program, as lowered.
    sites: HashMap<u32, usize>,
}

impl InlineBodies {
    /// Take `func` (module function `id`, with its own small callees already inlined where it
    /// gets them) as a body to inline when it is small and does not call itself; `stack` is
    /// the `hot_raise_stack` helper, whose call marks the prologue's check.
    fn offer(&mut self, id: FuncId, func: &ir::Function, stack: FuncId) {
        if calls(func, id) {
            return;
        }
        let mut body = func.clone();
        if !drop_stack_check(&mut body, stack) {
            return;
        }
        let size = hot_size(&body);
        let one_site = || self.sites.get(&id.as_u32()) == Some(&1) && !has_loop(&body);
        if size <= MAX_CALLEE_INSTS || (size <= MAX_ONE_SITE_INSTS && one_site()) {
            self.bodies.insert(id.as_u32(), (body, size));
        }
    }

    /// Inline the small callees of `func` (a script function; see the module docs). Returns
    /// the function, changed or not.
    fn inline_into(&self, id: FuncId, func: ir::Function) -> Result<ir::Function, String> {
        if self.bodies.is_empty() || self.recursive.contains(&id.as_u32()) {
            return Ok(func);
        }
        let mut ctx = Context::for_function(func);
        let first_new = ctx.func.global_values.len();
        let mut order = Vec::new();
        let inliner = Inliner {
            bodies: self,
            budget: MAX_GROWTH_INSTS,
            order: &mut order,
        };
        ctx.inline(inliner).map_err(|e| format!("inlining: {e}"))?;
        let inlined = order.iter().map(|index| &self.bodies[index].0);
        rename_symbols(&mut ctx.func, first_new, inlined)?;
        Ok(ctx.func)
    }
}

/// Inline the body of `func` (module function `id`, which calls itself and is on no other
/// cycle) once at each of its own recursive call sites, when it is small: the recursion is
/// unrolled by one level, so a call in two is a jump within the frame (no prologue, no
/// epilogue, no stack check, no argument and result moves). The copy's stack check is dropped
/// as any inlined body's; the outer check covers the merged frame, and a runaway recursion
/// still stops in this function's own check, the only one on its cycle, with the same located
/// error. The copy's own recursive calls stay calls.
fn inline_self(id: FuncId, func: ir::Function, stack: FuncId) -> Result<ir::Function, String> {
    let mut body = func.clone();
    if !drop_stack_check(&mut body, stack) {
        return Ok(func);
    }
    let size = hot_size(&body);
    if size > MAX_SELF_INSTS || slot_bytes(&body) > MAX_SELF_SLOT_BYTES {
        return Ok(func);
    }
    let own = InlineBodies {
        bodies: HashMap::from([(id.as_u32(), (body, size))]),
        recursive: HashSet::new(),
        sites: HashMap::new(),
    };
    own.inline_into(id, func)
}

struct Inliner<'a, 'o> {
    bodies: &'a InlineBodies,
    /// Instructions this caller may still gain.
    budget: usize,
    /// The module index of each body inlined, in order.
    order: &'o mut Vec<u32>,
}

impl Inline for Inliner<'_, '_> {
    fn inline(
        &mut self,
        caller: &ir::Function,
        _call_inst: ir::Inst,
        call_opcode: ir::Opcode,
        callee: ir::FuncRef,
        _call_args: &[ir::Value],
    ) -> InlineCommand<'_> {
        // A host entry calls its method with `try_call`: the inliner then makes the calls of
        // the inlined body `try_call`s to the entry's handler.
        if call_opcode != Opcode::Call && call_opcode != Opcode::TryCall {
            return InlineCommand::KeepCall;
        }
        let Some(index) = module_index(caller, callee) else {
            return InlineCommand::KeepCall;
        };
        let Some((body, size)) = self.bodies.bodies.get(&index) else {
            return InlineCommand::KeepCall;
        };
        // The inliner asserts equal signatures: never hand it one that is not.
        let sig = caller.dfg.ext_funcs[callee].signature;
        if caller.dfg.signatures[sig] != body.signature || *size > self.budget {
            return InlineCommand::KeepCall;
        }
        self.budget -= size;
        self.order.push(index);
        InlineCommand::Inline {
            callee: Cow::Borrowed(body),
            visit_callee: false,
        }
    }
}

/// Give the data symbols the inlined bodies brought into `func` their names in `func`.
///
/// Cranelift 0.135's inliner appends a callee's global values to the caller as they are
/// (`create_global_values`: a `Symbol` is cloned), so a data symbol (a string literal, a
/// closure descriptor, an array shape) keeps the callee's `UserExternalNameRef`, which in the
/// caller names something else, or nothing. The inliner appends each inlined body's global
/// values in the order it inlines them, after the caller's own (from `first_new`): walk them
/// in that order and declare each symbol's name in the caller.
fn rename_symbols<'b>(
    func: &mut ir::Function,
    first_new: usize,
    inlined: impl Iterator<Item = &'b ir::Function>,
) -> Result<(), String> {
    let mut next = first_new;
    for body in inlined {
        for data in body.global_values.values() {
            let gv = ir::GlobalValue::from_u32(next as u32);
            next += 1;
            let ir::GlobalValueData::Symbol {
                name: ExternalName::User(r),
                ..
            } = data
            else {
                continue;
            };
            let name = body.params.user_named_funcs()[*r].clone();
            let renamed = func.declare_imported_user_function(name);
            match func.global_values.get_mut(gv) {
                Some(ir::GlobalValueData::Symbol { name, .. }) => {
                    *name = ExternalName::User(renamed)
                }
                _ => return Err("inlining: a data symbol is not where it was appended".into()),
            }
        }
    }
    if next != func.global_values.len() {
        return Err("inlining: the inlined global values do not add up".into());
    }
    Ok(())
}

/// The module function index `callee` names in `func` (`u0:N`), if it names one.
fn module_index(func: &ir::Function, callee: ir::FuncRef) -> Option<u32> {
    let ExternalName::User(r) = func.dfg.ext_funcs[callee].name else {
        return None;
    };
    let name = &func.params.user_named_funcs()[r];
    (name.namespace == 0).then_some(name.index)
}

/// The module function indexes `func` calls directly, once per call site (a `call`, or a host
/// entry's `try_call` of its method).
fn direct_callees(func: &ir::Function) -> impl Iterator<Item = u32> + '_ {
    func.layout.blocks().flat_map(move |b| {
        func.layout
            .block_insts(b)
            .filter_map(move |i| match func.dfg.insts[i] {
                InstructionData::Call { func_ref, .. }
                | InstructionData::TryCall { func_ref, .. } => module_index(func, func_ref),
                _ => None,
            })
    })
}

/// Whether `func` has a loop (a back edge in its control flow).
fn has_loop(func: &ir::Function) -> bool {
    let cfg = cranelift_codegen::flowgraph::ControlFlowGraph::with_function(func);
    let domtree = cranelift_codegen::dominator_tree::DominatorTree::with_function(func, &cfg);
    let mut loops = cranelift_codegen::loop_analysis::LoopAnalysis::new();
    loops.compute(func, &cfg, &domtree);
    loops.loops().next().is_some()
}

/// How many direct call sites ([`direct_callees`]) each module function has in `funcs`.
fn call_sites<'f>(funcs: impl Iterator<Item = &'f ir::Function>) -> HashMap<u32, usize> {
    let mut sites = HashMap::new();
    for index in funcs.flat_map(direct_callees) {
        *sites.entry(index).or_insert(0) += 1;
    }
    sites
}

/// Whether `func` has a direct call of module function `id`.
fn calls(func: &ir::Function, id: FuncId) -> bool {
    direct_callees(func).any(|c| c == id.as_u32())
}

/// The positions of `funcs` in an order where a function comes after every function it calls
/// directly (outside a cycle), the functions on a cycle of direct calls among them, and of
/// those the ones alone on their cycle (a function that calls itself and is on no cycle with
/// another) (Tarjan's strongly connected components, iterative: linear in the calls; a
/// component is complete after every component it reaches, so they come out callees first).
///
/// No other function is inlined into the functions on a cycle, so a recursion stacks the same
/// functions' frames, each with its own prologue check, as without inlining: `down(step(n))`
/// with `step` inlined would otherwise always run out in `down`'s check, never in `step`'s.
/// (Which check of a recursion through several functions runs out first depends on where their
/// frames fall against the limit, on every backend alike.) A function alone on its cycle takes
/// its own body ([`inline_self`]): its check is the only one there is. Outside a cycle no depth
/// of calls builds up.
fn call_graph(funcs: &[(FuncId, &ir::Function)]) -> (Vec<usize>, HashSet<u32>, HashSet<u32>) {
    let position: HashMap<u32, usize> = funcs
        .iter()
        .enumerate()
        .map(|(i, (id, _))| (id.as_u32(), i))
        .collect();
    let edges: Vec<Vec<usize>> = funcs
        .iter()
        .map(|(_, f)| {
            let mut out: Vec<usize> = direct_callees(f)
                .filter_map(|c| position.get(&c).copied())
                .collect();
            out.sort_unstable();
            out.dedup();
            out
        })
        .collect();
    let n = funcs.len();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut next = 0usize;
    let mut recursive = HashSet::new();
    let mut self_calling = HashSet::new();
    let mut order = Vec::with_capacity(n);
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        // (node, next edge to visit)
        let mut work = vec![(root, 0usize)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut e)) = work.last_mut() {
            if let Some(&w) = edges[v].get(*e) {
                *e += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                let cycle = component.len() > 1 || edges[v].contains(&v);
                if cycle {
                    recursive.extend(component.iter().map(|&w| funcs[w].0.as_u32()));
                }
                if component.len() == 1 && edges[v].contains(&v) {
                    self_calling.insert(funcs[v].0.as_u32());
                }
                order.extend(component);
            }
        }
    }
    (order, recursive, self_calling)
}

/// Replace the prologue's stack check of `func` (the entry block's `brif` to a block calling
/// `stack`) by a jump to the body. False when the entry block does not end that way.
fn drop_stack_check(func: &mut ir::Function, stack: FuncId) -> bool {
    let Some(entry) = func.layout.entry_block() else {
        return false;
    };
    let Some(term) = func.layout.last_inst(entry) else {
        return false;
    };
    let InstructionData::Brif { blocks, .. } = func.dfg.insts[term] else {
        return false;
    };
    let overflow = blocks[0].block(&func.dfg.value_lists);
    let body = blocks[1].block(&func.dfg.value_lists);
    let raises = func
        .layout
        .block_insts(overflow)
        .any(|i| match func.dfg.insts[i] {
            InstructionData::Call { func_ref, .. } => {
                module_index(func, func_ref) == Some(stack.as_u32())
            }
            _ => false,
        });
    if !raises || blocks[1].args(&func.dfg.value_lists).next().is_some() {
        return false;
    }
    func.replace(term).jump(body, &[]);
    // The check's own instructions (`get_stack_pointer`, the load of the limit, the compare)
    // are all the entry block held before it: gone too, or the load would stay (a load is not
    // removed as dead code).
    let check: Vec<ir::Inst> = func
        .layout
        .block_insts(entry)
        .filter(|&i| i != term)
        .collect();
    let opcodes: Vec<Opcode> = check.iter().map(|&i| func.dfg.insts[i].opcode()).collect();
    if opcodes == [Opcode::GetStackPointer, Opcode::Load, Opcode::Icmp] {
        for inst in check {
            func.layout.remove_inst(inst);
        }
    }
    true
}

/// Drop the prologue's stack check of every function of `funcs` (a program's script functions,
/// after inlining) that calls no script code (no direct call of a function of `funcs`, no
/// indirect call: virtual methods, closures) and is small (at most [`LEAF_SLOT_BYTES`] of
/// slots and [`LEAF_INSTS`] instructions). Such a leaf cannot recurse, so its check could
/// only ever stop it one frame below a caller that passed its own; its frame, spills included,
/// fits in the [`LEAF_ROOM`](super::helper_table::LEAF_ROOM) the limit keeps for it
/// (`VmCtx::for_current_thread`), and the Rust helpers it calls (raises, allocation, natives)
/// keep their whole reserve below that. A call into a leaf then costs no load of the limit, no
/// compare and no branch. Returns how many were dropped.
pub(crate) fn drop_leaf_checks<'f>(
    funcs: impl IntoIterator<Item = (FuncId, &'f mut ir::Function)>,
    stack: FuncId,
) -> usize {
    let mut funcs: Vec<(FuncId, &mut ir::Function)> = funcs.into_iter().collect();
    let scripts: HashSet<u32> = funcs.iter().map(|(id, _)| id.as_u32()).collect();
    let mut dropped = 0;
    for (_, func) in &mut funcs {
        let small = slot_bytes(func) <= LEAF_SLOT_BYTES && func.dfg.num_insts() <= LEAF_INSTS;
        if !small || calls_script(func, &scripts) {
            continue;
        }
        dropped +=
            usize::from(drop_stack_check(func, stack) || super::host_entry::drop_stack_check(func));
    }
    dropped
}

/// Whether `func` may call script code: a direct call of a function in `scripts`, or any
/// indirect call.
fn calls_script(func: &ir::Function, scripts: &HashSet<u32>) -> bool {
    func.layout.blocks().any(|b| {
        func.layout.block_insts(b).any(|i| match func.dfg.insts[i] {
            InstructionData::Call { func_ref, .. } | InstructionData::TryCall { func_ref, .. } => {
                module_index(func, func_ref).is_none_or(|c| scripts.contains(&c))
            }
            ref other => other.opcode().is_call(),
        })
    })
}

/// Instructions of `func` outside its cold blocks.
fn hot_size(func: &ir::Function) -> usize {
    func.layout
        .blocks()
        .filter(|b| !func.layout.is_cold(*b))
        .map(|b| func.layout.block_insts(b).count())
        .sum()
}

/// Bytes of `func`'s explicit stack slots (after inlining: its own and the inlined ones).
fn slot_bytes(func: &ir::Function) -> u64 {
    func.sized_stack_slots
        .values()
        .map(|s| u64::from(s.size))
        .sum()
}
