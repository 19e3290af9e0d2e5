//! [`LoadTimes`]: the time each stage of getting a script ready took (the load section of
//! `hotlab bench`).

use std::time::Duration;

use serde::Serialize;

/// Time spent in each stage of getting a script ready (`None`: the stage does not exist for
/// this backend and mode).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LoadTimes {
    /// Lex and parse (`.clif`: reading and checking the `run` signature).
    #[serde(with = "micros_opt")]
    pub parse: Option<Duration>,
    /// Type check.
    #[serde(with = "micros_opt")]
    pub check: Option<Duration>,
    /// Lowering to Cranelift IR.
    #[serde(with = "micros_opt")]
    pub lower: Option<Duration>,
    /// Cranelift compile and emit.
    #[serde(with = "micros_opt")]
    pub compile: Option<Duration>,
    /// The rest: linking, finalizing, unwind registration, the module initializer.
    #[serde(with = "micros_opt")]
    pub load: Option<Duration>,
    /// Wall time of the whole load.
    #[serde(with = "micros")]
    pub total: Duration,
}

/// Durations as µs in JSON.
mod micros {
    use std::time::Duration;
    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1e6)
    }
}

/// Optional durations as µs (or null) in JSON.
mod micros_opt {
    use std::time::Duration;
    pub fn serialize<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_secs_f64() * 1e6)),
            None => s.serialize_none(),
        }
    }
}
