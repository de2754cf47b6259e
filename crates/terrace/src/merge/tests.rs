use proptest::prelude::*;

use super::*;
use crate::error::Error;
use crate::iter::VecIterator;
use crate::key::{internal_key, seek_key, ValueType};

fn entry(k: &str, seq: u64) -> (Vec<u8>, Vec<u8>) {
    (
        internal_key(k.as_bytes(), seq, ValueType::Value),
        format!("{k}@{seq}").into_bytes(),
    )
}

fn merge_of(children: Vec<Vec<(Vec<u8>, Vec<u8>)>>) -> MergingIterator {
    MergingIterator::new(
        children
            .into_iter()
            .map(|c| Box::new(VecIterator::new(c)) as Box<dyn InternalIterator>)
            .collect(),
    )
}

fn collect_forward(it: &mut MergingIterator) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    it.seek_to_first().unwrap();
    while it.valid() {
        out.push(it.value().to_vec());
        it.next().unwrap();
    }
    out
}

#[test]
fn merges_in_internal_key_order() {
    let mut it = merge_of(vec![
        vec![entry("a", 3), entry("c", 1)],
        vec![entry("a", 5), entry("b", 2)],
        vec![],
    ]);
    assert_eq!(
        collect_forward(&mut it),
        vec![
            b"a@5".to_vec(),
            b"a@3".to_vec(),
            b"b@2".to_vec(),
            b"c@1".to_vec()
        ]
    );
}

#[test]
fn direction_switch_repositions_every_child() {
    let mut it = merge_of(vec![
        vec![entry("a", 1), entry("c", 1), entry("e", 1)],
        vec![entry("b", 1), entry("d", 1), entry("f", 1)],
    ]);
    it.seek(&seek_key(b"c", 100)).unwrap();
    assert_eq!(it.value(), b"c@1");
    it.prev().unwrap();
    assert_eq!(it.value(), b"b@1");
    it.next().unwrap();
    assert_eq!(it.value(), b"c@1");
    it.next().unwrap();
    assert_eq!(it.value(), b"d@1");
    it.prev().unwrap();
    it.prev().unwrap();
    assert_eq!(it.value(), b"b@1");
    it.seek_for_prev(&seek_key(b"e", 0)).unwrap();
    assert_eq!(it.value(), b"e@1");
    it.next().unwrap();
    assert_eq!(it.value(), b"f@1");
    it.next().unwrap();
    assert!(!it.valid());
    assert!(it.key().is_empty() && it.value().is_empty());
}

#[test]
fn empty_merge_is_never_valid() {
    let mut it = merge_of(vec![]);
    it.seek_to_first().unwrap();
    assert!(!it.valid());
    it.seek_to_last().unwrap();
    assert!(!it.valid());
    it.next().unwrap();
    it.prev().unwrap();
    assert!(!it.valid());
}

/// A child that fails its `fail_at`-th movement with a corruption error.
struct FailingIterator {
    inner: VecIterator,
    moves: usize,
    fail_at: usize,
}

impl FailingIterator {
    fn step(&mut self) -> Result<()> {
        self.moves += 1;
        if self.moves == self.fail_at {
            return Err(Error::corruption("000007.sst", 42, "bad block"));
        }
        Ok(())
    }
}

impl InternalIterator for FailingIterator {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        self.step()?;
        self.inner.seek_to_first()
    }
    fn seek_to_last(&mut self) -> Result<()> {
        self.step()?;
        self.inner.seek_to_last()
    }
    fn seek(&mut self, t: &[u8]) -> Result<()> {
        self.step()?;
        self.inner.seek(t)
    }
    fn seek_for_prev(&mut self, t: &[u8]) -> Result<()> {
        self.step()?;
        self.inner.seek_for_prev(t)
    }
    fn next(&mut self) -> Result<()> {
        self.step()?;
        self.inner.next()
    }
    fn prev(&mut self) -> Result<()> {
        self.step()?;
        self.inner.prev()
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
}

#[test]
fn child_errors_propagate_and_invalidate() {
    for fail_at in 1..=4 {
        let failing = FailingIterator {
            inner: VecIterator::new(vec![entry("a", 1), entry("c", 1), entry("e", 1)]),
            moves: 0,
            fail_at,
        };
        let mut it = MergingIterator::new(vec![
            Box::new(VecIterator::new(vec![entry("b", 1), entry("d", 1)])),
            Box::new(failing),
        ]);
        // Movements: seek_to_first (1), next x2 touching child 1 once (2), prev switch (3).
        let mut result = it.seek_to_first();
        for _ in 0..3 {
            if result.is_err() {
                break;
            }
            result = it.next();
        }
        if result.is_ok() {
            result = it.prev();
        }
        if result.is_ok() {
            result = it.prev();
        }
        let err = result.unwrap_err();
        assert!(err.is_corruption(), "fail_at {fail_at}: {err}");
        assert!(!it.valid());
        // A later seek recovers.
        it.seek_to_first().unwrap();
        assert!(it.valid());
    }
}

#[derive(Debug, Clone)]
enum Op {
    First,
    Last,
    Seek(u8, u64),
    SeekForPrev(u8, u64),
    Next,
    Prev,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::First),
        Just(Op::Last),
        (0u8..12, 0u64..8).prop_map(|(k, s)| Op::Seek(k, s)),
        (0u8..12, 0u64..8).prop_map(|(k, s)| Op::SeekForPrev(k, s)),
        Just(Op::Next),
        Just(Op::Next),
        Just(Op::Prev),
        Just(Op::Prev),
    ]
}

proptest! {
    // The case count comes from PROPTEST_CASES (proptest's default configuration).
    #[test]
    fn merge_matches_sorted_vec(
        keys in proptest::collection::btree_set((0u8..10, 0u64..6), 0..40),
        owners in proptest::collection::vec(0usize..4, 40),
        ops in proptest::collection::vec(op(), 1..60),
    ) {
        let mut all: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut children = vec![Vec::new(); 4];
        for (i, (k, s)) in keys.iter().enumerate() {
            let e = (internal_key(&[*k], *s, ValueType::Value), vec![*k, *s as u8]);
            children[owners[i]].push(e.clone());
            all.push(e);
        }
        all.sort_by(|a, b| key::compare(&a.0, &b.0));
        for c in &mut children {
            c.sort_by(|a, b| key::compare(&a.0, &b.0));
        }
        let mut it = merge_of(children);
        let mut model = VecIterator::new(all);
        for op in ops {
            match op {
                Op::First => { it.seek_to_first().unwrap(); model.seek_to_first().unwrap(); }
                Op::Last => { it.seek_to_last().unwrap(); model.seek_to_last().unwrap(); }
                Op::Seek(k, s) => {
                    let t = seek_key(&[k], s);
                    it.seek(&t).unwrap();
                    model.seek(&t).unwrap();
                }
                Op::SeekForPrev(k, s) => {
                    let t = seek_key(&[k], s);
                    it.seek_for_prev(&t).unwrap();
                    model.seek_for_prev(&t).unwrap();
                }
                Op::Next => if model.valid() { it.next().unwrap(); model.next().unwrap(); },
                Op::Prev => if model.valid() { it.prev().unwrap(); model.prev().unwrap(); },
            }
            prop_assert_eq!(it.valid(), model.valid());
            prop_assert_eq!(it.key(), model.key());
            prop_assert_eq!(it.value(), model.value());
        }
    }
}
