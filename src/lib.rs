//! hotlab: a lab for the cost of a script call.
#![warn(missing_docs)]

pub mod backend;
pub mod lang;
pub mod measure;
pub mod runtime;
