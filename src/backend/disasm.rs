//! Disassembly of generated x86-64 code (iced-x86), for the machine-code pane, `hotlab asm`
//! and the instruction counts of ladder rows.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write;
use std::rc::Rc;

use iced_x86::{
    Decoder, DecoderOptions, Formatter, GasFormatter, Instruction, IntelFormatter, Mnemonic,
    OpKind, SymbolResolver, SymbolResult,
};

mod calls;
mod process;

pub use process::demangle;

/// Names of the addresses code refers to (runtime helpers, host functions, the program's own
/// functions): an operand that is one of them (`call 7F..h`, `mov rax,55..h`) is written as
/// the name. For code that runs in this process ([`Symbols::in_process`]) the symbol tables of
/// the loaded objects name the rest (libc's, rustc's functions), and a call through a pointer
/// slot (`call qword ptr [55..h]`, a GOT entry) is named by what the slot holds.
#[derive(Debug, Clone, Default)]
pub struct Symbols {
    names: HashMap<u64, String>,
    process: bool,
}

impl Symbols {
    /// No names.
    pub fn new() -> Symbols {
        Symbols::default()
    }

    /// Names for code at its address in this process: besides the names inserted, the
    /// process's symbol tables, and the pointers its slots hold.
    pub fn in_process() -> Symbols {
        Symbols {
            names: HashMap::new(),
            process: true,
        }
    }

    /// Name `addr`.
    pub fn insert(&mut self, addr: u64, name: impl Into<String>) {
        self.names.insert(addr, name.into());
    }
}

/// [`Symbols`] during one listing, with what the process's tables answered so far.
struct Names {
    symbols: Symbols,
    found: RefCell<HashMap<u64, Option<String>>>,
}

impl Names {
    /// The name of the function at `addr`.
    fn name(&self, addr: u64) -> Option<String> {
        if let Some(n) = self.symbols.names.get(&addr) {
            return Some(n.clone());
        }
        if !self.symbols.process {
            return None;
        }
        self.found
            .borrow_mut()
            .entry(addr)
            .or_insert_with(|| process::name_of(addr))
            .clone()
    }

    /// The pointer held at `addr` (a GOT entry), when the code is this process's.
    fn slot(&self, addr: u64) -> Option<u64> {
        self.symbols
            .process
            .then(|| process::read_slot(addr))
            .flatten()
    }

    /// The name of a slot that holds the address of a named function: `hot_sink@got`.
    fn slot_name(&self, addr: u64) -> Option<String> {
        self.name(addr)
            .or_else(|| Some(format!("{}@got", self.name(self.slot(addr)?)?)))
    }
}

/// The formatter's view of [`Names`]: immediates and branch targets by function name, memory
/// operands (a slot) by what they hold.
struct Resolver(Rc<Names>);

impl SymbolResolver for Resolver {
    fn symbol(
        &mut self,
        instruction: &Instruction,
        _operand: u32,
        instruction_operand: Option<u32>,
        address: u64,
        _address_size: u32,
    ) -> Option<SymbolResult<'_>> {
        let memory = instruction_operand.is_some_and(|k| instruction.op_kind(k) == OpKind::Memory);
        let name = if memory {
            self.0.slot_name(address)
        } else {
            self.0.name(address)
        };
        name.map(|n| SymbolResult::with_string(address, n))
    }
}

/// Assembly syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Syntax {
    /// `mov rax, [rdi+8]`
    #[default]
    Intel,
    /// `movq 8(%rdi), %rax` (GNU as).
    Att,
}

impl Syntax {
    /// What starts a comment: `;` (Intel), `#` (AT&T).
    pub fn comment(self) -> &'static str {
        match self {
            Syntax::Intel => ";",
            Syntax::Att => "#",
        }
    }
}

/// One decoded instruction (or a run of the data after the code: [`Line::is_data`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Its address.
    pub addr: u64,
    /// Its encoding.
    pub bytes: Vec<u8>,
    /// The instruction as text (`(bad)` for bytes that do not decode), a call through a
    /// register that holds a named function followed by the name (`call rax ; hot_sink`).
    pub text: String,
}

