//! Building a matrix row from sorted entries, and relinking an existing row's `next`
//! pointers to a new row below.
//!
//! Owns: [`RowBuilder`], [`build_row`], [`relink`], [`BuiltRow`], [`RelinkedMeta`], and the
//! two-cursor merge that sets each entry's `next` pointer (the thesis's Pseudocode 4-1,
//! corrected: the cursor stops on the first older entry `>=` the new key and is not
//! consumed by it).
//! Must not touch: persistent memory; the caller copies the chunks into extents.
//! Concurrency: a builder has one owner; it only reads the row below.

use std::cmp::Ordering;

use super::format::{key_prefix, ChunkInfo, MetaEntry, RowHeader, RowLink, META_ENTRY_BYTES};
use super::row::RowReader;
use crate::error::{Error, Result};
use crate::key::{self, SeqNo, ValueType, MAX_SEQ};
use crate::range_del::RangeTombstone;

/// Smallest accepted `chunk_bytes`: room for a few metadata entries.
pub const MIN_CHUNK_BYTES: usize = 4 * META_ENTRY_BYTES;

/// A row in DRAM, ready to be copied into persistent extents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltRow {
    /// The header (decoded readers keep it in DRAM; it also goes to persistent memory).
    pub header: Vec<u8>,
    /// Metadata chunks, each at most `chunk_bytes`.
    pub meta_chunks: Vec<Vec<u8>>,
    /// Data chunks, each at most `chunk_bytes` unless it holds one larger entry alone.
    pub data_chunks: Vec<Vec<u8>>,
}

impl BuiltRow {
    /// Opens the row where it is, in DRAM.
    ///
    /// # Errors
    /// `Corruption` if the row does not check (it always does unless memory is damaged).
    pub fn open(self) -> Result<RowReader<Vec<u8>>> {
        RowReader::open(&self.header, self.meta_chunks, self.data_chunks)
    }

    /// Header, metadata and data bytes together.
    pub fn total_bytes(&self) -> u64 {
        let chunks = self.meta_chunks.iter().chain(&self.data_chunks);
        (self.header.len() + chunks.map(Vec::len).sum::<usize>()) as u64
    }
}

/// New metadata for an existing row whose row below changed; its data chunks stay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelinkedMeta {
    /// The new header (same id, new link and metadata checksums).
    pub header: Vec<u8>,
    /// The new metadata chunks, the same sizes as the old ones.
    pub meta_chunks: Vec<Vec<u8>>,
}

/// What the `next` pointers of a new row refer to: a row below and the position it is
/// trimmed to (pointers never point before it, and nothing before it is read).
#[derive(Clone, Copy)]
pub struct Below<'a> {
    row: &'a dyn KeySource,
    start: usize,
}

impl<'a> Below<'a> {
    /// `row`, whose entries before `start` are gone (0 for an untrimmed row).
    pub fn new<E: AsRef<[u8]>>(row: &'a RowReader<E>, start: usize) -> Self {
        Below {
            row,
            start: start.min(row.len()),
        }
    }
}

/// The row below as the builder sees it: keys by position.
trait KeySource {
    fn len(&self) -> usize;
    fn id(&self) -> u64;
    fn key(&self, j: usize) -> Result<&[u8]>;
}

impl<E: AsRef<[u8]>> KeySource for RowReader<E> {
    fn len(&self) -> usize {
        RowReader::len(self)
    }
    fn id(&self) -> u64 {
        RowReader::id(self)
    }
    fn key(&self, j: usize) -> Result<&[u8]> {
        RowReader::key(self, j)
    }
}

/// The corrected two-cursor merge: a cursor on the row below that only moves forward.
struct BelowCursor<'a> {
    below: Below<'a>,
    pos: usize,
}

impl BelowCursor<'_> {
    /// The first position `>= pos` whose key is `>= ikey`; keys must come in order.
    fn advance(&mut self, ikey: &[u8]) -> Result<u32> {
        let row = self.below.row;
        while self.pos < row.len() && key::compare(row.key(self.pos)?, ikey) == Ordering::Less {
            self.pos += 1;
        }
        u32::try_from(self.pos).map_err(|_| Error::Internal("row below too large".into()))
    }
    fn link(&self) -> RowLink {
        RowLink {
            row_id: self.below.row.id(),
            entries: self.below.row.len() as u64,
        }
    }
}

