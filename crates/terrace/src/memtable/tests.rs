use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::iter::{InternalIterator, VecIterator};
use crate::key::{internal_key, seek_key, ParsedKey};

fn scan(it: &mut MemTableIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_first().unwrap();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next().unwrap();
    }
    out
}

fn parsed(k: &[u8]) -> ParsedKey<'_> {
    crate::key::try_parse(k).unwrap()
}

#[test]
fn empty_memtable() {
    let m = Arc::new(MemTable::new());
    assert!(m.is_empty());
    assert_eq!(m.largest_seq(), 0);
    assert_eq!(m.get(b"a", MAX_SEQ), None);
    assert_eq!(m.max_covering_tombstone_seq(b"a", MAX_SEQ), 0);
    let mut it = m.iter();
    for f in [
        MemTableIterator::seek_to_first,
        MemTableIterator::seek_to_last,
    ] {
        f(&mut it).unwrap();
        assert!(!it.valid());
        assert_eq!(it.key(), b"");
        assert_eq!(it.value(), b"");
        it.next().unwrap();
        it.prev().unwrap();
    }
}

#[test]
fn get_at_snapshots() {
    let m = MemTable::new();
    m.add(10, ValueType::Value, b"k", b"v10");
    m.add(20, ValueType::Deletion, b"k", b"");
    m.add(30, ValueType::Value, b"k", b"v30");
    m.add(15, ValueType::Value, b"j", b"j15");
    m.add(25, ValueType::Value, b"ka", b"ka25");
    assert_eq!(m.get(b"k", 9), None);
    let e = m.get(b"k", 10).unwrap();
    assert_eq!(
        (e.seq, e.kind, &e.value[..]),
        (10, ValueType::Value, &b"v10"[..])
    );
    assert_eq!(m.get(b"k", 19).unwrap().seq, 10);
    let e = m.get(b"k", 20).unwrap();
    assert_eq!((e.seq, e.kind), (20, ValueType::Deletion));
    assert_eq!(m.get(b"k", 29).unwrap().kind, ValueType::Deletion);
    assert_eq!(&m.get(b"k", MAX_SEQ).unwrap().value[..], b"v30");
    assert_eq!(&m.get(b"k", u64::MAX).unwrap().value[..], b"v30");
    assert_eq!(m.get(b"ka", 24), None);
    assert_eq!(m.get(b"", MAX_SEQ), None);
    assert_eq!(m.get(b"kb", MAX_SEQ), None);
    assert_eq!(m.largest_seq(), 30);
    assert_eq!(m.len(), 5);
}

#[test]
fn get_hands_out_shared_value() {
    let m = MemTable::new();
    m.add(1, ValueType::Value, b"k", &[5u8; 1000]);
    let a = m.get(b"k", 1).unwrap().value;
    let b = m.get(b"k", 1).unwrap().value;
    assert_eq!(a.as_ptr(), b.as_ptr());
}

#[test]
fn range_tombstones_are_separate() {
    let m = Arc::new(MemTable::new());
    m.add(1, ValueType::Value, b"b", b"1");
    m.add(5, ValueType::RangeDeletion, b"a", b"c");
    m.add(8, ValueType::RangeDeletion, b"b", b"d");
    m.add(3, ValueType::RangeDeletion, b"b", b"z");
    assert_eq!(m.len(), 4);
    assert_eq!(m.largest_seq(), 8);
    assert_eq!(scan(&mut m.iter()).len(), 1);
    assert_eq!(m.range_tombstones().len(), 3);
    assert_eq!(m.range_tombstones()[1].start, b"b");
    assert_eq!(m.max_covering_tombstone_seq(b"b", MAX_SEQ), 8);
    assert_eq!(m.max_covering_tombstone_seq(b"b", 7), 5);
    assert_eq!(m.max_covering_tombstone_seq(b"b", 4), 3);
    assert_eq!(m.max_covering_tombstone_seq(b"b", 2), 0);
    assert_eq!(m.max_covering_tombstone_seq(b"a", MAX_SEQ), 5);
    assert_eq!(m.max_covering_tombstone_seq(b"x", MAX_SEQ), 3);
    assert_eq!(m.max_covering_tombstone_seq(b"z", MAX_SEQ), 0);
    // A new tombstone invalidates the cached fragments.
    m.add(9, ValueType::RangeDeletion, b"y", b"zz");
    assert_eq!(m.max_covering_tombstone_seq(b"z", MAX_SEQ), 9);
}

