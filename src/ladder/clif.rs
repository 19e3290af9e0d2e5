//! The `jit` build of a ladder row: its call path written as Cranelift IR (`.clif` text,
//! compiled by the same JIT as the snippet), one set of functions per row:
//!
//! - `%rK_loop(ctx, n) -> sum`: `n` calls through the row's layers, summing the results; the
//!   first fault ends the loop (the helper put it in the context).
//! - `%rK_row(ctx, n) -> sum`: the measure engine's raw ABI; enters the loop through
//!   [`ladder_catch_loop`](super::helpers::ladder_catch_loop), once per sample.
//!
//! A `catch` layer is generated code too, with no call of its own: the method call inside it
//! is a `try_call_indirect` whose exception table names a cold handler block (the helpers
//! never raise; they record a fault and answer). On the happy path that is the same call; a
//! `ScriptError` unwinding out of the method lands in the handler (the JIT's personality
//! routine, `backend/jit/unwind.rs`), which stores back the thread markers the wrapped layers
//! had read before moving them (the unwind skipped their restores; no extra load on the fast
//! path), finishes the catch ([`ladder_caught`](super::helpers::ladder_caught)) and fails the
//! call as a fault.
//!
//! Every load of the shell, the class, the slot and the thread record is a plain
//! `notrap aligned` load: never `readonly`/`can_move`, which would let Cranelift hoist it out of
//! the loop, while a reload changes these words under a running loop. Fast-path tests branch to
//! cold blocks that call Rust helpers by address (`iconst` + `call_indirect`, how the JIT calls
//! any host function). The method is called with the method ABI `(vmctx, this) -> i64`.

use std::fmt::Write;

use super::helpers::{FAULT_DETACHED, FAULT_EMPTY_SLOT, RowCtx, helper_addrs};
use super::path::{Path, Terminal};
use super::spec::Layer;
use crate::runtime::class::{Class, DETACHED_KEY, IfaceMethod};
use crate::runtime::depth::ThreadRecord;
use crate::runtime::object::Object;

/// Offset of the class's `vmctx` word.
fn class_vmctx() -> usize {
    std::mem::offset_of!(Class, vmctx)
}

/// Offset of the class's `Hook.call` interface entry.
fn class_hook_code() -> usize {
    std::mem::offset_of!(Class, iface_code) + 8 * IfaceMethod::HookCall as usize
}

/// Values in scope for the code of one function.
struct Env {
    ctx: String,
    this: String,
    rec: String,
}

/// The blocks of the depth test around a `fused` or `direct` call, and the room it read.
struct DepthBlocks {
    /// Reads the room.
    hdr: String,
    /// Takes one unit of room.
    try_: String,
    /// The caller's first cold block (`fused`: a pending reload; `direct`: detached).
    cold: String,
    /// No room left: the slow helper.
    slow: String,
    /// The caller's second cold block (`fused`: proceed after the slow helper; `direct`: fail).
    cold2: String,
    /// The terminal.
    go: String,
    /// The terminal's answer, `(value, fault)`: the room given back.
    after: String,
    /// The room read in `hdr`.
    room: String,
}

/// A text emitter with fresh value and block numbers.
struct Gen {
    body: String,
    next_v: usize,
    next_b: usize,
    /// The innermost `catch` around the code being emitted.
    catch: Option<Catch>,
}

/// An open `catch` layer: the method call inside it is a `try_call_indirect` into `handler`.
struct Catch {
    /// The handler block.
    handler: String,
    /// The thread markers the wrapped layers move, as they read them before moving them
    /// (`(offset in the record, value)`): the unwind skips the layers' own restores, so the
    /// handler stores these. Each value is read in a block that dominates the method call.
    restores: Vec<(usize, String)>,
    /// Whether the method call was emitted inside it (an outer catch around an inner one has
    /// nothing to catch, and no handler).
    used: bool,
}

const SIGS: &str = "    sig0 = (i64, i64) -> i64 system_v
    sig1 = (i64) -> i64 system_v
    sig2 = (i64, i64, i64) -> i64 system_v
";

