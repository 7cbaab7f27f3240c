//! A simulated persistence domain: crash consistency testable without persistent memory.
//!
//! A simulated region ([`Region::simulated`]) is an in-memory *view*, which the program reads
//! and writes as usual through [`Region::ptr`], plus a separate *media* image that changes only
//!
//! - when a line a thread wrote back (`pwb`) is followed by a fence (`pfence` or `psync`) of the
//!   *same* thread, or
//! - when a simulated cache eviction writes back a random dirty line or a random aligned 8-byte
//!   word, at a random persistence event.
//!
//! A *crash* ([`SimConfig::crash_at`], or [`Simulated::crash`]) freezes the media plus a random
//! subset of the flushed-but-unfenced lines and of the dirty lines/words at that instant into an
//! [`Image`], which recovery opens with [`Region::from_image`]. Only aligned 8-byte words are
//! failure-atomic (x86 guarantees no more), so a 16-byte value may be torn in an image.
//!
//! Every `pwb`, `pfence` and `psync` call of any thread is one *event* with a global sequence
//! number ([`Simulated::events`]); crash points are event numbers. Given the same seed, a
//! deterministic single-threaded workload produces the same events, evictions and images.
//! [`systematic()`] crashes such a workload at every one of its events in turn.
//!
//! The precise model (snapshots, sequence numbers, what a crash keeps) is documented in the
//! source of `sim/domain.rs`.
//!
//! # A test facility, `unsafe` to build
//!
//! The simulator reads the view with relaxed 8-byte atomic loads while the program writes it:
//! whole lines at a `pwb`, and any line of the region at *any* thread's persistence call (the
//! dirty-line sweep, evictions, crashes). A program whose writes to region memory are all 8-byte
//! atomics is race-free with it; one that writes region memory with plain stores or copies, or
//! with atomics of another size (mirror-atomic's 16-byte pair CAS), while another thread makes
//! a persistence call, races with the simulator's reads: undefined behaviour in the Rust memory
//! model, whatever x86 does with it. Making the simulator sound for every client would mean
//! hooking every store of the program (or forbidding non-8-byte writes to region memory), which
//! the structures built on this crate cannot do. So the simulator is a test facility whose
//! constructors are `unsafe`: [`Region::simulated`], [`Region::from_image`] and [`systematic()`]
//! state in their `# Safety` sections what the caller guarantees (the one contract, written out
//! on [`Region::simulated`]), and safe code cannot build a simulated region:
//!
//! ```compile_fail,E0133
//! use pmem::{Region, sim::SimConfig};
//! // error[E0133]: call to unsafe function (outside an `unsafe` block)
//! let region = Region::simulated(1, 4096, SimConfig::new(0));
//! ```
//!
//! Nor recover one, or run [`systematic()`], without `unsafe`:
//!
//! ```compile_fail,E0133
//! use pmem::{Region, sim::{Image, SimConfig}};
//! let region = Region::from_image(&Image::from_bytes(vec![0; 4096]), 1, SimConfig::new(0));
//! ```
//!
//! ```compile_fail,E0133
//! use pmem::sim::{systematic, SimConfig};
//! let _ = systematic(1, 4096, SimConfig::new(0), |_| {}, |_, _| Ok::<(), ()>(()));
//! ```
//!
//! # Examples
//!
//! ```
//! use pmem::sim::{SimConfig, Simulated};
//! use pmem::{Persist, Region};
//!
//! // SAFETY: one thread makes every write to the region and every persistence call.
//! let region = unsafe { Region::simulated(1, 4096, SimConfig::new(42).evictions(0.0)) }?;
//! let off = region.user_offset();
//! let p = region.ptr::<u64>(off)?;
//! // SAFETY: in bounds, aligned, no other thread.
//! unsafe { p.as_ptr().write(7) };
//! // SAFETY: inside the region (checked by `ptr`), mapped while it lives.
//! unsafe { region.persist().pwb(p.as_ptr().cast(), 8) };
//! region.persist().psync();
//! // SAFETY: as above.
//! unsafe { p.as_ptr().write(8) }; // never written back
//!
//! let image = region.persist().crash();
//! // SAFETY: as above.
//! let recovered = unsafe { Region::from_image(&image, 1, SimConfig::new(0)) }?;
//! // SAFETY: in bounds, aligned, no other thread.
//! let v = unsafe { recovered.ptr::<u64>(off)?.as_ptr().read() };
//! assert!(v == 7 || v == 8); // 8 only if the crash happened to write the dirty line back
//! # Ok::<(), pmem::RegionError>(())
//! ```

