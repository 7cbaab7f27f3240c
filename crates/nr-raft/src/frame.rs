//! The frame format on the wire: a length, a checksum, and a postcard payload.
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | magic `NRRF` |
//! | 4..8 | payload length `n` (u32 LE, 1 ..= [`MAX_FRAME`]) |
//! | 8..12 | CRC-32 of the payload (u32 LE) |
//! | 12.. | payload: postcard of the message |
//!
//! A reader checks each field before it trusts the next: bad magic, a length out of range, a
//! short read, a checksum mismatch or a payload that does not decode is a [`FrameError`], and
//! the caller closes the connection (it cannot find the next frame boundary in a stream it
//! no longer trusts).

use std::io::{self, Read, Write};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::FrameError;

/// The first four bytes of every frame.
pub const FRAME_MAGIC: [u8; 4] = *b"NRRF";

/// The largest payload a frame may carry (16 MiB): a length above it is rejected before any
/// allocation, so a garbage length cannot make a reader allocate gigabytes.
pub const MAX_FRAME: usize = 16 << 20;

const HEADER: usize = 12;

/// Encodes `msg` as one frame into `out` (cleared first).
///
/// # Errors
///
/// [`FrameError::Encode`] when serde fails, [`FrameError::TooLarge`] past [`MAX_FRAME`].
///
/// # Examples
///
/// ```
/// let mut buf = Vec::new();
/// nr_raft::encode_frame(&mut buf, &(7u32, "hi"))?;
/// let back: (u32, String) = nr_raft::read_frame(&mut buf.as_slice())?;
/// assert_eq!(back, (7, "hi".to_owned()));
/// # Ok::<(), nr_raft::FrameError>(())
/// ```
pub fn encode_frame<T: Serialize>(out: &mut Vec<u8>, msg: &T) -> Result<(), FrameError> {
    out.clear();
    out.extend_from_slice(&[0; HEADER]);
    let mut out_vec = std::mem::take(out);
    out_vec = postcard::to_extend(msg, out_vec).map_err(|source| FrameError::Encode { source })?;
    let len = out_vec.len() - HEADER;
    if len == 0 || len > MAX_FRAME {
        return Err(FrameError::TooLarge { len: len as u64 });
    }
    let crc = crc32fast::hash(&out_vec[HEADER..]);
    out_vec[0..4].copy_from_slice(&FRAME_MAGIC);
    out_vec[4..8].copy_from_slice(&(len as u32).to_le_bytes());
    out_vec[8..12].copy_from_slice(&crc.to_le_bytes());
    *out = out_vec;
    Ok(())
}

/// Writes `msg` as one frame to `w` (one `write_all`), reusing `buf`.
///
/// # Errors
///
/// As [`encode_frame`], and [`FrameError::Io`] from the writer.
///
/// # Examples
///
/// ```
/// let (mut buf, mut wire) = (Vec::new(), Vec::new());
/// nr_raft::write_frame(&mut wire, &mut buf, &1u64)?;
/// assert_eq!(&wire[..4], b"NRRF");
/// # Ok::<(), nr_raft::FrameError>(())
/// ```
pub fn write_frame<T: Serialize, W: Write>(
    w: &mut W,
    buf: &mut Vec<u8>,
    msg: &T,
) -> Result<(), FrameError> {
    encode_frame(buf, msg)?;
    w.write_all(buf)
        .map_err(|source| FrameError::Io { source })?;
    w.flush().map_err(|source| FrameError::Io { source })
}