impl Gen {
    fn v(&mut self) -> String {
        self.next_v += 1;
        format!("v{}", self.next_v)
    }
    fn b(&mut self) -> String {
        self.next_b += 1;
        format!("block{}", self.next_b)
    }
    fn line(&mut self, s: &str) {
        self.body.push_str("    ");
        self.body.push_str(s);
        self.body.push('\n');
    }
    fn start(&mut self, block: &str, params: &str) {
        let _ = writeln!(self.body, "{block}{params}:");
    }
    /// A block off the fast path (slow helpers, faults): marked `cold`, so Cranelift lays it
    /// out of line and its register allocator spills what only these blocks use, not the
    /// fast path's values.
    fn start_cold(&mut self, block: &str) {
        let _ = writeln!(self.body, "{block} cold:");
    }
    fn konst(&mut self, ty: &str, x: i128) -> String {
        let v = self.v();
        self.line(&format!("{v} = iconst.{ty} {x}"));
        v
    }
    fn load(&mut self, ty: &str, base: &str, off: usize) -> String {
        let v = self.v();
        self.line(&format!("{v} = load.{ty} notrap aligned {base}+{off}"));
        v
    }
    fn store(&mut self, val: &str, base: &str, off: usize) {
        self.line(&format!("store notrap aligned {val}, {base}+{off}"));
    }
    /// Call a Rust helper at `addr` with signature `sig` (the helpers never raise: they
    /// record a fault and answer).
    fn helper(&mut self, sig: &str, addr: usize, args: &[&str]) -> String {
        let f = self.konst("i64", addr as i128);
        let r = self.v();
        self.line(&format!(
            "{r} = call_indirect {sig}, {f}({})",
            args.join(", ")
        ));
        r
    }

    /// Note that a wrapped layer moved the marker at `off` of the thread record, whose value
    /// before was `before`: the open catch's handler puts it back.
    fn moved_marker(&mut self, off: usize, before: &str) {
        if let Some(c) = &mut self.catch {
            c.restores.push((off, before.to_string()));
        }
    }

    /// The method call: `call_indirect` of `f` (one `i64` result); inside a `catch`, a
    /// `try_call_indirect` whose exceptional edge goes to the catch's handler, and the code
    /// continues in a new block.
    fn method_call(&mut self, sig: &str, f: &str, args: &[&str]) -> String {
        let args = args.join(", ");
        let r = self.v();
        if let Some(c) = &mut self.catch {
            c.used = true;
        }
        match self.catch.as_ref().map(|c| c.handler.clone()) {
            None => self.line(&format!("{r} = call_indirect {sig}, {f}({args})")),
            Some(handler) => {
                let cont = self.b();
                self.line(&format!(
                    "try_call_indirect {f}({args}), {sig}, {cont}(ret0), [ default: {handler}(exn0) ]"
                ));
                self.start(&cont, &format!("({r}: i64)"));
            }
        }
        r
    }
    /// `done(0, fault)` after a failed test.
    fn fail_to(&mut self, done: &str, fault: &str) {
        let zero = self.konst("i64", 0);
        self.line(&format!("jump {done}({zero}, {fault})"));
    }
    /// Three-way on a slow helper's answer: RETRY → `retry`, FAIL → done, PROCEED → `proceed`.
    fn slow_answer(&mut self, r: &str, retry: &str, proceed: &str, done: &str) {
        let fail = self.b();
        let other = self.b();
        let one = self.konst("i64", 1);
        let is_fail = self.v();
        self.line(&format!("{is_fail} = icmp eq {r}, {one}"));
        self.line(&format!("brif {is_fail}, {fail}, {other}"));
        self.start_cold(&fail);
        self.fail_to(done, &one);
        self.start_cold(&other);
        self.line(&format!("brif {r}, {proceed}, {retry}"));
    }

