//! The byte layouts BOOM shares between the server and its clients (docs/formats/boom.md):
//! a log entry as a client writes it into its segment, and the server's commit record
//! and segment slot in the metadata file clients never see.
//!
//! Owns: encoding, decoding and validating those layouts. Must not touch: files, mappings
//! or the engine; every function here works on byte slices, so it is the one place a
//! fuzz target or a property test needs.

use crate::error::{BoomError, Result};

/// Entries start on, and take whole, 64-byte lines (a cache line: what persisting one
/// costs on persistent memory).
pub const ENTRY_ALIGN: u32 = 64;
/// Bytes of an entry's header.
pub const ENTRY_HEADER_BYTES: usize = 32;
/// The first two bytes of every entry.
pub const ENTRY_MAGIC: u16 = 0xB00E;
/// Largest key an entry holds.
pub const MAX_KEY_BYTES: usize = u16::MAX as usize;

/// An entry's header, as it lies at the start of the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryHeader {
    /// Bytes the entry occupies (a multiple of [`ENTRY_ALIGN`]): what an in-place
    /// update may reuse.
    pub alloc_len: u32,
    /// Where the entry after it starts (`offset + alloc_len` when appended; kept as the
    /// paper's chain, informational here).
    pub next_offset: u32,
    /// Key bytes.
    pub key_len: u16,
    /// Value bytes.
    pub value_len: u32,
    /// CRC32C of header bytes 0..20 and the key and value.
    pub crc: u32,
}

/// The bytes an entry of `key_len` and `value_len` takes, rounded up to whole lines;
/// `None` if it could not fit in a segment's 32-bit offsets.
pub fn entry_alloc_len(key_len: usize, value_len: usize) -> Option<u32> {
    let raw = ENTRY_HEADER_BYTES
        .checked_add(key_len)?
        .checked_add(value_len)?;
    let aligned = raw.checked_next_multiple_of(ENTRY_ALIGN as usize)?;
    u32::try_from(aligned).ok()
}

/// Encodes an entry for `key` and `value` at segment offset `offset`, taking
/// `alloc_len` bytes (at least [`entry_alloc_len`]; more when it overwrites a larger
/// entry in place). The version slot (bytes 24..32) is left zero for the server.
///
/// # Errors
/// `BadEntry` if the key is too long or `alloc_len` too small or not whole lines.
pub fn encode_entry(key: &[u8], value: &[u8], offset: u32, alloc_len: u32) -> Result<Vec<u8>> {
    let key_len = u16::try_from(key.len())
        .map_err(|_| BoomError::BadEntry(format!("key of {} bytes is too long", key.len())))?;
    let value_len =
        u32::try_from(value.len()).map_err(|_| BoomError::BadEntry("value too long".into()))?;
    let need = entry_alloc_len(key.len(), value.len())
        .ok_or_else(|| BoomError::BadEntry("entry too long".into()))?;
    if alloc_len < need || !alloc_len.is_multiple_of(ENTRY_ALIGN) {
        return Err(BoomError::BadEntry(format!(
            "an entry of {need} bytes cannot take {alloc_len}"
        )));
    }
    let mut out = vec![0u8; alloc_len as usize];
    out[0..2].copy_from_slice(&ENTRY_MAGIC.to_le_bytes());
    out[4..8].copy_from_slice(&alloc_len.to_le_bytes());
    out[8..12].copy_from_slice(&offset.saturating_add(alloc_len).to_le_bytes());
    out[12..16].copy_from_slice(&value_len.to_le_bytes());
    out[16..18].copy_from_slice(&key_len.to_le_bytes());
    let body = ENTRY_HEADER_BYTES + key.len();
    out[ENTRY_HEADER_BYTES..body].copy_from_slice(key);
    out[body..body + value.len()].copy_from_slice(value);
    let crc = entry_crc(&out[0..20], &out[ENTRY_HEADER_BYTES..body + value.len()]);
    out[20..24].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// The checksum of an entry: its header's first 20 bytes, then its key and value.
fn entry_crc(head: &[u8], body: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(head), body)
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Decodes the header at the start of `bytes` (at least [`ENTRY_HEADER_BYTES`] long),
/// checking what can be checked without the body: the magic, the lengths against
/// `alloc_len`, and `alloc_len` against the `room` left in the segment.
///
/// # Errors
/// `BadEntry` naming what is wrong.
pub fn decode_header(bytes: &[u8], room: u64) -> Result<EntryHeader> {
    if bytes.len() < ENTRY_HEADER_BYTES {
        return Err(BoomError::BadEntry("entry header cut short".into()));
    }
    if u16_at(bytes, 0) != ENTRY_MAGIC {
        return Err(BoomError::BadEntry("no entry magic".into()));
    }
    let h = EntryHeader {
        alloc_len: u32_at(bytes, 4),
        next_offset: u32_at(bytes, 8),
        value_len: u32_at(bytes, 12),
        key_len: u16_at(bytes, 16),
        crc: u32_at(bytes, 20),
    };
    let need = entry_alloc_len(h.key_len as usize, h.value_len as usize)
        .ok_or_else(|| BoomError::BadEntry("entry lengths overflow".into()))?;
    if !h.alloc_len.is_multiple_of(ENTRY_ALIGN) || h.alloc_len < need {
        return Err(BoomError::BadEntry(format!(
            "entry of {need} bytes claims {} allocated",
            h.alloc_len
        )));
    }
    if u64::from(h.alloc_len) > room {
        return Err(BoomError::BadEntry(format!(
            "entry of {} bytes runs past its segment ({room} bytes left)",
            h.alloc_len
        )));
    }
    Ok(h)
}

/// A whole entry, checked: its key and value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The header.
    pub header: EntryHeader,
    /// The key.
    pub key: &'a [u8],
    /// The value.
    pub value: &'a [u8],
}

