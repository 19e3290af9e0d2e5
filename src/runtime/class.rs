//! Script classes: field layouts, initializers, the slot table, and the entry word.
//!
//! A [`Class`] lives at a stable address (inside an `Arc`) for as long as its runtime: generated
//! code embeds the address of its entry word and of its slot table. A reload makes a new
//! [`Version`] (layout + initializers + method names) and swaps the slot pointers; the class
//! itself never moves. Every version is kept until the class goes, so a state block can always
//! reach the layout it was built with (to drop its handle cells).

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::runtime::border;
use crate::runtime::counts::CountOwner;
use crate::runtime::error::{ScriptError, ScriptErrorKind};
use crate::runtime::iface::{AbiSig, BenchRun, HookCall, Signature};
use crate::runtime::object::LiveList;
use crate::runtime::spin::ClassLock;
use crate::runtime::values::ElemKind;

/// A shared reference to a class: `Arc` with the `thread-safe` feature, `Rc` without (a class
/// without a lock must stay on one thread).
#[cfg(feature = "thread-safe")]
pub type ClassRef = Arc<Class>;
/// A shared reference to a class: `Arc` with the `thread-safe` feature, `Rc` without (a class
/// without a lock must stay on one thread).
#[cfg(not(feature = "thread-safe"))]
pub type ClassRef = std::rc::Rc<Class>;

/// The method names of a class family by slot index, with their signatures (shared by a root
/// class and every class derived from it; only ever appended to).
pub type Family = Arc<std::sync::Mutex<Vec<(Arc<str>, AbiSig)>>>;

/// Slots per class. Fixed so the table never moves (generated code embeds slot addresses) and so
/// any [`SlotIndex`] below it is in bounds for every class.
pub const SLOT_CAPACITY: usize = 64;

/// The entry bit of the entry word: set while a reload (or unload, or collect) is pending.
pub const ENTRY_PENDING: u64 = 1;

/// The slot key of a detached object: never equal to an entry word (those are at least 2).
pub const DETACHED_KEY: u64 = 0;

/// The type of a field. Every field is one 8-byte cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldType {
    /// `i64`: the cell holds the integer.
    I64,
    /// `f64`: the cell holds `f64::to_bits`.
    F64,
    /// `bool`: the cell holds 0 or 1.
    Bool,
    /// A handle to an object of `class` (`C`, or `C?` when `nullable`): the cell is a handle
    /// cell (see `handle.rs`) that owns one reference.
    Handle {
        /// The class named by the type.
        class: Arc<str>,
        /// `C?`: may hold `null`.
        nullable: bool,
    },
    /// A counted value (`vec<T>`, `str`, and whatever counted kind `runtime::values` adds): the
    /// cell is 0 or owns one count of a block, released by `kind`.
    Counted {
        /// How the cell is retained and released.
        kind: ElemKind,
        /// The whole type as the script writes it (`vec<vec<str>>`): one cell and one kind stand
        /// for many types, so migration keeps a field only when this is the same too.
        ty: Arc<str>,
        /// The type holds closures (`fn(..)`, `vec<fn(..)>`, `[fn(..); 2]`): code of the
        /// program version that made them, so a reload re-initializes the field even when its
        /// type stays the same (see [`ReloadReport::reset`](crate::runtime::reload::ReloadReport)).
        code: bool,
    },
}

/// What the runtime must do with a cell when it goes. New kinds (strings, vecs) add a variant and
/// an arm in `object::drop_cell`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellKind {
    /// Bits only: nothing to release.
    Plain,
    /// A handle cell: release one reference.
    Handle,
    /// A counted cell of `runtime::values` (a vec, a string): release its count by kind.
    Counted(ElemKind),
}

impl FieldType {
    /// How a cell of this type is dropped.
    pub fn cell_kind(&self) -> CellKind {
        match self {
            FieldType::I64 | FieldType::F64 | FieldType::Bool => CellKind::Plain,
            FieldType::Handle { .. } => CellKind::Handle,
            FieldType::Counted { kind, .. } => CellKind::Counted(*kind),
        }
    }