/// Builds one row from point entries added in strictly increasing internal-key order.
pub struct RowBuilder<'a> {
    id: u64,
    chunk_bytes: usize,
    per_meta_chunk: usize,
    below: Option<BelowCursor<'a>>,
    meta_chunks: Vec<Vec<u8>>,
    data_chunks: Vec<Vec<u8>>,
    last_key: Vec<u8>,
    entries: u64,
    deletions: u64,
    seqs: Option<(SeqNo, SeqNo)>,
    data_bytes: u64,
    smallest_key: Vec<u8>,
    tombstones: Vec<RangeTombstone>,
}

impl<'a> RowBuilder<'a> {
    /// A builder for row `id` on top of `below`, cutting chunks at `chunk_bytes`.
    ///
    /// # Errors
    /// `InvalidArgument` if `chunk_bytes` is below [`MIN_CHUNK_BYTES`] or over 4 GiB.
    pub fn new(id: u64, below: Option<Below<'a>>, chunk_bytes: usize) -> Result<Self> {
        if !(MIN_CHUNK_BYTES..=u32::MAX as usize).contains(&chunk_bytes) {
            return Err(Error::InvalidArgument(format!(
                "matrix chunk_bytes must be in {MIN_CHUNK_BYTES}..=4 GiB"
            )));
        }
        Ok(RowBuilder {
            id,
            chunk_bytes,
            per_meta_chunk: chunk_bytes / META_ENTRY_BYTES,
            below: below.map(|b| BelowCursor {
                pos: b.start,
                below: b,
            }),
            meta_chunks: Vec::new(),
            data_chunks: Vec::new(),
            last_key: Vec::new(),
            entries: 0,
            deletions: 0,
            seqs: None,
            data_bytes: 0,
            smallest_key: Vec::new(),
            tombstones: Vec::new(),
        })
    }

    /// Entries added so far.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Key and value bytes added so far.
    pub fn data_bytes(&self) -> u64 {
        self.data_bytes
    }

    /// The last internal key added (empty before the first).
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    fn note_seq(&mut self, seq: SeqNo) {
        let (lo, hi) = self.seqs.unwrap_or((seq, seq));
        self.seqs = Some((lo.min(seq), hi.max(seq)));
    }

    /// Appends a point entry (`Value` or `Deletion`).
    ///
    /// # Errors
    /// `InvalidArgument` for a key that is not an internal key of a point entry, a key not
    /// after the previous one, a key or value over 4 GiB, or a row past 2^32 entries;
    /// errors reading the row below.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let bad = |r: &str| Error::InvalidArgument(format!("matrix row {}: {r}", self.id));
        let p = key::try_parse(ikey).map_err(bad)?;
        if p.kind == ValueType::RangeDeletion {
            return Err(bad("range deletions go in as tombstones"));
        }
        if self.entries > 0 && key::compare(&self.last_key, ikey) != Ordering::Less {
            return Err(bad("keys must be added in increasing order"));
        }
        let (key_len, value_len) = (u32::try_from(ikey.len()), u32::try_from(value.len()));
        let (Ok(key_len), Ok(value_len)) = (key_len, value_len) else {
            return Err(bad("key or value too large"));
        };
        let entry_len = ikey.len() + value.len();
        if entry_len > u32::MAX as usize || self.entries >= u64::from(u32::MAX) {
            return Err(bad("entry or row too large"));
        }
        let next = match self.below.as_mut() {
            Some(c) => c.advance(ikey)?,
            None => 0,
        };
        let fits = self
            .data_chunks
            .last()
            .is_some_and(|c| c.len() + entry_len <= self.chunk_bytes);
        if !fits {
            self.data_chunks.push(Vec::new());
        }
        let chunk = (self.data_chunks.len() - 1) as u32;
        let Some(data) = self.data_chunks.last_mut() else {
            return Err(bad("no data chunk"));
        };
        let offset = data.len() as u32;
        data.extend_from_slice(ikey);
        data.extend_from_slice(value);
        if self
            .meta_chunks
            .last()
            .is_none_or(|m| m.len() / META_ENTRY_BYTES >= self.per_meta_chunk)
        {
            self.meta_chunks.push(Vec::new());
        }
        if let Some(meta) = self.meta_chunks.last_mut() {
            let m = MetaEntry {
                chunk,
                offset,
                key_len,
                value_len,
                next,
                prefix: key_prefix(p.user_key),
            };
            m.encode_to(meta);
        }
        if self.entries == 0 {
            self.smallest_key = ikey.to_vec();
        }
        self.entries += 1;
        self.deletions += u64::from(p.kind == ValueType::Deletion);
        self.data_bytes += entry_len as u64;
        self.note_seq(p.seq);
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        Ok(())
    }

    /// Adds a range tombstone (any order; stored as given).
    ///
    /// # Errors
    /// `InvalidArgument` for a sequence number past `MAX_SEQ`.
    pub fn add_range_tombstone(&mut self, t: &RangeTombstone) -> Result<()> {
        if t.seq > MAX_SEQ {
            return Err(Error::InvalidArgument(
                "tombstone sequence too large".into(),
            ));
        }
        self.note_seq(t.seq);
        self.tombstones.push(t.clone());
        Ok(())
    }

    /// Finishes the row: checksums every chunk and encodes the header.
    ///
    /// # Errors
    /// `InvalidArgument` if the header would not fit its fields.
    pub fn finish(self) -> Result<BuiltRow> {
        let infos = |cs: &[Vec<u8>]| {
            cs.iter()
                .map(|c| ChunkInfo::of(c))
                .collect::<Result<Vec<_>>>()
        };
        let (smallest_seq, largest_seq) = self.seqs.unwrap_or((0, 0));
        let header = RowHeader {
            id: self.id,
            below: self.below.as_ref().map(BelowCursor::link),
            entries: self.entries,
            entries_per_meta_chunk: self.per_meta_chunk as u32,
            meta_chunks: infos(&self.meta_chunks)?,
            data_chunks: infos(&self.data_chunks)?,
            smallest_seq,
            largest_seq,
            num_deletions: self.deletions,
            data_bytes: self.data_bytes,
            smallest_key: self.smallest_key,
            largest_key: self.last_key,
            tombstones: self.tombstones,
        };
        Ok(BuiltRow {
            header: header.encode()?,
            meta_chunks: self.meta_chunks,
            data_chunks: self.data_chunks,
        })
    }
}

