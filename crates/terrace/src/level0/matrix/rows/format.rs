//! The byte layout of a matrix row (docs/formats/matrix-row.md): the row header and the
//! fixed-size metadata entry, with their encoders and bounded decoders.
//!
//! Owns: [`RowHeader`], [`RowLink`], [`ChunkInfo`], the metadata entry and the key prefix.
//! Must not touch: chunks' contents beyond one metadata entry; `row` validates a whole row.
//! Concurrency: plain data and pure functions.

use std::path::PathBuf;

use crate::coding::{get_fixed32, get_fixed64, put_fixed32, put_fixed64};
use crate::error::{Error, Result};
use crate::key::{SeqNo, MAX_SEQ};
use crate::range_del::RangeTombstone;

/// `"TMRX"` in byte order: the first four bytes of every row header.
const MAGIC: u32 = u32::from_le_bytes(*b"TMRX");

/// The row format this code writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Bytes of one metadata entry.
pub const META_ENTRY_BYTES: usize = 28;

/// Bytes of the user-key prefix kept in a metadata entry.
pub const PREFIX_BYTES: usize = 8;

/// Bytes of the fixed part of the header, before the chunk table.
const FIXED_BYTES: usize = 96;

/// Header flag: the `next` pointers refer to the row named by `below`.
const FLAG_LINKED: u32 = 1;

/// The row whose positions a row's `next` pointers hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowLink {
    /// Id of the row below.
    pub row_id: u64,
    /// Its entry count when the pointers were built.
    pub entries: u64,
}

/// Length and CRC32C of one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkInfo {
    /// Bytes of the chunk (an extent holding it may be longer).
    pub len: u32,
    /// CRC32C of those bytes.
    pub crc: u32,
}

impl ChunkInfo {
    /// Length and checksum of `bytes`.
    pub(crate) fn of(bytes: &[u8]) -> Result<ChunkInfo> {
        let len = u32::try_from(bytes.len())
            .map_err(|_| Error::InvalidArgument("matrix row chunk over 4 GiB".into()))?;
        Ok(ChunkInfo {
            len,
            crc: crc32c::crc32c(bytes),
        })
    }
}

/// A row's header, decoded; readers keep it in DRAM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowHeader {
    /// The caller's id of the row (unique among live rows).
    pub id: u64,
    /// The row the `next` pointers were built against, if any.
    pub below: Option<RowLink>,
    /// Number of point entries.
    pub entries: u64,
    /// Metadata entries per metadata chunk (the last chunk may hold fewer).
    pub entries_per_meta_chunk: u32,
    /// The metadata chunks, in entry order.
    pub meta_chunks: Vec<ChunkInfo>,
    /// The data chunks, in entry order.
    pub data_chunks: Vec<ChunkInfo>,
    /// Smallest sequence number of an entry or range tombstone (0 for an empty row).
    pub smallest_seq: SeqNo,
    /// Largest sequence number of an entry or range tombstone.
    pub largest_seq: SeqNo,
    /// Point deletions among the entries.
    pub num_deletions: u64,
    /// Key and value bytes of all entries (the data chunks' total length).
    pub data_bytes: u64,
    /// First entry's internal key (empty if there are no entries).
    pub smallest_key: Vec<u8>,
    /// Last entry's internal key (empty if there are no entries).
    pub largest_key: Vec<u8>,
    /// The row's range tombstones, in the order written.
    pub tombstones: Vec<RangeTombstone>,
}

