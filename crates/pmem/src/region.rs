//! Regions: a header plus a user area, backed by a shared file mapping ([`Hardware`]), an
//! anonymous mapping ([`NoPersist`]) or a simulated persistence domain
//! ([`Simulated`](crate::sim::Simulated)).

use std::fs::OpenOptions;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use memmap2::{MmapMut, MmapRaw};

use crate::header::{self, HEADER_SIZE, ROOTS_W, ROOT_SLOTS};
use crate::ownership::FileOwner;
use crate::sync::{store_word, Ordering};
use crate::{Hardware, NoPersist, Offset, Persist, Pod, RegionError};

/// What keeps a region's memory alive.
///
/// Mappings are held as [`MmapRaw`], which never hands out references to the mapped bytes:
/// `MmapMut` derefs to `[u8]`, and even its `len`/`flush` create a `&[u8]` over the whole region,
/// which other threads may be writing to through the region's raw pointers (a shared reference
/// to memory mutated concurrently is undefined behaviour).
pub(crate) enum Backing {
    /// An anonymous mapping, owned by the region.
    Anonymous {
        /// Never read: holding it is the point.
        _map: MmapRaw,
    },
    /// A shared mapping of a region file, and the ownership of the file (its lock and its
    /// registry entry, see `ownership.rs`): both live exactly as long as the region, whatever
    /// becomes of `persist` ([`Region::map_persist`] keeps the backing). Fields drop in order:
    /// the mapping goes before the file is released to its next owner.
    File {
        /// The mapping.
        map: MmapRaw,
        /// The file's path, for errors.
        path: PathBuf,
        /// Never read: holding it is the point.
        _owner: FileOwner,
    },
    /// Memory owned by a simulated persistence domain (the simulator's view). The region keeps
    /// its own handle to the domain, so the memory outlives any change of `persist`
    /// ([`Region::map_persist`] drops the old backend).
    Domain {
        /// Never read: holding it is the point.
        _domain: crate::sim::Simulated,
    },
}

/// A persistent region: a header (magic, version, layout id, size, checksum, root slots,
/// allocator high-water mark) followed by a user area addressed by [`Offset`]s.
///
/// `P` is where the region's persistence instructions go: [`Hardware`] for a mapped file,
/// [`NoPersist`] for an anonymous (volatile) region, [`Simulated`](crate::sim::Simulated) for
/// crash tests. The region hands out raw pointers to its memory ([`Region::ptr`]); what the
/// program stores there and when it calls [`persist`](Region::persist)`().pwb(..)` is the
/// program's algorithm.
///
/// # Examples
///
/// ```
/// use pmem::{Persist, Region};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("counter.pmem");
/// const LAYOUT: u64 = 0xC0_07E2;
/// {
///     let region = Region::create(&path, LAYOUT, 4096)?;
///     let off = region.allocator(256).alloc::<u64>()?;
///     let p = region.ptr::<u64>(off)?;
///     // SAFETY: `p` is in bounds, aligned and not shared with another thread.
///     unsafe { p.as_ptr().write(41) };
///     // SAFETY: inside the region (checked by `ptr`), mapped while it lives.
///     unsafe { region.persist().pwb(p.as_ptr().cast(), 8) };
///     region.persist().pfence();
///     region.set_root(off)?; // persisted (pwb + psync) by set_root
/// }
/// let region = Region::open(&path, LAYOUT)?;
/// let off = region.root().expect("root was set");
/// // SAFETY: in bounds and aligned (checked by `ptr`), no concurrent writer.
/// assert_eq!(unsafe { region.ptr::<u64>(off)?.as_ptr().read() }, 41);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Region<P: Persist> {
    base: NonNull<u8>,
    len: u64,
    layout: u64,
    persist: P,
    backing: Backing,
}

// SAFETY:
// - the region owns (or, through `backing`, keeps alive) the memory `base` points to, so moving
//   the region to another thread moves the ownership with it;
// - `P: Send` (required by `Persist`), and `MmapRaw`, `FileOwner` and `Simulated` are `Send`.
unsafe impl<P: Persist> Send for Region<P> {}
// SAFETY:
// - every access the region itself makes to its memory through `&self` is atomic (header words
//   via the sync shim) or a persistence instruction;
// - access to the user area goes through raw pointers that the caller dereferences under its
//   own `unsafe` contract;
// - `P: Sync` (required by `Persist`), and `MmapRaw`, `FileOwner` and `Simulated` are `Sync`.
unsafe impl<P: Persist> Sync for Region<P> {}

