//! Crash tests of `PBComb1` (the self-naming record layout) on the simulated persistence domain.
//!
//! Same checker semantics as `crash_sim.rs`: threads apply per-thread-weighted operations (the
//! counter adds `1 << (16 t)`, the AtomicFloat multiplies by the `t`-th prime), each return is
//! stamped with the simulator's clock, the run crashes at a random persistence event (evictions
//! on; half the runs also have a thread evicting dirty lines or single words *between* events,
//! so a record being built reaches the media torn word by word), and the reopened object must
//! hold every operation that returned before the crash, each pending one entirely or not at
//! all, and `recover(op, seq)` must say `Applied` exactly when the pending operation is in the
//! recovered state, with the response it had; a reopened handle's `seq()` and
//! `last_applied()` must name the thread's last operation in the recovered state, and threads
//! resuming from `seq() + 1` must end with exactly `OPS` operations each.
//!
//! `PCOMB1_CRASH_POINTS` (else `PCOMB_CRASH_POINTS`, else 500) sets the random crash points per
//! object; the figure (>= 10,000 each for the counter and the AtomicFloat) is a release
//! run: `PCOMB_CRASH_POINTS=10000 cargo test --release -p pcomb --test pbcomb1_crash`.
//!
//! Also here: a systematic sweep (every event of a single-threaded run, with and without
//! what a crash may keep by chance), every tearing of the newest record, a record written to
//! the wrong slot, recovery while other threads run, the persistence instructions per
//! operation, damaged images, and the type checks of `open`.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use pcomb::objects::{AtomicFloat, Counter};
use pcomb::pmem::sim::{Image, SimConfig, Simulated};
use pcomb::pmem::{Hardware, Region};
use pcomb::{CombBuildError, Dispatch, PBComb, PBComb1, Pod, Recovered};

const LAYOUT: u64 = 0x5043_4231;
const SIZE: u64 = 1 << 13;
mod crash_common;
mod sim_region;
use crash_common::{Subject, ThreadLog as Log};

/// Creates the object in `region`, runs `threads` threads of `D::OPS` operations (each stops
/// after the return that finds the domain crashed), with an evictor thread if `evictor`.
fn run<D>(region: Region<Simulated>, threads: usize, evictor: bool) -> (Vec<Log>, Simulated)
where
    for<'a> D: Subject + Dispatch<ReadOperation<'a> = ()>,
{
    let sim = region.persist().clone();
    let obj = PBComb1::create(region, D::init(), threads).expect("fits");
    let done = AtomicBool::new(false);
    let mut logs: Vec<Log> = std::thread::scope(|s| {
        if evictor {
            let (sim, done) = (&sim, &done);
            s.spawn(move || {
                while !done.load(Ordering::Relaxed) && !sim.is_crashed() {
                    sim.evict_now();
                    std::thread::yield_now();
                }
            });
        }
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (obj, sim) = (&obj, &sim);
                s.spawn(move || {
                    let mut h = obj.register_as(t).expect("free slot");
                    let mut log = Log {
                        first_seq: h.seq() + 1,
                        ..Log::default()
                    };
                    for i in 0..D::OPS {
                        let r = h.execute_mut(D::op(t));
                        log.stamps.push(sim.stamp());
                        assert_eq!(D::count(r, t), i, "response of op {i} of thread {t}");
                        if sim.is_crashed() {
                            break;
                        }
                    }
                    log
                })
            })
            .collect();
        let logs = workers
            .into_iter()
            .map(|w| w.join().expect("no panic"))
            .collect();
        done.store(true, Ordering::Relaxed);
        logs
    });
    let crash = sim.crash_stamp();
    for l in &mut logs {
        l.settle(crash);
    }
    (logs, sim)
}

/// The crash image of a finished run (crashing now if the run did not).
fn image_of(sim: &Simulated) -> Image {
    sim.crash_image().unwrap_or_else(|| sim.crash())
}

