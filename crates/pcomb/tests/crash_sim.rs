//! Crash tests on the simulated persistence domain (`pmem::sim`): durable linearizability and
//! detectability of both protocols, for a counter and for the paper's AtomicFloat.
//!
//! Each run creates the object in a simulated region (evictions on), lets 2-3 threads run a few
//! operations, crashes at a random persistence event, reopens the object from the crash image
//! and recovers every thread's pending operation. Per-thread weights make each thread's effect
//! separately visible in the state: the counter adds `1 << (16 t)`, the float multiplies by the
//! `t`-th prime (exact in `f64` at these sizes). Checked:
//!
//! - durability: every operation that returned before the crash is in the recovered state, and
//!   each thread's pending operation is in it entirely or not at all;
//! - detectability: `recover` says `Applied` exactly when the pending operation is in the
//!   recovered state, with the response it had (each thread's own component of the old value
//!   is its number of earlier operations), and `Reexecuted` otherwise;
//! - responses of completed operations carry the same per-thread component;
//! - recovery without user-kept numbers: a handle registered after `open` has `seq()` equal to
//!   the thread's operations in the recovered state and `last_applied()` the last one's
//!   response, and threads that resume from `seq() + 1` end with exactly `OPS` operations.
//!
//! PWFComb1 (stamped records) runs the same checks.
//!
//! `PCOMB_CRASH_POINTS` (default 750, so 4,500 per run over the 3 protocols x 2 objects) sets
//! the random crash points per protocol and object; a systematic sweep crashes a short
//! single-threaded run at every one of its events.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::sync::atomic::{AtomicU64, Ordering};

use pcomb::objects::{AtomicFloat, Counter};
use pcomb::pmem::sim::{SimConfig, Simulated};
use pcomb::pmem::Region;
use pcomb::{Dispatch, PBComb, PWFComb, PWFComb1, Pod, Recovered};

const LAYOUT: u64 = 0x5043_4F4D;
const SIZE: u64 = 1 << 16;
mod crash_common;
mod sim_region;
use crash_common::{Subject, ThreadLog};

/// Settles every log; returns how many returned operations the old check called pending.
fn settle(logs: &mut [ThreadLog], sim: &Simulated) -> u64 {
    let c = sim.crash_stamp();
    logs.iter_mut().map(|l| u64::from(l.settle(c))).sum()
}

/// The two protocols behind one interface for the test.
trait Protocol<D: Subject>
where
    for<'a> D: Dispatch<ReadOperation<'a> = ()>,
{
    fn run(region: Region<Simulated>, threads: usize) -> (Vec<ThreadLog>, Simulated);
    /// The era after a crash: reopens, and each thread of `logs` re-runs its pending
    /// operation with `recover(op, seq)`, then runs operations up to `OPS` in all, until the
    /// simulator crashes. Returns the logs of both eras together (settled against this era's
    /// crash) and the simulator; `None` if the image does not open (no root yet).
    fn resume(region: Region<Simulated>, logs: &[ThreadLog])
        -> Option<(Vec<ThreadLog>, Simulated)>;
    /// Reopens, checks and recovers; `Err` describes a violation.
    fn recover(region: Region<Simulated>, logs: &[ThreadLog]) -> Result<(), String>;
}

/// Thread `t`'s operations `$from..OPS` on handle `$h`, each return stamped into `$log`,
/// until the simulator crashes; evaluates to the log.
macro_rules! ops {
    ($h:ident, $sim:ident, $t:ident, $log:ident, $from:expr) => {{
        for i in $from..D::OPS {
            let r = $h.execute_mut(D::op($t));
            $log.stamps.push($sim.stamp());
            assert_eq!(D::count(r, $t), i, "response of op {i} of {}", $t);
            if $sim.is_crashed() {
                $log.crashed_after_last = true;
                return $log;
            }
        }
        $log
    }};
}

