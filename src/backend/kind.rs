//! [`Backend`]: the one list of the ways a script becomes something that runs.

use serde::{Deserialize, Serialize};

use super::jit::OptLevel;

/// A backend: how a script becomes code that runs. Its names (`jit`, `jit-opt`, `object`,
/// `interp`) are the same on the command line, in the worker's messages and in tables.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    clap::ValueEnum,
    Serialize,
    Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// Cranelift JIT in process
    Jit,
    /// Cranelift JIT optimized for speed, objects in a fixed runtime (no reload)
    JitOpt,
    /// Cranelift object file, linked into a shared library with `ld` and loaded with dlopen
    Object,
    /// The reference interpreter
    Interp,
}

impl Backend {
    /// Every backend, in table order (the order of the variants).
    pub const ALL: [Backend; 4] = [
        Backend::Jit,
        Backend::JitOpt,
        Backend::Object,
        Backend::Interp,
    ];

    /// Its name on the command line, in commands and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Jit => "jit",
            Backend::JitOpt => "jit-opt",
            Backend::Object => "object",
            Backend::Interp => "interp",
        }
    }

    /// The backend with this name.
    pub fn from_name(name: &str) -> Option<Backend> {
        Backend::ALL.into_iter().find(|b| b.name() == name)
    }

    /// One line for `--list`.
    pub fn describe(self) -> &'static str {
        match self {
            Backend::Jit => "Cranelift JIT in process, reloadable (calls through class slots)",
            Backend::JitOpt => {
                "Cranelift JIT, fixed runtime: direct calls, inline fields, inlining"
            }
            Backend::Object => "Cranelift object file, linked and dlopen'ed",
            Backend::Interp => "the reference interpreter over the checked program",
        }
    }

    /// The runtime this backend compiles for (`jit-opt`: fixed, `OptLevel::Speed`; the others
    /// reloadable, the interpreter compiling nothing). Cranelift's optimizer runs on all.
    pub fn opt_level(self) -> OptLevel {
        match self {
            Backend::JitOpt => OptLevel::Speed,
            _ => OptLevel::None,
        }
    }

    /// Why this backend refuses `.clif` scripts (raw Cranelift IR, which only the JIT
    /// loads), or `None` when it runs them.
    pub fn refuses_clif(self) -> Option<&'static str> {
        match self {
            Backend::Object => Some("the object backend runs .hot scripts only"),
            Backend::Interp => Some("the interpreter runs .hot scripts only"),
            Backend::Jit | Backend::JitOpt => None,
        }
    }

    /// Whether it makes machine code (the interpreter makes none).
    pub fn makes_machine_code(self) -> bool {
        self != Backend::Interp
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
