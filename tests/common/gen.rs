//! A generator of random, well-typed, terminating hot programs, for differential testing.
//!
//! A program has a few module variables and constants (`i64` and `[i64; N]`), a few functions
//! `f0, f1, ...`, sometimes a function `rK` that calls itself, and `main() -> i64`. Function
//! `fK` calls only `f0..fK`; `rK` calls itself at a depth one or two lower (callers pass a
//! depth of 0 to 7, so it ends) and the `f`s before it; every
//! loop has a small bound (`while` loops count a variable the body never writes; `for` ranges
//! have small literal bounds), so every program ends quickly. Everything else is random: `i64`
//! arithmetic (wrapping, division and remainder including by zero and `MIN / -1`, shifts by any
//! amount), comparisons, `&&`/`||`, nested `if`/`while`/`for`, `break`/`continue`, early
//! `return`, arrays read and written with in-range and out-of-range indexes, casts through
//! `f64`, and calls; about half the programs use objects (the others run on the `object` backend
//! too), and many use `vec<i64>` (push, pop, index reads and stores in and out of range,
//! copies that must not alias, `for x in v`) and `str` (interpolation, `+`, `+=`, `==`,
//! `len()`), with the v2 additions: hex bit-pattern literals, `>>>`, the math builtins on
//! integers and floats, inclusive and stepped ranges; and bool arrays (packed one byte an
//! element on the compiled backends: lengths on both sides of a cell, nested rows, module
//! variables, parameters, copies, `for` over them, an object's field, elements read, written
//! and shown). A run ends with a value or a `ScriptError`, never hangs.
//!
//! [`program`] makes the same program for the same seed.

use std::fmt::Write as _;

use proptest::prelude::*;

/// SplitMix64: small, fast, and deterministic for a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

#[derive(Clone)]
enum Shape {
    Int,
    /// `[i64; n]` or, with `inner`, `[[i64; inner]; n]`.
    Array(u32, Option<u32>),
    /// A handle to a `Cell` object (the class every program declares).
    Obj,
    /// A `vec<i64>`.
    Vec,
    /// A `str`.
    Str,
    /// A `[str; n]` (an array whose cells own references).
    StrArray(u32),
    /// A closure `fn(i64, ..) -> i64` taking this many parameters.
    Fn(usize),
    /// `[bool; n]` or, with `inner`, `[[bool; inner]; n]`.
    BoolArray(u32, Option<u32>),
    /// A `bool` (a `for` variable over a bool array).
    Bool,
}

/// Lengths of generated bool arrays: each side of a cell's eight bytes, and longer.
const BOOL_LENGTHS: [u32; 10] = [1, 3, 7, 8, 9, 15, 16, 17, 64, 100];

/// The class every generated program declares: fields, a plain method, a virtual one with an
/// override in a derived class, a static function, a nullable handle field, and a vec and a
/// string field.
const CLASSES: &str = "class Cell {
    var v: i64 = 3
    var w: i64 = -2
    var next: Cell? = null
    var items: vec<i64> = vec<i64>()
    var tag: str = \"c\"
    var flags: [bool; 9] = [false, true, false, false, false, false, false, false, true]
    fn get(self) -> i64 { return self.v + self.w }
    virtual fn bump(self, d: i64) -> i64 { self.v += d; return self.v }
    static fn make(v: i64) -> Cell {
        let c = new Cell()
        c.v = v
        return c
    }
}
class Cell2 : Cell {
    override fn bump(self, d: i64) -> i64 { self.w -= d; return self.w * 2 }
}
class Cell3 : Cell {
    var k: i64 = 1
    init(self, v: i64, k: i64) { self.v = v; self.k = k * 2 + self.w }
}
class Cell4 : Cell3 {
    init(self, k: i64) { super.init(k, k + 1); self.tag = \"d\" }
}
";

#[derive(Clone)]
struct Var {
    name: String,
    shape: Shape,
    /// The generated code may assign to it.
    writable: bool,
}

struct Gen {
    rng: Rng,
    out: String,
    indent: usize,
    vars: Vec<Var>,
    scopes: Vec<usize>,
    /// Functions callable from the current body: name, `i64` parameter count, and the length
    /// of the `[bool; n]` parameter that comes first, if it has one.
    callable: Vec<(String, usize, Option<u32>)>,
    next_id: u32,
    loop_depth: u32,
    block_depth: u32,
    fuel: u32,
    in_main: bool,
    /// Whether the program declares the classes and uses objects.
    objects: bool,
}

const OPS: [&str; 11] = ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", ">>>"];
const CMPS: [&str; 6] = ["==", "!=", "<", "<=", ">", ">="];

/// The program for `seed`.
pub fn program(seed: u64) -> String {
    let mut g = Gen {
        rng: Rng(seed),
        out: String::new(),
        indent: 0,
        vars: Vec::new(),
        scopes: Vec::new(),
        callable: Vec::new(),
        next_id: 0,
        loop_depth: 0,
        block_depth: 0,
        fuel: 0,
        in_main: false,
        objects: false,
    };
    g.objects = g.rng.chance(50);
    g.module();
    g.out
}

/// Random programs as a proptest strategy (shrinking walks the seed, not the text).
pub fn arb_program() -> impl Strategy<Value = String> {
    any::<u64>().prop_map(program)
}

impl Gen {
    fn fresh(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}{}", self.next_id)
    }

