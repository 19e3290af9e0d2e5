//! The health report parsed from fixture `/proc` and `/sys` trees.

use std::path::Path;

use hotlab::measure::Picos;
use hotlab::measure::arch::CpuidFacts;
use hotlab::measure::counters::CounterAbsence;
use hotlab::measure::env::health::{HealthReport, LiveProbes, collect};
use hotlab::measure::result::TimerInfo;
use hotlab::measure::timer::TimerKind;
use hotlab::measure::units::Ghz;

fn probes(hypervisor: bool, hw: Result<(), CounterAbsence>) -> LiveProbes {
    LiveProbes {
        cpuid: Some(CpuidFacts {
            invariant_tsc: true,
            rdtscp: true,
            hypervisor,
        }),
        hw_counters: hw,
        timer: Some(TimerInfo {
            kind: TimerKind::Tsc,
            frequency: Ghz(2.445),
            precision: Picos(16_000.0),
            sample_overhead: Picos(30_000.0),
        }),
        core_clock: None,
    }
}

fn report(fixture: &str, p: &LiveProbes) -> HealthReport {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/health")
        .join(fixture);
    collect(&root, p)
}

fn warned(r: &HealthReport, name: &str) -> bool {
    r.get(name)
        .unwrap_or_else(|| panic!("no item {name}"))
        .warning
        .is_some()
}

#[test]
fn virtual_machine_without_pmu() {
    let reason = "no hardware counters: virtual machine without PMU (perf_event_open: ENOENT)";
    let absent = CounterAbsence::NoPmu {
        hypervisor: true,
        call: "perf_event_open: ENOENT".into(),
    };
    assert_eq!(absent.to_string(), reason);
    let r = report("vm", &probes(true, Err(absent)));
    assert_eq!(r.get("online CPUs").unwrap().value, "2 ([0, 1])");
    assert!(r.get("governor").unwrap().value.starts_with("not exposed"));
    assert!(!warned(&r, "governor"));
    assert_eq!(r.get("SMT").unwrap().value, "off");
    assert!(
        r.get("hypervisor")
            .unwrap()
            .value
            .contains("CPUID hypervisor bit")
    );
    assert!(warned(&r, "hypervisor"));
    assert!(warned(&r, "load average (1 min)"));
    let pmu = r.get("PMU").unwrap();
    assert!(pmu.value.starts_with(reason), "{}", pmu.value);
    assert!(pmu.value.contains("no PMU device"));
    assert_eq!(r.get("perf_event_paranoid").unwrap().value, "2");
    assert!(!warned(&r, "perf_event_paranoid"));
    assert_eq!(r.get("nohz_full").unwrap().value, "none");
    let tsc = &r.get("TSC").unwrap().value;
    assert!(
        tsc.contains("invariant") && tsc.contains("tsc_known_freq"),
        "{tsc}"
    );
    assert!(r.get("timer").unwrap().value.contains("2.445 GHz"));
    assert_eq!(r.warnings(), 3, "{}", r.render());
}

#[test]
fn desktop_with_everything_that_hurts() {
    let r = report("bare", &probes(false, Ok(())));
    let gov = r.get("governor").unwrap();
    assert_eq!(gov.value, "performance, powersave");
    assert!(gov.warning.is_some());
    assert!(warned(&r, "turbo/boost"));
    assert!(warned(&r, "SMT"));
    assert_eq!(r.get("isolated CPUs").unwrap().value, "[3]");
    assert_eq!(r.get("nohz_full").unwrap().value, "[3]");
    let hv = r.get("hypervisor").unwrap();
    assert_eq!(hv.value, "none seen; DMI: LENOVO ThinkPad");
    assert!(hv.warning.is_none());
    assert!(!warned(&r, "load average (1 min)"));
    assert!(!warned(&r, "PMU"));
    assert!(warned(&r, "perf_event_paranoid"));
    assert_eq!(r.get("ASLR").unwrap().value, "off");
    // Rendering aligns names and puts warnings on their own lines.
    let text = r.render();
    assert!(
        text.contains("  SMT  ") || text.contains("  SMT "),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("! a sibling hyperthread"))
    );
}

#[test]
fn missing_root_gives_unknowns_not_panics() {
    let r = collect(Path::new("/nonexistent/root"), &probes(false, Ok(())));
    assert_eq!(r.get("online CPUs").unwrap().value, "0 ([])");
    assert_eq!(r.get("perf_event_paranoid").unwrap().value, "unknown");
}
