//! A real crash: a child process running operations on an object in a mapped file
//! (`Hardware` backend) is killed with SIGKILL at random times; the parent reopens the file,
//! recovers the child's pending operation and checks it. This tests the recovery logic on a
//! real mapping (a killed process loses nothing the kernel's page cache holds, so it cannot test
//! flush placement; the simulated-domain crash tests do).
//!
//! `PCOMB_SIGKILL_ROUNDS` sets the rounds per protocol (default 100). Each round checks that no
//! acknowledged operation was lost (the recovered count is at least the child's persisted
//! `seq - 1`) and that `recover` is exact.
//!
//! The child is this test binary re-run with `PCOMB_SIGKILL_CHILD` naming the files and the
//! protocol. Like the paper's system support (§2), the child persists `seq` (in a second
//! region) before each operation; `recover(op, seq)` then runs in the parent.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use pcomb::objects::Counter;
use pcomb::pmem::{Hardware, Offset, Persist, Region};
use pcomb::{PBComb, PWFComb, Recovered};

const CHILD_ENV: &str = "PCOMB_SIGKILL_CHILD";
const OBJ_LAYOUT: u64 = 0x5349_474B;
const SEQ_LAYOUT: u64 = 0x5345_5121;

/// The child's persisted sequence number: the root of the side region.
fn seq_slot(region: &Region<Hardware>) -> *mut u64 {
    let off = region.root().expect("parent set the root");
    region.ptr::<u64>(off).expect("in bounds").as_ptr()
}

macro_rules! child_loop {
    ($obj:ident, $obj_path:expr, $side:expr) => {{
        let obj =
            $obj::<Counter, Hardware>::open(Region::open($obj_path, OBJ_LAYOUT).expect("obj"))
                .expect("object");
        let p = seq_slot(&$side);
        // SAFETY: an aligned u64 of the side region; this process is the only user.
        let mut seq = unsafe { p.read() };
        let mut h = obj.register_as(0).expect("slot 0");
        // Resynchronize the handle's sequence number (the parent recovered `seq` already).
        let _ = h.recover(1, seq);
        loop {
            seq += 1;
            // SAFETY: as above.
            unsafe { p.write(seq) };
            // SAFETY: `p` is a u64 of the region (checked by `ptr`), mapped while it lives.
            unsafe { $side.persist().pwb(p.cast(), 8) };
            $side.persist().psync();
            let r = h.execute_mut(1);
            assert_eq!(
                r,
                seq - 1,
                "one thread: each add returns the count before it"
            );
        }
    }};
}

/// The child role: runs operations until killed. Ignored in a normal run; fails when run
/// without the parent's `CHILD_ENV`.
#[test]
#[ignore = "child process of pbcomb_survives_sigkill and pwfcomb_survives_sigkill, which run it with --ignored --exact"]
fn sigkill_child() {
    let spec = testkit::child::child_spec(CHILD_ENV, "pbcomb_survives_sigkill");
    let mut parts = spec.split('|');
    let (proto, obj_path, seq_path) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let side = Region::open(seq_path, SEQ_LAYOUT).expect("side region");
    if proto == "pb" {
        child_loop!(PBComb, obj_path, side)
    } else {
        child_loop!(PWFComb, obj_path, side)
    }
}

fn spawn_child(proto: &str, obj: &Path, seq: &Path) -> std::process::Child {
    testkit::child::child_command("sigkill_child")
        .env(
            CHILD_ENV,
            format!("{proto}|{}|{}", obj.display(), seq.display()),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the child")
}

macro_rules! recover_in_parent {
    ($obj:ident, $obj_path:expr, $seq_path:expr) => {{
        let side = Region::open($seq_path, SEQ_LAYOUT).expect("side region");
        // SAFETY: an aligned u64 of the side region; the child is dead.
        let seq = unsafe { seq_slot(&side).read() };
        let obj =
            $obj::<Counter, Hardware>::open(Region::open($obj_path, OBJ_LAYOUT).expect("obj"))
                .expect("object reopens after SIGKILL");
        let before = obj.register().unwrap().execute(());
        assert!(
            before == seq || before + 1 == seq,
            "state {before}, child was at seq {seq}"
        );
        if seq > 0 {
            let mut h = obj.register_as(0).unwrap();
            match h.recover(1, seq) {
                Recovered::Applied(r) => assert_eq!((before, r), (seq, seq - 1)),
                Recovered::Reexecuted(r) => assert_eq!((before, r), (seq - 1, seq - 1)),
            }
        }
        assert_eq!(obj.register().unwrap().execute(()), seq);
        seq
    }};
}

fn run(proto: &str, rounds: u32) {
    let dir = std::env::temp_dir().join(format!("pcomb-sigkill-{proto}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (obj_path, seq_path): (PathBuf, PathBuf) = (dir.join("obj"), dir.join("seq"));
    {
        let r = Region::create(&obj_path, OBJ_LAYOUT, 1 << 16).expect("obj region");
        if proto == "pb" {
            PBComb::create(r, Counter::default(), 2).expect("object");
        } else {
            PWFComb::create(r, Counter::default(), 2).expect("object");
        }
        let side = Region::create(&seq_path, SEQ_LAYOUT, 1 << 14).expect("side region");
        let off: Offset = side.allocator(64).alloc::<u64>().expect("room");
        side.set_root(off).expect("root");
    }
    let mut last = 0;
    for round in 0..rounds {
        let mut child = spawn_child(proto, &obj_path, &seq_path);
        // Random-ish delays from the round number and the pid: 20..60 ms.
        let ms = 20 + (u64::from(round) * 7919 + u64::from(std::process::id())) % 40;
        std::thread::sleep(Duration::from_millis(ms));
        child.kill().expect("SIGKILL the child");
        let _ = child.wait();
        let seq = if proto == "pb" {
            recover_in_parent!(PBComb, &obj_path, &seq_path)
        } else {
            recover_in_parent!(PWFComb, &obj_path, &seq_path)
        };
        assert!(seq >= last, "sequence numbers only grow");
        last = seq;
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(last > 0, "the children never got to run an operation");
    eprintln!("{proto}: {rounds} SIGKILL rounds, {last} operations in all, none lost");
}

/// Rounds per protocol: `PCOMB_SIGKILL_ROUNDS` (default 100: about 7 s for both protocols,
/// in parallel, debug build, on the 2-core development machine).
fn rounds() -> u32 {
    std::env::var("PCOMB_SIGKILL_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
}

#[test]
fn pbcomb_survives_sigkill() {
    run("pb", rounds());
}

#[test]
fn pwfcomb_survives_sigkill() {
    run("pwf", rounds());
}

/// The child entry point cannot pass on its own (issue 19, item 9).
#[test]
fn sigkill_child_fails_without_its_parent() {
    testkit::child::assert_child_fails_alone("sigkill_child", CHILD_ENV);
}
