//! Writes a table file: data blocks, filter, range deletions, properties, metaindex,
//! index and footer, in that order (docs/formats/sst.md).
//!
//! Owns: [`SstBuilder`], [`SstInfo`], index separators and the file bounds.
//! Must not touch: the manifest; the caller records the returned [`SstInfo`].
//! Concurrency: one owner; `Send`.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use super::block_builder::BlockBuilder;
use super::block_cache::BlockCache;
use super::bloom::{build_filter, key_hash};
use super::compress::{block_trailer, compress_block, compression_name, TYPE_NONE};
use super::format::{
    BlockHandle, Footer, BLOCK_TRAILER_LEN, FORMAT_VERSION, META_FILTER, META_PROPERTIES,
    META_RANGE_DEL,
};
use super::properties::Properties;
use super::SstOptions;
use crate::error::{Error, Result};
use crate::key::{self, InternalKey, SeqNo, ValueType, MAX_SEQ, TYPE_FOR_SEEK};
use crate::range_del::RangeTombstone;
use crate::storage::WritableFile;

/// Longest key plus value one entry may have, so that every block stays under 4 GiB.
const MAX_ENTRY_LEN: usize = 1 << 31;

/// What a finished table holds; the caller turns it into the manifest's file metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SstInfo {
    /// Size of the file in bytes.
    pub file_size: u64,
    /// Smallest internal key, range tombstone starts included.
    pub smallest: InternalKey,
    /// Largest internal key, tombstone ends included as `(end, MAX_SEQ, RangeDeletion)`.
    pub largest: InternalKey,
    /// Smallest sequence number of any entry or tombstone.
    pub smallest_seq: SeqNo,
    /// Largest sequence number of any entry or tombstone.
    pub largest_seq: SeqNo,
    /// Point entries.
    pub num_entries: u64,
    /// Point deletions.
    pub num_deletions: u64,
    /// Range tombstones.
    pub num_range_deletions: u64,
    /// CRC32C of every byte of the file.
    pub file_checksum: u32,
}

/// Builds one table file from entries in internal-key order.
///
/// After any error the builder refuses further work and returns that error again;
/// the partial file should be deleted.
pub struct SstBuilder {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    opts: SstOptions,
    offset: u64,
    file_crc: u32,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    pending_handle: Option<BlockHandle>,
    last_key: Vec<u8>,
    first_key: Vec<u8>,
    filter_hashes: Vec<u64>,
    /// Write the whole-bit-array filter of older tables (tests of reading them).
    #[cfg(test)]
    pub(crate) whole_filter: bool,
    tombstones: Vec<RangeTombstone>,
    props: Properties,
    scratch: Vec<u8>,
    failed: Option<Error>,
    /// The block cache this table's data blocks go into as they are written, under this
    /// cache id (`SstBuilder::warm_cache`).
    warm: Option<(Arc<BlockCache>, u64)>,
}

impl SstBuilder {
    /// A builder writing to `file` (created at `path`, named in errors).
    pub fn new(file: Box<dyn WritableFile>, path: PathBuf, opts: SstOptions) -> Self {
        SstBuilder {
            file,
            path,
            data_block: BlockBuilder::new(opts.restart_interval),
            index_block: BlockBuilder::new(1),
            opts,
            offset: 0,
            file_crc: 0,
            pending_handle: None,
            last_key: Vec::new(),
            first_key: Vec::new(),
            filter_hashes: Vec::new(),
            #[cfg(test)]
            whole_filter: false,
            tombstones: Vec::new(),
            props: Properties {
                smallest_seq: MAX_SEQ,
                ..Properties::default()
            },
            scratch: Vec::new(),
            failed: None,
            warm: None,
        }
    }

    /// This builder, putting each data block it writes into `cache` under `cache_id` (the
    /// table's file number, as its readers will use) while the cache has room for it
    /// without evicting anything: a table just flushed or compacted is then read from
    /// memory instead of from its file. A block that does not fit is removed from the
    /// cache instead, so that no block of an earlier, abandoned build of the same number
    /// stays under an offset this table's index names. That holds because builds of one
    /// file number never run at the same time and every data block goes through
    /// `flush_data_block`; meta, filter and index blocks are never read from the cache.
    #[must_use]
    pub fn warm_cache(mut self, cache: Arc<BlockCache>, cache_id: u64) -> Self {
        self.warm = Some((cache, cache_id));
        self
    }

