//! The nr-raft benchmark: a hash map of 10,000 keys on loopback, 0 %, 10 % and 100 % writes,
//! four subjects measured in one run, interleaved (each repetition runs every subject and mix
//! once), the median of the repetitions reported:
//!
//! - `local-nr`: the same map in this process's `NodeReplicated`, called directly (no
//!   network, no Raft, no log);
//! - `1-host-lin`, `1-host-stale`: a group of one nr-raft host (a write is appended to its
//!   log, synced, then applied), clients over TCP, linearizable or stale reads;
//! - `3-hosts-lin`: three hosts, clients spread over them, linearizable reads (read index
//!   from the leader, then a local NR read);
//! - `3-hosts-stale`: the same group, stale reads (a local NR read at once).
//!
//! ```text
//! cargo run --release -p nr-raft --example raft_bench -- [SECONDS] [REPETITIONS] [CLIENTS]
//! cargo run -p nr-raft --example raft_bench -- smoke   # CI: tiny runs that must finish
//! ```
//!
//! CLIENTS (default 3) closed-loop client threads per subject. Logs live under
//! `$NR_RAFT_BENCH_DIR` (default: `/dev/shm` when it exists, else the temporary directory);
//! on tmpfs an `fdatasync` costs next to nothing, so point it at a disk to see a disk's cost.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nr_core::NodeReplicated;
use nr_raft::{Client, Consistency, Host, HostConfig, Kv};

const KEYS: u64 = 10_000;
const MIXES: [u32; 3] = [0, 10, 100];

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Each repetition's (ops/s, p50 µs, p99 µs, failed) of one subject and mix.
type Runs = Vec<(f64, f64, f64, u64)>;

/// One client's next operation: `true` when it succeeded.
type Op<'a> = Box<dyn FnMut(&mut Xorshift) -> bool + 'a>;

struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A write with probability `writes` %, and a key.
    fn pick(&mut self, writes: u32) -> (bool, u64) {
        let r = self.next();
        ((r % 100) < u64::from(writes), (r >> 8) % KEYS)
    }
}

fn prefilled() -> Kv {
    Kv((0..KEYS).map(|k| (k, k)).collect())
}

/// Runs `clients` threads for `d`, each making its operation with `make(thread)` on its own
/// thread and calling it in a loop; returns the latencies (µs) of the successful ones and the
/// count of failed ones.
fn closed_loop<'a>(
    clients: usize,
    d: Duration,
    make: &(dyn Fn(usize) -> Res<Op<'a>> + Sync),
) -> Res<(Vec<f64>, u64)> {
    let stop = AtomicBool::new(false);
    let per_thread = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|t| {
                let stop = &stop;
                s.spawn(move || -> Result<(Vec<f64>, u64), String> {
                    let mut op = make(t).map_err(|e| e.to_string())?;
                    let mut rng = Xorshift(0x2545_F491_4F6C_DD1D ^ (t as u64 + 1));
                    let (mut lat, mut failed) = (Vec::new(), 0u64);
                    while !stop.load(Ordering::Relaxed) {
                        let t0 = Instant::now();
                        if op(&mut rng) {
                            lat.push(t0.elapsed().as_secs_f64() * 1e6);
                        } else {
                            failed += 1;
                        }
                    }
                    Ok((lat, failed))
                })
            })
            .collect();
        std::thread::sleep(d);
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("client panicked".into())))
            .collect::<Vec<_>>()
    });
    let (mut all, mut failed) = (Vec::new(), 0);
    for r in per_thread {
        let (l, f) = r?;
        all.extend(l);
        failed += f;
    }
    Ok((all, failed))
}

fn net_op<'a>(addr: SocketAddr, writes: u32, c: Consistency) -> Res<Op<'a>> {
    let mut cl = Client::<Kv>::connect(addr)?;
    Ok(Box::new(move |rng: &mut Xorshift| {
        let (w, k) = rng.pick(writes);
        if w {
            cl.write((k, rng.next())).is_ok()
        } else {
            cl.read(k, c).is_ok()
        }
    }))
}

/// What is measured: the local object, or a group read with a consistency.
enum Subject<'g> {
    Local(Box<NodeReplicated<Kv>>),
    Group(&'g [Host<Kv>], Consistency),
}

impl Subject<'_> {
    fn run(&self, clients: usize, writes: u32, d: Duration) -> Res<(Vec<f64>, u64)> {
        match self {
            Self::Local(nr) => closed_loop(clients, d, &|_| {
                let mut h = nr.register(0)?;
                Ok(Box::new(move |rng: &mut Xorshift| {
                    let (w, k) = rng.pick(writes);
                    if w {
                        h.execute_mut((k, rng.next())).is_ok()
                    } else {
                        h.execute(k).is_ok()
                    }
                }))
            }),
            Self::Group(hosts, c) => {
                let addrs: Vec<SocketAddr> = hosts.iter().map(Host::addr).collect();
                closed_loop(clients, d, &|t| net_op(addrs[t % addrs.len()], writes, *c))
            }
        }
    }

    fn log_syncs(&self) -> u64 {
        match self {
            Self::Local(_) => 0,
            Self::Group(hosts, _) => hosts.iter().map(|h| h.stats().log_syncs).sum(),
        }
    }
}