    fn line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn module(&mut self) {
        if self.objects {
            self.out.push_str(CLASSES);
        }
        if self.rng.chance(50) {
            let name = self.fresh("gv");
            self.line(&format!("var {name} = vec<i64>()"));
            self.vars.push(Var {
                name,
                shape: Shape::Vec,
                writable: true,
            });
        }
        for _ in 0..1 + self.rng.below(3) {
            let name = self.fresh("g");
            let init = self.literal();
            if self.rng.chance(70) {
                self.line(&format!("var {name}: i64 = {init}"));
                self.vars.push(Var {
                    name,
                    shape: Shape::Int,
                    writable: true,
                });
            } else {
                self.line(&format!("let {name} = {init}"));
                self.vars.push(Var {
                    name,
                    shape: Shape::Int,
                    writable: false,
                });
            }
        }
        if self.rng.chance(40) {
            let name = self.fresh("gb");
            let n = *self.rng.pick(&BOOL_LENGTHS);
            self.line(&format!("var {name} = [false; {n}]"));
            self.vars.push(Var {
                name,
                shape: Shape::BoolArray(n, None),
                writable: true,
            });
        }
        if self.rng.chance(70) {
            let name = self.fresh("ga");
            let n = 1 + self.rng.below(5) as u32;
            let items: Vec<String> = (0..n).map(|_| self.literal()).collect();
            self.line(&format!("var {name}: [i64; {n}] = [{}]", items.join(", ")));
            self.vars.push(Var {
                name,
                shape: Shape::Array(n, None),
                writable: true,
            });
        }
        let globals = self.vars.len();
        for _ in 0..self.rng.below(4) {
            let name = self.fresh("f");
            let params = self.rng.below(4) as usize;
            let bools = self.rng.chance(25).then(|| *self.rng.pick(&BOOL_LENGTHS));
            self.function(&name, params, bools);
            self.vars.truncate(globals);
            self.callable.push((name, params, bools));
        }
        if self.rng.chance(40) {
            let name = self.fresh("r");
            let params = self.rng.below(3) as usize;
            self.recursive_function(&name, params);
            self.vars.truncate(globals);
            // Callers pass the depth masked to 0..=7 (see `call`).
            self.callable.push((name, 1 + params, None));
        }
        self.in_main = true;
        self.function("main", 0, None);
    }

    /// A function that calls itself: `rK(d, p..)` returns at `d <= 0`, else runs a few
    /// statements and returns an expression with one or two calls of itself at `d - 1` (and
    /// `d - 2`). Callers pass `d` masked to 0..=7, so it ends after at most 2^8 calls;
    /// errors raised in its body come from every level of the recursion.
    fn recursive_function(&mut self, name: &str, params: usize) {
        self.scopes.push(self.vars.len());
        let mut list = vec!["d: i64".to_string()];
        let mut names = Vec::new();
        self.vars.push(Var {
            name: "d".to_string(),
            shape: Shape::Int,
            writable: false,
        });
        for _ in 0..params {
            let p = self.fresh("p");
            list.push(format!("{p}: i64"));
            names.push(p.clone());
            self.vars.push(Var {
                name: p,
                shape: Shape::Int,
                writable: false,
            });
        }
        self.line(&format!("fn {name}({}) -> i64 {{", list.join(", ")));
        self.indent += 1;
        let base = self.int_expr(1);
        self.line(&format!("if d <= 0 {{ return {base} }}"));
        // Often no statement at all: a body small enough to be unrolled into itself
        // (`opt_inline::inline_self`) more often than not.
        self.fuel = self.rng.below(3) as u32;
        if self.fuel > 0 {
            self.stmts();
        }
        let call = |g: &mut Gen, down: &str| {
            let args: Vec<String> = std::iter::once(format!("d - {down}"))
                .chain(names.iter().map(|_| g.int_expr(1)))
                .collect();
            format!("{name}({})", args.join(", "))
        };
        let first = call(self, "1");
        let op = *self.rng.pick(&["+", "*", "^", "-"]);
        let ret = if self.rng.chance(30) {
            let second = call(self, "2");
            format!("{first} {op} {second}")
        } else {
            let e = self.int_expr(1);
            format!("{first} {op} {e}")
        };
        self.line(&format!("return {ret}"));
        self.indent -= 1;
        self.line("}");
        let mark = self.scopes.pop().unwrap_or(0);
        self.vars.truncate(mark);
    }

