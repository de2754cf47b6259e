//! Test inputs for executors: table files of several levels with many versions,
//! deletions and range tombstones, a task over them, and a byte-for-byte comparison of
//! two runs' outputs.

use std::sync::Arc;

use rand::{Rng, SeedableRng};

use crate::compaction::task::OutputSpec;
use crate::compaction::{
    CompactionInputLevel, CompactionReason, CompactionResult, CompactionTask, ExecutorEnv,
    FilterRegistry,
};
use crate::key::{self, ValueType};
use crate::range_del::RangeTombstone;
use crate::sst::{SstBuilder, SstOptions};
use crate::storage::{FsStorage, IoClass, Storage};
use crate::tables::Tables;
use crate::version::FileMeta;

pub(crate) struct Fixture {
    _dir: tempfile::TempDir,
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) tables: Tables,
    pub(crate) filters: FilterRegistry,
}

pub(crate) fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(FsStorage::new());
    let tables = Tables::new(storage.clone(), dir.path(), vec![], 64, None);
    Fixture {
        _dir: dir,
        storage,
        tables,
        filters: FilterRegistry::new(),
    }
}

impl Fixture {
    pub(crate) fn env(&self) -> ExecutorEnv<'_> {
        ExecutorEnv {
            storage: self.storage.as_ref(),
            tables: &self.tables,
            filters: &self.filters,
            level0: None,
            progress: None,
        }
    }

    /// Writes table `number` from sorted (user key, seq, kind, value) entries.
    pub(crate) fn table(
        &self,
        number: u64,
        mut entries: Vec<(Vec<u8>, u64, ValueType, Vec<u8>)>,
        tombstones: &[RangeTombstone],
    ) -> FileMeta {
        entries.sort_by(|a, b| {
            let ka = key::internal_key(&a.0, a.1, a.2);
            let kb = key::internal_key(&b.0, b.1, b.2);
            key::compare(&ka, &kb)
        });
        let path = self.tables.path(0, number);
        let file = self.storage.create(&path, IoClass::Compaction).unwrap();
        let mut b = SstBuilder::new(file, path, SstOptions::default());
        for (k, seq, kind, v) in &entries {
            b.add(&key::internal_key(k, *seq, *kind), v).unwrap();
        }
        for t in tombstones {
            b.add_range_tombstone(t);
        }
        crate::compaction::file_meta(number, 0, &b.finish().unwrap())
    }

    pub(crate) fn bytes(&self, f: &FileMeta) -> Vec<u8> {
        self.storage
            .read_all(&self.tables.path(f.volume, f.number), IoClass::Compaction)
            .unwrap()
    }
}

/// Level 1: two files of newer versions and deletions; level 2: three files of older
/// versions; a range tombstone in level 1. Keys `k00000`..`k05999`.
pub(crate) fn inputs(fx: &Fixture, seed: u64) -> Vec<CompactionInputLevel> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut l2 = Vec::new();
    for part in 0..3u64 {
        let entries = (part * 2000..(part + 1) * 2000)
            .map(|i| {
                let len = rng.gen_range(10..300);
                (
                    format!("k{i:05}").into_bytes(),
                    10 + i % 7,
                    ValueType::Value,
                    vec![b'o'; len],
                )
            })
            .collect();
        l2.push(fx.table(20 + part, entries, &[]));
    }
    let mut l1 = Vec::new();
    for part in 0..2u64 {
        let mut entries = Vec::new();
        for i in (part * 3000..(part + 1) * 3000).step_by(3) {
            let kind = if rng.gen_bool(0.2) {
                ValueType::Deletion
            } else {
                ValueType::Value
            };
            let seq = 100 + i;
            entries.push((format!("k{i:05}").into_bytes(), seq, kind, vec![b'n'; 40]));
            if rng.gen_bool(0.3) {
                entries.push((
                    format!("k{i:05}").into_bytes(),
                    seq - 50,
                    ValueType::Value,
                    vec![b'm'; 20],
                ));
            }
        }
        let tomb = RangeTombstone {
            start: format!("k{:05}", part * 3000 + 100).into_bytes(),
            end: format!("k{:05}", part * 3000 + 400).into_bytes(),
            seq: 5000,
        };
        l1.push(fx.table(10 + part, entries, &[tomb]));
    }
    vec![
        CompactionInputLevel {
            level: 1,
            files: l1,
        },
        CompactionInputLevel {
            level: 2,
            files: l2,
        },
    ]
}

pub(crate) fn task(
    inputs: Vec<CompactionInputLevel>,
    first_number: u64,
    bottommost: bool,
) -> CompactionTask {
    CompactionTask {
        id: first_number,
        inputs,
        output_level: 2,
        smallest_user_key: None,
        largest_user_key: None,
        snapshots: vec![2000, 4000],
        bottommost,
        output: OutputSpec {
            target_file_size: 96 << 10,
            block_size: 4096,
            restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: crate::sst::Compression::None,
            volume: 0,
            file_numbers: (first_number..first_number + 200).collect(),
            placement: None,
        },
        filter: None,
        reason: CompactionReason::LevelSize,
        level0: None,
    }
}

/// The outputs of both runs hold the same bytes, cut at the same places.
pub(crate) fn assert_same(fx: &Fixture, linear: &CompactionResult, piped: &CompactionResult) {
    assert_eq!(linear.outputs.len(), piped.outputs.len());
    assert!(!linear.outputs.is_empty());
    for (a, b) in linear.outputs.iter().zip(&piped.outputs) {
        assert_eq!(
            (&a.smallest, &a.largest, a.size),
            (&b.smallest, &b.largest, b.size)
        );
        assert_eq!(a.file_checksum, b.file_checksum);
        assert!(
            fx.bytes(a) == fx.bytes(b),
            "outputs {} and {} differ",
            a.number,
            b.number
        );
    }
    let (mut s, mut t) = (linear.stats, piped.stats);
    s.elapsed_micros = 0;
    t.elapsed_micros = 0;
    assert_eq!(s, t);
}
