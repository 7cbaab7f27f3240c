//! The persistent-memory medium: the log in a `pmem::Region`.
//!
//! The region's root slot 0 names a 64-byte block at the start of the user area: word 0 is
//! [`pmem::kinds::NR_DURABLE_TAG`], word 1 the *state*: bits 0..47 the base position, bit 47
//! the half, bits 48..64 a check (the low 16 bits of the CRC-32 of bits 0..48, so a damaged
//! state word is reported, not read as an empty log), word 2 the log format
//! ([`LOG_FORMAT`](crate::LOG_FORMAT); 0 in a region of format 1, which did not record it: such
//! a region is refused with `DurableError::Version`, any other value is damage). The rest of
//! the user area is two halves of equal size; the live log is the entries from position `base` on,
//! from the start of half `half`, salted with `base` (so entries of older generations fail
//! their checksums). The state is one 8-byte word, so a crash leaves the old or the new one.
//!
//! A commit copies its framed entries after the last one and writes them back in one
//! `Persist::pcopy` (non-temporal stores on hardware), then issues one `psync`. A checkpoint at `pos` copies the entries from `pos` on to the start of the
//! other half (salted with `pos`), writes them back and fences, then stores, writes back and
//! syncs the state word naming that half.

use std::path::PathBuf;

use pmem::{Offset, Persist, Region};

use crate::entry::{self, Tail};
use crate::medium::{Batch, Counters, LogMedium, Record, RecoveredLog};
use crate::sync::SpinLock;
use crate::DurableError;

/// The layout id of an nr-durable region (see `pmem::Region::open`).
pub const PMEM_LAYOUT: u64 = u64::from_le_bytes(*b"NRDURLAY");
const BLOCK: u64 = 64;
/// Base positions are below this (2^47, about 1.4 * 10^14 writes).
const MAX_BASE: u64 = 1 << 47;

/// The state word of `base` and `half`.
fn state_word(base: u64, half: u64) -> u64 {
    let low = base | half << 47;
    let check = u64::from(crc32fast::hash(&low.to_le_bytes()) & 0xffff);
    low | check << 48
}

/// The base and half of a state word, if its check holds.
fn parse_state(word: u64) -> Option<(u64, u64)> {
    let low = word & ((1 << 48) - 1);
    (state_word(low & (MAX_BASE - 1), low >> 47) == word)
        .then_some((low & (MAX_BASE - 1), low >> 47))
}

#[derive(Debug)]
struct State {
    base: u64,
    half: u64,
    /// Bytes used in the current half.
    tail: u64,
    /// The position the next append gets.
    end: u64,
    scratch: Vec<u8>,
}

/// The persistent-memory medium.
pub(crate) struct PmemLog<P: Persist> {
    region: Region<P>,
    path: Option<PathBuf>,
    /// The user-area offset of the first half.
    area: u64,
    half_len: u64,
    /// Taken by every append, checkpoint and recovery; released by a plain store (`SpinLock`).
    state: SpinLock<State>,
    counters: Counters,
}

impl<P: Persist> std::fmt::Debug for PmemLog<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PmemLog")
            .field("path", &self.path)
            .field("half_len", &self.half_len)
            .finish_non_exhaustive()
    }
}

impl<P: Persist> PmemLog<P> {
    /// The name errors give the region.
    fn name(&self) -> PathBuf {
        self.path
            .clone()
            .unwrap_or_else(|| PathBuf::from("<region>"))
    }

    /// Opens the log in `region` (initializing a fresh one) and recovers the entries from
    /// `from` on.
    pub(crate) fn open(
        region: Region<P>,
        path: Option<PathBuf>,
        from: u64,
    ) -> Result<(Self, RecoveredLog), DurableError> {
        let name = path.clone().unwrap_or_else(|| PathBuf::from("<region>"));
        let block = region.user_offset();
        let area = block.0 + BLOCK;
        let half_len = (region.len().saturating_sub(area) / 2) / BLOCK * BLOCK;
        if half_len < BLOCK {
            return Err(DurableError::LogFull {
                path,
                capacity: half_len,
            });
        }
        let log = Self {
            region,
            path,
            area,
            half_len,
            state: SpinLock::new(State {
                base: 0,
                half: 0,
                tail: 0,
                end: 0,
                scratch: Vec::new(),
            }),
            counters: Counters::default(),
        };
        match log.region.root() {
            None => log.init(block)?,
            Some(root) if root == block && log.word(block.0) == pmem::kinds::NR_DURABLE_TAG => {
                match log.word(block.0 + 16) {
                    entry::LOG_FORMAT => {}
                    // Format 1 left the word zero.
                    0 => {
                        return Err(DurableError::Version {
                            path: name,
                            found: 1,
                            supported: entry::LOG_FORMAT,
                        })
                    }
                    other => {
                        return Err(DurableError::corrupt(
                            name,
                            block.0 + 16,
                            format!("a damaged format word ({other:#x})"),
                        ))
                    }
                }
            }
            Some(_) => {
                return Err(DurableError::WrongKind {
                    path: name,
                    found: log.region.kind().map(|k| k.name),
                })
            }
        }
        let recovered = log.recover(from)?;
        Ok((log, recovered))
    }

