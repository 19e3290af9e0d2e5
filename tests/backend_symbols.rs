//! Script function names never collide with hotlab's own symbols: a function may be named like
//! a data object of the `object` backend's library (`globals`, `objects`, `slot_offsets`), a
//! runtime helper or host import (`hot_vec_push`, `hot_sink`), a libcall (`memcpy`, `fmod`), or a
//! piece of a mangled name (`entry`, `p1`, `hot`), and still runs the same on every backend.

mod common;

use common::same_everywhere;
use hotlab::runtime::host::host_table;

/// hotlab's own names: the library's data objects, pieces of the mangled names, and the libcalls
/// Cranelift may emit. The runtime helpers generated code imports come from `helper_names`.
const INTERNAL: &[&str] = &[
    "globals",
    "objects",
    "slot_offsets",
    "init",
    "entry",
    "hot",
    "p0",
    "p1",
    "p2",
    "clif",
    "memcpy",
    "memset",
    "memmove",
    "memcmp",
    "fmod",
    "ceil",
    "floor",
    "trunc",
    "_init",
    "_fini",
];

/// The symbols of every runtime helper generated code imports, from the tables the backends
/// link against, so a helper added later is covered.
fn helper_names() -> impl Iterator<Item = &'static str> {
    let values = hotlab::runtime::values::helper_symbols();
    let closure = hotlab::runtime::closure::helper_symbols();
    let jit = hotlab::backend::jit::helper_table::helper_symbols();
    let math = hotlab::runtime::math::helper_symbols();
    let output = hotlab::runtime::output::helper_symbols();
    let strings = hotlab::runtime::strings::helper_symbols();
    let ranges = hotlab::runtime::ranges::helper_symbols();
    values
        .into_iter()
        .chain(closure)
        .chain(jit)
        .chain(math)
        .chain(output)
        .chain(strings)
        .chain(ranges)
        .map(|(name, _)| name)
}

/// Every internal name, every runtime helper and every host import's script and link name,
/// once each.
fn names() -> Vec<String> {
    let mut names: Vec<String> = INTERNAL.iter().map(|s| s.to_string()).collect();
    names.extend(helper_names().map(str::to_string));
    for host in host_table() {
        names.push(host.sig.name.to_string());
        names.push(host.symbol.to_string());
    }
    names.sort();
    names.dedup();
    names
}

#[test]
fn functions_named_like_internal_symbols_run_on_every_backend() {
    let names = names();
    // Each function returns its index; `main` also uses globals, a class with a virtual method,
    // a vec, a string and a closure, so the internal symbols it is named after are in use.
    let mut text = String::from(
        "var total: i64 = 0\n\
         class A { var n: i64 = 1\n virtual fn get(self) -> i64 { return self.n } }\n\
         class B : A { override fn get(self) -> i64 { return 2 } }\n",
    );
    for (i, name) in names.iter().enumerate() {
        text += &format!("fn {name}() -> i64 {{ total += {i}; return {i} }}\n");
    }
    text += "fn main() -> str {\n    var out = \"\"\n";
    for name in &names {
        text += &format!("    out += \"${{{name}()}},\"\n");
    }
    text += "    let a: A = new B()\n    var v = vec<i64>()\n    v.push(a.get())\n";
    text += "    let f = |x: i64| -> i64 { return x + total }\n";
    text += "    return out + \"${f(v[0])}\"\n}\n";
    let n = names.len();
    let mut want: String = (0..n).map(|i| format!("{i},")).collect();
    want += &(2 + n * (n - 1) / 2).to_string();
    same_everywhere(&text, &want);
}

#[test]
fn a_function_named_globals_runs_on_every_backend() {
    // The reported case, with a module variable in the globals block beside it.
    same_everywhere(
        "var g: i64 = 4\nfn globals() -> i64 { return 3 }\nfn main() -> i64 { return globals() + g }\n",
        "7",
    );
}
