//! The session's lab commands, built on the ladder engine and the cases: `:twin`, `:check`,
//! `:ladder`, `:layers`, `:bench`, `:reload`, `:cases` and `:load CASE`. Jobs run in the
//! worker like every other; the cases directory and the ladder files are read here (no snippet
//! code runs in the front end).

use std::path::Path;
use std::time::Duration;

use super::exec::{file_name, source};
use super::render::class_lines;
use super::{JobReport, LineFlow, ReloadResult, Session, SessionError, Sink, Snippet};
use crate::cases::spec::parse_header;
use crate::cases::{Mode, twin_named, twins};
use crate::export::{Table, render_text};
use crate::ladder::{Ladder, Layer};
use crate::worker::protocol::{Against, WorkerJob};

/// Loop count of `:check`'s result check (as `hotlab check`'s default).
const CHECK_ITERS: i64 = 10_000;

fn input(message: impl Into<String>) -> SessionError {
    SessionError::Input(message.into())
}

fn layer_names() -> String {
    Layer::ALL
        .iter()
        .filter(|l| **l != Layer::Native)
        .map(|l| l.name())
        .collect::<Vec<_>>()
        .join(", ")
}

fn parse_layer(name: &str) -> Result<Layer, SessionError> {
    Layer::from_name(name).ok_or_else(|| {
        input(format!(
            "no layer named `{name}` (layers: {})",
            layer_names()
        ))
    })
}

fn mode_of(name: &str) -> Mode {
    if name.ends_with(".clif") {
        Mode::Clif
    } else {
        Mode::Hot
    }
}

/// What a reload did, one line per fact.
pub fn reload_text(name: &str, r: &ReloadResult) -> String {
    let mut lines = Vec::new();
    if r.started {
        lines.push(format!(
            "module started from {name}: classes [{}]",
            r.defined.join(", ")
        ));
        if let Some(v) = &r.main {
            lines.push(format!("main = {v}"));
        }
    } else {
        lines.extend(class_lines(name, &r.classes, &r.defined));
        if r.classes.is_empty() && r.defined.is_empty() {
            lines.push(format!("reload {name}: no classes (functions reloaded)"));
        }
        if !r.globals_kept.is_empty() {
            lines.push(format!(
                "module variables kept: {}",
                r.globals_kept.join(", ")
            ));
        }
        if let Some(v) = &r.after_reload {
            lines.push(format!("after_reload = {v}"));
        }
    }
    lines.join("\n")
}

impl Session {
    pub(super) fn twin(
        &mut self,
        name: String,
        sink: &mut dyn Sink,
    ) -> Result<LineFlow, SessionError> {
        let Some(t) = twin_named(&name) else {
            let known: Vec<&str> = twins().iter().map(|t| t.name).collect();
            return Err(input(format!(
                "no twin named `{name}` (twins: {})",
                known.join(", ")
            )));
        };
        sink.text(&super::fit::wrap_prose(
            &format!("twin: {} — {}", t.name, t.doc),
            self.width,
        ));
        self.state.twin = Some(name);
        Ok(LineFlow::Continue)
    }

    /// A snippet of the session by name, else a file.
    fn snippet_or_file(&self, other: &str) -> Result<Snippet, SessionError> {
        if let Some(s) = self.state.snippets.iter().find(|s| s.name == other) {
            return Ok(s.clone());
        }
        let path = Path::new(other);
        let text = crate::lang::span::read_source(path).map_err(|e| {
            input(format!(
                "`{other}` is not a snippet of this session (:snippet lists them) or a readable \
                 file: {e}"
            ))
        })?;
        Ok(Snippet {
            name: file_name(path),
            text,
        })
    }

    fn nonempty_snippet(&self) -> Result<Snippet, SessionError> {
        let s = self.state.snippet().clone();
        if s.text.trim().is_empty() {
            return Err(input(format!(
                "{} is empty: type code, :load a file or a case first",
                s.name
            )));
        }
        Ok(s)
    }

