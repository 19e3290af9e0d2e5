//! Names of code addresses in this process, for listings of code that runs here (the worker's
//! JIT code and loaded object libraries, rustc's twins and ladder loops): the dynamic symbols
//! of every loaded object (`dladdr`: libc's `memcpy`, an object library's exports), then the
//! executable's own `.symtab` (the Rust functions rustc does not export, demangled), and the
//! pointer a slot holds (a GOT entry), read through `/proc/self/mem`, which answers an unmapped
//! address with an error instead of a fault.

use std::ffi::CStr;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::OnceLock;

/// The name of the function that starts at `addr`, if a symbol table knows one.
pub(super) fn name_of(addr: u64) -> Option<String> {
    if addr < 0x1000 {
        return None;
    }
    dynamic_name(addr).or_else(|| executable().and_then(|e| e.name_at(addr)))
}

/// The 8 bytes at `addr` as a pointer, when `addr` is mapped and readable.
pub(super) fn read_slot(addr: u64) -> Option<u64> {
    static MEM: OnceLock<Option<File>> = OnceLock::new();
    let mem = MEM
        .get_or_init(|| File::open("/proc/self/mem").ok())
        .as_ref()?;
    let mut word = [0u8; 8];
    mem.read_exact_at(&mut word, addr).ok()?;
    Some(u64::from_le_bytes(word))
}

fn dynamic_name(addr: u64) -> Option<String> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only looks `addr` up in the loader's tables (it never reads through it)
    // and writes `info`, a valid out-parameter.
    let found = unsafe { libc::dladdr(addr as *const libc::c_void, &mut info) };
    if found == 0 || info.dli_sname.is_null() || info.dli_saddr as u64 != addr {
        return None;
    }
    // SAFETY: dladdr set `dli_sname` to a NUL-terminated name in the loaded object's string
    // table, alive while the object is loaded; it is copied at once.
    let name = unsafe { CStr::from_ptr(info.dli_sname) };
    Some(demangle(&name.to_string_lossy()))
}

/// The executable's function symbols, sorted by address, with the load bias applied.
struct Executable {
    /// `(address, offset of the name in strings)`.
    starts: Vec<(u64, u32)>,
    strings: Vec<u8>,
}

impl Executable {
    fn name_at(&self, addr: u64) -> Option<String> {
        let i = self.starts.binary_search_by_key(&addr, |&(a, _)| a).ok()?;
        let from = self.starts[i].1 as usize;
        let bytes = self.strings.get(from..)?;
        let end = bytes.iter().position(|&b| b == 0)?;
        Some(demangle(&String::from_utf8_lossy(&bytes[..end])))
    }
}

fn executable() -> Option<&'static Executable> {
    static EXE: OnceLock<Option<Executable>> = OnceLock::new();
    EXE.get_or_init(|| read_executable(load_bias()?)).as_ref()
}

/// Where the main program is loaded (its `dlpi_addr`: a PIE's base, 0 for a fixed one).
fn load_bias() -> Option<u64> {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        out: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid `info` for the call, and `out` is the `u64` that
        // `load_bias` passed in; the main program is the first object it reports.
        unsafe { *(out as *mut u64) = (*info).dlpi_addr };
        1
    }
    let mut bias = u64::MAX;
    // SAFETY: `first` matches the callback type and writes only through `out`, which points
    // to `bias` for the whole call.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut bias as *mut u64).cast()) };
    (bias != u64::MAX).then_some(bias)
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn read_at(file: &File, offset: u64, len: u64) -> Option<Vec<u8>> {
    // A symbol table is a few MiB; a larger length is a corrupt header.
    if len > 256 << 20 {
        return None;
    }
    let mut buf = vec![0u8; usize::try_from(len).ok()?];
    file.read_exact_at(&mut buf, offset).ok()?;
    Some(buf)
}

