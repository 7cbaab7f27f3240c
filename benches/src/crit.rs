//! What every criterion bench file of the workspace shares: its [`Criterion`] configuration
//! ([`config`]), thread-count panels ([`panel`], [`bench_threads`]) whose [`Panel::finish`]
//! draws the group's scaling chart (Mops/s against threads, [`crate::scaling`]), the
//! default-or-full switch ([`full`]) and the closing lines that say where the charts and the
//! report are ([`finish`]).
//!
//! # Why throughput is counted in elements of 1,000 operations per thread
//!
//! Criterion draws a group's throughput-against-input line chart only when every benchmark of
//! the group has a throughput and the throughputs differ; the chart's x axis *is* the
//! throughput's element count. So a panel whose x axis is the thread count gives the benchmark
//! at N threads `Throughput::Elements(N)`, and one iteration runs [`OPS_PER_ELEMENT`] operations
//! on each of the N threads. Then an element is 1,000 operations, and criterion's
//! `Kelem/s` reads as **Mops/s** (`elem/s` as kops/s). A fixed total per iteration (the earlier
//! `Throughput::Elements(40_000)` for every thread count) gives every benchmark the same x and
//! criterion draws no line at all.
//!
//! # Iteration length
//!
//! [`bench_threads`] hands criterion's whole iteration count to one run: `iters` iterations are
//! one run of N threads with `iters * 1000` operations each, timed from the earliest worker's
//! start to the latest worker's end. Groups use flat sampling, so a sample lasts about
//! `measurement_time / sample_size` (100 ms by default): far longer than a scheduler slice, so
//! oversubscribed points (more threads than CPUs) interleave their threads instead of running
//! them one after another.

use std::cell::Cell;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, SystemTime};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, Throughput};

/// Operations each thread runs per criterion iteration: one throughput element per thread.
pub const OPS_PER_ELEMENT: u64 = 1_000;

/// Bootstrap resamples per benchmark (criterion's default is 100,000).
///
/// Criterion draws a kernel density estimate of every bootstrap distribution (mean, median,
/// standard deviation, MAD, and the changes against the previous run) at 500 points: with
/// 100,000 resamples that is about 50 million `exp` calls per plot, and it took most of each
/// benchmark's time (perf: about 70% of a bench binary's CPU time; a plain `cargo bench` took
/// 4.4 s per benchmark against 1.3 s of warm-up and measurement, and takes 1.8 s with 10,000).
/// 10,000 resamples of 10 samples still give confidence bounds whose bootstrap error is far
/// below the run-to-run noise of these benchmarks.
pub const NRESAMPLES: usize = 10_000;

/// The environment variable that selects the full sweep (every panel, more thread counts)
/// instead of the default set (each figure's key panels): `BENCH_FULL=1 cargo bench`.
pub const FULL_ENV: &str = "BENCH_FULL";

/// The criterion configuration every bench file of the workspace uses; call it instead of
/// `Criterion::default()`.
///
/// It registers the shipped font first (criterion's report writer panics without one when
/// plotters' `ab_glyph` backend is on, which this package turns on), then sets 10 samples,
/// 0.3 s warm-up, 1 s measurement and [`NRESAMPLES`] bootstrap resamples per benchmark.
/// Command-line options (`--quick`, `--sample-size`, `--nresamples`, a filter, ...) still
/// override these, as with `criterion_group!`.
///
/// # Examples
///
/// ```
/// let c = benches::crit::config();
/// # drop(c);
/// ```
pub fn config() -> Criterion {
    crate::chart::load_font();
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .nresamples(NRESAMPLES)
}

