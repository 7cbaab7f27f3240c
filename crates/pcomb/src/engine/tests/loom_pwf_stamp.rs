//! Loom model: PWFComb1's install / stamp / help handshake (`engine::pwf`, "Stamped records"),
//! on a model of the persistence domain.
//!
//! `Media` keeps what would survive a crash: a `pwb` snapshots the words of the range into the
//! calling thread's pending set, a `psync` commits that thread's pending snapshots (as
//! `pmem::sim` does), and `pfence` is not expected at all (the stamped protocol issues none).
//! Properties, in every interleaving up to `LOOM_MAX_PREEMPTIONS` (CI: 2), 2 threads:
//!
//! - a writer returns only once the media holds a valid record whose state includes its
//!   operation: reopening the media (recovery: the valid record with the largest pass) gives
//!   such a state;
//! - a reader (lock-free; it helps stamp and persist the record it read when its installer has
//!   not published `Durable` yet) returns only once the media holds a valid record at least as
//!   new as the state it read;
//! - each operation is applied once.
//!
//! The writer's install and the reader's help race on the record's check word (the
//! installer's store, the helper's CAS from the mark) and on its write-back.

use loom::sync::{Arc, Mutex};
use loom::thread;

use super::Add;
use crate::engine::pwf::WfInstance;
use crate::sync::{AtomicU64, Ordering};
use crate::words;
use pmem::Persist;

type Inst = WfInstance<u64, u64, u64, true>;

/// The model's persistence domain over `words`.
#[derive(Clone)]
struct Media {
    words: Arc<Box<[AtomicU64]>>,
    /// `(thread, word, value)` snapshots waiting for their thread's psync.
    pending: Arc<Mutex<Vec<(thread::ThreadId, usize, u64)>>>,
    image: Arc<Mutex<Vec<u64>>>,
}

impl Persist for Media {
    unsafe fn pwb(&self, addr: *const u8, len: usize) {
        let base = self.words.as_ptr() as usize;
        let first = (addr as usize - base) / core::mem::size_of::<AtomicU64>();
        let me = thread::current().id();
        let mut pending = self.pending.lock().unwrap();
        for i in first..first + len / 8 {
            // Acquire: as in `words::load`.
            pending.push((me, i, self.words[i].load(Ordering::Acquire)));
        }
    }

    fn pfence(&self) {
        panic!("the stamped protocol issues no pfence");
    }

    fn psync(&self) {
        let me = thread::current().id();
        let mut pending = self.pending.lock().unwrap();
        let mut image = self.image.lock().unwrap();
        for &(t, i, v) in pending.iter() {
            if t == me {
                image[i] = v;
            }
        }
        pending.retain(|&(t, _, _)| t != me);
    }
}

impl Media {
    /// The state recovery finds in the media now (the valid record with the largest pass).
    fn recovered(&self) -> u64 {
        let image = self.image.lock().unwrap().clone();
        let words: Box<[AtomicU64]> = image.into_iter().map(AtomicU64::new).collect();
        let inst = Inst::new(0, 2);
        assert!(
            inst.valid(&words, &pmem::NoPersist),
            "no valid record in the media"
        );
        inst.state_now(&words)
    }
}

/// A fresh instance holding 0, its words all in the media (as `create` leaves them).
fn setup() -> (Arc<Inst>, Media) {
    let inst = Inst::new(0, 2);
    let words = Arc::new(words::zeroed(Inst::words(2)));
    inst.init(&words, &0);
    // Relaxed: not shared yet.
    let image = words.iter().map(|w| w.load(Ordering::Relaxed)).collect();
    let media = Media {
        words,
        pending: Arc::new(Mutex::new(Vec::new())),
        image: Arc::new(Mutex::new(image)),
    };
    for t in 0..2 {
        inst.seed(&media.words, t);
    }
    (Arc::new(inst), media)
}

#[test]
fn a_writer_returns_once_its_operation_is_in_a_valid_durable_record() {
    loom::model(|| {
        let (inst, media) = setup();
        let other = {
            let (inst, media) = (inst.clone(), media.clone());
            thread::spawn(move || {
                let r = inst.execute(&media.words, &media, &Add, 1, 10, 1);
                assert!(media.recovered() >= r + 10, "thread 1's add is durable");
                r
            })
        };
        let r = inst.execute(&media.words, &media, &Add, 0, 1, 1);
        let rec = media.recovered();
        assert!(rec == 1 || rec == 11, "thread 0's add is durable: {rec}");
        let r1 = other.join().unwrap();
        let mut all = [r, r1];
        all.sort_unstable();
        assert!(matches!(all, [0, 1] | [0, 10]), "{all:?}");
        assert_eq!(media.recovered(), 11);
    });
}

#[test]
fn a_reader_returns_once_the_state_it_read_is_durable() {
    loom::model(|| {
        let (inst, media) = setup();
        let writer = {
            let (inst, media) = (inst.clone(), media.clone());
            thread::spawn(move || inst.execute(&media.words, &media, &Add, 0, 5, 1))
        };
        let seen = inst.read(&media.words, &media);
        assert!(seen == 0 || seen == 5, "{seen}");
        assert!(
            media.recovered() >= seen,
            "read {seen}, but the media recovers {}",
            media.recovered()
        );
        assert_eq!(writer.join().unwrap(), 0);
        assert_eq!(media.recovered(), 5);
    });
}
