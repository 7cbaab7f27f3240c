//! PNG charts (plotters, bitmap backend): throughput against threads, one line per method, one
//! panel per workload setting of a figure.
//!
//! Text needs a font; plotters' `ab_glyph` backend has none built in, so [`load_font`]
//! registers the one this package ships (DejaVu Sans Mono, Bitstream Vera licence, in
//! `benches/fonts/`, compiled into the binary): charts, and criterion's HTML report, have text
//! on a machine with no system fonts at all.

use std::path::Path;
use std::sync::OnceLock;

use plotters::prelude::*;

use crate::report::Summary;
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

/// Draws `figure` of `summary` into the PNG file `path`: one panel per workload setting, x =
/// threads, y = median Mops/s, one line per method, min-max as a vertical bar.
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
        let mine: Vec<_> = points.iter().filter(|p| &p.panel == panel).collect();
        let max_threads = mine.iter().map(|p| p.threads).max().unwrap_or(1);
        let max_y = mine.iter().map(|p| p.max).fold(0.0, f64::max).max(1e-3) * 1.1;
        let mut builder = ChartBuilder::on(area);
        builder.margin(10);
        if text {
            builder
                .caption(panel, ("sans-serif", 15))
                .x_label_area_size(30)
                .y_label_area_size(45);
        }
        let mut chart = builder
            .build_cartesian_2d(0.5f64..max_threads as f64 + 0.5, 0.0..max_y)
            .map_err(chart_err)?;
        let mut mesh = chart.configure_mesh();
        if text {
            mesh.x_desc("threads")
                .y_desc("Mops/s")
                .x_labels(max_threads + 1)
                .x_label_formatter(&|x| format!("{x:.0}"));
        } else {
            mesh.x_labels(0).y_labels(0);
        }
        mesh.draw().map_err(chart_err)?;
        for (i, method) in methods.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let mut line: Vec<(f64, f64, f64, f64)> = mine
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
                .draw_series(line.iter().map(|&(x, _, lo, hi)| {
                    PathElement::new([(x, lo), (x, hi)], color.stroke_width(1))
                }))
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
    }
    root.present().map_err(chart_err)?;
    Ok(())
}
