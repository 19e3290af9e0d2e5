//! Hot reload, unload and collect: the operations that stop script code.
//!
//! Each one *quiesces* first: it raises the pending bit of every class's entry word, runs the
//! heavy side of the asymmetric fence, and waits until no other thread is inside a call (see
//! `depth.rs`). Every class, not only the one reloaded: script code of one class reads the state
//! of objects of another through handles. Then it works with no script code running anywhere,
//! and lowers the bits. Host threads may still drop handles meanwhile (freeing touches only an
//! object nobody else can reach) and destroy objects (serialized by the class lock).
//!
//! A reload builds every new state block *before* it changes any object, so an initializer that
//! raises leaves the class exactly as it was.

use std::ffi::c_void;
use std::sync::MutexGuard;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use std::sync::Arc;

use crate::runtime::class::{
    ClassDef, ClassRef, DETACHED_KEY, DefineError, ENTRY_PENDING, Family, Version, build_version,
};
use crate::runtime::depth::{
    current_thread_in_call, ensure_registered, heavy_fence, wait_for_quiescence, with_record,
};
use crate::runtime::error::ScriptError;
use crate::runtime::handle::Handle;
use crate::runtime::object::{self, NOT_LISTED, Object};
use crate::runtime::rt::{Runtime, lock};

/// What a reload did to one class and its live objects. Its serde form (the worker's answer,
/// the session file) leaves out the two timings, which read back as zero.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReloadReport {
    /// The class.
    pub class: String,
    /// The new version number (1 is the first definition).
    pub version: u32,
    /// Live objects migrated.
    pub migrated: usize,
    /// Fields kept with their values (same name and type).
    pub kept: Vec<String>,
    /// New fields, initialized.
    pub added: Vec<String>,
    /// Fields dropped (handles in them released).
    pub removed: Vec<String>,
    /// Fields whose type changed: the old value was dropped and the initializer run.
    pub retyped: Vec<String>,
    /// Fields of the same name and type that hold closures (`fn(..)`, `vec<fn(..)>`, ...): the
    /// closures' code belongs to the version being replaced, which never runs again, so the old
    /// value was dropped and the initializer run, as for a retyped field.
    #[serde(default)]
    pub reset: Vec<String>,
    /// The new version does not define the class: it was unloaded, and its `migrated` objects
    /// were destroyed instead (handles to them are stale), because its code is the replaced
    /// version's.
    #[serde(default)]
    pub unloaded: bool,
    /// Time spent waiting for threads to leave calls.
    #[serde(skip)]
    pub waited: Duration,
    /// Time of the whole reload (not the compile, which happened before).
    #[serde(skip)]
    pub total: Duration,
}

impl ReloadReport {
    /// A report of nothing yet.
    fn empty() -> ReloadReport {
        ReloadReport {
            class: String::new(),
            version: 0,
            migrated: 0,
            kept: Vec::new(),
            added: Vec::new(),
            removed: Vec::new(),
            retyped: Vec::new(),
            reset: Vec::new(),
            unloaded: false,
            waited: Duration::ZERO,
            total: Duration::ZERO,
        }
    }
}

/// Why a reload (or unload, or collect) did nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReloadError {
    /// Called from inside a script call: it would wait for its own thread.
    #[error("reload from inside a script call (it would wait for itself)")]
    InsideCall,
    /// The new version is not a valid class.
    #[error(transparent)]
    Define(#[from] DefineError),
    /// The class was unloaded.
    #[error("class `{0}` is unloaded")]
    Unloaded(String),
    /// The new version names another class.
    #[error("the new version is of class `{found}`, not `{expected}`")]
    WrongClass {
        /// The class reloaded.
        expected: String,
        /// The name in the new version.
        found: String,
    },
    /// The new version names another parent (slot indices belong to the class family).
    #[error("a reload cannot change the parent of `{0}`")]
    ParentChanged(String),
    /// The class belongs to a fixed runtime (`jit-opt`): its fields are inline in the shells
    /// and its calls direct, so there is nothing a reload could swap.
    #[error(
        "class `{0}` cannot be reloaded: it was compiled for jit-opt (fields inline in the \
         object, direct calls); use the jit backend to reload"
    )]
    Fixed(String),
    /// The class belongs to a fixed runtime (`jit-opt`): the host calls its objects directly,
    /// without the entry check an unload would stop them with.
    #[error(
        "class `{0}` cannot be unloaded: it was compiled for jit-opt (the host calls its objects \
         directly, without the entry check an unload waits on); destroy its objects, or use the \
         jit backend to unload"
    )]
    UnloadFixed(String),
    /// A field initializer raised while migrating; nothing changed.
    #[error("a field initializer raised during migration: {0}")]
    Initializer(ScriptError),
}

