//! Sorted string tables: immutable files of internal-key-ordered entries, with a bloom
//! filter, range tombstones and properties.
//!
//! Owns: the table file format (docs/formats/sst.md), [`SstBuilder`], [`SstReader`],
//! [`SstIterator`], the [`BlockCache`] and the [`TableCache`].
//! Must not touch: the manifest, the memtable or the WAL; tables know nothing of levels.
//! Concurrency: a builder has one owner; readers, the block cache and the table cache are
//! `Send + Sync` and shared through `Arc`; an iterator has one owner.
//!
//! Files: `format` (varints, handles, footer), `compress` (trailer, compression),
//! `block_builder` / `block_iter` (the block format), `bloom`, `properties`, `builder`,
//! `reader`, `iterator`, `block_cache`, `table_cache`.

pub(crate) mod block_builder;
mod block_cache;
pub(crate) mod block_iter;
pub(crate) mod bloom;
mod builder;
pub(crate) mod compress;
pub(crate) mod format;
mod index_search;
mod iterator;
mod properties;
mod reader;
mod table_cache;

pub use block_cache::BlockCache;
/// The hash a table's filter is asked about a user key with: compute it once and probe
/// every table with it ([`SstReader`]'s `may_contain_hash`).
pub(crate) use bloom::key_hash as filter_hash;
pub use builder::{SstBuilder, SstInfo};
pub use iterator::SstIterator;
pub use properties::Properties;
pub use reader::SstReader;
pub use table_cache::TableCache;

pub use compress::Compression;

/// How a table is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SstOptions {
    /// Target uncompressed size of a data block in bytes.
    pub block_size: usize,
    /// Keys between restart points in data blocks (0 is taken as 1).
    pub restart_interval: usize,
    /// Bloom filter bits per distinct user key; 0 writes no filter.
    pub bloom_bits_per_key: usize,
    /// Compression of data, index and range-deletion blocks.
    pub compression: Compression,
}

impl Default for SstOptions {
    fn default() -> Self {
        SstOptions {
            block_size: 4096,
            restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: Compression::None,
        }
    }
}

#[cfg(test)]
mod tests;
