//! The paper's structure benchmarks (PPoPP'22 §6, Figures 4-7), scaled to this machine.
//!
//! - stack: push/pop pairs from an empty stack; queue: enqueue/dequeue pairs from an empty
//!   queue; heap: insert/delete-min pairs on heaps of 64..1024 keys, half full at the start.
//! - Each thread runs `pairs / threads` pairs, with the AtomicFloat benchmark's local work (a
//!   random 1..=512 volatile increments, seeded per thread) after every operation; timed from a
//!   start barrier to the last join. Median of `--reps` runs, with the min-max spread.
//! - Methods, side by side in one run: the PB structures, PWFStack and PWFQueue persistent (a
//!   mapped file in the temp dir, `Hardware` flushes), with and without elimination / recycling, and volatile; a
//!   `Mutex`-and-persist baseline (the same sequential structure as an array in the region
//!   under a `Mutex`, pwb of what changed and psync per operation); volatile references
//!   (`crossbeam_queue::SegQueue`, `Mutex<Vec>` / `Mutex<VecDeque>` / `Mutex<BinaryHeap>`).
//! - Reported per pair: throughput (Mpairs/s), pwbs (cache lines written back), pfences,
//!   psyncs (`pmem::stats`, summed over threads).
//!
//! ```text
//! cargo run --release -p benches --bin pcomb_structures -- [--pairs N] [--threads 1,2,4]
//!     [--reps R] [--only stack|queue|heap] [--quick]
//! ```
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Barrier, Mutex};
use std::time::Instant;

use crossbeam_queue::SegQueue;
use pcomb::pmem::{self, Hardware, Persist, Region};
use pcomb::structures::{Options, PBHeap, PBQueue, PBStack, PWFQueue, PWFStack};

const LAYOUT: u64 = 0x5B_E4C4;

/// Local work: `n` volatile increments of a local counter.
fn local_work(n: u64) {
    let mut counter = 0u64;
    for _ in 0..n {
        // SAFETY: `counter` is a live local; volatile keeps the loop from being folded.
        unsafe { std::ptr::write_volatile(&mut counter, std::ptr::read_volatile(&counter) + 1) };
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[derive(Clone, Copy, Default)]
struct Outcome {
    mpairs: f64,
    pwbs: f64,
    pfences: f64,
    psyncs: f64,
}

/// Runs `pair(rng)` `total / threads` times per thread, each followed by local work.
fn drive<'o>(
    threads: usize,
    total: u64,
    make: impl Fn(usize) -> Box<dyn FnMut(&mut dyn FnMut()) + 'o> + Sync,
) -> Outcome {
    let per = total / threads as u64;
    let barrier = Barrier::new(threads + 1);
    let (start, stats) = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, make) = (&barrier, &make);
                s.spawn(move || {
                    let mut pair = make(t);
                    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((t as u64 + 1) * 0x2545_F491));
                    pmem::reset_stats();
                    barrier.wait();
                    for _ in 0..per {
                        // The closure runs the first op, calls `work`, runs the second op.
                        pair(&mut || local_work(1 + rng.next() % 512));
                        local_work(1 + rng.next() % 512);
                    }
                    pmem::stats()
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let stats: Vec<_> = hs.into_iter().map(|h| h.join().expect("worker")).collect();
        (start, stats)
    });
    let secs = start.elapsed().as_secs_f64();
    let pairs = (per * threads as u64) as f64;
    let sum = |f: fn(&pmem::PersistStats) -> u64| stats.iter().map(f).sum::<u64>() as f64 / pairs;
    Outcome {
        mpairs: pairs / secs / 1e6,
        pwbs: sum(|s| s.pwbs),
        pfences: sum(|s| s.pfences),
        psyncs: sum(|s| s.psyncs),
    }
}

fn file(dir: &Path, name: &str, bytes: usize) -> (Region<Hardware>, PathBuf) {
    let path = dir.join(format!("{name}.pmem"));
    let _ = std::fs::remove_file(&path);
    let size = ((bytes + 8192).div_ceil(4096) * 4096) as u64;
    (
        Region::create(&path, LAYOUT, size).expect("region file"),
        path,
    )
}

const ALL: Options = Options {
    elimination: true,
    recycling: true,
};
const NO_ELIM: Options = Options {
    elimination: false,
    recycling: true,
};
const NO_REC: Options = Options {
    elimination: true,
    recycling: false,
};

