//! Point lookups across rows against a brute-force search of every row.

use proptest::prelude::*;

use super::*;
use crate::key::MAX_SEQ;
use crate::tables::Lookup;

fn params(segment_rows: usize, bloom_bits_per_key: usize, chunk_bytes: usize) -> MatrixParams {
    MatrixParams {
        segment_rows,
        bloom_bits_per_key,
        chunk_bytes,
        ..MatrixParams::default()
    }
}

/// Checks `find` against `brute_find` for every key of the universe, some absent keys
/// and several snapshots.
fn check_all(g: &MatrixGroup<Vec<u8>>, rows: &[ModelRow], trim: Option<&[u8]>, snaps: &[SeqNo]) {
    let newest_first: Vec<&ModelRow> = rows.iter().rev().collect();
    for uk in universe().iter().chain(absent_keys().iter()) {
        for &snap in snaps {
            let got = g.find(uk, snap).unwrap();
            let (want, want_t) = brute_find(&newest_first, trim, uk, snap);
            let got_entry = got.entry.map(|e| (e.row, e.seq, e.kind, e.value.to_vec()));
            assert_eq!(got_entry, want, "key {uk:?} at {snap}");
            assert_eq!(
                got.max_tombstone_seq, want_t,
                "tombstone of {uk:?} at {snap}"
            );
        }
    }
}

/// The thesis's worked example (§3.3.2): three rows of seven keys, looking up 4.
#[test]
fn thesis_example_finds_every_key_with_narrowed_windows() {
    let rows: Vec<ModelRow> = [
        [1u8, 5, 9, 12, 15, 20, 25],
        [2, 4, 8, 13, 16, 21, 30],
        [3, 6, 7, 10, 14, 22, 26],
    ]
    .iter()
    .enumerate()
    .map(|(i, ks)| ModelRow {
        entries: ks.iter().map(|k| put(&[*k], i as u64 + 1, &[*k])).collect(),
        tombstones: Vec::new(),
    })
    .collect();
    let g = build_group(&rows, &params(50, 0, 4096));
    assert!(g.fully_linked());
    let r = g.find(&[4], MAX_SEQ).unwrap();
    assert_eq!(r.entry.map(|e| (e.row, e.value)), Some((1, &[4u8][..])));
    assert_eq!(r.stats.full_searches, 1);
    assert_eq!(r.stats.window_searches, 1);
    check_all(&g, &rows, None, &[MAX_SEQ]);
}

/// Rows whose keys close in on the key from both sides: the window in each lower row is
/// empty, so those rows are passed by the empty-window translation.
#[test]
fn rows_that_cannot_hold_the_key_are_passed_without_comparisons() {
    let mut rows = vec![ModelRow {
        entries: vec![put(&[100], 1, b"bottom")],
        tombstones: Vec::new(),
    }];
    for k in 1..20u8 {
        let s = u64::from(k) * 2;
        rows.push(ModelRow {
            entries: vec![put(&[k], s, b"v"), put(&[200 - k], s + 1, b"v")],
            tombstones: Vec::new(),
        });
    }
    let g = build_group(&rows, &params(50, 0, 4096));
    let r = g.find(&[100], MAX_SEQ).unwrap();
    assert_eq!(
        r.entry.map(|e| (e.row, e.value)),
        Some((19, &b"bottom"[..]))
    );
    let want = SearchStats {
        full_searches: 1,
        window_searches: 1,
        translated: 18,
        filtered: 0,
    };
    assert_eq!(r.stats, want);
    check_all(&g, &rows, None, &[MAX_SEQ]);
}

