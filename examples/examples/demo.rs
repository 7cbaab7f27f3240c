//! The workspace demo: a sequential hash map made concurrent with Node Replication, run with
//! threads spread over every (virtual) NUMA node, and measured side by side against the same
//! map behind a `Mutex` and a `parking_lot::RwLock`.
//!
//! ```text
//! cargo run --release -p examples --example demo            # about 15 s
//! cargo run --release -p examples --example demo -- --quick # about 2 s (CI smoke)
//! cargo run --release -p examples --example demo -- --help  # flags, environment, exit status
//! NR_VIRTUAL_NODES=2 cargo run --release -p examples --example demo
//! ```
//!
//! The command line, the error report and the rule that prints a ratio as `noisy` rather
//! than as a result live in [`examples::demo_cli`], where they are tested.
//!
//! On a one-node machine the demo splits the CPUs into virtual nodes (one replica each) unless
//! `NR_VIRTUAL_NODES` says otherwise: that exercises multi-replica code paths, it cannot show
//! NUMA speedups (there is no remote memory to avoid).

use std::error::Error;
use std::process::ExitCode;
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use examples::demo_cli::{demo_topology, judge_ratio, main_with, median, Unreliable};
use examples::{KvMap, KvRead, KvWrite, Rng};
use nr_core::{pin_current_thread, NodeReplicated, Topology};
use parking_lot::RwLock;

const KEYS: u64 = 10_000;

/// A method under test: each thread gets a worker closure that runs one operation.
trait Method: Sync {
    /// Runs `ops` operations (write with probability `write_pct`%) and returns how many ran.
    fn run(&self, thread: usize, write_pct: u64, stop: &dyn Fn() -> bool) -> u64;
}

struct Nr<'a> {
    nr: &'a NodeReplicated<KvMap>,
    topo: &'a Topology,
}

impl Method for Nr<'_> {
    fn run(&self, thread: usize, write_pct: u64, stop: &dyn Fn() -> bool) -> u64 {
        // `measure` pinned this thread to this CPU; use that node's replica.
        let cpu = self.topo.cpu_for_thread(thread);
        let replica = self.nr.replica_for_cpu(cpu).unwrap_or(0);
        let mut h = self
            .nr
            .register(replica)
            .expect("thread slots are sized for the demo");
        let mut rng = Rng::new(thread as u64 + 1);
        let mut n = 0;
        while !stop() {
            for _ in 0..64 {
                let k = rng.below(KEYS);
                if rng.below(100) < write_pct {
                    h.execute_mut(KvWrite::Put(k, n)).expect("not poisoned");
                } else {
                    h.execute(KvRead::Get(k)).expect("not poisoned");
                }
                n += 1;
            }
        }
        n
    }
}

struct Locked(Mutex<KvMap>);

impl Method for Locked {
    fn run(&self, thread: usize, write_pct: u64, stop: &dyn Fn() -> bool) -> u64 {
        op_loop(thread, write_pct, stop, |k, write, n| {
            let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
            if write {
                m.put(k, n);
            } else {
                std::hint::black_box(m.get(k));
            }
        })
    }
}

struct ReadWrite(RwLock<KvMap>);

impl Method for ReadWrite {
    fn run(&self, thread: usize, write_pct: u64, stop: &dyn Fn() -> bool) -> u64 {
        op_loop(thread, write_pct, stop, |k, write, n| {
            if write {
                self.0.write().put(k, n);
            } else {
                std::hint::black_box(self.0.read().get(k));
            }
        })
    }
}

/// The workload of the lock-based methods: random keys, `write_pct`% writes, until `stop`;
/// `op(key, is_write, counter)` runs one operation. Returns how many ran.
fn op_loop(
    thread: usize,
    write_pct: u64,
    stop: &dyn Fn() -> bool,
    mut op: impl FnMut(u64, bool, u64),
) -> u64 {
    let mut rng = Rng::new(thread as u64 + 1);
    let mut n = 0;
    while !stop() {
        for _ in 0..64 {
            let k = rng.below(KEYS);
            op(k, rng.below(100) < write_pct, n);
            n += 1;
        }
    }
    n
}

/// One timed run of `threads` threads, each pinned to `topo.cpu_for_thread(t)` whatever the
/// method (threads spread round-robin over nodes); returns Mops/s.
fn measure(
    method: &dyn Method,
    topo: &Topology,
    threads: usize,
    write_pct: u64,
    dur: Duration,
) -> f64 {
    let start = Barrier::new(threads + 1);
    let deadline = std::sync::OnceLock::new();
    let total: u64 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (start, deadline) = (&start, &deadline);
                s.spawn(move || {
                    pin_current_thread(&[topo.cpu_for_thread(t)]).expect("CPU from the topology");
                    start.wait();
                    let end: &Instant = deadline.get().expect("set before the barrier");
                    method.run(t, write_pct, &|| Instant::now() >= *end)
                })
            })
            .collect();
        deadline.set(Instant::now() + dur).expect("set once");
        start.wait();
        workers.into_iter().map(|w| w.join().expect("worker")).sum()
    });
    total as f64 / dur.as_secs_f64() / 1e6
}

