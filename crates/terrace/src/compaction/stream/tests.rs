use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::compaction::filter::DropPrefixFilter;
use crate::iter::VecIterator;
use crate::merge::MergingIterator;

type Entry = (Vec<u8>, Vec<u8>);

fn put(k: &str, seq: SeqNo, v: &str) -> Entry {
    (
        key::internal_key(k.as_bytes(), seq, ValueType::Value),
        v.as_bytes().to_vec(),
    )
}

fn del(k: &str, seq: SeqNo) -> Entry {
    (
        key::internal_key(k.as_bytes(), seq, ValueType::Deletion),
        Vec::new(),
    )
}

fn rt(start: &str, end: &str, seq: SeqNo) -> RangeTombstone {
    RangeTombstone {
        start: start.as_bytes().to_vec(),
        end: end.as_bytes().to_vec(),
        seq,
    }
}

/// Runs a stream over `entries` and returns what it kept, printed as `key@seq:kind=value`.
fn run(
    mut entries: Vec<Entry>,
    tombstones: &[RangeTombstone],
    config: StreamConfig<'_>,
) -> (Vec<String>, StreamCounters) {
    entries.sort_by(|a, b| key::compare(&a.0, &b.0));
    let mut input = VecIterator::new(entries);
    let tombs = FragmentedTombstones::new(tombstones, MAX_SEQ);
    let mut stream = CompactionStream::new(&mut input, &tombs, config);
    let mut out = Vec::new();
    while let Some((k, v)) = stream.next_output().unwrap() {
        let p = key::try_parse(&k).unwrap();
        out.push(format!(
            "{}@{}:{}={}",
            String::from_utf8_lossy(p.user_key),
            p.seq,
            if p.kind == ValueType::Value {
                "put"
            } else {
                "del"
            },
            String::from_utf8_lossy(&v)
        ));
    }
    (out, stream.counters())
}

fn cfg(snapshots: &[SeqNo], bottommost: bool) -> StreamConfig<'_> {
    StreamConfig {
        snapshots,
        bottommost,
        ..StreamConfig::default()
    }
}

#[test]
fn only_the_newest_version_per_stripe_survives() {
    let e = vec![
        put("k", 9, "d"),
        put("k", 7, "c"),
        put("k", 5, "b"),
        put("k", 3, "a"),
    ];
    let (out, c) = run(e.clone(), &[], cfg(&[8, 4], false));
    assert_eq!(out, vec!["k@9:put=d", "k@7:put=c", "k@3:put=a"]);
    assert_eq!(c.dropped_shadowed, 1);
    assert_eq!((c.input_entries, c.output_entries), (4, 3));
    let (out, _) = run(e, &[], cfg(&[], false));
    assert_eq!(out, vec!["k@9:put=d"]);
}

#[test]
fn range_tombstones_drop_only_within_their_stripe() {
    let e = vec![put("a", 3, "x"), put("b", 6, "y"), put("c", 2, "z")];
    // Tombstone @5 covers a@3 (same stripe: no snapshots between) but not b@6.
    let (out, c) = run(e.clone(), &[rt("a", "c", 5)], cfg(&[], false));
    assert_eq!(out, vec!["b@6:put=y", "c@2:put=z"]);
    assert_eq!(c.dropped_range_deleted, 1);
    // A snapshot at 4 separates a@3 from the tombstone: a@3 must stay for that reader.
    let (out, _) = run(e, &[rt("a", "c", 5)], cfg(&[4], false));
    assert_eq!(out, vec!["a@3:put=x", "b@6:put=y", "c@2:put=z"]);
}

