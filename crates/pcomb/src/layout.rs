//! Where things live in an object's persistent words: the header, the shared index (`MIndex` or
//! `S`) and the `StateRec` records.
//!
//! ```text
//! word  0..8    header line: magic, max threads, sizes of D / response / op, record length,
//!               checksum, type fingerprint (written once at creation, persisted before the
//!               object is used)
//! word  8       MIndex (PBcomb) or S (PWFcomb), alone in its cache line (lines 26 / 32, 44)
//! word 16..     records, each a whole number of cache lines:
//!               st | ReturnVal[0..n] | Seq[0..n] (u32) | Index[0..n] (bytes), pid (a byte)
//! ```
//!
//! The parts of a record are contiguous so that one pwb covers them all (persistence
//! principle 3, paper §3 item 5); `Index` and `pid` exist only in PWFcomb records
//! (Algorithm 3, type `StateRec`). [`PWFComb1`](crate::PWFComb1)'s records end with two more
//! words, `pass | check` (the stamp: `engine::pwf`, "Stamped records"), after everything else.
//!
//! `Seq[q]` (format 2) is the sequence number, modulo 2^32, of thread `q`'s last operation that
//! the record has applied; the paper's `Deactivate[q]` bit is its low bit. The combiner writes
//! it where the paper writes `Deactivate[q]` (Algorithm 1 line 21, Algorithm 3 line 24), in the
//! record the pass writes back anyway, so a reopened handle knows its number at no extra
//! persistence instruction. Format 1 (magic `PBCOMB01` / `PWFCOMB1`) held one `Deactivate`
//! byte per thread and a `pid` word; `open` refuses it with a typed error.

use core::marker::PhantomData;

use crate::sync::{AtomicU64, Ordering};
use crate::words::{self, words_for};
use pmem::Pod;

/// Words per cache line.
pub(crate) const LINE_WORDS: usize = 8;
/// Word index of the shared index word (`MIndex` / `S`).
pub(crate) const INDEX_WORD: usize = LINE_WORDS;
/// Word index of the first record.
pub(crate) const RECORDS_AT: usize = 2 * LINE_WORDS;
/// The check word of a record scrubbed at `open` ([`Record::unstamp`]): top bit clear, so
/// never a check (`expected_check` sets it), and above every pass, so never a mark. Not 0,
/// which is pass 0's mark.
pub(crate) const UNSTAMPED: u64 = u64::MAX >> 1;

/// Header word indices.
pub(crate) mod header {
    pub(crate) const MAGIC: usize = 0;
    pub(crate) const THREADS: usize = 1;
    pub(crate) const STATE_BYTES: usize = 2;
    pub(crate) const RESPONSE_BYTES: usize = 3;
    pub(crate) const OP_BYTES: usize = 4;
    pub(crate) const RECORD_WORDS: usize = 5;
    pub(crate) const CHECKSUM: usize = 6;
    /// Words covered by `CHECKSUM` and read by `Memory::open` (the checksum word included).
    pub(crate) const LEN: usize = 7;
    /// The type fingerprint (`crate::type_fingerprint`, or the user's id); outside the
    /// checksum, compared as a whole.
    pub(crate) const TYPE_ID: usize = 7;
}

/// Which protocol a region holds (the header's magic word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    PBComb,
    PWFComb,
    /// PWFcomb with stamped records ([`PWFComb1`](crate::PWFComb1)).
    PWFComb1,
}

impl Kind {
    pub(crate) fn magic(self) -> u64 {
        match self {
            Kind::PBComb => pmem::kinds::PBCOMB_TAG,
            Kind::PWFComb => pmem::kinds::PWFCOMB_TAG,
            Kind::PWFComb1 => pmem::kinds::PWFCOMB1_TAG,
        }
    }

    /// The magic of format 1 (one `Deactivate` byte per thread, no sequence numbers), which
    /// `open` recognizes only to refuse with a clear message.
    pub(crate) fn old_magic(self) -> u64 {
        match self {
            Kind::PBComb => u64::from_le_bytes(*b"PBCOMB01"),
            Kind::PWFComb => u64::from_le_bytes(*b"PWFCOMB1"),
            // No format 1 was ever written: a magic no header holds.
            Kind::PWFComb1 => 0,
        }
    }
}

/// The shape of one `StateRec` for state `D`, response `R` and `threads` threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RecordLayout {
    pub(crate) threads: usize,
    pub(crate) state_words: usize,
    pub(crate) ret_words: usize,
    pub(crate) ret_at: usize,
    /// `Seq[0..n]`, two per word.
    pub(crate) seq_at: usize,
    /// `Index[0..n]` then `pid`, one byte each (PWFcomb).
    pub(crate) index_at: usize,
    /// The stamp's `pass` word (`check` follows it), in stamped records only; the words
    /// before it are the record's *content* (what a combiner copies).
    pub(crate) stamp_at: Option<usize>,
    /// Record length in words, a multiple of [`LINE_WORDS`].
    pub(crate) len: usize,
}