/// Decode `bytes`, placed at `addr`, into one [`Line`] per instruction.
pub fn disassemble(bytes: &[u8], addr: u64, syntax: Syntax) -> Vec<Line> {
    disassemble_named(bytes, addr, syntax, &Symbols::new())
}

/// [`disassemble`] of code at its address in this process, its calls named from the
/// process's symbol tables ([`Symbols::in_process`]).
pub fn disassemble_in_process(bytes: &[u8], addr: u64, syntax: Syntax) -> Vec<Line> {
    disassemble_named(bytes, addr, syntax, &Symbols::in_process())
}

/// [`disassemble`], writing the operands `symbols` names as their names, and naming the
/// function a call through a register reaches when the register was loaded with its address
/// earlier on the same straight path (`mov rax,hot_sink` ... `call rax ; hot_sink`).
pub fn disassemble_named(bytes: &[u8], addr: u64, syntax: Syntax, symbols: &Symbols) -> Vec<Line> {
    let names = Rc::new(Names {
        symbols: symbols.clone(),
        found: RefCell::new(HashMap::new()),
    });
    let resolver: Option<Box<dyn SymbolResolver>> = if symbols.names.is_empty() && !symbols.process
    {
        None
    } else {
        Some(Box::new(Resolver(Rc::clone(&names))))
    };
    let mut formatter: Box<dyn Formatter> = match syntax {
        Syntax::Intel => Box::new(IntelFormatter::with_options(resolver, None)),
        Syntax::Att => Box::new(GasFormatter::with_options(resolver, None)),
    };
    let code_len = code_len(bytes, addr);
    let code = &bytes[..code_len];
    let mut held = calls::Registers::new(code, addr, &names);
    let mut decoder = Decoder::with_ip(64, code, addr, DecoderOptions::NONE);
    let mut instr = Instruction::default();
    let mut lines = Vec::new();
    while decoder.can_decode() {
        decoder.decode_out(&mut instr);
        let start = (instr.ip() - addr) as usize;
        let end = (start + instr.len()).min(bytes.len());
        let mut text = String::new();
        if instr.is_invalid() {
            text.push_str("(bad)");
        } else {
            formatter.format(&instr, &mut text);
            if let Some(name) = held.called(&instr).and_then(|a| names.name(a)) {
                let _ = write!(text, " {} {name}", syntax.comment());
            }
            held.after(&instr, &names);
        }
        lines.push(Line {
            addr: instr.ip(),
            bytes: bytes[start..end].to_vec(),
            text,
        });
    }
    lines.extend(data_lines(bytes, addr, code_len));
    lines
}

/// How many of `bytes` (a function placed at `addr`) are code: the data Cranelift places after
/// a function's code (its constants: a mask, a float) starts at the lowest address inside the
/// function that an instruction reads relative to `rip`; without one, all of it.
pub(crate) fn code_len(bytes: &[u8], addr: u64) -> usize {
    code_len_relocated(bytes, addr, &[])
}

/// [`code_len`] of code whose relocations are not applied yet: an operand whose displacement
/// is one of the `relocated` offsets (a GOT load of a position-independent library before it
/// is linked) says nothing about where the data is.
pub(crate) fn code_len_relocated(bytes: &[u8], addr: u64, relocated: &[u32]) -> usize {
    let end = addr + bytes.len() as u64;
    let mut decoder = Decoder::with_ip(64, bytes, addr, DecoderOptions::NONE);
    let mut instr = Instruction::default();
    let mut data = bytes.len();
    // Where each instruction that ends a path (`ud2`, `ret`, `jmp`) ends.
    let mut ends = Vec::new();
    while decoder.can_decode() {
        decoder.decode_out(&mut instr);
        if instr.ip() - addr >= data as u64 {
            break;
        }
        if instr.is_invalid() {
            continue;
        }
        if matches!(
            instr.mnemonic(),
            Mnemonic::Ud2 | Mnemonic::Ret | Mnemonic::Jmp
        ) {
            ends.push((instr.next_ip() - addr) as usize);
        }
        // A memory read, not a `lea` (which could address code, such as an inline jump
        // table).
        if instr.is_ip_rel_memory_operand()
            && instr.mnemonic() != Mnemonic::Lea
            && !displacement_relocated(&decoder, &instr, addr, relocated)
        {
            let target = instr.ip_rel_memory_address();
            if target > instr.ip() && target < end {
                data = data.min((target - addr) as usize);
            }
        }
    }
    // The zero bytes that align the data, after the code's last instruction, are data too.
    match ends.iter().rev().find(|&&e| e <= data) {
        Some(&e) if data < bytes.len() && bytes[e..data].iter().all(|&b| b == 0) => e,
        _ => data,
    }
}

