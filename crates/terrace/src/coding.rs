//! Integer coding shared by every on-disk format: LEB128 varints and fixed-width
//! little-endian integers (the `varint32`, `varint64`, `fixed32` and `fixed64` of
//! docs/formats/).
//!
//! Owns: the byte forms of integers, and the bounds every decoder of stored bytes relies
//! on: a varint32 is at most 5 bytes and below 2^32, a varint64 at most 10 bytes and below
//! 2^64; truncated or overlong input is an error, never a panic or a wrapped value.
//! Must not touch: framing, checksums, lengths of strings or what an integer means; each
//! format owns those and turns a [`VarintError`] into its own error with file and offset.
//! Concurrency: pure functions on borrowed bytes.

/// Most bytes a varint32 takes.
pub(crate) const MAX_VARINT32_LEN: usize = 5;

/// Most bytes a varint64 takes.
pub(crate) const MAX_VARINT64_LEN: usize = 10;

/// Why a varint did not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VarintError {
    /// The bytes end before the varint's last byte (one without the high bit).
    Truncated,
    /// The varint is longer than its width allows or its value does not fit.
    Overflow,
}

impl VarintError {
    /// A short reason for a corruption message.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            VarintError::Truncated => "varint runs past the end",
            VarintError::Overflow => "varint too long or too large",
        }
    }
}

/// Appends `v` as a varint: 7 bits a byte, low group first, high bit on all but the last.
pub(crate) fn put_varint64(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Appends `v` as a varint; the bytes are those of [`put_varint64`] for the same value.
pub(crate) fn put_varint32(buf: &mut Vec<u8>, v: u32) {
    put_varint64(buf, u64::from(v));
}

/// Decodes the varint64 starting at `pos`; returns it and the position just after it.
///
/// # Errors
/// [`VarintError::Truncated`] if `data` ends first (or `pos` is past the end),
/// [`VarintError::Overflow`] if the varint is longer than 10 bytes or passes 2^64.
#[inline]
pub(crate) fn get_varint64(data: &[u8], pos: usize) -> Result<(u64, usize), VarintError> {
    get_varint(data, pos, MAX_VARINT64_LEN, 64)
}

/// Decodes the varint32 starting at `pos`; returns it and the position just after it.
///
/// # Errors
/// [`VarintError::Truncated`] if `data` ends first (or `pos` is past the end),
/// [`VarintError::Overflow`] if the varint is longer than 5 bytes or passes 2^32.
#[inline]
pub(crate) fn get_varint32(data: &[u8], pos: usize) -> Result<(u32, usize), VarintError> {
    // Fast path: most lengths and shared-prefix counts take one byte.
    if let Some(&b) = data.get(pos) {
        if b < 0x80 {
            return Ok((u32::from(b), pos + 1));
        }
    }
    let (v, end) = get_varint(data, pos, MAX_VARINT32_LEN, 32)?;
    let v = u32::try_from(v).map_err(|_| VarintError::Overflow)?;
    Ok((v, end))
}

/// Decodes a varint of at most `max_len` bytes whose value has at most `bits` bits.
#[inline]
fn get_varint(
    data: &[u8],
    pos: usize,
    max_len: usize,
    bits: u32,
) -> Result<(u64, usize), VarintError> {
    let mut v: u64 = 0;
    let mut at = pos;
    for i in 0..max_len {
        let b = *data.get(at).ok_or(VarintError::Truncated)?;
        at += 1;
        let shift = 7 * i as u32;
        let group = u64::from(b & 0x7f);
        // The last allowed byte may carry only the bits left, and no continuation bit.
        if i + 1 == max_len && (b >= 0x80 || group >> (bits - shift) != 0) {
            return Err(VarintError::Overflow);
        }
        v |= group << shift;
        if b < 0x80 {
            return Ok((v, at));
        }
    }
    Err(VarintError::Overflow)
}

/// Appends `v` as 4 little-endian bytes.
#[inline]
pub(crate) fn put_fixed32(buf: &mut Vec<u8>, v: u32) {
    buf.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as 8 little-endian bytes.
#[inline]
pub(crate) fn put_fixed64(buf: &mut Vec<u8>, v: u64) {
    buf.extend_from_slice(&v.to_le_bytes());
}

/// The little-endian u32 at `pos`, `None` if fewer than 4 bytes remain there.
#[inline]
pub(crate) fn get_fixed32(data: &[u8], pos: usize) -> Option<u32> {
    let b = data.get(pos..pos.checked_add(4)?)?;
    Some(u32::from_le_bytes(b.try_into().ok()?))
}

/// The little-endian u64 at `pos`, `None` if fewer than 8 bytes remain there.
#[inline]
pub(crate) fn get_fixed64(data: &[u8], pos: usize) -> Option<u64> {
    let b = data.get(pos..pos.checked_add(8)?)?;
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

#[cfg(test)]
mod tests;
