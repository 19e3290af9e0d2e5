//! Objects, handles, migration and leaks, driven from Rust as generated code will drive them.

mod runtime_support;

use std::ffi::c_void;

use hotlab::runtime::ScriptError;
use hotlab::runtime::class::ClassRef;
use hotlab::runtime::class::{ClassDef, DefineError, FieldType, Init, MethodDef};
use hotlab::runtime::error::ScriptErrorKind;
use hotlab::runtime::handle::Handle;
use hotlab::runtime::iface::Hook;
use hotlab::runtime::object::{Object, WORD_DETACHED};
use hotlab::runtime::reload::ReloadError;
use hotlab::runtime::rt::Runtime;
use runtime_support::*;

fn counter(rt: &Runtime) -> ClassRef {
    rt.define(class(
        "Counter",
        vec![int("n", 0), link("next", "Counter")],
        vec![hook(count_call)],
    ))
    .unwrap()
}

fn kind(r: Result<impl std::fmt::Debug, ScriptError>) -> ScriptErrorKind {
    r.unwrap_err().kind
}

#[test]
fn new_call_and_fields() {
    let rt = Runtime::new();
    let c = counter(&rt);
    let h = rt.new_object(&c).unwrap();
    assert_eq!(h.call().into_result().unwrap(), 1);
    assert_eq!(h.call().into_result().unwrap(), 2);
    assert_eq!(h.get().unwrap().read_field("n").unwrap(), 2);
    h.get().unwrap().write_field("n", 40).unwrap();
    assert_eq!(h.call().into_result().unwrap(), 41);
    assert_eq!(
        kind(h.get().unwrap().read_field("nope")),
        ScriptErrorKind::NoSuchField {
            class: "Counter".into(),
            field: "nope".into()
        }
    );
    assert!(matches!(
        kind(h.get().unwrap().read_field("next")),
        ScriptErrorKind::WrongFieldKind { .. }
    ));
    assert_eq!((c.live_count(), c.shell_count()), (1, 1));
    drop(h);
    assert_eq!((c.live_count(), c.shell_count()), (0, 0));
}

#[test]
fn migration_keeps_adds_removes_and_retypes_fields() {
    let rt = Runtime::new();
    let leaf = rt.define(class("Leaf", vec![], vec![])).unwrap();
    let v1 = class(
        "Thing",
        vec![
            int("a", 1),
            float("b", 2.5),
            boolean("c", true),
            link("gone", "Leaf"),
            link("stay", "Leaf"),
        ],
        vec![hook(seven)],
    );
    let c = rt.define(v1).unwrap();
    let objs: Vec<Handle> = (0..3).map(|_| rt.new_object(&c).unwrap()).collect();
    for (i, h) in objs.iter().enumerate() {
        let o = h.get().unwrap();
        o.write_field("a", 10 + i as u64).unwrap();
        o.write_field("b", (0.5 + i as f64).to_bits()).unwrap();
        o.set_handle_field("gone", rt.new_object(&leaf).unwrap())
            .unwrap();
        o.set_handle_field("stay", rt.new_object(&leaf).unwrap())
            .unwrap();
    }
    assert_eq!(leaf.shell_count(), 6);
    assert_eq!(objs[0].call().into_result().unwrap(), 7);

    let v2 = class(
        "Thing",
        vec![
            float("a", 9.0),
            float("b", 0.0),
            link("stay", "Leaf"),
            int("d", 77),
        ],
        vec![hook(eight)],
    );
    let report = rt.reload(&c, v2).unwrap();
    assert_eq!(report.version, 2);
    assert_eq!(report.migrated, 3);
    assert_eq!(report.kept, vec!["b", "stay"]);
    assert_eq!(report.added, vec!["d"]);
    assert_eq!(report.retyped, vec!["a"]);
    assert_eq!(report.removed, vec!["c", "gone"]);
    // The removed handle field released its objects; the kept one did not.
    assert_eq!(leaf.shell_count(), 3);
    for (i, h) in objs.iter().enumerate() {
        let o = h.get().unwrap();
        assert_eq!(f64::from_bits(o.read_field("a").unwrap()), 9.0);
        assert_eq!(f64::from_bits(o.read_field("b").unwrap()), 0.5 + i as f64);
        assert_eq!(o.read_field("d").unwrap(), 77);
        assert!(!o.handle_field("stay").unwrap().is_null());
        assert_eq!(
            kind(o.read_field("c")),
            ScriptErrorKind::NoSuchField {
                class: "Thing".into(),
                field: "c".into()
            }
        );
        assert_eq!(o.state_version().unwrap().number, 2);
        // The host's handles stayed valid, and the next call runs the new code.
        assert_eq!(h.call().into_result().unwrap(), 8);
    }
    drop(objs);
    assert_eq!((c.shell_count(), leaf.shell_count()), (0, 0));
}

