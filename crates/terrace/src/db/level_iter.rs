//! An iterator over one sorted level (non-overlapping files), opening tables lazily.

use std::sync::Arc;

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key;
use crate::sst::SstReader;
use crate::storage::IoClass;
use crate::version::FileMeta;

/// Opens a table file's reader (through the table cache).
pub(crate) type TableOpener = Arc<dyn Fn(&FileMeta) -> Result<Arc<SstReader>> + Send + Sync>;

/// Concatenates the tables of a level >= 1 (or of any list of sorted, disjoint files).
pub(crate) struct LevelIterator {
    files: Vec<Arc<FileMeta>>,
    open: TableOpener,
    class: IoClass,
    fill_cache: bool,
    idx: usize,
    cur: Option<Box<dyn InternalIterator>>,
}

impl LevelIterator {
    pub(crate) fn new(files: Vec<Arc<FileMeta>>, open: TableOpener, class: IoClass, fill_cache: bool) -> Self {
        LevelIterator {
            idx: files.len(),
            files,
            open,
            class,
            fill_cache,
            cur: None,
        }
    }

    fn open_at(&mut self, idx: usize) -> Result<()> {
        self.idx = idx;
        self.cur = None;
        if let Some(f) = self.files.get(idx) {
            let reader = (self.open)(f)?;
            self.cur = Some(Box::new(reader.iter(self.class, self.fill_cache)));
        }
        Ok(())
    }

    fn skip_forward(&mut self) -> Result<()> {
        while self.cur.as_ref().is_some_and(|c| !c.valid()) {
            let next = self.idx + 1;
            self.open_at(next)?;
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_first()?;
            }
        }
        Ok(())
    }

    fn skip_backward(&mut self) -> Result<()> {
        while self.cur.as_ref().is_some_and(|c| !c.valid()) {
            if self.idx == 0 {
                self.cur = None;
                self.idx = self.files.len();
                return Ok(());
            }
            let prev = self.idx - 1;
            self.open_at(prev)?;
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_last()?;
            }
        }
        Ok(())
    }
}

impl InternalIterator for LevelIterator {
    fn valid(&self) -> bool {
        self.cur.as_ref().is_some_and(|c| c.valid())
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.open_at(0)?;
        if let Some(c) = self.cur.as_mut() {
            c.seek_to_first()?;
        }
        self.skip_forward()
    }

    fn seek_to_last(&mut self) -> Result<()> {
        match self.files.len().checked_sub(1) {
            Some(last) => {
                self.open_at(last)?;
                if let Some(c) = self.cur.as_mut() {
                    c.seek_to_last()?;
                }
                self.skip_backward()
            }
            None => {
                self.cur = None;
                Ok(())
            }
        }
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let i = self
            .files
            .partition_point(|f| key::compare(f.largest.encoded(), target).is_lt());
        self.open_at(i)?;
        if let Some(c) = self.cur.as_mut() {
            c.seek(target)?;
        }
        self.skip_forward()
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        let i = self
            .files
            .partition_point(|f| key::compare(f.smallest.encoded(), target).is_le());
        match i.checked_sub(1) {
            Some(i) => {
                self.open_at(i)?;
                if let Some(c) = self.cur.as_mut() {
                    c.seek_for_prev(target)?;
                }
                self.skip_backward()
            }
            None => {
                self.cur = None;
                self.idx = self.files.len();
                Ok(())
            }
        }
    }

    fn next(&mut self) -> Result<()> {
        if let Some(c) = self.cur.as_mut() {
            c.next()?;
        }
        self.skip_forward()
    }

    fn prev(&mut self) -> Result<()> {
        if let Some(c) = self.cur.as_mut() {
            c.prev()?;
        }
        self.skip_backward()
    }

    fn key(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[][..], |c| c.key())
    }

    fn value(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[][..], |c| c.value())
    }
}
