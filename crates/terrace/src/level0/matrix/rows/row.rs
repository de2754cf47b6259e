//! Reading one matrix row: validation on open, then entries by position, bounded binary
//! search, and the row's range tombstones.
//!
//! Owns: [`RowReader`], the decoded header it keeps in DRAM and the checks of every stored
//! byte (docs/formats/matrix-row.md); the walk over the metadata entries is in `check`;
//! the [`ReadMeter`] a reader tells of each read of its chunks.
//! Must not touch: other rows (a `next` pointer is only a number here) or trims, which the
//! group keeps; a reader never writes its chunks.
//! Concurrency: immutable after `open`; `Send`/`Sync` when the chunk type is.

use std::cmp::Ordering;
use std::path::PathBuf;
use std::sync::Arc;

use super::format::{key_prefix, MetaEntry, RowHeader, RowLink, META_ENTRY_BYTES};
use crate::error::{Error, Result};
use crate::key::{self, SeqNo, MAX_SEQ};
use crate::range_del::{FragmentedTombstones, RangeTombstone};

mod check;

/// Told of the bytes a [`RowReader`] reads from its chunks: each metadata entry, each key
/// and value it returns or compares, an iterator's entry when it moves onto it, and every
/// chunk the open-time check reads. A row on persistent memory reports them to its
/// region's bandwidth limit; a reader without a meter counts nothing.
pub trait ReadMeter: Send + Sync {
    /// `bytes` of the row's chunks were read.
    fn read(&self, bytes: u64);
}

/// One row of the matrix container, read from its metadata and data chunks.
///
/// `E` is whatever holds a chunk's bytes: a `Vec<u8>` in DRAM, a persistent-memory extent.
/// A chunk may be longer than the length its header records (extents are rounded up to
/// pages); the extra bytes are never read. Positions are `0..len()` in internal-key order.
pub struct RowReader<E> {
    header: RowHeader,
    meta: Vec<E>,
    /// The data chunks from `released` on (`data[0]` is chunk `released`).
    data: Vec<E>,
    /// Leading data chunks given back after column compaction consumed their entries.
    released: usize,
    /// The first entry whose data chunk is still held.
    first_live: usize,
    tombstones: FragmentedTombstones,
    name: PathBuf,
    meter: Option<Arc<dyn ReadMeter>>,
}

impl<E> std::fmt::Debug for RowReader<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowReader")
            .field("id", &self.header.id)
            .field("entries", &self.header.entries)
            .field("below", &self.header.below)
            .finish()
    }
}

impl<E: AsRef<[u8]>> RowReader<E> {
    /// Opens a row from its header bytes and its chunks, and checks all of it: the header
    /// checksum, every chunk's CRC32C, and every metadata entry (its data lies inside its
    /// chunk and the entries tile the chunks in order, keys are valid internal keys of
    /// point entries in strictly increasing order, prefixes match the keys, `next`
    /// pointers do not decrease and stay within the row below, and the header's key
    /// bounds, sequence range and deletion count are those of the entries).
    ///
    /// The check reads the whole row once; afterwards only the decoded header is in DRAM.
    ///
    /// # Errors
    /// `Corruption` with the place (`matrix-row-<id>/meta-<i>` or `/data-<i>`) and byte.
    pub fn open(header: &[u8], meta: Vec<E>, data: Vec<E>) -> Result<Self> {
        Self::open_released(header, meta, data, 0)
    }

    /// Opens a row whose first `released` data chunks were given back (column compaction
    /// consumed their entries): `data` holds the chunks from `released` on. The checks of
    /// [`RowReader::open`] apply to everything still held; of the entries in released
    /// chunks only the metadata (placement and `next` pointers) is checked.
    ///
    /// # Errors
    /// As [`RowReader::open`]; `Corruption` if `released` exceeds the row's data chunks.
    pub fn open_released(
        header: &[u8],
        meta: Vec<E>,
        data: Vec<E>,
        released: usize,
    ) -> Result<Self> {
        Self::open_metered(header, meta, data, released, None)
    }