    /// The field holds closures: a reload never keeps its value.
    pub fn holds_code(&self) -> bool {
        matches!(self, FieldType::Counted { code: true, .. })
    }
}

/// How a field gets its first value (at `new`, and when a reload adds or retypes it).
#[derive(Debug, Clone)]
pub enum Init {
    /// Fixed bits (an `i64`, `f64::to_bits`, 0/1). For a handle field only 0 (`null`) is allowed;
    /// for a counted field 0 is the empty vec or string.
    Bits(u64),
    /// A `str` field's text: every state block gets a new string block of it.
    Text(Arc<str>),
    /// Generated initializer code: `extern "C-unwind" fn(vmctx) -> u64`; for a handle field it
    /// returns an owned handle cell (one reference, or 0 for `null`). It may raise a ScriptError.
    Code(extern "C-unwind" fn(*mut c_void) -> u64),
    /// An array field's value: every state block gets a new boxed array of it, as an array in
    /// a vec's cell is boxed (`arrays::box_array`).
    Array {
        /// The kind of its leaf cells.
        kind: ElemKind,
        /// Its lengths, outermost first.
        dims: Arc<[u32]>,
        /// Its leaves flat, each `Bits` or `Text`.
        leaves: Arc<[Init]>,
    },
}

impl Init {
    /// About how many heap bytes [`Init::constant_cell`] allocates (a string's block, a boxed
    /// array's cells), for the job's memory limit.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Init::Bits(_) | Init::Code(_) => 0,
            Init::Text(text) => 24 + text.len(),
            // The boxed cells, and the flat list of cells made first.
            Init::Array { leaves, .. } => {
                64 + 16 * leaves.len() + leaves.iter().map(Init::heap_bytes).sum::<usize>()
            }
        }
    }

    /// The owned cell of a constant initializer (`None` for `Code`, which runs at a border).
    pub fn constant_cell(&self) -> Option<u64> {
        match self {
            Init::Bits(bits) => Some(*bits),
            // Straight from the text: no temporary copy (which the job's memory check before
            // `fill_state` does not count).
            Init::Text(text) => Some(crate::runtime::str_block::str_of(text)),
            Init::Code(_) => None,
            Init::Array { kind, dims, leaves } => {
                let cells: Vec<u64> = leaves
                    .iter()
                    .map(|l| l.constant_cell().unwrap_or(0))
                    .collect();
                Some(crate::runtime::arrays::box_array(*kind, &cells, dims))
            }
        }
    }
}

/// One field of a layout.
#[derive(Debug, Clone)]
pub struct Field {
    /// The name; migration matches fields by name and type.
    pub name: Arc<str>,
    /// The type.
    pub ty: FieldType,
    /// The initializer.
    pub init: Init,
}

/// One method: its name, its signature, and its code (`None` leaves the slot empty).
#[derive(Debug, Clone)]
pub struct MethodDef {
    /// The name; a reload keeps a method's slot index by name.
    pub name: Arc<str>,
    /// The machine signature after `(vmctx, this)`.
    pub sig: AbiSig,
    /// `extern "C-unwind" fn(vmctx, this: *const Object, args...) -> ret`.
    pub code: *const c_void,
    /// For a method that implements a host interface's method: a host entry made for `code`
    /// (`extern "C-unwind" fn(this, rec, args...) -> Returned`, see
    /// [`IfaceSig::enter`](crate::runtime::iface::IfaceSig::enter)), or null to use the Rust
    /// one (`runtime::border`). The JIT makes one per such method.
    pub host_entry: *const c_void,
}

// SAFETY: `code` points at immutable machine code (JIT output or a Rust fn item), valid while the
// class that holds it lives; it is never written through.
unsafe impl Send for MethodDef {}
// SAFETY: as above.
unsafe impl Sync for MethodDef {}

