//! Every backend: branches whose outcome the code before them already decided go straight to
//! their target.
//!
//! Two shapes the lowering and the inliner leave behind, which Cranelift 0.135 keeps (it threads
//! jumps only through empty blocks that move no arguments, when it emits machine code, and its
//! optimizer never removes a branch):
//!
//! - **A test repeated under itself.** `let t: Tcb = self.current` asserts `t` is not null, and
//!   `t.run()` right after tests it again before its handle check; a vec local tested for the
//!   empty vec before a loop is tested again inside. A block reached only by the "not zero" edge
//!   of `brif v` knows `v != 0` (and by the other edge `v == 0`), and so does every block it
//!   dominates: a `brif` there on `v` (or on `v == 0`, `v != 0`) becomes a `jump`
//!   ([`decide_known_branches`]).
//! - **A condition joined before it is tested.** `a || b` as a value is a block with a bool
//!   parameter that the `a` edge passes as true and the `b` block as `b`; an inlined function
//!   that returns a bool passes it to its return block; an `if` then tests that parameter. A
//!   block that holds nothing but `brif p` on its own parameter `p` (or only a `jump`) is
//!   skipped by each predecessor: an edge that passes a known `p` (a constant, or the
//!   predecessor's own branch condition on that edge) goes to the target it would take, and a
//!   `jump` that passes an unknown `p` becomes the `brif` itself, where Cranelift can fuse it
//!   with the compare that made `p` ([`thread_joined_branches`]).
//!
//! Only the edges change: no value is computed anew, and each target receives the very
//! arguments it received through the block it no longer passes through (a value the skipped
//! block used is one of its parameters, replaced by the predecessor's argument, or defined
//! above it, and so available at the predecessor). A loop header is never skipped, so no loop
//! gains a second entry. A block left with no predecessor is dropped by Cranelift. In
//! Richards' scheduler loop on jit-opt: the inlined `is_held_or_suspended` (`s & 4 != 0 || s
//! == 2`) and the repeated null tests of `t`.

use std::collections::{HashMap, HashSet};

use cranelift_codegen::dominator_tree::DominatorTree;
use cranelift_codegen::flowgraph::ControlFlowGraph;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{self, BlockArg, BlockCall, InstructionData, Opcode, Value, ValueDef};

/// The branch passes every Cranelift backend runs on a lowered function before compiling it:
/// decided branches folded ([`fold_known_branches`]), then cold targets first
/// ([`cold_targets_first`](super::opt_branches::cold_targets_first)), so loop invariants after a
/// check are hoisted.
pub(crate) fn shape_branches(func: &mut ir::Function) {
    fold_known_branches(func);
    super::opt_branches::cold_targets_first(func);
}

/// Thread the joined conditions, then decide the known branches (module docs). Returns how many
/// edges or branches changed.
pub(crate) fn fold_known_branches(func: &mut ir::Function) -> usize {
    let threaded = thread_joined_branches(func);
    threaded + decide_known_branches(func)
}

/// `c` as a test of another value: `(base, same)` where `c != 0` exactly when `base != 0` is
/// `same` (`v` → `(v, true)`, `v == 0` → `(v, false)`, `(v == 0) == 0` → `(v, true)`).
fn test_of(func: &ir::Function, c: Value) -> (Value, bool) {
    let mut v = func.dfg.resolve_aliases(c);
    let mut same = true;
    for _ in 0..4 {
        let ValueDef::Result(inst, 0) = func.dfg.value_def(v) else {
            break;
        };
        let (cond, x) = match func.dfg.insts[inst] {
            InstructionData::IntCompare {
                opcode: Opcode::Icmp,
                cond,
                args: [a, b],
            } => match (constant(func, a), constant(func, b)) {
                (_, Some(0)) => (cond, a),
                (Some(0), _) => (cond, b),
                _ => break,
            },
            _ => break,
        };
        match cond {
            IntCC::Equal => same = !same,
            IntCC::NotEqual => {}
            _ => break,
        }
        v = func.dfg.resolve_aliases(x);
    }
    (v, same)
}

