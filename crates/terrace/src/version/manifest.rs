//! The MANIFEST file's framing and the CURRENT file (docs/formats/manifest.md).
//!
//! Owns: the file header (`"TMNF" | fixed32 format version`), the record framing
//! `fixed32 length | fixed32 crc32c(payload) | fixed32 crc32c(length, payload crc) | payload`,
//! splitting a manifest into records, and reading and writing CURRENT.
//! Must not touch: what a record means; `set` encodes edits and `replay` applies them.
//! Concurrency: a `ManifestWriter` has one owner (the version set, under the database mutex).
//! Splitting is a pure function of the bytes read.

use std::path::{Path, PathBuf};

use super::file_name::{manifest_file_name, parse_file_name, FileKind, CURRENT_FILE_NAME};
use crate::coding::{get_fixed32, put_fixed32};
use crate::error::{Error, Result};
use crate::storage::{IoClass, Storage, WritableFile};

/// The first four bytes of every manifest.
const MAGIC: [u8; 4] = *b"TMNF";
/// The framing this release writes and reads. Version 1 (no file header, 8-byte record
/// header) was never released and is not read.
pub(super) const FORMAT_VERSION: u32 = 2;
/// Bytes of the file header: magic and format version.
pub(super) const FILE_HEADER_LEN: usize = 8;
/// Bytes before each payload: length, payload checksum, header checksum.
pub(super) const HEADER_LEN: usize = 12;

/// Appends framed records to one manifest file.
pub(super) struct ManifestWriter {
    pub(super) path: PathBuf,
    file: Box<dyn WritableFile>,
}

impl ManifestWriter {
    /// Creates (or truncates) `MANIFEST-<number>` in `dir` and writes the file header; it
    /// becomes durable with the first record.
    pub(super) fn create(storage: &dyn Storage, dir: &Path, number: u64) -> Result<Self> {
        let path = dir.join(manifest_file_name(number));
        let mut file = storage.create(&path, IoClass::Manifest)?;
        let mut header = Vec::with_capacity(FILE_HEADER_LEN);
        header.extend_from_slice(&MAGIC);
        put_fixed32(&mut header, FORMAT_VERSION);
        file.append(&header)?;
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
        put_fixed32(&mut rec, len);
        put_fixed32(&mut rec, crc32c::crc32c(payload));
        let header_crc = crc32c::crc32c(&rec);
        put_fixed32(&mut rec, header_crc);
        rec.extend_from_slice(payload);
        self.file.append(&rec)?;
        self.file.sync()
    }

    /// Bytes written so far.
    pub(super) fn len(&self) -> u64 {
        self.file.len()
    }
}

/// One record of a manifest: the payload and where it lies in the file.
pub(super) struct Record<'a> {
    pub(super) payload: &'a [u8],
    /// File offset of the record's header.
    pub(super) record_offset: u64,
    /// File offset of the payload's first byte.
    pub(super) payload_offset: u64,
}

/// What splitting a manifest found.
pub(super) struct Records<'a> {
    pub(super) records: Vec<Record<'a>>,
    /// Bytes of an incomplete final record that were dropped (0 if the file ended cleanly).
    pub(super) dropped_tail_bytes: u64,
}

