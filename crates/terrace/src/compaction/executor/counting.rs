//! Measuring what a compaction reads of its inputs within its key range: an iterator
//! wrapper that adds up the key and value bytes (a level-0 input that is not a table
//! file: the matrix level 0's rows) or the number (a table file read by a subtask, which
//! reads only part of it) of the entries it passes within the range.
//!
//! Owns: that count. Must not touch: the entries (it passes them on unchanged) or the
//! input (it comes from the host's `Level0Source`).
//! Concurrency: one wrapper per unit iterator, owned by the compaction's merging
//! iterator; the shared total is a relaxed atomic read after the merge has finished.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key;

/// Passes entries of `inner` on and adds the key and value bytes of each entry it lands
/// on going forward (`seek_to_first`, `seek`, `next`) whose user key is in `[lo, hi)` to
/// `total`. A compaction reads its range once, forward, so each entry of the range
/// counts once; entries the merge only peeks at outside the range do not count.
pub(super) struct CountingIterator {
    inner: Box<dyn InternalIterator>,
    lo: Option<Vec<u8>>,
    hi: Option<Vec<u8>>,
    total: Arc<AtomicU64>,
    weight: Weight,
}

/// What one entry adds to the total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Weight {
    /// Its key and value bytes.
    KvBytes,
    /// One.
    Entries,
}

impl CountingIterator {
    /// Wraps `inner`, counting into `total` the entries in `[lo, hi)` (`None`: unbounded).
    pub(super) fn new(
        inner: Box<dyn InternalIterator>,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        total: Arc<AtomicU64>,
    ) -> Self {
        Self::weighted(inner, lo, hi, total, Weight::KvBytes)
    }

    /// Wraps `inner`, adding `weight` of each entry in `[lo, hi)` to `total`.
    pub(super) fn weighted(
        inner: Box<dyn InternalIterator>,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        total: Arc<AtomicU64>,
        weight: Weight,
    ) -> Self {
        CountingIterator {
            inner,
            lo: lo.map(<[u8]>::to_vec),
            hi: hi.map(<[u8]>::to_vec),
            total,
            weight,
        }
    }

    fn count(&self, r: Result<()>) -> Result<()> {
        r?;
        if self.inner.valid() {
            let ikey = self.inner.key();
            let user = key::user_key(ikey);
            let in_range = self.lo.as_deref().is_none_or(|l| user >= l)
                && self.hi.as_deref().is_none_or(|h| user < h);
            if in_range {
                let add = match self.weight {
                    Weight::KvBytes => (ikey.len() + self.inner.value().len()) as u64,
                    Weight::Entries => 1,
                };
                self.total.fetch_add(add, Ordering::Relaxed);
            }
        }
        Ok(())
    }
}

impl InternalIterator for CountingIterator {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        let r = self.inner.seek_to_first();
        self.count(r)
    }
    fn seek_to_last(&mut self) -> Result<()> {
        self.inner.seek_to_last()
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let r = self.inner.seek(target);
        self.count(r)
    }
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.inner.seek_for_prev(target)
    }
    fn next(&mut self) -> Result<()> {
        let r = self.inner.next();
        self.count(r)
    }
    fn prev(&mut self) -> Result<()> {
        self.inner.prev()
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::VecIterator;
    use crate::key::{InternalKey, ValueType};

    fn entries(keys: &[&str]) -> Vec<(Vec<u8>, Vec<u8>)> {
        keys.iter()
            .map(|k| {
                let ik = InternalKey::new(k.as_bytes(), 1, ValueType::Value);
                (ik.encoded().to_vec(), b"vvvv".to_vec())
            })
            .collect()
    }

    #[test]
    fn counts_each_entry_of_the_range_once_going_forward() -> Result<()> {
        let total = Arc::new(AtomicU64::new(0));
        let inner = Box::new(VecIterator::new(entries(&["a", "b", "c", "d"])));
        let mut it = CountingIterator::new(inner, Some(b"b"), Some(b"d"), total.clone());
        it.seek(&key::seek_key(b"b", key::MAX_SEQ))?;
        let mut seen = Vec::new();
        while it.valid() && key::user_key(it.key()) < b"d".as_slice() {
            seen.push(key::user_key(it.key()).to_vec());
            it.next()?;
        }
        assert_eq!(seen, [b"b".to_vec(), b"c".to_vec()]);
        // "b" and "c": one byte of user key, eight of trailer, four of value each; the
        // merge stopped on "d", outside the range.
        assert_eq!(total.load(Ordering::Relaxed), 2 * (1 + 8 + 4));
        // Backward moves do not count again.
        it.prev()?;
        it.seek_to_last()?;
        assert_eq!(total.load(Ordering::Relaxed), 26);
        Ok(())
    }
}
