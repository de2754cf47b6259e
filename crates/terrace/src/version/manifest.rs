//! The MANIFEST file's record framing and the CURRENT file (docs/formats/manifest.md).
//!
//! Owns: `fixed32 length | fixed32 crc32c(payload) | payload` records, splitting a manifest
//! into records, and reading and writing CURRENT.
//! Must not touch: what a record means; `set` encodes and applies edits.
//! Concurrency: a `ManifestWriter` has one owner (the version set, under the database mutex).

use std::path::{Path, PathBuf};

use super::file_name::{manifest_file_name, parse_file_name, FileKind, CURRENT_FILE_NAME};
use crate::error::{Error, Result};
use crate::storage::{IoClass, Storage, WritableFile};

/// Bytes before each payload: length and checksum.
pub(super) const HEADER_LEN: usize = 8;

/// Appends framed records to one manifest file.
pub(super) struct ManifestWriter {
    pub(super) path: PathBuf,
    file: Box<dyn WritableFile>,
}

impl ManifestWriter {
    /// Creates (or truncates) `MANIFEST-<number>` in `dir`.
    pub(super) fn create(storage: &dyn Storage, dir: &Path, number: u64) -> Result<Self> {
        let path = dir.join(manifest_file_name(number));
        let file = storage.create(&path, IoClass::Manifest)?;
        Ok(ManifestWriter { path, file })
    }

    /// Appends one record and syncs it.
    pub(super) fn append_synced(&mut self, payload: &[u8]) -> Result<()> {
        let len = u32::try_from(payload.len()).map_err(|_| {
            Error::InvalidArgument(format!(
                "manifest record of {} bytes exceeds 4 GiB",
                payload.len()
            ))
        })?;
        let mut rec = Vec::with_capacity(HEADER_LEN + payload.len());
        rec.extend_from_slice(&len.to_le_bytes());
        rec.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
        rec.extend_from_slice(payload);
        self.file.append(&rec)?;
        self.file.sync()
    }

    /// Bytes written so far.
    pub(super) fn len(&self) -> u64 {
        self.file.len()
    }
}

/// One record of a manifest: the payload and the file offset where the payload starts.
pub(super) struct Record<'a> {
    pub(super) payload: &'a [u8],
    pub(super) payload_offset: u64,
}

/// What splitting a manifest found.
pub(super) struct Records<'a> {
    pub(super) records: Vec<Record<'a>>,
    /// Bytes of an incomplete final record that were dropped (0 if the file ended cleanly).
    pub(super) dropped_tail_bytes: u64,
}

/// Splits a whole manifest into records. A final record cut off by the end of the file
/// (its header or payload incomplete) is dropped: it was never acknowledged. Any record
/// whose checksum does not match is `Corruption`.
pub(super) fn split_records<'a>(data: &'a [u8], file: &Path) -> Result<Records<'a>> {
    let mut records = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        let at = pos as u64;
        let Some(header) = data.get(pos..pos + HEADER_LEN) else {
            break;
        };
        let (len_bytes, crc_bytes) = header.split_at(4);
        let len = u32::from_le_bytes(fixed4(len_bytes, file, at)?) as usize;
        let crc = u32::from_le_bytes(fixed4(crc_bytes, file, at)?);
        let start = pos + HEADER_LEN;
        let Some(payload) = start.checked_add(len).and_then(|end| data.get(start..end)) else {
            break;
        };
        if crc32c::crc32c(payload) != crc {
            return Err(Error::corruption(
                file,
                at,
                "manifest record checksum mismatch",
            ));
        }
        records.push(Record {
            payload,
            payload_offset: start as u64,
        });
        pos = start + len;
    }
    Ok(Records {
        records,
        dropped_tail_bytes: (data.len() - pos.min(data.len())) as u64,
    })
}

fn fixed4(b: &[u8], file: &Path, at: u64) -> Result<[u8; 4]> {
    <[u8; 4]>::try_from(b).map_err(|_| Error::corruption(file, at, "short record header"))
}

/// Reads CURRENT in `dir` and returns the live manifest's number.
pub(super) fn read_current(storage: &dyn Storage, dir: &Path) -> Result<u64> {
    let path = dir.join(CURRENT_FILE_NAME);
    let data = storage.read_all(&path, IoClass::Manifest)?;
    let bad = |reason: &str| Error::corruption(&path, 0, reason.to_string());
    let text = std::str::from_utf8(&data).map_err(|_| bad("CURRENT is not text"))?;
    let name = text
        .strip_suffix('\n')
        .ok_or_else(|| bad("CURRENT does not end with a newline"))?;
    match parse_file_name(name) {
        Some((FileKind::Manifest, n)) => Ok(n),
        _ => Err(bad("CURRENT does not name a manifest")),
    }
}

/// Points CURRENT in `dir` at manifest `number`, crash-safely.
pub(super) fn write_current(storage: &dyn Storage, dir: &Path, number: u64) -> Result<()> {
    let body = format!("{}\n", manifest_file_name(number));
    storage.write_atomic(
        &dir.join(CURRENT_FILE_NAME),
        body.as_bytes(),
        IoClass::Manifest,
    )
}
