//! The call-path layers: each one's meaning alone, and every order of them giving one answer.

mod runtime_support;

use std::ffi::c_void;
use std::panic::{self, AssertUnwindSafe};

use hotlab::lang::span::Span;
use hotlab::runtime::border::{
    Bound, CallPath, Depth, Detached, Direct, Entry, Fused, Iface, Slot, TryCatch,
};
use hotlab::runtime::class::SlotIndex;
use hotlab::runtime::depth::{set_depth_limit, with_record};
use hotlab::runtime::error::{ScriptError, ScriptErrorKind};
use hotlab::runtime::handle::Handle;
use hotlab::runtime::iface::{Bench, BenchRun, Hook};
use hotlab::runtime::object::Object;
use hotlab::runtime::reload::ReloadError;
use hotlab::runtime::rt::Runtime;
use runtime_support::*;

const RUN: fn() -> SlotIndex = || SlotIndex::new(0).unwrap();

/// A stand-in for a generated `Bench.run` whose behaviour depends on `n`: `0` returns 42, a
/// negative `n` raises, a positive `n` calls itself again through the host border along the path
/// `P`, forever (runaway recursion: only a depth limit stops it).
extern "C-unwind" fn program<P: CallPath<BenchRun>>(
    _: *mut c_void,
    this: *const Object,
    n: i64,
) -> i64 {
    match n {
        0 => 42,
        n if n < 0 => ScriptError::new(ScriptErrorKind::DivisionByZero, Span::new(1, 2)).raise(),
        n => {
            // SAFETY: called through the border with a live shell; slot 0 is this very method.
            let obj = unsafe { &*this };
            // SAFETY: slot 0 holds `program::<P>`, of signature `BenchRun`.
            match unsafe { P::call(obj, RUN(), (n + 1,)) } {
                Ok(v) => v,
                Err(e) => e.raise(),
            }
        }
    }
}

/// Everything a path answers: a plain call, a raised error, runaway recursion, the depth left
/// afterwards, and a call on a detached object.
fn outcome<P: CallPath<BenchRun>>() -> Vec<String> {
    outcome_in::<P>(Runtime::new())
}

/// [`outcome`] with the object in `rt`.
fn outcome_in<P: CallPath<BenchRun>>(rt: Runtime) -> Vec<String> {
    let c = rt
        .define(class("P", vec![], vec![bench(program::<P>)]))
        .unwrap();
    let h = rt.new_object(&c).unwrap();
    let obj = h.get().unwrap();
    assert!(set_depth_limit(40));
    // SAFETY: slot 0 is `program::<P>` of signature `BenchRun`; the object is attached, and no
    // reload runs.
    let call = |n| unsafe { P::call(obj, RUN(), (n,)) };
    let mut out = vec![
        format!("{:?}", call(0)),
        format!("{:?}", call(-1)),
        format!("{:?}", call(1)),
    ];
    out.push(format!("depth {}", with_record(|r| r.depth())));
    rt.detach(&h).unwrap();
    out.push(format!("{:?}", call(0)));
    out
}

macro_rules! outcomes {
    ($($path:ty),* $(,)?) => {
        vec![$((stringify!($path), outcome::<$path>())),*]
    };
}

