//! `.clif` files.
