//! A 3-host group on loopback, and the key-value map it replicates.

#![allow(dead_code)] // each test file uses part of it

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
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

/// The configuration of host `id` of `peers`, its log in `root/h<id>`.
pub(crate) fn config(
    id: u64,
    peers: &[(u64, SocketAddr)],
    root: &Path,
    snapshot_every: u64,
) -> HostConfig {
    let mut c = HostConfig::new(id, peers.to_vec(), root.join(format!("h{id}")));
    c.snapshot_every = snapshot_every;
    c
}

/// Starts every host of `peers`.
pub(crate) fn start_all(
    peers: &[(u64, SocketAddr)],
    root: &Path,
    snapshot_every: u64,
) -> Vec<Option<Host<Kv>>> {
    peers
        .iter()
        .map(|&(id, _)| {
            Some(
                Host::start(config(id, peers, root, snapshot_every), Kv::default)
                    .expect("host starts"),
            )
        })
        .collect()
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
