//! Statistics over samples, one file per method. All inputs are plain `f64` slices of one
//! unit (picoseconds per op, or natural-log ratios), so every method can be tested on synthetic
//! data; the typed results are built in `measure::result`.

pub mod blocks;
pub mod digits;
pub mod layouts;
pub mod median_ci;
pub mod summary;
pub mod tukey;
pub mod verdict;