/// Reopens `image`, checks durability and recovers every pending operation (one thread at a
/// time); `Err` describes a violation.
fn check<D>(image: &Image, logs: &[Log]) -> Result<(), String>
where
    for<'a> D: Subject + Dispatch<ReadOperation<'a> = ()>,
{
    let region = sim_region::from_image(image, LAYOUT, SimConfig::new(0)).expect("image opens");
    let obj = match PBComb1::<D, Simulated>::open(region) {
        Ok(obj) => obj,
        Err(CombBuildError::LayoutMismatch {
            detail: "the region has no root object",
            ..
        }) if logs.iter().all(|l| l.completed == 0) => return Ok(()),
        Err(e) => return Err(format!("reopen failed: {e}")),
    };
    let state = obj.register().map_err(|e| e.to_string())?.execute(());
    for (t, log) in logs.iter().enumerate() {
        let n = D::count(state, t);
        // Recovery from the persisted numbers alone (format 2): the reopened handle knows the
        // number of the thread's last operation that took effect, and its response.
        let h = obj.register_as(t).map_err(|e| e.to_string())?;
        crash_common::check_reopened_numbers::<D>(t, n, h.seq(), h.last_applied())?;
        drop(h);
        let applied = n == log.completed + 1 && log.pending.is_some();
        if n != log.completed && !applied {
            return Err(format!(
                "thread {t}: {n} ops in the recovered state, {} completed, pending {:?}",
                log.completed, log.pending
            ));
        }
        let Some(seq) = log.pending else { continue };
        let mut h = obj.register_as(t).map_err(|e| e.to_string())?;
        match h.recover(D::op(t), seq) {
            Recovered::Applied(r) if applied && D::count(r, t) == log.completed => {}
            Recovered::Reexecuted(r) if !applied && D::count(r, t) == log.completed => {}
            other => {
                return Err(format!(
                    "thread {t}: recover(seq {seq}) = {other:?}, state holds {n} of its ops, {} completed",
                    log.completed
                ))
            }
        }
    }
    let after = obj.register().map_err(|e| e.to_string())?.execute(());
    for (t, log) in logs.iter().enumerate() {
        let want = log.completed + u64::from(log.pending.is_some());
        if D::count(after, t) != want {
            return Err(format!(
                "thread {t}: {} ops after recovery, want {want}",
                D::count(after, t)
            ));
        }
    }
    crash_common::check_resumed!(D, obj, logs.len())
}

fn crash_points() -> u64 {
    ["PCOMB1_CRASH_POINTS", "PCOMB_CRASH_POINTS"]
        .iter()
        .find_map(|k| std::env::var(k).ok()?.parse().ok())
        .unwrap_or(500)
}

