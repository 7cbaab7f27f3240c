//! Results: the machine description, CSV rows, summaries of ratios, and charts.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::BenchError;

/// The setting every result is recorded with (`BENCHMARKS.md`: print the setting).
///
/// # Examples
///
/// ```
/// let m = benches::report::Machine::detect()?;
/// assert!(m.cores >= 1);
/// assert!(m.numa_nodes >= 1);
/// # Ok::<(), benches::BenchError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    /// CPUs this process may run on.
    pub cores: usize,
    /// NUMA nodes of the hardware topology.
    pub numa_nodes: usize,
    /// `model name` from `/proc/cpuinfo` (`unknown` elsewhere).
    pub cpu_model: String,
    /// `git describe`-style commit of the code measured (`unknown` outside a checkout), with
    /// `-dirty` when the working tree had changes.
    pub git: String,
}

impl Machine {
    /// Reads the machine's description.
    ///
    /// # Errors
    ///
    /// [`BenchError::Topology`] when the CPUs cannot be discovered.
    ///
    /// # Examples
    ///
    /// See [`Machine`].
    pub fn detect() -> Result<Self, BenchError> {
        let hw = nr_core::Topology::detect_hardware()?;
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        Ok(Self {
            cores: hw.num_cpus(),
            numa_nodes: hw.num_nodes(),
            cpu_model,
            git: git_version(),
        })
    }
}

fn git_version() -> String {
    let run = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match run(&["rev-parse", "--short=12", "HEAD"]) {
        Some(hash) => {
            let dirty = run(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{hash}-dirty")
            } else {
                hash
            }
        }
        None => "unknown".into(),
    }
}

/// One measured run: a CSV row.
///
/// # Examples
///
/// ```
/// use benches::report::Row;
///
/// let row = Row::example();
/// let line = row.to_csv();
/// assert_eq!(Row::parse(&line)?, row);
/// assert_eq!(line.split(',').count(), Row::HEADER.split(',').count());
/// # Ok::<(), benches::BenchError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Figure name (`hashmap`, `pq-skiplist`, ...).
    pub figure: String,
    /// Panel within the figure (one workload setting).
    pub panel: String,
    /// Method name.
    pub method: String,
    /// Threads that ran.
    pub threads: usize,
    /// Whether `threads` exceeded the CPUs available.
    pub oversubscribed: bool,
    /// Repetition index (methods are interleaved within one repetition).
    pub rep: usize,
    /// Operations completed.
    pub ops: u64,
    /// Seconds from start barrier to the last thread's end.
    pub elapsed_s: f64,
    /// Millions of operations per second.
    pub mops: f64,
    /// Copies of the structure the method keeps (NR replicas).
    pub replicas: usize,
    /// Structure size.
    pub size: String,
    /// Operation mix.
    pub mix: String,
    /// Key distribution.
    pub distribution: String,
    /// Run seed.
    pub seed: u64,
    /// Requested duration in seconds (0 for fixed-operation runs).
    pub duration_s: f64,
    /// CPUs available.
    pub cores: usize,
    /// Hardware NUMA nodes.
    pub numa_nodes: usize,
    /// CPU model.
    pub cpu_model: String,
    /// Topology threads were pinned by (`sysfs`, `virtual 2 over sysfs`, ...).
    pub topology: String,
    /// Code version.
    pub git: String,
}

impl Row {
    /// The CSV header, in field order.
    pub const HEADER: &'static str = "figure,panel,method,threads,oversubscribed,rep,ops,\
elapsed_s,mops,replicas,size,mix,distribution,seed,duration_s,cores,numa_nodes,cpu_model,\
topology,git";

    /// A row with plausible values (for examples and tests).
    ///
    /// # Examples
    ///
    /// See [`Row`].
    pub fn example() -> Self {
        Self {
            figure: "hashmap".into(),
            panel: "10% writes".into(),
            method: "NR".into(),
            threads: 4,
            oversubscribed: true,
            rep: 0,
            ops: 1234,
            elapsed_s: 0.5,
            mops: 0.002468,
            replicas: 2,
            size: "10000 keys".into(),
            mix: "10% writes".into(),
            distribution: "uniform".into(),
            seed: 42,
            duration_s: 0.5,
            cores: 2,
            numa_nodes: 1,
            cpu_model: "Some CPU @ 2.0GHz".into(),
            topology: "virtual 2 over sysfs".into(),
            git: "0123456789ab-dirty".into(),
        }
    }

