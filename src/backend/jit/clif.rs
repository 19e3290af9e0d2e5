//! `.clif` files: raw Cranelift IR compiled in the same JIT, the second script mode.
//!
//! # Conventions
//! - Functions are named `%name` (or `u0:N`, shown as `u0:N`) and run by that name.
//! - A call to a **host function** is `fnK = u0:N sig`, where `N` is the function's index in
//!   [`host_table`] (`u0:0` is `sink`, `u0:1` is `sinkf`, `u0:2` is `sqrt`): the JIT declares
//!   them first, in table order. The declared signature must match the host's.
//! - A call to **another function of the same file** is `fnK = %name sig`.
//! - Parameters and results may be `i8`..`i64`, `f32` or `f64`; narrow integer results are
//!   sign-extended.
//! - Every function is verified, whatever the JIT's verifier option, because the IR was
//!   written by hand. There are no run-time checks: a division by zero or a bad load in a
//!   `.clif` function traps the process (run it in a worker).

use std::cell::Cell;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use cranelift_codegen::ir::{
    self, ExternalName, GlobalValueData, UserExternalName, UserFuncName, types,
};
use cranelift_module::{FuncId, Linkage, Module};

use crate::backend::Value;
use crate::lang::span::Span;
use crate::runtime::host::host_table;

use super::call::call_entry;
use super::compile::Lowered;
use super::entry::{ArgSource, build_entry, entry_signature};
use super::helper_table::VmCtx;
use super::{CodeKeeper, CompiledFunction, Jit, JitError};

/// One function of a `.clif` file.
#[derive(Debug, Clone)]
pub struct ClifFunction {
    /// Its name (without `%`).
    pub name: String,
    /// Parameter types.
    pub params: Vec<ir::Type>,
    /// Result types.
    pub returns: Vec<ir::Type>,
    /// Its machine code, IR and timings.
    pub code: CompiledFunction,
    entry: CompiledFunction,
}

/// A compiled `.clif` file. `Send` but not `Sync`: its code may keep state anywhere.
pub struct ClifProgram {
    functions: Vec<ClifFunction>,
    _keeper: Arc<CodeKeeper>,
    _not_sync: PhantomData<Cell<()>>,
}

/// Why a `.clif` text could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClifError {
    /// Cranelift's reader refused the text.
    #[error("cannot parse .clif (line {line}): {message}")]
    Parse {
        /// The line (1-based).
        line: usize,
        /// The reader's message.
        message: String,
    },
    /// No function in the text.
    #[error("the .clif text defines no function")]
    Empty,
    /// Two functions with one name.
    #[error("function `{0}` is defined twice")]
    DefinedTwice(String),
    /// A problem in one function.
    #[error("`{function}`: {problem}")]
    InFunction {
        /// The function.
        function: String,
        /// What is wrong with it.
        problem: ClifProblem,
    },
}

/// What is wrong with one function of a `.clif` text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClifProblem {
    /// A parameter or result type the host border cannot carry.
    #[error("type {0} cannot cross the host border (use i8..i64, f32, f64)")]
    BorderType(String),
    /// The module refused a declaration.
    #[error("{0}")]
    Declare(String),
    /// A symbol global value.
    #[error("symbol global values are not supported in .clif scripts")]
    SymbolGlobal,
    /// A call of `u{namespace}:{index}` that is no host function.
    #[error(
        "`{callee}` calls u{namespace}:{index}, which is not a host function (hosts are \
         u0:0..u0:{last}: {hosts}); call this file's functions by %name"
    )]
    NotAHost {
        /// The function reference (`fnK`).
        callee: String,
        /// Its namespace.
        namespace: u32,
        /// Its index.
        index: u32,
        /// The last host index.
        last: usize,
        /// The host functions' names.
        hosts: String,
    },
    /// A call of a `%name` the file does not define.
    #[error("`{callee}` calls %{name}, which this file does not define")]
    Undefined {
        /// The function reference (`fnK`).
        callee: String,
        /// The name it calls.
        name: String,
    },
    /// A libcall this process does not have.
    #[error("libcall `{0}` is not available in this process")]
    NoLibcall(String),
    /// A known symbol.
    #[error("known symbol {0} is not supported in .clif scripts")]
    KnownSymbol(String),
    /// A call declared with another signature than its callee's.
    #[error("`{callee}` is declared as {declared}, but the function is {actual}")]
    WrongSignature {
        /// The function reference (`fnK`).
        callee: String,
        /// The signature the call declares.
        declared: String,
        /// The callee's.
        actual: String,
    },
}

fn in_function(function: &str, problem: ClifProblem) -> JitError {
    JitError::Clif(ClifError::InFunction {
        function: function.to_string(),
        problem,
    })
}

fn func_name(name: &UserFuncName) -> String {
    match name {
        UserFuncName::Testcase(t) => String::from_utf8_lossy(t.raw()).into_owned(),
        UserFuncName::User(u) => format!("u{}:{}", u.namespace, u.index),
    }
}