/// Reads one frame from `r` and decodes it.
///
/// # Errors
///
/// [`FrameError::Closed`] on a clean end of stream before a frame; [`FrameError::Truncated`]
/// when the stream ends inside one; [`FrameError::BadMagic`], [`FrameError::BadLength`],
/// [`FrameError::Checksum`], [`FrameError::Decode`] for garbage; [`FrameError::Io`] otherwise.
/// Never panics on any input.
///
/// # Examples
///
/// ```
/// let garbage = [0xffu8; 20];
/// let err = nr_raft::read_frame::<u64, _>(&mut &garbage[..]).unwrap_err();
/// assert!(matches!(err, nr_raft::FrameError::BadMagic { .. }));
/// ```
pub fn read_frame<T: DeserializeOwned, R: Read>(r: &mut R) -> Result<T, FrameError> {
    let mut header = [0u8; HEADER];
    match read_full(r, &mut header)? {
        0 => return Err(FrameError::Closed),
        n if n < HEADER => {
            return Err(FrameError::Truncated {
                expected: HEADER as u64,
                got: n as u64,
            })
        }
        _ => {}
    }
    let mut magic = [0u8; 4];
    magic.copy_from_slice(&header[0..4]);
    if magic != FRAME_MAGIC {
        return Err(FrameError::BadMagic { found: magic });
    }
    let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    if !(1..=MAX_FRAME).contains(&len) {
        return Err(FrameError::BadLength { len: len as u64 });
    }
    let crc = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    let mut payload = vec![0u8; len];
    let got = read_full(r, &mut payload)?;
    if got < len {
        return Err(FrameError::Truncated {
            expected: len as u64,
            got: got as u64,
        });
    }
    let actual = crc32fast::hash(&payload);
    if actual != crc {
        return Err(FrameError::Checksum {
            expected: crc,
            actual,
        });
    }
    postcard::from_bytes(&payload).map_err(|source| FrameError::Decode { source })
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> Result<usize, FrameError> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(source) => return Err(FrameError::Io { source }),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(msg: &(u64, String)) -> Vec<u8> {
        let mut buf = Vec::new();
        encode_frame(&mut buf, msg).expect("encodes");
        buf
    }

    #[test]
    fn every_truncation_is_an_error() {
        let f = frame(&(9, "payload".into()));
        for cut in 1..f.len() {
            let err = read_frame::<(u64, String), _>(&mut &f[..cut]).unwrap_err();
            assert!(
                matches!(err, FrameError::Truncated { .. }),
                "cut {cut}: {err}"
            );
        }
        assert!(matches!(
            read_frame::<(u64, String), _>(&mut &f[..0]),
            Err(FrameError::Closed)
        ));
    }

    #[test]
    fn every_flipped_payload_byte_fails_the_checksum() {
        let f = frame(&(9, "payload".into()));
        for i in HEADER..f.len() {
            let mut g = f.clone();
            g[i] ^= 0x10;
            let err = read_frame::<(u64, String), _>(&mut g.as_slice()).unwrap_err();
            assert!(
                matches!(err, FrameError::Checksum { .. }),
                "byte {i}: {err}"
            );
        }
    }

    #[test]
    fn a_stream_of_another_protocol_is_refused_by_its_magic() {
        let mut f = frame(&(1, "GET / HTTP/1.1".into()));
        f[0..4].copy_from_slice(b"GET ");
        let err = read_frame::<(u64, String), _>(&mut f.as_slice()).unwrap_err();
        assert!(
            matches!(err, FrameError::BadMagic { found } if &found == b"GET "),
            "{err}"
        );
    }

    #[test]
    fn a_huge_length_is_refused_before_allocating() {
        let mut f = frame(&(1, String::new()));
        f[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = read_frame::<(u64, String), _>(&mut f.as_slice()).unwrap_err();
        assert!(matches!(err, FrameError::BadLength { .. }), "{err}");
    }

    #[test]
    fn a_checksummed_payload_of_another_type_is_a_decode_error() {
        let mut buf = Vec::new();
        encode_frame(&mut buf, &[0xffu8; 3]).expect("encodes");
        let err = read_frame::<(u64, String), _>(&mut buf.as_slice()).unwrap_err();
        assert!(matches!(err, FrameError::Decode { .. }), "{err}");
    }
}