/// The value of an integer constant.
fn constant(func: &ir::Function, v: Value) -> Option<i64> {
    let v = func.dfg.resolve_aliases(v);
    let ValueDef::Result(inst, 0) = func.dfg.value_def(v) else {
        return None;
    };
    match func.dfg.insts[inst] {
        InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            imm,
        } => Some(imm.bits()),
        _ => None,
    }
}

/// The `brif`'s condition and its two targets, when `inst` is one.
fn brif_parts(func: &ir::Function, inst: ir::Inst) -> Option<(Value, [BlockCall; 2])> {
    match func.dfg.insts[inst] {
        InstructionData::Brif {
            opcode: Opcode::Brif,
            arg,
            blocks,
        } => Some((arg, blocks)),
        _ => None,
    }
}

/// Replace the branch `inst` with a `jump` along `call`.
fn make_jump(func: &mut ir::Function, inst: ir::Inst, call: BlockCall) {
    func.dfg.insts[inst] = InstructionData::Jump {
        opcode: Opcode::Jump,
        destination: call,
    };
}

/// A block that some predecessor reaches by a back edge (one it dominates).
fn loop_header(cfg: &ControlFlowGraph, domtree: &DominatorTree, block: ir::Block) -> bool {
    cfg.pred_iter(block)
        .any(|p| domtree.block_dominates(block, p.block))
}

/// Branches decided by a dominating edge (module docs, first shape). Returns how many.
pub(crate) fn decide_known_branches(func: &mut ir::Function) -> usize {
    let cfg = ControlFlowGraph::with_function(func);
    let domtree = DominatorTree::with_function(func, &cfg);
    // The fact at the entry of each block reached by one edge of a two-way `brif`: its base
    // is not zero (`true`) or is zero.
    let mut facts: HashMap<ir::Block, (Value, bool)> = HashMap::new();
    for block in func.layout.blocks() {
        let Some(term) = func.layout.last_inst(block) else {
            continue;
        };
        let Some((c, [then, other])) = brif_parts(func, term) else {
            continue;
        };
        let (then, other) = (
            then.block(&func.dfg.value_lists),
            other.block(&func.dfg.value_lists),
        );
        if then == other {
            continue;
        }
        let (base, same) = test_of(func, c);
        for (target, taken) in [(then, true), (other, false)] {
            if cfg.pred_iter(target).count() == 1 {
                facts.insert(target, (base, taken == same));
            }
        }
    }
    if facts.is_empty() {
        return 0;
    }
    // A walk of the dominator tree with the facts in force (undone on the way back up).
    let Some(entry) = func.layout.entry_block() else {
        return 0;
    };
    let mut known: HashMap<Value, bool> = HashMap::new();
    let mut decided = Vec::new();
    // (block, the fact it set and what that value knew before), or an exit marker.
    let mut stack: Vec<(ir::Block, bool)> = vec![(entry, true)];
    let mut undo: Vec<(Value, Option<bool>)> = Vec::new();
    let mut marks: Vec<usize> = Vec::new();
    while let Some((block, entering)) = stack.pop() {
        if !entering {
            let mark = marks.pop().unwrap_or(0);
            while undo.len() > mark {
                if let Some((v, before)) = undo.pop() {
                    match before {
                        Some(b) => known.insert(v, b),
                        None => known.remove(&v),
                    };
                }
            }
            continue;
        }
        marks.push(undo.len());
        stack.push((block, false));
        if let Some(&(base, nonzero)) = facts.get(&block) {
            undo.push((base, known.insert(base, nonzero)));
        }
        if let Some(term) = func.layout.last_inst(block)
            && let Some((c, [then, other])) = brif_parts(func, term)
        {
            let (base, same) = test_of(func, c);
            if let Some(&nonzero) = known.get(&base) {
                decided.push((term, if nonzero == same { then } else { other }));
            }
        }
        for child in domtree.children(block) {
            stack.push((child, true));
        }
    }
    for &(term, call) in &decided {
        make_jump(func, term, call);
    }
    decided.len()
}

/// What the block `block` does, when it is a block the threading skips: nothing but its
/// terminator, a `jump`, or a `brif` on one of its own parameters (by index).
enum Skippable {
    Jump(BlockCall),
    Brif(usize, [BlockCall; 2]),
}