#[test]
fn every_order_of_the_layers_gives_the_same_results() {
    let all = outcomes![
        Entry<Detached<TryCatch<Depth<Slot>>>>,
        Entry<Detached<Depth<TryCatch<Slot>>>>,
        Entry<TryCatch<Detached<Depth<Slot>>>>,
        Entry<TryCatch<Depth<Detached<Slot>>>>,
        Entry<Depth<Detached<TryCatch<Slot>>>>,
        Entry<Depth<TryCatch<Detached<Slot>>>>,
        Detached<Entry<TryCatch<Depth<Slot>>>>,
        Detached<Entry<Depth<TryCatch<Slot>>>>,
        Detached<TryCatch<Entry<Depth<Slot>>>>,
        Detached<TryCatch<Depth<Entry<Slot>>>>,
        Detached<Depth<Entry<TryCatch<Slot>>>>,
        Detached<Depth<TryCatch<Entry<Slot>>>>,
        TryCatch<Entry<Detached<Depth<Slot>>>>,
        TryCatch<Entry<Depth<Detached<Slot>>>>,
        TryCatch<Detached<Entry<Depth<Slot>>>>,
        TryCatch<Detached<Depth<Entry<Slot>>>>,
        TryCatch<Depth<Entry<Detached<Slot>>>>,
        TryCatch<Depth<Detached<Entry<Slot>>>>,
        Depth<Entry<Detached<TryCatch<Slot>>>>,
        Depth<Entry<TryCatch<Detached<Slot>>>>,
        Depth<Detached<Entry<TryCatch<Slot>>>>,
        Depth<Detached<TryCatch<Entry<Slot>>>>,
        Depth<TryCatch<Entry<Detached<Slot>>>>,
        Depth<TryCatch<Detached<Entry<Slot>>>>,
        Fused<Slot>,
        Fused<Bound>,
        Depth<TryCatch<Detached<Entry<Bound>>>>,
    ];
    let expected = vec![
        "Ok(42)".to_string(),
        format!(
            "{:?}",
            Err::<i64, _>(ScriptError::new(
                ScriptErrorKind::DivisionByZero,
                Span::new(1, 2)
            ))
        ),
        format!(
            "{:?}",
            Err::<i64, _>(ScriptError::new(
                ScriptErrorKind::DepthLimit { limit: 40 },
                Span::default()
            ))
        ),
        "depth 0".to_string(),
        format!(
            "{:?}",
            Err::<i64, _>(ScriptError::new(
                ScriptErrorKind::ObjectDetached,
                Span::default()
            ))
        ),
    ];
    for (name, got) in all {
        assert_eq!(got, expected, "path {name}");
    }
}

#[test]
fn the_detached_check_alone_fails_a_detached_object() {
    let rt = Runtime::new();
    let c = rt
        .define(class("C", vec![], vec![bench(identity)]))
        .unwrap();
    let h = rt.new_object(&c).unwrap();
    // SAFETY: slot 0 is `identity`, of signature `BenchRun`; the checked path guards the rest.
    let call =
        || unsafe { <Detached<Slot> as CallPath<BenchRun>>::call(h.get().unwrap(), RUN(), (5,)) };
    assert_eq!(call().unwrap(), 5);
    rt.detach(&h).unwrap();
    assert_eq!(call().unwrap_err().kind, ScriptErrorKind::ObjectDetached);
}

#[test]
fn try_catch_turns_a_raised_error_into_err_and_without_it_the_error_unwinds() {
    let rt = Runtime::new();
    let c = rt
        .define(class("C", vec![], vec![bench(program::<Slot>)]))
        .unwrap();
    let h = rt.new_object(&c).unwrap();
    let obj = h.get().unwrap();
    // SAFETY: slot 0 is `program::<Slot>`; attached; no reload.
    let caught = unsafe { <TryCatch<Slot> as CallPath<BenchRun>>::call(obj, RUN(), (-1,)) };
    assert_eq!(caught.unwrap_err().kind, ScriptErrorKind::DivisionByZero);
    // SAFETY: as above.
    let escaped = panic::catch_unwind(AssertUnwindSafe(|| unsafe {
        <Slot as CallPath<BenchRun>>::call(obj, RUN(), (-1,))
    }));
    let payload = escaped.unwrap_err();
    assert_eq!(
        payload.downcast_ref::<ScriptError>().unwrap().kind,
        ScriptErrorKind::DivisionByZero
    );
}

