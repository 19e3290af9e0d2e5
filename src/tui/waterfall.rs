//! A picture of a measured ladder: a waterfall of what each rung adds. The native row is the
//! floor; each later rung is a bar floating on the rungs before it in its build, as tall as
//! the ns it adds (the median of the paired per-round differences), with its CI as a whisker;
//! jit and aot side by side per rung. Drawn in the TUI (`w` in the table shows it) and, with
//! plotters' SVG backend, as the file `hotlab ladder --format svg` writes (for a slide).

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::model::{TableModel, TableRow};

/// One bar: a rung of one build.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// The rung (a step title); the floor is the native row.
    pub step: String,
    /// The step's layer (`slot`, `catch`): the short name shown where the title does not fit.
    pub layer: Option<String>,
    /// `jit`, `aot`, or `None` for the native floor.
    pub build: Option<String>,
    /// Where the bar starts: the sum of what the rungs before it added (ns).
    pub from: f64,
    /// What the rung adds (ns; the floor: its total).
    pub adds: f64,
    /// The CI of what it adds (ns), when known.
    pub ci: Option<(f64, f64)>,
}

impl Bar {
    /// Where the bar ends.
    pub fn to(&self) -> f64 {
        self.from + self.adds
    }

    /// Whether the CI excludes zero (a cost or a saving that the data resolves).
    pub fn resolved(&self) -> bool {
        self.ci.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0)
    }
}

/// A ladder's waterfall.
#[derive(Debug, Clone, PartialEq)]
pub struct Waterfall {
    /// The title (`ladder host_call`).
    pub title: String,
    /// The rungs in order (the floor first).
    pub steps: Vec<String>,
    /// The bars: the floor, then per rung one per build.
    pub bars: Vec<Bar>,
    /// The builds, in the order they stand beside each other.
    pub builds: Vec<String>,
}

fn adds_of(r: &TableRow) -> (f64, Option<(f64, f64)>) {
    match &r.adds {
        Some(a) => (a.ns, Some((a.low, a.high))),
        None => (0.0, None),
    }
}

impl Waterfall {
    /// From a measured ladder's table (rows with steps and builds); `None` if it has no
    /// measured native row.
    pub fn from_table(t: &TableModel) -> Option<Waterfall> {
        let native = t
            .rows
            .iter()
            .find(|r| r.step.is_some() && r.build.is_none())?;
        let floor = native.total_ns?;
        let mut steps = vec![native.step.clone()?];
        let mut bars = vec![Bar {
            step: steps[0].clone(),
            layer: native.layer.clone(),
            build: None,
            from: 0.0,
            adds: floor,
            ci: None,
        }];
        let mut builds: Vec<String> = Vec::new();
        let body_title = crate::ladder::Step::body().title;
        for r in &t.rows {
            let (Some(step), Some(build)) = (&r.step, &r.build) else {
                continue;
            };
            if r.disabled || r.total_ns.is_none() {
                continue;
            }
            if !steps.contains(step) {
                steps.push(step.clone());
            }
            if !builds.contains(build) {
                builds.push(build.clone());
            }
            // A build's first rung stands on the method body's bar when there is one (its
            // build's, else the aot one: the report measures it from there), else the floor.
            let body_of = |b: &str| {
                bars.iter()
                    .find(|x| x.step == body_title && x.build.as_deref() == Some(b))
            };
            let from = if *step == body_title {
                floor
            } else {
                bars.iter()
                    .rev()
                    .find(|b| b.build.as_ref() == Some(build))
                    .or_else(|| body_of("aot"))
                    .or_else(|| body_of("jit"))
                    .map_or(floor, Bar::to)
            };
            let (adds, ci) = adds_of(r);
            bars.push(Bar {
                step: step.clone(),
                layer: r.layer.clone(),
                build: Some(build.clone()),
                from,
                adds,
                ci,
            });
        }
        Some(Waterfall {
            title: t.title.clone(),
            steps,
            bars,
            builds,
        })
    }

    /// From a ladder report's JSON form (what `hotlab ladder --format json` prints).
    pub fn from_report_json(v: &serde_json::Value) -> Option<Waterfall> {
        Waterfall::from_table(&TableModel::from_report_json(v, "")?)
    }