/// Splits a whole manifest into records.
///
/// A torn final write (never acknowledged) is dropped: fewer than `HEADER_LEN` bytes after
/// the last record, a header that checks out but whose payload runs past the end, or a
/// damaged final record that holds a lost page. Every record is synced before the next is
/// written, so a crash can damage only the last one, and what it leaves is pages of it read
/// back as zeros, in any mix with written ones (what some file systems leave after a
/// crash). Any other damage is `Corruption`: a damaged record followed by a whole one, or a
/// damaged final record with no zeroed page (a flipped bit is not a torn write). Because
/// the header carries its own checksum, a damaged length cannot pass for a torn tail.
pub(super) fn split_records<'a>(data: &'a [u8], file: &Path) -> Result<Records<'a>> {
    check_file_header(data, file)?;
    let mut records = Vec::new();
    let mut pos = FILE_HEADER_LEN;
    while pos < data.len() {
        let at = pos as u64;
        let Some(header) = data.get(pos..pos + HEADER_LEN) else {
            break; // torn header
        };
        let len = fixed32(header, 0, file, at)? as usize;
        let crc = fixed32(header, 4, file, at)?;
        let header_crc = fixed32(header, 8, file, at)?;
        if crc32c::crc32c(header.get(..8).unwrap_or_default()) != header_crc {
            if torn_final_record(data, pos) {
                break;
            }
            return Err(Error::corruption(
                file,
                at,
                "manifest record header checksum mismatch",
            ));
        }
        let start = pos + HEADER_LEN;
        let Some(payload) = start.checked_add(len).and_then(|end| data.get(start..end)) else {
            break; // torn payload
        };
        if crc32c::crc32c(payload) != crc {
            if torn_final_record(data, pos) {
                break;
            }
            return Err(Error::corruption(
                file,
                at,
                "manifest record checksum mismatch",
            ));
        }
        records.push(Record {
            payload,
            record_offset: at,
            payload_offset: start as u64,
        });
        pos = start + len;
    }
    Ok(Records {
        records,
        dropped_tail_bytes: (data.len() - pos.min(data.len())) as u64,
    })
}

/// The page size a crash loses unsynced data in.
const PAGE: usize = 4096;

/// Whether the damaged record at `pos` is a torn final write: no whole record follows it,
/// and a page it lies on came back as zeros (the whole span `pos..` if it is all on one
/// page; otherwise its piece of some page, the first piece at any length, a later one of
/// at least 8 bytes so that a few zero bytes ending a payload cannot pass for a lost page).
fn torn_final_record(data: &[u8], pos: usize) -> bool {
    if whole_record_after(data, pos) {
        return false;
    }
    let mut start = pos;
    while start < data.len() {
        let end = ((start / PAGE + 1) * PAGE).min(data.len());
        let piece = data.get(start..end).unwrap_or_default();
        let counts = start == pos || piece.len() >= 8;
        if counts && piece.iter().all(|&b| b == 0) {
            return true;
        }
        start = end;
    }
    false
}

/// Whether a record whose header and payload both check out starts anywhere after `pos`:
/// the test that tells damage inside a manifest from a torn final write. Only called on
/// damage, so the byte-by-byte search costs nothing on a clean open.
fn whole_record_after(data: &[u8], pos: usize) -> bool {
    (pos + 1..data.len()).any(|p| {
        let Some(header) = data.get(p..p + HEADER_LEN) else {
            return false;
        };
        let (Some(len), Some(crc), Some(header_crc)) = (
            get_fixed32(header, 0),
            get_fixed32(header, 4),
            get_fixed32(header, 8),
        ) else {
            return false;
        };
        if crc32c::crc32c(header.get(..8).unwrap_or_default()) != header_crc {
            return false;
        }
        let start = p + HEADER_LEN;
        start
            .checked_add(len as usize)
            .and_then(|end| data.get(start..end))
            .is_some_and(|payload| crc32c::crc32c(payload) == crc)
    })
}

/// Checks the magic and the format version.
fn check_file_header(data: &[u8], file: &Path) -> Result<()> {
    if data.len() < FILE_HEADER_LEN {
        return Err(Error::corruption(
            file,
            0,
            "manifest is shorter than its file header",
        ));
    }
    if data.get(..4) != Some(&MAGIC[..]) {
        return Err(Error::corruption(file, 0, "not a manifest (bad magic)"));
    }
    let version = fixed32(data, 4, file, 4)?;
    if version != FORMAT_VERSION {
        return Err(Error::Unsupported(format!(
            "{}: manifest format version {version}; this release reads version {FORMAT_VERSION}",
            file.display()
        )));
    }
    Ok(())
}

/// The fixed32 of `b` at `i`; a header that short is corruption at `at`.
fn fixed32(b: &[u8], i: usize, file: &Path, at: u64) -> Result<u32> {
    get_fixed32(b, i).ok_or_else(|| Error::corruption(file, at, "short header"))
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
