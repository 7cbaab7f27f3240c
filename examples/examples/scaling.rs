//! Scaling curves for your own structure: implement the benches' `Workload` for a `Dispatch`
//! type, sweep every method (NR, spinlock, RwLock, flat combining, FC+RwLock) at 1 and 2
//! threads, and write the chart (`target/scaling/leaderboard_10_writes.svg`, Mops/s against
//! threads, one line per method) and its index page (`target/scaling/index.html`).
//!
//! `cargo run -p examples --example scaling` (about a second; `cargo test` runs it too). For
//! real numbers: `--release`, more threads and a longer duration.

use std::time::Duration;

use benches::sweep::Sweep;
use benches::{Op, Replicas, Rng, Workload, WorkloadInfo};
use nr_core::Dispatch;

/// Your sequential structure: the best 100 scores, kept sorted.
#[derive(Default)]
struct Leaderboard(Vec<u64>);

impl Dispatch for Leaderboard {
    /// A read: how many kept scores beat this one.
    type ReadOperation<'a> = u64;
    /// A write: record a score (the lowest drops out past 100).
    type WriteOperation = u64;
    type Response = usize;

    fn dispatch(&self, score: u64) -> usize {
        self.0.len() - self.0.partition_point(|&s| s <= score)
    }

    fn dispatch_mut(&mut self, score: u64) -> usize {
        let at = self.0.partition_point(|&s| s <= score);
        self.0.insert(at, score);
        if self.0.len() > 100 {
            self.0.remove(0);
        }
        self.0.len()
    }
}

/// Its workload: 10% new scores, 90% rank queries, scores 0-9999, 100 scores to start with.
struct Scores;

impl Workload for Scores {
    type D = Leaderboard;
    type Read = u64;

    fn make(&self) -> Leaderboard {
        Leaderboard::default()
    }

    fn prefill(&self) -> Vec<u64> {
        (0..100).map(|i| i * 97).collect()
    }

    fn next_op(&self, rng: &mut Rng) -> Op<u64, u64> {
        let score = rng.next_u64() % 10_000;
        if rng.percent(10) {
            Op::Write(score)
        } else {
            Op::Read(score)
        }
    }

    fn read_op(&self, score: &u64) -> u64 {
        *score
    }

    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            panel: "10% writes".into(),
            size: "100 scores".into(),
            mix: "10% new scores".into(),
            distribution: "uniform".into(),
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let topology = nr_core::Topology::detect()?;
    let sweep = Sweep::new(
        vec![1, 2],
        Duration::from_millis(20),
        1,
        42,
        topology,
        Replicas::PerNode,
    )?;
    let prepared = sweep.prepare(Scores);
    let mut methods = Vec::new();
    sweep.add_black_box(&mut methods, &prepared)?;
    let rows = sweep.run_panel("leaderboard", &prepared.workload.info(), &mut methods)?;
    for chart in benches::scaling::write_rows(&rows, &benches::scaling::dir())? {
        println!("scaling chart: {}", chart.display());
    }
    Ok(())
}

#[test]
fn writes_the_scaling_chart() {
    main().expect("the sweep runs and the chart is written");
}
