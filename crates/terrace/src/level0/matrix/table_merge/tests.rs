//! Table merges: which segments, what survives, and how the stack is relinked.

use proptest::prelude::*;

use super::*;
use crate::key::MAX_SEQ;
use crate::level0::matrix::rows::build_row;
use crate::level0::matrix::rows::tests::*;
use crate::level0::matrix::rows::RowReader;

fn params(segment_rows: usize, merge_segments: usize, fraction: f64) -> MatrixParams {
    MatrixParams {
        segment_rows,
        merge_segments,
        merge_bottom_fraction: fraction,
        chunk_bytes: 256,
        bloom_bits_per_key: 4,
        ..MatrixParams::default()
    }
}

/// Runs one planned merge the way an owner of extents would: opens the output rows and
/// the relinked row above (with its old data chunks), then applies them.
fn run_merge(
    g: &MatrixGroup<Vec<u8>>,
    plan: &MergePlan,
    snapshots: &[SeqNo],
    ids: &mut u64,
) -> (MatrixGroup<Vec<u8>>, MergeOutput) {
    let mut next_id = || {
        *ids += 1;
        *ids
    };
    let out = g.merge_rows(plan, snapshots, &mut next_id).unwrap();
    let rows: Vec<_> = out
        .rows
        .iter()
        .map(|b| Arc::new(b.clone().open().unwrap()))
        .collect();
    let above = out.above.as_ref().map(|a| {
        let old = g.row(plan.rows.start - 1).unwrap();
        Arc::new(
            RowReader::open(&a.header, a.meta_chunks.clone(), old.data_chunks().to_vec()).unwrap(),
        )
    });
    // Filters made ahead (as the container does, outside the database's lock) give the
    // same group; filters that do not hold the outputs are refused.
    let segments = MatrixGroup::merged_segments(&rows, g.params()).unwrap();
    if !rows.is_empty() {
        assert!(g
            .apply_merge_with(plan, rows.clone(), above.clone(), Vec::new())
            .is_err());
    }
    let ahead = g
        .apply_merge_with(plan, rows.clone(), above.clone(), segments)
        .unwrap();
    let merged = g.apply_merge(plan, rows, above).unwrap();
    assert_eq!(
        ahead
            .segments()
            .iter()
            .map(|s| s.rows())
            .collect::<Vec<_>>(),
        merged
            .segments()
            .iter()
            .map(|s| s.rows())
            .collect::<Vec<_>>()
    );
    (merged, out)
}

/// Every read at every listed snapshot, and at the latest data, ends the same way.
fn same_reads(a: &MatrixGroup<Vec<u8>>, b: &MatrixGroup<Vec<u8>>, snapshots: &[SeqNo]) {
    for uk in universe().iter().chain(absent_keys().iter()) {
        for &s in snapshots.iter().chain([MAX_SEQ].iter()) {
            assert_eq!(outcome(a, uk, s), outcome(b, uk, s), "key {uk:?} at {s}");
        }
    }
}

fn uniform_rows(n: u8) -> Vec<ModelRow> {
    (0..n)
        .map(|i| ModelRow {
            entries: (0..4u8)
                .map(|k| put(&[k], u64::from(i) * 4 + u64::from(k) + 1, &[i; 20]))
                .collect(),
            tombstones: Vec::new(),
        })
        .collect()
}

#[test]
fn plan_takes_the_oldest_unmerged_segments_in_the_bottom_fraction() {
    // 10 rows in segments of 2: 5 segments, the bottom 70% are 3.
    let g = build_group(&uniform_rows(10), &params(2, 2, 0.7));
    let plan = g.plan_merge().unwrap();
    assert_eq!(plan.segments, 3..5);
    assert_eq!(plan.rows, 6..10);
    assert_eq!(plan.row_ids, vec![103, 102, 101, 100]);
    assert_eq!(plan.target_row_bytes, 4 * 29 * 3 / 2);
    // 3 segments at merge_segments 3 would need all of them, but only 2 are eligible.
    assert!(build_group(&uniform_rows(6), &params(2, 3, 0.7))
        .plan_merge()
        .is_none());
    // The open top segment is never merged.
    assert!(build_group(&uniform_rows(3), &params(2, 2, 1.0))
        .plan_merge()
        .is_none());
}

#[test]
fn merge_drops_shadowed_versions_and_relinks_the_row_above() {
    let rows = uniform_rows(10);
    let g = build_group(&rows, &params(2, 2, 0.7));
    let plan = g.plan_merge().unwrap();
    let mut ids = 1000;
    let (merged, out) = run_merge(&g, &plan, &[], &mut ids);
    // Four rows of the same four keys: one version of each survives.
    assert_eq!(out.counters.output_entries, 4);
    assert_eq!(out.counters.dropped_shadowed, 12);
    assert!(out.above.is_some());
    assert_eq!(merged.len(), 6 + out.rows.len());
    assert!(merged.fully_linked());
    assert!(merged.segments().last().unwrap().is_merged());
    same_reads(&g, &merged, &[]);
    // Nothing left to merge: the merged segment is skipped, 3 unmerged are not eligible.
    assert!(merged.plan_merge().is_none());
}