    /// The highest point a bar or a whisker reaches (ns).
    pub fn top(&self) -> f64 {
        self.bars
            .iter()
            .map(|b| {
                let ci_top = b.ci.map_or(b.to(), |(_, hi)| b.from + hi);
                b.to().max(ci_top).max(b.from)
            })
            .fold(0.0, f64::max)
    }

    /// The bar's place on the x axis: rung `i` at `i`, its builds side by side around it.
    fn x_of(&self, b: &Bar) -> (f64, f64) {
        let i = self.steps.iter().position(|s| *s == b.step).unwrap_or(0) as f64;
        let n = self.builds.len().max(1) as f64;
        match &b.build {
            None => (i - 0.3, i + 0.3),
            Some(build) => {
                let k = self.builds.iter().position(|x| x == build).unwrap_or(0) as f64;
                let w = 0.8 / n;
                let x0 = i - 0.4 + k * w;
                (x0 + 0.03, x0 + w - 0.03)
            }
        }
    }
}

/// Colours of the SVG by build (the floor grey).
fn build_color(build: Option<&str>) -> RGBColor {
    match build {
        None => RGBColor(150, 150, 150),
        Some("jit") => RGBColor(31, 119, 180),
        Some(_) => RGBColor(255, 127, 14),
    }
}

/// The waterfall as an SVG document (`width` × `height` pixels).
pub fn svg(w: &Waterfall, width: u32, height: u32) -> Result<String, String> {
    let mut out = String::new();
    draw_svg(w, &mut out, width, height).map_err(|e| format!("cannot draw the SVG: {e}"))?;
    Ok(out)
}