#[test]
fn deletions_drop_at_the_bottom_only_when_no_snapshot_needs_them() {
    let e = vec![del("k", 8), put("k", 6, "b"), del("j", 3), put("j", 2, "a")];
    let (out, c) = run(e.clone(), &[], cfg(&[], true));
    assert!(out.is_empty(), "{out:?}");
    assert_eq!((c.dropped_deletions, c.dropped_shadowed), (2, 2));
    // Not bottommost: older data below may still need hiding.
    let (out, _) = run(e.clone(), &[], cfg(&[], false));
    assert_eq!(out, vec!["j@3:del=", "k@8:del="]);
    // Snapshot 7 sees k@6, so the deletion above it stays; j's deletion is below it.
    let (out, _) = run(e, &[], cfg(&[7], true));
    assert_eq!(out, vec!["k@8:del=", "k@0:put=b"]);
}

#[test]
fn bottommost_zeroes_sequence_numbers_of_uncovered_old_values() {
    let e = vec![
        put("a", 5, "x"),
        put("b", 9, "y"),
        put("b", 4, "w"),
        put("c", 7, "z"),
    ];
    let (out, _) = run(e.clone(), &[rt("c", "d", 1)], cfg(&[6], true));
    // b@9 is above the snapshot; c@7 is covered by an (older) tombstone and keeps its number.
    assert_eq!(
        out,
        vec!["a@0:put=x", "b@9:put=y", "b@0:put=w", "c@7:put=z"]
    );
    let (out, _) = run(e, &[], cfg(&[6], false));
    assert_eq!(
        out,
        vec!["a@5:put=x", "b@9:put=y", "b@4:put=w", "c@7:put=z"]
    );
}

struct Shout;

impl CompactionFilter for Shout {
    fn name(&self) -> &str {
        "shout"
    }
    fn filter(&self, level: usize, _: &[u8], value: &[u8]) -> FilterDecision {
        assert_eq!(level, 3);
        FilterDecision::ChangeValue(value.to_ascii_uppercase())
    }
}

#[test]
fn filter_sees_only_values_no_snapshot_can_see() {
    let drop_x = DropPrefixFilter::new(b"x".to_vec()).unwrap();
    let e = vec![
        put("x1", 9, "new"),
        put("x1", 3, "old"),
        put("x2", 4, "v"),
        del("x3", 8),
    ];
    let config = StreamConfig {
        filter: Some(&drop_x),
        output_level: 3,
        ..cfg(&[5], false)
    };
    // x1@9 is above snapshot 5: removed, as a deletion since data may lie below.
    // x1@3 and x2@4 are visible to the snapshot: untouched.
    let (out, c) = run(e.clone(), &[], config);
    assert_eq!(
        out,
        vec!["x1@9:del=", "x1@3:put=old", "x2@4:put=v", "x3@8:del="]
    );
    assert_eq!(c.filter_removed, 1);
    // Bottommost with no snapshots: removals vanish entirely.
    let config = StreamConfig {
        filter: Some(&drop_x),
        ..cfg(&[], true)
    };
    let (out, c) = run(e.clone(), &[], config);
    assert!(out.is_empty(), "{out:?}");
    assert_eq!((c.filter_removed, c.dropped_deletions), (2, 3));
    let config = StreamConfig {
        filter: Some(&Shout),
        output_level: 3,
        ..cfg(&[5], false)
    };
    let (out, c) = run(e, &[], config);
    assert_eq!(
        out,
        vec!["x1@9:put=NEW", "x1@3:put=old", "x2@4:put=v", "x3@8:del="]
    );
    let mut stats = CompactionStats::default();
    c.add_to(&mut stats);
    assert_eq!(stats.filtered_entries, 1);
    assert_eq!((stats.input_entries, stats.output_entries), (4, 4));
}

#[test]
fn bounds_limit_the_processed_keys() {
    let e = vec![
        put("a", 1, "1"),
        put("b", 2, "2"),
        put("c", 3, "3"),
        put("d", 4, "4"),
    ];
    let config = StreamConfig {
        lower_bound: Some(b"b"),
        upper_bound: Some(b"d"),
        ..cfg(&[], false)
    };
    let (out, c) = run(e, &[], config);
    assert_eq!(out, vec!["b@2:put=2", "c@3:put=3"]);
    assert_eq!(c.input_entries, 2);
}

