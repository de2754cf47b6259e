//! Replaying a manifest: reading CURRENT and the manifest it names, and folding its records
//! into a version and the counters. The one replay used both by `VersionSet::recover` and
//! by the read-only `inspect_database`.
//!
//! Owns: the order records are applied in, what each record does to the counters, and
//! what a bad record means (docs/formats/manifest.md, "Reading and bad records").
//! Must not touch: anything on disk; it only reads CURRENT and one manifest, and never takes
//! the LOCK.
//! Concurrency: a pure read. Safe while another process writes the database: a record being
//! appended reads as a torn tail; a manifest deleted by a rollover fails with an I/O error.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::file_name::manifest_file_name;
use super::level0_state::Level0State;
use super::manifest::{read_current, split_records};
use super::version::ApplyError;
use super::{Version, VersionEdit};
use crate::error::{Error, Result};
use crate::key::{InternalKey, SeqNo};
use crate::storage::{IoClass, Storage};

/// The state a manifest describes.
#[derive(Debug)]
pub(crate) struct Replayed {
    /// The number of the manifest CURRENT names.
    pub(crate) manifest_number: u64,
    /// The version after the last complete record.
    pub(crate) version: Version,
    /// The next file number the manifest recorded (not yet raised past live files).
    pub(crate) next_file_number: u64,
    pub(crate) last_sequence: SeqNo,
    pub(crate) log_number: u64,
    /// `VersionEdit::external_flushed`, the largest recorded (0: none).
    pub(crate) external_flushed: SeqNo,
    /// One slot per level.
    pub(crate) compact_pointers: Vec<Option<InternalKey>>,
}

/// Reads CURRENT in `dir` and replays the manifest it names into a version of
/// `num_levels` levels whose level 0 starts from the empty state `level0`. Writes nothing. An incomplete final record is dropped with a warning.
///
/// # Errors
/// `Corruption { file, offset }` for a damaged CURRENT or record, a record that contradicts
/// the ones before it, or a manifest without a complete record or next file number;
/// `Unsupported` for another manifest format version or a field that may not be skipped;
/// `InvalidArgument` if the manifest names a level at or above `num_levels`; I/O errors.
pub(crate) fn replay_manifest(
    storage: &dyn Storage,
    dir: &Path,
    num_levels: usize,
    level0: Arc<dyn Level0State>,
) -> Result<Replayed> {
    let number = read_current(storage, dir)?;
    let path: PathBuf = dir.join(manifest_file_name(number));
    let data = storage.read_all(&path, IoClass::Manifest)?;
    let split = split_records(&data, &path)?;
    if split.records.is_empty() {
        return Err(Error::corruption(
            &path,
            0,
            "manifest holds no complete record",
        ));
    }
    let mut out = Replayed {
        manifest_number: number,
        version: Version::with_level0(num_levels, level0),
        next_file_number: 0,
        last_sequence: 0,
        log_number: 0,
        external_flushed: 0,
        compact_pointers: vec![None; num_levels],
    };
    let mut next_file_number = None;
    for rec in &split.records {
        let edit = VersionEdit::decode(rec.payload, &path, rec.payload_offset)?;
        out.version = out.version.apply(&edit).map_err(|e| match e {
            ApplyError::LevelOutOfRange(r) => {
                Error::InvalidArgument(format!("{}: {r}", path.display()))
            }
            ApplyError::Invalid(r) => Error::corruption(&path, rec.record_offset, r),
            ApplyError::Level0(Error::InvalidArgument(r)) => {
                Error::InvalidArgument(format!("{}: {r}", path.display()))
            }
            ApplyError::Level0(Error::Unsupported(r)) => {
                Error::Unsupported(format!("{}: {r}", path.display()))
            }
            ApplyError::Level0(Error::Corruption { reason, .. }) => {
                Error::corruption(&path, rec.record_offset, reason)
            }
            ApplyError::Level0(e) => Error::corruption(&path, rec.record_offset, e.to_string()),
        })?;
        if let Some(n) = edit.log_number {
            out.log_number = n;
        }
        if let Some(s) = edit.last_sequence {
            out.last_sequence = s;
        }
        if let Some(s) = edit.external_flushed {
            out.external_flushed = out.external_flushed.max(s);
        }
        for (level, k) in &edit.compact_pointers {
            if let Some(slot) = usize::try_from(*level)
                .ok()
                .and_then(|l| out.compact_pointers.get_mut(l))
            {
                *slot = Some(k.clone());
            }
        }
        next_file_number = edit.next_file_number.or(next_file_number);
    }
    let Some(next) = next_file_number else {
        return Err(Error::corruption(
            &path,
            0,
            "manifest never records the next file number",
        ));
    };
    out.next_file_number = next;
    if split.dropped_tail_bytes > 0 {
        tracing::warn!(
            manifest = %path.display(),
            bytes = split.dropped_tail_bytes,
            "dropped an incomplete final manifest record"
        );
    }
    Ok(out)
}
