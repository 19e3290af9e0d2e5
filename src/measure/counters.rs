//! Per-thread perf-event counters read around samples (never around calls: one read is a
//! syscall of about 250 ns), behind [`CounterSource`] so the logic — scaling for multiplexing,
//! per-op division, disturbance detection, reasons for absence — is tested with a fake.
//!
//! Two groups are opened on the thread that runs a job: hardware counters (cycles,
//! instructions, branches, branch misses, and L1D read misses when that opens), and software
//! disturbance counters (context switches, CPU migrations). A group is read as a unit, and each
//! value is scaled by `time_enabled / time_running` (perf_event_open(2), "read_format") in case
//! the kernel multiplexed it.

use std::io;
use std::path::Path;

use perf_event::events::{Cache, CacheId, CacheOp, CacheResult, Hardware, Software};
use perf_event::{Builder, Counter, Group};
use serde::Serialize;

/// What a counter counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterKind {
    /// Core cycles.
    Cycles,
    /// Retired instructions.
    Instructions,
    /// Retired branches.
    Branches,
    /// Mispredicted branches.
    BranchMisses,
    /// L1 data cache read misses.
    L1dReadMisses,
    /// Context switches of the thread (software).
    ContextSwitches,
    /// Migrations of the thread to another CPU (software).
    CpuMigrations,
}

/// One reading of a group: a value per kind and the group's enabled/running times (ns).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reading {
    /// Values in the order of [`CounterSource::kinds`].
    pub values: Vec<u64>,
    /// Time the group was enabled.
    pub time_enabled: u64,
    /// Time the group was actually counting.
    pub time_running: u64,
}

/// A group of counters that can be read as a unit.
pub trait CounterSource: Send {
    /// What the values of a [`Reading`] are.
    fn kinds(&self) -> &[CounterKind];
    /// Reads all counters at once.
    fn read(&mut self) -> io::Result<Reading>;
}

/// Whether a group opened, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Availability {
    /// The events that opened (empty when none did).
    pub events: Vec<CounterKind>,
    /// Why they are absent, in a sentence.
    pub reason: Option<String>,
}

/// A perf-event group of the calling thread.
pub struct PerfGroup {
    group: Group,
    members: Vec<Counter>,
    kinds: Vec<CounterKind>,
}

