//! Three `nr-raft-kv serve` processes on loopback, one client per host, and the leader's
//! process killed with SIGKILL (`Child::kill`) and restarted from its directory, round after
//! round; the per-key histories are checked for linearizability at the end.
//!
//! Rounds: `NR_RAFT_KILL_ROUNDS` (default 5 in `cargo test`; CI's `raft_faults` step runs 30).
//! Bounded by the rounds: each waits until the clients completed 20 more operations (at most
//! 30 s) and for a leader (at most 20 s), kills it, and restarts it after a short phase.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::workload::Workload;
use common::{addresses, env_or};

const PHASE: Duration = Duration::from_millis(200);

struct Proc {
    child: Child,
    /// The leader this process last announced (0: none yet).
    leader: Arc<AtomicU64>,
}

impl Drop for Proc {
    /// No server outlives the test, even one that fails.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(id: u64, peers: &str, dir: &std::path::Path) -> Proc {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nr-raft-kv"))
        .args(["serve", &id.to_string(), peers])
        .arg(dir.join(format!("h{id}")))
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawns nr-raft-kv");
    let leader = Arc::new(AtomicU64::new(0));
    let out = child.stdout.take().expect("piped");
    let l = leader.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(n) = line.strip_prefix("leader ") {
                l.store(n.parse().unwrap_or(0), Ordering::Relaxed);
            }
        }
    });
    Proc { child, leader }
}

/// The index of the process that a majority names leader, once there is one (20 s at most).
fn leader(procs: &[Proc]) -> usize {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        for (i, _) in procs.iter().enumerate() {
            let id = i as u64 + 1;
            let agree = procs
                .iter()
                .filter(|p| p.leader.load(Ordering::Relaxed) == id)
                .count();
            if agree >= 2 && procs[i].leader.load(Ordering::Relaxed) == id {
                return i;
            }
        }
        assert!(Instant::now() < deadline, "no leader within 20 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn killing_the_leader_process_loses_no_acknowledged_write() {
    let rounds = env_or("NR_RAFT_KILL_ROUNDS", 5);
    let dir = tempfile::tempdir().expect("tempdir");
    let peers = addresses(3);
    let spec = peers
        .iter()
        .map(|(id, a)| format!("{id}={a}"))
        .collect::<Vec<_>>()
        .join(",");
    let addrs: Vec<_> = peers.iter().map(|p| p.1).collect();
    let mut procs: Vec<Proc> = peers
        .iter()
        .map(|&(id, _)| spawn(id, &spec, dir.path()))
        .collect();
    leader(&procs);
    let workload = Workload::start(&addrs);
    for round in 0..rounds {
        // Every round starts from a group that serves.
        workload.wait_progress(20, &format!("round {round}"));
        let l = leader(&procs);
        procs[l].child.kill().expect("SIGKILL");
        procs[l].child.wait().expect("reaped");
        println!("killed the leader, host {}", l + 1);
        // The others forget the dead leader once they elect another.
        std::thread::sleep(PHASE);
        procs[l] = spawn(l as u64 + 1, &spec, dir.path());
    }
    leader(&procs);
    workload.finish(&addrs);
}
