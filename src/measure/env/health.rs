//! The health report: what about this machine helps or hurts a measurement, each item with a
//! warning where it hurts. Everything read from files is read under a root path, so tests run
//! against fixture `/proc` and `/sys` trees; facts that only the live machine can give (CPUID,
//! a perf-event open, timer and core-clock calibration) come in as [`LiveProbes`].

use std::fs;
use std::path::Path;

use serde::Serialize;

use super::pin::parse_cpu_list;
use crate::measure::arch::CpuidFacts;
use crate::measure::clock::CoreClock;
use crate::measure::counters::CounterAbsence;
use crate::measure::result::TimerInfo;
use crate::measure::timer::TimerKind;

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HealthItem {
    /// What is checked.
    pub name: String,
    /// What was found.
    pub value: String,
    /// How it hurts measurement, if it does.
    pub warning: Option<String>,
}

/// The report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HealthReport {
    /// Items in display order.
    pub items: Vec<HealthItem>,
}

/// Facts only the live machine can give.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveProbes {
    /// CPUID facts.
    pub cpuid: Option<CpuidFacts>,
    /// `Ok` when hardware counters opened, else the reason.
    pub hw_counters: Result<(), CounterAbsence>,
    /// The timer and its calibration.
    pub timer: Option<TimerInfo>,
    /// The calibrated core clock.
    pub core_clock: Option<CoreClock>,
}

impl LiveProbes {
    /// Probes this machine (calibrates the timer and core clock if not done yet: ~0.2 s).
    pub fn probe() -> LiveProbes {
        let t = crate::measure::timer::best_timer();
        let cal = t.calibration();
        LiveProbes {
            cpuid: Some(crate::measure::arch::cpuid_facts()),
            hw_counters: crate::measure::counters::PerfGroup::hardware().map(|_| ()),
            timer: Some(TimerInfo {
                kind: t.kind(),
                frequency: t.frequency(),
                precision: cal.precision,
                sample_overhead: cal.sample_overhead,
            }),
            core_clock: Some(crate::measure::clock::core_clock()),
        }
    }
}

fn read(root: &Path, rel: &str) -> Option<String> {
    fs::read_to_string(root.join(rel))
        .ok()
        .map(|s| s.trim().to_string())
}

fn item(name: &str, value: impl Into<String>, warning: Option<String>) -> HealthItem {
    HealthItem {
        name: name.to_string(),
        value: value.into(),
        warning,
    }
}

fn cpuinfo_flags(root: &Path) -> Vec<String> {
    read(root, "proc/cpuinfo")
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("flags"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, f)| f.split_whitespace().map(str::to_string).collect())
        })
        .unwrap_or_default()
}

