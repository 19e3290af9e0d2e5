//! Pinning the measuring thread to one CPU, and choosing which: an isolated CPU if there is
//! one, else the last online CPU the process may use other than the one the caller (the front
//! end) runs on.

use std::io;

/// An entry of a kernel CPU list that is neither a number nor an ascending range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad CPU list entry {entry:?}")]
pub struct BadCpuList {
    /// The entry, trimmed.
    pub entry: String,
}

/// Parses a kernel CPU list such as `0-3,5,7-8` (empty input: no CPUs).
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, BadCpuList> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.trim().is_empty()) {
        let part = part.trim();
        let bad = || BadCpuList {
            entry: part.to_string(),
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) =
                    (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if a > b {
                    return Err(bad());
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().map_err(|_| bad())?),
        }
    }
    Ok(out)
}

/// Picks the CPU to measure on: the last allowed isolated CPU, else the last allowed online CPU
/// other than `avoid`, else the last allowed online CPU.
pub fn choose_cpu(
    online: &[usize],
    isolated: &[usize],
    allowed: &[usize],
    avoid: Option<usize>,
) -> Option<usize> {
    let usable: Vec<usize> = online
        .iter()
        .copied()
        .filter(|c| allowed.contains(c))
        .collect();
    let iso = usable
        .iter()
        .copied()
        .filter(|c| isolated.contains(c))
        .max();
    iso.or_else(|| usable.iter().copied().filter(|c| Some(*c) != avoid).max())
        .or_else(|| usable.iter().copied().max())
}

/// CPUs this thread may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most
    // size_of::<cpu_set_t>() bytes into it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// The CPU the calling thread runs on now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and only returns a number.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as usize)
}

/// Online CPUs from `/sys/devices/system/cpu/online`.
pub fn online_cpus() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse_cpu_list(&s).ok())
        .unwrap_or_default()
}

/// Isolated CPUs from `/sys/devices/system/cpu/isolated`.
pub fn isolated_cpus() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/isolated")
        .ok()
        .and_then(|s| parse_cpu_list(&s).ok())
        .unwrap_or_default()
}

/// The automatic choice for this process now.
pub fn auto_cpu() -> Option<usize> {
    choose_cpu(
        &online_cpus(),
        &isolated_cpus(),
        &allowed_cpus(),
        current_cpu(),
    )
}

/// The calling thread pinned to one CPU; dropping it restores the previous affinity.
#[derive(Debug)]
pub struct PinGuard {
    cpu: usize,
    old: libc::cpu_set_t,
}

impl PinGuard {
    /// The CPU pinned to.
    pub fn cpu(&self) -> usize {
        self.cpu
    }
}

/// Pins the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> io::Result<PinGuard> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is out of range"),
        ));
    }
    // SAFETY: zeroed cpu_set_t values are valid empty sets; the libc calls read and write only
    // these locals, with their true size; `cpu` was checked against CPU_SETSIZE.
    unsafe {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        let mut old: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size, &mut old) != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, size, &set) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(PinGuard { cpu, old })
    }
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        // SAFETY: `old` is the affinity set read at pinning time; the size is its own.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.old);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_and_choice() {
        assert_eq!(parse_cpu_list("0-3,5\n").unwrap(), vec![0, 1, 2, 3, 5]);
        assert_eq!(parse_cpu_list("").unwrap(), Vec::<usize>::new());
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("x").is_err());
        let all = [0, 1, 2, 3];
        assert_eq!(choose_cpu(&all, &[], &all, Some(3)), Some(2));
        assert_eq!(choose_cpu(&all, &[1], &all, Some(3)), Some(1));
        assert_eq!(choose_cpu(&[0], &[], &[0], Some(0)), Some(0));
        assert_eq!(choose_cpu(&all, &[], &[], None), None);
    }
}
