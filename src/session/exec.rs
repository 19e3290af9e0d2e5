//! Carrying out commands: the state changes here, and every job goes through the worker with
//! a time limit, the session's cancel flag, and the front end pinned off the worker's CPU.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::command::{self, Command, ExportFormat, Setting};
use super::render::{measured_table, measured_text, record_table};
use super::{Backend, FunctionSummary, JobReport, LineFlow, Session, SessionError, Sink, Snippet};
use crate::export::{render_csv, render_markdown, write_whole};
use crate::measure::env::pin;
use crate::worker::protocol::{Contestant, MeasureSettings, SnippetSource, WorkerJob};

pub(super) fn source(s: &Snippet) -> SnippetSource {
    SnippetSource {
        name: s.name.clone(),
        text: s.text.clone(),
    }
}

/// The names of the snippet's own functions (not the module initializer `<init>`).
fn function_names(functions: &[FunctionSummary]) -> Vec<&str> {
    functions
        .iter()
        .map(|f| f.name.as_str())
        .filter(|n| !n.starts_with('<'))
        .collect()
}

pub(super) fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

impl Session {
    pub(super) fn execute_as(
        &mut self,
        cmd: Command,
        line: &str,
        sink: &mut dyn Sink,
    ) -> Result<LineFlow, SessionError> {
        match cmd {
            Command::Code(text) => self.add_code(&text, sink),
            Command::Help(None) => {
                sink.text(&command::help_text(self.width));
                Ok(LineFlow::Continue)
            }
            Command::Help(Some(name)) => match command::help_for(&name) {
                Some(c) => {
                    sink.text(&command::help_detail(c, self.width));
                    Ok(LineFlow::Continue)
                }
                None => Err(SessionError::Input(format!("no command named `{name}`"))),
            },
            Command::Backend(None) => {
                let names: Vec<&str> = super::SESSION_BACKENDS.iter().map(|b| b.name()).collect();
                sink.text(&format!(
                    "backend: {} (backends: {})",
                    self.state.backend.name(),
                    names.join(", ")
                ));
                Ok(LineFlow::Continue)
            }
            Command::Backend(Some(b)) => {
                self.state.backend = b;
                sink.text(&format!("backend: {}", b.name()));
                Ok(LineFlow::Continue)
            }
            Command::Twin(None) => {
                let twin = self.state.twin.as_deref().unwrap_or("none");
                sink.text(&format!("twin: {twin}"));
                Ok(LineFlow::Continue)
            }
            Command::Twin(Some(name)) => self.twin(name, sink),
            Command::Run(function) => self.run(line, function, sink),
            Command::Compare(other) => self.compare(line, &other, sink),
            Command::Check(other) => self.check(line, other.as_deref(), sink),
            Command::Ladder(name) => self.ladder(line, name, sink),
            Command::Layers(args) => self.layers(&args, sink),
            Command::Bench(filter) => self.bench(line, filter, sink),
            Command::Reload => self.reload(line, sink),
            Command::Cases => self.list_cases(sink),
            Command::Asm(function) => self.asm(line, function, false, sink),
            Command::Ir(function) => self.asm(line, function, true, sink),
            Command::Load(what) => self.load(&what, sink),
            Command::Save(path) => {
                let s = self.state.snippet();
                write_whole(&path, s.text.as_bytes()).map_err(|e| {
                    SessionError::Input(format!("cannot write {}: {e}", path.display()))
                })?;
                sink.text(&format!("saved {} to {}", s.name, path.display()));
                Ok(LineFlow::Continue)
            }
            Command::Export(format, path) => self.export(format, &path, sink),
            Command::Set(None) => {
                sink.text(&super::fit::wrap_prose(&self.settings_text(), self.width));
                Ok(LineFlow::Continue)
            }
            Command::Set(Some(setting)) => {
                self.set(setting);
                sink.text(&super::fit::wrap_prose(&self.settings_text(), self.width));
                Ok(LineFlow::Continue)
            }
            Command::Snippet(name) => self.snippet(name, sink),
            Command::Show => {
                let s = self.state.snippet();
                let body = if s.text.is_empty() {
                    "(empty)"
                } else {
                    &s.text
                };
                sink.text(&format!(
                    "// {} ({})\n{body}",
                    s.name,
                    self.state.backend.name()
                ));
                Ok(LineFlow::Continue)
            }
            Command::Clear => {
                let i = self.state.current;
                self.state.snippets[i].text.clear();
                sink.text(&format!("{} is empty", self.state.snippets[i].name));
                Ok(LineFlow::Continue)
            }
            Command::Doctor => self.doctor(line, sink),
            Command::History => {
                let lines: Vec<String> = self
                    .state
                    .history
                    .iter()
                    .enumerate()
                    .map(|(i, l)| format!("{:4}  {}", i + 1, l.replace('\n', "\n      ")))
                    .collect();
                sink.text(&lines.join("\n"));
                Ok(LineFlow::Continue)
            }
            Command::Quit => Ok(LineFlow::Quit),
        }
    }

