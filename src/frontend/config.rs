//! The config file, `$XDG_CONFIG_HOME/hotlab/config.toml` (else `~/.config/hotlab/config.toml`):
//! defaults for options a user would otherwise pass every time. A flag on the command line wins
//! over the file; a key the file gets wrong is named (file and key) on stderr and its default
//! used.
//!
//! ```toml
//! theme = "light"        # hotlab tui's --theme
//! band = 3               # --band of check and ladder, percent
//! backend = "jit-opt"    # --backend of check and bench
//!
//! [check]                # per command: time, band, backend (where the command has them)
//! time = 2
//! [ladder]
//! time = 5
//! [bench]
//! time = 0.5
//! ```

use std::path::{Path, PathBuf};

/// `HOTLAB_CONFIG`: a config file to read instead of the XDG one (tests; an empty value reads
/// none).
pub const CONFIG_ENV: &str = "HOTLAB_CONFIG";

/// The settings of one command's table (or the top level).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Defaults {
    /// `time`, seconds.
    pub time: Option<f64>,
    /// `band`, percent.
    pub band: Option<f64>,
    /// `backend`, a backend's name as `--backend` takes it.
    pub backend: Option<String>,
}

/// The config file, read and checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// Where it was read from (`None`: there is none).
    pub path: Option<PathBuf>,
    /// `theme`.
    pub theme: Option<String>,
    /// The top-level `band` and `backend`.
    pub all: Defaults,
    /// `[check]`.
    pub check: Defaults,
    /// `[ladder]`.
    pub ladder: Defaults,
    /// `[bench]`.
    pub bench: Defaults,
    /// What is wrong in it, one message per key (`FILE: key: why; the default is used`).
    pub warnings: Vec<String>,
}

impl Config {
    /// A command's defaults: its table's keys, else the top level's.
    pub fn for_command(&self, command: &str) -> Defaults {
        let table = match command {
            "check" => &self.check,
            "ladder" => &self.ladder,
            "bench" => &self.bench,
            _ => return self.all.clone(),
        };
        Defaults {
            time: table.time.or(self.all.time),
            band: table.band.or(self.all.band),
            backend: table.backend.clone().or_else(|| self.all.backend.clone()),
        }
    }
}

/// The config file's path: `HOTLAB_CONFIG` when set, else the XDG config directory's
/// `hotlab/config.toml`.
pub fn path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(CONFIG_ENV) {
        return (!p.is_empty()).then(|| PathBuf::from(p));
    }
    directories::BaseDirs::new().map(|d| d.config_dir().join("hotlab").join("config.toml"))
}

/// Read the config file (none is no error).
pub fn load() -> Config {
    match path() {
        Some(p) if p.exists() => match std::fs::read_to_string(&p) {
            Ok(text) => parse(&p, &text),
            Err(e) => Config {
                warnings: vec![format!(
                    "{}: cannot read: {e}; the defaults are used",
                    p.display()
                )],
                ..Config::default()
            },
        },
        _ => Config::default(),
    }
}

/// The backends `--backend` takes, for checking `backend`.
const BACKENDS: [&str; 4] = ["jit", "jit-opt", "object", "interp"];

/// Check `text` (the file at `path`) key by key.
pub fn parse(path: &Path, text: &str) -> Config {
    let mut config = Config {
        path: Some(path.to_path_buf()),
        ..Config::default()
    };
    let file = path.display().to_string();
    let table: toml::Table = match toml::from_str(text) {
        Ok(t) => t,
        Err(e) => {
            config.warnings.push(format!(
                "{file}: not valid TOML: {}; the defaults are used",
                e.message().trim()
            ));
            return config;
        }
    };
    let mut warn = |key: &str, why: String| {
        config
            .warnings
            .push(format!("{file}: `{key}`: {why}; the default is used"));
    };
    let mut sink = |key: &str, why: String| warn(key, why);
    match table.get("theme") {
        None => {}
        Some(toml::Value::String(t)) if !t.trim().is_empty() => config.theme = Some(t.clone()),
        Some(other) => sink(
            "theme",
            format!("expected a theme's name or file, found {other}"),
        ),
    }
    config.all = read_defaults("", &table, true, &mut sink);
    for (name, slot) in [
        ("check", &mut config.check),
        ("ladder", &mut config.ladder),
        ("bench", &mut config.bench),
    ] {
        match table.get(name) {
            None => {}
            Some(toml::Value::Table(t)) => {
                *slot = read_defaults(&format!("{name}."), t, false, &mut sink);
            }
            Some(other) => sink(
                name,
                format!("expected a table, found {}", other.type_str()),
            ),
        }
    }
    config
}

/// One table's `time`, `band`, `backend` (the top level's also takes `theme` and the
/// command tables, read by the caller).
fn read_defaults(
    prefix: &str,
    t: &toml::Table,
    top: bool,
    warn: &mut dyn FnMut(&str, String),
) -> Defaults {
    let mut d = Defaults::default();
    for (key, value) in t {
        let name = format!("{prefix}{key}");
        match (key.as_str(), value) {
            ("time", v) => match number(v) {
                Some(s) if s > 0.0 && s <= 600.0 => d.time = Some(s),
                _ => warn(
                    &name,
                    format!("expected seconds in (0, 600], found {value}"),
                ),
            },
            ("band", v) => match number(v) {
                Some(b) if b > 0.0 && b < 100.0 => d.band = Some(b),
                _ => warn(
                    &name,
                    format!("expected a percentage in (0, 100), found {value}"),
                ),
            },
            ("backend", toml::Value::String(b)) if BACKENDS.contains(&b.as_str()) => {
                d.backend = Some(b.clone());
            }
            ("backend", _) => warn(
                &name,
                format!("expected one of {}, found {value}", BACKENDS.join(", ")),
            ),
            ("theme" | "check" | "ladder" | "bench", _) if top => {}
            _ => warn(
                &name,
                if top {
                    "unknown key (the keys are theme, time, band, backend, and the tables \
                     [check], [ladder], [bench])"
                        .to_string()
                } else {
                    "unknown key (a command's table takes time, band, backend)".to_string()
                },
            ),
        }
    }
    d
}

fn number(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) => Some(*f),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_and_mistakes_named_by_file_and_key() {
        let c = parse(
            Path::new("c.toml"),
            "theme = \"light\"\nband = 3\nbackend = \"jit-opt\"\ncolour = 1\n\
             [check]\ntime = 2\nband = \"wide\"\n[ladder]\ntime = 5\nbackend = \"gpu\"\n",
        );
        assert_eq!(c.theme.as_deref(), Some("light"));
        let check = c.for_command("check");
        assert_eq!(check.time, Some(2.0));
        assert_eq!(check.band, Some(3.0), "the top level's band");
        assert_eq!(check.backend.as_deref(), Some("jit-opt"));
        assert_eq!(c.for_command("ladder").time, Some(5.0));
        let w = c.warnings.join("\n");
        assert!(w.contains("c.toml: `colour`: unknown key"), "{w}");
        assert!(
            w.contains("c.toml: `check.band`: expected a percentage"),
            "{w}"
        );
        assert!(
            w.contains("c.toml: `ladder.backend`: expected one of"),
            "{w}"
        );
        assert_eq!(c.warnings.len(), 3, "{w}");
        let bad = parse(Path::new("c.toml"), "band = [");
        assert!(
            bad.warnings[0].starts_with("c.toml: not valid TOML"),
            "{:?}",
            bad.warnings
        );
        assert_eq!(bad.all, Defaults::default());
    }
}
