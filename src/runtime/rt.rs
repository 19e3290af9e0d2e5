//! The runtime: the classes of a program and the operations on their objects that are not calls
//! (define, `new`, destroy, detach, host field access). Reload, unload and collect are in
//! `reload.rs`.

use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};

use crate::runtime::border::{class_enter, fused_enter};
use crate::runtime::class::{
    CellKind, Class, ClassDef, ClassRef, DETACHED_KEY, DefineError, FieldType,
};
use crate::runtime::counts::CountOwner;
use crate::runtime::depth::current_thread_in_call;
use crate::runtime::error::{ScriptError, ScriptErrorKind};
use crate::runtime::handle::Handle;
use crate::runtime::object::{self, Object};

/// Destroyed objects wait this many at most before `destroy` collects them itself.
const RETIRED_BATCH: usize = 64;

/// The classes of a program and their objects.
///
/// Without the `thread-safe` feature a runtime, its classes and its handles are neither `Send`
/// nor `Sync`: everything stays on one thread, and the live lists need no lock.
pub struct Runtime {
    pub(crate) classes: Mutex<Vec<ClassRef>>,
    /// Held by the operations that stop script code (reload, unload, collect): one at a time.
    pub(crate) admin: Mutex<()>,
    /// Set while a committed reload holds calls out past its admin lock
    /// ([`Held`](crate::runtime::reload::Held)): the next quiesce waits for it to go.
    pub(crate) held: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Destroyed objects whose state waits for a point where no call can be using it.
    pub(crate) retired: Mutex<Vec<Handle>>,
    /// Fixed: classes keep their fields inline in the shell and cannot be reloaded.
    fixed: bool,
    /// Who may change its objects' counts with plain instructions (`runtime::counts`).
    counts: std::sync::Arc<CountOwner>,
}

