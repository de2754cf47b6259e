//! Model-based property test: random operations against a `BTreeMap` model, with
//! flushes, compactions, snapshots and reopens in between; every read is checked. Half
//! the cases keep the write-ahead logs in a separate `wal_dir`.

use std::collections::BTreeMap;
use std::ops::Bound;

use proptest::prelude::*;
use terrace::{Db, ReadOptions, Snapshot, WriteBatch, WriteOptions};

use crate::{cases, small_options};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone)]
enum Op {
    Put(u16, u16),
    Delete(u16),
    DeleteRange(u16, u16),
    Batch(Vec<(u16, Option<u16>)>),
    Get(u16),
    /// `multi_get_pinned` of the keys, now or at a snapshot.
    MultiGet(Vec<u16>, Option<usize>),
    TakeSnapshot,
    /// Copies the live table at this index (modulo the live count) to this table volume
    /// (modulo the volumes), when the run has volumes.
    Replicate(usize, u32),
    ReadSnapshot(usize, u16),
    Scan {
        lo: Option<u16>,
        hi: Option<u16>,
        reverse: bool,
        snap: Option<usize>,
    },
    Seek(u16, bool),
    Flush,
    Compact,
    Reopen,
    Fill(u16),
}

fn key(k: u16) -> Vec<u8> {
    format!("key{k:04}").into_bytes()
}

fn value(v: u16) -> Vec<u8> {
    let mut out = format!("value{v}-").into_bytes();
    out.resize(20 + usize::from(v % 7) * 13, b'x');
    out
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u16..300;
    prop_oneof![
        20 => (k.clone(), any::<u16>()).prop_map(|(k, v)| Op::Put(k, v)),
        6 => k.clone().prop_map(Op::Delete),
        2 => (k.clone(), 0u16..40).prop_map(|(a, len)| Op::DeleteRange(a, a + len)),
        4 => prop::collection::vec((k.clone(), prop::option::of(any::<u16>())), 1..8).prop_map(Op::Batch),
        10 => k.clone().prop_map(Op::Get),
        4 => (prop::collection::vec(k.clone(), 0..24), prop::option::of(any::<usize>()))
            .prop_map(|(keys, snap)| Op::MultiGet(keys, snap)),
        2 => Just(Op::TakeSnapshot),
        4 => (any::<usize>(), k.clone()).prop_map(|(s, k)| Op::ReadSnapshot(s, k)),
        4 => (prop::option::of(k.clone()), prop::option::of(k.clone()), any::<bool>(), prop::option::of(any::<usize>()))
            .prop_map(|(lo, hi, reverse, snap)| Op::Scan { lo, hi, reverse, snap }),
        4 => (k.clone(), any::<bool>()).prop_map(|(k, b)| Op::Seek(k, b)),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
        2 => (0u16..400).prop_map(Op::Fill),
        2 => (any::<usize>(), 0u32..3).prop_map(|(i, v)| Op::Replicate(i, v)),
    ]
}