    /// Emit `layers` (outermost first) around `terminal`; the path ends in `done(value, fault)`.
    fn path(&mut self, layers: &[Layer], terminal: Terminal, env: &Env, done: &str) {
        let Some((&outer, rest)) = layers.split_first() else {
            return self.terminal(terminal, env, done);
        };
        let a = helper_addrs();
        match outer {
            Layer::Depth => {
                let (hdr, slow, go, after) = (self.b(), self.b(), self.b(), self.b());
                self.line(&format!("jump {hdr}"));
                self.start(&hdr, "");
                let room = self.load("i32", &env.rec, ThreadRecord::ROOM);
                self.line(&format!("brif {room}, {go}, {slow}"));
                self.moved_marker(ThreadRecord::ROOM, &room);
                self.start_cold(&slow);
                let r = self.helper("sig1", a.depth_slow, &[&env.ctx]);
                let fail = self.b();
                self.line(&format!("brif {r}, {fail}, {hdr}"));
                self.start_cold(&fail);
                self.fail_to(done, &r);
                self.start(&go, "");
                let one = self.konst("i32", 1);
                let less = self.v();
                self.line(&format!("{less} = isub {room}, {one}"));
                self.store(&less, &env.rec, ThreadRecord::ROOM);
                self.path(rest, terminal, env, &after);
                let (v, f) = (self.v(), self.v());
                self.start(&after, &format!("({v}: i64, {f}: i64)"));
                self.store(&room, &env.rec, ThreadRecord::ROOM);
                self.line(&format!("jump {done}({v}, {f})"));
            }
            Layer::Entry => {
                let (hdr, try_, pend, slow, proceed, go, after) = (
                    self.b(),
                    self.b(),
                    self.b(),
                    self.b(),
                    self.b(),
                    self.b(),
                    self.b(),
                );
                self.line(&format!("jump {hdr}"));
                self.start(&hdr, "");
                let e = self.load("i32", &env.rec, ThreadRecord::ENTERED);
                self.line(&format!("brif {e}, {try_}, {slow}"));
                self.moved_marker(ThreadRecord::ENTERED, &e);
                self.start(&try_, "");
                let one = self.konst("i32", 1);
                let more = self.v();
                self.line(&format!("{more} = iadd {e}, {one}"));
                // The marker store stays before the entry-word load: Cranelift does not move
                // memory operations past each other, and the reloader's membarrier is the fence.
                self.store(&more, &env.rec, ThreadRecord::ENTERED);
                let class = self.load("i64", &env.this, Object::CLASS);
                let word = self.load("i64", &class, Class::ENTRY);
                let bit = self.konst("i64", 1);
                let pending = self.v();
                self.line(&format!("{pending} = band {word}, {bit}"));
                self.line(&format!("brif {pending}, {pend}, {go}"));
                self.start_cold(&pend);
                self.store(&e, &env.rec, ThreadRecord::ENTERED);
                self.line(&format!("jump {slow}"));
                self.start_cold(&slow);
                let e64 = self.v();
                self.line(&format!("{e64} = uextend.i64 {e}"));
                let r = self.helper("sig0", a.entry_slow, &[&env.ctx, &e64]);
                self.slow_answer(&r, &hdr, &proceed, done);
                self.start_cold(&proceed);
                let one = self.konst("i32", 1);
                let more = self.v();
                self.line(&format!("{more} = iadd {e}, {one}"));
                self.store(&more, &env.rec, ThreadRecord::ENTERED);
                self.line(&format!("jump {go}"));
                self.start(&go, "");
                self.path(rest, terminal, env, &after);
                let (v, f) = (self.v(), self.v());
                self.start(&after, &format!("({v}: i64, {f}: i64)"));
                self.store(&e, &env.rec, ThreadRecord::ENTERED);
                self.line(&format!("jump {done}({v}, {f})"));
            }
            Layer::Detached => {
                let (go, fail) = (self.b(), self.b());
                let class = self.load("i64", &env.this, Object::CLASS);
                let key = self.load("i64", &env.this, Object::KEY);
                let word = self.load("i64", &class, Class::ENTRY);
                let mask = self.konst("i64", -2);
                let current = self.v();
                self.line(&format!("{current} = band {word}, {mask}"));
                let same = self.v();
                self.line(&format!("{same} = icmp eq {key}, {current}"));
                self.line(&format!("brif {same}, {go}, {fail}"));
                self.start_cold(&fail);
                let kind = self.konst("i64", FAULT_DETACHED.into());
                let r = self.helper("sig0", a.fault, &[&env.ctx, &kind]);
                self.fail_to(done, &r);
                self.start(&go, "");
                self.path(rest, terminal, env, done);
            }
            Layer::Catch => {
                let handler = self.b();
                let outer = self.catch.replace(Catch {
                    handler: handler.clone(),
                    restores: Vec::new(),
                    used: false,
                });
                self.path(rest, terminal, env, done);
                let catch = std::mem::replace(&mut self.catch, outer).expect("the open catch");
                if !catch.used {
                    return;
                }
                let exn = self.v();
                let _ = writeln!(self.body, "{handler}({exn}: i64) cold:");
                for (off, v) in &catch.restores {
                    self.store(v, &env.rec, *off);
                }
                let r = self.helper("sig0", a.caught, &[&env.ctx, &exn]);
                self.fail_to(done, &r);
            }
            Layer::Fused => self.fused(terminal, env, done),
            Layer::Direct => self.direct(terminal, env, done),
            other => unreachable!("`{other}` is not a wrapping layer"),
        }
    }