/// The function symbols of `/proc/self/exe`'s `.symtab` (ELF64, little-endian), or `None`
/// when it has none (a stripped binary).
fn read_executable(bias: u64) -> Option<Executable> {
    const SHT_SYMTAB: u32 = 2;
    const STT_FUNC: u8 = 2;
    let file = File::open("/proc/self/exe").ok()?;
    let header = read_at(&file, 0, 64)?;
    if header.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let (shoff, shentsize, shnum) = (
        u64_at(&header, 0x28)?,
        u64::from(u16_at(&header, 0x3a)?),
        u64::from(u16_at(&header, 0x3c)?),
    );
    if shentsize < 0x40 {
        return None;
    }
    let sections = read_at(&file, shoff, shentsize * shnum)?;
    let section = |k: u64| -> Option<(u32, u64, u64, u32)> {
        let at = usize::try_from(k * shentsize).ok()?;
        Some((
            u32_at(&sections, at + 4)?,
            u64_at(&sections, at + 0x18)?,
            u64_at(&sections, at + 0x20)?,
            u32_at(&sections, at + 0x28)?,
        ))
    };
    let (_, sym_off, sym_size, link) =
        (0..shnum).filter_map(section).find(|s| s.0 == SHT_SYMTAB)?;
    let (_, str_off, str_size, _) = section(u64::from(link))?;
    let symbols = read_at(&file, sym_off, sym_size)?;
    let strings = read_at(&file, str_off, str_size)?;
    let mut starts: Vec<(u64, u32)> = symbols
        .chunks_exact(24)
        .filter(|s| s[4] & 0xf == STT_FUNC)
        .filter_map(|s| {
            let value = u64_at(s, 8)?;
            (value != 0).then_some((value.wrapping_add(bias), u32_at(s, 0)?))
        })
        .collect();
    starts.sort_unstable();
    starts.dedup_by_key(|&mut (a, _)| a);
    Some(Executable { starts, strings })
}

/// A Rust symbol as a reader wants it: `alloc::sync::Arc<T,A>::drop_slow` for
/// `_ZN5alloc4sync16Arc$LT$T$C$A$GT$9drop_slow17h…E` (the hash left out), the path of a v0
/// symbol (`_RNvNtCs…_5alloc5alloc18handle_alloc_error`); anything else as it is.
pub fn demangle(name: &str) -> String {
    let name = name.split('@').next().unwrap_or(name);
    if let Some(rest) = name.strip_prefix("_ZN") {
        return legacy(rest).unwrap_or_else(|| name.to_string());
    }
    if let Some(rest) = name.strip_prefix("_R") {
        return v0(rest).unwrap_or_else(|| name.to_string());
    }
    name.to_string()
}

/// A legacy mangled path after `_ZN`: length-prefixed parts up to `E`.
fn legacy(mut rest: &str) -> Option<String> {
    let mut parts = Vec::new();
    while !rest.starts_with('E') {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let len: usize = rest[..digits].parse().ok()?;
        let part = rest.get(digits..digits + len)?;
        parts.push(part);
        rest = &rest[digits + len..];
    }
    let is_hash = |p: &&str| {
        p.len() == 17 && p.starts_with('h') && p[1..].bytes().all(|b| b.is_ascii_hexdigit())
    };
    if parts.last().is_some_and(is_hash) {
        parts.pop();
    }
    let parts: Vec<String> = parts.iter().map(|p| unescape(p)).collect();
    (!parts.is_empty()).then(|| parts.join("::"))
}

