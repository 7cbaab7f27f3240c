//! The simulator's state: the media image, each thread's pending write-backs, the event
//! counter, evictions and crashes. Everything here runs under the domain's one mutex.
//!
//! # Model
//!
//! Memory is a sequence of 8-byte *words*, grouped into 64-byte *lines*. The program works on the
//! *view* (the region's memory, standing for caches + DRAM contents as the CPU sees them); the
//! *media* is what would survive a power failure.
//!
//! - `pwb` by thread T at event `e` snapshots the current view contents of each covered line
//!   into T's pending set (a later `pwb` of the same line replaces the snapshot: its contents
//!   are at least as new, word by word).
//! - `pfence`/`psync` by T commits T's pending snapshots to the media (x86: a write-back is
//!   durable once a later `sfence` of the same thread completes). Another thread's fence does
//!   not commit T's snapshots.
//! - At every event, with probability `evict_probability`, the cache *evicts*: the current view
//!   contents of one dirty line (or, with probability `1 - evict_line_probability`, one dirty
//!   aligned 8-byte word of it) are written to the media. The line is chosen uniformly among
//!   the lines *known* to be dirty: stores are not hooked, so an incremental sweep compares
//!   [`SWEEP_LINES`] lines of view and media per event (a region of `n` lines is swept every
//!   `n / 64` events; a region of at most 4 KiB at every event), and every line a `pwb` covers
//!   is noted at once. A line stored to but not yet swept nor written back cannot be evicted
//!   yet: like an LRU cache, the most recently written lines are evicted last. The cost per
//!   event is bounded (64 lines) whatever the region size.
//! - Every media word remembers the sequence number of the write that produced it, and a write
//!   carrying an older sequence number never overwrites it: the media only moves forward in
//!   each word's coherence order, as real write-backs do (a snapshot taken before an eviction
//!   but committed after it does not roll the eviction back).
//! - A *crash* at event `e` (before the event takes effect) copies the media, then writes each
//!   pending snapshot with probability `crash_pending_probability`, then each line still dirty
//!   with probability `crash_dirty_probability` (half the time the whole line, half the time a
//!   random subset of its words). The result is frozen as the crash image; later events do
//!   nothing (threads keep running on the view, their persists no longer reach the image).
//!
//! Only aligned 8-byte words are failure-atomic in this model (x86 guarantees no more), so a
//! 16-byte value can be torn in an image: one word new, the other old.
//!
//! # Reading the view
//!
//! The simulator reads the view with relaxed 8-byte atomic loads, concurrently with the
//! program's own stores: whole lines at a `pwb`, and any line of the region at every event of
//! any thread (the sweep, evictions and crashes). A program whose stores to region memory are
//! atomic wherever they can overlap another thread's event is race-free with the simulator; a
//! plain store racing with another thread's event races with the simulator's read in the Rust
//! memory model. On x86 an aligned 8-byte load never tears, so the snapshot sees each word either
//! before or after the store, which is all the model needs; this is the simulator's documented
//! aliasing assumption.

use std::collections::BTreeMap;
use std::ptr::NonNull;

use memmap2::MmapRaw;

use super::{Image, SimConfig};
use crate::rng::SplitMix64;
use crate::sync::{current_thread_id, load_word, Clock, Mutex, MutexGuard, Ordering, ThreadId};

/// Words per cache line.
pub(crate) const LINE_WORDS: usize = crate::CACHE_LINE / 8;

/// Lines of the view the incremental dirty-line sweep examines per event (4 KiB).
const SWEEP_LINES: usize = 64;

/// A line's contents as seen by one `pwb`, waiting for its thread's fence.
#[derive(Debug, Clone, Copy)]
struct Snapshot {
    seq: u64,
    words: [u64; LINE_WORDS],
}

/// The view's memory plus the simulator's state.
pub(crate) struct Domain {
    view: NonNull<u64>,
    words: usize,
    /// Owns the view's memory (an anonymous mapping); never accessed through this field.
    _map: MmapRaw,
    /// Tickets handed out so far: one per persistence call and per explicit crash, before and
    /// after a crash alike (taken under `state`'s lock, read without it by `stamp`).
    clock: Clock,
    state: Mutex<State>,
    /// Whether store points do anything (fixed at creation, read without the lock).
    store_hooks: bool,
}