#[test]
fn memory_usage_counts_everything() {
    let m = MemTable::new();
    let empty = m.approximate_memory_usage();
    m.add(1, ValueType::Value, b"key", b"value");
    let one = m.approximate_memory_usage();
    // Header, at least one link, key, trailer and value.
    assert!(one - empty >= 16 + 4 + 8 + 8, "{}", one - empty);
    m.add(2, ValueType::RangeDeletion, b"a", b"b");
    assert_eq!(
        m.approximate_memory_usage(),
        one + 2 + TOMBSTONE_OVERHEAD_BYTES
    );
}

#[test]
fn a_batch_is_recorded_as_its_writes_one_by_one() {
    let writes: Vec<(SeqNo, ValueType, &[u8], &[u8])> = vec![
        (10, ValueType::Value, b"m", b"1"),
        (11, ValueType::Deletion, b"b", b""),
        (12, ValueType::RangeDeletion, b"c", b"f"),
        (13, ValueType::Value, b"b", b"2"),
        (14, ValueType::Value, b"a", b"3"),
        (15, ValueType::Value, b"z", b""),
    ];
    // The same internal key twice: the later value wins, as with `add`.
    let repeated: Vec<(SeqNo, ValueType, &[u8], &[u8])> = vec![
        (20, ValueType::Value, b"k", b"old"),
        (20, ValueType::Value, b"k", b"new"),
    ];
    for group in [writes, repeated] {
        let one = Arc::new(MemTable::new());
        let all = Arc::new(MemTable::new());
        one.add(1, ValueType::Value, b"b", b"0");
        all.add(1, ValueType::Value, b"b", b"0");
        for &(seq, kind, key, value) in &group {
            one.add(seq, kind, key, value);
        }
        all.add_batch(&group);
        assert_eq!(scan(&mut all.iter()), scan(&mut one.iter()));
        assert_eq!(all.range_tombstones(), one.range_tombstones());
        assert_eq!(
            all.approximate_memory_usage(),
            one.approximate_memory_usage()
        );
        assert_eq!(
            (all.len(), all.largest_seq()),
            (one.len(), one.largest_seq())
        );
        for key in [b"a", b"b", b"k", b"m", b"z"] {
            assert_eq!(all.get(key, MAX_SEQ), one.get(key, MAX_SEQ));
        }
    }
}

/// Runs the odd parts on a second thread, started at once, and the even ones here: the
/// parts of one batch really are inserted side by side.
struct TwoThreads;

impl crate::helpers::Helpers for TwoThreads {
    fn share(&self, parts: usize, work: &(dyn Fn(usize) + Sync)) -> bool {
        std::thread::scope(|s| {
            let other = s.spawn(|| (1..parts).step_by(2).for_each(work));
            (0..parts).step_by(2).for_each(work);
            other.join().is_ok()
        })
    }
}

/// Claims every part done and runs none: a helper that lost its parts.
struct LosesParts;

impl crate::helpers::Helpers for LosesParts {
    fn share(&self, _parts: usize, _work: &(dyn Fn(usize) + Sync)) -> bool {
        false
    }
}

