//! Row iterators and the group's merging iterator against sorted vectors.

use proptest::prelude::*;

use super::*;
use crate::iter::{InternalIterator, VecIterator};
use crate::key::MAX_SEQ;

fn forward(it: &mut dyn InternalIterator) -> Vec<Entry> {
    let mut out = Vec::new();
    it.seek_to_first().unwrap();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next().unwrap();
    }
    out
}

fn backward(it: &mut dyn InternalIterator) -> Vec<Entry> {
    let mut out = Vec::new();
    it.seek_to_last().unwrap();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev().unwrap();
    }
    out.reverse();
    out
}

/// Positions both iterators the same way and compares where they land.
fn same_after(a: &mut dyn InternalIterator, b: &mut dyn InternalIterator, target: &[u8]) {
    a.seek(target).unwrap();
    b.seek(target).unwrap();
    assert_eq!(a.valid(), b.valid(), "seek {target:?}");
    assert_eq!(a.key(), b.key());
    assert_eq!(a.value(), b.value());
    if a.valid() {
        a.next().unwrap();
        b.next().unwrap();
        assert_eq!((a.valid(), a.key()), (b.valid(), b.key()));
    }
    a.seek_for_prev(target).unwrap();
    b.seek_for_prev(target).unwrap();
    assert_eq!(a.valid(), b.valid(), "seek_for_prev {target:?}");
    assert_eq!(a.key(), b.key());
    if a.valid() {
        a.prev().unwrap();
        b.prev().unwrap();
        assert_eq!((a.valid(), a.key()), (b.valid(), b.key()));
    }
}

/// Seek targets: every key of the universe at a few snapshots, and the absent keys.
fn targets(last_seq: SeqNo) -> Vec<Vec<u8>> {
    let mut t = Vec::new();
    for uk in universe().iter().chain(absent_keys().iter()) {
        for s in [0, last_seq / 2, MAX_SEQ] {
            t.push(key::seek_key(uk, s));
        }
    }
    t
}

#[test]
fn row_iterator_starts_at_the_trim() {
    let entries: Vec<Entry> = (0..10u8)
        .map(|i| put(&[i], u64::from(i) + 1, &[i]))
        .collect();
    let row = Arc::new(
        build_row(1, entries.clone(), &[], None, 4096)
            .unwrap()
            .open()
            .unwrap(),
    );
    let start = row.trim_start(&[4]).unwrap();
    assert_eq!(start, 4);
    let mut it = RowIterator::new(row, start);
    assert_eq!(forward(&mut it), entries[4..].to_vec());
    assert_eq!(backward(&mut it), entries[4..].to_vec());
    it.seek(&key::seek_key(&[1], MAX_SEQ)).unwrap();
    assert_eq!(it.position(), Some(4));
    it.seek_for_prev(&key::seek_key(&[3], MAX_SEQ)).unwrap();
    assert!(!it.valid());
    it.seek_to_first().unwrap();
    it.prev().unwrap();
    assert!(!it.valid());
}

proptest! {
    // The case count comes from PROPTEST_CASES (proptest's default configuration).
    #[test]
    fn row_iterator_matches_a_vector(spec in row_spec(60), chunk in MIN_CHUNK_BYTES..500, start in 0usize..70) {
        let (rows, last_seq) = model_rows(&[spec]);
        let row = Arc::new(build_row(1, rows[0].entries.clone(), &[], None, chunk).unwrap().open().unwrap());
        let start = start.min(row.len());
        let mut it = RowIterator::new(row, start);
        let mut model = VecIterator::new(rows[0].entries[start..].to_vec());
        prop_assert_eq!(forward(&mut it), rows[0].entries[start..].to_vec());
        prop_assert_eq!(backward(&mut it), rows[0].entries[start..].to_vec());
        for t in targets(last_seq) {
            same_after(&mut it, &mut model, &t);
        }
    }

    #[test]
    fn group_iterator_matches_all_rows_merged(
        specs in prop::collection::vec(row_spec(25), 1..8),
        trim in prop::option::weighted(0.3, 0usize..48),
    ) {
        let (rows, last_seq) = model_rows(&specs);
        let params = MatrixParams { segment_rows: 3, chunk_bytes: 256, ..MatrixParams::default() };
        let mut g = build_group(&rows, &params);
        let trim_key = trim.map(|t| universe()[t % universe().len()].clone());
        if let Some(t) = &trim_key {
            g = g.trimmed(t).unwrap();
        }
        let keep = |uk: &[u8]| trim_key.as_deref().is_none_or(|t| uk >= t);
        let mut all: Vec<Entry> = rows
            .iter()
            .flat_map(|r| r.entries.iter().cloned())
            .filter(|(k, _)| keep(key::user_key(k)))
            .collect();
        all.sort_by(|a, b| key::compare(&a.0, &b.0));
        let mut it = g.merging_iter();
        prop_assert_eq!(forward(&mut it), all.clone());
        prop_assert_eq!(backward(&mut it), all.clone());
        let mut model = VecIterator::new(all);
        for t in targets(last_seq) {
            same_after(&mut it, &mut model, &t);
        }
        // Tombstones come out cut to the trim.
        for t in g.range_tombstones() {
            prop_assert!(trim_key.as_deref().is_none_or(|k| t.start.as_slice() >= k));
        }
        let n: usize = rows.iter().map(|r| r.tombstones.iter().filter(|t| trim_key.as_deref().is_none_or(|k| t.end.as_slice() > k)).count()).sum();
        prop_assert_eq!(g.range_tombstones().len(), n);
    }
}