impl PerfGroup {
    fn open(events: &[(CounterKind, Builder<'static>, bool)]) -> io::Result<PerfGroup> {
        let mut group = Group::new()?;
        let mut members = Vec::new();
        let mut kinds = Vec::new();
        for (kind, builder, required) in events {
            match group.add(builder) {
                Ok(c) => {
                    members.push(c);
                    kinds.push(*kind);
                }
                Err(e) if *required => return Err(e),
                Err(_) => {}
            }
        }
        group.enable()?;
        Ok(PerfGroup {
            group,
            members,
            kinds,
        })
    }

    /// Cycles, instructions, branches, branch misses (+ L1D read misses when it opens) of the
    /// calling thread, user space only.
    pub fn hardware() -> Result<PerfGroup, CounterAbsence> {
        let hw = |e: Hardware| {
            let mut b = Builder::new(e);
            b.exclude_kernel(true).exclude_hv(true);
            b
        };
        let mut l1d = Builder::new(Cache {
            which: CacheId::L1D,
            operation: CacheOp::READ,
            result: CacheResult::MISS,
        });
        l1d.exclude_kernel(true).exclude_hv(true);
        Self::open(&[
            (CounterKind::Cycles, hw(Hardware::CPU_CYCLES), true),
            (CounterKind::Instructions, hw(Hardware::INSTRUCTIONS), true),
            (
                CounterKind::Branches,
                hw(Hardware::BRANCH_INSTRUCTIONS),
                true,
            ),
            (CounterKind::BranchMisses, hw(Hardware::BRANCH_MISSES), true),
            (CounterKind::L1dReadMisses, l1d, false),
        ])
        .map_err(|e| CounterAbsence::diagnose(&e, &live_facts()))
    }

    /// Context switches and CPU migrations of the calling thread. Both happen in kernel mode,
    /// so the events must include the kernel: with perf-event2's default `exclude_kernel` they
    /// open fine and count nothing.
    pub fn disturbances() -> Result<PerfGroup, CounterAbsence> {
        let sw = |e: Software| {
            let mut b = Builder::new(e);
            b.include_kernel();
            b
        };
        Self::open(&[
            (
                CounterKind::ContextSwitches,
                sw(Software::CONTEXT_SWITCHES),
                true,
            ),
            (
                CounterKind::CpuMigrations,
                sw(Software::CPU_MIGRATIONS),
                true,
            ),
        ])
        .map_err(|e| CounterAbsence::diagnose(&e, &live_facts()))
    }
}

impl CounterSource for PerfGroup {
    fn kinds(&self) -> &[CounterKind] {
        &self.kinds
    }
    fn read(&mut self) -> io::Result<Reading> {
        let data = self.group.read()?;
        let ns = |d: Option<std::time::Duration>| d.map_or(0, |d| d.as_nanos() as u64);
        Ok(Reading {
            values: self.members.iter().map(|c| data[c]).collect(),
            time_enabled: ns(data.time_enabled()),
            time_running: ns(data.time_running()),
        })
    }
}

/// What decides the wording of an absence reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PmuFacts {
    /// `/proc/sys/kernel/perf_event_paranoid`.
    pub paranoid: Option<i32>,
    /// Whether `/sys/bus/event_source/devices/cpu` (or `cpu_core`) exists.
    pub pmu_device: bool,
    /// CPUID says we run under a hypervisor.
    pub hypervisor: bool,
}

fn live_facts() -> PmuFacts {
    let sys = Path::new("/sys/bus/event_source/devices");
    PmuFacts {
        paranoid: std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
            .ok()
            .and_then(|s| s.trim().parse().ok()),
        pmu_device: sys.join("cpu").exists() || sys.join("cpu_core").exists(),
        hypervisor: super::arch::cpuid_facts().hypervisor,
    }
}

/// Why a counter group is absent, by cause; its text is the sentence reports show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CounterAbsence {
    /// The machine has no PMU to count with (`call` is the failed `perf_event_open`).
    #[error("no hardware counters: {} ({call})", if *.hypervisor { "virtual machine without PMU" } else { "no PMU driver for this CPU" })]
    NoPmu {
        /// CPUID says we run under a hypervisor.
        hypervisor: bool,
        /// `perf_event_open: ENOENT` and the like.
        call: String,
    },
    /// The PMU exists but does not count this event.
    #[error("hardware event not supported by this PMU ({call})")]
    Unsupported {
        /// The failed call.
        call: String,
    },
    /// The kernel refuses perf events to this process.
    #[error(
        "perf events denied: perf_event_paranoid is {} ({call}); \
         `sysctl kernel.perf_event_paranoid=1` or CAP_PERFMON allows them",
        .paranoid.map_or_else(|| "unknown".to_string(), |p| p.to_string())
    )]
    Denied {
        /// `/proc/sys/kernel/perf_event_paranoid`, when readable.
        paranoid: Option<i32>,
        /// The failed call.
        call: String,
    },
    /// The kernel has no perf events at all.
    #[error("kernel built without perf events ({call})")]
    NoPerfEvents {
        /// The failed call.
        call: String,
    },
    /// Any other failure of `perf_event_open`.
    #[error("counters unavailable ({call})")]
    Failed {
        /// The failed call.
        call: String,
    },
    /// Hardware counters were not asked for.
    #[error("hardware counters not requested")]
    NotRequested,
    /// The caller chose not to open counters, for this reason.
    #[error("{0}")]
    NotOpened(String),
}

impl CounterAbsence {
    /// The cause of a failed `perf_event_open`, given what is known of the machine.
    pub fn diagnose(err: &io::Error, facts: &PmuFacts) -> CounterAbsence {
        let code = err.raw_os_error().unwrap_or(0);
        let name = match code {
            libc::ENOENT => "ENOENT",
            libc::ENODEV => "ENODEV",
            libc::EOPNOTSUPP => "EOPNOTSUPP",
            libc::EACCES => "EACCES",
            libc::EPERM => "EPERM",
            libc::ENOSYS => "ENOSYS",
            _ => "",
        };
        let call = if name.is_empty() {
            format!("perf_event_open: {err}")
        } else {
            format!("perf_event_open: {name}")
        };
        match code {
            libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP if !facts.pmu_device => {
                CounterAbsence::NoPmu {
                    hypervisor: facts.hypervisor,
                    call,
                }
            }
            libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP => CounterAbsence::Unsupported { call },
            libc::EACCES | libc::EPERM => CounterAbsence::Denied {
                paranoid: facts.paranoid,
                call,
            },
            libc::ENOSYS => CounterAbsence::NoPerfEvents { call },
            _ => CounterAbsence::Failed { call },
        }
    }
}

/// A plain sentence for a failed `perf_event_open` (the text of [`CounterAbsence::diagnose`]).
pub fn absence_reason(err: &io::Error, facts: &PmuFacts) -> String {
    CounterAbsence::diagnose(err, facts).to_string()
}