fn cell_type(ty: ir::Type) -> bool {
    matches!(
        ty,
        types::I8 | types::I16 | types::I32 | types::I64 | types::F32 | types::F64
    )
}

impl Jit {
    /// Parse, verify and compile every function of a `.clif` text (see the module docs).
    pub fn load_clif(&mut self, text: &str) -> Result<ClifProgram, JitError> {
        let parsed = cranelift_reader::parse_functions(text).map_err(|e| {
            JitError::Clif(ClifError::Parse {
                line: e.location.line_number,
                message: e.message.clone(),
            })
        })?;
        if parsed.is_empty() {
            return Err(JitError::Clif(ClifError::Empty));
        }
        let serial = self.next_serial();
        let mut ids: HashMap<String, (FuncId, ir::Signature)> = HashMap::new();
        let mut names = Vec::new();
        for f in &parsed {
            let name = func_name(&f.name);
            if ids.contains_key(&name) {
                return Err(JitError::Clif(ClifError::DefinedTwice(name)));
            }
            for ty in f.signature.params.iter().chain(&f.signature.returns) {
                if !cell_type(ty.value_type) {
                    return Err(in_function(
                        &name,
                        ClifProblem::BorderType(ty.value_type.to_string()),
                    ));
                }
            }
            let id = self
                .module
                .declare_function(
                    &format!("clif.p{serial}.{name}"),
                    Linkage::Local,
                    &f.signature,
                )
                .map_err(|e| in_function(&name, ClifProblem::Declare(e.to_string())))?;
            ids.insert(name.clone(), (id, f.signature.clone()));
            names.push(name);
        }

        let mut lowered = Vec::with_capacity(parsed.len() * 2);
        let mut entries = Vec::with_capacity(parsed.len());
        for (mut func, name) in parsed.into_iter().zip(&names) {
            self.link_imports(&mut func, name, &ids)?;
            let (id, sig) = &ids[name];
            func.name = UserFuncName::user(0, id.as_u32());
            let entry = self
                .module
                .declare_function(
                    &format!("clif.p{serial}.{name}.entry"),
                    Linkage::Local,
                    &entry_signature(self.call_conv),
                )
                .map_err(|e| in_function(name, ClifProblem::Declare(e.to_string())))?;
            entries.push((entry, *id, sig.clone(), name.clone()));
            lowered.push(Lowered {
                id: *id,
                name: name.clone(),
                symbol: format!("clif.p{serial}.{name}"),
                func,
                lower_time: Duration::ZERO,
                verify: true,
                returns_from_handlers: false,
            });
        }
        for (entry, target, sig, name) in &entries {
            let mut func = ir::Function::with_name_signature(
                UserFuncName::user(0, entry.as_u32()),
                entry_signature(self.call_conv),
            );
            let args: Vec<ArgSource> = sig
                .params
                .iter()
                .enumerate()
                .map(|(i, p)| ArgSource::Cell {
                    cell: i as u64,
                    ty: p.value_type,
                })
                .collect();
            build_entry(&mut func, &mut self.fctx, &mut *self.module, *target, &args);
            lowered.push(Lowered {
                id: *entry,
                name: format!("{name}.entry"),
                symbol: format!("clif.p{serial}.{name}.entry"),
                func,
                lower_time: Duration::ZERO,
                verify: true,
                returns_from_handlers: false,
            });
        }
        let mut compiled = self.define_and_finalize(lowered, None)?;
        let entry_code = compiled.split_off(names.len());
        let functions = compiled
            .into_iter()
            .zip(entry_code)
            .zip(&names)
            .map(|((code, entry), name)| {
                let sig = &ids[name].1;
                ClifFunction {
                    name: name.clone(),
                    params: sig.params.iter().map(|p| p.value_type).collect(),
                    returns: sig.returns.iter().map(|p| p.value_type).collect(),
                    code,
                    entry,
                }
            })
            .collect();
        Ok(ClifProgram {
            functions,
            _keeper: self.keeper(),
            _not_sync: PhantomData,
        })
    }

