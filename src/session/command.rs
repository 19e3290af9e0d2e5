//! The session's commands, parsed in one place for every front end. A line that starts with
//! `:` is a command; any other line is snippet code. Each command has a help text, shown by
//! `:help CMD`, and a bad line gets an error that names the command and shows its usage.

use std::fmt;
use std::path::PathBuf;

use crate::backend::Backend;

/// A parsed input line.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Snippet code to add to the current snippet (empty: nothing to do).
    Code(String),
    /// `:help [cmd]`.
    Help(Option<String>),
    /// `:backend [B]`: show or choose the backend.
    Backend(Option<Backend>),
    /// `:twin [NAME]`: show or choose the native twin.
    Twin(Option<String>),
    /// `:run [fn]`: call a function (default `main`) and print its value.
    Run(Option<String>),
    /// `:compare OTHER`: measure `run(n)` of the snippet against OTHER's.
    Compare(String),
    /// `:check [--vs OTHER]`: the verdict against the twin or another snippet.
    Check(Option<String>),
    /// `:ladder [name]`: measure a ladder.
    Ladder(Option<String>),
    /// `:layers ...`: show, reorder or toggle the next ladder's layers.
    Layers(Vec<String>),
    /// `:bench [FILTER]`: the cases beside their twins on every backend.
    Bench(Option<String>),
    /// `:asm [fn]`: machine code.
    Asm(Option<String>),
    /// `:ir [fn]`: Cranelift IR.
    Ir(Option<String>),
    /// `:reload`: reload the snippet's classes in the worker's live module.
    Reload,
    /// `:cases`: list the cases.
    Cases,
    /// `:load CASE|FILE`: load a snippet.
    Load(String),
    /// `:save FILE`: write the current snippet to a file.
    Save(PathBuf),
    /// `:export md|csv|json FILE`: write the last result.
    Export(ExportFormat, PathBuf),
    /// `:set NAME VALUE` (no name: show the settings).
    Set(Option<Setting>),
    /// `:snippet [NAME]`: list snippets, or switch to (or start) NAME.
    Snippet(Option<String>),
    /// `:show`: print the current snippet.
    Show,
    /// `:clear`: empty the current snippet.
    Clear,
    /// `:doctor`: the machine's health and the engine's self-checks.
    Doctor,
    /// `:history`: the lines entered so far.
    History,
    /// `:quit`.
    Quit,
}

/// Export formats of `:export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// A Markdown table.
    Markdown,
    /// CSV.
    Csv,
    /// The result's JSON form (every number).
    Json,
}

/// A setting and its new value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Setting {
    /// Measuring time budget, seconds.
    Time(f64),
    /// Equivalence band as a fraction (0.02 = ±2 %).
    Band(f64),
    /// CPU for the worker (`None`: chosen automatically).
    Cpu(Option<usize>),
    /// Index bounds checks in script code.
    Checks(bool),
    /// Time limit of a snippet run, seconds (measuring jobs get it on top of their budget).
    Limit(f64),
    /// Each job's memory budget in bytes (`None`: the default).
    Mem(Option<u64>),
}

/// A line that is not a valid command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandError {
    /// What is wrong, with the usage or a suggestion.
    pub message: String,
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CommandError {}

/// Help for one command.
#[derive(Debug, Clone, Copy)]
pub struct CommandHelp {
    /// The name without `:`.
    pub name: &'static str,
    /// Other names.
    pub aliases: &'static [&'static str],
    /// The usage line.
    pub usage: &'static str,
    /// One line.
    pub summary: &'static str,
    /// More, for `:help CMD`.
    pub details: &'static str,
}

