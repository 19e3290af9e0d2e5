//! Themes: TOML files in `themes/` with semantic colour names, laid over the default.
//!
//! A theme file names what a colour is for (`improvement`, `histogram_bar`), never where it is
//! drawn. Unknown keys and unreadable colours are errors that name the key and its line; the
//! caller reports them and falls back to the default theme. `NO_COLOR` selects [`Theme::plain`].

use std::path::Path;
use std::str::FromStr;

use ratatui::style::Color;
use serde::Deserialize;
use toml::Spanned;

macro_rules! theme_colors {
    ($($(#[$doc:meta])* $field:ident),* $(,)?) => {
        /// Resolved colours, by purpose.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct Colors {
            $($(#[$doc])* pub $field: Color,)*
        }

        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct ColorsFile {
            $($field: Option<Spanned<ColorValue>>,)*
        }

        /// Every colour key a theme file may set.
        pub const COLOR_KEYS: &[&str] = &[$(stringify!($field)),*];

        impl Colors {
            fn overlay(mut self, file: ColorsFile, src: &str, path: &str) -> Result<Colors, ThemeError> {
                $(
                    if let Some(v) = file.$field {
                        self.$field = parse_color(&v, src, path, stringify!($field))?;
                    }
                )*
                Ok(self)
            }

            fn all(c: Color) -> Colors {
                Colors { $($field: c,)* }
            }
        }
    };
}

theme_colors! {
    /// The background of the whole screen; `"reset"` leaves the terminal's own (the dark
    /// theme's), any other colour is painted under every cell, so dark text never lands on a
    /// dark terminal's background.
    background,
    /// Ordinary text.
    text,
    /// Secondary text: units, hints, CI bounds.
    muted,
    /// Pane titles and headings.
    title,
    /// Pane borders.
    border,
    /// The border of the focused pane.
    border_focus,
    /// Background of the selected row.
    selection_bg,
    /// Text of the selected row.
    selection_fg,
    /// A faster result (a verdict `faster`, a negative step).
    improvement,
    /// A slower result (a verdict `slower`, a costly step).
    regression,
    /// A verdict `equal`.
    equal,
    /// A verdict `unresolved`.
    unresolved,
    /// Errors and diagnostics.
    error,
    /// Health warnings.
    warning,
    /// Histogram bars.
    histogram_bar,
    /// Percentile markers on the histogram.
    histogram_marker,
    /// Bars in the ladder table.
    bar,
    /// Keywords in hot code.
    keyword,
    /// Number literals in hot code.
    number,
    /// String literals in hot code.
    string,
    /// Comments in hot code.
    comment,
    /// Status line background.
    status_bg,
    /// Status line text.
    status_fg,
    /// Lines added in a machine-code diff.
    diff_add,
    /// Lines removed in a machine-code diff.
    diff_remove,
}

/// A named set of colours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Theme {
    /// The theme's name.
    pub name: String,
    /// Its colours.
    pub colors: Colors,
    /// False for the plain theme: draw with attributes (bold, reverse) only.
    pub color: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: Option<String>,
    #[serde(default)]
    colors: ColorsFile,
}

/// A theme file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {key}: {message}")]
pub struct ThemeError {
    /// The file.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// The key at fault.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

/// The themes shipped in the binary.
pub const BUILTIN: [(&str, &str); 3] = [
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.toml"),
    ),
];

fn line_of(src: &str, offset: usize) -> usize {
    src[..offset.min(src.len())].matches('\n').count() + 1
}

/// A colour as a theme file writes it: a name or `"#rrggbb"`, or a terminal palette index.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ColorValue {
    Text(String),
    Index(i64),
}

fn parse_color(
    v: &Spanned<ColorValue>,
    src: &str,
    path: &str,
    key: &str,
) -> Result<Color, ThemeError> {
    let parsed = match v.get_ref() {
        ColorValue::Text(t) => Color::from_str(t).ok(),
        ColorValue::Index(i) => u8::try_from(*i).ok().map(Color::Indexed),
    };
    parsed.ok_or_else(|| ThemeError {
        file: path.into(),
        line: line_of(src, v.span().start),
        key: format!("colors.{key}"),
        message: format!(
            "`{}` is not a colour (use \"#rrggbb\", a name such as lightblue, or 0-255)",
            match v.get_ref() {
                ColorValue::Text(t) => t.clone(),
                ColorValue::Index(i) => i.to_string(),
            }
        ),
    })
}

impl Theme {
    /// The default theme (`dark`).
    pub fn default_theme() -> Theme {
        Theme::parse("themes/dark.toml", BUILTIN[0].1, Theme::base())
            .expect("the shipped dark theme parses (tested)")
    }

    fn base() -> Theme {
        Theme {
            name: "base".into(),
            colors: Colors::all(Color::Reset),
            color: true,
        }
    }

    /// No colours at all, for `NO_COLOR` and dumb terminals.
    pub fn plain() -> Theme {
        Theme {
            name: "plain".into(),
            colors: Colors::all(Color::Reset),
            color: false,
        }
    }

    /// Parse theme text laid over `base`; `path` names the file in errors.
    pub fn parse(path: &str, src: &str, base: Theme) -> Result<Theme, ThemeError> {
        let file: ThemeFile = toml::from_str(src).map_err(|e| {
            let offset = e.span().map(|s| s.start).unwrap_or(0);
            let line = line_of(src, offset);
            // The key with its table (`colors.title`), as the colour errors name it.
            let lines: Vec<&str> = src.lines().collect();
            let table = lines[..(line - 1).min(lines.len())]
                .iter()
                .rev()
                .find_map(|l| {
                    let l = l.trim();
                    l.strip_prefix('[').and_then(|t| t.strip_suffix(']'))
                })
                .map(str::trim);
            let key = lines
                .get(line - 1)
                .and_then(|l| l.split_once('='))
                .map(|(k, _)| match table {
                    Some(t) => format!("{t}.{}", k.trim()),
                    None => k.trim().to_string(),
                })
                .unwrap_or_else(|| "theme".into());
            ThemeError {
                file: path.into(),
                line,
                key,
                message: e.message().trim().to_string(),
            }
        })?;
        let colors = base.colors.overlay(file.colors, src, path)?;
        Ok(Theme {
            name: file.name.unwrap_or(base.name),
            colors,
            color: true,
        })
    }

    /// Resolve `--theme NAME|FILE`: a shipped name, or a file laid over the default.
    pub fn load(name_or_path: &str) -> Result<Theme, ThemeError> {
        if let Some((name, src)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
            return Theme::parse(&format!("themes/{name}.toml"), src, Theme::default_theme());
        }
        let path = Path::new(name_or_path);
        let src = std::fs::read_to_string(path).map_err(|e| ThemeError {
            file: name_or_path.into(),
            line: 1,
            key: "theme".into(),
            message: format!(
                "no shipped theme of that name ({}) and the file cannot be read: {e}",
                BUILTIN.map(|(n, _)| n).join(", ")
            ),
        })?;
        Theme::parse(name_or_path, &src, Theme::default_theme())
    }

    /// The theme to use: `NO_COLOR` (set and non-empty) wins; else `--theme`, falling back to
    /// the default with the error returned for the caller to show.
    pub fn choose(requested: Option<&str>) -> (Theme, Option<ThemeError>) {
        if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
            return (Theme::plain(), None);
        }
        match requested {
            None => (Theme::default_theme(), None),
            Some(r) => match Theme::load(r) {
                Ok(t) => (t, None),
                Err(e) => (Theme::default_theme(), Some(e)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_themes_set_every_key() {
        for (name, src) in BUILTIN {
            let t = Theme::parse(name, src, Theme::base()).unwrap();
            assert_eq!(t.name, name);
            // The background alone may be the terminal's own (`reset`), and only on purpose.
            let debug = format!(
                "{:?}",
                Colors {
                    background: Color::Black,
                    ..t.colors.clone()
                }
            );
            assert!(
                !debug.contains("Reset"),
                "{name} leaves a colour unset: {debug}"
            );
            assert!(
                src.contains("\nbackground = "),
                "{name} names its background"
            );
        }
        assert_eq!(COLOR_KEYS.len(), 25);
    }

    #[test]
    fn a_partial_theme_overlays_the_default() {
        let t = Theme::parse(
            "x.toml",
            "[colors]\ntitle = \"red\"\n",
            Theme::default_theme(),
        );
        let t = t.unwrap();
        assert_eq!(t.colors.title, Color::Red);
        assert_eq!(t.colors.text, Theme::default_theme().colors.text);
    }

    #[test]
    fn light_themes_paint_their_background_and_dark_keeps_the_terminals() {
        assert_eq!(Theme::default_theme().colors.background, Color::Reset);
        let light = Theme::load("light").unwrap();
        assert_eq!(light.colors.background, Color::Rgb(0xfa, 0xfa, 0xf7));
        assert_eq!(Theme::plain().colors.background, Color::Reset);
    }

    #[test]
    fn bad_colour_names_the_key_and_line() {
        let err =
            Theme::parse("x.toml", "[colors]\n\ntitle = \"reddish\"\n", Theme::base()).unwrap_err();
        assert_eq!((err.line, err.key.as_str()), (3, "colors.title"));
        assert!(err.to_string().starts_with("x.toml:3: colors.title:"));
    }

    #[test]
    fn a_palette_index_is_a_colour() {
        let t = Theme::parse("x.toml", "[colors]\ntitle = 200\n", Theme::base()).unwrap();
        assert_eq!(t.colors.title, Color::Indexed(200));
        let err = Theme::parse("x.toml", "[colors]\ntitle = 300\n", Theme::base()).unwrap_err();
        assert_eq!((err.line, err.key.as_str()), (2, "colors.title"));
        assert!(
            err.message.contains("`300` is not a colour"),
            "{}",
            err.message
        );
    }

    #[test]
    fn unknown_key_names_the_key() {
        let err = Theme::parse("x.toml", "[colors]\ntitel = \"red\"\n", Theme::base()).unwrap_err();
        assert_eq!((err.line, err.key.as_str()), (2, "colors.titel"));
        assert!(err.message.contains("unknown field"), "{}", err.message);
    }

    #[test]
    fn missing_file_falls_back() {
        let (t, err) = Theme::choose(Some("/no/such/theme.toml"));
        if std::env::var_os("NO_COLOR").is_none() {
            assert_eq!(t.name, "dark");
            assert!(err.unwrap().message.contains("cannot be read"));
        }
    }
}
