//! Machine code as a reader wants it (as Compiler Explorer shows it): the instructions first,
//! at the left, jump targets inside the function as local labels (`.L1:`), calls to the
//! snippet's own functions by name, and the bytes after the function's last `ud2` that no jump
//! reaches (a constant pool) as data, not as instructions decoded from it. The address and the
//! bytes of each instruction are a second view (`a` in the TUI), as offsets from the start so a
//! line fits 80 columns.

/// One decoded line of a listing (`00007f5817203000  48 89 e5   mov rbp,rsp`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Decoded {
    addr: u64,
    bytes: Vec<String>,
    text: String,
}

fn is_hex_byte(t: &str) -> bool {
    t.len() == 2 && t.chars().all(|c| c.is_ascii_hexdigit())
}

fn decode(line: &str) -> Option<Decoded> {
    let (addr, rest) = line.split_once(' ')?;
    if addr.len() < 8 || !addr.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let addr = u64::from_str_radix(addr, 16).ok()?;
    let mut bytes = Vec::new();
    let mut rest = rest.trim_start();
    while let Some((tok, tail)) = rest.split_once(' ') {
        if !is_hex_byte(tok) {
            break;
        }
        bytes.push(tok.to_string());
        rest = tail.trim_start();
    }
    if bytes.is_empty() {
        return None;
    }
    Some(Decoded {
        addr,
        bytes,
        text: rest.trim().to_string(),
    })
}

/// An absolute target written by the disassembler (`00007F51077FC03Ah`, `short 00007F5…h`: a
/// rel8 jump, as rustc's code has many).
fn target(operand: &str) -> Option<u64> {
    let operand = operand.trim();
    let operand = operand.strip_prefix("short ").unwrap_or(operand);
    let h = operand.strip_suffix('h')?;
    if h.len() < 8 {
        return None;
    }
    u64::from_str_radix(h, 16).ok()
}

/// A source-line mark of a listing (`; 12: let x = v[i]`, `# 12: ...` in AT&T syntax).
pub fn is_mark(line: &str) -> bool {
    line.starts_with("; ") || line.starts_with("# ")
}

/// Whether a listing is in the addressed form this module reads.
pub fn is_addressed(listing: &str) -> bool {
    listing
        .lines()
        .find(|l| !is_mark(l))
        .is_some_and(|l| decode(l).is_some())
}

/// The start address of an addressed listing.
pub fn start_of(listing: &str) -> Option<u64> {
    decode(listing.lines().find(|l| !is_mark(l))?).map(|d| d.addr)
}

