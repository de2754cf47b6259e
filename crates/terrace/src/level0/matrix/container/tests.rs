//! The container's backpressure and compaction score against the room its rows leave.

use std::collections::HashSet;
use std::sync::Arc;

use super::*;
use crate::key::{InternalKey, ValueType};
use crate::level0::matrix::state::RowMeta;
use crate::level0::matrix::table_merge::key_disjoint;
use crate::storage::Storage;
use crate::version::{VersionEdit, VersionSet};

fn add_row(r: RowMeta) -> VersionEdit {
    VersionEdit {
        level0: RowEdit {
            new: vec![r],
            ..RowEdit::default()
        }
        .into_records(),
        ..VersionEdit::default()
    }
}

fn row(number: u64, size: u64) -> RowMeta {
    RowMeta {
        number,
        dir_offset: 4096 * number,
        dir_len: 100,
        size,
        smallest: InternalKey::new(b"a", number, ValueType::Value),
        largest: InternalKey::new(b"z", number, ValueType::Value),
        smallest_seq: number,
        largest_seq: number,
        ..RowMeta::default()
    }
}

#[test]
fn writes_slow_down_before_the_container_is_full_and_a_stall_comes_first() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(crate::storage::FsStorage::new());
    let l0_state = MatrixLevel0::new(MatrixOptions::default())
        .unwrap()
        .empty_state();
    let mut vs = VersionSet::create_with_level0(storage, dir.path(), 7, 1 << 20, l0_state).unwrap();
    let l0 = MatrixLevel0::new(MatrixOptions {
        capacity: 1 << 20,
        page_size: 4096,
        ..MatrixOptions::default()
    })
    .unwrap();
    let opts = crate::options::Options {
        write_buffer_size: 64 << 10,
        ..crate::options::Options::default()
    }
    .level0_settings();
    let busy = HashSet::new();
    // Empty: full speed, and nothing to compact.
    assert_eq!(l0.backpressure(&vs.current(), &opts), Backpressure::None);
    assert!(l0.ready_to_flush(&vs.current(), opts.write_buffer_size));
    // 700 KiB used: more than three memtables still fit.
    vs.log_and_apply(add_row(row(10, 700 << 10))).unwrap();
    assert_eq!(l0.backpressure(&vs.current(), &opts), Backpressure::None);
    // 900 KiB used: fewer than three fit, writes are delayed, a row still fits.
    vs.log_and_apply(add_row(row(11, 200 << 10))).unwrap();
    let v = vs.current();
    assert_eq!(l0.backpressure(&v, &opts), Backpressure::Slowdown);
    assert!(l0.ready_to_flush(&v, opts.write_buffer_size));
    assert!(l0.compaction_score(&v, &busy, &opts) < STALLED_SCORE);
    // 1000 KiB used: no row fits; flushes wait and compaction goes before any level.
    vs.log_and_apply(add_row(row(12, 100 << 10))).unwrap();
    let v = vs.current();
    assert!(!l0.ready_to_flush(&v, opts.write_buffer_size));
    assert_eq!(l0.compaction_score(&v, &busy, &opts), STALLED_SCORE);
}

#[test]
fn rows_of_disjoint_key_ranges_are_not_merged() {
    let span = |n: u64, lo: &[u8], hi: &[u8]| {
        let mut r = row(n, 10);
        r.smallest = InternalKey::new(lo, n, ValueType::Value);
        r.largest = InternalKey::new(hi, n, ValueType::Value);
        Arc::new(r)
    };
    // Sequential rows, newest (highest keys) first: nothing for a merge to drop.
    let seq = [
        span(3, b"g", b"i"),
        span(2, b"d", b"f"),
        span(1, b"a", b"c"),
    ];
    assert!(key_disjoint(&seq));
    // One shared key (a row's last is the next one's first) is an overlap.
    let touching = [span(2, b"c", b"f"), span(1, b"a", b"c")];
    assert!(!key_disjoint(&touching));
    let nested = [span(2, b"b", b"c"), span(1, b"a", b"z")];
    assert!(!key_disjoint(&nested));
}

/// A column install that deletes rows consumed whole keeps the cached group less those
/// rows; a row the cache lacks, or rows in another order, need a rebuild.
#[test]
fn dropped_rows_are_the_cached_rows_a_version_no_longer_holds() {
    let sig = |ns: &[u64]| -> Vec<(u64, Option<Vec<u8>>)> {
        ns.iter().map(|&n| (n, Some(b"k".to_vec()))).collect()
    };
    let cached = sig(&[9, 7, 5, 3]);
    assert_eq!(
        groups::dropped_rows(&cached, &sig(&[9, 7, 5, 3])),
        Some(vec![])
    );
    assert_eq!(
        groups::dropped_rows(&cached, &sig(&[9, 3])),
        Some(vec![1, 2])
    );
    assert_eq!(
        groups::dropped_rows(&cached, &sig(&[7])),
        Some(vec![0, 2, 3])
    );
    assert_eq!(groups::dropped_rows(&cached, &sig(&[9, 8, 3])), None);
    assert_eq!(groups::dropped_rows(&cached, &sig(&[3, 9])), None);
    assert_eq!(groups::dropped_rows(&cached, &sig(&[11, 9, 7, 5, 3])), None);
}
