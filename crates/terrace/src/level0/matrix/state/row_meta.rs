//! What the manifest records about one matrix row: a flushed memtable kept as a sorted row
//! on the persistent-memory tier by the matrix level 0 (docs/techniques/matrixkv.md).
//!
//! Owns: `RowMeta` and the tagged encoding of its sub-fields inside a level-0 record
//! (docs/formats/manifest.md, "Row fields").
//! Must not touch: the row's bytes; the matrix level 0 reads them from persistent memory.
//! Concurrency: plain values.

use crate::error::{Error, Result};
use crate::key::{self, InternalKey, SeqNo};
use crate::version::field::{put_field, put_varint_field, Decoder, SAFE_TO_IGNORE};

const ROW_NUMBER: u32 = 1;
const ROW_GROUP: u32 = 2;
const ROW_DIR_OFFSET: u32 = 3;
const ROW_DIR_LEN: u32 = 4;
const ROW_DIR_CHECKSUM: u32 = 5;
const ROW_SIZE: u32 = 6;
const ROW_SMALLEST: u32 = 7;
const ROW_LARGEST: u32 = 8;
const ROW_SMALLEST_SEQ: u32 = 9;
const ROW_LARGEST_SEQ: u32 = 10;
const ROW_NUM_ENTRIES: u32 = 11;
const ROW_NUM_DELETIONS: u32 = 12;
const ROW_NUM_RANGE_DELETIONS: u32 = 13;
const ROW_TRIM: u32 = 14;
const ROW_BELOW: u32 = 15;
const ROW_RELEASED: u32 = 16;
/// Safe to ignore: a reader that drops it only forgets which segments were merged.
const ROW_MERGE: u32 = 17 | SAFE_TO_IGNORE;

/// Metadata of one matrix row in a version. Serializable, because column compaction
/// descriptions carry the rows they read.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct RowMeta {
    /// Row number, from the database's file-number space (never reused).
    pub number: u64,
    /// The group the row belongs to: rows of older groups are frozen for column
    /// compaction; flushes append to the newest group.
    pub group: u64,
    /// Offset of the row's directory (its header and the extents of its chunks) in the
    /// persistent-memory region.
    pub dir_offset: u64,
    /// Length of the row's directory in bytes.
    pub dir_len: u64,
    /// CRC32C of the row's directory.
    pub dir_checksum: u32,
    /// Bytes the row occupies on persistent memory, directory and chunks.
    pub size: u64,
    /// Smallest internal key (a range tombstone start counts).
    pub smallest: InternalKey,
    /// Largest internal key (a range tombstone end counts, as a sentinel).
    pub largest: InternalKey,
    /// A lower bound of the row's sequence numbers (a table merge's outputs take their
    /// inputs' smallest).
    pub smallest_seq: SeqNo,
    /// An upper bound of the row's sequence numbers: a flushed row's is its memtable's
    /// largest, and a table merge's outputs take their inputs' largest, so that a version
    /// (ordering a group's rows by it, then by number) stacks them as the merge did.
    pub largest_seq: SeqNo,
    /// Point entries.
    pub num_entries: u64,
    /// Point deletions.
    pub num_deletions: u64,
    /// Range tombstones.
    pub num_range_deletions: u64,
    /// Entries whose user key sorts below this have been compacted into level 1 and are
    /// gone from the row; `None` while nothing is.
    pub trim: Option<Vec<u8>>,
    /// The number of the row this row's hints point into (the next older row when it was
    /// built); 0 if none. A reader uses the hints only while that row is still directly
    /// below.
    pub below: u64,
    /// Leading data chunks given back to the persistent-memory region after column
    /// compaction consumed their entries (all below `trim`); a restart does not claim them.
    #[serde(default)]
    pub released_chunks: u32,
    /// The table merge that wrote the row (the number of its bottom output), 0 for a
    /// flushed row: a restart rebuilds the group's segments from it, so that merged rows
    /// are not merged again.
    #[serde(default)]
    pub merge: u64,
}

impl RowMeta {
    /// The smallest user key.
    pub fn smallest_user_key(&self) -> &[u8] {
        self.smallest.user_key()
    }

    /// The largest user key.
    pub fn largest_user_key(&self) -> &[u8] {
        self.largest.user_key()
    }

    /// True if the row still holds something at or above its trim key.
    pub fn is_exhausted(&self) -> bool {
        self.trim
            .as_deref()
            .is_some_and(|t| self.largest_user_key() < t)
    }
}