/// Script code is stopped while this lives; dropping it lets calls in again (the held part
/// first, then the admin lock).
struct Quiesced<'a> {
    held: Held,
    _admin: MutexGuard<'a, ()>,
}

/// Calls from other threads into the runtime's classes are held out while this lives: the
/// pending bit of every class's entry word stays set, and this thread counts as inside a call
/// (so script code it runs goes in as nested calls). Dropping it, on the thread that made it,
/// lets them in. A committed reload ([`ReloadTx::commit_held`]) hands it to its caller, which
/// finishes switching to the new program (its tables, `<init>`, module variables) before any
/// other thread can call the new code.
#[must_use = "dropping it lets calls in"]
pub struct Held {
    classes: Vec<ClassRef>,
    room: u32,
    /// The runtime's `held` flag, once handed out past the admin lock (cleared last).
    flag: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// Made and dropped on one thread (`room` is that thread's record).
    _thread: std::marker::PhantomData<*const ()>,
}

impl Drop for Held {
    fn drop(&mut self) {
        with_record(|r| r.room.store(self.room, Ordering::Release));
        for c in &self.classes {
            c.entry.fetch_and(!ENTRY_PENDING, Ordering::Release);
        }
        if let Some(flag) = &self.flag {
            flag.store(false, Ordering::Release);
        }
    }
}

