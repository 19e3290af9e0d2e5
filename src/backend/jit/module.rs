//! [`ScriptModule`]: a program on the JIT that new versions of its source can reload, with its
//! objects living on in one runtime.
//!
//! A reload compiles the new source as a whole program in the same runtime: every class it
//! defines that the runtime already has is reloaded (the runtime migrates its live objects:
//! fields with the same name and type keep their values, new ones take their initializers,
//! removed ones go, and the class's slots point at the new code), new classes are defined, and
//! classes it does not mention keep their old code. Module variables carry over the same way as
//! fields: one with the same name and type in both versions keeps its value (handles included),
//! the others take their initializers. Then `fn after_reload()`, if the new source has one, runs
//! and its result is reported.
//!
//! Old versions of the code are kept for the module's life: an object of a class the new
//! source does not mention still runs its old methods.

use std::sync::Arc;

use crate::backend::Value;
use crate::lang::hir::{Program, Type};
use crate::lang::{Diagnostics, SourceFile};
use crate::runtime::ScriptError;
use crate::runtime::reload::ReloadReport;
use crate::runtime::rt::Runtime;

use super::{Jit, JitError, JitOptions, JitProgram};

/// The name of the function a reload runs after migrating, if the new source defines it.
pub const AFTER_RELOAD: &str = "after_reload";

/// Why a `jit-opt` module refuses a reload.
pub const JIT_OPT_NO_RELOAD: &str = "a jit-opt module cannot be reloaded: its objects keep their \
    fields inline and its calls are direct, so there is nothing to swap; use the jit backend \
    to reload";

/// A program whose classes can be reloaded from new versions of its source (see the module
/// docs).
pub struct ScriptModule {
    jit: Jit,
    runtime: Arc<Runtime>,
    program: Program,
    current: JitProgram,
    /// Earlier versions, kept while objects may still run their code.
    old: Vec<(Program, JitProgram)>,
}

/// What a successful reload did.
#[derive(Debug)]
pub struct ReloadOutcome {
    /// One report per reloaded class (migrated objects; kept, added, removed, retyped fields).
    pub classes: Vec<ReloadReport>,
    /// Classes the new source defined for the first time.
    pub defined: Vec<String>,
    /// Module variables that kept their values.
    pub globals_kept: Vec<String>,
    /// The result of `fn after_reload()`, if the new source has one.
    pub after_reload: Option<Value>,
}

/// Why a reload failed.
#[derive(Debug, thiserror::Error)]
pub enum ReloadFailure {
    /// The new source does not compile: nothing changed.
    #[error("the new version does not compile")]
    Compile(Diagnostics),
    /// The new version cannot replace the old one (a method changes its signature, a class its
    /// parent): nothing changed.
    #[error("{0}")]
    Refused(String),
    /// The JIT or the runtime failed while applying it.
    #[error("{0}")]
    Jit(JitError),
    /// The reload was applied, then `after_reload` raised.
    #[error("after_reload failed: {0}")]
    AfterReload(ScriptError),
}

impl ScriptModule {
    /// Compile `program` (running `<init>`) in a fresh runtime.
    pub fn new(program: Program, options: JitOptions) -> Result<ScriptModule, JitError> {
        let mut jit = Jit::new(options)?;
        let runtime = Arc::new(jit.new_runtime());
        let (current, _) = jit.compile_in(&program, Arc::clone(&runtime))?;
        Ok(ScriptModule {
            jit,
            runtime,
            program,
            current,
            old: Vec::new(),
        })
    }

    /// The current version's compiled program.
    pub fn current(&self) -> &JitProgram {
        &self.current
    }

    /// The current version's checked program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The runtime every version's objects live in.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// Run `main` of the current version.
    pub fn run_main(&self) -> Result<Value, ScriptError> {
        self.current.run_main()
    }

