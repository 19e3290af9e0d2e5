//! Disassembly of generated x86-64 code (iced-x86), for the machine-code pane, `hotlab asm`
//! and the instruction counts of ladder rows.

use std::fmt::Write;

use std::collections::HashMap;

use iced_x86::{
    Decoder, DecoderOptions, Formatter, GasFormatter, Instruction, IntelFormatter, SymbolResolver,
    SymbolResult,
};

/// Names of the addresses code refers to (runtime helpers, host functions, the program's own
/// functions): an operand that is one of them (`call 7F..h`, `mov rax,55..h`) is written as
/// the name.
#[derive(Debug, Clone, Default)]
pub struct Symbols(HashMap<u64, String>);

impl Symbols {
    /// No names.
    pub fn new() -> Symbols {
        Symbols::default()
    }

    /// Name `addr`.
    pub fn insert(&mut self, addr: u64, name: impl Into<String>) {
        self.0.insert(addr, name.into());
    }
}

impl SymbolResolver for Symbols {
    fn symbol(
        &mut self,
        _instruction: &Instruction,
        _operand: u32,
        _instruction_operand: Option<u32>,
        address: u64,
        _address_size: u32,
    ) -> Option<SymbolResult<'_>> {
        self.0
            .get(&address)
            .map(|name| SymbolResult::with_str(address, name.as_str()))
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

/// One decoded instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Its address.
    pub addr: u64,
    /// Its encoding.
    pub bytes: Vec<u8>,
    /// The instruction as text (`(bad)` for bytes that do not decode).
    pub text: String,
}

/// Decode `bytes`, placed at `addr`, into one [`Line`] per instruction.
pub fn disassemble(bytes: &[u8], addr: u64, syntax: Syntax) -> Vec<Line> {
    disassemble_named(bytes, addr, syntax, &Symbols::new())
}

/// [`disassemble`], writing the operands `symbols` names as their names.
pub fn disassemble_named(bytes: &[u8], addr: u64, syntax: Syntax, symbols: &Symbols) -> Vec<Line> {
    let resolver: Option<Box<dyn SymbolResolver>> = if symbols.0.is_empty() {
        None
    } else {
        Some(Box::new(symbols.clone()))
    };
    let mut formatter: Box<dyn Formatter> = match syntax {
        Syntax::Intel => Box::new(IntelFormatter::with_options(resolver, None)),
        Syntax::Att => Box::new(GasFormatter::with_options(resolver, None)),
    };
    let mut decoder = Decoder::with_ip(64, bytes, addr, DecoderOptions::NONE);
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
        }
        lines.push(Line {
            addr: instr.ip(),
            bytes: bytes[start..end].to_vec(),
            text,
        });
    }
    lines
}

/// Number of instructions in `bytes`.
pub fn instruction_count(bytes: &[u8]) -> usize {
    let mut decoder = Decoder::new(64, bytes, DecoderOptions::NONE);
    let mut instr = Instruction::default();
    let mut count = 0;
    while decoder.can_decode() {
        decoder.decode_out(&mut instr);
        count += 1;
    }
    count
}

/// `address  bytes  instruction`, one line each, columns aligned.
pub fn render(lines: &[Line]) -> String {
    let width = lines.iter().map(|l| l.bytes.len()).max().unwrap_or(0) * 3;
    let mut out = String::new();
    for line in lines {
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
    fn bad_bytes_do_not_panic() {
        let lines = disassemble(&[0x0f, 0xff], 0, Syntax::Intel);
        assert!(!lines.is_empty());
        assert!(instruction_count(&[]) == 0);
    }
}
