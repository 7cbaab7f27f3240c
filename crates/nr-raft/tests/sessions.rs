//! Exactly-once writes through client sessions: a write whose reply is lost and that is sent
//! again (to another host, or after the whole group restarted from its snapshots) applies
//! once, on a counter whose `fetch_add` would show a second application; and an expired
//! session is refused with a typed error.

mod common;

use std::time::{Duration, Instant};

use common::{wait_leader, Group};
use nr_raft::{Client, Consistency, RaftError};

/// A `u64` counter: writes add and return the value before (`fetch_add`), reads return it.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Counter(u64);

impl nr_core::Dispatch for Counter {
    type ReadOperation<'a> = ();
    type WriteOperation = u64;
    type Response = u64;

    fn dispatch(&self, _: ()) -> u64 {
        self.0
    }

    fn dispatch_mut(&mut self, n: u64) -> u64 {
        let before = self.0;
        self.0 += n;
        before
    }
}

impl nr_raft::RaftDispatch for Counter {
    type Query = ();

    fn query(_: &()) {}
}

fn counters(n: usize, snapshot_every: u64, sessions: usize) -> Group<Counter> {
    let g = Group::start_with(n, snapshot_every, sessions, Counter::default);
    wait_leader(&g.hosts);
    g
}

#[test]
fn a_write_whose_reply_is_lost_applies_once_when_retried_on_another_host() {
    let g = counters(3, 0, 16);
    let addrs = g.addrs();
    let mut c = Client::<Counter>::connect_any(&addrs).expect("connects");
    // Host 1 applies each write sent to it, then closes the connection instead of answering.
    g.host(0).faults().set_lost_replies(u64::MAX);
    // The retry goes to host 2 (host 1 would lose every reply) with the same write number:
    // the saved response, not a second addition (which would answer 5 and leave 10).
    assert_eq!(c.write_retrying(5, 100).expect("write"), 0);
    assert_eq!(c.write_retrying(1, 100).expect("write"), 5);
    assert_eq!(
        c.read_retrying((), Consistency::Linearizable, 100)
            .expect("read"),
        6
    );
    // The scenario happened: host 2 found the retry to be a duplicate.
    assert_eq!(g.host(1).stats().duplicate_writes, 1);
}

#[test]
fn a_retry_after_the_group_restarts_is_answered_once_from_the_snapshots() {
    // A snapshot after every applied batch: after the restart the session table exists only
    // in the checkpoints (the log before them is dropped).
    let mut g = counters(3, 1, 16);
    let addrs = g.addrs();
    for i in 0..3 {
        g.host(i).faults().set_lost_replies(u64::MAX);
    }
    let writer = std::thread::spawn(move || {
        let mut c = Client::<Counter>::connect_any(&addrs).expect("connects");
        // Every reply is lost until the group restarts; 50 ms between tries.
        let first = c.write_retrying(5, 2_000);
        let second = c.write_retrying(1, 200);
        (first, second)
    });
    // Wait until every host applied the addition (read through the leader's read index on
    // each host), then stop the whole group and start it again from disk.
    let deadline = Instant::now() + Duration::from_secs(30);
    for i in 0..3 {
        let mut r = Client::<Counter>::connect(g.host(i).addr()).expect("connects");
        while r
            .read_retrying((), Consistency::Linearizable, 100)
            .expect("read")
            != 5
        {
            assert!(Instant::now() < deadline, "the write never applied");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let applied: Vec<u64> = (0..3).map(|i| g.host(i).stats().applied).collect();
    for i in 0..3 {
        g.stop(i);
    }
    for i in 0..3 {
        g.restart(i);
    }
    wait_leader(&g.hosts);
    let (first, second) = writer.join().expect("writer");
    assert_eq!(
        first.expect("first write"),
        0,
        "the retry after the restart"
    );
    assert_eq!(second.expect("second write"), 5, "one addition, not two");
    let mut r = Client::<Counter>::connect(g.host(0).addr()).expect("connects");
    assert_eq!(
        r.read_retrying((), Consistency::Linearizable, 100)
            .expect("read"),
        6
    );
    let dups: u64 = (0..3).map(|i| g.host(i).stats().duplicate_writes).sum();
    assert!(
        dups >= 1,
        "no restarted host saw the retry (applied before the stop: {applied:?})"
    );
}

#[test]
fn an_expired_session_is_refused_with_a_typed_error_and_the_write_not_applied() {
    // Room for two sessions: the third one evicts the least recently used.
    let g = counters(1, 0, 2);
    let addr = g.host(0).addr();
    let mut a = Client::<Counter>::connect(addr).expect("connects");
    let mut b = Client::<Counter>::connect(addr).expect("connects");
    let mut c = Client::<Counter>::connect(addr).expect("connects");
    assert_eq!(a.write_retrying(1, 100).expect("a"), 0);
    assert_eq!(b.write_retrying(10, 100).expect("b"), 1);
    assert_eq!(c.write_retrying(100, 100).expect("c"), 11);
    let expired = a.session().expect("a has a session");
    match a.write(1000) {
        Err(RaftError::SessionExpired { session }) => assert_eq!(session, expired),
        other => panic!("expected SessionExpired, got {other:?}"),
    }
    assert_eq!(
        a.read((), Consistency::Linearizable).expect("read"),
        111,
        "the refused write was not applied"
    );
    // The next write opens a new session (evicting b's).
    assert_eq!(a.write_retrying(1000, 100).expect("a again"), 111);
    assert_ne!(a.session(), Some(expired));
    assert!(matches!(b.write(1), Err(RaftError::SessionExpired { .. })));
}
