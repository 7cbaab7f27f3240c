//! CRC-32C (Castagnoli, the iSCSI checksum of RFC 3720: reflected polynomial `0x82F63B78`,
//! initial value and final XOR `0xFFFF_FFFF`), the checksum of log entries (format 2).
//!
//! On x86_64 with SSE4.2 it is the `crc32` instruction, 8 bytes per instruction (a 32-byte
//! frame is four of them); elsewhere, or without SSE4.2, a byte-at-a-time table. The choice is
//! made once per process (`std::is_x86_feature_detected!` caches it). Entries are short (the
//! benchmark's are 32 bytes), where `crc32fast`'s carry-less-multiply path does not start
//! (it needs 128 bytes) and its table path costs about 200 instructions a frame; snapshots,
//! which are long, keep `crc32fast`'s CRC-32.

/// The reflected CRC-32C polynomial.
const POLY: u32 = 0x82F6_3B78;

/// The byte-at-a-time table of the fallback.
static TABLE: [u32; 256] = table();

const fn table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 == 1 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

/// CRC-32C of `bytes`.
#[inline]
pub(crate) fn crc32c(bytes: &[u8]) -> u32 {
    !update(!0, bytes)
}

/// CRC-32C of `a` and `b` (little-endian) followed by `bytes`: the checksum of a log entry
/// (salt, write start, payload), checked where the three are not contiguous.
pub(crate) fn crc32c_of(a: u64, b: u64, bytes: &[u8]) -> u32 {
    let mut head = [0u8; 16];
    head[..8].copy_from_slice(&a.to_le_bytes());
    head[8..].copy_from_slice(&b.to_le_bytes());
    !update(update(!0, &head), bytes)
}

/// Runs the (pre- and post-inverted) CRC register `crc` over `bytes`, by the fastest way this
/// machine has.
#[inline]
fn update(crc: u32, bytes: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("sse4.2") {
            // SAFETY: the `sse4.2` target feature `update_sse42` is compiled with was just
            // detected on this CPU.
            return unsafe { update_sse42(crc, bytes) };
        }
    }
    update_table(crc, bytes)
}

/// [`update`] by the table, a byte at a time.
fn update_table(mut crc: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        crc = TABLE[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

/// [`update`] by the SSE4.2 `crc32` instruction: 8 bytes at a time, then the rest (fewer than
/// 8) by at most one 4-, one 2- and one 1-byte instruction instead of a byte loop (a frame's
/// checksummed bytes end anywhere: 16 header bytes and a payload of any length).
///
/// # Safety
///
/// The CPU must support SSE4.2 (`is_x86_feature_detected!("sse4.2")`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
unsafe fn update_sse42(crc: u32, bytes: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u16, _mm_crc32_u32, _mm_crc32_u64, _mm_crc32_u8};
    let mut c = u64::from(crc);
    let mut rest = bytes;
    while let Some((word, tail)) = rest.split_first_chunk::<8>() {
        c = _mm_crc32_u64(c, u64::from_le_bytes(*word));
        rest = tail;
    }
    // The instruction leaves the upper half zero.
    let mut c = c as u32;
    if let Some((four, tail)) = rest.split_first_chunk::<4>() {
        c = _mm_crc32_u32(c, u32::from_le_bytes(*four));
        rest = tail;
    }
    if let Some((two, tail)) = rest.split_first_chunk::<2>() {
        c = _mm_crc32_u16(c, u16::from_le_bytes(*two));
        rest = tail;
    }
    if let Some(&one) = rest.first() {
        c = _mm_crc32_u8(c, one);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check value of CRC-32C (RFC 3720; the CRC catalogue's `CRC-32/ISCSI`), and an iSCSI
    /// test vector (RFC 3720 B.4: 32 bytes of zeros), on whichever path this machine takes.
    #[test]
    fn crc32c_matches_the_published_check_values() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(&[0; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(&[0xff; 32]), 0x62A8_AB43);
        assert_eq!(crc32c(b""), 0);
        let mut joined = 5u64.to_le_bytes().to_vec();
        joined.extend(999u64.to_le_bytes());
        joined.extend(b"payload");
        assert_eq!(crc32c_of(5, 999, b"payload"), crc32c(&joined));
    }

    /// The table and the instruction agree on every length from 0 to 40 (every remainder of
    /// the 8-byte loop) and on several contents.
    #[test]
    fn the_table_and_the_instruction_agree() {
        let bytes: Vec<u8> = (0..40u32).map(|i| (i * 37 + 11) as u8).collect();
        assert_eq!(!update_table(!0, b"123456789"), 0xE306_9283);
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("sse4.2") {
            for n in 0..=bytes.len() {
                for start in [0, 1, 3] {
                    let s = &bytes[start.min(n)..n];
                    // SAFETY: SSE4.2 was detected just above.
                    let hw = unsafe { update_sse42(!0, s) };
                    assert_eq!(hw, update_table(!0, s), "{} bytes", s.len());
                }
            }
        }
    }
}