    /// Adds a point entry (`ValueType::Value` or `Deletion`); keys must strictly increase
    /// under `key::compare`.
    ///
    /// # Errors
    /// `InvalidArgument` for a malformed key, a range-deletion key, a key out of order or an
    /// entry of 2 GiB or more; I/O errors of the file (after which the builder is unusable).
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let parsed = key::try_parse(ikey).map_err(|r| Error::InvalidArgument(r.to_string()))?;
        if parsed.kind == ValueType::RangeDeletion {
            return Err(Error::InvalidArgument(
                "range deletions go through add_range_tombstone".to_string(),
            ));
        }
        if ikey.len().saturating_add(value.len()) >= MAX_ENTRY_LEN {
            return Err(Error::InvalidArgument("table entry too large".to_string()));
        }
        let first = self.props.num_entries == 0;
        if !first && key::compare(ikey, &self.last_key) != Ordering::Greater {
            return Err(Error::InvalidArgument(
                "table keys must strictly increase".to_string(),
            ));
        }
        if let Some(handle) = self.pending_handle.take() {
            let sep = separator(&self.last_key, ikey);
            self.add_index_entry(&sep, handle);
        }
        if first || key::user_key(&self.last_key) != parsed.user_key {
            self.filter_hashes.push(key_hash(parsed.user_key));
        }
        if first {
            self.first_key = ikey.to_vec();
        }
        self.props.num_entries += 1;
        if parsed.kind == ValueType::Deletion {
            self.props.num_deletions += 1;
        }
        self.note_seq(parsed.seq);
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        self.data_block.add(ikey, value);
        if self.data_block.size_estimate() >= self.opts.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Adds a range tombstone; any order. Empty ranges (`start >= end`) delete nothing and
    /// are dropped.
    pub fn add_range_tombstone(&mut self, t: &RangeTombstone) {
        if t.start < t.end {
            self.note_seq(t.seq);
            self.tombstones.push(t.clone());
        }
    }

    /// Bytes written so far plus the block being built.
    pub fn estimated_size(&self) -> u64 {
        let pending = if self.data_block.is_empty() {
            0
        } else {
            self.data_block.size_estimate()
        };
        self.offset + pending as u64
    }

