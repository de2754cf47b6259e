//! The matrix level 0's durable state: the rows a version holds, and the level-0 records
//! of the edits that change them (docs/formats/manifest.md, "Level-0 records").
//!
//! Owns: [`MatrixState`] (the `Level0State` of a matrix level 0: its rows, newest first),
//! [`RowMeta`], [`RowEdit`] (one edit's row changes) and their records' tags and encoding.
//! Must not touch: the rows' bytes on persistent memory, table files, or the other fields
//! of an edit; the version module applies the records through `Level0State`.
//! Concurrency: plain immutable values shared by `Arc`.

mod row_meta;

use std::any::Any;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use crate::coding::put_varint64;
use crate::error::{Error, Result};
use crate::key;
use crate::version::field::{Decoder, SAFE_TO_IGNORE};
use crate::version::{Level0Record, Level0State, Version};

pub(crate) use self::row_meta::row_bytes;
use self::row_meta::{decode_row_meta, encode_row_meta};
pub use self::row_meta::{RowMeta, MAX_ROW_BYTES};

/// What errors about the records name as their file (replay names the manifest).
const RECORDS: &str = "matrix level-0 record";

// The matrix level 0's record tags, in the edit's level-0 range. Never reused.
const TAG_NEW_ROW: u32 = 7;
const TAG_DELETED_ROW: u32 = 8;
const TAG_TRIMMED_ROW: u32 = 9;
const TAG_RELEASED_ROW: u32 = 10;

/// The rows of a matrix level 0 in one version, newest first: newest group first, then
/// largest `largest_seq` first, ties by number descending.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MatrixState {
    rows: Vec<Arc<RowMeta>>,
}

/// The rows of `version`'s matrix level 0, newest first; empty if the version's level 0
/// is of another kind (the matrix level 0 checks the kind when it recovers).
pub fn rows_of(version: &Version) -> &[Arc<RowMeta>] {
    version
        .level0()
        .as_any()
        .downcast_ref::<MatrixState>()
        .map_or(&[], |s| s.rows.as_slice())
}

/// True if `version`'s level 0 is a matrix level 0's.
pub(crate) fn is_matrix_state(version: &Version) -> bool {
    version.level0().as_any().is::<MatrixState>()
}

/// One edit's changes to the rows. Applied in this order: deletions, trims, releases,
/// additions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RowEdit {
    /// Rows removed (wholly compacted or merged away), by number.
    pub deleted: Vec<u64>,
    /// Rows added.
    pub new: Vec<RowMeta>,
    /// Rows whose entries below a user key were compacted away: `(number, key)`.
    pub trimmed: Vec<(u64, Vec<u8>)>,
    /// Rows that gave leading data chunks back to the region:
    /// `(number, released chunks in all, bytes the row still occupies)`.
    pub released: Vec<(u64, u32, u64)>,
}

impl RowEdit {
    /// True if the edit changes nothing.
    pub fn is_empty(&self) -> bool {
        self.deleted.is_empty()
            && self.new.is_empty()
            && self.trimmed.is_empty()
            && self.released.is_empty()
    }

    /// The edit as level-0 records: deletions, additions, trims, releases (the order in
    /// which earlier releases wrote the same fields).
    pub fn into_records(self) -> Vec<Level0Record> {
        let mut out = Vec::new();
        for number in self.deleted {
            let mut payload = Vec::with_capacity(10);
            put_varint64(&mut payload, number);
            out.push(Level0Record {
                tag: TAG_DELETED_ROW,
                payload,
            });
        }
        for row in &self.new {
            let mut payload = Vec::with_capacity(128);
            encode_row_meta(&mut payload, row);
            out.push(Level0Record {
                tag: TAG_NEW_ROW,
                payload,
            });
        }
        for (number, key) in self.trimmed {
            let mut payload = Vec::with_capacity(10 + key.len());
            put_varint64(&mut payload, number);
            payload.extend_from_slice(&key);
            out.push(Level0Record {
                tag: TAG_TRIMMED_ROW,
                payload,
            });
        }
        for (number, chunks, size) in self.released {
            let mut payload = Vec::with_capacity(24);
            put_varint64(&mut payload, number);
            put_varint64(&mut payload, u64::from(chunks));
            put_varint64(&mut payload, size);
            out.push(Level0Record {
                tag: TAG_RELEASED_ROW,
                payload,
            });
        }
        out
    }

