//! A table's index search: the user-key prefix ([`key::key_prefix`]) of every index
//! entry in one dense array, built when the table opens, so that a point lookup narrows
//! its index seek to the entries whose separator has the target's prefix by a binary
//! search over that array (a few cache misses) instead of over the index block, where
//! each probe reads a restart offset and then an entry, two misses in a large block.
//!
//! Owns: the prefix array. Nothing is stored: it is derived from the index block.
//! Must not touch: the index block's format; a block whose entries are not all restart
//! points (written with a restart interval above 1) gets no prefix array, and its seeks
//! search the whole block as before.
//! Concurrency: immutable once built; `Send + Sync`.

use super::block_iter::{Block, BlockIter, BlockResult};
use crate::key;

/// The index entries' user-key prefixes, in block order (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct IndexSearch {
    prefixes: Vec<[u64; 2]>,
}

impl IndexSearch {
    /// The prefix array of `index`, or `None` if its entries are not all restart points.
    ///
    /// # Errors
    /// The index block's decoding errors.
    pub(crate) fn build(index: &Block) -> BlockResult<Option<IndexSearch>> {
        let mut prefixes = Vec::with_capacity(index.num_restarts());
        let mut it = BlockIter::new(index.clone());
        it.seek_to_first()?;
        while it.valid() {
            prefixes.push(key::key_prefix(key::user_key(it.key())));
            it.next()?;
        }
        Ok((prefixes.len() == index.num_restarts()).then_some(IndexSearch { prefixes }))
    }

    /// Positions `index` (an iterator over the block this was built from) on the first
    /// entry whose key is `>= target` (`key::compare`), as `index.seek(target)` would.
    ///
    /// # Errors
    /// The index block's decoding errors.
    pub(crate) fn seek(&self, index: &mut BlockIter, target: &[u8]) -> BlockResult<()> {
        let tp = key::key_prefix(key::user_key(target));
        // Separators with a smaller prefix are smaller than the target, with a larger one
        // larger: the answer is among the equal ones or the first larger one.
        let first_equal = self.prefixes.partition_point(|p| *p < tp);
        let first_larger = self.prefixes.partition_point(|p| *p <= tp);
        let last = self.prefixes.len().saturating_sub(1);
        index.seek_between(
            target,
            first_equal.saturating_sub(1),
            first_larger.min(last),
            key::compare,
        )
    }
}
