//! Write batches: a group of puts, deletes and range deletes applied atomically.
//!
//! Owns: the batch encoding (docs/formats/write-batch.md), which is also the payload of
//! every write-ahead-log record (see `wal`).
//! Must not touch: the log, the memtable or sequence allocation; the write path assigns
//! the sequence with [`WriteBatch::set_sequence`] and applies the operations itself.
//! Concurrency: a `WriteBatch` is a plain value (`Send + Sync`); build it on one thread.
//!
//! Layout: `fixed64_le(sequence) ++ fixed32_le(count) ++ op*`, each op a tag byte
//! followed by varint32-length-prefixed byte strings. Operation `i` (from 0) is written
//! at sequence `sequence() + i`.

use std::path::Path;

use crate::coding::{get_fixed32, get_fixed64, get_varint32, put_varint32, VarintError};
use crate::error::{Error, Result};
use crate::key::{SeqNo, ValueType, MAX_SEQ};

/// Bytes of the batch header: sequence (8) and count (4).
pub const HEADER_LEN: usize = 12;

/// Largest key or value a batch can hold: its length must fit a varint32.
const MAX_FIELD_LEN: usize = u32::MAX as usize;

/// A set of updates applied atomically, in order. See the module docs for the encoding.
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
}

/// One operation of a batch, borrowing the batch's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// Sets `key` to `value`.
    Put {
        /// The user key.
        key: &'a [u8],
        /// The new value.
        value: &'a [u8],
    },
    /// Deletes `key`.
    Delete {
        /// The user key.
        key: &'a [u8],
    },
    /// Deletes every key in `[start, end)`.
    DeleteRange {
        /// First deleted user key.
        start: &'a [u8],
        /// First user key after the range (exclusive).
        end: &'a [u8],
    },
}

impl BatchOp<'_> {
    /// The entry type this operation writes.
    pub fn kind(&self) -> ValueType {
        match self {
            BatchOp::Put { .. } => ValueType::Value,
            BatchOp::Delete { .. } => ValueType::Deletion,
            BatchOp::DeleteRange { .. } => ValueType::RangeDeletion,
        }
    }
}

impl Default for WriteBatch {
    fn default() -> Self {
        WriteBatch::new()
    }
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch")
            .field("sequence", &self.sequence())
            .field("count", &self.count())
            .field("bytes", &self.rep.len())
            .finish()
    }
}

/// Operation bytes a [`WriteBatch::new`] batch has room for before it grows.
const NEW_BATCH_BYTES: usize = 244;

impl WriteBatch {
    /// An empty batch with sequence 0, with room for a few small operations: a batch of
    /// one put of a short key and value (most batches) takes one allocation instead of
    /// growing from the header.
    pub fn new() -> Self {
        Self::with_capacity(NEW_BATCH_BYTES)
    }

