//! Damaged images (issue 11, defect 4): `open` of an object whose persistent words were damaged
//! returns an error, or an object that works without panicking; never a panic, a hang or
//! undefined behaviour.
//!
//! For each structure and protocol: build it in a simulated region, run a short script, take the
//! durable image, and for each of `PCOMB_DAMAGED_IMAGES` (default 300) trials overwrite 1-4
//! random words of the object (a small integer, a random word, or one flipped bit), then
//! `open`; if it opens, run a few operations and `audit`. A panic anywhere fails the test
//! (`catch_unwind`), with the panic messages of the first few cases.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod sim_region;
mod struct_common;

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

use pcomb::objects::Counter;
use pcomb::pmem::sim::{Image, SimConfig, Simulated};
use pcomb::pmem::Region;
use pcomb::structures::{Options, PBHeap, PBQueue, PBStack, PWFQueue, PWFStack};
use pcomb::{PBComb, PWFComb, PWFComb1};
use struct_common::{env_or, mix, scripts, Subject, HEAP_CAP};

const LAYOUT: u64 = 0xDA3A_6ED0;
const SIZE: u64 = 1 << 16;

thread_local! {
    /// Set while this thread runs an attempt on a damaged image.
    static IN_ATTEMPT: Cell<bool> = const { Cell::new(false) };
    /// Panics of the library (not of the test's own `expect`s, which a damaged structure may
    /// legitimately trip: a heap whose damaged length says it is full rejects an insert).
    static LIBRARY_PANICS: Cell<u64> = const { Cell::new(0) };
    /// The first few of their messages.
    static MESSAGES: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Records panics inside attempts instead of printing them (per thread, so tests running in
/// parallel do not mix); panics elsewhere go to the default hook.
fn quiet_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_ATTEMPT.get() {
                return default(info);
            }
            let in_test = info
                .location()
                .is_some_and(|l| l.file().contains("pcomb/tests/"));
            if !in_test {
                LIBRARY_PANICS.set(LIBRARY_PANICS.get() + 1);
                MESSAGES.with_borrow_mut(|m| {
                    if m.len() < 5 {
                        m.push(info.to_string());
                    }
                });
            }
        }));
    });
}

/// The image with 1-4 words of `[from, to)` (byte offsets) overwritten, chosen by `seed`.
fn damage(image: &Image, from: u64, to: u64, seed: u64) -> Image {
    let mut bytes = image.as_bytes().to_vec();
    let mut r = mix(seed);
    let words = (to - from) / 8;
    for _ in 0..=(r % 4) {
        r = mix(r);
        let at = (from + (r % words) * 8) as usize;
        r = mix(r);
        let old = u64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap());
        let new = match r % 3 {
            0 => (r >> 8) % 300,
            1 => mix(r),
            _ => old ^ (1 << ((r >> 8) % 64)),
        };
        bytes[at..at + 8].copy_from_slice(&new.to_ne_bytes());
    }
    Image::from_bytes(bytes)
}

/// Runs `trials` damaged opens of `image` through `attempt`; returns the panics and the opens.
fn damaged_runs(
    name: &str,
    image: &Image,
    seed: u64,
    attempt: impl Fn(Region<Simulated>) -> bool,
) -> (u64, u64) {
    let trials = env_or("PCOMB_DAMAGED_IMAGES", 300);
    // The object starts at the user area; damage the part of the region it uses (the image
    // beyond it is zero).
    let used = image
        .as_bytes()
        .chunks(8)
        .rposition(|w| w.iter().any(|&b| b != 0))
        .map_or(512, |w| (w as u64 + 1) * 8);
    let (mut panics, mut opened) = (0, 0);
    for t in 0..trials {
        let bad = damage(image, 256, used.max(264), seed ^ mix(t));
        let Ok(region) = sim_region::from_image(&bad, LAYOUT, SimConfig::new(t)) else {
            continue;
        };
        let before = LIBRARY_PANICS.get();
        IN_ATTEMPT.set(true);
        let outcome = catch_unwind(AssertUnwindSafe(|| attempt(region)));
        IN_ATTEMPT.set(false);
        if !matches!(outcome, Ok(false)) {
            opened += 1;
        }
        panics += LIBRARY_PANICS.get() - before;
    }
    eprintln!("{name}: {trials} damaged images, {opened} opened, {panics} panicked");
    (panics, opened)
}