mod domain;
mod systematic;

use std::path::Path;
use std::ptr::NonNull;

pub use systematic::{systematic, SystematicError};

use crate::header;
use crate::persist::{count_pfence, count_psync, count_pwbs, line_span};
use crate::region::{anonymous_map, anonymous_map_raw, Backing};
use crate::sync::Arc;
use crate::{Persist, Region, RegionError};
use domain::Domain;

/// Parameters of a simulated persistence domain. Probabilities are per event (eviction) or per
/// line (crash); all randomness comes from `seed`.
///
/// # Examples
///
/// ```
/// use pmem::sim::SimConfig;
/// let cfg = SimConfig::new(7).evictions(0.25).crash_at(100);
/// assert_eq!(cfg.crash_at, Some(100));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// Seed of the simulator's RNG.
    pub seed: u64,
    /// Probability that an event is preceded by an eviction (default 0.1).
    pub evict_probability: f64,
    /// Probability that an eviction writes back a whole dirty line rather than one dirty 8-byte
    /// word (default 0.5).
    pub evict_line_probability: f64,
    /// Crash just before event number `n` (0-based) takes effect; `None`: only on
    /// [`Simulated::crash`].
    pub crash_at: Option<u64>,
    /// At a crash, probability that each flushed-but-unfenced line reaches the image
    /// (default 0.5).
    pub crash_pending_probability: f64,
    /// At a crash, probability that each dirty line (or a random subset of its words) reaches
    /// the image (default 0.5).
    pub crash_dirty_probability: f64,
    /// Probability that a store point ([`Persist::stored`]) writes the line it names back at
    /// once, between persistence events (default 0: store points are ignored).
    pub store_evict_probability: f64,
    /// Crash right after store point number `n` (0-based, counted over all threads; its
    /// eviction, if any, happens first); `None` (default): store points never crash.
    pub crash_at_store: Option<u64>,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self::new(0)
    }
}

impl SimConfig {
    /// Default probabilities with the given seed, no crash point.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pmem::sim::SimConfig::new(3).seed, 3);
    /// ```
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            evict_probability: 0.1,
            evict_line_probability: 0.5,
            crash_at: None,
            crash_pending_probability: 0.5,
            crash_dirty_probability: 0.5,
            store_evict_probability: 0.0,
            crash_at_store: None,
        }
    }

    /// Sets [`SimConfig::store_evict_probability`].
    ///
    /// # Examples
    ///
    /// ```
    /// let cfg = pmem::sim::SimConfig::new(0).store_points(0.5);
    /// assert_eq!(cfg.store_evict_probability, 0.5);
    /// ```
    #[must_use]
    pub fn store_points(mut self, evict_probability: f64) -> Self {
        self.store_evict_probability = evict_probability;
        self
    }

    /// Sets [`SimConfig::crash_at_store`] to `Some(point)`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pmem::sim::SimConfig::new(0).crash_at_store(3).crash_at_store, Some(3));
    /// ```
    #[must_use]
    pub fn crash_at_store(mut self, point: u64) -> Self {
        self.crash_at_store = Some(point);
        self
    }

    /// Sets [`SimConfig::evict_probability`].
    ///
    /// # Examples
    ///
    /// ```
    /// let cfg = pmem::sim::SimConfig::new(0).evictions(0.0); // nothing leaves the cache early
    /// assert_eq!(cfg.evict_probability, 0.0);
    /// ```
    #[must_use]
    pub fn evictions(mut self, probability: f64) -> Self {
        self.evict_probability = probability;
        self
    }

    /// Sets [`SimConfig::crash_at`] to `Some(event)`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pmem::sim::SimConfig::new(0).crash_at(5).crash_at, Some(5));
    /// ```
    #[must_use]
    pub fn crash_at(mut self, event: u64) -> Self {
        self.crash_at = Some(event);
        self
    }

    /// Sets both crash-time probabilities ([`SimConfig::crash_pending_probability`] and
    /// [`SimConfig::crash_dirty_probability`]).
    ///
    /// # Examples
    ///
    /// ```
    /// // A crash keeps exactly what was fenced or evicted.
    /// let cfg = pmem::sim::SimConfig::new(0).crash_keeps(0.0);
    /// assert_eq!(cfg.crash_dirty_probability, 0.0);
    /// ```
    #[must_use]
    pub fn crash_keeps(mut self, probability: f64) -> Self {
        self.crash_pending_probability = probability;
        self.crash_dirty_probability = probability;
        self
    }
}