impl Runtime {
    fn quiesce(&self) -> Result<Quiesced<'_>, ReloadError> {
        if current_thread_in_call() {
            return Err(ReloadError::InsideCall);
        }
        let admin = lock(&self.admin);
        // A reload that committed may still hold calls out (its `Held`): wait until it lets
        // them in, or its bits would cover this one's.
        while self.held.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        ensure_registered();
        let classes = lock(&self.classes).clone();
        for c in &classes {
            c.entry.fetch_or(ENTRY_PENDING, Ordering::SeqCst);
        }
        heavy_fence();
        wait_for_quiescence();
        // Mark this thread as inside a call while it works: an initializer that makes an object
        // then goes in as a nested call instead of waiting for this very reload.
        let room = with_record(|r| {
            let room = r.room.load(Ordering::Relaxed);
            r.room.store(room.saturating_sub(1), Ordering::Relaxed);
            room
        });
        Ok(Quiesced {
            held: Held {
                classes,
                room,
                flag: None,
                _thread: std::marker::PhantomData,
            },
            _admin: admin,
        })
    }

    /// Reload `class` with a new version (layout, initializers, methods; compiled before): a
    /// [`Runtime::reload_all`] of one class that drops none.
    pub fn reload(&self, class: &ClassRef, def: ClassDef) -> Result<ReloadReport, ReloadError> {
        let mut reports = self.reload_all(vec![(class.clone(), def)], &[])?;
        Ok(reports.pop().expect("one report per class reloaded"))
    }

    /// Reload several classes as one step (a [`ReloadTx`] of `changes`, in order, that unloads
    /// `dropped`). On error nothing changed.
    pub fn reload_all(
        &self,
        changes: Vec<(ClassRef, ClassDef)>,
        dropped: &[ClassRef],
    ) -> Result<Vec<ReloadReport>, ReloadError> {
        for (class, def) in &changes {
            precheck(class, def)?;
        }
        let mut tx = self.begin_reload()?;
        for (class, def) in changes {
            tx.reload(&class, def)?;
        }
        for class in dropped {
            tx.unload(class)?;
        }
        tx.commit()
    }

    /// Start reloading the classes of a new program version as one step: waits until no thread
    /// is inside a call, and keeps calls stopped until the transaction is committed or dropped
    /// (see [`ReloadTx`]).
    pub fn begin_reload(&self) -> Result<ReloadTx<'_>, ReloadError> {
        let t0 = Instant::now();
        let quiesced = self.quiesce()?;
        Ok(ReloadTx {
            runtime: self,
            quiesced: Some(quiesced),
            t0,
            waited: t0.elapsed(),
            staged: Vec::new(),
            defined: Vec::new(),
            unloads: Vec::new(),
            families: Vec::new(),
        })
    }

    /// Unload a class: every live object is destroyed (handles to it become stale, its state is
    /// dropped), the slots are emptied, and `new` of the class fails. Returns how many objects.
    /// A class of a fixed runtime refuses ([`ReloadError::UnloadFixed`]): its host calls take the
    /// direct path, which does not look at the entry word.
    pub fn unload(&self, class: &ClassRef) -> Result<usize, ReloadError> {
        if class.is_inline() {
            return Err(ReloadError::UnloadFixed(class.name().to_string()));
        }
        let q = self.quiesce()?;
        let n = Self::unload_quiesced(class);
        self.collect_quiesced();
        drop(q);
        Ok(n)
    }

    /// The body of [`Runtime::unload`], with calls stopped.
    fn unload_quiesced(class: &ClassRef) -> usize {
        let snapshot: Vec<*const Object> = {
            let mut live = class.live.lock();
            class.unloaded.store(true, Ordering::Release);
            let key = class.next_key.fetch_add(2, Ordering::Relaxed);
            class.entry.store(key | ENTRY_PENDING, Ordering::Release);
            class.clear_code();
            let objects = std::mem::take(&mut live.objects);
            objects
                .into_iter()
                .filter(|&o| {
                    // SAFETY: listed shells are allocated.
                    let obj = unsafe { &*o };
                    obj.live_index.store(NOT_LISTED, Ordering::Relaxed);
                    obj.try_retain()
                })
                .collect()
        };
        let mut dying = Vec::new();
        for &o in &snapshot {
            // SAFETY: retained above.
            let obj = unsafe { &*o };
            obj.bump_generation(None);
            obj.key.store(DETACHED_KEY, Ordering::Release);
            obj.mark_detached();
            for b in &obj.bound {
                b.store(std::ptr::null_mut(), Ordering::Release);
            }
            let state = obj.state.swap(std::ptr::null_mut(), Ordering::AcqRel);
            if !state.is_null() {
                // SAFETY: no call runs (quiesced) and the state is no longer reachable.
                unsafe { object::drop_state(state, &mut dying) };
            }
        }
        // The last references that went while dropping states: free as a release would.
        object::free_all(dying);
        release_all(&snapshot);
        snapshot.len()
    }

    /// Release the state of every destroyed object (and the handles in its fields), at a point
    /// where no call can be using it. Returns how many objects.
    pub fn collect(&self) -> Result<usize, ReloadError> {
        let q = self.quiesce()?;
        let n = self.collect_quiesced();
        drop(q);
        Ok(n)
    }

    fn collect_quiesced(&self) -> usize {
        let retired = std::mem::take(&mut *lock(&self.retired));
        let mut dying = Vec::new();
        for h in &retired {
            if let Some(obj) = Handle::cell_object(h.cell()) {
                // SAFETY: the retired handle holds a reference.
                let state = unsafe { &*obj }
                    .state
                    .swap(std::ptr::null_mut(), Ordering::AcqRel);
                if !state.is_null() {
                    // SAFETY: quiesced, and the object is destroyed: nothing reaches the state.
                    unsafe { object::drop_state(state, &mut dying) };
                }
            }
        }
        object::free_all(dying);
        retired.len()
    }
}

/// A reload of the classes of a new program version in progress ([`Runtime::begin_reload`]):
/// no call runs while it lives. In order:
///
/// 1. [`reload`](ReloadTx::reload) each class the version redefines (parents before children:
///    a child's layout is built on its parent's new one): its new version is installed and its
///    live objects are listed;
/// 2. [`define`](ReloadTx::define) the classes it defines for the first time, and
///    [`unload`](ReloadTx::unload) the ones it no longer defines (their objects are destroyed:
///    they would run the old version's code);
/// 3. [`commit`](ReloadTx::commit): build every new state block (an initializer that raises
///    undoes everything), swap them all, unload, and let calls in again.
///
/// So no call ever sees one class of the version migrated and another not: script code of one
/// class reads the fields of another's objects at the offsets its own version knows. Dropped
/// before `commit` (an error on the way), it undoes everything: versions, slots and keys back,
/// the new classes and the method names the version added to its families gone.
pub struct ReloadTx<'r> {
    runtime: &'r Runtime,
    /// `None` once committed.
    quiesced: Option<Quiesced<'r>>,
    t0: Instant,
    waited: Duration,
    staged: Vec<Staged>,
    defined: Vec<ClassRef>,
    unloads: Vec<ClassRef>,
    /// Each family the transaction touched, with its method names' count before.
    families: Vec<(Family, usize)>,
}