    /// Reload from a new version of the source (see the module docs).
    ///
    /// A module compiled for `jit-opt` (`OptLevel::Speed`: fields inline in the objects, direct
    /// calls) cannot reload: [`ReloadFailure::Refused`], nothing changed.
    pub fn reload(&mut self, source: Arc<SourceFile>) -> Result<ReloadOutcome, ReloadFailure> {
        if self.runtime.is_fixed() {
            return Err(ReloadFailure::Refused(JIT_OPT_NO_RELOAD.into()));
        }
        let program = crate::lang::compile(source).map_err(ReloadFailure::Compile)?;
        self.precheck(&program).map_err(ReloadFailure::Refused)?;
        let defined = program
            .classes
            .iter()
            .filter(|c| self.runtime.class(&c.name).is_none())
            .map(|c| c.name.clone())
            .collect();
        let (mut next, classes) = self
            .jit
            .compile_in(&program, Arc::clone(&self.runtime))
            .map_err(ReloadFailure::Jit)?;
        let globals_kept = carry_globals(&mut self.current, &mut next);
        let old_program = std::mem::replace(&mut self.program, program);
        let old = std::mem::replace(&mut self.current, next);
        self.old.push((old_program, old));
        let after_reload = match self.current.function_named(AFTER_RELOAD) {
            Some(f) => Some(
                self.current
                    .call(f, &[])
                    .map_err(ReloadFailure::AfterReload)?,
            ),
            None => None,
        };
        Ok(ReloadOutcome {
            classes,
            defined,
            globals_kept,
            after_reload,
        })
    }

    /// Refuse, before anything changes, what the runtime would refuse half-way: a class with
    /// another parent, a method with another signature.
    fn precheck(&self, program: &Program) -> Result<(), String> {
        for (i, class) in program.classes.iter().enumerate() {
            let Some(existing) = self.runtime.class(&class.name) else {
                continue;
            };
            let parent = class.parent.map(|p| program.class(p).name.as_str());
            if existing.parent().map(|p| p.name()) != parent {
                return Err(format!(
                    "class `{}` cannot change its base class in a reload",
                    class.name
                ));
            }
            let def = crate::backend::objects::class_def(
                program,
                crate::lang::hir::ClassId(i as u32),
                None,
                std::ptr::null_mut(),
                |_| std::ptr::null(),
            );
            for m in &def.methods {
                let old = existing.version().methods.iter().flatten();
                if let Some((_, sig)) = old.into_iter().find(|(n, _)| **n == *m.name)
                    && *sig != m.sig
                {
                    return Err(format!(
                        "method `{}.{}` cannot change its signature in a reload",
                        class.name, m.name
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Give `next`'s module variables the values of `old`'s with the same name and type; returns
/// their names.
fn carry_globals(old: &mut JitProgram, next: &mut JitProgram) -> Vec<String> {
    let (old_cells, old_layout) = old.globals_mut();
    let old_layout = old_layout.to_vec();
    let old_cells = old_cells.to_vec();
    let (cells, layout) = next.globals_mut();
    let layout = layout.to_vec();
    let mut kept = Vec::new();
    for (name, ty, at) in &layout {
        let Some((_, _, from)) = old_layout
            .iter()
            .find(|(n, t, _)| n == name && same_type(t, ty))
        else {
            continue;
        };
        let (at, from, n) = (*at as usize, *from as usize, ty.cells() as usize);
        if ty.is_managed() {
            // Both versions own a reference: take one for the new, drop the new's own value.
            let cell = super::call::retain_cell(ty, old_cells[from]);
            let replaced = std::mem::replace(&mut cells[at], cell);
            super::call::release_cell(ty, replaced);
        } else {
            cells[at..at + n].copy_from_slice(&old_cells[from..from + n]);
        }
        kept.push(name.clone());
    }
    kept
}

/// Types are equal across versions when they read the same (class ids may differ).
fn same_type(a: &Type, b: &Type) -> bool {
    a.to_string() == b.to_string()
}
