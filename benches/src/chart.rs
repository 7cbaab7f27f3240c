//! Charts (plotters) of throughput against threads, one line per method: PNG charts of a
//! runner sweep ([`draw`]: one panel per workload setting of a figure) and the SVG scaling
//! chart `cargo bench` leaves per criterion group ([`scaling_svg`]).
//!
//! Text needs a font; plotters' `ab_glyph` backend has none built in, so [`load_font`]
//! registers the one this package ships (DejaVu Sans Mono, Bitstream Vera licence, in
//! `benches/fonts/`, compiled into the binary): charts, and criterion's HTML report, have text
//! on a machine with no system fonts at all.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::report::{Summary, Throughput};
use crate::BenchError;

/// The shipped font (DejaVu Sans Mono; licence in `benches/fonts/DejaVuSansMono-LICENSE.txt`).
static FONT: &[u8] = include_bytes!("../fonts/DejaVuSansMono.ttf");

/// Registers the shipped font as plotters' `"sans-serif"` family (the family criterion's report
/// and [`draw`] ask for), once; returns whether plotters accepted it.
///
/// Every font lookup in plotters' `ab_glyph` backend fails with `FontUnavailable` until a font
/// is registered, and criterion's report writer panics on that error: call this (or
/// [`crate::crit::config`], which calls it) before criterion draws anything.
///
/// # Examples
///
/// ```
/// assert!(benches::chart::load_font());
/// ```
pub fn load_font() -> bool {
    static LOADED: OnceLock<bool> = OnceLock::new();
    *LOADED.get_or_init(|| {
        // Other styles fall back to the normal one; the monospace family gets the same font.
        plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok()
            && plotters::style::register_font("monospace", FontStyle::Normal, FONT).is_ok()
    })
}

const COLORS: [RGBColor; 8] = [
    RGBColor(0xd6, 0x27, 0x28), // NR first: red
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
];

fn chart_err(e: impl std::fmt::Display) -> BenchError {
    BenchError::Chart(e.to_string())
}

/// Whether a panel's y axis is logarithmic: when its highest point is more than this many times
/// its lowest, a linear axis would flatten the slower methods onto zero.
pub const LOG_SCALE_RATIO: f64 = 10.0;

