//! Scaling curves for your own structure: implement the benches' `Workload` for a `Dispatch`
//! type, sweep every method (NR, spinlock, RwLock, flat combining, FC+RwLock) at 1 and 2
//! threads, and write the chart (`target/scaling/counter_10_adds.svg`, Mops/s against threads,
//! one line per method) and its index page (`target/scaling/index.html`).
//!
//! `cargo run -p examples --example scaling` (about a second; `cargo test` runs it too). For
//! real numbers: `--release`, more threads and a longer duration.

use std::time::Duration;

use benches::sweep::Sweep;
use benches::{Op, Replicas, Rng, Workload, WorkloadInfo};
use nr_core::Dispatch;

/// Your sequential structure: a counter (reads return it, writes add to it).
#[derive(Default)]
struct Counter(u64);

impl Dispatch for Counter {
    type ReadOperation<'a> = ();
    type WriteOperation = u64;
    type Response = u64;
    fn dispatch(&self, _: ()) -> u64 {
        self.0
    }
    fn dispatch_mut(&mut self, add: u64) -> u64 {
        self.0 += add;
        self.0
    }
}

/// Its workload: 10% adds, 90% reads, from an empty counter.
struct Adds;

impl Workload for Adds {
    type D = Counter;
    type Read = ();
    fn make(&self) -> Counter {
        Counter::default()
    }
    fn prefill(&self) -> Vec<u64> {
        Vec::new()
    }
    fn next_op(&self, rng: &mut Rng) -> Op<(), u64> {
        if rng.percent(10) {
            Op::Write(1)
        } else {
            Op::Read(())
        }
    }
    fn read_op(&self, _: &()) {}
    fn info(&self) -> WorkloadInfo {
        let s = |s: &str| s.to_string();
        WorkloadInfo {
            panel: s("10% adds"),
            size: s("1 word"),
            mix: s("10% adds"),
            distribution: s("-"),
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
    let prepared = sweep.prepare(Adds);
    let mut methods = Vec::new();
    sweep.add_black_box(&mut methods, &prepared)?;
    let rows = sweep.run_panel("counter", &prepared.workload.info(), &mut methods)?;
    for chart in benches::scaling::write_rows(&rows, &benches::scaling::dir())? {
        println!("scaling chart: {}", chart.display());
    }
    Ok(())
}

#[test]
fn writes_the_scaling_chart() {
    main().expect("the sweep runs and the chart is written");
}