#[test]
fn null_stale_and_destroyed_handles_raise() {
    let rt = Runtime::new();
    let c = counter(&rt);
    assert_eq!(
        kind(Handle::null().call().into_result()),
        ScriptErrorKind::NullHandle
    );
    let h = rt.new_object(&c).unwrap();
    let other = h.clone();
    rt.destroy(&h).unwrap();
    assert_eq!(kind(h.call().into_result()), ScriptErrorKind::StaleHandle);
    assert_eq!(
        kind(other.call().into_result()),
        ScriptErrorKind::StaleHandle
    );
    assert_eq!(
        kind(other.clone().get().map(|_| ())),
        ScriptErrorKind::StaleHandle
    );
    assert_eq!(kind(rt.destroy(&other)), ScriptErrorKind::StaleHandle);
    assert_eq!(c.live_count(), 0);
    assert_eq!(rt.retired_count(), 1);
    assert_eq!(rt.collect().unwrap(), 1);
    // The shell stays while handles refer to it, so a stale check never reads freed memory.
    assert_eq!(c.shell_count(), 1);
    drop((h, other));
    assert_eq!(c.shell_count(), 0);
}

#[test]
fn a_detached_object_fails_calls_and_is_not_migrated() {
    let rt = Runtime::new();
    let c = counter(&rt);
    let h = rt.new_object(&c).unwrap();
    let kept = rt.new_object(&c).unwrap();
    rt.detach(&h).unwrap();
    assert!(h.is_valid());
    assert_eq!(
        kind(h.call().into_result()),
        ScriptErrorKind::ObjectDetached
    );
    assert_eq!(
        kind(h.get().unwrap().read_field("n")),
        ScriptErrorKind::ObjectDetached
    );
    let report = rt
        .reload(&c, class("Counter", vec![int("n", 0)], vec![hook(eight)]))
        .unwrap();
    assert_eq!(report.migrated, 1);
    assert_eq!(kept.call().into_result().unwrap(), 8);
    assert_eq!(
        kind(h.call().into_result()),
        ScriptErrorKind::ObjectDetached
    );
    drop((h, kept));
    assert_eq!(c.shell_count(), 0);
}

