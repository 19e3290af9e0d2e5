//! The saved sessions a user can go back to: the session file (generation 0), the kept
//! generations `session.prev.json` (1) … `session.prev.10.json` (10), and the copies a second
//! front end saved (`session.copy-PID.json`). `hotlab sessions` lists them with their times and
//! a one-line summary; `--resume N|NAME` picks one ([`find`]). What a resumed session brings
//! back is checked as if it were typed ([`validate`]).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{SessionError, SessionState, command, store};

/// One saved session.
#[derive(Debug, Clone)]
pub struct Generation {
    /// 0 for the session file, 1 … [`store::GENERATIONS`] for the kept ones, `None` for a copy.
    pub number: Option<usize>,
    /// The file.
    pub path: PathBuf,
    /// When it was last written.
    pub saved: Option<SystemTime>,
    /// A one-line summary of what it holds, or why it cannot be read.
    pub summary: Result<String, String>,
}

fn generation(number: Option<usize>, path: PathBuf) -> Generation {
    let saved = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
    let summary = match store::load(&path) {
        Ok(Some(state)) => Ok(summary(&state)),
        Ok(None) => Err("gone".to_string()),
        Err(e) => Err(e.to_string()),
    };
    Generation {
        number,
        path,
        saved,
        summary,
    }
}

/// The saved sessions beside the session file `store`: the file itself, its generations in
/// order (newest first), then the copies (newest first).
pub fn list(store: &Path) -> Vec<Generation> {
    let mut out = Vec::new();
    if store.exists() {
        out.push(generation(Some(0), store.to_path_buf()));
    }
    for n in 1..=store::GENERATIONS {
        let p = store::generation_path(store, n);
        if p.exists() {
            out.push(generation(Some(n), p));
        }
    }
    let stem = store
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".into());
    let prefix = format!("{stem}.copy-");
    let mut copies: Vec<Generation> = store
        .parent()
        .and_then(|d| std::fs::read_dir(d).ok())
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().into_string().ok()?;
            (name.starts_with(&prefix) && name.ends_with(".json")).then(|| e.path())
        })
        .map(|p| generation(None, p))
        .collect();
    copies.sort_by_key(|g| std::cmp::Reverse(g.saved));
    out.extend(copies);
    out
}

/// What a session holds, in one line: its snippets, backend, results and history.
pub fn summary(s: &SessionState) -> String {
    let current = s.snippet();
    let lines = current
        .text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    let mut out = format!(
        "{} snippet{} (current {}, {lines} line{}), {}",
        s.snippets.len(),
        plural(s.snippets.len()),
        current.name,
        plural(lines),
        s.backend.name()
    );
    match s.results.last() {
        Some(r) => out.push_str(&format!(
            ", {} result{} (last {})",
            s.results.len(),
            plural(s.results.len()),
            r.command
        )),
        None => out.push_str(", no results"),
    }
    out.push_str(&format!(
        ", {} history line{}",
        s.history.len(),
        plural(s.history.len())
    ));
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A time as `2026-12-02 00:32 UTC`.
pub fn utc(t: SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant, "chrono-Compatible Low-Level Date
    // Algorithms").
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60
    )
}