/// Whether the full sweep was asked for ([`FULL_ENV`] set to anything but `0` or empty).
///
/// # Examples
///
/// ```
/// // Not set in doctests.
/// assert_eq!(benches::crit::full(), std::env::var_os("BENCH_FULL").is_some_and(|v| !v.is_empty() && v != "0"));
/// ```
pub fn full() -> bool {
    std::env::var_os(FULL_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Whether the bench binary runs in criterion's test mode (`cargo test --benches`: no
/// `--bench` argument), where every benchmark runs once; bench files use smoke sizes then.
///
/// # Examples
///
/// ```
/// assert!(benches::crit::test_mode()); // doctests pass no `--bench`
/// ```
pub fn test_mode() -> bool {
    !std::env::args().any(|a| a == "--bench")
}

/// The thread counts of a panel: 1, 2 and 4 by default; 1, 2, 4 and 8 with [`full`].
///
/// # Examples
///
/// ```
/// assert!(benches::crit::threads().starts_with(&[1, 2, 4]));
/// ```
pub fn threads() -> Vec<usize> {
    if full() {
        vec![1, 2, 4, 8]
    } else {
        vec![1, 2, 4]
    }
}

/// One benchmark group (a figure panel) whose benchmarks are thread counts: criterion's group
/// plus what [`Panel::finish`] needs to draw the group's scaling chart. Make one with [`panel`],
/// add benchmarks with [`bench_threads`], end it with [`Panel::finish`].
pub struct Panel<'c> {
    group: BenchmarkGroup<'c, WallTime>,
    name: String,
    started: SystemTime,
    benchmarks: Vec<Entry>,
}

/// One benchmark of a [`Panel`]: method, threads, CPUs, criterion's value label, and whether
/// criterion ran it (a filter skips the others).
struct Entry {
    method: String,
    threads: usize,
    cpus: usize,
    label: String,
    ran: Rc<Cell<bool>>,
}

impl std::fmt::Debug for Panel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Panel")
            .field("name", &self.name)
            .field("benchmarks", &self.benchmarks.len())
            .finish_non_exhaustive()
    }
}

/// A benchmark group for one figure panel: flat sampling (see the module docs). Add one
/// benchmark per (method, thread count) with [`bench_threads`], then call [`Panel::finish`].
///
/// # Examples
///
/// ```no_run
/// let mut c = benches::crit::config();
/// let g = benches::crit::panel(&mut c, "example/panel");
/// g.finish();
/// ```
pub fn panel(c: &mut Criterion, name: impl Into<String>) -> Panel<'_> {
    let name = name.into();
    let mut group = c.benchmark_group(name.clone());
    group.sampling_mode(SamplingMode::Flat);
    Panel {
        group,
        name,
        started: SystemTime::now(),
        benchmarks: Vec::new(),
    }
}

impl Panel<'_> {
    /// Ends criterion's group, then (in a real `cargo bench` run, not test mode) draws the
    /// group's scaling chart from the estimates criterion saved for it in this run: throughput
    /// in Mops/s against threads, one line per method, oversubscribed thread counts marked;
    /// into [`crate::scaling::dir`] (`<group>.svg` and `<group>.csv`, see
    /// [`crate::scaling::write_group`]). Benchmarks a filter skipped are left out; a group with
    /// none measured draws nothing. A chart that cannot be written is reported on stderr, not
    /// fatal: the measurements are in criterion's report either way.
    ///
    /// # Examples
    ///
    /// See [`panel`].
    pub fn finish(self) {
        self.group.finish();
        if test_mode() {
            return;
        }
        let report = report_dir();
        let mut methods: Vec<String> = Vec::new();
        let mut points = Vec::new();
        let mut cores = usize::MAX;
        for b in self.benchmarks.iter().filter(|b| b.ran.get()) {
            let id = (self.name.as_str(), b.method.as_str(), b.label.as_str());
            let ops = b.threads as u64 * OPS_PER_ELEMENT;
            match crate::scaling::criterion_point(&report, id, b.threads, ops, self.started) {
                Some(p) => {
                    if !methods.contains(&b.method) {
                        methods.push(b.method.clone());
                    }
                    cores = cores.min(b.cpus);
                    points.push(p);
                }
                None => eprintln!(
                    "scaling chart: no estimate of {}/{}/{} saved by criterion in this run \
                     (--discard-baseline or --load-baseline save none); left out",
                    id.0, id.1, id.2
                ),
            }
        }
        if points.is_empty() {
            return;
        }
        let dir = crate::scaling::dir();
        match crate::scaling::write_group(&dir, &self.name, &points, &methods, cores) {
            Ok(svg) => println!("scaling chart: {}", svg.display()),
            Err(e) => eprintln!("scaling chart of {} not written: {e}", self.name),
        }
    }
}

