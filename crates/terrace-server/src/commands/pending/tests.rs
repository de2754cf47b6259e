//! The overlay merge against a plain model: a sorted map of the engine's records with
//! the group's writes applied.

use std::collections::BTreeMap;

use bytes::Bytes;
use proptest::prelude::*;

use super::merge_walk;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// What `merge_walk` visits, forwards or backwards, stopping after `limit` members.
fn merged(
    engine: &Model,
    writes: &BTreeMap<Vec<u8>, Option<Bytes>>,
    rev: bool,
    limit: usize,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut seen = Vec::new();
    let overlay = writes.iter().map(|(k, v)| (k.as_slice(), v.as_ref()));
    let walk = |f: &mut dyn FnMut(&[u8], &[u8]) -> bool| {
        let rows: Vec<_> = if rev {
            engine.iter().rev().collect()
        } else {
            engine.iter().collect()
        };
        for (k, v) in rows {
            if !f(k, v) {
                break;
            }
        }
        Ok(())
    };
    let mut visit = |m: &[u8], v: &[u8]| {
        seen.push((m.to_vec(), v.to_vec()));
        seen.len() < limit
    };
    let result = if rev {
        merge_walk(0, overlay.rev(), |a, b| a > b, walk, &mut visit)
    } else {
        merge_walk(0, overlay, |a, b| a < b, walk, &mut visit)
    };
    assert!(result.is_ok());
    seen
}

/// The model: the engine's records with the writes applied, in walk order.
fn expected(
    engine: &Model,
    writes: &BTreeMap<Vec<u8>, Option<Bytes>>,
    rev: bool,
    limit: usize,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut all = engine.clone();
    for (k, v) in writes {
        match v {
            Some(v) => all.insert(k.clone(), v.to_vec()),
            None => all.remove(k),
        };
    }
    let rows: Vec<_> = all.into_iter().collect();
    let rows: Vec<_> = if rev {
        rows.into_iter().rev().collect()
    } else {
        rows
    };
    rows.into_iter().take(limit).collect()
}

// Case count: proptest's default, or PROPTEST_CASES from the environment.
proptest! {
    #[test]
    fn merge_walk_sees_the_records_with_the_groups_writes_applied(
        engine in prop::collection::btree_map(prop::collection::vec(0u8..4, 0..3), prop::collection::vec(any::<u8>(), 0..2), 0..12),
        writes in prop::collection::btree_map(
            prop::collection::vec(0u8..4, 0..3),
            prop::option::of(prop::collection::vec(any::<u8>(), 0..2).prop_map(Bytes::from)),
            0..12,
        ),
        rev in any::<bool>(),
        limit in 1usize..20,
    ) {
        prop_assert_eq!(
            merged(&engine, &writes, rev, limit),
            expected(&engine, &writes, rev, limit)
        );
    }
}

proptest! {
    /// A kept cursor, walked from any sequence of starts with any stopping points, visits
    /// what a fresh walk from the same start visits: its replays and steps never skip or
    /// invent a record.
    #[test]
    fn a_kept_cursor_walks_like_a_fresh_one(
        walks in proptest::collection::vec((0u16..700, prop_oneof![1usize..12, 100usize..300]), 1..30),
    ) {
        use crate::commands::store::MemberCursor;
        let tmp = tempfile::tempdir().unwrap();
        let e = crate::commands::tests::engine(tmp.path());
        let store = &e.store;
        let prefix = b"\xff\xffpfx".to_vec();
        let mut batch = terrace::WriteBatch::new();
        // 200 records: walks shorter and longer than a kept cursor remembers.
        for i in (0u16..600).step_by(3) {
            batch.put(&[prefix.as_slice(), &i.to_be_bytes()].concat(), &i.to_le_bytes());
        }
        batch.put(b"\xff\xffpfy", b"after");
        store.db.write(batch, terrace::WriteOptions::default()).unwrap();
        let mut kept = MemberCursor::new(store.member_iter(&prefix).unwrap(), true);
        for (start, limit) in walks {
            let collect = |cursor: &mut MemberCursor| {
                let mut seen = Vec::new();
                cursor
                    .walk(&prefix, &start.to_be_bytes(), |m, v| {
                        seen.push((m.to_vec(), v.to_vec()));
                        seen.len() < limit
                    })
                    .unwrap();
                seen
            };
            let mut fresh = MemberCursor::new(store.member_iter(&prefix).unwrap(), false);
            prop_assert_eq!(collect(&mut kept), collect(&mut fresh), "from {}", start);
        }
    }
}
