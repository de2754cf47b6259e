//! The two-level table iterator: an index-block cursor choosing data blocks, and a
//! data-block cursor inside the chosen one.
//!
//! Owns: [`SstIterator`].
//! Must not touch: range tombstones (read them from the reader) or visibility by snapshot;
//! it returns every point entry.
//! Concurrency: one owner; `Send`. It holds an `Arc` of its reader, so the table stays open.

use std::sync::Arc;

use bytes::Bytes;

use super::block_iter::{BlockIter, BlockResult};
use super::format::BlockHandle;
use super::reader::SstReader;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key;
use crate::storage::IoClass;

/// An iterator over a table's point entries in internal-key order.
pub struct SstIterator {
    reader: Arc<SstReader>,
    class: IoClass,
    fill_cache: bool,
    index: BlockIter,
    /// The loaded data block and its offset.
    data: Option<(u64, BlockIter)>,
}

impl std::fmt::Debug for SstIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SstIterator")
            .field("path", &self.reader.path())
            .field("valid", &self.valid())
            .finish_non_exhaustive()
    }
}

impl SstIterator {
    pub(crate) fn new(reader: Arc<SstReader>, class: IoClass, fill_cache: bool) -> Self {
        let index = BlockIter::new(reader.index_block().clone());
        SstIterator {
            reader,
            class,
            fill_cache,
            index,
            data: None,
        }
    }

    /// The current value as a zero-copy slice of its block (empty if not valid).
    pub fn value_bytes(&self) -> Bytes {
        match &self.data {
            Some((_, d)) if d.valid() => d.value_bytes(),
            _ => Bytes::new(),
        }
    }

    /// The reader this iterator reads.
    pub fn reader(&self) -> &Arc<SstReader> {
        &self.reader
    }

    /// Drops the position and turns a block error into a `Corruption`.
    fn fail(&mut self, offset: u64, reason: &str) -> Error {
        self.data = None;
        self.reader.corrupt(offset, reason)
    }

    fn index_op(&mut self, r: BlockResult<()>) -> Result<()> {
        r.map_err(|e| self.fail(self.reader.index_offset(), e))
    }

    fn data_op(&mut self, op: impl FnOnce(&mut BlockIter) -> BlockResult<()>) -> Result<()> {
        let Some((off, d)) = self.data.as_mut() else {
            return Ok(());
        };
        let off = *off;
        op(d).map_err(|e| self.fail(off, e))?;
        self.check_key()
    }

    /// Checks that the current entry's key is a point key.
    fn check_key(&mut self) -> Result<()> {
        let Some((off, d)) = &self.data else {
            return Ok(());
        };
        if !d.valid() {
            return Ok(());
        }
        let off = *off;
        match key::try_parse(d.key()) {
            Ok(p) if p.kind != key::ValueType::RangeDeletion => Ok(()),
            Ok(_) => Err(self.fail(off, "range deletion in a data block")),
            Err(e) => Err(self.fail(off, e)),
        }
    }

    /// Loads the data block the index cursor points at (kept if already loaded).
    fn load_block(&mut self) -> Result<()> {
        if !self.index.valid() {
            self.data = None;
            return Ok(());
        }
        let Some(h) = BlockHandle::decode(self.index.value()) else {
            return Err(self.fail(self.reader.index_offset(), "bad block handle"));
        };
        if matches!(&self.data, Some((off, _)) if *off == h.offset) {
            return Ok(());
        }
        self.data = None;
        let block = self.reader.read_block(h, self.class, self.fill_cache)?;
        self.data = Some((h.offset, BlockIter::new(block)));
        Ok(())
    }

    fn data_valid(&self) -> bool {
        self.data.as_ref().is_some_and(|(_, d)| d.valid())
    }

    /// Moves forward over exhausted (or empty) blocks.
    fn skip_empty_forward(&mut self) -> Result<()> {
        while self.data.is_some() && !self.data_valid() {
            let r = self.index.next();
            self.index_op(r)?;
            self.load_block()?;
            self.data_op(BlockIter::seek_to_first)?;
        }
        Ok(())
    }

    /// Moves backward over exhausted (or empty) blocks.
    fn skip_empty_backward(&mut self) -> Result<()> {
        while self.data.is_some() && !self.data_valid() {
            let r = self.index.prev();
            self.index_op(r)?;
            self.load_block()?;
            self.data_op(BlockIter::seek_to_last)?;
        }
        Ok(())
    }
}

impl InternalIterator for SstIterator {
    fn valid(&self) -> bool {
        self.data_valid()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        let r = self.index.seek_to_first();
        self.index_op(r)?;
        self.load_block()?;
        self.data_op(BlockIter::seek_to_first)?;
        self.skip_empty_forward()
    }

    fn seek_to_last(&mut self) -> Result<()> {
        let r = self.index.seek_to_last();
        self.index_op(r)?;
        self.load_block()?;
        self.data_op(BlockIter::seek_to_last)?;
        self.skip_empty_backward()
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let r = self.index.seek(target);
        self.index_op(r)?;
        self.load_block()?;
        self.data_op(|d| d.seek(target))?;
        self.skip_empty_forward()
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.seek(target)?;
        if !self.valid() {
            return self.seek_to_last();
        }
        if key::compare(self.key(), target).is_gt() {
            self.prev()?;
        }
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        if !self.valid() {
            return Ok(());
        }
        self.data_op(BlockIter::next)?;
        self.skip_empty_forward()
    }

    fn prev(&mut self) -> Result<()> {
        if !self.valid() {
            return Ok(());
        }
        self.data_op(BlockIter::prev)?;
        self.skip_empty_backward()
    }

    fn key(&self) -> &[u8] {
        match &self.data {
            Some((_, d)) => d.key(),
            None => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match &self.data {
            Some((_, d)) => d.value(),
            None => &[],
        }
    }
}

impl SstReader {
    /// An iterator over the table's point entries; it holds `self` alive.
    pub fn iter(self: &Arc<Self>, class: IoClass, fill_cache: bool) -> SstIterator {
        SstIterator::new(Arc::clone(self), class, fill_cache)
    }
}
