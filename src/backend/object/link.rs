//! Link and load: a private temp dir, the system linker, and `dlopen`/`dlsym`.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::ObjectError;

/// The program that turns the object file into a shared library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Linker {
    /// GNU ld or a compatible linker (`ld`, `ld.lld`), run directly: the fastest (about 3 ms).
    Ld(PathBuf),
    /// A C compiler driver (`cc`, `gcc`, `clang`) that passes the flags on to its linker
    /// (about 10 ms: the driver itself costs a few ms).
    Cc(PathBuf),
}

impl Default for Linker {
    fn default() -> Self {
        Linker::Ld(PathBuf::from("ld"))
    }
}

impl Linker {
    /// The program run.
    pub fn program(&self) -> &Path {
        match self {
            Linker::Ld(p) | Linker::Cc(p) => p,
        }
    }

    /// Link `object` into the shared library `library`.
    ///
    /// `--eh-frame-hdr` lets the unwinder find the library's frames; `-Bsymbolic` binds the
    /// library's own symbols at link time (direct calls, no PLT, and PC-relative access to the
    /// globals block); `-z noexecstack` because the object has no `.note.GNU-stack`, and an
    /// executable-stack library is refused by `dlopen` on hardened systems.
    pub(super) fn link(&self, object: &Path, library: &Path) -> Result<(), ObjectError> {
        const FLAGS: [&str; 4] = ["--eh-frame-hdr", "-Bsymbolic", "-z", "noexecstack"];
        let mut cmd = Command::new(self.program());
        match self {
            Linker::Ld(_) => {
                cmd.arg("-shared").args(FLAGS);
            }
            Linker::Cc(_) => {
                cmd.args(["-shared", "-nostdlib"])
                    .arg("-Wl,--eh-frame-hdr,-Bsymbolic,-z,noexecstack");
            }
        }
        cmd.arg("-o").arg(library).arg(object);
        let output = cmd.output().map_err(|source| ObjectError::NoLinker {
            linker: self.program().to_path_buf(),
            source,
        })?;
        if output.status.success() {
            return Ok(());
        }
        Err(ObjectError::Link {
            object: object.to_path_buf(),
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr)
                .trim_end()
                .to_string(),
        })
    }
}

/// A directory only this process uses, removed with its contents on drop.
#[derive(Debug)]
pub(super) struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// A fresh `hotlab-XXXXXX` directory (mode 0700) under the system temp dir.
    pub(super) fn new() -> Result<TempDir, ObjectError> {
        let template = std::env::temp_dir().join("hotlab-XXXXXX");
        let io_err = |source| ObjectError::Io {
            what: "cannot create a temp dir like",
            path: template.clone(),
            source,
        };
        let bytes = template.clone().into_os_string().into_vec();
        let c = CString::new(bytes).map_err(|_| {
            io_err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the temp dir path contains a NUL byte",
            ))
        })?;
        let mut raw = c.into_bytes_with_nul();
        // SAFETY: `raw` is a writable NUL-terminated template ending in `XXXXXX`, as
        // `mkdtemp` requires; it rewrites those six bytes in place and returns `raw` or null.
        let made = unsafe { libc::mkdtemp(raw.as_mut_ptr().cast()) };
        if made.is_null() {
            return Err(io_err(std::io::Error::last_os_error()));
        }
        raw.pop();
        Ok(TempDir {
            path: PathBuf::from(OsString::from_vec(raw)),
        })
    }

    /// The directory.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Nothing useful to do if it fails (another process removed it, or the disk is gone).
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A loaded library and the temp dir it came from: closed, then removed, on drop.
pub(super) struct Library {
    // Field order is drop order: close the library before its file goes away.
    lib: libloading::os::unix::Library,
    path: PathBuf,
    _dir: TempDir,
}

impl Library {
    /// `dlopen` with `RTLD_NOW`, so an import the executable does not export fails here, with
    /// the loader's message, rather than at the first call.
    pub(super) fn open(path: &Path, dir: TempDir) -> Result<Library, ObjectError> {
        let flags = libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL;
        // SAFETY: the library is our linker's output: it has no constructors or destructors
        // (Cranelift emits none, and it is linked with `-nostdlib` semantics), so loading and
        // unloading it runs no code.
        let lib =
            unsafe { libloading::os::unix::Library::open(Some(path), flags) }.map_err(|e| {
                ObjectError::Load {
                    path: path.to_path_buf(),
                    message: loader_message(&e),
                }
            })?;
        Ok(Library {
            lib,
            path: path.to_path_buf(),
            _dir: dir,
        })
    }

    /// The address of `symbol`.
    pub(super) fn symbol(&self, symbol: &str) -> Result<*const u8, ObjectError> {
        let missing = |message: String| ObjectError::MissingSymbol {
            path: self.path.clone(),
            symbol: symbol.to_string(),
            message,
        };
        let name = CString::new(symbol).map_err(|_| missing("the name contains a NUL".into()))?;
        // SAFETY: the symbol is only read as an address (`*const u8`), never called or
        // dereferenced here; it stays valid while `self.lib` is loaded.
        let sym = unsafe { self.lib.get::<*const u8>(name.as_bytes_with_nul()) }
            .map_err(|e| missing(loader_message(&e)))?;
        let addr = *sym;
        if addr.is_null() {
            return Err(missing("it resolves to address 0".into()));
        }
        Ok(addr)
    }
}

/// libloading's error says only "dlopen failed"; `dlerror`'s text (which names the missing
/// symbol or the bad file) is its source.
fn loader_message(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(cause) => cause.to_string(),
        None => e.to_string(),
    }
}
