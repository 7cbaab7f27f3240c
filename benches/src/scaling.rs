//! Scaling charts: throughput (Mops/s) against threads, one line per method, one SVG per
//! benchmark group, and an index page that shows them all.
//!
//! `cargo bench` leaves them in [`dir`] (`target/scaling/` by default): `<group>.svg` and
//! `<group>.csv` per criterion group ([`crate::crit::Panel::finish`] draws them from the
//! estimates criterion saved for that group in the same run), and `index.html`
//! ([`write_index`]). A sweep of your own [`Workload`](crate::Workload) gets the same charts
//! from its rows with [`write_rows`].
//!
//! # Reading a chart
//!
//! x is the thread count, y the throughput in Mops/s: criterion's estimate with its confidence
//! interval as a bar in `cargo bench` charts, the median and min-max of the repetitions in
//! [`write_rows`] charts. The y axis is logarithmic (and says so) when the fastest point is
//! more than [`LOG_SCALE_RATIO`] times the slowest, so no method sits flat at zero. Thread
//! counts above the CPU count are oversubscribed: shaded, labelled, and their points crossed;
//! they measure the waiting policy as much as the method.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

pub use crate::chart::LOG_SCALE_RATIO;
use crate::report::{Row, Summary, Throughput};
use crate::BenchError;

/// Where the scaling charts go: `$CRITERION_HOME/scaling` when `CRITERION_HOME` is set, else
/// `scaling` beside criterion's report folder ([`crate::crit::report_dir`]), which is
/// `target/scaling` for a plain `cargo bench`.
///
/// # Examples
///
/// ```
/// assert!(benches::scaling::dir().ends_with("scaling"));
/// ```
pub fn dir() -> PathBuf {
    match std::env::var_os("CRITERION_HOME") {
        Some(home) => PathBuf::from(home).join("scaling"),
        None => crate::crit::report_dir().with_file_name("scaling"),
    }
}

/// The file stem of group `group`'s chart: every run of characters other than ASCII letters,
/// digits, `-`, `+` and `.` becomes one `_`.
///
/// # Examples
///
/// ```
/// assert_eq!(benches::scaling::file_stem("hashmap/10% writes"), "hashmap_10_writes");
/// assert_eq!(benches::scaling::file_stem("ladapa/write-only/zipf"), "ladapa_write-only_zipf");
/// ```
pub fn file_stem(group: &str) -> String {
    let mut out = String::new();
    for c in group.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.') {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out
}

/// Writes group `group`'s chart (`<stem>.svg`, [`crate::chart::scaling_svg`]) and its points
/// (`<stem>.csv`: `group,method,threads,oversubscribed,mops,mops_low,mops_high`) into `dir`;
/// returns the chart's path. Thread counts above `cores` are marked oversubscribed.
///
/// # Errors
///
/// [`BenchError::Io`] when `dir` or a file cannot be written; [`BenchError::Chart`] when
/// drawing fails.
///
/// # Examples
///
/// ```
/// use benches::report::Throughput;
///
/// let p = Throughput { panel: String::new(), threads: 1, method: "NR".into(), median: 2.0, min: 1.9, max: 2.1 };
/// let dir = std::env::temp_dir().join("benches-doc-scaling-group");
/// let svg = benches::scaling::write_group(&dir, "hashmap/10% writes", &[p], &["NR".into()], 2)?;
/// assert!(svg.ends_with("hashmap_10_writes.svg"));
/// assert!(dir.join("hashmap_10_writes.csv").exists());
/// # Ok::<(), benches::BenchError>(())
/// ```
pub fn write_group(
    dir: &Path,
    group: &str,
    points: &[Throughput],
    methods: &[String],
    cores: usize,
) -> Result<PathBuf, BenchError> {
    std::fs::create_dir_all(dir)?;
    let stem = file_stem(group);
    let svg = dir.join(format!("{stem}.svg"));
    crate::chart::scaling_svg(group, points, methods, cores, &svg)?;
    let mut csv = String::from("group,method,threads,oversubscribed,mops,mops_low,mops_high\n");
    for m in methods {
        for p in points.iter().filter(|p| &p.method == m) {
            let _ = writeln!(
                csv,
                "{},{},{},{},{:.6},{:.6},{:.6}",
                group.replace(',', ";"),
                m.replace(',', ";"),
                p.threads,
                p.threads > cores,
                p.median,
                p.min,
                p.max
            );
        }
    }
    std::fs::write(dir.join(format!("{stem}.csv")), csv)?;
    Ok(svg)
}