/// Rows of disjoint, ascending key ranges (sequential inserts): the pointers cannot
/// narrow anything (the thesis's §5.3.4), but every key is still found.
#[test]
fn sequential_rows_are_searched_correctly() {
    let rows: Vec<ModelRow> = (0..20u8)
        .map(|i| ModelRow {
            entries: (0..10u8)
                .map(|j| put(&[i, j], u64::from(i) * 10 + u64::from(j) + 1, b"v"))
                .collect(),
            tombstones: Vec::new(),
        })
        .collect();
    let g = build_group(&rows, &params(50, 0, 4096));
    let r = g.find(&[3, 4], MAX_SEQ).unwrap();
    assert_eq!(r.entry.map(|e| e.row), Some(16));
    assert!(g.find(&[3, 4, 0], MAX_SEQ).unwrap().entry.is_none());
    let newest_first: Vec<&ModelRow> = rows.iter().rev().collect();
    for i in 0..21u8 {
        for j in 0..11u8 {
            let got = g
                .find(&[i, j], MAX_SEQ)
                .unwrap()
                .entry
                .map(|e| (e.row, e.seq));
            let want = brute_find(&newest_first, None, &[i, j], MAX_SEQ)
                .0
                .map(|h| (h.0, h.1));
            assert_eq!(got, want);
        }
    }
}

#[test]
fn rejected_segments_are_skipped_and_the_next_row_searched_in_full() {
    let rows: Vec<ModelRow> = (0..12u8)
        .map(|i| ModelRow {
            entries: vec![put(&[i], u64::from(i) + 1, b"v")],
            tombstones: Vec::new(),
        })
        .collect();
    let g = build_group(&rows, &params(3, 20, 4096));
    assert_eq!(g.segments().len(), 4);
    let r = g.find(&[1], MAX_SEQ).unwrap();
    assert_eq!(r.entry.map(|e| e.row), Some(10));
    assert!(r.stats.filtered >= 6, "{:?}", r.stats);
    check_all(&g, &rows, None, &[MAX_SEQ]);
}

#[test]
fn get_resolves_against_tombstones_like_tables_lookup() {
    let rows = vec![
        ModelRow {
            entries: vec![put(b"a", 1, b"old"), put(b"b", 2, b"keep")],
            tombstones: Vec::new(),
        },
        ModelRow {
            entries: vec![put(b"c", 4, b"new")],
            tombstones: vec![RangeTombstone {
                start: b"a".to_vec(),
                end: b"b".to_vec(),
                seq: 3,
            }],
        },
    ];
    let g = build_group(&rows, &params(50, 10, 4096));
    let mut t = 0;
    assert!(matches!(
        g.get(b"a", MAX_SEQ, &mut t).unwrap(),
        Lookup::Found(None)
    ));
    assert_eq!(t, 3);
    let mut t = 0;
    assert!(
        matches!(g.get(b"a", 2, &mut t).unwrap(), Lookup::Found(Some(v)) if v.as_ref() == b"old")
    );
    let mut t = 0;
    assert!(
        matches!(g.get(b"b", MAX_SEQ, &mut t).unwrap(), Lookup::Found(Some(v)) if v.as_ref() == b"keep")
    );
    let mut t = 0;
    assert!(matches!(
        g.get(b"zz", MAX_SEQ, &mut t).unwrap(),
        Lookup::Missing
    ));
    let mut t = 9;
    assert!(matches!(
        g.get(b"b", MAX_SEQ, &mut t).unwrap(),
        Lookup::Found(None)
    ));
}

#[test]
fn an_unlinked_row_is_searched_in_full() {
    let rows: Vec<ModelRow> = (0..3u8)
        .map(|i| ModelRow {
            entries: vec![
                put(&[i], u64::from(i) + 1, b"v"),
                put(&[9], u64::from(i) + 10, &[i]),
            ],
            tombstones: Vec::new(),
        })
        .collect();
    // Rows built without links, stacked as a group.
    let readers: Vec<_> = rows
        .iter()
        .enumerate()
        .rev()
        .map(|(i, r)| {
            Arc::new(
                build_row(i as u64, r.entries.clone(), &[], None, 4096)
                    .unwrap()
                    .open()
                    .unwrap(),
            )
        })
        .collect();
    let g = MatrixGroup::from_rows(readers, params(50, 0, 4096)).unwrap();
    assert!(!g.fully_linked());
    check_all(&g, &rows, None, &[MAX_SEQ, 5, 11]);
}