    /// Run a job in the worker, pinning this thread off the worker's CPU meanwhile.
    pub(super) fn job(
        &mut self,
        job: WorkerJob,
        limit: Duration,
        sink: &mut dyn Sink,
    ) -> Result<JobReport, SessionError> {
        self.cancel.store(false, Ordering::Relaxed);
        let cancel = std::sync::Arc::clone(&self.cancel);
        let worker = self.worker()?;
        let worker_cpu = worker.options().cpu;
        // The front end stays off the measuring CPU while the job runs (restored after).
        let _guard = worker_cpu.and_then(|w| {
            let other = pin::online_cpus().into_iter().find(|&c| c != w)?;
            pin::pin_current_thread(other).ok()
        });
        let mut last = None;
        let report = worker.run(job, limit, &cancel, &mut |p| {
            sink.progress(&p);
            last = Some(p);
        });
        // The script's `print` output, shown before the job's answer.
        let printed = worker.take_printed();
        self.last_live = last;
        if !printed.is_empty() {
            sink.text(printed.strip_suffix('\n').unwrap_or(&printed));
        }
        Ok(report?)
    }

    pub(super) fn limit(&self) -> Duration {
        Duration::from_secs_f64(self.state.settings.limit_s)
    }

    fn add_code(&mut self, text: &str, sink: &mut dyn Sink) -> Result<LineFlow, SessionError> {
        if text.trim().is_empty() {
            return Ok(LineFlow::Continue);
        }
        let i = self.state.current;
        let old = &self.state.snippets[i];
        let merged = if old.name.ends_with(".clif") {
            let mut joined = old.text.clone();
            if !joined.is_empty() && !joined.ends_with('\n') {
                joined.push('\n');
            }
            joined.push_str(text.trim_end());
            joined.push('\n');
            super::merge::Merged {
                text: joined,
                replaced: Vec::new(),
            }
        } else {
            super::merge::merge(&old.text, text)
        };
        let snippet = SnippetSource {
            name: old.name.clone(),
            text: merged.text.clone(),
        };
        let job = WorkerJob::Compile {
            snippet,
            backend: self.state.backend,
            checks: self.state.settings.checks,
        };
        // The code is kept only if the whole snippet still compiles.
        match self.job(job, self.limit(), sink)? {
            JobReport::Compiled { functions } => {
                self.state.snippets[i].text = merged.text;
                let names = function_names(&functions);
                let mut msg = format!("ok: {}", names.join(", "));
                if !merged.replaced.is_empty() {
                    let what: Vec<String> = merged
                        .replaced
                        .iter()
                        .map(|(k, n)| format!("{k} {n}"))
                        .collect();
                    msg.push_str(&format!(" (replaced {})", what.join(", ")));
                }
                sink.text(&msg);
                let class_replaced = merged.replaced.iter().any(|(k, _)| k == "class");
                if class_replaced && self.module_is_live() {
                    // A class typed again is a reload of the live module.
                    return self.reload("(class typed again)", sink);
                }
            }
            other => sink.text(&format!("unexpected answer from the worker: {other:?}")),
        }
        Ok(LineFlow::Continue)
    }

    fn run(
        &mut self,
        line: &str,
        function: Option<String>,
        sink: &mut dyn Sink,
    ) -> Result<LineFlow, SessionError> {
        let s = self.state.snippet().clone();
        if s.text.trim().is_empty() {
            return Err(SessionError::Input(format!(
                "{} is empty: type code or :load a file first",
                s.name
            )));
        }
        let function = function.unwrap_or_else(|| "main".into());
        // After a :reload, calls go to the live module while it runs the snippet as it is.
        let live = self.module_is_current();
        let job = if live {
            WorkerJob::RunLive {
                snippet: s.name.clone(),
                function,
            }
        } else {
            WorkerJob::Run {
                snippet: source(&s),
                backend: self.state.backend,
                checks: self.state.settings.checks,
                function,
            }
        };
        let out = self.job(job, self.limit(), sink)?;
        if let JobReport::Ran { value, micros } = &out {
            let on = if live {
                "jit, live module"
            } else {
                self.state.backend.name()
            };
            sink.text(&format!("{value}    ({micros:.1} µs on {on})"));
        }
        self.record(line, vec![s.name], out);
        Ok(LineFlow::Continue)
    }