/// A class definition or a new version of one (what the compiler hands to the runtime).
#[derive(Debug, Clone)]
pub struct ClassDef {
    /// The class name.
    pub name: Arc<str>,
    /// Single inheritance: the child's layout starts with the parent's fields, and its slot table
    /// starts with the parent's methods (overridden by name).
    pub parent: Option<ClassRef>,
    /// The class's own fields (after the parent's).
    pub fields: Vec<Field>,
    /// The class's own methods, and overrides of the parent's.
    pub methods: Vec<MethodDef>,
    /// The `vmctx` passed to every method and initializer of this class (module globals, ...).
    pub vmctx: *mut c_void,
}

// SAFETY: `vmctx` is an opaque pointer the generated code owns and keeps valid for the class's
// life; the runtime only passes it along.
unsafe impl Send for ClassDef {}
// SAFETY: as above.
unsafe impl Sync for ClassDef {}

/// A definition the runtime refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefineError {
    /// Two fields (own or inherited) with one name.
    #[error("field `{0}` is defined twice")]
    DuplicateField(String),
    /// Two methods with one name.
    #[error("method `{0}` is defined twice")]
    DuplicateMethod(String),
    /// More methods than [`SLOT_CAPACITY`].
    #[error("more than {SLOT_CAPACITY} methods")]
    TooManyMethods,
    /// A non-nullable handle field initialized with `null`, or a scalar field with code that
    /// does not fit, ...
    #[error("field `{0}`: a non-nullable handle needs an initializer that makes an object")]
    NullInitializer(String),
    /// A method whose signature differs from the one it overrides (or replaces, on reload).
    #[error("method `{0}` changes its signature")]
    SignatureChanged(String),
}

/// One version of a class: what a state block was built with.
#[derive(Debug)]
pub struct Version {
    /// 1 for the first definition, +1 per reload.
    pub number: u32,
    /// Every field, parent's first; cell `i` of a state block is `fields[i]`.
    pub fields: Vec<Field>,
    /// The method names and signatures by slot index (`None`: an empty slot).
    pub methods: Vec<Option<(Arc<str>, AbiSig)>>,
    /// Whether any field is a handle (so dropping a state block must walk the cells).
    pub needs_drop: bool,
    /// Whether state blocks of this version live inside their shells (a class of a fixed
    /// runtime, see [`Runtime::fixed`](crate::runtime::rt::Runtime::fixed)): dropping one
    /// releases its cells but frees nothing.
    pub inline: bool,
    /// The host entries known to this version: `(method code, its host entry)` for the own
    /// methods that came with one ([`MethodDef::host_entry`]) and the parent's at definition.
    /// An interface entry uses the host entry made for exactly its code, or the Rust one.
    pub(crate) host_entries: Vec<(usize, usize)>,
    /// Every field's first cell when every initializer is fixed bits (`Init::Bits`, the
    /// common class of numbers, bools and null handles): `new` copies them, with no walk over
    /// the initializers (`object::fill_state`).
    pub(crate) plain_init: Option<Box<[u64]>>,
}

impl Version {
    /// The cell index of a field.
    pub fn field(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| &*f.name == name)
    }
}

/// A slot index, checked against [`SLOT_CAPACITY`] (so in bounds for every class's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotIndex(u32);

impl SlotIndex {
    /// A slot index, if below the capacity.
    pub fn new(i: usize) -> Option<SlotIndex> {
        (i < SLOT_CAPACITY).then_some(SlotIndex(i as u32))
    }
    /// The index.
    #[inline(always)]
    pub fn get(self) -> usize {
        self.0 as usize
    }
}

