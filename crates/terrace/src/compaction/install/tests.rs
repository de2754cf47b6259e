use std::sync::Arc;

use super::*;
use crate::compaction::task::OutputSpec;
use crate::compaction::{CompactionInputLevel, CompactionReason, CompactionStats};
use crate::key::InternalKey;
use crate::range_del::RangeTombstone;
use crate::sst::{SstBuilder, SstOptions};
use crate::storage::FsStorage;

struct Fixture {
    _dir: tempfile::TempDir,
    storage: Arc<dyn Storage>,
    tables: Tables,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(FsStorage::new());
    let tables = Tables::new(storage.clone(), dir.path(), vec![], 16, None);
    Fixture {
        _dir: dir,
        storage,
        tables,
    }
}

/// Writes table `number` holding `keys` (and a tombstone `[t0, t1)` if given) and returns
/// what an executor would report of it.
fn table(fx: &Fixture, number: u64, keys: &[&str], tombstone: Option<(&str, &str)>) -> FileMeta {
    let path = fx.tables.path(0, number);
    let file = fx.storage.create(&path, IoClass::Compaction).unwrap();
    let mut b = SstBuilder::new(file, path, SstOptions::default());
    for k in keys {
        b.add(&key::internal_key(k.as_bytes(), 5, ValueType::Value), b"v")
            .unwrap();
    }
    if let Some((s, e)) = tombstone {
        b.add_range_tombstone(&RangeTombstone {
            start: s.as_bytes().to_vec(),
            end: e.as_bytes().to_vec(),
            seq: 6,
        });
    }
    crate::compaction::file_meta(number, 0, &b.finish().unwrap())
}

fn input(number: u64, lo: &str, hi: &str) -> FileMeta {
    FileMeta {
        number,
        volume: 0,
        size: 100,
        smallest: InternalKey::new(lo.as_bytes(), 3, ValueType::Value),
        largest: InternalKey::new(hi.as_bytes(), 3, ValueType::Value),
        smallest_seq: 3,
        largest_seq: 3,
        num_entries: 1,
        num_deletions: 0,
        num_range_deletions: 0,
        file_checksum: 0,
        replicas: Vec::new(),
    }
}

/// Task 7 compacts files 1 (level 1) and 2 (level 2) into level 2, in two subtasks:
/// `[.., "m")` with numbers 10-12 and `["m", ..)` with numbers 13-15.
fn task() -> (CompactionTask, Vec<CompactionTask>) {
    let task = CompactionTask {
        id: 7,
        inputs: vec![
            CompactionInputLevel {
                level: 1,
                files: vec![input(1, "a", "z")],
            },
            CompactionInputLevel {
                level: 2,
                files: vec![input(2, "b", "y")],
            },
        ],
        output_level: 2,
        smallest_user_key: None,
        largest_user_key: None,
        snapshots: vec![],
        bottommost: true,
        output: OutputSpec {
            target_file_size: 1 << 20,
            block_size: 4096,
            restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: crate::sst::Compression::None,
            volume: 0,
            file_numbers: (10..16).collect(),
            placement: None,
        },
        filter: None,
        reason: CompactionReason::LevelSize,
        level0: None,
    };
    let subtasks = task.split(&[b"m".to_vec()]);
    assert_eq!(subtasks.len(), 2);
    (task, subtasks)
}

fn result(id: u64, outputs: Vec<FileMeta>) -> CompactionResult {
    CompactionResult {
        task_id: id,
        outputs,
        stats: CompactionStats::default(),
        runs: vec![],
    }
}