    /// The other side of `:compare`: a backend, a snippet of the session, or a file.
    pub(super) fn contestant(&self, other: &str) -> Result<Contestant, SessionError> {
        let current = self.state.snippet();
        if let Some(b) = Backend::from_name(other) {
            return Ok(Contestant {
                label: format!("{} ({})", current.name, b.name()),
                snippet: source(current),
                backend: b,
                function: "run".into(),
            });
        }
        let snippet = match self.state.snippets.iter().find(|s| s.name == other) {
            Some(s) => s.clone(),
            None => {
                let path = Path::new(other);
                let text = crate::lang::span::read_source(path).map_err(|e| {
                    SessionError::Input(format!(
                        "`{other}` is not a backend, a snippet of this session (:snippet lists \
                         them) or a readable file: {e}"
                    ))
                })?;
                Snippet {
                    name: file_name(path),
                    text,
                }
            }
        };
        Ok(Contestant {
            label: format!("{} ({})", snippet.name, self.state.backend.name()),
            snippet: source(&snippet),
            backend: self.state.backend,
            function: "run".into(),
        })
    }

    pub(super) fn measure_settings(&self) -> MeasureSettings {
        let s = &self.state.settings;
        MeasureSettings {
            time_s: s.time_s,
            band: s.band,
            // The same choice the worker was started with (see `Session::worker`).
            cpu: s.cpu,
            checks: s.checks,
        }
    }

    fn compare(
        &mut self,
        line: &str,
        other: &str,
        sink: &mut dyn Sink,
    ) -> Result<LineFlow, SessionError> {
        let current = self.state.snippet().clone();
        let a = Contestant {
            label: format!("{} ({})", current.name, self.state.backend.name()),
            snippet: source(&current),
            backend: self.state.backend,
            function: "run".into(),
        };
        let mut b = self.contestant(other)?;
        if b.label == a.label {
            b.label.push_str(" [B]");
        }
        let names = vec![a.snippet.name.clone(), b.snippet.name.clone()];
        let settings = self.measure_settings();
        let limit = Duration::from_secs_f64(settings.time_s) + self.limit();
        let job = WorkerJob::Measure {
            contestants: vec![a, b],
            settings,
        };
        let out = self.job(job, limit, sink)?;
        if let JobReport::Measured(m) = &out {
            let table = super::fit::fit_table(&measured_table(m, line), self.width);
            sink.text(&measured_text(m, &table, self.width));
        }
        self.record(line, names, out);
        Ok(LineFlow::Continue)
    }

    fn asm(
        &mut self,
        line: &str,
        function: Option<String>,
        ir: bool,
        sink: &mut dyn Sink,
    ) -> Result<LineFlow, SessionError> {
        let s = self.state.snippet().clone();
        let backend = match self.state.backend {
            Backend::Interp => Backend::Jit,
            b => b,
        };
        let job = WorkerJob::Asm {
            snippet: source(&s),
            backend,
            function,
        };
        let out = self.job(job, self.limit(), sink)?;
        if let JobReport::Asm { listings } = &out {
            let mut text = String::new();
            if self.state.backend == Backend::Interp {
                text.push_str("; the interp backend makes no machine code: shown for jit\n");
            }
            for l in listings {
                if ir {
                    text.push_str(&format!("; {}\n{}\n\n", l.name, l.clif.trim_end()));
                } else {
                    text.push_str(&format!(
                        "; {} — {} bytes, {} instructions\n{}\n",
                        l.name, l.bytes, l.instructions, l.asm
                    ));
                }
            }
            sink.text(&super::fit::fit_listing(text.trim_end(), self.width));
        }
        self.record(line, vec![s.name], out);
        Ok(LineFlow::Continue)
    }