fn group(n: usize, root: &Path, name: &str) -> Res<Vec<Host<Kv>>> {
    let ls: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()?;
    let peers: Vec<(u64, SocketAddr)> = ls
        .iter()
        .enumerate()
        .map(|(i, l)| Ok((i as u64 + 1, l.local_addr()?)))
        .collect::<Res<_>>()?;
    drop(ls);
    let hosts: Vec<Host<Kv>> = peers
        .iter()
        .map(|&(id, _)| {
            let mut cfg = HostConfig::new(id, peers.clone(), root.join(format!("{name}-{id}")));
            cfg.snapshot_every = 50_000;
            Host::start(cfg, prefilled)
        })
        .collect::<Result<_, _>>()?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !hosts.iter().any(Host::is_leader) {
        if Instant::now() > deadline {
            return Err("no leader within 20 s".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // Writes need a leader every host knows; wait until one write commits.
    let mut c = Client::<Kv>::connect(hosts[0].addr())?;
    c.write_retrying((0, 0), 200)?;
    Ok(hosts)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    percentile(&v, 0.5)
}

fn bench_dir() -> PathBuf {
    match std::env::var_os("NR_RAFT_BENCH_DIR") {
        Some(d) => d.into(),
        None if Path::new("/dev/shm").is_dir() => "/dev/shm".into(),
        None => std::env::temp_dir(),
    }
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let smoke = args.first().is_some_and(|a| a == "smoke");
    let (secs, reps, clients) = if smoke {
        (0.2, 1, 2)
    } else {
        let num = |i: usize, d: f64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
        (num(0, 2.0), num(1, 3.0) as usize, num(2, 3.0) as usize)
    };
    let d = Duration::from_secs_f64(secs);
    let base = bench_dir();
    let dir = tempfile::Builder::new()
        .prefix("nr-raft-bench")
        .tempdir_in(&base)?;
    let one = group(1, dir.path(), "one")?;
    let three = group(3, dir.path(), "three")?;
    let subjects = [
        (
            "local-nr",
            Subject::Local(Box::new(
                NodeReplicated::builder()
                    .replicas(1)
                    .build(|_| prefilled())?,
            )),
        ),
        (
            "1-host-lin",
            Subject::Group(&one, Consistency::Linearizable),
        ),
        ("1-host-stale", Subject::Group(&one, Consistency::Stale)),
        (
            "3-hosts-lin",
            Subject::Group(&three, Consistency::Linearizable),
        ),
        ("3-hosts-stale", Subject::Group(&three, Consistency::Stale)),
    ];
    // results[subject][mix] = runs; syncs[subject] = (log syncs, successful writes)
    let mut results: Vec<Vec<Runs>> = vec![vec![Vec::new(); MIXES.len()]; subjects.len()];
    let mut syncs = vec![(0u64, 0u64); subjects.len()];
    for _ in 0..reps {
        for (si, (_, subject)) in subjects.iter().enumerate() {
            for (mi, &w) in MIXES.iter().enumerate() {
                let before = subject.log_syncs();
                let (mut lat, failed) = subject.run(clients, w, d)?;
                syncs[si].0 += subject.log_syncs() - before;
                syncs[si].1 += (lat.len() as u64 * u64::from(w)) / 100;
                lat.sort_by(f64::total_cmp);
                let ops = lat.len() as f64 / secs;
                results[si][mi].push((ops, percentile(&lat, 0.5), percentile(&lat, 0.99), failed));
            }
        }
    }
    println!(
        "nr-raft bench: {KEYS} keys, {clients} clients, {secs} s x {reps} repetitions (interleaved), logs in {}",
        base.display()
    );
    println!("| subject | writes | ops/s | p50 µs | p99 µs | failed |");
    println!("|---|---|---|---|---|---|");
    for (si, (name, _)) in subjects.iter().enumerate() {
        for (mi, w) in MIXES.iter().enumerate() {
            let runs = &results[si][mi];
            let ops = median(runs.iter().map(|r| r.0).collect());
            let p50 = median(runs.iter().map(|r| r.1).collect());
            let p99 = median(runs.iter().map(|r| r.2).collect());
            let failed: u64 = runs.iter().map(|r| r.3).sum();
            println!("| {name} | {w}% | {ops:.0} | {p50:.1} | {p99:.1} | {failed} |");
            if smoke && ops == 0.0 && *w < 100 {
                return Err(format!("{name} at {w}% writes made no progress").into());
            }
        }
        if syncs[si].0 > 0 && syncs[si].1 > 0 {
            println!(
                "  {name}: {:.2} log fdatasyncs per write, summed over the hosts",
                syncs[si].0 as f64 / syncs[si].1 as f64
            );
        }
    }
    Ok(())
}
