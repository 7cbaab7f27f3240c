//! The one place that names `std::sync`, `std::thread`, `std::cell::UnsafeCell` or `loom`.
//!
//! Every shared word the protocols synchronize through comes from here: the standard library
//! normally, `loom`'s model-checked replacements under `--cfg loom`. `clippy.toml` forbids the
//! standard versions everywhere else in the crate, so no atomic escapes the model checker.
//!
//! Under loom the shim also mocks the environment: a spin is a yield (so the model checker can
//! schedule the thread being waited for), and objects live in heap words (loom atomics cannot be
//! laid over a mapped region, see [`words_at`]).

// This is the one module allowed to name the types and functions `clippy.toml` forbids.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

#[cfg(not(loom))]
mod imp {
    pub(crate) use std::sync::atomic::{fence, Ordering};

    /// Wraps a std atomic in a distinct type so that `clippy.toml` can forbid the std type
    /// everywhere else; every method is a forwarding `#[inline(always)]` call.
    macro_rules! atomic_wrapper {
        ($name:ident, $std:ident, $int:ty) => {
            #[derive(Debug, Default)]
            #[repr(transparent)]
            pub(crate) struct $name(std::sync::atomic::$std);

            #[allow(dead_code)] // not every wrapper uses every operation
            impl $name {
                #[inline(always)]
                pub(crate) const fn new(v: $int) -> Self {
                    Self(std::sync::atomic::$std::new(v))
                }
                #[inline(always)]
                pub(crate) fn load(&self, o: Ordering) -> $int {
                    self.0.load(o)
                }
                #[inline(always)]
                pub(crate) fn store(&self, v: $int, o: Ordering) {
                    self.0.store(v, o)
                }
                #[inline(always)]
                pub(crate) fn swap(&self, v: $int, o: Ordering) -> $int {
                    self.0.swap(v, o)
                }
                #[inline(always)]
                pub(crate) fn compare_exchange(
                    &self,
                    current: $int,
                    new: $int,
                    success: Ordering,
                    failure: Ordering,
                ) -> Result<$int, $int> {
                    self.0.compare_exchange(current, new, success, failure)
                }
            }
        };
    }

    atomic_wrapper!(AtomicBool, AtomicBool, bool);
    atomic_wrapper!(AtomicU64, AtomicU64, u64);

    /// Views `len` 8-byte words at `ptr` (memory of a mapped region) as atomics.
    ///
    /// # Safety
    ///
    /// - `ptr` is non-null, 8-byte aligned and valid for reads and writes of `len * 8` bytes for
    ///   `'a`;
    /// - for `'a`, that memory is accessed only through atomics (this view or others like it).
    pub(crate) unsafe fn words_at<'a>(ptr: *mut u64, len: usize) -> &'a [AtomicU64] {
        // SAFETY:
        // - `AtomicU64` here is `repr(transparent)` over `std::sync::atomic::AtomicU64`, which
        //   has the size and alignment of `u64` (8 on every target with 64-bit atomics);
        // - the caller guarantees `ptr` is aligned, valid for `len` words for `'a`, and only
        //   accessed atomically, so no non-atomic access races with these atomics.
        unsafe { std::slice::from_raw_parts(ptr.cast::<AtomicU64>(), len) }
    }

    /// `len` zeroed atomics on the heap, reserved without being touched: one `alloc_zeroed`,
    /// which for a large block is a fresh anonymous mapping whose pages the OS backs only when
    /// first written (not `len` stores). `None` if the memory cannot be allocated (or `len * 8`
    /// overflows), instead of the global allocator's abort.
    pub(crate) fn zeroed_words(len: usize) -> Option<Box<[AtomicU64]>> {
        if len == 0 {
            return Some(Box::new([]));
        }
        let layout = std::alloc::Layout::array::<AtomicU64>(len).ok()?;
        // SAFETY: `layout` has a non-zero size (`len > 0`, and `AtomicU64` is 8 bytes).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<AtomicU64>();
        if ptr.is_null() {
            return None;
        }
        let slice = std::ptr::slice_from_raw_parts_mut(ptr, len);
        // SAFETY:
        // - `ptr` was allocated by the global allocator with `Layout::array::<AtomicU64>(len)`,
        //   the layout `Box<[AtomicU64]>` frees a slice of `len` elements with;
        // - every element is initialized: all-zero bytes are a valid `AtomicU64` (this one is
        //   `repr(transparent)` over std's, which has the representation of a `u64`), and it
        //   is 0.
        Some(unsafe { Box::from_raw(slice) })
    }

    /// Yields the CPU to another thread.
    #[inline]
    pub(crate) fn yield_now() {
        std::thread::yield_now();
    }

    /// Spin-loop hint for the CPU (`PAUSE` on x86).
    #[inline]
    pub(crate) fn spin_loop() {
        std::hint::spin_loop();
    }

    /// An `UnsafeCell` with loom's closure-based access API, so the same algorithm code runs
    /// under both builds.
    #[derive(Debug)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub(crate) const fn new(value: T) -> Self {
            Self(std::cell::UnsafeCell::new(value))
        }

        /// Runs `f` with a shared raw pointer to the contents.
        #[inline(always)]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        /// Runs `f` with an exclusive raw pointer to the contents.
        #[inline(always)]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

#[cfg(loom)]
mod imp {
    pub(crate) use loom::cell::UnsafeCell;
    pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
    pub(crate) use loom::thread::yield_now;

    /// Loom atomics are not plain words, so they cannot be laid over a mapped region: under loom
    /// only heap-backed (volatile) objects exist. Reaching this is a test-setup error.
    ///
    /// # Safety
    ///
    /// Never returns.
    pub(crate) unsafe fn words_at<'a>(_ptr: *mut u64, _len: usize) -> &'a [AtomicU64] {
        panic!("loom models heap-backed objects only: build the object with `new`, not in a region")
    }

    /// `len` zeroed atomics (loom models build small objects only; loom atomics are not plain
    /// words, so they are made one by one).
    pub(crate) fn zeroed_words(len: usize) -> Option<Box<[AtomicU64]>> {
        Some((0..len).map(|_| AtomicU64::new(0)).collect())
    }

    /// Under loom a spin is a yield, so the model checker can schedule the thread we wait for.
    pub(crate) fn spin_loop() {
        loom::thread::yield_now();
    }
}

pub(crate) use imp::*;

/// Whether the current thread is unwinding (the signal that poisons a `PBComb`).
pub(crate) fn panicking() -> bool {
    std::thread::panicking()
}