fn expected_scan(m: &Model, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let lo_b = lo.map_or(Bound::Unbounded, |l| Bound::Included(l.to_vec()));
    let hi_b = hi.map_or(Bound::Unbounded, |h| Bound::Excluded(h.to_vec()));
    if let (Some(l), Some(h)) = (lo, hi) {
        if l >= h {
            return Vec::new();
        }
    }
    m.range((lo_b, hi_b))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn run(
    ops: Vec<Op>,
    matrix: bool,
    separate_wal_dir: bool,
    offload: bool,
) -> Result<(), TestCaseError> {
    run_on(ops, matrix, separate_wal_dir, offload, None)
}

/// As `run`, with tables spread over three volumes by `placement` when it is given
/// (and `Op::Replicate` copying tables between them).
fn run_on(
    ops: Vec<Op>,
    matrix: bool,
    separate_wal_dir: bool,
    offload: bool,
    placement: Option<terrace::volume::placement::PlacementPolicy>,
) -> Result<(), TestCaseError> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mut opts = small_options();
    if let Some(p) = placement {
        opts.volumes = (1..=3)
            .map(|i| tmp.path().join(format!("vol{i}")))
            .collect();
        opts.placement_policy = p;
        opts.heat_interval = std::time::Duration::from_millis(5);
    }
    if separate_wal_dir {
        opts.wal_dir = Some(tmp.path().join("wal"));
    }
    if matrix {
        opts.level0 = crate::matrix_level0(tmp.path(), 64 << 10, terrace::pmem::PmemMode::Shadow);
    }
    if offload {
        opts.compaction_executor = crate::offloaded_executor();
        opts.max_subcompactions = 2;
    }
    let mut db = Some(Db::open(&dir, opts.clone()).unwrap());
    let mut model = Model::new();
    let mut snaps: Vec<(Snapshot, Model)> = Vec::new();
    for op in ops {
        let d = db.as_ref().unwrap();
        match op {
            Op::Put(k, v) => {
                d.put(&key(k), &value(v)).unwrap();
                model.insert(key(k), value(v));
            }
            Op::Delete(k) => {
                d.delete(&key(k)).unwrap();
                model.remove(&key(k));
            }
            Op::DeleteRange(a, b) => {
                d.delete_range(&key(a), &key(b)).unwrap();
                let doomed: Vec<_> = model
                    .range(key(a)..key(b))
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in doomed {
                    model.remove(&k);
                }
            }
            Op::Batch(items) => {
                let mut b = WriteBatch::new();
                for (k, v) in items {
                    match v {
                        Some(v) => {
                            b.put(&key(k), &value(v));
                            model.insert(key(k), value(v));
                        }
                        None => {
                            b.delete(&key(k));
                            model.remove(&key(k));
                        }
                    }
                }
                d.write(b, WriteOptions::default()).unwrap();
            }
            Op::Get(k) => {
                prop_assert_eq!(
                    d.get(&key(k)).unwrap(),
                    model.get(&key(k)).cloned(),
                    "get {}",
                    k
                );
            }
            Op::MultiGet(keys, snap) => {
                let (m, opts) = match snap.filter(|_| !snaps.is_empty()) {
                    Some(i) => {
                        let (s, m) = &snaps[i % snaps.len()];
                        (m, s.read_options())
                    }
                    None => (&model, ReadOptions::default()),
                };
                let names: Vec<Vec<u8>> = keys.iter().map(|&k| key(k)).collect();
                let refs: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
                let got: Vec<Option<Vec<u8>>> = d
                    .multi_get_pinned(&opts, &refs)
                    .unwrap()
                    .into_iter()
                    .map(|v| v.map(|v| v.to_vec()))
                    .collect();
                let want: Vec<Option<Vec<u8>>> = names.iter().map(|k| m.get(k).cloned()).collect();
                prop_assert_eq!(got, want);
            }
            Op::Replicate(i, v) => {
                if placement.is_some() {
                    let files = d.live_files();
                    if !files.is_empty() {
                        let number = files[i % files.len()].1.number;
                        // A compaction may replace the file meanwhile: then it is not live.
                        if let Err(e) = d.copy_table_to(number, 1 + v % 3) {
                            prop_assert!(matches!(e, terrace::Error::InvalidArgument(_)), "{}", e);
                        }
                    }
                }
            }
            Op::TakeSnapshot => snaps.push((d.snapshot(), model.clone())),
            Op::ReadSnapshot(i, k) => {
                if !snaps.is_empty() {
                    let (s, m) = &snaps[i % snaps.len()];
                    prop_assert_eq!(
                        d.get_opt(&s.read_options(), &key(k)).unwrap(),
                        m.get(&key(k)).cloned()
                    );
                }
            }
            Op::Scan {
                lo,
                hi,
                reverse,
                snap,
            } => {
                let (m, seq) = match snap.filter(|_| !snaps.is_empty()) {
                    Some(i) => {
                        let (s, m) = &snaps[i % snaps.len()];
                        (m, Some(s.seq()))
                    }
                    None => (&model, None),
                };
                let lo = lo.map(key);
                let hi = hi.map(key);
                let mut want = expected_scan(m, lo.as_deref(), hi.as_deref());
                let mut it = d
                    .iter(ReadOptions {
                        snapshot_seq: seq,
                        lower_bound: lo,
                        upper_bound: hi,
                        ..ReadOptions::default()
                    })
                    .unwrap();
                let mut got = Vec::new();
                if reverse {
                    want.reverse();
                    it.seek_to_last().unwrap();
                    while it.valid() {
                        got.push((it.key().to_vec(), it.value().to_vec()));
                        it.prev().unwrap();
                    }
                } else {
                    it.seek_to_first().unwrap();
                    got = it.collect_remaining().unwrap();
                }
                prop_assert_eq!(got, want);
            }
            Op::Seek(k, forward) => {
                let mut it = d.iter(ReadOptions::default()).unwrap();
                let target = key(k);
                if forward {
                    it.seek(&target).unwrap();
                    let want = model.range(target.clone()..).next();
                    prop_assert_eq!(
                        it.valid().then(|| (it.key().to_vec(), it.value().to_vec())),
                        want.map(|(a, b)| (a.clone(), b.clone()))
                    );
                    // Direction change: one step back lands on the key before.
                    if it.valid() {
                        it.prev().unwrap();
                        let want = model.range(..target.clone()).next_back();
                        prop_assert_eq!(
                            it.valid().then(|| it.key().to_vec()),
                            want.map(|(a, _)| a.clone())
                        );
                    }
                } else {
                    it.seek_for_prev(&target).unwrap();
                    let want = model.range(..=target.clone()).next_back();
                    prop_assert_eq!(
                        it.valid().then(|| (it.key().to_vec(), it.value().to_vec())),
                        want.map(|(a, b)| (a.clone(), b.clone()))
                    );
                    if it.valid() {
                        it.next().unwrap();
                        let want = model
                            .range((Bound::Excluded(target.clone()), Bound::Unbounded))
                            .next();
                        prop_assert_eq!(
                            it.valid().then(|| it.key().to_vec()),
                            want.map(|(a, _)| a.clone())
                        );
                    }
                }
            }
            Op::Flush => d.flush().unwrap(),
            Op::Compact => d.compact_range(None, None).unwrap(),
            Op::Reopen => {
                snaps.clear();
                db.take().unwrap().close().unwrap();
                db = Some(Db::open(&dir, opts.clone()).unwrap());
            }
            Op::Fill(n) => {
                for i in 0..n {
                    let k = (i.wrapping_mul(7919)) % 300;
                    d.put(&key(k), &value(i)).unwrap();
                    model.insert(key(k), value(i));
                }
            }
        }
    }
    // Final full check, then after a reopen.
    let d = db.take().unwrap();
    snaps.clear();
    prop_assert_eq!(crate::scan_all(&d), expected_scan(&model, None, None));
    d.close().unwrap();
    let d = Db::open(&dir, opts).unwrap();
    prop_assert_eq!(crate::scan_all(&d), expected_scan(&model, None, None));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(32), max_shrink_iters: 200, ..ProptestConfig::default() })]

    #[test]
    fn engine_matches_btreemap_model(
        ops in prop::collection::vec(op(), 1..120),
        separate_wal_dir in any::<bool>(),
    ) {
        run(ops, false, separate_wal_dir, false)?;
    }

    #[test]
    fn engine_with_a_matrix_level0_matches_btreemap_model(
        ops in prop::collection::vec(op(), 1..120),
        separate_wal_dir in any::<bool>(),
    ) {
        run(ops, true, separate_wal_dir, false)?;
    }

    /// Tables spread over three volumes, and copied between them at random.
    #[test]
    fn engine_over_several_volumes_with_replicas_matches_btreemap_model(
        ops in prop::collection::vec(op(), 1..120),
        policy in 0usize..4,
    ) {
        use terrace::volume::placement::PlacementPolicy;
        let p = [
            PlacementPolicy::Tango,
            PlacementPolicy::RoundRobin,
            PlacementPolicy::Hash,
            PlacementPolicy::Demand,
        ][policy];
        run_on(ops, false, false, false, Some(p))?;
    }

    /// Every compaction split between the host and an untrusted device, checked in full.
    #[test]
    fn engine_with_offloaded_compactions_matches_btreemap_model(
        ops in prop::collection::vec(op(), 1..120),
        matrix in any::<bool>(),
    ) {
        run(ops, matrix, false, true)?;
    }
}
