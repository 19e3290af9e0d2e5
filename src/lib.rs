//! hotlab: a lab for the cost of a script call.
#![warn(missing_docs)]

pub mod lang;
pub mod runtime;