/// The persistence instructions of a simulated region: `pwb` snapshots lines into the calling
/// thread's pending set, `pfence`/`psync` commit them to the media image, and every call is an
/// event that may trigger an eviction or the configured crash. Counted in
/// [`stats`](crate::stats) like [`Hardware`](crate::Hardware).
///
/// Cloning gives another handle to the same domain.
///
/// # Examples
///
/// ```
/// use pmem::sim::SimConfig;
/// use pmem::{Persist, Region};
/// // SAFETY: one thread makes every write to the region and every persistence call.
/// let region = unsafe { Region::simulated(1, 4096, SimConfig::new(1)) }?;
/// let sim = region.persist();
/// assert_eq!(sim.events(), 0);
/// sim.pfence();
/// assert_eq!(sim.events(), 1);
/// # Ok::<(), pmem::RegionError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Simulated {
    domain: Arc<Domain>,
}

impl Persist for Simulated {
    // Needs no precondition itself: the domain only reads lines of its own view that overlap
    // the range, so any address is harmless here; the trait's contract is for the other
    // implementations.
    unsafe fn pwb(&self, addr: *const u8, len: usize) {
        count_pwbs(line_span(addr, len).1);
        self.domain.pwb(addr, len);
    }

    fn pfence(&self) {
        count_pfence();
        self.domain.fence();
    }

    fn psync(&self) {
        count_psync();
        self.domain.fence();
    }

    fn stored<T: ?Sized>(&self, value: &T) {
        self.domain.store_point(
            (value as *const T).cast::<u8>(),
            core::mem::size_of_val(value),
        );
    }
}