#[test]
fn kept_tombstones_collapse_stripes_and_vanish_at_the_bottom() {
    let tombs = FragmentedTombstones::new(
        &[
            rt("a", "m", 3),
            rt("a", "m", 4),
            rt("f", "z", 9),
            rt("f", "z", 12),
        ],
        MAX_SEQ,
    );
    let keep = tombstones_to_keep(&tombs, &[5, 10], false);
    assert_eq!(
        keep.clipped(None, None),
        vec![
            rt("a", "f", 4),
            rt("f", "m", 12),
            rt("f", "m", 9),
            rt("f", "m", 4),
            rt("m", "z", 12),
            rt("m", "z", 9)
        ]
    );
    let keep = tombstones_to_keep(&tombs, &[5, 10], true);
    assert_eq!(
        keep.clipped(Some(b"g"), None),
        vec![
            rt("g", "m", 12),
            rt("g", "m", 9),
            rt("m", "z", 12),
            rt("m", "z", 9)
        ]
    );
    assert!(tombstones_to_keep(&tombs, &[], true).is_empty());
}

#[test]
fn bad_keys_and_input_errors_are_reported() {
    let mut input = VecIterator::new(vec![(b"shrt".to_vec(), Vec::new())]);
    let tombs = FragmentedTombstones::default();
    let mut stream = CompactionStream::new(&mut input, &tombs, cfg(&[], false));
    assert!(stream.next_output().unwrap_err().is_corruption());

    let mut bad = key::internal_key(b"k", 1, ValueType::Value);
    let n = bad.len();
    bad[n - 8] = 0x77;
    let mut input = VecIterator::new(vec![(bad, Vec::new())]);
    let mut stream = CompactionStream::new(&mut input, &tombs, cfg(&[], false));
    assert!(stream.next_output().unwrap_err().is_corruption());
}

#[test]
fn range_deletion_entries_in_the_point_input_are_skipped() {
    let rd = (
        key::internal_key(b"a", 5, ValueType::RangeDeletion),
        b"c".to_vec(),
    );
    let (out, c) = run(vec![rd, put("b", 1, "x")], &[], cfg(&[], false));
    assert_eq!(out, vec!["b@1:put=x"]);
    assert_eq!(c.input_entries, 1);
}

// ---- Model check: every snapshot's view survives the stream. ----

#[derive(Debug, Clone)]
enum Op {
    Put(u8),
    Del(u8),
    DelRange(u8, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..6).prop_map(Op::Put),
        2 => (0u8..6).prop_map(Op::Del),
        1 => (0u8..6, 1u8..4).prop_map(|(a, n)| Op::DelRange(a, a + n)),
    ]
}

/// The history as point entries and tombstones; sequence numbers start at `first_seq`.
fn materialize(ops: &[Op], first_seq: SeqNo) -> (Vec<Entry>, Vec<RangeTombstone>) {
    let mut entries = Vec::new();
    let mut tombs = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let seq = first_seq + i as SeqNo;
        match *op {
            Op::Put(k) => entries.push((
                key::internal_key(&[b'a' + k], seq, ValueType::Value),
                format!("v{seq}").into_bytes(),
            )),
            Op::Del(k) => entries.push((
                key::internal_key(&[b'a' + k], seq, ValueType::Deletion),
                Vec::new(),
            )),
            Op::DelRange(a, b) => tombs.push(RangeTombstone {
                start: vec![b'a' + a],
                end: vec![b'a' + b],
                seq,
            }),
        }
    }
    (entries, tombs)
}