    /// [`RowReader::open_released`] telling `meter` of every read of the chunks, the
    /// check's included (see [`ReadMeter`]).
    ///
    /// # Errors
    /// As [`RowReader::open_released`].
    pub fn open_metered(
        header: &[u8],
        meta: Vec<E>,
        data: Vec<E>,
        released: usize,
        meter: Option<Arc<dyn ReadMeter>>,
    ) -> Result<Self> {
        let header = RowHeader::decode(header)?;
        let name = PathBuf::from(format!("matrix-row-{}", header.id));
        let count_err =
            |what: &str| Error::corruption(name.clone(), 0, format!("{what} chunk count differs"));
        if meta.len() != header.meta_chunks.len() {
            return Err(count_err("metadata"));
        }
        if data.len().checked_add(released) != Some(header.data_chunks.len()) {
            return Err(count_err("data"));
        }
        let infos = header
            .meta_chunks
            .iter()
            .zip(&meta)
            .map(|(i, c)| ("meta", i, c));
        let data_infos = header
            .data_chunks
            .iter()
            .skip(released)
            .zip(&data)
            .map(|(i, c)| ("data", i, c));
        for (n, (kind, info, chunk)) in infos.chain(data_infos).enumerate() {
            if let Some(m) = &meter {
                m.read(u64::from(info.len));
            }
            let bytes = chunk.as_ref().get(..info.len as usize);
            if bytes.is_none_or(|b| crc32c::crc32c(b) != info.crc) {
                let idx = n.checked_sub(meta.len()).map_or(n, |d| d + released);
                return Err(Error::corruption(
                    name.join(format!("{kind}-{idx}")),
                    0,
                    "chunk checksum mismatch or chunk too short",
                ));
            }
        }
        let tombstones = FragmentedTombstones::new(&header.tombstones, MAX_SEQ);
        let mut row = RowReader {
            header,
            meta,
            data,
            released,
            first_live: 0,
            tombstones,
            name,
            meter,
        };
        row.check_entries()?;
        row.first_live = row.first_entry_in(released)?;
        Ok(row)
    }

    /// The same row with its first `released` data chunks given back (their entries are
    /// below every reader's trim). Nothing is checked again.
    ///
    /// # Errors
    /// `InvalidArgument` if `released` is below the chunks already released or above the
    /// row's data chunks.
    pub fn release_data_chunks(&self, released: usize) -> Result<Self>
    where
        E: Clone,
    {
        let skip = released
            .checked_sub(self.released)
            .filter(|s| *s <= self.data.len());
        let Some(skip) = skip else {
            return Err(Error::Internal(format!(
                "matrix row {}: cannot release {released} of {} data chunks ({} released)",
                self.header.id,
                self.header.data_chunks.len(),
                self.released
            )));
        };
        let mut row = RowReader {
            header: self.header.clone(),
            meta: self.meta.clone(),
            data: self.data.get(skip..).unwrap_or_default().to_vec(),
            released,
            first_live: 0,
            tombstones: self.tombstones.clone(),
            name: self.name.clone(),
            meter: self.meter.clone(),
        };
        row.first_live = row.first_entry_in(released)?;
        Ok(row)
    }