    /// The depth test that `fused` and `direct` open with: seven blocks numbered in one go,
    /// then `hdr`: the thread's room, to the slow block when none is left; `try_`: one unit of
    /// room taken (the marker store stays before what follows: a collect's membarrier is the
    /// fence). The caller continues in `try_`.
    fn depth_enter(&mut self, env: &Env) -> DepthBlocks {
        let d = DepthBlocks {
            hdr: self.b(),
            try_: self.b(),
            cold: self.b(),
            slow: self.b(),
            cold2: self.b(),
            go: self.b(),
            after: self.b(),
            room: String::new(),
        };
        self.line(&format!("jump {}", d.hdr));
        self.start(&d.hdr, "");
        let room = self.load("i32", &env.rec, ThreadRecord::ROOM);
        self.line(&format!("brif {room}, {}, {}", d.try_, d.slow));
        self.start(&d.try_, "");
        self.take_room(&room, env);
        DepthBlocks { room, ..d }
    }

    /// Store `room` less one as the thread's room.
    fn take_room(&mut self, room: &str, env: &Env) {
        let one = self.konst("i32", 1);
        let less = self.v();
        self.line(&format!("{less} = isub {room}, {one}"));
        self.store(&less, &env.rec, ThreadRecord::ROOM);
    }

    /// How `fused` and `direct` close: `go` runs the terminal, whose answer comes to `after`,
    /// which gives the room back and jumps to `done(value, fault)`.
    fn depth_exit(&mut self, d: &DepthBlocks, terminal: Terminal, env: &Env, done: &str) {
        self.start(&d.go, "");
        self.terminal(terminal, env, &d.after);
        let (v, f) = (self.v(), self.v());
        self.start(&d.after, &format!("({v}: i64, {f}: i64)"));
        self.store(&d.room, &env.rec, ThreadRecord::ROOM);
        self.line(&format!("jump {done}({v}, {f})"));
    }

    fn fused(&mut self, terminal: Terminal, env: &Env, done: &str) {
        let a = helper_addrs();
        let d = self.depth_enter(env);
        let (hdr, room, pend, slow, proceed, go) =
            (&d.hdr, &d.room, &d.cold, &d.slow, &d.cold2, &d.go);
        // One compare covers a pending reload and a detached object: both make the words differ.
        let class = self.load("i64", &env.this, Object::CLASS);
        let key = self.load("i64", &env.this, Object::KEY);
        let word = self.load("i64", &class, Class::ENTRY);
        let same = self.v();
        self.line(&format!("{same} = icmp eq {key}, {word}"));
        self.line(&format!("brif {same}, {go}, {pend}"));
        self.start_cold(pend);
        self.store(room, &env.rec, ThreadRecord::ROOM);
        self.line(&format!("jump {slow}"));
        self.start_cold(slow);
        let room64 = self.v();
        self.line(&format!("{room64} = uextend.i64 {room}"));
        let r = self.helper("sig0", a.fused_slow, &[&env.ctx, &room64]);
        self.slow_answer(&r, hdr, proceed, done);
        self.start_cold(proceed);
        self.take_room(room, env);
        self.line(&format!("jump {go}"));
        self.depth_exit(&d, terminal, env, done);
    }

    /// The direct path (a fixed runtime's host entry): the depth test, then the key against the
    /// detached key alone (no entry word); the catch is the loop's border, as for `fused`.
    fn direct(&mut self, terminal: Terminal, env: &Env, done: &str) {
        let a = helper_addrs();
        let d = self.depth_enter(env);
        let (hdr, room, detached, slow, fail, go) =
            (&d.hdr, &d.room, &d.cold, &d.slow, &d.cold2, &d.go);
        // The marker store (in `depth_enter`) stays before the key load.
        let key = self.load("i64", &env.this, Object::KEY);
        let none = self.konst("i64", DETACHED_KEY.into());
        let live = self.v();
        self.line(&format!("{live} = icmp ne {key}, {none}"));
        self.line(&format!("brif {live}, {go}, {detached}"));
        self.start_cold(detached);
        self.store(room, &env.rec, ThreadRecord::ROOM);
        let kind = self.konst("i64", FAULT_DETACHED.into());
        let r = self.helper("sig0", a.fault, &[&env.ctx, &kind]);
        self.fail_to(done, &r);
        self.start_cold(slow);
        let r = self.helper("sig1", a.depth_slow, &[&env.ctx]);
        self.line(&format!("brif {r}, {fail}, {hdr}"));
        self.start_cold(fail);
        self.fail_to(done, &r);
        self.depth_exit(&d, terminal, env, done);
    }