fn random_crashes<D>(name: &str, seed: u64)
where
    for<'a> D: Subject + Dispatch<ReadOperation<'a> = ()>,
{
    let started = std::time::Instant::now();
    let region = sim_region::simulated(LAYOUT, SIZE, SimConfig::new(seed)).expect("region");
    let (_, sim) = run::<D>(region, 3, false);
    let events = sim.events().max(1);
    static RNG: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    let (mut mid_run, mut evictions) = (0u64, 0u64);
    for i in 0..crash_points() {
        let r = RNG
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_mul(0xBF58_476D_1CE4_E5B9);
        let k = (r >> 11) % (events + events / 8);
        let cfg = SimConfig::new(seed ^ (i << 8)).crash_at(k);
        let region = sim_region::simulated(LAYOUT, SIZE, cfg).expect("region");
        let (logs, sim) = run::<D>(region, 2 + (i % 2) as usize, i % 4 >= 2);
        mid_run += u64::from(sim.crash_image().is_some());
        evictions += sim.evictions();
        let image = image_of(&sim);
        if let Err(e) = check::<D>(&image, &logs) {
            panic!("{name}: crash point {i} (event {k} of ~{events}): {e}");
        }
    }
    assert!(
        mid_run > 0 || crash_points() < 10,
        "{name}: no run crashed mid-way"
    );
    eprintln!(
        "{name}: {} crash points ({mid_run} mid-run, {evictions} evictions) in {:.1} s",
        crash_points(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn counter_random_crashes() {
    random_crashes::<Counter>("PBComb1 counter", 11);
}

#[test]
fn atomic_float_random_crashes() {
    random_crashes::<AtomicFloat>("PBComb1 AtomicFloat", 12);
}

/// Crashes a single-threaded run at every one of its events, with a crash that keeps only
/// what was fenced (`keep = 0`) and one that keeps pending and dirty lines by chance.
#[test]
fn systematic_single_thread_runs() {
    fn sweep<D>(name: &str)
    where
        for<'a> D: Subject + Dispatch<ReadOperation<'a> = ()>,
    {
        for (keep, evict) in [(0.0, 0.0), (0.5, 0.1)] {
            let region = sim_region::simulated(LAYOUT, SIZE, SimConfig::new(9)).expect("region");
            let (_, sim) = run::<D>(region, 1, false);
            let events = sim.events();
            for k in 0..=events {
                let cfg = SimConfig::new(k)
                    .crash_keeps(keep)
                    .evictions(evict)
                    .crash_at(k);
                let region = sim_region::simulated(LAYOUT, SIZE, cfg).expect("region");
                let (logs, sim) = run::<D>(region, 1, false);
                if let Err(e) = check::<D>(&image_of(&sim), &logs) {
                    panic!("{name} (keep {keep}): crash at event {k} of {events}: {e}");
                }
            }
        }
    }
    sweep::<Counter>("PBComb1 counter");
    sweep::<AtomicFloat>("PBComb1 AtomicFloat");
}

/// The word offset of slot `s` of a `PBComb1` whose root is at `root` and whose record has
/// `lines` lines (layout: a header line, then the two slots).
fn slot_at(root: u64, lines: u64, s: u64) -> usize {
    (root + 64 + s * 64 * lines) as usize
}

/// An image with the 8-byte words of `src` at `at..at + n * 8` copied over `dst`'s where
/// `mask` has a bit set.
fn mix(dst: &Image, src: &Image, at: usize, n: usize, mask: u64) -> Image {
    let mut bytes = dst.as_bytes().to_vec();
    for w in 0..n {
        if mask & (1 << w) != 0 {
            let r = at + 8 * w..at + 8 * w + 8;
            bytes[r.clone()].copy_from_slice(&src.as_bytes()[r]);
        }
    }
    Image::from_bytes(bytes)
}

fn counter_in(image: &Image) -> Result<u64, CombBuildError> {
    let region = sim_region::from_image(image, LAYOUT, SimConfig::new(0)).expect("image opens");
    let obj = PBComb1::<Counter, Simulated>::open(region)?;
    let v = obj.register().expect("slot").execute(());
    Ok(v)
}

/// Every way the newest record can be torn (each of its words old or new, independently)
/// yields the previous state: the check rejects the torn record, and the record it replaced
/// was never touched. Only the untorn new record yields the new state. Run for a one-line and
/// a two-line record (the second: a sample of the 2^16 masks).
#[test]
fn every_torn_newest_record_is_rejected() {
    for (threads, lines, masks) in [(1usize, 1u64, 256u64), (8, 2, 4096)] {
        let cfg = SimConfig::new(1).evictions(0.0).crash_keeps(0.0);
        let region = sim_region::simulated(LAYOUT, SIZE, cfg).expect("region");
        let sim = region.persist().clone();
        let obj = PBComb1::create(region, Counter::default(), threads).expect("fits");
        assert_eq!(obj.record_lines() as u64, lines);
        let root = root_of(&sim);
        let mut h = obj.register().expect("slot");
        h.execute_mut(1); // pass 1, slot 1
        h.execute_mut(1); // pass 2, slot 0 (replaces pass 0)
        let before = sim.durable_image();
        h.execute_mut(1); // pass 3, slot 1 (replaces pass 1)
        let after = sim.durable_image();
        assert_eq!(counter_in(&before).expect("opens"), 2);
        let at = slot_at(root, lines, 1);
        let n = (lines * 8) as usize;
        let mut torn = 0;
        for i in 0..masks {
            let mask = if n == 8 {
                i
            } else {
                i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 48
            };
            let image = mix(&before, &after, at, n, mask);
            let whole = image.as_bytes()[at..at + 8 * n] == after.as_bytes()[at..at + 8 * n];
            let old = image.as_bytes()[at..at + 8 * n] == before.as_bytes()[at..at + 8 * n];
            torn += u64::from(!whole && !old);
            let want = if whole { 3 } else { 2 };
            match counter_in(&image) {
                Ok(v) if v == want => {}
                other => {
                    panic!("{lines}-line record, mask {mask:#x}: got {other:?}, want Ok({want})")
                }
            }
        }
        assert!(
            torn > masks / 2,
            "only {torn} of {masks} masks tore the record"
        );
    }
}

/// The root offset (bytes) of the object in a simulated region, from its durable image.
fn root_of(sim: &Simulated) -> u64 {
    let image = sim.durable_image();
    let region = sim_region::from_image(&image, LAYOUT, SimConfig::new(0)).expect("image opens");
    region.root().expect("root set").get()
}

/// A valid record in the wrong slot (a misdirected write in a damaged image) is not taken for
/// the current one: with the other slot torn, `open` finds no valid record and says so.
#[test]
fn a_record_in_the_wrong_slot_is_rejected() {
    let cfg = SimConfig::new(2).evictions(0.0).crash_keeps(0.0);
    let region = sim_region::simulated(LAYOUT, SIZE, cfg).expect("region");
    let sim = region.persist().clone();
    let obj = PBComb1::create(region, Counter::default(), 1).expect("fits");
    let root = root_of(&sim);
    obj.register().expect("slot").execute_mut(5); // pass 1, slot 1
    let image = sim.durable_image();
    let (s0, s1) = (slot_at(root, 1, 0), slot_at(root, 1, 1));
    let mut bytes = image.as_bytes().to_vec();
    let pass1: Vec<u8> = bytes[s1..s1 + 64].to_vec();
    bytes[s0..s0 + 64].copy_from_slice(&pass1); // pass 1 in slot 0
    bytes[s1 + 8] ^= 0xff; // slot 1 torn
    match counter_in(&Image::from_bytes(bytes)) {
        Err(CombBuildError::LayoutMismatch { .. }) => {}
        other => panic!("a pass-1 record in slot 0 was accepted: {other:?}"),
    }
}

/// Recovery of every thread's pending operation while the other threads already run new
/// operations: `recover` still answers about the crash, and nothing is lost or doubled.
#[test]
fn recovery_while_other_threads_run() {
    for i in 0..crash_points() / 5 {
        let cfg = SimConfig::new(i).crash_at(5 + i % 40);
        let region = sim_region::simulated(LAYOUT, SIZE, cfg).expect("region");
        let (logs, sim) = run::<Counter>(region, 3, false);
        let image = image_of(&sim);
        let region =
            sim_region::from_image(&image, LAYOUT, SimConfig::new(i)).expect("image opens");
        let Ok(obj) = PBComb1::<Counter, Simulated>::open(region) else {
            assert!(
                logs.iter().all(|l| l.completed == 0),
                "crash point {i}: reopen failed"
            );
            continue;
        };
        let state = obj.register().expect("slot").execute(());
        const MORE: u64 = 3;
        std::thread::scope(|s| {
            for (t, log) in logs.iter().enumerate() {
                let obj = &obj;
                s.spawn(move || {
                    let mut h = obj.register_as(t).expect("slot");
                    if let Some(seq) = log.pending {
                        let applied = Counter::count(state, t) == log.completed + 1;
                        match h.recover(Counter::op(t), seq) {
                            Recovered::Applied(_) if applied => {}
                            Recovered::Reexecuted(_) if !applied => {}
                            other => panic!(
                                "crash point {i}, thread {t}: {other:?}, applied in the image: {applied}"
                            ),
                        }
                    }
                    for _ in 0..MORE {
                        h.execute_mut(Counter::op(t));
                    }
                });
            }
        });
        let after = obj.register().expect("slot").execute(());
        for (t, log) in logs.iter().enumerate() {
            let want = log.completed + u64::from(log.pending.is_some()) + MORE;
            assert_eq!(
                Counter::count(after, t),
                want,
                "crash point {i}, thread {t}"
            );
        }
    }
}

/// One pwb, no pfence and one psync per operation when alone (the paper's layout: 2, 1, 1);
/// never more than one of each per operation with several threads (a pass serves a batch).
#[test]
fn one_write_back_and_one_fence_per_pass() {
    // In regions (line-aligned records) of a simulated domain, which counts like `Hardware`.
    let region =
        || sim_region::simulated(LAYOUT, SIZE, SimConfig::new(0).evictions(0.0)).expect("region");
    let one = PBComb1::create(region(), AtomicFloat::new(1.0), 1).expect("fits");
    let mut h = one.register().expect("slot");
    pcomb::pmem::reset_stats();
    for _ in 0..100 {
        h.execute_mut(1.5f64.to_bits());
    }
    let s = pcomb::pmem::stats();
    assert_eq!((s.pwbs, s.pfences, s.psyncs), (100, 0, 100));
    let paper = PBComb::create(region(), AtomicFloat::new(1.0), 1).expect("fits");
    let mut h = paper.register().expect("slot");
    pcomb::pmem::reset_stats();
    for _ in 0..100 {
        h.execute_mut(1.5f64.to_bits());
    }
    let s = pcomb::pmem::stats();
    assert_eq!((s.pwbs, s.pfences, s.psyncs), (200, 100, 100));

    let obj = PBComb1::with_persist(Counter::default(), 4, Hardware::new()).expect("fits");
    assert_eq!(obj.record_lines(), 1);
    let total: (u64, u64, u64) = std::thread::scope(|s| {
        let ws: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let mut h = obj.register().expect("slot");
                    pcomb::pmem::reset_stats();
                    for _ in 0..500 {
                        h.execute_mut(1);
                    }
                    let s = pcomb::pmem::stats();
                    (s.pwbs, s.pfences, s.psyncs)
                })
            })
            .collect();
        ws.into_iter()
            .map(|w| w.join().expect("no panic"))
            .fold((0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2))
    });
    assert_eq!(obj.register().expect("slot").execute(()), 2000);
    assert_eq!(total.1, 0);
    assert_eq!(total.0, total.2, "one pwb per psync: {total:?}");
    assert_eq!(total.0, obj.passes(), "one pwb per pass");
    assert!(total.0 <= 2000, "{total:?}");
}