impl Default for Runtime {
    fn default() -> Self {
        Runtime::new()
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Runtime {
    /// An empty runtime.
    pub fn new() -> Runtime {
        let mut rt = Runtime::fixed();
        rt.fixed = false;
        rt
    }

    /// An empty *fixed* runtime (the `jit-opt` backend's): its classes' objects are one
    /// allocation each, the shell followed by the field cells
    /// ([`Object::INLINE_CELLS`](crate::runtime::object::Object::INLINE_CELLS)), so generated
    /// code reaches a field at a constant offset from the shell; a reload of its classes is
    /// refused ([`ReloadError::Fixed`](crate::runtime::reload::ReloadError::Fixed)), since
    /// nothing could migrate the fields. Everything else (handles, destroy, unload, host
    /// calls and field access) works as in [`Runtime::new`].
    pub fn fixed() -> Runtime {
        Runtime {
            classes: Mutex::new(Vec::new()),
            admin: Mutex::new(()),
            held: std::sync::Arc::default(),
            retired: Mutex::new(Vec::new()),
            fixed: true,
            counts: std::sync::Arc::new(CountOwner::new()),
        }
    }

    /// Who may change this runtime's object counts with plain instructions now: `unclaimed`,
    /// `owned by this thread`, `owned by another thread` or `shared` (`runtime::counts`).
    pub fn counts(&self) -> &'static str {
        self.counts.describe()
    }

    /// The owner of its objects' counts, which its classes share (generated code bakes its
    /// address in: it lives as long as the runtime).
    pub(crate) fn counts_owner(&self) -> *const CountOwner {
        std::sync::Arc::as_ptr(&self.counts)
    }

    /// Whether this runtime is [`Runtime::fixed`].
    pub fn is_fixed(&self) -> bool {
        self.fixed
    }

    /// Define a class. Its address is stable for the runtime's life.
    pub fn define(&self, def: ClassDef) -> Result<ClassRef, DefineError> {
        let mut class = Class::from_def(&def)?;
        if self.fixed {
            class.set_inline();
        }
        class.set_counts(self.counts.clone());
        let class = ClassRef::new(class);
        lock(&self.classes).push(class.clone());
        Ok(class)
    }

    /// Every class defined so far, in definition order (unloaded ones included; a name defined
    /// again after an unload appears twice, the newest last).
    pub fn classes(&self) -> Vec<ClassRef> {
        lock(&self.classes).clone()
    }

    /// A defined class by name (the latest definition of that name).
    pub fn class(&self, name: &str) -> Option<ClassRef> {
        lock(&self.classes)
            .iter()
            .rev()
            .find(|c| c.name() == name)
            .cloned()
    }

    /// `new C()`: a shell and a state block with every field initialized, on the live list. Runs
    /// as a call of the class (it waits out a pending reload); an initializer that raises gives
    /// `Err` and leaves nothing behind.
    pub fn new_object(&self, class: &ClassRef) -> Result<Handle, ScriptError> {
        self.check_owner(class);
        let made = class_enter(class, || {
            if class.is_unloaded() {
                return Err(Box::new(ScriptError::new(
                    ScriptErrorKind::ClassUnloaded(class.name().to_string()),
                    Default::default(),
                )));
            }
            object::new_object(class)
        });
        // Boxed errors all the way (see `border::Fault`); unboxed once, here.
        made.map_err(|e| *e)
    }

    fn check_owner(&self, class: &ClassRef) {
        debug_assert!(
            lock(&self.classes)
                .iter()
                .any(|c| ClassRef::ptr_eq(c, class)),
            "class `{}` belongs to another runtime",
            class.name()
        );
    }

    /// Destroy an object now: every handle to it becomes stale (calls and field access through
    /// them fail with a ScriptError), it leaves the live list, and its state (with the handles
    /// in its fields) is released at the next point where no call can be using it: [`collect`],
    /// a reload or unload, or when the last handle goes.
    ///
    /// Refused with [`ScriptErrorKind::InsideCall`] on a thread inside a call (a host function
    /// called by script code): the running script code checked its handles once and relies on
    /// them staying valid until the call returns (docs/runtime.md, "What generated code may
    /// assume"). Another thread's destroy is not refused: it races with the call, which
    /// finishes on the state it had.
    ///
    /// [`collect`]: Runtime::collect
    pub fn destroy(&self, handle: &Handle) -> Result<(), ScriptError> {
        refuse_inside_call()?;
        let obj = handle.get()?;
        // The generation the handle was checked for. A detach on another thread may set
        // `WORD_DETACHED` in the word meanwhile: that leaves the handle valid (and the bit set),
        // so only a change of the generation itself means another destroy came first.
        let g = (handle.cell() >> crate::runtime::handle::ADDR_BITS) as u32;
        if !obj.bump_generation(Some(g)) {
            // Another thread destroyed it first.
            return Err(ScriptError::new(
                ScriptErrorKind::StaleHandle,
                Default::default(),
            ));
        }
        {
            // Under the live list's lock, as `detach`: a reload re-keys the objects on the list
            // while holding it, so it cannot give this one a key again between the store and
            // the removal (the host border's fast path tests only the key).
            let mut live = obj.class().live.lock();
            detach_key(obj);
            live.remove(obj);
        }
        let full = {
            let mut retired = lock(&self.retired);
            retired.push(handle.clone());
            retired.len() >= RETIRED_BATCH
        };
        if full {
            // A full batch is worth one stop (never inside a call: refused above).
            let _ = self.collect();
        }
        Ok(())
    }

    /// Detach an object: it leaves the live list (a reload will not migrate it) and every call
    /// on it fails with "object detached"; its handles stay valid and its state lives until the
    /// last one goes. Refused inside a call on this thread, as [`Runtime::destroy`] is.
    pub fn detach(&self, handle: &Handle) -> Result<(), ScriptError> {
        refuse_inside_call()?;
        let obj = handle.get()?;
        let mut live = obj.class().live.lock();
        detach_key(obj);
        live.remove(obj);
        Ok(())
    }

    /// Destroyed objects waiting for [`collect`](Runtime::collect).
    pub fn retired_count(&self) -> usize {
        lock(&self.retired).len()
    }
}

/// `InsideCall` when this thread is inside a call: what `destroy` and `detach` refuse.
fn refuse_inside_call() -> Result<(), ScriptError> {
    if current_thread_in_call() {
        return Err(ScriptError::new(
            ScriptErrorKind::InsideCall,
            Default::default(),
        ));
    }
    Ok(())
}

/// Mark `obj` detached (under its class's lock); an inline class counts it once
/// (`Class::live_count`).
fn detach_key(obj: &crate::runtime::object::Object) {
    let was = obj.key.swap(DETACHED_KEY, Ordering::AcqRel);
    obj.mark_detached();
    if obj.class().inline && was != DETACHED_KEY {
        obj.class().detached.fetch_add(1, Ordering::AcqRel);
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        let retired = std::mem::take(&mut *lock(&self.retired));
        drop(retired);
        // A class that still has shells (the host kept handles) must outlive them: keep it.
        for class in lock(&self.classes).iter() {
            if class.shell_count() > 0 {
                std::mem::forget(class.clone());
            }
        }
    }
}

/// Host access to fields, each as a call of the object (through the fused border: it fails on a
/// detached object and waits out a reload).
impl Object {
    fn field_index(&self, name: &str, want: CellKind) -> Result<usize, ScriptError> {
        let version = self.state_version().ok_or_else(object::detached_error)?;
        let i = version.field(name).ok_or_else(|| {
            ScriptError::new(
                ScriptErrorKind::NoSuchField {
                    class: self.class().name().to_string(),
                    field: name.to_string(),
                },
                Default::default(),
            )
        })?;
        if version.fields[i].ty.cell_kind() != want {
            return Err(ScriptError::new(
                ScriptErrorKind::WrongFieldKind {
                    field: name.to_string(),
                },
                Default::default(),
            ));
        }
        Ok(i)
    }