/// Appends the sub-fields of `m`.
pub(super) fn encode_row_meta(buf: &mut Vec<u8>, m: &RowMeta) {
    put_varint_field(buf, ROW_NUMBER, m.number);
    put_varint_field(buf, ROW_GROUP, m.group);
    put_varint_field(buf, ROW_DIR_OFFSET, m.dir_offset);
    put_varint_field(buf, ROW_DIR_LEN, m.dir_len);
    put_field(buf, ROW_DIR_CHECKSUM, &m.dir_checksum.to_le_bytes());
    put_varint_field(buf, ROW_SIZE, m.size);
    put_field(buf, ROW_SMALLEST, &m.smallest.0);
    put_field(buf, ROW_LARGEST, &m.largest.0);
    put_varint_field(buf, ROW_SMALLEST_SEQ, m.smallest_seq);
    put_varint_field(buf, ROW_LARGEST_SEQ, m.largest_seq);
    put_varint_field(buf, ROW_NUM_ENTRIES, m.num_entries);
    put_varint_field(buf, ROW_NUM_DELETIONS, m.num_deletions);
    put_varint_field(buf, ROW_NUM_RANGE_DELETIONS, m.num_range_deletions);
    if let Some(t) = &m.trim {
        put_field(buf, ROW_TRIM, t);
    }
    if m.below != 0 {
        put_varint_field(buf, ROW_BELOW, m.below);
    }
    if m.released_chunks != 0 {
        put_varint_field(buf, ROW_RELEASED, u64::from(m.released_chunks));
    }
    if m.merge != 0 {
        put_varint_field(buf, ROW_MERGE, m.merge);
    }
}

/// Decodes the sub-fields of a new row. Number, directory location, smallest and largest
/// key are required; counters default to 0. Unknown safe-to-ignore sub-fields are skipped.
pub(super) fn decode_row_meta(mut d: Decoder<'_>) -> Result<RowMeta> {
    let start = d.offset();
    let mut m = RowMeta::default();
    let mut seen = [false; 5];
    while !d.is_empty() {
        let at = d.offset();
        let (tag, mut p) = d.field()?;
        match tag {
            ROW_NUMBER => {
                m.number = p.only_varint64("row number")?;
                seen[0] = true;
            }
            ROW_GROUP => m.group = p.only_varint64("row group")?,
            ROW_DIR_OFFSET => {
                m.dir_offset = p.only_varint64("row directory offset")?;
                seen[1] = true;
            }
            ROW_DIR_LEN => {
                m.dir_len = row_bytes(p.only_varint64("row directory length")?, d.file(), at)?;
                seen[2] = true;
            }
            ROW_DIR_CHECKSUM => m.dir_checksum = p.only_fixed32("row directory checksum")?,
            ROW_SIZE => m.size = row_bytes(p.only_varint64("row size")?, d.file(), at)?,
            ROW_SMALLEST | ROW_LARGEST => {
                let key_at = p.offset();
                let k = p.rest();
                key::parse(k, d.file(), key_at)?;
                if tag == ROW_SMALLEST {
                    m.smallest = InternalKey(k.to_vec());
                    seen[3] = true;
                } else {
                    m.largest = InternalKey(k.to_vec());
                    seen[4] = true;
                }
            }
            ROW_SMALLEST_SEQ => m.smallest_seq = p.only_varint64("row smallest sequence")?,
            ROW_LARGEST_SEQ => m.largest_seq = p.only_varint64("row largest sequence")?,
            ROW_NUM_ENTRIES => m.num_entries = p.only_varint64("row entry count")?,
            ROW_NUM_DELETIONS => m.num_deletions = p.only_varint64("row deletion count")?,
            ROW_NUM_RANGE_DELETIONS => {
                m.num_range_deletions = p.only_varint64("row range deletion count")?;
            }
            ROW_TRIM => m.trim = Some(p.rest().to_vec()),
            ROW_BELOW => m.below = p.only_varint64("row below")?,
            ROW_RELEASED => {
                let n = p.only_varint64("row released chunks")?;
                m.released_chunks = u32::try_from(n).map_err(|_| {
                    Error::corruption(d.file(), at, "row released chunk count out of range")
                })?;
            }
            ROW_MERGE => m.merge = p.only_varint64("row merge")?,
            t if t & SAFE_TO_IGNORE != 0 => {}
            t => return Err(p.unknown_tag(t, at, "row field")),
        }
    }
    if seen.iter().any(|s| !s) {
        return Err(Error::corruption(
            d.file(),
            start,
            "new row lacks its number, directory location, smallest or largest key",
        ));
    }
    Ok(m)
}

/// No row, directory or region is this large (256 TiB); a larger figure in a manifest is
/// corruption, and the bound keeps sums of row sizes far from overflowing.
pub const MAX_ROW_BYTES: u64 = 1 << 48;

/// `n` if it is a plausible byte count of a row, else a corruption error at `at`.
pub(crate) fn row_bytes(n: u64, file: &std::path::Path, at: u64) -> Result<u64> {
    if n > MAX_ROW_BYTES {
        return Err(Error::corruption(
            file,
            at,
            format!("row byte count {n} out of range"),
        ));
    }
    Ok(n)
}
