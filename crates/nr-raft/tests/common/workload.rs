//! The clients of the fault tests: one per host, writing unique values to a few keys and
//! reading them back (linearizable), recorded per key for testkit's checker (linearizability
//! is local: each key is checked alone).
//!
//! Writes go through `Client::write_retrying`, which sends a write again after a timeout or a
//! broken connection (to the next host). A put is not idempotent here: every value is unique,
//! and a put returns the value it replaced, so a put applied twice answers its own value
//! (which no linearization allows) or, with another put in between, brings an overwritten
//! value back: the checker sees a write applied twice.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nr_raft::{Client, Consistency, RaftError};
use testkit::lin::{Checker, Event, EventKind, History, Recorder, ThreadRecorder};
use testkit::models::{KvMap, KvOp, KvRet};

use super::Kv;

/// Keys written and read.
pub(crate) const KEYS: u64 = 4;

/// A small deterministic generator (xorshift).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Clients running against a group, and what they recorded.
pub(crate) struct Workload {
    recorders: Arc<Vec<Recorder<KvOp, KvRet>>>,
    stop: Arc<AtomicBool>,
    counts: Arc<[AtomicU64; 3]>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Workload {
    /// Starts one client per address, client `i` on host `i` first.
    pub(crate) fn start(addrs: &[SocketAddr]) -> Self {
        let recorders = Arc::new((0..KEYS).map(|_| Recorder::new()).collect::<Vec<_>>());
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]);
        let threads = (0..addrs.len())
            .map(|me| {
                let (a, r, s, c) = (
                    addrs.to_vec(),
                    recorders.clone(),
                    stop.clone(),
                    counts.clone(),
                );
                std::thread::spawn(move || client(me, &a, &r, &s, &c))
            })
            .collect();
        Self {
            recorders,
            stop,
            counts,
            threads,
        }
    }

    /// Waits until the clients complete `n` more operations (a round recovered): panics after
    /// 30 s without them.
    pub(crate) fn wait_progress(&self, n: u64, what: &str) {
        let done =
            || self.counts[0].load(Ordering::Relaxed) + self.counts[1].load(Ordering::Relaxed);
        let start = done();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while done() < start + n {
            assert!(
                std::time::Instant::now() < deadline,
                "{what}: {} operations completed in 30 s, expected {n}",
                done() - start
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stops the clients, reads every key on every host of `addrs` (a recorded read each), and
    /// checks each key's history; prints the counts and overlap shares, and asserts progress.
    pub(crate) fn finish(mut self, addrs: &[SocketAddr]) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            t.join().expect("client thread");
        }
        // Nothing acknowledged is lost anywhere: every host reads every key.
        for &addr in addrs {
            let mut c = Client::<Kv>::connect(addr).expect("connects");
            for key in 0..KEYS {
                let v = c
                    .read_retrying(key, Consistency::Linearizable, 200)
                    .expect("final read");
                let mut rec = self.recorders[key as usize].thread();
                let p = rec.invoke(KvOp::Get(key));
                rec.complete(p, KvRet::Get(v));
            }
        }
        let [writes, reads, failed] = [0, 1, 2].map(|i| self.counts[i].load(Ordering::Relaxed));
        let recorders = Arc::try_unwrap(self.recorders).unwrap_or_else(|_| panic!("joined"));
        for (key, r) in recorders.into_iter().enumerate() {
            let h = without_pending_reads(r.into_history());
            let overlap = h.overlap_share();
            println!("key {key}: {} events, overlap share {overlap:.2}", h.len());
            if let Err(v) = Checker::new()
                .max_states(20_000_000)
                .check(KvMap::new(), &h)
            {
                panic!("key {key}: not linearizable: {v}");
            }
        }
        println!("{writes} writes and {reads} reads completed, {failed} failed (left pending)");
        assert!(
            writes > 0 && reads > 0,
            "no progress: {writes} writes, {reads} reads"
        );
    }
}

/// Tries of each write (50 ms apart): long enough to ride out a leader change.
const WRITE_TRIES: usize = 100;

/// One client: prefers host `me`, moves to the next host when its connection breaks.
fn client(
    me: usize,
    addrs: &[SocketAddr],
    recorders: &[Recorder<KvOp, KvRet>],
    stop: &AtomicBool,
    counts: &[AtomicU64; 3],
) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (me as u64 + 1));
    let mut recs: Vec<ThreadRecorder<KvOp, KvRet>> = recorders.iter().map(|r| r.thread()).collect();
    // Host `me` first, then the others in order.
    let order: Vec<SocketAddr> = (0..addrs.len())
        .map(|i| addrs[(me + i) % addrs.len()])
        .collect();
    let mut conn: Option<Client<Kv>> = None;
    let mut seq = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let Some(c) = conn.as_mut() else {
            match Client::connect_any(&order) {
                Ok(c) => conn = Some(c),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
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
            c.write_retrying((key, value), WRITE_TRIES).map(|old| {
                recs[k].complete(p, KvRet::Put(old));
                counts[0].fetch_add(1, Ordering::Relaxed);
            })
        } else {
            let p = recs[k].invoke(KvOp::Get(key));
            c.read(key, Consistency::Linearizable).map(|v| {
                recs[k].complete(p, KvRet::Get(v));
                counts[1].fetch_add(1, Ordering::Relaxed);
            })
        };
        if let Err(e) = result {
            // The operation stays pending (its outcome unknown); this key's history goes on
            // under a new thread id.
            recs[k] = recorders[k].thread();
            counts[2].fetch_add(1, Ordering::Relaxed);
            // A broken connection moved the client to the next host already.
            if !matches!(e, RaftError::Frame { .. } | RaftError::Io { .. }) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// The history without the reads that never returned: a read has no effect, so leaving one
/// out is always allowed, and the checker need not try to place it.
fn without_pending_reads(h: History<KvOp, KvRet>) -> History<KvOp, KvRet> {
    let events = h.events();
    let mut open: std::collections::HashMap<usize, usize> = Default::default();
    for (i, e) in events.iter().enumerate() {
        match e.kind {
            EventKind::Invoke(_) => open.insert(e.thread, i),
            EventKind::Return(_) => open.remove(&e.thread),
        };
    }
    let drop: std::collections::HashSet<usize> = open
        .into_values()
        .filter(|&i| matches!(events[i].kind, EventKind::Invoke(KvOp::Get(_))))
        .collect();
    let kept: Vec<Event<KvOp, KvRet>> = events
        .iter()
        .enumerate()
        .filter(|(i, _)| !drop.contains(i))
        .map(|(_, e)| e.clone())
        .collect();
    History::from_events(kept)
}