    fn function(&mut self, name: &str, params: usize, bools: Option<u32>) {
        let mut list = Vec::new();
        self.scopes.push(self.vars.len());
        if let Some(n) = bools {
            // A bool array parameter (read only; a `var` copy of it may be written).
            let p = self.fresh("pb");
            list.push(format!("{p}: [bool; {n}]"));
            self.vars.push(Var {
                name: p,
                shape: Shape::BoolArray(n, None),
                writable: false,
            });
        }
        for _ in 0..params {
            let p = self.fresh("p");
            list.push(format!("{p}: i64"));
            self.vars.push(Var {
                name: p,
                shape: Shape::Int,
                writable: false,
            });
        }
        self.line(&format!("fn {name}({}) -> i64 {{", list.join(", ")));
        self.indent += 1;
        self.fuel = 6 + self.rng.below(10) as u32;
        self.stmts();
        let ret = self.int_expr(3);
        self.line(&format!("return {ret}"));
        self.indent -= 1;
        self.line("}");
        let mark = self.scopes.pop().unwrap_or(0);
        self.vars.truncate(mark);
    }

    fn stmts(&mut self) {
        let n = 1 + self.rng.below(4);
        for _ in 0..n {
            if self.fuel == 0 {
                return;
            }
            self.fuel -= 1;
            self.stmt();
        }
    }

    fn block(&mut self, header: &str, before: &[String], bind: Option<Var>) {
        self.line(&format!("{header} {{"));
        self.indent += 1;
        self.block_depth += 1;
        self.scopes.push(self.vars.len());
        if let Some(v) = bind {
            self.vars.push(v);
        }
        for l in before {
            self.line(l);
        }
        self.stmts();
        let mark = self.scopes.pop().unwrap_or(0);
        self.vars.truncate(mark);
        self.block_depth -= 1;
        self.indent -= 1;
    }

    /// A statement on objects: make one, or write one of its fields.
    fn object_stmt(&mut self) {
        let objects: Vec<Var> = self
            .vars
            .iter()
            .filter(|v| matches!(v.shape, Shape::Obj))
            .cloned()
            .collect();
        if objects.is_empty() || self.rng.chance(30) {
            let name = self.fresh("o");
            let make = match self.rng.below(5) {
                0 => "new Cell()".to_string(),
                1 => "new Cell2()".to_string(),
                2 => format!("new Cell3({}, {})", self.int_expr(1), self.int_expr(1)),
                3 => format!("new Cell4({})", self.int_expr(1)),
                _ => format!("Cell.make({})", self.int_expr(1)),
            };
            self.line(&format!("let {name}: Cell = {make}"));
            self.vars.push(Var {
                name,
                shape: Shape::Obj,
                writable: false,
            });
            return;
        }
        let o = self.rng.pick(&objects).clone();
        if self.rng.chance(15) {
            // An element of the bool-array field (boxed one cell an element).
            let i = self.index(9);
            let b = self.bool_expr(1);
            self.line(&format!("{}.flags[{i}] = {b}", o.name));
            return;
        }
        let e = self.int_expr(2);
        match self.rng.below(10) {
            // A type test narrowing a handle, and a downcast tested for `null`.
            // The added value is computed before the test: inside the block the handle is a
            // `Cell3`, and `e` may test it against `Cell2`, an unrelated class there.
            8 => {
                let x = self.fresh("x");
                self.line(&format!("let {x} = {e}"));
                self.line(&format!("if {0} is Cell3 {{ {0}.k += {x} }}", o.name));
            }
            9 => {
                let c = self.fresh("c");
                self.line(&format!("let {c} = {}.next as? Cell4", o.name));
                self.line(&format!("if {c} != null {{ {c}.k -= {e} }}"));
            }
            0 => self.line(&format!("{}.v = {e}", o.name)),
            1 => self.line(&format!("{}.w += {e}", o.name)),
            // Never a named object in `next` (only fresh ones and copies of `next`): a cycle would
            // leak the objects, and the leak check would then see their vec and string fields.
            2 => {
                let other = self.rng.pick(&objects).clone();
                if self.rng.chance(50) {
                    self.line(&format!("{}.next = {}.next", o.name, other.name));
                } else if self.rng.chance(50) {
                    self.line(&format!("{}.next = Cell.make({e})", o.name));
                } else {
                    self.line(&format!("{}.next = new Cell4({e})", o.name));
                }
            }
            3 => self.line(&format!("{}.items.push({e})", o.name)),
            4 => {
                let i = self.vec_index(&format!("{}.items", o.name));
                self.line(&format!("{}.items[{i}] = {e}", o.name));
            }
            5 => {
                let x = self.int_literal_small();
                self.line(&format!("{}.tag += \"${{{x}}}\"", o.name));
            }
            6 => {
                let other = self.rng.pick(&objects).clone();
                self.line(&format!("{}.items = {}.items", o.name, other.name));
            }
            _ => self.line(&format!("{}.bump({e})", o.name)),
        }
    }

    /// An `i64` read from an object: a field, a method, or a null check on `next`.
    fn object_read(&mut self, o: &Var, depth: u32) -> String {
        match self.rng.below(11) {
            8 => format!("(({} is Cell2) as i64)", o.name),
            9 => format!("((({} as? Cell3) == null) as i64)", o.name),
            10 => format!("(({}.next is Cell3) as i64)", o.name),
            0 => format!("{}.v", o.name),
            1 => format!("{}.w", o.name),
            2 => format!("{}.get()", o.name),
            3 => format!("(({}.next == null) as i64)", o.name),
            4 => format!("{}.items.len()", o.name),
            5 => {
                let i = self.vec_index(&format!("{}.items", o.name));
                format!("{}.items[{i}]", o.name)
            }
            6 if self.rng.chance(30) => format!("\"${{{}.flags}}\".len()", o.name),
            7 => format!("({}.flags[{}] as i64)", o.name, self.index(9)),
            6 => format!("\"${{{}.tag}}${{{}.items}}\".len()", o.name, o.name),
            _ => format!("{}.bump({})", o.name, self.int_expr(depth.min(1))),
        }
    }