macro_rules! protocol {
    ($name:ident, $obj:ident) => {
        struct $name;
        impl<D: Subject> Protocol<D> for $name
        where
            for<'a> D: Dispatch<ReadOperation<'a> = ()>,
            D::WriteOperation: Pod,
        {
            fn run(region: Region<Simulated>, threads: usize) -> (Vec<ThreadLog>, Simulated) {
                let sim = region.persist().clone();
                let obj = $obj::create(region, D::init(), threads).expect("fits");
                let logs: Vec<ThreadLog> = std::thread::scope(|s| {
                    let handles: Vec<_> = (0..threads)
                        .map(|t| {
                            let (obj, sim) = (&obj, &sim);
                            s.spawn(move || {
                                let mut h = obj.register_as(t).expect("free slot");
                                let mut log = ThreadLog {
                                    first_seq: h.seq() + 1,
                                    ..ThreadLog::default()
                                };
                                ops!(h, sim, t, log, 0)
                            })
                        })
                        .collect();
                    handles.into_iter().map(|h| h.join().expect("no panic")).collect()
                });
                (logs, sim)
            }

            fn resume(
                region: Region<Simulated>,
                logs: &[ThreadLog],
            ) -> Option<(Vec<ThreadLog>, Simulated)> {
                let sim = region.persist().clone();
                let obj = $obj::<D, Simulated>::open(region).ok()?;
                let era2: Vec<ThreadLog> = std::thread::scope(|s| {
                    let handles: Vec<_> = logs
                        .iter()
                        .enumerate()
                        .map(|(t, old)| {
                            let (obj, sim) = (&obj, &sim);
                            s.spawn(move || {
                                let mut h = obj.register_as(t).expect("free slot");
                                let mut log = ThreadLog {
                                    first_seq: old.first_seq + old.completed,
                                    ..ThreadLog::default()
                                };
                                if let Some(seq) = old.pending {
                                    let r = match h.recover(D::op(t), seq) {
                                        Recovered::Applied(r) | Recovered::Reexecuted(r) => r,
                                    };
                                    log.stamps.push(sim.stamp());
                                    assert_eq!(D::count(r, t), old.completed, "response of {t}'s recovered op");
                                    if sim.is_crashed() {
                                        log.crashed_after_last = true;
                                        return log;
                                    }
                                }
                                let from = old.completed + u64::from(old.pending.is_some());
                                ops!(h, sim, t, log, from)
                            })
                        })
                        .collect();
                    handles.into_iter().map(|h| h.join().expect("no panic")).collect()
                });
                let c = sim.crash_stamp();
                let both = logs
                    .iter()
                    .zip(era2)
                    .map(|(old, mut new)| {
                        new.settle(c);
                        ThreadLog {
                            completed: old.completed + new.completed,
                            first_seq: old.first_seq,
                            ..new
                        }
                    })
                    .collect();
                Some((both, sim))
            }

            fn recover(region: Region<Simulated>, logs: &[ThreadLog]) -> Result<(), String> {
                let obj = match $obj::<D, Simulated>::open(region) {
                    Ok(obj) => obj,
                    // Crashed before `create` persisted the root: fine if no op completed. Only
                    // a missing root is: a root naming an unpersisted object is a violation.
                    Err(pcomb::CombBuildError::LayoutMismatch {
                        detail: "the region has no root object",
                        ..
                    }) if logs.iter().all(|l| l.completed == 0) => return Ok(()),
                    Err(e) => return Err(format!("reopen failed after ops completed: {e}")),
                };
                let state = obj.register().map_err(|e| e.to_string())?.execute(());
                for (t, log) in logs.iter().enumerate() {
                    let n = D::count(state, t);
                    // Recovery from the handle's persisted state alone: the reopened handle
                    // knows the number of the thread's last operation that took effect, and
                    // its response (format 2 keeps `Seq[t]` in the record).
                    let h = obj.register_as(t).map_err(|e| e.to_string())?;
                    crash_common::check_reopened_numbers::<D>(t, n, h.seq(), h.last_applied())?;
                    drop(h);
                    let applied = n == log.completed + 1;
                    if n != log.completed && !(applied && log.pending.is_some()) {
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
                                "thread {t}: recover(seq {seq}) = {other:?}, but the state holds \
                                 {n} of its ops with {} completed",
                                log.completed
                            ))
                        }
                    }
                }
                let after = obj.register().map_err(|e| e.to_string())?.execute(());
                for (t, log) in logs.iter().enumerate() {
                    let want = log.completed + u64::from(log.pending.is_some());
                    if D::count(after, t) != want {
                        return Err(format!("thread {t}: {} ops after recovery, want {want}", D::count(after, t)));
                    }
                }
                crash_common::check_resumed!(D, obj, logs.len())
            }
        }
    };
}