/// Generated code tests a handle's cell against the shell's handle word, so detach marks the
/// word (`WORD_DETACHED`) while the generation handles carry stays the same; destroy makes the
/// handle stale (another generation in the word).
#[test]
fn a_detached_object_is_marked_in_its_handle_word_and_keeps_its_generation() {
    let rt = Runtime::new();
    let c = counter(&rt);
    let h = rt.new_object(&c).unwrap();
    let word = |h: &Handle| {
        let obj = h.get().unwrap() as *const Object as *const u8;
        // SAFETY: `h` keeps the shell allocated; the word is an aligned u64 at `Object::WORD`.
        unsafe { std::ptr::read_volatile(obj.add(Object::WORD) as *const u64) }
    };
    let g = h.get().unwrap().generation();
    // The word is the handle's own cell: the shell's address and the generation as its tag.
    assert_eq!(word(&h), h.cell());
    assert_eq!(h.cell() >> 48, u64::from(g));
    rt.detach(&h).unwrap();
    assert_eq!(h.get().unwrap().generation(), g);
    assert_eq!(word(&h), h.cell() | WORD_DETACHED);
    // A detached object can still be destroyed: its handles then go stale.
    let other = h.clone();
    let before = other.cell();
    rt.destroy(&h).unwrap();
    assert_eq!(kind(other.get().map(|_| ())), ScriptErrorKind::StaleHandle);
    // SAFETY: `other` keeps the shell allocated; the word is an aligned u64 at `Object::WORD`.
    let after = unsafe {
        std::ptr::read_volatile(
            ((before & ((1 << 48) - 1)) as *const u8).add(Object::WORD) as *const u64
        )
    };
    assert_eq!(
        after,
        (before + (1 << 48)) | WORD_DETACHED,
        "the next generation, still detached"
    );
    drop((h, other));
    rt.collect().unwrap();
    assert_eq!(c.shell_count(), 0);
}

#[test]
fn unload_destroys_every_object_and_refuses_new() {
    let rt = Runtime::new();
    let c = counter(&rt);
    let a = rt.new_object(&c).unwrap();
    let b = rt.new_object(&c).unwrap();
    a.get()
        .unwrap()
        .set_handle_field("next", b.clone())
        .unwrap();
    assert_eq!(rt.unload(&c).unwrap(), 2);
    assert_eq!(kind(a.call().into_result()), ScriptErrorKind::StaleHandle);
    assert_eq!(
        kind(rt.new_object(&c)),
        ScriptErrorKind::ClassUnloaded("Counter".into())
    );
    assert!(matches!(
        rt.reload(&c, class("Counter", vec![], vec![])),
        Err(ReloadError::Unloaded(_))
    ));
    drop((a, b));
    assert_eq!(c.shell_count(), 0);
}

#[test]
fn a_long_chain_frees_without_recursion_and_a_cycle_needs_destroy() {
    let rt = Runtime::new();
    let c = counter(&rt);
    let head = rt.new_object(&c).unwrap();
    let mut tail = head.clone();
    for _ in 0..100_000 {
        let next = rt.new_object(&c).unwrap();
        tail.get()
            .unwrap()
            .set_handle_field("next", next.clone())
            .unwrap();
        tail = next;
    }
    drop(tail);
    assert_eq!(c.shell_count(), 100_001);
    drop(head);
    assert_eq!(c.shell_count(), 0);

    // A cycle keeps itself alive (reference counting, no tracing: the documented policy)...
    let a = rt.new_object(&c).unwrap();
    let b = rt.new_object(&c).unwrap();
    a.get()
        .unwrap()
        .set_handle_field("next", b.clone())
        .unwrap();
    b.get()
        .unwrap()
        .set_handle_field("next", a.clone())
        .unwrap();
    let a2 = a.clone();
    drop((a, b));
    assert_eq!(c.shell_count(), 2);
    // ...until one member is destroyed and collected, which releases its fields.
    rt.destroy(&a2).unwrap();
    rt.collect().unwrap();
    assert_eq!(c.shell_count(), 1);
    drop(a2);
    assert_eq!(c.shell_count(), 0);
}

/// An initializer in generated code: `new Leaf()`, through the runtime in `vmctx`.
extern "C-unwind" fn make_leaf(vmctx: *mut c_void) -> u64 {
    // SAFETY: the tests put a live `&Runtime` in this class's vmctx.
    let rt = unsafe { &*(vmctx as *const Runtime) };
    let leaf = rt.class("Leaf").unwrap();
    match rt.new_object(&leaf) {
        Ok(h) => h.into_cell(),
        Err(e) => e.raise(),
    }
}

extern "C-unwind" fn raising_init(_: *mut c_void) -> u64 {
    ScriptError::new(ScriptErrorKind::DivisionByZero, Default::default()).raise()
}

