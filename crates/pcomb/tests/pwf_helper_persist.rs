//! PWFcomb's helper path (Algorithm 4, lines 38-50, and the early return of a served request
//! that takes the same lines), driven deterministically.
//!
//! A thread whose request another thread's install served returns a response read from the
//! record `S` names now; that `S` may have been installed by a combiner that has not persisted
//! it yet, so the helped thread persists `S` itself (lines 44 and 46) before returning. Random
//! crash points almost never reach that window (issue 11, defect 2: removing lines 44/46
//! survived 20,000 of them), so these tests build it on purpose, with a persistence backend
//! that parks chosen threads at chosen instructions:
//!
//! 1. the helped thread `p` announces and runs its first attempt up to line 29 (`pfence`),
//!    where it is parked;
//! 2. combiner `c` installs a record holding `p`'s request (line 31) and is parked at its
//!    `psync` of line 33 (its write-back of `S` is still pending, so not durable);
//! 3. `p` resumes, its SC fails; its second attempt finds its request applied in the record `S`
//!    names (issue 23: the early return of the authors' C code; before it, the attempt
//!    installed a record of its own and the schedule needed a second combiner to fail it
//!    again), persists `S` and returns;
//! 4. the domain crashes, keeping exactly what was fenced (no evictions, nothing pending).
//!
//! `p`'s operation returned before the crash, so it must be in the recovered state. Without
//! lines 44/46 nothing persisted `S` after the initial record, and the check fails. The same
//! schedule runs against `PWFComb` (`pwfcomb.rs`) and the structures' copy of the protocol
//! (`structures/wfcombine.rs`, through `PWFStack`). A read (`execute`) takes the same path:
//! the second test parks one combiner after its install and checks that a read's result is
//! durable.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod sim_region;

use std::cell::Cell;
use std::sync::{Arc, Condvar, Mutex};

use pcomb::objects::Counter;
use pcomb::pmem::sim::{SimConfig, Simulated};
use pcomb::pmem::{Persist, Region};
use pcomb::structures::{Options, PWFStack};
use pcomb::PWFComb;

const LAYOUT: u64 = 0x4845_4C50;
const SIZE: u64 = 1 << 16;

/// What a thread does at the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Not gated (the test's main thread).
    Free,
    /// Parked at every `pfence` until the test grants it.
    Helped,
    /// Parked at its first `psync` until the test ends the run.
    Combiner,
}

thread_local! {
    static ROLE: Cell<Role> = const { Cell::new(Role::Free) };
    static PARKED_ONCE: Cell<bool> = const { Cell::new(false) };
}

#[derive(Debug, Default)]
struct Counts {
    /// `pfence` calls of the helped thread so far.
    fences_reached: u32,
    /// `pfence` calls the helped thread may complete.
    fences_granted: u32,
    /// Combiners parked at their `psync`.
    combiners_parked: u32,
    /// Lets every parked combiner go.
    released: bool,
}

#[derive(Debug, Default)]
struct Control {
    counts: Mutex<Counts>,
    changed: Condvar,
}

impl Control {
    /// Waits until `what` holds; panics after 20 s (a schedule step that is never reached,
    /// for instance with a `pfence` removed, fails the test instead of hanging it).
    fn wait_until(&self, what: impl Fn(&Counts) -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let mut c = self.counts.lock().unwrap();
        while !what(&c) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(!left.is_zero(), "schedule step not reached: {c:?}");
            c = self.changed.wait_timeout(c, left).unwrap().0;
        }
    }

    fn update(&self, f: impl FnOnce(&mut Counts)) {
        f(&mut self.counts.lock().unwrap());
        self.changed.notify_all();
    }
}

/// The simulated backend plus the gate.
#[derive(Debug, Clone)]
struct Gate {
    inner: Simulated,
    control: Arc<Control>,
}

impl Persist for Gate {
    unsafe fn pwb(&self, addr: *const u8, len: usize) {
        // SAFETY: the caller's guarantee, passed on unchanged.
        unsafe { self.inner.pwb(addr, len) };
    }

    fn pfence(&self) {
        if ROLE.get() == Role::Helped {
            let mut k = 0;
            self.control.update(|c| {
                c.fences_reached += 1;
                k = c.fences_reached;
            });
            self.control.wait_until(|c| c.fences_granted >= k);
        }
        self.inner.pfence();
    }

    fn psync(&self) {
        if ROLE.get() == Role::Combiner && !PARKED_ONCE.get() {
            PARKED_ONCE.set(true);
            self.control.update(|c| c.combiners_parked += 1);
            self.control.wait_until(|c| c.released);
        }
        self.inner.psync();
    }
}