fn refusal(r: Result<VersionEdit>) -> String {
    match r {
        Err(Error::ResultRefused(why)) => why,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn good_results_become_one_edit() {
    let fx = fixture();
    let (task, subs) = task();
    let results = vec![
        result(
            7,
            vec![
                table(&fx, 10, &["a", "c"], None),
                table(&fx, 11, &["d", "k"], None),
            ],
        ),
        // A tombstone may end exactly at the range's bound.
        result(7, vec![table(&fx, 13, &["m", "q"], Some(("r", "z")))]),
    ];
    for trust in [Trust::Local, Trust::Remote] {
        let edit = checked_edit(
            &task,
            &subs,
            &results,
            fx.storage.as_ref(),
            &fx.tables,
            trust,
        )
        .unwrap();
        assert_eq!(edit.deleted_files, vec![(1, 1), (2, 2)]);
        let added: Vec<(u32, u64)> = edit.new_files.iter().map(|(l, f)| (*l, f.number)).collect();
        assert_eq!(added, vec![(2, 10), (2, 11), (2, 13)]);
    }
    // The first subtask's tombstone ending at its bound "m" is inside it too.
    let sentinel = vec![
        result(7, vec![table(&fx, 12, &["e"], Some(("f", "m")))]),
        result(7, vec![]),
    ];
    checked_edit(
        &task,
        &subs,
        &sentinel,
        fx.storage.as_ref(),
        &fx.tables,
        Trust::Local,
    )
    .unwrap();
}

#[test]
fn results_that_do_not_answer_the_task_are_refused() {
    let fx = fixture();
    let (task, subs) = task();
    let check = |results: Vec<CompactionResult>| {
        refusal(checked_edit(
            &task,
            &subs,
            &results,
            fx.storage.as_ref(),
            &fx.tables,
            Trust::Local,
        ))
    };
    let low = table(&fx, 10, &["a", "c"], None);
    let high = table(&fx, 13, &["n"], None);

    assert!(check(vec![result(7, vec![low.clone()])]).contains("1 results for 2 subtasks"));
    assert!(check(vec![result(8, vec![low.clone()]), result(7, vec![])]).contains("task 8"));
    // A number reserved for the other subtask, or for no subtask.
    let stolen = table(&fx, 14, &["b"], None);
    assert!(check(vec![result(7, vec![stolen]), result(7, vec![])]).contains("not among"));
    let foreign = table(&fx, 99, &["b"], None);
    assert!(check(vec![result(7, vec![foreign]), result(7, vec![])]).contains("not among"));
    // The same file twice.
    let twice = vec![result(7, vec![low.clone(), low.clone()]), result(7, vec![])];
    let why = check(twice);
    assert!(why.contains("named twice"), "{why}");
    // Outside the subtask's range: a key at the bound, or below the lower bound.
    let at_bound = table(&fx, 11, &["k", "m"], None);
    assert!(check(vec![result(7, vec![at_bound]), result(7, vec![])]).contains("ends past"));
    let below = table(&fx, 14, &["l", "n"], None);
    assert!(check(vec![result(7, vec![]), result(7, vec![below])]).contains("starts below"));
    // Overlapping or out-of-order outputs.
    let overlapping = table(&fx, 11, &["b", "d"], None);
    let why = check(vec![
        result(7, vec![low.clone(), overlapping]),
        result(7, vec![]),
    ]);
    assert!(why.contains("overlaps"), "{why}");
    // Another volume than the task's.
    let mut elsewhere = high.clone();
    elsewhere.volume = 3;
    assert!(check(vec![result(7, vec![]), result(7, vec![elsewhere])]).contains("volume 3"));
    // A size that is not the file's; a file that is not there.
    let mut resized = high.clone();
    resized.size += 1;
    assert!(check(vec![result(7, vec![]), result(7, vec![resized])]).contains("bytes on storage"));
    let mut missing = high.clone();
    missing.number = 15;
    let r = checked_edit(
        &task,
        &subs,
        &[result(7, vec![]), result(7, vec![missing])],
        fx.storage.as_ref(),
        &fx.tables,
        Trust::Local,
    );
    assert!(r.is_err());
}

#[test]
fn only_untrusted_results_have_their_checksums_read() {
    let fx = fixture();
    let (task, subs) = task();
    let mut f = table(&fx, 10, &["a", "c"], None);
    f.file_checksum ^= 1;
    let results = vec![result(7, vec![f]), result(7, vec![])];
    let run = |trust| {
        checked_edit(
            &task,
            &subs,
            &results,
            fx.storage.as_ref(),
            &fx.tables,
            trust,
        )
    };
    assert!(run(Trust::Local).is_ok());
    assert!(refusal(run(Trust::Remote)).contains("checksum"));
}
