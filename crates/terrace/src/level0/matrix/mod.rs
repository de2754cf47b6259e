//! The matrix container's data structure (MatrixKV; docs/techniques/matrixkv.md): level 0
//! as stacked sorted rows on persistent memory, one per flushed memtable, linked by
//! per-entry pointers into the row below so a lookup narrows its search row by row.
//!
//! Owns: the row format (docs/formats/matrix-row.md; `format`), building rows and their
//! `next` pointers (`build`), and reading and validating a row (`row`).
//! Must not touch: persistent memory, the manifest, the write path or column compaction.
//! Rows are built in DRAM as byte chunks that the caller copies into persistent extents,
//! and are read through any `AsRef<[u8]>` chunk type. Nothing here implements `Level0`.
//! Concurrency: built rows and readers are immutable values; builders have one owner.
//!
//! A row is a set of *data chunks* (`key ++ value` per entry, in key order, no entry split
//! between chunks), *metadata chunks* (one fixed-size entry per point entry: where it
//! lives, its lengths, its `next` pointer and an 8-byte key prefix) and a *header*
//! (counts, per-chunk CRC32C, key and sequence bounds, range tombstones, its own CRC).

mod build;
mod format;
mod row;

pub use build::{build_row, relink, Below, BuiltRow, RelinkedMeta, RowBuilder, MIN_CHUNK_BYTES};
pub use format::{ChunkInfo, RowHeader, RowLink, FORMAT_VERSION, META_ENTRY_BYTES};
pub use row::RowReader;

#[cfg(test)]
mod tests;
