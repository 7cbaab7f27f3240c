//! The workspace demo: a sequential hash map made concurrent with Node Replication, run with
//! threads spread over every (virtual) NUMA node, and measured side by side against the same
//! map behind a `Mutex` and a `parking_lot::RwLock`.
//!
//! ```text
//! cargo run --release -p examples --example demo            # about 15 s
//! cargo run --release -p examples --example demo -- --quick # about 2 s (CI smoke)
//! NR_VIRTUAL_NODES=2 cargo run --release -p examples --example demo
//! ```
//!
//! On a one-node machine the demo splits the CPUs into virtual nodes (one replica each) unless
//! `NR_VIRTUAL_NODES` says otherwise: that exercises multi-replica code paths, it cannot show
//! NUMA speedups (there is no remote memory to avoid).

use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use examples::{KvMap, KvRead, KvWrite, Rng};
use nr_core::{pin_current_thread, NodeReplicated, Topology, VIRTUAL_NODES_ENV};
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

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let quick = std::env::args().any(|a| a == "--quick");
    let (dur, reps) = if quick {
        (Duration::from_millis(50), 1)
    } else {
        (Duration::from_millis(250), 3)
    };

    let detected = Topology::detect()?;
    let topo = if std::env::var_os(VIRTUAL_NODES_ENV).is_none()
        && detected.num_nodes() == 1
        && detected.num_cpus() >= 2
    {
        detected.with_virtual_nodes(2)?
    } else {
        detected
    };
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
    for write_pct in [10, 100] {
        for threads in [1, 2, 4] {
            let mut runs = vec![Vec::new(); methods.len()];
            for _ in 0..reps {
                for (m, method) in methods.iter().enumerate() {
                    runs[m].push(measure(method.as_ref(), &topo, threads, write_pct, dur));
                }
            }
            let med: Vec<f64> = runs.into_iter().map(median).collect();
            println!(
                "{:>7}% {:>7} {:>9.2} {:>9.2} {:>9.2} {:>9.2}x {:>10.2}x",
                write_pct,
                threads,
                med[0],
                med[1],
                med[2],
                med[0] / med[1],
                med[0] / med[2]
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
        let (b, n) = (median(b), median(n));
        println!(
            "  {write_pct:>3}% writes: bare {b:>7.2}  NR {n:>7.2}  NR/bare {:.2}x",
            n / b
        );
    }
    Ok(())
}