impl Simulated {
    /// Events (persistence-instruction calls) so far; stops advancing at a crash.
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Persist, Region, sim::SimConfig};
    /// // SAFETY: one thread makes every write to the region and every persistence call.
    /// let r = unsafe { Region::simulated(1, 4096, SimConfig::new(0)) }?;
    /// // SAFETY: the region's first byte, mapped while it lives.
    /// unsafe { r.persist().pwb(r.base().as_ptr(), 1) };
    /// r.persist().psync();
    /// assert_eq!(r.persist().events(), 2);
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub fn events(&self) -> u64 {
        self.domain.events()
    }

    /// A stamp for the return of an operation: the simulator's clock now (lock-free, so taking
    /// it does not wait behind other threads' persistence calls).
    ///
    /// The clock hands one ticket to every persistence call and explicit [`crash`](Self::crash),
    /// before and after a crash alike. An operation whose return was stamped `s` returned
    /// before the crash exactly when `s <= crash_stamp()`: the crashing call took its ticket
    /// after the stamp was read. Crash checkers stamp each return and classify afterwards,
    /// instead of asking [`is_crashed`](Self::is_crashed) after the return, which waits for the
    /// simulator's lock while other threads' calls (the crash among them) go first, and so
    /// counts operations that returned before the crash as pending.
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Persist, Region, sim::SimConfig};
    /// // SAFETY: one thread makes every write to the region and every persistence call.
    /// let r = unsafe { Region::simulated(1, 4096, SimConfig::new(0).crash_at(1)) }?;
    /// r.persist().pfence(); // ticket 0
    /// let before = r.persist().stamp(); // 1
    /// r.persist().pfence(); // ticket 1: crashes
    /// r.persist().pfence(); // ticket 2: does nothing
    /// let after = r.persist().stamp(); // 3
    /// assert_eq!(r.persist().crash_stamp(), Some(1));
    /// assert!(before <= 1 && after > 1);
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub fn stamp(&self) -> u64 {
        self.domain.stamp()
    }

    /// The ticket of the call (or explicit [`crash`](Self::crash)) that crashed; `None` before
    /// a crash. See [`stamp`](Self::stamp).
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Region, sim::SimConfig};
    /// // SAFETY: one thread makes every write to the region and every persistence call.
    /// let r = unsafe { Region::simulated(1, 4096, SimConfig::new(0)) }?;
    /// assert_eq!(r.persist().crash_stamp(), None);
    /// r.persist().crash();
    /// assert_eq!(r.persist().crash_stamp(), Some(0));
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub fn crash_stamp(&self) -> Option<u64> {
        self.domain.crash_ticket()
    }

    /// Evicts one dirty line (or one dirty word of it) now, between persistence events; `true`
    /// if something was written back, `false` when nothing is dirty or after a crash.
    ///
    /// Evictions at events (`SimConfig::evict_probability`) see the view only at persistence
    /// instructions, and only lines the incremental sweep or a `pwb` has noted. This one scans
    /// the whole view, so a thread calling it in a loop beside the program (and
    /// [`crash`](Self::crash)ing at a random moment) adds the schedules those miss: a word
    /// written twice between two persistence events reaching the media with the value in
    /// between, and a line stored to a moment ago being written back at once. It does not
    /// count as an event (crash points keep their numbers).
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Region, sim::SimConfig};
    /// // SAFETY: one thread makes every write to the region and every persistence call.
    /// let r = unsafe { Region::simulated(1, 4096, SimConfig::new(0).crash_keeps(0.0)) }?;
    /// let off = r.user_offset();
    /// let p = r.ptr::<u64>(off)?.as_ptr();
    /// // SAFETY: in bounds, aligned, single-threaded.
    /// unsafe { p.write(2) }; // a value the program overwrites before any persistence event...
    /// assert!(r.persist().evict_now()); // ...reaches the media here...
    /// // SAFETY: as above.
    /// unsafe { p.write(3) };
    /// let image = r.persist().crash(); // ...and is what a crash now keeps.
    /// assert_eq!(image.word(off.get()), Some(2));
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub fn evict_now(&self) -> bool {
        self.domain.evict_now()
    }

    /// Evictions (dirty lines or words written back at random) so far.
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Region, sim::SimConfig};
    /// // SAFETY: one thread makes every write to the region and every persistence call.
    /// let r = unsafe { Region::simulated(1, 4096, SimConfig::new(0)) }?;
    /// assert_eq!(r.persist().evictions(), 0);
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub fn evictions(&self) -> u64 {
        self.domain.evictions()
    }

    /// Store points ([`Persist::stored`]) seen so far while store points are on (a nonzero
    /// [`SimConfig::store_evict_probability`] or a [`SimConfig::crash_at_store`]); stops
    /// advancing at a crash.
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Persist, Region, sim::SimConfig};
    /// // SAFETY: one thread makes every write to the region and every persistence call.
    /// let r = unsafe { Region::simulated(1, 4096, SimConfig::new(0).store_points(1.0)) }?;
    /// let w = r.base().as_ptr().cast::<u64>();
    /// // SAFETY: the region's first word, mapped and aligned while it lives, no other user.
    /// unsafe { w.write(7) };
    /// // SAFETY: as above.
    /// r.persist().stored(unsafe { &*w });
    /// assert_eq!(r.persist().store_points(), 1);
    /// assert_eq!(r.persist().crash().as_bytes()[0], 7); // evicted at the store point
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub fn store_points(&self) -> u64 {
        self.domain.store_points()
    }

    /// Crashes now, unless already crashed, and returns the frozen image. Later persistence
    /// instructions do nothing; the view stays usable.
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Region, sim::SimConfig};
    /// // SAFETY: one thread makes every write to the region and every persistence call.
    /// let r = unsafe { Region::simulated(1, 4096, SimConfig::new(0)) }?;
    /// let image = r.persist().crash();
    /// assert_eq!(image.len(), 4096);
    /// assert!(r.persist().is_crashed());
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub fn crash(&self) -> Image {
        self.domain.crash()
    }

    /// The crash image, once a crash happened (at [`SimConfig::crash_at`] or [`Simulated::crash`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Persist, Region, sim::SimConfig};
    /// // SAFETY: one thread makes every write to the region and every persistence call.
    /// let r = unsafe { Region::simulated(1, 4096, SimConfig::new(0).crash_at(1)) }?;
    /// r.persist().pfence(); // event 0
    /// assert!(r.persist().crash_image().is_none());
    /// r.persist().pfence(); // event 1: crashes first
    /// assert!(r.persist().crash_image().is_some());
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub fn crash_image(&self) -> Option<Image> {
        self.domain.crash_image()
    }

    /// Whether the domain has crashed.
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Region, sim::SimConfig};
    /// // SAFETY: one thread makes every write to the region and every persistence call.
    /// assert!(!unsafe { Region::simulated(1, 4096, SimConfig::new(0)) }?.persist().is_crashed());
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub fn is_crashed(&self) -> bool {
        self.domain.is_crashed()
    }

    /// The media image as it is now (no crash, no randomness): what is certainly durable.
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Region, sim::SimConfig};
    /// // SAFETY: one thread makes every write to the region and every persistence call.
    /// let r = unsafe { Region::simulated(1, 4096, SimConfig::new(0)) }?;
    /// assert_eq!(r.persist().durable_image().len(), 4096);
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub fn durable_image(&self) -> Image {
        self.domain.durable_image()
    }

    /// How many 8-byte words of the view differ from the media right now.
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Region, sim::SimConfig};
    /// // SAFETY: one thread makes every write to the region and every persistence call.
    /// let r = unsafe { Region::simulated(1, 4096, SimConfig::new(0)) }?;
    /// assert_eq!(r.persist().dirty_words(), 0);
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub fn dirty_words(&self) -> usize {
        self.domain.dirty_words()
    }

    /// The configuration the domain was created with.
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Region, sim::SimConfig};
    /// // SAFETY: one thread makes every write to the region and every persistence call.
    /// let r = unsafe { Region::simulated(1, 4096, SimConfig::new(5)) }?;
    /// assert_eq!(r.persist().config().seed, 5);
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub fn config(&self) -> SimConfig {
        self.domain.config()
    }
}

