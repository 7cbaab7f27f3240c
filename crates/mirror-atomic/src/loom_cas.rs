//! Loom models of the Mirror compare-and-swap (paper Figure 4) with helping.
//!
//! Each model runs the real `cas_pair_fenced` (fenced: Figure 4 as the paper writes it) on two pairs (volatile, persistent) through the sync
//! shim, where the 16-byte word is one step under a loom mutex (see `sync.rs` for why that is
//! faithful). A recorder stands for the persistence domain: `flush_pair` snapshots the
//! persistent pair into the calling thread's pending set, `fence` makes that thread's pending
//! snapshots durable. Every model checks the durability invariant of §5 (a value visible in
//! the volatile replica is durable: the durable sequence number is at least the volatile one)
//! besides linearizability of the outcomes. Run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release -p mirror-atomic --lib loom_`
//! (exhaustive within the preemption bound).

use crate::patomic::{cas_pair_fenced, load_pair};
use crate::persist::Durability;
use crate::sync::{lock, model, thread, Arc, AtomicPair, AtomicWord, Mutex};

struct Recorder {
    pending: Mutex<Vec<(thread::ThreadId, u128)>>,
    durable: Mutex<u128>,
}

impl Recorder {
    fn new() -> Self {
        Self {
            pending: Mutex::new(Vec::new()),
            durable: Mutex::new(0),
        }
    }

    fn durable_seq(&self) -> u64 {
        (*lock(&self.durable) >> 64) as u64
    }

    fn durable_val(&self) -> u64 {
        *lock(&self.durable) as u64
    }
}

impl Durability for Recorder {
    fn flush_pair(&self, pair: &AtomicPair) {
        let snap = pair.load();
        lock(&self.pending).push((thread::current().id(), snap));
    }
    unsafe fn flush_bytes(&self, _: *const u8, _: usize) {}
    fn flush_word(&self, _: &AtomicWord) {}
    fn fence(&self) {
        let me = thread::current().id();
        let mut pending = lock(&self.pending);
        let mut durable = lock(&self.durable);
        pending.retain(|&(t, snap)| {
            if t == me {
                if (snap >> 64) > (*durable >> 64) {
                    *durable = snap;
                }
                false
            } else {
                true
            }
        });
    }
    fn sync(&self) {
        self.fence();
    }
}

struct Cell {
    vol: AtomicPair,
    per: AtomicPair,
    media: Recorder,
}

impl Cell {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            vol: AtomicPair::new(0),
            per: AtomicPair::new(0),
            media: Recorder::new(),
        })
    }

    fn cas(&self, current: u64, new: u64) -> Result<u64, u64> {
        let r = cas_pair_fenced::<_, true, true>(&self.vol, &self.per, &self.media, current, new);
        self.check_durable();
        r
    }

    fn load(&self) -> u64 {
        let v = load_pair(&self.vol);
        self.check_durable();
        v
    }

    /// A value visible in the volatile replica is durable (read vol first: durable only grows).
    fn check_durable(&self) {
        let vol_seq = (self.vol.load() >> 64) as u64;
        let dur = self.media.durable_seq();
        assert!(
            dur >= vol_seq,
            "volatile seq {vol_seq} visible before durable seq {dur}"
        );
    }
}

#[test]
fn loom_two_cas_race_exactly_one_wins() {
    model(|| {
        let c = Cell::new();
        let c2 = Arc::clone(&c);
        // A CAS that failed on a value must see that value (or a later one) on its next load:
        // the failing CAS helps the write that beat it (Figure 4 line 47).
        let t = thread::spawn(move || {
            let r = c2.cas(0, 2);
            if r.is_err() {
                assert_ne!(
                    c2.load(),
                    0,
                    "failed CAS saw a write, then loaded the old value"
                );
            }
            r
        });
        let r1 = c.cas(0, 1);
        if r1.is_err() {
            assert_ne!(
                c.load(),
                0,
                "failed CAS saw a write, then loaded the old value"
            );
        }
        let r2 = t.join().expect("no panic");
        match (r1, r2) {
            (Ok(0), Err(1)) => assert_eq!(c.load(), 1),
            (Err(2), Ok(0)) => assert_eq!(c.load(), 2),
            other => panic!("not linearizable: {other:?}"),
        }
        assert_eq!(
            c.vol.load(),
            c.per.load(),
            "replicas differ after both returned"
        );
        assert_eq!(c.media.durable_val(), c.load(), "final value not durable");
    });
}

#[test]
fn loom_reader_during_cas_never_goes_back() {
    model(|| {
        let c = Cell::new();
        let c2 = Arc::clone(&c);
        let t = thread::spawn(move || {
            let a = c2.load();
            let b = c2.load();
            (a, b)
        });
        assert_eq!(c.cas(0, 1), Ok(0));
        let (a, b) = t.join().expect("no panic");
        assert!(a <= 1 && b <= 1 && a <= b, "reads {a} then {b}");
        assert_eq!(c.load(), 1);
    });
}

#[test]
fn loom_failed_cas_helps_the_write_it_saw() {
    // A CAS that fails because it saw another thread's persistent write must leave that write
    // visible (Figure 4 lines 19-26 and 47): its next load cannot return the older value.
    model(|| {
        let c = Cell::new();
        let c2 = Arc::clone(&c);
        let t = thread::spawn(move || {
            let _ = c2.cas(0, 1);
        });
        match c.cas(5, 6) {
            Err(1) => assert_eq!(c.load(), 1, "failed CAS saw 1, then loaded the old value"),
            Err(0) => {}
            other => panic!("unexpected {other:?}"),
        }
        t.join().expect("no panic");
        assert_eq!(c.load(), 1);
        assert_eq!(c.vol.load(), c.per.load());
    });
}

#[test]
fn loom_concurrent_increments_both_count() {
    model(|| {
        let c = Cell::new();
        let c2 = Arc::clone(&c);
        let inc = |c: &Cell| {
            let mut cur = c.load();
            loop {
                match c.cas(cur, cur + 1) {
                    Ok(prev) => return prev,
                    Err(seen) => cur = seen,
                }
            }
        };
        let t = thread::spawn(move || inc(&c2));
        let a = inc(&c);
        let b = t.join().expect("no panic");
        assert_ne!(a, b, "two increments returned the same previous value");
        assert_eq!(c.load(), 2);
        assert_eq!(c.media.durable_val(), 2);
    });
}

#[test]
fn loom_same_value_write_does_not_fail_a_cas() {
    // Writing the current value again only moves the sequence number; a concurrent strong CAS
    // expecting that value must still succeed (Figure 4 line 46 retries).
    model(|| {
        let c = Cell::new();
        let c2 = Arc::clone(&c);
        let t = thread::spawn(move || c2.cas(0, 0));
        assert_eq!(
            c.cas(0, 1),
            Ok(0),
            "CAS failed although the value was always 0 before it"
        );
        let r = t.join().expect("no panic");
        assert!(matches!(r, Ok(0) | Err(1)), "same-value CAS returned {r:?}");
        assert_eq!(c.load(), 1);
    });
}