/// Images with random words damaged (in the object or anywhere) open as an object or give a
/// typed error, never a panic; an object that opens can be used.
#[test]
fn damaged_images_give_typed_errors() {
    let cfg = SimConfig::new(5).evictions(0.0);
    let region = sim_region::simulated(LAYOUT, SIZE, cfg).expect("region");
    let sim = region.persist().clone();
    let obj = PBComb1::create(region, Counter::default(), 2).expect("fits");
    let root = root_of(&sim) as usize;
    for _ in 0..3 {
        obj.register().expect("slot").execute_mut(1);
    }
    let image = sim.durable_image();
    let mut rng = 0x1234_5678_9abc_def0u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let (mut opened, mut refused) = (0, 0);
    for i in 0..1500 {
        let mut bytes = image.as_bytes().to_vec();
        for _ in 0..1 + next() % 3 {
            let word = if i % 2 == 0 {
                root / 8 + (next() % 24) as usize // header and slots
            } else {
                (next() % (SIZE / 8)) as usize
            };
            let v = match next() % 3 {
                0 => next(),
                1 => next() % 4096,
                _ => u64::MAX - next() % 16,
            };
            bytes[word * 8..word * 8 + 8].copy_from_slice(&v.to_ne_bytes());
        }
        let Ok(region) =
            sim_region::from_image(&Image::from_bytes(bytes), LAYOUT, SimConfig::new(0))
        else {
            continue;
        };
        match PBComb1::<Counter, Simulated>::open(region) {
            Ok(obj) => {
                opened += 1;
                let mut h = obj.register().expect("slot");
                let v = h.execute(());
                assert_eq!(h.execute_mut(1), v);
            }
            Err(CombBuildError::LayoutMismatch { .. } | CombBuildError::Region(_)) => refused += 1,
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert!(
        opened > 0 && refused > 0,
        "opened {opened}, refused {refused}"
    );
}

/// `open` checks the protocol and the type: a `PBComb` region is not a `PBComb1`, nor the
/// other way round, and a counter is not an AtomicFloat.
#[test]
fn open_checks_protocol_and_type() {
    let c = PBComb1::create(
        Region::anonymous(LAYOUT, SIZE).expect("region"),
        Counter::new(3),
        2,
    )
    .expect("fits");
    let region = c.into_region().expect("persistent");
    let region = match PBComb1::<AtomicFloat, _>::open(region) {
        Err(CombBuildError::LayoutMismatch { detail, .. }) => {
            assert!(detail.contains("type fingerprint"), "{detail}");
            let c = PBComb1::create(
                Region::anonymous(LAYOUT, SIZE).expect("region"),
                Counter::new(3),
                2,
            );
            c.expect("fits").into_region().expect("persistent")
        }
        other => panic!("opened as another type: {other:?}"),
    };
    // Another protocol's file is named (issue 22).
    let err = PBComb::<Counter, _>::open(region).unwrap_err();
    assert_eq!(
        err.to_string(),
        "this is a pcomb PBComb1 object file, expected a pcomb PBComb"
    );
    let paper = PBComb::create(
        Region::anonymous(LAYOUT, SIZE).expect("region"),
        Counter::new(3),
        2,
    )
    .expect("fits");
    let err = PBComb1::<Counter, _>::open(paper.into_region().expect("persistent")).unwrap_err();
    assert!(
        matches!(
            err,
            CombBuildError::WrongKind {
                found: "pcomb PBComb object",
                expected: "PBComb1"
            }
        ),
        "{err}"
    );
    assert!(matches!(
        PBComb1::new(Counter::default(), 0),
        Err(CombBuildError::InvalidMaxThreads { requested: 0, .. })
    ));
    assert!(matches!(
        PBComb1::new(Counter::default(), pcomb::MAX_THREADS + 1),
        Err(CombBuildError::InvalidMaxThreads { .. })
    ));
    let big = PBComb1::new(Counter::default(), pcomb::MAX_THREADS).expect("any thread count");
    assert!(big.record_lines() > 1);
}

/// A panic in `dispatch_mut` poisons the object and leaves the state as it was.
#[test]
fn a_panicking_operation_poisons_and_is_not_applied() {
    #[derive(Clone, Copy, Debug)]
    #[repr(transparent)]
    struct Fragile(u64);
    // SAFETY: repr(transparent) over u64: no padding, every bit pattern valid, no pointers.
    unsafe impl Pod for Fragile {}
    impl Dispatch for Fragile {
        type ReadOperation<'a> = ();
        type WriteOperation = u64;
        type Response = u64;
        fn dispatch(&self, _: ()) -> u64 {
            self.0
        }
        fn dispatch_mut(&mut self, add: u64) -> u64 {
            assert!(add != 0, "zero is refused");
            self.0 += add;
            self.0
        }
    }
    let obj = PBComb1::new(Fragile(1), 2).expect("fits");
    let mut h = obj.register().expect("slot");
    assert_eq!(h.execute_mut(2), 3);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.execute_mut(0)));
    assert!(caught.is_err());
    assert_eq!(h.try_execute(()), Err(pcomb::Poisoned));
    assert_eq!(h.try_execute_mut(1), Err(pcomb::Poisoned));
    assert_eq!(obj.passes(), 1, "the panicking pass published nothing");
}

