//! The local work between two operations, as the PBcomb authors' benchmarks do it (the Synch
//! framework's `benchmarks/pbcombbench.c` and its siblings, PPoPP'22 §6): after every
//! operation a thread draws `rnum` in `1..=max_work` from the framework's per-thread
//! generator and runs an empty loop over a `volatile` counter `rnum` times.
//!
//! Both parts are reproduced operation for operation, so that a ratio against the C code
//! compares the combining protocols and not the loops (issue 23: the loop this replaced cost
//! about 70 ns per call against the C loop's 108 ns):
//!
//! - **the draw**: the C library's classic linear congruential step (`x := x * 1103515245 +
//!   12345` on a signed 64-bit word), bits 16-30 of the result as `r` in `0..32768`, then
//!   `rnum = 1 + (long)(max_work * (r / 32769.0))` in double precision (computed as the C
//!   code's `-Ofast` build does, `r * (max_work / 32769.0)`: the same counts); thread `t` seeds its
//!   generator with `t + 1` (plus the benchmark's `--seed`, 0 reproduces the C streams);
//! - **the loop**: `for (j = 0; j < rnum; j++) ;` over a `volatile long j`: each iteration
//!   loads `j` for the comparison, loads it again and stores `j + 1` (two loads and one
//!   store, a dependence through memory).

/// The paper's maximum local work between two operations (`-w 512` in the authors' scripts).
pub const MAX_WORK: u64 = 512;

/// One thread's local work: the authors' generator and volatile loop (module docs).
///
/// # Examples
///
/// ```
/// use benches::pcomb_bench::LocalWork;
///
/// // Seed 0, thread 0: the same iteration counts as thread 0 of the C benchmark.
/// let mut w = LocalWork::new(0, 0);
/// assert_eq!((w.run(), w.run(), w.run()), (264, 90, 159));
/// ```
#[derive(Clone, Debug)]
pub struct LocalWork {
    state: i64,
}

impl LocalWork {
    /// Thread `thread`'s work stream under the benchmark seed `seed` (the generator starts at
    /// `seed + thread + 1`, as the C benchmarks' `synchFastRandomSetSeed(id + 1)` for seed 0).
    ///
    /// # Examples
    ///
    /// See [`LocalWork`].
    pub fn new(seed: u64, thread: u64) -> Self {
        // The C seed is a `uint32_t` widened to a `long`.
        let s = seed.wrapping_add(thread).wrapping_add(1) as u32;
        Self {
            state: i64::from(s),
        }
    }

    /// The next iteration count, in `1..=MAX_WORK`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut w = benches::pcomb_bench::LocalWork::new(0, 1);
    /// assert_eq!(w.draw(), 15);
    /// ```
    pub fn draw(&mut self) -> u64 {
        self.state = self.state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        // `(unsigned)(x / 65536) % 32768`: a signed division, truncated to 32 bits.
        let r = ((self.state / 65_536) as u32) % 32_768;
        // `low + (long)(high * (r / (32768 + 1.0)))`, as `-Ofast` compiles it: one multiply by
        // `high / 32769.0` (the same result for every `r` in `0..32768`).
        1 + (f64::from(r) * (MAX_WORK as f64 / 32_769.0)) as i64 as u64
    }

    /// Draws an iteration count and runs the loop that many times; returns the iterations run.
    ///
    /// # Examples
    ///
    /// See [`LocalWork`].
    #[inline(never)]
    pub fn run(&mut self) -> u64 {
        let n = self.draw();
        spin(n)
    }
}

/// `for (j = 0; j < n; j++) ;` over a volatile `j`: per iteration a load for the comparison,
/// then a load and a store for the increment. Returns the final `j` (the iterations run).
#[inline(always)]
fn spin(n: u64) -> u64 {
    let mut j = 0u64;
    let j: *mut u64 = &mut j;
    // SAFETY: `j` points to the live, aligned local above and nothing else refers to it
    // (the same for the blocks below); volatile keeps every access, as C's `volatile long j`
    // does.
    unsafe { std::ptr::write_volatile(j, 0) };
    // SAFETY: as above.
    while unsafe { std::ptr::read_volatile(j) } < n {
        // SAFETY: as above.
        unsafe { std::ptr::write_volatile(j, std::ptr::read_volatile(j) + 1) };
    }
    // SAFETY: as above.
    unsafe { std::ptr::read_volatile(j) }
}

/// The local work alone: `calls` calls of [`LocalWork::run`] on the calling thread; returns
/// the nanoseconds per call (the loop's cost, without any operation between calls).
///
/// # Examples
///
/// ```
/// let ns = benches::pcomb_bench::local_work_ns(0, 1_000);
/// assert!(ns > 0.0);
/// ```
pub fn local_work_ns(seed: u64, calls: u64) -> f64 {
    let mut w = LocalWork::new(seed, 0);
    let mut total = 0u64;
    let began = std::time::Instant::now();
    for _ in 0..calls {
        total = total.wrapping_add(w.run());
    }
    let ns = began.elapsed().as_nanos() as f64;
    std::hint::black_box(total);
    ns / calls.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first draws and a long sum of the C benchmark's streams for threads 0 and 1
    /// (printed by a program calling the Synch framework's `synchFastRandomSetSeed(id + 1)`
    /// and `synchFastRandomRange(1, 512)`).
    #[test]
    fn draws_match_the_authors_generator() {
        let expect: [([u64; 8], u64); 2] = [
            ([264, 90, 159, 274, 486, 88, 360, 116], 25_727_981),
            ([15, 357, 160, 202, 404, 424, 469, 436], 25_634_408),
        ];
        for (t, (first, sum)) in expect.iter().enumerate() {
            let mut w = LocalWork::new(0, t as u64);
            let got: Vec<u64> = (0..8).map(|_| w.draw()).collect();
            assert_eq!(&got[..], &first[..], "thread {t}");
            let s: u64 = (0..100_000).map(|_| w.draw()).sum();
            assert_eq!(s, *sum, "thread {t}");
        }
    }

    #[test]
    fn every_draw_is_in_range_and_run_returns_it() {
        let mut a = LocalWork::new(7, 3);
        let mut b = a.clone();
        for _ in 0..10_000 {
            let n = a.draw();
            assert!((1..=MAX_WORK).contains(&n));
            assert_eq!(b.run(), n);
        }
    }
}