/// The bytes of a simulated region's media at a crash: what recovery gets.
///
/// # Examples
///
/// ```
/// use pmem::{Region, sim::{Image, SimConfig}};
/// // SAFETY: one thread makes every write to the region and every persistence call.
/// let r = unsafe { Region::simulated(7, 4096, SimConfig::new(0)) }?;
/// let image = r.persist().crash();
/// let copy = Image::from_bytes(image.as_bytes().to_vec());
/// // SAFETY: as above.
/// assert!(unsafe { Region::from_image(&copy, 7, SimConfig::new(0)) }.is_ok());
/// # Ok::<(), pmem::RegionError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Image {
    bytes: Vec<u8>,
}

impl Image {
    /// Wraps arbitrary bytes (for example a region file's contents, or fuzzer input).
    ///
    /// # Examples
    ///
    /// ```
    /// let image = pmem::sim::Image::from_bytes(vec![0; 64]);
    /// assert_eq!(image.len(), 64);
    /// ```
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        Self { bytes }
    }

    fn from_words(words: &[u64]) -> Self {
        Self {
            bytes: words.iter().flat_map(|w| w.to_ne_bytes()).collect(),
        }
    }

    /// The bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pmem::sim::Image::from_bytes(vec![1, 2]).as_bytes(), &[1, 2]);
    /// ```
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The bytes, by value.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pmem::sim::Image::from_bytes(vec![1]).into_bytes(), vec![1]);
    /// ```
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// Length in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pmem::sim::Image::from_bytes(vec![]).len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the image has no bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(pmem::sim::Image::from_bytes(vec![]).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The aligned 8-byte word at byte offset `off` (native endian), if inside the image.
    ///
    /// # Examples
    ///
    /// ```
    /// let image = pmem::sim::Image::from_bytes(7u64.to_ne_bytes().to_vec());
    /// assert_eq!(image.word(0), Some(7));
    /// assert_eq!(image.word(8), None);
    /// ```
    pub fn word(&self, off: u64) -> Option<u64> {
        let off = usize::try_from(off).ok()?;
        if off % 8 != 0 {
            return None;
        }
        let bytes = self.bytes.get(off..off.checked_add(8)?)?;
        Some(u64::from_ne_bytes(bytes.try_into().ok()?))
    }

    /// Writes the image to a file (so that [`Region::open`] can recover it as a real region).
    ///
    /// # Errors
    ///
    /// The file system's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Region, sim::SimConfig};
    /// let dir = tempfile::tempdir()?;
    /// // SAFETY: one thread makes every write to the region and every persistence call.
    /// let r = unsafe { Region::simulated(3, 4096, SimConfig::new(0)) }?;
    /// r.persist().crash().save(dir.path().join("img"))?;
    /// assert!(Region::open(dir.path().join("img"), 3).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        std::fs::write(path, &self.bytes)
    }
}