#[test]
fn the_depth_layer_stops_runaway_recursion_and_restores_the_depth() {
    let rt = Runtime::new();
    let c = rt
        .define(class(
            "C",
            vec![],
            vec![bench(program::<Depth<TryCatch<Slot>>>)],
        ))
        .unwrap();
    let h = rt.new_object(&c).unwrap();
    assert!(set_depth_limit(25));
    // SAFETY: slot 0 has signature `BenchRun`; attached; no reload.
    let err = unsafe {
        <Depth<TryCatch<Slot>> as CallPath<BenchRun>>::call(h.get().unwrap(), RUN(), (1,))
    }
    .unwrap_err();
    assert_eq!(err.kind, ScriptErrorKind::DepthLimit { limit: 25 });
    assert_eq!(err.kind.to_string(), "call depth limit 25 exceeded");
    assert_eq!(with_record(|r| r.depth()), 0);
}

extern "C-unwind" fn recurse_hook(_: *mut c_void, this: *const Object, n: i64) -> i64 {
    // SAFETY: called through the border with a live shell.
    match unsafe { &*this }.run(n + 1).into_result() {
        Ok(v) => v,
        Err(e) => e.raise(),
    }
}

#[test]
fn the_host_interface_uses_the_fused_path_with_the_default_limit() {
    let rt = Runtime::new();
    let c = rt
        .define(class("C", vec![], vec![bench(recurse_hook)]))
        .unwrap();
    let h = rt.new_object(&c).unwrap();
    let err = h.run(0).into_result().unwrap_err();
    assert_eq!(
        err.kind,
        ScriptErrorKind::DepthLimit {
            limit: hotlab::runtime::depth::DEFAULT_DEPTH_LIMIT
        }
    );
    assert_eq!(with_record(|r| r.depth()), 0);
    // A panic that is not a ScriptError is contained too.
    extern "C-unwind" fn boom(_: *mut c_void, _: *const Object, _: i64) -> i64 {
        panic!("bug in a host function")
    }
    let c = rt.define(class("D", vec![], vec![bench(boom)])).unwrap();
    let h = rt.new_object(&c).unwrap();
    assert_eq!(
        h.run(0).into_result().unwrap_err().kind,
        ScriptErrorKind::HostPanic("bug in a host function".into())
    );
}

#[test]
fn a_class_without_the_method_reports_it() {
    let rt = Runtime::new();
    let c = rt.define(class("C", vec![], vec![hook(seven)])).unwrap();
    let h = rt.new_object(&c).unwrap();
    assert_eq!(
        h.run(1).into_result().unwrap_err().kind,
        ScriptErrorKind::NotImplemented {
            class: "C".into(),
            method: "Bench.run".into()
        }
    );
}

#[test]
fn the_direct_path_of_a_fixed_runtime_answers_like_the_others() {
    // Value, raised error, runaway recursion, depth restored, detached object: as `Fused<Slot>`.
    assert_eq!(
        outcome_in::<Direct<Iface>>(Runtime::fixed()),
        outcome::<Fused<Slot>>()
    );
}

/// The host interfaces on a fixed runtime (the direct path): every answer of the fused path.
#[test]
fn the_host_interfaces_of_a_fixed_runtime_keep_every_check() {
    let rt = Runtime::fixed();
    let c = rt
        .define(class(
            "C",
            vec![int("n", 0)],
            vec![hook(count_call), bench(program::<Slot>)],
        ))
        .unwrap();
    let h = rt.new_object(&c).unwrap();
    // Values, through the handle and through the shell.
    assert_eq!(h.call().into_result().unwrap(), 1);
    assert_eq!(h.get().unwrap().call().into_result().unwrap(), 2);
    assert_eq!(h.run(0).into_result().unwrap(), 42);
    // A raised ScriptError is caught and reported with its span.
    let e = h.run(-1).into_result().unwrap_err();
    assert_eq!(
        (e.kind, e.span),
        (ScriptErrorKind::DivisionByZero, Span::new(1, 2))
    );
    assert_eq!(with_record(|r| r.depth()), 0);
    // Null and stale handles still fail, and so does a detached object.
    assert_eq!(
        Handle::null().call().into_result().unwrap_err().kind,
        ScriptErrorKind::NullHandle
    );
    let other = rt.new_object(&c).unwrap();
    let stale = other.clone();
    rt.destroy(&other).unwrap();
    assert_eq!(
        stale.run(0).into_result().unwrap_err().kind,
        ScriptErrorKind::StaleHandle
    );
    // A collect (the one stop a fixed runtime has) frees the destroyed state; calls go on.
    assert_eq!(rt.collect().unwrap(), 1);
    assert_eq!(h.call().into_result().unwrap(), 3);
    rt.detach(&h).unwrap();
    assert_eq!(
        h.call().into_result().unwrap_err().kind,
        ScriptErrorKind::ObjectDetached
    );
    assert_eq!(
        h.run(0).into_result().unwrap_err().kind,
        ScriptErrorKind::ObjectDetached
    );
    assert_eq!(with_record(|r| r.depth()), 0);
}