/// A script class. `#[repr(C)]`: generated code reads [`Class::ENTRY`] and the slot table at
/// [`Class::slot_addr`].
#[repr(C)]
pub struct Class {
    /// The entry word: bits 63..1 are the class's current slot key, bit 0 ([`ENTRY_PENDING`]) is
    /// set while a reload is pending. A live object's key equals it exactly when a call may go in.
    pub(crate) entry: AtomicU64,
    /// The slot table: one code pointer per method, swapped by reload. Inline, so a slot is one
    /// load from the class (a class never moves: it lives in its `ClassRef` allocation).
    pub(crate) slots: [AtomicPtr<c_void>; SLOT_CAPACITY],
    /// Passed as the first argument of every method.
    pub(crate) vmctx: AtomicPtr<c_void>,
    /// The live objects (reload migrates each) and the shell count.
    pub(crate) live: ClassLock<LiveList>,
    /// The current version (points into `versions`).
    pub(crate) current: AtomicPtr<Version>,
    /// Every version, kept for the class's life (state blocks point at theirs). Boxed on purpose:
    /// `current` and state headers point at a version, which must not move when the Vec grows.
    #[allow(clippy::vec_box)]
    pub(crate) versions: std::sync::Mutex<Vec<Box<Version>>>,
    /// The next slot key (keys step by 2, so bit 0 stays free for the pending bit).
    pub(crate) next_key: AtomicU64,
    /// Set by unload: `new` refuses.
    pub(crate) unloaded: std::sync::atomic::AtomicBool,
    /// Reloads so far.
    pub(crate) reloads: AtomicU32,
    /// The slot of each host-interface method ([`IfaceMethod`]), or `u32::MAX`.
    pub(crate) iface_slots: [AtomicU32; IfaceMethod::COUNT],
    /// The code of each host-interface method, resolved with `iface_slots` (null when the class
    /// does not implement it or the slot is empty): the `direct` host entry of a fixed runtime
    /// calls it without reading the slot table (see `border::Direct`). Constant for a class of a
    /// fixed runtime, which refuses reload and unload.
    pub(crate) iface_code: [AtomicPtr<c_void>; IfaceMethod::COUNT],
    /// The host entry of each host-interface method (never null): the one made for the code in
    /// `iface_code` when there is one, else the Rust border's (`border::rust_host_entry`), which
    /// also answers an empty entry. Written with `iface_code`, before the entry word lets calls
    /// in; a JIT entry compares itself with it after its key test, so one read before a reload
    /// goes to the slow path rather than run an old version's code.
    pub(crate) host_entry: [AtomicPtr<c_void>; IfaceMethod::COUNT],
    pub(crate) name: Arc<str>,
    pub(crate) parent: Option<ClassRef>,
    /// Method name ↔ slot index for the whole class family.
    pub(crate) family: Family,
    /// Defined in a fixed runtime: fields inline in the shell, reload refused.
    pub(crate) inline: bool,
    /// An inline class's shells not freed yet, counted per thread (`runtime::shells`): its
    /// objects are not on the live list, which only a reload or an unload needs.
    pub(crate) shells: super::shells::Counter,
    /// An inline class's shells detached or destroyed and not freed yet (`live_count` is the
    /// shells minus these).
    pub(crate) detached: AtomicUsize,
    /// Who may change its objects' counts with plain instructions: one per runtime, shared by
    /// its classes (`runtime::counts`).
    pub(crate) counts: Arc<CountOwner>,
    /// `counts`' address, for generated code (`[class + COUNTS]`; an `Arc`'s layout is not
    /// fixed). Set with `counts`, never changed after the class is shared.
    counts_at: AtomicPtr<CountOwner>,
}

impl std::fmt::Debug for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Class")
            .field("name", &self.name)
            .field("entry", &self.entry.load(Ordering::Relaxed))
            .field("version", &self.version().number)
            .finish_non_exhaustive()
    }
}

impl Class {
    /// Offset of the entry word (generated code: `load.i64 [class+ENTRY]`).
    pub const ENTRY: usize = std::mem::offset_of!(Class, entry);
    /// Offset of the slot table: slot `i` is at `[class + SLOTS + 8*i]`.
    pub const SLOTS: usize = std::mem::offset_of!(Class, slots);
    /// Offset of the host entries: method `m`'s at `[class + HOST_ENTRY + 8*m]`.
    pub const HOST_ENTRY: usize = std::mem::offset_of!(Class, host_entry);
    /// Offset of the methods' `vmctx`.
    pub const VMCTX: usize = std::mem::offset_of!(Class, vmctx);
    /// Offset of the pointer to the runtime's [`CountOwner`].
    pub const COUNTS: usize = std::mem::offset_of!(Class, counts_at);

