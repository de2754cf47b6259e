//! Point lookup across a group's rows: segment filters first, then the newest row with a
//! visible version, narrowing each row's search window with the `next` pointers of the
//! row above.
//!
//! Owns: the window rule and the empty-window translation (docs/techniques/matrixkv.md).
//! Must not touch: row bytes beyond reading them; the result's value borrows the row.
//! Concurrency: reads an immutable group; any number of lookups run at once.
//!
//! The rule. Let `t` be the seek key `(user_key, snap, 0xff)` and `P` the first position of
//! row `i` (from its trim start) whose key is `>= t`. Everything before `next[P-1]` in row
//! `i+1` is `< key[P-1] < t`, and everything from `next[P]` on is `>= key[P] >= t`, so row
//! `i+1`'s `P` lies in `[next[P-1], next[P]]` (the row start when `P` is the trim start,
//! the row end when `P` is past the end; both clamped to row `i+1`'s trim start). When that
//! window is empty its one candidate position is already known, and it cannot hold the
//! key (its entry is `>= key[P]`, whose user key is past `user_key`), so the next window
//! follows from its pointers without a comparison: rows that cannot hold the key cost two
//! metadata reads each. A row whose pointers refer to another row, and the first row after
//! a segment the filter rejected, are searched over their whole range.

use bytes::Bytes;

use super::group::MatrixGroup;
use crate::error::{Error, Result};
use crate::key::{self, SeqNo, ValueType};
use crate::sst::bloom::key_hash;
use crate::tables::{resolve, Lookup};

/// The newest visible entry of a key in a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowEntry<'a> {
    /// The row (0 is the newest) that holds it.
    pub row: usize,
    /// Its position in that row.
    pub pos: usize,
    /// Its sequence number.
    pub seq: SeqNo,
    /// `Value` or `Deletion`.
    pub kind: ValueType,
    /// The value, borrowed from the row (empty for a deletion).
    pub value: &'a [u8],
}

/// How a lookup went through the rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SearchStats {
    /// Rows binary-searched over their whole range.
    pub full_searches: usize,
    /// Rows binary-searched within a window from the row above.
    pub window_searches: usize,
    /// Rows passed by the empty-window translation, without a key comparison.
    pub translated: usize,
    /// Rows in segments whose filter rejected the key.
    pub filtered: usize,
}

/// What a group says about a key at a snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PointRead<'a> {
    /// The newest visible entry, if any row holds one.
    pub entry: Option<RowEntry<'a>>,
    /// The newest visible range tombstone covering the key in the rows down to (and
    /// including) the one holding `entry`, or in all rows if there is none; 0 if none.
    pub max_tombstone_seq: SeqNo,
    /// Work done.
    pub stats: SearchStats,
}

impl<E: AsRef<[u8]>> MatrixGroup<E> {
    /// Finds the newest entry of `user_key` with a sequence number `<= snap`, and the
    /// newest covering range tombstone `<= snap` in the rows above it and in its row
    /// (in every row if the key is not found). See the module docs for the search.
    ///
    /// # Errors
    /// Errors reading the rows.
    pub fn find(&self, user_key: &[u8], snap: SeqNo) -> Result<PointRead<'_>> {
        let target = key::seek_key(user_key, snap);
        let hash = key_hash(user_key);
        let mut out = PointRead::default();
        // The window in the next row, `None` for its full range.
        let mut window: Option<(usize, usize)> = None;
        let mut first = 0;
        for seg in &self.segments {
            let rows = first..first + seg.rows();
            first = rows.end;
            let past = || Error::Internal("matrix segments past the rows".into());
            if !seg.may_contain_hash(hash) {
                for row in self.rows.get(rows.clone()).ok_or_else(past)? {
                    let t = row.covering_tombstone(user_key, snap);
                    out.max_tombstone_seq = out.max_tombstone_seq.max(t);
                }
                out.stats.filtered += rows.len();
                window = None;
                continue;
            }
            for i in rows {
                let row = self.rows.get(i).ok_or_else(past)?;
                let t = row.covering_tombstone(user_key, snap);
                out.max_tombstone_seq = out.max_tombstone_seq.max(t);
                let (reader, start, len) = (&row.reader, row.start, row.reader.len());
                let (lo, hi) = window.map_or((start, len), |(lo, hi)| {
                    let lo = lo.max(start).min(len);
                    (lo, hi.max(lo).min(len))
                });
                let p = if lo == hi && window.is_some() {
                    out.stats.translated += 1;
                    lo
                } else {
                    match window {
                        Some(_) => out.stats.window_searches += 1,
                        None => out.stats.full_searches += 1,
                    }
                    let p = reader.lower_bound(&target, lo, hi)?;
                    if p < len {
                        let (k, value) = reader.entry(p)?;
                        let pk = key::try_parse(k).map_err(|r| {
                            Error::corruption(format!("matrix-row-{}", reader.id()), 0, r)
                        })?;
                        if pk.user_key == user_key {
                            out.entry = Some(RowEntry {
                                row: i,
                                pos: p,
                                seq: pk.seq,
                                kind: pk.kind,
                                value,
                            });
                            return Ok(out);
                        }
                    }
                    p
                };
                window = match (row.linked, self.rows.get(i + 1)) {
                    (true, Some(below)) => {
                        let lo = match p.checked_sub(1).filter(|q| *q >= start) {
                            Some(q) => reader.next_index(q)?,
                            None => below.start,
                        };
                        let hi = if p < len {
                            reader.next_index(p)?
                        } else {
                            below.reader.len()
                        };
                        Some((lo, hi))
                    }
                    _ => None,
                };
            }
        }
        Ok(out)
    }

    /// [`MatrixGroup::find`] in the form of `tables::lookup`: raises `max_tombstone` to
    /// the newest covering tombstone seen, and returns the entry resolved against it
    /// (`Found(None)` for a deleted key) or `Missing` to look further down.
    ///
    /// # Errors
    /// Errors reading the rows.
    pub fn get(&self, user_key: &[u8], snap: SeqNo, max_tombstone: &mut SeqNo) -> Result<Lookup> {
        let r = self.find(user_key, snap)?;
        *max_tombstone = (*max_tombstone).max(r.max_tombstone_seq);
        Ok(match r.entry {
            Some(e) => Lookup::Found(resolve(
                e.kind,
                e.seq,
                *max_tombstone,
                Bytes::copy_from_slice(e.value),
            )),
            None => Lookup::Missing,
        })
    }
}