fn with_vmctx(mut def: ClassDef, rt: &Runtime) -> ClassDef {
    def.vmctx = rt as *const Runtime as *mut c_void;
    def
}

#[test]
fn initializer_code_makes_objects_and_a_raising_one_changes_nothing() {
    let rt = Runtime::new();
    let leaf = rt.define(class("Leaf", vec![], vec![])).unwrap();
    let strong = FieldType::Handle {
        class: "Leaf".into(),
        nullable: false,
    };
    let c = rt
        .define(with_vmctx(
            class(
                "Tree",
                vec![field("left", strong.clone(), Init::Code(make_leaf))],
                vec![hook(seven)],
            ),
            &rt,
        ))
        .unwrap();
    let objs: Vec<Handle> = (0..4).map(|_| rt.new_object(&c).unwrap()).collect();
    assert_eq!(leaf.shell_count(), 4);

    // A reload whose new field's initializer raises: Err, and the class is as it was.
    let bad = with_vmctx(
        class(
            "Tree",
            vec![
                field("left", strong.clone(), Init::Code(make_leaf)),
                field("x", FieldType::I64, Init::Code(raising_init)),
            ],
            vec![hook(eight)],
        ),
        &rt,
    );
    assert!(matches!(
        rt.reload(&c, bad),
        Err(ReloadError::Initializer(_))
    ));
    assert_eq!(objs[0].call().into_result().unwrap(), 7);
    assert_eq!(c.version().number, 1);
    assert_eq!(leaf.shell_count(), 4);

    // A reload adding a second field made by code: one new Leaf per object.
    let good = with_vmctx(
        class(
            "Tree",
            vec![
                field("left", strong.clone(), Init::Code(make_leaf)),
                field("right", strong, Init::Code(make_leaf)),
            ],
            vec![hook(eight)],
        ),
        &rt,
    );
    let report = rt.reload(&c, good).unwrap();
    assert_eq!(report.added, vec!["right"]);
    assert_eq!(leaf.shell_count(), 8);
    assert_eq!(objs[3].call().into_result().unwrap(), 8);
    drop(objs);
    assert_eq!((c.shell_count(), leaf.shell_count()), (0, 0));
}

#[test]
fn a_child_extends_the_layout_and_overrides_by_slot() {
    let rt = Runtime::new();
    let base = rt
        .define(class("Counter", vec![int("n", 5)], vec![hook(count_call)]))
        .unwrap();
    let mut def = class("Faster", vec![int("extra", 1)], vec![hook(seven)]);
    def.parent = Some(base.clone());
    let child = rt.define(def).unwrap();
    assert_eq!(child.slot_of("call"), base.slot_of("call"));
    let names: Vec<&str> = child.version().fields.iter().map(|f| &*f.name).collect();
    assert_eq!(names, vec!["n", "extra"]);
    let h = rt.new_object(&child).unwrap();
    assert_eq!(h.call().into_result().unwrap(), 7);
    assert_eq!(h.get().unwrap().read_field("n").unwrap(), 5);
}

#[test]
fn bad_definitions_are_refused() {
    let rt = Runtime::new();
    let dup = class("D", vec![int("x", 0), int("x", 1)], vec![]);
    assert_eq!(
        rt.define(dup).unwrap_err(),
        DefineError::DuplicateField("x".into())
    );
    let strong_null = class(
        "S",
        vec![field(
            "h",
            FieldType::Handle {
                class: "S".into(),
                nullable: false,
            },
            Init::Bits(0),
        )],
        vec![],
    );
    assert_eq!(
        rt.define(strong_null).unwrap_err(),
        DefineError::NullInitializer("h".into())
    );
    let c = rt.define(class("C", vec![], vec![hook(seven)])).unwrap();
    let mut changed = class("C", vec![], vec![bench(identity)]);
    changed.methods[0].name = "call".into();
    assert!(matches!(
        rt.reload(&c, changed),
        Err(ReloadError::Define(DefineError::SignatureChanged(_)))
    ));
    assert!(matches!(
        rt.reload(&c, class("D", vec![], vec![])),
        Err(ReloadError::WrongClass { .. })
    ));
}