/// Draws `figure` of `summary` into the PNG file `path`: one panel per workload setting, x =
/// threads, y = median Mops/s (logarithmic where a panel's methods differ by more than
/// [`LOG_SCALE_RATIO`]), one line per method, min-max as a vertical bar, oversubscribed thread
/// counts shaded and their points crossed.
///
/// # Errors
///
/// [`BenchError::Chart`] when drawing or writing fails.
///
/// # Examples
///
/// ```
/// use benches::report::{Row, Summary};
///
/// let s = Summary::from_rows(&[Row::example()]);
/// let path = std::env::temp_dir().join("benches-doc-chart.png");
/// benches::chart::draw(&s, "hashmap", "example", &path)?;
/// assert!(path.exists());
/// # Ok::<(), benches::BenchError>(())
/// ```
pub fn draw(
    summary: &Summary,
    figure: &str,
    subtitle: &str,
    path: &Path,
) -> Result<(), BenchError> {
    let text = load_font();
    let points = summary.throughput(figure);
    let methods = summary.methods(figure);
    let over = summary.oversubscribed(figure);
    let mut panels: Vec<String> = Vec::new();
    for p in &points {
        if !panels.contains(&p.panel) {
            panels.push(p.panel.clone());
        }
    }
    let n = panels.len().max(1);
    let root = BitMapBackend::new(path, (480 * n as u32, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(chart_err)?;
    let root = if text {
        root.titled(&format!("{figure}: {subtitle}"), ("sans-serif", 18))
            .map_err(chart_err)?
    } else {
        root
    };
    for (area, panel) in root.split_evenly((1, n)).iter().zip(&panels) {
        let mine: Vec<&Throughput> = points.iter().filter(|p| &p.panel == panel).collect();
        let spec = PanelSpec {
            caption: panel,
            points: &mine,
            methods: &methods,
            oversubscribed: &over,
            cores: None,
            text,
        };
        draw_panel(area, &spec)?;
    }
    root.present().map_err(chart_err)?;
    Ok(())
}

/// Draws one scaling chart into the SVG file `path`: x = threads, y = Mops/s (logarithmic where
/// the points differ by more than [`LOG_SCALE_RATIO`]), one line per method of `methods` (in
/// that order), each point's [`Throughput::min`]-[`Throughput::max`] as a vertical bar. Thread
/// counts above `cores` are oversubscribed: shaded, labelled, and their points crossed.
///
/// `cargo bench` draws one per criterion group with it ([`crate::scaling`]); the points'
/// `panel` is ignored.
///
/// # Errors
///
/// [`BenchError::Chart`] when drawing or writing fails.
///
/// # Examples
///
/// ```
/// use benches::report::Throughput;
///
/// let point = |method: &str, threads, mops| Throughput {
///     panel: String::new(), threads, method: method.into(), median: mops, min: mops * 0.9, max: mops * 1.1,
/// };
/// let points = [point("NR", 1, 10.0), point("NR", 2, 18.0), point("SL", 1, 9.0), point("SL", 2, 5.0)];
/// let path = std::env::temp_dir().join("benches-doc-scaling.svg");
/// benches::chart::scaling_svg("hashmap/10% writes", &points, &["NR".into(), "SL".into()], 2, &path)?;
/// assert!(std::fs::read_to_string(&path)?.contains("threads"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn scaling_svg(
    title: &str,
    points: &[Throughput],
    methods: &[String],
    cores: usize,
    path: &Path,
) -> Result<(), BenchError> {
    let text = load_font();
    let root = SVGBackend::new(path, (640, 440)).into_drawing_area();
    root.fill(&WHITE).map_err(chart_err)?;
    let mine: Vec<&Throughput> = points.iter().collect();
    let mut over: Vec<usize> = points
        .iter()
        .map(|p| p.threads)
        .filter(|&t| t > cores)
        .collect();
    over.dedup();
    let spec = PanelSpec {
        caption: title,
        points: &mine,
        methods,
        oversubscribed: &over,
        cores: Some(cores),
        text,
    };
    draw_panel(&root, &spec)?;
    root.present().map_err(chart_err)?;
    Ok(())
}

/// A tick label: at most three decimals, no trailing zeros (`0.05`, `2.5`, `10`).
fn short(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// What one panel shows.
struct PanelSpec<'a> {
    caption: &'a str,
    points: &'a [&'a Throughput],
    methods: &'a [String],
    /// Thread counts that ran oversubscribed (more threads than CPUs).
    oversubscribed: &'a [usize],
    /// The CPU count, where known (named in the oversubscribed label).
    cores: Option<usize>,
    /// Whether a font is available (no text at all otherwise).
    text: bool,
}