/// Nothing is visible before it is durable: a combiner held inside its pass's psync (a gated
/// persistence domain) has not published the pass, so a read, `passes()` and a waiter whose
/// request that pass applied all still see the state before it. (With the record published
/// before the psync, the read returns 1 while the psync has not run: a crash there would lose a
/// state some thread already saw.)
#[test]
fn nothing_is_visible_before_its_psync() {
    use std::sync::Arc;

    #[derive(Debug, Default)]
    struct Gate {
        armed: AtomicBool,
        entered: AtomicBool,
        open: AtomicBool,
    }
    #[derive(Debug, Clone, Default)]
    struct Gated(Arc<Gate>);
    impl pcomb::Persist for Gated {
        unsafe fn pwb(&self, _addr: *const u8, _len: usize) {}
        fn pfence(&self) {}
        fn psync(&self) {
            // SeqCst: a handshake between the combiner and the test thread.
            if self.0.armed.load(Ordering::SeqCst) {
                self.0.entered.store(true, Ordering::SeqCst);
                while !self.0.open.load(Ordering::SeqCst) {
                    std::thread::yield_now();
                }
            }
        }
    }

    let gate = Gated::default();
    let obj = PBComb1::with_persist(Counter::default(), 2, gate.clone()).expect("fits");
    gate.0.armed.store(true, Ordering::SeqCst);
    std::thread::scope(|s| {
        let combiner = s.spawn(|| obj.register().expect("slot").execute_mut(1));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !gate.0.entered.load(Ordering::SeqCst) {
            if std::time::Instant::now() > deadline {
                gate.0.open.store(true, Ordering::SeqCst);
                panic!("the pass never reached a psync");
            }
            std::thread::yield_now();
        }
        let mut h = obj.register().expect("slot");
        let (read, passes) = (h.execute(()), obj.passes());
        // Open the gate before asserting, so that a failure does not leave the combiner
        // waiting (and the scope joining it) forever.
        gate.0.open.store(true, Ordering::SeqCst);
        assert_eq!(combiner.join().expect("no panic"), 0);
        assert_eq!(read, 0, "a read saw a pass whose psync has not run");
        assert_eq!(passes, 0, "a pass was published before its psync");
        assert_eq!(h.execute(()), 1);
    });
}
