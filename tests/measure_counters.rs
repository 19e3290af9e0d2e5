//! Counter logic with injected readings: scaling for multiplexing, per-op division, IPC,
//! unscheduled samples, and the sentences for absent counters.

use std::io;

use hotlab::measure::counters::{
    CounterKind, CounterTotals, PmuFacts, Reading, absence_reason, moved, scaled_delta,
};

fn reading(values: &[u64], enabled: u64, running: u64) -> Reading {
    Reading {
        values: values.to_vec(),
        time_enabled: enabled,
        time_running: running,
    }
}

#[test]
fn scaling_per_op_and_ipc() {
    let kinds = [
        CounterKind::Cycles,
        CounterKind::Instructions,
        CounterKind::Branches,
    ];
    let mut t = CounterTotals::new(&kinds);
    // Not multiplexed: 3000 cycles, 6000 instructions, 1000 branches over 1000 iterations.
    t.add(
        &reading(&[0, 0, 0], 0, 0),
        &reading(&[3000, 6000, 1000], 100, 100),
        1000,
    );
    // Multiplexed: ran a quarter of the time, so values count four times.
    t.add(
        &reading(&[0, 0, 0], 0, 0),
        &reading(&[750, 1500, 250], 400, 100),
        1000,
    );
    // Never scheduled: ignored and counted.
    t.add(
        &reading(&[5, 5, 5], 10, 10),
        &reading(&[9, 9, 9], 20, 10),
        1000,
    );
    let r = t.report();
    assert_eq!(
        r.per_op,
        vec![
            (CounterKind::Cycles, 3.0),
            (CounterKind::Instructions, 6.0),
            (CounterKind::Branches, 1.0)
        ]
    );
    assert_eq!(r.ipc, Some(2.0));
    assert_eq!(
        (r.samples, r.unscheduled_samples, r.multiplexed),
        (2, 1, true)
    );
}

#[test]
fn deltas_and_movement() {
    let a = reading(&[10, 3], 100, 50);
    let b = reading(&[30, 3], 300, 150);
    assert_eq!(scaled_delta(&a, &b), Some(vec![40.0, 0.0]));
    assert!(moved(&a, &b));
    assert!(!moved(&a, &a));
    assert_eq!(scaled_delta(&a, &a), None);
}

#[test]
fn absence_sentences() {
    let vm = PmuFacts {
        paranoid: Some(2),
        pmu_device: false,
        hypervisor: true,
    };
    assert_eq!(
        absence_reason(&io::Error::from_raw_os_error(libc::ENOENT), &vm),
        "no hardware counters: virtual machine without PMU (perf_event_open: ENOENT)"
    );
    let locked = PmuFacts {
        paranoid: Some(3),
        pmu_device: true,
        hypervisor: false,
    };
    let s = absence_reason(&io::Error::from_raw_os_error(libc::EACCES), &locked);
    assert!(
        s.starts_with("perf events denied: perf_event_paranoid is 3"),
        "{s}"
    );
    let s = absence_reason(&io::Error::from_raw_os_error(libc::ENOENT), &locked);
    assert!(s.contains("not supported by this PMU"), "{s}");
}
