//! Opens a table file and answers point lookups; the base of `SstIterator` (whose module
//! adds `SstReader::iter`).
//!
//! Owns: [`SstReader`]: footer, metaindex, index, filter, properties and range-deletion
//! blocks held in memory; data blocks read on demand through the block cache.
//! Must not touch: the manifest or the table cache's eviction.
//! Concurrency: `Send + Sync`; every method takes `&self` and reads with positional I/O.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use super::block_cache::BlockCache;
use super::block_iter::{Block, BlockIter};
use super::bloom::BloomFilter;
use super::compress::decode_block;
use super::format::{
    BlockHandle, Footer, FOOTER_LEN, META_FILTER, META_FILTER_WHOLE, META_PROPERTIES,
    META_RANGE_DEL,
};
use super::index_search::IndexSearch;
use super::properties::Properties;
use crate::error::{Error, Result};
use crate::key::{self, SeqNo, ValueType};
use crate::range_del::RangeTombstone;
use crate::storage::{IoClass, ReadableFile};

/// An open table file.
pub struct SstReader {
    file: Arc<dyn ReadableFile>,
    path: PathBuf,
    cache_id: u64,
    cache: Option<Arc<BlockCache>>,
    /// End of the blocks area (where the footer starts).
    blocks_end: u64,
    /// Offset of the index block, named in errors about it.
    index_offset: u64,
    index: Block,
    /// The index entries' key prefixes, to narrow point lookups' index seeks.
    index_search: Option<IndexSearch>,
    filter: Option<BloomFilter>,
    properties: Properties,
    tombstones: Vec<RangeTombstone>,
}

impl std::fmt::Debug for SstReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SstReader")
            .field("path", &self.path)
            .field("cache_id", &self.cache_id)
            .field("properties", &self.properties)
            .finish_non_exhaustive()
    }
}

impl SstReader {
    /// Opens a table: reads and checks the footer and every meta block and the index.
    /// `cache_id` names this file in `cache` and must not be shared with other contents.
    ///
    /// # Errors
    /// `Corruption` (with the path and the bad block's offset) for a truncated file, bad
    /// magic, bad checksums or undecodable blocks; I/O errors.
    pub fn open(
        file: Arc<dyn ReadableFile>,
        path: PathBuf,
        cache_id: u64,
        cache: Option<Arc<BlockCache>>,
    ) -> Result<Self> {
        let len = file.len();
        let Some(blocks_end) = len.checked_sub(FOOTER_LEN as u64) else {
            return Err(Error::corruption(
                &path,
                0,
                "file shorter than a table footer",
            ));
        };
        let mut fb = [0u8; FOOTER_LEN];
        file.read_exact_at(blocks_end, &mut fb, IoClass::Foreground)?;
        let footer = Footer::decode(&fb).map_err(|r| Error::corruption(&path, blocks_end, r))?;
        let mut r = SstReader {
            file,
            path,
            cache_id,
            cache,
            blocks_end,
            index_offset: footer.index.offset,
            index: Block::empty(),
            index_search: None,
            filter: None,
            properties: Properties::default(),
            tombstones: Vec::new(),
        };
        let class = IoClass::Foreground;
        r.index = r.read_uncached_block(footer.index, class)?;
        r.index_search =
            IndexSearch::build(&r.index).map_err(|e| r.corrupt(footer.index.offset, e))?;
        let metaindex = r.read_uncached_block(footer.metaindex, class)?;
        let mut it = BlockIter::new(metaindex);
        let mo = footer.metaindex.offset;
        it.seek_to_first().map_err(|e| r.corrupt(mo, e))?;
        let mut props = None;
        while it.valid() {
            let handle =
                BlockHandle::decode(it.value()).ok_or_else(|| r.corrupt(mo, "bad meta handle"))?;
            match it.key() {
                META_FILTER => {
                    let b = r.read_uncached(handle, class)?;
                    r.filter =
                        Some(BloomFilter::decode(b).map_err(|e| r.corrupt(handle.offset, e))?);
                }
                META_FILTER_WHOLE => {
                    let b = r.read_uncached(handle, class)?;
                    r.filter = Some(
                        BloomFilter::decode_whole(b).map_err(|e| r.corrupt(handle.offset, e))?,
                    );
                }
                META_PROPERTIES => {
                    let b = r.read_uncached(handle, class)?;
                    props = Some(
                        Properties::decode(b, footer.format_version)
                            .map_err(|e| r.corrupt(handle.offset, e))?,
                    );
                }
                META_RANGE_DEL => {
                    let b = r.read_uncached_block(handle, class)?;
                    r.tombstones = decode_tombstones(b).map_err(|e| r.corrupt(handle.offset, e))?;
                }
                _ => {} // A meta block of a later version: ignored.
            }
            it.next().map_err(|e| r.corrupt(mo, e))?;
        }
        r.properties = props.ok_or_else(|| r.corrupt(mo, "no properties block"))?;
        if r.properties.num_range_deletions != r.tombstones.len() as u64 {
            return Err(r.corrupt(mo, "range-deletion count disagrees with the properties"));
        }
        Ok(r)
    }