impl ReloadTx<'_> {
    /// Note `family`'s method names before the transaction adds to them.
    fn touch(&mut self, family: &Family) {
        if !self.families.iter().any(|(f, _)| Arc::ptr_eq(f, family)) {
            let len = family.lock().unwrap_or_else(|e| e.into_inner()).len();
            self.families.push((family.clone(), len));
        }
    }

    /// Reload `class` with a new version (layout, initializers, methods; compiled before): its
    /// version is installed now, its objects migrate at [`commit`](ReloadTx::commit).
    pub fn reload(&mut self, class: &ClassRef, def: ClassDef) -> Result<(), ReloadError> {
        precheck(class, &def)?;
        self.touch(&class.family);
        let old_ptr = class.version_ptr();
        // SAFETY: versions live as long as their class.
        let old = unsafe { &*old_ptr };
        let version = build_version(&def, &class.family, old.number + 1)?;
        let (plan, mut report) = plan_migration(old, &version);
        report.class = class.name().to_string();
        report.version = version.number;
        let old_slots = class
            .slots
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .collect();
        let old_vmctx = class.vmctx();
        let old_entry = class.entry.load(Ordering::Relaxed);
        let new_key = class.next_key.fetch_add(2, Ordering::Relaxed);
        let snapshot = {
            let live = class.live.lock();
            class.install(version, &def);
            class
                .entry
                .store(new_key | ENTRY_PENDING, Ordering::Release);
            // SAFETY: listed shells are allocated; a count already at zero is being freed (its
            // owner drops the state), so it is skipped.
            live.objects
                .iter()
                .copied()
                .filter(|&o| unsafe { &*o }.try_retain())
                .collect()
        };
        self.staged.push(Staged {
            class: class.clone(),
            old_ptr,
            old_slots,
            old_vmctx,
            old_entry,
            new_key,
            plan,
            report,
            snapshot,
            built: Vec::new(),
            unused: Vec::new(),
        });
        Ok(())
    }

    /// Define a class the version adds (its parent may be one this transaction reloaded or
    /// defined). A rollback takes it out of the runtime again.
    pub fn define(&mut self, def: ClassDef) -> Result<ClassRef, ReloadError> {
        if let Some(parent) = &def.parent {
            self.touch(&parent.family);
        }
        let class = self.runtime.define(def)?;
        // Held out like every other class until the program around it is switched in.
        class.entry.fetch_or(ENTRY_PENDING, Ordering::SeqCst);
        if let Some(q) = &mut self.quiesced {
            q.held.classes.push(class.clone());
        }
        self.defined.push(class.clone());
        Ok(class)
    }

    /// Unload `class` at the commit (a class the version no longer defines): its objects are
    /// destroyed (handles to them are stale) and `new` of it fails, because its code is the
    /// replaced version's. Reported with [`ReloadReport::unloaded`].
    pub fn unload(&mut self, class: &ClassRef) -> Result<(), ReloadError> {
        if class.is_inline() {
            return Err(ReloadError::UnloadFixed(class.name().to_string()));
        }
        if !class.is_unloaded() {
            self.unloads.push(class.clone());
        }
        Ok(())
    }

    /// Migrate every object of every reloaded class, unload the dropped classes, and let calls
    /// in again. An initializer that raises undoes the whole transaction.
    pub fn commit(self) -> Result<Vec<ReloadReport>, ReloadError> {
        self.commit_held().map(|(reports, _held)| reports)
    }

    /// [`ReloadTx::commit`], but calls from other threads stay held out until the returned
    /// [`Held`] is dropped (the admin lock is let go): the caller switches its program over
    /// first. Once this returns `Ok` there is no undoing it.
    pub fn commit_held(mut self) -> Result<(Vec<ReloadReport>, Held), ReloadError> {
        // Phase A: every new state, nothing changed yet.
        for k in 0..self.staged.len() {
            if let Err(e) = build_states(&mut self.staged[k]) {
                return Err(ReloadError::Initializer(*e));
            }
        }
        // Phase B: swap every class's states, then drop the old ones (whose handles may free
        // objects of any class of the version).
        for s in &mut self.staged {
            swap_states(s);
        }
        let mut reports: Vec<ReloadReport> = std::mem::take(&mut self.staged)
            .into_iter()
            .map(finish)
            .collect();
        for class in std::mem::take(&mut self.unloads) {
            let detached = Runtime::unload_quiesced(&class);
            reports.push(ReloadReport {
                class: class.name().to_string(),
                version: class.version().number,
                migrated: detached,
                unloaded: true,
                ..ReloadReport::empty()
            });
        }
        self.runtime.collect_quiesced();
        self.defined.clear();
        self.families.clear();
        let Some(Quiesced { mut held, _admin }) = self.quiesced.take() else {
            unreachable!("a transaction is quiesced until it commits");
        };
        // The admin lock goes with this function; the next quiesce waits for `held` instead.
        self.runtime.held.store(true, Ordering::Release);
        held.flag = Some(Arc::clone(&self.runtime.held));
        let total = self.t0.elapsed();
        for r in &mut reports {
            r.waited = self.waited;
            r.total = total;
        }
        Ok((reports, held))
    }
}

