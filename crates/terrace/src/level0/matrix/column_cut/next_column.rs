//! Choosing the next column of the frozen group: from where the last column ended, up to
//! the first valid cut (see `column_cut`) at which the rows hold about the target bytes.
//!
//! Owns: sampling cut candidates from the rows, estimating bytes between two keys, and
//! narrowing a column to the key span its rows cover.
//! Must not touch: the version or the rows; it reads them.
//! Concurrency: a pure function over immutable rows.

use std::sync::Arc;

use super::next_cut;
use crate::key::{self, MAX_SEQ};
use crate::level0::matrix::rows::MatrixGroup;
use crate::level0::matrix::state::RowMeta;
use crate::pmem::Extent;
use crate::version::FileMeta;

/// A column of the frozen group: its rows (newest first), read within `[lo, hi)`.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixColumn {
    /// The rows, newest first.
    pub rows: Vec<Arc<RowMeta>>,
    /// Inclusive lower user key; `None` is unbounded.
    pub lo: Option<Vec<u8>>,
    /// Exclusive upper user key; `None` is unbounded (the last column).
    pub hi: Option<Vec<u8>>,
}

/// Cut candidates taken from each row, besides the base level's file boundaries.
const SAMPLES_PER_ROW: usize = 32;

/// The next column of the frozen `rows` (their readers in `group`), cut against the
/// base level's `files`, holding about `target_bytes`. `None` if the rows hold nothing
/// from their trim on (the caller deletes them).
pub fn next_column(
    rows: Vec<Arc<RowMeta>>,
    group: &MatrixGroup<Extent>,
    files: &[Arc<FileMeta>],
    target_bytes: u64,
) -> Option<MatrixColumn> {
    let start: Option<Vec<u8>> = rows.iter().filter_map(|r| r.trim.clone()).max();
    let mut samples = Vec::new();
    for (i, reader) in group.rows().enumerate() {
        let from = group.row_start(i).unwrap_or(0);
        let len = reader.len();
        let step = (len.saturating_sub(from) / SAMPLES_PER_ROW).max(1);
        let mut j = from + step;
        while j < len {
            if let Ok(k) = reader.key(j) {
                samples.push(key::user_key(k).to_vec());
            }
            j += step;
        }
    }
    // Bytes of the entries of every row in [lo, hi), from positions and each row's average
    // entry size.
    let bytes_between = |lo: Option<&[u8]>, hi: &[u8]| -> u64 {
        let mut total = 0u64;
        for (i, reader) in group.rows().enumerate() {
            let from = group.row_start(i).unwrap_or(0);
            let len = reader.len();
            if len == 0 {
                continue;
            }
            let pos = |k: &[u8]| {
                reader
                    .lower_bound(&key::seek_key(k, MAX_SEQ), from, len)
                    .unwrap_or(len)
            };
            let a = lo.map_or(from, pos);
            let b = pos(hi);
            let avg = reader.header().data_bytes / len as u64;
            total += (b.saturating_sub(a) as u64) * avg.max(1);
        }
        total
    };
    let hi = next_cut(
        files,
        &samples,
        start.as_deref(),
        target_bytes,
        bytes_between,
    );
    let (lo, hi) = narrow_to_rows(&rows, start, hi);
    Some(MatrixColumn { rows, lo, hi })
}

/// Narrows the column `[lo, hi)` to the key span the rows cover: base-level files outside
/// it have nothing to merge with, so they stay where they are (with sequential keys the
/// first column would otherwise rewrite every file below the rows, and the last every file
/// above them).
fn narrow_to_rows(
    rows: &[Arc<RowMeta>],
    lo: Option<Vec<u8>>,
    hi: Option<Vec<u8>>,
) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let smallest = rows.iter().map(|r| r.smallest_user_key()).min();
    // The first user key above every row's largest (a tombstone's end included).
    let end = rows.iter().map(|r| r.largest_user_key()).max().map(|k| {
        let mut e = k.to_vec();
        e.push(0);
        e
    });
    let lo = match (lo, smallest) {
        (Some(l), Some(s)) if s > l.as_slice() => Some(s.to_vec()),
        (None, Some(s)) => Some(s.to_vec()),
        (l, _) => l,
    };
    let hi = match (hi, end) {
        (Some(h), Some(e)) if e < h => Some(e),
        (None, Some(e)) => Some(e),
        (h, _) => h,
    };
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{InternalKey, ValueType};

    fn row(lo: &str, hi: &str) -> Arc<RowMeta> {
        Arc::new(RowMeta {
            smallest: InternalKey::new(lo.as_bytes(), 1, ValueType::Value),
            largest: InternalKey::new(hi.as_bytes(), 1, ValueType::Value),
            ..RowMeta::default()
        })
    }

    fn k(s: &str) -> Option<Vec<u8>> {
        Some(s.as_bytes().to_vec())
    }

    #[test]
    fn columns_shrink_to_the_rows_key_span() {
        let rows = vec![row("m", "p"), row("k", "q")];
        // Unbounded ends become the rows' bounds (exclusive end just past "q").
        assert_eq!(narrow_to_rows(&rows, None, None), (k("k"), k("q\0")));
        // Bounds inside the span stay.
        assert_eq!(narrow_to_rows(&rows, k("l"), k("o")), (k("l"), k("o")));
        // Bounds outside the span are pulled in.
        assert_eq!(narrow_to_rows(&rows, k("a"), k("z")), (k("k"), k("q\0")));
        // No rows: nothing changes.
        assert_eq!(narrow_to_rows(&[], None, k("c")), (None, k("c")));
    }
}