#[test]
fn runaway_recursion_from_the_host_hits_the_limit_on_a_fixed_runtime() {
    let rt = Runtime::fixed();
    let c = rt
        .define(class("C", vec![], vec![bench(recurse_hook)]))
        .unwrap();
    let h = rt.new_object(&c).unwrap();
    assert!(set_depth_limit(30));
    assert_eq!(
        h.run(0).into_result().unwrap_err().kind,
        ScriptErrorKind::DepthLimit { limit: 30 }
    );
    assert_eq!(with_record(|r| r.depth()), 0);
    // A class without the method reports it, as on the fused path.
    let d = rt.define(class("D", vec![], vec![hook(seven)])).unwrap();
    let h = rt.new_object(&d).unwrap();
    assert_eq!(h.call().into_result().unwrap(), 7);
    assert_eq!(
        h.run(1).into_result().unwrap_err().kind,
        ScriptErrorKind::NotImplemented {
            class: "D".into(),
            method: "Bench.run".into()
        }
    );
}

#[test]
fn a_fixed_runtime_refuses_unload_and_the_reloadable_one_still_unloads() {
    // The direct path does not look at the entry word an unload raises, so a fixed runtime's
    // class cannot be unloaded under it.
    let rt = Runtime::fixed();
    let c = rt.define(class("C", vec![], vec![hook(seven)])).unwrap();
    let h = rt.new_object(&c).unwrap();
    let e = rt.unload(&c).unwrap_err();
    assert_eq!(e, ReloadError::UnloadFixed("C".into()));
    assert!(e.to_string().contains("cannot be unloaded"), "{e}");
    assert_eq!(h.call().into_result().unwrap(), 7);
    let rt = Runtime::new();
    let c = rt.define(class("C", vec![], vec![hook(seven)])).unwrap();
    let h = rt.new_object(&c).unwrap();
    assert_eq!(rt.unload(&c).unwrap(), 1);
    assert_eq!(
        h.call().into_result().unwrap_err().kind,
        ScriptErrorKind::StaleHandle
    );
}

thread_local! {
    /// The runtime and the object [`destroy_inside`] tries to destroy and detach.
    static VICTIM: std::cell::RefCell<Option<(Runtime, Handle)>> = const { std::cell::RefCell::new(None) };
}

/// A method body that tries `destroy` (n = 0) or `detach` (n = 1) of the object in [`VICTIM`]
/// from inside the call: 1 when refused with `InsideCall`, 0 when it went through; any other
/// `n` does nothing and returns 0.
extern "C-unwind" fn destroy_inside(_: *mut c_void, _: *const Object, n: i64) -> i64 {
    if n > 1 {
        return 0;
    }
    VICTIM.with(|v| {
        let v = v.borrow();
        let (rt, h) = v.as_ref().expect("the test set the victim");
        let r = if n == 0 { rt.destroy(h) } else { rt.detach(h) };
        match r {
            Err(e) if e.kind == ScriptErrorKind::InsideCall => 1,
            _ => 0,
        }
    })
}