    fn vars_of(&self, want: fn(&Shape) -> bool, writable: bool) -> Vec<Var> {
        self.vars
            .iter()
            .filter(|v| want(&v.shape) && (v.writable || !writable))
            .cloned()
            .collect()
    }

    /// A statement on vecs and strings: declare one, or change one.
    fn value_stmt(&mut self) {
        let vecs = self.vars_of(|s| matches!(s, Shape::Vec), true);
        let strs = self.vars_of(|s| matches!(s, Shape::Str), true);
        let str_arrays = self.vars_of(|s| matches!(s, Shape::StrArray(_)), true);
        if self.rng.chance(25) {
            self.str_array_stmt(&str_arrays, &strs);
            return;
        }
        match self.rng.below(8) {
            0 => {
                let name = self.fresh("w");
                let init = match vecs.first() {
                    // A copy: changing either must not show in the other.
                    Some(v) if self.rng.chance(40) => v.name.clone(),
                    _ => "vec<i64>()".to_string(),
                };
                self.line(&format!("var {name} = {init}"));
                self.vars.push(Var {
                    name,
                    shape: Shape::Vec,
                    writable: true,
                });
            }
            1 => {
                let name = self.fresh("s");
                let e = self.int_expr(2);
                self.line(&format!("var {name} = \"<${{{e}}}>\""));
                self.vars.push(Var {
                    name,
                    shape: Shape::Str,
                    writable: true,
                });
            }
            2..=4 if !vecs.is_empty() => {
                let v = self.rng.pick(&vecs).name.clone();
                let e = self.int_expr(2);
                self.line(&format!("{v}.push({e})"));
            }
            5 if !vecs.is_empty() => {
                let v = self.rng.pick(&vecs).name.clone();
                let i = self.vec_index(&v);
                let op = if self.rng.chance(50) {
                    String::new()
                } else {
                    self.rng.pick(&OPS).to_string()
                };
                let e = self.int_expr(2);
                self.line(&format!("{v}[{i}] {op}= {e}"));
            }
            6 if !strs.is_empty() => {
                let s = self.rng.pick(&strs).name.clone();
                let e = self.int_expr(1);
                if self.rng.chance(50) {
                    self.line(&format!("{s} += \"${{{e}}},\""));
                } else {
                    self.line(&format!("{s} = \"${{{s}.len()}}\" + {s}"));
                }
            }
            _ if !vecs.is_empty() => {
                let v = self.rng.pick(&vecs).name.clone();
                self.line(&format!("{v}.pop()"));
            }
            _ => self.assign(),
        }
    }

    /// A statement on arrays of strings: declare one (new, or a copy that must not alias), or
    /// change an element.
    fn str_array_stmt(&mut self, arrays: &[Var], strs: &[Var]) {
        match (self.rng.below(4), arrays.first()) {
            (0, _) | (_, None) => {
                let name = self.fresh("sa");
                let n = 1 + self.rng.below(3) as u32;
                let init = match arrays.first() {
                    Some(Var {
                        name: other,
                        shape: Shape::StrArray(m),
                        ..
                    }) if self.rng.chance(40) => {
                        let m = *m;
                        self.vars.push(Var {
                            name: name.clone(),
                            shape: Shape::StrArray(m),
                            writable: true,
                        });
                        self.line(&format!("var {name} = {other}"));
                        return;
                    }
                    _ => {
                        let e = self.int_expr(1);
                        format!("[\"<${{{e}}}>\"; {n}]")
                    }
                };
                self.line(&format!("var {name} = {init}"));
                self.vars.push(Var {
                    name,
                    shape: Shape::StrArray(n),
                    writable: true,
                });
            }
            (k, Some(_)) => {
                let a = self.rng.pick(arrays).clone();
                let Shape::StrArray(n) = a.shape else {
                    return;
                };
                let i = self.index(n);
                match (k, strs.first()) {
                    (1, Some(s)) => self.line(&format!("{}[{i}] = {}", a.name, s.name)),
                    _ => {
                        let e = self.int_expr(1);
                        self.line(&format!("{}[{i}] += \"${{{e}}},\"", a.name));
                    }
                }
            }
        }
    }

    /// An index into vec `v`: mostly in range (when it is not empty), sometimes anything.
    fn vec_index(&mut self, v: &str) -> String {
        match self.rng.below(10) {
            0..=6 => format!("({}) % {v}.len()", self.int_expr(1)),
            7 => format!("{v}.len()"),
            8 => "-1".to_string(),
            _ => self.int_expr(1),
        }
    }