/// Every command, in the order `:help` lists them.
pub const COMMANDS: &[CommandHelp] = &[
    CommandHelp {
        name: "help",
        aliases: &["h", "?"],
        usage: ":help [cmd]",
        summary: "list the commands, or explain one",
        details: "Without an argument, one line per command. With one, its usage and what it does.",
    },
    CommandHelp {
        name: "backend",
        aliases: &[],
        usage: ":backend [jit|jit-opt|interp|object]",
        summary: "show or choose how the snippet becomes code",
        details: "jit: Cranelift without optimization; jit-opt: Cranelift optimized for speed; interp: the reference interpreter; object: Cranelift object file linked into a shared library and loaded (as `hotlab bench --backend object`). .clif snippets need jit or jit-opt.",
    },
    CommandHelp {
        name: "twin",
        aliases: &[],
        usage: ":twin [NAME]",
        summary: "show or choose the native twin",
        details: "The Rust twin that :check compares the snippet's run(n) with (`hotlab bench --list` and :cases show them). :load CASE sets it to the case's twin.",
    },
    CommandHelp {
        name: "run",
        aliases: &["r"],
        usage: ":run [fn]",
        summary: "call a function (default main) in the worker and print its value",
        details: "The call runs in the worker process with the session's time limit (:set limit); an endless loop is stopped, a crash is reported, and the session goes on.",
    },
    CommandHelp {
        name: "compare",
        aliases: &["vs"],
        usage: ":compare SNIPPET|FILE|BACKEND",
        summary: "measure run(n) of the snippet against another, interleaved",
        details: "Both sides must define `fn run(n: i64) -> i64` running n iterations. The other side is a snippet of this session (:snippet), a file, or a backend name (the same snippet on that backend). Prints both rows, the ratio with its CI and the verdict (equal within the band, slower, faster or unresolved).",
    },
    CommandHelp {
        name: "check",
        aliases: &[],
        usage: ":check [--vs SNIPPET|FILE]",
        summary: "is the snippet 1.0x of its twin (or of another snippet)?",
        details: "Runs run(n) once with n = 10000 on both sides and compares the results, then measures both interleaved (:set time, :set band) and answers in one line: the ratio snippet / other with its CI, the verdict (equal within the band, slower, faster, unresolved) and the result check. Without --vs the other side is the twin (:twin, or the one the snippet's case header names). .clif snippets need `function %run(i64, i64) -> i64 system_v`.",
    },
    CommandHelp {
        name: "ladder",
        aliases: &[],
        usage: ":ladder [NAME|FILE]",
        summary: "measure a ladder: what each layer of a host-to-script call adds",
        details: "Shipped ladders: host_call (the default), fused, direct, runtime; or a ladder .toml file (docs/ladder.md). A name given is kept for the next :ladder. The method called is the snippet's `fn call() -> i64`, or the default empty method when the snippet has none; a `call` that does more than return a literal (work its native twin does not do) is measured as its own `method body` row, and each build's first rung is measured from it. Both builds (jit and aot) are measured interleaved within :set time; progress is shown live, Ctrl-C cancels.",
    },
    CommandHelp {
        name: "layers",
        aliases: &[],
        usage: ":layers [LAYER...|+LAYER|-LAYER|reset]",
        summary: "show, reorder or toggle the next ladder's layers",
        details: "Without arguments: the layers the next :ladder measures, in order. `:layers entry slot depth` measures exactly these, in this order (native comes first by itself); `-catch` drops a layer, `+catch` adds one at the end; `reset` goes back to the ladder file's order. Layers: body (the bare method, only right after native; added by itself when the method does work), slot, entry, detached, catch, depth, fused, direct (fused and direct stand alone); the runtime's own rungs rt-slot, rt-fused, rt-object, rt-handle and bench (each a whole call).",
    },
    CommandHelp {
        name: "bench",
        aliases: &[],
        usage: ":bench [FILTER]",
        summary: "every case (or those matching FILTER) on every backend beside its twin",
        details: "The matrix of `hotlab bench`: per backend, each case's ns/op and ratio to its twin (`!` marks a result that differs), and the load times. Each timed run gets :set time (at most 0.25 s), one run per cell.",
    },
    CommandHelp {
        name: "asm",
        aliases: &[],
        usage: ":asm [fn]",
        summary: "machine code of the snippet's functions",
        details: "Compiled with the current backend (jit or jit-opt) in the worker, listed in Intel syntax with sizes and instruction counts.",
    },
    CommandHelp {
        name: "ir",
        aliases: &[],
        usage: ":ir [fn]",
        summary: "Cranelift IR of the snippet's functions",
        details: "The CLIF text each function was compiled from.",
    },
    CommandHelp {
        name: "reload",
        aliases: &[],
        usage: ":reload",
        summary: "reload the snippet's classes in the worker's live module",
        details: "The first :reload starts a live module from the snippet in the worker and runs its main. Each later :reload compiles the snippet again and reloads it into that module: live objects migrate (fields with the same name and type keep their values; fields holding closures are reset, as their code is the old version's), slots point at the new code, a class the snippet no longer has is unloaded, module variables carry over (not closures), then `fn after_reload()` runs if the snippet has one. Typing a class again replaces it in the snippet and reloads it when a module is live. A worker restart (crash, cancel, timeout) ends the module.",
    },
    CommandHelp {
        name: "cases",
        aliases: &[],
        usage: ":cases",
        summary: "list the cases with their twins",
        details: "The cases in ./cases (else the ones hotlab was built with), loadable with :load CASE (or :load CASE.clif for the .clif mode).",
    },
    CommandHelp {
        name: "load",
        aliases: &["l"],
        usage: ":load CASE|FILE",
        summary: "load a snippet from a file (.hot or .clif) or a case",
        details: "The snippet is named after the file and becomes current; it replaces a snippet of the same name. It is compiled once to show diagnostics. A case name (see :cases) loads its .hot script (CASE.clif: its .clif script) and makes its twin the session's twin.",
    },
    CommandHelp {
        name: "save",
        aliases: &[],
        usage: ":save FILE",
        summary: "write the current snippet to a file",
        details: "Written whole (temporary file, then rename).",
    },
    CommandHelp {
        name: "export",
        aliases: &[],
        usage: ":export md|csv|json FILE",
        summary: "write the last result as Markdown, CSV or JSON",
        details: "JSON keeps every number of the result; Markdown and CSV are the table. FILE `-` is stdout. Written whole.",
    },
    CommandHelp {
        name: "set",
        aliases: &[],
        usage: ":set [time|band|cpu|checks|limit|mem VALUE]",
        summary: "show or change the settings",
        details: "time SECONDS: measuring budget (default 1). band PCT: equivalence band, `2%` or 0.02 (default 2%). cpu N|auto: the worker's CPU. checks on|off: index bounds checks. limit SECONDS: time limit of a run (default 5). mem SIZE|auto: each job's memory budget, e.g. 512M or 2G (auto: half the RAM).",
    },
    CommandHelp {
        name: "snippet",
        aliases: &["s"],
        usage: ":snippet [NAME]",
        summary: "list the snippets, or switch to NAME (made empty if new)",
        details: "A session holds several snippets; code lines go to the current one.",
    },
    CommandHelp {
        name: "show",
        aliases: &[],
        usage: ":show",
        summary: "print the current snippet",
        details: "With its name and backend.",
    },
    CommandHelp {
        name: "clear",
        aliases: &[],
        usage: ":clear",
        summary: "empty the current snippet",
        details: "Code lines then start a new program.",
    },
    CommandHelp {
        name: "doctor",
        aliases: &[],
        usage: ":doctor",
        summary: "the machine's health and the engine's self-checks",
        details: "Runs in the worker, pinned to its CPU; takes a few seconds (:set time).",
    },
    CommandHelp {
        name: "history",
        aliases: &[],
        usage: ":history",
        summary: "the lines entered in this session",
        details: "Kept in the session file across --resume.",
    },
    CommandHelp {
        name: "quit",
        aliases: &["q", "exit"],
        usage: ":quit",
        summary: "leave (the session is saved)",
        details: "The session file keeps snippets, settings and results for --resume.",
    },
];