#[test]
fn a_removed_method_leaves_an_empty_slot() {
    let rt = Runtime::new();
    let c = rt.define(class("C", vec![], vec![hook(seven)])).unwrap();
    let h = rt.new_object(&c).unwrap();
    rt.reload(&c, class("C", vec![], vec![])).unwrap();
    assert!(matches!(
        kind(h.call().into_result()),
        ScriptErrorKind::NotImplemented { .. }
    ));
    rt.reload(&c, class("C", vec![], vec![hook(eight)]))
        .unwrap();
    assert_eq!(h.call().into_result().unwrap(), 8);
    let obj: &Object = h.get().unwrap();
    assert_eq!(obj.class().reloads(), 2);
}

#[test]
fn slot_indices_belong_to_the_class_family_and_never_change_meaning() {
    use hotlab::runtime::border::{CallPath, Fused, Slot};
    use hotlab::runtime::iface::HookCall;
    let rt = Runtime::new();
    let base = rt.define(class("Base", vec![], vec![hook(seven)])).unwrap();
    let mut def = class("Child", vec![], vec![hook(eight)]);
    def.methods.push(MethodDef {
        name: "own".into(),
        ..hook(seven)
    });
    def.parent = Some(base.clone());
    let child = rt.define(def.clone()).unwrap();
    let own = child.slot_of("own").unwrap();
    // The parent gains a method: it takes a new index, not the child's `own`.
    let mut v2 = class("Base", vec![], vec![hook(seven)]);
    v2.methods.push(MethodDef {
        name: "later".into(),
        ..hook(eight)
    });
    rt.reload(&base, v2).unwrap();
    let later = base.slot_of("later").unwrap();
    assert_ne!(later, own);
    // A child object (its class not reloaded) has that slot empty: an error, not `own`'s code.
    let h = rt.new_object(&child).unwrap();
    // SAFETY: both slots, where filled, hold `HookCall` methods; the fused path checks the rest.
    let call =
        |slot| unsafe { <Fused<Slot> as CallPath<HookCall>>::call(h.get().unwrap(), slot, ()) };
    assert!(matches!(
        call(later).unwrap_err().kind,
        ScriptErrorKind::EmptySlot { .. }
    ));
    assert_eq!(call(own).unwrap(), 7);
    // Reloading the child inherits the new method, at the same index.
    rt.reload(&child, def.clone()).unwrap();
    assert_eq!(call(later).unwrap(), 8);
    assert_eq!(child.slot_of("own"), Some(own));
    // A reload cannot move the class to another family.
    def.parent = None;
    assert!(matches!(
        rt.reload(&child, def),
        Err(ReloadError::ParentChanged(_))
    ));
}