    fn stmt(&mut self) {
        if self.objects && self.rng.chance(10) {
            self.object_stmt();
            return;
        }
        if self.rng.chance(15) {
            self.value_stmt();
            return;
        }
        if self.rng.chance(8) {
            self.closure_stmt();
            return;
        }
        let nested = self.block_depth < 3;
        let in_loop = self.loop_depth > 0;
        match self.rng.below(14) {
            0 | 1 => {
                let name = self.fresh("v");
                let e = self.int_expr(3);
                let writable = self.rng.chance(70);
                let kw = if writable { "var" } else { "let" };
                self.line(&format!("{kw} {name} = {e}"));
                self.vars.push(Var {
                    name,
                    shape: Shape::Int,
                    writable,
                });
            }
            2 if self.rng.chance(30) => self.bool_array_decl(),
            2 => {
                let name = self.fresh("a");
                let n = 1 + self.rng.below(4) as u32;
                if self.rng.chance(25) {
                    let inner = 1 + self.rng.below(3) as u32;
                    let e = self.int_expr(1);
                    self.line(&format!("var {name} = [[{e}; {inner}]; {n}]"));
                    self.vars.push(Var {
                        name,
                        shape: Shape::Array(n, Some(inner)),
                        writable: true,
                    });
                } else if self.rng.chance(50) {
                    let e = self.int_expr(1);
                    self.line(&format!("var {name} = [{e}; {n}]"));
                    self.vars.push(Var {
                        name,
                        shape: Shape::Array(n, None),
                        writable: true,
                    });
                } else {
                    let items: Vec<String> = (0..n).map(|_| self.int_expr(2)).collect();
                    self.line(&format!("var {name} = [{}]", items.join(", ")));
                    self.vars.push(Var {
                        name,
                        shape: Shape::Array(n, None),
                        writable: true,
                    });
                }
            }
            3..=5 => self.assign(),
            6 if nested => {
                let c = self.bool_expr(2);
                self.block(&format!("if {c}"), &[], None);
                if self.rng.chance(50) {
                    self.block("} else", &[], None);
                }
                self.line("}");
            }
            7 if nested && self.loop_depth < 2 => {
                let counter = self.fresh("c");
                let bound = 1 + self.rng.below(5);
                self.line(&format!("var {counter} = 0"));
                let cond = if self.rng.chance(30) {
                    format!("{counter} < {bound} && {}", self.bool_expr(1))
                } else {
                    format!("{counter} < {bound}")
                };
                self.loop_depth += 1;
                let counter_var = Var {
                    name: counter.clone(),
                    shape: Shape::Int,
                    writable: false,
                };
                self.block(
                    &format!("while {cond}"),
                    &[format!("{counter} += 1")],
                    Some(counter_var),
                );
                self.loop_depth -= 1;
                self.line("}");
            }
            8 if nested && self.loop_depth < 2 => {
                let i = self.fresh("i");
                let lo = self.rng.below(7) as i64 - 3;
                let hi = lo + self.rng.below(6) as i64 - 1;
                let dots = if self.rng.chance(25) { "..=" } else { ".." };
                let mut range = if self.rng.chance(20) {
                    format!("({}) % 3{dots}{hi}", self.int_expr(1))
                } else {
                    format!("{lo}{dots}{hi}")
                };
                match self.rng.below(10) {
                    0..=1 => range.push_str(&format!(" step {}", 1 + self.rng.below(3))),
                    2 => range.push_str(&format!(" step 1 + abs({}) % 2", self.int_expr(1))),
                    _ => {}
                }
                self.loop_depth += 1;
                let var = Var {
                    name: i.clone(),
                    shape: Shape::Int,
                    writable: false,
                };
                self.block(&format!("for {i} in {range}"), &[], Some(var));
                self.loop_depth -= 1;
                self.line("}");
            }
            9 if nested && self.loop_depth < 2 => {
                let arrays: Vec<Var> = self
                    .vars
                    .iter()
                    .filter(|v| {
                        matches!(
                            v.shape,
                            Shape::Array(_, None) | Shape::Vec | Shape::BoolArray(..)
                        )
                    })
                    .cloned()
                    .collect();
                if arrays.is_empty() {
                    return self.assign();
                }
                let a = self.rng.pick(&arrays).clone();
                let x = self.fresh("x");
                self.loop_depth += 1;
                let shape = match a.shape {
                    Shape::BoolArray(_, None) => Shape::Bool,
                    // A row, read as an array.
                    Shape::BoolArray(_, Some(inner)) => Shape::BoolArray(inner, None),
                    _ => Shape::Int,
                };
                let a = a.name;
                let var = Var {
                    name: x.clone(),
                    shape,
                    writable: false,
                };
                self.block(&format!("for {x} in {a}"), &[], Some(var));
                self.loop_depth -= 1;
                self.line("}");
            }
            10 if in_loop => {
                let c = self.bool_expr(1);
                let word = if self.rng.chance(50) {
                    "break"
                } else {
                    "continue"
                };
                self.line(&format!("if {c} {{ {word} }}"));
            }
            11 if !self.in_main || self.rng.chance(30) => {
                let c = self.bool_expr(1);
                let e = self.int_expr(2);
                self.line(&format!("if {c} {{ return {e} }}"));
            }
            12 if !self.callable.is_empty() => {
                let call = self.call(2);
                self.line(&call);
            }
            _ => self.assign(),
        }
    }

