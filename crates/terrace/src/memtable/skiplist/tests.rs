use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::key::{compare, internal_key, ValueType};
use crate::memtable::arena::{Arena, Cursor};

/// The internal key of the node at `i`.
fn key_at(l: &SkipList, i: u32) -> Option<Vec<u8>> {
    l.node(i).map(|n| n.key().to_vec())
}

fn forward(l: &SkipList) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut i = l.first();
    while let Some(k) = key_at(l, i) {
        out.push(k);
        i = l.next_of(i);
    }
    out
}

#[test]
fn point_index_finds_newest_entries_and_stops_proving_absence_when_full() {
    let l = SkipList::with_index(8);
    assert_eq!(l.find_indexed(b"a", u64::MAX), Some(NIL));
    assert!(l.insert(b"a", crate::key::pack_trailer(5, 1), b"5"));
    assert!(l.insert(b"a", crate::key::pack_trailer(9, 1), b"9"));
    assert!(l.insert(b"a", crate::key::pack_trailer(7, 1), b"7"));
    let value = |n: u32| l.node(n).map(|n| n.value().to_vec());
    let at = |seq: u64| l.find_indexed(b"a", crate::key::pack_trailer(seq, 1));
    assert_eq!(at(100).map(value), Some(Some(b"9".to_vec())));
    assert_eq!(at(8).map(value), Some(Some(b"7".to_vec())));
    assert_eq!(at(5).map(value), Some(Some(b"5".to_vec())));
    assert_eq!(at(4), Some(NIL));
    assert_eq!(l.find_indexed(b"b", u64::MAX), Some(NIL));
    // Eight slots take six keys; the others go unindexed.
    for k in 0..10u8 {
        assert!(l.insert(&[b'k', k], 1 << 8, b""));
    }
    // Keys in the table still answer, and follow their newer entries.
    assert!(l.insert(b"a", crate::key::pack_trailer(11, 1), b"11"));
    assert_eq!(at(100).map(value), Some(Some(b"11".to_vec())));
    // A key not in the table is no longer proved absent: search the list.
    let unindexed = (0..10u8)
        .filter(|k| l.find_indexed(&[b'k', *k], u64::MAX).is_none())
        .count();
    assert!(unindexed >= 5, "{unindexed}");
    for k in 0..10u8 {
        if let Some(n) = l.find_indexed(&[b'k', k], u64::MAX) {
            assert_eq!(
                l.node(n).map(|n| n.user_key().to_vec()),
                Some(vec![b'k', k])
            );
        }
    }
    assert_eq!(l.find_indexed(b"b", u64::MAX), None);
    assert!(l.index_bytes() > 0);
}

#[test]
fn empty_list() {
    let l = SkipList::new();
    assert_eq!(l.first(), NIL);
    assert_eq!(l.find_last(), NIL);
    assert_eq!(l.find_ge(b"a", 0), NIL);
    assert_eq!(l.find_lt(b"a", 0, true), NIL);
    assert!(l.node(HEAD).is_none());
}

#[test]
fn arena_reservations_are_disjoint_aligned_and_stay_put() {
    let a = Arena::new();
    let mut c = Cursor::new(&a);
    assert!(
        a.alloc(&mut Cursor::new(&Arena::new()), 8).is_none(),
        "another arena's"
    );
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    // Small ones fill growing blocks; large ones get blocks of their own.
    for size in [8usize, 13, 4_000, 600, 200_000, 9, 3 << 20, 64, 1 << 20]
        .into_iter()
        .cycle()
        .take(60)
    {
        let (h, bytes) = a.alloc(&mut c, size).unwrap();
        assert_eq!(bytes.len(), size.next_multiple_of(8));
        assert!(bytes.iter().all(|b| *b == 0), "zeroed");
        assert_eq!(bytes.as_ptr() as usize % 8, 0, "aligned");
        bytes.fill(1);
        let start = bytes.as_ptr() as usize;
        let (ptr, room) = a.at(h).unwrap();
        assert_eq!(ptr.as_ptr() as usize, start, "the handle finds the bytes");
        assert!(room >= bytes.len());
        ranges.push((start, start + bytes.len()));
    }
    ranges.sort_unstable();
    assert!(
        ranges.windows(2).all(|w| w[0].1 <= w[1].0),
        "no two overlap"
    );
    assert!(a.allocated_bytes() >= 60 / 9 * (3 << 20));
    // Every block took one slot, large entries' own blocks included.
    assert_eq!(a.slots_left(), 4096 - a.blocks());
    assert!(a.alloc(&mut c, 0).is_none());
}