/// Script code checks a handle once per region and relies on it staying valid until its call
/// returns (docs/runtime.md), so destroy and detach from inside a call on the same thread are
/// refused; between calls they work.
#[test]
fn destroy_and_detach_inside_a_call_are_refused() {
    for rt in [Runtime::new(), Runtime::fixed()] {
        let c = rt
            .define(class("C", vec![], vec![bench(destroy_inside)]))
            .unwrap();
        let caller = rt.new_object(&c).unwrap();
        let victim = rt.new_object(&c).unwrap();
        VICTIM.with(|v| *v.borrow_mut() = Some((rt, victim.clone())));
        assert_eq!(
            caller.run(0).into_result().unwrap(),
            1,
            "destroy inside a call"
        );
        assert_eq!(
            caller.run(1).into_result().unwrap(),
            1,
            "detach inside a call"
        );
        // The victim is still alive and attached; outside a call both work.
        let rt = VICTIM.with(|v| v.borrow_mut().take()).unwrap().0;
        assert_eq!(victim.run(2).into_result().unwrap(), 0);
        rt.detach(&victim).unwrap();
        assert_eq!(
            victim.run(2).into_result().unwrap_err().kind,
            ScriptErrorKind::ObjectDetached
        );
        rt.destroy(&victim).unwrap();
        assert_eq!(
            victim.run(2).into_result().unwrap_err().kind,
            ScriptErrorKind::StaleHandle
        );
    }
}

/// The host border folds the generation, detached, pending-reload and depth tests into one
/// compare and keeps every answer, through a handle and through the shell, in a reloadable and
/// in a fixed runtime.
#[test]
fn the_host_border_keeps_every_answer_in_both_runtimes() {
    for rt in [Runtime::new(), Runtime::fixed()] {
        let c = rt
            .define(class(
                "C",
                vec![int("n", 0)],
                vec![hook(count_call), bench(program::<Slot>)],
            ))
            .unwrap();
        let h = rt.new_object(&c).unwrap();
        assert_eq!(h.call().into_result().unwrap(), 1);
        assert_eq!(h.run(0).into_result().unwrap(), 42);
        let e = h.run(-1).into_result().unwrap_err();
        assert_eq!(
            (e.kind, e.span),
            (ScriptErrorKind::DivisionByZero, Span::new(1, 2))
        );
        let r = rt
            .define(class("R", vec![], vec![bench(recurse_hook)]))
            .unwrap();
        let runaway = rt.new_object(&r).unwrap();
        assert!(set_depth_limit(25));
        assert_eq!(
            runaway.run(0).into_result().unwrap_err().kind,
            ScriptErrorKind::DepthLimit { limit: 25 }
        );
        assert_eq!(with_record(|r| r.depth()), 0);
        // A destroyed object: stale through its handle (both methods), detached through its
        // shell, which a second handle keeps.
        let d = rt.new_object(&c).unwrap();
        let keep = d.clone();
        let shell: *const Object = keep.get().unwrap();
        rt.destroy(&d).unwrap();
        assert_eq!(
            keep.call().into_result().unwrap_err().kind,
            ScriptErrorKind::StaleHandle
        );
        assert_eq!(
            keep.run(0).into_result().unwrap_err().kind,
            ScriptErrorKind::StaleHandle
        );
        // SAFETY: `keep` owns a reference, so the shell is allocated.
        let e = unsafe { &*shell }.call().into_result().unwrap_err();
        assert_eq!(e.kind, ScriptErrorKind::ObjectDetached);
        assert_eq!(
            Handle::null().run(0).into_result().unwrap_err().kind,
            ScriptErrorKind::NullHandle
        );
        rt.detach(&h).unwrap();
        assert_eq!(
            h.call().into_result().unwrap_err().kind,
            ScriptErrorKind::ObjectDetached
        );
        assert_eq!(with_record(|r| r.depth()), 0);
        assert!(set_depth_limit(hotlab::runtime::depth::DEFAULT_DEPTH_LIMIT));
    }
}