    /// The row as one CSV line (no newline). Text fields have commas and line breaks replaced
    /// by `;` and spaces, so no quoting is needed.
    ///
    /// # Examples
    ///
    /// See [`Row`].
    pub fn to_csv(&self) -> String {
        let t = |s: &str| s.replace(',', ";").replace(['\n', '\r'], " ");
        format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            t(&self.figure),
            t(&self.panel),
            t(&self.method),
            self.threads,
            self.oversubscribed,
            self.rep,
            self.ops,
            self.elapsed_s,
            self.mops,
            self.replicas,
            t(&self.size),
            t(&self.mix),
            t(&self.distribution),
            self.seed,
            self.duration_s,
            self.cores,
            self.numa_nodes,
            t(&self.cpu_model),
            t(&self.topology),
            t(&self.git),
        )
    }

    /// Parses a line written by [`to_csv`](Self::to_csv).
    ///
    /// # Errors
    ///
    /// [`BenchError::Parse`] naming the field that is missing or malformed.
    ///
    /// # Examples
    ///
    /// See [`Row`].
    pub fn parse(line: &str) -> Result<Self, BenchError> {
        let f: Vec<&str> = line.trim_end().split(',').collect();
        let names: Vec<&str> = Self::HEADER.split(',').collect();
        if f.len() != names.len() {
            return Err(BenchError::Parse(format!(
                "{} fields, expected {}",
                f.len(),
                names.len()
            )));
        }
        fn num<T: std::str::FromStr>(v: &str, name: &str) -> Result<T, BenchError> {
            v.parse()
                .map_err(|_| BenchError::Parse(format!("field `{name}`: `{v}` is not a number")))
        }
        Ok(Self {
            figure: f[0].into(),
            panel: f[1].into(),
            method: f[2].into(),
            threads: num(f[3], names[3])?,
            oversubscribed: f[4]
                .parse()
                .map_err(|_| BenchError::Parse(format!("field `oversubscribed`: `{}`", f[4])))?,
            rep: num(f[5], names[5])?,
            ops: num(f[6], names[6])?,
            elapsed_s: num(f[7], names[7])?,
            mops: num(f[8], names[8])?,
            replicas: num(f[9], names[9])?,
            size: f[10].into(),
            mix: f[11].into(),
            distribution: f[12].into(),
            seed: num(f[13], names[13])?,
            duration_s: num(f[14], names[14])?,
            cores: num(f[15], names[15])?,
            numa_nodes: num(f[16], names[16])?,
            cpu_model: f[17].into(),
            topology: f[18].into(),
            git: f[19].into(),
        })
    }
}

/// Median, minimum and maximum of a non-empty list (`None` when empty).
///
/// # Examples
///
/// ```
/// assert_eq!(benches::report::spread(&[3.0, 1.0, 2.0]), Some((2.0, 1.0, 3.0)));
/// assert_eq!(benches::report::spread(&[]), None);
/// ```
pub fn spread(values: &[f64]) -> Option<(f64, f64, f64)> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let (min, max) = (*v.first()?, *v.last()?);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some((median, min, max))
}

/// Key of one point of a figure: (panel index in first-seen order, threads).
type Point = (usize, usize);
/// Mops/s of each repetition, as (repetition, Mops/s).
type Reps = Vec<(usize, f64)>;
/// figure -> (panel, threads) -> method -> repetitions.
type ByFigure = BTreeMap<String, BTreeMap<Point, BTreeMap<String, Reps>>>;

/// One point of a figure's chart: a method's throughput at a thread count.
///
/// # Examples
///
/// ```
/// let s = benches::report::Summary::from_rows(&[benches::report::Row::example()]);
/// let p = &s.throughput("hashmap")[0];
/// assert_eq!((p.method.as_str(), p.threads), ("NR", 4));
/// assert!(p.min <= p.median && p.median <= p.max);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Throughput {
    /// Panel (workload setting).
    pub panel: String,
    /// Threads.
    pub threads: usize,
    /// Method.
    pub method: String,
    /// The central Mops/s: the median over repetitions in a runner sweep; criterion's own
    /// estimate (the one its report prints) in a `cargo bench` scaling chart.
    pub median: f64,
    /// Lowest Mops/s (a sweep's slowest repetition; criterion's lower confidence bound).
    pub min: f64,
    /// Highest Mops/s (a sweep's fastest repetition; criterion's upper confidence bound).
    pub max: f64,
}

