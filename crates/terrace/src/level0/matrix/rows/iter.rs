//! The row iterator: one matrix row as an [`InternalIterator`], honouring its trim.
//!
//! Owns: [`RowIterator`].
//! Must not touch: other rows; a group merges row iterators with `merge::MergingIterator`.
//! Concurrency: one owner; `Send` when the chunk type is `Send + Sync`.

use std::sync::Arc;

use super::row::RowReader;
use crate::error::Result;
use crate::iter::InternalIterator;

/// Where the current entry's bytes are.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    pos: usize,
    chunk: u32,
    offset: usize,
    key_len: usize,
    value_len: usize,
}

/// Iterates the entries of one row from its trim start (`start`) to its end.
pub struct RowIterator<E> {
    row: Arc<RowReader<E>>,
    start: usize,
    cur: Option<Cursor>,
}

impl<E: AsRef<[u8]>> RowIterator<E> {
    /// An iterator over `row` whose entries before `start` are gone; not positioned.
    pub fn new(row: Arc<RowReader<E>>, start: usize) -> Self {
        RowIterator {
            start: start.min(row.len()),
            row,
            cur: None,
        }
    }

    /// The current position, if valid.
    pub fn position(&self) -> Option<usize> {
        self.cur.map(|c| c.pos)
    }

    /// Positions on `pos` if it lies in `[start, len)`, else makes the iterator invalid.
    fn set(&mut self, pos: Option<usize>) -> Result<()> {
        self.cur = None;
        let Some(pos) = pos.filter(|p| (self.start..self.row.len()).contains(p)) else {
            return Ok(());
        };
        let m = self.row.meta_entry(pos)?;
        // The entry's key and value, charged once however often `key` and `value` look.
        self.row.charge(m.key_len as usize + m.value_len as usize);
        self.cur = Some(Cursor {
            pos,
            chunk: m.chunk,
            offset: m.offset as usize,
            key_len: m.key_len as usize,
            value_len: m.value_len as usize,
        });
        Ok(())
    }
}

impl<E: AsRef<[u8]> + Send + Sync> InternalIterator for RowIterator<E> {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.set(Some(self.start))
    }

    fn seek_to_last(&mut self) -> Result<()> {
        self.set(self.row.len().checked_sub(1))
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.cur = None;
        let p = self.row.lower_bound(target, self.start, self.row.len())?;
        self.set(Some(p))
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.cur = None;
        let p = self.row.upper_bound(target, self.start, self.row.len())?;
        self.set(p.checked_sub(1))
    }

    fn next(&mut self) -> Result<()> {
        let p = self.cur.map(|c| c.pos + 1);
        self.set(p)
    }

    fn prev(&mut self) -> Result<()> {
        let p = self.cur.and_then(|c| c.pos.checked_sub(1));
        self.set(p)
    }

    fn key(&self) -> &[u8] {
        self.cur
            .and_then(|c| self.row.data_slice(c.chunk, c.offset, c.key_len))
            .unwrap_or_default()
    }

    fn value(&self) -> &[u8] {
        self.cur
            .and_then(|c| {
                let at = c.offset.checked_add(c.key_len)?;
                self.row.data_slice(c.chunk, at, c.value_len)
            })
            .unwrap_or_default()
    }
}