impl<P: Persist> std::fmt::Debug for Region<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("base", &self.base)
            .field("len", &self.len)
            .field("layout", &self.layout)
            .field("persist", &std::any::type_name::<P>())
            .finish()
    }
}

impl<P: Persist> Region<P> {
    /// Wraps validated (or freshly initialized) memory.
    ///
    /// # Safety
    ///
    /// - `base` points to `len` bytes, readable and writable, 4096-byte aligned, that stay valid
    ///   as long as `backing` lives (whatever happens to `persist`);
    /// - those bytes hold a header that passed [`header::validate`] for `len` and `layout`.
    pub(crate) unsafe fn from_parts(
        base: NonNull<u8>,
        len: u64,
        layout: u64,
        persist: P,
        backing: Backing,
    ) -> Self {
        Self {
            base,
            len,
            layout,
            persist,
            backing,
        }
    }

    /// Where this region's `pwb`/`pfence`/`psync` go.
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Persist, Region};
    /// let region = Region::anonymous(1, 4096)?;
    /// region.persist().psync();
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    #[inline]
    pub fn persist(&self) -> &P {
        &self.persist
    }

    /// Size of the region in bytes, header included.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pmem::Region::anonymous(1, 4096)?.len(), 4096);
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    #[inline]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Always `false`: a region holds at least its header.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!pmem::Region::anonymous(1, 4096)?.is_empty());
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The layout id the region was created with.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(pmem::Region::anonymous(9, 4096)?.layout(), 9);
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    #[inline]
    pub fn layout(&self) -> u64 {
        self.layout
    }

    /// The first usable byte after the header (64-byte aligned).
    ///
    /// # Examples
    ///
    /// ```
    /// let region = pmem::Region::anonymous(1, 4096)?;
    /// assert_eq!(region.user_offset().get() % 64, 0);
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    #[inline]
    pub fn user_offset(&self) -> Offset {
        Offset(HEADER_SIZE)
    }

    /// The address the region is mapped at (page aligned). Valid while the region lives.
    ///
    /// # Examples
    ///
    /// ```
    /// let region = pmem::Region::anonymous(1, 4096)?;
    /// assert_eq!(region.base().as_ptr() as usize % 4096, 0);
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    #[inline]
    pub fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// Pointer to a `T` at `off`, after checking that `off` is in the user area, that
    /// `size_of::<T>()` bytes fit, and that the address is aligned for `T` (for alignments up to
    /// a page, the same as `off` being aligned: the base is page aligned).
    ///
    /// The pointer is valid while the region lives. Dereferencing it is the caller's `unsafe`
    /// business: the region cannot know which other threads access the same object.
    ///
    /// # Errors
    ///
    /// [`RegionError::OutOfBounds`] (including offsets inside the header) and
    /// [`RegionError::Misaligned`].
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Offset, Region, RegionError};
    /// let region = Region::anonymous(1, 4096)?;
    /// assert!(region.ptr::<u64>(region.user_offset()).is_ok());
    /// assert!(matches!(region.ptr::<u64>(Offset(4092)), Err(RegionError::OutOfBounds { .. })));
    /// assert!(matches!(region.ptr::<u64>(Offset(260)), Err(RegionError::Misaligned { .. })));
    /// # Ok::<(), RegionError>(())
    /// ```
    #[inline]
    pub fn ptr<T: Pod>(&self, off: Offset) -> Result<NonNull<T>, RegionError> {
        self.ptr_array::<T>(off, 1)
    }

    /// Pointer to `count` consecutive `T`s starting at `off`, checked like [`Region::ptr`].
    ///
    /// # Errors
    ///
    /// [`RegionError::OutOfBounds`] and [`RegionError::Misaligned`].
    ///
    /// # Examples
    ///
    /// ```
    /// let region = pmem::Region::anonymous(1, 4096)?;
    /// let p = region.ptr_array::<u32>(region.user_offset(), 10)?;
    /// assert!(region.ptr_array::<u32>(region.user_offset(), 10_000).is_err());
    /// # let _ = p;
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    #[inline]
    pub fn ptr_array<T: Pod>(&self, off: Offset, count: u64) -> Result<NonNull<T>, RegionError> {
        let size = (core::mem::size_of::<T>() as u64).saturating_mul(count);
        let end = off.0.checked_add(size);
        if off.0 < HEADER_SIZE || end.is_none_or(|e| e > self.len) {
            return Err(RegionError::OutOfBounds {
                offset: off.0,
                size,
                len: self.len,
            });
        }
        let align = core::mem::align_of::<T>() as u64;
        // The address, not only the offset: the base is only page aligned, and a `Pod` type may
        // be aligned beyond a page (`#[repr(align(8192))]`).
        let addr = (self.base.as_ptr() as usize as u64).wrapping_add(off.0);
        if !addr.is_multiple_of(align) {
            return Err(RegionError::Misaligned {
                offset: off.0,
                align,
            });
        }
        // SAFETY:
        // - `off + size <= len`, so the pointer stays inside the region's allocation (checked
        //   above), and `off < len` fits in `usize` because `len` does.
        let p = unsafe { self.base.as_ptr().add(off.0 as usize) };
        // SAFETY:
        // - an in-bounds offset from a non-null base is non-null.
        Ok(unsafe { NonNull::new_unchecked(p.cast::<T>()) })
    }

    /// The offset of `ptr` inside this region's user area.
    ///
    /// # Errors
    ///
    /// [`RegionError::OutOfBounds`] when `ptr` is not inside the user area.
    ///
    /// # Examples
    ///
    /// ```
    /// let region = pmem::Region::anonymous(1, 4096)?;
    /// let off = region.user_offset();
    /// let p = region.ptr::<u64>(off)?;
    /// assert_eq!(region.offset_of(p.as_ptr())?, off);
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub fn offset_of<T>(&self, ptr: *const T) -> Result<Offset, RegionError> {
        let addr = ptr as usize as u64;
        let base = self.base.as_ptr() as usize as u64;
        let off = addr.wrapping_sub(base);
        if addr < base || off < HEADER_SIZE || off >= self.len {
            return Err(RegionError::OutOfBounds {
                offset: off,
                size: 0,
                len: self.len,
            });
        }
        Ok(Offset(off))
    }

    /// Root slot 0 (see [`Region::root_slot`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let region = pmem::Region::anonymous(1, 4096)?;
    /// assert_eq!(region.root(), None);
    /// region.set_root(region.user_offset())?;
    /// assert_eq!(region.root(), Some(region.user_offset()));
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    #[inline]
    pub fn root(&self) -> Option<Offset> {
        self.read_root(0)
    }

    /// Sets root slot 0 (see [`Region::set_root_slot`]).
    ///
    /// # Errors
    ///
    /// [`RegionError::OutOfBounds`] when `off` is neither [`Offset::NULL`] nor in the user
    /// area.
    ///
    /// # Examples
    ///
    /// ```
    /// let region = pmem::Region::anonymous(1, 4096)?;
    /// assert!(region.set_root(pmem::Offset(8)).is_err()); // inside the header
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    #[inline]
    pub fn set_root(&self, off: Offset) -> Result<(), RegionError> {
        self.set_root_slot(0, off)
    }

    /// Root slot `index` (`< ROOT_SLOTS`): where recovery finds the structure, `None` when unset.
    ///
    /// An Acquire load: pairs with the Release store in [`Region::set_root_slot`], so a thread
    /// that sees a root also sees the stores that initialized the object before it was set.
    ///
    /// # Errors
    ///
    /// [`RegionError::NoSuchRoot`] when `index >= ROOT_SLOTS`.
    ///
    /// # Examples
    ///
    /// ```
    /// let region = pmem::Region::anonymous(1, 4096)?;
    /// assert_eq!(region.root_slot(3)?, None);
    /// assert!(region.root_slot(pmem::ROOT_SLOTS).is_err());
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub fn root_slot(&self, index: usize) -> Result<Option<Offset>, RegionError> {
        if index >= ROOT_SLOTS {
            return Err(RegionError::NoSuchRoot { index });
        }
        Ok(self.read_root(index))
    }

    /// Sets root slot `index` to `off` ([`Offset::NULL`] clears it) and persists it
    /// (`pwb` + `psync`) before returning.
    ///
    /// The slot is one aligned 8-byte word, so after a crash recovery sees either the old or the
    /// new root, never a mix. Persist the object `off` names *before* setting the root (a `pwb`
    /// of its lines and a `pfence`), or recovery may find the root pointing to unpersisted data.
    ///
    /// # Errors
    ///
    /// [`RegionError::NoSuchRoot`] when `index >= ROOT_SLOTS`; [`RegionError::OutOfBounds`]
    /// when `off` is neither null nor inside the user area.
    ///
    /// # Examples
    ///
    /// ```
    /// let region = pmem::Region::anonymous(1, 4096)?;
    /// region.set_root_slot(2, pmem::Offset(512))?;
    /// assert_eq!(region.root_slot(2)?, Some(pmem::Offset(512)));
    /// region.set_root_slot(2, pmem::Offset::NULL)?;
    /// assert_eq!(region.root_slot(2)?, None);
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub fn set_root_slot(&self, index: usize, off: Offset) -> Result<(), RegionError> {
        if index >= ROOT_SLOTS {
            return Err(RegionError::NoSuchRoot { index });
        }
        if !off.is_null() && (off.0 < HEADER_SIZE || off.0 >= self.len) {
            return Err(RegionError::OutOfBounds {
                offset: off.0,
                size: 0,
                len: self.len,
            });
        }
        // SAFETY:
        // - the header is at the start of the region (at least HEADER_SIZE bytes, aligned).
        let slot = unsafe { header::word_ptr(self.base.as_ptr(), ROOTS_W + index) };
        // SAFETY:
        // - `slot` is an aligned header word inside the region, only accessed atomically.
        // Release: pairs with the Acquire load in `read_root`.
        unsafe { store_word(slot, off.0, Ordering::Release) };
        // SAFETY:
        // - `slot` is a header word of this region, mapped while the region lives.
        unsafe { self.persist.pwb(slot.cast_const().cast(), 8) };
        self.persist.psync();
        Ok(())
    }

    /// Replaces the persistence backend, keeping the mapping and its contents: for instance to
    /// wrap the backend in one that counts or filters calls. Every later pwb/pfence/psync of
    /// the region and of the objects built on it goes to `f(old backend)`.
    ///
    /// The region keeps what keeps its memory alive, and for a region file its ownership (the
    /// file's lock and registry entry, see [`Region::open`]): the returned region owns the file
    /// until it is dropped.
    ///
    /// This is how tests prove that a crash checker catches a broken protocol: wrap a
    /// [`Simulated`](crate::sim::Simulated) backend in one that drops a chosen call and check
    /// that recovery then fails.
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{NoPersist, Persist, Region};
    /// use std::sync::atomic::{AtomicU64, Ordering};
    ///
    /// /// Counts fences, forwards everything.
    /// #[derive(Debug, Default)]
    /// struct CountFences<P> { inner: P, fences: AtomicU64 }
    /// impl<P: Persist> Persist for CountFences<P> {
    ///     unsafe fn pwb(&self, addr: *const u8, len: usize) {
    ///         // SAFETY: the caller's guarantee, passed on unchanged.
    ///         unsafe { self.inner.pwb(addr, len) }
    ///     }
    ///     fn pfence(&self) { self.fences.fetch_add(1, Ordering::Relaxed); self.inner.pfence() }
    ///     fn psync(&self) { self.inner.psync() }
    /// }
    ///
    /// let region = Region::anonymous(7, 1 << 12)?;
    /// let region = region.map_persist(|inner| CountFences { inner, fences: AtomicU64::new(0) });
    /// region.persist().pfence();
    /// assert_eq!(region.persist().fences.load(Ordering::Relaxed), 1);
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub fn map_persist<Q: Persist>(self, f: impl FnOnce(P) -> Q) -> Region<Q> {
        Region {
            base: self.base,
            len: self.len,
            layout: self.layout,
            persist: f(self.persist),
            backing: self.backing,
        }
    }

    fn read_root(&self, index: usize) -> Option<Offset> {
        // SAFETY:
        // - the header is at the start of the region (at least HEADER_SIZE bytes, aligned).
        // Acquire: pairs with the Release store in `set_root_slot`.
        let v = unsafe { header::read(self.base.as_ptr(), ROOTS_W + index, Ordering::Acquire) };
        (v != 0).then_some(Offset(v))
    }
}

