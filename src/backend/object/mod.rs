//! The `object` backend: a checked program → a Cranelift object file → a shared library,
//! linked by the system linker and loaded with `dlopen` (the seed's `files` backend).
//!
//! # Pipeline and stage timings
//! 1. **lower**: every function goes through the JIT's own lowering (`lower_function`,
//!    `build_entry`) into an `ObjectModule` with `is_pic = true`: the same IR as the `jit`
//!    backend, apart from how globals are addressed (below).
//! 2. **define**: Cranelift compiles each function into the module (with `.eh_frame` unwind
//!    info, so a `ScriptError` can unwind through the library's frames).
//! 3. **emit**: the module becomes the bytes of an ELF `.o`, written to a private temp dir.
//! 4. **link**: `ld -shared --eh-frame-hdr -Bsymbolic -z noexecstack` makes `program.so`.
//! 5. **load**: `dlopen` (`RTLD_NOW`) and one `dlsym` per function; then `<init>` runs.
//!
//! # Symbols
//! Functions are exported as `hot.<name>` and `hot.<name>.entry` (the trampoline), so the host
//! finds them with `dlsym`. hotlab's own data objects (below) are `hot:<what>`: a script name
//! never contains `:`, so a function may be called `globals`, `objects` or `hot_sink` without
//! meeting one of them. `-Bsymbolic` binds the library's references to its own definitions
//! at link time: a script-to-script call stays a direct `call rel32`, as in the JIT, with no
//! PLT stub. Host functions and `hot_raise_*` helpers are imports that the dynamic loader
//! resolves against the executable, which exports exactly the `hot_*` symbols (`build.rs`);
//! position-independent code calls them through the GOT (`call [rip+GOT]`).
//!
//! # The globals block
//! PIC code cannot carry the absolute address of a host allocation, so the block is a
//! writable, zero-filled data object in the library, `hot:globals`. Code addresses a global
//! with one `lea` relative to the instruction pointer (offset folded into the relocation);
//! the host finds the block with `dlsym` and reads module variables straight from it.
//!
//! # Classes
//! The same holds for what JIT code bakes in to reach objects: the program's `ProgramObjects`
//! (for `new`) and the slot-offset table (for virtual calls) are reached through two more
//! writable data objects, `hot:objects` (one cell holding the objects' address) and
//! `hot:slot_offsets`. Loading installs the classes by the JIT's own path
//! (`JitProgram::install_objects`: each class defined, or reloaded, in the runtime with the
//! method addresses from `dlsym`), then binds the library to them
//! ([`ProgramObjects::bind_library`]), then runs `<init>`. The runtime helpers (`hot_object_*`,
//! `hot_vec_*`, `hot_str_*`) are imports like the others. [`ObjectBackend::compile_in`] builds
//! a new version into an existing runtime: that is the backend's reload (a new library per
//! version; see `ScriptModule::new_object`).
//!
//! # Lifetime
//! An [`ObjectBackend`] holds the options and the ISA (made once); [`compile_object`] is a
//! one-off backend. The returned [`ObjectProgram`] owns the library handle and the temp dir: the `.so` stays
//! mapped (and on disk, for `objdump`) until the program is dropped, then it is closed and the
//! directory removed.

mod codegen;
mod link;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cranelift_codegen::isa::OwnedTargetIsa;

use crate::backend::Value;
use crate::backend::jit::{
    CompiledFunction, GlobalsBlock, JitError, JitOptions, JitProgram, ProgramParts, RawEntry, VmCtx,
};
use crate::backend::objects::{LibraryObjects, ProgramObjects};
use crate::lang::hir::{FuncId, Program};
use crate::lang::span::SourceFile;
use crate::runtime::ScriptError;
use crate::runtime::reload::{Held, ReloadReport};
use crate::runtime::rt::Runtime;

pub use link::Linker;

/// Options of [`compile_object`].
#[derive(Debug, Clone, Default)]
pub struct ObjectOptions {
    /// Checks, verifier and optimization level, as for the JIT.
    pub jit: JitOptions,
    /// Which program links the object file into a shared library.
    pub linker: Linker,
}