    /// Decodes the row changes of one edit's level-0 records; records with a tag this
    /// release does not know are skipped if they may be.
    ///
    /// # Errors
    /// `Corruption` for a malformed record, `Unsupported` for an unknown tag that may not
    /// be skipped.
    pub fn from_records(records: &[Level0Record]) -> Result<RowEdit> {
        let mut edit = RowEdit::default();
        for r in records {
            decode_record(r, &mut edit)?;
        }
        Ok(edit)
    }
}

fn decode_record(r: &Level0Record, edit: &mut RowEdit) -> Result<()> {
    let file = Path::new(RECORDS);
    let mut p = Decoder::new(&r.payload, file, 0);
    match r.tag {
        TAG_DELETED_ROW => edit.deleted.push(p.only_varint64("deleted row")?),
        TAG_NEW_ROW => edit.new.push(decode_row_meta(p)?),
        TAG_TRIMMED_ROW => {
            let number = p.varint64()?;
            edit.trimmed.push((number, p.rest().to_vec()));
        }
        TAG_RELEASED_ROW => {
            let number = p.varint64()?;
            let chunks = p.varint32()?;
            let size = row_bytes(p.varint64()?, file, 0)?;
            p.finish("released row")?;
            edit.released.push((number, chunks, size));
        }
        t if t & SAFE_TO_IGNORE != 0 => {}
        t => return Err(p.unknown_tag(t, 0, "matrix level-0 record")),
    }
    Ok(())
}

impl MatrixState {
    /// The rows, newest first.
    pub fn rows(&self) -> &[Arc<RowMeta>] {
        &self.rows
    }

    /// The rows after `edit`: deletions, then trims, then releases, then additions. A row
    /// number must not be live already.
    fn apply_rows(&self, edit: &RowEdit) -> std::result::Result<MatrixState, String> {
        let mut rows = self.rows.clone();
        for &number in &edit.deleted {
            let Some(pos) = rows.iter().position(|r| r.number == number) else {
                return Err(format!("deleted row {number} is not live"));
            };
            rows.remove(pos);
        }
        for (number, trim) in &edit.trimmed {
            let Some(row) = rows.iter_mut().find(|r| r.number == *number) else {
                return Err(format!("trimmed row {number} is not live"));
            };
            if row.trim.as_ref().is_some_and(|t| t > trim) {
                return Err(format!("row {number} trimmed backwards"));
            }
            let mut m = row.as_ref().clone();
            m.trim = Some(trim.clone());
            *row = Arc::new(m);
        }
        for &(number, chunks, size) in &edit.released {
            let Some(row) = rows.iter_mut().find(|r| r.number == number) else {
                return Err(format!("released row {number} is not live"));
            };
            if chunks < row.released_chunks || row.trim.is_none() {
                return Err(format!(
                    "row {number} releases chunks backwards or without a trim"
                ));
            }
            let mut m = row.as_ref().clone();
            m.released_chunks = chunks;
            m.size = size;
            *row = Arc::new(m);
        }
        let mut live: HashSet<u64> = rows.iter().map(|r| r.number).collect();
        for meta in &edit.new {
            if !live.insert(meta.number) {
                return Err(format!("row {} added twice", meta.number));
            }
            if key::compare(meta.smallest.encoded(), meta.largest.encoded())
                == std::cmp::Ordering::Greater
            {
                return Err(format!(
                    "row {} has smallest key {:?} above largest {:?}",
                    meta.number, meta.smallest, meta.largest
                ));
            }
            rows.push(Arc::new(meta.clone()));
        }
        rows.sort_by(|a, b| {
            b.group
                .cmp(&a.group)
                .then(b.largest_seq.cmp(&a.largest_seq))
                .then(b.number.cmp(&a.number))
        });
        Ok(MatrixState { rows })
    }
}

impl Level0State for MatrixState {
    fn apply(&self, records: &[Level0Record]) -> Result<Arc<dyn Level0State>> {
        let edit = RowEdit::from_records(records)?;
        let next = self
            .apply_rows(&edit)
            .map_err(|reason| Error::corruption(Path::new(RECORDS), 0, reason))?;
        Ok(Arc::new(next))
    }

    fn records(&self) -> Vec<Level0Record> {
        RowEdit {
            new: self.rows.iter().map(|r| (**r).clone()).collect(),
            ..RowEdit::default()
        }
        .into_records()
    }

    fn numbers(&self) -> Vec<u64> {
        self.rows.iter().map(|r| r.number).collect()
    }

    fn len(&self) -> usize {
        self.rows.len()
    }

    fn bytes(&self) -> u64 {
        // Saturating: row sizes come from the manifest, which may be corrupt.
        self.rows.iter().fold(0u64, |s, r| s.saturating_add(r.size))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests;
