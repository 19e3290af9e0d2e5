//! Export the runtime's `hot_*` symbols (host functions and `hot_raise_*` helpers) from every
//! executable hotlab builds, so that shared libraries made by the `object` backend resolve
//! their imports against them at `dlopen`.
//!
//! `--export-dynamic-symbol` exports only the names that match; `-rdynamic` would export every
//! symbol of the binary (thousands) and slow down each `dlopen` that searches them.

fn main() {
    let flag = "-Wl,--export-dynamic-symbol=hot_*";
    // Every linked target: the bins for `hotlab run --backend object`, and the tests, which
    // load shared libraries too. (`rustc-link-arg-tests` reaches the integration tests but not
    // the lib's unit-test binary; rlibs ignore link args.)
    println!("cargo::rustc-link-arg={flag}");
    println!("cargo::rerun-if-changed=build.rs");
}