fn skippable(func: &ir::Function, block: ir::Block) -> Option<Skippable> {
    let term = func.layout.last_inst(block)?;
    if func.layout.first_inst(block) != Some(term) {
        return None;
    }
    match func.dfg.insts[term] {
        InstructionData::Jump {
            opcode: Opcode::Jump,
            destination,
        } => Some(Skippable::Jump(destination)),
        InstructionData::Brif {
            opcode: Opcode::Brif,
            arg,
            blocks,
        } => {
            let arg = func.dfg.resolve_aliases(arg);
            let index = func
                .dfg
                .block_params(block)
                .iter()
                .position(|&p| p == arg)?;
            Some(Skippable::Brif(index, blocks))
        }
        _ => None,
    }
}

/// `call` (a branch out of `skipped`) as made from an edge into `skipped` that passed `args`:
/// each of `skipped`'s parameters replaced by its argument. `None` when an argument is not a
/// plain value.
fn passed_through(
    func: &mut ir::Function,
    skipped: ir::Block,
    args: &[BlockArg],
    call: BlockCall,
) -> Option<BlockCall> {
    let params: HashMap<Value, usize> = func
        .dfg
        .block_params(skipped)
        .iter()
        .enumerate()
        .map(|(i, &p)| (p, i))
        .collect();
    let target = call.block(&func.dfg.value_lists);
    let mut new_args = Vec::new();
    for arg in call.args(&func.dfg.value_lists) {
        let BlockArg::Value(v) = arg else {
            return None;
        };
        let v = func.dfg.resolve_aliases(v);
        new_args.push(match params.get(&v) {
            Some(&i) => *args.get(i)?,
            None => BlockArg::Value(v),
        });
    }
    if new_args.iter().any(|a| !matches!(a, BlockArg::Value(_))) {
        return None;
    }
    Some(BlockCall::new(target, new_args, &mut func.dfg.value_lists))
}

/// Edges into skippable blocks retargeted (module docs, second shape). Returns how many.
pub(crate) fn thread_joined_branches(func: &mut ir::Function) -> usize {
    let mut changed = 0;
    // Each round retargets edges into the blocks that were skippable when the round began; a
    // chain of skippable blocks takes a round per block, and few chains are longer than two.
    for _ in 0..4 {
        let cfg = ControlFlowGraph::with_function(func);
        let domtree = DominatorTree::with_function(func, &cfg);
        let entry = func.layout.entry_block();
        let uses = use_counts(func);
        // Branches rewritten this round: a block whose own terminator changed is left for the
        // next round, whose counts see the uses of its parameters that the rewrite added.
        let mut rewritten: HashSet<ir::Inst> = HashSet::new();
        let mut round = 0;
        let blocks: Vec<ir::Block> = func.layout.blocks().collect();
        for block in blocks {
            if Some(block) == entry || !domtree.is_reachable(block) {
                continue;
            }
            if func
                .layout
                .last_inst(block)
                .is_some_and(|t| rewritten.contains(&t))
            {
                continue;
            }
            let Some(what) = skippable(func, block) else {
                continue;
            };
            if loop_header(&cfg, &domtree, block) || params_used_below(func, block, &uses) {
                continue;
            }
            let preds: Vec<ir::Inst> = cfg.pred_iter(block).map(|p| p.inst).collect();
            for pred in preds {
                let n = thread_edge(func, pred, block, &what);
                if n > 0 {
                    rewritten.insert(pred);
                }
                round += n;
            }
        }
        changed += round;
        if round == 0 {
            break;
        }
    }
    changed
}

/// How many times each value is an operand (branch arguments included), by its alias-free
/// name.
fn use_counts(func: &ir::Function) -> HashMap<Value, usize> {
    let mut uses = HashMap::new();
    for block in func.layout.blocks() {
        for inst in func.layout.block_insts(block) {
            for v in func.dfg.inst_values(inst) {
                *uses.entry(func.dfg.resolve_aliases(v)).or_insert(0) += 1;
            }
        }
    }
    uses
}

