//! The bridge from checked classes to the object runtime, shared by every backend: the
//! runtime's [`ClassDef`] of a [`hir::Class`], field and method types in the runtime's terms,
//! and the run-time checks on handles that scripts use.
//!
//! Both backends put a program's objects in one [`Runtime`]: `new C()` is
//! [`Runtime::new_object`], a handle is the runtime's 8-byte cell, a field is a cell of the
//! object's state block. So an object made by one backend is the same kind of object the host
//! calls through `Hook`/`Bench`, and a reload migrates it.

use std::ffi::c_void;
use std::sync::Arc;

use crate::lang::hir::{self, ClassId, Program, Type};
use crate::lang::span::Span;
use crate::runtime::class::{
    Class, ClassDef, ClassRef, DefineError, Field, FieldType, Init, MethodDef,
};
use crate::runtime::error::{ScriptError, ScriptErrorKind};
use crate::runtime::handle::Handle;
use crate::runtime::iface::{AbiSig, AbiType};
use crate::runtime::object::Object;
use crate::runtime::reload::{Held, ReloadError, ReloadReport};
use crate::runtime::rt::Runtime;
use crate::runtime::values::ElemKind;

/// What one cell of type `ty` holds and owns ([`ElemKind`]): the one place a script type is
/// mapped to a cell kind (fields, vec elements, arrays of counted values). A new counted kind
/// adds an arm here and in `runtime::values`.
///
/// An array in one cell (a vec's element) is *boxed*: a vec block of its elements (each boxed
/// in turn when it is an array), so it is retained, released, copied on write and shown as a
/// vec (`docs/runtime.md`). In a flat run of cells (a local, a module variable, a closure's
/// captures) an array is its elements' cells instead: see [`cell_kinds`].
pub fn elem_kind(ty: &Type) -> ElemKind {
    match ty {
        Type::F64 => ElemKind::F64,
        Type::Bool => ElemKind::Bool,
        Type::Handle { .. } | Type::Null => ElemKind::Handle,
        Type::Vec(_) | Type::Array(..) => ElemKind::Vec,
        Type::Str => ElemKind::Str,
        Type::Fn { .. } => ElemKind::Fn,
        _ => ElemKind::I64,
    }
}

/// The kind of every cell of a value of type `ty` laid out flat (an array's leaf kind per
/// cell; a packed bool array's cells are `Bool`, see [`Type::cells`]), appended to `out`.
pub fn cell_kinds(ty: &Type, out: &mut Vec<ElemKind>) {
    match ty {
        // Packed, one byte an element: its cells are plain bits.
        Type::Array(elem, _) if **elem == Type::Bool => {
            out.extend((0..ty.cells()).map(|_| ElemKind::Bool));
        }
        Type::Array(elem, n) => {
            for _ in 0..*n {
                cell_kinds(elem, out);
            }
        }
        Type::Unit => {}
        ty => out.push(elem_kind(ty)),
    }
}

/// The cells of a flat value of type `ty` that own a reference: `(cell index, kind)`.
pub fn owned_cells(ty: &Type) -> Vec<(u64, ElemKind)> {
    if !ty.owns_cells() {
        return Vec::new();
    }
    let mut kinds = Vec::new();
    cell_kinds(ty, &mut kinds);
    (0..)
        .zip(kinds)
        .filter(|(_, k)| !matches!(k, ElemKind::I64 | ElemKind::F64 | ElemKind::Bool))
        .collect()
}

/// The runtime's type of a field.
pub fn field_type(ty: &Type) -> FieldType {
    match (ty, elem_kind(ty)) {
        (Type::Handle { name, nullable, .. }, _) => FieldType::Handle {
            class: name.clone(),
            nullable: *nullable,
        },
        (_, ElemKind::I64) => FieldType::I64,
        (_, ElemKind::F64) => FieldType::F64,
        (_, ElemKind::Bool) => FieldType::Bool,
        (_, kind) => FieldType::Counted {
            kind,
            ty: Arc::from(ty.to_string()),
            code: ty.holds_closures(),
        },
    }
}

/// A field's initializer for the runtime: its bits, its text for a non-empty `str`, or an
/// array's leaves.
fn field_init(f: &hir::Field) -> Init {
    let leaf = |bits: u64, text: &Option<String>| match text {
        Some(text) => Init::Text(Arc::from(text.as_str())),
        None => Init::Bits(bits),
    };
    let Some(leaves) = &f.array else {
        return leaf(f.init, &f.text);
    };
    let mut dims = Vec::new();
    let mut ty = &f.ty;
    while let Type::Array(elem, n) = ty {
        dims.push(*n);
        ty = elem;
    }
    Init::Array {
        kind: elem_kind(ty),
        dims: dims.into(),
        leaves: leaves
            .iter()
            .map(|(bits, text)| leaf(*bits, text))
            .collect(),
    }
}