/// The help entry of a command name or alias (with or without `:`).
pub fn help_for(name: &str) -> Option<&'static CommandHelp> {
    let name = name.trim_start_matches(':');
    COMMANDS
        .iter()
        .find(|c| c.name == name || c.aliases.contains(&name))
}

/// The narrowest summary column `:help` wraps its summaries into beside the usages; a
/// narrower terminal gets each summary under its usage.
const SUMMARY_MIN: usize = 30;

/// `:help` without an argument, fitted to `width` columns when the front end has a width:
/// summaries wrap within their column, or under 80-odd columns go under their usage.
pub fn help_text(width: Option<usize>) -> String {
    use crate::session::fit::wrap_indented;
    let usage_w = COMMANDS.iter().map(|c| c.usage.len()).max().unwrap_or(0);
    let beside = width.is_none_or(|w| w >= usage_w + 4 + SUMMARY_MIN);
    let mut out = wrap_indented(
        "Lines not starting with `:` are snippet code. Commands:",
        width,
        2,
    );
    out.push('\n');
    for c in COMMANDS {
        let text = if beside {
            wrap_indented(
                &format!("  {:usage_w$}  {}", c.usage, c.summary),
                width,
                usage_w + 4,
            )
        } else {
            format!(
                "  {}\n{}",
                c.usage,
                wrap_indented(&format!("      {}", c.summary), width, 6)
            )
        };
        out.push_str(&text);
        out.push('\n');
    }
    out
}