    pub(super) fn check(
        &mut self,
        line: &str,
        other: Option<&str>,
        sink: &mut dyn Sink,
    ) -> Result<LineFlow, SessionError> {
        let s = self.nonempty_snippet()?;
        let mut names = vec![s.name.clone()];
        let against = match other {
            Some(o) => {
                let other = self.snippet_or_file(o)?;
                names.push(other.name.clone());
                Against::Snippet {
                    snippet: source(&other),
                }
            }
            None => {
                let header = parse_header(Path::new(&s.name), mode_of(&s.name), &s.text)
                    .ok()
                    .map(|h| h.twin.name.to_string());
                let name = self.state.twin.clone().or(header).ok_or_else(|| {
                    input(
                        "no twin to check against: choose one with :twin NAME (:cases shows \
                         them), :load a case, or compare with :check --vs SNIPPET|FILE",
                    )
                })?;
                names.push(format!("twin {name}"));
                Against::Twin { name }
            }
        };
        let settings = self.measure_settings();
        // Two compiles and two checked runs besides the measurement.
        let limit = Duration::from_secs_f64(settings.time_s) + self.limit() * 2;
        let job = WorkerJob::Check {
            snippet: source(&s),
            against,
            backend: self.state.backend,
            settings,
            iters: CHECK_ITERS,
            layouts: 1,
        };
        let out = self.job(job, limit, sink)?;
        if let JobReport::Checked(a) = &out {
            sink.text(&super::fit::wrap_prose(
                &crate::cases::check::line(a),
                self.width,
            ));
        }
        self.record(line, names, out);
        Ok(LineFlow::Continue)
    }

    /// The ladder the next `:ladder` measures: the session's ladder with its chosen layers.
    pub fn next_ladder(&self) -> Result<Ladder, SessionError> {
        let name = self.state.ladder.as_deref().unwrap_or("host_call");
        let base = crate::ladder::resolve(name).map_err(|e| input(e.to_string()))?;
        match &self.state.layers {
            None => Ok(base),
            Some(names) => {
                let layers = names
                    .iter()
                    .map(|n| parse_layer(n))
                    .collect::<Result<Vec<_>, _>>()?;
                crate::ladder::run::with_layers(&base, &layers).map_err(|e| input(e.to_string()))
            }
        }
    }

    pub(super) fn ladder(
        &mut self,
        line: &str,
        name: Option<String>,
        sink: &mut dyn Sink,
    ) -> Result<LineFlow, SessionError> {
        if let Some(name) = name {
            crate::ladder::resolve(&name).map_err(|e| input(e.to_string()))?;
            if self.state.ladder.as_deref() != Some(name.as_str()) {
                self.state.layers = None;
            }
            self.state.ladder = Some(name);
        }
        let ladder = self.next_ladder()?;
        let current = self.state.snippet().clone();
        let snippet = (!current.text.trim().is_empty()).then(|| source(&current));
        let settings = self.measure_settings();
        // Building the rows compiles every step; the header probes the machine.
        let limit = Duration::from_secs_f64(settings.time_s) + self.limit() * 2;
        let job = WorkerJob::Ladder {
            ladder,
            snippet,
            settings,
        };
        let out = self.job(job, limit, sink)?;
        if let JobReport::Ladder(l) = &out {
            let mut text = format!("ladder {} around {}\n", l.ladder, l.method);
            if self.cancel.load(std::sync::atomic::Ordering::Relaxed) {
                // The table below is what the rows had when the job was stopped.
                text.push_str("stopped (Ctrl-C): the rows so far, each on fewer rounds\n");
            }
            if let Some(note) = &l.note {
                text.push_str(&format!("note: {note}\n"));
            }
            for h in &l.header {
                text.push_str(h);
                text.push('\n');
            }
            let mut text = super::fit::wrap_prose(&text, self.width);
            text.push('\n');
            text.push_str(&render_text(&super::fit::fit_table(&l.table, self.width)));
            sink.text(text.trim_end());
        }
        self.record(line, vec![current.name], out);
        Ok(LineFlow::Continue)
    }