/// Writes `dir/index.html`: every chart in `dir` (`*.svg`, in name order) with a link to its
/// CSV file, and a link to criterion's report. Charts of groups that the last run did not
/// measure stay from the run that did (each chart's CSV has its numbers).
///
/// # Errors
///
/// [`BenchError::Io`] when `dir` cannot be read or the page cannot be written.
///
/// # Examples
///
/// ```
/// let dir = std::env::temp_dir().join("benches-doc-scaling-index");
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("a.svg"), "<svg/>")?;
/// let page = benches::scaling::write_index(&dir)?;
/// assert!(std::fs::read_to_string(page)?.contains("a.svg"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_index(dir: &Path) -> Result<PathBuf, BenchError> {
    let mut charts: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name.ends_with(".svg"))
        .collect();
    charts.sort();
    let criterion = crate::crit::report_dir().join("report").join("index.html");
    let mut html = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Scaling curves</title>\
         </head>\n<body style=\"font-family: sans-serif\">\n<h1>Scaling curves</h1>\n<p>One chart \
         per benchmark group: throughput in Mops/s against threads, one line per method. The \
         y axis is logarithmic where it says so (methods more than 10&times; apart). Shaded \
         thread counts with crossed points are oversubscribed (more threads than CPUs). Bars: \
         criterion's confidence interval (<code>cargo bench</code>) or the repetitions' \
         min-max (a sweep).</p>\n",
    );
    let _ = writeln!(
        html,
        "<p>Criterion's own report: <a href=\"file://{0}\">{0}</a></p>",
        criterion.display()
    );
    for svg in &charts {
        let stem = svg.trim_end_matches(".svg");
        let _ = writeln!(
            html,
            "<h2>{stem}</h2>\n<p><img src=\"{svg}\" alt=\"{stem}\"><br><a href=\"{stem}.csv\">\
             {stem}.csv</a></p>"
        );
    }
    html.push_str("</body></html>\n");
    let page = dir.join("index.html");
    std::fs::write(&page, html)?;
    Ok(page)
}

/// Writes the scaling charts of sweep rows (for example [`crate::sweep::Sweep::run_panel`]'s)
/// into `dir`: one chart per (figure, panel), named `<figure>/<panel>`, median and min-max of
/// the repetitions, oversubscribed where the rows say so; then [`write_index`]. Returns the
/// charts' paths.
///
/// # Errors
///
/// As [`write_group`] and [`write_index`].
///
/// # Examples
///
/// ```
/// use benches::report::Row;
///
/// let dir = std::env::temp_dir().join("benches-doc-scaling-rows");
/// let charts = benches::scaling::write_rows(&[Row::example()], &dir)?;
/// assert_eq!(charts, [dir.join("hashmap_10_writes.svg")]);
/// assert!(dir.join("index.html").exists());
/// # Ok::<(), benches::BenchError>(())
/// ```
pub fn write_rows(rows: &[Row], dir: &Path) -> Result<Vec<PathBuf>, BenchError> {
    let summary = Summary::from_rows(rows);
    let mut charts = Vec::new();
    for figure in summary.figures() {
        let methods = summary.methods(&figure);
        let points = summary.throughput(&figure);
        let over = summary.oversubscribed(&figure);
        // The CPU count the rows recorded; below the first oversubscribed thread count.
        let cores = rows
            .iter()
            .filter(|r| r.figure == figure)
            .map(|r| r.cores)
            .max()
            .unwrap_or(1)
            .min(over.iter().min().map_or(usize::MAX, |&t| t - 1));
        let mut panels: Vec<&str> = Vec::new();
        for p in &points {
            if !panels.contains(&p.panel.as_str()) {
                panels.push(&p.panel);
            }
        }
        for panel in panels {
            let mine: Vec<Throughput> = points
                .iter()
                .filter(|p| p.panel == panel)
                .cloned()
                .collect();
            let group = format!("{figure}/{panel}");
            charts.push(write_group(dir, &group, &mine, &methods, cores)?);
        }
    }
    write_index(dir)?;
    Ok(charts)
}

/// Criterion's directory name for one id component (its `make_filename_safe`: the characters
/// `?"/\*<>:|^` become `_`, then the name is cut to 64 bytes).
fn criterion_dir_name(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| if "?\"/\\*<>:|^".contains(c) { '_' } else { c })
        .collect();
    let mut end = out.len().min(64);
    while !out.is_char_boundary(end) {
        end -= 1;
    }
    out.truncate(end);
    out
}

