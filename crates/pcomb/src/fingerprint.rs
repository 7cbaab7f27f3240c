//! Type fingerprints: what an object's header records about the types it was created with.

/// The default type fingerprint of an object whose state is `D`: FNV-1a over
/// [`core::any::type_name::<D>()`](core::any::type_name) (which names the response and
/// operation types too, through `D`'s `Dispatch` impl and its generic arguments).
///
/// [`PBComb::create`](crate::PBComb::create) and [`PWFComb::create`](crate::PWFComb::create)
/// store it in the object's header and `open` checks it, so that a region holding a
/// `PBComb<Counter>` does not open as a `PBComb<AtomicFloat>` (same sizes, other meaning).
/// `type_name` is not guaranteed stable across compiler versions, and it changes when the type
/// is renamed or moved: objects meant to outlive such changes are created with
/// [`PBComb::create_with_type_id`](crate::PBComb::create_with_type_id) (or the `PWFComb` one)
/// and an id of the user's choosing, and opened with the matching `open_with_type_id`.
///
/// # Examples
///
/// ```
/// use pcomb::objects::{AtomicFloat, Counter};
/// assert_ne!(pcomb::type_fingerprint::<Counter>(), pcomb::type_fingerprint::<AtomicFloat>());
/// assert_eq!(pcomb::type_fingerprint::<Counter>(), pcomb::type_fingerprint::<Counter>());
/// ```
pub fn type_fingerprint<D: ?Sized>() -> u64 {
    core::any::type_name::<D>()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}
