//! A real crash at the store level: a child process appends operations (groups of 1-3, one
//! durability action each) and takes a checkpoint every 50, printing `ack <end>` after each
//! append returns; it is killed with SIGKILL after a random number of acknowledgements. The
//! parent reopens the store: the recovered history (snapshot + log) must be a prefix of the
//! appended operations holding every acknowledged one. Rounds accumulate on one store (each
//! child goes on from the recovered end), for each medium.
//!
//! On the file medium a killed process loses nothing the kernel holds, so this tests recovery
//! on real files (torn tails, checkpoints interrupted at any step, segment chains) rather than
//! the placement of `fdatasync`; the simulated-domain tests cover flush placement for the
//! region medium.
//!
//! `NR_DURABLE_KILL_ROUNDS` sets the rounds per medium (default 10; CI: 100).
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use std::io::{BufReader, Write};
use std::process::Stdio;

use common::{env, Rng};
use nr_durable::{Medium, Store, SyncPolicy};

const CHILD_ENV: &str = "NR_DURABLE_SIGKILL_STORE_CHILD";

/// Operation `i` (its value tells its position, so a recovered history is checked by value).
fn op(i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9) ^ 0x5A
}

fn medium(spec: &str) -> Medium {
    let (kind, path) = spec.split_once('|').expect("kind|path");
    match kind {
        "file" => Medium::File { dir: path.into() },
        _ => Medium::Pmem {
            path: path.into(),
            capacity: 1 << 14,
        },
    }
}

/// Recovers the store: (the whole history, the store).
fn recover(m: &Medium) -> (Vec<u64>, Store<u64>) {
    let (store, rec) = Store::<u64>::open::<Vec<u64>>(m, SyncPolicy::EveryBatch)
        .unwrap_or_else(|e| panic!("recovery failed: {e}"));
    let (from, mut history) = rec.snapshot.unwrap_or((0, Vec::new()));
    assert_eq!(
        history.len() as u64,
        from,
        "the snapshot holds its position's operations"
    );
    for (pos, o) in rec.ops {
        assert_eq!(
            pos,
            history.len() as u64,
            "log positions follow the snapshot"
        );
        history.push(o);
    }
    assert_eq!(history.len() as u64, rec.end);
    (history, store)
}

/// The child role: appends until killed. Ignored in a normal run; fails when run without the
/// parent's `CHILD_ENV`.
#[test]
#[ignore = "child process of acknowledged_appends_survive_sigkill, which runs it with --ignored --exact"]
fn sigkill_store_child() {
    let spec = testkit::child::child_spec(CHILD_ENV, "acknowledged_appends_survive_sigkill");
    let (mut history, store) = recover(&medium(&spec));
    let mut rng = Rng(history.len() as u64);
    let mut last_checkpoint = history.len() as u64;
    loop {
        let pos = history.len() as u64;
        let n = 1 + rng.below(3);
        let ops: Vec<u64> = (pos..pos + n).map(op).collect();
        store.append(pos, &ops.iter().collect::<Vec<_>>()).unwrap();
        history.extend(ops);
        let mut out = std::io::stdout().lock();
        writeln!(out, "ack {}", history.len()).unwrap();
        out.flush().unwrap();
        if history.len() as u64 >= last_checkpoint + 50 {
            last_checkpoint = history.len() as u64;
            store.checkpoint(last_checkpoint, &history).unwrap();
        }
    }
}

fn rounds(kind: &str, path: &std::path::Path, rng: &mut Rng) {
    let spec = format!("{kind}|{}", path.display());
    let rounds = env("NR_DURABLE_KILL_ROUNDS", 10);
    let mut acked = 0u64;
    let mut survived = 0u64;
    for round in 0..rounds {
        let mut child = testkit::child::child_command("sigkill_store_child")
            .env(CHILD_ENV, &spec)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the child");
        let lines = BufReader::new(child.stdout.take().expect("piped"));
        // The harness's "test sigkill_store_child ... " shares the first line.
        let record = |line: &str, acked: &mut u64| match line.trim().split("ack ").nth(1) {
            Some(n) => {
                *acked = (*acked).max(n.parse().expect("ack <end>"));
                true
            }
            None => false,
        };
        let kill_after = 1 + rng.below(150);
        let what = format!("{kind} round {round}");
        testkit::child::kill_after_acks(&mut child, lines, kill_after, &mut acked, &what, record);
        let (history, store) = recover(&medium(&spec));
        drop(store);
        let n = history.len() as u64;
        assert!(
            n >= acked,
            "{kind} round {round}: {n} operations survive, {acked} acknowledged"
        );
        assert!(
            n >= survived,
            "{kind} round {round}: operations of an earlier round were lost"
        );
        let want: Vec<u64> = (0..n).map(op).collect();
        assert_eq!(
            history, want,
            "{kind} round {round}: not a prefix of the appended operations"
        );
        survived = n;
    }
    println!(
        "{kind}: {rounds} SIGKILL rounds, {acked} operations acknowledged, {survived} survived"
    );
}

#[test]
fn acknowledged_appends_survive_sigkill() {
    testkit::child::assert_child_fails_alone("sigkill_store_child", CHILD_ENV);
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x51_61_4b);
    rounds("file", &tmp.path().join("store"), &mut rng);
    rounds("pmem", &tmp.path().join("log.pmem"), &mut rng);
}