impl Region<Hardware> {
    /// Creates the file `path` of `size` bytes (zero-filled), maps it shared, writes and
    /// persists a fresh header with layout id `layout`. Persistence instructions go to
    /// [`Hardware::new`] (honours `PMEM_NO_FLUSH=1`).
    ///
    /// Never overwrites: an existing file is [`RegionError::AlreadyExists`]. The region owns the
    /// new file until it is dropped, as [`Region::open`] describes: it locks the file right
    /// after creating it (`O_EXCL`), before giving it a length or a header.
    ///
    /// # Errors
    ///
    /// [`RegionError::InvalidSize`], [`RegionError::AlreadyExists`], [`RegionError::Io`];
    /// [`RegionError::Locked`] when another process opened the new file in the instant between
    /// its creation and its locking (such an open fails: the file has no header yet), after
    /// which the file is removed again and a retry can succeed.
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let region = pmem::Region::create(dir.path().join("r"), 1, 1 << 16)?;
    /// assert_eq!(region.len(), 1 << 16);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create(path: impl AsRef<Path>, layout: u64, size: u64) -> Result<Self, RegionError> {
        Self::create_with(path, layout, size, Hardware::new())
    }

    /// [`Region::create`] with an explicit [`Hardware`] (e.g. [`Hardware::no_flush`]).
    ///
    /// # Errors
    ///
    /// As [`Region::create`].
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let hw = pmem::Hardware::no_flush();
    /// let region = pmem::Region::create_with(dir.path().join("r"), 1, 4096, hw)?;
    /// assert_eq!(region.persist().kind(), pmem::FlushKind::NoFlush);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_with(
        path: impl AsRef<Path>,
        layout: u64,
        size: u64,
        hw: Hardware,
    ) -> Result<Self, RegionError> {
        let path = path.as_ref();
        header::check_new_size(size)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| match e.kind() {
                ErrorKind::AlreadyExists => RegionError::AlreadyExists {
                    path: path.to_path_buf(),
                },
                _ => RegionError::Io {
                    op: "create",
                    path: Some(path.to_path_buf()),
                    source: e,
                },
            })?;
        let created = FileOwner::acquire(file, path)
            .and_then(|owner| Self::init_file(path, owner, layout, size, hw));
        if created.is_err() {
            // The file is ours (`create_new`) and holds no valid header: remove it, so that a
            // retry can create it and nothing finds a headerless region. A failure to remove is
            // dropped in favour of the error that made the creation fail.
            let _ = std::fs::remove_file(path);
        }
        created
    }

    /// Sizes the freshly created, owned file, maps it, writes and persists the header.
    fn init_file(
        path: &Path,
        owner: FileOwner,
        layout: u64,
        size: u64,
        hw: Hardware,
    ) -> Result<Self, RegionError> {
        let file = owner.file();
        file.set_len(size).map_err(|e| RegionError::Io {
            op: "set_len",
            path: Some(path.to_path_buf()),
            source: e,
        })?;
        // The file is owned (locked) since its creation: the mapping covers the length just set.
        let map = MmapRaw::map_raw(file).map_err(|e| RegionError::Io {
            op: "map",
            path: Some(path.to_path_buf()),
            source: e,
        })?;
        if map.len() as u64 != size {
            return Err(RegionError::Io {
                op: "map",
                path: Some(path.to_path_buf()),
                source: std::io::Error::other("the mapping does not cover the requested size"),
            });
        }
        let base = NonNull::new(map.as_mut_ptr()).ok_or(RegionError::Io {
            op: "map",
            path: Some(path.to_path_buf()),
            source: std::io::Error::other("null mapping"),
        })?;
        // SAFETY:
        // - the mapping is `size >= MIN_REGION_SIZE` bytes (checked above and by
        //   `check_new_size`), page aligned, writable, unshared.
        unsafe { header::write_fresh(base.as_ptr(), layout, size) };
        // SAFETY:
        // - the first `HEADER_SIZE <= size` bytes of the mapping just created.
        unsafe { hw.pwb(base.as_ptr(), HEADER_SIZE as usize) };
        hw.psync();
        // Also push the header through the page cache for file systems without DAX.
        map.flush_range(0, HEADER_SIZE as usize)
            .map_err(|e| RegionError::Io {
                op: "msync",
                path: Some(path.to_path_buf()),
                source: e,
            })?;
        let backing = Backing::File {
            map,
            path: path.to_path_buf(),
            _owner: owner,
        };
        // SAFETY:
        // - `base` points to the `size`-byte mapping kept alive by `backing`;
        // - the header was just written for `size` and `layout`, which `validate` accepts.
        Ok(unsafe { Self::from_parts(base, size, layout, hw, backing) })
    }

    /// Opens and maps the region file `path`, checking that it is a region of this format
    /// created with layout id `layout` and that its length matches its header.
    ///
    /// **One owner per file.** The region owns the file until it is dropped: a second
    /// `open` or `create` of the same file (by any path or hard link: files are told apart by
    /// device and inode) fails with [`RegionError::AlreadyOpen`] in this process and with
    /// [`RegionError::Locked`] in another, instead of giving two heaps over one image. The
    /// ownership is a process-wide registry plus an advisory `flock` on the file, taken before
    /// the file is read and released when the region (or the structure built on it, or the
    /// region [`map_persist`](Region::map_persist) returned) is dropped, or when the process
    /// exits, killed or not. The lock is advisory: it binds processes that open the file
    /// through this crate, not a program that writes or truncates the file without asking for
    /// it (truncating a mapped file makes accesses fault, SIGBUS, as for any mapped file).
    ///
    /// # Errors
    ///
    /// [`RegionError::AlreadyOpen`], [`RegionError::Locked`],
    /// [`RegionError::NotFound`], [`RegionError::Io`], [`RegionError::Truncated`],
    /// [`RegionError::BadMagic`], [`RegionError::UnsupportedVersion`],
    /// [`RegionError::BadChecksum`], [`RegionError::WrongLayout`],
    /// [`RegionError::SizeMismatch`], [`RegionError::BadHeader`],
    /// [`RegionError::ReservedNonzero`]: never a panic.
    ///
    /// # Examples
    ///
    /// ```
    /// use pmem::{Region, RegionError};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("r");
    /// drop(Region::create(&path, 1, 4096)?);
    /// let region = Region::open(&path, 1)?;
    /// // One owner at a time:
    /// assert!(matches!(Region::open(&path, 1), Err(RegionError::AlreadyOpen { .. })));
    /// drop(region);
    /// assert!(matches!(
    ///     Region::open(&path, 2),
    ///     Err(RegionError::WrongLayout { found: 1, expected: 2 })
    /// ));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: impl AsRef<Path>, layout: u64) -> Result<Self, RegionError> {
        Self::open_with(path, layout, Hardware::new())
    }

    /// [`Region::open`] with an explicit [`Hardware`].
    ///
    /// # Errors
    ///
    /// As [`Region::open`].
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("r");
    /// drop(pmem::Region::create(&path, 1, 4096)?);
    /// let region = pmem::Region::open_with(&path, 1, pmem::Hardware::detect())?;
    /// # let _ = region;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_with(
        path: impl AsRef<Path>,
        layout: u64,
        hw: Hardware,
    ) -> Result<Self, RegionError> {
        let path = path.as_ref();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| match e.kind() {
                ErrorKind::NotFound => RegionError::NotFound {
                    path: path.to_path_buf(),
                },
                _ => RegionError::Io {
                    op: "open",
                    path: Some(path.to_path_buf()),
                    source: e,
                },
            })?;
        // Own the file before reading anything of it (see above).
        let owner = FileOwner::acquire(file, path)?;
        let file = owner.file();
        let len = file
            .metadata()
            .map_err(|e| RegionError::Io {
                op: "metadata",
                path: Some(path.to_path_buf()),
                source: e,
            })?
            .len();
        // Check before mapping: an empty file cannot be mapped, and a short one has no header.
        if len < HEADER_SIZE {
            return Err(RegionError::Truncated {
                len,
                needed: HEADER_SIZE,
            });
        }
        if usize::try_from(len).is_err() || len > isize::MAX as u64 {
            return Err(RegionError::InvalidSize { size: len });
        }
        // The lock keeps out processes that honour it, not others (documented above). The
        // mapping covers the file's length *now*, which is what everything below uses: not
        // `len`, which such a process may have changed since.
        let map = MmapRaw::map_raw(file).map_err(|e| RegionError::Io {
            op: "map",
            path: Some(path.to_path_buf()),
            source: e,
        })?;
        let len = map.len() as u64;
        let base = NonNull::new(map.as_mut_ptr()).ok_or(RegionError::Io {
            op: "map",
            path: Some(path.to_path_buf()),
            source: std::io::Error::other("null mapping"),
        })?;
        // SAFETY:
        // - `base` points to the `len`-byte mapping, page aligned, readable.
        unsafe { header::validate(base.as_ptr(), len, layout) }?;
        let backing = Backing::File {
            map,
            path: path.to_path_buf(),
            _owner: owner,
        };
        // SAFETY:
        // - `base` points to the `len`-byte mapping kept alive by `backing`;
        // - the header was validated for `len` and `layout` just above.
        Ok(unsafe { Self::from_parts(base, len, layout, hw, backing) })
    }

    /// Writes the whole mapping back to the file through the page cache (`msync`).
    ///
    /// Only needed on file systems without DAX, where `clwb` reaches the page cache but not the
    /// device; on DAX (real persistent memory) the persistence instructions are enough.
    ///
    /// # Errors
    ///
    /// [`RegionError::Io`] when `msync` fails.
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let region = pmem::Region::create(dir.path().join("r"), 1, 4096)?;
    /// region.sync_file()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sync_file(&self) -> Result<(), RegionError> {
        match &self.backing {
            Backing::File { map, path, .. } => map.flush().map_err(|e| RegionError::Io {
                op: "msync",
                path: Some(path.clone()),
                source: e,
            }),
            Backing::Anonymous { .. } | Backing::Domain { .. } => Ok(()),
        }
    }
}

