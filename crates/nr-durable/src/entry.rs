//! The log entry format, shared by both media, and the recovery scan.
//!
//! An entry is a 16-byte frame header and a payload, padded with zeros to a multiple of 8
//! bytes (so the scan, and the persistent-memory medium's 8-byte failure atomicity, see whole
//! words):
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | payload length `n` (u32, little-endian, 1 ..= [`MAX_PAYLOAD`]) |
//! | 4..8 | CRC-32C of `salt ‖ write_start ‖ payload` (u32 LE; `salt` and `write_start` as u64 LE) |
//! | 8..16 | `write_start`: the position of the first entry of the same `write` (u64 LE) |
//! | 16..16+n | payload: postcard of the position (u64) then of the operation |
//!
//! The *salt* is the base position of the segment file or of the region log's generation: an
//! entry left over from an older generation fails its checksum. `write_start` tells a torn
//! write from damage: a write may reach the medium partly and out of order, so entries of the
//! last write may follow a bad one; an entry of a *later* write after a bad one cannot be
//! explained by a crash.

use serde::Serialize;

use crate::DurableError;

/// The version of the log format (the entry frame, the segment header, the region's block)
/// that this build reads and writes. Format 2 (2026-11-28) checksums entries with CRC-32C;
/// format 1 used CRC-32. A log in another format is refused with [`DurableError::Version`].
///
/// # Examples
///
/// ```
/// assert_eq!(nr_durable::LOG_FORMAT, 2);
/// ```
pub const LOG_FORMAT: u64 = 2;

/// Bytes of the frame header.
pub(crate) const FRAME_HEADER: usize = 16;
/// Entries start at multiples of this.
pub(crate) const ALIGN: usize = 8;
/// The largest payload an entry may have (16 MiB): a bound on what the recovery scan reads
/// for one candidate entry.
pub const MAX_PAYLOAD: usize = 1 << 24;

/// Appends the payload of the entry at `pos` (postcard of `pos`, then of `op`) to `buf`, in one
/// postcard call (a pair encodes as its two fields in turn) writing straight into `buf`, which
/// the caller reuses from batch to batch.
pub(crate) fn encode_payload<Op: Serialize>(
    buf: &mut Vec<u8>,
    pos: u64,
    op: &Op,
) -> Result<(), DurableError> {
    let start = buf.len();
    if let Err(source) = postcard::serialize_with_flavor(&(pos, op), AppendTo(buf)) {
        buf.truncate(start);
        return Err(DurableError::Encode { source });
    }
    if buf.len() - start > MAX_PAYLOAD {
        buf.truncate(start);
        return Err(DurableError::Encode {
            source: postcard::Error::SerializeBufferFull,
        });
    }
    Ok(())
}

/// A postcard output that appends to a borrowed `Vec` a slice at a time (postcard's own
/// `to_extend` pushes byte by byte, and takes the `Vec` by value).
struct AppendTo<'a>(&'a mut Vec<u8>);

impl postcard::ser_flavors::Flavor for AppendTo<'_> {
    type Output = ();

    #[inline]
    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        self.0.extend_from_slice(data);
        Ok(())
    }

    #[inline]
    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.0.push(data);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<()> {
        Ok(())
    }
}

/// The checksum of a frame: CRC-32C of `salt ‖ write_start ‖ payload` (format 2; format 1 had
/// the CRC-32 of `crc32fast`).
fn checksum(salt: u64, write_start: u64, payload: &[u8]) -> u32 {
    crate::crc::crc32c_of(salt, write_start, payload)
}

/// CRC-32 of two little-endian words and `bytes` (snapshots: position, length, payload).
pub(crate) fn crc_of(a: u64, b: u64, bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&a.to_le_bytes());
    h.update(&b.to_le_bytes());
    h.update(bytes);
    h.finalize()
}

/// Bytes a frame of a `payload_len`-byte payload takes, padding included.
pub(crate) fn frame_size(payload_len: usize) -> usize {
    (FRAME_HEADER + payload_len).div_ceil(ALIGN) * ALIGN
}