// SAFETY:
// - `view` points into `_map`, which the domain owns and which lives as long as it;
// - `MmapRaw` is `Send`; the state is behind a mutex.
unsafe impl Send for Domain {}
// SAFETY:
// - through `&Domain` the view is only read with atomic loads (`load_word`), the state only
//   under the mutex.
unsafe impl Sync for Domain {}

impl std::fmt::Debug for Domain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Domain")
            .field("view", &self.view)
            .field("words", &self.words)
            .finish_non_exhaustive()
    }
}

struct State {
    cfg: SimConfig,
    rng: SplitMix64,
    media: Vec<u64>,
    /// Sequence number of the write that produced each media word (0: initial contents).
    media_seq: Vec<u64>,
    /// Pending snapshots per thread, keyed by line index (ordered, for determinism).
    pending: Vec<(ThreadId, BTreeMap<usize, Snapshot>)>,
    events: u64,
    evictions: u64,
    store_points: u64,
    crashed: Option<Image>,
    /// The ticket of the call (or explicit crash) that crashed.
    crash_ticket: Option<u64>,
    /// Lines known to have been dirty (eviction candidates, re-checked before use).
    candidates: Vec<usize>,
    /// `is_candidate[line]`: whether `line` is in `candidates`.
    is_candidate: Vec<bool>,
    /// Next line the incremental sweep looks at.
    sweep_cursor: usize,
}