/// A `Mutex` over a sequential array structure in a region, persisting what each op changed.
struct MutexPersist {
    region: Region<Hardware>,
    /// Word 0: length (stack, heap) or head (queue); word 1: tail (queue); words 8..: slots.
    base: usize,
    slots: usize,
    lock: Mutex<()>,
}

impl MutexPersist {
    fn new(region: Region<Hardware>, slots: usize) -> Self {
        let off = region
            .allocator(((slots + 8) * 8) as u64)
            .alloc_bytes(((slots + 8) * 8) as u64, 64)
            .expect("room");
        let base = region.ptr::<u64>(off).expect("in bounds").as_ptr() as usize;
        Self {
            region,
            base,
            slots,
            lock: Mutex::new(()),
        }
    }
    fn word(&self, i: usize) -> *mut u64 {
        (self.base as *mut u64).wrapping_add(i)
    }
    fn get(&self, i: usize) -> u64 {
        // SAFETY: `i < slots + 8` words of the allocation, read under `lock`.
        unsafe { self.word(i).read() }
    }
    fn set(&self, i: usize, v: u64) {
        // SAFETY: as for `get`.
        unsafe { self.word(i).write(v) };
    }
    fn pwb(&self, i: usize, words: usize) {
        // SAFETY: as for `get` (words `i..i + words` are in the region, mapped while it lives).
        unsafe { self.region.persist().pwb(self.word(i).cast(), words * 8) };
    }
    fn push(&self, v: u64) {
        let _g = self.lock.lock().expect("no panic");
        let n = self.get(0) as usize;
        self.set(8 + n, v);
        self.pwb(8 + n, 1);
        self.region.persist().pfence();
        self.set(0, n as u64 + 1);
        self.pwb(0, 1);
        self.region.persist().psync();
    }
    fn pop(&self) -> Option<u64> {
        let _g = self.lock.lock().expect("no panic");
        let n = self.get(0) as usize;
        if n == 0 {
            return None;
        }
        self.set(0, n as u64 - 1);
        self.pwb(0, 1);
        self.region.persist().psync();
        Some(self.get(8 + n - 1))
    }
    fn enqueue(&self, v: u64) {
        let _g = self.lock.lock().expect("no panic");
        let t = self.get(1);
        let i = 8 + (t as usize % self.slots);
        self.set(i, v);
        self.pwb(i, 1);
        self.region.persist().pfence();
        self.set(1, t + 1);
        self.pwb(1, 1);
        self.region.persist().psync();
    }
    fn dequeue(&self) -> Option<u64> {
        let _g = self.lock.lock().expect("no panic");
        let (h, t) = (self.get(0), self.get(1));
        if h == t {
            return None;
        }
        let v = self.get(8 + (h as usize % self.slots));
        self.set(0, h + 1);
        self.pwb(0, 1);
        self.region.persist().psync();
        Some(v)
    }
    /// Binary min-heap in the slots; persists the touched array range and the length.
    fn heap_op(&self, insert: Option<u64>) -> Option<u64> {
        let _g = self.lock.lock().expect("no panic");
        let n = self.get(0) as usize;
        let key = |i: usize| self.get(8 + i);
        let (mut lo, mut hi, ret, len);
        match insert {
            Some(k) => {
                let mut i = n;
                self.set(8 + i, k);
                hi = i;
                while i > 0 && key((i - 1) / 2) > key(i) {
                    let p = (i - 1) / 2;
                    let (a, b) = (key(p), key(i));
                    self.set(8 + p, b);
                    self.set(8 + i, a);
                    i = p;
                }
                lo = i;
                len = n + 1;
                ret = None;
            }
            None => {
                if n == 0 {
                    return None;
                }
                ret = Some(key(0));
                len = n - 1;
                self.set(8, key(len));
                let mut i = 0;
                lo = 0;
                loop {
                    let (l, r) = (2 * i + 1, 2 * i + 2);
                    let mut m = i;
                    if l < len && key(l) < key(m) {
                        m = l;
                    }
                    if r < len && key(r) < key(m) {
                        m = r;
                    }
                    if m == i {
                        break;
                    }
                    let (a, b) = (key(i), key(m));
                    self.set(8 + i, b);
                    self.set(8 + m, a);
                    i = m;
                }
                hi = i;
            }
        }
        if lo > hi {
            std::mem::swap(&mut lo, &mut hi);
        }
        self.pwb(8 + lo, hi - lo + 1);
        self.region.persist().pfence();
        self.set(0, len as u64);
        self.pwb(0, 1);
        self.region.persist().psync();
        ret
    }
}