fn unescape(part: &str) -> String {
    let part = part
        .strip_prefix("_$")
        .map_or(part.to_string(), |p| format!("${p}"));
    let mut out = String::new();
    let mut rest = part.as_str();
    while !rest.is_empty() {
        if let Some(tail) = rest.strip_prefix("..") {
            out.push_str("::");
            rest = tail;
            continue;
        }
        if rest.starts_with('$')
            && let Some(end) = rest[1..].find('$')
        {
            let code = &rest[1..=end];
            let text = match code {
                "SP" => Some("@".to_string()),
                "BP" => Some("*".to_string()),
                "RF" => Some("&".to_string()),
                "LT" => Some("<".to_string()),
                "GT" => Some(">".to_string()),
                "LP" => Some("(".to_string()),
                "RP" => Some(")".to_string()),
                "C" => Some(",".to_string()),
                _ => code
                    .strip_prefix('u')
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .and_then(char::from_u32)
                    .map(String::from),
            };
            if let Some(text) = text {
                out.push_str(&text);
                rest = &rest[end + 2..];
                continue;
            }
        }
        let c = rest.chars().next().unwrap_or('?');
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The path of a v0 symbol after `_R` made of crate roots and nested names (`C`, `N`), the
/// common form of a function that is not generic; `None` for other forms.
fn v0(rest: &str) -> Option<String> {
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    let mut at = 0;
    let parts = v0_path(rest.as_bytes(), &mut at)?;
    Some(parts.join("::"))
}

fn v0_path(b: &[u8], at: &mut usize) -> Option<Vec<String>> {
    let tag = *b.get(*at)?;
    *at += 1;
    match tag {
        b'C' => Some(vec![v0_ident(b, at)?]),
        b'N' => {
            // The namespace: a lowercase letter for an internal one (a closure `C`, a shim),
            // uppercase for values and types alike.
            b.get(*at)?;
            *at += 1;
            let mut parts = v0_path(b, at)?;
            let ident = v0_ident(b, at)?;
            if !ident.is_empty() {
                parts.push(ident);
            }
            Some(parts)
        }
        _ => None,
    }
}

/// `[s<base62>_] [u] <decimal> [_] <bytes>`.
fn v0_ident(b: &[u8], at: &mut usize) -> Option<String> {
    if b.get(*at) == Some(&b's') {
        while *b.get(*at)? != b'_' {
            *at += 1;
        }
        *at += 1;
    }
    if b.get(*at) == Some(&b'u') {
        // Punycode: not decoded.
        return None;
    }
    let digits = b[*at..].iter().take_while(|c| c.is_ascii_digit()).count();
    let len: usize = std::str::from_utf8(&b[*at..*at + digits])
        .ok()?
        .parse()
        .ok()?;
    *at += digits;
    if b.get(*at) == Some(&b'_') {
        *at += 1;
    }
    let ident = std::str::from_utf8(b.get(*at..*at + len)?).ok()?;
    *at += len;
    Some(ident.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_names_read_as_paths() {
        assert_eq!(
            demangle("_ZN5alloc4sync16Arc$LT$T$C$A$GT$9drop_slow17h0fa17b4fbf5b54dcE"),
            "alloc::sync::Arc<T,A>::drop_slow"
        );
        assert_eq!(
            demangle(
                "_ZN4core3ptr67drop_in_place$LT$std..rt..lang_start$u7b$$u7b$closure$u7d$$u7d$$GT$17h1234567890abcdefE"
            ),
            "core::ptr::drop_in_place<std::rt::lang_start{{closure}}>"
        );
        assert_eq!(
            demangle("_RNvNtCslNYArtu3iFV_5alloc5alloc18handle_alloc_error"),
            "alloc::alloc::handle_alloc_error"
        );
        assert_eq!(
            demangle("_RNvCsfLfy6EI15iL_7___rustc35___rust_no_alloc_shim_is_unstable_v2"),
            "__rustc::__rust_no_alloc_shim_is_unstable_v2"
        );
        assert_eq!(demangle("memcpy@GLIBC_2.14"), "memcpy");
        assert_eq!(demangle("hot_sink"), "hot_sink");
        // A form this reader does not know stays as it is.
        assert_eq!(demangle("_RINvCs1_3foo3barpE"), "_RINvCs1_3foo3barpE");
        assert_eq!(demangle("_ZN3foo"), "_ZN3foo");
    }

    #[test]
    fn this_process_names_its_functions_and_reads_its_slots() {
        // A libc function through dladdr (one that is not an IFUNC, whose address would be
        // one of its variants').
        let getpid = libc::getpid as *const () as usize as u64;
        let name = name_of(getpid).expect("libc's dynamic symbols");
        assert!(name.contains("getpid"), "{name}");
        // A Rust function of this binary through its .symtab.
        let own = rust_names_read_as_paths as fn() as *const () as usize as u64;
        let name = name_of(own).expect("the test binary has a symbol table");
        assert!(name.ends_with("rust_names_read_as_paths"), "{name}");
        // A slot holding a pointer, and an unmapped address.
        let slot: u64 = own;
        assert_eq!(read_slot(&slot as *const u64 as u64), Some(own));
        assert_eq!(read_slot(8), None);
        assert_eq!(name_of(0x10), None);
    }
}