    /// An empty batch with room for `bytes` bytes of operations (each costs its key and
    /// value lengths plus at most 11 bytes of framing), so that filling it never reallocates.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(HEADER_LEN + bytes);
        rep.resize(HEADER_LEN, 0);
        WriteBatch { rep }
    }

    /// Adds a put of `key` to `value`.
    ///
    /// Keys and values must be shorter than 4 GiB (a varint32 length); the engine's
    /// write path rejects larger ones before they reach a batch.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.push(ValueType::Value, key, Some(value));
    }

    /// Adds a put of `key` to the concatenation of `value_parts` (a header and a
    /// payload, say) without building the value first; the same as `put` of the joined
    /// parts.
    pub fn put_parts(&mut self, key: &[u8], value_parts: &[&[u8]]) {
        let len: usize = value_parts.iter().map(|p| p.len()).sum();
        if len > MAX_FIELD_LEN {
            // Beyond a varint32 length: `put` clamps the joined value the documented way.
            self.put(key, &value_parts.concat());
            return;
        }
        self.rep.reserve(1 + 5 + key.len() + 5 + len);
        self.rep.push(ValueType::Value as u8);
        put_length_prefixed(&mut self.rep, key);
        put_varint32(&mut self.rep, len as u32);
        for p in value_parts {
            self.rep.extend_from_slice(p);
        }
        self.set_count(self.count().saturating_add(1));
    }

    /// Adds a deletion of `key`.
    pub fn delete(&mut self, key: &[u8]) {
        self.push(ValueType::Deletion, key, None);
    }

    /// Adds a deletion of every key in `[start, end)`.
    pub fn delete_range(&mut self, start: &[u8], end: &[u8]) {
        self.push(ValueType::RangeDeletion, start, Some(end));
    }

    /// Number of operations.
    pub fn count(&self) -> u32 {
        get_fixed32(&self.rep, 8).unwrap_or(0)
    }

    /// True if the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Removes every operation and resets the sequence to 0.
    pub fn clear(&mut self) {
        self.rep.clear();
        self.rep.resize(HEADER_LEN, 0);
    }

    /// Size of the encoding in bytes (what the log record will carry).
    pub fn approximate_size(&self) -> usize {
        self.rep.len()
    }

    /// Sequence number of the first operation.
    pub fn sequence(&self) -> SeqNo {
        get_fixed64(&self.rep, 0).unwrap_or(0)
    }

    /// Sets the sequence number of the first operation.
    pub fn set_sequence(&mut self, seq: SeqNo) {
        if let Some(h) = self.rep.get_mut(..8) {
            h.copy_from_slice(&seq.to_le_bytes());
        }
    }

    /// Appends all of `other`'s operations (group commit concatenates batches).
    /// `other`'s sequence is ignored.
    pub fn append(&mut self, other: &WriteBatch) {
        self.rep
            .extend_from_slice(other.rep.get(HEADER_LEN..).unwrap_or_default());
        self.set_count(self.count().saturating_add(other.count()));
    }

    /// The encoding: header and operations.
    pub fn data(&self) -> &[u8] {
        &self.rep
    }

    /// The encoding, owned: what [`WriteBatch::data`] shows, for a caller that keeps the
    /// operations' bytes without copying them.
    pub fn into_data(self) -> Vec<u8> {
        self.rep
    }

    /// Decodes a write-ahead-log record read from `file`, whose record starts at byte
    /// `offset`. Validates the header, every operation and the count.
    ///
    /// # Errors
    /// `Error::Corruption` at `offset` (the position inside the record is in the reason)
    /// if the record is shorter than a header, an operation does not decode, the count
    /// disagrees with the operations, or the sequence numbers would pass `MAX_SEQ`.
    pub fn from_record(data: Vec<u8>, file: &Path, offset: u64) -> Result<WriteBatch> {
        let fail = |pos: usize, reason: &str| {
            Error::corruption(file, offset, format!("write batch byte {pos}: {reason}"))
        };
        if data.len() < HEADER_LEN {
            return Err(fail(0, "record shorter than a batch header"));
        }
        let batch = WriteBatch { rep: data };
        let mut pos = HEADER_LEN;
        let mut found: u64 = 0;
        while pos < batch.rep.len() {
            let (_, next) = decode_op(&batch.rep, pos).map_err(|r| fail(pos, r))?;
            pos = next;
            found += 1;
        }
        let count = u64::from(batch.count());
        if found != count {
            return Err(fail(
                8,
                &format!("header counts {count} operations, found {found}"),
            ));
        }
        let last = batch.sequence().checked_add(count.saturating_sub(1));
        if last.is_none_or(|s| s > MAX_SEQ) {
            return Err(fail(0, "sequence numbers pass the largest sequence"));
        }
        Ok(batch)
    }

    /// The operations in order; the `i`-th is written at `sequence() + i`.
    pub fn iter(&self) -> BatchIter<'_> {
        BatchIter {
            rep: &self.rep,
            pos: HEADER_LEN,
        }
    }

    fn set_count(&mut self, n: u32) {
        if let Some(h) = self.rep.get_mut(8..HEADER_LEN) {
            h.copy_from_slice(&n.to_le_bytes());
        }
    }

    fn push(&mut self, kind: ValueType, a: &[u8], b: Option<&[u8]>) {
        // One reservation for the whole operation: tag, two varint32 lengths, the bytes.
        self.rep
            .reserve(1 + 5 + a.len() + b.map_or(0, |b| 5 + b.len()));
        self.rep.push(kind as u8);
        put_length_prefixed(&mut self.rep, a);
        if let Some(b) = b {
            put_length_prefixed(&mut self.rep, b);
        }
        self.set_count(self.count().saturating_add(1));
    }
}

impl<'a> IntoIterator for &'a WriteBatch {
    type Item = Result<BatchOp<'a>>;
    type IntoIter = BatchIter<'a>;
    fn into_iter(self) -> BatchIter<'a> {
        self.iter()
    }
}

/// Iterator over a batch's operations. Yields an error (and then stops) only for a
/// batch whose bytes do not decode, which neither the builder methods nor
/// [`WriteBatch::from_record`] can produce.
#[derive(Debug, Clone)]
pub struct BatchIter<'a> {
    rep: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Result<BatchOp<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.rep.len() {
            return None;
        }
        match decode_op(self.rep, self.pos) {
            Ok((op, next)) => {
                self.pos = next;
                Some(Ok(op))
            }
            Err(reason) => {
                let at = self.pos as u64;
                self.pos = self.rep.len();
                Some(Err(Error::corruption("<write batch>", at, reason)))
            }
        }
    }
}

/// Decodes the operation starting at `pos`; returns it and the position after it.
fn decode_op(rep: &[u8], pos: usize) -> std::result::Result<(BatchOp<'_>, usize), &'static str> {
    let tag = *rep.get(pos).ok_or("missing operation tag")?;
    let kind = ValueType::from_u8(tag).ok_or("unknown operation tag")?;
    let (a, pos) = get_length_prefixed(rep, pos + 1)?;
    Ok(match kind {
        ValueType::Value => {
            let (value, pos) = get_length_prefixed(rep, pos)?;
            (BatchOp::Put { key: a, value }, pos)
        }
        ValueType::Deletion => (BatchOp::Delete { key: a }, pos),
        ValueType::RangeDeletion => {
            let (end, pos) = get_length_prefixed(rep, pos)?;
            (BatchOp::DeleteRange { start: a, end }, pos)
        }
    })
}

fn put_length_prefixed(buf: &mut Vec<u8>, s: &[u8]) {
    // Lengths past u32 cannot be encoded; `put` documents the limit and the write path
    // enforces it, so clamping here only keeps this function total.
    let len = s.len().min(MAX_FIELD_LEN);
    put_varint32(buf, len as u32);
    buf.extend_from_slice(s.get(..len).unwrap_or(s));
}

fn get_length_prefixed(
    buf: &[u8],
    pos: usize,
) -> std::result::Result<(&[u8], usize), &'static str> {
    let (len, pos) = get_varint32(buf, pos).map_err(VarintError::reason)?;
    let end = pos.checked_add(len as usize).ok_or("length overflows")?;
    let s = buf.get(pos..end).ok_or("string runs past the end")?;
    Ok((s, end))
}

#[cfg(test)]
mod tests;