    /// Build a class from its first definition (the runtime calls this; see `Runtime::define`).
    pub(crate) fn from_def(def: &ClassDef) -> Result<Class, DefineError> {
        let family = match &def.parent {
            Some(p) => p.family.clone(),
            None => Family::default(),
        };
        let mut version = build_version(def, &family, 1)?;
        version.host_entries = host_entries(def);
        let slots: [AtomicPtr<c_void>; SLOT_CAPACITY] =
            std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut()));
        fill_slots(&slots, def, &version);
        let mut boxed = Box::new(version);
        let current = &mut *boxed as *mut Version;
        let mut class = Class {
            entry: AtomicU64::new(2),
            slots,
            vmctx: AtomicPtr::new(def.vmctx),
            live: ClassLock::new(LiveList::default()),
            current: AtomicPtr::new(current),
            versions: std::sync::Mutex::new(vec![boxed]),
            next_key: AtomicU64::new(4),
            unloaded: std::sync::atomic::AtomicBool::new(false),
            reloads: AtomicU32::new(0),
            iface_slots: [const { AtomicU32::new(u32::MAX) }; IfaceMethod::COUNT],
            iface_code: [const { AtomicPtr::new(ptr::null_mut()) }; IfaceMethod::COUNT],
            host_entry: IfaceMethod::ALL
                .map(|m| AtomicPtr::new(border::rust_host_entry(m) as *mut c_void)),
            name: def.name.clone(),
            parent: def.parent.clone(),
            family,
            inline: false,
            shells: super::shells::Counter::new(),
            detached: AtomicUsize::new(0),
            counts: Arc::new(CountOwner::new()),
            counts_at: AtomicPtr::new(ptr::null_mut()),
        };
        class.set_counts(class.counts.clone());
        class.find_iface_slots();
        // Before any shell of any class exists: where the shells' vtable functions find the
        // thread's record (`runtime::depth::RECORD_TP_OFFSET`).
        super::depth::record_offset();
        Ok(class)
    }

    /// Count its objects' references under `counts` (its runtime's, shared by the runtime's
    /// classes).
    pub(crate) fn set_counts(&mut self, counts: Arc<CountOwner>) {
        self.counts_at = AtomicPtr::new(Arc::as_ptr(&counts).cast_mut());
        self.counts = counts;
    }

    /// Note which slots implement the host interfaces (by name and signature), and their code.
    fn find_iface_slots(&self) {
        for (i, m) in IfaceMethod::ALL.iter().enumerate() {
            let slot = self
                .slot_of(m.name())
                .filter(|s| {
                    self.version().methods[s.get()]
                        .as_ref()
                        .is_some_and(|(_, sig)| *sig == m.sig())
                })
                .map_or(u32::MAX, |s| s.get() as u32);
            self.iface_slots[i].store(slot, Ordering::Release);
            let code = SlotIndex::new(slot as usize).map_or(ptr::null(), |s| self.slot(s));
            let entry = self
                .version()
                .host_entries
                .iter()
                .find(|&&(c, _)| !code.is_null() && c == code as usize)
                .map_or(border::rust_host_entry(*m), |&(_, e)| e as *const c_void);
            self.host_entry[i].store(entry as *mut c_void, Ordering::Release);
            self.iface_code[i].store(code as *mut c_void, Ordering::Release);
        }
    }

    /// The host entry of a host-interface method (see the field's docs): the Rust border's, or
    /// one the JIT made for the method's code.
    #[inline(always)]
    pub fn host_entry(&self, m: IfaceMethod) -> *const c_void {
        self.host_entry[m as usize].load(Ordering::Relaxed)
    }

    /// The code of a host-interface method, resolved at definition (and at each reload): null
    /// when the class does not implement it or its slot is empty. No slot-table read.
    #[inline(always)]
    pub fn iface_code(&self, m: IfaceMethod) -> *const c_void {
        self.iface_code[m as usize].load(Ordering::Relaxed)
    }

    /// Empty every slot and interface entry (an unload).
    pub(crate) fn clear_code(&self) {
        for s in self.slots.iter().chain(&self.iface_code) {
            s.store(ptr::null_mut(), Ordering::Release);
        }
        for (e, m) in self.host_entry.iter().zip(IfaceMethod::ALL) {
            e.store(border::rust_host_entry(m) as *mut c_void, Ordering::Release);
        }
    }

    /// The slot implementing a host-interface method, or `NotImplemented`.
    #[inline(always)]
    pub fn iface_slot(&self, m: IfaceMethod) -> Result<SlotIndex, ScriptError> {
        let slot = self.iface_slots[m as usize].load(Ordering::Relaxed);
        if slot as usize >= SLOT_CAPACITY {
            return Err(not_implemented(self, m));
        }
        Ok(SlotIndex(slot))
    }

    /// The class name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The parent class.
    pub fn parent(&self) -> Option<&ClassRef> {
        self.parent.as_ref()
    }

    /// Give a class being defined in a fixed runtime (not shared yet) the inline layout: its
    /// objects are one allocation, the shell then the cells (see `object.rs`).
    pub(crate) fn set_inline(&mut self) {
        self.inline = true;
        let versions = self.versions.get_mut().unwrap_or_else(|e| e.into_inner());
        for v in versions.iter_mut() {
            v.inline = true;
        }
    }

    /// Whether the class's objects keep their fields inline in the shell (a class of a fixed
    /// runtime: no reload).
    #[inline(always)]
    pub fn is_inline(&self) -> bool {
        self.inline
    }

    /// The current version.
    pub fn version(&self) -> &Version {
        // SAFETY: `current` always points at a version boxed in `versions`, which are freed only
        // with the class; the box's heap address does not move when the Vec grows.
        unsafe { &*self.current.load(Ordering::Acquire) }
    }

    pub(crate) fn version_ptr(&self) -> *const Version {
        self.current.load(Ordering::Acquire)
    }

    /// The slot index of a method of the current version.
    pub fn slot_of(&self, method: &str) -> Option<SlotIndex> {
        let v = self.version();
        let i = v
            .methods
            .iter()
            .position(|m| m.as_ref().is_some_and(|(n, _)| &**n == method))?;
        SlotIndex::new(i)
    }

    /// The address of a slot (stable for the class's life): generated code does
    /// `iconst slot_addr; load.i64; call_indirect`.
    pub fn slot_addr(&self, slot: SlotIndex) -> *const AtomicPtr<c_void> {
        &self.slots[slot.get()]
    }

    /// The code in a slot now (null if empty).
    #[inline(always)]
    pub fn slot(&self, slot: SlotIndex) -> *const c_void {
        // Relaxed: the code is immutable; the ordering with the state a reload migrated comes
        // from the entry word (acquire) on the checked paths.
        // SAFETY: a `SlotIndex` is below SLOT_CAPACITY, the length of every table.
        unsafe { self.slots.get_unchecked(slot.get()) }.load(Ordering::Relaxed)
    }

    /// The `vmctx` of the class's methods.
    #[inline(always)]
    pub fn vmctx(&self) -> *mut c_void {
        self.vmctx.load(Ordering::Relaxed)
    }

    /// The entry word now.
    #[inline(always)]
    pub fn entry_word(&self) -> u64 {
        self.entry.load(Ordering::Acquire)
    }

    /// Objects of this class whose shell is not freed yet (live, detached or destroyed but still
    /// referenced). Zero after every handle went: the leak check.
    pub fn shell_count(&self) -> usize {
        if self.inline {
            return self.shells.count();
        }
        self.live.lock().shells
    }

    /// Live (attached) objects: the ones a reload migrates (of an inline class, which nothing
    /// reloads: the shells neither detached nor destroyed).
    pub fn live_count(&self) -> usize {
        if self.inline {
            return self
                .shells
                .count()
                .saturating_sub(self.detached.load(Ordering::Acquire));
        }
        self.live.lock().objects.len()
    }

    /// Reloads applied so far.
    pub fn reloads(&self) -> u32 {
        self.reloads.load(Ordering::Relaxed)
    }

    /// True after an unload.
    pub fn is_unloaded(&self) -> bool {
        self.unloaded.load(Ordering::Acquire)
    }

    /// Install a new version (the reloader calls this with every thread out of calls).
    pub(crate) fn install(&self, mut version: Version, def: &ClassDef) -> *const Version {
        version.host_entries = host_entries(def);
        fill_slots(&self.slots, def, &version);
        self.vmctx.store(def.vmctx, Ordering::Relaxed);
        let mut boxed = Box::new(version);
        let ptr = &mut *boxed as *mut Version;
        self.versions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(boxed);
        self.current.store(ptr, Ordering::Release);
        self.find_iface_slots();
        ptr
    }
}