/// The throughput criterion measured for benchmark `group/method/label` in this run: its
/// typical time per iteration (the slope where it fitted one, else the mean, as its report
/// prints) and that estimate's confidence interval, from `estimates.json` in the benchmark's
/// `new` folder under `report_dir`, for `ops_per_iter` operations per iteration. `None` when
/// criterion saved no estimate after `since` (a baseline it did not save, or a benchmark that
/// did not run) or the files are not criterion's.
pub(crate) fn criterion_point(
    report_dir: &Path,
    (group, method, label): (&str, &str, &str),
    threads: usize,
    ops_per_iter: u64,
    since: SystemTime,
) -> Option<Throughput> {
    let new = report_dir
        .join(criterion_dir_name(group))
        .join(criterion_dir_name(method))
        .join(criterion_dir_name(label))
        .join("new");
    let estimates = new.join("estimates.json");
    // One second of slack for file systems with coarse timestamps.
    let modified = std::fs::metadata(&estimates).ok()?.modified().ok()?;
    if modified + Duration::from_secs(1) < since {
        return None;
    }
    let id: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(new.join("benchmark.json")).ok()?).ok()?;
    if id.get("full_id")?.as_str()? != format!("{group}/{method}/{label}") {
        return None;
    }
    let e: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&estimates).ok()?).ok()?;
    let typical = match e.get("slope") {
        Some(s) if !s.is_null() => s,
        _ => e.get("mean")?,
    };
    let ns = |v: &serde_json::Value| v.as_f64().filter(|&x| x > 0.0);
    let point = ns(typical.get("point_estimate")?)?;
    let ci = typical.get("confidence_interval")?;
    let (lower, upper) = (ns(ci.get("lower_bound")?)?, ns(ci.get("upper_bound")?)?);
    // ops per ns x 1e3 = Mops/s; the shortest time is the highest throughput.
    let mops = |ns: f64| ops_per_iter as f64 / ns * 1e3;
    Some(Throughput {
        panel: group.to_string(),
        threads,
        method: method.to_string(),
        median: mops(point),
        min: mops(upper),
        max: mops(lower),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criterion_names_match_its_directories() {
        assert_eq!(
            criterion_dir_name("hashmap/10% writes"),
            "hashmap_10% writes"
        );
        assert_eq!(criterion_dir_name(&"x".repeat(70)).len(), 64);
    }

    #[test]
    fn reads_criterion_estimates_of_this_run_only() {
        let root = std::env::temp_dir().join(format!("benches-crit-point-{}", std::process::id()));
        let new = root.join("g_p").join("NR").join("2").join("new");
        std::fs::create_dir_all(&new).expect("dir");
        std::fs::write(new.join("benchmark.json"), r#"{"full_id":"g/p/NR/2"}"#).expect("write");
        let est = |lo: f64, pt: f64, hi: f64| {
            format!(
                r#"{{"point_estimate":{pt},"confidence_interval":{{"lower_bound":{lo},"upper_bound":{hi}}}}}"#
            )
        };
        std::fs::write(
            new.join("estimates.json"),
            format!(r#"{{"mean":{},"slope":null}}"#, est(1000.0, 2000.0, 4000.0)),
        )
        .expect("write");
        let before = SystemTime::now() - Duration::from_secs(60);
        let p = criterion_point(&root, ("g/p", "NR", "2"), 2, 2000, before).expect("a point");
        // 2,000 operations in 2,000 ns: 1,000 Mops/s; the interval's ends swap.
        assert_eq!((p.median, p.min, p.max), (1000.0, 500.0, 2000.0));
        // An estimate older than the run is not this run's.
        let later = SystemTime::now() + Duration::from_secs(60);
        assert!(criterion_point(&root, ("g/p", "NR", "2"), 2, 2000, later).is_none());
        // The slope, where criterion fitted one, is its typical estimate.
        std::fs::write(
            new.join("estimates.json"),
            format!(
                r#"{{"mean":{},"slope":{}}}"#,
                est(1000.0, 2000.0, 4000.0),
                est(100.0, 200.0, 400.0)
            ),
        )
        .expect("write");
        let p = criterion_point(&root, ("g/p", "NR", "2"), 2, 2000, before).expect("a point");
        assert_eq!(p.median, 10_000.0);
        // Another benchmark's files are not taken for this one.
        assert!(criterion_point(&root, ("g/p", "NR", "2"), 2, 2000, before).is_some());
        std::fs::write(new.join("benchmark.json"), r#"{"full_id":"g/p/SL/2"}"#).expect("write");
        assert!(criterion_point(&root, ("g/p", "NR", "2"), 2, 2000, before).is_none());
        let _ = std::fs::remove_dir_all(&root);
    }
}