impl Region<Simulated> {
    /// A fresh simulated region of `size` bytes with layout id `layout`: view and media both
    /// hold a fresh header (as if the file had been created and persisted before the run), and
    /// the event counter starts at 0.
    ///
    /// A test facility (see [the module docs](crate::sim)): the simulator reads the region's
    /// memory concurrently with the program, so the caller promises how the program writes it.
    ///
    /// # Safety
    ///
    /// The simulator reads the region's memory, never writes it, with 8-byte atomic loads at
    /// every call of the region's backend from any thread: `pwb`, `pfence`, `psync` and
    /// `stored` (made on `region.persist()`, on a clone of that [`Simulated`], or by any
    /// structure built on the region) and [`Simulated::evict_now`], [`Simulated::crash`] and
    /// [`Simulated::dirty_words`]; each call may read any line of the region. For as long as the
    /// region or a clone of its backend lives, the caller guarantees that:
    ///
    /// - every write to the region's memory that is not ordered by happens-before with each
    ///   such call made by *another* thread (a write that can run while another thread is in one
    ///   of these calls) is an atomic write of one aligned 8-byte word: an `AtomicU64` store or
    ///   read-modify-write, any ordering. A plain store or copy, or an atomic of another size
    ///   (a 16-byte compare-exchange, `cmpxchg16b`, successful or not), racing with such a call
    ///   is a data race or a mixed-size atomic race with the simulator's load: undefined
    ///   behaviour;
    /// - no `&mut` reference into the region's memory is live across such a call (the simulator
    ///   reads through its own pointer).
    ///
    /// Reads of the region's memory are unrestricted. A program in which one thread makes every
    /// write to the region's memory and every call of its backend meets the contract whatever
    /// its writes are (the simulator's reads are sequenced with them), and so does one whose
    /// threads write region memory only with `AtomicU64` operations.
    ///
    /// # Errors
    ///
    /// [`RegionError::InvalidSize`], [`RegionError::Io`] (mapping refused).
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Region, sim::SimConfig};
    /// // SAFETY: one thread makes every write to the region and every persistence call.
    /// let r = unsafe { Region::simulated(1, 1 << 16, SimConfig::new(9)) }?;
    /// assert_eq!(r.len(), 1 << 16);
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub unsafe fn simulated(layout: u64, size: u64, cfg: SimConfig) -> Result<Self, RegionError> {
        let (map, base) = anonymous_map(size)?;
        // SAFETY:
        // - the mapping is `size >= MIN_REGION_SIZE` bytes, page aligned, writable, unshared.
        unsafe { header::write_fresh(base.as_ptr(), layout, size) };
        // SAFETY:
        // - the header was just written for `size` and `layout`;
        // - `base` is the start of `map`, `size` bytes.
        Ok(unsafe { Self::over_domain(map, base, size, layout, cfg) })
    }

    /// Recovery: a simulated region whose view and media are `image` (typically a crash image),
    /// after checking its header exactly as [`Region::open`] checks a file's.
    ///
    /// # Safety
    ///
    /// The contract of [`Region::simulated`], for the region returned.
    ///
    /// # Errors
    ///
    /// Every header error of [`Region::open`] ([`RegionError::Truncated`],
    /// [`RegionError::BadMagic`], [`RegionError::UnsupportedVersion`],
    /// [`RegionError::BadChecksum`], [`RegionError::WrongLayout`],
    /// [`RegionError::SizeMismatch`], [`RegionError::BadHeader`],
    /// [`RegionError::ReservedNonzero`]), and [`RegionError::Io`]:
    /// never a panic, whatever the bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Region, RegionError, sim::{Image, SimConfig}};
    /// let garbage = Image::from_bytes(vec![0xAB; 4096]);
    /// assert!(matches!(
    ///     // SAFETY: no region is built (and one thread would do everything with it).
    ///     unsafe { Region::from_image(&garbage, 1, SimConfig::new(0)) },
    ///     Err(RegionError::BadMagic { .. })
    /// ));
    /// ```
    pub unsafe fn from_image(
        image: &Image,
        layout: u64,
        cfg: SimConfig,
    ) -> Result<Self, RegionError> {
        let len = image.len() as u64;
        if len < header::HEADER_SIZE {
            return Err(RegionError::Truncated {
                len,
                needed: header::HEADER_SIZE,
            });
        }
        let (map, base) = anonymous_map_raw(image.len().div_ceil(8) * 8)?;
        // SAFETY:
        // - the mapping holds at least `image.len()` bytes and is not shared yet;
        // - `image.bytes` is a distinct allocation.
        unsafe {
            std::ptr::copy_nonoverlapping(image.bytes.as_ptr(), base.as_ptr(), image.len());
        }
        // SAFETY:
        // - `len` readable bytes at `base`, page aligned.
        unsafe { header::validate(base.as_ptr(), len, layout) }?;
        // SAFETY:
        // - the header was validated for `len` and `layout` just above (`len == size`, a
        //   multiple of 64, so the mapping is exactly `len` bytes);
        // - `base` is the start of `map`.
        Ok(unsafe { Self::over_domain(map, base, len, layout, cfg) })
    }

    /// # Safety
    ///
    /// - `base` is the start of `map`, which holds exactly `len` bytes (a multiple of 64) with a
    ///   header valid for `len` and `layout`, not shared yet.
    unsafe fn over_domain(
        map: memmap2::MmapRaw,
        base: NonNull<u8>,
        len: u64,
        layout: u64,
        cfg: SimConfig,
    ) -> Self {
        let words = (len / 8) as usize;
        // SAFETY:
        // - `base` is the start of `map`, `len = words * 8` bytes, page aligned, unshared.
        let domain = unsafe { Domain::new(map, base.cast(), words, cfg) };
        let persist = Simulated {
            domain: Arc::new(domain),
        };
        let keep_alive = persist.clone();
        // SAFETY:
        // - the view memory is owned by the domain, kept alive by the region's own handle to it
        //   (`Backing::Domain`), whatever becomes of `persist`;
        // - the header is valid for `len` and `layout` (caller).
        unsafe {
            Self::from_parts(
                base,
                len,
                layout,
                persist,
                Backing::Domain {
                    _domain: keep_alive,
                },
            )
        }
    }
}
