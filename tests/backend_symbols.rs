//! Script function names never collide with hotlab's own symbols: a function may be named like
//! a data object of the `object` backend's library (`globals`, `objects`, `slot_offsets`), a
//! runtime helper or host import (`hot_vec_push`, `hot_sink`), a libcall (`memcpy`, `fmod`), or a
//! piece of a mangled name (`entry`, `p1`, `hot`), and still runs the same on every backend.

mod common;

use common::same_everywhere;
use hotlab::runtime::host::host_table;

/// hotlab's own names: the library's data objects, pieces of the mangled names, the runtime
/// helpers generated code imports, and the libcalls Cranelift may emit.
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
    "hot_raise_div_zero",
    "hot_raise_index",
    "hot_raise_assert",
    "hot_raise_stack",
    "hot_raise_empty_slot",
    "hot_raise_null_closure",
    "hot_fmod",
    "hot_object_new",
    "hot_object_check",
    "hot_object_retain",
    "hot_object_release",
    "hot_vec_retain",
    "hot_vec_release",
    "hot_vec_unique",
    "hot_vec_push",
    "hot_vec_pop",
    "hot_vec_at",
    "hot_vec_len",
    "hot_str_retain",
    "hot_str_release",
    "hot_str_lit",
    "hot_str_concat",
    "hot_str_eq",
    "hot_str_len",
    "hot_str_of_i64",
    "hot_str_of_f64",
    "hot_str_of_bool",
    "hot_str_of_handle",
    "hot_str_of_vec",
    "hot_str_of_array",
    "hot_str_of_closure",
    "hot_array_box",
    "hot_array_unbox",
    "hot_closure_new",
    "hot_closure_retain",
    "hot_closure_release",
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

/// Every internal name and every host import's script and link name, once each.
fn names() -> Vec<String> {
    let mut names: Vec<String> = INTERNAL.iter().map(|s| s.to_string()).collect();
    for host in host_table() {
        names.push(host.name.to_string());
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