/// Throughput per (panel, threads) per method, and the per-repetition NR/method ratios.
///
/// # Examples
///
/// ```
/// use benches::report::{Row, Summary};
///
/// let mut nr = Row::example();
/// let mut sl = Row::example();
/// sl.method = "SL".into();
/// sl.mops = nr.mops / 2.0;
/// let s = Summary::from_rows(&[nr, sl]);
/// assert!(s.table("hashmap").contains("2.00x"));
/// ```
#[derive(Debug, Default)]
pub struct Summary {
    /// figure -> (panel, threads) -> method -> Mops/s per repetition.
    mops: ByFigure,
    /// Method order as first seen, per figure.
    methods: BTreeMap<String, Vec<String>>,
    /// Panel order as first seen, per figure.
    panels: BTreeMap<String, Vec<String>>,
    /// Thread counts that ran oversubscribed (more threads than CPUs), per figure.
    oversubscribed: BTreeMap<String, Vec<usize>>,
}

impl Summary {
    /// Gathers rows.
    ///
    /// # Examples
    ///
    /// See [`Summary`].
    pub fn from_rows(rows: &[Row]) -> Self {
        let mut s = Self::default();
        for r in rows {
            s.add(r);
        }
        s
    }

    /// Adds one row.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut s = benches::report::Summary::default();
    /// s.add(&benches::report::Row::example());
    /// assert_eq!(s.figures(), ["hashmap"]);
    /// ```
    pub fn add(&mut self, r: &Row) {
        if r.oversubscribed {
            let over = self.oversubscribed.entry(r.figure.clone()).or_default();
            if !over.contains(&r.threads) {
                over.push(r.threads);
            }
        }
        let order = self.methods.entry(r.figure.clone()).or_default();
        if !order.contains(&r.method) {
            order.push(r.method.clone());
        }
        let panels = self.panels.entry(r.figure.clone()).or_default();
        let panel = match panels.iter().position(|p| p == &r.panel) {
            Some(i) => i,
            None => {
                panels.push(r.panel.clone());
                panels.len() - 1
            }
        };
        self.mops
            .entry(r.figure.clone())
            .or_default()
            .entry((panel, r.threads))
            .or_default()
            .entry(r.method.clone())
            .or_default()
            .push((r.rep, r.mops));
    }

    /// The figures seen, in name order.
    ///
    /// # Examples
    ///
    /// See [`Summary::add`].
    pub fn figures(&self) -> Vec<String> {
        self.mops.keys().cloned().collect()
    }

    fn panel_name(&self, figure: &str, index: usize) -> &str {
        self.panels
            .get(figure)
            .and_then(|p| p.get(index))
            .map_or("?", String::as_str)
    }

    /// The methods of `figure`, in the order first seen.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = benches::report::Summary::from_rows(&[benches::report::Row::example()]);
    /// assert_eq!(s.methods("hashmap"), ["NR"]);
    /// ```
    pub fn methods(&self, figure: &str) -> Vec<String> {
        self.methods.get(figure).cloned().unwrap_or_default()
    }

    /// The thread counts of `figure` that ran oversubscribed (more threads than CPUs), in the
    /// order first seen.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = benches::report::Summary::from_rows(&[benches::report::Row::example()]);
    /// assert_eq!(s.oversubscribed("hashmap"), [4]);
    /// ```
    pub fn oversubscribed(&self, figure: &str) -> Vec<usize> {
        self.oversubscribed.get(figure).cloned().unwrap_or_default()
    }