/// Whether `instr`'s displacement is a field a relocation fills in.
fn displacement_relocated(
    decoder: &Decoder<'_>,
    instr: &Instruction,
    addr: u64,
    relocated: &[u32],
) -> bool {
    let offsets = decoder.get_constant_offsets(instr);
    offsets.has_displacement()
        && relocated.contains(&((instr.ip() - addr) as u32 + offsets.displacement_offset() as u32))
}

/// The data after a function's code ([`code_len`]) as lines of up to 8 bytes, each shown as
/// one little-endian number (`.quad 0x0000ffffffffffff`; `.byte` for a shorter tail).
fn data_lines(bytes: &[u8], addr: u64, from: usize) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut at = from;
    while at < bytes.len() {
        // Up to the next 8-byte boundary of the address, then 8 at a time.
        let step = (8 - ((addr as usize + at) % 8)).min(bytes.len() - at);
        let chunk = &bytes[at..at + step];
        let text = if chunk.len() == 8 {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            format!(".quad 0x{:016x}", u64::from_le_bytes(word))
        } else {
            let hex: Vec<String> = chunk.iter().map(|b| format!("0x{b:02x}")).collect();
            format!(".byte {}", hex.join(","))
        };
        lines.push(Line {
            addr: addr + at as u64,
            bytes: chunk.to_vec(),
            text,
        });
        at += step;
    }
    lines
}

/// Number of instructions in `bytes` (the data after the code not counted).
pub fn instruction_count(bytes: &[u8]) -> usize {
    let code = &bytes[..code_len(bytes, 0)];
    let mut decoder = Decoder::new(64, code, DecoderOptions::NONE);
    let mut instr = Instruction::default();
    let mut count = 0;
    while decoder.can_decode() {
        decoder.decode_out(&mut instr);
        count += 1;
    }
    count
}

impl Line {
    /// Whether the line is data after the code (`.quad`, `.byte`), not an instruction.
    pub fn is_data(&self) -> bool {
        self.text.starts_with(".quad ") || self.text.starts_with(".byte ")
    }
}

/// `address  bytes  instruction`, one line each, columns aligned.
pub fn render(lines: &[Line]) -> String {
    render_marked(lines, Syntax::Intel, &|_| None)
}

/// A source line's mark in a listing: `; 12: let x = v[i]` (the text cut to fit 80 columns).
pub fn source_mark(syntax: Syntax, line: usize, text: &str) -> String {
    const ROOM: usize = 66;
    let text = text.trim();
    let text = if text.chars().count() > ROOM {
        let cut: String = text.chars().take(ROOM - 1).collect();
        format!("{cut}…")
    } else {
        text.to_string()
    };
    format!("{} {line}: {text}", syntax.comment())
}

