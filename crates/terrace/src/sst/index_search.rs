//! A table's index search: the user-key prefix ([`key::key_prefix`]) and the block handle
//! of every index entry in one dense array, built when the table opens, so that a point
//! lookup finds its data block by a binary search over that array (a few cache misses,
//! the handle on the line of the last comparison) instead of over the index block, where
//! each probe reads a restart offset and then an entry, two misses in a large block.
//! Only when separators share the target's prefix is the index block consulted, between
//! the entries the prefixes bracket.
//!
//! Owns: the array. Nothing is stored: it is derived from the index block.
//! Must not touch: the index block's format; a block whose entries are not all restart
//! points (written with a restart interval above 1), or whose handles do not decode,
//! gets no array, and its seeks search the whole block as before (and report a damaged
//! handle where they meet it).
//! Concurrency: immutable once built; `Send + Sync`.

use super::block_iter::{Block, BlockIter, BlockResult};
use super::format::BlockHandle;
use crate::key;

/// One index entry: its separator's prefix and the handle of its data block.
#[derive(Debug, Clone, Copy)]
struct Entry {
    prefix: [u64; 2],
    handle: BlockHandle,
}

/// The index entries' user-key prefixes and handles, in block order (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct IndexSearch {
    entries: Vec<Entry>,
}

impl IndexSearch {
    /// The array of `index`, or `None` if its entries are not all restart points or a
    /// handle does not decode.
    ///
    /// # Errors
    /// The index block's decoding errors.
    pub(crate) fn build(index: &Block) -> BlockResult<Option<IndexSearch>> {
        let mut entries = Vec::with_capacity(index.num_restarts());
        let mut it = BlockIter::new(index.clone());
        it.seek_to_first()?;
        while it.valid() {
            let Some(handle) = BlockHandle::decode(it.value()) else {
                return Ok(None);
            };
            entries.push(Entry {
                prefix: key::key_prefix(key::user_key(it.key())),
                handle,
            });
            it.next()?;
        }
        Ok((entries.len() == index.num_restarts()).then_some(IndexSearch { entries }))
    }

    /// Number of index entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The data block handle of entry `i`.
    pub(crate) fn handle(&self, i: usize) -> Option<BlockHandle> {
        self.entries.get(i).map(|e| e.handle)
    }

    /// The position of the first entry whose key is `>= target` (`key::compare`), or
    /// [`IndexSearch::len`] if there is none: where a seek of `index`, the block this was
    /// built from, would land. The block is read only when separators share the
    /// target's prefix.
    ///
    /// # Errors
    /// The index block's decoding errors.
    pub(crate) fn seek(&self, index: &Block, target: &[u8]) -> BlockResult<usize> {
        let tp = key::key_prefix(key::user_key(target));
        // Separators with a smaller prefix are smaller than the target, with a larger one
        // larger: the answer is among the equal ones or the first larger one.
        let first_equal = self.entries.partition_point(|e| e.prefix < tp);
        if self.entries.get(first_equal).is_none_or(|e| e.prefix != tp) {
            return Ok(first_equal);
        }
        let first_larger =
            first_equal + self.entries[first_equal..].partition_point(|e| e.prefix <= tp);
        let last = self.entries.len().saturating_sub(1);
        let mut index = BlockIter::new(index.clone());
        index.seek_between(
            target,
            first_equal.saturating_sub(1),
            first_larger.min(last),
            key::compare,
        )?;
        // Every entry is a restart point, so the cursor's run is its entry number.
        Ok(if index.valid() {
            index.restart_index()
        } else {
            self.entries.len()
        })
    }
}