    fn assign(&mut self) {
        let targets: Vec<Var> = self
            .vars
            .iter()
            .filter(|v| {
                v.writable
                    && matches!(
                        v.shape,
                        Shape::Int | Shape::Array(..) | Shape::BoolArray(..)
                    )
            })
            .cloned()
            .collect();
        if targets.is_empty() {
            let name = self.fresh("v");
            let e = self.int_expr(2);
            self.line(&format!("var {name} = {e}"));
            self.vars.push(Var {
                name,
                shape: Shape::Int,
                writable: true,
            });
            return;
        }
        let t = self.rng.pick(&targets).clone();
        if let Shape::BoolArray(n, inner) = t.shape {
            self.bool_array_assign(&t.name, n, inner);
            return;
        }
        let place = match t.shape {
            Shape::Int => t.name.clone(),
            Shape::Array(n, None) => format!("{}[{}]", t.name, self.index(n)),
            Shape::Array(n, Some(inner)) => {
                if self.rng.chance(20) {
                    // A whole row.
                    let row: Vec<String> = (0..inner).map(|_| self.int_expr(1)).collect();
                    let i = self.index(n);
                    self.line(&format!("{}[{i}] = [{}]", t.name, row.join(", ")));
                    return;
                }
                format!("{}[{}][{}]", t.name, self.index(n), self.index(inner))
            }
            Shape::Obj
            | Shape::Vec
            | Shape::Str
            | Shape::StrArray(_)
            | Shape::Fn(_)
            | Shape::BoolArray(..)
            | Shape::Bool => {
                unreachable!("objects, vecs, strings and closures are not assignment targets here")
            }
        };
        let op = if self.rng.chance(40) {
            String::new()
        } else {
            self.rng.pick(&OPS).to_string()
        };
        let e = self.int_expr(3);
        self.line(&format!("{place} {op}= {e}"));
    }

    /// An index for an array of length `n`: mostly in range, sometimes anything.
    fn index(&mut self, n: u32) -> String {
        match self.rng.below(20) {
            0..=12 => self.rng.below(u64::from(n)).to_string(),
            13..=15 => format!("({}) % {n}", self.int_expr(1)),
            16 => n.to_string(),
            17 => "-1".to_string(),
            _ => self.int_expr(1),
        }
    }

    fn literal(&mut self) -> String {
        match self.rng.below(10) {
            0..=4 => (self.rng.below(21) as i64 - 10).to_string(),
            5 => self
                .rng
                .pick(&[
                    "0",
                    "1",
                    "63",
                    "64",
                    "65",
                    "-1",
                    "0x7F",
                    "1_000",
                    "0xcbf29ce484222325",
                    "0xFFFF_FFFF_FFFF_FFFF",
                    "0x8000_0000_0000_0000",
                    "-0xFFFF_FFFF_FFFF_FFFF",
                ])
                .to_string(),
            6 => "9223372036854775807".to_string(),
            7 => "(-9223372036854775808)".to_string(),
            8 => format!("({})", self.rng.next() as i64),
            _ => self.rng.below(1000).to_string(),
        }
    }

    fn int_expr(&mut self, depth: u32) -> String {
        if depth == 0 || self.rng.chance(30) {
            return self.int_leaf();
        }
        let d = depth - 1;
        match self.rng.below(15) {
            0..=5 => {
                let op = *self.rng.pick(&OPS);
                format!("({} {op} {})", self.int_expr(d), self.int_expr(d))
            }
            12 => format!("abs({})", self.int_expr(d)),
            13 => {
                let f = self.rng.pick(&["min", "max"]);
                format!("{f}({}, {})", self.int_expr(d), self.int_expr(d))
            }
            14 => {
                // A float builtin on a scaled integer, back to i64 (saturating; NaN is 0).
                let f = *self.rng.pick(&[
                    "floor", "ceil", "round", "trunc", "sqrt", "abs", "sin", "exp", "ln",
                ]);
                let x = format!("({} as f64) * 0.37", self.int_expr(d));
                match self.rng.below(3) {
                    0 => format!("(min({x}, 2.5) as i64)"),
                    1 => format!("(pow(abs({x}), 0.5) as i64)"),
                    _ => format!("({f}({x}) as i64)"),
                }
            }
            6 => format!("(-{})", self.int_expr(d)),
            7 => format!("(~{})", self.int_expr(d)),
            8 => format!("({} as i64)", self.bool_expr(d)),
            9 => format!("((({} as f64) * 0.5) as i64)", self.int_expr(d)),
            10 if !self.callable.is_empty() => self.call(d),
            11 if self.vars.iter().any(|v| matches!(v.shape, Shape::Fn(_))) => self.closure_call(d),
            _ => self.array_read(d),
        }
    }

