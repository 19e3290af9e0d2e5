//! [`ScriptModule`]: a program on the JIT that new versions of its source can reload, with its
//! objects living on in one runtime.
//!
//! A reload compiles the new source as a whole program in the same runtime. The classes it
//! defines that the runtime already has are reloaded in one step (the runtime stops every call,
//! migrates their live objects — fields with the same name and type keep their values, new ones
//! take their initializers, removed ones go, retyped ones and ones holding closures are
//! re-initialized — points their slots at the new code, then lets calls in again); new classes
//! are defined. Module variables carry over the same way as fields: one with the same name and
//! type in both versions keeps its value (handles included), the others, and those holding
//! closures, take their initializers. Then `fn after_reload()`, if the new source has one, runs
//! and its result is reported.
//!
//! **No code of a replaced version runs again.** Old code knows the old layouts of every class
//! (a field is a constant offset), so running it against migrated objects would read the wrong
//! cells. Hence a class the new version drops is unloaded (its objects destroyed: handles to them
//! are stale), closures (which hold old code) are not kept, and the old version's module
//! variables are released at the reload. Its code and data stay mapped for the module's life,
//! though nothing calls them.
//!
//! The same module runs on the `object` backend ([`ScriptModule::new_object`]): each version is
//! then a shared library of its own (built, linked and `dlopen`ed), installed into the runtime
//! by the same path, and old libraries stay loaded as old JIT code does. The interpreter's
//! reload ([`Interp::reload`](crate::backend::interp::Interp::reload)) follows these semantics
//! too.

use std::sync::Arc;

use crate::backend::Value;
use crate::backend::objects::ObjectsError;
use crate::lang::hir::{Program, Type};
use crate::lang::{Diagnostics, SourceFile};
use crate::runtime::ScriptError;
use crate::runtime::reload::{Held, ReloadReport};
use crate::runtime::rt::Runtime;

use super::{Jit, JitError, JitOptions, JitProgram};
use crate::backend::object::{ObjectBackend, ObjectError, ObjectOptions};

/// The name of the function a reload runs after migrating, if the new source defines it.
pub const AFTER_RELOAD: &str = "after_reload";

/// Why a `jit-opt` module refuses a reload.
pub const JIT_OPT_NO_RELOAD: &str = "a jit-opt module cannot be reloaded: its objects keep their \
    fields inline and its calls are direct, so there is nothing to swap; use the jit backend \
    to reload";

/// A program whose classes can be reloaded from new versions of its source (see the module
/// docs).
pub struct ScriptModule {
    compiler: Compiler,
    runtime: Arc<Runtime>,
    program: Program,
    current: JitProgram,
    /// Earlier versions: never run again, kept mapped for the module's life.
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

/// Why a program refuses a new version.
#[derive(Debug, thiserror::Error)]
pub enum ReloadRefusal {
    /// A `jit-opt` module reloads nothing.
    #[error("{JIT_OPT_NO_RELOAD}")]
    JitOpt,
    /// The program was loaded without `LoadOptions::reloadable`.
    #[error("the program was not loaded to be reloaded")]
    NotReloadable,
    /// The runtime would refuse the new version's classes.
    #[error(transparent)]
    Classes(ObjectsError),
}

/// Why a reload failed.
#[derive(Debug, thiserror::Error)]
pub enum ReloadFailure {
    /// The new source does not compile: nothing changed.
    #[error("the new version does not compile")]
    Compile(Diagnostics),
    /// The new version cannot replace the old one (a method changes its signature, a class its
    /// parent), or the program cannot reload: nothing changed.
    #[error(transparent)]
    Refused(#[from] ReloadRefusal),
    /// The JIT or the runtime failed while applying it.
    #[error("{0}")]
    Jit(JitError),
    /// The `object` backend failed to build, link or load the new library version, or the
    /// runtime refused it, or its `<init>` raised.
    #[error("{0}")]
    Object(ObjectError),
    /// The classes were reloaded, then the new version's module initializer raised: the new
    /// version is the current one (its classes run its code), with its module variables as far
    /// as `<init>` got, then the kept ones carried over.
    #[error("the new version's initializer failed: {0}")]
    Init(ScriptError, Box<ReloadOutcome>),
    /// The reload was applied (what it did is in the outcome), then `after_reload` raised.
    #[error("after_reload failed: {0}")]
    AfterReload(ScriptError, Box<ReloadOutcome>),
}

impl ReloadOutcome {
    /// Finish a reload that was applied (`self`: what it did): `init` is how the new version's
    /// `<init>` went, `after_reload` runs `fn after_reload()` if the version has one. A failure
    /// of either keeps what was applied in the error.
    pub(crate) fn finish(
        mut self,
        init: Result<Value, ScriptError>,
        after_reload: impl FnOnce() -> Option<Result<Value, ScriptError>>,
    ) -> Result<ReloadOutcome, ReloadFailure> {
        if let Err(e) = init {
            return Err(ReloadFailure::Init(e, Box::new(self)));
        }
        match after_reload() {
            Some(Err(e)) => Err(ReloadFailure::AfterReload(e, Box::new(self))),
            Some(Ok(v)) => {
                self.after_reload = Some(v);
                Ok(self)
            }
            None => Ok(self),
        }
    }
}

impl ScriptModule {
    /// Compile `program` (running `<init>`) in a fresh runtime.
    pub fn new(program: Program, options: JitOptions) -> Result<ScriptModule, JitError> {
        let jit = Jit::new(options)?;
        // jit-opt's runtime is fixed (fields inline, no reload); the jit's reloads.
        let runtime = Arc::new(jit.new_runtime());
        let mut compiler = Compiler::Jit(Box::new(jit));
        let (current, _, _) = compiler
            .compile_in(&program, Arc::clone(&runtime))
            .map_err(|e| match e {
                ReloadFailure::Jit(e) => e,
                other => JitError::Setup(other.to_string()),
            })?;
        current.run_init().map_err(JitError::Init)?;
        Ok(ScriptModule::first(compiler, runtime, program, current))
    }