/// A method of a host interface that a script class can implement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfaceMethod {
    /// `Hook.call(self) -> i64`.
    HookCall = 0,
    /// `Bench.run(self, n: i64) -> i64`.
    BenchRun = 1,
}

impl IfaceMethod {
    pub(crate) const COUNT: usize = 2;
    pub(crate) const ALL: [IfaceMethod; IfaceMethod::COUNT] =
        [IfaceMethod::HookCall, IfaceMethod::BenchRun];

    /// The method name a class defines to implement it.
    pub fn name(self) -> &'static str {
        match self {
            IfaceMethod::HookCall => "call",
            IfaceMethod::BenchRun => "run",
        }
    }

    /// The signature it must have.
    pub fn sig(self) -> AbiSig {
        match self {
            IfaceMethod::HookCall => HookCall::sig(),
            IfaceMethod::BenchRun => BenchRun::sig(),
        }
    }

    fn qualified(self) -> &'static str {
        match self {
            IfaceMethod::HookCall => "Hook.call",
            IfaceMethod::BenchRun => "Bench.run",
        }
    }
}

#[cold]
#[inline(never)]
fn not_implemented(class: &Class, m: IfaceMethod) -> ScriptError {
    ScriptError::new(
        ScriptErrorKind::NotImplemented {
            class: class.name.to_string(),
            method: m.qualified().to_string(),
        },
        Default::default(),
    )
}