#[test]
fn a_handle_field_takes_its_class_or_a_descendant_of_its_runtime_only() {
    let rt = Runtime::new();
    let c = counter(&rt);
    let mut def = class("Faster", vec![], vec![hook(seven)]);
    def.parent = Some(c.clone());
    let faster = rt.define(def).unwrap();
    let other = rt.define(class("Other", vec![], vec![])).unwrap();
    let a = rt.new_object(&c).unwrap();
    let obj = a.get().unwrap();
    obj.set_handle_field("next", rt.new_object(&faster).unwrap())
        .unwrap();
    let err = obj
        .set_handle_field("next", rt.new_object(&other).unwrap())
        .unwrap_err();
    assert_eq!(
        err.kind,
        ScriptErrorKind::HandleClass {
            field: "next".into(),
            expected: "Counter".into(),
            found: "Other".into()
        }
    );
    obj.set_handle_field("next", Handle::null()).unwrap();
    // An object of another runtime's class of the same name: refused (its counts, layout and
    // code are the other runtime's; a fixed runtime's code would free it as one of its own).
    let rt2 = Runtime::new();
    let c2 = counter(&rt2);
    let foreign = rt2.new_object(&c2).unwrap();
    let err = obj.set_handle_field("next", foreign.clone()).unwrap_err();
    assert_eq!(
        err.kind,
        ScriptErrorKind::ForeignObject {
            field: "next".into(),
            class: "Counter".into()
        }
    );
    assert_eq!(
        foreign.get().unwrap().ref_count(),
        1,
        "the refused handle was dropped"
    );
    // Destroyed there, its handle stale: refused all the same (the shell is still counted,
    // and the other runtime still holds its retired reference).
    let stale = rt2.new_object(&c2).unwrap();
    rt2.destroy(&stale).unwrap();
    let err = obj.set_handle_field("next", stale.clone()).unwrap_err();
    assert_eq!(
        err.kind,
        ScriptErrorKind::ForeignObject {
            field: "next".into(),
            class: "Counter".into()
        }
    );
    assert!(obj.handle_field("next").unwrap().is_null());
    drop(stale);
    drop(foreign);
    drop(a);
    assert_eq!(
        (c.shell_count(), faster.shell_count(), other.shell_count()),
        (0, 0, 0)
    );
}

/// `name: ty` of a counted kind, initialized to `init`.
fn counted(
    name: &str,
    kind: hotlab::runtime::values::ElemKind,
    ty: &str,
    init: Init,
) -> hotlab::runtime::class::Field {
    field(
        name,
        FieldType::Counted {
            kind,
            ty: ty.into(),
            code: false,
        },
        init,
    )
}

/// `name: ty` of a counted kind, empty at first; `code` when the type holds closures.
fn empty_counted(
    name: &str,
    kind: hotlab::runtime::values::ElemKind,
    ty: &str,
    code: bool,
) -> hotlab::runtime::class::Field {
    let ty = FieldType::Counted {
        kind,
        ty: ty.into(),
        code,
    };
    field(name, ty, Init::Bits(0))
}

/// Vec and string fields: a field kept by name and whole type keeps its block (no double
/// release), a removed one is released, and one retyped between counted types with one cell
/// kind (`vec<i64>` → `vec<f64>`) or another (`str` → `vec<i64>`) is released and re-initialized.
#[test]
fn counted_fields_migrate_by_their_whole_type() {
    use hotlab::runtime::values::{ElemKind, live_blocks, str_text};
    let before = live_blocks();
    let rt = Runtime::new();
    let v1 = class(
        "Bag",
        vec![
            counted("s", ElemKind::Str, "str", Init::Text("hello".into())),
            counted("gone", ElemKind::Str, "str", Init::Text("bye".into())),
            counted("u", ElemKind::Str, "str", Init::Text("retyped".into())),
            counted("w", ElemKind::Vec, "vec<i64>", Init::Bits(0)),
        ],
        vec![hook(seven)],
    );
    let c = rt.define(v1).unwrap();
    let objs: Vec<Handle> = (0..3).map(|_| rt.new_object(&c).unwrap()).collect();
    assert_eq!(
        live_blocks() - before,
        9,
        "one string block per text field and object"
    );

    let v2 = class(
        "Bag",
        vec![
            counted("w", ElemKind::Vec, "vec<f64>", Init::Bits(0)),
            counted("s", ElemKind::Str, "str", Init::Text("other".into())),
            counted("u", ElemKind::Vec, "vec<i64>", Init::Bits(0)),
        ],
        vec![hook(eight)],
    );
    let report = rt.reload(&c, v2).unwrap();
    assert_eq!(report.kept, vec!["s"]);
    assert_eq!(report.retyped, vec!["w", "u"]);
    assert_eq!(report.removed, vec!["gone"]);
    assert_eq!(
        live_blocks() - before,
        3,
        "removed and retyped strings are released"
    );
    for h in &objs {
        let o = h.get().unwrap();
        let i = o.state_version().unwrap().field("s").unwrap();
        // SAFETY: the object is live and attached (no reload runs), `i` is in its layout, and
        // the field keeps its string while it is read.
        let text = unsafe { str_text(*o.state_ptr().add(i)) };
        assert_eq!(text, "hello", "a kept field keeps its value");
        assert_eq!(h.call().into_result().unwrap(), 8);
    }
    drop(objs);
    assert_eq!(c.shell_count(), 0);
    assert_eq!(
        live_blocks(),
        before,
        "the kept strings are freed once, with their objects"
    );
}