    /// Build `program` with the `object` backend (a shared library, `<init>` run) in a fresh
    /// runtime. Each reload then links and loads a new library version, whose classes replace
    /// the old ones exactly as on the JIT; the old libraries stay loaded for the module's life.
    pub fn new_object(
        program: Program,
        options: ObjectOptions,
    ) -> Result<ScriptModule, ObjectError> {
        let mut compiler = Compiler::Object(ObjectBackend::new(options)?);
        let runtime = Arc::new(Runtime::new());
        let (current, _, _) = match compiler.compile_in(&program, Arc::clone(&runtime)) {
            Ok(made) => made,
            Err(ReloadFailure::Object(e)) => return Err(e),
            Err(other) => return Err(ObjectError::Emit(other.to_string())),
        };
        current.run_init().map_err(ObjectError::Init)?;
        Ok(ScriptModule::first(compiler, runtime, program, current))
    }

    /// A module at its first version.
    fn first(
        compiler: Compiler,
        runtime: Arc<Runtime>,
        program: Program,
        current: JitProgram,
    ) -> ScriptModule {
        ScriptModule {
            compiler,
            runtime,
            program,
            current,
            old: Vec::new(),
        }
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
            return Err(ReloadRefusal::JitOpt.into());
        }
        let program = crate::lang::compile(source).map_err(ReloadFailure::Compile)?;
        self.precheck(&program).map_err(ReloadRefusal::Classes)?;
        let defined = crate::backend::objects::new_class_names(&self.runtime, &program);
        let (mut next, classes, held) = self
            .compiler
            .compile_in(&program, Arc::clone(&self.runtime))?;
        // From here the runtime's classes run the new code: the new version becomes the
        // current one even if its `<init>` raises (then reported, as the interpreter does).
        // Other threads' calls wait (`held`) until it is the current one, module variables
        // carried over.
        let init = next.run_init();
        let globals_kept = carry_globals(&mut self.current, &mut next);
        let old_program = std::mem::replace(&mut self.program, program);
        let mut old = std::mem::replace(&mut self.current, next);
        // No code of the old version runs again: what its module variables still hold goes now.
        old.release_globals();
        self.old.push((old_program, old));
        drop(held);
        let applied = ReloadOutcome {
            classes,
            defined,
            globals_kept,
            after_reload: None,
        };
        let current = &self.current;
        applied.finish(init, || {
            let f = current.function_named(AFTER_RELOAD)?;
            Some(current.call(f, &[]))
        })
    }

    /// Refuse, before anything changes, what the runtime would refuse half-way: a class with
    /// another parent, a method with another signature.
    fn precheck(&self, program: &Program) -> Result<(), ObjectsError> {
        crate::backend::objects::reload_precheck(&self.runtime, program)
    }
}

/// What builds each version of a [`ScriptModule`].
enum Compiler {
    /// Code in this process's JIT (boxed: a `Jit` carries its contexts inline).
    Jit(Box<Jit>),
    /// A shared library per version.
    Object(ObjectBackend),
}

impl Compiler {
    /// Build `program` with its objects in `runtime`, without running `<init>` (see
    /// [`Jit::compile_in`]): once this succeeds the classes run the new code, so the program
    /// must be kept.
    fn compile_in(
        &mut self,
        program: &Program,
        runtime: Arc<Runtime>,
    ) -> Result<(JitProgram, Vec<ReloadReport>, Option<Held>), ReloadFailure> {
        match self {
            Compiler::Jit(jit) => jit.install_in(program, runtime).map_err(ReloadFailure::Jit),
            Compiler::Object(backend) => backend
                .install_in(program, runtime)
                .map(|(p, reports, held)| (p.into_program(), reports, held))
                .map_err(ReloadFailure::Object),
        }
    }
}

/// Give `next`'s module variables the values of `old`'s with the same name and type; returns
/// their names. One that holds closures keeps the new version's value: a closure's code is of
/// the version that made it, and no code of the old version runs after a reload.
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
            .find(|(n, t, _)| n == name && same_type(t, ty) && !ty.holds_closures())
        else {
            continue;
        };
        let (at, from, n) = (*at as usize, *from as usize, ty.cells() as usize);
        // Both versions own their references: take ones for the new, drop the new's own value.
        super::call::release_cells(ty, &mut cells[at..at + n]);
        cells[at..at + n].copy_from_slice(&old_cells[from..from + n]);
        super::call::retain_cells(ty, &cells[at..at + n]);
        kept.push(name.clone());
    }
    kept
}

/// Types are equal across versions when they read the same (class ids may differ).
fn same_type(a: &Type, b: &Type) -> bool {
    a.to_string() == b.to_string()
}