/// `hotlab sessions`: the saved sessions as a table, with how to resume one.
pub fn list_text(store: &Path) -> String {
    let dir = store.parent().unwrap_or(Path::new("."));
    let all = list(store);
    if all.is_empty() {
        return format!(
            "no saved sessions in {} yet (a session is saved at its first change)",
            dir.display()
        );
    }
    let mut out = format!(
        "saved sessions in {} (newest first; `hotlab repl --resume N` or `hotlab tui --resume \
         N` goes on with one, NAME for a copy):\n",
        dir.display()
    );
    let names: Vec<String> = all
        .iter()
        .map(|g| {
            g.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    let width = names.iter().map(|n| n.len()).max().unwrap_or(0);
    for (g, name) in all.iter().zip(&names) {
        let n = g.number.map_or("copy".to_string(), |n| n.to_string());
        let when = g.saved.map_or("?".to_string(), utc);
        let what = match &g.summary {
            Ok(s) => s.clone(),
            Err(e) => format!("cannot be resumed: {e}"),
        };
        out.push_str(&format!("{n:>4}  {when}  {name:<width$}  {what}\n"));
    }
    out.trim_end().to_string()
}

/// The file `--resume WHICH` means: empty or `0` the session file, `N` its Nth generation, a
/// NAME a file beside it (`session.prev.3.json`, `prev.3`, `copy-1234`), or a path.
pub fn find(store: &Path, which: &str) -> Result<PathBuf, SessionError> {
    let which = which.trim();
    let missing = |what: String| {
        SessionError::Input(format!(
            "{what}: `hotlab sessions` lists the saved sessions"
        ))
    };
    if which.is_empty() || which == "0" {
        return Ok(store.to_path_buf());
    }
    if let Ok(n) = which.parse::<usize>() {
        if n > store::GENERATIONS {
            return Err(missing(format!(
                "no generation {n}: the last {} sessions are kept (1 is the newest)",
                store::GENERATIONS
            )));
        }
        let p = store::generation_path(store, n);
        return if p.exists() {
            Ok(p)
        } else {
            Err(missing(format!(
                "no session generation {n} ({} does not exist)",
                p.display()
            )))
        };
    }
    let dir = store.parent().unwrap_or(Path::new("."));
    let stem = store
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".into());
    let candidates: Vec<PathBuf> = if which.contains('/') {
        vec![PathBuf::from(which)]
    } else {
        vec![
            dir.join(which),
            dir.join(format!("{which}.json")),
            dir.join(format!("{stem}.{which}.json")),
        ]
    };
    candidates.into_iter().find(|p| p.is_file()).ok_or_else(|| {
        missing(format!(
            "no saved session named `{which}` in {} (to load a snippet file as well, put it \
             before --resume)",
            dir.display()
        ))
    })
}

/// Check what a saved session brings back as if it were typed: each setting goes through the
/// `:set` parser, the twin and the ladder through the names `:twin` and `:ladder` accept, the
/// CPU must be online. What fails is put back to its default, and said (one line each).
pub fn validate(state: &mut SessionState) -> Vec<String> {
    let mut notes = Vec::new();
    let defaults = super::SessionSettings::default();
    let s = &mut state.settings;
    let mut typed = |name: &str, value: String| -> bool {
        match command::parse(&format!(":set {name} {value}")) {
            Ok(_) => true,
            Err(e) => {
                let why = e.to_string();
                let why = why.lines().next().unwrap_or_default().to_string();
                notes.push(format!(
                    "the saved setting `{name} {value}` is refused ({why}): using the default"
                ));
                false
            }
        }
    };
    if !typed("time", s.time_s.to_string()) {
        s.time_s = defaults.time_s;
    }
    if !typed("band", s.band.to_string()) {
        s.band = defaults.band;
    }
    if !typed("limit", s.limit_s.to_string()) {
        s.limit_s = defaults.limit_s;
    }
    if let Some(mem) = s.mem
        && !typed("mem", mem.to_string())
    {
        s.mem = defaults.mem;
    }
    if let Some(cpu) = s.cpu {
        let online = crate::measure::env::pin::online_cpus();
        if !online.contains(&cpu) {
            notes.push(format!(
                "the saved setting `cpu {cpu}` is not an online CPU here (online: {}): using \
                 auto",
                online
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            s.cpu = None;
        }
    }
    if let Some(twin) = &state.twin
        && crate::cases::twin_named(twin).is_none()
    {
        notes.push(format!(
            "the saved twin `{twin}` is not a twin of this build: none chosen"
        ));
        state.twin = None;
    }
    if let Some(ladder) = &state.ladder
        && let Err(e) = crate::ladder::resolve(ladder)
    {
        notes.push(format!(
            "the saved ladder `{ladder}` cannot be used ({e}): using host_call"
        ));
        state.ladder = Some("host_call".into());
        state.layers = None;
    }
    if let Some(names) = &state.layers {
        // As `:layers` checks them: each a layer's name, and together a valid ladder.
        let layers: Result<Vec<_>, String> = names
            .iter()
            .map(|n| {
                crate::ladder::Layer::from_name(n).ok_or_else(|| format!("no layer named `{n}`"))
            })
            .collect();
        let ladder = state.ladder.as_deref().unwrap_or("host_call");
        let checked = layers.and_then(|layers| {
            let base = crate::ladder::resolve(ladder).map_err(|e| e.to_string())?;
            crate::ladder::run::with_layers(&base, &layers).map_err(|e| e.to_string())
        });
        if let Err(why) = checked {
            notes.push(format!(
                "the saved layers `{}` are refused ({why}): using the ladder's own",
                names.join(" ")
            ));
            state.layers = None;
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        let t = |s: u64| utc(std::time::UNIX_EPOCH + std::time::Duration::from_secs(s));
        assert_eq!(t(0), "1970-01-01 00:00 UTC");
        assert_eq!(t(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(t(1_796_171_520), "2026-12-02 00:32 UTC");
    }

    #[test]
    fn bad_saved_settings_are_put_back() {
        let mut s = SessionState::default();
        s.settings.time_s = -1.0;
        s.settings.band = 3.0;
        s.settings.cpu = Some(100_000);
        s.twin = Some("no_such_twin".into());
        let notes = validate(&mut s);
        assert_eq!(notes.len(), 4, "{notes:?}");
        assert!(notes[0].contains("time -1"), "{notes:?}");
        assert_eq!(s.settings, crate::session::SessionSettings::default());
        assert_eq!(s.twin, None);
        assert!(validate(&mut SessionState::default()).is_empty());
    }

    #[test]
    fn bad_saved_layers_are_dropped() {
        for bad in [["slot", "warp"], ["slot", "slot"]] {
            let mut s = SessionState {
                layers: Some(bad.map(String::from).to_vec()),
                ..SessionState::default()
            };
            let notes = validate(&mut s);
            assert_eq!(notes.len(), 1, "{bad:?}: {notes:?}");
            assert!(notes[0].contains("saved layers"), "{notes:?}");
            assert_eq!(s.layers, None);
        }
        let mut s = SessionState {
            layers: Some(vec!["slot".into(), "entry".into()]),
            ..SessionState::default()
        };
        assert!(validate(&mut s).is_empty(), "good layers are kept");
        assert!(s.layers.is_some());
    }
}
