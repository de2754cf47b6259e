//! The cache of open table readers, so that a lookup does not reopen and re-read a table's
//! footer, index, filter and meta blocks.
//!
//! Owns: [`TableCache`] (quick_cache with one unit per reader; its CLOCK-Pro-like policy
//! approximates LRU and resists scans).
//! Must not touch: file deletion; callers evict a number before deleting its file.
//! Concurrency: `Send + Sync`. Concurrent misses on the same file open it once; the others wait.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use quick_cache::sync::Cache;

use super::block_cache::BlockCache;
use super::reader::SstReader;
use crate::error::Result;
use crate::storage::{ReadableFile, Storage};

/// Open table readers, at most `capacity` of them, keyed by file number.
pub struct TableCache {
    storage: Arc<dyn Storage>,
    block_cache: Option<Arc<BlockCache>>,
    readers: Cache<u64, Arc<SstReader>>,
}

impl std::fmt::Debug for TableCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableCache")
            .field("open", &self.readers.len())
            .field("capacity", &self.readers.capacity())
            .finish_non_exhaustive()
    }
}

impl TableCache {
    /// A cache of at most `capacity` (at least 1) open tables of `storage`, whose blocks go
    /// through `block_cache`.
    pub fn new(
        storage: Arc<dyn Storage>,
        capacity: usize,
        block_cache: Option<Arc<BlockCache>>,
    ) -> Self {
        TableCache {
            storage,
            block_cache,
            readers: Cache::new(capacity.max(1)),
        }
    }

    /// The reader of table `file_number` at `path`, opened on a miss. The file number is the
    /// reader's block-cache id, so file numbers must never be reused for other contents.
    ///
    /// # Errors
    /// I/O errors opening the file; `Corruption` from [`SstReader::open`]. Failures are not
    /// cached: the next call tries again.
    pub fn get(&self, file_number: u64, path: &Path) -> Result<Arc<SstReader>> {
        self.get_with(file_number, || path.to_path_buf())
    }

    /// As [`TableCache::get`], computing the path only on a miss (the read path calls this
    /// for every lookup, so a hit must not build a path).
    ///
    /// # Errors
    /// As [`TableCache::get`].
    pub fn get_with(
        &self,
        file_number: u64,
        path: impl FnOnce() -> PathBuf,
    ) -> Result<Arc<SstReader>> {
        self.get_opened(file_number, || {
            let path = path();
            let file = self.storage.open(&path)?;
            Ok((path, file))
        })
    }

    /// As [`TableCache::get`], with `open` opening the file on a miss (returning the
    /// path that names it in errors, and the handle to read).
    ///
    /// # Errors
    /// `open`'s errors; `Corruption` from [`SstReader::open`].
    pub fn get_opened(
        &self,
        file_number: u64,
        open: impl FnOnce() -> Result<(PathBuf, Arc<dyn ReadableFile>)>,
    ) -> Result<Arc<SstReader>> {
        self.readers.get_or_insert_with(&file_number, || {
            let (path, file) = open()?;
            let reader = SstReader::open(file, path, file_number, self.block_cache.clone())?;
            Ok(Arc::new(reader))
        })
    }

    /// The storage tables are opened from.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// The block cache the readers share, if any.
    pub fn block_cache(&self) -> Option<&Arc<BlockCache>> {
        self.block_cache.as_ref()
    }

    /// Forgets table `file_number` (readers already handed out stay usable).
    pub fn evict(&self, file_number: u64) {
        self.readers.remove(&file_number);
    }

    /// Forgets table `file_number`, whose file at `path` is being deleted, and drops its
    /// data blocks from the block cache: nothing will read them again, and their memory
    /// serves the next blocks read instead of fresh pages. With `open_to_drop` a table
    /// that is not open is opened for its index first (its blocks may be cached without
    /// any read: `SstBuilder::warm_cache`); if that fails, its blocks stay until the
    /// cache evicts them.
    pub fn evict_deleted(&self, file_number: u64, path: &Path, open_to_drop: bool) {
        if let Some((_, reader)) = self.readers.remove(&file_number) {
            reader.drop_cached_blocks();
            return;
        }
        if !open_to_drop || self.block_cache.is_none() {
            return;
        }
        let reader = self.storage.open(path).and_then(|file| {
            SstReader::open(
                file,
                path.to_path_buf(),
                file_number,
                self.block_cache.clone(),
            )
        });
        if let Ok(reader) = reader {
            reader.drop_cached_blocks();
        }
    }

    /// Tables open now.
    pub fn len(&self) -> usize {
        self.readers.len()
    }

    /// True if no table is open.
    pub fn is_empty(&self) -> bool {
        self.readers.is_empty()
    }
}
