//! Units in types: a number that crosses a module border says what it is.
//!
//! Following divan's `FineDuration`, durations are picoseconds; unlike divan they are `f64`
//! because per-operation figures are fractions of a nanosecond and their differences smaller
//! still.

use std::fmt;
use std::ops::{Add, Sub};

use serde::{Deserialize, Serialize};

/// A duration in picoseconds (1 ns = 1000 ps).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Picos(pub f64);

impl Picos {
    /// Zero picoseconds.
    pub const ZERO: Picos = Picos(0.0);

    /// From nanoseconds.
    pub fn from_nanos(ns: f64) -> Picos {
        Picos(ns * 1e3)
    }

    /// From a [`std::time::Duration`].
    pub fn from_duration(d: std::time::Duration) -> Picos {
        Picos(d.as_nanos() as f64 * 1e3)
    }

    /// In nanoseconds.
    pub fn nanos(self) -> f64 {
        self.0 / 1e3
    }

    /// In seconds (for display and budget arithmetic only).
    pub fn secs(self) -> f64 {
        self.0 / 1e12
    }
}

impl Add for Picos {
    type Output = Picos;
    fn add(self, rhs: Picos) -> Picos {
        Picos(self.0 + rhs.0)
    }
}

impl Sub for Picos {
    type Output = Picos;
    fn sub(self, rhs: Picos) -> Picos {
        Picos(self.0 - rhs.0)
    }
}

impl fmt::Display for Picos {
    /// Picks ps, ns, µs, ms or s so that the figure reads naturally.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ps = self.0;
        let a = ps.abs();
        let (v, unit) = if a < 1e3 {
            (ps, "ps")
        } else if a < 1e6 {
            (ps / 1e3, "ns")
        } else if a < 1e9 {
            (ps / 1e6, "µs")
        } else if a < 1e12 {
            (ps / 1e9, "ms")
        } else {
            (ps / 1e12, "s")
        };
        let prec = f.precision().unwrap_or(if v.abs() < 10.0 { 2 } else { 1 });
        write!(f, "{v:.prec$} {unit}")
    }
}

/// A count of CPU core cycles (estimated or counted), possibly fractional per operation.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Cycles(pub f64);

impl fmt::Display for Cycles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prec = f.precision().unwrap_or(2);
        write!(f, "{:.prec$} cycles", self.0)
    }
}

/// A dimensionless ratio, e.g. B's time over A's (1.0 = same).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Ratio(pub f64);

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prec = f.precision().unwrap_or(3);
        write!(f, "{:.prec$}x", self.0)
    }
}

/// A frequency in GHz (cycles or ticks per nanosecond).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Ghz(pub f64);

impl Ghz {
    /// Cycles taken by `t` at this frequency.
    pub fn cycles_in(self, t: Picos) -> Cycles {
        Cycles(t.nanos() * self.0)
    }
}

impl fmt::Display for Ghz {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} GHz", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picos_display_picks_unit() {
        assert_eq!(Picos(40.0).to_string(), "40.0 ps");
        assert_eq!(Picos(1500.0).to_string(), "1.50 ns");
        assert_eq!(Picos(2.5e9).to_string(), "2.50 ms");
        assert_eq!(Ghz(2.0).cycles_in(Picos(1500.0)), Cycles(3.0));
    }
}
