//! SIGKILL rounds for `PBComb1` over a mapped file (`Hardware` backend): a child process adds
//! 1 repeatedly, persisting its sequence number in a side region before each call, and is killed
//! at a random moment; the parent reopens the file, checks that no acknowledged operation was
//! lost (the state is the child's `seq` or `seq - 1`), and that `recover(1, seq)` is exact.
//! This exercises recovery on a real mapping (the record scan, the pass number, the handle's
//! sequence numbers across processes); flush placement is the simulator's job
//! (`pbcomb1_crash.rs`), since a killed process loses nothing the page cache holds.
//!
//! `PCOMB_SIGKILL_ROUNDS` sets the rounds (default 100). The child is this test binary re-run
//! with `PCOMB1_SIGKILL_CHILD` naming the two files.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::process::Stdio;
use std::time::Duration;

use pcomb::objects::Counter;
use pcomb::pmem::{Hardware, Offset, Persist, Region};
use pcomb::{PBComb1, Recovered};

const CHILD_ENV: &str = "PCOMB1_SIGKILL_CHILD";
const OBJ_LAYOUT: u64 = 0x5042_314B;
const SEQ_LAYOUT: u64 = 0x5042_3153;

/// The persisted sequence number: the root word of the side region.
fn seq_word(side: &Region<Hardware>) -> *mut u64 {
    let off = side.root().expect("the parent set the root");
    side.ptr::<u64>(off).expect("in bounds").as_ptr()
}

/// The child role: adds 1 until killed. Ignored in a normal run; fails when run without the
/// parent's `CHILD_ENV`.
#[test]
#[ignore = "child process of pbcomb1_survives_sigkill, which runs it with --ignored --exact"]
fn sigkill_child() {
    let spec = testkit::child::child_spec(CHILD_ENV, "pbcomb1_survives_sigkill");
    let (obj_path, seq_path) = spec.split_once('|').expect("two paths");
    let side = Region::open(seq_path, SEQ_LAYOUT).expect("side region");
    let region = Region::open(obj_path, OBJ_LAYOUT).expect("object region");
    let obj = PBComb1::<Counter, Hardware>::open(region).expect("object");
    let p = seq_word(&side);
    // SAFETY: an aligned u64 of the side region (checked by `ptr`); this process is its only user.
    let mut seq = unsafe { p.read() };
    let mut h = obj.register_as(0).expect("slot 0");
    let _ = h.recover(1, seq); // already recovered by the parent: resynchronizes the handle
    loop {
        seq += 1;
        // SAFETY: as above.
        unsafe { p.write(seq) };
        // SAFETY: `p` is a word of the side region, mapped while `side` lives.
        unsafe { side.persist().pwb(p.cast(), 8) };
        side.persist().psync();
        assert_eq!(
            h.execute_mut(1),
            seq - 1,
            "one thread: each add returns the count before it"
        );
    }
}

#[test]
fn pbcomb1_survives_sigkill() {
    let rounds: u64 = std::env::var("PCOMB_SIGKILL_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let dir = std::env::temp_dir().join(format!("pcomb1-sigkill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (obj_path, seq_path) = (dir.join("obj"), dir.join("seq"));
    {
        let region = Region::create(&obj_path, OBJ_LAYOUT, 1 << 16).expect("object region");
        PBComb1::create(region, Counter::default(), 2).expect("object");
        let side = Region::create(&seq_path, SEQ_LAYOUT, 1 << 14).expect("side region");
        let off: Offset = side.allocator(64).alloc::<u64>().expect("room");
        side.set_root(off).expect("root");
    }
    let mut last = 0;
    for round in 0..rounds {
        let mut child = testkit::child::child_command("sigkill_child")
            .env(
                CHILD_ENV,
                format!("{}|{}", obj_path.display(), seq_path.display()),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the child");
        std::thread::sleep(Duration::from_millis(
            20 + (round * 7919 + u64::from(std::process::id())) % 40,
        ));
        child.kill().expect("SIGKILL the child");
        let _ = child.wait();

        let side = Region::open(&seq_path, SEQ_LAYOUT).expect("side region");
        // SAFETY: an aligned u64 of the side region; the child is dead.
        let seq = unsafe { seq_word(&side).read() };
        let region = Region::open(&obj_path, OBJ_LAYOUT).expect("object region");
        let obj = PBComb1::<Counter, Hardware>::open(region).expect("reopens after SIGKILL");
        let before = obj.register().expect("slot").execute(());
        assert!(
            before == seq || before + 1 == seq,
            "round {round}: state {before}, child at seq {seq}"
        );
        if seq > 0 {
            let mut h = obj.register_as(0).expect("slot 0");
            match h.recover(1, seq) {
                Recovered::Applied(r) => assert_eq!((before, r), (seq, seq - 1), "round {round}"),
                Recovered::Reexecuted(r) => {
                    assert_eq!((before, r), (seq - 1, seq - 1), "round {round}")
                }
            }
        }
        assert_eq!(
            obj.register().expect("slot").execute(()),
            seq,
            "round {round}"
        );
        assert!(seq >= last, "sequence numbers only grow");
        last = seq;
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(last > 0, "the children never ran an operation");
    eprintln!("PBComb1: {rounds} SIGKILL rounds, {last} operations in all, none lost");
}

/// The child entry point cannot pass on its own (issue 19, item 9).
#[test]
fn sigkill_child_fails_without_its_parent() {
    testkit::child::assert_child_fails_alone("sigkill_child", CHILD_ENV);
}