impl RecordLayout {
    /// The layout for `threads` threads; `pwf` adds PWFcomb's `Index` and `pid` bytes.
    pub(crate) fn new<D, R>(threads: usize, pwf: bool) -> Self {
        let state_words = words_for::<D>();
        let ret_words = words_for::<R>();
        let ret_at = state_words;
        let seq_at = ret_at + threads * ret_words;
        let index_at = seq_at + threads.div_ceil(2);
        let end = if pwf {
            index_at + (threads + 1).div_ceil(8)
        } else {
            index_at
        };
        let len = end.div_ceil(LINE_WORDS) * LINE_WORDS;
        Self {
            threads,
            state_words,
            ret_words,
            ret_at,
            seq_at,
            index_at,
            stamp_at: None,
            len,
        }
    }

    /// This layout with the stamp (`pass`, `check`) after the content (PWFComb1).
    pub(crate) fn stamped(self) -> Self {
        let end = self.index_at + (self.threads + 1).div_ceil(8);
        Self {
            stamp_at: Some(end),
            len: (end + 2).div_ceil(LINE_WORDS) * LINE_WORDS,
            ..self
        }
    }

    /// Words a combiner copies from the current record: all but the stamp.
    fn content_len(&self) -> usize {
        self.stamp_at.unwrap_or(self.len)
    }

    /// Total words of an object with `records` records.
    pub(crate) fn total_words(&self, records: usize) -> usize {
        RECORDS_AT + records * self.len
    }
}

/// A view of one `StateRec` (record number `id`) in an object's words.
#[derive(Clone, Copy)]
pub(crate) struct Record<'a, D, R> {
    pub(crate) words: &'a [AtomicU64],
    layout: &'a RecordLayout,
    _types: PhantomData<fn() -> (D, R)>,
}

impl<'a, D: Pod, R: Pod> Record<'a, D, R> {
    /// Record `id` of `all` (the object's whole word array).
    #[inline]
    pub(crate) fn at(all: &'a [AtomicU64], layout: &'a RecordLayout, id: usize) -> Self {
        let start = RECORDS_AT + id * layout.len;
        Self {
            words: &all[start..start + layout.len],
            layout,
            _types: PhantomData,
        }
    }

    /// `st`.
    #[inline]
    pub(crate) fn state(&self) -> D {
        words::load(&self.words[..self.layout.state_words])
    }

    #[inline]
    pub(crate) fn set_state(&self, st: &D) {
        words::store(&self.words[..self.layout.state_words], st);
    }

    /// `ReturnVal[q]`.
    #[inline]
    pub(crate) fn ret(&self, q: usize) -> R {
        let at = self.layout.ret_at + q * self.layout.ret_words;
        words::load(&self.words[at..at + self.layout.ret_words])
    }

    #[inline]
    pub(crate) fn set_ret(&self, q: usize, r: &R) {
        let at = self.layout.ret_at + q * self.layout.ret_words;
        words::store(&self.words[at..at + self.layout.ret_words], r);
    }

    /// `Seq[q]`: the number (mod 2^32) of `q`'s last operation this record has applied.
    #[inline]
    pub(crate) fn seq(&self, q: usize) -> u32 {
        words::load_u32(&self.words[self.layout.seq_at..], q)
    }

    /// `Deactivate[q]` (0 or 1): the low bit of `Seq[q]`.
    #[inline]
    pub(crate) fn deact(&self, q: usize) -> u8 {
        (self.seq(q) & 1) as u8
    }

    /// Line 21 (PBcomb) / line 24 (PWFcomb), with the whole number instead of its low bit.
    #[inline]
    pub(crate) fn set_seq(&self, q: usize, seq: u32) {
        words::store_u32(&self.words[self.layout.seq_at..], q, seq);
    }

    /// `Index[q]` (PWFcomb only).
    #[inline]
    pub(crate) fn index(&self, q: usize) -> u8 {
        words::load_byte(&self.words[self.layout.index_at..], q)
    }

    #[inline]
    pub(crate) fn set_index(&self, q: usize, bit: u8) {
        words::store_byte(&self.words[self.layout.index_at..], q, bit);
    }

