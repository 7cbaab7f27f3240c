//! A `HashMap` key-value store (not `Pod`: pcomb could not hold it) and helpers shared by the
//! tests.
#![allow(dead_code, unreachable_pub)] // each test binary uses a part; `pub` for the binaries

use std::collections::HashMap;

use nr_core::Dispatch;
use serde::{Deserialize, Serialize};

/// The store.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Kv(pub HashMap<u64, u64>);

/// Its writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum KvWrite {
    Put(u64, u64),
    Remove(u64),
}

impl Dispatch for Kv {
    type ReadOperation<'a> = u64;
    type WriteOperation = KvWrite;
    type Response = Option<u64>;

    fn dispatch(&self, k: u64) -> Option<u64> {
        self.0.get(&k).copied()
    }

    fn dispatch_mut(&mut self, op: KvWrite) -> Option<u64> {
        match op {
            KvWrite::Put(k, v) => self.0.insert(k, v),
            KvWrite::Remove(k) => self.0.remove(&k),
        }
    }
}

/// Thread `t`'s `i`-th key (`i` from 0): disjoint per thread, so each thread's writes that
/// survived are visible as the keys `key(t, 0 .. m)`.
pub fn key(t: u32, i: u64) -> u64 {
    (u64::from(t) << 32) | i
}

/// An environment variable as a number, or `default`.
pub fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// SplitMix64.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Checks thread `t`'s writes in `kv` (each put `key(t, i) = i`, sequence number `i + 1`):
/// they are the first `m` for some `m >= acked`, and `last` (its `last_applied`) says `m`.
/// Returns `m`.
#[allow(clippy::missing_errors_doc)]
pub fn check_thread(
    kv: &nr_durable::Durable<Kv>,
    t: u32,
    acked: u64,
    last: Option<(u64, Option<u64>)>,
) -> Result<u64, String> {
    let m = last.map_or(0, |l| l.0);
    if m < acked {
        return Err(format!(
            "thread {t}: {m} writes survive, {acked} were acknowledged"
        ));
    }
    if let Some((_, resp)) = last {
        if resp.is_some() {
            return Err(format!(
                "thread {t}: its last put replaced a value: {resp:?}"
            ));
        }
    }
    let mut h = kv.register(u32::MAX - t).map_err(|e| e.to_string())?;
    for i in 0..m + 2 {
        let got = h.execute(key(t, i)).map_err(|e| e.to_string())?;
        let want = (i < m).then_some(i);
        if got != want {
            return Err(format!(
                "thread {t}: key {i} is {got:?}, expected {want:?} ({m} writes survive)"
            ));
        }
    }
    Ok(m)
}
