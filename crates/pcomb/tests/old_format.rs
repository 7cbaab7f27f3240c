//! Format 2 (per-thread sequence numbers `Seq[q]` in the records, where format 1 kept one
//! `Deactivate` byte per thread) is not readable as format 1 and vice versa: a region written
//! by the earlier version must give the typed [`CombBuildError::OldFormat`], not a panic and not an
//! object reading its records with the wrong layout.
//!
//! An image of format 1 is made by writing the format-1 magic over the header of a fresh object
//! (the magic is the first thing `open` reads, so the rest of the header does not matter; before
//! the format change, the same bytes were the current magic and opened as a live object).
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod sim_region;

use pcomb::objects::Counter;
use pcomb::pmem::sim::{Image, SimConfig, Simulated};
use pcomb::pmem::Region;
use pcomb::structures::{Options, PBQueue, PBStack, PWFQueue, PWFStack};
use pcomb::{CombBuildError, PBComb, PBComb1, PWFComb};

const LAYOUT: u64 = 0x01D_F0A7;
const SIZE: u64 = 1 << 16;

fn region() -> Region<Simulated> {
    sim_region::simulated(LAYOUT, SIZE, SimConfig::new(1)).expect("region")
}

/// The media image of `region` (everything persisted) with the root's magic word set to
/// `magic`.
fn with_magic(region: Region<Simulated>, magic: &[u8; 8]) -> Region<Simulated> {
    let root = region.root().expect("a root").0 as usize;
    let image = region.persist().crash();
    let mut bytes = image.as_bytes().to_vec();
    bytes[root..root + 8].copy_from_slice(magic);
    sim_region::from_image(&Image::from_bytes(bytes), LAYOUT, SimConfig::new(2)).expect("opens")
}

fn assert_old<T>(r: Result<T, CombBuildError>) {
    match r {
        Err(CombBuildError::OldFormat { found: 1, .. }) => {}
        Err(e) => panic!("want OldFormat, got {e}"),
        Ok(_) => panic!("a format-1 image opened"),
    }
}

#[test]
fn combining_objects_refuse_format_1() {
    let c = PBComb::create(region(), Counter::new(5), 2).expect("room");
    let r = with_magic(c.into_region().expect("in a region"), b"PBCOMB01");
    assert_old(PBComb::<Counter, _>::open(r));
    let c = PWFComb::create(region(), Counter::new(5), 2).expect("room");
    let r = with_magic(c.into_region().expect("in a region"), b"PWFCOMB1");
    assert_old(PWFComb::<Counter, _>::open(r));
}

/// PBComb1's format 1 (magic `PBCOMB1L`: `Deactivate` bits, no sequence numbers, no `Base`
/// words) would misread as format 2 (its bits taken for 16-bit numbers).
#[test]
fn pbcomb1_refuses_format_1() {
    let c = PBComb1::create(region(), Counter::new(5), 2).expect("room");
    let r = with_magic(c.into_region().expect("in a region"), b"PBCOMB1L");
    assert_old(PBComb1::<Counter, _>::open(r));
}

#[test]
fn structures_refuse_format_1() {
    let o = Options::default();
    let s = PBStack::create(region(), 16, 2, o).expect("room");
    assert_old(PBStack::open(with_magic(
        s.into_region().expect("r"),
        b"PBSTACK1",
    )));
    let s = PWFStack::create(region(), 16, 2, o).expect("room");
    assert_old(PWFStack::open(with_magic(
        s.into_region().expect("r"),
        b"PWFSTAK1",
    )));
    let q = PBQueue::create(region(), 16, 2, o).expect("room");
    assert_old(PBQueue::open(with_magic(
        q.into_region().expect("r"),
        b"PBQUEUE1",
    )));
    let q = PWFQueue::create(region(), 16, 2, o).expect("room");
    assert_old(PWFQueue::open(with_magic(
        q.into_region().expect("r"),
        b"PWFQUEU1",
    )));
}

#[test]
fn the_current_format_still_opens() {
    let c = PBComb::create(region(), Counter::new(5), 2).expect("room");
    let r = with_magic(c.into_region().expect("in a region"), b"PBCOMB02");
    assert!(PBComb::<Counter, _>::open(r).is_ok());
}