fn draw_svg(
    w: &Waterfall,
    out: &mut String,
    width: u32,
    height: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::with_string(out, (width, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let n = w.steps.len() as f64;
    let top = (w.top() * 1.15).max(0.01);
    let bottom = w
        .bars
        .iter()
        .map(|b| b.ci.map_or(b.to(), |(lo, _)| b.from + lo).min(b.to()))
        .fold(0.0, f64::min);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{}: what each rung adds, ns per call (whiskers: CI)",
                w.title
            ),
            ("sans-serif", 20),
        )
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.6f64..(n - 0.4), bottom..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("ns per call")
        .y_label_formatter(&|y| format!("{y:.1}"))
        .draw()?;
    let font = ("sans-serif", 13).into_font();
    for (i, step) in w.steps.iter().enumerate() {
        chart.draw_series(std::iter::once(
            EmptyElement::at((i as f64, bottom))
                + Text::new(
                    step.clone(),
                    (0, 8),
                    TextStyle::from(font.clone()).pos(Pos::new(HPos::Center, VPos::Top)),
                ),
        ))?;
    }
    let mut builds: Vec<Option<String>> = vec![None];
    builds.extend(w.builds.iter().cloned().map(Some));
    for build in builds {
        let color = build_color(build.as_deref());
        let bars: Vec<&Bar> = w.bars.iter().filter(|b| b.build == build).collect();
        let label = match &build {
            None => "native (the floor)".to_string(),
            Some(b) => b.clone(),
        };
        chart
            .draw_series(bars.iter().map(|b| {
                let (x0, x1) = w.x_of(b);
                let (y0, y1) = (b.from.min(b.to()), b.from.max(b.to()));
                let style = if b.build.is_none() || b.resolved() {
                    color.filled()
                } else {
                    color.mix(0.35).filled()
                };
                Rectangle::new([(x0, y0), (x1, y1)], style)
            }))?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        for b in &bars {
            let (x0, x1) = w.x_of(b);
            let mid = (x0 + x1) / 2.0;
            if let Some((lo, hi)) = b.ci {
                let cap = (x1 - x0) / 4.0;
                let (lo, hi) = (b.from + lo, b.from + hi);
                chart.draw_series(
                    [
                        vec![(mid, lo), (mid, hi)],
                        vec![(mid - cap, lo), (mid + cap, lo)],
                        vec![(mid - cap, hi), (mid + cap, hi)],
                    ]
                    .into_iter()
                    .map(|p| PathElement::new(p, BLACK.stroke_width(1))),
                )?;
            }
            let text = match b.build {
                None => format!("{:.2}", b.adds),
                Some(_) => format!("{:+.2}", b.adds),
            };
            let y = b.ci.map_or(b.to(), |(_, hi)| b.from + hi).max(b.to());
            chart.draw_series(std::iter::once(
                EmptyElement::at((mid, y))
                    + Text::new(
                        text,
                        (0, -4),
                        TextStyle::from(("sans-serif", 11).into_font())
                            .pos(Pos::new(HPos::Center, VPos::Bottom)),
                    ),
            ))?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// The waterfall as terminal lines of `width` cells: per bar its rung, build, a run of blanks
/// up to where it starts, the bar, and what it adds with its CI. A rung that adds ns is a bar
/// going right from where the rungs before it ended (in eighths of a cell); a rung that saves
/// ns goes left from there, drawn shaded with its head `◀` (the SVG draws it going down).
/// The CI is never cut: the rung names shorten first.
pub fn text_lines(w: &Waterfall, width: usize) -> Vec<(Option<String>, String, bool)> {
    const MIN_BAR: usize = 4;
    let tails: Vec<String> = w
        .bars
        .iter()
        .map(|b| match (b.build.is_none(), b.ci) {
            (true, _) => format!("{:.2} floor", b.adds),
            (false, Some((lo, hi))) => {
                format!("{:+.2} {}", b.adds, super::panes::ci_half(hi - lo))
            }
            (false, None) => format!("{:+.2}", b.adds),
        })
        .collect();
    let tail_w = tails.iter().map(|t| t.chars().count()).max().unwrap_or(0);
    // A line: rung, build (3), bar, tail, with a space between each.
    let room = w
        .steps
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0)
        .min(24)
        .min(width / 3)
        .min(width.saturating_sub(tail_w + 6 + MIN_BAR))
        .max(4);
    // When a title does not fit, the rungs are named by their layers (`detached`, `catch`),
    // all of them, so the column reads alike; only a name that does not fit either is cut. The
    // names then take only the room they need.
    let short = w.bars.iter().any(|b| b.step.chars().count() > room);
    let titles: Vec<String> = w
        .bars
        .iter()
        .map(|b| match &b.layer {
            _ if !short => b.step.clone(),
            Some(layer) if layer.chars().count() <= room => layer.clone(),
            _ => {
                let cut: String = b.step.chars().take(room - 1).collect();
                format!("{cut}…")
            }
        })
        .collect();
    let label_w = titles.iter().map(|t| t.chars().count()).max().unwrap_or(0);
    let bar_w = width.saturating_sub(label_w + tail_w + 6).max(MIN_BAR);
    let top = w.top().max(1e-9);
    let cells = |ns: f64| (ns / top * bar_w as f64).max(0.0);
    let mut out = Vec::new();
    for ((b, tail), title) in w.bars.iter().zip(tails).zip(titles) {
        let build = b.build.as_deref().unwrap_or("");
        let body = if b.adds < 0.0 {
            // From where it ends (left) to where the rungs before it ended (right).
            let (left, right) = (cells(b.to()).round(), cells(b.from).round());
            let n = ((right - left) as usize).max(1);
            let pad = (right as usize).saturating_sub(n);
            format!("{}◀{}", " ".repeat(pad), "▒".repeat(n - 1))
        } else {
            let pad = cells(b.from).floor() as usize;
            let eighths = (cells(b.from + b.adds) - pad as f64) * 8.0;
            let eighths = eighths.round().max(0.0) as usize;
            let mut bar = "█".repeat(eighths / 8);
            if !eighths.is_multiple_of(8) {
                bar.push(['▏', '▎', '▍', '▌', '▋', '▊', '▉'][eighths % 8 - 1]);
            }
            if bar.is_empty() {
                bar.push('│');
            }
            format!("{}{bar}", " ".repeat(pad))
        };
        let body: String = body.chars().take(bar_w).collect();
        out.push((
            b.build.clone(),
            format!("{title:<label_w$} {build:<3} {body:<bar_w$} {tail}"),
            b.build.is_none() || b.resolved(),
        ));
    }
    out
}
