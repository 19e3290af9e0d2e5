//! Hot reload in the interpreter: [`Interp::reload`] replaces the running program with a new
//! version, with the semantics of the JIT's [`ScriptModule::reload`]:
//!
//! - the classes of the new version that the runtime already has are reloaded through the same
//!   runtime path as the JIT's ([`install_classes`], in one step): their live objects migrate
//!   (fields with the same name and type keep their values, new ones take their initializers,
//!   removed ones go, retyped ones and ones holding closures are re-initialized and reported),
//!   handles stay valid, and the host's calls through `Hook`/`Bench` and every call from script
//!   code reach the new version's methods; new classes are defined;
//! - the new version's `<init>` runs, then module variables with the same name and type in both
//!   versions take their old values (handles included; not closures);
//! - `fn after_reload()`, if the new version has one, runs and its result is reported.
//!
//! A version the runtime would refuse (a class changing its parent, a method its signature)
//! changes nothing. As on the JIT, no code of the replaced version runs again: a class the new
//! version drops is unloaded (its objects destroyed), and no value keeps an old closure.
//!
//! [`ScriptModule::reload`]: crate::backend::jit::ScriptModule::reload

use std::ffi::c_void;

use super::{Interp, objects};
use crate::backend::jit::module::{AFTER_RELOAD, ReloadFailure, ReloadOutcome, ReloadRefusal};
use crate::backend::objects::{install_classes, new_class_names, reload_precheck};
use crate::lang::hir::Program;
use crate::runtime::{ScriptError, ScriptErrorKind};

impl<'p> Interp<'p> {
    /// Replace the running program with `next`, a new version of it (see the module docs).
    /// On a refusal nothing changed; on a failing `<init>` or `after_reload` the classes were
    /// already reloaded (as on the JIT) and the error is returned.
    pub fn reload(&mut self, next: &'p Program) -> Result<ReloadOutcome, ReloadFailure> {
        reload_precheck(&self.runtime, next).map_err(ReloadRefusal::Classes)?;
        // Module variables past the memory limit: refused before anything changes, with the
        // error the compiled backends give (which report it as theirs).
        crate::backend::jit::compile::globals_fit(next)
            .map_err(|e| ReloadFailure::Jit(crate::backend::jit::JitError::Init(e)))?;
        let defined = new_class_names(&self.runtime, next);
        let link: *const objects::HostLink = &**self
            .host
            .as_ref()
            .expect("the link lives with the interpreter");
        let vmctx = link as *mut c_void;
        let installed =
            install_classes(&self.runtime, next, vmctx, |m| objects::slot_code(next, m))
                .map_err(ReloadRefusal::Classes)?;
        self.classes = installed.classes;

        // The new version runs from here: its `<init>` fills a fresh set of module variables,
        // then the kept ones take their old values (the replaced values are dropped).
        let old = std::mem::replace(&mut self.program, next);
        // By the new version's `FuncId`s (a lambda past the old count indexed out of bounds).
        self.closure_names = vec![None; next.functions.len()];
        let old_globals = std::mem::replace(&mut self.globals, super::initial_globals(next));
        // The classes run the new version from here: the module variables kept carry over even
        // if `<init>` raises (then reported), as on the JIT.
        let init = self.call(next.init, &[]);
        let mut globals_kept = Vec::new();
        for (i, g) in next.globals.iter().enumerate() {
            let kept = old
                .globals
                .iter()
                .position(|o| o.name == g.name && o.ty.to_string() == g.ty.to_string())
                .filter(|_| !g.ty.holds_closures());
            if let Some(k) = kept {
                self.globals[i] = old_globals[k].clone();
                globals_kept.push(g.name.clone());
            }
        }
        drop(old_globals);
        // Other threads' calls come in only now, to the new version whole.
        drop(installed.held);
        let applied = ReloadOutcome {
            classes: installed.reports,
            defined,
            globals_kept,
            after_reload: None,
        };
        applied.finish(init, || {
            let f = next.function_named(AFTER_RELOAD)?;
            let params = next.function(f).param_count;
            Some(if params > 0 {
                Err(ScriptError::new(
                    ScriptErrorKind::BadCall(format!(
                        "`{AFTER_RELOAD}` takes {params} argument(s); a reload calls it with none"
                    )),
                    next.function(f).name_span,
                ))
            } else {
                self.call(f, &[])
            })
        })
    }

    /// The program the interpreter runs now (the latest version after a reload).
    pub fn program(&self) -> &'p Program {
        self.program
    }
}
