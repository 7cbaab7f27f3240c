//! Systematic crash testing: crash a short deterministic run at every one of its events.

use super::{Image, SimConfig, Simulated};
use crate::rng::mix;
use crate::{Region, RegionError};

/// Why [`systematic`] stopped.
///
/// # Examples
///
/// ```
/// use pmem::sim::{systematic, SimConfig, SystematicError};
/// // SAFETY: the workload writes nothing.
/// let r = unsafe { systematic(1, 4096, SimConfig::new(0), |_| {}, |_, _| Err("always fails")) };
/// assert!(matches!(r, Err(SystematicError::Check { crash_at: 0, .. })));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum SystematicError<E> {
    /// The check rejected the image of the crash at event `crash_at`. Remedy: the workload's
    /// persistence (or the recovery) has a bug at that point; rerun with
    /// `SimConfig::crash_at(crash_at)` and the same seed to reproduce it.
    Check {
        /// The event the crash happened before.
        crash_at: u64,
        /// The check's error.
        error: E,
    },
    /// A run with a crash point did not reach it: the workload issued fewer events than the
    /// counting run, so it is not deterministic (threads, time, or global state). Remedy: make
    /// the workload single-threaded and deterministic.
    Nondeterministic {
        /// The crash point that was never reached.
        crash_at: u64,
        /// Events of the counting run.
        expected: u64,
    },
    /// Creating a simulated region failed. Remedy: see the error (usually the size).
    Region(RegionError),
}

impl<E: std::fmt::Display> std::fmt::Display for SystematicError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Check { crash_at, error } => {
                write!(f, "check failed after a crash at event {crash_at}: {error}")
            }
            Self::Nondeterministic { crash_at, expected } => write!(
                f,
                "workload is not deterministic: a run never reached event {crash_at} (the \
                 counting run had {expected})"
            ),
            Self::Region(e) => write!(f, "cannot create the simulated region: {e}"),
        }
    }
}

impl<E: std::fmt::Debug + std::fmt::Display> std::error::Error for SystematicError<E> {}

/// Crashes a deterministic single-threaded workload at every persistence event and checks each
/// crash image.
///
/// First runs `workload` once on a fresh [`Region::simulated`]`(layout, size, cfg)` without a
/// crash to count its events `N`; then, for every `k` in `0..=N`, runs it again on a fresh
/// region configured to crash just before event `k` (`k == N`: after the last event) and calls
/// `check(k, image)`. Returns `N + 1`, the number of crash points checked.
///
/// Run `k` uses the seed `mix(cfg.seed, k)`, so evictions differ between crash points while the
/// whole sweep stays reproducible from `cfg.seed`.
///
/// # Safety
///
/// The contract of [`Region::simulated`], for every region the workload is given: a workload
/// that does everything on the thread it is called on (as a deterministic one does) meets it.
///
/// # Errors
///
/// The first failing check ([`SystematicError::Check`]), a run that does not reach its crash
/// point ([`SystematicError::Nondeterministic`]), or [`SystematicError::Region`].
///
/// # Examples
///
/// A value written with `pwb` + `psync` before a flag is set: recovery that sees the flag sees
/// the value, at every crash point.
///
/// ```
/// use pmem::sim::{systematic, Image, SimConfig, Simulated};
/// use pmem::{Offset, Persist, Region};
///
/// const VALUE: Offset = Offset(256);
/// const FLAG: Offset = Offset(320); // another cache line
/// let workload = |r: &Region<Simulated>| {
///     let (v, f) = (r.ptr::<u64>(VALUE).unwrap(), r.ptr::<u64>(FLAG).unwrap());
///     // SAFETY: in bounds, aligned, single-threaded.
///     unsafe { v.as_ptr().write(42) };
///     // SAFETY: inside the region, mapped while it lives.
///     unsafe { r.persist().pwb(v.as_ptr().cast(), 8) };
///     r.persist().psync();
///     // SAFETY: as above.
///     unsafe { f.as_ptr().write(1) };
///     // SAFETY: as above.
///     unsafe { r.persist().pwb(f.as_ptr().cast(), 8) };
///     r.persist().psync();
/// };
/// let check = |k, image: Image| {
///     let (v, f) = (image.word(VALUE.get()).unwrap(), image.word(FLAG.get()).unwrap());
///     if f == 1 && v != 42 {
///         return Err(format!("crash {k}: flag set but value {v}"));
///     }
///     Ok(())
/// };
/// // SAFETY: the workload runs on the calling thread only.
/// let points = unsafe { systematic(1, 4096, SimConfig::new(11), workload, check) }?;
/// assert_eq!(points, 5); // 4 events, crash before each and after the last
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn systematic<E>(
    layout: u64,
    size: u64,
    cfg: SimConfig,
    mut workload: impl FnMut(&Region<Simulated>),
    mut check: impl FnMut(u64, Image) -> Result<(), E>,
) -> Result<u64, SystematicError<E>> {
    let counting = SimConfig {
        crash_at: None,
        ..cfg.clone()
    };
    // SAFETY:
    // - the caller's guarantee for the workload (the region goes nowhere else).
    let region =
        unsafe { Region::simulated(layout, size, counting) }.map_err(SystematicError::Region)?;
    workload(&region);
    let total = region.persist().events();
    drop(region);

    for k in 0..=total {
        let run = SimConfig {
            seed: mix(cfg.seed, k),
            crash_at: Some(k),
            ..cfg.clone()
        };
        // SAFETY:
        // - as for the counting run.
        let region =
            unsafe { Region::simulated(layout, size, run) }.map_err(SystematicError::Region)?;
        workload(&region);
        let sim = region.persist();
        let image = match sim.crash_image() {
            Some(image) => image,
            None if k == total => sim.crash(),
            None => {
                return Err(SystematicError::Nondeterministic {
                    crash_at: k,
                    expected: total,
                })
            }
        };
        check(k, image).map_err(|error| SystematicError::Check { crash_at: k, error })?;
    }
    Ok(total + 1)
}
