//! What the session and the background thread report, laid over the [`App`].

use super::app::{App, Effect};
use super::model::{CodeView, TableModel};
use super::threads::{Background, FromSession};
use crate::session::{JobRecord, JobReport, SessionState};

impl App {
    /// A report from the session thread.
    pub fn on_session(&mut self, msg: FromSession) -> Vec<Effect> {
        match msg {
            FromSession::Progress(p) => {
                let title = self.busy.clone().unwrap_or_default();
                let was_live =
                    self.table.state == super::model::TableState::Live && self.table.title == title;
                self.table.apply_live(&p, &title);
                self.label_steps();
                if !was_live {
                    // A new job's rows: the selection stays on a row of it.
                    self.selected = self.selected.min(self.table.rows.len().saturating_sub(1));
                }
                self.request_missing_code()
            }
            FromSession::Done {
                line,
                texts,
                error,
                quit,
                state,
                record,
            } => {
                let idle = self.line_done();
                self.table.progress = None;
                // While more lines wait, their snippet text is the editor's, not this state's.
                let ladder_changed = idle && self.apply_state(&state);
                let mut text = texts.join("\n");
                if let Some(r) = &record {
                    self.apply_record(r);
                    match &r.output {
                        JobReport::Measured(m) => {
                            // The table shows the numbers; the message keeps the verdicts.
                            text = m
                                .comparisons
                                .iter()
                                .map(|c| format!("{}: {}", c.b, c.explanation))
                                .collect::<Vec<_>>()
                                .join("\n");
                        }
                        JobReport::Ladder(l) => {
                            // The table pane shows the ladder: one line, not the whole text
                            // table (it made a popup wider than the screen that ate a key).
                            text = format!(
                                "ladder {} around {}: {}",
                                l.ladder,
                                l.method,
                                match (r.stopped.is_some(), l.all_ok) {
                                    (true, _) => "stopped (Esc): the table keeps what it had",
                                    (false, true) => "done",
                                    (false, false) =>
                                        "done, but a row's checksum differs from native (!)",
                                }
                            );
                        }
                        JobReport::Checked(a) => {
                            // One line, shown whole (the message area wraps it).
                            text = format!(
                                "{} on {} vs {}: {}",
                                a.file, a.backend, a.against, a.explanation
                            );
                        }
                        _ => {}
                    }
                } else if self.table.state == super::model::TableState::Live {
                    // Cancelled before a result: back to the plan.
                    self.replan();
                }
                if idle && self.table.state == super::model::TableState::Live {
                    // A result the table could not show: the live rows are what it had, and
                    // they are no longer measuring.
                    self.table.state = super::model::TableState::Done;
                    self.table.stopped = record.as_ref().is_some_and(|r| r.stopped.is_some());
                }
                match error {
                    Some(e) => self.say(e, true),
                    None if !text.trim().is_empty() => self.say(text, false),
                    None => self.say(format!("{line}: done"), false),
                }
                self.popup = self
                    .message
                    .as_ref()
                    .is_some_and(|m| m.text.trim_end().lines().count() > 1);
                self.popup_scroll = 0;
                let mut effects = self.request_missing_code();
                if ladder_changed {
                    effects.push(Effect::LadderCode);
                }
                if quit {
                    effects.push(Effect::Quit);
                }
                effects
            }
        }
    }

    /// Take the session's backend, settings, snippets and ladder; true if the ladder changed.
    pub fn apply_state(&mut self, state: &SessionState) -> bool {
        self.backend = state.backend;
        self.status.time_s = state.settings.time_s;
        if state.settings.cpu.is_some() {
            self.status.cpu = state.settings.cpu;
        }
        self.snippets = state.snippets.iter().map(|s| s.name.clone()).collect();
        let current = state.snippet();
        if current.name != self.snippet_name || current.text != self.synced_text {
            // A command switched or loaded the snippet.
            let (name, text) = (current.name.clone(), current.text.clone());
            self.set_text(&name, &text);
        }
        match state.ladder.as_deref() {
            Some(name) if name != self.ladder.name => match crate::ladder::resolve(name) {
                Ok(l) => {
                    self.set_ladder(l);
                    true
                }
                Err(_) => false,
            },
            _ => false,
        }
    }