/// [`render`], with a mark ([`source_mark`]) before each run of instructions that comes from
/// another source line than the run before: `source_line(addr)` is the line (number and text)
/// the instruction at `addr` was lowered from, when the backend recorded one.
pub fn render_marked(
    lines: &[Line],
    syntax: Syntax,
    source_line: &dyn Fn(u64) -> Option<(usize, String)>,
) -> String {
    let width = lines.iter().map(|l| l.bytes.len()).max().unwrap_or(0) * 3;
    let mut out = String::new();
    let mut last = None;
    for line in lines {
        if !line.is_data()
            && let Some((number, text)) = source_line(line.addr)
            && last != Some(number)
        {
            let _ = writeln!(out, "{}", source_mark(syntax, number, &text));
            last = Some(number);
        }
        let hex: Vec<String> = line.bytes.iter().map(|b| format!("{b:02x}")).collect();
        let _ = writeln!(
            out,
            "{:016x}  {:<width$}  {}",
            line.addr,
            hex.join(" "),
            line.text
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // mov rax, rdi ; add rax, 1 ; ret
    const CODE: [u8; 8] = [0x48, 0x89, 0xf8, 0x48, 0x83, 0xc0, 0x01, 0xc3];

    #[test]
    fn decodes_intel_and_att() {
        let intel = disassemble(&CODE, 0x1000, Syntax::Intel);
        let texts: Vec<&str> = intel.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["mov rax,rdi", "add rax,1", "ret"]);
        assert_eq!(intel[1].addr, 0x1003);
        assert_eq!(intel[2].bytes, [0xc3]);
        let att = disassemble(&CODE, 0x1000, Syntax::Att);
        assert_eq!(att[0].text, "mov %rdi,%rax");
        assert_eq!(instruction_count(&CODE), 3);
    }

    #[test]
    fn renders_aligned_columns() {
        let text = render(&disassemble(&CODE, 0x1000, Syntax::Intel));
        assert_eq!(
            text,
            "0000000000001000  48 89 f8      mov rax,rdi\n\
             0000000000001003  48 83 c0 01   add rax,1\n\
             0000000000001007  c3            ret\n"
        );
    }

    #[test]
    fn named_addresses_are_written_as_their_names() {
        // mov rax, 0x1122334455667788 ; call rax ; call rel32 to 0x1000 + 15 + 0x10
        let code = [
            0x48, 0xb8, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0xff, 0xd0, 0xe8, 0x10,
            0x00, 0x00, 0x00,
        ];
        let mut symbols = Symbols::new();
        symbols.insert(0x1122_3344_5566_7788, "hot_str_slice");
        symbols.insert(0x1000 + 17 + 0x10, "Table.pick");
        let lines = disassemble_named(&code, 0x1000, Syntax::Intel, &symbols);
        assert_eq!(lines[0].text, "mov rax,hot_str_slice");
        assert_eq!(lines[2].text, "call Table.pick");
        let plain = disassemble(&code, 0x1000, Syntax::Intel);
        assert_eq!(plain[0].text, "mov rax,1122334455667788h");
    }

    #[test]
    fn calls_through_registers_are_named_by_what_was_loaded() {
        // mov rax,imm64 ; call rax ; call rax (rax changed by the first call) ;
        // mov rbx,imm64 ; jmp +0 (a jump target follows) ; call rbx (rbx written once) ;
        // mov ecx,1 ; call rcx (not a named address)
        let mut code = vec![0x48, 0xb8];
        code.extend(0x1122_3344_5566_7788u64.to_le_bytes());
        code.extend([0xff, 0xd0, 0xff, 0xd0, 0x48, 0xbb]);
        code.extend(0x1122_3344_5566_0000u64.to_le_bytes());
        code.extend([
            0xeb, 0x00, 0xff, 0xd3, 0xb9, 0x01, 0x00, 0x00, 0x00, 0xff, 0xd1, 0xc3,
        ]);
        let mut symbols = Symbols::new();
        symbols.insert(0x1122_3344_5566_7788, "hot_sink");
        symbols.insert(0x1122_3344_5566_0000, "hot_object_release");
        let texts: Vec<String> = disassemble_named(&code, 0x1000, Syntax::Intel, &symbols)
            .into_iter()
            .map(|l| l.text)
            .collect();
        assert_eq!(
            texts,
            [
                "mov rax,hot_sink",
                "call rax ; hot_sink",
                "call rax",
                "mov rbx,hot_object_release",
                "jmp short 000000000000101Ah",
                "call rbx ; hot_object_release",
                "mov ecx,1",
                "call rcx",
                "ret",
            ]
        );
        let att = disassemble_named(&code, 0x1000, Syntax::Att, &symbols);
        assert_eq!(att[1].text, "call *%rax # hot_sink");
    }

    #[test]
    fn a_register_written_on_two_paths_is_not_named() {
        // mov rax,imm64 ; (jump target) call rax: rax may come from the other path.
        let mut code = vec![0x48, 0xb8];
        code.extend(0x1122_3344_5566_7788u64.to_le_bytes());
        code.extend([0xeb, 0x00, 0xff, 0xd0, 0x48, 0x31, 0xc0, 0xeb, 0xf9]);
        let mut symbols = Symbols::new();
        symbols.insert(0x1122_3344_5566_7788, "hot_sink");
        let lines = disassemble_named(&code, 0x1000, Syntax::Intel, &symbols);
        assert_eq!(lines[2].text, "call rax");
    }

    #[test]
    fn slots_of_this_process_are_named_by_what_they_hold() {
        // call qword ptr [rip+d], the slot holding the address of a function of this binary.
        let target = renders_aligned_columns as fn() as *const () as usize as u64;
        let slot = Box::new(target);
        let slot_addr = &*slot as *const u64 as u64;
        let code_addr = 0x1000u64;
        let disp = slot_addr.wrapping_sub(code_addr + 6) as i64;
        let Ok(disp) = i32::try_from(disp) else {
            // The heap is beyond a rip-relative reach of 0x1000: place the code near it.
            let code_addr = slot_addr - 0x100;
            let disp = (slot_addr - (code_addr + 6)) as i32;
            let mut code = vec![0xff, 0x15];
            code.extend(disp.to_le_bytes());
            let lines = disassemble_in_process(&code, code_addr, Syntax::Intel);
            assert!(
                lines[0].text.ends_with("renders_aligned_columns@got]"),
                "{lines:?}"
            );
            return;
        };
        let mut code = vec![0xff, 0x15];
        code.extend(disp.to_le_bytes());
        let lines = disassemble_in_process(&code, code_addr, Syntax::Intel);
        assert!(
            lines[0].text.ends_with("renders_aligned_columns@got]"),
            "{lines:?}"
        );
        // Without the process's tables the slot stays an address.
        assert!(
            disassemble(&code, code_addr, Syntax::Intel)[0]
                .text
                .ends_with("h]")
        );
    }

    #[test]
    fn source_marks_start_each_line_s_run() {
        let lines = disassemble(&CODE, 0x1000, Syntax::Intel);
        let text = render_marked(&lines, Syntax::Intel, &|a| match a {
            0x1000 => None,
            0x1003 => Some((4, "    return n + 1".to_string())),
            _ => Some((4, "    return n + 1".to_string())),
        });
        assert_eq!(
            text,
            "0000000000001000  48 89 f8      mov rax,rdi\n\
             ; 4: return n + 1\n\
             0000000000001003  48 83 c0 01   add rax,1\n\
             0000000000001007  c3            ret\n"
        );
        let long = source_mark(Syntax::Att, 120, &"x".repeat(200));
        assert!(
            long.starts_with("# 120: xxx") && long.ends_with('…'),
            "{long}"
        );
        assert!(long.chars().count() <= 80, "{long}");
    }

    #[test]
    fn constants_after_the_code_are_data() {
        // and rax,[rip+9] ; ret ; ud2 ; (zero padding) ; the mask 0x0000ffffffffffff at 16
        let mut code = vec![0x48, 0x23, 0x05, 0x09, 0x00, 0x00, 0x00, 0xc3, 0x0f, 0x0b];
        code.resize(16, 0x00);
        code.extend(0x0000_ffff_ffff_ffffu64.to_le_bytes());
        let lines = disassemble(&code, 0x1000, Syntax::Intel);
        let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts[1], "ret");
        assert_eq!(texts[2], "ud2");
        // The padding to the 8-byte boundary, then the constant.
        assert_eq!(texts[3], ".byte 0x00,0x00,0x00,0x00,0x00,0x00");
        assert_eq!(lines.last().unwrap().text, ".quad 0x0000ffffffffffff");
        assert_eq!(lines.last().unwrap().addr, 0x1010);
        assert_eq!(lines.len(), 5);
        assert_eq!(lines.iter().filter(|l| !l.is_data()).count(), 3);
        assert_eq!(instruction_count(&code), 3);
    }

    #[test]
    fn bad_bytes_do_not_panic() {
        let lines = disassemble(&[0x0f, 0xff], 0, Syntax::Intel);
        assert!(!lines.is_empty());
        assert!(instruction_count(&[]) == 0);
    }
}
