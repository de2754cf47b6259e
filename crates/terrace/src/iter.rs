//! The internal iterator contract shared by memtables, tables, merges and the level-0 kinds.
//!
//! Owns: the [`InternalIterator`] trait only.
//! Must not touch: anything concrete; implementations live with their data.
//! Concurrency: an iterator has one owner; it may be sent to another thread.

use crate::error::Result;

/// A cursor over internal keys (see `key`) in internal-key order.
///
/// Movement reports I/O and corruption errors; after an error the iterator is not
/// valid. `key` and `value` may be called only while `valid()`; they return empty
/// slices otherwise (never panic).
pub trait InternalIterator: Send {
    /// True if positioned on an entry.
    fn valid(&self) -> bool;
    /// Positions on the first entry.
    ///
    /// # Errors
    /// I/O or corruption in the underlying data.
    fn seek_to_first(&mut self) -> Result<()>;
    /// Positions on the last entry.
    ///
    /// # Errors
    /// I/O or corruption in the underlying data.
    fn seek_to_last(&mut self) -> Result<()>;
    /// Positions on the first entry `>= target` (an internal key).
    ///
    /// # Errors
    /// I/O or corruption in the underlying data.
    fn seek(&mut self, target: &[u8]) -> Result<()>;
    /// Positions on the last entry `<= target` (an internal key).
    ///
    /// # Errors
    /// I/O or corruption in the underlying data.
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()>;
    /// Moves to the next entry. Requires `valid()`.
    ///
    /// # Errors
    /// I/O or corruption in the underlying data.
    fn next(&mut self) -> Result<()>;
    /// Moves to the previous entry. Requires `valid()`.
    ///
    /// # Errors
    /// I/O or corruption in the underlying data.
    fn prev(&mut self) -> Result<()>;
    /// The current internal key.
    fn key(&self) -> &[u8];
    /// The current value.
    fn value(&self) -> &[u8];
}

/// An iterator over a sorted in-memory vector of `(internal key, value)` pairs.
/// Used by tests as a reference implementation and by small in-memory sources.
#[derive(Debug, Clone, Default)]
pub struct VecIterator {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    pos: Option<usize>,
}

impl VecIterator {
    /// `entries` must be sorted by `key::compare`.
    pub fn new(entries: Vec<(Vec<u8>, Vec<u8>)>) -> Self {
        VecIterator { entries, pos: None }
    }
}

impl InternalIterator for VecIterator {
    fn valid(&self) -> bool {
        self.pos.is_some()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        self.pos = if self.entries.is_empty() {
            None
        } else {
            Some(0)
        };
        Ok(())
    }
    fn seek_to_last(&mut self) -> Result<()> {
        self.pos = self.entries.len().checked_sub(1);
        Ok(())
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let i = self
            .entries
            .partition_point(|(k, _)| crate::key::compare(k, target).is_lt());
        self.pos = (i < self.entries.len()).then_some(i);
        Ok(())
    }
    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        let i = self
            .entries
            .partition_point(|(k, _)| crate::key::compare(k, target).is_le());
        self.pos = i.checked_sub(1);
        Ok(())
    }
    fn next(&mut self) -> Result<()> {
        self.pos = self.pos.map(|p| p + 1).filter(|p| *p < self.entries.len());
        Ok(())
    }
    fn prev(&mut self) -> Result<()> {
        self.pos = self.pos.and_then(|p| p.checked_sub(1));
        Ok(())
    }
    fn key(&self) -> &[u8] {
        self.pos
            .and_then(|p| self.entries.get(p))
            .map_or(&[][..], |(k, _)| k.as_slice())
    }
    fn value(&self) -> &[u8] {
        self.pos
            .and_then(|p| self.entries.get(p))
            .map_or(&[][..], |(_, v)| v.as_slice())
    }
}