    /// A finished job's result.
    pub fn apply_record(&mut self, r: &JobRecord) {
        match &r.output {
            JobReport::Measured(m) => {
                let mut t = TableModel::from_measured(m, &r.command);
                if t.rows.len() == 1 {
                    t.rows[0].verdict = None;
                }
                self.set_table(t);
                if let Some(cpu) = m.cpu {
                    self.status.cpu = Some(cpu);
                }
            }
            JobReport::Asm { listings } if !self.is_ladder_table() => {
                self.code = CodeView::from_listings(listings);
            }
            JobReport::Ladder(l) => {
                let mut note = l
                    .note
                    .clone()
                    .unwrap_or_else(|| "measured through the session".to_string());
                if r.stopped.is_some() {
                    note = format!("stopped (Esc): what it had; {note}");
                }
                if let Some(mut t) = TableModel::from_report_json(&l.report, &note) {
                    t.apply_distributions(&r.rows);
                    keep_distributions(&self.table, &mut t);
                    t.stopped = r.stopped.is_some();
                    self.set_table(t);
                }
            }
            JobReport::Checked(a) => {
                let mut t = TableModel::from_check(a, &r.command);
                t.apply_distributions(&r.rows);
                if let Some(s) = a.stopped {
                    t.note = format!("{} (Esc); {}", s.note(), t.note);
                }
                t.stopped = r.stopped.is_some() || a.stopped.is_some();
                self.set_table(t);
            }
            JobReport::Bench(b) => {
                // The bench's own rows, from its matrix (a live bench shows no rows: its
                // snapshots name the cell that runs, not figures).
                if let Some(mut t) = TableModel::from_bench_json(&b.json, &r.command) {
                    if r.stopped.is_some() {
                        t.note = format!("stopped (Esc): the cells so far; {}", t.note);
                    }
                    t.stopped = r.stopped.is_some();
                    self.set_table(t);
                }
            }
            _ => {}
        }
    }

    /// Ask for the machine code of the table's rows that have none yet (marked as being
    /// built until the answer comes). Also at start: a resumed session's last result has rows
    /// whose code was never asked for.
    pub fn request_missing_code(&mut self) -> Vec<Effect> {
        self.disassemble_twins();
        let missing = self.missing_functions();
        if missing.is_empty() {
            return Vec::new();
        }
        for (s, b) in &missing {
            self.functions.push((
                format!("{s}@{b}"),
                Err(format!("building the machine code of {s} on {b}…")),
            ));
        }
        vec![Effect::FunctionCode(missing)]
    }

    fn set_table(&mut self, t: TableModel) {
        self.table = t;
        self.label_steps();
        self.selected = self.selected.min(self.table.rows.len().saturating_sub(1));
    }

    fn is_ladder_table(&self) -> bool {
        self.table.rows.iter().any(|r| r.step.is_some())
    }

    /// Rows of a ladder measured through the session are named `jit slot read`: give them
    /// their step (for the code pane) and build.
    fn label_steps(&mut self) {
        for row in &mut self.table.rows {
            if row.step.is_some() {
                continue;
            }
            // A method that does work gets a body row (`crate::ladder::Ladder::with_body`).
            let body = crate::ladder::Step::body();
            if let Some(step) = self.ladder.steps.iter().chain([&body]).find(|s| {
                row.label == s.title
                    || row
                        .label
                        .split_once(' ')
                        .is_some_and(|(b, rest)| rest == s.title && (b == "jit" || b == "aot"))
            }) {
                row.step = Some(step.title.clone());
                row.layer = Some(step.layer.to_string());
                row.build = row
                    .label
                    .split_once(' ')
                    .map(|(b, _)| b.to_string())
                    .filter(|b| b == "jit" || b == "aot");
            }
        }
    }

    /// A report from the background thread.
    pub fn on_background(&mut self, msg: Background) {
        match msg {
            Background::Code(Ok(code)) => self.code = code,
            Background::Code(Err(e)) => {
                self.code.clear();
                self.say(format!("no ladder code: {e}"), true);
            }
            Background::Functions(built) => {
                for (key, code) in built {
                    match self.functions.iter_mut().find(|(k, _)| *k == key) {
                        Some(slot) => slot.1 = code,
                        None => self.functions.push((key, code)),
                    }
                }
            }
            Background::Machine {
                timer,
                health,
                no_pmu,
            } => {
                self.status.timer = timer;
                self.status.health = health;
                self.status.no_pmu = no_pmu;
            }
        }
    }
}

/// A ladder's report carries every row's numbers but not its distribution: the samples,
/// percentiles, histogram and counters the live snapshots showed are kept for the rows of the
/// same label, so the histogram pane does not empty when the job ends.
fn keep_distributions(live: &TableModel, done: &mut TableModel) {
    for row in &mut done.rows {
        let Some(seen) = live.rows.iter().find(|r| r.label == row.label) else {
            continue;
        };
        if row.buckets.is_empty() && row.percentiles.is_empty() {
            row.buckets = seen.buckets.clone();
            row.percentiles = seen.percentiles.clone();
            if row.samples.0 == 0 {
                row.samples = seen.samples;
            }
        }
        if row.counters.is_none() {
            row.counters = seen.counters.clone();
        }
    }
}