type Row = (String, Outcome);

fn stack_rows(threads: usize, pairs: u64, dir: &Path) -> Vec<Row> {
    let cap = |o: Options| if o.recycling { 4096 } else { pairs as u32 + 64 };
    let mut rows = Vec::new();
    for (name, o) in [
        ("PBStack", ALL),
        ("PBStack-no-elim", NO_ELIM),
        ("PBStack-no-rec", NO_REC),
    ] {
        let bytes = PBStack::<Hardware>::bytes_needed(cap(o), threads);
        let (region, path) = file(dir, name, bytes);
        let s = PBStack::create(region, cap(o), threads, o).expect("stack");
        let out = drive(threads, pairs, |t| {
            let mut h = s.register().expect("slot");
            Box::new(move |work| {
                h.push(t as u64).expect("room");
                work();
                std::hint::black_box(h.pop());
            })
        });
        drop(s);
        let _ = std::fs::remove_file(path);
        rows.push((name.to_string(), out));
    }
    // PWFStack: nodes belong to threads (a chunk each, plus what their installs popped), so a
    // thread that installs more pushes than pops drains its list; a chunk of `pairs` nodes
    // covers every push any one thread can install.
    let pwf_cap = pairs as u32 + 64;
    for (name, o) in [
        ("PWFStack", ALL),
        ("PWFStack-no-elim", NO_ELIM),
        ("PWFStack-no-rec", NO_REC),
    ] {
        let bytes = PWFStack::<Hardware>::bytes_needed(pwf_cap, threads);
        let (region, path) = file(dir, name, bytes);
        let s = PWFStack::create(region, pwf_cap, threads, o).expect("stack");
        let out = drive(threads, pairs, |t| {
            let mut h = s.register().expect("slot");
            Box::new(move |work| {
                h.push(t as u64).expect("room");
                work();
                std::hint::black_box(h.pop());
            })
        });
        drop(s);
        let _ = std::fs::remove_file(path);
        rows.push((name.to_string(), out));
    }
    let s = PWFStack::new(pwf_cap, threads).expect("stack");
    rows.push((
        "PWFStack-volatile".into(),
        drive(threads, pairs, |t| {
            let mut h = s.register().expect("slot");
            Box::new(move |work| {
                h.push(t as u64).expect("room");
                work();
                std::hint::black_box(h.pop());
            })
        }),
    ));
    drop(s);
    let s = PBStack::new(4096, threads).expect("stack");
    rows.push((
        "PBStack-volatile".into(),
        drive(threads, pairs, |t| {
            let mut h = s.register().expect("slot");
            Box::new(move |work| {
                h.push(t as u64).expect("room");
                work();
                std::hint::black_box(h.pop());
            })
        }),
    ));
    let (region, path) = file(dir, "mutex-stack", 4096 * 8 + 64);
    let m = MutexPersist::new(region, 4096);
    rows.push((
        "Mutex+persist".into(),
        drive(threads, pairs, |t| {
            let m = &m;
            Box::new(move |work| {
                m.push(t as u64);
                work();
                std::hint::black_box(m.pop());
            })
        }),
    ));
    let _ = std::fs::remove_file(path);
    let v = Mutex::new(Vec::<u64>::new());
    rows.push((
        "Mutex<Vec> (volatile)".into(),
        drive(threads, pairs, |t| {
            let v = &v;
            Box::new(move |work| {
                v.lock().expect("no panic").push(t as u64);
                work();
                std::hint::black_box(v.lock().expect("no panic").pop());
            })
        }),
    ));
    rows
}

