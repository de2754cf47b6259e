//! Segment bloom filters: one filter over the user keys of a run of consecutive rows
//! (the thesis's segments, 50 rows by default), so a point lookup rejects whole segments.
//!
//! Owns: [`SegmentFilter`] and the per-row key hashes an open segment keeps. The filter
//! itself is the table files' bloom (`sst::bloom`: MurmurHash64A, double hashing).
//! Must not touch: row bytes (hashes come from `RowReader::key`); filters live in DRAM
//! only and are rebuilt from the rows after a restart.
//! Concurrency: immutable once built; shared by `Arc` between group views.

use std::sync::Arc;

use bytes::Bytes;

use super::row::RowReader;
use crate::error::Result;
use crate::key;
use crate::sst::bloom::{build_filter, key_hash, BloomFilter};

/// The filter of one segment of a group's rows.
///
/// A segment is *open* while it may still take new rows on top: it then keeps the hashes
/// of its rows' user keys (8 bytes per distinct key), so that adding a row rebuilds the
/// filter without reading the older rows again. A closed segment keeps only its filter.
#[derive(Debug, Clone)]
pub struct SegmentFilter {
    rows: usize,
    filter: Option<BloomFilter>,
    pending: Option<Vec<Arc<[u64]>>>,
    merged: bool,
}

/// The hashes of the distinct user keys of `row` from position `start` on.
///
/// # Errors
/// Errors reading the row.
pub(crate) fn row_hashes<E: AsRef<[u8]>>(row: &RowReader<E>, start: usize) -> Result<Arc<[u64]>> {
    let mut out = Vec::new();
    let mut last: Option<&[u8]> = None;
    for j in start..row.len() {
        let uk = key::user_key(row.key(j)?);
        if last != Some(uk) {
            out.push(key_hash(uk));
            last = Some(uk);
        }
    }
    Ok(out.into())
}

/// A filter over the union of `rows`' hashes; `None` (no filtering) at 0 bits per key.
fn build(rows: &[Arc<[u64]>], bits_per_key: usize) -> Option<BloomFilter> {
    if bits_per_key == 0 {
        return None;
    }
    let mut all: Vec<u64> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    all.sort_unstable();
    all.dedup();
    BloomFilter::decode(Bytes::from(build_filter(&all, bits_per_key))).ok()
}

impl SegmentFilter {
    /// An open segment over rows with the given key hashes (newest first).
    pub(crate) fn open(rows: Vec<Arc<[u64]>>, bits_per_key: usize) -> Self {
        SegmentFilter {
            rows: rows.len(),
            filter: build(&rows, bits_per_key),
            pending: Some(rows),
            merged: false,
        }
    }

    /// A closed segment over rows with the given key hashes; `merged` marks the output of
    /// a table merge, which later merges leave alone.
    pub(crate) fn closed(rows: &[Arc<[u64]>], bits_per_key: usize, merged: bool) -> Self {
        SegmentFilter {
            rows: rows.len(),
            filter: build(rows, bits_per_key),
            pending: None,
            merged,
        }
    }

    /// This open segment with one more row on top; closed once it holds `segment_rows`.
    pub(crate) fn with_row(&self, hashes: Arc<[u64]>, bits: usize, segment_rows: usize) -> Self {
        let mut rows = Vec::with_capacity(self.rows + 1);
        rows.push(hashes);
        rows.extend(self.pending.iter().flatten().cloned());
        if rows.len() >= segment_rows {
            SegmentFilter::closed(&rows, bits, false)
        } else {
            SegmentFilter::open(rows, bits)
        }
    }

    /// This segment without its `i`-th row (newest first), `None` if that was its last.
    /// A closed segment keeps its filter, which still covers the rows left (a superset
    /// only costs false positives); an open one rebuilds it from the hashes it keeps.
    pub(crate) fn without_row(&self, i: usize, bits: usize) -> Option<Self> {
        if self.rows <= 1 {
            return None;
        }
        Some(match &self.pending {
            Some(rows) => {
                let mut rows = rows.clone();
                if i < rows.len() {
                    rows.remove(i);
                }
                SegmentFilter::open(rows, bits)
            }
            None => SegmentFilter {
                rows: self.rows - 1,
                filter: self.filter.clone(),
                pending: None,
                merged: self.merged,
            },
        })
    }

    /// Number of rows in the segment.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// True while the segment takes new rows (it keeps their key hashes).
    pub fn is_open(&self) -> bool {
        self.pending.is_some()
    }

    /// True if the segment holds the output of a table merge.
    pub fn is_merged(&self) -> bool {
        self.merged
    }

    /// False only if no row of the segment holds `user_key`.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(key_hash(user_key))
    }

    /// [`SegmentFilter::may_contain`] for a precomputed key hash.
    pub(crate) fn may_contain_hash(&self, hash: u64) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|f| f.may_contain_hash(hash))
    }
}
