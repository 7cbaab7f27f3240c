//! The checker against a brute-force search over every order, on random concurrent histories.
//!
//! Each history has 2-4 threads and up to 8 completed operations with random, overlapping
//! intervals. Responses come from running the model in the order of random points inside the
//! intervals (so the history is linearizable), and then, in half of the histories, one response
//! is replaced by a random one (which may or may not still be linearizable). The brute force
//! tries every permutation of the operations that respects real-time order; the checker must
//! give the same verdict. Both verdicts occur often (asserted), so neither side can pass by
//! always answering the same.
//!
//! `TESTKIT_BRUTE_HISTORIES` (default 10,000 per model) and `TESTKIT_BRUTE_SEED` for longer or
//! other runs.

use testkit::lin::{check, Event, EventKind, History, Model};
use testkit::models::{
    KvMap, KvOp, KvRet, PeekStack, PeekStackOp, PeekStackRet, Register, RegisterOp, RegisterRet,
};

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// One operation: its thread, interval and the response recorded for it.
struct Op<M: Model> {
    thread: usize,
    start: u64,
    end: u64,
    op: M::Op,
    ret: M::Ret,
}

/// Whether some order of `ops` that respects real time (an op whose `end` is before another's
/// `start` comes first) reproduces every recorded response from `init`.
fn brute_force<M: Model>(init: &M, ops: &[Op<M>]) -> bool {
    fn go<M: Model>(state: &M, ops: &[Op<M>], used: &mut Vec<bool>) -> bool {
        if used.iter().all(|&u| u) {
            return true;
        }
        for i in 0..ops.len() {
            if used[i] {
                continue;
            }
            // `i` may go next only if no unused op finished before it started.
            let blocked = (0..ops.len()).any(|j| !used[j] && j != i && ops[j].end < ops[i].start);
            if blocked {
                continue;
            }
            let mut next = state.clone();
            if next.step(&ops[i].op) != ops[i].ret {
                continue;
            }
            used[i] = true;
            if go(&next, ops, used) {
                return true;
            }
            used[i] = false;
        }
        false
    }
    go(init, ops, &mut vec![false; ops.len()])
}

/// A random concurrent history of `M`, as described in the module docs.
fn random_history<M: Model>(
    rng: &mut Rng,
    init: &M,
    mut op: impl FnMut(&mut Rng) -> M::Op,
    mut corrupt: impl FnMut(&mut Rng, &M::Op) -> M::Ret,
) -> Vec<Op<M>> {
    let threads = 2 + rng.below(3) as usize;
    let n = 2 + rng.below(7) as usize;
    // Each thread's operations follow each other; a random gap before each, random length.
    let mut clock = vec![0u64; threads];
    let mut ops: Vec<Op<M>> = Vec::with_capacity(n);
    let mut points = Vec::with_capacity(n);
    for _ in 0..n {
        let thread = rng.below(threads as u64) as usize;
        // Even times for interval ends, so that no two events share a time by accident.
        let start = clock[thread] + 2 * (1 + rng.below(4));
        let end = start + 2 * (1 + rng.below(8));
        clock[thread] = end;
        // Linearization point strictly inside the interval; odd and random.
        points.push((start + 1 + 2 * rng.below((end - start) / 2), ops.len()));
        let o = op(rng);
        ops.push(Op {
            thread,
            start,
            end,
            ret: corrupt(rng, &o),
            op: o,
        });
    }
    points.sort_unstable();
    let mut state = init.clone();
    for &(_, i) in &points {
        ops[i].ret = state.step(&ops[i].op);
    }
    if rng.below(2) == 0 {
        let i = rng.below(n as u64) as usize;
        ops[i].ret = corrupt(rng, &ops[i].op);
    }
    ops
}

fn to_history<M: Model>(ops: &[Op<M>]) -> History<M::Op, M::Ret> {
    let mut events = Vec::with_capacity(2 * ops.len());
    for o in ops {
        events.push(Event {
            thread: o.thread,
            time: o.start,
            kind: EventKind::Invoke(o.op.clone()),
        });
        events.push(Event {
            thread: o.thread,
            time: o.end,
            kind: EventKind::Return(o.ret.clone()),
        });
    }
    History::from_events(events)
}

/// Runs the comparison for one model; returns (linearizable, not linearizable) counts.
fn compare<M: Model>(
    name: &str,
    init: M,
    op: impl Fn(&mut Rng) -> M::Op,
    corrupt: impl Fn(&mut Rng, &M::Op) -> M::Ret,
) {
    let histories = env("TESTKIT_BRUTE_HISTORIES", 10_000);
    let seed = env("TESTKIT_BRUTE_SEED", 0x5EED_0FB2_u64) | 1;
    let mut rng = Rng(seed);
    let (mut yes, mut no) = (0u64, 0u64);
    for h in 0..histories {
        let ops = random_history(&mut rng, &init, &op, &corrupt);
        let expected = brute_force(&init, &ops);
        let history = to_history(&ops);
        let got = check(init.clone(), &history);
        assert_eq!(
            got.is_ok(),
            expected,
            "{name}, history {h} (seed {seed}): brute force says {expected}, checker says \
             {got:?}\n{history:?}"
        );
        if expected {
            yes += 1;
        } else {
            no += 1;
        }
    }
    println!("{name}: {histories} histories agree ({yes} linearizable, {no} not)");
    // Both verdicts must be common, or the comparison shows little.
    assert!(
        yes >= histories / 5 && no >= histories / 10,
        "{name}: one-sided sample"
    );
}

#[test]
fn checker_agrees_with_brute_force_on_registers() {
    compare(
        "register",
        Register::new(0),
        |rng| {
            if rng.below(2) == 0 {
                RegisterOp::Read
            } else {
                RegisterOp::Write(1 + rng.below(3))
            }
        },
        |rng, op| match op {
            RegisterOp::Read => RegisterRet::Value(rng.below(4)),
            RegisterOp::Write(_) => RegisterRet::Written,
        },
    );
}

#[test]
fn checker_agrees_with_brute_force_on_kv_maps() {
    compare(
        "kv map",
        KvMap::new(),
        |rng| match rng.below(3) {
            0 => KvOp::Get(rng.below(2)),
            1 => KvOp::Put(rng.below(2), 1 + rng.below(3)),
            _ => KvOp::Remove(rng.below(2)),
        },
        |rng, op| {
            let v = match rng.below(4) {
                0 => None,
                x => Some(x),
            };
            match op {
                KvOp::Get(_) => KvRet::Get(v),
                KvOp::Put(..) => KvRet::Put(v),
                KvOp::Remove(_) => KvRet::Remove(v),
            }
        },
    );
}

#[test]
fn checker_agrees_with_brute_force_on_stacks_with_reads() {
    compare(
        "stack",
        PeekStack::new(),
        |rng| match rng.below(3) {
            0 => PeekStackOp::Push(1 + rng.below(3)),
            1 => PeekStackOp::Pop,
            _ => PeekStackOp::Peek,
        },
        |rng, op| {
            let v = match rng.below(4) {
                0 => None,
                x => Some(x),
            };
            match op {
                PeekStackOp::Push(_) => PeekStackRet::Pushed,
                PeekStackOp::Pop => PeekStackRet::Popped(v),
                PeekStackOp::Peek => PeekStackRet::Peeked(v),
            }
        },
    );
}