/// Builds the report from the tree under `root` (normally `/`) and the live probes.
pub fn collect(root: &Path, probes: &LiveProbes) -> HealthReport {
    let mut items = Vec::new();
    let online = read(root, "sys/devices/system/cpu/online")
        .and_then(|s| parse_cpu_list(&s).ok())
        .unwrap_or_default();
    items.push(item(
        "online CPUs",
        format!("{} ({online:?})", online.len()),
        None,
    ));

    // Governor of every online CPU.
    let govs: Vec<String> = online
        .iter()
        .filter_map(|c| {
            read(
                root,
                &format!("sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"),
            )
        })
        .collect();
    let mut distinct = govs.clone();
    distinct.sort();
    distinct.dedup();
    items.push(if govs.is_empty() {
        item("governor", "not exposed (no cpufreq; usual in VMs)", None)
    } else {
        let warn = distinct.iter().any(|g| g != "performance").then(|| {
            "not `performance`: the clock ramps with load, so early and late samples differ; \
             `cpupower frequency-set -g performance`"
                .to_string()
        });
        item("governor", distinct.join(", "), warn)
    });

    let no_turbo = read(root, "sys/devices/system/cpu/intel_pstate/no_turbo");
    let boost = read(root, "sys/devices/system/cpu/cpufreq/boost");
    let turbo_on = match (no_turbo.as_deref(), boost.as_deref()) {
        (Some("0"), _) | (_, Some("1")) => Some(true),
        (Some(_), _) | (_, Some(_)) => Some(false),
        _ => None,
    };
    items.push(match turbo_on {
        Some(true) => item(
            "turbo/boost",
            "on",
            Some("the core clock follows load and temperature: cycle estimates drift".into()),
        ),
        Some(false) => item("turbo/boost", "off", None),
        None => item("turbo/boost", "not exposed", None),
    });

    let smt = read(root, "sys/devices/system/cpu/smt/active");
    items.push(match smt.as_deref() {
        Some("1") => item(
            "SMT",
            "on",
            Some("a sibling hyperthread shares the measuring core: keep it idle".into()),
        ),
        Some(_) => item("SMT", "off", None),
        None => item("SMT", "not exposed", None),
    });

    let list = |rel: &str| {
        read(root, rel)
            .filter(|s| s != "(null)")
            .and_then(|s| parse_cpu_list(&s).ok())
            .unwrap_or_default()
    };
    let isolated = list("sys/devices/system/cpu/isolated");
    items.push(item(
        "isolated CPUs",
        if isolated.is_empty() {
            "none (the scheduler may put other work on the measuring CPU)".to_string()
        } else {
            format!("{isolated:?}")
        },
        None,
    ));
    let nohz = list("sys/devices/system/cpu/nohz_full");
    items.push(item(
        "nohz_full",
        if nohz.is_empty() {
            "none".to_string()
        } else {
            format!("{nohz:?}")
        },
        None,
    ));

    // Hypervisor: CPUID, /sys/hypervisor, DMI, cpuinfo.
    let mut hv = Vec::new();
    if probes.cpuid.is_some_and(|c| c.hypervisor) {
        hv.push("CPUID hypervisor bit".to_string());
    }
    if let Some(t) = read(root, "sys/hypervisor/type") {
        hv.push(format!("/sys/hypervisor: {t}"));
    }
    let dmi: Vec<String> = ["sys_vendor", "product_name"]
        .iter()
        .filter_map(|f| read(root, &format!("sys/class/dmi/id/{f}")))
        .collect();
    let flags = cpuinfo_flags(root);
    if flags.iter().any(|f| f == "hypervisor") {
        hv.push("cpuinfo flag".to_string());
    }
    let dmi_text = if dmi.is_empty() {
        String::new()
    } else {
        format!("; DMI: {}", dmi.join(" "))
    };
    items.push(if hv.is_empty() {
        item("hypervisor", format!("none seen{dmi_text}"), None)
    } else {
        item(
            "hypervisor",
            format!("yes ({}){dmi_text}", hv.join(", ")),
            Some("virtual machine: other guests steal time and there is usually no PMU".into()),
        )
    });

    let ncpu = online.len().max(1) as f64;
    items.push(
        match read(root, "proc/loadavg").and_then(|s| {
            s.split_whitespace()
                .next()
                .and_then(|x| x.parse::<f64>().ok())
        }) {
            Some(l) => item(
                "load average (1 min)",
                format!("{l:.2} on {ncpu} CPUs"),
                (l > ncpu * 0.5).then(|| {
                    "busy machine: other work competes for cores and caches; expect wider CIs"
                        .into()
                }),
            ),
            None => item("load average (1 min)", "unknown", None),
        },
    );

    let pmu_dev = ["cpu", "cpu_core", "cpu_atom"]
        .iter()
        .any(|d| root.join("sys/bus/event_source/devices").join(d).exists());
    items.push(match &probes.hw_counters {
        Ok(()) => item("PMU", "hardware counters available", None),
        Err(reason) => item(
            "PMU",
            format!(
                "{reason}{}",
                if pmu_dev {
                    ""
                } else {
                    "; no PMU device in /sys/bus/event_source"
                }
            ),
            Some("no hardware counters: cycles are estimated from the core clock".into()),
        ),
    });

    let paranoid = read(root, "proc/sys/kernel/perf_event_paranoid");
    items.push(
        match paranoid.as_deref().and_then(|p| p.parse::<i32>().ok()) {
            Some(p) => item(
                "perf_event_paranoid",
                p.to_string(),
                (p > 2).then(|| {
                    "perf events are restricted: disturbances cannot be detected; \
                 `sysctl kernel.perf_event_paranoid=2`"
                        .into()
                }),
            ),
            None => item("perf_event_paranoid", "unknown", None),
        },
    );

    items.push(
        match read(root, "proc/sys/kernel/randomize_va_space").as_deref() {
            Some("0") => item("ASLR", "off", None),
            Some(v) => item(
                "ASLR",
                format!("on ({v}): code and stack addresses differ per run"),
                None,
            ),
            None => item("ASLR", "unknown", None),
        },
    );

    let clocksource = read(
        root,
        "sys/devices/system/clocksource/clocksource0/current_clocksource",
    )
    .unwrap_or_else(|| "unknown".into());
    let has = |f: &str| flags.iter().any(|x| x == f);
    let invariant = probes.cpuid.map(|c| c.invariant_tsc);
    let tsc_flags: Vec<&str> = ["constant_tsc", "nonstop_tsc", "tsc_known_freq"]
        .into_iter()
        .filter(|f| has(f))
        .collect();
    items.push(item(
        "TSC",
        format!(
            "{}; flags: {}; clocksource {clocksource}",
            match invariant {
                Some(true) => "invariant (CPUID 0x80000007 EDX[8])",
                Some(false) => "NOT invariant",
                None => "invariance unknown",
            },
            if tsc_flags.is_empty() {
                "none".to_string()
            } else {
                tsc_flags.join(" ")
            }
        ),
        (invariant == Some(false))
            .then(|| "the TSC rate may change with power states: using the OS clock".into()),
    ));

    if let Some(t) = &probes.timer {
        let kind = match t.kind {
            TimerKind::Tsc => "TSC (lfence;rdtsc / rdtscp;lfence)",
            TimerKind::OsClock => "CLOCK_MONOTONIC_RAW",
            TimerKind::Mock => "mock",
        };
        items.push(item(
            "timer",
            format!("{kind} at {}, precision {}", t.frequency, t.precision),
            (t.precision.nanos() > 100.0)
                .then(|| "coarse timer: samples must be long, so fewer rounds fit".into()),
        ));
        items.push(item(
            "sample overhead",
            format!("{} per sample (subtracted)", t.sample_overhead),
            None,
        ));
    }
    if let Some(c) = &probes.core_clock {
        let err = c.linearity_error();
        items.push(item(
            "core clock",
            format!(
                "{} (add chain: {:.1} ps/add at 64, {:.1} at 128; {:.1}% apart in pairs; the \
                 clock moved {:.1}%)",
                c.ghz,
                c.per_add_64.0,
                c.per_add_128.0,
                err * 100.0,
                c.movement() * 100.0
            ),
            if err > 0.05 {
                Some(
                    "the two chain lengths disagree even timed in pairs: adds do not retire one \
                     per cycle here; cycle figures are rough"
                        .into(),
                )
            } else if c.movement() > 0.05 {
                Some(
                    "the core clock moved while calibrating: jobs convert to cycles with the \
                     ruler of each round, not this figure"
                        .into(),
                )
            } else {
                None
            },
        ));
    }
    HealthReport { items }
}

impl HealthReport {
    /// Items with a warning.
    pub fn warnings(&self) -> usize {
        self.items.iter().filter(|i| i.warning.is_some()).count()
    }

    /// The item with this name.
    pub fn get(&self, name: &str) -> Option<&HealthItem> {
        self.items.iter().find(|i| i.name == name)
    }

    /// Aligned plain text, one item a line, warnings indented below their item.
    pub fn render(&self) -> String {
        let w = self.items.iter().map(|i| i.name.len()).max().unwrap_or(0);
        let mut out = String::new();
        for i in &self.items {
            out.push_str(&format!("  {:<w$}  {}\n", i.name, i.value));
            if let Some(warn) = &i.warning {
                out.push_str(&format!("  {:<w$}  ! {warn}\n", ""));
            }
        }
        out
    }
}