/// The two views of one function's addressed listing: (instructions first, with labels and
/// data; the same with offsets and bytes). `functions` names the start addresses of the
/// snippet's functions, for its calls.
pub fn views(listing: &str, functions: &[(String, u64)]) -> (Vec<String>, Vec<String>) {
    let mut lines: Vec<Decoded> = Vec::new();
    // The marks before the instruction at each index.
    let mut marks: Vec<(usize, String)> = Vec::new();
    for l in listing.lines() {
        if is_mark(l) {
            marks.push((lines.len(), l.to_string()));
        } else if let Some(d) = decode(l) {
            lines.push(d);
        }
    }
    let Some(first) = lines.first() else {
        let raw: Vec<String> = listing.lines().map(str::to_string).collect();
        return (raw.clone(), raw);
    };
    let start = first.addr;
    let end = lines
        .last()
        .map_or(start, |l| l.addr + l.bytes.len() as u64);
    let inside = |a: u64| a >= start && a < end;
    // Local labels, in address order.
    let mut targets: Vec<u64> = lines
        .iter()
        .filter(|l| l.text.starts_with('j'))
        .filter_map(|l| l.text.split_once(' ').and_then(|(_, op)| target(op)))
        .filter(|&a| inside(a))
        .collect();
    targets.sort_unstable();
    targets.dedup();
    let label = |a: u64| {
        targets
            .iter()
            .position(|&t| t == a)
            .map(|i| format!(".L{}", i + 1))
    };
    // After the last ud2, what no jump reaches is data (a constant pool, padding).
    let last_ud2 = lines.iter().rposition(|l| l.text == "ud2");
    let data_from = last_ud2
        .map(|i| i + 1)
        .filter(|&i| lines[i..].iter().all(|l| !targets.contains(&l.addr)));
    let mut plain = Vec::new();
    let mut addressed = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        for (_, mark) in marks.iter().filter(|(at, _)| *at == i) {
            plain.push(mark.clone());
            addressed.push(mark.clone());
        }
        if let Some(name) = label(l.addr) {
            plain.push(format!("{name}:"));
            addressed.push(format!("{name}:"));
        }
        let off = format!("{:>5x}", l.addr - start);
        if data_from.is_some_and(|d| i >= d) {
            let data = l
                .bytes
                .iter()
                .map(|b| format!("0x{b}"))
                .collect::<Vec<_>>()
                .join(",");
            plain.push(format!("        .byte {data}"));
            addressed.push(format!("{off}  {:<20}  .byte (data)", l.bytes.join(" ")));
            continue;
        }
        let text = rename(&l.text, &label, functions);
        plain.push(format!("        {text}"));
        let mut bytes = l.bytes.join(" ");
        if bytes.len() > 20 {
            bytes.truncate(18);
            bytes.push('…');
        }
        addressed.push(format!("{off}  {bytes:<20}  {text}"));
    }
    (plain, addressed)
}

/// An instruction with its absolute targets named: a local label, a function of the snippet.
fn rename(
    text: &str,
    label: &dyn Fn(u64) -> Option<String>,
    functions: &[(String, u64)],
) -> String {
    let Some((mnemonic, operand)) = text.split_once(' ') else {
        return text.to_string();
    };
    let Some(a) = target(operand) else {
        return text.to_string();
    };
    if let Some(l) = label(a) {
        return format!("{mnemonic} {l}");
    }
    if let Some((name, _)) = functions.iter().find(|(_, s)| *s == a) {
        return format!("{mnemonic} {name}");
    }
    text.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "\
00007f51077fc000  55                              push rbp
; 3: return f(n) + 1
00007f51077fc001  48 89 e5                        mov rbp,rsp
00007f51077fc00d  0f 82 27 00 00 00               jb 00007F51077FC015h
00007f51077fc011  74 02                           je short 00007F51077FC015h
00007f51077fc013  0f 0b                           ud2
00007f51077fc015  e8 63 ff ff ff                  call 00007F51077FC100h
00007f51077fc01a  c3                              ret
00007f51077fc01b  0f 0b                           ud2
00007f51077fc01d  00 00                           add [rax],al";

    #[test]
    fn labels_names_and_data() {
        let (plain, addressed) = views(RUN, &[("helper".into(), 0x7f51077fc100)]);
        assert_eq!(
            plain,
            [
                "        push rbp",
                "; 3: return f(n) + 1",
                "        mov rbp,rsp",
                "        jb .L1",
                "        je .L1",
                "        ud2",
                ".L1:",
                "        call helper",
                "        ret",
                "        ud2",
                "        .byte 0x00,0x00",
            ]
        );
        assert_eq!(addressed[1], "; 3: return f(n) + 1");
        assert_eq!(addressed[2], "    1  48 89 e5              mov rbp,rsp");
        assert!(addressed.iter().all(|l| l.chars().count() <= 80));
        assert!(is_addressed(RUN));
        assert!(!is_addressed("    push rbp"));
        // A listing that starts with a mark is addressed all the same.
        let marked = format!("; 1: fn f() {{\n{RUN}");
        assert!(is_addressed(&marked));
        assert_eq!(start_of(&marked), Some(0x7f51077fc000));
    }
}
