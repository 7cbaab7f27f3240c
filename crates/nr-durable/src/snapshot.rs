//! Snapshot files: the state after the operations before a log position.
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | magic `NRDSNAP1` |
//! | 8..16 | position `p` (u64 LE): the state after operations `0 .. p` |
//! | 16..24 | payload length `n` (u64 LE) |
//! | 24..28 | CRC-32 of bytes 8..24 and the payload (u32 LE) |
//! | 28..32 | zero |
//! | 32..32+n | payload: postcard of the state |
//!
//! Written atomically ([`fsutil::write_atomic`]); named `<prefix><p, 20 digits>.snap`.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use crate::fsutil;
use crate::DurableError;

/// The first 8 bytes of a snapshot file.
pub(crate) const SNAP_MAGIC: &[u8; 8] = b"NRDSNAP1";
const SNAP_HEADER: usize = 32;
const SUFFIX: &str = ".snap";

/// The snapshots of one store: files `<prefix><position>.snap` in `dir`.
#[derive(Debug, Clone)]
pub(crate) struct Snapshots {
    dir: PathBuf,
    prefix: String,
}

fn checksum(pos: u64, len: u64, payload: &[u8]) -> u32 {
    crate::entry::crc_of(pos, len, payload)
}

impl Snapshots {
    pub(crate) fn new(dir: PathBuf, prefix: String) -> Self {
        Self { dir, prefix }
    }

    /// The file of the snapshot at `pos`.
    pub(crate) fn path(&self, pos: u64) -> PathBuf {
        self.dir.join(format!("{}{pos:020}{SUFFIX}", self.prefix))
    }

    /// The snapshots present, oldest first.
    pub(crate) fn list(&self) -> Result<Vec<(u64, PathBuf)>, DurableError> {
        fsutil::numbered(&self.dir, &self.prefix, SUFFIX)
    }

    /// Writes the snapshot at `pos` of a state encoded as `payload` atomically.
    pub(crate) fn write(&self, pos: u64, payload: &[u8]) -> Result<(), DurableError> {
        let len = payload.len() as u64;
        let mut bytes = Vec::with_capacity(SNAP_HEADER + payload.len());
        bytes.extend_from_slice(SNAP_MAGIC);
        bytes.extend_from_slice(&pos.to_le_bytes());
        bytes.extend_from_slice(&len.to_le_bytes());
        bytes.extend_from_slice(&checksum(pos, len, payload).to_le_bytes());
        bytes.extend_from_slice(&[0; 4]);
        bytes.extend_from_slice(payload);
        fsutil::write_atomic(&self.path(pos), &bytes)
    }

    /// Reads and checks the snapshot file `path`, which its name says is at `pos`.
    pub(crate) fn load<S: DeserializeOwned>(path: &Path, pos: u64) -> Result<S, DurableError> {
        let bytes = std::fs::read(path).map_err(|e| DurableError::io("read", path, e))?;
        let bad = |offset: u64, what: String| DurableError::corrupt(path, offset, what);
        if bytes.len() < SNAP_HEADER {
            return Err(bad(
                0,
                format!(
                    "a snapshot of {} bytes, shorter than its header",
                    bytes.len()
                ),
            ));
        }
        if &bytes[..8] != SNAP_MAGIC {
            return Err(bad(0, "not a snapshot (bad magic)".into()));
        }
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[i..i + 8]);
            u64::from_le_bytes(w)
        };
        let (at, len) = (word(8), word(16));
        if at != pos {
            return Err(bad(
                8,
                format!("a snapshot at position {at} under the name of {pos}"),
            ));
        }
        let payload = &bytes[SNAP_HEADER..];
        if payload.len() as u64 != len {
            return Err(bad(
                16,
                format!(
                    "a payload of {} bytes where the header says {len}",
                    payload.len()
                ),
            ));
        }
        let crc = u32::from_le_bytes([bytes[24], bytes[25], bytes[26], bytes[27]]);
        if checksum(at, len, payload) != crc || bytes[28..32] != [0; 4] {
            return Err(bad(24, "a checksum mismatch".into()));
        }
        postcard::from_bytes(payload).map_err(|source| DurableError::Decode {
            path: path.to_owned(),
            offset: SNAP_HEADER as u64,
            source,
        })
    }

    /// Removes every snapshot before `pos`.
    pub(crate) fn remove_before(&self, pos: u64) -> Result<(), DurableError> {
        for (at, path) in self.list()? {
            if at < pos {
                fsutil::remove(&path)?;
            }
        }
        Ok(())
    }
}