/// Whether a parameter of `block` is used outside its terminator: by a block it dominates,
/// which a predecessor that skipped `block` would reach without it.
fn params_used_below(func: &ir::Function, block: ir::Block, uses: &HashMap<Value, usize>) -> bool {
    let Some(term) = func.layout.last_inst(block) else {
        return true;
    };
    let mut here: HashMap<Value, usize> = HashMap::new();
    for v in func.dfg.inst_values(term) {
        *here.entry(func.dfg.resolve_aliases(v)).or_insert(0) += 1;
    }
    func.dfg
        .block_params(block)
        .iter()
        .any(|p| uses.get(p).copied().unwrap_or(0) != here.get(p).copied().unwrap_or(0))
}

/// Where an edge that passed `args` into the skippable block `block` goes instead, when that
/// is known: always past a `jump`; past a `brif` when its parameter is a constant on the edge
/// or `edge_knows` it (whether it is not zero).
fn skipped_to(
    func: &mut ir::Function,
    block: ir::Block,
    args: &[BlockArg],
    what: &Skippable,
    edge_knows: impl Fn(&ir::Function, Value) -> Option<bool>,
) -> Option<BlockCall> {
    match *what {
        Skippable::Jump(next) => {
            if next.block(&func.dfg.value_lists) == block {
                return None;
            }
            passed_through(func, block, args, next)
        }
        Skippable::Brif(index, [then, other]) => {
            let BlockArg::Value(p) = *args.get(index)? else {
                return None;
            };
            let nonzero = match constant(func, p) {
                Some(k) => k != 0,
                None => edge_knows(func, p)?,
            };
            passed_through(func, block, args, if nonzero { then } else { other })
        }
    }
}