#[test]
fn a_reload_of_several_classes_is_one_step_that_a_late_failure_undoes() {
    let rt = Runtime::new();
    let leaf = rt.define(class("Leaf", vec![], vec![])).unwrap();
    let a = rt
        .define(class("A", vec![int("n", 1)], vec![hook(seven)]))
        .unwrap();
    let b = rt
        .define(class("B", vec![int("m", 2)], vec![hook(seven)]))
        .unwrap();
    let (ha, hb) = (rt.new_object(&a).unwrap(), rt.new_object(&b).unwrap());
    let strong = FieldType::Handle {
        class: "Leaf".into(),
        nullable: false,
    };
    // A migrates first (a new field made by code: one Leaf per object), then B's initializer
    // raises: A is back at version 1 with its old code, and the Leaf it made is gone.
    let a2 = with_vmctx(
        class(
            "A",
            vec![int("n", 1), field("l", strong, Init::Code(make_leaf))],
            vec![hook(eight)],
        ),
        &rt,
    );
    let b2 = with_vmctx(
        class(
            "B",
            vec![
                int("m", 2),
                field("x", FieldType::I64, Init::Code(raising_init)),
            ],
            vec![hook(eight)],
        ),
        &rt,
    );
    let failed = rt.reload_all(vec![(a.clone(), a2.clone()), (b.clone(), b2)], &[]);
    assert!(
        matches!(failed, Err(ReloadError::Initializer(_))),
        "{failed:?}"
    );
    assert_eq!((a.version().number, b.version().number), (1, 1));
    assert_eq!(
        (
            ha.call().into_result().unwrap(),
            hb.call().into_result().unwrap()
        ),
        (7, 7)
    );
    assert_eq!(
        leaf.shell_count(),
        0,
        "the Leaf the failed reload made leaked"
    );

    // Both at once: one report per class, in order, both on the new code.
    let b3 = class("B", vec![int("m", 2), int("x", 3)], vec![hook(eight)]);
    let reports = rt
        .reload_all(vec![(a.clone(), a2), (b.clone(), b3)], &[])
        .unwrap();
    let added: Vec<_> = reports
        .iter()
        .map(|r| (r.class.as_str(), r.added.clone()))
        .collect();
    assert_eq!(
        added,
        [("A", vec!["l".to_string()]), ("B", vec!["x".to_string()])]
    );
    assert_eq!(
        (
            ha.call().into_result().unwrap(),
            hb.call().into_result().unwrap()
        ),
        (8, 8)
    );
    drop((ha, hb));
    assert_eq!(
        (a.shell_count(), b.shell_count(), leaf.shell_count()),
        (0, 0, 0)
    );
}

#[test]
fn a_reload_that_drops_a_class_unloads_it_and_destroys_its_objects() {
    let rt = Runtime::new();
    let a = rt
        .define(class("A", vec![int("n", 1)], vec![hook(seven)]))
        .unwrap();
    let gone = rt.define(class("Gone", vec![], vec![hook(seven)])).unwrap();
    let held = rt.new_object(&gone).unwrap();
    let a2 = class("A", vec![int("n", 1)], vec![hook(eight)]);
    let reports = rt
        .reload_all(vec![(a.clone(), a2)], std::slice::from_ref(&gone))
        .unwrap();
    let gone_report = &reports[1];
    assert!(gone_report.unloaded && gone_report.class == "Gone" && gone_report.migrated == 1);
    assert!(!reports[0].unloaded);
    // Its code is the replaced version's: the object is destroyed (its handle stale) and `new` refuses.
    assert_eq!(
        kind(held.call().into_result()),
        ScriptErrorKind::StaleHandle
    );
    assert!(rt.new_object(&gone).is_err());
}

