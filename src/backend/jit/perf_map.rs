//! `HOTLAB_PERF_MAP=1`: name the JIT's code for `perf`.
//!
//! `perf report` names code it has no file for from `/tmp/perf-<pid>.map`, one line per
//! function: `<start hex> <size hex> <name>`. With the variable set (to anything but empty or
//! `0`), every JIT module appends its functions there as it finalizes them, so a profile of
//! `hotlab bench` or `hotlab run` (`perf record -g -e cpu-clock -- hotlab ...`, following the
//! worker processes) shows `Scheduler.schedule` instead of an address. The file is the
//! process's; perf's convention leaves removing it to the user.

use std::io::Write;

use super::CompiledFunction;

/// Whether the map is asked for (read once).
fn wanted() -> bool {
    static WANTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WANTED.get_or_init(|| {
        std::env::var_os("HOTLAB_PERF_MAP").is_some_and(|v| !v.is_empty() && v != "0")
    })
}

/// The map's lines for functions `(start, size, name)`.
fn lines<'a>(functions: impl IntoIterator<Item = (u64, usize, &'a str)>) -> String {
    let mut text = String::new();
    for (addr, size, name) in functions.into_iter().filter(|f| f.1 > 0) {
        text.push_str(&format!("{addr:x} {size:x} {name}\n"));
    }
    text
}

/// Append `functions` to this process's map, when asked; a map that cannot be written is
/// reported once on stderr and otherwise ignored (profiling is an aid, not the job).
pub(super) fn append(functions: &[CompiledFunction]) {
    if !wanted() {
        return;
    }
    let path = format!("/tmp/perf-{}.map", std::process::id());
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| {
            let text = lines(functions.iter().map(|f| (f.addr, f.size, f.name.as_str())));
            file.write_all(text.as_bytes())
        });
    if let Err(e) = written {
        static TOLD: std::sync::Once = std::sync::Once::new();
        TOLD.call_once(|| eprintln!("hotlab: cannot write {path} (HOTLAB_PERF_MAP): {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_start_size_and_name_in_hex() {
        let functions = [
            (0x7f00_1000, 0x40, "Scheduler.schedule"),
            (0x7f00_2000, 0, "empty"),
        ];
        assert_eq!(lines(functions), "7f001000 40 Scheduler.schedule\n");
    }
}