fn queue_rows(threads: usize, pairs: u64, dir: &Path) -> Vec<Row> {
    let mut rows = Vec::new();
    for (name, o) in [("PBQueue", ALL), ("PBQueue-no-rec", NO_REC)] {
        let cap = if o.recycling { 4096 } else { pairs as u32 + 64 };
        let bytes = PBQueue::<Hardware>::bytes_needed(cap, threads);
        let (region, path) = file(dir, name, bytes);
        let q = PBQueue::create(region, cap, threads, o).expect("queue");
        let out = drive(threads, pairs, |t| {
            let mut h = q.register().expect("slot");
            Box::new(move |work| {
                h.enqueue(t as u64).expect("room");
                work();
                std::hint::black_box(h.dequeue());
            })
        });
        drop(q);
        let _ = std::fs::remove_file(path);
        rows.push((name.to_string(), out));
    }
    // PWFQueue reuses no node while it runs (the paper leaves that open) and a thread's
    // attempt may serve every enqueue: a chunk of `pairs` nodes per thread covers the run.
    let pwf_cap = pairs as u32 + 64;
    {
        let name = "PWFQueue";
        let bytes = PWFQueue::<Hardware>::bytes_needed(pwf_cap, threads);
        let (region, path) = file(dir, name, bytes);
        let q = PWFQueue::create(region, pwf_cap, threads, ALL).expect("queue");
        let out = drive(threads, pairs, |t| {
            let mut h = q.register().expect("slot");
            Box::new(move |work| {
                h.enqueue(t as u64).expect("room");
                work();
                std::hint::black_box(h.dequeue());
            })
        });
        drop(q);
        let _ = std::fs::remove_file(path);
        rows.push((name.to_string(), out));
    }
    let q = PWFQueue::new(pwf_cap, threads).expect("queue");
    rows.push((
        "PWFQueue-volatile".into(),
        drive(threads, pairs, |t| {
            let mut h = q.register().expect("slot");
            Box::new(move |work| {
                h.enqueue(t as u64).expect("room");
                work();
                std::hint::black_box(h.dequeue());
            })
        }),
    ));
    drop(q);
    let q = PBQueue::new(4096, threads).expect("queue");
    rows.push((
        "PBQueue-volatile".into(),
        drive(threads, pairs, |t| {
            let mut h = q.register().expect("slot");
            Box::new(move |work| {
                h.enqueue(t as u64).expect("room");
                work();
                std::hint::black_box(h.dequeue());
            })
        }),
    ));
    let (region, path) = file(dir, "mutex-queue", 4096 * 8 + 64);
    let m = MutexPersist::new(region, 4096);
    rows.push((
        "Mutex+persist".into(),
        drive(threads, pairs, |t| {
            let m = &m;
            Box::new(move |work| {
                m.enqueue(t as u64);
                work();
                std::hint::black_box(m.dequeue());
            })
        }),
    ));
    let _ = std::fs::remove_file(path);
    let sq = SegQueue::<u64>::new();
    rows.push((
        "SegQueue (volatile)".into(),
        drive(threads, pairs, |t| {
            let sq = &sq;
            Box::new(move |work| {
                sq.push(t as u64);
                work();
                std::hint::black_box(sq.pop());
            })
        }),
    ));
    let v = Mutex::new(VecDeque::<u64>::new());
    rows.push((
        "Mutex<VecDeque> (volatile)".into(),
        drive(threads, pairs, |t| {
            let v = &v;
            Box::new(move |work| {
                v.lock().expect("no panic").push_back(t as u64);
                work();
                std::hint::black_box(v.lock().expect("no panic").pop_front());
            })
        }),
    ));
    rows
}