/// Why a program could not be built or loaded as a shared library.
#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    /// Lowering or compiling failed (the same errors as the JIT's).
    #[error(transparent)]
    Compile(#[from] JitError),
    /// The object file could not be produced.
    #[error("cannot emit the object file: {0}")]
    Emit(String),
    /// A file or directory could not be made.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// Where.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The linker could not be started.
    #[error(
        "cannot run the linker `{}`: {source} (the object backend needs GNU ld or a C compiler \
         driver; install binutils, or choose another linker)",
        linker.display()
    )]
    NoLinker {
        /// The program that was tried.
        linker: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The linker ran and failed.
    #[error("linking {} failed ({status}):\n{stderr}", object.display())]
    Link {
        /// The object file.
        object: PathBuf,
        /// How the linker exited.
        status: String,
        /// What it printed.
        stderr: String,
    },
    /// `dlopen` refused the library.
    #[error("cannot load {}: {message}", path.display())]
    Load {
        /// The library.
        path: PathBuf,
        /// `dlerror`'s message.
        message: String,
    },
    /// A symbol the library must define is missing.
    #[error("{} does not define `{symbol}`: {message}", path.display())]
    MissingSymbol {
        /// The library.
        path: PathBuf,
        /// The symbol.
        symbol: String,
        /// `dlerror`'s message.
        message: String,
    },
    /// The program's initializer raised an error.
    #[error("initializer failed: {0}")]
    Init(ScriptError),
}

/// Wall-clock time of each stage of [`compile_object`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StageTimings {
    /// HIR → CLIF for every function and trampoline.
    pub lower: Duration,
    /// Verify (when on) and compile every function into the module.
    pub define: Duration,
    /// Object file bytes, written to disk.
    pub emit: Duration,
    /// The linker run.
    pub link: Duration,
    /// `dlopen` and `dlsym`.
    pub load: Duration,
    /// Running `<init>`.
    pub init: Duration,
}

impl StageTimings {
    /// All stages together.
    pub fn total(&self) -> Duration {
        self.lower + self.define + self.emit + self.link + self.load + self.init
    }

    /// `(stage name, time)` in pipeline order.
    pub fn stages(&self) -> [(&'static str, Duration); 6] {
        [
            ("lower", self.lower),
            ("define", self.define),
            ("emit", self.emit),
            ("link", self.link),
            ("load", self.load),
            ("init", self.init),
        ]
    }
}

/// What keeps a loaded program's code alive: the library, and its functions' registration for
/// the sweep (`runtime::sweep`), which drops first (fields drop in order), before the library is
/// unloaded.
struct LoadedLibrary {
    _maps: crate::runtime::sweep::CodeRegistration,
    _library: link::Library,
}

/// A program loaded from a shared library. It offers the same calls as a [`JitProgram`] (the
/// calls go through the very same wrapper, trampolines and [`VmCtx`]).
pub struct ObjectProgram {
    program: JitProgram,
    timings: StageTimings,
    library_path: PathBuf,
    object_bytes: usize,
}

/// Build `program` into a shared library, load it and run its initializer (a one-off
/// [`ObjectBackend`]; keep a backend to build several programs without re-making the ISA).
pub fn compile_object(
    program: &Program,
    options: &ObjectOptions,
) -> Result<ObjectProgram, ObjectError> {
    ObjectBackend::new(options.clone())?.compile(program)
}

/// Builds programs into shared libraries: holds the options and the ISA (made once, like the
/// [`Jit`](crate::backend::jit::Jit)'s).
pub struct ObjectBackend {
    options: ObjectOptions,
    isa: OwnedTargetIsa,
}

impl ObjectBackend {
    /// A backend for this machine with `options`.
    pub fn new(options: ObjectOptions) -> Result<ObjectBackend, ObjectError> {
        let isa = codegen::pic_isa()?;
        Ok(ObjectBackend { options, isa })
    }

    /// The options this backend was made with.
    pub fn options(&self) -> &ObjectOptions {
        &self.options
    }

    /// Build `program` into a shared library in a fresh temp dir, load it and run its
    /// initializer; its objects live in a fresh runtime.
    pub fn compile(&self, program: &Program) -> Result<ObjectProgram, ObjectError> {
        self.compile_in(program, Arc::new(Runtime::new()))
            .map(|(p, _)| p)
    }

