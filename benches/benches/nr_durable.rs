//! Criterion benches of durable NR (issue 20): one group per write share, `nr-durable-10` and
//! `nr-durable-100` (10% and 100% writes), one benchmark per method (`mutex-wal`,
//! `volatile-nr`, `durable-file`, `durable-pmem`, `durable-pmem-eadr`; see
//! `benches::durable_bench`) and thread count (1, 2, 4; 8 with `BENCH_FULL=1`), replicas =
//! min(threads, 2), on a hash map of 10,000 keys. Throughput is in elements of 1,000 operations per thread (`Kelem/s` reads as Mops/s;
//! see `benches::crit`), and each group's scaling chart lands in `target/scaling/<group>.svg`.
//!
//! Every sample opens a fresh store, outside the timing: the log directory of `mutex-wal` and
//! `durable-file` in `$DURABLE_BENCH_DIR` (default: the temp dir; a real disk there makes
//! every `fdatasync` cost what it costs), the region files of `durable-pmem` and `durable-pmem-eadr` in `/dev/shm` when
//! it exists (else the temp dir). Synced writes are slow (milliseconds each on a disk), so the
//! 100% group takes long on `mutex-wal` and `durable-file`; filter it for a quick look.
//!
//! ```text
//! cargo bench -p benches --bench nr_durable                          # both groups
//! cargo bench -p benches --bench nr_durable -- nr-durable-10/        # one group
//! cargo bench -p benches --bench nr_durable -- 'durable-pmem|volatile' # the in-memory methods
//! ```
//!
//! For syncs and bytes per write, and recovery time, use the `durable_nr` binary.

use std::path::PathBuf;

use benches::crit;
use benches::durable_bench::{fresh_path, open, remove_store, run_ops, DurableMethod};
use criterion::Criterion;

/// Keys in the map (the issue's 10,000).
const KEYS: u64 = 10_000;

/// The environment variable naming the log directory.
const DIR_ENV: &str = "DURABLE_BENCH_DIR";

fn nr_durable(c: &mut Criterion) {
    let threads = crit::threads();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let dir = std::env::var_os(DIR_ENV).map_or_else(std::env::temp_dir, PathBuf::from);
    let shm = PathBuf::from("/dev/shm");
    let pmem_dir = if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    };
    for writes_pct in [10, 100] {
        let mut g = crit::panel(c, format!("nr-durable-{writes_pct}"));
        for &t in &threads {
            for m in DurableMethod::ALL {
                let at = if m.uses_region() { &pmem_dir } else { &dir };
                crit::bench_threads(&mut g, m.name(), t, cpus, |t, ops| {
                    let path = fresh_path(at, &format!("bench-{}", m.name()));
                    let subject = open(m, t, KEYS, &path)?;
                    let took = run_ops(&*subject, t, writes_pct, KEYS, ops);
                    drop(subject);
                    remove_store(&path);
                    took
                });
            }
        }
        g.finish();
    }
}

fn main() {
    let mut c = crit::config().configure_from_args();
    nr_durable(&mut c);
    crit::finish(&c);
}
