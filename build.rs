//! Export the runtime's `hot_*` symbols (host functions and `hot_raise_*` helpers) from every
//! executable hotlab builds, so that shared libraries made by the `object` backend resolve
//! their imports against them at `dlopen`.
//!
//! `--export-dynamic-symbol` exports only the names that match; `-rdynamic` would export every
//! symbol of the binary (thousands) and slow down each `dlopen` that searches them.

fn main() {
    let flag = "-Wl,--export-dynamic-symbol=hot_*";
    // Bins for `hotlab run --backend object`; tests (unit and integration) because they load
    // shared libraries too. (Cargo refuses `-benches`/`-examples` while there are no such
    // targets: add them here with the first one.)
    for kind in ["bins", "tests"] {
        println!("cargo::rustc-link-arg-{kind}={flag}");
    }
    println!("cargo::rerun-if-changed=build.rs");
}