/// The parameter label of a thread count: `4-oversubscribed` when it exceeds `cpus`.
///
/// # Examples
///
/// ```
/// assert_eq!(benches::crit::thread_label(2, 2), "2");
/// assert_eq!(benches::crit::thread_label(4, 2), "4-oversubscribed");
/// ```
pub fn thread_label(threads: usize, cpus: usize) -> String {
    if threads > cpus {
        format!("{threads}-oversubscribed")
    } else {
        threads.to_string()
    }
}

/// Adds the benchmark `method` at `threads` threads to `panel`: throughput `threads` elements
/// per iteration (x = threads in criterion's line chart; `Kelem/s` = Mops/s), parameter label
/// from [`thread_label`]. `run(threads, ops_per_thread)` must run exactly `threads` threads of
/// `ops_per_thread` operations each on a structure in the state every sample starts from, and
/// return the time from the earliest worker's start to the latest worker's end (setup, such as
/// building a fresh structure, outside it).
///
/// # Panics
///
/// When `run` fails: a benchmark that cannot run must not report a number.
///
/// # Examples
///
/// ```no_run
/// use std::time::{Duration, Instant};
///
/// let mut c = benches::crit::config();
/// let mut g = benches::crit::panel(&mut c, "example/spin");
/// benches::crit::bench_threads(&mut g, "spin", 1, 2, |_threads, ops| {
///     let t0 = Instant::now();
///     for i in 0..ops {
///         std::hint::black_box(i);
///     }
///     Ok::<Duration, std::convert::Infallible>(t0.elapsed())
/// });
/// g.finish();
/// ```
pub fn bench_threads<E: std::fmt::Debug>(
    panel: &mut Panel<'_>,
    method: &str,
    threads: usize,
    cpus: usize,
    mut run: impl FnMut(usize, u64) -> Result<Duration, E>,
) {
    let label = thread_label(threads, cpus);
    let ran = Rc::new(Cell::new(false));
    panel.benchmarks.push(Entry {
        method: method.to_string(),
        threads,
        cpus,
        label: label.clone(),
        ran: Rc::clone(&ran),
    });
    panel.group.throughput(Throughput::Elements(threads as u64));
    let id = BenchmarkId::new(method, label);
    panel.group.bench_function(id, |b| {
        ran.set(true);
        b.iter_custom(|iters| match run(threads, iters * OPS_PER_ELEMENT) {
            Ok(elapsed) => elapsed,
            Err(e) => panic!("benchmark {method} at {threads} threads failed: {e:?}"),
        })
    });
}

/// Where criterion writes its HTML report: `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`,
/// else the `criterion` folder of the target directory this bench binary was built in (its
/// path is `<target>/<profile>/deps/<bench>`), else `target/criterion`; the same places
/// criterion itself looks, in the same order, except that it asks `cargo metadata` where this
/// looks at the binary's path.
///
/// # Examples
///
/// ```
/// assert!(benches::crit::report_dir().ends_with("criterion"));
/// ```
pub fn report_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(target).join("criterion");
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.parent()?.join("criterion")))
        .unwrap_or_else(|| PathBuf::from("target/criterion"))
}

/// Ends a bench binary: criterion's final summary, then (in a real `cargo bench` run, not test
/// mode) the scaling charts' index page ([`crate::scaling::write_index`]) and where the charts
/// and criterion's report are.
///
/// # Examples
///
/// ```no_run
/// let c = benches::crit::config().configure_from_args();
/// // ... benchmarks ...
/// benches::crit::finish(&c);
/// ```
pub fn finish(c: &Criterion) {
    c.final_summary();
    if test_mode() {
        return;
    }
    let dir = crate::scaling::dir();
    if dir.is_dir() {
        match crate::scaling::write_index(&dir) {
            Ok(page) => println!(
                "scaling charts (Mops/s against threads, one line per method, one chart per \
                 group): {}",
                page.display()
            ),
            Err(e) => eprintln!("scaling index not written: {e}"),
        }
    }
    let index = report_dir().join("report").join("index.html");
    println!(
        "criterion report: {} (per group: {}/<group>/report/index.html; throughput: 1 element \
         = 1,000 operations, so Kelem/s is Mops/s and elem/s is kops/s)",
        index.display(),
        report_dir().display()
    );
}