    /// [`ObjectBackend::compile`] with the program's objects in `runtime`, as
    /// [`Jit::compile_in`](crate::backend::jit::Jit::compile_in) does: a class the runtime
    /// already has (by name) is reloaded with the new library's code (its live objects migrate;
    /// the reports say how), the others are defined. The classes are installed by the JIT's own
    /// path, then the library's objects cell and slot table are bound to them, then `<init>`
    /// runs.
    pub fn compile_in(
        &self,
        program: &Program,
        runtime: Arc<Runtime>,
    ) -> Result<(ObjectProgram, Vec<ReloadReport>), ObjectError> {
        let (made, reports, held) = self.install_in(program, runtime)?;
        let start = Instant::now();
        let mut made =
            crate::backend::objects::init_installed(made, held, |m| m.program.run_init())
                .map_err(ObjectError::Init)?;
        made.timings.init += start.elapsed();
        Ok((made, reports))
    }

    /// [`ObjectBackend::compile_in`] without running `<init>` (see
    /// [`Jit::install_in`](crate::backend::jit::Jit)): the caller must keep the program.
    pub(crate) fn install_in(
        &self,
        program: &Program,
        runtime: Arc<Runtime>,
    ) -> Result<(ObjectProgram, Vec<ReloadReport>, Option<Held>), ObjectError> {
        let options = &self.options;
        let mut timings = StageTimings::default();
        let built = codegen::build(program, self.isa.clone(), options.jit, &mut timings)?;

        let start = Instant::now();
        let dir = link::TempDir::new()?;
        let object_path = dir.path().join("program.o");
        std::fs::write(&object_path, &built.object).map_err(|source| ObjectError::Io {
            what: "cannot write",
            path: object_path.clone(),
            source,
        })?;
        timings.emit += start.elapsed();

        let start = Instant::now();
        let library_path = dir.path().join("program.so");
        options.linker.link(&object_path, &library_path)?;
        timings.link = start.elapsed();

        let start = Instant::now();
        let library = link::Library::open(&library_path, dir)?;
        let globals = library.symbol(codegen::GLOBALS_SYMBOL)? as *const u64;
        let library_objects = LibraryObjects {
            objects: library.symbol(codegen::OBJECTS_SYMBOL)? as *mut u64,
            slot_table: library.symbol(codegen::SLOT_TABLE_SYMBOL)? as *mut u64,
            slot_table_len: built.slot_table_len,
        };
        let mut functions = built.functions;
        let mut entries = built.entries;
        for f in functions.iter_mut().chain(entries.iter_mut()) {
            f.addr = library.symbol(&f.symbol)? as u64;
        }
        timings.load = start.elapsed();
        for f in functions.iter_mut().chain(entries.iter_mut()) {
            // SAFETY: the library maps the function's `size` bytes of code at `addr` (the size
            // Cranelift emitted for this symbol) until `library` is dropped; they are only read.
            f.bytes = unsafe { std::slice::from_raw_parts(f.addr as *const u8, f.size) }.to_vec();
        }

        // The frame maps at the addresses the loader chose (deregistered before the library
        // is unloaded: see `LoadedLibrary`).
        let maps = functions
            .iter()
            .chain(entries.iter())
            .map(|f| (f.addr as usize, f.size, Arc::clone(&f.frame_map)))
            .collect();
        let maps = crate::runtime::sweep::register(maps, Some(Arc::clone(&program.source)));
        let parts = ProgramParts {
            host_entries: Vec::new(),
            program,
            functions,
            entries,
            globals: GlobalsBlock::Foreign {
                ptr: globals,
                len: built.global_cells_total,
            },
            global_cells: built.global_cells,
            largest_frame: built.largest_frame,
            keeper: Arc::new(LoadedLibrary {
                _maps: maps,
                _library: library,
            }),
        };
        let start = Instant::now();
        let mut loaded = JitProgram::new(parts);
        let (reports, held) = loaded
            .install_objects(program, Box::new(ProgramObjects::new(runtime, program)))
            .map_err(|e| ObjectError::Compile(e.into()))?;
        if let Some(objects) = loaded.objects() {
            // SAFETY: the cells are the library's own writable data objects (`codegen`), no
            // code of the library has run yet, and the objects are boxed inside `loaded`, which
            // keeps the library mapped for as long as it lives.
            unsafe { objects.bind_library(&library_objects) }
                .map_err(|e| ObjectError::Compile(e.into()))?;
        }
        timings.init = start.elapsed();
        let program = ObjectProgram {
            program: loaded,
            timings,
            library_path,
            object_bytes: built.object.len(),
        };
        Ok((program, reports, held))
    }
}

impl ObjectProgram {
    /// The time each stage took to make this program.
    pub fn timings(&self) -> StageTimings {
        self.timings
    }

