//! Thread affinity: the CPUs this thread may run on, and pinning it to some of them.
//!
//! On Linux these are `sched_getaffinity`/`sched_setaffinity` on the calling thread, with a
//! mask buffer sized at run time (the kernel refuses a buffer smaller than its own CPU mask,
//! so the fixed 1,024-bit `cpu_set_t` would fail on bigger machines). Elsewhere pinning is
//! unsupported and every online CPU counts as allowed (Unix) or nothing is known (others).

use super::TopologyError;
#[cfg(target_os = "linux")]
use super::CPU_ID_LIMIT;

/// The CPUs the calling thread may run on (its affinity mask), sorted.
///
/// A new thread inherits the mask of the thread that created it, so on a thread that has not
/// been pinned this is the set the process may use: the container's cpuset, or what `taskset`
/// allowed. After [`pin_current_thread`] it is the pinned set.
///
/// On Unix other than Linux there is no affinity mask: every online CPU (`0..n`) is allowed.
///
/// # Errors
///
/// [`TopologyError::Affinity`] if `sched_getaffinity` fails (e.g. denied by seccomp);
/// [`TopologyError::Unsupported`] on non-Unix systems.
///
/// # Examples
///
/// ```
/// let cpus = nr_core::allowed_cpus()?;
/// assert!(!cpus.is_empty());
/// assert!(cpus.windows(2).all(|pair| pair[0] < pair[1]));
/// # Ok::<(), nr_core::TopologyError>(())
/// ```
pub fn allowed_cpus() -> Result<Vec<usize>, TopologyError> {
    imp::get_affinity()
}

/// Pins the calling thread to `cpus`: from now on it runs only on those CPUs (any of them).
///
/// The kernel is the judge of what is allowed: the mask is set, read back, and if the kernel
/// dropped some requested CPUs (outside the cgroup cpuset, or offline) the previous mask is
/// restored and an error names them. So pinning a thread that is already pinned to other
/// CPUs works, as long as the new CPUs are allowed to the process.
///
/// # Errors
///
/// - [`TopologyError::EmptyCpuSet`] if `cpus` is empty;
/// - [`TopologyError::CpuOutOfRange`] if a CPU id is at least
///   [`CPU_ID_LIMIT`];
/// - [`TopologyError::CpuNotAllowed`] if the thread may not run on some of `cpus`; its
///   affinity is then left unchanged;
/// - [`TopologyError::Affinity`] if a system call fails for another reason;
/// - [`TopologyError::Unsupported`] outside Linux.
///
/// # Examples
///
/// ```
/// use nr_core::{allowed_cpus, pin_current_thread, TopologyError};
///
/// let allowed = allowed_cpus()?;
/// pin_current_thread(&allowed[..1])?;
/// assert_eq!(allowed_cpus()?, &allowed[..1]);
/// pin_current_thread(&allowed)?; // widen again
///
/// assert!(matches!(pin_current_thread(&[]), Err(TopologyError::EmptyCpuSet)));
/// # Ok::<(), TopologyError>(())
/// ```
pub fn pin_current_thread(cpus: &[usize]) -> Result<(), TopologyError> {
    if cpus.is_empty() {
        return Err(TopologyError::EmptyCpuSet);
    }
    imp::set_affinity_checked(cpus)
}

#[cfg(target_os = "linux")]
mod imp {
    use std::io;
    use std::mem;

    use super::{TopologyError, CPU_ID_LIMIT};

    /// The kernel's mask word: an array of `unsigned long`, bit `c % BITS` of word `c / BITS`
    /// standing for CPU `c`.
    type Word = libc::c_ulong;
    const WORD_BITS: usize = Word::BITS as usize;