impl Region<NoPersist> {
    /// A volatile region in anonymous memory (zero-filled) with a fresh header: for the
    /// volatile mode of persistent algorithms, and for tests.
    ///
    /// # Errors
    ///
    /// [`RegionError::InvalidSize`] (size not a multiple of 64, or below
    /// [`MIN_REGION_SIZE`](crate::MIN_REGION_SIZE)); [`RegionError::Io`] when the mapping is
    /// refused.
    ///
    /// # Examples
    ///
    /// ```
    /// let region = pmem::Region::anonymous(1, 1 << 20)?;
    /// assert_eq!(region.len(), 1 << 20);
    /// assert!(pmem::Region::anonymous(1, 100).is_err());
    /// # Ok::<(), pmem::RegionError>(())
    /// ```
    pub fn anonymous(layout: u64, size: u64) -> Result<Self, RegionError> {
        let (map, base) = anonymous_map(size)?;
        // SAFETY:
        // - the mapping is `size >= MIN_REGION_SIZE` bytes, page aligned, writable, unshared.
        unsafe { header::write_fresh(base.as_ptr(), layout, size) };
        let backing = Backing::Anonymous { _map: map };
        // SAFETY:
        // - `base` points to the `size`-byte mapping kept alive by `backing`;
        // - the header was just written for `size` and `layout`.
        Ok(unsafe { Self::from_parts(base, size, layout, NoPersist, backing) })
    }
}

/// A zero-filled anonymous mapping of `size` bytes (checked like a new region's size).
pub(crate) fn anonymous_map(size: u64) -> Result<(MmapRaw, NonNull<u8>), RegionError> {
    let len = header::check_new_size(size)?;
    anonymous_map_raw(len)
}

/// A zero-filled anonymous mapping of `len > 0` bytes.
pub(crate) fn anonymous_map_raw(len: usize) -> Result<(MmapRaw, NonNull<u8>), RegionError> {
    let map = MmapRaw::from(MmapMut::map_anon(len.max(1)).map_err(|e| RegionError::Io {
        op: "map_anon",
        path: None,
        source: e,
    })?);
    let base = NonNull::new(map.as_mut_ptr()).ok_or(RegionError::Io {
        op: "map_anon",
        path: None,
        source: std::io::Error::other("null mapping"),
    })?;
    Ok((map, base))
}