/// The bare map on one thread, no synchronization: the cost baseline.
fn bare(write_pct: u64, dur: Duration) -> f64 {
    let mut m = KvMap::with_keys(KEYS);
    let mut rng = Rng::new(1);
    let mut n = 0u64;
    let end = Instant::now() + dur;
    while Instant::now() < end {
        for _ in 0..64 {
            let k = rng.below(KEYS);
            if rng.below(100) < write_pct {
                m.put(k, n);
            } else {
                std::hint::black_box(m.get(k));
            }
            n += 1;
        }
    }
    n as f64 / dur.as_secs_f64() / 1e6
}

fn main() -> ExitCode {
    let code = main_with(
        std::env::args().skip(1),
        run,
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    );
    ExitCode::from(code)
}

/// A ratio column: the figure, or `noisy` (the reason goes to `notes`).
fn ratio_cell(judged: Result<f64, Unreliable>, what: String, notes: &mut Vec<String>) -> String {
    match judged {
        Ok(ratio) => format!("{ratio:.2}x"),
        Err(why) => {
            notes.push(format!("{what}: {why}"));
            "noisy".to_owned()
        }
    }
}

fn run(quick: bool) -> Result<(), Box<dyn Error>> {
    let (dur, reps) = if quick {
        (Duration::from_millis(50), 1)
    } else {
        (Duration::from_millis(250), 3)
    };

    let topo = demo_topology()?;
    let cpus = topo.num_cpus();
    println!("Node Replication demo: a sequential HashMap<u64, u64> ({KEYS} keys) made concurrent");
    println!(
        "topology: {} ({} nodes, {cpus} CPUs)",
        topo.source(),
        topo.num_nodes()
    );
    for node in topo.nodes() {
        println!(
            "  node {} -> memory node {}, CPUs {:?}",
            node.index(),
            node.memory_node(),
            node.cpus()
        );
    }

    let nr = NodeReplicated::builder()
        .topology(topo.clone())
        .build(|_| KvMap::with_keys(KEYS))?;
    println!(
        "replicas: {} (one per node, each built on its node)",
        nr.replicas()
    );
    let methods: Vec<Box<dyn Method + '_>> = vec![
        Box::new(Nr {
            nr: &nr,
            topo: &topo,
        }),
        Box::new(Locked(Mutex::new(KvMap::with_keys(KEYS)))),
        Box::new(ReadWrite(RwLock::new(KvMap::with_keys(KEYS)))),
    ];

    println!(
        "\nthroughput, Mops/s (median of {reps}, {} ms each, methods interleaved, every method's \
         threads pinned round-robin over the nodes; threads > {cpus} are oversubscribed)",
        dur.as_millis()
    );
    println!(
        "{:>8} {:>7} {:>9} {:>9} {:>9} {:>10} {:>11}",
        "writes", "threads", "NR", "Mutex", "RwLock", "NR/Mutex", "NR/RwLock"
    );
    let mut notes = Vec::new();
    for write_pct in [10, 100] {
        for threads in [1, 2, 4] {
            let mut runs = vec![Vec::new(); methods.len()];
            for _ in 0..reps {
                for (m, method) in methods.iter().enumerate() {
                    runs[m].push(measure(method.as_ref(), &topo, threads, write_pct, dur));
                }
            }
            let at = format!("{write_pct}% writes, {threads} threads");
            let vs_mutex = ratio_cell(
                judge_ratio(&runs[0], &runs[1], None),
                format!("NR/Mutex at {at}"),
                &mut notes,
            );
            let vs_rwlock = ratio_cell(
                judge_ratio(&runs[0], &runs[2], None),
                format!("NR/RwLock at {at}"),
                &mut notes,
            );
            println!(
                "{:>7}% {:>7} {:>9.2} {:>9.2} {:>9.2} {:>10} {:>11}",
                write_pct,
                threads,
                median(&runs[0]),
                median(&runs[1]),
                median(&runs[2]),
                vs_mutex,
                vs_rwlock
            );
        }
    }

    // Cost of the machinery: one thread, one replica, against the bare map.
    let single = NodeReplicated::builder()
        .replicas(1)
        .build(|_| KvMap::with_keys(KEYS))?;
    let one = Topology::single_node(vec![topo.nodes()[0].cpus()[0]])?;
    let nr1 = Nr {
        nr: &single,
        topo: &one,
    };
    println!("\ncost at 1 thread (1 replica) against the bare sequential map, Mops/s:");
    for write_pct in [0, 10, 100] {
        let (mut b, mut n) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            b.push(bare(write_pct, dur));
            n.push(measure(&nr1, &one, 1, write_pct, dur));
        }
        // NR wraps the bare map: at 1 thread it cannot be faster.
        let ratio = ratio_cell(
            judge_ratio(&n, &b, Some(1.0)),
            format!("NR/bare at {write_pct}% writes"),
            &mut notes,
        );
        println!(
            "  {write_pct:>3}% writes: bare {:>7.2}  NR {:>7.2}  NR/bare {ratio}",
            median(&b),
            median(&n),
        );
    }
    if quick {
        println!(
            "\n--quick: one short repetition per point, so the spread is unchecked: a smoke \
             test, not figures to read"
        );
    }
    if !notes.is_empty() {
        println!(
            "\nthe machine is noisy: the figures marked `noisy` are not results (rerun on a quiet \
             machine{}):",
            if quick { ", without --quick" } else { "" }
        );
        for note in notes {
            println!("  {note}");
        }
    }
    Ok(())
}