    /// Where the loaded library is (inside a temp dir removed when the program is dropped).
    pub fn library_path(&self) -> &Path {
        &self.library_path
    }

    /// Size of the object file the linker was given, in bytes.
    pub fn object_size(&self) -> usize {
        self.object_bytes
    }

    /// The program as the JIT's call API sees it (for code that takes a [`JitProgram`]).
    pub fn as_program(&self) -> &JitProgram {
        &self.program
    }

    /// The program as a [`JitProgram`], which keeps the library loaded (and its temp dir) for
    /// as long as it lives.
    pub fn into_program(self) -> JitProgram {
        self.program
    }

    /// A handle to the object in a handle-typed module variable; see
    /// [`JitProgram::global_handle`].
    pub fn global_handle(&self, name: &str) -> Option<crate::runtime::handle::Handle> {
        self.program.global_handle(name)
    }

    /// The source the program's spans point into.
    pub fn source(&self) -> &SourceFile {
        self.program.source()
    }

    /// Machine code (as loaded from the library), CLIF and timings of each script function,
    /// by HIR function id.
    pub fn functions(&self) -> &[CompiledFunction] {
        self.program.functions()
    }

    /// The entry trampolines, by HIR function id.
    pub fn entries(&self) -> &[CompiledFunction] {
        self.program.entries()
    }

    /// Look up a function by name.
    pub fn function_named(&self, name: &str) -> Option<FuncId> {
        self.program.function_named(name)
    }

    /// A context for calls from the current thread; see [`JitProgram::vm_context`].
    pub fn vm_context(&self) -> VmCtx {
        self.program.vm_context()
    }

    /// Call function `f` with `args`; see [`JitProgram::call`].
    pub fn call(&self, f: FuncId, args: &[Value]) -> Result<Value, ScriptError> {
        self.program.call(f, args)
    }

    /// Call `fn main()`.
    pub fn run_main(&self) -> Result<Value, ScriptError> {
        self.program.run_main()
    }

    /// The current value of a module variable or constant.
    pub fn global(&self, name: &str) -> Option<Value> {
        self.program.global(name)
    }

    /// The bare function `f`, typed as `F`; see [`JitProgram::raw_entry`] for how to call it.
    pub fn raw_entry<F: RawEntry>(&self, f: FuncId) -> Result<F, JitError> {
        self.program.raw_entry(f)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::lang::compile;

    fn is_send<T: Send>() {}

    /// Like a `JitProgram`, a loaded program may move to a worker thread.
    #[test]
    fn programs_can_move_to_another_thread() {
        is_send::<ObjectProgram>();
    }

    /// The lib's unit-test binary exports the `hot_*` symbols too (`build.rs`), or this
    /// `dlopen` would fail with "undefined symbol".
    #[test]
    fn loads_and_runs_in_the_unit_test_binary() {
        let source = SourceFile::new("t.hot", "fn main() -> i64 { return 7 % 4 + 40 / 1 }\n");
        let program = compile(Arc::new(source)).expect("checks");
        let loaded = compile_object(&program, &ObjectOptions::default()).expect("builds");
        assert_eq!(loaded.run_main(), Ok(Value::I64(43)));
    }

    #[test]
    fn temp_dirs_are_private_and_removed() {
        let dir = link::TempDir::new().expect("temp dir");
        let path = dir.path().to_path_buf();
        let mode = std::fs::metadata(&path).expect("exists").permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o700
        );
        std::fs::write(path.join("f"), b"x").expect("writable");
        drop(dir);
        assert!(!path.exists());
    }

    #[test]
    fn a_bad_library_gives_the_loaders_message() {
        let dir = link::TempDir::new().expect("temp dir");
        let path = dir.path().join("program.so");
        std::fs::write(&path, b"not an ELF file").expect("writable");
        let err = link::Library::open(&path, dir).err().expect("not loadable");
        let text = err.to_string();
        assert!(matches!(err, ObjectError::Load { .. }), "{text}");
        // dlerror names the file and says what is wrong with it.
        assert!(text.contains("program.so") && text.len() > 40, "{text}");
        assert!(!text.ends_with("dlopen failed"), "{text}");
    }
}