/// The machine type of a parameter or result (`None` for unit).
pub fn abi_type(ty: &Type) -> Option<AbiType> {
    match ty {
        Type::Unit => None,
        Type::F64 => Some(AbiType::F64),
        Type::Bool => Some(AbiType::Bool),
        // i64, and handles as their cell.
        _ => Some(AbiType::I64),
    }
}

/// The method signature (after `vmctx, this`) of a method function, if every type crosses the
/// method ABI (scalars and handles; arrays do not).
pub fn method_sig(program: &Program, func: hir::FuncId) -> Option<AbiSig> {
    let f = program.function(func);
    let mut params = Vec::new();
    for ty in f.param_types().skip(1) {
        if matches!(ty, Type::Array(..)) {
            return None;
        }
        params.push(abi_type(ty)?);
    }
    if matches!(f.ret, Type::Array(..)) {
        return None;
    }
    let cells = f
        .param_types()
        .skip(1)
        .chain([&f.ret])
        .any(|t| !t.is_scalar() && *t != Type::Unit)
        .then(|| {
            let params: Vec<String> = f.param_types().skip(1).map(|t| t.to_string()).collect();
            Arc::from(format!("({}) -> {}", params.join(", "), f.ret))
        });
    Some(AbiSig::new(&params, abi_type(&f.ret)).with_cells(cells))
}

/// The runtime definition of class `id`: its own fields (with their constant initializers) and
/// its own methods and overrides, each with the code `code` gives for it (null leaves the slot
/// empty). Static functions have no slot, and neither has a constructor (`init`): only `new`
/// and `super.init` call it, directly, so a derived class's `init` may take other parameters
/// than its base's (slots share their signature across a class family) and a reload may change
/// its signature.
pub fn class_def<C: Into<MethodCode>>(
    program: &Program,
    id: ClassId,
    parent: Option<ClassRef>,
    vmctx: *mut c_void,
    mut code: impl FnMut(&hir::Method) -> C,
) -> ClassDef {
    let class = program.class(id);
    let inherited = class.parent.map_or(0, |p| program.class(p).fields.len());
    let fields = class.fields[inherited..]
        .iter()
        .map(|f| Field {
            name: Arc::from(f.name.as_str()),
            ty: field_type(&f.ty),
            init: field_init(f),
        })
        .collect();
    let methods = class
        .methods
        .iter()
        .filter(|m| m.owner == id && m.kind != hir::MethodKind::Static && m.name != "init")
        .filter_map(|m| {
            // A method whose types do not cross the ABI (arrays) is called directly only.
            let sig = method_sig(program, m.func)?;
            let made = code(m).into();
            Some(MethodDef {
                name: Arc::from(m.name.as_str()),
                sig,
                code: made.code,
                host_entry: made.host_entry,
            })
        })
        .collect();
    ClassDef {
        name: Arc::from(class.name.as_str()),
        parent,
        fields,
        methods,
        vmctx,
    }
}

/// A method's code for its class's slot, and the host entry made for it (null: none; see
/// [`MethodDef::host_entry`]).
#[derive(Debug, Clone, Copy)]
pub struct MethodCode {
    /// The method's code.
    pub code: *const c_void,
    /// Its host entry, or null.
    pub host_entry: *const c_void,
}

impl From<*const c_void> for MethodCode {
    fn from(code: *const c_void) -> MethodCode {
        MethodCode {
            code,
            host_entry: std::ptr::null(),
        }
    }
}

/// Define every class of `program` in `runtime` (parents first), in `ClassId` order.
pub fn define_classes<C: Into<MethodCode>>(
    runtime: &Runtime,
    program: &Program,
    vmctx: *mut c_void,
    mut code: impl FnMut(&hir::Method) -> C,
) -> Result<Vec<ClassRef>, DefineError> {
    let mut out: Vec<ClassRef> = Vec::with_capacity(program.classes.len());
    for (i, class) in program.classes.iter().enumerate() {
        let parent = class.parent.map(|p| out[p.index()].clone());
        let def = class_def(program, ClassId(i as u32), parent, vmctx, &mut code);
        out.push(runtime.define(def)?);
    }
    Ok(out)
}

