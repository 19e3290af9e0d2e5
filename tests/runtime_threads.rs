//! Reload against a call in progress on another thread.
#![cfg(feature = "thread-safe")]

mod runtime_support;

use std::ffi::c_void;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use hotlab::runtime::class::ENTRY_PENDING;
use hotlab::runtime::iface::Hook;
use hotlab::runtime::object::Object;
use hotlab::runtime::rt::Runtime;
use runtime_support::*;

static INSIDE: Barrier = Barrier::new(2);
static LEAVE: Barrier = Barrier::new(2);

/// Version 1's `call`: tells the test it is inside, then waits to be let out; returns 1.
extern "C-unwind" fn blocking_v1(_: *mut c_void, this: *const Object) -> i64 {
    INSIDE.wait();
    LEAVE.wait();
    // SAFETY: inside a call on an attached object whose cell 0 is `n: i64`.
    unsafe { *cell(this, 0) as i64 }
}

/// Version 2's `call`: `n` (kept by the migration) plus the new field `m`.
extern "C-unwind" fn v2(_: *mut c_void, this: *const Object) -> i64 {
    // SAFETY: as above; version 2 has `n` at cell 0 and `m` at cell 1.
    unsafe { (*cell(this, 0) + *cell(this, 1)) as i64 }
}

#[test]
fn a_reload_waits_for_a_call_in_progress_and_the_next_call_runs_the_new_code() {
    let rt = Runtime::new();
    let c = rt
        .define(class("C", vec![int("n", 1)], vec![hook(blocking_v1)]))
        .unwrap();
    let h = rt.new_object(&c).unwrap();
    let reloaded = AtomicBool::new(false);
    std::thread::scope(|s| {
        let a = s.spawn(|| h.call().into_result());
        INSIDE.wait(); // thread A is inside the call
        let b = s.spawn(|| {
            let report = rt.reload(
                &c,
                class("C", vec![int("n", 0), int("m", 100)], vec![hook(v2)]),
            );
            reloaded.store(true, Ordering::SeqCst);
            report
        });
        // B raises the entry word, then must wait for A.
        while c.entry_word() & ENTRY_PENDING == 0 {
            std::thread::yield_now();
        }
        // A third thread calling now waits too, and then runs the new code.
        let late = s.spawn(|| h.call().into_result());
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !reloaded.load(Ordering::SeqCst),
            "the reload finished while a call was inside"
        );
        assert!(
            !late.is_finished(),
            "a call went in while a reload was pending"
        );
        LEAVE.wait(); // A leaves
        assert_eq!(
            a.join().unwrap().unwrap(),
            1,
            "A finished on the old code and state"
        );
        let report = b.join().unwrap().unwrap();
        assert_eq!(
            (report.migrated, report.added.clone()),
            (1, vec!["m".to_string()])
        );
        assert!(report.waited > Duration::ZERO);
        assert_eq!(late.join().unwrap().unwrap(), 101);
    });
    assert_eq!(h.call().into_result().unwrap(), 101);
    drop(h);
    assert_eq!(c.shell_count(), 0);
}

extern "C-unwind" fn reload_from_inside(vmctx: *mut c_void, _: *const Object) -> i64 {
    // SAFETY: the test puts a live `&Runtime` in vmctx.
    let rt = unsafe { &*(vmctx as *const Runtime) };
    let c = rt.class("R").unwrap();
    match rt.reload(&c, class("R", vec![], vec![hook(seven)])) {
        Err(hotlab::runtime::reload::ReloadError::InsideCall) => -1,
        _ => 0,
    }
}

#[test]
fn a_reload_from_inside_a_call_is_refused_instead_of_waiting_for_itself() {
    let rt = Runtime::new();
    let mut def = class("R", vec![], vec![hook(reload_from_inside)]);
    def.vmctx = &rt as *const Runtime as *mut c_void;
    let c = rt.define(def).unwrap();
    let h = rt.new_object(&c).unwrap();
    assert_eq!(h.call().into_result().unwrap(), -1);
}

