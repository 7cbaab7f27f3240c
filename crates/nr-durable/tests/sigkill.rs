//! A real crash: a child process writing to a durable `HashMap` store from 2 threads on 1 or 2
//! replicas (alternating rounds; thread 0 also takes checkpoints) is killed with SIGKILL after a random number of
//! acknowledged writes; the parent reopens the store and checks that every acknowledged write
//! survived, that each thread's writes are a prefix, and that `last_applied` says which. The
//! next round's child resumes from `last_applied`, so rounds accumulate on one store.
//!
//! On the file medium a killed process loses nothing the kernel holds, so this tests recovery
//! (torn tails, checkpoints interrupted at any step, segment chains) on real files rather than
//! the placement of `fdatasync`; the simulated-domain tests cover flush placement for the
//! persistent-memory medium.
//!
//! `NR_DURABLE_KILL_ROUNDS` sets the rounds per medium (default 10; CI: 100).
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use std::io::{BufReader, Write};
use std::process::Stdio;

use common::{check_thread, env, key, Kv, KvWrite, Rng};
use nr_durable::{Durable, Medium};

const CHILD_ENV: &str = "NR_DURABLE_SIGKILL_CHILD";
const THREADS: u32 = 2;

/// The medium and the replica count of a spec `kind|replicas|path`.
fn medium(spec: &str) -> (Medium, usize) {
    let mut parts = spec.splitn(3, '|');
    let (kind, replicas, path) = match (parts.next(), parts.next(), parts.next()) {
        (Some(k), Some(r), Some(p)) => (k, r.parse().expect("a replica count"), p),
        _ => panic!("not kind|replicas|path: {spec}"),
    };
    let medium = match kind {
        "file" => Medium::File { dir: path.into() },
        _ => Medium::Pmem {
            path: path.into(),
            capacity: 1 << 16,
        },
    };
    (medium, replicas)
}

/// The child role: writes until killed, printing `ack <thread> <i>` after each acknowledged
/// write. Ignored in a normal run; fails when run without the parent's `CHILD_ENV`.
#[test]
#[ignore = "child process of acknowledged_writes_survive_sigkill, which runs it with --ignored --exact"]
fn sigkill_child() {
    let spec = testkit::child::child_spec(CHILD_ENV, "acknowledged_writes_survive_sigkill");
    let (medium, replicas) = medium(&spec);
    let kv = Durable::<Kv>::builder()
        .replicas(replicas)
        .medium(medium)
        .open(Kv::default)
        .unwrap();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let kv = &kv;
            s.spawn(move || {
                let mut h = kv.register(t).unwrap();
                let start = h.last_applied().unwrap().map_or(0, |l| l.0);
                for i in start.. {
                    h.execute_mut(KvWrite::Put(key(t, i), i)).unwrap();
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "ack {t} {i}").unwrap();
                    out.flush().unwrap();
                    if t == 0 && i % 50 == 49 {
                        kv.checkpoint().unwrap();
                    }
                }
            });
        }
    });
}

fn rounds(kind: &str, path: &std::path::Path, rng: &mut Rng) {
    let rounds = env("NR_DURABLE_KILL_ROUNDS", 10);
    let mut acked = [0u64; THREADS as usize];
    let mut survived = [0u64; THREADS as usize];
    for round in 0..rounds {
        let spec = format!("{kind}|{}|{}", 1 + round % 2, path.display());
        let mut child = testkit::child::child_command("sigkill_child")
            .env(CHILD_ENV, &spec)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the child");
        let lines = BufReader::new(child.stdout.take().expect("piped"));
        let kill_after = 1 + rng.below(120);
        let record = |line: &str, acked: &mut [u64]| {
            // The harness's "test sigkill_child ... " shares the first line.
            if let Some(rest) = line.trim().split("ack ").nth(1) {
                let (t, i) = rest.split_once(' ').expect("ack t i");
                let (t, i): (usize, u64) = (t.parse().unwrap(), i.parse().unwrap());
                acked[t] = acked[t].max(i + 1);
                return true;
            }
            false
        };
        let what = format!("round {round}");
        testkit::child::kill_after_acks(
            &mut child,
            lines,
            kill_after,
            &mut acked[..],
            &what,
            record,
        );
        let (medium, replicas) = medium(&spec);
        let kv = Durable::<Kv>::builder()
            .replicas(replicas)
            .medium(medium)
            .open(Kv::default)
            .unwrap_or_else(|e| panic!("round {round}: recovery failed: {e}"));
        for t in 0..THREADS {
            let last = kv.register(t).unwrap().last_applied().unwrap();
            let m = check_thread(&kv, t, acked[t as usize], last)
                .unwrap_or_else(|e| panic!("{kind} round {round}: {e}"));
            assert!(
                m >= survived[t as usize],
                "round {round}: thread {t} lost writes of an earlier round"
            );
            survived[t as usize] = m;
        }
    }
    println!("{kind}: {rounds} SIGKILL rounds, acknowledged {acked:?}, survived {survived:?}");
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    testkit::child::assert_child_fails_alone("sigkill_child", CHILD_ENV);
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x51_61_4b);
    rounds("file", &tmp.path().join("store"), &mut rng);
    rounds("pmem", &tmp.path().join("log.pmem"), &mut rng);
}