    /// Point `fnK = u0:N` at host function N and `fnK = %name` at this file's function.
    fn link_imports(
        &self,
        func: &mut ir::Function,
        name: &str,
        ids: &HashMap<String, (FuncId, ir::Signature)>,
    ) -> Result<(), JitError> {
        for gv in func.global_values.values() {
            if let GlobalValueData::Symbol { .. } = gv {
                return Err(in_function(name, ClifProblem::SymbolGlobal));
            }
        }
        let refs: Vec<ir::FuncRef> = func.dfg.ext_funcs.keys().collect();
        for r in refs {
            let ext = func.dfg.ext_funcs[r].clone();
            let sig = func.dfg.signatures[ext.signature].clone();
            let (target, want) = match &ext.name {
                ExternalName::User(u) => {
                    let user = func.params.user_named_funcs()[*u].clone();
                    match self.hosts.get(user.index as usize) {
                        Some(&id) if user.namespace == 0 => {
                            let decl = self.module.declarations().get_function_decl(id);
                            (id, decl.signature.clone())
                        }
                        _ => {
                            let hosts: Vec<&str> =
                                host_table().iter().map(|h| h.sig.name).collect();
                            return Err(in_function(
                                name,
                                ClifProblem::NotAHost {
                                    callee: r.to_string(),
                                    namespace: user.namespace,
                                    index: user.index,
                                    last: host_table().len().saturating_sub(1),
                                    hosts: hosts.join(", "),
                                },
                            ));
                        }
                    }
                }
                ExternalName::TestCase(t) => {
                    let callee = String::from_utf8_lossy(t.raw()).into_owned();
                    match ids.get(&callee) {
                        Some((id, sig)) => (*id, sig.clone()),
                        None => {
                            return Err(in_function(
                                name,
                                ClifProblem::Undefined {
                                    callee: r.to_string(),
                                    name: callee,
                                },
                            ));
                        }
                    }
                }
                ExternalName::LibCall(libcall) => {
                    // The JIT resolves libcalls with dlsym at finalize time and panics when one
                    // is missing: check first.
                    let symbol = (cranelift_module::default_libcall_names())(*libcall);
                    if !symbol_exists(&symbol) {
                        return Err(in_function(name, ClifProblem::NoLibcall(symbol)));
                    }
                    continue;
                }
                ExternalName::KnownSymbol(k) => {
                    return Err(in_function(
                        name,
                        ClifProblem::KnownSymbol(format!("{k:?}")),
                    ));
                }
            };
            if sig.params != want.params || sig.returns != want.returns {
                return Err(in_function(
                    name,
                    ClifProblem::WrongSignature {
                        callee: r.to_string(),
                        declared: sig.to_string(),
                        actual: want.to_string(),
                    },
                ));
            }
            let user = func.declare_imported_user_function(UserExternalName {
                namespace: 0,
                index: target.as_u32(),
            });
            let data = &mut func.dfg.ext_funcs[r];
            data.name = ExternalName::User(user);
            // Host functions may be anywhere in the address space: call them through a
            // register, never with a 32-bit displacement.
            data.colocated = matches!(ext.name, ExternalName::TestCase(_));
        }
        Ok(())
    }
}

/// Whether the dynamic linker can find `symbol` in this process.
fn symbol_exists(symbol: &str) -> bool {
    let Ok(c) = std::ffi::CString::new(symbol) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string; RTLD_DEFAULT searches the loaded objects
    // and the result is only compared with null.
    !unsafe { libc::dlsym(libc::RTLD_DEFAULT, c.as_ptr()) }.is_null()
}

impl ClifProgram {
    /// The functions, in file order.
    pub fn functions(&self) -> &[ClifFunction] {
        &self.functions
    }

    /// A function by name (without `%`).
    pub fn function(&self, name: &str) -> Option<&ClifFunction> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// Run function `name` with `args` (`Value::I64` for integer parameters, `Value::F64`
    /// for float ones); returns one value per result.
    pub fn run(&self, name: &str, args: &[Value]) -> Result<Vec<Value>, JitError> {
        let f = self
            .function(name)
            .ok_or_else(|| JitError::UnknownFunction(name.to_string()))?;
        let bad = |message: String| JitError::BadCall {
            function: name.to_string(),
            message,
        };
        if args.len() != f.params.len() {
            return Err(bad(format!(
                "takes {} argument(s), got {}",
                f.params.len(),
                args.len()
            )));
        }
        let mut cells = Vec::with_capacity(args.len());
        for (i, (arg, ty)) in args.iter().zip(&f.params).enumerate() {
            let cell = match (arg, *ty) {
                (Value::I64(x), t) if t.is_int() => *x as u64,
                (Value::Bool(b), t) if t.is_int() => u64::from(*b),
                (Value::F64(x), types::F64) => x.to_bits(),
                (Value::F64(x), types::F32) => u64::from((*x as f32).to_bits()),
                (arg, ty) => {
                    return Err(bad(format!("argument {} must be {ty}, got {arg}", i + 1)));
                }
            };
            cells.push(cell);
        }
        let mut out = vec![0u64; f.returns.len().max(1)];
        let mut ctx = VmCtx::for_current_thread(&[], 0);
        // SAFETY: `entry` is this file's finalized trampoline for `f`, alive while `self` (and
        // its keeper) lives; `cells` holds one cell per parameter and `out` one per result.
        unsafe {
            call_entry(
                f.entry.addr as *const u8,
                &mut ctx,
                &cells,
                &mut out,
                Span::default(),
            )
        }
        .map_err(JitError::Run)?;
        Ok(f.returns
            .iter()
            .zip(out)
            .map(|(ty, cell)| match *ty {
                types::F64 => Value::F64(f64::from_bits(cell)),
                types::F32 => Value::F64(f64::from(f32::from_bits(cell as u32))),
                _ => Value::I64(cell as i64),
            })
            .collect())
    }
}
