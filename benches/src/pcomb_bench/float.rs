//! The AtomicFloat benchmark (PPoPP'22 Figures 1-3).

#![allow(clippy::disallowed_types)] // the Mutex baselines are std's Mutex, what users would pick

use std::hint::black_box;
use std::sync::Mutex;

use pcomb::objects::AtomicFloat;
use pcomb::{PBComb, PBComb1, PWFComb, PWFComb1};

use super::adapters::{built, float_op_pb, float_op_pb1, float_op_pwf, register};
use super::baselines::MutexPersist;
use super::{drive, Outcome, TempRegion};
use crate::BenchError;

/// AtomicFloat's factor: close to 1 so the value stays finite for 10^7 operations.
const K: f64 = 1.000_000_1;

/// A method of the AtomicFloat benchmark.
///
/// # Examples
///
/// ```
/// use benches::pcomb_bench::FloatMethod;
///
/// assert_eq!(FloatMethod::ALL.len(), 8);
/// assert_eq!(FloatMethod::MutexPersist.name(), "Mutex+persist");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatMethod {
    /// PBcomb on a mapped file.
    PBComb,
    /// PBcomb with the self-naming record layout (`pcomb::PBComb1`: one pwb and one psync per
    /// pass) on a mapped file.
    PBComb1,
    /// PWFcomb on a mapped file.
    PWFComb,
    /// PWFcomb with stamped records (`pcomb::PWFComb1`: one pwb of the record and one psync
    /// per install, `S` not persisted) on a mapped file.
    PWFComb1,
    /// PBcomb, volatile mode.
    PBCombVolatile,
    /// PWFcomb, volatile mode.
    PWFCombVolatile,
    /// `std::sync::Mutex<f64>`.
    Mutex,
    /// A `Mutex` over a word of a mapped file, pwb + psync after every update: durable, not
    /// detectable.
    MutexPersist,
}

impl FloatMethod {
    /// Every method, in table order.
    pub const ALL: [FloatMethod; 8] = [
        FloatMethod::PBComb,
        FloatMethod::PBComb1,
        FloatMethod::PWFComb,
        FloatMethod::PWFComb1,
        FloatMethod::PBCombVolatile,
        FloatMethod::PWFCombVolatile,
        FloatMethod::Mutex,
        FloatMethod::MutexPersist,
    ];

    /// The method's name in tables and criterion ids.
    ///
    /// # Examples
    ///
    /// See [`FloatMethod`].
    pub fn name(self) -> &'static str {
        match self {
            FloatMethod::PBComb => "PBcomb",
            FloatMethod::PBComb1 => "PBcomb1",
            FloatMethod::PWFComb => "PWFcomb",
            FloatMethod::PWFComb1 => "PWFcomb1",
            FloatMethod::PBCombVolatile => "PBcomb-volatile",
            FloatMethod::PWFCombVolatile => "PWFcomb-volatile",
            FloatMethod::Mutex => "Mutex",
            FloatMethod::MutexPersist => "Mutex+persist",
        }
    }
}

/// The workload setting recorded with every CSV row of the AtomicFloat benchmark.
///
/// # Examples
///
/// ```
/// assert_eq!(benches::pcomb_bench::float_panel().name, "AtomicFloat");
/// ```
pub fn float_panel() -> super::record::Panel {
    super::record::Panel {
        name: "AtomicFloat".into(),
        size: "1 value (starts at 1.0)".into(),
        mix: format!("v := v * {K} (returns the old v); local work 1..=512 after every op"),
        distribution: "-".into(),
    }
}

/// Runs the AtomicFloat benchmark once: a fresh object, `threads` threads of `ops_per_thread`
/// operations each.
///
/// # Errors
///
/// [`BenchError::Pcomb`] when the object or its region cannot be built, or a thread cannot
/// register; [`BenchError::ThreadPanicked`].
///
/// # Examples
///
/// ```
/// use benches::pcomb_bench::{atomic_float, FloatMethod};
///
/// let o = atomic_float(FloatMethod::PBCombVolatile, 2, 100, 1)?;
/// assert_eq!(o.ops, 200);
/// assert_eq!(o.pwbs, 0.0);
/// # Ok::<(), benches::BenchError>(())
/// ```
pub fn atomic_float(
    method: FloatMethod,
    threads: usize,
    ops_per_thread: u64,
    seed: u64,
) -> Result<Outcome, BenchError> {
    let k = K.to_bits();
    let init = || AtomicFloat::new(1.0);
    match method {
        FloatMethod::PBComb => {
            let (_file, region) = TempRegion::create("float", 1 << 20)?;
            let obj = built(PBComb::create(region, init(), threads))?;
            drive(threads, ops_per_thread, seed, |_| {
                let mut h = register(obj.register())?;
                Ok(Box::new(move |_| float_op_pb(&mut h, k)))
            })
        }
        FloatMethod::PBComb1 => {
            let (_file, region) = TempRegion::create("float", 1 << 20)?;
            let obj = built(PBComb1::create(region, init(), threads))?;
            drive(threads, ops_per_thread, seed, |_| {
                let mut h = register(obj.register())?;
                Ok(Box::new(move |_| float_op_pb1(&mut h, k)))
            })
        }
        FloatMethod::PWFComb => {
            let (_file, region) = TempRegion::create("float", 1 << 20)?;
            let obj = built(PWFComb::create(region, init(), threads))?;
            drive(threads, ops_per_thread, seed, |_| {
                let mut h = register(obj.register())?;
                Ok(Box::new(move |_| float_op_pwf(&mut h, k)))
            })
        }
        FloatMethod::PWFComb1 => {
            let (_file, region) = TempRegion::create("float", 1 << 20)?;
            let obj = built(PWFComb1::create(region, init(), threads))?;
            drive(threads, ops_per_thread, seed, |_| {
                let mut h = register(obj.register())?;
                Ok(Box::new(move |_| {
                    black_box(h.execute_mut(k));
                    Ok(())
                }))
            })
        }
        FloatMethod::PBCombVolatile => {
            let obj = built(PBComb::new(init(), threads))?;
            drive(threads, ops_per_thread, seed, |_| {
                let mut h = register(obj.register())?;
                Ok(Box::new(move |_| float_op_pb(&mut h, k)))
            })
        }
        FloatMethod::PWFCombVolatile => {
            let obj = built(PWFComb::new(init(), threads))?;
            drive(threads, ops_per_thread, seed, |_| {
                let mut h = register(obj.register())?;
                Ok(Box::new(move |_| float_op_pwf(&mut h, k)))
            })
        }
        FloatMethod::Mutex => {
            let v = Mutex::new(1.0f64);
            drive(threads, ops_per_thread, seed, |_| {
                let v = &v;
                Ok(Box::new(move |_| {
                    let mut g = v.lock().map_err(|_| BenchError::Poisoned)?;
                    let old = *g;
                    *g = old * K;
                    black_box(old);
                    Ok(())
                }))
            })
        }
        FloatMethod::MutexPersist => {
            let (_file, region) = TempRegion::create("float-mutex", 4096)?;
            let m = MutexPersist::new(region, 1)?;
            m.with(|w| w.set(8, 1.0f64.to_bits()))?;
            drive(threads, ops_per_thread, seed, |_| {
                let m = &m;
                Ok(Box::new(move |_| {
                    m.with(|w| {
                        let old = f64::from_bits(w.get(8));
                        w.set(8, (old * K).to_bits());
                        w.pwb(8, 1);
                        w.psync();
                        black_box(old);
                    })
                }))
            })
        }
    }
}
