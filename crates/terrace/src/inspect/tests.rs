use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::key::{InternalKey, ValueType};
use crate::storage::{FsStorage, IoClass};
use crate::version::{VersionEdit, VersionSet, CURRENT_FILE_NAME, LOCK_FILE_NAME};

fn meta(number: u64, lo: &[u8], hi: &[u8], seq: u64) -> FileMeta {
    FileMeta {
        number,
        volume: 0,
        size: 100 * number,
        smallest: InternalKey::new(lo, seq, ValueType::Value),
        largest: InternalKey::new(hi, seq, ValueType::Value),
        smallest_seq: seq,
        largest_seq: seq,
        num_entries: 10,
        num_deletions: 1,
        num_range_deletions: 0,
        file_checksum: 0x1234_5678,
        replicas: Vec::new(),
    }
}

fn add(level: u32, m: FileMeta) -> VersionEdit {
    VersionEdit {
        new_files: vec![(level, m)],
        ..VersionEdit::default()
    }
}

fn fs() -> Arc<dyn Storage> {
    Arc::new(FsStorage::new())
}

/// A database with files in levels 0, 1 and 2, some added and deleted, across a rollover.
fn build(dir: &Path, num_levels: usize) -> VersionSet {
    let mut set = VersionSet::create(fs(), dir, num_levels, 300).unwrap();
    let mut level0 = Vec::new();
    for i in 0..4u64 {
        let n = set.new_file_number();
        set.set_last_sequence(10 * (i + 1));
        set.log_and_apply(add(0, meta(n, b"a", b"z", 10 * (i + 1))))
            .unwrap();
        level0.push(n);
    }
    let (a, b) = (set.new_file_number(), set.new_file_number());
    let mut e = VersionEdit {
        deleted_files: vec![(0, level0[0]), (0, level0[1])],
        new_files: vec![(1, meta(b, b"m", b"z", 5)), (1, meta(a, b"a", b"l", 5))],
        log_number: Some(b + 1),
        ..VersionEdit::default()
    };
    e.compact_pointers = vec![(1, InternalKey::new(b"l", 5, ValueType::Value))];
    set.log_and_apply(e).unwrap();
    let c = set.new_file_number();
    set.log_and_apply(add(2, meta(c, b"b", b"c", 1))).unwrap();
    set
}

fn assert_matches(layout: &DatabaseLayout, set: &mut VersionSet) {
    let v = set.current();
    assert!(layout.levels.len() >= 7);
    for (l, files) in layout.levels.iter().enumerate() {
        let want: Vec<FileMeta> = v.files(l).iter().map(|f| (**f).clone()).collect();
        assert_eq!(files, &want, "level {l}");
    }
    assert_eq!(layout.manifest, manifest_file_name(set.manifest_number()));
    assert_eq!(layout.last_sequence, set.last_sequence());
    assert_eq!(layout.log_number, set.log_number());
    // The manifest records the number the set hands out next.
    assert_eq!(layout.next_file_number, set.new_file_number());
}

#[test]
fn inspect_matches_the_version_set() {
    let dir = tempfile::tempdir().unwrap();
    let mut set = build(dir.path(), 4);
    assert!(
        set.manifest_number() > 1,
        "the test should cover a rollover"
    );
    let layout = inspect_database(fs(), dir.path()).unwrap();
    assert_eq!(layout.levels.len(), 7);
    assert_eq!(layout.levels[0].len(), 2);
    assert!(layout.levels[0][0].largest_seq > layout.levels[0][1].largest_seq);
    assert_eq!(layout.levels[1].len(), 2);
    assert!(layout.levels[1][0].smallest < layout.levels[1][1].smallest);
    assert_matches(&layout, &mut set);
}

#[test]
fn inspect_reports_every_level_the_manifest_uses() {
    let dir = tempfile::tempdir().unwrap();
    let mut set = VersionSet::create(fs(), dir.path(), 12, 1 << 20).unwrap();
    let n = set.new_file_number();
    set.log_and_apply(add(9, meta(n, b"a", b"b", 1))).unwrap();
    let layout = inspect_database(fs(), dir.path()).unwrap();
    assert_eq!(layout.levels.len(), 10);
    assert_eq!(layout.levels[9][0].number, n);
    assert_matches(&layout, &mut set);
}

#[test]
fn table_path_resolves_every_volume_to_the_database_directory() {
    let dir = tempfile::tempdir().unwrap();
    let _set = build(dir.path(), 4);
    let layout = inspect_database(fs(), dir.path()).unwrap();
    let mut f = layout.levels[1][0].clone();
    let want = dir.path().join(format!("{:06}.sst", f.number));
    assert_eq!(layout.table_path(dir.path(), &f), want);
    f.volume = 3;
    assert_eq!(layout.table_path(dir.path(), &f), want);
}

fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect()
}

#[test]
fn inspect_writes_nothing_and_ignores_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let mut set = build(dir.path(), 4);
    // Another "process" holds the database open and its manifest ends in a torn record.
    let holder = FsStorage::new();
    let _lock = holder.lock(&dir.path().join(LOCK_FILE_NAME)).unwrap();
    let manifest = dir.path().join(manifest_file_name(set.manifest_number()));
    let mut data = std::fs::read(&manifest).unwrap();
    data.extend_from_slice(&[7, 0, 0]);
    std::fs::write(&manifest, &data).unwrap();

    let before = snapshot(dir.path());
    let storage = Arc::new(FsStorage::new());
    let layout = inspect_database(storage.clone(), dir.path()).unwrap();
    assert_matches(&layout, &mut set);
    assert_eq!(snapshot(dir.path()), before);
    for class in IoClass::ALL {
        let s = storage.io_stats().get(class);
        assert_eq!(
            (s.write_ops, s.write_bytes, s.sync_ops),
            (0, 0, 0),
            "{class:?}"
        );
    }
    assert!(storage.io_stats().get(IoClass::Manifest).read_bytes > 0);
}

#[test]
fn corrupt_manifest_or_current_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let set = build(dir.path(), 4);
    let manifest = dir.path().join(manifest_file_name(set.manifest_number()));
    drop(set);
    let good = std::fs::read(&manifest).unwrap();
    // The snapshot record starts after the 8-byte file header; its payload after 12 more.
    for i in [8, 12, 20, 21] {
        let mut bad = good.clone();
        bad[i] ^= 0x10;
        std::fs::write(&manifest, &bad).unwrap();
        match inspect_database(fs(), dir.path()) {
            Err(Error::Corruption { file, offset, .. }) => {
                assert_eq!(file, manifest);
                assert_eq!(offset, 8, "byte {i}");
            }
            other => panic!("byte {i}: expected corruption, got {other:?}"),
        }
    }
    std::fs::write(&manifest, &good[..4]).unwrap();
    assert!(inspect_database(fs(), dir.path())
        .err()
        .is_some_and(|e| e.is_corruption()));
    std::fs::write(&manifest, &good).unwrap();
    std::fs::write(dir.path().join(CURRENT_FILE_NAME), b"garbage").unwrap();
    assert!(inspect_database(fs(), dir.path())
        .err()
        .is_some_and(|e| e.is_corruption()));
}

#[test]
fn missing_database_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        inspect_database(fs(), dir.path()),
        Err(Error::Io { .. })
    ));
    assert_eq!(snapshot(dir.path()).len(), 0);
}
