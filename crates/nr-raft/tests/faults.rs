//! Linearizability under faults: 3 hosts on loopback, one client per host, histories checked
//! with testkit's checker while faults are injected round after round: the leader stopped and
//! restarted from disk, a follower partitioned (every Raft message to or from it dropped) and
//! healed, a follower restarted from disk, a host's links slowed. At the end every host reads
//! every key. A completed write that a later read does not see (a lost write), or a read older
//! than one before it (time going back), is a linearizability violation.
//!
//! Rounds: `NR_RAFT_FAULT_ROUNDS` (default 100). Bounded by the rounds, not by time: each
//! round waits for a leader (at most 20 s) and sleeps two short phases.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{addresses, config, start_all, wait_leader, Kv};
use nr_raft::{Client, Consistency, Host, RaftError};
use testkit::lin::{Checker, Recorder, ThreadRecorder};
use testkit::models::{KvMap, KvOp, KvRet};

const KEYS: u64 = 4;
const PHASE: Duration = Duration::from_millis(120);

fn rounds() -> usize {
    std::env::var("NR_RAFT_FAULT_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
}

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[derive(Default)]
struct Counts {
    done_writes: AtomicU64,
    done_reads: AtomicU64,
    failed: AtomicU64,
}

/// One client: prefers host `me`, moves to the next host when its connection breaks.
fn client(
    me: usize,
    addrs: Vec<std::net::SocketAddr>,
    recorders: Arc<Vec<Recorder<KvOp, KvRet>>>,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (me as u64 + 1));
    let mut recs: Vec<ThreadRecorder<KvOp, KvRet>> = recorders.iter().map(|r| r.thread()).collect();
    let mut host = me;
    let mut conn: Option<Client<Kv>> = None;
    let mut seq = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let Some(c) = conn.as_mut() else {
            match Client::connect(addrs[host]) {
                Ok(c) => conn = Some(c),
                Err(_) => {
                    host = (host + 1) % addrs.len();
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            continue;
        };
        let r = rng.next();
        let key = r % KEYS;
        let k = key as usize;
        let result = if r & 0x100 != 0 {
            seq += 1;
            let value = ((me as u64 + 1) << 32) | seq; // unique per write
            let p = recs[k].invoke(KvOp::Put(key, value));
            c.write((key, value)).map(|old| {
                recs[k].complete(p, KvRet::Put(old));
                counts.done_writes.fetch_add(1, Ordering::Relaxed);
            })
        } else {
            let p = recs[k].invoke(KvOp::Get(key));
            c.read(key, Consistency::Linearizable).map(|v| {
                recs[k].complete(p, KvRet::Get(v));
                counts.done_reads.fetch_add(1, Ordering::Relaxed);
            })
        };
        if let Err(e) = result {
            // The operation stays pending (its outcome unknown); this key's history goes on
            // under a new thread id.
            recs[k] = recorders[k].thread();
            counts.failed.fetch_add(1, Ordering::Relaxed);
            match e {
                RaftError::Frame { .. } | RaftError::Io { .. } | RaftError::Stopped => {
                    conn = None;
                    host = (host + 1) % addrs.len();
                }
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

fn restart(
    hosts: &mut [Option<Host<Kv>>],
    i: usize,
    peers: &[(u64, std::net::SocketAddr)],
    root: &std::path::Path,
) {
    hosts[i] =
        Some(Host::start(config(peers[i].0, peers, root, 64), Kv::default).expect("restarts"));
}

#[test]
fn histories_under_leader_kills_partitions_and_restarts_are_linearizable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let peers = addresses(3);
    let addrs: Vec<_> = peers.iter().map(|p| p.1).collect();
    // A snapshot every 64 entries: restarts recover from a checkpoint and the log after it,
    // and a host that missed compacted entries gets a snapshot.
    let mut hosts = start_all(&peers, root, 64);
    wait_leader(&hosts);
    let recorders: Arc<Vec<Recorder<KvOp, KvRet>>> =
        Arc::new((0..KEYS).map(|_| Recorder::new()).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(Counts::default());
    let clients: Vec<_> = (0..3)
        .map(|me| {
            let (a, r, s, c) = (
                addrs.clone(),
                recorders.clone(),
                stop.clone(),
                counts.clone(),
            );
            std::thread::spawn(move || client(me, a, r, s, c))
        })
        .collect();
    let mut rng = Rng(42);
    let mut kinds = [0usize; 4];
    for round in 0..rounds() {
        let l = wait_leader(&hosts);
        let f = (l + 1 + (rng.next() % 2) as usize) % 3;
        let kind = round % 4;
        kinds[kind] += 1;
        match kind {
            0 => {
                // The leader is killed (stopped between two synced batches) and restarted.
                hosts[l].take().expect("up").stop();
                std::thread::sleep(PHASE);
                restart(&mut hosts, l, &peers, root);
            }
            1 => {
                let h = hosts[f].as_ref().expect("up");
                h.faults().set_isolated(true);
                std::thread::sleep(PHASE);
                h.faults().set_isolated(false);
            }
            2 => {
                hosts[f].take().expect("up").stop();
                std::thread::sleep(PHASE);
                restart(&mut hosts, f, &peers, root);
            }
            _ => {
                let h = hosts[f].as_ref().expect("up");
                h.faults().set_delay(Duration::from_millis(15));
                std::thread::sleep(PHASE);
                h.faults().set_delay(Duration::ZERO);
            }
        }
        std::thread::sleep(PHASE);
    }
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().expect("client thread");
    }
    // Every host reads every key at the end: nothing acknowledged is lost anywhere.
    wait_leader(&hosts);
    for h in hosts.iter().flatten() {
        let mut c = Client::<Kv>::connect(h.addr()).expect("connects");
        for key in 0..KEYS {
            let v = c
                .read_retrying(key, Consistency::Linearizable, 200)
                .expect("final read");
            let mut rec = recorders[key as usize].thread();
            let p = rec.invoke(KvOp::Get(key));
            rec.complete(p, KvRet::Get(v));
        }
    }
    let writes = counts.done_writes.load(Ordering::Relaxed);
    let reads = counts.done_reads.load(Ordering::Relaxed);
    let failed = counts.failed.load(Ordering::Relaxed);
    let recorders = Arc::try_unwrap(recorders).unwrap_or_else(|_| panic!("clients joined"));
    for (key, r) in recorders.into_iter().enumerate() {
        let h = r.into_history();
        let overlap = h.overlap_share();
        println!("key {key}: {} events, overlap share {overlap:.2}", h.len());
        if let Err(v) = Checker::new()
            .max_states(20_000_000)
            .check(KvMap::new(), &h)
        {
            panic!("key {key}: not linearizable: {v}");
        }
    }
    println!(
        "rounds {} (leader kill {}, partition {}, follower restart {}, delay {}): \
         {writes} writes and {reads} reads completed, {failed} failed (left pending)",
        rounds(),
        kinds[0],
        kinds[1],
        kinds[2],
        kinds[3]
    );
    assert!(
        writes > 100 && reads > 100,
        "too little progress: {writes} writes, {reads} reads"
    );
}
