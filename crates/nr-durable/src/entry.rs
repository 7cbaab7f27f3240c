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

/// Writes the entry at `pos` as an *unsealed* frame at `buf[start..]` and returns the frame's
/// end: the payload (postcard of `pos`, then of `op`, in one postcard call, a pair encoding as
/// its two fields in turn) encoded straight into `buf` after a 16-byte header that holds only
/// the payload length so far, then the zero padding. [`seal_frames`] writes the rest of the
/// header (write start, checksum) once the medium knows the salt.
///
/// `buf` is zero-initialized room that the caller reuses from batch to batch (its length is
/// the room, not the data): the payload is written once, where the medium copies it from, with
/// no length or capacity bookkeeping per byte, and the room grows (rarely) when an entry
/// needs more.
pub(crate) fn encode_frame<Op: Serialize>(
    buf: &mut Vec<u8>,
    start: usize,
    pos: u64,
    op: &Op,
) -> Result<usize, DurableError> {
    let out = FrameWriter {
        buf,
        at: start + FRAME_HEADER,
    };
    let end = postcard::serialize_with_flavor(&(pos, op), out)
        .map_err(|source| DurableError::Encode { source })?;
    let len = end - start - FRAME_HEADER;
    let Ok(len32) = u32::try_from(len) else {
        return Err(too_long());
    };
    if len > MAX_PAYLOAD {
        return Err(too_long());
    }
    // The padding: fewer than 8 bytes after the payload (the room past the frame's end is the
    // next frame's, or unused).
    room(buf, end + ALIGN);
    buf[end..end + ALIGN].copy_from_slice(&[0; ALIGN]);
    buf[start..start + 4].copy_from_slice(&len32.to_le_bytes());
    Ok(start + frame_size(len))
}

/// The error of a payload over [`MAX_PAYLOAD`].
#[cold]
fn too_long() -> DurableError {
    DurableError::Encode {
        source: postcard::Error::SerializeBufferFull,
    }
}

/// Makes `buf` at least `n` bytes long (zero-filled room).
#[inline]
pub(crate) fn room(buf: &mut Vec<u8>, n: usize) {
    if buf.len() < n {
        grow(buf, n);
    }
}

/// [`room`]'s slow path: at least doubles the room, so a thread's batch grows a few times, then
/// never again.
#[cold]
fn grow(buf: &mut Vec<u8>, n: usize) {
    buf.resize(n.max(2 * buf.len()).max(256), 0);
}

/// Seals the unsealed frames that fill `frames` (from [`encode_frame`]): each gets `write_start`
/// and the checksum of `salt ‖ write_start ‖ payload`.
///
/// The three are 16 + `n` contiguous bytes once the salt is put where the length and the
/// checksum go: one CRC pass over the frame as it lies, then the length and the checksum are
/// written over the salt (the same value as [`checksum`], without a pass per part).
#[inline]
pub(crate) fn seal_frames(frames: &mut [u8], salt: u64, write_start: u64) {
    let mut off = 0;
    while let Some(header) = frames.get(off..off + 4) {
        let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
        let body = FRAME_HEADER + len as usize;
        let Some(frame) = frames.get_mut(off..off + body) else {
            unreachable!("invariant: encode_frame wrote the whole frame");
        };
        frame[..8].copy_from_slice(&salt.to_le_bytes());
        frame[8..16].copy_from_slice(&write_start.to_le_bytes());
        let crc = crate::crc::crc32c(frame);
        frame[..4].copy_from_slice(&len.to_le_bytes());
        frame[4..8].copy_from_slice(&crc.to_le_bytes());
        off += frame_size(len as usize);
    }
}

/// A postcard output writing into zero-initialized room at a cursor: postcard hands it short
/// slices (a varint at a time), which it copies with fixed-size moves instead of a `memcpy`
/// call, inlined into the serializer (postcard's own `to_extend` pushes byte by byte).
struct FrameWriter<'a> {
    buf: &'a mut Vec<u8>,
    at: usize,
}