#[test]
fn many_threads_calling_while_reloading_see_old_or_new_code_only() {
    let rt = Runtime::new();
    let c = rt
        .define(class("C", vec![int("n", 0)], vec![hook(seven)]))
        .unwrap();
    let objs: Vec<_> = (0..8).map(|_| rt.new_object(&c).unwrap()).collect();
    let stop = AtomicBool::new(false);
    // Each caller's call count, so the reloads start only once every caller is calling and stop
    // only after every caller has called again since the last reload: whether a caller gets a
    // time slice during 50 quick reloads is up to the scheduler, not the runtime.
    let counts: Vec<AtomicU64> = (0..2).map(|_| AtomicU64::new(0)).collect();
    let wait_for_calls = |since: &[u64]| {
        while counts
            .iter()
            .zip(since)
            .any(|(n, &from)| n.load(Ordering::Acquire) <= from)
        {
            std::thread::yield_now();
        }
    };
    std::thread::scope(|s| {
        let callers: Vec<_> = (0..2)
            .map(|t| {
                let objs = &objs;
                let stop = &stop;
                let count = &counts[t];
                s.spawn(move || {
                    let mut calls = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let r = objs[(calls as usize + t) % objs.len()]
                            .call()
                            .into_result()
                            .unwrap();
                        assert!(r == 7 || r == 8);
                        calls += 1;
                        count.store(calls, Ordering::Release);
                    }
                    calls
                })
            })
            .collect();
        wait_for_calls(&[0, 0]);
        for i in 0..50 {
            let code = if i % 2 == 0 { eight } else { seven };
            let fields = if i % 2 == 0 {
                vec![int("n", 0), int("x", i)]
            } else {
                vec![int("n", 0)]
            };
            rt.reload(&c, class("C", fields, vec![hook(code)])).unwrap();
        }
        let after: Vec<u64> = counts.iter().map(|n| n.load(Ordering::Acquire)).collect();
        wait_for_calls(&after);
        stop.store(true, Ordering::Relaxed);
        for (t, caller) in callers.into_iter().enumerate() {
            assert!(caller.join().unwrap() > after[t]);
        }
    });
    assert_eq!(c.reloads(), 50);
    assert_eq!(c.live_count(), 8);
}

#[test]
fn with_thread_safe_everything_the_host_holds_can_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Runtime>();
    send_sync::<hotlab::runtime::handle::Handle>();
    send_sync::<hotlab::runtime::class::ClassRef>();
    send_sync::<Object>();
}

#[test]
fn new_destroy_and_drop_race_reloads_without_leaks() {
    let rt = Runtime::new();
    let c = rt
        .define(class(
            "C",
            vec![int("n", 0), link("next", "C")],
            vec![hook(count_call)],
        ))
        .unwrap();
    let stop = AtomicBool::new(false);
    // One counter per churn thread: a shared one let a single thread make all the progress
    // while the other was never scheduled, and its `i > 0` below then failed on a busy host.
    let progress = [AtomicU64::new(0), AtomicU64::new(0)];
    std::thread::scope(|s| {
        let churn: Vec<_> = (0..2)
            .map(|t| {
                let (rt, c, stop, progress) = (&rt, &c, &stop, &progress[t as usize]);
                s.spawn(move || {
                    let mut prev = rt.new_object(c).unwrap();
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let h = rt.new_object(c).unwrap();
                        h.get()
                            .unwrap()
                            .set_handle_field("next", prev.clone())
                            .unwrap();
                        match (i + t) % 3 {
                            0 => rt.destroy(&prev).unwrap(),
                            1 => assert!(h.call().into_result().unwrap() >= 1),
                            _ => {}
                        }
                        prev = h;
                        i += 1;
                        progress.fetch_add(1, Ordering::Relaxed);
                    }
                    i
                })
            })
            .collect();
        for i in 0..30 {
            // Let each churn thread run between reloads, so they really overlap (a thread that
            // ended early has panicked: stop waiting and let the join below report it).
            for p in &progress {
                let seen = p.load(Ordering::Relaxed);
                while p.load(Ordering::Relaxed) < seen + 10
                    && !churn.iter().any(|t| t.is_finished())
                {
                    std::thread::yield_now();
                }
            }
            let fields = if i % 2 == 0 {
                vec![int("n", 0), link("next", "C"), int("x", 1)]
            } else {
                vec![int("n", 0), link("next", "C")]
            };
            rt.reload(&c, class("C", fields, vec![hook(count_call)]))
                .unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        for t in churn {
            assert!(t.join().unwrap() > 0);
        }
    });
    rt.collect().unwrap();
    assert_eq!((c.live_count(), c.shell_count()), (0, 0));
}

/// A committed reload hands its caller a `Held`: calls from other threads stay out until the
/// caller has switched its program over and lets it go (a host thread never sees the new
/// classes with the program around them half switched).
#[test]
fn calls_wait_until_the_committed_reload_lets_them_in() {
    let rt = Runtime::new();
    let c = rt
        .define(class("C", vec![int("n", 1)], vec![hook(seven)]))
        .unwrap();
    let h = rt.new_object(&c).unwrap();
    let returned = AtomicBool::new(false);
    let mut tx = rt.begin_reload().unwrap();
    tx.reload(&c, class("C", vec![int("n", 1)], vec![hook(eight)]))
        .unwrap();
    let (reports, held) = tx.commit_held().unwrap();
    assert_eq!(reports[0].migrated, 1);
    std::thread::scope(|s| {
        let caller = s.spawn(|| {
            let got = h.call().into_result();
            returned.store(true, Ordering::SeqCst);
            got
        });
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !returned.load(Ordering::SeqCst),
            "a call went in while the reload held calls out"
        );
        drop(held);
        assert_eq!(caller.join().unwrap().unwrap(), 8);
    });
}

