//! A real crash: a child process (this test binary, re-run in child mode) inserts random keys
//! into a file-backed Mirror hash set (growing from 16 buckets, so kills land while it grows)
//! and prints each key after its insert returned; the parent kills it with SIGKILL at varying times, recovers the file and checks every acknowledged
//! insert. A SIGKILL keeps the page cache, so this tests recovery and durable linearizability
//! across a process kill, not flush ordering (the simulated-domain crash tests do that).

use mirror_atomic::flavor::Mirror;
use mirror_atomic::{HashSet, Heap, Region};
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

const LAYOUT: u64 = 0x5167_4b11;
/// 8 MiB: room for every key of `KEYS` with its sentinels (about 1.5 blocks of 32 bytes per
/// key) several times over, so a child that runs long on a fast, quiet machine never fills the
/// heap (with 2 MiB and 200,000 keys it did, at about 37,000 acknowledged inserts).
const SIZE: u64 = 256 + 128 * 65536;
/// The key range: bounded so the set's size is bounded however long the child runs; an
/// exhausted heap then means a leak, and the child's `expect("room")` reports it.
const KEYS: u64 = 50_000;
const CHILD_ENV: &str = "MIRROR_SIGKILL_CHILD_FILE";
type Set = HashSet<Mirror, pmem::Hardware>;

/// The child process of `acknowledged_inserts_survive_sigkill`: inserts forever. Ignored in a
/// normal run; fails when run without the parent's `CHILD_ENV`.
#[test]
#[ignore = "child process of acknowledged_inserts_survive_sigkill, which runs it with --ignored --exact"]
fn sigkill_child() {
    let path = testkit::child::child_spec(CHILD_ENV, "acknowledged_inserts_survive_sigkill");
    let set = match Region::open(&path, LAYOUT) {
        Ok(region) => Set::recover(region).expect("child recovery"),
        // From 16 buckets: the child's thousands of keys double the table many times, so
        // kills land during growth.
        Err(_) => Set::new(Heap::create(&path, LAYOUT, SIZE).expect("create")).expect("set"),
    };
    let mut out = std::io::stdout().lock();
    let mut x = u64::from(std::process::id()) | 1;
    loop {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let key = x % KEYS;
        set.insert(key).expect("room");
        writeln!(out, "ack {key}").expect("stdout");
        out.flush().expect("stdout");
    }
}

#[test]
fn acknowledged_inserts_survive_sigkill() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("set.pmem");
    let mut acknowledged = Vec::new();
    for round in 0..5u64 {
        let mut child = testkit::child::child_command("sigkill_child")
            .env(CHILD_ENV, &path)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        // Wait for the first acknowledgement, then let the child run 5-45 ms more.
        let first = loop {
            let line = lines.next().expect("child exited").expect("read");
            if let Some(k) = line.strip_prefix("ack ") {
                break k.parse::<u64>().expect("key");
            }
        };
        #[allow(clippy::disallowed_methods)] // a pipe reader, not code under test
        let reader = std::thread::spawn(move || {
            lines
                .map_while(Result::ok)
                .filter_map(|l| l.strip_prefix("ack ").and_then(|k| k.parse::<u64>().ok()))
                .collect::<Vec<u64>>()
        });
        std::thread::sleep(Duration::from_millis(5 + round * 10));
        child.kill().expect("SIGKILL");
        child.wait().expect("wait");
        acknowledged.push(first);
        acknowledged.extend(reader.join().expect("reader"));
        let set = Set::recover(Region::open(&path, LAYOUT).expect("open")).expect("recover");
        let (keys, ok) = set.snapshot();
        assert!(ok, "round {round}: recovered set malformed");
        let lost: Vec<u64> = acknowledged
            .iter()
            .copied()
            .filter(|&k| !set.contains(k))
            .collect();
        assert!(
            lost.is_empty(),
            "round {round}: acknowledged inserts lost: {lost:?}"
        );
        eprintln!(
            "round {round}: {} acknowledged so far, {} keys recovered",
            acknowledged.len(),
            keys.len()
        );
    }
}

/// The child entry point cannot pass on its own (issue 19, item 9).
#[test]
fn sigkill_child_fails_without_its_parent() {
    testkit::child::assert_child_fails_alone("sigkill_child", CHILD_ENV);
}
