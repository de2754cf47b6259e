//! Internal keys: a user key followed by an 8-byte trailer of sequence number and entry type.
//!
//! Owns: the internal-key encoding (docs/formats/internal-key.md) and its ordering.
//! Must not touch: anything that stores keys; every other module calls in here.
//!
//! Layout: `user_key ++ fixed64_le((seq << 8) | type)`. Order: user key ascending
//! (bytewise), then trailer descending, so the newest version of a key comes first.

use std::cmp::Ordering;

use crate::coding::{get_fixed64, put_fixed64};
use crate::error::{Error, Result};

mod buf;
mod sort;
pub(crate) use buf::KeyBuf;
pub use sort::sort_order;

/// A 56-bit sequence number; every write gets the next one.
pub type SeqNo = u64;

/// The largest sequence number a write can have (2^56 - 1).
pub const MAX_SEQ: SeqNo = (1 << 56) - 1;

/// Length of the trailer that follows the user key.
pub const TRAILER_LEN: usize = 8;

/// What an internal key records about its user key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum ValueType {
    /// A point deletion; the entry's value is empty.
    Deletion = 0,
    /// A put; the entry's value is the user value.
    Value = 1,
    /// A range deletion of `[user_key, value)`.
    RangeDeletion = 2,
}

/// The type code used in seek targets: the largest, so that a seek to `(key, seq)`
/// lands on the first entry of `key` with a sequence number `<= seq`.
pub const TYPE_FOR_SEEK: u8 = 0xff;

impl ValueType {
    /// Decodes a type byte.
    pub fn from_u8(b: u8) -> Option<ValueType> {
        match b {
            0 => Some(ValueType::Deletion),
            1 => Some(ValueType::Value),
            2 => Some(ValueType::RangeDeletion),
            _ => None,
        }
    }
}

/// An internal key split into its parts, borrowing the user key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    /// The user's key.
    pub user_key: &'a [u8],
    /// The write's sequence number.
    pub seq: SeqNo,
    /// What the entry is.
    pub kind: ValueType,
}

/// Packs a sequence number and a type code into a trailer.
#[inline]
pub fn pack_trailer(seq: SeqNo, kind: u8) -> u64 {
    (seq << 8) | u64::from(kind)
}

/// Appends the internal key `(user_key, seq, kind)` to `buf`.
#[inline]
pub fn append_internal_key(buf: &mut Vec<u8>, user_key: &[u8], seq: SeqNo, kind: ValueType) {
    buf.extend_from_slice(user_key);
    put_fixed64(buf, pack_trailer(seq, kind as u8));
}

/// Returns the internal key `(user_key, seq, kind)` as a new vector.
pub fn internal_key(user_key: &[u8], seq: SeqNo, kind: ValueType) -> Vec<u8> {
    let mut v = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    append_internal_key(&mut v, user_key, seq, kind);
    v
}

/// The seek target that finds the newest version of `user_key` visible at `seq`.
pub fn seek_key(user_key: &[u8], seq: SeqNo) -> Vec<u8> {
    let mut v = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    v.extend_from_slice(user_key);
    put_fixed64(&mut v, pack_trailer(seq, TYPE_FOR_SEEK));
    v
}

/// The user-key part of an internal key. Keys shorter than a trailer yield themselves
/// (they never come from a decoder that checked them; see [`parse`]).
#[inline]
pub fn user_key(ikey: &[u8]) -> &[u8] {
    ikey.get(..ikey.len().saturating_sub(TRAILER_LEN))
        .unwrap_or(ikey)
}

/// The trailer of an internal key, 0 if the key is too short.
#[inline]
pub fn trailer(ikey: &[u8]) -> u64 {
    ikey.len()
        .checked_sub(TRAILER_LEN)
        .and_then(|at| get_fixed64(ikey, at))
        .unwrap_or(0)
}

/// The sequence number of an internal key.
#[inline]
pub fn seq_of(ikey: &[u8]) -> SeqNo {
    trailer(ikey) >> 8
}

/// Splits an internal key, or explains why it is not one.
pub fn try_parse(ikey: &[u8]) -> std::result::Result<ParsedKey<'_>, &'static str> {
    if ikey.len() < TRAILER_LEN {
        return Err("internal key shorter than its trailer");
    }
    let t = trailer(ikey);
    let kind = ValueType::from_u8((t & 0xff) as u8).ok_or("unknown entry type")?;
    Ok(ParsedKey {
        user_key: user_key(ikey),
        seq: t >> 8,
        kind,
    })
}

/// Splits an internal key read from `file` at `offset`, as a `Corruption` error if malformed.
pub fn parse<'a>(ikey: &'a [u8], file: &std::path::Path, offset: u64) -> Result<ParsedKey<'a>> {
    try_parse(ikey).map_err(|r| Error::corruption(file, offset, r))
}