/// `:help CMD`, its paragraphs wrapped to `width` columns when the front end has a width.
pub fn help_detail(c: &CommandHelp, width: Option<usize>) -> String {
    use crate::session::fit::wrap_indented;
    let mut out = format!("{}\n", c.usage);
    for paragraph in [c.summary, c.details] {
        out.push_str(&wrap_indented(&format!("  {paragraph}"), width, 2));
        out.push('\n');
    }
    if !c.aliases.is_empty() {
        let names: Vec<String> = c.aliases.iter().map(|a| format!(":{a}")).collect();
        out.push_str(&wrap_indented(
            &format!("  also: {}", names.join(", ")),
            width,
            8,
        ));
        out.push('\n');
    }
    out
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

fn err(message: impl Into<String>) -> CommandError {
    CommandError {
        message: message.into(),
    }
}

fn usage_err(c: &CommandHelp, what: &str) -> CommandError {
    err(format!("{what}\nusage: {}", c.usage))
}

fn seconds(c: &CommandHelp, v: &str) -> Result<f64, CommandError> {
    let t = v.trim_end_matches('s');
    match t.parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() && x <= 3600.0 => Ok(x),
        _ => Err(usage_err(
            c,
            &format!("`{v}` is not a time in seconds between 0 and 3600 (e.g. 0.5)"),
        )),
    }
}

fn setting(c: &CommandHelp, name: &str, value: Option<&str>) -> Result<Setting, CommandError> {
    let Some(v) = value else {
        return Err(usage_err(c, &format!("`:set {name}` needs a value")));
    };
    match name {
        "time" => Ok(Setting::Time(seconds(c, v)?)),
        "limit" => Ok(Setting::Limit(seconds(c, v)?)),
        "band" => {
            let (num, scale) = match v.strip_suffix('%') {
                Some(p) => (p, 0.01),
                None => (v, 1.0),
            };
            match num.parse::<f64>() {
                Ok(x) if x * scale > 0.0 && x * scale < 1.0 => Ok(Setting::Band(x * scale)),
                _ => Err(usage_err(
                    c,
                    &format!(
                        "`{v}` is not a band: give a percentage like 2% or a fraction like 0.02 (above 0, below 100%)"
                    ),
                )),
            }
        }
        "cpu" => match v {
            "auto" => Ok(Setting::Cpu(None)),
            _ => {
                let n = v.parse::<usize>().map_err(|_| {
                    usage_err(
                        c,
                        &format!("`{v}` is not a CPU: give a number (e.g. 1) or auto"),
                    )
                })?;
                let online = crate::measure::env::pin::online_cpus();
                if !online.is_empty() && !online.contains(&n) {
                    let list: Vec<String> = online.iter().map(|c| c.to_string()).collect();
                    return Err(usage_err(
                        c,
                        &format!(
                            "CPU {n} is not online here (online: {}); give one of them or auto",
                            list.join(", ")
                        ),
                    ));
                }
                Ok(Setting::Cpu(Some(n)))
            }
        },
        "mem" => match v {
            "auto" => Ok(Setting::Mem(None)),
            _ => crate::runtime::memory::parse_size(v)
                .map(|b| Setting::Mem(Some(b)))
                .map_err(|why| usage_err(c, &why)),
        },
        "checks" => match v {
            "on" | "true" => Ok(Setting::Checks(true)),
            "off" | "false" => Ok(Setting::Checks(false)),
            _ => Err(usage_err(c, &format!("`{v}` is not on or off"))),
        },
        other => Err(usage_err(
            c,
            &format!("no setting named `{other}` (settings: time, band, cpu, checks, limit, mem)"),
        )),
    }
}