protocol!(Pb, PBComb);
protocol!(Pwf, PWFComb);
protocol!(Pwf1, PWFComb1);

fn crash_points() -> u64 {
    std::env::var("PCOMB_CRASH_POINTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(750)
}

/// Random crash points: one crash-free run to size the event range, then `crash_points()` runs
/// crashing at a random event each.
fn random_crashes<D, P: Protocol<D>>(name: &str, seed: u64)
where
    for<'a> D: Subject + Dispatch<ReadOperation<'a> = ()>,
{
    let threads_for = |i: u64| 2 + (i % 2) as usize;
    let region = sim_region::simulated(LAYOUT, SIZE, SimConfig::new(seed)).expect("region");
    let (_, sim) = P::run(region, 3);
    let events = sim.events().max(1);
    static RNG: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    let (mut crashed_mid_run, mut rescued) = (0, 0);
    for i in 0..crash_points() {
        let r = RNG
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_mul(0xBF58_476D_1CE4_E5B9);
        let k = (r >> 11) % (events + events / 8);
        let cfg = SimConfig::new(seed ^ i).crash_at(k);
        let region = sim_region::simulated(LAYOUT, SIZE, cfg).expect("region");
        let (mut logs, sim) = P::run(region, threads_for(i));
        let image = match sim.crash_image() {
            Some(image) => {
                crashed_mid_run += 1;
                image
            }
            None => sim.crash(),
        };
        rescued += settle(&mut logs, &sim);
        let recovered =
            sim_region::from_image(&image, LAYOUT, SimConfig::new(i)).expect("image opens");
        if let Err(e) = P::recover(recovered, &logs) {
            panic!("{name}: crash point {i} (event {k} of ~{events}, seed {seed}): {e}");
        }
    }
    assert!(
        crashed_mid_run > 0 || crash_points() < 10,
        "{name}: no run crashed mid-way"
    );
    eprintln!(
        "{name}: {} crash points, {crashed_mid_run} mid-run; {rescued} operations returned \
         before the crash but found it crashed right after (pending under the old check)",
        crash_points()
    );
}

#[test]
fn pbcomb_counter_random_crashes() {
    random_crashes::<Counter, Pb>("PBComb counter", 1);
}

#[test]
fn pwfcomb_counter_random_crashes() {
    random_crashes::<Counter, Pwf>("PWFComb counter", 2);
}

#[test]
fn pwfcomb1_counter_random_crashes() {
    random_crashes::<Counter, Pwf1>("PWFComb1 counter", 5);
}

#[test]
fn pwfcomb1_atomic_float_random_crashes() {
    random_crashes::<AtomicFloat, Pwf1>("PWFComb1 AtomicFloat", 6);
}

#[test]
fn pbcomb_atomic_float_random_crashes() {
    random_crashes::<AtomicFloat, Pb>("PBComb AtomicFloat", 3);
}

#[test]
fn pwfcomb_atomic_float_random_crashes() {
    random_crashes::<AtomicFloat, Pwf>("PWFComb AtomicFloat", 4);
}

/// Nested crashes: a run crashes at a random event; the image is reopened (`open` and its
/// scrub are events too), every thread re-runs its pending operation with `recover(op, seq)`
/// and runs on, and that era crashes again at a random event. The second image must hold every
/// operation that returned in either era, and recover the pending ones detectably (the checks
/// of `Protocol::recover`). `PCOMB_NESTED_CRASH_POINTS` (default 300) points.
fn nested_crashes<D, P: Protocol<D>>(name: &str, seed: u64)
where
    for<'a> D: Subject + Dispatch<ReadOperation<'a> = ()>,
{
    let points = std::env::var("PCOMB_NESTED_CRASH_POINTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300u64);
    let region = sim_region::simulated(LAYOUT, SIZE, SimConfig::new(seed)).expect("region");
    let (_, sim) = P::run(region, 3);
    let events = sim.events().max(1);
    let mix = |x: u64| {
        (x ^ seed)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29)
    };
    let mut reopened_twice = 0;
    for i in 0..points {
        let (k1, k2) = (mix(i) % events, mix(i ^ 0x2E57) % events);
        let cfg = SimConfig::new(seed ^ i).crash_at(k1);
        let region = sim_region::simulated(LAYOUT, SIZE, cfg).expect("region");
        let (mut logs, sim) = P::run(region, 2 + (i % 2) as usize);
        let first = sim.crash_image().unwrap_or_else(|| sim.crash());
        settle(&mut logs, &sim);
        let cfg = SimConfig::new(i).crash_at(k2);
        let region = sim_region::from_image(&first, LAYOUT, cfg).expect("image opens");
        let Some((logs, sim)) = P::resume(region, &logs) else {
            continue; // crashed before `create` persisted the root
        };
        let second = sim.crash_image().unwrap_or_else(|| sim.crash());
        let region = sim_region::from_image(&second, LAYOUT, SimConfig::new(i)).expect("opens");
        if let Err(e) = P::recover(region, &logs) {
            panic!("{name}: nested crash point {i} (events {k1}, then {k2}): {e}");
        }
        reopened_twice += 1;
    }
    eprintln!(
        "{name}: {points} nested crash points ({reopened_twice} reopened twice), 0 violations"
    );
}

#[test]
fn pwfcomb1_counter_nested_crashes() {
    nested_crashes::<Counter, Pwf1>("PWFComb1 counter", 7);
}

#[test]
fn pwfcomb1_atomic_float_nested_crashes() {
    nested_crashes::<AtomicFloat, Pwf1>("PWFComb1 AtomicFloat", 8);
}

/// Crashes a single-threaded run at every one of its persistence events.
fn systematic<D, P: Protocol<D>>(name: &str)
where
    for<'a> D: Subject + Dispatch<ReadOperation<'a> = ()>,
{
    let region = sim_region::simulated(LAYOUT, SIZE, SimConfig::new(9)).expect("region");
    let (_, sim) = P::run(region, 1);
    let events = sim.events();
    assert!(
        events > 2 * D::OPS,
        "{name}: at least the pwbs and psyncs of every op"
    );
    for k in 0..=events {
        let region =
            sim_region::simulated(LAYOUT, SIZE, SimConfig::new(k).crash_at(k)).expect("region");
        let (mut logs, sim) = P::run(region, 1);
        let image = sim.crash_image().unwrap_or_else(|| sim.crash());
        settle(&mut logs, &sim);
        let recovered =
            sim_region::from_image(&image, LAYOUT, SimConfig::new(k)).expect("image opens");
        if let Err(e) = P::recover(recovered, &logs) {
            panic!("{name}: systematic crash at event {k} of {events}: {e}");
        }
    }
}

#[test]
fn systematic_single_thread_runs() {
    systematic::<Counter, Pb>("PBComb counter");
    systematic::<Counter, Pwf>("PWFComb counter");
    systematic::<AtomicFloat, Pb>("PBComb AtomicFloat");
    systematic::<AtomicFloat, Pwf>("PWFComb AtomicFloat");
    systematic::<Counter, Pwf1>("PWFComb1 counter");
    systematic::<AtomicFloat, Pwf1>("PWFComb1 AtomicFloat");
}