    /// The first entry whose data chunk is `>= chunk` (`len()` if none).
    fn first_entry_in(&self, chunk: usize) -> Result<usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if (self.meta_entry(mid)?.chunk as usize) < chunk {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    fn corrupt_meta(&self, j: usize, reason: &str) -> Error {
        let per = (self.header.entries_per_meta_chunk as usize).max(1);
        Error::corruption(
            self.name.join(format!("meta-{}", j / per)),
            ((j % per) * META_ENTRY_BYTES) as u64,
            reason,
        )
    }

    /// The decoded header.
    pub fn header(&self) -> &RowHeader {
        &self.header
    }

    /// The row's id.
    pub fn id(&self) -> u64 {
        self.header.id
    }

    /// Number of point entries.
    pub fn len(&self) -> usize {
        self.header.entries as usize
    }

    /// True if the row has no point entries (it may still have range tombstones).
    pub fn is_empty(&self) -> bool {
        self.header.entries == 0
    }

    /// The row the `next` pointers refer to.
    pub fn below(&self) -> Option<RowLink> {
        self.header.below
    }

    /// The metadata chunks, as given to `open`.
    pub fn meta_chunks(&self) -> &[E] {
        &self.meta
    }

    /// The data chunks still held, as given to `open` (a relinked row reuses them).
    pub fn data_chunks(&self) -> &[E] {
        &self.data
    }

    /// How many leading data chunks were released.
    pub fn released_chunks(&self) -> usize {
        self.released
    }

    /// The first entry still readable: entries before it were in released chunks.
    pub fn first_live(&self) -> usize {
        self.first_live
    }

    /// Gives the chunks back: `(meta, data)`, the data chunks still held.
    pub fn into_chunks(self) -> (Vec<E>, Vec<E>) {
        (self.meta, self.data)
    }

    /// Tells the meter, if any, that `bytes` of the chunks were read.
    #[inline]
    pub(crate) fn charge(&self, bytes: usize) {
        if let Some(m) = &self.meter {
            m.read(bytes as u64);
        }
    }

    /// The metadata entry at `j` (metered).
    #[inline]
    pub(crate) fn meta_entry(&self, j: usize) -> Result<MetaEntry> {
        let per = self.header.entries_per_meta_chunk as usize;
        if j >= self.len() || per == 0 {
            return Err(Error::Internal(format!(
                "matrix row {}: entry {j} of {}",
                self.header.id,
                self.len()
            )));
        }
        let at = (j % per) * META_ENTRY_BYTES;
        self.charge(META_ENTRY_BYTES);
        self.meta
            .get(j / per)
            .and_then(|c| c.as_ref().get(at..at + META_ENTRY_BYTES))
            .and_then(MetaEntry::decode)
            .ok_or_else(|| self.corrupt_meta(j, "metadata entry outside its chunk"))
    }

    /// `len` bytes at `offset` of data chunk `chunk` (not metered: the caller charges
    /// what it reads once, however often it looks).
    #[inline]
    pub(crate) fn data_slice(&self, chunk: u32, offset: usize, len: usize) -> Option<&[u8]> {
        let c = self
            .data
            .get((chunk as usize).checked_sub(self.released)?)?
            .as_ref();
        c.get(offset..offset.checked_add(len)?)
    }

    fn entry_at(&self, j: usize, m: &MetaEntry) -> Result<(&[u8], &[u8])> {
        if (m.chunk as usize) < self.released {
            return Err(Error::Internal(format!(
                "matrix row {}: entry {j} was released by column compaction",
                self.header.id
            )));
        }
        let (o, k, v) = (m.offset as usize, m.key_len as usize, m.value_len as usize);
        match (
            self.data_slice(m.chunk, o, k),
            self.data_slice(m.chunk, o + k, v),
        ) {
            (Some(key), Some(value)) => Ok((key, value)),
            _ => Err(self.corrupt_meta(j, "entry outside its data chunk")),
        }
    }

    /// The internal key at `j`.
    ///
    /// # Errors
    /// `InvalidArgument` if `j >= len()`; `Corruption` cannot happen after `open`.
    pub fn key(&self, j: usize) -> Result<&[u8]> {
        let m = self.meta_entry(j)?;
        self.charge(m.key_len as usize);
        Ok(self.entry_at(j, &m)?.0)
    }

    /// The internal key and value at `j`.
    ///
    /// # Errors
    /// As [`RowReader::key`].
    pub fn entry(&self, j: usize) -> Result<(&[u8], &[u8])> {
        let m = self.meta_entry(j)?;
        self.charge(m.key_len as usize + m.value_len as usize);
        self.entry_at(j, &m)
    }

    /// The `next` pointer of entry `j`: the first position of the row below whose key is
    /// `>=` this entry's key (the row below's length if none is).
    ///
    /// # Errors
    /// As [`RowReader::key`].
    pub fn next_index(&self, j: usize) -> Result<usize> {
        Ok(self.meta_entry(j)?.next as usize)
    }

    /// Orders entry `j` against `target`, trying the key prefix before the key.
    #[inline]
    fn cmp_at(&self, j: usize, target: &[u8], target_prefix: u64) -> Result<Ordering> {
        let m = self.meta_entry(j)?;
        match m.prefix.cmp(&target_prefix) {
            Ordering::Equal => {
                self.charge(m.key_len as usize);
                Ok(key::compare(self.entry_at(j, &m)?.0, target))
            }
            o => Ok(o),
        }
    }

    /// The first position in `[lo, hi)` whose key is `>= target` (an internal key), or
    /// `hi` if there is none. `hi` is clamped to `len()` and `lo` to `hi`.
    ///
    /// # Errors
    /// As [`RowReader::key`].
    pub fn lower_bound(&self, target: &[u8], lo: usize, hi: usize) -> Result<usize> {
        self.partition(target, lo, hi, |o| o == Ordering::Less)
    }

    /// The first position in `[lo, hi)` whose key is `> target`, or `hi`.
    ///
    /// # Errors
    /// As [`RowReader::key`].
    pub fn upper_bound(&self, target: &[u8], lo: usize, hi: usize) -> Result<usize> {
        self.partition(target, lo, hi, |o| o != Ordering::Greater)
    }

    fn partition(
        &self,
        target: &[u8],
        lo: usize,
        hi: usize,
        before: impl Fn(Ordering) -> bool,
    ) -> Result<usize> {
        let prefix = key_prefix(key::user_key(target));
        let mut hi = hi.min(self.len());
        let mut lo = lo.min(hi);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(self.cmp_at(mid, target, prefix)?) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// The first position whose user key is `>= user_key`: where a row trimmed at
    /// `user_key` starts.
    ///
    /// # Errors
    /// As [`RowReader::key`].
    pub fn trim_start(&self, user_key: &[u8]) -> Result<usize> {
        self.lower_bound(&key::seek_key(user_key, MAX_SEQ), 0, self.len())
    }

    /// The row's range tombstones.
    pub fn range_tombstones(&self) -> &[RangeTombstone] {
        &self.header.tombstones
    }

    /// The newest sequence number `<= snap` of a tombstone of this row covering
    /// `user_key`, or 0.
    pub fn max_covering_tombstone(&self, user_key: &[u8], snap: SeqNo) -> SeqNo {
        self.tombstones
            .fragment_for(user_key)
            .and_then(|f| f.seqs.iter().find(|s| **s <= snap).copied())
            .unwrap_or(0)
    }

    /// The data chunk holding entry `j`: the chunks before it hold only entries before
    /// `j`, so a row trimmed to start at `j` no longer needs them.
    ///
    /// # Errors
    /// As [`RowReader::key`].
    pub fn data_chunk_of(&self, j: usize) -> Result<usize> {
        Ok(self.meta_entry(j)?.chunk as usize)
    }
}