/// Retarget the edges of branch `pred` into the skippable block `block`.
fn thread_edge(
    func: &mut ir::Function,
    pred: ir::Inst,
    block: ir::Block,
    what: &Skippable,
) -> usize {
    match func.dfg.insts[pred] {
        InstructionData::Jump {
            opcode: Opcode::Jump,
            destination,
        } => {
            if destination.block(&func.dfg.value_lists) != block {
                return 0;
            }
            let args: Vec<BlockArg> = destination.args(&func.dfg.value_lists).collect();
            if let Some(call) = skipped_to(func, block, &args, what, |_, _| None) {
                make_jump(func, pred, call);
                return 1;
            }
            // An unknown parameter: the `brif` itself, worth a branch of its own only where it
            // fuses with the compare that made the parameter (else a critical edge may cost a
            // block of moves).
            let Skippable::Brif(index, [then, other]) = *what else {
                return 0;
            };
            let Some(&BlockArg::Value(p)) = args.get(index) else {
                return 0;
            };
            let here = func.layout.inst_block(pred);
            let made_here = match func.dfg.value_def(p) {
                ValueDef::Result(def, _) => func.layout.inst_block(def) == here,
                _ => false,
            };
            let (Some(then), Some(other)) = (
                passed_through(func, block, &args, then),
                passed_through(func, block, &args, other),
            ) else {
                return 0;
            };
            if !made_here || then.block(&func.dfg.value_lists) == other.block(&func.dfg.value_lists)
            {
                return 0;
            }
            func.dfg.insts[pred] = InstructionData::Brif {
                opcode: Opcode::Brif,
                arg: p,
                blocks: [then, other],
            };
            1
        }
        InstructionData::Brif {
            opcode: Opcode::Brif,
            arg: c,
            blocks,
        } => {
            let mut new = blocks;
            let mut count = 0;
            for (i, taken) in [(0, true), (1, false)] {
                let edge = blocks[i];
                if edge.block(&func.dfg.value_lists) != block {
                    continue;
                }
                let args: Vec<BlockArg> = edge.args(&func.dfg.value_lists).collect();
                // Besides a constant, the edge knows a test of its branch's own condition's
                // base: on it `cb != 0` is `taken == csame`.
                let knows = |func: &ir::Function, p: Value| {
                    let (cb, csame) = test_of(func, c);
                    let (pb, psame) = test_of(func, p);
                    (cb == pb).then_some((taken == csame) == psame)
                };
                if let Some(call) = skipped_to(func, block, &args, what, knows) {
                    new[i] = call;
                    count += 1;
                }
            }
            if count == 0
                || new[0].block(&func.dfg.value_lists) == new[1].block(&func.dfg.value_lists)
            {
                return 0;
            }
            func.dfg.insts[pred] = InstructionData::Brif {
                opcode: Opcode::Brif,
                arg: c,
                blocks: new,
            };
            count
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> ir::Function {
        cranelift_reader::parse_functions(text)
            .expect("CLIF text parses")
            .remove(0)
    }

    fn verified(func: &ir::Function) -> String {
        let text = func.display().to_string();
        let isa = super::super::build_isa(false).expect("the native ISA");
        cranelift_codegen::verifier::verify_function(func, isa.as_ref())
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        text
    }

    /// The terminator of `block` as text.
    fn term(func: &ir::Function, block: u32) -> String {
        let block = ir::Block::from_u32(block);
        let inst = func.layout.last_inst(block).unwrap();
        let text = func.dfg.display_inst(inst).to_string();
        // `brif.i8 v4, ...` / `brif.i64 v0, ...`: the condition's type does not matter here.
        match text.split_once(' ') {
            Some((op, rest)) if op.starts_with("brif.") => format!("brif {rest}"),
            _ => text,
        }
    }

    #[test]
    fn a_test_repeated_under_itself_becomes_a_jump() {
        // block1 is reached only when v0 != 0; its `v0 == 0` test is decided (so is block3's
        // `brif v0`, which block1 dominates).
        let mut func = parse(
            "function %f(i64) -> i64 {
             block0(v0: i64):
                 brif v0, block1, block2
             block1:
                 v1 = iconst.i64 0
                 v2 = icmp eq v0, v1
                 brif v2, block2, block3
             block3:
                 brif v0, block4, block2
             block4:
                 return v0
             block2:
                 v3 = iconst.i64 7
                 return v3
             }",
        );
        assert_eq!(decide_known_branches(&mut func), 2);
        verified(&func);
        assert_eq!(term(&func, 1), "jump block3");
        assert_eq!(term(&func, 3), "jump block4");
        // block0's own test stays: nothing above it knows v0.
        assert!(term(&func, 0).starts_with("brif v0"));
        assert_eq!(decide_known_branches(&mut func), 0);
    }

    #[test]
    fn a_fact_holds_only_below_the_edge_that_made_it() {
        // block3 is reached from both edges of block0's test: nothing is known there.
        let mut func = parse(
            "function %f(i64) -> i64 {
             block0(v0: i64):
                 brif v0, block1, block2
             block1:
                 jump block3
             block2:
                 jump block3
             block3:
                 brif v0, block4, block5
             block4:
                 return v0
             block5:
                 v3 = iconst.i64 7
                 return v3
             }",
        );
        assert_eq!(decide_known_branches(&mut func), 0);
        assert!(term(&func, 3).starts_with("brif v0"));
    }

    #[test]
    fn a_joined_condition_is_tested_where_it_is_known() {
        // `a || b` joined in block3, then tested: the `a` edge goes straight to block4, and
        // block2's `jump` becomes the test of `b` itself.
        let mut func = parse(
            "function %f(i64) -> i64 {
             block0(v0: i64):
                 v1 = iconst.i64 4
                 v2 = band v0, v1
                 v3 = iconst.i64 0
                 v4 = icmp ne v2, v3
                 brif v4, block3(v4), block2
             block2:
                 v5 = iconst.i64 2
                 v6 = icmp eq v0, v5
                 jump block3(v6)
             block3(v7: i8):
                 brif v7, block4, block5
             block4:
                 v8 = iconst.i64 1
                 return v8
             block5:
                 v9 = iconst.i64 0
                 return v9
             }",
        );
        assert_eq!(thread_joined_branches(&mut func), 2);
        verified(&func);
        assert_eq!(term(&func, 0), "brif v4, block4, block2");
        assert_eq!(term(&func, 2), "brif v6, block4, block5");
    }

    #[test]
    fn a_constant_passed_through_a_forwarding_block_is_decided() {
        // An inlined `return true` reaches the caller's test through a forwarding block.
        let mut func = parse(
            "function %f(i64) -> i64 {
             block0(v0: i64):
                 brif v0, block1, block2
             block1:
                 v1 = iconst.i8 1
                 jump block3(v1)
             block2:
                 v6 = iconst.i64 0
                 v2 = icmp eq v0, v6
                 jump block3(v2)
             block3(v3: i8):
                 jump block4(v3)
             block4(v4: i8):
                 brif v4, block5, block6
             block5:
                 return v0
             block6:
                 v5 = iconst.i64 0
                 return v5
             }",
        );
        assert!(thread_joined_branches(&mut func) >= 3);
        verified(&func);
        assert_eq!(term(&func, 1), "jump block5");
        assert_eq!(term(&func, 2), "brif v2, block5, block6");
    }

    #[test]
    fn a_branch_edge_into_a_forwarding_block_or_passing_the_inverse_test() {
        // block0's true edge passes `v1 == 0` (false there, as v1 != 0 on that edge): block3
        // decides it for that edge; block2 forwards to block3 with an unknown value.
        let mut func = parse(
            "function %f(i64) -> i64 {
             block0(v0: i64):
                 v9 = iconst.i64 0
                 v1 = icmp ne v0, v9
                 v8 = iconst.i8 0
                 v2 = icmp eq v1, v8
                 brif v1, block3(v2), block2
             block2:
                 v3 = iconst.i8 1
                 jump block4(v3)
             block4(v4: i8):
                 jump block3(v4)
             block3(v5: i8):
                 brif v5, block5, block6
             block5:
                 v6 = iconst.i64 5
                 return v6
             block6:
                 v7 = iconst.i64 6
                 return v7
             }",
        );
        assert!(fold_known_branches(&mut func) >= 2);
        verified(&func);
        assert_eq!(term(&func, 0), "brif v1, block6, block2");
        assert_eq!(term(&func, 2), "jump block5");
    }

    #[test]
    fn a_block_rewritten_in_a_round_is_skipped_only_with_fresh_counts() {
        // block1 (laid out before block2, its predecessor) is skipped first, which makes
        // block2's terminator pass block2's own parameter twice; block3 reads v4 too, so
        // block2 must not be skipped then (its parameter would lose its definition).
        let mut func = parse(
            "function %f(i64) -> i64 {
             block0(v0: i64):
                 v1 = iconst.i64 1
                 v2 = iadd v0, v1
                 jump block2(v2)
             block1(v3: i64):
                 jump block3(v3, v3)
             block2(v4: i64):
                 jump block1(v4)
             block3(v5: i64, v6: i64):
                 v7 = iadd v5, v4
                 return v7
             }",
        );
        fold_known_branches(&mut func);
        verified(&func);
        assert_eq!(term(&func, 2), "jump block3(v4, v4)");
        assert_eq!(term(&func, 0), "jump block2(v2)");
    }

    #[test]
    fn a_block_whose_parameter_is_used_below_or_that_heads_a_loop_is_kept() {
        // block3's parameter is read by block4, which block3 dominates: skipping block3 would
        // leave that read without its value.
        let mut func = parse(
            "function %f(i64) -> i64 {
             block0(v0: i64):
                 brif v0, block3(v0), block2
             block2:
                 v1 = iconst.i64 5
                 jump block3(v1)
             block3(v2: i64):
                 brif v2, block4, block5
             block4:
                 return v2
             block5:
                 return v0
             }",
        );
        assert_eq!(thread_joined_branches(&mut func), 0);
        // A loop: block1 is its header (block2 jumps back to it).
        let mut func = parse(
            "function %f(i64) -> i64 {
             block0(v0: i64):
                 jump block1(v0)
             block1(v1: i64):
                 brif v1, block2, block3
             block2:
                 v2 = iconst.i64 0
                 jump block1(v2)
             block3:
                 return v0
             }",
        );
        assert_eq!(thread_joined_branches(&mut func), 0);
        verified(&func);
    }
}
