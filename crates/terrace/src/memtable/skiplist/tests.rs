use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::key::{compare, internal_key, ValueType};
use crate::memtable::arena::Arena;

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
fn empty_list() {
    let l = SkipList::new();
    assert_eq!(l.first(), NIL);
    assert_eq!(l.find_last(), NIL);
    assert_eq!(l.find_ge(b"a", 0, None), NIL);
    assert_eq!(l.find_lt(b"a", 0, true), NIL);
    assert!(l.node(HEAD).is_none());
}

#[test]
fn arena_slots_are_write_once_across_chunks() {
    let a: Arena<u32> = Arena::new();
    for i in [0, 1, 4_095, 4_096, (1 << 22) - 1, 1 << 22, u32::MAX] {
        assert_eq!(a.get(i), None);
        assert_eq!(a.set(i, i), Ok(()));
        assert_eq!(a.set(i, 7), Err(7));
        assert_eq!(a.get(i), Some(&i));
    }
    assert_eq!(a.get(2), None);
}

#[test]
fn replacing_a_value_keeps_one_entry() {
    let l = SkipList::new();
    assert!(l.insert(b"k", 5, b"old"));
    assert!(l.insert(b"k", 5, b"new"));
    assert!(l.insert(b"k", 5, b"newest"));
    assert!(l.insert(b"j", 5, b"j"));
    assert_eq!(forward(&l).len(), 2);
    let n = l
        .node(l.find_ge(b"k", 5, None))
        .map(|n| l.latest(n).value().to_vec());
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

proptest! {
    #[test]
    fn compare_bytes_is_slice_order(
        a in proptest::collection::vec(0u8..3, 0..20),
        b in proptest::collection::vec(0u8..3, 0..20),
    ) {
        prop_assert_eq!(compare_bytes(&a, &b), a.cmp(&b));
        prop_assert_eq!(compare_bytes(&a, &a), Ordering::Equal);
    }

    // Inserts interleaved with cursor moves: a cursor left on a node stays valid while
    // the list grows, and every search agrees with a sorted map at every step.
    #[test]
    fn searches_match_btreemap_while_growing(
        steps in proptest::collection::vec(
            (proptest::collection::vec(0u8..3, 0..12), 0u64..8, any::<bool>(), 0u8..4),
            0..200,
        ),
    ) {
        let l = SkipList::new();
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
            prop_assert_eq!(key_at(&l, l.find_ge(user, t, None)), ge.map(|k| k.to_vec()));
            prop_assert_eq!(key_at(&l, l.find_lt(user, t, false)), lt.map(|k| k.to_vec()));
            prop_assert_eq!(key_at(&l, l.find_lt(user, t, true)), le.map(|k| k.to_vec()));
            prop_assert_eq!(key_at(&l, l.find_last()), keys.last().map(|k| k.to_vec()));
            // Move the standing cursor, then check it is where the map says.
            match op {
                0 => cursor = l.find_ge(user, t, None),
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
                let value = l.node(cursor).map(|n| l.latest(n).value().to_vec());
                prop_assert_eq!(value.as_ref(), model.get(&crate::key::InternalKey(k)));
            }
            prop_assert_eq!(forward(&l), keys.into_iter().cloned().collect::<Vec<_>>());
        }
    }
}