    pub(super) fn layers(
        &mut self,
        args: &[String],
        sink: &mut dyn Sink,
    ) -> Result<LineFlow, SessionError> {
        let current: Vec<String> = self
            .next_ladder()?
            .steps
            .iter()
            .skip(1)
            .map(|s| s.layer.name().to_string())
            .collect();
        let toggles = args
            .iter()
            .filter(|a| a.starts_with('+') || a.starts_with('-'))
            .count();
        let chosen = match args {
            [] => None,
            [r] if r == "reset" => {
                self.state.layers = None;
                None
            }
            _ if toggles == args.len() => {
                let mut list = current.clone();
                for a in args {
                    let (sign, name) = a.split_at(1);
                    let layer = parse_layer(name)?.name().to_string();
                    match (sign, list.iter().position(|l| *l == layer)) {
                        ("-", Some(i)) => {
                            list.remove(i);
                        }
                        ("-", None) => {
                            return Err(input(format!(
                                "`{layer}` is not in the next ladder ({})",
                                current.join(", ")
                            )));
                        }
                        (_, Some(_)) => {
                            return Err(input(format!("`{layer}` is in the ladder already")));
                        }
                        (_, None) => list.push(layer),
                    }
                }
                Some(list)
            }
            _ if toggles == 0 => Some(
                args.iter()
                    .map(|a| parse_layer(a).map(|l| l.name().to_string()))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            _ => {
                return Err(input(
                    "give either the layers in order (`:layers slot entry`) or changes \
                     (`:layers -catch +depth`), not both",
                ));
            }
        };
        if let Some(list) = chosen {
            let previous = self.state.layers.replace(list);
            // Checked now, so a bad order is refused before the next :ladder.
            if let Err(e) = self.next_ladder() {
                self.state.layers = previous;
                return Err(e);
            }
        }
        let ladder = self.next_ladder()?;
        let names: Vec<&str> = ladder.steps.iter().map(|s| s.layer.name()).collect();
        // The runtime's rungs are listed only beside a ladder that measures some of them, and
        // the steps of `new` only beside the `new` ladder (they mix with no layer of the call).
        let runtime = ladder.steps.iter().any(|s| s.layer.is_runtime());
        let new = ladder.steps.iter().any(|s| s.layer.is_new());
        // `body` is added by itself when the method does work its twin does not.
        let left: Vec<&str> = Layer::ALL
            .iter()
            .filter(|l| **l != Layer::Body)
            .filter(|l| {
                if new {
                    l.is_new()
                } else {
                    !l.is_new() && (runtime || !l.is_runtime())
                }
            })
            .map(|l| l.name())
            .filter(|n| !names.contains(n))
            .collect();
        let how = if self.state.layers.is_some() {
            "chosen with :layers; `:layers reset` goes back to the file"
        } else {
            "as in the ladder file"
        };
        let mut text = format!("ladder {}: {} ({how})", ladder.name, names.join(" > "));
        if !left.is_empty() {
            text.push_str(&format!("\nnot measured: {}", left.join(", ")));
        }
        sink.text(&super::fit::wrap_prose(&text, self.width));
        Ok(LineFlow::Continue)
    }

    pub(super) fn bench(
        &mut self,
        line: &str,
        filter: Option<String>,
        sink: &mut dyn Sink,
    ) -> Result<LineFlow, SessionError> {
        let time_s = self.state.settings.time_s.min(0.25);
        let job = WorkerJob::Bench {
            filter,
            time_s,
            reps: 1,
            cases: Some(self.cases_dir()),
        };
        // The worker reads the directory itself: the rows' scripts are looked up afresh.
        self.cases.forget();
        // Every cell loads its scripts and runs a calibrated job: allow minutes.
        let limit = Duration::from_secs(300) + self.limit();
        let out = self.job(job, limit, sink)?;
        if let JobReport::Bench(b) = &out {
            // The worker renders the matrix without a width: its notes (and, on a narrow
            // terminal, a table's rows) wrap here.
            sink.text(&super::fit::wrap_prose(b.text.trim_end(), self.width));
        }
        self.record(line, Vec::new(), out);
        Ok(LineFlow::Continue)
    }

    /// Whether the worker holds a live module of the current snippet.
    pub(super) fn module_is_live(&self) -> bool {
        let name = &self.state.snippet().name;
        self.live
            .as_ref()
            .is_some_and(|(n, pid, _)| n == name && Some(*pid) == self.worker_pid())
    }

    /// Whether the live module runs exactly the current snippet's text (so `:run` runs there).
    pub(super) fn module_is_current(&self) -> bool {
        self.module_is_live()
            && self
                .live
                .as_ref()
                .is_some_and(|(_, _, text)| *text == self.state.snippet().text)
    }

    pub(super) fn reload(
        &mut self,
        line: &str,
        sink: &mut dyn Sink,
    ) -> Result<LineFlow, SessionError> {
        let s = self.nonempty_snippet()?;
        if !self.module_is_live() {
            self.live = None;
        }
        let job = WorkerJob::Reload {
            snippet: source(&s),
            checks: self.state.settings.checks,
        };
        let out = self.job(job, self.limit(), sink);
        let out = match out {
            Ok(o) => o,
            Err(e) => {
                if !self.module_is_live() {
                    self.live = None;
                }
                return Err(e);
            }
        };
        if let JobReport::Reloaded(r) = &out {
            sink.text(&reload_text(&s.name, r));
        }
        if let Some(pid) = self.worker_pid() {
            self.live = Some((s.name.clone(), pid, s.text.clone()));
        }
        self.record(line, vec![s.name], out);
        Ok(LineFlow::Continue)
    }

    pub(super) fn list_cases(&mut self, sink: &mut dyn Sink) -> Result<LineFlow, SessionError> {
        let dir = self.cases_dir();
        let cases = self.cases(true)?;
        let mut t = Table::new(
            format!("cases in {}", dir.display()),
            &["case", "title", "twin", "scripts"],
        );
        for c in cases.iter() {
            let scripts: Vec<&str> = c.scripts.iter().map(|s| s.mode.label()).collect();
            t.push(vec![
                c.name.clone(),
                c.header.title.clone(),
                c.header.twin.name.to_string(),
                if scripts.is_empty() {
                    "native only".into()
                } else {
                    scripts.join(" ")
                },
            ]);
        }
        t.notes
            .push(":load CASE loads its .hot script and twin (CASE.clif: the .clif one)".into());
        // Under the terminal's width the titles wrap onto rows of their own; names stay whole.
        let t = super::fit::wrap_column(&t, "title", self.width, 12);
        sink.text(render_text(&t).trim_end());
        Ok(LineFlow::Continue)
    }

    pub(super) fn load_case(
        &mut self,
        what: &str,
        sink: &mut dyn Sink,
    ) -> Result<LineFlow, SessionError> {
        let (stem, mode) = match what.rsplit_once('.') {
            Some((stem, "clif")) => (stem, Some(Mode::Clif)),
            Some((stem, "hot")) => (stem, Some(Mode::Hot)),
            _ => (what, None),
        };
        let dir = self.cases_dir();
        let cases = self.cases(true)?;
        let Some(case) = cases.iter().find(|c| c.name == stem) else {
            return Err(input(format!(
                "`{what}` is neither a file nor a case (:cases lists the cases in {})",
                dir.display()
            )));
        };
        let script = match mode {
            Some(m) => case.script(m),
            None => case.scripts.first(),
        }
        .ok_or_else(|| {
            input(format!(
                "case `{}` has no {} script",
                case.name,
                mode.map_or("", Mode::label)
            ))
        })?;
        let snippet = Snippet {
            name: file_name(&script.path),
            text: script.source.text.clone(),
        };
        self.state.twin = Some(case.header.twin.name.to_string());
        let about = format!(
            "case {}: {} (twin {}; one op: {})",
            case.name, case.header.title, case.header.twin.name, case.header.unit
        );
        sink.text(&super::fit::wrap_prose(&about, self.width));
        self.load_text(snippet, sink)
    }
}
