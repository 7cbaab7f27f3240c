//! The paper's AtomicFloat benchmark (PPoPP'22 §6, Figures 1-3).
//!
//! Every thread repeatedly applies `v := v * k` (returning the old value), with a local-work loop
//! of a random 1..=512 iterations (volatile increments of a local counter, seeded per thread)
//! between operations. A fixed total number of operations is split across the threads and
//! timed from a start barrier to the last join. Methods: PBcomb and PWFcomb persistent (on a
//! mapped file, `Hardware` flushes) and volatile, a `Mutex`, and a `Mutex` that persists the
//! state after each operation (pwb + psync). Reports Mops/s and pwbs/pfences/psyncs per op.
//!
//! ```text
//! cargo run --release -p benches --bin pcomb_atomic_float -- [--ops N] [--threads 1,2,4] [--quick]
//! ```
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::sync::{Barrier, Mutex};
use std::time::Instant;

use pcomb::objects::AtomicFloat;
use pcomb::pmem::{self, Hardware, Persist, Region};
use pcomb::{PBComb, PWFComb};

const LAYOUT: u64 = 0xAF10;
/// The factor: close to 1 so the value stays finite for 10^7 operations.
const K: f64 = 1.000_000_1;

#[derive(Clone, Copy, Debug)]
enum Method {
    PBCombPersistent,
    PWFCombPersistent,
    PBCombVolatile,
    PWFCombVolatile,
    Mutex,
    MutexPersist,
}

const METHODS: [Method; 6] = [
    Method::PBCombPersistent,
    Method::PWFCombPersistent,
    Method::PBCombVolatile,
    Method::PWFCombVolatile,
    Method::Mutex,
    Method::MutexPersist,
];

/// Local work: `n` volatile increments of a local counter.
fn local_work(n: u64) {
    let mut counter = 0u64;
    for _ in 0..n {
        // SAFETY: `counter` is a live local; volatile keeps the loop from being folded.
        unsafe { std::ptr::write_volatile(&mut counter, std::ptr::read_volatile(&counter) + 1) };
    }
}

/// Per-thread xorshift, seeded by thread id.
struct Rng(u64);
impl Rng {
    fn next_work(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        1 + self.0 % 512
    }
}

struct Outcome {
    mops: f64,
    pwbs: f64,
    pfences: f64,
    psyncs: f64,
}

/// Runs `op` `total / threads` times on each thread; returns the outcome.
fn drive<'o>(
    threads: usize,
    total: u64,
    op: impl Fn(usize) -> Box<dyn FnMut() + 'o> + Sync,
) -> Outcome {
    let per_thread = total / threads as u64;
    let barrier = Barrier::new(threads + 1);
    let (start, stats) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, op) = (&barrier, &op);
                s.spawn(move || {
                    let mut apply = op(t);
                    let mut rng =
                        Rng(0x9E37_79B9_7F4A_7C15 ^ ((t as u64 + 1) * 0x2545_F491_4F6C_DD1D));
                    pmem::reset_stats();
                    barrier.wait();
                    for _ in 0..per_thread {
                        apply();
                        local_work(rng.next_work());
                    }
                    pmem::stats()
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let stats: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().expect("worker"))
            .collect();
        (start, stats)
    });
    let secs = start.elapsed().as_secs_f64();
    let ops = (per_thread * threads as u64) as f64;
    let sum = |f: fn(&pmem::PersistStats) -> u64| stats.iter().map(f).sum::<u64>() as f64 / ops;
    Outcome {
        mops: ops / secs / 1e6,
        pwbs: sum(|s| s.pwbs),
        pfences: sum(|s| s.pfences),
        psyncs: sum(|s| s.psyncs),
    }
}