#[test]
fn cursors_of_one_arena_on_many_threads_never_overlap() {
    let a = Arena::new();
    let ranges: Vec<(usize, usize)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|t| {
                let a = &a;
                s.spawn(move || {
                    let mut c = Cursor::new(a);
                    let mut mine = Vec::new();
                    for i in 0..3_000usize {
                        let size = 8 + (i * 37 + t * 11) % 900;
                        let (h, bytes) = a.alloc(&mut c, size).unwrap();
                        assert!(bytes.iter().all(|b| *b == 0), "zeroed");
                        bytes.fill(t as u8 + 1);
                        let start = bytes.as_ptr() as usize;
                        assert_eq!(a.at(h).unwrap().0.as_ptr() as usize, start);
                        mine.push((start, start + bytes.len()));
                    }
                    mine
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let mut sorted = ranges;
    sorted.sort_unstable();
    assert!(
        sorted.windows(2).all(|w| w[0].1 <= w[1].0),
        "no two reservations overlap"
    );
    assert_eq!(
        a.slots_left(),
        4096 - a.blocks(),
        "each block claimed one slot"
    );
}

#[test]
fn shared_values_outlive_the_list() {
    let l = SkipList::new();
    let big = vec![7u8; 300_000];
    assert!(l.insert(b"a", 1 << 8, b"small value"));
    assert!(l.insert(b"b", 1 << 8, &big));
    let a = l.find_ge(b"a", u64::MAX);
    let b = l.find_ge(b"b", u64::MAX);
    let va = l.value_bytes(a);
    let vb = l.value_bytes(b);
    drop(l);
    assert_eq!(&va[..], b"small value");
    assert_eq!(&vb[..], &big[..]);
}

#[test]
fn memory_counts_each_nodes_links_key_and_value() {
    let l = SkipList::new();
    let empty = l.node_bytes();
    assert_eq!(empty, node::size(MAX_HEIGHT, 0, 0).unwrap());
    for i in 0..1_000u32 {
        assert!(l.insert(&i.to_be_bytes(), 1 << 8, &[1u8; 20]));
    }
    let per_entry = (l.node_bytes() - empty) / 1_000;
    // 16 header + 4 bytes per link + 4 key + 8 trailer + 20 value, rounded to 8: 56 at
    // height 1, 8 more for every two extra levels (average height 4/3).
    assert!((56..=64).contains(&per_entry), "{per_entry}");
}

#[test]
fn replacing_a_value_keeps_one_entry() {
    let l = SkipList::new();
    assert!(l.insert(b"k", 5, b"old"));
    assert!(l.insert(b"k", 5, b"new"));
    assert!(l.insert(b"k", 5, b"newest"));
    assert!(l.insert(b"j", 5, b"j"));
    assert_eq!(forward(&l).len(), 2);
    let n = l.latest(l.find_ge(b"k", 5)).map(|n| n.value().to_vec());
    assert_eq!(n.as_deref(), Some(&b"newest"[..]));
}

#[test]
fn long_keys_and_prefixes_order_bytewise() {
    let l = SkipList::new();
    let keys: [&[u8]; 9] = [
        b"",
        b"\x00",
        b"abcdefg",
        b"abcdefgh",
        b"abcdefgh\x00",
        b"abcdefghabcdefgh",
        b"abcdefghabcdefgz",
        b"abcdefghi",
        b"\xff\xff\xff\xff\xff\xff\xff\xff\xff",
    ];
    for k in keys.iter().rev() {
        assert!(l.insert(k, 1 << 8, b""));
    }
    let got: Vec<_> = forward(&l)
        .iter()
        .map(|k| crate::key::user_key(k).to_vec())
        .collect();
    let want: Vec<_> = keys.iter().map(|k| k.to_vec()).collect();
    assert!(want.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(got, want);
}

#[test]
fn keys_around_the_inline_prefix_order_bytewise() {
    let l = SkipList::new();
    let keys: [&[u8]; 12] = [
        b"key:00000",
        b"key:00000\x00",
        b"key:000000000000",
        b"key:000000000000\x00",
        b"key:0000000000000",
        b"key:000000000001",
        b"key:000000000001\x00\x00",
        b"key:000000000001\x00\x01",
        b"key:000000000001a",
        b"key:000000000002",
        b"key:00000000000\xff",
        b"key:0000000000\xff",
    ];
    for k in keys.iter().rev() {
        assert!(l.insert(k, 1 << 8, b""));
    }
    let got: Vec<_> = forward(&l)
        .iter()
        .map(|k| crate::key::user_key(k).to_vec())
        .collect();
    let want: Vec<_> = keys.iter().map(|k| k.to_vec()).collect();
    assert!(want.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(got, want);
    for k in keys {
        let found = l.find_ge(k, 1 << 8);
        assert_eq!(
            l.node(found).map(|n| n.user_key().to_vec()),
            Some(k.to_vec())
        );
    }
}

proptest! {

    // Inserts interleaved with cursor moves: a cursor left on a node stays valid while
    // the list grows, and every search agrees with a sorted map at every step.
    #[test]
    fn searches_match_btreemap_while_growing(
        steps in proptest::collection::vec(
            // Up to 24 bytes: keys shorter than, as long as and longer than the inline
            // prefix, mostly zeros so that padded prefixes tie.
            (proptest::collection::vec(0u8..3, 0..24), 0u64..8, any::<bool>(), 0u8..4),
            0..200,
        ),
        // No point index, one that gives up after a few keys, one that holds them all.
        index_slots in prop_oneof![Just(0usize), Just(8), Just(4096)],
    ) {
        let l = if index_slots == 0 { SkipList::new() } else { SkipList::with_index(index_slots) };
        let mut model: BTreeMap<crate::key::InternalKey, Vec<u8>> = BTreeMap::new();
        let mut cursor = NIL;
        for (i, (user, seq, insert, op)) in steps.iter().enumerate() {
            let kind = if seq.is_multiple_of(2) { ValueType::Value } else { ValueType::Deletion };
            let t = crate::key::pack_trailer(*seq, kind as u8);
            let ikey = internal_key(user, *seq, kind);
            if *insert {
                let v = i.to_le_bytes();
                prop_assert!(l.insert(user, t, &v));
                model.insert(crate::key::InternalKey(ikey.clone()), v.to_vec());
            }
            let keys: Vec<&Vec<u8>> = model.keys().map(|k| &k.0).collect();
            let ge = keys.iter().find(|k| compare(k, &ikey).is_ge());
            let lt = keys.iter().rev().find(|k| compare(k, &ikey).is_lt());
            let le = keys.iter().rev().find(|k| compare(k, &ikey).is_le());
            prop_assert_eq!(key_at(&l, l.find_ge(user, t)), ge.map(|k| k.to_vec()));
            // Through the point index: the same node when it holds `user`, else NIL.
            if let Some(n) = l.find_indexed(user, t) {
                let want = ge.filter(|k| crate::key::user_key(k) == user.as_slice());
                prop_assert_eq!(key_at(&l, n), want.map(|k| k.to_vec()));
            }
            prop_assert_eq!(key_at(&l, l.find_lt(user, t, false)), lt.map(|k| k.to_vec()));
            prop_assert_eq!(key_at(&l, l.find_lt(user, t, true)), le.map(|k| k.to_vec()));
            prop_assert_eq!(key_at(&l, l.find_last()), keys.last().map(|k| k.to_vec()));
            // Move the standing cursor, then check it is where the map says.
            match op {
                0 => cursor = l.find_ge(user, t),
                1 => cursor = l.next_of(cursor),
                2 => cursor = match key_at(&l, cursor) {
                    Some(k) => l.find_lt(crate::key::user_key(&k), crate::key::trailer(&k), false),
                    None => NIL,
                },
                _ => {}
            }
            if let Some(k) = key_at(&l, cursor) {
                prop_assert!(model.contains_key(&crate::key::InternalKey(k.clone())));
                let after = keys.iter().find(|m| compare(m, &k).is_gt());
                prop_assert_eq!(key_at(&l, l.next_of(cursor)), after.map(|k| k.to_vec()));
                let value = l.latest(cursor).map(|n| n.value().to_vec());
                prop_assert_eq!(value.as_ref(), model.get(&crate::key::InternalKey(k)));
            }
            prop_assert_eq!(forward(&l), keys.into_iter().cloned().collect::<Vec<_>>());
        }
    }

    // A sorted batch inserted at once leaves the list as inserting its entries one by
    // one would: same order, every search agreeing with a sorted map.
    #[test]
    fn sorted_batch_matches_one_by_one(
        before in proptest::collection::vec((proptest::collection::vec(0u8..3, 0..20), 0u64..6), 0..150),
        batch in proptest::collection::vec((proptest::collection::vec(0u8..3, 0..20), 3u64..8), 0..150),
        index_slots in prop_oneof![Just(0usize), Just(8), Just(4096)],
        shared in prop_oneof![Just(0usize), Just(26)],
    ) {
        // With a shared start of 26 bytes every key is long enough for the searches to
        // compare from the bytes already shared (`Target::long`, as a collection's
        // members are); without, they compare by the prefix words.
        let lengthen = |keys: Vec<(Vec<u8>, u64)>| -> Vec<(Vec<u8>, u64)> {
            keys.into_iter().map(|(u, s)| ([vec![7u8; shared], u].concat(), s)).collect()
        };
        let (before, batch) = (lengthen(before), lengthen(batch));
        let l = if index_slots == 0 { SkipList::new() } else { SkipList::with_index(index_slots) };
        let mut model: BTreeMap<crate::key::InternalKey, Vec<u8>> = BTreeMap::new();
        for (i, (user, seq)) in before.iter().enumerate() {
            let v = i.to_le_bytes();
            prop_assert!(l.insert(user, crate::key::pack_trailer(*seq, 1), &v));
            model.insert(crate::key::InternalKey(internal_key(user, *seq, ValueType::Value)), v.to_vec());
        }
        // The batch's last value of each internal key, in internal-key order.
        let mut latest: BTreeMap<crate::key::InternalKey, Vec<u8>> = BTreeMap::new();
        for (i, (user, seq)) in batch.iter().enumerate() {
            let key = crate::key::InternalKey(internal_key(user, *seq, ValueType::Value));
            latest.insert(key, (1000 + i).to_le_bytes().to_vec());
        }
        let entries: Vec<(Vec<u8>, u64, Vec<u8>)> = latest
            .iter()
            .map(|(k, v)| (crate::key::user_key(&k.0).to_vec(), crate::key::trailer(&k.0), v.clone()))
            .collect();
        model.extend(latest);
        let sorted: Vec<SortedEntry<'_>> = entries.iter().map(|(u, t, v)| (u.as_slice(), *t, v.as_slice())).collect();
        prop_assert!(l.insert_sorted(&sorted));
        let keys: Vec<Vec<u8>> = model.keys().map(|k| k.0.clone()).collect();
        prop_assert_eq!(forward(&l), keys.clone());
        // Every level in order: the splices of the batch's searches (each lane's after
        // its first started from the splice before) were right at every level.
        prop_assert_eq!(check_levels(&l), Ok(()));
        // Interleaved searches find what one search at a time finds.
        let targets: Vec<(&[u8], u64)> = batch
            .iter()
            .map(|(u, s)| (u.as_slice(), crate::key::pack_trailer(*s, 1)))
            .chain(keys.iter().map(|k| (crate::key::user_key(k), crate::key::trailer(k))))
            .collect();
        let mut many = vec![NIL; targets.len()];
        l.find_ge_many(&targets, &mut many);
        let one: Vec<u32> = targets.iter().map(|(u, t)| l.find_ge(u, *t)).collect();
        prop_assert_eq!(many, one);
        for k in &keys {
            let (user, t) = (crate::key::user_key(k), crate::key::trailer(k));
            let found = l.find_ge(user, t);
            let n = l.node(found);
            prop_assert_eq!(n.map(|n| n.key().to_vec()), Some(k.clone()));
            let value = l.latest(found).map(|n| n.value().to_vec());
            prop_assert_eq!(value.as_ref(), model.get(&crate::key::InternalKey(k.clone())));
            let lt = keys.iter().rev().find(|m| compare(m, k).is_lt());
            prop_assert_eq!(key_at(&l, l.find_lt(user, t, false)), lt.cloned());
            if let Some(n) = l.find_indexed(user, t) {
                prop_assert_eq!(key_at(&l, n), Some(k.clone()));
            }
        }
    }
}

/// Checks every level of `l`: internal keys strictly ascending, and each node linked at
/// a level also linked at the level below.
fn check_levels(l: &SkipList) -> Result<(), String> {
    let mut below: Option<std::collections::HashSet<u32>> = None;
    for level in 0..MAX_HEIGHT {
        let mut seen = std::collections::HashSet::new();
        let mut last: Option<Vec<u8>> = None;
        let mut i = l.node_at(HEAD).map_or(NIL, |h| h.link(level));
        while let Some(n) = l.node(i) {
            let k = n.key().to_vec();
            if last.as_ref().is_some_and(|p| compare(p, &k).is_ge()) {
                return Err(format!("level {level} out of order at node {i}"));
            }
            if below.as_ref().is_some_and(|b| !b.contains(&i)) {
                return Err(format!("node {i} linked at level {level} but not below"));
            }
            seen.insert(i);
            last = Some(k);
            i = n.link(level);
        }
        below = Some(seen);
    }
    Ok(())
}

proptest! {
    // Runs of keys, ascending or descending, with gaps and over keys already present
    // (other sequence numbers), some as sorted batches: each insert starts from the
    // writer's last path when it can, and the list matches a sorted map at every level.
    #[test]
    fn runs_of_keys_keep_every_level_ordered(
        runs in proptest::collection::vec(
            (0u32..500, 1u32..4, 1u32..200, any::<bool>(), 0u64..5, any::<bool>()),
            1..8,
        ),
        index_slots in prop_oneof![Just(0usize), Just(4096)],
    ) {
        let l = if index_slots == 0 { SkipList::new() } else { SkipList::with_index(index_slots) };
        let mut model: BTreeMap<crate::key::InternalKey, Vec<u8>> = BTreeMap::new();
        for (r, (start, stride, count, ascending, seq, batch)) in runs.iter().enumerate() {
            let mut keys: Vec<Vec<u8>> = (0..*count)
                .map(|i| format!("{:016}", start + i * stride).into_bytes())
                .collect();
            if !ascending {
                keys.reverse();
            }
            let value = r.to_le_bytes();
            let t = crate::key::pack_trailer(*seq, 1);
            for k in &keys {
                model.insert(crate::key::InternalKey(internal_key(k, *seq, ValueType::Value)), value.to_vec());
            }
            if *batch {
                keys.sort();
                let sorted: Vec<SortedEntry<'_>> = keys.iter().map(|k| (k.as_slice(), t, &value[..])).collect();
                prop_assert!(l.insert_sorted(&sorted));
            } else {
                for k in &keys {
                    prop_assert!(l.insert(k, t, &value));
                }
            }
            prop_assert_eq!(check_levels(&l), Ok(()));
            let want: Vec<Vec<u8>> = model.keys().map(|k| k.0.clone()).collect();
            prop_assert_eq!(forward(&l), want);
            for (k, v) in &model {
                let found = l.find_ge(crate::key::user_key(&k.0), crate::key::trailer(&k.0));
                let got = l.latest(found).map(|n| n.value().to_vec());
                prop_assert_eq!(got.as_ref(), Some(v));
            }
        }
    }
}

/// Four writers insert at once, singly and in sorted batches, into one list (with a point
/// index), over few keys so that their nodes land in each other's splices, while a reader
/// walks the list. Every entry is found, in order, and the index names each key's newest.
#[test]
fn concurrent_writers_lose_nothing_and_keep_order() {
    const WRITERS: u64 = 4;
    const PER_WRITER: u64 = 3_000;
    let l = SkipList::with_index(1 << 12);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let l = &l;
        let done = &done;
        s.spawn(move || {
            // The list is sorted whenever a reader looks.
            while !done.load(AtomicOrdering::Acquire) {
                let keys = forward(l);
                assert!(keys.windows(2).all(|w| compare(&w[0], &w[1]).is_lt()));
            }
        });
        let writers: Vec<_> = (0..WRITERS)
            .map(|t| {
                s.spawn(move || {
                    let mut pending: Vec<(Vec<u8>, u64, Vec<u8>)> = Vec::new();
                    for i in 0..PER_WRITER {
                        // Sequence numbers are unique across writers, as the engine's are.
                        let seq = i * WRITERS + t + 1;
                        let user = format!("key{:03}", (i * 7 + t * 13) % 500).into_bytes();
                        let trailer = crate::key::pack_trailer(seq, 1);
                        let value = seq.to_le_bytes().to_vec();
                        if i % 3 == 0 {
                            assert!(l.insert(&user, trailer, &value));
                        } else {
                            pending.push((user, trailer, value));
                            if pending.len() == 8 {
                                pending.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
                                let batch: Vec<SortedEntry<'_>> = pending
                                    .iter()
                                    .map(|(u, t, v)| (u.as_slice(), *t, v.as_slice()))
                                    .collect();
                                assert!(l.insert_sorted(&batch));
                                pending.clear();
                            }
                        }
                    }
                    for (u, t, v) in &pending {
                        assert!(l.insert(u, *t, v));
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, AtomicOrdering::Release);
    });
    let keys = forward(&l);
    assert_eq!(keys.len() as u64, WRITERS * PER_WRITER, "every entry, once");
    assert!(keys.windows(2).all(|w| compare(&w[0], &w[1]).is_lt()));
    let mut newest: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    for k in &keys {
        let (user, seq) = (crate::key::user_key(k), crate::key::trailer(k) >> 8);
        let n = newest.entry(user.to_vec()).or_insert(seq);
        *n = (*n).max(seq);
        // The node holds its own value: no write landed in another's node.
        let found = l.find_ge(user, crate::key::trailer(k));
        let value = l.latest(found).map(|n| n.value().to_vec());
        assert_eq!(value, Some(seq.to_le_bytes().to_vec()));
    }
    for (user, seq) in newest {
        let n = l.find_indexed(&user, u64::MAX).unwrap();
        assert_eq!(
            l.node(n).map(|n| n.trailer() >> 8),
            Some(seq),
            "index names the newest"
        );
    }
}

/// Writers that race to add the same internal key leave one entry holding one of their
/// values, never two entries.
#[test]
fn concurrent_writes_of_one_internal_key_keep_one_entry() {
    let l = SkipList::with_index(64);
    std::thread::scope(|s| {
        for t in 0..4u8 {
            let l = &l;
            s.spawn(move || {
                for i in 0..200u32 {
                    let user = format!("k{}", i % 20).into_bytes();
                    assert!(l.insert(&user, crate::key::pack_trailer(u64::from(i % 20), 1), &[t]));
                }
            });
        }
    });
    assert_eq!(forward(&l).len(), 20);
}

#[test]
fn prefetch_of_any_handle_leaves_the_bytes_and_the_list_as_they_were() {
    let a = Arena::new();
    let mut c = Cursor::new(&a);
    let (h, bytes) = a.alloc(&mut c, 64).unwrap();
    bytes.fill(7);
    // A handle in a block, one past the block's bytes, one in a slot never allocated,
    // and the largest handle: a prefetch is only a hint, whatever it names.
    // It reports where the bytes are exactly as `at` does.
    for handle in [h, h + 1_000_000, 5 << 20, u32::MAX] {
        assert_eq!(a.prefetch(handle), a.at(handle));
    }
    let (ptr, room) = a.at(h).unwrap();
    assert!(room >= 64);
    assert_eq!(a.at(h).unwrap().0, ptr);
    let l = SkipList::with_index(1024);
    for i in 0..500u32 {
        let _ = l.prefetch_located(i);
        assert!(l.insert(&i.to_be_bytes(), 1, b"v"));
    }
    assert_eq!(forward(&l).len(), 500);
    // A node read through its prefetched location is the node itself.
    let mut i = l.first();
    while i != NIL {
        let (Some(direct), Some(located)) = (l.node(i), l.node_located(l.prefetch_located(i)))
        else {
            panic!("node {i} unreadable");
        };
        assert_eq!(direct.key(), located.key());
        assert_eq!(direct.link(0), located.link(0));
        i = l.next_of(i);
    }
}
