//! A 3-host group on loopback, and the key-value map it replicates.

#![allow(dead_code)] // each test file uses part of it

use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use nr_raft::{Host, HostConfig};

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
pub(crate) struct Group {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) peers: Vec<(u64, SocketAddr)>,
    /// `None` while a host is stopped.
    pub(crate) hosts: Vec<Option<Host<Kv>>>,
    snapshot_every: u64,
}

impl Group {
    /// Starts `n` hosts, each taking a snapshot every `snapshot_every` entries (0: never).
    pub(crate) fn start(n: usize, snapshot_every: u64) -> Self {
        let mut g = Self {
            dir: tempfile::tempdir().expect("tempdir"),
            peers: addresses(n),
            hosts: (0..n).map(|_| None).collect(),
            snapshot_every,
        };
        for i in 0..n {
            g.restart(i);
        }
        g
    }

    /// Host `i`, which must be running.
    pub(crate) fn host(&self, i: usize) -> &Host<Kv> {
        self.hosts[i].as_ref().expect("host is running")
    }

    /// Stops host `i` (its threads end between two synced Raft batches).
    pub(crate) fn stop(&mut self, i: usize) {
        self.hosts[i].take().expect("host is running").stop();
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
        // The port was free when the group started; a connection of another test may hold it
        // for a moment as its local port: retry the bind a little.
        for attempt in 0.. {
            match Host::start(c.clone(), Kv::default) {
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
pub(crate) fn wait_leader(hosts: &[Option<Host<Kv>>]) -> usize {
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