impl RowHeader {
    /// The header's bytes, checksum included.
    pub(crate) fn encode(&self) -> Result<Vec<u8>> {
        let too_big = |what: &str| Error::InvalidArgument(format!("matrix row: {what} too large"));
        let count32 = |n: usize, what: &str| u32::try_from(n).map_err(|_| too_big(what));
        let mut b = Vec::with_capacity(FIXED_BYTES + 128);
        put_fixed32(&mut b, MAGIC);
        put_fixed32(&mut b, FORMAT_VERSION);
        put_fixed32(&mut b, 0); // header length, patched below
        put_fixed32(&mut b, if self.below.is_some() { FLAG_LINKED } else { 0 });
        put_fixed64(&mut b, self.id);
        put_fixed64(&mut b, self.below.map_or(0, |l| l.row_id));
        put_fixed64(&mut b, self.below.map_or(0, |l| l.entries));
        put_fixed64(&mut b, self.entries);
        put_fixed32(&mut b, self.entries_per_meta_chunk);
        put_fixed32(&mut b, count32(self.meta_chunks.len(), "meta chunk count")?);
        put_fixed32(&mut b, count32(self.data_chunks.len(), "data chunk count")?);
        put_fixed32(&mut b, count32(self.tombstones.len(), "tombstone count")?);
        put_fixed64(&mut b, self.smallest_seq);
        put_fixed64(&mut b, self.largest_seq);
        put_fixed64(&mut b, self.num_deletions);
        put_fixed64(&mut b, self.data_bytes);
        for c in self.meta_chunks.iter().chain(&self.data_chunks) {
            put_fixed32(&mut b, c.len);
            put_fixed32(&mut b, c.crc);
        }
        let put_bytes = |b: &mut Vec<u8>, s: &[u8]| -> Result<()> {
            put_fixed32(b, count32(s.len(), "key")?);
            b.extend_from_slice(s);
            Ok(())
        };
        put_bytes(&mut b, &self.smallest_key)?;
        put_bytes(&mut b, &self.largest_key)?;
        for t in &self.tombstones {
            put_bytes(&mut b, &t.start)?;
            put_bytes(&mut b, &t.end)?;
            put_fixed64(&mut b, t.seq);
        }
        let len = count32(b.len() + 4, "header")?;
        b.get_mut(8..12)
            .ok_or_else(|| too_big("header"))?
            .copy_from_slice(&len.to_le_bytes());
        let crc = crc32c::crc32c(&b);
        put_fixed32(&mut b, crc);
        Ok(b)
    }

    /// Decodes a header from the start of `bytes` (which may be longer: an extent is
    /// rounded up to pages). Checks the magic, version, length and checksum first, then
    /// every count against the others; see the format page for the rules.
    ///
    /// # Errors
    /// `Corruption` naming the byte where decoding stopped.
    pub(crate) fn decode(bytes: &[u8]) -> Result<RowHeader> {
        let mut c = Cursor::new(bytes, "matrix-row header".into());
        if c.u32()? != MAGIC {
            return Err(c.bad_at(0, "bad magic"));
        }
        if c.u32()? != FORMAT_VERSION {
            return Err(c.bad_at(4, "unknown format version"));
        }
        let len = c.u32()? as usize;
        if len < FIXED_BYTES + 4 || len > bytes.len() {
            return Err(c.bad_at(8, "header length out of range"));
        }
        let (body, crc) = (bytes.get(..len - 4), get_fixed32(bytes, len - 4));
        match (body, crc) {
            (Some(body), Some(crc)) if crc32c::crc32c(body) == crc => {}
            _ => return Err(c.bad_at(len as u64 - 4, "header checksum mismatch")),
        }
        c.buf = body.unwrap_or_default();
        let flags = c.u32()?;
        if flags & !FLAG_LINKED != 0 {
            return Err(c.bad_at(12, "unknown header flags"));
        }
        let id = c.u64()?;
        let (below_id, below_entries) = (c.u64()?, c.u64()?);
        let below = if flags & FLAG_LINKED != 0 {
            Some(RowLink {
                row_id: below_id,
                entries: below_entries,
            })
        } else if below_id != 0 || below_entries != 0 {
            return Err(c.bad_at(24, "link fields set on an unlinked row"));
        } else {
            None
        };
        let entries = c.u64()?;
        let entries_per_meta_chunk = c.u32()?;
        let (n_meta, n_data, n_tomb) = (c.u32()?, c.u32()?, c.u32()?);
        let (smallest_seq, largest_seq) = (c.u64()?, c.u64()?);
        let (num_deletions, data_bytes) = (c.u64()?, c.u64()?);
        let mut meta_chunks = Vec::new();
        for _ in 0..n_meta {
            meta_chunks.push(c.chunk()?);
        }
        let mut data_chunks = Vec::new();
        for _ in 0..n_data {
            data_chunks.push(c.chunk()?);
        }
        let smallest_key = c.bytes()?.to_vec();
        let largest_key = c.bytes()?.to_vec();
        let mut tombstones = Vec::new();
        for _ in 0..n_tomb {
            let start = c.bytes()?.to_vec();
            let end = c.bytes()?.to_vec();
            let seq = c.u64()?;
            if seq > MAX_SEQ {
                return Err(c.bad("tombstone sequence number out of range"));
            }
            tombstones.push(RangeTombstone { start, end, seq });
        }
        if c.pos != c.buf.len() {
            return Err(c.bad("bytes left over in header"));
        }
        let h = RowHeader {
            id,
            below,
            entries,
            entries_per_meta_chunk,
            meta_chunks,
            data_chunks,
            smallest_seq,
            largest_seq,
            num_deletions,
            data_bytes,
            smallest_key,
            largest_key,
            tombstones,
        };
        h.check_counts().map_err(|r| c.bad_at(0, r))?;
        Ok(h)
    }

