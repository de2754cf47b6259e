//! Choosing the next column of the frozen group: from where the last column ended, up to
//! the first valid cut (see `level0::column_cut`) at which the rows hold about the target
//! bytes.
//!
//! Owns: sampling cut candidates from the rows and estimating bytes between two keys.
//! Must not touch: the version or the rows; it reads them.
//! Concurrency: a pure function over immutable rows.

use std::sync::Arc;

use crate::compaction::PickedColumn;
use crate::key::{self, MAX_SEQ};
use crate::level0::column_cut::next_cut;
use crate::level0::matrix::MatrixGroup;
use crate::pmem::Extent;
use crate::version::{FileMeta, RowMeta};

/// Cut candidates taken from each row, besides the base level's file boundaries.
const SAMPLES_PER_ROW: usize = 32;

/// The next column of the frozen `rows` (their readers in `group`), cut against the
/// base level's `files`, holding about `target_bytes`. `None` if the rows hold nothing
/// from their trim on (the caller deletes them).
pub(super) fn next_column(
    rows: Vec<Arc<RowMeta>>,
    group: &MatrixGroup<Extent>,
    files: &[Arc<FileMeta>],
    target_bytes: u64,
) -> Option<PickedColumn> {
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
    Some(PickedColumn {
        rows,
        lo: start,
        hi,
    })
}