    fn terminal(&mut self, terminal: Terminal, env: &Env, done: &str) {
        let (call, empty) = (self.b(), self.b());
        let (code, vm) = match terminal {
            Terminal::Slot => {
                let class = self.load("i64", &env.this, Object::CLASS);
                let code = self.load("i64", &class, Class::SLOTS);
                (code, (class, class_vmctx()))
            }
            Terminal::Bound => {
                let code = self.load("i64", &env.this, Object::BOUND);
                (code, (env.this.clone(), Object::BOUND_VMCTX))
            }
            Terminal::Iface => {
                let class = self.load("i64", &env.this, Object::CLASS);
                let code = self.load("i64", &class, class_hook_code());
                (code, (class, class_vmctx()))
            }
        };
        self.line(&format!("brif {code}, {call}, {empty}"));
        self.start_cold(&empty);
        let kind = self.konst("i64", FAULT_EMPTY_SLOT.into());
        let r = self.helper("sig0", helper_addrs().fault, &[&env.ctx, &kind]);
        self.fail_to(done, &r);
        self.start(&call, "");
        let vmctx = self.load("i64", &vm.0, vm.1);
        let v = self.method_call("sig0", &code, &[&vmctx, &env.this]);
        let zero = self.konst("i64", 0);
        self.line(&format!("jump {done}({v}, {zero})"));
    }

    /// `block0(ctx)`: load `this` and the record from the context.
    fn prologue(&mut self, extra: &str) -> Env {
        let ctx = self.v();
        let extra_v = if extra.is_empty() {
            String::new()
        } else {
            self.v()
        };
        let params = if extra.is_empty() {
            format!("({ctx}: i64)")
        } else {
            format!("({ctx}: i64, {extra_v}: i64)")
        };
        self.start("block0", &params);
        let this = self.load("i64", &ctx, RowCtx::THIS);
        let rec = self.load("i64", &ctx, RowCtx::REC);
        Env { ctx, this, rec }
    }
}

/// The `.clif` text of row `row` with path `path` (not `Native`); its raw-ABI function is
/// `%r{row}_row` and its code is in functions named `r{row}_*`.
pub fn row_clif(row: usize, path: &Path) -> String {
    let (layers, terminal): (Vec<Layer>, Terminal) = match path {
        Path::Native | Path::NativeNew | Path::Runtime(_) => return String::new(),
        Path::Fused => (vec![Layer::Fused], Terminal::Slot),
        Path::Direct => (vec![Layer::Direct], Terminal::Iface),
        // Outermost first.
        Path::Layered { terminal, wrappers } => {
            (wrappers.iter().rev().copied().collect(), *terminal)
        }
    };
    let mut g = Gen {
        body: String::new(),
        next_v: 0,
        next_b: 0,
        catch: None,
    };
    // The loop.
    let env = g.prologue("n");
    let n = format!("v{}", 2);
    let zero = g.konst("i64", 0);
    let (head, body, next, cont, exit) = (g.b(), g.b(), g.b(), g.b(), g.b());
    g.line(&format!("jump {head}({n}, {zero})"));
    let (k, sum) = (g.v(), g.v());
    g.start(&head, &format!("({k}: i64, {sum}: i64)"));
    g.line(&format!("brif {k}, {body}, {exit}({sum})"));
    g.start(&body, "");
    g.path(&layers, terminal, &env, &next);
    let (v, f) = (g.v(), g.v());
    g.start(&next, &format!("({v}: i64, {f}: i64)"));
    g.line(&format!("brif {f}, {exit}({sum}), {cont}"));
    g.start(&cont, "");
    let s2 = g.v();
    g.line(&format!("{s2} = iadd {sum}, {v}"));
    let one = g.konst("i64", 1);
    let k2 = g.v();
    g.line(&format!("{k2} = isub {k}, {one}"));
    g.line(&format!("jump {head}({k2}, {s2})"));
    let s = g.v();
    g.start(&exit, &format!("({s}: i64)"));
    g.line(&format!("return {s}"));

    let mut out = String::new();
    let _ = write!(
        out,
        "function %r{row}_loop(i64, i64) -> i64 system_v {{\n{SIGS}\n{}}}\n\n",
        g.body
    );
    let _ = write!(
        out,
        "function %r{row}_row(i64, i64) -> i64 system_v {{
{SIGS}    fn0 = %r{row}_loop sig0

block0(v1: i64, v2: i64):
    v3 = func_addr.i64 fn0
    v4 = iconst.i64 {}
    v5 = call_indirect sig2, v4(v3, v1, v2)
    return v5
}}
",
        helper_addrs().catch_loop
    );
    out
}
