//! Results of the pcomb binaries in the runner's format: one [`Row`] per measured run (the
//! runner's CSV columns, every setting and the git hash on every row) followed by the flush
//! counts, a PNG chart ([`crate::chart::draw`]) and the repetition-agreement table
//! ([`Summary::agreement`]).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use nr_core::Topology;

use super::Outcome;
use crate::report::{Machine, Row, Summary};
use crate::{chart, BenchError};

/// The columns a pcomb CSV file adds after [`Row::HEADER`]: cache lines written back, ordering
/// fences and drains per operation (per pair for the structures), and the flush instruction
/// used.
pub const EXTRA_HEADER: &str = "pwbs_per_op,pfences_per_op,psyncs_per_op,flush";

/// The workload setting of one panel, recorded in each of its rows.
///
/// # Examples
///
/// See [`Record`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Panel {
    /// Panel name (`AtomicFloat`, `stack`, `heap-256`, ...).
    pub name: String,
    /// The object's size at the start of a run.
    pub size: String,
    /// The operations, and the local work between them.
    pub mix: String,
    /// Where the operations' values or keys come from.
    pub distribution: String,
}

/// The measured runs of one pcomb figure, as the runner's [`Row`]s plus flush counts.
///
/// # Examples
///
/// ```
/// use benches::pcomb_bench::record::{Panel, Record};
/// use benches::pcomb_bench::{atomic_float, FloatMethod};
///
/// let machine = benches::report::Machine::detect()?;
/// let topology = nr_core::Topology::detect()?;
/// let mut rec = Record::new("pcomb-atomicfloat", &machine, &topology, 7);
/// let panel = Panel {
///     name: "AtomicFloat".into(),
///     size: "1 value".into(),
///     mix: "v := v * k".into(),
///     distribution: "-".into(),
/// };
/// let reps = [atomic_float(FloatMethod::Mutex, 1, 100, 7)?, atomic_float(FloatMethod::Mutex, 1, 100, 7)?];
/// rec.add(&panel, "Mutex", 1, &reps);
/// let csv = rec.to_csv();
/// let mut lines = csv.lines();
/// assert!(lines.next().unwrap().ends_with("git,pwbs_per_op,pfences_per_op,psyncs_per_op,flush"));
/// assert_eq!(lines.count(), 2);
/// assert_eq!(rec.rows()[1].rep, 1);
/// assert!(rec.agreement().contains("Mutex"));
/// # Ok::<(), benches::BenchError>(())
/// ```
#[derive(Debug)]
pub struct Record {
    figure: String,
    machine: Machine,
    topology: String,
    seed: u64,
    flush: String,
    rows: Vec<(Row, Outcome)>,
}

impl Record {
    /// An empty record of `figure`, measured on `machine` with threads pinned by `topology`,
    /// runs seeded with `seed`.
    ///
    /// # Examples
    ///
    /// See [`Record`].
    pub fn new(figure: &str, machine: &Machine, topology: &Topology, seed: u64) -> Self {
        Self {
            figure: figure.into(),
            machine: machine.clone(),
            topology: topology.source().to_string(),
            seed,
            flush: format!("{:?}", pcomb::pmem::Hardware::new().kind()),
            rows: Vec::new(),
        }
    }

    /// Adds the repetitions `reps` (in order: repetition 0 first) of `method` at `threads`
    /// threads on `panel`.
    ///
    /// # Examples
    ///
    /// See [`Record`].
    pub fn add(&mut self, panel: &Panel, method: &str, threads: usize, reps: &[Outcome]) {
        for (rep, o) in reps.iter().enumerate() {
            let row = Row {
                figure: self.figure.clone(),
                panel: panel.name.clone(),
                method: method.into(),
                threads,
                oversubscribed: threads > self.machine.cores,
                rep,
                ops: o.ops,
                elapsed_s: o.elapsed.as_secs_f64(),
                mops: o.mops(),
                // One shared object per method: no replicas.
                replicas: 1,
                size: panel.size.clone(),
                mix: panel.mix.clone(),
                distribution: panel.distribution.clone(),
                seed: self.seed,
                // Fixed-operation runs.
                duration_s: 0.0,
                cores: self.machine.cores,
                numa_nodes: self.machine.numa_nodes,
                cpu_model: self.machine.cpu_model.clone(),
                topology: self.topology.clone(),
                git: self.machine.git.clone(),
            };
            self.rows.push((row, *o));
        }
    }

    /// The rows added so far.
    ///
    /// # Examples
    ///
    /// See [`Record`].
    pub fn rows(&self) -> Vec<Row> {
        self.rows.iter().map(|(r, _)| r.clone()).collect()
    }

    /// The CSV text: [`Row::HEADER`] and [`EXTRA_HEADER`], then one line per row.
    ///
    /// # Examples
    ///
    /// See [`Record`].
    pub fn to_csv(&self) -> String {
        let mut out = format!("{},{EXTRA_HEADER}\n", Row::HEADER);
        for (r, o) in &self.rows {
            out.push_str(&format!(
                "{},{},{},{},{}\n",
                r.to_csv(),
                o.pwbs,
                o.pfences,
                o.psyncs,
                self.flush
            ));
        }
        out
    }

    /// Writes `<dir>/<figure>.csv` and the chart `<dir>/<figure>.png` (one panel per workload
    /// setting, median with min-max per method; `subtitle` under the title); returns both paths.
    ///
    /// # Errors
    ///
    /// [`BenchError::Io`] when the directory or a file cannot be written; [`BenchError::Chart`]
    /// when drawing fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let rec: benches::pcomb_bench::record::Record = todo!();
    /// let (csv, png) = rec.write(std::path::Path::new("target/bench-results"), "median of 3")?;
    /// # Ok::<(), benches::BenchError>(())
    /// ```
    pub fn write(&self, dir: &Path, subtitle: &str) -> Result<(PathBuf, PathBuf), BenchError> {
        std::fs::create_dir_all(dir)?;
        let csv = dir.join(format!("{}.csv", self.figure));
        let mut f = std::io::BufWriter::new(std::fs::File::create(&csv)?);
        f.write_all(self.to_csv().as_bytes())?;
        f.flush()?;
        let png = dir.join(format!("{}.png", self.figure));
        // Short: a one-panel chart is 480 pixels wide (the CPU model is in every CSV row).
        let subtitle = format!("{} CPUs, {subtitle}", self.machine.cores);
        chart::draw(&self.summary(), &self.figure, &subtitle, &png)?;
        Ok((csv, png))
    }

    /// The repetition-agreement table of the rows so far ([`Summary::agreement`]: highest over
    /// lowest throughput of each point's repetitions).
    ///
    /// # Examples
    ///
    /// See [`Record`].
    pub fn agreement(&self) -> String {
        self.summary().agreement(&self.figure)
    }

    fn summary(&self) -> Summary {
        Summary::from_rows(&self.rows())
    }
}
