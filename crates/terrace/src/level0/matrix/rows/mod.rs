//! The matrix level 0's data structure (MatrixKV; docs/techniques/matrixkv.md): level 0
//! as stacked sorted rows on persistent memory, one per flushed memtable, linked by
//! per-entry pointers into the row below so a lookup narrows its search row by row.
//!
//! Owns: the row format (docs/formats/matrix-row.md; `format`), building rows and their
//! `next` pointers (`build`), reading and validating a row (`row`), groups of stacked rows
//! with trims (`group`), the cross-row point lookup (`search`), segment bloom filters
//! (`bloom`) and the row iterator (`iter`), with their parameters ([`MatrixParams`]).
//! Must not touch: persistent memory, the manifest, the write path, column compaction or
//! the table merge (`matrix::table_merge` merges rows of a group).
//! Rows are built in DRAM as byte chunks that the caller copies into persistent extents,
//! and are read through any `AsRef<[u8]>` chunk type. Nothing here implements `Level0`.
//! Concurrency: built rows, readers and groups are immutable values; a group change
//! (a row on top, a trim, a merge) returns a new group sharing the rows by `Arc`, so
//! readers keep the group they started with. Builders and iterators have one owner.
//!
//! A row is a set of *data chunks* (`key ++ value` per entry, in key order, no entry split
//! between chunks), *metadata chunks* (one fixed-size entry per point entry: where it
//! lives, its lengths, its `next` pointer and an 8-byte key prefix) and a *header*
//! (counts, per-chunk CRC32C, key and sequence bounds, range tombstones, its own CRC).

mod bloom;
mod build;
mod format;
mod group;
mod iter;
mod row;
mod search;

pub(in crate::level0::matrix) use bloom::row_hashes;
pub use bloom::SegmentFilter;
pub use build::{build_row, relink, Below, BuiltRow, RelinkedMeta, RowBuilder, MIN_CHUNK_BYTES};
pub use format::{ChunkInfo, RowHeader, RowLink, FORMAT_VERSION, META_ENTRY_BYTES};
pub(in crate::level0::matrix) use group::GroupRow;
pub use group::MatrixGroup;
pub use iter::RowIterator;
pub use row::{ReadMeter, RowReader};
pub use search::{PointRead, RowEntry, SearchStats};

use crate::error::{Error, Result};

/// The matrix container's tuning, with the thesis's defaults where it gives them.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixParams {
    /// Rows per segment, the unit of one bloom filter (thesis: 50).
    pub segment_rows: usize,
    /// Segments merged together by one table merge (thesis: 5).
    pub merge_segments: usize,
    /// A merge output row is cut at this multiple of the inputs' average row size
    /// (thesis: 1.5).
    pub merge_output_ratio: f64,
    /// Only segments within this bottom fraction of all segments are merged; the newer
    /// ones are hot (thesis: 0.7).
    pub merge_bottom_fraction: f64,
    /// Largest metadata or data chunk, in bytes (an entry larger than this gets a data
    /// chunk of its own). Default 256 KiB.
    pub chunk_bytes: usize,
    /// Bloom filter bits per distinct user key of a segment; 0 disables the filters
    /// (the thesis does not give a value; 10 as for table files).
    pub bloom_bits_per_key: usize,
}

impl Default for MatrixParams {
    fn default() -> Self {
        MatrixParams {
            segment_rows: 50,
            merge_segments: 5,
            merge_output_ratio: 1.5,
            merge_bottom_fraction: 0.7,
            chunk_bytes: 256 << 10,
            bloom_bits_per_key: 10,
        }
    }
}

impl MatrixParams {
    /// Checks every field's range.
    ///
    /// # Errors
    /// `InvalidArgument` naming the first field out of range.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::InvalidArgument(format!("matrix params: {m}")));
        if self.segment_rows == 0 {
            return bad("segment_rows must be at least 1");
        }
        if self.merge_segments == 0 {
            return bad("merge_segments must be at least 1");
        }
        if !(self.merge_output_ratio.is_finite() && self.merge_output_ratio > 0.0) {
            return bad("merge_output_ratio must be positive");
        }
        if !(0.0..=1.0).contains(&self.merge_bottom_fraction) {
            return bad("merge_bottom_fraction must be in [0, 1]");
        }
        if !(MIN_CHUNK_BYTES..=u32::MAX as usize).contains(&self.chunk_bytes) {
            return bad("chunk_bytes out of range");
        }
        if self.bloom_bits_per_key > 64 {
            return bad("bloom_bits_per_key must be at most 64");
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests;