impl Drop for ReloadTx<'_> {
    fn drop(&mut self) {
        if self.quiesced.is_none() {
            return;
        }
        restore_all(&self.staged);
        for class in &self.defined {
            // Whoever found it meanwhile finds it unloaded: its code may be freed.
            class.unloaded.store(true, Ordering::Release);
            class.clear_code();
        }
        if !self.defined.is_empty() {
            lock(&self.runtime.classes)
                .retain(|c| !self.defined.iter().any(|d| ClassRef::ptr_eq(c, d)));
        }
        for (family, len) in &self.families {
            family
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .truncate(*len);
        }
    }
}

/// The checks a reload of `class` to `def` passes before it stops any call.
fn precheck(class: &ClassRef, def: &ClassDef) -> Result<(), ReloadError> {
    if *def.name != *class.name() {
        return Err(ReloadError::WrongClass {
            expected: class.name().to_string(),
            found: def.name.to_string(),
        });
    }
    if class.is_unloaded() {
        return Err(ReloadError::Unloaded(class.name().to_string()));
    }
    if class.is_inline() {
        return Err(ReloadError::Fixed(class.name().to_string()));
    }
    let same_parent = match (&def.parent, class.parent()) {
        (None, None) => true,
        (Some(a), Some(b)) => ClassRef::ptr_eq(a, b),
        _ => false,
    };
    if !same_parent {
        return Err(ReloadError::ParentChanged(class.name().to_string()));
    }
    Ok(())
}

/// One class of a [`Runtime::reload_all`]: its new version installed, what it replaced, and its
/// objects on the way to their new states.
struct Staged {
    class: ClassRef,
    old_ptr: *const Version,
    old_slots: Vec<*mut c_void>,
    old_vmctx: *mut c_void,
    old_entry: u64,
    new_key: u64,
    plan: Vec<Option<usize>>,
    report: ReloadReport,
    /// The live objects when the version was installed, each retained.
    snapshot: Vec<*const Object>,
    /// Phase A: a new state per snapshot object. Phase B: the old states swapped out.
    built: Vec<*mut u64>,
    /// Phase B: new states of objects destroyed meanwhile, never installed.
    unused: Vec<*mut u64>,
}

/// Phase A of one class: a new state for every object of the snapshot, none installed.
fn build_states(s: &mut Staged) -> Result<(), Box<ScriptError>> {
    // SAFETY: installed by `reload_all`; kept with the class.
    let new_version = unsafe { &*s.class.version_ptr() };
    let mut keep = Vec::with_capacity(s.plan.len());
    s.built.reserve(s.snapshot.len());
    for &obj in &s.snapshot {
        // SAFETY: retained when the snapshot was taken.
        let cells = unsafe { &*obj }.state_ptr();
        keep.clear();
        // SAFETY: a listed object has a state built with the old version (the one current since
        // its creation or last migration), and `plan` indexes its cells.
        keep.extend(s.plan.iter().map(|p| p.map(|j| unsafe { *cells.add(j) })));
        s.built
            .push(object::build_state(new_version, s.class.vmctx(), &keep)?);
    }
    Ok(())
}