/// Orders internal keys: user key ascending, then trailer (sequence, type) descending.
#[inline]
pub fn compare(a: &[u8], b: &[u8]) -> Ordering {
    match compare_bytes(user_key(a), user_key(b)) {
        Ordering::Equal => trailer(b).cmp(&trailer(a)),
        o => o,
    }
}

/// Length of a user-key prefix ([`key_prefix`]).
pub const PREFIX_BYTES: usize = 16;

/// The first [`PREFIX_BYTES`] of `user` as two big-endian words (zero-padded), so that
/// comparing prefixes as integers orders them as bytes: a smaller prefix means a smaller
/// key, and only keys with equal prefixes need comparing in full.
#[inline]
pub fn key_prefix(user: &[u8]) -> [u64; 2] {
    let mut b = [0u8; PREFIX_BYTES];
    let n = user.len().min(PREFIX_BYTES);
    if let (Some(dst), Some(src)) = (b.get_mut(..n), user.get(..n)) {
        dst.copy_from_slice(src);
    }
    let (hi, lo) = b.split_at(8);
    [
        u64::from_be_bytes(hi.try_into().unwrap_or_default()),
        u64::from_be_bytes(lo.try_into().unwrap_or_default()),
    ]
}

/// Bytewise order, as `<[u8]>::cmp`, eight bytes at a time and inline: user keys are
/// usually short, where a `memcmp` call costs more than the comparison itself.
#[inline]
pub fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let x = u64::from_be_bytes(x.try_into().unwrap_or_default());
        let y = u64::from_be_bytes(y.try_into().unwrap_or_default());
        if x != y {
            return x.cmp(&y);
        }
    }
    // At least one side ran out of whole words; both consumed the same number.
    let done = a.len().min(b.len()) & !7;
    let (rest_a, rest_b) = (
        a.get(done..).unwrap_or_default(),
        b.get(done..).unwrap_or_default(),
    );
    for (x, y) in rest_a.iter().zip(rest_b) {
        if x != y {
            return x.cmp(y);
        }
    }
    rest_a.len().cmp(&rest_b.len())
}

/// [`compare_bytes`] for keys known to agree on their first `skip` bytes, which it does
/// not read, with the length of their common prefix (the shorter key's length if one is
/// a prefix of the other, or both are equal). A search that keeps the common prefixes of
/// the keys bracketing its target compares each new key from there: every key between
/// two keys shares with the target at least the shorter of their common prefixes with it.
/// A `skip` beyond either key's length counts as that length.
#[inline]
pub fn compare_from(a: &[u8], b: &[u8], skip: usize) -> (Ordering, usize) {
    let shorter = a.len().min(b.len());
    let mut at = skip.min(shorter);
    let (rest_a, rest_b) = (
        a.get(at..).unwrap_or_default(),
        b.get(at..).unwrap_or_default(),
    );
    for (x, y) in rest_a.chunks_exact(8).zip(rest_b.chunks_exact(8)) {
        let x = u64::from_be_bytes(x.try_into().unwrap_or_default());
        let y = u64::from_be_bytes(y.try_into().unwrap_or_default());
        let differ = x ^ y;
        if differ != 0 {
            return (x.cmp(&y), at + (differ.leading_zeros() / 8) as usize);
        }
        at += 8;
    }
    for (x, y) in a
        .get(at..shorter)
        .unwrap_or_default()
        .iter()
        .zip(b.get(at..).unwrap_or_default())
    {
        if x != y {
            return (x.cmp(y), at);
        }
        at += 1;
    }
    (a.len().cmp(&b.len()), shorter)
}

/// An owned internal key ordered by [`compare`]; used as the memtable's and
/// the file metadata's key type.
#[derive(Clone, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub struct InternalKey(pub Vec<u8>);

impl InternalKey {
    /// Builds `(user_key, seq, kind)`.
    pub fn new(user_key: &[u8], seq: SeqNo, kind: ValueType) -> Self {
        InternalKey(internal_key(user_key, seq, kind))
    }
    /// The encoded bytes.
    pub fn encoded(&self) -> &[u8] {
        &self.0
    }
    /// The user key part.
    pub fn user_key(&self) -> &[u8] {
        user_key(&self.0)
    }
    /// The sequence number.
    pub fn seq(&self) -> SeqNo {
        seq_of(&self.0)
    }
}

impl Ord for InternalKey {
    fn cmp(&self, other: &Self) -> Ordering {
        compare(&self.0, &other.0)
    }
}

impl PartialOrd for InternalKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Debug for InternalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match try_parse(&self.0) {
            Ok(p) => write!(
                f,
                "{}@{}:{:?}",
                String::from_utf8_lossy(p.user_key).escape_debug(),
                p.seq,
                p.kind
            ),
            Err(_) => write!(f, "<bad key {:?}>", self.0),
        }
    }
}

#[cfg(test)]
mod tests;
