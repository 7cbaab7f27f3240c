//! A 3-host group on loopback: writes through any host, reads on every host, restarts.

mod common;

use common::{Group, Kv};
use nr_raft::{Client, Consistency};

#[test]
fn writes_from_every_host_are_read_on_every_host() {
    let g = Group::start(3, 0);
    g.leader();
    let mut clients: Vec<Client<Kv>> = g
        .addrs()
        .into_iter()
        .map(|a| Client::connect(a).expect("connects"))
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
    // A snapshot every 16 entries: recovery reads a checkpoint and the log after it.
    let mut g = Group::start(3, 16);
    let l = g.leader();
    let mut c = Client::<Kv>::connect(g.host(l).addr()).expect("connects");
    for k in 0..50u64 {
        c.write_retrying((k, k + 1), 100).expect("write");
        // One key written again and again: replayed out of order, it would end elsewhere.
        c.write_retrying((1000, k), 100).expect("write");
    }
    drop(c);
    for i in 0..3 {
        g.stop(i);
    }
    for i in 0..3 {
        g.restart(i);
    }
    g.leader();
    for h in g.hosts.iter().flatten() {
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
    let g = Group::start(3, 0);
    let l = g.leader();
    let follower = g.host((l + 1) % 3);
    let mut lc = Client::<Kv>::connect(g.host(l).addr()).expect("connects");
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
    let mut g = Group::start(3, 8);
    let l = g.leader();
    let f = (l + 1) % 3;
    g.stop(f);
    let mut c = Client::<Kv>::connect(g.host(l).addr()).expect("connects");
    for k in 0..40u64 {
        c.write_retrying((k, 7), 100).expect("write");
    }
    g.restart(f);
    let mut fc = Client::<Kv>::connect(g.host(f).addr()).expect("connects");
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