    /// The header's counts agree with each other.
    fn check_counts(&self) -> std::result::Result<(), &'static str> {
        let per = u64::from(self.entries_per_meta_chunk);
        if self.entries > u64::from(u32::MAX) {
            return Err("more entries than a row may hold");
        }
        if per == 0 || self.entries.div_ceil(per) != self.meta_chunks.len() as u64 {
            return Err("metadata chunk count does not match the entry count");
        }
        for (i, m) in self.meta_chunks.iter().enumerate() {
            let held = (self.entries - per * i as u64).min(per);
            if u64::from(m.len) != held * META_ENTRY_BYTES as u64 {
                return Err("metadata chunk length does not match its entries");
            }
        }
        let total: u64 = self.data_chunks.iter().map(|d| u64::from(d.len)).sum();
        if total != self.data_bytes || (self.entries == 0) != self.data_chunks.is_empty() {
            return Err("data chunk lengths do not match the data bytes");
        }
        if self.data_chunks.iter().any(|d| d.len == 0) {
            return Err("empty data chunk");
        }
        if self.smallest_seq > self.largest_seq || self.largest_seq > MAX_SEQ {
            return Err("sequence range out of order");
        }
        if self.num_deletions > self.entries {
            return Err("more deletions than entries");
        }
        if self.below.is_some_and(|l| l.entries > u64::from(u32::MAX)) {
            return Err("row below larger than a row may be");
        }
        Ok(())
    }
}

/// One entry of the metadata array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MetaEntry {
    /// Data chunk holding the entry.
    pub chunk: u32,
    /// Byte offset of the key in that chunk; the value follows the key.
    pub offset: u32,
    /// Internal-key length.
    pub key_len: u32,
    /// Value length.
    pub value_len: u32,
    /// Index of the first entry of the row below `>=` this entry's key.
    pub next: u32,
    /// [`key_prefix`] of the entry's user key.
    pub prefix: u64,
}

impl MetaEntry {
    /// Appends the entry's 28 bytes to `buf`.
    pub(crate) fn encode_to(&self, buf: &mut Vec<u8>) {
        for v in [
            self.chunk,
            self.offset,
            self.key_len,
            self.value_len,
            self.next,
        ] {
            put_fixed32(buf, v);
        }
        buf.extend_from_slice(&self.prefix.to_be_bytes());
    }

    /// Decodes the entry at the start of `b`; `None` if `b` is too short.
    #[inline]
    pub(crate) fn decode(b: &[u8]) -> Option<MetaEntry> {
        let prefix = b.get(20..28)?;
        Some(MetaEntry {
            chunk: get_fixed32(b, 0)?,
            offset: get_fixed32(b, 4)?,
            key_len: get_fixed32(b, 8)?,
            value_len: get_fixed32(b, 12)?,
            next: get_fixed32(b, 16)?,
            prefix: u64::from_be_bytes(prefix.try_into().ok()?),
        })
    }
}

/// The first 8 bytes of `user_key`, zero-padded, as a big-endian integer: if two keys'
/// prefixes differ, they order as the keys do (a zero pad sorts like the end of a key).
#[inline]
pub(crate) fn key_prefix(user_key: &[u8]) -> u64 {
    let mut b = [0u8; PREFIX_BYTES];
    b.iter_mut().zip(user_key).for_each(|(d, s)| *d = *s);
    u64::from_be_bytes(b)
}

/// A bounded reader over header bytes.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    name: PathBuf,
}

impl<'a> Cursor<'a> {
    fn new(buf: &'a [u8], name: PathBuf) -> Self {
        Cursor { buf, pos: 0, name }
    }
    fn bad_at(&self, offset: u64, reason: &'static str) -> Error {
        Error::corruption(self.name.clone(), offset, reason)
    }
    fn bad(&self, reason: &'static str) -> Error {
        self.bad_at(self.pos as u64, reason)
    }
    fn u32(&mut self) -> Result<u32> {
        let v = get_fixed32(self.buf, self.pos).ok_or_else(|| self.bad("header truncated"))?;
        self.pos += 4;
        Ok(v)
    }
    fn u64(&mut self) -> Result<u64> {
        let v = get_fixed64(self.buf, self.pos).ok_or_else(|| self.bad("header truncated"))?;
        self.pos += 8;
        Ok(v)
    }
    fn chunk(&mut self) -> Result<ChunkInfo> {
        Ok(ChunkInfo {
            len: self.u32()?,
            crc: self.u32()?,
        })
    }
    fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        let s = self
            .pos
            .checked_add(n)
            .and_then(|end| self.buf.get(self.pos..end))
            .ok_or_else(|| self.bad("length runs past the header"))?;
        self.pos += n;
        Ok(s)
    }
}