#[test]
fn a_large_batch_inserted_in_shared_parts_is_the_batch_inserted_whole() {
    // Over a memtable that already holds keys between the batch's, so that parts link
    // into the same stretches of the list.
    let names: Vec<Vec<u8>> = (0..3000u32)
        .map(|i| format!("key{:08}", (i * 7919) % 3000).into_bytes())
        .collect();
    let before: Vec<(SeqNo, ValueType, &[u8], &[u8])> = names
        .iter()
        .step_by(3)
        .enumerate()
        .map(|(i, k)| (i as u64 + 1, ValueType::Value, k.as_slice(), &b"old"[..]))
        .collect();
    let batch: Vec<(SeqNo, ValueType, &[u8], &[u8])> = names
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let kind = if i % 5 == 0 {
                ValueType::Deletion
            } else {
                ValueType::Value
            };
            (10_000 + i as u64, kind, k.as_slice(), k.as_slice())
        })
        .collect();
    assert!(batch.len() >= SHARED_INSERT_MIN);
    for _ in 0..4 {
        let whole = Arc::new(MemTable::with_point_index(1 << 20));
        let shared = Arc::new(MemTable::with_point_index(1 << 20));
        whole.add_batch(&before);
        shared.add_batch(&before);
        whole.add_batch(&batch);
        shared.add_batch_shared(&batch, &TwoThreads);
        assert!(!shared.insert_failed());
        assert_eq!(scan(&mut shared.iter()), scan(&mut whole.iter()));
        assert_eq!(
            (shared.len(), shared.largest_seq()),
            (whole.len(), whole.largest_seq())
        );
        for k in &names {
            assert_eq!(shared.get(k, MAX_SEQ), whole.get(k, MAX_SEQ));
        }
    }
    // Parts a helper did not insert fail the insert, as a full memtable does.
    let lost = MemTable::new();
    lost.add_batch_shared(&batch, &LosesParts);
    assert!(lost.insert_failed());
    // A batch below the threshold never asks the helpers.
    let small = MemTable::new();
    small.add_batch_shared(&batch[..SHARED_INSERT_MIN - 1], &LosesParts);
    assert!(!small.insert_failed());
    assert_eq!(small.len(), SHARED_INSERT_MIN - 1);
}

#[test]
fn concurrent_adds_then_ordered_scan() {
    const THREADS: u64 = 4;
    const PER_THREAD: u64 = 5_000;
    let m = Arc::new(MemTable::new());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let m = &m;
            s.spawn(move || {
                for i in 0..PER_THREAD {
                    let seq = t * PER_THREAD + i + 1;
                    // Keys collide across threads; sequence numbers never do.
                    let key = format!("key{:05}", (i * 7919) % 2_000);
                    m.add(seq, ValueType::Value, key.as_bytes(), &seq.to_le_bytes());
                }
            });
        }
    });
    let n = (THREADS * PER_THREAD) as usize;
    assert_eq!(m.len(), n);
    assert_eq!(m.largest_seq(), THREADS * PER_THREAD);
    let all = scan(&mut m.iter());
    assert_eq!(all.len(), n);
    for w in all.windows(2) {
        assert!(crate::key::compare(&w[0].0, &w[1].0).is_lt());
    }
    for (k, v) in &all {
        assert_eq!(v.as_slice(), parsed(k).seq.to_le_bytes());
    }
    // And backwards.
    let mut it = m.iter();
    it.seek_to_last().unwrap();
    let mut back = Vec::new();
    while it.valid() {
        back.push(it.key().to_vec());
        it.prev().unwrap();
    }
    back.reverse();
    assert!(back.iter().eq(all.iter().map(|(k, _)| k)));
}

