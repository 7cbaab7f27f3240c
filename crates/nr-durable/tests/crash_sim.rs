//! Crash tests of the persistent-memory medium on pmem's simulated persistence domain, at the
//! store level: a deterministic workload appends batches of operations and takes checkpoints on
//! a second thread, one step at a time (the snapshot files are real files: a checkpoint is skipped once the simulated machine has
//! crashed, as a dead process writes nothing). Each crash image is recovered and checked:
//!
//! - recovery succeeds (a torn commit is cut, never reported as damage);
//! - the recovered history (snapshot + log suffix) is a prefix of the written operations that
//!   holds every operation whose `append` returned before the crash;
//! - the recovered log grows again: one more append, a second crash right after it, and the
//!   recovered history is that prefix plus the new operation (so remnants of a torn commit
//!   never come back).
//!
//! `systematic_*` crashes at every persistence event of a short run (4 seeds each). `random_*` runs
//! `NR_DURABLE_CRASH_POINTS` (default 300; CI: 10,000) random configurations: batch sizes,
//! checkpoint points and region sizes from a seeded RNG, evictions on, a crash at a random event.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::cell::RefCell;
use std::path::{Path, PathBuf};

mod common;

use common::{env, Rng};
use nr_durable::{Store, PMEM_LAYOUT};
use pmem::sim::{Image, SimConfig, Simulated};
use pmem::Region;

/// The history is the list of operations: operation `i` is `i * 7 + 1`.
type State = Vec<u64>;

fn op(i: u64) -> u64 {
    i * 7 + 1
}

/// A run: batch sizes and where to checkpoint.
#[derive(Debug, Clone)]
struct Plan {
    batches: Vec<u64>,
    /// Checkpoint after the batch with this index, at this many operations before the end (so
    /// the entries after the snapshot are copied to the new log generation).
    checkpoints: Vec<(usize, u64)>,
    size: u64,
}

/// Runs `plan` on `region` until the simulated machine crashes; returns how many operations
/// were acknowledged (their append returned with the machine still up).
fn workload(region: Region<Simulated>, snaps: &Path, plan: &Plan) -> u64 {
    let sim = region.persist().clone();
    let (store, rec) = match Store::<u64>::open_region::<State, _>(region, snaps) {
        Ok(x) => x,
        Err(_) if sim.is_crashed() => return 0,
        Err(e) => panic!("opening a fresh region failed: {e}"),
    };
    assert_eq!(rec.end, 0);
    let mut acked = 0;
    let mut pos = 0;
    for (i, &n) in plan.batches.iter().enumerate() {
        let ops: Vec<u64> = (pos..pos + n).map(op).collect();
        let refs: Vec<&u64> = ops.iter().collect();
        // LogFull is possible in a small region between checkpoints: the run ends there.
        if store.append(pos, &refs).is_err() || sim.is_crashed() {
            return acked;
        }
        pos += n;
        acked = pos;
        for &(_, lag) in plan.checkpoints.iter().filter(|c| c.0 == i) {
            if sim.is_crashed() {
                return acked;
            }
            let at = pos.saturating_sub(lag);
            let state: State = (0..at).map(op).collect();
            // On another thread, as `Durable::checkpoint` runs beside the committing threads:
            // its write-backs are fenced by its own fences only.
            std::thread::scope(|s| s.spawn(|| store.checkpoint(at, &state).unwrap()).join())
                .unwrap();
            if sim.is_crashed() {
                return acked;
            }
        }
    }
    acked
}

/// Recovers `image` with the snapshots in `snaps`: the history.
fn recover(image: &Image, snaps: &Path) -> Result<(State, Simulated, Store<u64>), String> {
    // No evictions and nothing unfenced in a crash image: only what recovery itself writes back
    // and fences reaches the media.
    // SAFETY: this thread makes every write to the region and every persistence call.
    let region = unsafe {
        Region::from_image(
            image,
            PMEM_LAYOUT,
            SimConfig::new(1).evictions(0.0).crash_keeps(0.0),
        )
    }
    .map_err(|e| format!("region: {e}"))?;
    let sim = region.persist().clone();
    let (store, rec) = Store::<u64>::open_region::<State, _>(region, snaps)
        .map_err(|e| format!("recovery: {e}"))?;
    let (from, mut state) = rec.snapshot.unwrap_or((0, Vec::new()));
    if state.len() as u64 != from {
        return Err(format!("snapshot at {from} holds {} ops", state.len()));
    }
    for (pos, o) in rec.ops {
        if pos != state.len() as u64 {
            return Err(format!("log entry {pos} after {} ops", state.len()));
        }
        state.push(o);
    }
    if state.len() as u64 != rec.end {
        return Err(format!("end {} for {} ops", rec.end, state.len()));
    }
    Ok((state, sim, store))
}