    fn int_leaf(&mut self) -> String {
        let ints: Vec<String> = self
            .vars
            .iter()
            .filter(|v| matches!(v.shape, Shape::Int))
            .map(|v| v.name.clone())
            .collect();
        if !ints.is_empty() && self.rng.chance(60) {
            return self.rng.pick(&ints).clone();
        }
        let objects: Vec<Var> = self
            .vars
            .iter()
            .filter(|v| matches!(v.shape, Shape::Obj))
            .cloned()
            .collect();
        if !objects.is_empty() && self.rng.chance(30) {
            let o = self.rng.pick(&objects).clone();
            return self.object_read(&o, 1);
        }
        if self.rng.chance(25) {
            let values = self.vars_of(
                |s| matches!(s, Shape::Vec | Shape::Str | Shape::StrArray(_)),
                false,
            );
            if !values.is_empty() {
                let v = self.rng.pick(&values).clone();
                return self.value_read(&v);
            }
        }
        self.literal()
    }

    /// An `i64` read from a vec or a string.
    fn value_read(&mut self, v: &Var) -> String {
        let name = &v.name;
        match (&v.shape, self.rng.below(4)) {
            (Shape::Vec, 0) => format!("{name}.len()"),
            (Shape::Vec, 1) if v.writable => format!("{name}.pop()"),
            (Shape::Vec, _) => {
                let i = self.vec_index(name);
                format!("{name}[{i}]")
            }
            (Shape::StrArray(_), 0) => format!("\"${{{name}}}\".len()"),
            (Shape::StrArray(n), _) => {
                let i = self.index(*n);
                format!("{name}[{i}].len()")
            }
            (_, 0) => format!("{name}.len()"),
            (_, 1) => format!("(({name} == \"<0>\") as i64)"),
            (_, _) => {
                let e = self.int_literal_small();
                format!("(\"${{{name}}}${{{e}}}\" + {name}).len()")
            }
        }
    }

    fn int_literal_small(&mut self) -> String {
        (self.rng.below(21) as i64 - 10).to_string()
    }

    fn array_read(&mut self, depth: u32) -> String {
        let arrays: Vec<Var> = self
            .vars
            .iter()
            .filter(|v| matches!(v.shape, Shape::Array(..) | Shape::BoolArray(..)))
            .cloned()
            .collect();
        if arrays.is_empty() {
            return self.int_leaf();
        }
        let a = self.rng.pick(&arrays).clone();
        let _ = depth;
        match a.shape {
            Shape::BoolArray(n, inner) => match (self.rng.below(4), inner) {
                (0, _) => format!("{}.len()", a.name),
                (1, _) => format!("\"${{{}}}\".len()", a.name),
                (2, Some(inner)) => format!("\"${{{}[{}]}}\".len()", a.name, self.index(inner)),
                _ => format!("({} as i64)", self.bool_read(&a.name, n, inner)),
            },
            Shape::Array(n, None) => {
                if self.rng.chance(15) {
                    format!("{}.len()", a.name)
                } else {
                    format!("{}[{}]", a.name, self.index(n))
                }
            }
            Shape::Array(n, Some(inner)) => {
                if self.rng.chance(15) {
                    format!("{}[{}].len()", a.name, self.index(n))
                } else {
                    format!("{}[{}][{}]", a.name, self.index(n), self.index(inner))
                }
            }
            Shape::Int
            | Shape::Obj
            | Shape::Vec
            | Shape::Str
            | Shape::StrArray(_)
            | Shape::Fn(_)
            | Shape::Bool => unreachable!(),
        }
    }

    /// A `[bool; n]` or `[[bool; inner]; n]` local: a repeat, a literal, or a copy of another
    /// of the same shape (which changes to either must not show in the other).
    fn bool_array_decl(&mut self) {
        let name = self.fresh("b");
        let n = *self.rng.pick(&BOOL_LENGTHS);
        let inner = self.rng.chance(30).then(|| *self.rng.pick(&[1, 3, 8, 9]));
        let same: Vec<Var> = self
            .vars
            .iter()
            .filter(|v| matches!(v.shape, Shape::BoolArray(m, i) if m == n && i == inner))
            .cloned()
            .collect();
        let init = match inner {
            _ if !same.is_empty() && self.rng.chance(30) => self.rng.pick(&same).name.clone(),
            Some(inner) => format!("[[{}; {inner}]; {n}]", self.bool_expr(1)),
            None if n <= 9 && self.rng.chance(50) => {
                let items: Vec<String> = (0..n).map(|_| self.bool_expr(1)).collect();
                format!("[{}]", items.join(", "))
            }
            None => format!("[{}; {n}]", self.bool_expr(1)),
        };
        self.line(&format!("var {name} = {init}"));
        self.vars.push(Var {
            name,
            shape: Shape::BoolArray(n, inner),
            writable: true,
        });
    }

    /// An assignment to an element (or a row) of bool array `name`.
    fn bool_array_assign(&mut self, name: &str, n: u32, inner: Option<u32>) {
        let i = self.index(n);
        match inner {
            Some(inner) if self.rng.chance(25) => {
                let row: Vec<String> = (0..inner).map(|_| self.bool_expr(1)).collect();
                self.line(&format!("{name}[{i}] = [{}]", row.join(", ")));
            }
            Some(inner) => {
                let j = self.index(inner);
                let b = self.bool_expr(2);
                self.line(&format!("{name}[{i}][{j}] = {b}"));
            }
            None => {
                let b = self.bool_expr(2);
                self.line(&format!("{name}[{i}] = {b}"));
            }
        }
    }

