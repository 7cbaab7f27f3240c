//! A 3-host group on loopback: writes through any host, reads on every host, restarts.

mod common;

use common::{addresses, start_all, wait_leader, Kv};
use nr_raft::{Client, Consistency, Host};

#[test]
fn writes_from_every_host_are_read_on_every_host() {
    let dir = tempfile::tempdir().expect("tempdir");
    let peers = addresses(3);
    let hosts = start_all(&peers, dir.path(), 0);
    wait_leader(&hosts);
    let mut clients: Vec<Client<Kv>> = hosts
        .iter()
        .flatten()
        .map(|h| Client::connect(h.addr()).expect("connects"))
        .collect();
    for k in 0..30u64 {
        let c = &mut clients[(k % 3) as usize];
        assert_eq!(c.write_retrying((k, k * 10), 100).expect("write"), None);
    }
    for c in &mut clients {
        for k in 0..30u64 {
            assert_eq!(
                c.read(k, Consistency::Linearizable).expect("read"),
                Some(k * 10)
            );
        }
    }
    // The second write of a key returns the first's value, on whichever host it is proposed.
    assert_eq!(
        clients[2].write_retrying((4, 1), 100).expect("write"),
        Some(40)
    );
}

#[test]
fn a_stopped_group_restarts_from_disk_with_every_acknowledged_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let peers = addresses(3);
    // A snapshot every 16 entries: recovery reads a checkpoint and the log after it.
    let mut hosts = start_all(&peers, dir.path(), 16);
    let l = wait_leader(&hosts);
    let mut c = Client::<Kv>::connect(hosts[l].as_ref().expect("up").addr()).expect("connects");
    for k in 0..50u64 {
        c.write_retrying((k, k + 1), 100).expect("write");
        // One key written again and again: replayed out of order, it would end elsewhere.
        c.write_retrying((1000, k), 100).expect("write");
    }
    drop(c);
    for h in &mut hosts {
        h.take().expect("up").stop();
    }
    let hosts = start_all(&peers, dir.path(), 16);
    wait_leader(&hosts);
    for h in hosts.iter().flatten() {
        let mut c = Client::<Kv>::connect(h.addr()).expect("connects");
        for k in 0..50u64 {
            assert_eq!(
                c.read_retrying(k, Consistency::Linearizable, 100)
                    .expect("read"),
                Some(k + 1)
            );
        }
        let last = c.read_retrying(1000, Consistency::Linearizable, 100);
        assert_eq!(last.expect("read"), Some(49), "host {}", h.id());
    }
}

#[test]
fn a_healed_follower_reads_the_writes_it_missed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let peers = addresses(3);
    let hosts = start_all(&peers, dir.path(), 0);
    let l = wait_leader(&hosts);
    let follower = hosts[(l + 1) % 3].as_ref().expect("up");
    let mut lc = Client::<Kv>::connect(hosts[l].as_ref().expect("up").addr()).expect("connects");
    let mut fc = Client::<Kv>::connect(follower.addr()).expect("connects");
    for round in 1..=10u64 {
        follower.faults().set_isolated(true);
        for i in 0..20 {
            lc.write_retrying((7, round * 100 + i), 100).expect("write");
        }
        // While cut off, its stale reads show the past.
        let stale = fc.read(7, Consistency::Stale).expect("stale read");
        assert!(stale < Some(round * 100), "round {round}: {stale:?}");
        follower.faults().set_isolated(false);
        // The first read after healing waits until the follower applied the leader's index.
        let v = fc
            .read_retrying(7, Consistency::Linearizable, 100)
            .expect("read");
        assert_eq!(v, Some(round * 100 + 19), "round {round}");
    }
}

#[test]
fn a_follower_that_missed_compacted_entries_catches_up_by_snapshot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let peers = addresses(3);
    let mut hosts = start_all(&peers, dir.path(), 8);
    let l = wait_leader(&hosts);
    let f = (l + 1) % 3;
    hosts[f].take().expect("up").stop();
    let mut c = Client::<Kv>::connect(hosts[l].as_ref().expect("up").addr()).expect("connects");
    for k in 0..40u64 {
        c.write_retrying((k, 7), 100).expect("write");
    }
    hosts[f] = Some(
        Host::start(
            common::config(peers[f].0, &peers, dir.path(), 8),
            Kv::default,
        )
        .expect("restarts"),
    );
    let mut fc = Client::<Kv>::connect(hosts[f].as_ref().expect("up").addr()).expect("connects");
    for k in 0..40u64 {
        assert_eq!(
            fc.read_retrying(k, Consistency::Linearizable, 100)
                .expect("read"),
            Some(7)
        );
    }
    // Caught up: its stale reads see the writes too.
    assert_eq!(fc.read(39, Consistency::Stale).expect("read"), Some(7));
}