#[test]
fn seek_for_prev_and_prev() {
    let m = Arc::new(MemTable::new());
    for (i, k) in [b"a", b"c", b"e"].iter().enumerate() {
        m.add(10 + i as u64, ValueType::Value, *k, *k);
        m.add(20 + i as u64, ValueType::Value, *k, *k);
    }
    let mut it = m.iter();
    // The last entry <= ("d", newest) is the oldest version of "c".
    it.seek_for_prev(&seek_key(b"d", MAX_SEQ)).unwrap();
    assert_eq!(it.key(), internal_key(b"c", 11, ValueType::Value));
    it.prev().unwrap();
    assert_eq!(it.key(), internal_key(b"c", 21, ValueType::Value));
    it.prev().unwrap();
    assert_eq!(it.key(), internal_key(b"a", 10, ValueType::Value));
    it.next().unwrap();
    assert_eq!(it.key(), internal_key(b"c", 21, ValueType::Value));
    // Exact match, then before the first entry.
    it.seek_for_prev(&internal_key(b"e", 22, ValueType::Value))
        .unwrap();
    assert_eq!(parsed(it.key()).seq, 22);
    // a@20 sorts before the target (a, 19): newer versions come first.
    it.seek_for_prev(&seek_key(b"a", 19)).unwrap();
    assert_eq!(parsed(it.key()).seq, 20);
    it.seek_for_prev(&seek_key(b"a", MAX_SEQ)).unwrap();
    assert!(!it.valid());
    it.seek(&seek_key(b"c", 15)).unwrap();
    assert_eq!(it.key(), internal_key(b"c", 11, ValueType::Value));
    it.seek(&seek_key(b"f", MAX_SEQ)).unwrap();
    assert!(!it.valid());
}

#[test]
fn iterator_crosses_many_windows_both_ways() {
    let m = Arc::new(MemTable::new());
    for i in 0..2_000u64 {
        m.add(i + 1, ValueType::Value, format!("{i:06}").as_bytes(), b"v");
    }
    let mut it = m.iter();
    it.seek(&seek_key(b"000500", MAX_SEQ)).unwrap();
    for i in 500..1_500u64 {
        assert_eq!(crate::key::user_key(it.key()), format!("{i:06}").as_bytes());
        it.next().unwrap();
    }
    for i in (0..1_500u64).rev() {
        it.prev().unwrap();
        assert_eq!(crate::key::user_key(it.key()), format!("{i:06}").as_bytes());
    }
    it.prev().unwrap();
    assert!(!it.valid());
}

#[derive(Debug, Clone)]
enum Op {
    First,
    Last,
    Seek(Vec<u8>, u64),
    SeekForPrev(Vec<u8>, u64),
    Next,
    Prev,
}

fn user_key_strategy() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(0u8..4, 0..4)
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => Just(Op::First),
        1 => Just(Op::Last),
        1 => (user_key_strategy(), 0u64..60).prop_map(|(k, s)| Op::Seek(k, s)),
        1 => (user_key_strategy(), 0u64..60).prop_map(|(k, s)| Op::SeekForPrev(k, s)),
        4 => Just(Op::Next),
        4 => Just(Op::Prev),
    ]
}

type Write = (Vec<u8>, u64, bool, Vec<u8>);

fn write_strategy() -> impl Strategy<Value = Write> {
    (
        user_key_strategy(),
        1u64..50,
        any::<bool>(),
        proptest::collection::vec(any::<u8>(), 0..8),
    )
}

