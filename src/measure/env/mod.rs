//! The machine around a measurement: CPU pinning and the health report.

pub mod health;
pub mod pin;
