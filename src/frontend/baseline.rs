//! Saved baselines: `--save-baseline NAME` stores a run's JSON export under the XDG data
//! directory (`$XDG_DATA_HOME/hotlab/baselines/NAME.json`, else
//! `~/.local/share/hotlab/baselines/`; `HOTLAB_DATA_DIR` replaces `$XDG_DATA_HOME/hotlab`),
//! and `--baseline NAME` compares a new run with it row by row ([`crate::export::compare`]).

use std::path::PathBuf;

use clap::Args;
use serde_json::Value;

use super::Failure;
use crate::export::compare::{self, CompareOptions, Comparison};

/// `HOTLAB_DATA_DIR`: the directory to keep baselines in instead of the XDG one (tests).
pub const DATA_ENV: &str = "HOTLAB_DATA_DIR";

/// The options of the measuring commands (`bench`, `check`, `ladder`) for baselines.
#[derive(Debug, Clone, Args)]
pub struct BaselineArgs {
    /// Save this run as baseline NAME (its JSON export, under the XDG data directory; see
    /// `hotlab compare`).
    #[arg(long, value_name = "NAME")]
    pub save_baseline: Option<String>,
    /// Compare this run with baseline NAME row by row (change = new / old of each row's
    /// in-run ratio, within --baseline-band, with --run-spread); exit code 3 when a row got
    /// slower.
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// With --baseline: as `hotlab compare --band`.
    #[arg(
        long,
        value_name = "PCT",
        requires = "baseline",
        default_value_t = compare::DEFAULT_BAND_PCT,
        help = compare::BAND_HELP
    )]
    pub baseline_band: f64,
    /// With --baseline: as `hotlab compare --run-spread`.
    #[arg(
        long,
        value_name = "PCT",
        requires = "baseline",
        default_value_t = compare::DEFAULT_SPREAD_PCT,
        help = compare::SPREAD_HELP
    )]
    pub run_spread: f64,
}

impl Default for BaselineArgs {
    fn default() -> Self {
        BaselineArgs {
            save_baseline: None,
            baseline: None,
            baseline_band: compare::DEFAULT_BAND_PCT,
            run_spread: compare::DEFAULT_SPREAD_PCT,
        }
    }
}

impl BaselineArgs {
    /// How `--baseline` compares: `--baseline-band` and `--run-spread`, checked as `hotlab
    /// compare` checks its `--band` and `--run-spread`.
    pub fn options(&self) -> Result<CompareOptions, Failure> {
        CompareOptions::from_pct(self.baseline_band, self.run_spread, "--baseline-band")
            .map_err(|why| Failure::input(format!("error: {why}")))
    }
}

/// Where baselines are kept.
pub fn dir() -> Result<PathBuf, Failure> {
    if let Some(d) = std::env::var_os(DATA_ENV).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("baselines"));
    }
    directories::BaseDirs::new()
        .map(|d| d.data_dir().join("hotlab").join("baselines"))
        .ok_or_else(|| {
            Failure::input(
                "error: no data directory for baselines: set HOME or XDG_DATA_HOME \
                 (or HOTLAB_DATA_DIR)",
            )
        })
}

/// The file of baseline `name` (a name of letters, digits, `.`, `_`, `-`).
pub fn path(name: &str) -> Result<PathBuf, Failure> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if !ok {
        return Err(Failure::input(format!(
            "error: baseline name `{name}`: use letters, digits, `.`, `_` and `-` (e.g. main-2026-12)"
        )));
    }
    Ok(dir()?.join(format!("{name}.json")))
}

/// Check `args` before a run: a `--baseline` that does not exist fails now, not after the
/// measurement.
pub fn precheck(args: &BaselineArgs) -> Result<(), Failure> {
    args.options()?;
    if let Some(name) = &args.save_baseline {
        path(name)?;
    }
    if let Some(name) = &args.baseline {
        let p = path(name)?;
        if !p.exists() {
            return Err(Failure::input(format!(
                "error: no baseline `{name}` ({} does not exist; save one with --save-baseline {name})",
                p.display()
            )));
        }
    }
    Ok(())
}

/// Store `doc` as baseline `name`; the path written.
pub fn save(name: &str, doc: &Value) -> Result<PathBuf, Failure> {
    let p = path(name)?;
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).map_err(|e| {
            Failure::input(format!("error: cannot create {}: {e}", parent.display()))
        })?;
    }
    let text = serde_json::to_string_pretty(doc).unwrap_or_default() + "\n";
    crate::export::write_whole(&p, text.as_bytes())
        .map_err(|e| Failure::input(format!("error: cannot write {}: {e}", p.display())))?;
    Ok(p)
}

/// Read an export (a baseline's file, or a `compare` argument).
pub fn read(p: &std::path::Path) -> Result<Value, Failure> {
    let text = std::fs::read_to_string(p)
        .map_err(|e| Failure::input(format!("error: cannot read {}: {e}", p.display())))?;
    serde_json::from_str(&text).map_err(|e| {
        Failure::input(format!(
            "error: {}:{}:{}: not JSON: {e}",
            p.display(),
            e.line(),
            e.column()
        ))
    })
}

/// Compare the exports `old` and `new` (named for messages) with `options`.
pub fn compare_docs(
    old: (&str, &Value),
    new: (&str, &Value),
    options: CompareOptions,
) -> Result<Comparison, Failure> {
    let rows = |(what, doc): (&str, &Value)| {
        compare::run_rows(doc).map_err(|why| Failure::input(format!("error: {what}: {why}")))
    };
    let (old_kind, old_rows) = rows(old)?;
    let (new_kind, new_rows) = rows(new)?;
    if old_kind != new_kind {
        return Err(Failure::input(format!(
            "error: {} is a {old_kind} run and {} a {new_kind} run: compare runs of one kind",
            old.0, new.0
        )));
    }
    Ok(compare::compare(&old_rows, &new_rows, options))
}

/// Where [`after_run`] prints the comparison's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Show {
    /// On stdout, after the run's own output.
    Stdout,
    /// On stderr (stdout carries one document).
    Stderr,
    /// Not at all (the caller puts the comparison into its JSON document).
    No,
}

/// After a run: compare it with the baseline and/or save it, as `args` say. The comparison
/// comes back (`slower()` is the caller's exit code 3).
pub fn after_run(
    args: &BaselineArgs,
    doc: &Value,
    show: Show,
) -> Result<Option<Comparison>, Failure> {
    let mut out = None;
    if let Some(name) = &args.baseline {
        let p = path(name)?;
        let old = read(&p)?;
        let c = compare_docs(
            (&format!("baseline {name}"), &old),
            ("this run", doc),
            args.options()?,
        )?;
        let text = crate::export::render_text(&compare::table(
            &c,
            &format!("against baseline {name} ({})", p.display()),
        ));
        match show {
            Show::Stdout => print!("\n{text}"),
            Show::Stderr => eprint!("\n{text}"),
            Show::No => {}
        }
        out = Some(c);
    }
    if let Some(name) = &args.save_baseline {
        let p = save(name, doc)?;
        eprintln!("saved baseline {name}: {}", p.display());
    }
    Ok(out)
}
