//! The scaling chart writer: an SVG whose x axis is threads, one series per method, the
//! oversubscribed thread counts marked, and a log y axis where methods are orders of magnitude
//! apart; the index page lists every chart.

use benches::report::{Row, Throughput};
use benches::scaling;

fn point(method: &str, threads: usize, mops: f64) -> Throughput {
    Throughput {
        panel: String::new(),
        threads,
        method: method.into(),
        median: mops,
        min: mops * 0.9,
        max: mops * 1.1,
    }
}

/// Three methods at 1, 2 and 4 threads; Izraelevitz about 100x slower than the others.
fn synthetic() -> (Vec<Throughput>, Vec<String>) {
    let mut points = Vec::new();
    for t in [1, 2, 4] {
        points.push(point("volatile", t, 10.0 * t as f64));
        points.push(point("mirror", t, 5.0 * t as f64));
        points.push(point("izraelevitz", t, 0.1 * t as f64));
    }
    let methods = ["volatile", "mirror", "izraelevitz"]
        .map(String::from)
        .to_vec();
    (points, methods)
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("benches-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The crossed points of an SVG chart: each cross is two 2-pixel `<line>`s (the mesh's lines
/// are 1 pixel wide; series, bars and legend are `<polyline>`s).
fn crosses(svg: &str) -> usize {
    svg.split("<line")
        .skip(1)
        .filter(|l| {
            l.split('>')
                .next()
                .is_some_and(|a| a.contains("stroke-width=\"2\""))
        })
        .count()
        / 2
}

/// The `<text>` elements of an SVG file, in order.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            Some(
                t.split_once('>')?
                    .1
                    .split_once("</text>")?
                    .0
                    .trim()
                    .to_string(),
            )
        })
        .collect()
}

#[test]
fn chart_has_threads_on_x_one_series_per_method_and_marks_oversubscription() {
    let dir = temp_dir("scaling-over");
    let (points, methods) = synthetic();
    let svg = scaling::write_group(&dir, "mirror_fig6/list_80_10_10", &points, &methods, 2)
        .expect("chart written");
    assert_eq!(svg, dir.join("mirror_fig6_list_80_10_10.svg"));
    let svg = std::fs::read_to_string(&svg).expect("svg");
    // One crossed point per method, at 4 threads.
    assert_eq!(crosses(&svg), 3);
    let text = texts(&svg);
    assert!(
        text.iter().any(|t| t == "threads"),
        "x axis label: {text:?}"
    );
    for m in &methods {
        assert_eq!(
            text.iter().filter(|t| *t == m).count(),
            1,
            "one legend entry for {m}"
        );
    }
    // The x ticks are the thread counts, not criterion's 1.5 / 2.5 / 3.5.
    for t in ["1", "2", "4"] {
        assert!(text.iter().any(|x| x == t), "tick {t}: {text:?}");
    }
    assert!(text.iter().all(|x| x != "1.5" && x != "2.5"), "{text:?}");
    // 4 threads on 2 CPUs is oversubscribed.
    assert!(text.iter().any(|t| t == "oversubscribed"), "{text:?}");
    assert!(text.iter().any(|t| t == "&gt; 2 CPUs"), "{text:?}");
    // 100x between methods: a log axis, so izraelevitz does not sit at zero.
    assert!(text.iter().any(|t| t == "Mops/s (log scale)"), "{text:?}");
    // The CSV holds every point, oversubscribed ones flagged.
    let csv = std::fs::read_to_string(dir.join("mirror_fig6_list_80_10_10.csv")).expect("csv");
    assert_eq!(csv.lines().count(), 1 + 9);
    assert_eq!(csv.lines().filter(|l| l.contains(",4,true,")).count(), 3);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn no_oversubscribed_mark_within_the_cpus_and_linear_axis_for_close_methods() {
    let dir = temp_dir("scaling-fits");
    let points: Vec<Throughput> = [1, 2, 4]
        .into_iter()
        .flat_map(|t| [point("NR", t, 3.0 * t as f64), point("SL", t, 2.0)])
        .collect();
    let methods = ["NR", "SL"].map(String::from).to_vec();
    let svg = scaling::write_group(&dir, "hashmap/10% writes", &points, &methods, 4)
        .expect("chart written");
    let svg = std::fs::read_to_string(&svg).expect("svg");
    assert_eq!(crosses(&svg), 0);
    let text = texts(&svg);
    assert!(
        text.iter().all(|t| !t.contains("oversubscribed")),
        "{text:?}"
    );
    assert!(text.iter().any(|t| t == "Mops/s"), "{text:?}");
    assert!(text.iter().any(|t| t == "threads"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sweep_rows_give_one_chart_per_panel_and_an_index() {
    let dir = temp_dir("scaling-rows");
    let mut rows = Vec::new();
    for (method, mops) in [("NR", 4.0), ("SL", 1.0)] {
        for threads in [1, 2, 3] {
            let mut r = Row::example();
            r.method = method.into();
            r.threads = threads;
            r.cores = 2;
            r.oversubscribed = threads > 2;
            r.mops = mops * threads as f64;
            rows.push(r);
        }
    }
    let charts = scaling::write_rows(&rows, &dir).expect("charts written");
    assert_eq!(charts, [dir.join("hashmap_10_writes.svg")]);
    let text = texts(&std::fs::read_to_string(&charts[0]).expect("svg"));
    assert!(text.iter().any(|t| t == "NR") && text.iter().any(|t| t == "SL"));
    assert!(text.iter().any(|t| t == "oversubscribed"), "{text:?}");
    let index = std::fs::read_to_string(dir.join("index.html")).expect("index");
    assert!(
        index.contains("<img src=\"hashmap_10_writes.svg\""),
        "{index}"
    );
    assert!(index.contains("hashmap_10_writes.csv"));
    let _ = std::fs::remove_dir_all(&dir);
}