/// The object a handle cell refers to, or the error (null, stale, detached) at `span`.
///
/// # Safety
/// `cell` must be 0 or a handle cell that owns a reference for at least the returned borrow.
pub unsafe fn check_cell<'a>(cell: u64, span: Span) -> Result<&'a Object, ScriptError> {
    let borrowed = std::mem::ManuallyDrop::new(
        // SAFETY: the caller keeps the cell's reference; `ManuallyDrop` never releases it.
        unsafe { Handle::from_cell(cell) },
    );
    let obj: *const Object = match borrowed.get() {
        Ok(obj) => obj,
        Err(mut e) => {
            e.span = span;
            return Err(e);
        }
    };
    // SAFETY: the caller's reference keeps the shell allocated for `'a`.
    let obj = unsafe { &*obj };
    if !obj.is_attached() {
        return Err(ScriptError::new(ScriptErrorKind::ObjectDetached, span));
    }
    Ok(obj)
}

/// Whether `obj`'s class is `class` or derives from it (`o is D`, `o as? D`).
pub fn instance_of(obj: &Object, class: &ClassRef) -> bool {
    let target: &Class = class;
    let mut c = Some(obj.class());
    while let Some(k) = c {
        if std::ptr::eq(k, target) {
            return true;
        }
        c = k.parent().map(|p| &**p);
    }
    false
}

/// Shells of every class not freed yet: 0 once every handle went (the leak check).
pub fn shell_count(classes: &[ClassRef]) -> usize {
    classes.iter().map(|c| c.shell_count()).sum()
}

/// The virtual methods of a program as `(class, method)` pairs: a virtual call site reads the
/// slot offset of its pair from [`ProgramObjects::slot_offsets`] at this index.
pub fn virtual_methods(program: &Program) -> Vec<(ClassId, String)> {
    let mut out = Vec::new();
    for (i, class) in program.classes.iter().enumerate() {
        for m in &class.methods {
            if m.is_virtual() {
                out.push((ClassId(i as u32), m.name.clone()));
            }
        }
    }
    out
}

/// What generated code reaches of the object runtime: the runtime, the program's classes by
/// `ClassId`, and the byte offset in a class of each virtual method's slot. Boxed by its owner
/// (generated code embeds its address and the table's), filled once the code is finalized.
pub struct ProgramObjects {
    /// The runtime the objects live in (shared with later versions of the program).
    pub runtime: Arc<Runtime>,
    /// The runtime class of each program class.
    pub classes: Vec<ClassRef>,
    /// `Class::SLOTS + 8 * slot` of each [`virtual_methods`] pair (0 until filled).
    pub slot_offsets: Box<[u64]>,
}

impl ProgramObjects {
    /// Objects for `program` in `runtime`, classes not defined yet.
    pub fn new(runtime: Arc<Runtime>, program: &Program) -> ProgramObjects {
        ProgramObjects {
            runtime,
            classes: Vec::new(),
            slot_offsets: vec![0; virtual_methods(program).len().max(1)].into_boxed_slice(),
        }
    }

    /// Record the classes and fill the slot offsets of the virtual methods.
    pub fn install(&mut self, program: &Program, classes: Vec<ClassRef>) {
        for (k, (class, method)) in virtual_methods(program).iter().enumerate() {
            // A virtual method whose types do not cross the ABI has no slot; its calls are
            // refused by the checker's rules (arrays in methods are called directly), so 0.
            if let Some(slot) = classes[class.index()].slot_of(method) {
                self.slot_offsets[k] =
                    (crate::runtime::class::Class::SLOTS + 8 * slot.get()) as u64;
            }
        }
        self.classes = classes;
    }

    /// A method of an installed class whose slot holds no code (`Class.method`), if any. Never,
    /// for a program just installed: every method has a body (the language has no abstract
    /// methods) and a class's slots point at its own code or its parent's. `jit-opt` code calls
    /// a fixed runtime's slots without testing them for empty, so its install checks this.
    pub fn empty_slot(&self) -> Option<String> {
        self.classes.iter().find_map(|class| {
            let v = class.version();
            v.methods.iter().enumerate().find_map(|(i, m)| {
                let (name, _) = m.as_ref()?;
                let slot = crate::runtime::class::SlotIndex::new(i)?;
                class
                    .slot(slot)
                    .is_null()
                    .then(|| format!("{}.{}", class.name(), name))
            })
        })
    }
}

/// The cells of a shared library (the `object` backend) through which its position-independent
/// code finds a program's objects: `objects` holds the address of the [`ProgramObjects`], and
/// `slot_table` has room for its [`ProgramObjects::slot_offsets`]. Both are zero until bound.
pub struct LibraryObjects {
    /// The library's `hot.objects` cell.
    pub objects: *mut u64,
    /// The library's `hot.slot_offsets` table.
    pub slot_table: *mut u64,
    /// Cells in `slot_table`.
    pub slot_table_len: usize,
}

