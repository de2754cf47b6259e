//! The matrix level 0's rows in versions: ordering, trims, releases, recovery, and the
//! records' encoding.

use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::key::{InternalKey, ValueType};
use crate::storage::{FsStorage, Storage};
use crate::version::SAFE_TO_IGNORE;
use crate::version::{FileMeta, VersionEdit, VersionSet};

fn matrix() -> Arc<dyn Level0State> {
    Arc::new(MatrixState::default())
}

fn edit(r: RowEdit) -> VersionEdit {
    VersionEdit {
        level0: r.into_records(),
        ..VersionEdit::default()
    }
}

fn fs() -> Arc<dyn Storage> {
    Arc::new(FsStorage::new())
}

fn file(number: u64, lo: &[u8], hi: &[u8]) -> FileMeta {
    FileMeta::for_test(number, 0, lo, hi, 100)
}

fn all_kinds() -> RowEdit {
    RowEdit {
        deleted: vec![11],
        new: vec![row(12, 1, b"c", b"x", 8), row(13, 0, b"", b"b", 2)],
        trimmed: vec![(14, b"k".to_vec()), (15, Vec::new())],
        released: vec![(14, 3, 777)],
    }
}

fn row(number: u64, group: u64, lo: &[u8], hi: &[u8], seq: u64) -> RowMeta {
    RowMeta {
        number,
        group,
        dir_offset: 4096 * number,
        dir_len: 512,
        dir_checksum: 0x1234_5678,
        size: 1000 * number,
        smallest: InternalKey::new(lo, seq, ValueType::Value),
        largest: InternalKey::new(hi, seq, ValueType::Value),
        smallest_seq: seq.saturating_sub(1),
        largest_seq: seq,
        num_entries: 7,
        num_deletions: 2,
        num_range_deletions: 1,
        trim: number.is_multiple_of(2).then(|| b"d".to_vec()),
        below: number.saturating_sub(1),
        released_chunks: u32::from(number.is_multiple_of(2)),
        merge: if number.is_multiple_of(3) {
            300 + number
        } else {
            0
        },
    }
}

#[test]
fn rows_are_ordered_newest_group_first_and_trimmed_and_deleted() {
    let v = Version::with_level0(3, matrix());
    let e = edit(RowEdit {
        new: vec![
            row(3, 0, b"a", b"m", 30),
            row(4, 0, b"c", b"z", 40),
            row(5, 1, b"a", b"b", 50),
        ],
        ..RowEdit::default()
    });
    let v = v.apply(&e).unwrap();
    let order: Vec<u64> = rows_of(&v).iter().map(|r| r.number).collect();
    assert_eq!(order, vec![5, 4, 3]);
    let e = edit(RowEdit {
        trimmed: vec![(3, b"f".to_vec())],
        deleted: vec![4],
        ..RowEdit::default()
    });
    let v2 = v.apply(&e).unwrap();
    let order: Vec<u64> = rows_of(&v2).iter().map(|r| r.number).collect();
    assert_eq!(order, vec![5, 3]);
    assert_eq!(rows_of(&v2)[1].trim.as_deref(), Some(&b"f"[..]));
    // A trimmed row gives chunks back: its released count and live size change.
    let e = edit(RowEdit {
        released: vec![(3, 2, 640)],
        ..RowEdit::default()
    });
    let v3 = v2.apply(&e).unwrap();
    assert_eq!(rows_of(&v3)[1].released_chunks, 2);
    assert_eq!(rows_of(&v3)[1].size, 640);
    // The older version is untouched.
    assert_eq!(rows_of(&v)[2].trim, None);
    // Trimming backwards, deleting or trimming a missing row, and reusing a live number
    // (as a row or as a file) are refused.
    let bad = [
        edit(RowEdit {
            trimmed: vec![(3, b"a".to_vec())],
            ..RowEdit::default()
        }),
        edit(RowEdit {
            deleted: vec![4],
            ..RowEdit::default()
        }),
        edit(RowEdit {
            trimmed: vec![(9, b"a".to_vec())],
            ..RowEdit::default()
        }),
        // Releasing chunks of a row that was never trimmed, or of a missing row.
        edit(RowEdit {
            released: vec![(5, 1, 10)],
            ..RowEdit::default()
        }),
        edit(RowEdit {
            released: vec![(9, 1, 10)],
            ..RowEdit::default()
        }),
        edit(RowEdit {
            new: vec![row(5, 2, b"a", b"b", 60)],
            ..RowEdit::default()
        }),
        VersionEdit {
            new_files: vec![(1, file(3, b"a", b"b"))],
            ..VersionEdit::default()
        },
    ];
    for e in bad {
        assert!(v2.apply(&e).is_err(), "{e:?}");
    }
}

