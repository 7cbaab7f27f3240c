//! What the crash tests of PBComb/PWFComb (`crash_sim.rs`) and of PBComb1
//! (`pbcomb1_crash.rs`) share: the objects under test, how they encode per-thread effects,
//! and a thread's log of returns settled against the crash's stamp.
#![allow(dead_code)]

use pcomb::objects::{AtomicFloat, Counter};
use pcomb::{Dispatch, Pod};

pub(crate) const PRIMES: [u64; 3] = [2, 3, 5];

/// How an object under test encodes per-thread effects.
pub(crate) trait Subject:
    Dispatch<WriteOperation = u64, Response = u64> + Pod + Sized
where
    for<'a> Self: Dispatch<ReadOperation<'a> = ()>,
{
    const OPS: u64;
    fn init() -> Self;
    fn op(thread: usize) -> u64;
    /// Thread `t`'s number of applied operations in the value `v` (state or old value).
    fn count(v: u64, thread: usize) -> u64;
}

impl Subject for Counter {
    const OPS: u64 = 6;
    fn init() -> Self {
        Counter::default()
    }
    fn op(t: usize) -> u64 {
        1 << (16 * t)
    }
    fn count(v: u64, t: usize) -> u64 {
        (v >> (16 * t)) & 0xffff
    }
}

impl Subject for AtomicFloat {
    const OPS: u64 = 5;
    fn init() -> Self {
        AtomicFloat::new(1.0)
    }
    fn op(t: usize) -> u64 {
        (PRIMES[t] as f64).to_bits()
    }
    fn count(v: u64, t: usize) -> u64 {
        let mut x = f64::from_bits(v) as u64;
        let mut n = 0;
        while x > 0 && x.is_multiple_of(PRIMES[t]) {
            x /= PRIMES[t];
            n += 1;
        }
        n
    }
}

/// Recovery from the persisted numbers alone: thread `t`'s reopened handle says `seq` and
/// `last_applied() == (last, r)`, and the recovered state holds `n` of its operations; the
/// handle must name the last of them, with its response.
pub(crate) fn check_reopened_numbers<D>(
    t: usize,
    n: u64,
    seq: u64,
    (last, r): (u64, u64),
) -> Result<(), String>
where
    for<'a> D: Subject + Dispatch<ReadOperation<'a> = ()>,
{
    if seq != n || last != n || (n > 0 && D::count(r, t) != n - 1) {
        return Err(format!(
            "thread {t}: the reopened handle says seq {seq} (last applied {last}, response \
             {r:#x}), but the state holds {n} of its ops"
        ));
    }
    Ok(())
}

/// Resuming without user-kept numbers, on a reopened object `$obj` (any of the combining
/// objects: their handles have `register_as`, `seq`, `execute_mut` and `execute`): each of
/// `$threads` threads runs its operations from `seq() + 1` to `OPS`; then every thread must
/// have exactly `OPS` in the state. Evaluates to `Result<(), String>`.
macro_rules! check_resumed {
    ($D:ty, $obj:expr, $threads:expr) => {{
        let obj = &$obj;
        let resume = |t: usize| -> Result<(), String> {
            let mut h = obj.register_as(t).map_err(|e| e.to_string())?;
            for _ in h.seq()..<$D as crash_common::Subject>::OPS {
                h.execute_mut(<$D as crash_common::Subject>::op(t));
            }
            Ok(())
        };
        (0..$threads).try_for_each(resume).and_then(|()| {
            let done = obj.register().map_err(|e| e.to_string())?.execute(());
            (0..$threads).try_for_each(|t| {
                let n = <$D as crash_common::Subject>::count(done, t);
                let want = <$D as crash_common::Subject>::OPS;
                if n == want {
                    Ok(())
                } else {
                    Err(format!(
                        "thread {t}: resumed from its seq() to {n} ops, want {want}"
                    ))
                }
            })
        })
    }};
}
pub(crate) use check_resumed;

/// What a thread did before the crash.
#[derive(Debug, Clone, Default)]
pub(crate) struct ThreadLog {
    /// Operations that returned before the crash.
    pub(crate) completed: u64,
    /// Sequence number of an operation invoked but not known to have returned before the crash.
    pub(crate) pending: Option<u64>,
    /// Sequence number of the thread's first operation.
    pub(crate) first_seq: u64,
    /// The simulator's stamp (`Simulated::stamp`) taken at each return, in order.
    pub(crate) stamps: Vec<u64>,
    /// Whether `is_crashed()` was already true right after the last return (the old check).
    pub(crate) crashed_after_last: bool,
}

impl ThreadLog {
    /// Fills `completed` and `pending` from the return stamps and the crash's stamp (issue 11,
    /// defect 6): an operation returned before the crash exactly when its stamp is at most the
    /// crash's; the first one that did not is pending (the thread stops after it). Returns
    /// whether the old check (`is_crashed()` after the return) would have called a returned
    /// operation pending.
    pub(crate) fn settle(&mut self, crash_stamp: Option<u64>) -> bool {
        let before = |s: &&u64| crash_stamp.is_none_or(|c| **s <= c);
        self.completed = self.stamps.iter().take_while(|s| before(s)).count() as u64;
        let returned_all = self.completed == self.stamps.len() as u64;
        self.pending = (!returned_all).then_some(self.first_seq + self.completed);
        returned_all && self.crashed_after_last
    }
}