    /// Median, min and max Mops/s of every (panel, threads, method) of `figure`.
    ///
    /// # Examples
    ///
    /// See [`Throughput`].
    pub fn throughput(&self, figure: &str) -> Vec<Throughput> {
        let mut out = Vec::new();
        for ((panel, threads), by_method) in self.mops.get(figure).into_iter().flatten() {
            let panel = self.panel_name(figure, *panel);
            for (method, reps) in by_method {
                let v: Vec<f64> = reps.iter().map(|&(_, m)| m).collect();
                if let Some((median, min, max)) = spread(&v) {
                    out.push(Throughput {
                        panel: panel.to_string(),
                        threads: *threads,
                        method: method.clone(),
                        median,
                        min,
                        max,
                    });
                }
            }
        }
        out
    }

    /// How well the repetitions of `figure` agree: one line per (panel, threads), one column per
    /// method, each cell the highest over the lowest throughput of its repetitions (`1.00`:
    /// identical). Every run starts from a fresh structure, so repetitions should agree up to
    /// machine noise; a structure that aged across runs shows as a large spread.
    ///
    /// # Examples
    ///
    /// ```
    /// use benches::report::{Row, Summary};
    ///
    /// let mut a = Row::example();
    /// let mut b = Row::example();
    /// b.rep = 1;
    /// b.mops = a.mops * 1.25;
    /// assert!(Summary::from_rows(&[a, b]).agreement("hashmap").contains("1.25"));
    /// ```
    pub fn agreement(&self, figure: &str) -> String {
        let methods = self.methods(figure);
        let mut out = String::new();
        let _ = write!(out, "{:<22} {:>10}", "panel", "threads");
        for m in &methods {
            let _ = write!(out, " {m:>9}");
        }
        out.push('\n');
        for ((panel, threads), by_method) in self.mops.get(figure).into_iter().flatten() {
            let _ = write!(out, "{:<22} {threads:>10}", self.panel_name(figure, *panel));
            for m in &methods {
                let v: Vec<f64> = by_method
                    .get(m)
                    .map(|r| r.iter().map(|&(_, x)| x).collect())
                    .unwrap_or_default();
                let cell = match spread(&v) {
                    Some((_, lo, hi)) if lo > 0.0 => format!("{:.2}", hi / lo),
                    _ => "-".into(),
                };
                let _ = write!(out, " {cell:>9}");
            }
            out.push('\n');
        }
        out
    }

    /// The table of NR / method throughput ratios of `figure`: one line per (panel, threads),
    /// one column per method, each cell the median of the per-repetition ratios (methods run
    /// interleaved, so repetition `i` of NR and of a method ran side by side) and their min-max.
    /// Thread counts that ran oversubscribed say so (`4 (over)`: more threads than CPUs, so the
    /// point measures scheduling and waiting policy as much as the method).
    ///
    /// # Examples
    ///
    /// See [`Summary`].
    pub fn table(&self, figure: &str) -> String {
        let methods: Vec<String> = self
            .methods(figure)
            .into_iter()
            .filter(|m| m != "NR")
            .collect();
        let mut out = String::new();
        let _ = write!(out, "{:<22} {:>10}", "panel", "threads");
        for m in &methods {
            let _ = write!(out, " {:>22}", format!("NR/{m}"));
        }
        out.push('\n');
        for ((panel, threads), by_method) in self.mops.get(figure).into_iter().flatten() {
            let panel = self.panel_name(figure, *panel);
            let over = self
                .oversubscribed
                .get(figure)
                .is_some_and(|o| o.contains(threads));
            let t = if over {
                format!("{threads} (over)")
            } else {
                threads.to_string()
            };
            let _ = write!(out, "{panel:<22} {t:>10}");
            let nr = by_method.get("NR");
            for m in &methods {
                let cell = match (nr, by_method.get(m)) {
                    (Some(nr), Some(other)) => {
                        let ratios: Vec<f64> = nr
                            .iter()
                            .filter_map(|&(rep, a)| {
                                other
                                    .iter()
                                    .find(|&&(r, _)| r == rep)
                                    .filter(|&&(_, b)| b > 0.0)
                                    .map(|&(_, b)| a / b)
                            })
                            .collect();
                        match spread(&ratios) {
                            Some((med, lo, hi)) => format!("{med:.2}x ({lo:.2}-{hi:.2})"),
                            None => "-".into(),
                        }
                    }
                    _ => "-".into(),
                };
                let _ = write!(out, " {cell:>22}");
            }
            out.push('\n');
        }
        out
    }
}