// Case count: proptest's default, or PROPTEST_CASES from the environment.
proptest! {
    #[test]
    fn iterator_matches_btreemap(
        writes in proptest::collection::vec(write_strategy(), 0..200),
        ops in proptest::collection::vec(op_strategy(), 0..100),
        gets in proptest::collection::vec((user_key_strategy(), 0u64..60), 0..80),
        indexed in any::<bool>(),
    ) {
        // With a point index (small: it may fill, and then answers "unknown") or without.
        let m = Arc::new(if indexed { MemTable::with_point_index(96 * 64) } else { MemTable::new() });
        let mut model = BTreeMap::new();
        for (k, seq, put, v) in &writes {
            let (kind, v) = if *put { (ValueType::Value, v.clone()) } else { (ValueType::Deletion, vec![]) };
            m.add(*seq, kind, k, &v);
            model.insert(InternalKey::new(k, *seq, kind), v);
        }
        let mut want = VecIterator::new(
            model.iter().map(|(k, v)| (k.0.clone(), v.clone())).collect(),
        );
        let mut got = m.iter();
        for op in &ops {
            match op {
                Op::First => { want.seek_to_first().unwrap(); got.seek_to_first().unwrap(); }
                Op::Last => { want.seek_to_last().unwrap(); got.seek_to_last().unwrap(); }
                Op::Seek(k, s) => {
                    let t = seek_key(k, *s);
                    want.seek(&t).unwrap();
                    got.seek(&t).unwrap();
                }
                Op::SeekForPrev(k, s) => {
                    let t = seek_key(k, *s);
                    want.seek_for_prev(&t).unwrap();
                    got.seek_for_prev(&t).unwrap();
                }
                Op::Next if want.valid() => { want.next().unwrap(); got.next().unwrap(); }
                Op::Prev if want.valid() => { want.prev().unwrap(); got.prev().unwrap(); }
                Op::Next | Op::Prev => {}
            }
            prop_assert_eq!(got.valid(), want.valid());
            prop_assert_eq!(got.key(), want.key());
            prop_assert_eq!(got.value(), want.value());
        }
        for (k, snap) in &gets {
            let expected = model
                .iter()
                .find(|(ik, _)| ik.user_key() == k.as_slice() && ik.seq() <= *snap)
                .map(|(ik, v)| (ik.seq(), parsed(ik.encoded()).kind, v.clone()));
            let actual = m.get(k, *snap).map(|e| (e.seq, e.kind, e.value.to_vec()));
            prop_assert_eq!(actual, expected);
        }
        // All the keys at once, at the first read's snapshot, as one by one (more keys
        // than a window of index prefetches).
        let snap = gets.first().map_or(0, |g| g.1);
        let keys: Vec<&[u8]> = gets.iter().map(|(k, _)| k.as_slice()).collect();
        let mut many = vec![None; keys.len()];
        m.get_many(&keys, snap, &mut many);
        for (k, got) in keys.iter().zip(many) {
            let one = m.get(k, snap).map(|e| (e.seq, e.kind, e.value.to_vec()));
            prop_assert_eq!(got.map(|e| (e.seq, e.kind, e.value.to_vec())), one);
        }
    }
}

#[test]
fn memory_charge_covers_the_arena_it_uses() {
    let m = MemTable::new();
    for i in 0..10_000u64 {
        m.add(i + 1, ValueType::Value, &i.to_be_bytes(), &[1u8; 20]);
    }
    let charged = m.approximate_memory_usage();
    let allocated = m.list.allocated_bytes();
    // The blocks hold the nodes; what they hold beyond them is the unfilled end of the
    // last block (which doubles up to 1 MiB) and the ends left when a node did not fit.
    assert!(
        charged <= allocated + m.list.index_bytes(),
        "{charged} {allocated}"
    );
    assert!(allocated <= 2 * charged, "{charged} {allocated}");
}

/// Readers run against one writer: a get finds every key whose `add` returned before the
/// get began, with its value; a scan is strictly ordered, holds at least those entries,
/// and never shows an entry whose value does not match its key.
#[test]
fn readers_see_whole_entries_while_one_writer_adds() {
    const N: u64 = 20_000;
    const READERS: usize = 3;
    let m = Arc::new(MemTable::new());
    let added = std::sync::atomic::AtomicU64::new(0);
    // A fixed permutation of 0..N, so that inserts land all over the list.
    let key_of = |i: u64| format!("key{:08}", (i * 7_919) % N).into_bytes();
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..N {
                m.add(i + 1, ValueType::Value, &key_of(i), &(i + 1).to_le_bytes());
                added.store(i + 1, std::sync::atomic::Ordering::Release);
            }
        });
        for r in 0..READERS {
            let (m, added) = (&m, &added);
            s.spawn(move || {
                let mut rounds = 0u64;
                loop {
                    let done = added.load(std::sync::atomic::Ordering::Acquire);
                    if done > 0 {
                        let i = (rounds * 104_729 + r as u64) % done;
                        let e = m.get(&key_of(i), MAX_SEQ).unwrap();
                        assert_eq!((e.seq, &e.value[..]), (i + 1, &(i + 1).to_le_bytes()[..]));
                    }
                    if rounds.is_multiple_of(64) {
                        let all = scan(&mut m.iter());
                        assert!(all.len() as u64 >= done);
                        for w in all.windows(2) {
                            assert!(crate::key::compare(&w[0].0, &w[1].0).is_lt());
                        }
                        for (k, v) in &all {
                            assert_eq!(v.as_slice(), parsed(k).seq.to_le_bytes());
                        }
                    }
                    rounds += 1;
                    if done == N {
                        break;
                    }
                }
            });
        }
    });
    assert_eq!(scan(&mut m.iter()).len() as u64, N);
}

