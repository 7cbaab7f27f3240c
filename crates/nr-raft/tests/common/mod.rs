//! A 3-host group on loopback, and the key-value map it replicates.

#![allow(dead_code)] // each test file uses part of it

use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use nr_raft::{Host, HostConfig, RaftDispatch};

pub(crate) use nr_raft::Kv;

pub(crate) mod workload;

/// Three loopback addresses with free ports (held by nothing once returned).
pub(crate) fn addresses(n: usize) -> Vec<(u64, SocketAddr)> {
    let ls: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    ls.iter()
        .enumerate()
        .map(|(i, l)| (i as u64 + 1, l.local_addr().expect("addr")))
        .collect()
}

/// A group of hosts on loopback, their logs in a temporary directory.
pub(crate) struct Group<D: RaftDispatch = Kv> {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) peers: Vec<(u64, SocketAddr)>,
    /// `None` while a host is stopped.
    pub(crate) hosts: Vec<Option<Host<D>>>,
    snapshot_every: u64,
    /// `HostStats::duplicate_writes` of the hosts stopped so far, summed.
    stopped_duplicates: u64,
    /// `HostConfig::sessions` of every host.
    sessions: usize,
    init: fn() -> D,
}

impl Group<Kv> {
    /// Starts `n` hosts of a [`Kv`], each taking a snapshot every `snapshot_every` entries
    /// (0: never).
    pub(crate) fn start(n: usize, snapshot_every: u64) -> Self {
        Self::start_with(n, snapshot_every, 4096, Kv::default)
    }
}

impl<D: RaftDispatch> Group<D> {
    /// Starts `n` hosts of `init()`, each taking a snapshot every `snapshot_every` entries
    /// (0: never) and keeping at most `sessions` client sessions.
    pub(crate) fn start_with(
        n: usize,
        snapshot_every: u64,
        sessions: usize,
        init: fn() -> D,
    ) -> Self {
        let mut g = Self {
            dir: tempfile::tempdir().expect("tempdir"),
            peers: addresses(n),
            hosts: (0..n).map(|_| None).collect(),
            snapshot_every,
            stopped_duplicates: 0,
            sessions,
            init,
        };
        for i in 0..n {
            g.restart(i);
        }
        g
    }

    /// Host `i`, which must be running.
    pub(crate) fn host(&self, i: usize) -> &Host<D> {
        self.hosts[i].as_ref().expect("host is running")
    }

    /// Stops host `i` (its threads end between two synced Raft batches).
    pub(crate) fn stop(&mut self, i: usize) {
        let h = self.hosts[i].take().expect("host is running");
        self.stopped_duplicates += h.stats().duplicate_writes;
        h.stop();
    }

    /// Starts host `i` from its directory (recovering what it logged).
    pub(crate) fn restart(&mut self, i: usize) {
        let (id, _) = self.peers[i];
        let mut c = HostConfig::new(
            id,
            self.peers.clone(),
            self.dir.path().join(format!("h{id}")),
        );
        c.snapshot_every = self.snapshot_every;
        c.sessions = self.sessions;
        // The port was free when the group started; a connection of another test may hold it
        // for a moment as its local port: retry the bind a little.
        for attempt in 0.. {
            match Host::start(c.clone(), self.init) {
                Ok(h) => {
                    self.hosts[i] = Some(h);
                    return;
                }
                Err(nr_raft::RaftError::Io { op: "listen", .. }) if attempt < 100 => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("host {id} does not start: {e}"),
            }
        }
    }

    /// Writes found to be retries of applied writes (`HostStats::duplicate_writes`), summed
    /// over every host since the group started (each host counts each duplicate it applies).
    pub(crate) fn duplicate_writes(&self) -> u64 {
        let running: u64 = self
            .hosts
            .iter()
            .flatten()
            .map(|h| h.stats().duplicate_writes)
            .sum();
        self.stopped_duplicates + running
    }

    /// The hosts' addresses.
    pub(crate) fn addrs(&self) -> Vec<SocketAddr> {
        self.peers.iter().map(|p| p.1).collect()
    }

    /// [`wait_leader`] of this group.
    pub(crate) fn leader(&self) -> usize {
        wait_leader(&self.hosts)
    }
}

/// The value of environment variable `var`, or `default`.
pub(crate) fn env_or(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Waits (up to 20 s) until one running host is the leader that a majority knows; returns
/// its index in `hosts`.
pub(crate) fn wait_leader<D: nr_raft::RaftDispatch>(hosts: &[Option<Host<D>>]) -> usize {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        for (i, h) in hosts.iter().enumerate() {
            if let Some(h) = h {
                if h.is_leader() && !h.faults().is_isolated() {
                    let agree = hosts
                        .iter()
                        .flatten()
                        .filter(|o| o.stats().leader == h.id())
                        .count();
                    if agree * 2 > hosts.len() {
                        return i;
                    }
                }
            }
        }
        assert!(Instant::now() < deadline, "no leader within 20 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}
