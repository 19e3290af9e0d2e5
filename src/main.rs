//! The `hotlab` binary: everything lives in the library; this is its command line.

fn main() -> std::process::ExitCode {
    hotlab::cli::main()
}