    fn cell(&self, i: usize) -> &std::sync::atomic::AtomicU64 {
        // SAFETY: called inside the border (the state is attached and not being migrated) with
        // `i` checked against the state's own version; cells are 8-byte aligned, and every
        // access from Rust is atomic.
        unsafe { std::sync::atomic::AtomicU64::from_ptr(self.state_ptr().add(i)) }
    }

    /// The bits of a scalar field (`i64`, `f64::to_bits`, 0/1).
    pub fn read_field(&self, name: &str) -> Result<u64, ScriptError> {
        fused_enter(self, || {
            let i = self.field_index(name, CellKind::Plain)?;
            Ok(self.cell(i).load(Ordering::Relaxed))
        })
        .map_err(|e| *e)?
    }

    /// Write a scalar field.
    pub fn write_field(&self, name: &str, bits: u64) -> Result<(), ScriptError> {
        fused_enter(self, || {
            let i = self.field_index(name, CellKind::Plain)?;
            self.cell(i).store(bits, Ordering::Relaxed);
            Ok(())
        })
        .map_err(|e| *e)?
    }

    /// Another handle to the object in a handle field (`null` if it holds none).
    pub fn handle_field(&self, name: &str) -> Result<Handle, ScriptError> {
        fused_enter(self, || {
            let i = self.field_index(name, CellKind::Handle)?;
            let cell = self.cell(i).load(Ordering::Acquire);
            // The cell keeps its reference; this handle takes a new one.
            Ok(unsafe_clone_cell(cell))
        })
        .map_err(|e| *e)?
    }

    /// Store a handle in a handle field, releasing the one it held.
    pub fn set_handle_field(&self, name: &str, value: Handle) -> Result<(), ScriptError> {
        let old = fused_enter(self, || {
            let i = self.field_index(name, CellKind::Handle)?;
            let version = self.state_version().ok_or_else(object::detached_error)?;
            let (class, nullable) = match &version.fields[i].ty {
                FieldType::Handle { class, nullable } => (class, *nullable),
                _ => {
                    let kind = ScriptErrorKind::WrongFieldKind {
                        field: name.to_string(),
                    };
                    return Err(ScriptError::new(kind, Default::default()));
                }
            };
            // Another runtime's object is refused, whatever its state. The class's name is not
            // enough: generated code bakes in its own runtime's count owner and field offsets,
            // and frees a fixed runtime's objects as its own. A stale handle (its object
            // destroyed there) still owns a reference to a live shell, whose count that code
            // would change too.
            if let Some(shell) = Handle::cell_object(value.cell()) {
                // SAFETY: a non-null handle owns a reference: the shell is allocated while
                // `value` lives, and its class for as long as the shell.
                let target = unsafe { &*shell };
                if !std::sync::Arc::ptr_eq(&target.class().counts, &self.class().counts) {
                    return Err(ScriptError::new(
                        ScriptErrorKind::ForeignObject {
                            field: name.to_string(),
                            class: target.class().name().to_string(),
                        },
                        Default::default(),
                    ));
                }
            }
            match value.get() {
                Err(_) if value.is_null() && !nullable => {
                    return Err(ScriptError::new(
                        ScriptErrorKind::NullHandle,
                        Default::default(),
                    ));
                }
                Ok(target) if !is_a(target.class(), class) => {
                    return Err(ScriptError::new(
                        ScriptErrorKind::HandleClass {
                            field: name.to_string(),
                            expected: class.to_string(),
                            found: target.class().name().to_string(),
                        },
                        Default::default(),
                    ));
                }
                _ => {}
            }
            Ok(self.cell(i).swap(value.into_cell(), Ordering::AcqRel))
        })
        .map_err(|e| *e)??;
        // SAFETY: the old cell's reference moved out of the field.
        drop(unsafe { Handle::from_cell(old) });
        Ok(())
    }
}

/// True when `class` or one of its ancestors is named `name`.
fn is_a(class: &crate::runtime::class::Class, name: &str) -> bool {
    let mut c = Some(class);
    while let Some(k) = c {
        if k.name() == name {
            return true;
        }
        c = k.parent().map(|p| &**p);
    }
    false
}

fn unsafe_clone_cell(cell: u64) -> Handle {
    // SAFETY: the field still owns `cell`'s reference, so the shell is allocated; `clone` takes a
    // second reference and `ManuallyDrop` keeps the field's from being released.
    let borrowed = std::mem::ManuallyDrop::new(unsafe { Handle::from_cell(cell) });
    (*borrowed).clone()
}