/// Builds row `id` from `entries` (internal key and value, strictly increasing) and the
/// memtable's range `tombstones`, linking its `next` pointers to `below`: the two-cursor
/// merge reads each entry of the row below at most once, so the cost is
/// O(new entries + entries below).
///
/// # Errors
/// As [`RowBuilder::new`], [`RowBuilder::add`] and [`RowBuilder::finish`].
pub fn build_row<K, V>(
    id: u64,
    entries: impl IntoIterator<Item = (K, V)>,
    tombstones: &[RangeTombstone],
    below: Option<Below<'_>>,
    chunk_bytes: usize,
) -> Result<BuiltRow>
where
    K: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    let mut b = RowBuilder::new(id, below, chunk_bytes)?;
    for (k, v) in entries {
        b.add(k.as_ref(), v.as_ref())?;
    }
    for t in tombstones {
        b.add_range_tombstone(t)?;
    }
    b.finish()
}

/// New metadata for `row` with its `next` pointers rebuilt against `below`, by the same
/// two-cursor merge; the data chunks are unchanged. Entries before `row_start` (the row
/// is trimmed there) are not read: their pointers are set to the row below's start.
///
/// # Errors
/// Errors reading either row; `InvalidArgument` if the header does not re-encode.
pub fn relink<E: AsRef<[u8]>>(
    row: &RowReader<E>,
    row_start: usize,
    below: Option<Below<'_>>,
) -> Result<RelinkedMeta> {
    let mut cursor = below.map(|b| BelowCursor {
        pos: b.start,
        below: b,
    });
    let per = row.header().entries_per_meta_chunk as usize;
    let mut meta_chunks: Vec<Vec<u8>> = Vec::with_capacity(row.meta_chunks().len());
    for j in 0..row.len() {
        let mut m = row.meta_entry(j)?;
        m.next = match cursor.as_mut() {
            Some(c) if j >= row_start => c.advance(row.key(j)?)?,
            Some(c) => c.pos as u32,
            None => 0,
        };
        if j % per.max(1) == 0 {
            meta_chunks.push(Vec::with_capacity(per * META_ENTRY_BYTES));
        }
        if let Some(chunk) = meta_chunks.last_mut() {
            m.encode_to(chunk);
        }
    }
    let mut header = row.header().clone();
    header.below = cursor.as_ref().map(BelowCursor::link);
    header.meta_chunks = meta_chunks
        .iter()
        .map(|c| ChunkInfo::of(c))
        .collect::<Result<_>>()?;
    Ok(RelinkedMeta {
        header: header.encode()?,
        meta_chunks,
    })
}