    /// Whether, with `pwf`, every `Index[q]` is 0 or 1 (always true without). `open` checks
    /// the current record (issue 11, defect 4): in a damaged image `Index[q]` would name a
    /// record out of range (`2q + Index[q]`). Every `Seq[q]` is a possible number (a damaged
    /// one only changes where that thread's handle starts counting).
    pub(crate) fn flags_valid(&self, pwf: bool) -> bool {
        !pwf || (0..self.layout.threads).all(|q| self.index(q) <= 1)
    }

    /// `pid` (PWFcomb only; a byte after `Index`, written as the paper's line 14 writes it,
    /// never read: the engine derives the owner from the record number).
    #[inline]
    pub(crate) fn set_pid(&self, pid: usize) {
        words::store_byte(
            &self.words[self.layout.index_at..],
            self.layout.threads,
            pid as u8,
        );
    }

    /// Line 15 (PBcomb) / line 13 (PWFcomb): `*self := *src` (the content: a stamp is the
    /// record's own).
    #[inline]
    pub(crate) fn copy_from(&self, src: &Record<'_, D, R>) {
        let n = self.layout.content_len();
        words::copy(&self.words[..n], &src.words[..n]);
    }

    /// The stamp's words `(pass, check)` (stamped layouts only).
    #[inline]
    fn stamp_words(&self) -> (&'a AtomicU64, &'a AtomicU64) {
        let at = self.layout.stamp_at.expect("invariant: a stamped layout");
        (&self.words[at], &self.words[at + 1])
    }

    /// Starts building the record of pass `pass` in this slot: `check := pass` first (the
    /// *mark*: no record's check, whose top bit is set), then `pass`. A helper stamps a record
    /// only by a CAS from its mark, so a stale helper cannot stamp a later build of the slot;
    /// and a reader that sees any word written after this (Release stores) sees the mark.
    #[inline]
    pub(crate) fn begin(&self, pass: u64) {
        let (p, c) = self.stamp_words();
        // Release: pairs with the Acquire CAS in `stamp_from_mark` (the mark is seen by a
        // helper that saw anything of this build, through the Release content stores too).
        c.store(pass, Ordering::Release);
        // Release: as in `words::store`.
        p.store(pass, Ordering::Release);
    }

    /// The stamp's `pass` word.
    #[inline]
    pub(crate) fn pass(&self) -> u64 {
        // Acquire: as in `words::load`.
        self.stamp_words().0.load(Ordering::Acquire)
    }

    /// The check this record's content and pass call for (top bit set, so never a mark).
    #[inline]
    pub(crate) fn expected_check(&self) -> u64 {
        let n = self.layout.stamp_at.expect("invariant: a stamped layout") + 1;
        // Acquire: as in `words::load`.
        words::seal(self.words[..n].iter().map(|w| w.load(Ordering::Acquire))) | 1 << 63
    }

    /// The owner's stamp after its install: `check := expected_check()`.
    #[inline]
    pub(crate) fn stamp(&self, check: u64) {
        // Release: pairs with the Acquire loads of the check (`stamp_from_mark`, `is_sealed`).
        self.stamp_words().1.store(check, Ordering::Release);
    }

    /// A helper's stamp: `check := check` if the slot still holds the mark of pass `pass`
    /// (the build that was installed); otherwise the owner stamped it already or has begun a
    /// later build.
    #[inline]
    pub(crate) fn stamp_from_mark(&self, pass: u64, check: u64) {
        let word = self.stamp_words().1;
        // AcqRel: the Acquire half pairs with `begin`'s Release store of a later mark; the
        // Release half with the Acquire loads of the check.
        let _ = word.compare_exchange(pass, check, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Invalidates the record for good (the scrub at `open`, single-threaded):
    /// `check :=` [`UNSTAMPED`], which is no record's check (its top bit is clear) and no
    /// build's mark (it exceeds every pass `S` can hold, so no helper's CAS expects it).
    /// Returns the check word, for its write-back.
    pub(crate) fn unstamp(&self) -> &'a AtomicU64 {
        let c = self.stamp_words().1;
        // Relaxed: single-threaded reopening; handing the object over publishes it.
        c.store(UNSTAMPED, Ordering::Relaxed);
        c
    }

    /// Whether the stamp matches the record (single-threaded use: `open`).
    pub(crate) fn is_sealed(&self) -> bool {
        // Acquire: pairs with the Release stores of `stamp`.
        self.stamp_words().1.load(Ordering::Acquire) == self.expected_check()
    }

    /// Start address and byte length, for a pwb of the whole record (line 22 / line 28).
    #[inline]
    pub(crate) fn span(&self) -> (*const u8, usize) {
        (self.words.as_ptr().cast::<u8>(), self.words.len() * 8)
    }
}