fn check(image: Image, snaps: &Path, acked: u64, total: u64) -> Result<(), String> {
    let (state, sim, store) = recover(&image, snaps)?;
    let n = state.len() as u64;
    let want: State = (0..n).map(op).collect();
    if state != want || n < acked || n > total {
        return Err(format!(
            "recovered {n} ops {:?}..., {acked} acknowledged, {total} written",
            &state[..state.len().min(4)]
        ));
    }
    // Grow the recovered log from another thread (recovery's own write-backs are fenced by its
    // own fences only), crash again at once: the new entry and nothing else follows.
    std::thread::scope(|s| s.spawn(|| store.append(n, &[&op(n)])).join())
        .map_err(|_| "the append panicked".to_owned())?
        .map_err(|e| format!("append after recovery: {e}"))?;
    drop(store);
    let again = sim.crash();
    let (state2, _, _) = recover(&again, snaps)?;
    let want2: State = (0..=n).map(op).collect();
    if state2 != want2 {
        return Err(format!(
            "after one more append: {} ops, expected {}",
            state2.len(),
            n + 1
        ));
    }
    Ok(())
}

fn snap_dir(root: &Path, k: u64) -> PathBuf {
    let d = root.join(format!("run{k}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `plan` crashing at event `k` (`None`: counting run); returns (events, acked, image).
fn run(plan: &Plan, cfg: SimConfig, snaps: &Path) -> (u64, u64, Image) {
    // SAFETY: the workload runs on this thread only (the store's lock serializes the rest).
    let region = unsafe { Region::simulated(PMEM_LAYOUT, plan.size, cfg) }.unwrap();
    let sim = region.persist().clone();
    let acked = workload(region, snaps, plan);
    let events = sim.events();
    let image = sim.crash_image().unwrap_or_else(|| sim.crash());
    (events, acked, image)
}

fn total(plan: &Plan) -> u64 {
    plan.batches.iter().sum()
}

#[test]
fn systematic_crash_at_every_event_of_a_short_run() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = Plan {
        batches: vec![1, 2, 3, 1, 1, 2, 4, 1],
        checkpoints: vec![(2, 2), (5, 1), (7, 0)],
        size: 8192,
    };
    let (events, _, _) = run(&plan, SimConfig::new(3), &snap_dir(tmp.path(), 0));
    assert!(events > 20, "{events} events");
    // Each crash point with 4 seeds: which unfenced lines reach the image differs.
    for k in 0..=events {
        for seed in 0..4 {
            let snaps = snap_dir(tmp.path(), k + 1);
            let cfg = SimConfig::new(k * 4 + seed).evictions(0.3).crash_at(k);
            let (_, acked, image) = run(&plan, cfg, &snaps);
            check(image, &snaps, acked, total(&plan))
                .unwrap_or_else(|e| panic!("crash at {k}, seed {seed}: {e}"));
            std::fs::remove_dir_all(&snaps).unwrap();
        }
    }
}

#[test]
fn random_crash_points_with_evictions() {
    let tmp = tempfile::tempdir().unwrap();
    let points = env("NR_DURABLE_CRASH_POINTS", 300);
    let mut rng = Rng(0x5EED);
    let counted = RefCell::new(0u64);
    for p in 0..points {
        let batches: Vec<u64> = (0..4 + rng.below(12)).map(|_| 1 + rng.below(5)).collect();
        let checkpoints: Vec<(usize, u64)> = (0..rng.below(4))
            .map(|_| (rng.below(batches.len() as u64) as usize, rng.below(4)))
            .collect();
        // Small regions fill up between checkpoints; large ones do not.
        let size = [4096, 8192, 1 << 16][rng.below(3) as usize];
        let plan = Plan {
            batches,
            checkpoints,
            size,
        };
        let snaps = snap_dir(tmp.path(), p);
        let (events, _, _) = run(&plan, SimConfig::new(p), &snaps);
        let k = rng.below(events + 1);
        let snaps = snap_dir(tmp.path(), p);
        let cfg = SimConfig::new(rng.next())
            .evictions(0.3)
            .crash_keeps(0.5)
            .crash_at(k);
        let (_, acked, image) = run(&plan, cfg, &snaps);
        check(image, &snaps, acked, total(&plan))
            .unwrap_or_else(|e| panic!("point {p}, crash at event {k} of {events}, {plan:?}: {e}"));
        std::fs::remove_dir_all(&snaps).unwrap();
        *counted.borrow_mut() += 1;
    }
    assert_eq!(*counted.borrow(), points);
}