impl Class {
    /// Put back a version and its slots (a reload whose migration failed).
    pub(crate) fn restore(
        &self,
        version: *const Version,
        slots: &[*mut c_void],
        vmctx: *mut c_void,
    ) {
        for (s, &p) in self.slots.iter().zip(slots) {
            s.store(p, Ordering::Release);
        }
        self.vmctx.store(vmctx, Ordering::Relaxed);
        self.current
            .store(version as *mut Version, Ordering::Release);
        self.find_iface_slots();
    }
}

/// A class `C` with no fields and one method, `call`, implementing the host's `Hook::call` with
/// `code` (for tests).
#[cfg(test)]
pub(crate) fn hook_class_def(code: *const c_void) -> ClassDef {
    ClassDef {
        name: "C".into(),
        parent: None,
        fields: vec![],
        methods: vec![MethodDef {
            name: "call".into(),
            sig: HookCall::sig(),
            code,
            host_entry: std::ptr::null(),
        }],
        vmctx: std::ptr::null_mut(),
    }
}

/// Lay out a version: the parent's current fields, then the class's own; methods keep the slot
/// index of the same name in `prev` (or the parent's), new names take the next free slot.
pub(crate) fn build_version(
    def: &ClassDef,
    family: &Family,
    number: u32,
) -> Result<Version, DefineError> {
    let mut fields: Vec<Field> = def
        .parent
        .as_ref()
        .map(|p| p.version().fields.clone())
        .unwrap_or_default();
    for f in &def.fields {
        if fields.iter().any(|g| g.name == f.name) {
            return Err(DefineError::DuplicateField(f.name.to_string()));
        }
        if let (
            FieldType::Handle {
                nullable: false, ..
            },
            Init::Bits(_) | Init::Text(_) | Init::Array { .. },
        ) = (&f.ty, &f.init)
        {
            return Err(DefineError::NullInitializer(f.name.to_string()));
        }
        fields.push(f.clone());
    }
    // Slot indices come from the class family (a root class and every class derived from it):
    // a method name gets one index the first time any class of the family defines it, and keeps
    // it, with its signature, for good. So an inherited or overridden method has the parent's
    // index (a virtual call through a parent-typed handle finds the override), a reload keeps
    // every index, and an index never comes to mean another method: code holding a stale index
    // finds the same method or an empty slot, never a method of another signature.
    let mut names = family.lock().unwrap_or_else(|e| e.into_inner());
    let inherited = def
        .parent
        .as_ref()
        .map(|p| p.version().methods.clone())
        .unwrap_or_default();
    let mut fresh = 0;
    for (n, m) in def.methods.iter().enumerate() {
        if def.methods[..n].iter().any(|o| o.name == m.name) {
            return Err(DefineError::DuplicateMethod(m.name.to_string()));
        }
        match names.iter().find(|(name, _)| *name == m.name) {
            Some((_, sig)) if *sig != m.sig => {
                return Err(DefineError::SignatureChanged(m.name.to_string()));
            }
            Some(_) => {}
            None => fresh += 1,
        }
    }
    if names.len() + fresh > SLOT_CAPACITY {
        return Err(DefineError::TooManyMethods);
    }
    for m in &def.methods {
        if !names.iter().any(|(name, _)| *name == m.name) {
            names.push((m.name.clone(), m.sig.clone()));
        }
    }
    let mut methods: Vec<Option<(Arc<str>, AbiSig)>> = vec![None; names.len()];
    for (i, m) in inherited.into_iter().enumerate() {
        methods[i] = m;
    }
    for m in &def.methods {
        let index = names
            .iter()
            .position(|(name, _)| *name == m.name)
            .unwrap_or(usize::MAX);
        if let Some(slot) = methods.get_mut(index) {
            *slot = Some((m.name.clone(), m.sig.clone()));
        }
    }
    drop(names);
    let needs_drop = fields.iter().any(|f| f.ty.cell_kind() != CellKind::Plain);
    let plain_init = fields
        .iter()
        .map(|f| match f.init {
            Init::Bits(bits) => Some(bits),
            _ => None,
        })
        .collect();
    Ok(Version {
        number,
        fields,
        methods,
        needs_drop,
        inline: false,
        host_entries: Vec::new(),
        plain_init,
    })
}