    pub(super) fn get_affinity() -> Result<Vec<usize>, TopologyError> {
        // Start at glibc's `cpu_set_t` size (1,024 CPUs); grow while the kernel says the
        // buffer is smaller than its mask (EINVAL).
        let mut words = 1024 / WORD_BITS;
        loop {
            let mut mask: Vec<Word> = vec![0; words];
            let bytes = mem::size_of_val(mask.as_slice());
            // SAFETY:
            // - `mask` is a live, writable buffer of exactly `bytes` bytes, and `bytes` is the
            //   size passed, so the call writes only inside it.
            // - glibc and the kernel access the buffer as bytes / an array of `unsigned long`
            //   (`Word`) of that size, never as one fixed-size `cpu_set_t`; the cast changes
            //   only the pointer's type.
            // - pid 0 names the calling thread, which exists.
            let rc = unsafe { libc::sched_getaffinity(0, bytes, mask.as_mut_ptr().cast()) };
            if rc == 0 {
                return Ok(mask_to_cpus(&mask));
            }
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINVAL) && words * WORD_BITS < CPU_ID_LIMIT {
                words *= 2;
                continue;
            }
            return Err(TopologyError::Affinity {
                operation: "sched_getaffinity",
                source: err,
            });
        }
    }

    /// Sets the calling thread's mask to exactly `cpus` or leaves it unchanged.
    pub(super) fn set_affinity_checked(cpus: &[usize]) -> Result<(), TopologyError> {
        let mut requested = cpus.to_vec();
        requested.sort_unstable();
        requested.dedup();
        if let Some(&cpu) = requested.iter().find(|&&cpu| cpu >= CPU_ID_LIMIT) {
            return Err(TopologyError::CpuOutOfRange { cpu });
        }
        let previous = get_affinity()?;
        match set_affinity(&requested) {
            Ok(()) => {}
            // EINVAL: none of the CPUs is allowed (or online); the mask was not changed.
            Err(err) if err.raw_os_error() == Some(libc::EINVAL) => {
                return Err(TopologyError::CpuNotAllowed { cpus: requested });
            }
            Err(source) => {
                return Err(TopologyError::Affinity {
                    operation: "sched_setaffinity",
                    source,
                })
            }
        }
        // The kernel silently drops CPUs outside the cpuset: compare what it kept.
        let granted = get_affinity()?;
        if granted == requested {
            return Ok(());
        }
        let refused: Vec<usize> = requested
            .iter()
            .copied()
            .filter(|cpu| granted.binary_search(cpu).is_err())
            .collect();
        set_affinity(&previous).map_err(|source| TopologyError::Affinity {
            operation: "sched_setaffinity (restoring the previous mask)",
            source,
        })?;
        Err(TopologyError::CpuNotAllowed { cpus: refused })
    }

    /// `sched_setaffinity` of the calling thread to `cpus` (sorted, each below
    /// `CPU_ID_LIMIT`).
    fn set_affinity(cpus: &[usize]) -> io::Result<()> {
        let highest = cpus.last().copied().unwrap_or(0);
        let mut mask: Vec<Word> = vec![0; highest / WORD_BITS + 1];
        for &cpu in cpus {
            mask[cpu / WORD_BITS] |= 1 << (cpu % WORD_BITS);
        }
        let bytes = mem::size_of_val(mask.as_slice());
        // SAFETY:
        // - `mask` is a live buffer of exactly `bytes` bytes, the size passed, so the call
        //   reads only inside it (a mask shorter than the kernel's is zero-extended).
        // - glibc and the kernel read the buffer as an array of `unsigned long` (`Word`),
        //   never as one fixed-size `cpu_set_t`; the cast changes only the pointer's type.
        // - pid 0 names the calling thread, which exists.
        let rc = unsafe { libc::sched_setaffinity(0, bytes, mask.as_ptr().cast()) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// The CPUs whose bits are set, ascending.
    fn mask_to_cpus(mask: &[Word]) -> Vec<usize> {
        let mut cpus = Vec::new();
        for (i, &word) in mask.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                cpus.push(i * WORD_BITS + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
        }
        cpus
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn mask_bits_map_to_cpu_ids() {
            let mut mask: Vec<Word> = vec![0; 2];
            mask[0] = 0b1011;
            mask[1] = 1 << (WORD_BITS - 1);
            assert_eq!(mask_to_cpus(&mask), [0, 1, 3, 2 * WORD_BITS - 1]);
            assert!(mask_to_cpus(&[0, 0]).is_empty());
        }
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
mod imp {
    use super::TopologyError;

    pub(super) fn get_affinity() -> Result<Vec<usize>, TopologyError> {
        // SAFETY:
        // - `sysconf` has no preconditions; `_SC_NPROCESSORS_ONLN` is a valid name on Unix.
        let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        match usize::try_from(online) {
            Ok(count) if count > 0 => Ok((0..count).collect()),
            _ => Err(TopologyError::Affinity {
                operation: "sysconf(_SC_NPROCESSORS_ONLN)",
                source: std::io::Error::last_os_error(),
            }),
        }
    }

    pub(super) fn set_affinity_checked(_cpus: &[usize]) -> Result<(), TopologyError> {
        Err(TopologyError::Unsupported {
            operation: "pin_current_thread",
        })
    }
}

#[cfg(not(unix))]
mod imp {
    use super::TopologyError;

    pub(super) fn get_affinity() -> Result<Vec<usize>, TopologyError> {
        Err(TopologyError::Unsupported {
            operation: "allowed_cpus",
        })
    }

    pub(super) fn set_affinity_checked(_cpus: &[usize]) -> Result<(), TopologyError> {
        Err(TopologyError::Unsupported {
            operation: "pin_current_thread",
        })
    }
}