/// Parse one input line.
pub fn parse(line: &str) -> Result<Command, CommandError> {
    let trimmed = line.trim();
    let Some(rest) = trimmed.strip_prefix(':') else {
        return Ok(Command::Code(if trimmed.is_empty() {
            String::new()
        } else {
            line.trim_end().to_string()
        }));
    };
    let mut words = rest.split_whitespace();
    let Some(name) = words.next() else {
        return Err(err("a lone `:` is not a command; :help lists them"));
    };
    let args: Vec<&str> = words.collect();
    let Some(c) = help_for(name) else {
        let best = COMMANDS
            .iter()
            .map(|c| (edit_distance(name, c.name), c.name))
            .min()
            .filter(|(d, n)| *d <= 2 || n.starts_with(name));
        let hint = match best {
            Some((_, n)) => format!(" (did you mean :{n}?)"),
            None => String::new(),
        };
        return Err(err(format!(
            "unknown command `:{name}`{hint}; :help lists the commands"
        )));
    };
    let at_most = |n: usize| -> Result<(), CommandError> {
        if args.len() > n {
            Err(usage_err(
                c,
                &format!(
                    "`:{}` takes at most {n} argument(s), got {}",
                    c.name,
                    args.len()
                ),
            ))
        } else {
            Ok(())
        }
    };
    let exactly = |n: usize| -> Result<(), CommandError> {
        if args.len() != n {
            Err(usage_err(
                c,
                &format!("`:{}` takes {n} argument(s), got {}", c.name, args.len()),
            ))
        } else {
            Ok(())
        }
    };
    let opt = |i: usize| args.get(i).map(|s| s.to_string());
    Ok(match c.name {
        "help" => {
            at_most(1)?;
            if let Some(a) = args.first()
                && help_for(a).is_none()
            {
                return Err(err(format!("no command named `{a}`; :help lists them")));
            }
            Command::Help(opt(0))
        }
        "backend" => {
            at_most(1)?;
            match args.first() {
                None => Command::Backend(None),
                Some(b) => Command::Backend(Some(Backend::from_name(b).ok_or_else(|| {
                    usage_err(
                        c,
                        &format!("no backend named `{b}` (backends: jit, jit-opt, interp, object)"),
                    )
                })?)),
            }
        }
        "twin" => {
            at_most(1)?;
            Command::Twin(opt(0))
        }
        "run" => {
            at_most(1)?;
            Command::Run(opt(0))
        }
        "compare" => {
            exactly(1)?;
            Command::Compare(args[0].to_string())
        }
        "check" => match args.as_slice() {
            [] => Command::Check(None),
            ["--vs", other] => Command::Check(Some(other.to_string())),
            _ => return Err(usage_err(c, "`:check` takes nothing or `--vs OTHER`")),
        },
        "ladder" => {
            at_most(1)?;
            Command::Ladder(opt(0))
        }
        "layers" => Command::Layers(args.iter().map(|s| s.to_string()).collect()),
        "bench" => {
            at_most(1)?;
            Command::Bench(opt(0))
        }
        "asm" => {
            at_most(1)?;
            Command::Asm(opt(0))
        }
        "ir" => {
            at_most(1)?;
            Command::Ir(opt(0))
        }
        "reload" => {
            exactly(0)?;
            Command::Reload
        }
        "cases" => {
            exactly(0)?;
            Command::Cases
        }
        "load" => {
            exactly(1)?;
            Command::Load(args[0].to_string())
        }
        "save" => {
            exactly(1)?;
            Command::Save(PathBuf::from(args[0]))
        }
        "export" => {
            exactly(2)?;
            let format = match args[0] {
                "md" | "markdown" => ExportFormat::Markdown,
                "csv" => ExportFormat::Csv,
                "json" => ExportFormat::Json,
                f => {
                    return Err(usage_err(
                        c,
                        &format!("no export format `{f}` (md, csv, json)"),
                    ));
                }
            };
            Command::Export(format, PathBuf::from(args[1]))
        }
        "set" => match args.as_slice() {
            [] => Command::Set(None),
            [name] => Command::Set(Some(setting(c, name, None)?)),
            [name, value] => Command::Set(Some(setting(c, name, Some(value))?)),
            _ => return Err(usage_err(c, "`:set` takes a name and one value")),
        },
        "snippet" => {
            at_most(1)?;
            Command::Snippet(opt(0))
        }
        "show" => {
            exactly(0)?;
            Command::Show
        }
        "clear" => {
            exactly(0)?;
            Command::Clear
        }
        "doctor" => {
            exactly(0)?;
            Command::Doctor
        }
        "history" => {
            exactly(0)?;
            Command::History
        }
        "quit" => {
            exactly(0)?;
            Command::Quit
        }
        other => return Err(err(format!("`:{other}` has no parser (a bug in hotlab)"))),
    })
}
