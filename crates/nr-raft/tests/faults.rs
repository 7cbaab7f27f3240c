//! Linearizability under faults: 3 hosts on loopback, one client per host, histories checked
//! with testkit's checker while faults are injected round after round: the leader stopped and
//! restarted from disk, a follower partitioned (every Raft message to or from it dropped) and
//! healed, a follower restarted from disk, a host's links slowed. At the end every host reads
//! every key. A completed write that a later read does not see (a lost write), a read older
//! than one before it (time going back), or a write applied twice, is a linearizability
//! violation. Each round also loses the reply of one write on a random host: its client sends
//! it again (`Client::write_retrying`, to the next host), and the session table must apply it
//! once.
//!
//! Rounds: `NR_RAFT_FAULT_ROUNDS` (default 20 in `cargo test`; CI's `raft_faults` step runs
//! 100 under a timeout). Bounded by the rounds, not by time: each round waits until the
//! clients completed 20 more operations (at most 30 s: a group that stops serving fails the
//! test) and for a leader (at most 20 s), then holds its fault for a short phase.

mod common;

use std::time::Duration;

use common::workload::{Rng, Workload};
use common::{env_or, Group};
const PHASE: Duration = Duration::from_millis(120);

#[test]
fn histories_under_leader_kills_partitions_and_restarts_are_linearizable() {
    let rounds = env_or("NR_RAFT_FAULT_ROUNDS", 20);
    // A snapshot every 64 entries: restarts recover from a checkpoint and the log after it,
    // and a host that missed compacted entries gets a snapshot.
    let mut g = Group::start(3, 64);
    g.leader();
    let addrs = g.addrs();
    let workload = Workload::start(&addrs);
    let mut rng = Rng(42);
    let mut kinds = [0usize; 4];
    for round in 0..rounds {
        // Every round starts from a group that serves.
        workload.wait_progress(20, &format!("round {round}"));
        let l = g.leader();
        let f = (l + 1 + (rng.next() % 2) as usize) % 3;
        let kind = round % 4;
        kinds[kind] += 1;
        g.host((rng.next() % 3) as usize)
            .faults()
            .set_lost_replies(1);
        match kind {
            0 => {
                // The leader is killed (stopped between two synced batches) and restarted.
                g.stop(l);
                std::thread::sleep(PHASE);
                g.restart(l);
            }
            1 => {
                let h = g.host(f);
                h.faults().set_isolated(true);
                std::thread::sleep(PHASE);
                h.faults().set_isolated(false);
            }
            2 => {
                g.stop(f);
                std::thread::sleep(PHASE);
                g.restart(f);
            }
            _ => {
                let h = g.host(f);
                h.faults().set_delay(Duration::from_millis(15));
                std::thread::sleep(PHASE);
                h.faults().set_delay(Duration::ZERO);
            }
        }
    }
    g.leader();
    println!(
        "rounds {} (leader kill {}, partition {}, follower restart {}, delay {})",
        rounds, kinds[0], kinds[1], kinds[2], kinds[3]
    );
    workload.finish(&addrs);
    let dups = g.duplicate_writes();
    println!("retried writes found to be duplicates (summed over the hosts): {dups}");
    // The lost replies were retried and their duplicates refused: the check above saw the
    // retries, not only faults that never lose a reply.
    assert!(dups > 0, "no retry of an applied write in {rounds} rounds");
}