/// Decodes and checks the entry that `bytes` (its `alloc_len` bytes, from
/// [`decode_header`]) holds.
///
/// # Errors
/// `BadEntry` for a bad header or a checksum mismatch.
pub fn decode_entry(bytes: &[u8]) -> Result<Entry<'_>> {
    let header = decode_header(bytes, bytes.len() as u64)?;
    let body_end = ENTRY_HEADER_BYTES + header.key_len as usize + header.value_len as usize;
    let body = &bytes[ENTRY_HEADER_BYTES..body_end];
    if entry_crc(&bytes[0..20], body) != header.crc {
        return Err(BoomError::BadEntry("entry checksum mismatch".into()));
    }
    let (key, value) = body.split_at(header.key_len as usize);
    Ok(Entry { header, key, value })
}

/// Bytes of a commit record.
pub const COMMIT_RECORD_BYTES: usize = 24;

/// The server's record that the entry at `offset` is committed with `version` (its
/// sequence number in the engine).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitRecord {
    /// The entry's offset in its segment.
    pub offset: u32,
    /// Its allocated bytes.
    pub alloc_len: u32,
    /// Its version: the engine's sequence number of the write.
    pub version: u64,
    /// Its entry checksum when it was committed: an entry overwritten in place since no
    /// longer matches, and its record is stale.
    pub entry_crc: u32,
}

impl CommitRecord {
    /// The record's bytes, with their own checksum last.
    pub fn encode(&self) -> [u8; COMMIT_RECORD_BYTES] {
        let mut out = [0u8; COMMIT_RECORD_BYTES];
        out[0..4].copy_from_slice(&self.offset.to_le_bytes());
        out[4..8].copy_from_slice(&self.alloc_len.to_le_bytes());
        out[8..16].copy_from_slice(&self.version.to_le_bytes());
        out[16..20].copy_from_slice(&self.entry_crc.to_le_bytes());
        let crc = crc32c::crc32c(&out[0..20]);
        out[20..24].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// The record in `bytes`, or `None` if its checksum does not match (a record torn by
    /// a crash before its count was persisted never is read; one after is damage).
    pub fn decode(bytes: &[u8]) -> Option<CommitRecord> {
        if bytes.len() < COMMIT_RECORD_BYTES || crc32c::crc32c(&bytes[0..20]) != u32_at(bytes, 20) {
            return None;
        }
        Some(CommitRecord {
            offset: u32_at(bytes, 0),
            alloc_len: u32_at(bytes, 4),
            version: u64_at(bytes, 8),
            entry_crc: u32_at(bytes, 16),
        })
    }
}

/// What a segment is doing, as its slot in the metadata file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentState {
    /// Free: nothing in it is needed.
    Free,
    /// Handed to a client, which appends to it.
    Active,
    /// Full or given up by its client: read and replayed, never written, until every
    /// write in it is in the engine's tables.
    Sealed,
}

/// Bytes of a segment's slot.
pub const SLOT_BYTES: usize = 64;

/// A segment's slot: its state and generation, checksummed, and its commit count,
/// persisted alone by each commit (an aligned 8-byte store).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentSlot {
    /// The state.
    pub state: SegmentState,
    /// How many times the segment was handed out.
    pub generation: u64,
}

impl SegmentSlot {
    /// Offset of the commit count within the slot.
    pub const COUNT_OFFSET: usize = 16;

    /// The slot's first 16 bytes (state, generation, checksum); bytes 16..24 hold the
    /// count.
    pub fn encode(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        let state: u32 = match self.state {
            SegmentState::Free => 0,
            SegmentState::Active => 1,
            SegmentState::Sealed => 2,
        };
        out[0..4].copy_from_slice(&state.to_le_bytes());
        out[4..12].copy_from_slice(&self.generation.to_le_bytes());
        let crc = crc32c::crc32c(&out[0..12]);
        out[12..16].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// The slot in `bytes`; an all-zero slot (a new file) is a free segment.
    ///
    /// # Errors
    /// `Corrupt` for a checksum mismatch or an unknown state.
    pub fn decode(bytes: &[u8]) -> Result<SegmentSlot> {
        if bytes.len() < 16 {
            return Err(BoomError::Corrupt("segment slot cut short".into()));
        }
        if bytes[0..16].iter().all(|&b| b == 0) {
            return Ok(SegmentSlot {
                state: SegmentState::Free,
                generation: 0,
            });
        }
        if crc32c::crc32c(&bytes[0..12]) != u32_at(bytes, 12) {
            return Err(BoomError::Corrupt("segment slot checksum mismatch".into()));
        }
        let state = match u32_at(bytes, 0) {
            0 => SegmentState::Free,
            1 => SegmentState::Active,
            2 => SegmentState::Sealed,
            s => return Err(BoomError::Corrupt(format!("unknown segment state {s}"))),
        };
        Ok(SegmentSlot {
            state,
            generation: u64_at(bytes, 4),
        })
    }
}

#[cfg(test)]
mod tests;