fn structure_survives_damage<S: Subject<P = Simulated>>(seed: u64) {
    quiet_panics();
    let region = sim_region::simulated(LAYOUT, SIZE, SimConfig::new(seed).evictions(0.0))
        .expect("valid size");
    let sim = region.persist().clone();
    let s = S::create(region, 32, 2, Options::default());
    {
        let mut h = s.handle(0);
        for op in &scripts::<S>(seed, 1, 16)[0] {
            S::run(&mut h, op);
        }
    }
    let image = sim.durable_image();
    drop(s);
    let ops = scripts::<S>(seed ^ 1, 2, 4);
    let (panics, _) = damaged_runs(S::NAME, &image, seed, |region| {
        let Ok(mut s) = S::open(region) else {
            return false;
        };
        let _ = s.audit();
        for (t, script) in ops.iter().enumerate() {
            let mut h = s.handle(t);
            for op in script {
                S::run(&mut h, op);
            }
        }
        true
    });
    let messages = MESSAGES.with_borrow(Clone::clone);
    assert_eq!(panics, 0, "{}: first panics: {messages:#?}", S::NAME);
}

fn comb_survives_damage<O>(
    name: &str,
    create: impl Fn(Region<Simulated>) -> O,
    use_it: impl Fn(Region<Simulated>) -> bool,
) {
    quiet_panics();
    let region =
        sim_region::simulated(LAYOUT, SIZE, SimConfig::new(5).evictions(0.0)).expect("valid size");
    let sim = region.persist().clone();
    let obj = create(region);
    let image = sim.durable_image();
    drop(obj);
    let (panics, _) = damaged_runs(name, &image, 7, use_it);
    let messages = MESSAGES.with_borrow(Clone::clone);
    assert_eq!(panics, 0, "{name}: first panics: {messages:#?}");
}

/// A damaged-images test of a combining protocol (`PBComb`, `PWFComb`) over a counter.
macro_rules! comb_test {
    ($name:ident, $obj:ident) => {
        #[test]
        fn $name() {
            comb_survives_damage(
                stringify!($obj),
                |r| {
                    let c = $obj::create(r, Counter::default(), 3).expect("room");
                    for t in 0..3 {
                        c.register_as(t).expect("free").execute_mut(1 << t);
                    }
                    c
                },
                |r| {
                    let Ok(c) = $obj::<Counter, _>::open(r) else {
                        return false;
                    };
                    for t in 0..3 {
                        let mut h = c.register_as(t).expect("free");
                        let seq = h.seq() + 1;
                        let _ = h.recover(1, seq);
                        h.execute_mut(1);
                        h.execute(());
                    }
                    true
                },
            );
        }
    };
}

comb_test!(pbcomb_damaged_images_never_panic, PBComb);
comb_test!(pwfcomb_damaged_images_never_panic, PWFComb);
comb_test!(pwfcomb1_damaged_images_never_panic, PWFComb1);

#[test]
fn pbstack_damaged_images_never_panic() {
    structure_survives_damage::<PBStack<Simulated>>(11);
}

#[test]
fn pwfstack_damaged_images_never_panic() {
    structure_survives_damage::<PWFStack<Simulated>>(12);
}

#[test]
fn pbqueue_damaged_images_never_panic() {
    structure_survives_damage::<PBQueue<Simulated>>(13);
}

#[test]
fn pwfqueue_damaged_images_never_panic() {
    structure_survives_damage::<PWFQueue<Simulated>>(14);
}

#[test]
fn pbheap_damaged_images_never_panic() {
    structure_survives_damage::<PBHeap<HEAP_CAP, Simulated>>(15);
}