    /// The path of the file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Point entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    fn note_seq(&mut self, seq: SeqNo) {
        self.props.smallest_seq = self.props.smallest_seq.min(seq);
        self.props.largest_seq = self.props.largest_seq.max(seq);
    }

    fn add_index_entry(&mut self, sep: &[u8], handle: BlockHandle) {
        self.scratch.clear();
        handle.encode_to(&mut self.scratch);
        self.index_block.add(sep, &self.scratch);
    }

    fn append(&mut self, data: &[u8]) -> Result<()> {
        if let Err(e) = self.file.append(data) {
            self.failed = Some(e.clone());
            return Err(e);
        }
        self.file_crc = crc32c::crc32c_append(self.file_crc, data);
        self.offset += data.len() as u64;
        Ok(())
    }

    /// Writes stored contents and their trailer; returns the block's handle.
    fn write_stored(&mut self, contents: &[u8], kind: u8) -> Result<BlockHandle> {
        let handle = BlockHandle {
            offset: self.offset,
            size: contents.len() as u64,
        };
        self.append(contents)?;
        self.append(&block_trailer(contents, kind))?;
        Ok(handle)
    }

    /// Compresses `raw` if worthwhile and writes it.
    fn write_block(&mut self, raw: &[u8]) -> Result<BlockHandle> {
        let mut compressed = Vec::new();
        let kind = compress_block(raw, self.opts.compression, &mut compressed);
        if kind == TYPE_NONE {
            self.write_stored(raw, kind)
        } else {
            self.write_stored(&compressed, kind)
        }
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        let raw = self.data_block.finish().to_vec();
        self.data_block.reset();
        let handle = self.write_block(&raw)?;
        if let Some((cache, cache_id)) = &self.warm {
            if cache.has_room_for(raw.len()) {
                cache.insert(*cache_id, handle.offset, Bytes::from(raw));
            } else {
                cache.remove(*cache_id, handle.offset);
            }
        }
        self.props.num_data_blocks += 1;
        self.props.data_size += handle.size + BLOCK_TRAILER_LEN as u64;
        self.pending_handle = Some(handle);
        Ok(())
    }

    /// Writes the rest of the file and syncs it.
    ///
    /// # Errors
    /// `InvalidArgument` if nothing was added; the first earlier error; I/O errors.
    pub fn finish(mut self) -> Result<SstInfo> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if self.props.num_entries == 0 && self.tombstones.is_empty() {
            return Err(Error::InvalidArgument(
                "a table needs at least one entry or range tombstone".to_string(),
            ));
        }
        self.flush_data_block()?;
        if let Some(handle) = self.pending_handle.take() {
            let sep = successor(&self.last_key);
            self.add_index_entry(&sep, handle);
        }
        let mut meta: Vec<(&'static [u8], BlockHandle)> = Vec::new();

        if self.opts.bloom_bits_per_key > 0 && !self.filter_hashes.is_empty() {
            let (name, filter) = self.filter_block();
            let h = self.write_stored(&filter, TYPE_NONE)?;
            self.props.filter_size = h.size + BLOCK_TRAILER_LEN as u64;
            meta.push((name, h));
        }

        self.tombstones.sort_by(|a, b| {
            a.start
                .cmp(&b.start)
                .then(b.seq.cmp(&a.seq))
                .then(a.end.cmp(&b.end))
        });
        self.props.num_range_deletions = self.tombstones.len() as u64;
        if !self.tombstones.is_empty() {
            let mut b = BlockBuilder::new(self.opts.restart_interval);
            for t in &self.tombstones {
                b.add(
                    &key::internal_key(&t.start, t.seq, ValueType::RangeDeletion),
                    &t.end,
                );
            }
            let raw = b.finish().to_vec();
            meta.push((META_RANGE_DEL, self.write_block(&raw)?));
        }

        let (smallest, largest) = self.bounds();
        self.props.smallest_key = smallest.0.clone();
        self.props.largest_key = largest.0.clone();
        self.props.compression = compression_name(self.opts.compression);
        // The index is compressed now so that its stored size can go into the properties.
        let index_raw = self.index_block.finish().to_vec();
        let mut index_stored = Vec::new();
        let index_kind = compress_block(&index_raw, self.opts.compression, &mut index_stored);
        if index_kind == TYPE_NONE {
            index_stored = index_raw;
        }
        self.props.index_size = (index_stored.len() + BLOCK_TRAILER_LEN) as u64;
        let props_raw = self.props.encode();
        meta.push((META_PROPERTIES, self.write_block(&props_raw)?));

        meta.sort_by(|a, b| a.0.cmp(b.0));
        let mut mb = BlockBuilder::new(1);
        for (name, h) in &meta {
            let mut v = Vec::new();
            h.encode_to(&mut v);
            mb.add(name, &v);
        }
        let meta_raw = mb.finish().to_vec();
        let metaindex = self.write_stored(&meta_raw, TYPE_NONE)?;
        let index = self.write_stored(&index_stored, index_kind)?;
        let footer = Footer {
            metaindex,
            index,
            format_version: FORMAT_VERSION,
        };
        self.append(&footer.encode())?;
        self.file.sync()?;
        Ok(SstInfo {
            file_size: self.offset,
            smallest,
            largest,
            smallest_seq: self.props.smallest_seq,
            largest_seq: self.props.largest_seq,
            num_entries: self.props.num_entries,
            num_deletions: self.props.num_deletions,
            num_range_deletions: self.props.num_range_deletions,
            file_checksum: self.file_crc,
        })
    }

    /// The filter block and its metaindex name.
    fn filter_block(&self) -> (&'static [u8], Vec<u8>) {
        #[cfg(test)]
        if self.whole_filter {
            return (
                super::format::META_FILTER_WHOLE,
                super::bloom::build_whole_filter(&self.filter_hashes, self.opts.bloom_bits_per_key),
            );
        }
        (
            META_FILTER,
            build_filter(&self.filter_hashes, self.opts.bloom_bits_per_key),
        )
    }

    /// The file bounds: point keys widened by tombstone starts and end sentinels.
    fn bounds(&self) -> (InternalKey, InternalKey) {
        let mut smallest: Option<InternalKey> = None;
        let mut largest: Option<InternalKey> = None;
        if self.props.num_entries > 0 {
            smallest = Some(InternalKey(self.first_key.clone()));
            largest = Some(InternalKey(self.last_key.clone()));
        }
        for t in &self.tombstones {
            let lo = InternalKey::new(&t.start, t.seq, ValueType::RangeDeletion);
            let hi = InternalKey::new(&t.end, MAX_SEQ, ValueType::RangeDeletion);
            if smallest.as_ref().is_none_or(|s| lo < *s) {
                smallest = Some(lo);
            }
            if largest.as_ref().is_none_or(|l| hi > *l) {
                largest = Some(hi);
            }
        }
        (smallest.unwrap_or_default(), largest.unwrap_or_default())
    }
}

/// The internal key of `user_key` that sorts before every real entry of it.
fn first_of(user_key: Vec<u8>) -> Vec<u8> {
    let mut k = user_key;
    k.extend_from_slice(&key::pack_trailer(MAX_SEQ, TYPE_FOR_SEEK).to_le_bytes());
    k
}

/// A short key `s` with `last <= s < next` (internal keys, `last < next`).
pub(crate) fn separator(last: &[u8], next: &[u8]) -> Vec<u8> {
    let (a, b) = (key::user_key(last), key::user_key(next));
    let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    if let (Some(&x), Some(&y)) = (a.get(common), b.get(common)) {
        if x < 0xff && x + 1 < y {
            let mut s = a.get(..common).unwrap_or_default().to_vec();
            s.push(x + 1);
            return first_of(s);
        }
    }
    last.to_vec()
}

/// A short key `s >= last` (an internal key).
pub(crate) fn successor(last: &[u8]) -> Vec<u8> {
    let uk = key::user_key(last);
    match uk.iter().position(|b| *b != 0xff) {
        Some(i) if i + 1 < uk.len() => {
            let mut s = uk.get(..i).unwrap_or_default().to_vec();
            s.push(uk.get(i).copied().unwrap_or_default() + 1);
            first_of(s)
        }
        _ => last.to_vec(),
    }
}
