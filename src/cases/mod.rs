//! Cases and the backend matrix: `.hot`/`.clif` scripts in `cases/` with native Rust twins,
//! loaded ([`spec`]), loaded on each backend through the one facade ([`backend`]), measured beside their twins and
//! checked against them ([`matrix`]). `hotlab bench` and `hotlab check` are built on this.
//! See `docs/cases.md`.

pub mod backend;
pub mod check;
mod class_twins;
pub mod matrix;
mod program_twins;
pub mod reload;
pub mod render;
pub mod shape;
pub mod spec;
pub mod twin_layouts;
pub mod twins;

pub use backend::{Backend, CellError, LoadTimes, Loaded, Loader, Sampler, case_loader};
pub use spec::{
    Case, CaseEntry, CaseError, CaseProblem, ChecksumRule, Header, Mode, ScriptFile, load_dir,
};
pub use twin_layouts::TwinLayouts;
pub use twins::{Twin, twin_named, twins};
