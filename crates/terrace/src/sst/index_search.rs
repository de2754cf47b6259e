//! A table's index search: the user-key prefix ([`key::key_prefix`]) and the block handle
//! of every index entry in dense arrays, built when the table opens, so that a point
//! lookup finds its data block by a two-step search over them (a sampled array that stays
//! cached, then one bucket of prefixes) instead of over the index block, where each probe
//! reads a restart offset and then an entry, two misses in a large block.
//! Only when separators share the target's prefix is the index block consulted, between
//! the entries the prefixes bracket.
//!
//! Owns: the arrays. Nothing is stored: it is derived from the index block.
//! Must not touch: the index block's format; a block whose entries are not all restart
//! points (written with a restart interval above 1), or whose handles do not decode,
//! gets no array, and its seeks search the whole block as before (and report a damaged
//! handle where they meet it).
//! Concurrency: immutable once built; `Send + Sync`.

use super::block_iter::{Block, BlockIter, BlockResult};
use super::format::BlockHandle;
use crate::key;
use crate::prefetch::prefetch_value;

/// Entries per bucket of the two-level search: the sampled array names the bucket, a
/// search of the bucket's 16 prefixes (four cache lines, asked for together) the entry.
const BUCKET: usize = 16;

/// The index entries' user-key prefixes and handles, in block order (see the module docs).
///
/// The prefixes, the handles and every [`BUCKET`]th prefix are three arrays: a search
/// reads the small sampled array (a few hundred bytes per thousand blocks, which stays in
/// the processor's caches between lookups), then one bucket of prefixes, then one handle,
/// instead of a binary search's dozen scattered lines over prefixes and handles together.
#[derive(Debug, Default)]
pub(crate) struct IndexSearch {
    prefixes: Vec<[u64; 2]>,
    handles: Vec<BlockHandle>,
    /// `prefixes[0]`, `prefixes[BUCKET]`, `prefixes[2 * BUCKET]`, ...
    samples: Vec<[u64; 2]>,
}

impl IndexSearch {
    /// The array of `index`, or `None` if its entries are not all restart points or a
    /// handle does not decode.
    ///
    /// # Errors
    /// The index block's decoding errors.
    pub(crate) fn build(index: &Block) -> BlockResult<Option<IndexSearch>> {
        let mut prefixes = Vec::with_capacity(index.num_restarts());
        let mut handles = Vec::with_capacity(index.num_restarts());
        let mut it = BlockIter::new(index.clone());
        it.seek_to_first()?;
        while it.valid() {
            let Some(handle) = BlockHandle::decode(it.value()) else {
                return Ok(None);
            };
            prefixes.push(key::key_prefix(key::user_key(it.key())));
            handles.push(handle);
            it.next()?;
        }
        if prefixes.len() != index.num_restarts() {
            return Ok(None);
        }
        let samples = prefixes.iter().step_by(BUCKET).copied().collect();
        Ok(Some(IndexSearch {
            prefixes,
            handles,
            samples,
        }))
    }

    /// Number of index entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.prefixes.len()
    }

    /// The data block handle of entry `i`.
    pub(crate) fn handle(&self, i: usize) -> Option<BlockHandle> {
        self.handles.get(i).copied()
    }

    /// The number of leading prefixes that satisfy `pred`, which holds for a leading run
    /// of them and for none after (`<[T]>::partition_point`), found in two steps: the
    /// samples name the bucket where `pred` stops holding, a search of it the entry.
    fn partition_point(&self, pred: impl Fn(&[u64; 2]) -> bool) -> usize {
        let sampled = self.samples.partition_point(&pred);
        // Entry `(sampled - 1) * BUCKET` holds, entry `sampled * BUCKET` (if any) does
        // not: the first that does not is after the one and at or before the other.
        let Some(bucket) = sampled.checked_sub(1) else {
            return 0;
        };
        let from = bucket * BUCKET + 1;
        let to = (from - 1 + BUCKET).min(self.prefixes.len());
        let Some(run) = self.prefixes.get(from..to) else {
            return self.prefixes.len();
        };
        // Four entries of each array to a cache line: the bucket's lines, and the lines
        // of the handles it picks among, are asked for at once.
        for p in run.iter().step_by(4) {
            prefetch_value(p);
        }
        for h in self
            .handles
            .get(from..to)
            .unwrap_or_default()
            .iter()
            .step_by(4)
        {
            prefetch_value(h);
        }
        from + run.partition_point(pred)
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
        let first_equal = self.partition_point(|p| *p < tp);
        if self.prefixes.get(first_equal).is_none_or(|p| *p != tp) {
            return Ok(first_equal);
        }
        let first_larger = self.partition_point(|p| *p <= tp);
        let last = self.prefixes.len().saturating_sub(1);
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
            self.prefixes.len()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two-step partition point agrees with the slice's on every cut of arrays of
    /// every length around the bucket size.
    #[test]
    fn two_step_partition_point_matches_the_slice() {
        for len in 0..(3 * BUCKET + 3) {
            let prefixes: Vec<[u64; 2]> = (0..len as u64).map(|i| [i / 2, i % 2]).collect();
            let search = IndexSearch {
                samples: prefixes.iter().step_by(BUCKET).copied().collect(),
                handles: Vec::new(),
                prefixes,
            };
            for cut in 0..=len as u64 + 1 {
                let pred = |p: &[u64; 2]| p[0] * 2 + p[1] < cut;
                assert_eq!(
                    search.partition_point(pred),
                    search.prefixes.partition_point(pred),
                    "len {len} cut {cut}"
                );
            }
        }
    }
}
