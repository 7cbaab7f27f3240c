//! Crash tests of a `Durable` `HashMap` store on pmem's simulated persistence domain: 2-3
//! threads on 1 or 2 replicas (every other crash point; one replica orders its writes by the
//! commit log alone, nr-core's `combine_committed`) write, thread 0 takes checkpoints (the 16 KiB region also takes them by
//! itself), the machine crashes at a random persistence event (evictions on), and the image is
//! recovered. Checked for every thread: its surviving writes are a prefix holding every write
//! that returned before the crash (by `Simulated::stamp`), and `last_applied` names the last.
//!
//! Snapshots are real files. A checkpoint is not started once the machine has crashed, but one
//! under way when another thread's event crashes it still writes its file: such a snapshot may
//! hold writes whose commit did not reach the image, which the check allows (a prefix, at
//! least the acknowledged writes).
//!
//! `NR_DURABLE_CRASH_POINTS` sets the number of crash points (default 100 here; CI: 10,000).
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod common;

use std::sync::Barrier;

use common::{check_thread, env, key, Kv, KvWrite, Rng};
use nr_durable::{Durable, PMEM_LAYOUT};
use pmem::sim::{Image, SimConfig, Simulated};
use pmem::Region;

const SIZE: u64 = 1 << 14;

/// Runs the writers on a fresh simulated region; returns per thread the writes that returned
/// before the crash (all of them when there was none), and the crash image.
fn run(
    threads: u32,
    replicas: usize,
    ops: u64,
    cfg: SimConfig,
    snaps: &std::path::Path,
) -> (Vec<u64>, Image, u64) {
    // SAFETY: every write to the region is made under the log's lock by the thread that makes
    // the persistence calls that follow it; no other thread touches region memory.
    let region = unsafe { Region::simulated(PMEM_LAYOUT, SIZE, cfg) }.unwrap();
    let sim: Simulated = region.persist().clone();
    let kv = Durable::<Kv>::builder()
        .replicas(replicas)
        .region(region, snaps)
        .open(Kv::default);
    let Ok(kv) = kv else {
        // Crashed while the fresh log was set up: nothing was acknowledged.
        assert!(sim.is_crashed());
        let image = sim.crash_image().unwrap_or_else(|| sim.crash());
        return (vec![0; threads as usize], image, sim.events());
    };
    let start = Barrier::new(threads as usize);
    let acked: Vec<u64> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (kv, sim, start) = (&kv, &sim, &start);
                s.spawn(move || {
                    let mut h = kv.register(t).unwrap();
                    start.wait();
                    let mut stamps = Vec::new();
                    for i in 0..ops {
                        h.execute_mut(KvWrite::Put(key(t, i), i)).unwrap();
                        stamps.push(sim.stamp());
                        if t == 0 && i % 6 == 5 && !sim.is_crashed() {
                            kv.checkpoint().unwrap();
                        }
                    }
                    stamps
                })
            })
            .collect();
        let stamps: Vec<Vec<u64>> = workers.into_iter().map(|w| w.join().unwrap()).collect();
        let crash = sim.crash_stamp();
        stamps
            .iter()
            .map(|st| st.iter().filter(|&&s| crash.is_none_or(|c| s <= c)).count() as u64)
            .collect()
    });
    let events = sim.events();
    drop(kv);
    let image = sim.crash_image().unwrap_or_else(|| sim.crash());
    (acked, image, events)
}

fn check(image: &Image, snaps: &std::path::Path, acked: &[u64], ops: u64) -> Result<(), String> {
    // SAFETY: recovery and the checks run on this thread.
    let region = unsafe { Region::from_image(image, PMEM_LAYOUT, SimConfig::new(1)) }
        .map_err(|e| format!("region: {e}"))?;
    let kv = Durable::<Kv>::builder()
        .replicas(2)
        .region(region, snaps)
        .open(Kv::default)
        .map_err(|e| format!("recovery: {e}"))?;
    for (t, &a) in acked.iter().enumerate() {
        let t = t as u32;
        let last = kv
            .register(t)
            .map_err(|e| e.to_string())?
            .last_applied()
            .map_err(|e| e.to_string())?;
        let m = check_thread(&kv, t, a, last)?;
        if m > ops {
            return Err(format!("thread {t}: {m} writes, only {ops} made"));
        }
    }
    Ok(())
}

#[test]
fn acknowledged_writes_survive_random_crash_points() {
    let points = env("NR_DURABLE_CRASH_POINTS", 100);
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xC4A5);
    let mut lost_some = 0;
    for p in 0..points {
        let threads = 2 + rng.below(2) as u32;
        let replicas = 1 + (p % 2) as usize;
        let ops = 10 + rng.below(20);
        let snaps = tmp.path().join(format!("count{p}"));
        std::fs::create_dir_all(&snaps).unwrap();
        let (_, _, events) = run(threads, replicas, ops, SimConfig::new(p), &snaps);
        std::fs::remove_dir_all(&snaps).unwrap();
        let k = rng.below(events + 1);
        let snaps = tmp.path().join(format!("run{p}"));
        std::fs::create_dir_all(&snaps).unwrap();
        let cfg = SimConfig::new(rng.next())
            .evictions(0.3)
            .crash_keeps(0.5)
            .crash_at(k);
        let (acked, image, _) = run(threads, replicas, ops, cfg, &snaps);
        if acked.iter().sum::<u64>() < u64::from(threads) * ops {
            lost_some += 1;
        }
        check(&image, &snaps, &acked, ops)
            .unwrap_or_else(|e| panic!("point {p}: {threads} threads x {ops} ops on {replicas} replica(s), crash at event {k} of about {events}: {e}"));
        std::fs::remove_dir_all(&snaps).unwrap();
    }
    println!("{points} crash points, {lost_some} of them before the last write returned");
    assert!(
        lost_some * 2 > points,
        "most crashes must cut the run: {lost_some} of {points}"
    );
}
