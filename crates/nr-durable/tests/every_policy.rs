//! The loss window of `SyncPolicy::Every(d)`, with a real crash: a child process appends 50
//! operations, one per call, under the policy and is killed with SIGKILL.
//!
//! - With `d` = 1 hour the appends returned but are only queued: all 50 are lost, and the store
//!   reopens cleanly with none of them (a prefix: the empty one).
//! - With `d` = 5 ms the child waits (polling, not timing) until `durable_end()` covers its
//!   appends, which only the background flusher can do, and is killed then: all 50 survive.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use nr_durable::{Medium, Store, SyncPolicy};

const CHILD_ENV: &str = "NR_DURABLE_EVERY_CHILD";
const WRITES: u64 = 50;

/// The child role: `<period ms>|<dir>`; appends, waits for the flusher when the period is
/// short, prints `ready`, and waits to be killed.
#[test]
#[ignore = "child process of the_loss_window_is_what_the_flusher_has_not_written, which runs it with --ignored --exact"]
fn every_child() {
    let spec = testkit::child::child_spec(
        CHILD_ENV,
        "the_loss_window_is_what_the_flusher_has_not_written",
    );
    let (ms, dir) = spec.split_once('|').expect("ms|dir");
    let period = Duration::from_millis(ms.parse().expect("ms"));
    let medium = Medium::File { dir: dir.into() };
    let (store, rec) = Store::<u64>::open::<()>(&medium, SyncPolicy::Every(period)).unwrap();
    assert_eq!(rec.end, 0);
    for i in 0..WRITES {
        store.append(i, &[&(i * 3)]).unwrap();
    }
    if period < Duration::from_secs(1) {
        while store.durable_end() < WRITES {
            std::thread::yield_now();
        }
    }
    println!("ready");
    loop {
        std::thread::park();
    }
}

/// Runs the child with period `ms` on `dir`, kills it once it is ready; the operations that
/// survived (checked to be the first ones, in order).
fn killed_after_ready(ms: u64, dir: &std::path::Path) -> u64 {
    let mut child = testkit::child::child_command("every_child")
        .env(CHILD_ENV, format!("{ms}|{}", dir.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let out = BufReader::new(child.stdout.take().expect("piped"));
    for line in out.lines() {
        // The harness's "test every_child ... " shares the first line.
        if line.expect("read").trim().ends_with("ready") {
            break;
        }
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let medium = Medium::File { dir: dir.into() };
    let (_store, rec) = Store::<u64>::open::<()>(&medium, SyncPolicy::EveryBatch).unwrap();
    let want: Vec<(u64, u64)> = (0..rec.end).map(|i| (i, i * 3)).collect();
    assert_eq!(rec.ops, want, "not a prefix of the appended operations");
    rec.end
}

#[test]
fn the_loss_window_is_what_the_flusher_has_not_written() {
    testkit::child::assert_child_fails_alone("every_child", CHILD_ENV);
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(
        killed_after_ready(3_600_000, &tmp.path().join("hour")),
        0,
        "queued operations survived"
    );
    assert_eq!(
        killed_after_ready(5, &tmp.path().join("ms")),
        WRITES,
        "flushed operations were lost"
    );
}
