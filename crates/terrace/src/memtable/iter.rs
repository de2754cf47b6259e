//! The memtable's internal iterator.
//!
//! A skiplist entry borrows its map, so an iterator that owns an `Arc<MemTable>` cannot
//! hold one without `unsafe`. Instead it copies a window of consecutive entries (keys into
//! one buffer, values as shared `Bytes`) and moves inside the window; only crossing a
//! window's edge searches the skiplist again. Windows start small after a seek (point
//! lookups copy little) and double up to [`MAX_WINDOW`] entries (scans and flushes pay
//! one search per window).

use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;

use super::MemTable;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::InternalKey;

/// Entries copied by the first window after a seek.
const MIN_WINDOW: usize = 8;
/// Largest window.
const MAX_WINDOW: usize = 256;

/// Iterator over a memtable's point entries (see [`MemTable::iter`]). `Send`.
pub struct MemTableIterator {
    mem: Arc<MemTable>,
    /// Keys of the window, concatenated.
    keys: Vec<u8>,
    /// End of each key in `keys`.
    key_ends: Vec<usize>,
    /// Values of the window.
    values: Vec<Bytes>,
    /// Position in the window; valid while `pos < values.len()`.
    pos: usize,
    /// Size of the next window.
    window: usize,
}

impl MemTableIterator {
    pub(super) fn new(mem: Arc<MemTable>) -> Self {
        MemTableIterator {
            mem,
            keys: Vec::new(),
            key_ends: Vec::new(),
            values: Vec::new(),
            pos: 0,
            window: MIN_WINDOW,
        }
    }

    fn key_at(&self, i: usize) -> &[u8] {
        let start = match i.checked_sub(1) {
            Some(p) => self.key_ends.get(p).copied().unwrap_or(0),
            None => 0,
        };
        let end = self.key_ends.get(i).copied().unwrap_or(start);
        self.keys.get(start..end).unwrap_or_default()
    }

    fn clear(&mut self) {
        self.keys.clear();
        self.key_ends.clear();
        self.values.clear();
        self.pos = 0;
    }

    fn push(&mut self, key: &InternalKey, value: &Bytes) {
        self.keys.extend_from_slice(key.encoded());
        self.key_ends.push(self.keys.len());
        self.values.push(value.clone());
    }

    fn take_window(&mut self) -> usize {
        let n = self.window;
        self.window = (n * 2).min(MAX_WINDOW);
        n
    }

    /// Loads the entries after `from`, positioned on the first.
    fn fill_forward(&mut self, from: Bound<&InternalKey>) {
        let n = self.take_window();
        let mem = Arc::clone(&self.mem);
        self.clear();
        for e in mem.map.range((from, Bound::Unbounded)).take(n) {
            self.push(e.key(), e.value());
        }
    }

    /// Loads the entries before `to`, positioned on the last.
    fn fill_backward(&mut self, to: Bound<&InternalKey>) {
        let n = self.take_window();
        let mem = Arc::clone(&self.mem);
        self.clear();
        let mut found: Vec<_> = mem
            .map
            .range((Bound::Unbounded, to))
            .rev()
            .take(n)
            .collect();
        found.reverse();
        for e in &found {
            self.push(e.key(), e.value());
        }
        self.pos = self.values.len().saturating_sub(1);
    }
}

impl InternalIterator for MemTableIterator {
    fn valid(&self) -> bool {
        self.pos < self.values.len()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.window = MIN_WINDOW;
        self.fill_forward(Bound::Unbounded);
        Ok(())
    }

    fn seek_to_last(&mut self) -> Result<()> {
        self.window = MIN_WINDOW;
        self.fill_backward(Bound::Unbounded);
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.window = MIN_WINDOW;
        let target = InternalKey(target.to_vec());
        self.fill_forward(Bound::Included(&target));
        Ok(())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.window = MIN_WINDOW;
        let target = InternalKey(target.to_vec());
        self.fill_backward(Bound::Included(&target));
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        if !self.valid() {
            return Ok(());
        }
        self.pos += 1;
        if self.pos == self.values.len() {
            let last = InternalKey(self.key_at(self.pos - 1).to_vec());
            self.fill_forward(Bound::Excluded(&last));
        }
        Ok(())
    }

    fn prev(&mut self) -> Result<()> {
        if !self.valid() {
            return Ok(());
        }
        match self.pos.checked_sub(1) {
            Some(p) => self.pos = p,
            None => {
                let first = InternalKey(self.key_at(0).to_vec());
                self.fill_backward(Bound::Excluded(&first));
            }
        }
        Ok(())
    }

    fn key(&self) -> &[u8] {
        if self.valid() {
            self.key_at(self.pos)
        } else {
            &[]
        }
    }

    fn value(&self) -> &[u8] {
        self.values.get(self.pos).map_or(&[][..], |v| v.as_ref())
    }
}