#[test]
fn an_entry_the_arena_refuses_is_reported_not_dropped_silently() {
    let m = MemTable::new();
    m.add(1, ValueType::Value, b"a", b"1");
    assert!(!m.insert_failed());
    assert!(!m.is_nearly_full());
    m.list
        .refuse
        .store(true, std::sync::atomic::Ordering::Relaxed);
    m.add(2, ValueType::Value, b"b", b"2");
    assert!(m.insert_failed());
    assert_eq!(m.get(b"b", MAX_SEQ), None);
    let writes: Vec<(SeqNo, ValueType, &[u8], &[u8])> = vec![
        (3, ValueType::Value, b"c", b"3"),
        (4, ValueType::Value, b"d", b"4"),
    ];
    let m2 = MemTable::new();
    m2.list
        .refuse
        .store(true, std::sync::atomic::Ordering::Relaxed);
    m2.add_batch(&writes);
    assert!(m2.insert_failed());
    // The write path turns it into an error.
    let mut batch = crate::batch::WriteBatch::new();
    batch.put(b"e", b"5");
    let r = crate::db::write::insert_into_memtable(&m2, &batch, 5);
    assert!(matches!(r, Err(crate::Error::Internal(_))), "{r:?}");
}

/// Adds entries shaped like one collection's members (a shared 18-byte prefix, a
/// distinct 16-digit suffix, an 8-byte value) from `first` on until the memtable holds
/// `buffer` bytes; returns how many.
fn fill_with_members(m: &MemTable, buffer: usize, first: u64) -> u64 {
    let mut n = 0;
    while m.approximate_memory_usage() < buffer {
        let key = format!(
            "\x00\x00\x00\x06mycoll\x00\x00\x01\x02\x03\x04\x05\x06{:016}",
            first + n
        );
        m.add(
            first + n + 1,
            ValueType::Value,
            key.as_bytes(),
            &n.to_le_bytes(),
        );
        n += 1;
    }
    n
}

/// A memtable of small entries outruns a point index sized by the default (its last new
/// keys go unindexed, and a read of a key it lacks must search the list); the successor
/// it sizes indexes every key of as many such entries, so that read is answered by the
/// index. Large entries get a smaller index than the default.
#[test]
fn successor_sizes_its_point_index_by_the_entries_before() {
    let buffer = 4 << 20;
    let absent = b"\x00\x00\x00\x06mycoll\x00absent";
    let first = MemTable::with_point_index(buffer);
    let held = fill_with_members(&first, buffer, 0);
    assert_eq!(first.list.find_indexed(absent, u64::MAX), None);

    let next = first.successor(buffer);
    let held_next = fill_with_members(&next, buffer, 1 << 40);
    assert!(
        held_next * 10 >= held * 9,
        "{held_next} entries after {held}"
    );
    assert_eq!(
        next.list.find_indexed(absent, u64::MAX),
        Some(skiplist::NIL)
    );
    let index_bytes = next.list.index_bytes();
    assert!(index_bytes > first.list.index_bytes());

    let large = MemTable::with_point_index(buffer);
    for i in 0..2000u32 {
        large.add(
            u64::from(i) + 1,
            ValueType::Value,
            &i.to_be_bytes(),
            &[7u8; 1000],
        );
    }
    let after_large = large.successor(buffer);
    after_large.add(1, ValueType::Value, b"k", b"v");
    assert!(after_large.list.index_bytes() < large.list.index_bytes());
}