/// Deltas of a group between two readings, scaled for multiplexing; `None` when the group did
/// not run at all in between.
pub fn scaled_delta(before: &Reading, after: &Reading) -> Option<Vec<f64>> {
    let enabled = after.time_enabled.saturating_sub(before.time_enabled);
    let running = after.time_running.saturating_sub(before.time_running);
    if running == 0 {
        return None;
    }
    let scale = if enabled > running {
        enabled as f64 / running as f64
    } else {
        1.0
    };
    Some(
        before
            .values
            .iter()
            .zip(&after.values)
            .map(|(b, a)| a.saturating_sub(*b) as f64 * scale)
            .collect(),
    )
}

/// Whether any counter moved between two readings (for disturbance groups: a context switch or
/// a migration happened during the sample).
pub fn moved(before: &Reading, after: &Reading) -> bool {
    before.values.iter().zip(&after.values).any(|(b, a)| a > b)
}

/// Counter totals of one variant over its samples.
#[derive(Debug, Clone)]
pub struct CounterTotals {
    kinds: Vec<CounterKind>,
    sums: Vec<f64>,
    iters: u64,
    samples: u64,
    unscheduled: u64,
    multiplexed: bool,
}

impl CounterTotals {
    /// Empty totals for these kinds.
    pub fn new(kinds: &[CounterKind]) -> CounterTotals {
        CounterTotals {
            kinds: kinds.to_vec(),
            sums: vec![0.0; kinds.len()],
            iters: 0,
            samples: 0,
            unscheduled: 0,
            multiplexed: false,
        }
    }

    /// Adds one sample of `iters` iterations read as `before` and `after`.
    pub fn add(&mut self, before: &Reading, after: &Reading, iters: u64) {
        match scaled_delta(before, after) {
            Some(d) => {
                for (s, v) in self.sums.iter_mut().zip(d) {
                    *s += v;
                }
                self.iters += iters;
                self.samples += 1;
                let enabled = after.time_enabled.saturating_sub(before.time_enabled);
                let running = after.time_running.saturating_sub(before.time_running);
                self.multiplexed |= running < enabled;
            }
            None => self.unscheduled += 1,
        }
    }

    /// Per-op figures.
    pub fn report(&self) -> CounterReport {
        let per_op: Vec<(CounterKind, f64)> = if self.iters == 0 {
            Vec::new()
        } else {
            self.kinds
                .iter()
                .zip(&self.sums)
                .map(|(k, s)| (*k, s / self.iters as f64))
                .collect()
        };
        let get = |k| per_op.iter().find(|(x, _)| *x == k).map(|(_, v)| *v);
        let ipc = match (get(CounterKind::Instructions), get(CounterKind::Cycles)) {
            (Some(i), Some(c)) if c > 0.0 => Some(i / c),
            _ => None,
        };
        CounterReport {
            per_op,
            ipc,
            samples: self.samples,
            unscheduled_samples: self.unscheduled,
            multiplexed: self.multiplexed,
        }
    }
}

/// Counters per op of one variant.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterReport {
    /// Each counter divided by the iterations of the samples it covered.
    pub per_op: Vec<(CounterKind, f64)>,
    /// Instructions per cycle.
    pub ipc: Option<f64>,
    /// Samples counted.
    pub samples: u64,
    /// Samples during which the group never ran (not counted).
    pub unscheduled_samples: u64,
    /// Whether the kernel multiplexed the group (values are scaled estimates).
    pub multiplexed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(code: i32, paranoid: Option<i32>, pmu_device: bool, hypervisor: bool) -> String {
        let facts = PmuFacts {
            paranoid,
            pmu_device,
            hypervisor,
        };
        absence_reason(&io::Error::from_raw_os_error(code), &facts)
    }

    #[test]
    fn every_absence_reads_as_one_sentence() {
        assert_eq!(
            reason(libc::ENODEV, None, false, false),
            "no hardware counters: no PMU driver for this CPU (perf_event_open: ENODEV)"
        );
        assert_eq!(
            reason(libc::EOPNOTSUPP, None, true, false),
            "hardware event not supported by this PMU (perf_event_open: EOPNOTSUPP)"
        );
        assert_eq!(
            reason(libc::EPERM, None, true, false),
            "perf events denied: perf_event_paranoid is unknown (perf_event_open: EPERM); \
             `sysctl kernel.perf_event_paranoid=1` or CAP_PERFMON allows them"
        );
        assert_eq!(
            reason(libc::ENOSYS, Some(1), true, false),
            "kernel built without perf events (perf_event_open: ENOSYS)"
        );
        let other = reason(libc::EBUSY, Some(1), true, false);
        assert!(
            other.starts_with("counters unavailable (perf_event_open: "),
            "{other}"
        );
        assert_eq!(
            CounterAbsence::NotRequested.to_string(),
            "hardware counters not requested"
        );
    }
}