/// Undo a [`Runtime::reload_all`] before phase B: every class back to its old version, slots,
/// context and entry key, the states built so far dropped, the snapshots released.
fn restore_all(staged: &[Staged]) {
    for s in staged.iter().rev() {
        for &state in &s.built {
            // SAFETY: built by `build_states`, never installed; its kept cells still belong to
            // the old blocks, so they are cleared first.
            unsafe { forget_kept_and_drop(state, &s.plan) };
        }
        s.class.restore(s.old_ptr, &s.old_slots, s.old_vmctx);
        s.class
            .entry
            .store(s.old_entry | ENTRY_PENDING, Ordering::Release);
        release_all(&s.snapshot);
    }
}

/// Phase B of one class: each snapshot object still listed takes its new state and key; the
/// old states (and the new ones of objects destroyed meanwhile) are kept for [`finish`].
fn swap_states(s: &mut Staged) {
    let built = std::mem::take(&mut s.built);
    let _live = s.class.live.lock();
    for (&obj, state) in s.snapshot.iter().zip(built) {
        // SAFETY: retained.
        let obj = unsafe { &*obj };
        if obj.live_index.load(Ordering::Relaxed) == NOT_LISTED {
            s.unused.push(state);
            continue;
        }
        s.built.push(obj.state.swap(state, Ordering::AcqRel));
        obj.key.store(s.new_key, Ordering::Release);
        object::bind(obj, &s.class);
    }
}

/// After every class's phase B: drop the old states, release the snapshot, count the reload.
fn finish(s: Staged) -> ReloadReport {
    let mut report = s.report;
    report.migrated = s.built.len();
    for &state in &s.built {
        // SAFETY: swapped out by `swap_states`, no longer reachable; kept cells moved to the
        // new block.
        unsafe { forget_kept_and_drop_old(state, &s.plan) };
    }
    for &state in &s.unused {
        // SAFETY: built and never installed.
        unsafe { forget_kept_and_drop(state, &s.plan) };
    }
    s.class.reloads.fetch_add(1, Ordering::Relaxed);
    release_all(&s.snapshot);
    report
}

/// Match the new layout's fields with the old one's: `plan[i]` is the old cell that new cell `i`
/// keeps.
fn plan_migration(old: &Version, new: &Version) -> (Vec<Option<usize>>, ReloadReport) {
    let mut report = ReloadReport::empty();
    let plan = new
        .fields
        .iter()
        .map(|f| match old.field(&f.name) {
            Some(j) if old.fields[j].ty == f.ty && f.ty.holds_code() => {
                report.reset.push(f.name.to_string());
                None
            }
            Some(j) if old.fields[j].ty == f.ty => {
                report.kept.push(f.name.to_string());
                Some(j)
            }
            Some(_) => {
                report.retyped.push(f.name.to_string());
                None
            }
            None => {
                report.added.push(f.name.to_string());
                None
            }
        })
        .collect();
    report.removed = old
        .fields
        .iter()
        .filter(|f| new.field(&f.name).is_none())
        .map(|f| f.name.to_string())
        .collect();
    (plan, report)
}

/// Drop a new block whose kept cells still belong to an old block.
///
/// # Safety
/// `state` comes from `build_state` with `keep` following `plan`, and is not used afterwards.
unsafe fn forget_kept_and_drop(state: *mut u64, plan: &[Option<usize>]) {
    for (i, p) in plan.iter().enumerate() {
        if p.is_some() {
            // SAFETY: `i` indexes the new block's cells.
            unsafe { *state.add(i) = 0 };
        }
    }
    // SAFETY: per the contract.
    unsafe { object::drop_state_now(state) };
}

/// Drop an old block whose kept cells moved to a new block.
///
/// # Safety
/// `state` was an object's state with the layout `plan` refers to, and is unreachable now.
unsafe fn forget_kept_and_drop_old(state: *mut u64, plan: &[Option<usize>]) {
    for j in plan.iter().flatten() {
        // SAFETY: `j` indexes the old block's cells.
        unsafe { *state.add(*j) = 0 };
    }
    // SAFETY: per the contract.
    unsafe { object::drop_state_now(state) };
}

fn release_all(objects: &[*const Object]) {
    for &o in objects {
        object::release(o);
    }
}