/// Draws one panel: the axes, linear or logarithmic in y, then [`draw_series`].
fn draw_panel<'a, DB: DrawingBackend + 'a>(
    area: &'a DrawingArea<DB, Shift>,
    spec: &PanelSpec<'_>,
) -> Result<(), BenchError> {
    let max_threads = spec.points.iter().map(|p| p.threads).max().unwrap_or(1);
    let x = 0.5f64..max_threads as f64 + 0.5;
    let high = spec
        .points
        .iter()
        .map(|p| p.max)
        .fold(0.0, f64::max)
        .max(1e-3);
    let low = spec
        .points
        .iter()
        .map(|p| p.min)
        .filter(|&v| v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let log = low.is_finite() && high / low > LOG_SCALE_RATIO;
    let mut builder = ChartBuilder::on(area);
    builder.margin(10);
    if spec.text {
        builder
            .caption(spec.caption, ("sans-serif", 15))
            .x_label_area_size(35)
            .y_label_area_size(55);
    }
    if log {
        let y = (low / 1.5..high * 1.5).log_scale();
        let chart = builder.build_cartesian_2d(x, y).map_err(chart_err)?;
        draw_series(chart, spec, max_threads, (low / 1.5, high * 1.5), true)
    } else {
        let chart = builder
            .build_cartesian_2d(x, 0.0..high * 1.1)
            .map_err(chart_err)?;
        draw_series(chart, spec, max_threads, (0.0, high * 1.1), false)
    }
}

/// Draws the mesh, the oversubscribed region, and one line per method with its points and
/// min-max bars, on `chart`, whose y range is `y` (logarithmic if `log`).
fn draw_series<'a, DB, Y>(
    mut chart: ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    spec: &PanelSpec<'_>,
    max_threads: usize,
    y: (f64, f64),
    log: bool,
) -> Result<(), BenchError>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let text = spec.text;
    let mut mesh = chart.configure_mesh();
    if text {
        mesh.x_desc("threads")
            .y_desc(if log { "Mops/s (log scale)" } else { "Mops/s" })
            .x_labels(max_threads + 1)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| short(*y));
    } else {
        mesh.x_labels(0).y_labels(0);
    }
    if log {
        // A log axis has many minor lines per decade: they blur into a grey band.
        mesh.light_line_style(WHITE);
    }
    mesh.draw().map_err(chart_err)?;
    if let Some(&first) = spec.oversubscribed.iter().min() {
        let from = first as f64 - 0.5;
        let to = max_threads as f64 + 0.5;
        chart
            .draw_series([Rectangle::new(
                [(from, y.0), (to, y.1)],
                RGBColor(0x80, 0x80, 0x80).mix(0.15).filled(),
            )])
            .map_err(chart_err)?;
        if text {
            // Two short lines near the bottom of the region (the legend is at the top).
            let at = |share: f64| {
                if log {
                    y.0 * (y.1 / y.0).powf(share)
                } else {
                    y.0 + (y.1 - y.0) * share
                }
            };
            let mut lines = vec![("oversubscribed".to_string(), at(0.1))];
            if let Some(c) = spec.cores {
                lines.push((format!("> {c} CPUs"), at(0.05)));
            }
            let style = ("sans-serif", 12).into_font().color(&BLACK);
            chart
                .draw_series(
                    lines
                        .into_iter()
                        .map(|(label, y)| Text::new(label, (from + 0.03, y), style.clone())),
                )
                .map_err(chart_err)?;
        }
    }
    for (i, method) in spec.methods.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let mut line: Vec<(f64, f64, f64, f64)> = spec
            .points
            .iter()
            .filter(|p| &p.method == method)
            .map(|p| (p.threads as f64, p.median, p.min, p.max))
            .collect();
        line.sort_by(|a, b| a.0.total_cmp(&b.0));
        if line.is_empty() {
            continue;
        }
        let series = chart
            .draw_series(LineSeries::new(
                line.iter().map(|&(x, y, ..)| (x, y)),
                color.stroke_width(2),
            ))
            .map_err(chart_err)?;
        if text {
            series.label(method.as_str()).legend(move |(x, y)| {
                PathElement::new([(x, y), (x + 16, y)], color.stroke_width(3))
            });
        }
        chart
            .draw_series(
                line.iter()
                    .map(|&(x, y, ..)| Circle::new((x, y), 3, color.filled())),
            )
            .map_err(chart_err)?;
        chart
            .draw_series(
                line.iter()
                    .filter(|p| spec.oversubscribed.contains(&(p.0 as usize)))
                    .map(|&(x, y, ..)| Cross::new((x, y), 6, color.stroke_width(2))),
            )
            .map_err(chart_err)?;
        chart
            .draw_series(
                line.iter().map(|&(x, _, lo, hi)| {
                    PathElement::new([(x, lo), (x, hi)], color.stroke_width(1))
                }),
            )
            .map_err(chart_err)?;
    }
    if text {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(chart_err)?;
    }
    Ok(())
}