    fn load(&mut self, what: &str, sink: &mut dyn Sink) -> Result<LineFlow, SessionError> {
        let path = Path::new(what);
        let text = match crate::lang::span::read_source(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return self.load_case(what, sink);
            }
            Err(e) => return Err(SessionError::Input(format!("cannot read {what}: {e}"))),
        };
        let name = file_name(path);
        self.load_text(Snippet { name, text }, sink)
    }

    /// Make `snippet` current (replacing one of the same name) and compile it once.
    pub(super) fn load_text(
        &mut self,
        snippet: Snippet,
        sink: &mut dyn Sink,
    ) -> Result<LineFlow, SessionError> {
        let job = WorkerJob::Compile {
            snippet: source(&snippet),
            backend: self.state.backend,
            checks: self.state.settings.checks,
        };
        // Kept even when it does not compile, so it can be fixed: the diagnostic is shown.
        let compiled = self.job(job, self.limit(), sink);
        let name = snippet.name.clone();
        match self.state.snippets.iter().position(|s| s.name == name) {
            Some(i) => {
                self.state.snippets[i] = snippet;
                self.state.current = i;
            }
            None => {
                self.state.snippets.push(snippet);
                self.state.current = self.state.snippets.len() - 1;
            }
        }
        match compiled? {
            JobReport::Compiled { functions } => {
                let names = function_names(&functions);
                sink.text(&format!("loaded {name}: {}", names.join(", ")));
            }
            other => sink.text(&format!("unexpected answer from the worker: {other:?}")),
        }
        Ok(LineFlow::Continue)
    }

    fn export(
        &mut self,
        format: ExportFormat,
        path: &Path,
        sink: &mut dyn Sink,
    ) -> Result<LineFlow, SessionError> {
        let Some(record) = self.state.results.last() else {
            return Err(SessionError::Input(
                "no result to export yet: :run or :compare first".into(),
            ));
        };
        let bytes = match format {
            ExportFormat::Json => serde_json::to_string_pretty(record)
                .map(|s| s + "\n")
                .map_err(|e| SessionError::Input(format!("cannot encode the result: {e}")))?,
            // The case matrix has its own pages (several tables, the load section).
            ExportFormat::Markdown => match &record.output {
                JobReport::Bench(b) => b.markdown.clone(),
                _ => render_markdown(&record_table(record)),
            },
            ExportFormat::Csv => match &record.output {
                JobReport::Bench(b) => b.csv.clone(),
                _ => render_csv(&record_table(record)),
            },
        };
        write_whole(path, bytes.as_bytes())
            .map_err(|e| SessionError::Input(format!("cannot write {}: {e}", path.display())))?;
        if path != Path::new("-") {
            sink.text(&format!(
                "exported `{}` to {}",
                record.command,
                path.display()
            ));
        }
        Ok(LineFlow::Continue)
    }

    fn set(&mut self, setting: Setting) {
        let s = &mut self.state.settings;
        match setting {
            Setting::Time(t) => s.time_s = t,
            Setting::Band(b) => s.band = b,
            Setting::Checks(c) => s.checks = c,
            Setting::Limit(l) => s.limit_s = l,
            Setting::Mem(m) => {
                s.mem = m;
                // The worker takes its budget when it starts: the next job gets a new one.
                self.worker = None;
            }
            Setting::Cpu(c) => {
                s.cpu = c;
                // The worker is pinned when it starts: the next job gets a new one.
                self.worker = None;
            }
        }
    }

    fn settings_text(&self) -> String {
        let s = &self.state.settings;
        let cpu = s.cpu.map_or("auto".to_string(), |c| c.to_string());
        let mem = s
            .mem
            .map_or("auto".to_string(), crate::runtime::memory::show_bytes);
        format!(
            "time {} s, band ±{}%, cpu {cpu}, checks {}, limit {} s, mem {mem}",
            s.time_s,
            // `7%` is 0.07, whose hundredfold prints 7.000000000000001.
            (s.band * 100.0 * 1e6).round() / 1e6,
            if s.checks { "on" } else { "off" },
            s.limit_s
        )
    }

    fn snippet(
        &mut self,
        name: Option<String>,
        sink: &mut dyn Sink,
    ) -> Result<LineFlow, SessionError> {
        match name {
            None => {
                let lines: Vec<String> = self
                    .state
                    .snippets
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let mark = if i == self.state.current { '*' } else { ' ' };
                        format!("{mark} {} ({} lines)", s.name, s.text.lines().count())
                    })
                    .collect();
                sink.text(&lines.join("\n"));
            }
            Some(name) => {
                match self.state.snippets.iter().position(|s| s.name == name) {
                    Some(i) => self.state.current = i,
                    None => {
                        self.state.snippets.push(Snippet {
                            name: name.clone(),
                            text: String::new(),
                        });
                        self.state.current = self.state.snippets.len() - 1;
                    }
                }
                sink.text(&format!("snippet: {name}"));
            }
        }
        Ok(LineFlow::Continue)
    }

    fn doctor(&mut self, line: &str, sink: &mut dyn Sink) -> Result<LineFlow, SessionError> {
        let time_s = self.state.settings.time_s.min(1.0);
        let job = WorkerJob::Doctor(crate::measure::doctor::DoctorOptions { time_s, cpu: None });
        // The doctor runs a handful of timed self-checks.
        let limit = Duration::from_secs_f64(time_s * 20.0) + self.limit();
        let out = self.job(job, limit, sink)?;
        if let JobReport::Doctor { text, .. } = &out {
            // Its two-column lines go on under their second column.
            sink.text(&super::fit::wrap_prose(text.trim_end(), self.width));
        }
        self.record(line, Vec::new(), out);
        Ok(LineFlow::Continue)
    }
}
