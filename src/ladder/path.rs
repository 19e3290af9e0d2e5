//! From a ladder row's layers to the call path it measures.
//!
//! Row *k* of a ladder holds the layers of steps 1..=k, in the order written. A layer written
//! later wraps the ones before it (it runs first, outermost): `slot, entry, detached` is
//! `Detached<Entry<Slot>>`. The terminal is `Slot` once a `slot` step has been seen, `Bound`
//! before (the pointer bound in the shell, no table read). `fused` is `Fused<Slot>`; `direct` is
//! `Direct<Iface>`, the host entry of a fixed runtime (`jit-opt`); `native` is the twin.

use std::fmt;

use super::spec::Layer;

/// The innermost part of a path: how the method's code is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Terminal {
    /// Read the class's slot table.
    Slot,
    /// The pointer bound in the shell at creation.
    Bound,
    /// The class's interface entry for `Hook.call`, resolved at definition (no table read).
    Iface,
}

/// The call path of one ladder row.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Path {
    /// The native twin through `&dyn Hook`.
    Native,
    /// The `new` ladder's floor: `Arc::new` of the same field, made, read and dropped.
    NativeNew,
    /// A terminal inside wrapping layers (`wrappers` innermost first: `Entry`, `Detached`,
    /// `Catch`, `Depth` only).
    Layered {
        /// How the code is found.
        terminal: Terminal,
        /// The wrapping layers, innermost first.
        wrappers: Vec<Layer>,
    },
    /// The runtime's fused path around a slot read.
    Fused,
    /// The runtime's direct path (a fixed runtime's host entry) around the interface entry.
    Direct,
    /// One of the runtime's own functions, not a model (an `rt-*` layer or `bench`).
    Runtime(Layer),
}

impl Path {
    /// The path of a row whose active layers are `layers` (in ladder order).
    pub fn of(layers: &[Layer]) -> Path {
        if let Some(&last) = layers.last()
            && last.is_runtime()
        {
            return Path::Runtime(last);
        }
        let layers: Vec<Layer> = layers.iter().copied().filter(|l| !l.is_runtime()).collect();
        // The body alone is the bare method through the bound pointer; under other layers it
        // is their terminal's code, so it adds nothing to their path.
        if layers == [Layer::Body] {
            return Path::Layered {
                terminal: Terminal::Bound,
                wrappers: Vec::new(),
            };
        }
        let layers: Vec<Layer> = layers.into_iter().filter(|l| *l != Layer::Body).collect();
        let layers = layers.as_slice();
        if layers.contains(&Layer::Fused) {
            return Path::Fused;
        }
        if layers.contains(&Layer::Direct) {
            return Path::Direct;
        }
        if layers.is_empty() {
            return Path::Native;
        }
        let terminal = if layers.contains(&Layer::Slot) {
            Terminal::Slot
        } else {
            Terminal::Bound
        };
        let wrappers = layers
            .iter()
            .copied()
            .filter(|l| {
                matches!(
                    l,
                    Layer::Entry | Layer::Detached | Layer::Catch | Layer::Depth
                )
            })
            .collect();
        Path::Layered { terminal, wrappers }
    }
}

impl fmt::Display for Path {
    /// The Rust type of the path, outside in: `Depth<TryCatch<Entry<Slot>>>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Native => f.write_str("&dyn Hook"),
            Path::NativeNew => f.write_str("Arc::new"),
            Path::Fused => f.write_str("Fused<Slot>"),
            Path::Direct => f.write_str("Direct<Iface>"),
            Path::Runtime(l) => f.write_str(runtime_function(*l)),
            Path::Layered { terminal, wrappers } => {
                for w in wrappers.iter().rev() {
                    write!(f, "{}<", wrapper_type(*w))?;
                }
                f.write_str(match terminal {
                    Terminal::Slot => "Slot",
                    Terminal::Bound => "Bound",
                    Terminal::Iface => "Iface",
                })?;
                for _ in wrappers {
                    f.write_str(">")?;
                }
                Ok(())
            }
        }
    }
}

/// The runtime function a runtime rung calls, as the path column shows it.
pub fn runtime_function(l: Layer) -> &'static str {
    match l {
        Layer::RtSlot => "border::call_iface",
        Layer::RtFused => "border::fused_enter",
        Layer::RtObject => "Hook for Object",
        Layer::RtHandle => "Hook for Handle",
        Layer::Bench => "bench: host_call.hot, jit",
        Layer::NewAlloc => "new_steps::alloc_free",
        Layer::NewHeader => "new_steps::header_free",
        Layer::NewFields => "new_steps::fields_free",
        Layer::NewList => "new_steps::listed_free",
        Layer::NewRuntime => "Runtime::new_object",
        _ => "?",
    }
}

/// The runtime type of a wrapping layer.
pub fn wrapper_type(l: Layer) -> &'static str {
    match l {
        Layer::Entry => "Entry",
        Layer::Detached => "Detached",
        Layer::Catch => "TryCatch",
        Layer::Depth => "Depth",
        _ => "?",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Layer::*;

    #[test]
    fn later_layers_wrap_earlier_ones() {
        let p = Path::of(&[Slot, Entry, Detached, Catch, Depth]);
        assert_eq!(p.to_string(), "Depth<TryCatch<Detached<Entry<Slot>>>>");
        assert_eq!(Path::of(&[Depth]).to_string(), "Depth<Bound>");
        assert_eq!(Path::of(&[Depth, Slot]).to_string(), "Depth<Slot>");
        assert_eq!(Path::of(&[Direct]), Path::Direct);
        assert_eq!(Path::Direct.to_string(), "Direct<Iface>");
        assert_eq!(Path::of(&[Fused]), Path::Fused);
        assert_eq!(Path::of(&[]), Path::Native);
        assert_eq!(Path::of(&[Fused, RtSlot]), Path::Runtime(RtSlot));
        assert_eq!(Path::of(&[RtSlot, Depth]).to_string(), "Depth<Bound>");
        assert_eq!(Path::of(&[Body]).to_string(), "Bound");
        assert_eq!(Path::of(&[Body, Slot]).to_string(), "Slot");
        assert_eq!(Path::of(&[Body, Fused]), Path::Fused);
        assert_eq!(Path::of(&[Body, RtSlot]), Path::Runtime(RtSlot));
    }
}