#[test]
fn a_failed_transaction_takes_back_its_classes_and_method_names() {
    let rt = Runtime::new();
    let base = rt.define(class("Base", vec![], vec![hook(seven)])).unwrap();
    let obj = rt.new_object(&base).unwrap();
    // Reload Base, define a child adding a method `run`, then fail (a child with a duplicate
    // field): nothing of it stays.
    let mut tx = rt.begin_reload().unwrap();
    tx.reload(&base, class("Base", vec![], vec![hook(eight)]))
        .unwrap();
    let mut child = class("Child", vec![], vec![bench(identity)]);
    child.parent = Some(base.clone());
    tx.define(child).unwrap();
    let mut bad = class("Bad", vec![int("x", 0), int("x", 1)], vec![]);
    bad.parent = Some(base.clone());
    assert!(tx.define(bad).is_err());
    drop(tx);
    assert!(
        rt.class("Child").is_none(),
        "a rolled-back class stayed defined"
    );
    assert_eq!(base.version().number, 1);
    assert_eq!(obj.call().into_result().unwrap(), 7);
    // `run` was taken back from the family: another signature for it is fine now.
    let mut other = class("Other", vec![], vec![hook(seven)]);
    other.methods.push(MethodDef {
        name: "run".into(),
        ..hook(seven)
    });
    other.parent = Some(base.clone());
    rt.define(other).unwrap();
}

#[test]
fn a_field_holding_closures_is_reset_even_with_the_same_type() {
    use hotlab::runtime::values::ElemKind;
    let rt = Runtime::new();
    let fields = || {
        vec![
            empty_counted("f", ElemKind::Fn, "fn(i64) -> i64", true),
            empty_counted("v", ElemKind::Vec, "vec<i64>", false),
        ]
    };
    let c = rt.define(class("C", fields(), vec![])).unwrap();
    let _obj = rt.new_object(&c).unwrap();
    let report = rt.reload(&c, class("C", fields(), vec![])).unwrap();
    assert_eq!(
        (report.kept, report.reset),
        (vec!["v".to_string()], vec!["f".to_string()])
    );
}

#[test]
fn a_fixed_runtimes_shells_are_counted_across_threads_without_a_list() {
    // A fixed runtime's classes list no objects (`runtime::shells`): the counts are per thread
    // and add up, also for objects made on one thread and freed on another, destroyed or
    // detached.
    let rt = std::sync::Arc::new(Runtime::fixed());
    let c = counter(&rt);
    assert!(c.is_inline());
    let made: Vec<Handle> = (0..10).map(|_| rt.new_object(&c).unwrap()).collect();
    assert_eq!((c.live_count(), c.shell_count()), (10, 10));
    rt.destroy(&made[0]).unwrap();
    rt.detach(&made[1]).unwrap();
    rt.detach(&made[1]).unwrap();
    assert_eq!((c.live_count(), c.shell_count()), (8, 10));
    let (rt2, c2) = (std::sync::Arc::clone(&rt), c.clone());
    let theirs = std::thread::spawn(move || {
        // Freed here, made there; and made here, to be freed there.
        drop(made);
        // The destroyed one waits for `collect` (the runtime keeps a handle until then).
        assert_eq!(c2.shell_count(), 1);
        (0..3)
            .map(|_| rt2.new_object(&c2).unwrap())
            .collect::<Vec<_>>()
    })
    .join()
    .unwrap();
    assert_eq!((c.live_count(), c.shell_count()), (3, 4));
    drop(theirs);
    rt.collect().unwrap();
    assert_eq!((c.live_count(), c.shell_count()), (0, 0));
}
