//! The matrix level 0 (MatrixKV; docs/techniques/matrixkv.md): level 0 kept as stacked
//! sorted rows on the persistent-memory tier, compacted into the base level one key-range
//! column at a time, with a table merge that folds old rows together in the background.
//!
//! Owns, one module per concept:
//! - `rows`: the data structure (the row format, building, reading, groups of stacked
//!   rows, the cross-row search, segment filters);
//! - `container`: [`MatrixLevel0`], the `Level0` and `SelfCompacting` implementation
//!   that keeps rows on a persistent-memory region;
//! - `column_cut`: where each column of a frozen group ends;
//! - `table_merge`: merging a run of old rows into fewer key-disjoint rows, and running
//!   it in the background;
//! - `state`: what versions and the manifest record of the rows ([`RowMeta`],
//!   [`MatrixState`], [`RowEdit`]).
//!
//! Must not touch: the write path, the manifest writer or the compaction executor; the
//! rest of the engine sees this level 0 only through the `level0` traits.

pub mod column_cut;
mod container;
pub mod rows;
mod state;
mod table_merge;

#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use container::decode_dir;
#[cfg(test)]
pub(crate) use container::encode_dir;
pub use container::{MatrixLevel0, MatrixOptions, DEFAULT_REGION_FILE};
pub use rows::{
    build_row, relink, Below, BuiltRow, ChunkInfo, MatrixGroup, MatrixParams, PointRead, ReadMeter,
    RelinkedMeta, RowBuilder, RowEntry, RowHeader, RowIterator, RowLink, RowReader, SearchStats,
    SegmentFilter, FORMAT_VERSION, META_ENTRY_BYTES, MIN_CHUNK_BYTES,
};
pub use state::{rows_of, MatrixState, RowEdit, RowMeta, MAX_ROW_BYTES};
pub use table_merge::{MergeOutput, MergePlan};