    pub(crate) fn corrupt(&self, offset: u64, reason: &str) -> Error {
        Error::corruption(&self.path, offset, reason)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's size in bytes.
    pub fn file_size(&self) -> u64 {
        self.file.len()
    }

    /// The table's properties.
    pub fn properties(&self) -> &Properties {
        &self.properties
    }

    /// The table's range tombstones, sorted by start key then newest first.
    pub fn range_tombstones(&self) -> &[RangeTombstone] {
        &self.tombstones
    }

    /// False only if no entry of `user_key` is in the table (true without a filter).
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter.as_ref().is_none_or(|f| f.may_contain(user_key))
    }

    /// [`SstReader::may_contain`] for the key's [`filter_hash`](super::filter_hash),
    /// computed once for every table a read probes.
    pub(crate) fn may_contain_hash(&self, hash: u64) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|f| f.may_contain_hash(hash))
    }

    /// Starts loading the filter bits [`SstReader::may_contain_hash`] will read.
    pub(crate) fn prefetch_filter(&self, hash: u64) {
        if let Some(f) = &self.filter {
            f.prefetch_hash(hash);
        }
    }

    pub(crate) fn index_block(&self) -> &Block {
        &self.index
    }

    /// Reads a block's stored bytes and trailer, checks and decompresses it; uses the
    /// block cache if there is one (filling it only if `fill_cache`).
    pub(crate) fn read_raw(
        &self,
        h: BlockHandle,
        class: IoClass,
        fill_cache: bool,
    ) -> Result<Bytes> {
        if let Some(c) = &self.cache {
            if let Some(b) = c.get(self.cache_id, h.offset) {
                return Ok(b);
            }
        }
        let b = self.read_uncached(h, class)?;
        if fill_cache {
            if let Some(c) = &self.cache {
                c.insert(self.cache_id, h.offset, b.clone());
            }
        }
        Ok(b)
    }

    /// Drops this table's data blocks from the block cache (its file is being deleted):
    /// their memory goes back to the allocator for the blocks read next, instead of
    /// staying until the cache is full. Blocks the index does not name stay; nothing
    /// else changes.
    pub(crate) fn drop_cached_blocks(&self) {
        let Some(cache) = &self.cache else {
            return;
        };
        if let Some(search) = &self.index_search {
            let mut i = 0;
            while let Some(h) = search.handle(i) {
                cache.remove(self.cache_id, h.offset);
                i += 1;
            }
            return;
        }
        let mut it = BlockIter::new(self.index.clone());
        if it.seek_to_first().is_err() {
            return;
        }
        while it.valid() {
            if let Some(h) = BlockHandle::decode(it.value()) {
                cache.remove(self.cache_id, h.offset);
            }
            if it.next().is_err() {
                return;
            }
        }
    }

    /// Reads, checks and decompresses a block from the file, bypassing the cache.
    fn read_uncached(&self, h: BlockHandle, class: IoClass) -> Result<Bytes> {
        let end = h.end().filter(|e| *e <= self.blocks_end);
        let Some(end) = end else {
            return Err(self.corrupt(h.offset, "block handle points past the blocks area"));
        };
        let len = usize::try_from(end - h.offset)
            .map_err(|_| self.corrupt(h.offset, "block too large"))?;
        let buf = self.file.read_vec_at(h.offset, len, class)?;
        decode_block(buf).map_err(|e| self.corrupt(h.offset, e))
    }

    fn read_uncached_block(&self, h: BlockHandle, class: IoClass) -> Result<Block> {
        let b = self.read_uncached(h, class)?;
        Block::new(b).map_err(|e| self.corrupt(h.offset, e))
    }

    /// `read_raw` decoded as a block.
    pub(crate) fn read_block(
        &self,
        h: BlockHandle,
        class: IoClass,
        fill_cache: bool,
    ) -> Result<Block> {
        let b = self.read_raw(h, class, fill_cache)?;
        Block::new(b).map_err(|e| self.corrupt(h.offset, e))
    }

    /// The first entry `>= seek_key` if it has `seek_key`'s user key, as
    /// `(sequence number, type, value)`; the value shares the block's memory.
    ///
    /// # Errors
    /// `Corruption` for damaged blocks or keys; I/O errors.
    pub fn get(
        &self,
        seek_key: &[u8],
        class: IoClass,
        fill_cache: bool,
    ) -> Result<Option<(SeqNo, ValueType, Bytes)>> {
        if !self.may_contain(key::user_key(seek_key)) {
            return Ok(None);
        }
        self.get_unfiltered(seek_key, class, fill_cache)
    }

    /// [`SstReader::get`] without asking the filter first (the caller has).
    ///
    /// # Errors
    /// As [`SstReader::get`].
    pub(crate) fn get_unfiltered(
        &self,
        seek_key: &[u8],
        class: IoClass,
        fill_cache: bool,
    ) -> Result<Option<(SeqNo, ValueType, Bytes)>> {
        let uk = key::user_key(seek_key);
        // With an index search, blocks are visited by entry number in its array; without
        // one, by a cursor over the index block.
        let mut index: Option<BlockIter> = None;
        let mut at = match &self.index_search {
            Some(search) => Some(
                search
                    .seek(&self.index, seek_key)
                    .map_err(|e| self.corrupt(self.index_offset(), e))?,
            ),
            None => {
                let mut it = BlockIter::new(self.index.clone());
                it.seek(seek_key)
                    .map_err(|e| self.corrupt(self.index_offset(), e))?;
                index = Some(it);
                None
            }
        };
        let mut first_block = true;
        loop {
            let h = match (&self.index_search, at) {
                (Some(search), Some(i)) => match search.handle(i) {
                    Some(h) => h,
                    None => return Ok(None),
                },
                _ => {
                    let Some(index) = index.as_ref().filter(|i| i.valid()) else {
                        return Ok(None);
                    };
                    BlockHandle::decode(index.value())
                        .ok_or_else(|| self.corrupt(self.index_offset(), "bad block handle"))?
                }
            };
            let mut data = BlockIter::new(self.read_block(h, class, fill_cache)?);
            let moved = if first_block {
                data.seek(seek_key)
            } else {
                data.seek_to_first()
            };
            moved.map_err(|e| self.corrupt(h.offset, e))?;
            if data.valid() {
                let k = data.key();
                let p = key::parse(k, &self.path, h.offset)?;
                if p.kind == ValueType::RangeDeletion {
                    return Err(self.corrupt(h.offset, "range deletion in a data block"));
                }
                if p.user_key != uk {
                    return Ok(None);
                }
                let (seq, kind) = (p.seq, p.kind);
                return Ok(Some((seq, kind, data.into_value_bytes())));
            }
            first_block = false;
            match (at.as_mut(), index.as_mut()) {
                (Some(i), _) => *i += 1,
                (None, Some(index)) => index
                    .next()
                    .map_err(|e| self.corrupt(self.index_offset(), e))?,
                (None, None) => return Ok(None),
            }
        }
    }

    /// Offset of the index block, named in errors about it.
    pub(crate) fn index_offset(&self) -> u64 {
        self.index_offset
    }

    /// The approximate file offset at which `ikey`'s entries are (the file size past the end).
    ///
    /// # Errors
    /// `Corruption` in the index block.
    pub fn approximate_offset_of(&self, ikey: &[u8]) -> Result<u64> {
        let mut index = BlockIter::new(self.index.clone());
        index
            .seek(ikey)
            .map_err(|e| self.corrupt(self.index_offset(), e))?;
        if !index.valid() {
            return Ok(self.file.len());
        }
        BlockHandle::decode(index.value())
            .map(|h| h.offset)
            .ok_or_else(|| self.corrupt(self.index_offset(), "bad block handle"))
    }

    /// One sample per data block from the index, with no I/O: the block's index key's user
    /// key (at or past the block's last key, before the next block's first) and the block's
    /// stored size. Cutting a compaction at these keys splits it at block boundaries.
    ///
    /// # Errors
    /// `Corruption` in the index block.
    pub fn block_samples(&self) -> Result<Vec<(Vec<u8>, u64)>> {
        let mut index = BlockIter::new(self.index.clone());
        let io = self.index_offset();
        index.seek_to_first().map_err(|e| self.corrupt(io, e))?;
        let mut out = Vec::new();
        while index.valid() {
            let h = BlockHandle::decode(index.value())
                .ok_or_else(|| self.corrupt(io, "bad block handle"))?;
            out.push((key::user_key(index.key()).to_vec(), h.size));
            index.next().map_err(|e| self.corrupt(io, e))?;
        }
        Ok(out)
    }

    /// Reads every data block, checking checksums, key order and the entry counts.
    ///
    /// # Errors
    /// `Corruption` naming the first damaged block; I/O errors.
    pub fn verify(&self) -> Result<()> {
        let mut index = BlockIter::new(self.index.clone());
        let io = self.index_offset();
        index.seek_to_first().map_err(|e| self.corrupt(io, e))?;
        let (mut entries, mut deletions, mut blocks) = (0u64, 0u64, 0u64);
        let mut last: Vec<u8> = Vec::new();
        while index.valid() {
            let h = BlockHandle::decode(index.value())
                .ok_or_else(|| self.corrupt(io, "bad block handle"))?;
            let mut data = BlockIter::new(self.read_uncached_block(h, IoClass::Foreground)?);
            data.seek_to_first()
                .map_err(|e| self.corrupt(h.offset, e))?;
            while data.valid() {
                let p = key::parse(data.key(), &self.path, h.offset)?;
                if p.kind == ValueType::RangeDeletion
                    || (entries > 0 && key::compare(&last, data.key()).is_ge())
                    || key::compare(data.key(), index.key()).is_gt()
                {
                    return Err(self.corrupt(h.offset, "entry out of order or of the wrong type"));
                }
                entries += 1;
                deletions += u64::from(p.kind == ValueType::Deletion);
                last.clear();
                last.extend_from_slice(data.key());
                data.next().map_err(|e| self.corrupt(h.offset, e))?;
            }
            blocks += 1;
            index.next().map_err(|e| self.corrupt(io, e))?;
        }
        let p = &self.properties;
        if entries != p.num_entries || deletions != p.num_deletions || blocks != p.num_data_blocks {
            return Err(self.corrupt(io, "entry or block counts disagree with the properties"));
        }
        Ok(())
    }
}

/// Decodes the range-deletion block: keys `(start, seq, RangeDeletion)`, values `end`.
fn decode_tombstones(block: Block) -> std::result::Result<Vec<RangeTombstone>, &'static str> {
    let mut out = Vec::new();
    let mut it = BlockIter::new(block);
    it.seek_to_first()?;
    while it.valid() {
        let p = key::try_parse(it.key())?;
        if p.kind != ValueType::RangeDeletion {
            return Err("range-deletion block holds another entry type");
        }
        out.push(RangeTombstone {
            start: p.user_key.to_vec(),
            end: it.value().to_vec(),
            seq: p.seq,
        });
        it.next()?;
    }
    Ok(out)
}