    /// An element of bool array `name` of shape `(n, inner)`.
    fn bool_read(&mut self, name: &str, n: u32, inner: Option<u32>) -> String {
        match inner {
            Some(inner) => format!("{name}[{}][{}]", self.index(n), self.index(inner)),
            None => format!("{name}[{}]", self.index(n)),
        }
    }

    /// A bool read from a bool variable or a bool array, if there is one.
    fn bool_leaf(&mut self) -> Option<String> {
        let bools: Vec<Var> = self
            .vars
            .iter()
            .filter(|v| matches!(v.shape, Shape::Bool | Shape::BoolArray(..)))
            .cloned()
            .collect();
        if bools.is_empty() {
            return None;
        }
        let b = self.rng.pick(&bools).clone();
        Some(match b.shape {
            Shape::BoolArray(n, inner) => self.bool_read(&b.name, n, inner),
            _ => b.name,
        })
    }

    fn call(&mut self, depth: u32) -> String {
        // A recursive function (always the last callable) is called more often than the others.
        let (name, params, bools) = match self.callable.last() {
            Some(last) if last.0.starts_with('r') && self.rng.chance(40) => last.clone(),
            _ => self.rng.pick(&self.callable).clone(),
        };
        let mut args = String::new();
        if let Some(n) = bools {
            let same: Vec<String> = self
                .vars
                .iter()
                .filter(|v| matches!(v.shape, Shape::BoolArray(m, None) if m == n))
                .map(|v| v.name.clone())
                .collect();
            let a = match same.is_empty() {
                false if self.rng.chance(70) => self.rng.pick(&same).clone(),
                _ => format!("[{}; {n}]", self.bool_expr(0)),
            };
            args.push_str(&a);
            if params > 0 {
                args.push_str(", ");
            }
        }
        for i in 0..params {
            if i > 0 {
                args.push_str(", ");
            }
            let a = self.int_expr(depth.min(1));
            if i == 0 && name.starts_with('r') {
                // A recursive function's depth (see `recursive_function`).
                let _ = write!(args, "({a}) & 7");
            } else {
                let _ = write!(args, "{a}");
            }
        }
        format!("{name}({args})")
    }

    /// A lambda `|p..| -> i64 { return e }` bound to a new `let`: `e` reads the parameters,
    /// captured locals (arrays, vecs, strings, objects, other closures), and module variables
    /// (read live). Nothing in it assigns: captures are immutable.
    fn closure_stmt(&mut self) {
        let name = self.fresh("c");
        let n = self.rng.below(3) as usize;
        let saved: Vec<bool> = self.vars.iter().map(|v| v.writable).collect();
        for v in &mut self.vars {
            v.writable = false;
        }
        let mark = self.vars.len();
        let mut params = Vec::new();
        for _ in 0..n {
            let p = self.fresh("q");
            params.push(format!("{p}: i64"));
            self.vars.push(Var {
                name: p,
                shape: Shape::Int,
                writable: false,
            });
        }
        let body = self.int_expr(3);
        self.vars.truncate(mark);
        for (v, w) in self.vars.iter_mut().zip(saved) {
            v.writable = w;
        }
        self.line(&format!(
            "let {name} = |{}| -> i64 {{ return {body} }}",
            params.join(", ")
        ));
        self.vars.push(Var {
            name,
            shape: Shape::Fn(n),
            writable: false,
        });
    }

    /// A call of a closure variable, or of a closure made on the spot.
    fn closure_call(&mut self, depth: u32) -> String {
        let fns: Vec<Var> = self
            .vars
            .iter()
            .filter(|v| matches!(v.shape, Shape::Fn(_)))
            .cloned()
            .collect();
        let f = self.rng.pick(&fns).clone();
        let Shape::Fn(n) = f.shape else {
            unreachable!()
        };
        let args: Vec<String> = (0..n).map(|_| self.int_expr(depth.min(1))).collect();
        format!("{}({})", f.name, args.join(", "))
    }

    fn bool_expr(&mut self, depth: u32) -> String {
        if depth == 0 || self.rng.chance(20) {
            let op = *self.rng.pick(&CMPS);
            return format!("({} {op} {})", self.int_expr(1), self.int_expr(1));
        }
        let d = depth - 1;
        match self.rng.below(6) {
            0 => format!("({} && {})", self.bool_expr(d), self.bool_expr(d)),
            1 => format!("({} || {})", self.bool_expr(d), self.bool_expr(d)),
            2 => format!("!({})", self.bool_expr(d)),
            3 => self.rng.pick(&["true", "false"]).to_string(),
            4 => match self.bool_leaf() {
                Some(b) => b,
                None => self.rng.pick(&["true", "false"]).to_string(),
            },
            _ => {
                let op = *self.rng.pick(&CMPS);
                format!("({} {op} {})", self.int_expr(d), self.int_expr(d))
            }
        }
    }
}
