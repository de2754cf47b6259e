//! The physical record format shared by the log writer and reader: block size,
//! fragment header layout and checksum masking (docs/formats/wal.md).

use crate::coding::get_fixed32;

/// Logs are written in blocks of this many bytes; no fragment crosses a block boundary.
pub const BLOCK_SIZE: usize = 32 * 1024;

/// Fragment header: checksum (4), length (2), type (1).
pub const HEADER_SIZE: usize = 7;

/// What part of a record a fragment carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum RecordType {
    /// A whole record.
    Full = 1,
    /// The first fragment of a record spanning blocks.
    First = 2,
    /// A fragment that is neither first nor last.
    Middle = 3,
    /// The last fragment of a record spanning blocks.
    Last = 4,
}

impl RecordType {
    /// Decodes a type byte; 0 (zero-filled space) and unknown codes give `None`.
    pub fn from_u8(b: u8) -> Option<RecordType> {
        match b {
            1 => Some(RecordType::Full),
            2 => Some(RecordType::First),
            3 => Some(RecordType::Middle),
            4 => Some(RecordType::Last),
            _ => None,
        }
    }
}

const MASK_DELTA: u32 = 0xa282_ead8;

/// LevelDB's checksum mask: a CRC stored next to the data it covers is rotated and
/// offset so that computing the CRC of a string that contains CRCs stays well-behaved.
pub(crate) fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// The inverse of [`mask`].
#[cfg(test)]
pub(crate) fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

/// The stored (masked) checksum of a fragment: CRC-32C over the type byte and payload.
pub(crate) fn fragment_crc(kind: u8, payload: &[u8]) -> u32 {
    mask(crc32c::crc32c_append(crc32c::crc32c(&[kind]), payload))
}

/// Encodes a fragment header.
pub(crate) fn encode_header(kind: RecordType, payload: &[u8]) -> [u8; HEADER_SIZE] {
    let mut h = [0u8; HEADER_SIZE];
    h[..4].copy_from_slice(&fragment_crc(kind as u8, payload).to_le_bytes());
    // The writer never makes a fragment longer than a block, so the length fits.
    h[4..6].copy_from_slice(&(payload.len().min(BLOCK_SIZE) as u16).to_le_bytes());
    h[6] = kind as u8;
    h
}

/// A decoded fragment header: what the bytes claim, not yet checked against a payload.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Header {
    pub crc: u32,
    pub len: usize,
    pub kind: u8,
}

/// Decodes the header at the start of `buf`, if `buf` holds a whole one.
pub(crate) fn decode_header(buf: &[u8]) -> Option<Header> {
    let b: &[u8; HEADER_SIZE] = buf.get(..HEADER_SIZE)?.try_into().ok()?;
    Some(Header {
        crc: get_fixed32(b, 0)?,
        len: usize::from(u16::from_le_bytes([b[4], b[5]])),
        kind: b[6],
    })
}

/// If a well-formed fragment (known type, checksum matching) starts at `pos` of `block`,
/// returns its type and payload length.
pub(crate) fn valid_fragment_at(block: &[u8], pos: usize) -> Option<(RecordType, usize)> {
    let h = decode_header(block.get(pos..)?)?;
    let start = pos + HEADER_SIZE;
    let payload = block.get(start..start + h.len)?;
    if fragment_crc(h.kind, payload) != h.crc {
        return None;
    }
    Some((RecordType::from_u8(h.kind)?, h.len))
}