fn run(method: Method, threads: usize, total: u64, dir: &std::path::Path) -> Outcome {
    let path = dir.join(format!("{method:?}-{threads}.pmem"));
    let _ = std::fs::remove_file(&path);
    let file = || Region::create(&path, LAYOUT, 1 << 20).expect("create the region file");
    let k = K.to_bits();
    let out = match method {
        Method::PBCombPersistent => {
            let obj = PBComb::create(file(), AtomicFloat::new(1.0), threads).expect("object");
            drive(threads, total, |_| {
                let mut h = obj.register().expect("slot");
                Box::new(move || {
                    h.execute_mut(k);
                })
            })
        }
        Method::PWFCombPersistent => {
            let obj = PWFComb::create(file(), AtomicFloat::new(1.0), threads).expect("object");
            drive(threads, total, |_| {
                let mut h = obj.register().expect("slot");
                Box::new(move || {
                    h.execute_mut(k);
                })
            })
        }
        Method::PBCombVolatile => {
            let obj = PBComb::new(AtomicFloat::new(1.0), threads).expect("object");
            drive(threads, total, |_| {
                let mut h = obj.register().expect("slot");
                Box::new(move || {
                    h.execute_mut(k);
                })
            })
        }
        Method::PWFCombVolatile => {
            let obj = PWFComb::new(AtomicFloat::new(1.0), threads).expect("object");
            drive(threads, total, |_| {
                let mut h = obj.register().expect("slot");
                Box::new(move || {
                    h.execute_mut(k);
                })
            })
        }
        Method::Mutex => {
            let v = Mutex::new(1.0f64);
            drive(threads, total, |_| {
                Box::new(|| {
                    let mut g = v.lock().expect("no panics");
                    let old = *g;
                    *g = old * K;
                    std::hint::black_box(old);
                })
            })
        }
        Method::MutexPersist => {
            let region = file();
            let off = region.allocator(64).alloc::<u64>().expect("room");
            let p = region.ptr::<u64>(off).expect("in bounds");
            let lock = Mutex::new(());
            let (region, addr, lock) = (&region, p.as_ptr() as usize, &lock);
            drive(threads, total, |_| {
                Box::new(move || {
                    let _g = lock.lock().expect("no panics");
                    let p = addr as *mut u64;
                    // SAFETY: `p` is an aligned, in-bounds u64 of the region, accessed only
                    // under `lock`.
                    let old = f64::from_bits(unsafe { p.read() });
                    let old = if old == 0.0 { 1.0 } else { old };
                    // SAFETY: as above.
                    unsafe { p.write((old * K).to_bits()) };
                    // SAFETY: as above (`p` is in the region, mapped while it lives).
                    unsafe { region.persist().pwb(p.cast(), 8) };
                    region.persist().psync();
                    std::hint::black_box(old);
                })
            })
        }
    };
    let _ = std::fs::remove_file(&path);
    out
}

fn main() {
    let mut ops: u64 = 1_000_000;
    let mut threads = vec![1usize, 2, 4];
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--ops" => ops = args.next().and_then(|v| v.parse().ok()).expect("--ops N"),
            "--threads" => {
                threads = args
                    .next()
                    .expect("--threads 1,2,4")
                    .split(',')
                    .map(|t| t.parse().expect("thread count"))
                    .collect()
            }
            "--quick" => {
                ops = 20_000;
                threads = vec![1, 2];
            }
            other => panic!("unknown argument {other}"),
        }
    }
    let dir = std::env::temp_dir().join(format!("pcomb-atomic-float-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    println!(
        "AtomicFloat, {ops} ops in total, flush = {:?}",
        Hardware::new().kind()
    );
    println!(
        "{:<20} {:>7} {:>9} {:>8} {:>8} {:>8}",
        "method", "threads", "Mops/s", "pwb/op", "pfence/op", "psync/op"
    );
    for &method in &METHODS {
        for &t in &threads {
            let o = run(method, t, ops, &dir);
            println!(
                "{:<20} {:>7} {:>9.3} {:>8.3} {:>8.3} {:>8.3}",
                format!("{method:?}"),
                t,
                o.mops,
                o.pwbs,
                o.pfences,
                o.psyncs
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