fn heap_rows<const CAP: usize>(threads: usize, pairs: u64, dir: &Path) -> Vec<Row> {
    let mut rows = Vec::new();
    let key = move |t: usize| {
        let mut r = Rng(0xDEAD_BEEF ^ ((t as u64 + 1) * 0x1_0000_0001));
        move || r.next() % 1_000_000
    };
    let (region, path) = file(dir, &format!("heap{CAP}"), (CAP + 64 * threads) * 16 + 8192);
    let heap = PBHeap::<CAP, _>::create(region, threads).expect("heap");
    {
        let mut h = heap.register().expect("slot");
        let mut k = key(99);
        for _ in 0..CAP / 2 {
            h.insert(k()).expect("room");
        }
    }
    rows.push((
        format!("PBHeap-{CAP}"),
        drive(threads, pairs, |t| {
            let mut h = heap.register().expect("slot");
            let mut k = key(t);
            Box::new(move |work| {
                h.insert(k()).expect("half full");
                work();
                std::hint::black_box(h.delete_min());
            })
        }),
    ));
    drop(heap);
    let _ = std::fs::remove_file(path);
    let heap = PBHeap::<CAP>::new(threads).expect("heap");
    {
        let mut h = heap.register().expect("slot");
        let mut k = key(99);
        for _ in 0..CAP / 2 {
            h.insert(k()).expect("room");
        }
    }
    rows.push((
        format!("PBHeap-{CAP}-volatile"),
        drive(threads, pairs, |t| {
            let mut h = heap.register().expect("slot");
            let mut k = key(t);
            Box::new(move |work| {
                h.insert(k()).expect("half full");
                work();
                std::hint::black_box(h.delete_min());
            })
        }),
    ));
    let (region, path) = file(dir, &format!("mutex-heap{CAP}"), CAP * 8 + 64);
    let m = MutexPersist::new(region, CAP);
    {
        let mut k = key(99);
        for _ in 0..CAP / 2 {
            m.heap_op(Some(k()));
        }
    }
    rows.push((
        format!("Mutex+persist-{CAP}"),
        drive(threads, pairs, |t| {
            let m = &m;
            let mut k = key(t);
            Box::new(move |work| {
                m.heap_op(Some(k()));
                work();
                std::hint::black_box(m.heap_op(None));
            })
        }),
    ));
    let _ = std::fs::remove_file(path);
    let v = Mutex::new(BinaryHeap::<Reverse<u64>>::new());
    {
        let mut k = key(99);
        let mut g = v.lock().expect("no panic");
        for _ in 0..CAP / 2 {
            g.push(Reverse(k()));
        }
    }
    rows.push((
        format!("Mutex<BinaryHeap>-{CAP} (volatile)"),
        drive(threads, pairs, |t| {
            let v = &v;
            let mut k = key(t);
            Box::new(move |work| {
                v.lock().expect("no panic").push(Reverse(k()));
                work();
                std::hint::black_box(v.lock().expect("no panic").pop());
            })
        }),
    ));
    rows
}

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn main() {
    let mut pairs: u64 = 200_000;
    let mut threads = vec![1usize, 2, 4];
    let mut reps = 3;
    let mut only: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--pairs" => pairs = args.next().and_then(|v| v.parse().ok()).expect("--pairs N"),
            "--reps" => reps = args.next().and_then(|v| v.parse().ok()).expect("--reps R"),
            "--only" => only = args.next(),
            "--threads" => {
                threads = args
                    .next()
                    .expect("--threads 1,2,4")
                    .split(',')
                    .map(|t| t.parse().expect("thread count"))
                    .collect()
            }
            "--quick" => {
                pairs = 4_000;
                threads = vec![1, 2];
                reps = 1;
            }
            other => panic!("unknown argument {other}"),
        }
    }
    let dir = std::env::temp_dir().join(format!("pcomb-structs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "structures: {pairs} pairs per run, median of {reps} (min-max), {cores} cores, \
         flush = {:?}, region files in {}",
        Hardware::new().kind(),
        dir.display()
    );
    println!(
        "{:<34} {:>3} {:>9} {:>17} {:>9} {:>10} {:>9}",
        "method", "thr", "Mpairs/s", "(min-max)", "pwb/pair", "pfence/pair", "psync/pair"
    );
    let want = |s: &str| only.as_deref().map_or(true, |o| o == s);
    for &t in &threads {
        let mut sets: Vec<Box<dyn Fn() -> Vec<Row>>> = Vec::new();
        let d = dir.clone();
        if want("stack") {
            let d = d.clone();
            sets.push(Box::new(move || stack_rows(t, pairs, &d)));
        }
        if want("queue") {
            let d = d.clone();
            sets.push(Box::new(move || queue_rows(t, pairs, &d)));
        }
        if want("heap") {
            let d2 = d.clone();
            sets.push(Box::new(move || heap_rows::<64>(t, pairs, &d2)));
            let d2 = d.clone();
            sets.push(Box::new(move || heap_rows::<256>(t, pairs, &d2)));
            let d2 = d.clone();
            sets.push(Box::new(move || heap_rows::<1024>(t, pairs, &d2)));
        }
        for set in &sets {
            let runs: Vec<Vec<Row>> = (0..reps).map(|_| set()).collect();
            for i in 0..runs[0].len() {
                let name = &runs[0][i].0;
                let (m, lo, hi) = median(runs.iter().map(|r| r[i].1.mpairs).collect());
                let o = runs[0][i].1;
                println!(
                    "{:<34} {:>3} {:>9.3} {:>17} {:>9.2} {:>10.2} {:>9.2}",
                    name,
                    t,
                    m,
                    format!("({lo:.3}-{hi:.3})"),
                    o.pwbs,
                    o.pfences,
                    o.psyncs
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
