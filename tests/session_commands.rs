//! Command parsing: every command, its arguments, and bad input with useful errors.

use std::path::PathBuf;

use hotlab::session::Backend;
use hotlab::session::command::{COMMANDS, Command, ExportFormat, Setting, help_for, parse};

fn ok(line: &str) -> Command {
    parse(line).unwrap_or_else(|e| panic!("`{line}` should parse: {e}"))
}

fn bad(line: &str) -> String {
    match parse(line) {
        Ok(c) => panic!("`{line}` should not parse, got {c:?}"),
        Err(e) => e.message,
    }
}

#[test]
fn every_command_parses() {
    assert_eq!(ok(":help"), Command::Help(None));
    assert_eq!(ok(":help run"), Command::Help(Some("run".into())));
    assert_eq!(ok(":h :run"), Command::Help(Some(":run".into())));
    assert_eq!(ok(":backend"), Command::Backend(None));
    assert_eq!(
        ok(":backend jit-opt"),
        Command::Backend(Some(Backend::JitOpt))
    );
    assert_eq!(
        ok(":backend interp"),
        Command::Backend(Some(Backend::Interp))
    );
    assert_eq!(ok(":twin int_loop"), Command::Twin(Some("int_loop".into())));
    assert_eq!(ok(":run"), Command::Run(None));
    assert_eq!(ok(":run sum"), Command::Run(Some("sum".into())));
    assert_eq!(ok(":compare b.hot"), Command::Compare("b.hot".into()));
    assert_eq!(ok(":check"), Command::Check(None));
    assert_eq!(
        ok(":check --vs b.hot"),
        Command::Check(Some("b.hot".into()))
    );
    assert_eq!(ok(":ladder"), Command::Ladder(None));
    assert_eq!(ok(":ladder fused"), Command::Ladder(Some("fused".into())));
    assert_eq!(
        ok(":layers slot entry depth"),
        Command::Layers(vec!["slot".into(), "entry".into(), "depth".into()])
    );
    assert_eq!(ok(":asm"), Command::Asm(None));
    assert_eq!(ok(":ir run"), Command::Ir(Some("run".into())));
    assert_eq!(ok(":reload"), Command::Reload);
    assert_eq!(ok(":cases"), Command::Cases);
    assert_eq!(
        ok(":load cases/int_loop.hot"),
        Command::Load("cases/int_loop.hot".into())
    );
    assert_eq!(ok(":save out.hot"), Command::Save(PathBuf::from("out.hot")));
    assert_eq!(
        ok(":export md r.md"),
        Command::Export(ExportFormat::Markdown, PathBuf::from("r.md"))
    );
    assert_eq!(
        ok(":export csv -"),
        Command::Export(ExportFormat::Csv, "-".into())
    );
    assert_eq!(
        ok(":export json r.json"),
        Command::Export(ExportFormat::Json, "r.json".into())
    );
    assert_eq!(ok(":set"), Command::Set(None));
    assert_eq!(ok(":set time 0.5"), Command::Set(Some(Setting::Time(0.5))));
    assert_eq!(ok(":set time 2s"), Command::Set(Some(Setting::Time(2.0))));
    assert_eq!(ok(":set band 2%"), Command::Set(Some(Setting::Band(0.02))));
    assert_eq!(
        ok(":set band 0.05"),
        Command::Set(Some(Setting::Band(0.05)))
    );
    assert_eq!(ok(":set cpu 1"), Command::Set(Some(Setting::Cpu(Some(1)))));
    assert_eq!(ok(":set cpu auto"), Command::Set(Some(Setting::Cpu(None))));
    assert_eq!(
        ok(":set mem 512M"),
        Command::Set(Some(Setting::Mem(Some(512 << 20))))
    );
    assert_eq!(ok(":set mem auto"), Command::Set(Some(Setting::Mem(None))));
    assert_eq!(
        ok(":set checks off"),
        Command::Set(Some(Setting::Checks(false)))
    );
    assert_eq!(ok(":set limit 1"), Command::Set(Some(Setting::Limit(1.0))));
    assert_eq!(ok(":snippet"), Command::Snippet(None));
    assert_eq!(ok(":snippet b.hot"), Command::Snippet(Some("b.hot".into())));
    assert_eq!(ok(":show"), Command::Show);
    assert_eq!(ok(":clear"), Command::Clear);
    assert_eq!(ok(":doctor"), Command::Doctor);
    assert_eq!(ok(":history"), Command::History);
    assert_eq!(ok(":quit"), Command::Quit);
    assert_eq!(ok(":q"), Command::Quit);
    assert_eq!(ok("  :exit  "), Command::Quit);
}

#[test]
fn other_lines_are_code() {
    assert_eq!(
        ok("fn f() -> i64 { return 1 }"),
        Command::Code("fn f() -> i64 { return 1 }".into())
    );
    assert_eq!(ok("   "), Command::Code(String::new()));
    assert_eq!(ok("    return x  "), Command::Code("    return x".into()));
}

#[test]
fn bad_input_says_what_and_how() {
    let e = bad(":rnu");
    assert!(
        e.contains("unknown command `:rnu`") && e.contains("did you mean :run?"),
        "{e}"
    );
    assert!(bad(":zzzzzz").contains(":help lists"));
    assert!(bad(":").contains("lone `:`"));
    let e = bad(":backend llvm");
    assert!(
        e.contains("no backend named `llvm`") && e.contains("usage: :backend"),
        "{e}"
    );
    assert!(bad(":run a b").contains("at most 1 argument"));
    assert!(bad(":compare").contains("takes 1 argument"));
    assert!(bad(":load").contains("usage: :load CASE|FILE"));
    assert!(bad(":export pdf x.pdf").contains("no export format `pdf`"));
    assert!(bad(":export md").contains("takes 2 argument"));
    assert!(bad(":set time").contains("needs a value"));
    assert!(bad(":set time -1").contains("not a time in seconds"));
    assert!(bad(":set time abc").contains("not a time in seconds"));
    assert!(bad(":set band 150%").contains("not a band"));
    assert!(bad(":set band 0").contains("not a band"));
    assert!(bad(":set cpu x").contains("not a CPU"));
    // An offline CPU is refused when set, not at the first job that needs it.
    assert!(bad(":set cpu 9999").contains("CPU 9999 is not online here (online: "));
    assert!(bad(":set mem 1M").contains("out of range"));
    assert!(bad(":set mem lots").contains("not a size"));
    assert!(bad(":set checks maybe").contains("not on or off"));
    assert!(bad(":set colour red").contains("no setting named `colour`"));
    assert!(bad(":check b.hot").contains("--vs"));
    assert!(bad(":help nothing").contains("no command named `nothing`"));
    assert!(bad(":quit now").contains("takes 0 argument"));
}

#[test]
fn every_command_has_help_and_a_parser() {
    for c in COMMANDS {
        assert!(!c.summary.is_empty() && !c.details.is_empty(), "{}", c.name);
        assert!(c.usage.starts_with(&format!(":{}", c.name)), "{}", c.usage);
        assert_eq!(help_for(c.name).map(|h| h.name), Some(c.name));
        // Parsing the bare name reaches the command's parser (never "unknown command").
        if let Err(e) = parse(&format!(":{}", c.name)) {
            assert!(!e.message.contains("unknown command"), "{}: {e}", c.name);
            assert!(!e.message.contains("no parser"), "{}: {e}", c.name);
        }
    }
}
