//! Issue 11, defect 5: an object opens only as the type it was created with, not as any type
//! of the same size. `PBComb<Counter>` and `PBComb<AtomicFloat>` have equal sizes (one word of
//! state, of response and of operation), so before the fingerprint the second opened the
//! first's region and read a counter's bits as a float.

use pcomb::objects::{AtomicFloat, Counter};
use pcomb::pmem::Region;
use pcomb::{CombBuildError, PBComb, PWFComb, PWFComb1};

fn region() -> Region<pcomb::NoPersist> {
    Region::anonymous(1, 1 << 16).expect("valid size")
}

#[test]
fn pbcomb_does_not_open_as_another_type_of_the_same_size() {
    let c = PBComb::create(region(), Counter::new(5), 2).expect("room");
    let r = c.into_region().expect("in a region");
    let err = PBComb::<AtomicFloat, _>::open(r).expect_err("another type");
    assert!(
        matches!(err, CombBuildError::LayoutMismatch { .. }),
        "{err}"
    );
}

#[test]
fn pwfcomb_does_not_open_as_another_type_of_the_same_size() {
    let c = PWFComb::create(region(), Counter::new(5), 2).expect("room");
    let r = c.into_region().expect("in a region");
    let err = PWFComb::<AtomicFloat, _>::open(r).expect_err("another type");
    assert!(
        matches!(err, CombBuildError::LayoutMismatch { .. }),
        "{err}"
    );
}

#[test]
fn same_type_reopens() {
    let c = PBComb::create(region(), Counter::new(5), 2).expect("room");
    let c = PBComb::<Counter, _>::open(c.into_region().expect("in a region")).expect("same type");
    assert_eq!(c.register().expect("slot").execute(()), 5);
    let c = PWFComb::create(region(), Counter::new(6), 2).expect("room");
    let c = PWFComb::<Counter, _>::open(c.into_region().expect("in a region")).expect("same type");
    assert_eq!(c.register().expect("slot").execute(()), 6);
}

/// `PWFComb` and `PWFComb1` (stamped records) share the layout of everything but the records'
/// stamp and the meaning of `S`: each refuses the other's region (its own magic), with the
/// protocol named.
#[test]
fn pwfcomb_and_pwfcomb1_do_not_open_each_other() {
    let c = PWFComb1::create(region(), Counter::new(5), 2).expect("room");
    let err = PWFComb::<Counter, _>::open(c.into_region().expect("in a region"))
        .expect_err("another protocol");
    assert!(err.to_string().contains("PWFComb1"), "{err}");
    let c = PWFComb::create(region(), Counter::new(5), 2).expect("room");
    let err = PWFComb1::<Counter, _>::open(c.into_region().expect("in a region"))
        .expect_err("another protocol");
    assert!(err.to_string().contains("PWFComb object"), "{err}");
    let c = PWFComb1::create(region(), Counter::new(7), 2).expect("room");
    let c = PWFComb1::<Counter, _>::open(c.into_region().expect("in a region")).expect("same");
    assert_eq!(c.register().expect("slot").execute(()), 7);
}
