//! The open-time check of a matrix row: one walk over every metadata entry, checking its
//! placement in the data chunks, its key and `next` pointer, and the header's bounds and
//! counts against the entries (docs/formats/matrix-row.md).
//!
//! Owns: the rules [`RowReader::open`] lists, as a second `impl` block of the reader.
//! Must not touch: the chunk checksums (checked in `open_released` before this walk) or
//! the reader's fields; it only reads them.
//! Concurrency: runs once inside `open`, before the reader is shared.

use std::cmp::Ordering;

use super::RowReader;
use crate::error::{Error, Result};
use crate::key::{self, ValueType};
use crate::level0::matrix::rows::format::key_prefix;

impl<E: AsRef<[u8]>> RowReader<E> {
    /// Walks every metadata entry once; see [`RowReader::open`] for the rules.
    pub(super) fn check_entries(&self) -> Result<()> {
        let h = &self.header;
        let below_len = h.below.map_or(0, |l| l.entries);
        let (mut chunk, mut offset) = (0usize, 0usize);
        let (mut prev_next, mut deletions) = (0u64, 0u64);
        for j in 0..self.len() {
            let bad = |r: &str| self.corrupt_meta(j, r);
            let m = self.meta_entry(j)?;
            let (c, o) = (m.chunk as usize, m.offset as usize);
            let chunk_len = self.data_len(chunk);
            if !(c == chunk && o == offset || c == chunk + 1 && o == 0 && offset == chunk_len) {
                return Err(bad("entry is not where the previous one ended"));
            }
            chunk = c;
            let end = o + m.key_len as usize + m.value_len as usize;
            if end > self.data_len(c) || (j == 0 && c != 0) {
                return Err(bad("entry runs past its data chunk"));
            }
            offset = end;
            let next = u64::from(m.next);
            if next < prev_next || next > below_len {
                return Err(bad("next pointer out of order or past the row below"));
            }
            prev_next = next;
            if c < self.released {
                // Released: only the metadata is left to check.
                continue;
            }
            let k = self.key(j)?;
            let p = key::try_parse(k).map_err(&bad)?;
            if p.kind == ValueType::RangeDeletion {
                return Err(bad("range deletion stored as a point entry"));
            }
            if m.prefix != key_prefix(p.user_key) {
                return Err(bad("key prefix does not match the key"));
            }
            let prev_held = j > 0 && self.meta_entry(j - 1)?.chunk as usize >= self.released;
            if prev_held && key::compare(self.key(j - 1)?, k) != Ordering::Less {
                return Err(bad("keys out of order"));
            }
            if p.seq < h.smallest_seq || p.seq > h.largest_seq {
                return Err(bad("sequence number outside the header's range"));
            }
            deletions += u64::from(p.kind == ValueType::Deletion);
        }
        let ends_chunks = chunk + 1 == h.data_chunks.len() && offset == self.data_len(chunk);
        if !(ends_chunks || h.data_chunks.is_empty()) {
            return Err(self.corrupt_meta(0, "entries do not fill the data chunks"));
        }
        if self.released > 0 {
            // Counts and the smallest key cover released entries: only the largest key,
            // when it is still held, can be checked.
            let last = self.len().checked_sub(1);
            let held =
                |j: usize| Ok::<_, Error>(self.meta_entry(j)?.chunk as usize >= self.released);
            if let Some(last) = last.filter(|&j| held(j).unwrap_or(false)) {
                if self.key(last)? != h.largest_key.as_slice() {
                    return Err(self.corrupt_meta(0, "key bounds differ from the header"));
                }
            }
        } else {
            if deletions != h.num_deletions {
                return Err(self.corrupt_meta(0, "deletion count differs from the header"));
            }
            let (first, last) = match self.len().checked_sub(1) {
                Some(last) => (self.key(0)?, self.key(last)?),
                None => (&[][..], &[][..]),
            };
            if first != h.smallest_key.as_slice() || last != h.largest_key.as_slice() {
                return Err(self.corrupt_meta(0, "key bounds differ from the header"));
            }
        }
        for t in &h.tombstones {
            if t.seq < h.smallest_seq || t.seq > h.largest_seq {
                return Err(self.corrupt_meta(0, "tombstone outside the sequence range"));
            }
        }
        Ok(())
    }

    fn data_len(&self, chunk: usize) -> usize {
        self.header
            .data_chunks
            .get(chunk)
            .map_or(0, |c| c.len as usize)
    }
}