/// One write operation of thread `t` on the object under test.
trait Subject: Sync {
    fn run(&self, t: usize);
    /// After recovery: how many operations of thread `t` the state holds.
    fn recovered_count(image: &pcomb::pmem::sim::Image, t: usize) -> u64;
}

/// A region whose persistence goes through a fresh gate, and the domain for the crash.
fn gated_region() -> (Region<Gate>, Simulated, Arc<Control>) {
    let region = sim_region::simulated(
        LAYOUT,
        SIZE,
        SimConfig::new(1).evictions(0.0).crash_keeps(0.0),
    )
    .expect("valid size");
    let sim = region.persist().clone();
    let control = Arc::new(Control::default());
    let gate = Gate {
        inner: sim.clone(),
        control: control.clone(),
    };
    (region.map_persist(|_| gate), sim, control)
}

fn recovered_region(image: &pcomb::pmem::sim::Image) -> Region<Simulated> {
    sim_region::from_image(image, LAYOUT, SimConfig::new(2)).expect("a valid image")
}

/// Runs the schedule of the module docs; returns how many of `p`'s operations survived.
fn helped_write_survives<S: Subject>(obj: &S, sim: &Simulated, control: &Control) -> u64 {
    let image = std::thread::scope(|s| {
        let p = s.spawn(|| {
            ROLE.set(Role::Helped);
            obj.run(0);
        });
        control.wait_until(|c| c.fences_reached == 1); // step 1
        let c = s.spawn(|| {
            ROLE.set(Role::Combiner);
            obj.run(1);
        });
        control.wait_until(|c| c.combiners_parked == 1); // step 2
        control.update(|c| c.fences_granted = 1);
        p.join().expect("the helped thread returns"); // step 3
        let image = sim.crash(); // step 4
        control.update(|c| c.released = true);
        c.join().expect("no panic");
        image
    });
    S::recovered_count(&image, 0)
}

struct Comb(PWFComb<Counter, Gate>);

impl Subject for Comb {
    fn run(&self, t: usize) {
        let mut h = self.0.register_as(t).expect("free slot");
        h.execute_mut(1 << (16 * t));
    }

    fn recovered_count(image: &pcomb::pmem::sim::Image, t: usize) -> u64 {
        let obj = PWFComb::<Counter, _>::open(recovered_region(image)).expect("opens");
        let v = obj.register().expect("free slot").execute(());
        (v >> (16 * t)) & 0xffff
    }
}

struct Stack(PWFStack<Gate>);

impl Subject for Stack {
    fn run(&self, t: usize) {
        let mut h = self.0.register_as(t).expect("free slot");
        h.push(100 + t as u64).expect("room");
    }

    fn recovered_count(image: &pcomb::pmem::sim::Image, t: usize) -> u64 {
        let obj = PWFStack::open(recovered_region(image)).expect("opens");
        let mut h = obj.register().expect("free slot");
        let mut n = 0;
        while let Some(v) = h.pop() {
            n += u64::from(v == 100 + t as u64);
        }
        n
    }
}

#[test]
fn pwfcomb_helped_write_is_durable_when_it_returns() {
    let (region, sim, control) = gated_region();
    let obj = Comb(PWFComb::create(region, Counter::default(), 3).expect("room"));
    assert_eq!(helped_write_survives(&obj, &sim, &control), 1);
}

#[test]
fn pwfstack_helped_push_is_durable_when_it_returns() {
    let (region, sim, control) = gated_region();
    let obj = Stack(PWFStack::create(region, 16, 3, Options::default()).expect("room"));
    assert_eq!(helped_write_survives(&obj, &sim, &control), 1);
}

#[test]
fn pwfcomb_read_of_an_unpersisted_install_is_durable_when_it_returns() {
    let (region, sim, control) = gated_region();
    let obj = PWFComb::create(region, Counter::default(), 2).expect("room");
    let image = std::thread::scope(|s| {
        let c = s.spawn(|| {
            ROLE.set(Role::Combiner);
            obj.register_as(1).expect("free").execute_mut(5);
        });
        control.wait_until(|c| c.combiners_parked == 1);
        // `S` names c's record, installed but not persisted: the read must persist it.
        let seen = obj.register_as(0).expect("free").execute(());
        assert_eq!(seen, 5);
        let image = sim.crash();
        control.update(|c| c.released = true);
        c.join().expect("no panic");
        image
    });
    let obj = PWFComb::<Counter, _>::open(recovered_region(&image)).expect("opens");
    assert_eq!(
        obj.register().expect("free").execute(()),
        5,
        "a returned read was lost"
    );
}