/// Appends the framed entry of `payload` to `out`.
///
/// The checksum covers `salt ‖ write_start ‖ payload`, which are 16 + `n` contiguous bytes once
/// the salt is put where the length and the checksum go: one CRC pass over the frame as
/// written, then the salt is overwritten (the same value as [`checksum`], without a pass per
/// part). The frame is grown once, padding included, and written in place (no growth check
/// per part).
pub(crate) fn frame_into(out: &mut Vec<u8>, salt: u64, write_start: u64, payload: &[u8]) {
    let len = u32::try_from(payload.len()).expect("invariant: payloads are at most MAX_PAYLOAD");
    let start = out.len();
    let body = FRAME_HEADER + payload.len();
    out.resize(start + frame_size(payload.len()), 0);
    let frame = &mut out[start..];
    frame[..8].copy_from_slice(&salt.to_le_bytes());
    frame[8..16].copy_from_slice(&write_start.to_le_bytes());
    frame[16..body].copy_from_slice(payload);
    let crc = crate::crc::crc32c(&frame[..body]);
    frame[..4].copy_from_slice(&len.to_le_bytes());
    frame[4..8].copy_from_slice(&crc.to_le_bytes());
}

/// One valid entry found by [`scan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found<'a> {
    /// Its position.
    pub(crate) pos: u64,
    /// The position of the first entry of its write.
    pub(crate) write_start: u64,
    /// Its byte offset in the scanned slice.
    pub(crate) offset: usize,
    /// Its payload.
    pub(crate) payload: &'a [u8],
    /// Its frame size, padding included.
    pub(crate) size: usize,
}

impl Found<'_> {
    /// The encoded operation: the payload after the position.
    pub(crate) fn op_bytes(&self) -> &[u8] {
        match postcard::take_from_bytes::<u64>(self.payload) {
            Ok((_, rest)) => rest,
            Err(_) => unreachable!("invariant: parse_at decoded the position"),
        }
    }
}

/// Reads the entry at `off`, or says why there is none.
fn parse_at(bytes: &[u8], off: usize, salt: u64) -> Result<Found<'_>, &'static str> {
    let rest = &bytes[off..];
    if rest.len() < FRAME_HEADER {
        return Err("a frame header shorter than 16 bytes");
    }
    let word = |i: usize| u32::from_le_bytes([rest[i], rest[i + 1], rest[i + 2], rest[i + 3]]);
    let len = word(0) as usize;
    let crc = word(4);
    let mut ws = [0u8; 8];
    ws.copy_from_slice(&rest[8..16]);
    let write_start = u64::from_le_bytes(ws);
    if len == 0 {
        return Err("an empty frame header");
    }
    if len > MAX_PAYLOAD || frame_size(len) > rest.len() {
        return Err("an entry longer than what follows it");
    }
    let payload = &rest[FRAME_HEADER..FRAME_HEADER + len];
    if checksum(salt, write_start, payload) != crc {
        return Err("a checksum mismatch");
    }
    let Ok((pos, _)) = postcard::take_from_bytes::<u64>(payload) else {
        return Err("a checksummed entry without a position");
    };
    Ok(Found {
        pos,
        write_start,
        offset: off,
        payload,
        size: frame_size(len),
    })
}

/// The bytes the zero-skip tests at once.
const ZERO_BLOCK: usize = 64;

/// `from` moved past every whole [`ZERO_BLOCK`] of zero bytes that starts there: no entry starts
/// inside such a block (an entry's first four bytes, its payload length, are not zero), so the
/// probe may skip it. The unused rest of a region's log area is zero, and testing it a block at
/// a time (a branch-free OR of eight words, which the compiler vectorizes) instead of parsing a
/// frame header at each of its 8-byte offsets makes opening a 64 MiB region about 168 million
/// instructions cheaper. `from` stays a multiple of [`ALIGN`] (the block size is one).
fn skip_zero_blocks(bytes: &[u8], mut from: usize) -> usize {
    while let Some(block) = bytes.get(from..from + ZERO_BLOCK) {
        let or = block.chunks_exact(8).fold(0u64, |acc, w| {
            acc | u64::from_ne_bytes(w.try_into().unwrap_or([1; 8]))
        });
        if or != 0 {
            break;
        }
        from += ZERO_BLOCK;
    }
    from
}

