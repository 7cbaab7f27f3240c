//! Crash-and-recover demo: a process keeps enqueuing to a persistent queue in a file and is
//! killed (SIGKILL) at a random moment; on restart the program reopens the file, recovers the
//! interrupted enqueue and reports what it found. Three rounds, each continuing the same queue.
//!
//! Like the paper's system support (§2), the child persists the sequence number of each
//! enqueue (in a second, tiny region) before calling it; enqueue number `s` enqueues the value
//! `s - 1`, so after recovery the queue must hold exactly `0, 1, ..., n - 1` in order.
//!
//! ```text
//! cargo run --release -p pcomb --example queue_crash_demo [-- DIR]
//! ```
//!
//! (A killed process loses nothing the kernel's page cache holds, so this shows recovery on a
//! real file, not flush placement; the crash tests on the simulated domain check that.)
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use pcomb::pmem::{Hardware, Persist, Region};
use pcomb::structures::{Options, PBQueue};
use pcomb::Recovered;

const QUEUE_LAYOUT: u64 = 0x0DE3_0001;
const SEQ_LAYOUT: u64 = 0x0DE3_0002;
const CAPACITY: u32 = 4_000_000;

fn paths(dir: &Path) -> (PathBuf, PathBuf) {
    (dir.join("queue.pmem"), dir.join("seq.pmem"))
}

/// The persisted sequence number of the child's current enqueue.
fn seq_word(region: &Region<Hardware>) -> *mut u64 {
    let off = region.root().expect("set at creation");
    region.ptr::<u64>(off).expect("in bounds").as_ptr()
}

/// Child: enqueue `seq - 1` for seq = 1, 2, ... until killed (or full).
fn child(dir: &Path) {
    let (qp, sp) = paths(dir);
    let queue = PBQueue::open(Region::open(&qp, QUEUE_LAYOUT).expect("queue file")).expect("queue");
    let side = Region::open(&sp, SEQ_LAYOUT).expect("seq file");
    let p = seq_word(&side);
    let mut h = queue.register_as(0).expect("slot 0");
    // The parent recovered the last enqueue; continue after it.
    // SAFETY: an aligned u64 of the side region; this process is its only user.
    let mut seq = unsafe { p.read() };
    if seq > 0 {
        let _ = h.recover_enqueue(seq - 1, seq);
    }
    loop {
        seq += 1;
        // SAFETY: as above.
        unsafe { p.write(seq) };
        // SAFETY: `p` is a u64 of the region (checked by `ptr`), mapped while it lives.
        unsafe { side.persist().pwb(p.cast(), 8) };
        side.persist().psync();
        if h.enqueue(seq - 1).is_err() {
            eprintln!("child: queue full");
            std::process::exit(0);
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("child") {
        child(Path::new(&args.next().expect("child DIR")));
        return Ok(());
    }
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join(format!("pcomb-demo-{}", std::process::id())));
    std::fs::create_dir_all(&dir)?;
    let (qp, sp) = paths(&dir);
    let _ = std::fs::remove_file(&qp);
    let _ = std::fs::remove_file(&sp);
    let size = PBQueue::<Hardware>::bytes_needed(CAPACITY, 1) + (1 << 16);
    drop(PBQueue::create(
        Region::create(&qp, QUEUE_LAYOUT, size as u64)?,
        CAPACITY,
        1,
        Options::default(),
    )?);
    {
        let side = Region::create(&sp, SEQ_LAYOUT, 1 << 13)?;
        let off = side.allocator(64).alloc::<u64>()?;
        side.set_root(off)?;
    }
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)?
        .subsec_nanos();
    for round in 1..=3u32 {
        let mut c = Command::new(std::env::current_exe()?)
            .arg("child")
            .arg(&dir)
            .stdout(Stdio::null())
            .spawn()?;
        let ms = 100 + u64::from(nanos.wrapping_mul(round * 2_654_435_761) % 300);
        std::thread::sleep(Duration::from_millis(ms));
        c.kill()?; // SIGKILL
        c.wait()?;

        let queue = PBQueue::open(Region::open(&qp, QUEUE_LAYOUT)?)?;
        let side = Region::open(&sp, SEQ_LAYOUT)?;
        // SAFETY: an aligned u64 of the side region; the child is dead.
        let seq = unsafe { seq_word(&side).read() };
        let mut h = queue.register_as(0)?;
        let outcome = match h.recover_enqueue(seq - 1, seq) {
            Recovered::Applied(r) => format!("had taken effect ({r:?})"),
            Recovered::Reexecuted(r) => format!("had not taken effect; done now ({r:?})"),
        };
        drop(h);
        let mut queue = queue;
        queue.audit()?;
        println!(
            "round {round}: killed after {ms} ms; enqueue #{seq} (value {}) {outcome}; \
             the queue holds values 0..{seq}",
            seq - 1
        );
    }
    // Check the whole queue: exactly 0, 1, ..., n - 1 in order.
    let queue = PBQueue::open(Region::open(&qp, QUEUE_LAYOUT)?)?;
    let mut h = queue.register()?;
    let mut n = 0u64;
    while let Some(v) = h.dequeue() {
        assert_eq!(v, n, "values lost, duplicated or out of order");
        n += 1;
    }
    println!("drained {n} values: 0..{n} in order, none lost or duplicated");
    drop(h);
    drop(queue);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