    /// Writes the block of a fresh log (base 0, half 0) and publishes it as the root.
    fn init(&self, block: Offset) -> Result<(), DurableError> {
        self.store_word(block.0, pmem::kinds::NR_DURABLE_TAG);
        self.store_word(block.0 + 8, state_word(0, 0));
        self.store_word(block.0 + 16, entry::LOG_FORMAT);
        self.write_back(block.0, 24);
        self.region.persist().pfence(); // the block before the root that names it
        self.region
            .set_root(block)
            .map_err(|source| DurableError::Region {
                path: self.name(),
                source,
            })
    }

    /// The pointer to byte `off` of the region.
    fn at(&self, off: u64) -> *mut u8 {
        debug_assert!(off <= self.region.len());
        self.region.base().as_ptr().wrapping_add(off as usize)
    }

    fn word(&self, off: u64) -> u64 {
        let p = self.at(off).cast::<u64>();
        // SAFETY:
        // - `off` is a multiple of 8 inside the region's mapping (callers pass the block's
        //   words), and the mapping is page aligned, so the read is in bounds and aligned;
        // - only this log touches the region, under `state`'s lock or before the log is shared.
        unsafe { p.read_volatile() }
    }

    fn store_word(&self, off: u64, value: u64) {
        let p = self.at(off).cast::<u64>();
        // SAFETY: as in `word`; one aligned 8-byte store, failure-atomic on the media.
        unsafe { p.write_volatile(value) }
    }

    /// `pwb` of `[off, off + len)`.
    fn write_back(&self, off: u64, len: u64) {
        // SAFETY: `[off, off + len)` lies inside the region's mapping (callers pass ranges of
        // the block or of a half), mapped while `self.region` lives.
        unsafe { self.region.persist().pwb(self.at(off), len as usize) }
    }

    /// Copies `bytes` to `[off, off + bytes.len())` and writes them back (`Persist::pcopy`:
    /// non-temporal stores on hardware). Called under `state`'s lock, for a range inside a half.
    fn copy_back(&self, off: u64, bytes: &[u8]) {
        debug_assert!(off + bytes.len() as u64 <= self.region.len());
        // SAFETY:
        // - `[off, off + len)` lies inside a half of the region's mapping, mapped writable while
        //   `self.region` lives (callers check it against `half_len`), and `bytes` is a heap
        //   buffer (the thread's frames or the state's scratch), not region memory;
        // - only the holder of `state`'s lock writes the region and no slice of it is live.
        unsafe { self.region.persist().pcopy(self.at(off), bytes) }
    }

    /// Counts a commit of `ops` entries, `len` bytes (under `state`'s lock, like every writer
    /// of these counters).
    fn count_commit(&self, ops: u64, len: u64) {
        let c = &self.counters;
        c.add_serialized(&c.commits, 1);
        c.add_serialized(&c.ops, ops);
        c.add_serialized(&c.syncs, 1);
        c.add_serialized(&c.bytes, len);
    }

    /// The bytes of half `half`.
    fn half_bytes(&self, half: u64) -> &[u8] {
        let start = self.at(self.area + half * self.half_len);
        // SAFETY:
        // - the half lies inside the region's mapping, which lives as long as `self`;
        // - it is written only under `state`'s lock, which the callers hold (or the log is
        //   not shared yet), and they drop the slice before writing.
        unsafe { std::slice::from_raw_parts(start, self.half_len as usize) }
    }