/// While a committed reload holds calls out, another reload (or collect, or unload) waits for
/// it: its own stop must not be covered by the first one's pending bits, which go when the
/// first lets calls in.
#[test]
fn a_second_stop_waits_for_a_held_reload() {
    let rt = Runtime::new();
    let c = rt
        .define(class("C", vec![int("n", 1)], vec![hook(seven)]))
        .unwrap();
    let _h = rt.new_object(&c).unwrap();
    let collected = AtomicBool::new(false);
    let mut tx = rt.begin_reload().unwrap();
    tx.reload(&c, class("C", vec![int("n", 1)], vec![hook(eight)]))
        .unwrap();
    let (_, held) = tx.commit_held().unwrap();
    std::thread::scope(|s| {
        let other = s.spawn(|| {
            let n = rt.collect();
            collected.store(true, Ordering::SeqCst);
            n
        });
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !collected.load(Ordering::SeqCst),
            "a collect ran while a reload held calls out"
        );
        drop(held);
        assert!(other.join().unwrap().is_ok());
    });
}

/// `destroy` on one thread against reloads on another: a reload re-keys every object on the
/// live list, and the host border's fast path tests only the key, so a destroyed object that a
/// reload could still see on the list would get a valid key back and its stale handle would run
/// the method. Every handle kept to a destroyed object must answer `StaleHandle`, whenever the
/// reloads ran.
#[test]
fn a_destroy_racing_reloads_never_gets_its_key_back() {
    use hotlab::runtime::error::ScriptErrorKind;
    let rt = Runtime::new();
    let c = rt
        .define(class("C", vec![int("n", 0)], vec![hook(count_call)]))
        .unwrap();
    let stop = AtomicBool::new(false);
    let reloads = AtomicU64::new(0);
    std::thread::scope(|s| {
        let reloader = s.spawn(|| {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let fields = if i.is_multiple_of(2) {
                    vec![int("n", 0), int("x", 1)]
                } else {
                    vec![int("n", 0)]
                };
                rt.reload(&c, class("C", fields, vec![hook(count_call)]))
                    .unwrap();
                reloads.fetch_add(1, Ordering::Relaxed);
                i += 1;
            }
        });
        let mut kept = Vec::new();
        let mut destroyed = 0u64;
        // Until enough reloads ran among the destroys (at least 200 of each).
        while destroyed < 200 || reloads.load(Ordering::Relaxed) < 200 {
            // A reloader that failed ends the loop; its join below reports why.
            if reloader.is_finished() {
                break;
            }
            // A few live objects, so every reload has a list to walk while destroy runs.
            let batch: Vec<_> = (0..8).map(|_| rt.new_object(&c).unwrap()).collect();
            for h in batch {
                let keep = h.clone();
                rt.destroy(&h).unwrap();
                kept.push(keep);
                destroyed += 1;
            }
            // Checked after the reloads that overlapped the destroys had their chance.
            for k in kept.drain(..) {
                assert_eq!(
                    k.call().into_result().unwrap_err().kind,
                    ScriptErrorKind::StaleHandle
                );
            }
        }
        stop.store(true, Ordering::Relaxed);
        reloader.join().unwrap();
    });
    rt.collect().unwrap();
    assert_eq!(c.live_count(), 0);
}

/// A detach on another thread marks the object's handle word (`WORD_DETACHED`) while a
/// destroy of the same object is between reading the generation and bumping it: the destroy
/// still succeeds (the handle was valid; only another destroy may make it fail), and the
/// detach either succeeds or finds the handle already stale.
#[test]
fn a_destroy_racing_a_detach_of_the_same_object_succeeds() {
    let rt = Runtime::new();
    let c = rt
        .define(class("C", vec![int("n", 0)], vec![hook(count_call)]))
        .unwrap();
    const ROUNDS: u64 = 20_000;
    let cell = AtomicU64::new(0);
    let go = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    // Counted, not asserted in the loop: a panic there would leave the other thread waiting.
    let mut refused = Vec::new();
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 1..=ROUNDS {
                while go.load(Ordering::Acquire) != i {
                    std::hint::spin_loop();
                }
                // SAFETY: the main thread holds the reference until `done` says this round
                // is through; the copy is never dropped.
                let h = std::mem::ManuallyDrop::new(unsafe {
                    hotlab::runtime::handle::Handle::from_cell(cell.load(Ordering::Acquire))
                });
                for _ in 0..(i % 7) * 3 {
                    std::hint::spin_loop();
                }
                let _ = rt.detach(&h);
                done.store(i, Ordering::Release);
            }
        });
        for i in 1..=ROUNDS {
            let h = rt.new_object(&c).unwrap();
            cell.store(h.cell(), Ordering::Release);
            go.store(i, Ordering::Release);
            for _ in 0..(i % 11) * 2 {
                std::hint::spin_loop();
            }
            let destroyed = rt.destroy(&h);
            while done.load(Ordering::Acquire) != i {
                std::hint::spin_loop();
            }
            if destroyed.is_err() || h.is_valid() {
                refused.push((i, destroyed, h.is_valid()));
            }
        }
    });
    assert!(
        refused.is_empty(),
        "{} of {ROUNDS}: {:?}",
        refused.len(),
        &refused[..refused.len().min(3)]
    );
    rt.collect().unwrap();
    assert_eq!(c.shell_count(), 0);
}