/// What follows the last valid entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tail {
    /// Nothing: the scan reached the end of the slice exactly.
    Clean,
    /// Bytes that are no valid entry at the next position, none of a later write: the torn
    /// tail of the last write (or the unused rest of a region's log area).
    Torn {
        /// Why the first of them is no entry.
        what: &'static str,
        /// The end of the furthest valid-looking entry of the same write after them (the
        /// offset of the bad entry if none): what must be cleared before the log grows again.
        remnant_end: usize,
    },
}

/// The valid prefix of a log.
#[derive(Debug)]
pub(crate) struct Scan<'a> {
    /// The entries at positions `base, base + 1, ...`.
    pub(crate) entries: Vec<Found<'a>>,
    /// The byte offset just past the last of them.
    pub(crate) valid_len: usize,
    /// What follows.
    pub(crate) tail: Tail,
}

/// Scans `bytes` for entries at positions `base, base + 1, ...` with `salt`, stopping at the
/// first that is short, fails its checksum or has another position. What follows must be the
/// torn tail of the last write; an entry of a later write after the bad one is damage, reported
/// as [`DurableError::Corrupt`] at `file_offset + offset` of `path`.
pub(crate) fn scan<'a>(
    bytes: &'a [u8],
    salt: u64,
    base: u64,
    path: &std::path::Path,
    file_offset: u64,
) -> Result<Scan<'a>, DurableError> {
    let mut entries = Vec::new();
    let mut off = 0;
    let mut expected = base;
    let what = loop {
        if off == bytes.len() {
            return Ok(Scan {
                entries,
                valid_len: off,
                tail: Tail::Clean,
            });
        }
        match parse_at(bytes, off, salt) {
            Ok(found) if found.pos == expected => {
                entries.push(found);
                off += found.size;
                expected += 1;
            }
            Ok(_) => break "an entry at an unexpected position",
            Err(what) => break what,
        }
    };
    // Every later aligned offset: an entry of a later write is damage, one of the same write a
    // remnant of the torn write.
    let mut remnant_end = off;
    let mut probe = skip_zero_blocks(bytes, off + ALIGN);
    while probe < bytes.len() {
        match parse_at(bytes, probe, salt) {
            Ok(found) if found.write_start > expected => {
                return Err(DurableError::corrupt(
                    path,
                    file_offset + off as u64,
                    format!(
                        "{what} where entry {expected} should be, and entry {} of a later \
                         write follows at byte {}",
                        found.pos,
                        file_offset + probe as u64
                    ),
                ));
            }
            Ok(found) => {
                remnant_end = remnant_end.max(probe + found.size);
                probe += ALIGN;
            }
            Err(_) => probe = skip_zero_blocks(bytes, probe + ALIGN),
        }
    }
    Ok(Scan {
        entries,
        valid_len: off,
        tail: Tail::Torn { what, remnant_end },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn log(salt: u64, writes: &[&[u64]]) -> Vec<u8> {
        let mut out = Vec::new();
        for w in writes {
            for &pos in *w {
                let mut p = Vec::new();
                encode_payload(&mut p, pos, &format!("op{pos}")).unwrap();
                frame_into(&mut out, salt, w[0], &p);
            }
        }
        out
    }

    #[test]
    fn a_log_scans_back_to_its_entries() {
        let bytes = log(7, &[&[3, 4], &[5]]);
        let s = scan(&bytes, 7, 3, Path::new("x"), 0).unwrap();
        assert_eq!(s.tail, Tail::Clean);
        let ops: Vec<String> = s
            .entries
            .iter()
            .map(|e| postcard::from_bytes(e.op_bytes()).unwrap())
            .collect();
        assert_eq!(ops, ["op3", "op4", "op5"]);
        assert_eq!(s.valid_len, bytes.len());
    }

    /// The entry format is unchanged by the one-call encoding and the one-pass checksum: the
    /// payload is postcard of the position then of the operation, and the frame's checksum is
    /// `checksum(salt, write_start, payload)` (fails if either drifts: stores written before
    /// would no longer recover).
    #[test]
    fn a_frame_is_the_documented_format() {
        let op = (7u32, 300u64, String::from("op"));
        let mut payload = Vec::new();
        encode_payload(&mut payload, 1000, &op).unwrap();
        let mut expected = postcard::to_allocvec(&1000u64).unwrap();
        expected.extend(postcard::to_allocvec(&op).unwrap());
        assert_eq!(payload, expected);
        let mut out = vec![0xAA; 8]; // appended after the frames already there
        frame_into(&mut out, 5, 999, &payload);
        assert_eq!(&out[..8], &[0xAA; 8]);
        let frame = &out[8..];
        assert_eq!(frame[0..4], (payload.len() as u32).to_le_bytes());
        assert_eq!(frame[4..8], checksum(5, 999, &payload).to_le_bytes());
        assert_eq!(frame[8..16], 999u64.to_le_bytes());
        assert_eq!(&frame[16..16 + payload.len()], &payload[..]);
        assert_eq!(frame.len(), frame_size(payload.len()));
    }

    /// The probe after a bad entry skips zero blocks (`skip_zero_blocks`) but still finds an
    /// entry of a later write that starts anywhere after them, here at each 8-byte offset of a
    /// 64-byte block after 64 KiB of zeros (fails if the skip passes a block that holds the
    /// start of an entry, or lands off the 8-byte grid).
    #[test]
    fn an_entry_after_a_long_zero_run_is_still_found() {
        let later = log(0, &[&[5]]);
        for shift in (0..ZERO_BLOCK).step_by(ALIGN) {
            let mut bytes = log(0, &[&[0]]);
            let bad = bytes.len();
            bytes.extend(std::iter::repeat_n(0, FRAME_HEADER + (64 << 10) + shift));
            bytes[bad] = 1; // a header whose length runs past the end: a bad entry 1
            let at = bytes.len();
            bytes.extend(&later);
            bytes.extend(std::iter::repeat_n(0, 100));
            let err = scan(&bytes, 0, 0, Path::new("x"), 0)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&format!("entry 5 of a later write follows at byte {at}")),
                "shift {shift}: {err}"
            );
        }
        let zeros = vec![0u8; 1 << 20];
        assert_eq!(skip_zero_blocks(&zeros, 8), zeros.len() - 56);
    }

    #[test]
    fn another_salt_is_no_entry() {
        let bytes = log(7, &[&[0]]);
        let s = scan(&bytes, 8, 0, Path::new("x"), 0).unwrap();
        assert!(s.entries.is_empty());
        assert!(matches!(
            s.tail,
            Tail::Torn {
                what: "a checksum mismatch",
                ..
            }
        ));
    }

    #[test]
    fn a_bad_entry_of_the_last_write_is_a_torn_tail_and_its_remnants_are_reported() {
        let bytes = log(0, &[&[0], &[1, 2]]);
        let first = scan(&bytes, 0, 0, Path::new("x"), 0).unwrap().entries;
        let mut torn = bytes.clone();
        torn[first[1].offset + FRAME_HEADER] ^= 1; // entry 1's payload
        let s = scan(&torn, 0, 0, Path::new("x"), 0).unwrap();
        assert_eq!(s.entries.len(), 1);
        assert_eq!(
            s.tail,
            Tail::Torn {
                what: "a checksum mismatch",
                remnant_end: bytes.len()
            }
        );
    }

    #[test]
    fn a_bad_entry_before_a_later_write_is_damage() {
        let bytes = log(0, &[&[0], &[1]]);
        let mut bad = bytes.clone();
        bad[FRAME_HEADER] ^= 1;
        let err = scan(&bad, 0, 0, Path::new("seg"), 16).unwrap_err();
        assert!(
            matches!(&err, DurableError::Corrupt { offset: 16, .. }),
            "{err}"
        );
        assert!(
            err.to_string().contains("entry 1 of a later write"),
            "{err}"
        );
    }
}