impl postcard::ser_flavors::Flavor for FrameWriter<'_> {
    /// The cursor: the end of what was written.
    type Output = usize;

    #[inline(always)]
    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        let at = self.at;
        let end = at + data.len();
        if data.len() <= 16 {
            // Room for a 16-byte move past the cursor, so short copies need no exact bound.
            room(self.buf, at + 16);
            if let Some(dst) = self.buf.get_mut(at..at + 16) {
                copy_short(dst, data);
            }
        } else {
            room(self.buf, end);
            self.buf[at..end].copy_from_slice(data);
        }
        self.at = end;
        Ok(())
    }

    #[inline(always)]
    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        room(self.buf, self.at + 1);
        self.buf[self.at] = data;
        self.at += 1;
        Ok(())
    }

    fn finalize(self) -> postcard::Result<usize> {
        Ok(self.at)
    }
}

/// Copies `src` (at most 16 bytes) to the start of `dst` (16 bytes) by two overlapping
/// fixed-size moves, as `memcpy` does for short copies, without the call.
#[inline(always)]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if n >= 8 {
        dst[..8].copy_from_slice(&src[..8]);
        dst[n - 8..n].copy_from_slice(&src[n - 8..]);
    } else if n >= 4 {
        dst[..4].copy_from_slice(&src[..4]);
        dst[n - 4..n].copy_from_slice(&src[n - 4..]);
    } else if n > 0 {
        dst[0] = src[0];
        dst[n / 2] = src[n / 2];
        dst[n - 1] = src[n - 1];
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

/// Appends the sealed frame of `payload` (an entry's payload as [`encode_frame`] writes it) to
/// `out`: a checkpoint re-frames the live entries with the new generation's salt.
pub(crate) fn frame_into(out: &mut Vec<u8>, salt: u64, write_start: u64, payload: &[u8]) {
    let len = u32::try_from(payload.len()).expect("invariant: payloads are at most MAX_PAYLOAD");
    let start = out.len();
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&[0; FRAME_HEADER - 4]);
    out.extend_from_slice(payload);
    out.resize(start + frame_size(payload.len()), 0);
    seal_frames(&mut out[start..], salt, write_start);
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
            let start = out.len();
            let mut end = start;
            for &pos in *w {
                end = encode_frame(&mut out, end, pos, &format!("op{pos}")).unwrap();
            }
            out.truncate(end);
            seal_frames(&mut out[start..], salt, w[0]);
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

    /// The entry format is unchanged by the encoding straight into the frame and the sealing
    /// in place: the payload is postcard of the position then of the operation, the frame's
    /// checksum is `checksum(salt, write_start, payload)`, each frame of a sealed batch gets
    /// the batch's write start, and a checkpoint's re-framing (`frame_into`) gives the same
    /// bytes (fails if any drifts: stores written before would no longer recover).
    #[test]
    fn a_frame_is_the_documented_format() {
        // Varints of 1, 2, 3, 6 and 10 bytes and strings of 2 and 34 bytes: every branch of
        // `copy_short` and the long copy.
        let ops = [
            (7u32, 300u64, 70_000u64, String::from("op")),
            (
                8,
                1 << 40,
                u64::MAX,
                "a string longer than sixteen bytes".into(),
            ),
        ];
        // Appended after the frames already there, in room that held other bytes before.
        let mut out = vec![0xAA; 300];
        let mut end = 8;
        for (i, op) in ops.iter().enumerate() {
            end = encode_frame(&mut out, end, 1000 + i as u64, op).unwrap();
        }
        out.truncate(end);
        seal_frames(&mut out[8..], 5, 999);
        assert_eq!(&out[..8], &[0xAA; 8]);
        let mut at = 8;
        let mut reframed = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let mut payload = postcard::to_allocvec(&(1000 + i as u64)).unwrap();
            payload.extend(postcard::to_allocvec(op).unwrap());
            let frame = &out[at..at + frame_size(payload.len())];
            assert_eq!(frame[0..4], (payload.len() as u32).to_le_bytes());
            assert_eq!(frame[4..8], checksum(5, 999, &payload).to_le_bytes());
            assert_eq!(frame[8..16], 999u64.to_le_bytes());
            assert_eq!(&frame[16..16 + payload.len()], &payload[..]);
            assert!(frame[16 + payload.len()..].iter().all(|&b| b == 0));
            frame_into(&mut reframed, 5, 999, &payload);
            at += frame.len();
        }
        assert_eq!(at, out.len());
        assert_eq!(reframed, out[8..]);
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