/// The host entries a definition brings ([`Version::host_entries`]): its own methods', then the
/// parent's current ones (for the methods it inherits).
fn host_entries(def: &ClassDef) -> Vec<(usize, usize)> {
    let own = def
        .methods
        .iter()
        .filter(|m| !m.host_entry.is_null() && !m.code.is_null())
        .map(|m| (m.code as usize, m.host_entry as usize));
    let inherited = def
        .parent
        .iter()
        .flat_map(|p| p.version().host_entries.iter().copied());
    own.chain(inherited).collect()
}

/// Point every slot at its code: own methods, else the parent's current code, else null (an
/// empty slot raises `EmptySlot` when called through the Rust layers).
fn fill_slots(slots: &[AtomicPtr<c_void>; SLOT_CAPACITY], def: &ClassDef, v: &Version) {
    for (i, slot) in slots.iter().enumerate() {
        let code = v.methods.get(i).cloned().flatten().and_then(|(name, _)| {
            def.methods
                .iter()
                .find(|m| m.name == name)
                .map(|m| m.code)
                .or_else(|| {
                    let parent = def.parent.as_ref()?;
                    let pi = parent.slot_of(&name)?;
                    Some(parent.slot(pi))
                })
        });
        slot.store(
            code.unwrap_or(ptr::null()) as *mut c_void,
            Ordering::Release,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_code_offsets() {
        assert_eq!(Class::ENTRY, 0);
        assert_eq!(Class::SLOTS, 8);
    }
}