impl Domain {
    /// A domain whose view is `map` (of `words` words, starting at `view`) and whose media
    /// starts equal to the view.
    ///
    /// # Safety
    ///
    /// - `view` points to the start of `map`, which holds at least `words * 8` bytes;
    /// - nothing else accesses the mapping yet.
    pub(crate) unsafe fn new(
        map: MmapRaw,
        view: NonNull<u64>,
        words: usize,
        cfg: SimConfig,
    ) -> Self {
        // SAFETY:
        // - `words * 8` bytes at `view` are readable (caller) and not shared yet.
        let media = unsafe { std::slice::from_raw_parts(view.as_ptr(), words) }.to_vec();
        Self {
            view,
            words,
            _map: map,
            clock: Clock::new(),
            store_hooks: cfg.store_evict_probability > 0.0 || cfg.crash_at_store.is_some(),
            state: Mutex::new(State {
                rng: SplitMix64::new(cfg.seed),
                cfg,
                media,
                media_seq: vec![0; words],
                pending: Vec::new(),
                events: 0,
                evictions: 0,
                store_points: 0,
                crashed: None,
                crash_ticket: None,
                candidates: Vec::new(),
                is_candidate: vec![false; words / LINE_WORDS],
                sweep_cursor: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// Takes the next ticket (the caller holds the lock, so tickets follow the lock's order).
    fn ticket(&self) -> u64 {
        // A stamp that reads a value `<= t` precedes, in the single total order of SeqCst
        // operations, the call holding ticket `t` (`Clock` is SeqCst throughout); so a return
        // stamped `s <= crash_ticket` came before the crash.
        self.clock.tick()
    }

    /// The clock now: tickets handed out so far (lock-free).
    pub(crate) fn stamp(&self) -> u64 {
        self.clock.read()
    }

    pub(crate) fn crash_ticket(&self) -> Option<u64> {
        self.lock().crash_ticket
    }

    /// Reads view word `i`.
    #[inline]
    fn view_word(&self, i: usize) -> u64 {
        debug_assert!(i < self.words);
        // SAFETY:
        // - `i < words`, so the word is inside the view the domain owns, 8-byte aligned;
        // - the program may store to it concurrently (see the module docs, "Reading the view").
        // Relaxed: the simulator orders its own events with the mutex; it reads program data
        // racily by design, and a thread's own earlier stores are visible by program order.
        unsafe { load_word(self.view.as_ptr().add(i), Ordering::Relaxed) }
    }

    fn view_line(&self, line: usize) -> [u64; LINE_WORDS] {
        let mut words = [0; LINE_WORDS];
        for (k, w) in words.iter_mut().enumerate() {
            *w = self.view_word(line * LINE_WORDS + k);
        }
        words
    }

    /// Line indices of the view covered by `[addr, addr + len)`, if any.
    fn lines_of(&self, addr: *const u8, len: usize) -> std::ops::Range<usize> {
        let base = self.view.as_ptr() as usize;
        let end_view = base + self.words * 8;
        let start = (addr as usize).max(base);
        let end = (addr as usize).saturating_add(len).min(end_view);
        if len == 0 || start >= end {
            return 0..0;
        }
        let first = (start - base) / crate::CACHE_LINE;
        let last = (end - 1 - base) / crate::CACHE_LINE;
        first..last + 1
    }

    /// `pwb` of `[addr, addr + len)` by the calling thread.
    pub(crate) fn pwb(&self, addr: *const u8, len: usize) {
        let mut st = self.lock();
        let ticket = self.ticket();
        let Some(seq) = self.begin_event(&mut st, ticket) else {
            return;
        };
        let lines = self.lines_of(addr, len);
        if lines.is_empty() {
            return;
        }
        let tid = current_thread_id();
        for line in lines {
            let words = self.view_line(line);
            let durable = &st.media[line * LINE_WORDS..(line + 1) * LINE_WORDS];
            if words[..] != *durable && !st.is_candidate[line] {
                st.add_candidate(line);
            }
            st.pending_of(tid).insert(line, Snapshot { seq, words });
        }
    }

    /// `pfence` or `psync` by the calling thread: commits its pending snapshots.
    pub(crate) fn fence(&self) {
        let mut st = self.lock();
        let ticket = self.ticket();
        if self.begin_event(&mut st, ticket).is_none() {
            return;
        }
        let tid = current_thread_id();
        if let Some(i) = st.pending.iter().position(|(t, _)| *t == tid) {
            let (_, lines) = st.pending.swap_remove(i);
            let State {
                media, media_seq, ..
            } = &mut *st;
            for (line, snap) in lines {
                write_line(media, media_seq, line, &snap, None);
            }
        }
    }

    /// Starts an event: crashes if this is the configured crash point, else counts it and maybe
    /// evicts. Returns the event's sequence number, `None` once crashed.
    fn begin_event(&self, st: &mut State, ticket: u64) -> Option<u64> {
        if st.crashed.is_some() {
            return None;
        }
        let n = st.events;
        if st.cfg.crash_at == Some(n) {
            self.crash_locked(st, ticket);
            return None;
        }
        st.events += 1;
        // Even sequence numbers for events, odd ones for `evict_now` between events (so an
        // eviction between events `n` and `n + 1` is newer than every snapshot of event `n`
        // and older than every snapshot of event `n + 1`).
        let seq = 2 * (n + 1);
        self.sweep(st);
        if st.rng.chance(st.cfg.evict_probability) {
            self.evict(st, seq);
        }
        Some(seq)
    }

    /// Sweeps the next [`SWEEP_LINES`] lines of the view, noting the dirty ones as eviction
    /// candidates.
    fn sweep(&self, st: &mut State) {
        let lines = self.words / LINE_WORDS;
        for _ in 0..SWEEP_LINES.min(lines) {
            let line = st.sweep_cursor;
            st.sweep_cursor = (line + 1) % lines;
            if !st.is_candidate[line] && self.line_dirty(st, line) {
                st.add_candidate(line);
            }
        }
    }

    /// Whether any word of `line` differs between view and media.
    fn line_dirty(&self, st: &State, line: usize) -> bool {
        let first = line * LINE_WORDS;
        let mut i = first;
        while i < first + LINE_WORDS {
            if self.view_word(i) != st.media[i] {
                return true;
            }
            i += 1;
        }
        false
    }

    /// Writes back one dirty line (or one dirty word of it), chosen uniformly among the
    /// candidates; candidates found clean are dropped on the way.
    ///
    /// The line is read once, and the dirty words and the values written back both come from
    /// that one read: the program may store to the line concurrently (even make it clean again),
    /// so reading it twice could find no dirty word where the first read found one.
    fn evict(&self, st: &mut State, seq: u64) {
        let whole_line = st.rng.chance(st.cfg.evict_line_probability);
        let (line, words, dirty) = loop {
            if st.candidates.is_empty() {
                return;
            }
            let k = st.rng.below(st.candidates.len() as u64) as usize;
            let line = st.candidates[k];
            let words = self.view_line(line);
            let first = line * LINE_WORDS;
            let dirty: Vec<usize> = (0..LINE_WORDS)
                .filter(|&w| words[w] != st.media[first + w])
                .collect();
            if !dirty.is_empty() {
                break (line, words, dirty);
            }
            st.remove_candidate(k);
        };
        st.write_back(line, &words, &dirty, whole_line, seq);
    }

    /// An eviction now, between persistence events (issue 11, defect 7): one dirty line of the
    /// whole view, chosen uniformly (found by a full scan, so a line stored to a moment ago is a
    /// candidate at once), written back whole or one dirty word of it, as at an event. Returns
    /// whether anything was written back. Called by a thread that runs beside the program, it
    /// lets a word that the program writes twice between two persistence events reach the
    /// media with the value in between.
    pub(crate) fn evict_now(&self) -> bool {
        let mut guard = self.lock();
        let st = &mut *guard;
        if st.crashed.is_some() {
            return false;
        }
        let seq = 2 * st.events + 1;
        let lines = self.words / LINE_WORDS;
        let dirty: Vec<usize> = (0..lines).filter(|&l| self.line_dirty(st, l)).collect();
        if dirty.is_empty() {
            return false;
        }
        let line = dirty[st.rng.below(dirty.len() as u64) as usize];
        let whole_line = st.rng.chance(st.cfg.evict_line_probability);
        // One read of the line: the program may be storing to it right now.
        let words = self.view_line(line);
        let first = line * LINE_WORDS;
        let changed: Vec<usize> = (0..LINE_WORDS)
            .filter(|&w| words[w] != st.media[first + w])
            .collect();
        if changed.is_empty() {
            return false;
        }
        st.write_back(line, &words, &changed, whole_line, seq);
        true
    }

    /// A store point (`Persist::stored`) of the `len` bytes at `addr`: with
    /// `store_evict_probability`, writes back the line holding `addr` (whole, or its changed
    /// words, as an eviction between events); then crashes if this is point `crash_at_store`.
    pub(crate) fn store_point(&self, addr: *const u8, len: usize) {
        if !self.store_hooks {
            return;
        }
        let mut guard = self.lock();
        let st = &mut *guard;
        if st.crashed.is_some() {
            return;
        }
        let n = st.store_points;
        st.store_points += 1;
        let base = self.view.as_ptr() as usize;
        let at = addr as usize;
        if len > 0
            && at >= base
            && at < base + self.words * 8
            && st.rng.chance(st.cfg.store_evict_probability)
        {
            let line = (at - base) / 8 / LINE_WORDS;
            let whole_line = st.rng.chance(st.cfg.evict_line_probability);
            // One read of the line: other threads may be storing to it right now.
            let words = self.view_line(line);
            let first = line * LINE_WORDS;
            // Without the whole line, the stored words themselves (not any dirty word).
            let stored = (at - base) / 8..(at - base + len).div_ceil(8);
            let changed: Vec<usize> = (0..LINE_WORDS)
                .filter(|&w| words[w] != st.media[first + w])
                .filter(|&w| whole_line || stored.contains(&(first + w)))
                .collect();
            if !changed.is_empty() {
                let seq = 2 * st.events + 1;
                st.write_back(line, &words, &changed, whole_line, seq);
            }
        }
        if st.cfg.crash_at_store == Some(n) {
            let ticket = self.ticket();
            self.crash_locked(st, ticket);
        }
    }

    pub(crate) fn store_points(&self) -> u64 {
        self.lock().store_points
    }

    /// Freezes the crash image (see the module docs) unless already crashed.
    fn crash_locked(&self, st: &mut State, ticket: u64) {
        if st.crashed.is_some() {
            return;
        }
        st.crash_ticket = Some(ticket);
        let seq = 2 * (st.events + 1);
        let mut image = st.media.clone();
        let mut image_seq = st.media_seq.clone();
        let p_pending = st.cfg.crash_pending_probability;
        let State { pending, rng, .. } = &mut *st;
        for (_, lines) in pending.iter() {
            for (&line, snap) in lines {
                if rng.chance(p_pending) {
                    write_line(&mut image, &mut image_seq, line, snap, None);
                }
            }
        }
        let p_dirty = st.cfg.crash_dirty_probability;
        for line in 0..self.words / LINE_WORDS {
            let current = self.view_line(line);
            let durable = &image[line * LINE_WORDS..(line + 1) * LINE_WORDS];
            if current[..] == *durable || !st.rng.chance(p_dirty) {
                continue;
            }
            let mask = if st.rng.chance(0.5) {
                None
            } else {
                Some(st.rng.next_u64())
            };
            let snap = Snapshot {
                seq,
                words: current,
            };
            write_line(&mut image, &mut image_seq, line, &snap, mask);
        }
        st.crashed = Some(Image::from_words(&image));
    }

    /// Crashes now (if not already crashed) and returns the frozen image.
    pub(crate) fn crash(&self) -> Image {
        let mut st = self.lock();
        if st.crashed.is_none() {
            let ticket = self.ticket();
            self.crash_locked(&mut st, ticket);
        }
        st.crashed
            .clone()
            .expect("invariant: crash_locked always leaves an image")
    }

    pub(crate) fn crash_image(&self) -> Option<Image> {
        self.lock().crashed.clone()
    }

    pub(crate) fn is_crashed(&self) -> bool {
        self.lock().crashed.is_some()
    }

    pub(crate) fn events(&self) -> u64 {
        self.lock().events
    }

    pub(crate) fn evictions(&self) -> u64 {
        self.lock().evictions
    }

    pub(crate) fn config(&self) -> SimConfig {
        self.lock().cfg.clone()
    }

    pub(crate) fn durable_image(&self) -> Image {
        Image::from_words(&self.lock().media)
    }

    pub(crate) fn dirty_words(&self) -> usize {
        let st = self.lock();
        (0..self.words)
            .filter(|&w| self.view_word(w) != st.media[w])
            .count()
    }
}

impl State {
    /// An eviction of `line`, whose view contents are `words` and whose words `dirty` differ
    /// from the media: the whole line, or one of the dirty words chosen at random.
    fn write_back(
        &mut self,
        line: usize,
        words: &[u64; LINE_WORDS],
        dirty: &[usize],
        whole_line: bool,
        seq: u64,
    ) {
        let range = if whole_line {
            0..LINE_WORDS
        } else {
            let w = dirty[self.rng.below(dirty.len() as u64) as usize];
            w..w + 1
        };
        self.evictions += 1;
        let first = line * LINE_WORDS;
        for w in range {
            self.media[first + w] = words[w];
            self.media_seq[first + w] = seq;
        }
    }

    fn add_candidate(&mut self, line: usize) {
        self.is_candidate[line] = true;
        self.candidates.push(line);
    }

    fn remove_candidate(&mut self, k: usize) {
        let line = self.candidates.swap_remove(k);
        self.is_candidate[line] = false;
    }

    fn pending_of(&mut self, tid: ThreadId) -> &mut BTreeMap<usize, Snapshot> {
        let i = match self.pending.iter().position(|(t, _)| *t == tid) {
            Some(i) => i,
            None => {
                self.pending.push((tid, BTreeMap::new()));
                self.pending.len() - 1
            }
        };
        &mut self.pending[i].1
    }
}

/// Writes the words of `snap` selected by `mask` (bit k = word k; `None` = all) into line `line`
/// of `media`, skipping words already written by a newer write.
fn write_line(
    media: &mut [u64],
    media_seq: &mut [u64],
    line: usize,
    snap: &Snapshot,
    mask: Option<u64>,
) {
    for (k, &word) in snap.words.iter().enumerate() {
        if mask.is_some_and(|m| m & (1 << k) == 0) {
            continue;
        }
        let i = line * LINE_WORDS + k;
        if snap.seq >= media_seq[i] {
            media[i] = word;
            media_seq[i] = snap.seq;
        }
    }
}
