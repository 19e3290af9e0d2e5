//! Disassembly of generated x86-64 code (iced-x86), for the machine-code pane, `hotlab asm`
//! and the instruction counts of ladder rows.

use std::fmt::Write;

use iced_x86::{Decoder, DecoderOptions, Formatter, GasFormatter, Instruction, IntelFormatter};

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
    let mut formatter: Box<dyn Formatter> = match syntax {
        Syntax::Intel => Box::new(IntelFormatter::new()),
        Syntax::Att => Box::new(GasFormatter::new()),
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
    fn bad_bytes_do_not_panic() {
        let lines = disassemble(&[0x0f, 0xff], 0, Syntax::Intel);
        assert!(!lines.is_empty());
        assert!(instruction_count(&[]) == 0);
    }
}
