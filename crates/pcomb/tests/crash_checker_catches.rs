//! The crash checker is only worth something if it fails on a broken protocol. Here both
//! protocols run on a simulated region whose persistence backend drops one kind of call
//! (`Region::map_persist`), a single-threaded run is crashed at every persistence event, and
//! durability is checked as in `crash_sim.rs`: the recovered counter must hold every operation
//! that returned before the crash (plus at most the pending one).
//!
//! With the backend intact no crash point may fail (the control); with a call dropped at least
//! one must.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod sim_region;

use std::sync::atomic::{AtomicBool, Ordering};

use pcomb::objects::Counter;
use pcomb::pmem::sim::{Image, SimConfig, Simulated};
use pcomb::pmem::{Persist, Region};
use pcomb::{PBComb, PWFComb};

const LAYOUT: u64 = 0x4D55_5441;
const SIZE: u64 = 1 << 16;
const OPS: u64 = 6;

/// Which persistence call the broken backend drops.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mutant {
    /// Nothing dropped: the control.
    Intact,
    /// Every `psync`.
    NoPsync,
    /// The first `pwb` after each `psync` (PBcomb: the state record of Algorithm 2 line 22;
    /// PWFcomb: the thread's new state copy before it is installed).
    NoFirstPwb,
}

/// Forwards to the simulated domain, except for the dropped call.
#[derive(Debug)]
struct Broken {
    inner: Simulated,
    mutant: Mutant,
    /// Whether the next pwb is the first since the last psync.
    first: AtomicBool,
}

impl Persist for Broken {
    unsafe fn pwb(&self, addr: *const u8, len: usize) {
        // Relaxed: single-threaded runs only.
        let first = self.first.swap(false, Ordering::Relaxed);
        if !(first && self.mutant == Mutant::NoFirstPwb) {
            // SAFETY: the caller's guarantee, passed on unchanged.
            unsafe { self.inner.pwb(addr, len) };
        }
    }

    fn pfence(&self) {
        self.inner.pfence();
    }

    fn psync(&self) {
        // Relaxed: single-threaded runs only.
        self.first.store(true, Ordering::Relaxed);
        if self.mutant != Mutant::NoPsync {
            self.inner.psync();
        }
    }
}

fn broken(region: Region<Simulated>, mutant: Mutant) -> Region<Broken> {
    region.map_persist(|inner| Broken {
        inner,
        mutant,
        first: AtomicBool::new(true),
    })
}

/// Defines, for one protocol, `$run(k, mutant)`: `OPS` increments crashing at event `k` (all of
/// them when `k` is past the end), returning how many returned before the crash and the crash
/// image; and `$recovered(image)`: the recovered counter, or `None` when the object cannot be
/// reopened.
macro_rules! protocol {
    ($obj:ident, $run:ident, $recovered:ident) => {
        fn $run(k: u64, mutant: Mutant) -> (u64, Image) {
            // No evictions and a crash that keeps nothing extra: only what the protocol persisted.
            let cfg = SimConfig::new(k)
                .evictions(0.0)
                .crash_keeps(0.0)
                .crash_at(k);
            let region = sim_region::simulated(LAYOUT, SIZE, cfg).expect("region");
            let sim = region.persist().clone();
            let obj = $obj::create(broken(region, mutant), Counter::default(), 1).expect("fits");
            let mut h = obj.register_as(0).expect("slot");
            let mut completed = 0;
            for _ in 0..OPS {
                h.execute_mut(1);
                if sim.is_crashed() {
                    break;
                }
                completed += 1;
            }
            (completed, sim.crash_image().unwrap_or_else(|| sim.crash()))
        }

        fn $recovered(image: &Image) -> Option<u64> {
            let region = sim_region::from_image(image, LAYOUT, SimConfig::new(0)).ok()?;
            let obj = $obj::<Counter, Simulated>::open(region).ok()?;
            let value = obj.register().ok()?.execute(());
            Some(value)
        }
    };
}

protocol!(PBComb, run_pb, recovered_pb);
protocol!(PWFComb, run_pwf, recovered_pwf);

/// Crashes at every event of a run and counts the crash points that lose a completed operation.
fn violations(
    run: fn(u64, Mutant) -> (u64, Image),
    recovered: fn(&Image) -> Option<u64>,
    mutant: Mutant,
) -> (u64, u64) {
    let mut bad = 0;
    let mut k = 0;
    loop {
        let (completed, image) = run(k, mutant);
        let ok = match recovered(&image) {
            // Every completed op survives; the pending one (if any) at most once.
            Some(v) => v == completed || v == completed + 1,
            // Not reopenable: fine only if nothing had completed.
            None => completed == 0,
        };
        bad += u64::from(!ok);
        if completed == OPS {
            // The crash came after the last op: every point has been tried.
            return (bad, k + 1);
        }
        k += 1;
    }
}

#[test]
fn intact_protocols_pass_at_every_crash_point() {
    let (bad, points) = violations(run_pb, recovered_pb, Mutant::Intact);
    assert_eq!(
        bad, 0,
        "PBComb intact: {bad} of {points} crash points lost data"
    );
    let (bad, points) = violations(run_pwf, recovered_pwf, Mutant::Intact);
    assert_eq!(
        bad, 0,
        "PWFComb intact: {bad} of {points} crash points lost data"
    );
}

#[test]
fn checker_catches_pbcomb_without_psync() {
    let (bad, points) = violations(run_pb, recovered_pb, Mutant::NoPsync);
    eprintln!("{bad} of {points} crash points lose a completed operation");
    assert!(bad > 0, "no violation in {points} crash points");
}

#[test]
fn checker_catches_pbcomb_without_state_pwb() {
    let (bad, points) = violations(run_pb, recovered_pb, Mutant::NoFirstPwb);
    eprintln!("{bad} of {points} crash points lose a completed operation");
    assert!(bad > 0, "no violation in {points} crash points");
}

#[test]
fn checker_catches_pwfcomb_without_psync() {
    let (bad, points) = violations(run_pwf, recovered_pwf, Mutant::NoPsync);
    eprintln!("{bad} of {points} crash points lose a completed operation");
    assert!(bad > 0, "no violation in {points} crash points");
}

#[test]
fn checker_catches_pwfcomb_without_state_pwb() {
    let (bad, points) = violations(run_pwf, recovered_pwf, Mutant::NoFirstPwb);
    eprintln!("{bad} of {points} crash points lose a completed operation");
    assert!(bad > 0, "no violation in {points} crash points");
}