    /// Reads the live log, clears the remnants of a torn last commit, and returns the entries
    /// from `from` on.
    fn recover(&self, from: u64) -> Result<RecoveredLog, DurableError> {
        let name = self.name();
        let state_off = self.region.user_offset().0 + 8;
        let Some((base, half)) = parse_state(self.word(state_off)) else {
            return Err(DurableError::corrupt(
                &name,
                state_off,
                "a damaged log state word",
            ));
        };
        let half_off = self.area + half * self.half_len;
        let bytes = self.half_bytes(half);
        let scan = entry::scan(bytes, base, base, &name, half_off)?;
        if base > from {
            return Err(DurableError::corrupt(
                &name,
                self.region.user_offset().0 + 8,
                format!("the log starts at entry {base}, after the newest snapshot at {from}"),
            ));
        }
        let mut out = RecoveredLog {
            files: vec![name],
            ..RecoveredLog::default()
        };
        for e in scan.entries.iter().filter(|e| e.pos >= from) {
            out.records.push(Record {
                pos: e.pos,
                op: e.op_bytes().to_vec(),
                file: 0,
                offset: half_off + e.offset as u64,
            });
        }
        let valid = scan.valid_len as u64;
        let end = base + scan.entries.len() as u64;
        let remnant_end = match scan.tail {
            Tail::Torn { remnant_end, .. } => remnant_end as u64,
            Tail::Clean => valid,
        };
        if remnant_end > valid {
            // Entries of the torn commit after the bad one would be read as the next entries
            // once the log grows over the bad one: clear them first.
            let start = self.at(half_off + valid);
            // SAFETY: `[valid, remnant_end)` lies inside the half (the scan found it there);
            // the log is not shared yet and `bytes` is not used after this.
            unsafe { std::ptr::write_bytes(start, 0, (remnant_end - valid) as usize) };
            self.write_back(half_off + valid, remnant_end - valid);
            self.region.persist().psync(); // cleared before the log grows over them
        }
        {
            let mut st = self.state.lock();
            self.counters.set_due(valid, self.half_len / 2);
            *st = State {
                base,
                half,
                tail: valid,
                end,
                scratch: Vec::new(),
            };
        }
        if end < from {
            self.drop_before(from)?;
        }
        out.end = end.max(from);
        Ok(out)
    }
}

impl<P: Persist> LogMedium for PmemLog<P> {
    fn append(&self, first: u64, batch: &mut Batch) -> Result<(), DurableError> {
        let mut st = self.state.lock();
        let st = &mut *st;
        if first != st.end {
            return Err(DurableError::corrupt(
                self.name(),
                0,
                format!("entry {first} appended where entry {} belongs", st.end),
            ));
        }
        // The frames are in the calling thread's buffer (`Store::append` encodes into it): the
        // committing thread changes from commit to commit. Sealed there, then copied once.
        let len = batch.frames().len() as u64;
        if st.tail + len > self.half_len {
            return Err(DurableError::LogFull {
                path: self.path.clone(),
                capacity: self.half_len,
            });
        }
        entry::seal_frames(batch.frames_mut(), st.base, first);
        let off = self.area + st.half * self.half_len + st.tail;
        self.copy_back(off, batch.frames());
        self.region.persist().psync(); // the commit's one durability action
        st.tail += len;
        self.counters.set_due(st.tail, self.half_len / 2);
        st.end += batch.len() as u64;
        self.count_commit(batch.len() as u64, len);
        Ok(())
    }

    fn sync(&self) -> Result<(), DurableError> {
        Ok(()) // every append is durable when it returns
    }

    fn drop_before(&self, pos: u64) -> Result<(), DurableError> {
        let mut st = self.state.lock();
        let st = &mut *st;
        if pos <= st.base {
            return Ok(());
        }
        let name = self.name();
        if pos >= MAX_BASE {
            return Err(DurableError::LogFull {
                path: self.path.clone(),
                capacity: self.half_len,
            });
        }
        let old_off = self.area + st.half * self.half_len;
        let new_half = 1 - st.half;
        let new_off = self.area + new_half * self.half_len;
        st.scratch.clear();
        {
            let live = &self.half_bytes(st.half)[..st.tail as usize];
            let scan = entry::scan(live, st.base, st.base, &name, old_off)?;
            for e in scan.entries.iter().filter(|e| e.pos >= pos) {
                entry::frame_into(&mut st.scratch, pos, pos, e.payload);
            }
        }
        let len = st.scratch.len() as u64;
        // `len` is at most the live part of a half (the same payloads, re-framed), so the copy
        // stays in the other half.
        self.copy_back(new_off, &st.scratch);
        self.region.persist().pfence(); // the copied entries before the state word naming them
        let state_off = self.region.user_offset().0 + 8;
        self.store_word(state_off, state_word(pos, new_half));
        self.write_back(state_off, 8);
        self.region.persist().psync(); // the new generation durable before the checkpoint returns
        self.counters.add_serialized(&self.counters.syncs, 1);
        self.counters.add_serialized(&self.counters.bytes, len + 8);
        st.base = pos;
        st.half = new_half;
        st.tail = len;
        self.counters.set_due(st.tail, self.half_len / 2);
        st.end = st.end.max(pos);
        Ok(())
    }

    fn durable_end(&self) -> u64 {
        self.state.lock().end
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }
}