impl ProgramObjects {
    /// Bind a loaded library's cells to these (installed) objects: its code then makes objects
    /// in this runtime and dispatches through these slot offsets, exactly as JIT code that
    /// embeds the addresses does. Fails if the library's table has another size (it was
    /// built for another program).
    ///
    /// # Safety
    /// The cells must be writable data of a loaded library that no code is running at the
    /// moment, and `self` must stay at its address (boxed) while the library's code can run.
    pub unsafe fn bind_library(&self, cells: &LibraryObjects) -> Result<(), ObjectsError> {
        if cells.slot_table_len != self.slot_offsets.len() {
            return Err(ObjectsError::SlotTable {
                library: cells.slot_table_len,
                program: self.slot_offsets.len(),
            });
        }
        // SAFETY: the caller's contract: both point to writable cells of the library, the
        // table `slot_table_len` cells long, and nothing reads them concurrently.
        unsafe {
            *cells.objects = self as *const ProgramObjects as u64;
            std::ptr::copy_nonoverlapping(
                self.slot_offsets.as_ptr(),
                cells.slot_table,
                cells.slot_table_len,
            );
        }
        Ok(())
    }
}

/// Why the runtime could not take a program's classes.
#[derive(Debug, thiserror::Error)]
pub enum ObjectsError {
    /// A loaded library was built for another program.
    #[error("the library's slot table has {library} cells, the program needs {program}")]
    SlotTable {
        /// The library's cells.
        library: usize,
        /// The program's slots.
        program: usize,
    },
    /// A method's slot holds no code where generated code calls slots untested.
    #[error("method `{0}` has no code in its class's slot")]
    EmptySlot(String),
    /// A reload gives a class another base class.
    #[error("class `{0}` cannot change its base class in a reload")]
    ParentChanged(String),
    /// A reload gives a method another signature.
    #[error("method `{class}.{method}` cannot change its signature in a reload")]
    SignatureChanged {
        /// The class.
        class: String,
        /// The method.
        method: String,
    },
    /// The runtime refused a first definition.
    #[error(transparent)]
    Define(#[from] DefineError),
    /// The runtime refused the reload as a whole.
    #[error("cannot reload: {0}")]
    Reload(ReloadError),
    /// The runtime refused one class of a reload.
    #[error("cannot {what} class `{class}`: {error}")]
    Class {
        /// `reload`, `define` or `unload`.
        what: &'static str,
        /// The class.
        class: String,
        /// The runtime's reason.
        error: ReloadError,
    },
}

/// Refuse, before anything changes, what [`Runtime::reload`] would refuse half-way through a
/// program's classes: a class that changes its parent, a method that changes its signature.
/// Every backend's reload runs this first.
pub fn reload_precheck(runtime: &Runtime, program: &Program) -> Result<(), ObjectsError> {
    for (i, class) in program.classes.iter().enumerate() {
        let Some(existing) = loaded_class(runtime, &class.name) else {
            continue;
        };
        let parent = class.parent.map(|p| program.class(p).name.as_str());
        if existing.parent().map(|p| p.name()) != parent {
            return Err(ObjectsError::ParentChanged(class.name.clone()));
        }
        let def = class_def(
            program,
            ClassId(i as u32),
            None,
            std::ptr::null_mut(),
            |_| std::ptr::null::<c_void>(),
        );
        for m in &def.methods {
            let old = existing.version().methods.iter().flatten();
            if let Some((_, sig)) = old.into_iter().find(|(n, _)| **n == *m.name)
                && *sig != m.sig
            {
                return Err(ObjectsError::SignatureChanged {
                    class: class.name.clone(),
                    method: m.name.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// The class named `name` that a new version reloads: the runtime's, unless it was unloaded (a
/// version dropped it), in which case a version that has it again defines it anew.
fn loaded_class(runtime: &Runtime, name: &str) -> Option<ClassRef> {
    runtime.class(name).filter(|c| !c.is_unloaded())
}

/// The classes of `program` that `runtime` does not have yet (a reload defines them).
pub fn new_class_names(runtime: &Runtime, program: &Program) -> Vec<String> {
    program
        .classes
        .iter()
        .filter(|c| loaded_class(runtime, &c.name).is_none())
        .map(|c| c.name.clone())
        .collect()
}

/// Define or reload every class of `program` in `runtime` (parents first, in `ClassId`
/// order): the classes the runtime already has (by name) are reloaded with these definitions
/// and the others defined, all in one step ([`Runtime::begin_reload`]: their live objects
/// migrate, and the reports say how); a class the runtime has and `program` does not define is
/// unloaded (its objects destroyed), because after a reload no code of the version it replaced
/// runs again. On error nothing changed. Every backend installs a program's classes through
/// this.
pub fn install_classes<C: Into<MethodCode>>(
    runtime: &Runtime,
    program: &Program,
    vmctx: *mut c_void,
    mut code: impl FnMut(&hir::Method) -> C,
) -> Result<Installed, ObjectsError> {
    let existing: Vec<Option<ClassRef>> = program
        .classes
        .iter()
        .map(|c| loaded_class(runtime, &c.name))
        .collect();
    let dropped: Vec<ClassRef> = runtime
        .classes()
        .into_iter()
        .filter(|c| !c.is_unloaded() && !program.classes.iter().any(|p| *p.name == *c.name()))
        .collect();
    if existing.iter().all(Option::is_none) && dropped.is_empty() {
        // A first definition: nothing runs that could see it half done.
        let classes = define_classes(runtime, program, vmctx, code)?;
        return Ok(Installed {
            classes,
            reports: Vec::new(),
            held: None,
        });
    }
    // A new version: one transaction, with every call stopped until it is done or undone.
    let mut tx = runtime.begin_reload().map_err(ObjectsError::Reload)?;
    let mut classes: Vec<ClassRef> = Vec::with_capacity(program.classes.len());
    for (i, class) in program.classes.iter().enumerate() {
        let parent = class.parent.map(|p| classes[p.index()].clone());
        let def = class_def(program, ClassId(i as u32), parent, vmctx, &mut code);
        let made = match &existing[i] {
            Some(made) => tx
                .reload(made, def)
                .map(|()| made.clone())
                .map_err(|error| ObjectsError::Class {
                    what: "reload",
                    class: class.name.clone(),
                    error,
                })?,
            None => tx.define(def).map_err(|error| ObjectsError::Class {
                what: "define",
                class: class.name.clone(),
                error,
            })?,
        };
        classes.push(made);
    }
    for class in &dropped {
        tx.unload(class).map_err(|error| ObjectsError::Class {
            what: "unload",
            class: class.name().to_string(),
            error,
        })?;
    }
    let (reports, held) = tx.commit_held().map_err(ObjectsError::Reload)?;
    Ok(Installed {
        classes,
        reports,
        held: Some(held),
    })
}

/// Run `<init>` (`init`) of a program just installed, then let calls in (`held`). A program a
/// reload installed stays alive when `<init>` fails: the runtime's classes run its code.
pub fn init_installed<T>(
    made: T,
    held: Option<Held>,
    init: impl FnOnce(&T) -> Result<crate::backend::Value, ScriptError>,
) -> Result<T, ScriptError> {
    let result = init(&made);
    let reloaded = held.is_some();
    drop(held);
    match result {
        Ok(_) => Ok(made),
        Err(e) => {
            if reloaded {
                std::mem::forget(made);
            }
            Err(e)
        }
    }
}

/// What [`install_classes`] did.
pub struct Installed {
    /// The runtime classes, by `ClassId`.
    pub classes: Vec<ClassRef>,
    /// One report per class reloaded or unloaded.
    pub reports: Vec<ReloadReport>,
    /// For a reload: calls from other threads held out until the caller has switched to the
    /// new program (its tables, `<init>`, module variables) and drops this.
    pub held: Option<Held>,
}

#[cfg(test)]
mod tests {
    use std::ffi::c_void;
    use std::sync::Arc;

    use super::ProgramObjects;
    use crate::runtime::class::hook_class_def;
    use crate::runtime::rt::Runtime;

    extern "C-unwind" fn nine(_: *mut c_void, _: *const c_void) -> i64 {
        9
    }

    /// `empty_slot` names a method whose slot holds no code (what jit-opt's install refuses,
    /// since its virtual calls do not test the slot), and nothing when every slot has code.
    #[test]
    fn empty_slot_names_the_method_without_code() {
        let rt = Arc::new(Runtime::fixed());
        let source = crate::lang::span::SourceFile::new("t.hot", "fn main() -> i64 { return 0 }");
        let program = crate::lang::compile(Arc::new(source)).expect("a program");
        for (code, expected) in [
            (nine as *const c_void, None),
            (std::ptr::null(), Some("C.call".to_string())),
        ] {
            let class = rt.define(hook_class_def(code)).unwrap();
            let mut objects = ProgramObjects::new(Arc::clone(&rt), &program);
            objects.install(&program, vec![class]);
            assert_eq!(objects.empty_slot(), expected);
        }
    }
}