proptest! {
    // The case count comes from PROPTEST_CASES (proptest's default configuration).
    /// The required property: window narrowing (with trims, snapshots and segment
    /// filters) never skips a key that a search of every row finds.
    #[test]
    fn lookups_match_brute_force(
        specs in prop::collection::vec(row_spec(30), 1..14),
        segment_rows in 1usize..5,
        bits in prop::sample::select(vec![0usize, 1, 2, 10]),
        chunk in MIN_CHUNK_BYTES..600,
        trim in prop::option::weighted(0.3, 0usize..48),
        snap_picks in prop::collection::vec(any::<prop::sample::Index>(), 4),
        drop_picks in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
    ) {
        let (rows, last_seq) = model_rows(&specs);
        let p = params(segment_rows, bits, chunk);
        let mut g = build_group(&rows, &p);
        prop_assert!(g.fully_linked());
        prop_assert_eq!(g.segments().iter().map(|s| s.rows()).sum::<usize>(), rows.len());
        let trim_key = trim.map(|t| universe()[t % universe().len()].clone());
        if let Some(t) = &trim_key {
            g = g.trimmed(t).unwrap();
        }
        let mut snaps: Vec<SeqNo> = snap_picks.iter().map(|i| i.index(last_seq as usize + 1) as SeqNo).collect();
        snaps.push(MAX_SEQ);
        check_all(&g, &rows, trim_key.as_deref(), &snaps);
        // Rows dropped from the group (a column consumed them whole) leave a group that
        // answers as the remaining rows do, its segments still adding up.
        let drop: Vec<usize> = drop_picks.iter().map(|i| i.index(rows.len())).collect();
        let fewer = g.without_rows(&drop).unwrap();
        let left: Vec<ModelRow> = rows
            .iter()
            .enumerate()
            .filter(|(i, _)| !drop.contains(&(rows.len() - 1 - i)))
            .map(|(_, r)| r.clone())
            .collect();
        prop_assert_eq!(fewer.len(), left.len());
        prop_assert_eq!(fewer.segments().iter().map(|s| s.rows()).sum::<usize>(), left.len());
        check_all(&fewer, &left, trim_key.as_deref(), &snaps);
        prop_assert!(g.without_rows(&[rows.len()]).is_err());
        // The same rows regrouped from scratch (as after a restart) answer the same.
        let readers: Vec<_> = g.rows().cloned().collect();
        let mut again = MatrixGroup::from_rows(readers, p).unwrap();
        if let Some(t) = &trim_key {
            again = again.trimmed(t).unwrap();
        }
        check_all(&again, &rows, trim_key.as_deref(), &snaps);
        // Rows that gave back the data chunks below the trim, regrouped (as column
        // compaction and a restart leave them), answer the same.
        if let Some(t) = &trim_key {
            let released: Vec<_> = g.rows().map(|r| Arc::new(release_below(r, t))).collect();
            let mut g3 = MatrixGroup::from_rows(released, params(segment_rows, bits, chunk)).unwrap();
            g3 = g3.trimmed(t).unwrap();
            check_all(&g3, &rows, Some(t), &snaps);
            // The trimmed group taking the released readers in place keeps its filters.
            let released: Vec<_> = g.rows().map(|r| Arc::new(release_below(r, t))).collect();
            let g4 = g.with_readers(released).unwrap();
            check_all(&g4, &rows, Some(t), &snaps);
            // Readers of other rows, or fewer of them, are refused.
            let mut wrong: Vec<_> = g.rows().cloned().collect();
            wrong.reverse();
            if wrong.len() > 1 {
                prop_assert!(g.with_readers(wrong).is_err());
            }
            prop_assert!(g.with_readers(Vec::new()).is_err() || rows.is_empty());
        }
    }
}

/// `r` without the data chunks wholly below the user key `trim`.
fn release_below(r: &RowReader<Vec<u8>>, trim: &[u8]) -> RowReader<Vec<u8>> {
    let start = r.trim_start(trim).unwrap();
    let n = if start >= r.len() {
        r.header().data_chunks.len()
    } else {
        r.data_chunk_of(start).unwrap()
    };
    r.release_data_chunks(n).unwrap()
}