/// What a reader at `snap` sees: the newest visible version of each key, unless it is a
/// deletion or a newer visible range tombstone covers it.
fn view(entries: &[Entry], tombs: &[RangeTombstone], snap: SeqNo) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut newest: BTreeMap<Vec<u8>, (SeqNo, ValueType, Vec<u8>)> = BTreeMap::new();
    for (k, v) in entries {
        let p = key::try_parse(k).unwrap();
        if p.seq > snap {
            continue;
        }
        let slot = newest
            .entry(p.user_key.to_vec())
            .or_insert((p.seq, p.kind, v.clone()));
        if p.seq >= slot.0 {
            *slot = (p.seq, p.kind, v.clone());
        }
    }
    newest
        .into_iter()
        .filter(|(k, (seq, kind, _))| {
            *kind == ValueType::Value
                && !tombs
                    .iter()
                    .any(|t| t.seq <= snap && t.seq > *seq && t.contains(k))
        })
        .map(|(k, (_, _, v))| (k, v))
        .collect()
}

proptest! {
    // The case count comes from PROPTEST_CASES (proptest's default configuration).
    #[test]
    fn every_snapshot_view_survives(
        below_ops in proptest::collection::vec(op(), 0..12),
        ops in proptest::collection::vec(op(), 1..40),
        snapshots in proptest::collection::vec(0u64..70, 0..4),
        owners in proptest::collection::vec(0usize..3, 40),
        bottommost: bool,
        filter_prefix in proptest::option::of(0u8..6),
    ) {
        // Older data below the output level exists only when not bottommost.
        let (below, below_tombs) = if bottommost {
            (Vec::new(), Vec::new())
        } else {
            materialize(&below_ops, 1)
        };
        let (entries, tombs) = materialize(&ops, 20);
        let mut children = vec![Vec::new(); 3];
        for (i, e) in entries.iter().enumerate() {
            children[owners[i]].push(e.clone());
        }
        let mut merged = MergingIterator::new(
            children
                .into_iter()
                .map(|mut c| {
                    c.sort_by(|a: &Entry, b: &Entry| key::compare(&a.0, &b.0));
                    Box::new(VecIterator::new(c)) as Box<dyn InternalIterator>
                })
                .collect(),
        );
        let fragmented = FragmentedTombstones::new(&tombs, MAX_SEQ);
        let filter = filter_prefix.map(|p| DropPrefixFilter::new(vec![b'a' + p]).unwrap());
        let config = StreamConfig {
            snapshots: &snapshots,
            bottommost,
            filter: filter.as_ref().map(|f| f as &dyn CompactionFilter),
            ..StreamConfig::default()
        };
        let mut stream = CompactionStream::new(&mut merged, &fragmented, config);
        let mut out = Vec::new();
        while let Some(e) = stream.next_output().unwrap() {
            out.push(e);
        }
        for w in out.windows(2) {
            prop_assert!(key::compare(&w[0].0, &w[1].0).is_lt());
        }
        let kept = tombstones_to_keep(&fragmented, &snapshots, bottommost).clipped(None, None);

        let before: Vec<Entry> = below.iter().chain(&entries).cloned().collect();
        let after: Vec<Entry> = below.iter().chain(&out).cloned().collect();
        let tombs_before: Vec<RangeTombstone> = below_tombs.iter().chain(&tombs).cloned().collect();
        let tombs_after: Vec<RangeTombstone> = below_tombs.iter().chain(&kept).cloned().collect();
        for &s in &snapshots {
            prop_assert_eq!(
                view(&before, &tombs_before, s),
                view(&after, &tombs_after, s),
                "snapshot {}", s
            );
        }
        // The latest view changes only by what the filter removed.
        let mut expected = view(&before, &tombs_before, MAX_SEQ);
        if let Some(p) = filter_prefix {
            let newest_snapshot = snapshots.iter().max().copied().unwrap_or(0);
            let top_value = entries
                .iter()
                .filter(|(k, _)| key::user_key(k) == [b'a' + p])
                .min_by(|a, b| key::compare(&a.0, &b.0))
                .and_then(|(k, _)| key::try_parse(k).ok())
                .is_some_and(|k| k.kind == ValueType::Value && k.seq > newest_snapshot);
            if top_value {
                expected.remove(&vec![b'a' + p]);
            }
        }
        prop_assert_eq!(expected, view(&after, &tombs_after, MAX_SEQ));
    }
}