#[test]
fn rows_added_during_a_merge_are_kept() {
    let rows = uniform_rows(10);
    let p = params(2, 2, 0.7);
    let g = build_group(&rows, &p);
    let plan = g.plan_merge().unwrap();
    let out = g.merge_rows(&plan, &[], &mut || 77).unwrap();
    // A flush lands on top meanwhile.
    let top = g.row(0).unwrap();
    let fresh = build_row(
        500,
        vec![put(&[9], 999, b"new")],
        &[],
        Some(Below::new(top.as_ref(), 0)),
        256,
    )
    .unwrap();
    let g2 = g.with_row_on_top(Arc::new(fresh.open().unwrap())).unwrap();
    let outs: Vec<_> = out
        .rows
        .iter()
        .map(|b| Arc::new(b.clone().open().unwrap()))
        .collect();
    let merged = g2.apply_merge(&plan, outs.clone(), None).unwrap();
    assert_eq!(merged.len(), 7 + outs.len());
    assert_eq!(
        outcome(&merged, &[9], MAX_SEQ),
        Outcome::Value(b"new".to_vec())
    );
    same_reads(&g, &merged, &[]);
    // Applying twice fails: the merged rows are gone.
    assert!(merged.apply_merge(&plan, outs, None).is_err());
}

proptest! {
    // The case count comes from PROPTEST_CASES (proptest's default configuration).
    /// Table merges (repeated while any is due, so later ones merge rows in the middle of
    /// the stack) keep every version a listed snapshot or the latest reader sees.
    #[test]
    fn merges_preserve_every_visible_version(
        specs in prop::collection::vec(row_spec(20), 4..18),
        segment_rows in 1usize..4,
        merge_segments in 1usize..4,
        fraction in prop::sample::select(vec![0.7, 1.0]),
        snap_picks in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
        extra in prop::collection::vec(row_spec(10), 0..6),
    ) {
        let (mut rows, last_seq) = model_rows(&specs);
        let snapshots: Vec<SeqNo> = snap_picks.iter().map(|i| i.index(last_seq as usize + 1) as SeqNo).collect();
        let p = params(segment_rows, merge_segments, fraction);
        let mut g = build_group(&rows, &p);
        let mut ids = 10_000;
        let original = g.clone();
        let mut merges = 0;
        while let Some(plan) = g.plan_merge() {
            let (next, out) = run_merge(&g, &plan, &snapshots, &mut ids);
            prop_assert!(next.fully_linked());
            prop_assert_eq!(next.segments().iter().map(|s| s.rows()).sum::<usize>(), next.len());
            // Outputs are key-disjoint, the smallest keys at the bottom.
            let outs: Vec<_> = out.rows.iter().map(|b| b.clone().open().unwrap()).collect();
            for w in outs.windows(2) {
                if let (false, false) = (w[0].is_empty(), w[1].is_empty()) {
                    let upper_first = key::user_key(&w[0].header().smallest_key);
                    let lower_last = key::user_key(&w[1].header().largest_key);
                    prop_assert!(lower_last < upper_first);
                }
            }
            g = next;
            same_reads(&original, &g, &snapshots);
            merges += 1;
            prop_assert!(merges < 50);
        }
        // More flushes on top, then merge again: rows in the middle of the stack.
        let (more, _) = model_rows(&extra);
        let base = g.clone();
        let mut seq_shift = last_seq;
        for r in more {
            let mut r = r;
            for e in &mut r.entries {
                let p = key::try_parse(&e.0).unwrap();
                e.0 = key::internal_key(p.user_key, p.seq + seq_shift, p.kind);
            }
            for t in &mut r.tombstones {
                t.seq += seq_shift;
            }
            seq_shift += 1000;
            let top = g.row(0).map(|t| Below::new(t.as_ref(), 0));
            ids += 1;
            let b = build_row(ids, r.entries.iter().cloned(), &r.tombstones, top, p.chunk_bytes).unwrap();
            g = g.with_row_on_top(Arc::new(b.open().unwrap())).unwrap();
            rows.push(r);
        }
        let before = g.clone();
        while let Some(plan) = g.plan_merge() {
            let (next, _) = run_merge(&g, &plan, &snapshots, &mut ids);
            prop_assert!(next.fully_linked());
            g = next;
            same_reads(&before, &g, &snapshots);
        }
        prop_assert!(base.len() <= rows.len());
    }
}

/// `(rows, open, merged)` of each segment, newest first.
fn segment_shape(g: &MatrixGroup<Vec<u8>>) -> Vec<(usize, bool, bool)> {
    g.segments()
        .iter()
        .map(|s| (s.rows(), s.is_open(), s.is_merged()))
        .collect()
}

#[test]
fn merge_marks_rebuild_the_segments_a_merge_left() {
    // 11 rows in segments of 2: an open top segment of one row, five closed below.
    let rows = uniform_rows(11);
    let p = params(2, 2, 0.7);
    let g = build_group(&rows, &p);
    let plan = g.plan_merge().unwrap();
    let mut ids = 1000;
    let (merged, out) = run_merge(&g, &plan, &[], &mut ids);
    let outputs = out.rows.len();
    // A restart without marks cuts every two rows from the bottom, merged or not.
    let readers: Vec<_> = merged.rows().cloned().collect();
    let unmarked = MatrixGroup::from_rows(readers.clone(), p.clone()).unwrap();
    assert!(unmarked.segments().iter().all(|s| !s.is_merged()));
    // With the marks a version records (the outputs share one, flushed rows have 0), the
    // segments are the merge's own, and the merged rows are not planned again.
    let mut marks = vec![0; merged.len() - outputs];
    marks.extend(std::iter::repeat_n(1001, outputs));
    let marked = MatrixGroup::from_marked_rows(readers.clone(), &marks, p.clone()).unwrap();
    assert_eq!(segment_shape(&marked), segment_shape(&merged));
    assert_eq!(marked.plan_merge(), merged.plan_merge());
    same_reads(&merged, &marked, &[]);
    // Marks must match the rows.
    assert!(MatrixGroup::from_marked_rows(readers, &marks[1..], p).is_err());
}