#[test]
fn rows_survive_recovery_and_rollover() {
    let dir = tempfile::tempdir().unwrap();
    let mut set = VersionSet::create_with_level0(fs(), dir.path(), 4, 1 << 20, matrix()).unwrap();
    let n = set.new_file_number();
    set.log_and_apply(edit(RowEdit {
        new: vec![row(n, 0, b"a", b"q", 9)],
        ..RowEdit::default()
    }))
    .unwrap();
    set.log_and_apply(edit(RowEdit {
        trimmed: vec![(n, b"h".to_vec())],
        released: vec![(n, 1, 500)],
        ..RowEdit::default()
    }))
    .unwrap();
    let before = set.current();
    drop(set);
    let mut set = VersionSet::recover_with_level0(fs(), dir.path(), 4, 1 << 20, matrix()).unwrap();
    assert_eq!(*set.current(), *before);
    // The row's number is never handed out again.
    assert!(set.new_file_number() > n);
    // A rollover snapshot keeps rows with their trims.
    set.log_and_apply(VersionEdit::default()).unwrap();
    drop(set);
    let set = VersionSet::recover_with_level0(fs(), dir.path(), 4, 1 << 20, matrix()).unwrap();
    assert_eq!(*set.current(), *before);
}

/// Row byte counts past any region's size are corruption, so that sums of row sizes
/// (room checks, group sizes) cannot overflow.
#[test]
fn row_sizes_past_any_region_are_corrupt() {
    for bad in [
        RowEdit {
            new: vec![RowMeta {
                size: u64::MAX,
                ..row(12, 1, b"c", b"x", 8)
            }],
            ..RowEdit::default()
        },
        RowEdit {
            new: vec![RowMeta {
                dir_len: 1 << 60,
                ..row(12, 1, b"c", b"x", 8)
            }],
            ..RowEdit::default()
        },
        RowEdit {
            released: vec![(14, 3, u64::MAX)],
            ..RowEdit::default()
        },
    ] {
        let err = RowEdit::from_records(&bad.into_records()).unwrap_err();
        assert!(
            matches!(&err, crate::error::Error::Corruption { reason, .. } if reason.contains("out of range")),
            "{err}"
        );
    }
}

/// Row records pass through a version edit's encoding unchanged and decode back to the
/// same changes; an edit with rows replays into the same version after a manifest is
/// written and read back.
#[test]
fn row_records_round_trip_through_an_edit() {
    let e = edit(all_kinds());
    let decoded = VersionEdit::decode(&e.encode(), Path::new("MANIFEST"), 0).unwrap();
    assert_eq!(decoded, e);
    assert_eq!(RowEdit::from_records(&decoded.level0).unwrap(), all_kinds());
    // A record with a tag of a newer release is skipped if it may be, refused otherwise.
    let mut records = all_kinds().into_records();
    records.push(Level0Record {
        tag: 70 | SAFE_TO_IGNORE,
        payload: vec![1, 2],
    });
    assert_eq!(RowEdit::from_records(&records).unwrap(), all_kinds());
    records.push(Level0Record {
        tag: 71,
        payload: Vec::new(),
    });
    assert!(RowEdit::from_records(&records).is_err());
}

/// Damaged row records are refused with a reason, never a panic.
#[test]
fn damaged_row_records_are_errors_not_panics() {
    for r in all_kinds().into_records() {
        for cut in 0..r.payload.len() {
            let short = Level0Record {
                tag: r.tag,
                payload: r.payload[..cut].to_vec(),
            };
            let _ = RowEdit::from_records(&[short]);
        }
        for i in 0..r.payload.len() {
            for bit in 0..8 {
                let mut b = r.clone();
                b.payload[i] ^= 1 << bit;
                let _ = RowEdit::from_records(&[b]);
            }
        }
    }
}

/// A classic level 0 refuses a manifest holding rows; the matrix state takes it.
#[test]
fn only_the_matrix_state_takes_row_records() {
    let e = edit(RowEdit {
        new: vec![row(3, 0, b"a", b"b", 1)],
        ..RowEdit::default()
    });
    assert!(Version::new(3).apply(&e).is_err());
    let v = Version::with_level0(3, matrix()).apply(&e).unwrap();
    assert_eq!(rows_of(&v).len(), 1);
    assert!(is_matrix_state(&v) && !is_matrix_state(&Version::new(3)));
}
