//! Disassembly.
