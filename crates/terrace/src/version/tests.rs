use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::error::Error;
use crate::key::{seek_key, InternalKey, ValueType, MAX_SEQ};
use crate::storage::{FaultStorage, FsStorage, IoClass, Storage};

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
        file_checksum: 0xdead_beef,
        replicas: Vec::new(),
    }
}

fn add(level: u32, m: FileMeta) -> VersionEdit {
    VersionEdit {
        new_files: vec![(level, m)],
        ..VersionEdit::default()
    }
}

fn numbers(files: &[Arc<FileMeta>]) -> Vec<u64> {
    files.iter().map(|f| f.number).collect()
}

fn fs() -> Arc<dyn Storage> {
    Arc::new(FsStorage::new())
}

fn full_edit() -> VersionEdit {
    VersionEdit {
        log_number: Some(7),
        next_file_number: Some(42),
        last_sequence: Some(1 << 40),
        deleted_files: vec![(1, 5), (3, 300)],
        new_files: vec![(0, meta(9, b"a", b"q", 3)), (2, meta(10, b"", b"zz", 0))],
        compact_pointers: vec![(1, InternalKey::new(b"m", 4, ValueType::Deletion))],
        unknown_fields: vec![(SAFE_TO_IGNORE | 3, b"heat".to_vec())],
        ..VersionEdit::default()
    }
}

fn edit_with_level0_records() -> VersionEdit {
    VersionEdit {
        level0: vec![
            Level0Record {
                tag: 7,
                payload: b"a row".to_vec(),
            },
            Level0Record {
                tag: 70 | SAFE_TO_IGNORE,
                payload: Vec::new(),
            },
        ],
        ..full_edit()
    }
}

const F: &str = "MANIFEST-000001";

#[test]
fn edit_round_trip() {
    for e in [
        VersionEdit::default(),
        full_edit(),
        edit_with_level0_records(),
    ] {
        let bytes = e.encode();
        assert_eq!(VersionEdit::decode(&bytes, Path::new(F), 0).unwrap(), e);
    }
}

#[test]
fn replicas_round_trip_and_a_volume_named_twice_is_corruption() {
    let mut m = meta(9, b"a", b"k", 3);
    m.volume = 2;
    m.replicas = vec![4, 1];
    let e = add(1, m.clone());
    let bytes = e.encode();
    assert_eq!(VersionEdit::decode(&bytes, Path::new(F), 0).unwrap(), e);
    assert_eq!(m.copies().collect::<Vec<_>>(), vec![2, 4, 1]);
    // A file without replicas encodes exactly as before replicas existed.
    let plain = add(1, meta(9, b"a", b"k", 3)).encode();
    assert!(bytes.len() > plain.len());
    m.replicas = vec![4, 2];
    let err = VersionEdit::decode(&add(1, m).encode(), Path::new(F), 0).unwrap_err();
    assert!(err.to_string().contains("twice"), "{err}");
}

#[test]
fn edit_keeps_safe_unknown_fields_and_rejects_unsafe_ones() {
    let mut bytes = VersionEdit {
        log_number: Some(1),
        ..VersionEdit::default()
    }
    .encode();
    let plain = bytes.len();
    // A safe-to-ignore field of a newer release: tag 0x1005, 2-byte payload.
    bytes.extend_from_slice(&[0x85, 0x20, 2, 0xab, 0xcd]);
    let e = VersionEdit::decode(&bytes, Path::new(F), 0).unwrap();
    assert_eq!(e.unknown_fields, vec![(0x1005, vec![0xab, 0xcd])]);
    assert_eq!(
        e.encode(),
        bytes,
        "unknown fields are written back verbatim"
    );

    bytes.truncate(plain);
    bytes.extend_from_slice(&[0xc8, 0x01, 0]); // tag 200, empty, not safe to ignore
    let err = VersionEdit::decode(&bytes, Path::new(F), 10).unwrap_err();
    assert!(
        matches!(&err, Error::Unsupported(m) if m.contains("200")),
        "{err}"
    );
    // Tag 99 is in the level-0 range: kept as a record for the level 0 to judge.
    bytes.truncate(plain);
    bytes.extend_from_slice(&[0x63, 1, 7]);
    let e = VersionEdit::decode(&bytes, Path::new(F), 10).unwrap();
    assert_eq!(
        e.level0,
        vec![Level0Record {
            tag: 99,
            payload: vec![7]
        }]
    );
}

#[test]
fn file_meta_skips_safe_unknown_sub_fields() {
    let e = add(1, meta(3, b"a", b"b", 1));
    let mut bytes = e.encode();
    // Append a safe-to-ignore sub-field (tag 0x1001, 1 byte) inside the new-file payload:
    // the payload length (second byte; the payload is short) grows by 4.
    assert_eq!(bytes[0], 5);
    bytes[1] += 4;
    bytes.extend_from_slice(&[0x81, 0x20, 1, 7]);
    assert_eq!(VersionEdit::decode(&bytes, Path::new(F), 0).unwrap(), e);
    // The same sub-field without the safe bit is refused.
    let n = bytes.len();
    bytes[n - 3] = 0x01; // tag 0x81 0x01 = 129
    assert!(matches!(
        VersionEdit::decode(&bytes, Path::new(F), 0),
        Err(Error::Unsupported(_))
    ));
}

#[test]
fn damaged_edits_are_errors_not_panics() {
    let bytes = edit_with_level0_records().encode();
    for cut in 0..bytes.len() {
        let r = VersionEdit::decode(&bytes[..cut], Path::new(F), 100);
        if let Err(e) = r {
            match e {
                Error::Corruption { offset, .. } => assert!(offset >= 100),
                Error::Unsupported(_) => {}
                other => panic!("unexpected {other}"),
            }
        }
    }
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[i] ^= 1 << bit;
            let _ = VersionEdit::decode(&b, Path::new(F), 0);
        }
    }
    // A key shorter than its trailer inside a new file.
    let mut e = add(1, meta(3, b"a", b"b", 1));
    e.new_files[0].1.smallest = InternalKey(vec![1, 2]);
    assert!(VersionEdit::decode(&e.encode(), Path::new(F), 0)
        .unwrap_err()
        .is_corruption());
}

#[test]
fn apply_adds_deletes_and_orders_level0_newest_first() {
    let v = Version::new(3);
    let e = VersionEdit {
        new_files: vec![
            (0, meta(4, b"a", b"z", 10)),
            (0, meta(5, b"c", b"d", 30)),
            (0, meta(6, b"b", b"e", 10)),
            (1, meta(8, b"m", b"p", 1)),
            (1, meta(7, b"a", b"c", 1)),
        ],
        ..VersionEdit::default()
    };
    let v = v.apply(&e).unwrap();
    assert_eq!(numbers(v.files(0)), vec![5, 6, 4]);
    assert_eq!(numbers(v.files(1)), vec![7, 8]);
    assert_eq!(v.level_bytes(1), 1500);
    assert!(v.files(9).is_empty());
    assert_eq!(v.level_bytes(9), 0);

    // A move: delete from level 1 and add to level 2 in one edit.
    let mv = VersionEdit {
        deleted_files: vec![(1, 8)],
        new_files: vec![(2, meta(8, b"m", b"p", 1))],
        ..VersionEdit::default()
    };
    let v = v.apply(&mv).unwrap();
    assert_eq!(numbers(v.files(1)), vec![7]);
    assert_eq!(numbers(v.files(2)), vec![8]);

    let bad = [
        VersionEdit {
            deleted_files: vec![(1, 8)],
            ..VersionEdit::default()
        },
        add(2, meta(7, b"x", b"y", 1)),
        add(1, meta(20, b"b", b"d", 1)),
        add(3, meta(21, b"a", b"b", 1)),
        add(1, meta(22, b"z", b"a", 1)),
    ];
    for e in bad {
        assert!(v.apply(&e).is_err(), "{e:?}");
    }
}

#[test]
fn overlap_queries_and_file_for_key_with_range_deletion_sentinel() {
    let mut a = meta(1, b"a", b"m", 5);
    a.largest = InternalKey::new(b"m", MAX_SEQ, ValueType::RangeDeletion);
    let b = meta(2, b"m", b"t", 7);
    let c = meta(3, b"x", b"z", 2);
    let v = Version::new(2)
        .apply(&VersionEdit {
            new_files: vec![(1, c), (1, b), (1, a), (0, meta(4, b"k", b"n", 9))],
            ..VersionEdit::default()
        })
        .unwrap();
    assert_eq!(numbers(v.files(1)), vec![1, 2, 3]);

    let q = |lo: Option<&[u8]>, hi: Option<&[u8]>| numbers(&v.overlapping_files(1, lo, hi));
    assert_eq!(q(Some(b"m"), Some(b"m")), vec![1, 2]);
    assert_eq!(q(Some(b"n"), Some(b"w")), vec![2]);
    assert_eq!(q(Some(b"u"), Some(b"w")), Vec::<u64>::new());
    assert_eq!(q(None, Some(b"a")), vec![1]);
    assert_eq!(q(Some(b"t"), None), vec![2, 3]);
    assert_eq!(q(None, None), vec![1, 2, 3]);
    assert_eq!(numbers(&v.overlapping_files(0, Some(b"n"), None)), vec![4]);
    assert!(v.overlapping_files(0, Some(b"o"), None).is_empty());

    let find = |k: &[u8], seq| v.file_for_key(1, &seek_key(k, seq)).map(|f| f.number);
    assert_eq!(
        find(b"m", 100),
        Some(2),
        "the sentinel sorts before every real m"
    );
    assert_eq!(find(b"l", 100), Some(1));
    assert_eq!(find(b"m", MAX_SEQ), Some(2));
    assert_eq!(find(b"u", 100), None, "gap between files");
    assert_eq!(find(b"zz", 100), None);
    assert_eq!(find(b"", 100), None, "before the first file");
    assert_eq!(
        v.file_for_key(0, &seek_key(b"k", 9)).map(|f| f.number),
        None
    );
}

#[test]
fn create_apply_recover_gives_same_state() {
    let dir = tempfile::tempdir().unwrap();
    let mut set = VersionSet::create(fs(), dir.path(), 4, 1 << 20).unwrap();
    assert_eq!(set.manifest_number(), 1);
    let n1 = set.new_file_number();
    let n2 = set.new_file_number();
    set.set_last_sequence(50);
    set.log_and_apply(add(0, meta(n1, b"a", b"k", 50))).unwrap();
    let mut e = add(1, meta(n2, b"b", b"c", 40));
    e.log_number = Some(n2 + 1);
    e.compact_pointers = vec![(1, InternalKey::new(b"b", 40, ValueType::Value))];
    set.log_and_apply(e).unwrap();
    set.set_last_sequence(99);
    set.log_and_apply(VersionEdit {
        deleted_files: vec![(0, n1)],
        ..VersionEdit::default()
    })
    .unwrap();
    let next = set.new_file_number();
    let before = set.current();
    drop(set);

    let mut set = VersionSet::recover(fs(), dir.path(), 4, 1 << 20).unwrap();
    assert_eq!(*set.current(), *before);
    assert_eq!(set.last_sequence(), 99);
    assert_eq!(set.log_number(), n2 + 1);
    assert_eq!(set.manifest_number(), 1);
    assert_eq!(
        set.compact_pointer(1).map(|k| k.user_key().to_vec()),
        Some(b"b".to_vec())
    );
    assert_eq!(set.compact_pointer(2), None);
    // The number allocated but never logged may be handed out again; nothing before it is.
    assert_eq!(set.new_file_number(), next);

    // The first edit after recovery starts a new manifest and removes the old one.
    set.log_and_apply(VersionEdit::default()).unwrap();
    assert!(set.manifest_number() > next);
    let names = FsStorage::new().list(dir.path()).unwrap();
    let manifests: Vec<_> = names
        .iter()
        .filter(|n| n.starts_with("MANIFEST-"))
        .collect();
    assert_eq!(manifests, vec![&manifest_file_name(set.manifest_number())]);
    drop(set);
    let set = VersionSet::recover(fs(), dir.path(), 4, 1 << 20).unwrap();
    assert_eq!(*set.current(), *before);
}

#[test]
fn create_refuses_existing_database_and_zero_levels() {
    let dir = tempfile::tempdir().unwrap();
    drop(VersionSet::create(fs(), dir.path(), 2, 1 << 20).unwrap());
    assert!(matches!(
        VersionSet::create(fs(), dir.path(), 2, 1 << 20),
        Err(Error::InvalidArgument(_))
    ));
    let other = tempfile::tempdir().unwrap();
    assert!(VersionSet::create(fs(), other.path(), 0, 1 << 20).is_err());
    // Recovering with fewer levels than the manifest uses is the caller's mistake.
    let mut set = VersionSet::recover(fs(), dir.path(), 2, 1 << 20).unwrap();
    let n = set.new_file_number();
    set.log_and_apply(add(1, meta(n, b"a", b"b", 1))).unwrap();
    drop(set);
    assert!(matches!(
        VersionSet::recover(fs(), dir.path(), 1, 1 << 20),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn rollover_then_recover() {
    let dir = tempfile::tempdir().unwrap();
    let mut set = VersionSet::create(fs(), dir.path(), 3, 64).unwrap();
    let mut manifests = vec![set.manifest_number()];
    for i in 0..20u64 {
        let n = set.new_file_number();
        let k = format!("k{i:03}");
        set.set_last_sequence(i + 1);
        set.log_and_apply(add(1, meta(n, k.as_bytes(), k.as_bytes(), i + 1)))
            .unwrap();
        manifests.push(set.manifest_number());
    }
    manifests.dedup();
    assert!(
        manifests.len() > 3,
        "the manifest rolled over: {manifests:?}"
    );
    let names = FsStorage::new().list(dir.path()).unwrap();
    assert_eq!(
        names.iter().filter(|n| n.starts_with("MANIFEST-")).count(),
        1
    );
    let before = set.current();
    drop(set);
    let set = VersionSet::recover(fs(), dir.path(), 3, 64).unwrap();
    assert_eq!(*set.current(), *before);
    assert_eq!(set.current().files(1).len(), 20);
    assert_eq!(set.last_sequence(), 20);
}

/// Creates a database with three logged edits and returns the manifest path and the
/// offsets where each record starts.
fn three_edit_db(dir: &Path) -> (std::path::PathBuf, Vec<u64>) {
    let (_, path, offsets) = three_edit_set(dir);
    (path, offsets)
}

/// [`three_edit_db`], the version set still open.
fn three_edit_set(dir: &Path) -> (VersionSet, std::path::PathBuf, Vec<u64>) {
    let mut set = VersionSet::create(fs(), dir, 3, 1 << 20).unwrap();
    let path = dir.join(manifest_file_name(set.manifest_number()));
    let mut offsets = Vec::new();
    for i in 0..3u64 {
        offsets.push(std::fs::metadata(&path).unwrap().len());
        let n = set.new_file_number();
        let k = [b'a' + i as u8];
        set.log_and_apply(add(1, meta(n, &k, &k, 1))).unwrap();
    }
    (set, path, offsets)
}

#[test]
fn flipped_byte_in_the_middle_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let (path, offsets) = three_edit_db(dir.path());
    let data = std::fs::read(&path).unwrap();
    // Inside the second record's header checksum, then inside its payload.
    for delta in [9, 16] {
        let mut bad = data.clone();
        bad[offsets[1] as usize + delta] ^= 0x40;
        std::fs::write(&path, &bad).unwrap();
        match VersionSet::recover(fs(), dir.path(), 3, 1 << 20) {
            Err(Error::Corruption { file, offset, .. }) => {
                assert_eq!(file, path);
                assert_eq!(offset, offsets[1]);
            }
            Err(e) => panic!("expected corruption, got {e}"),
            Ok(_) => panic!("expected corruption, got a version set"),
        }
    }
}

#[test]
fn length_pointing_past_the_end_in_a_middle_record_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let (path, offsets) = three_edit_db(dir.path());
    let mut data = std::fs::read(&path).unwrap();
    let at = offsets[1] as usize;
    data[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&path, &data).unwrap();
    match VersionSet::recover(fs(), dir.path(), 3, 1 << 20) {
        Err(Error::Corruption { offset, reason, .. }) => {
            assert_eq!(offset, offsets[1]);
            assert!(reason.contains("header checksum"), "{reason}");
        }
        Err(e) => panic!("expected corruption, got {e}"),
        Ok(_) => panic!("a damaged length passed for a torn tail"),
    }
}

#[test]
fn manifest_starts_with_magic_and_format_version() {
    let dir = tempfile::tempdir().unwrap();
    let (path, offsets) = three_edit_db(dir.path());
    let mut data = std::fs::read(&path).unwrap();
    assert_eq!(&data[..8], b"TMNF\x02\x00\x00\x00");
    assert_eq!(
        offsets[0],
        8 + 12 + u64::from(u32::from_le_bytes(data[8..12].try_into().unwrap()))
    );
    let header_crc = crc32c::crc32c(&data[8..16]).to_le_bytes();
    assert_eq!(data[16..20], header_crc);
    // The worked example of docs/formats/manifest.md.
    assert_eq!(
        crc32c::crc32c(&[0x4b, 0, 0, 0, 0xa0, 0x33, 0x4f, 0x3b]),
        0x401e_4f21
    );
    data[4] = 3;
    std::fs::write(&path, &data).unwrap();
    assert!(matches!(
        VersionSet::recover(fs(), dir.path(), 3, 1 << 20),
        Err(Error::Unsupported(_))
    ));
    data[4] = 2;
    data[0] = b'X';
    std::fs::write(&path, &data).unwrap();
    assert!(VersionSet::recover(fs(), dir.path(), 3, 1 << 20)
        .err()
        .is_some_and(|e| e.is_corruption()));
}

/// A crash that loses a page in the middle of the final, unsynced record (the pages after
/// it written) is a torn write: recovery keeps every earlier edit. A flipped byte in the
/// same record, or a lost page in a record that a whole one follows, is corruption.
#[test]
fn lost_page_inside_the_final_record_is_a_torn_write() {
    let dir = tempfile::tempdir().unwrap();
    let (mut set, path, offsets) = three_edit_set(dir.path());
    let big = vec![b'z'; 3 * 4096];
    let n = set.new_file_number();
    let last = std::fs::metadata(&path).unwrap().len() as usize;
    set.log_and_apply(add(1, meta(n, &big, &big, 1))).unwrap();
    drop(set);
    let data = std::fs::read(&path).unwrap();
    let page = (last / 4096 + 1) * 4096;
    assert!(page + 4096 < data.len(), "the final record spans pages");
    let recovered_keys = |bytes: &[u8]| {
        std::fs::write(&path, bytes).unwrap();
        VersionSet::recover(fs(), dir.path(), 3, 1 << 20).map(|set| {
            set.current()
                .files(1)
                .iter()
                .map(|f| f.smallest_user_key().to_vec())
                .collect::<Vec<_>>()
        })
    };
    let three = vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()];
    // The first page of the record lost, then a later one.
    for lost in [last - last % 4096, page] {
        let mut torn = data.clone();
        let from = lost.max(last);
        torn[from..lost + 4096].fill(0);
        assert_eq!(recovered_keys(&torn).unwrap(), three, "page at {lost}");
    }
    let mut flipped = data.clone();
    flipped[page + 100] ^= 0x01;
    assert!(recovered_keys(&flipped).is_err_and(|e| e.is_corruption()));
    // A lost page inside the second edit, with the third and fourth whole after it.
    let mut middle = data.clone();
    middle[offsets[1] as usize..offsets[2] as usize].fill(0);
    assert!(recovered_keys(&middle).is_err_and(|e| e.is_corruption()));
}

#[test]
fn truncated_last_record_recovers_earlier_state() {
    let dir = tempfile::tempdir().unwrap();
    let (path, offsets) = three_edit_db(dir.path());
    let data = std::fs::read(&path).unwrap();
    let mut zero_tail = data[..offsets[2] as usize].to_vec();
    zero_tail.extend_from_slice(&[0; 40]);
    let cuts = [
        offsets[2] + 3,
        offsets[2] + 11,
        offsets[2] + 12,
        offsets[2] + 13,
    ];
    let mut cases: Vec<Vec<u8>> = cuts.iter().map(|&c| data[..c as usize].to_vec()).collect();
    cases.push(data[..data.len() - 1].to_vec());
    cases.push(zero_tail);
    for (i, case) in cases.iter().enumerate() {
        std::fs::write(&path, case).unwrap();
        let set = VersionSet::recover(fs(), dir.path(), 3, 1 << 20).unwrap();
        let keys: Vec<_> = set
            .current()
            .files(1)
            .iter()
            .map(|f| f.smallest_user_key().to_vec())
            .collect();
        assert_eq!(keys, vec![b"a".to_vec(), b"b".to_vec()], "case {i}");
    }
    // Nothing complete at all is corruption, as is a damaged CURRENT.
    for cut in [5, 8, 8 + 12] {
        std::fs::write(&path, &data[..cut]).unwrap();
        assert!(
            VersionSet::recover(fs(), dir.path(), 3, 1 << 20)
                .err()
                .is_some_and(|e| e.is_corruption()),
            "cut at {cut}"
        );
    }
    std::fs::write(dir.path().join(CURRENT_FILE_NAME), b"MANIFEST-x\n").unwrap();
    assert!(VersionSet::recover(fs(), dir.path(), 3, 1 << 20)
        .err()
        .is_some_and(|e| e.is_corruption()));
}

#[test]
fn live_files_include_versions_held_by_readers() {
    let dir = tempfile::tempdir().unwrap();
    let mut set = VersionSet::create(fs(), dir.path(), 2, 1 << 20).unwrap();
    let n = set.new_file_number();
    set.log_and_apply(add(0, meta(n, b"a", b"b", 1))).unwrap();
    let held = set.current();
    let m = set.new_file_number();
    set.log_and_apply(VersionEdit {
        deleted_files: vec![(0, n)],
        new_files: vec![(1, meta(m, b"a", b"b", 1))],
        ..VersionEdit::default()
    })
    .unwrap();
    assert_eq!(set.live_files(), [n, m].into_iter().collect());
    drop(held);
    assert_eq!(set.live_files(), [m].into_iter().collect());
}

#[test]
fn failed_sync_installs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fault = FaultStorage::new(fs());
    let storage: Arc<dyn Storage> = Arc::new(fault.clone());
    let mut set = VersionSet::create(storage.clone(), dir.path(), 2, 1 << 20).unwrap();
    let n = set.new_file_number();
    set.log_and_apply(add(0, meta(n, b"a", b"b", 1))).unwrap();
    let before = set.current();

    fault.set_fail_syncs(true);
    let m = set.new_file_number();
    assert!(set.log_and_apply(add(0, meta(m, b"c", b"d", 2))).is_err());
    assert!(Arc::ptr_eq(&set.current(), &before));
    // Rolling over to a new manifest fails the same way and installs nothing either.
    assert!(set.log_and_apply(add(0, meta(m, b"c", b"d", 2))).is_err());
    assert!(Arc::ptr_eq(&set.current(), &before));

    fault.set_fail_syncs(false);
    set.log_and_apply(add(0, meta(m, b"c", b"d", 2))).unwrap();
    assert_eq!(numbers(set.current().files(0)), vec![m, n]);
    drop(set);
    fault.simulate_crash().unwrap();
    let set = VersionSet::recover(storage, dir.path(), 2, 1 << 20).unwrap();
    assert_eq!(numbers(set.current().files(0)), vec![m, n]);
    assert!(fault.io_stats().get(IoClass::Manifest).sync_ops > 0);
}

#[test]
fn file_names_round_trip() {
    assert_eq!(manifest_file_name(1), "MANIFEST-000001");
    assert_eq!(table_file_name(123), "000123.sst");
    assert_eq!(wal_file_name(1234567), "1234567.log");
    let cases = [
        ("MANIFEST-000001", Some((FileKind::Manifest, 1))),
        ("000123.sst", Some((FileKind::Table, 123))),
        ("1234567.log", Some((FileKind::Wal, 1234567))),
        ("CURRENT", Some((FileKind::Current, 0))),
        ("LOCK", Some((FileKind::Lock, 0))),
        ("CURRENT.tmp", Some((FileKind::Temp, 0))),
        ("000009.tmp", Some((FileKind::Temp, 9))),
        ("MANIFEST-", None),
        ("MANIFEST-12a", None),
        ("+12.sst", None),
        ("12.txt", None),
        ("notes.tmp", None),
        ("99999999999999999999999.sst", None),
    ];
    for (name, want) in cases {
        assert_eq!(parse_file_name(name), want, "{name}");
    }
}

#[test]
fn every_flipped_manifest_byte_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (path, offsets) = three_edit_db(dir.path());
    let data = std::fs::read(&path).unwrap();
    // Record starts: the snapshot record right after the file header, then the three edits.
    let mut starts = vec![8u64];
    starts.extend(&offsets);
    for i in 0..data.len() {
        let mut bad = data.clone();
        bad[i] ^= 0x01;
        std::fs::write(&path, &bad).unwrap();
        let record = starts.iter().rev().find(|&&s| s <= i as u64).copied();
        match VersionSet::recover(fs(), dir.path(), 3, 1 << 20) {
            Err(Error::Corruption { file, offset, .. }) => {
                assert_eq!(file, path);
                assert_eq!(Some(offset), record.or(Some(0)), "byte {i}");
            }
            Err(Error::Unsupported(_)) => assert!((4..8).contains(&i), "byte {i}"),
            Err(e) => panic!("byte {i}: unexpected error {e}"),
            // A damaged length can no longer pass for a torn final write, in any record.
            Ok(_) => panic!("byte {i} flipped but recovery succeeded"),
        }
    }
}

/// An edit's bytes as written before the integer coding moved to `crate::coding`
/// (length and CRC32C): the move must not change one byte.
#[test]
fn edit_bytes_match_the_format_before_the_shared_integer_coding() {
    let bytes = full_edit().encode();
    assert_eq!((bytes.len(), crc32c::crc32c(&bytes)), (154, 0x4a7d_b999));
    assert_eq!(
        VersionEdit::decode(&bytes, Path::new(F), 0).unwrap(),
        full_edit()
    );
}

/// The log number never moves backwards: an edit naming an older log is refused and
/// changes nothing; naming the same log again is accepted.
#[test]
fn an_edit_moving_the_log_number_backwards_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut set = VersionSet::create(fs(), dir.path(), 4, 1 << 20).unwrap();
    set.log_and_apply(VersionEdit {
        log_number: Some(10),
        ..VersionEdit::default()
    })
    .unwrap();
    let err = set
        .log_and_apply(VersionEdit {
            log_number: Some(9),
            ..VersionEdit::default()
        })
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert_eq!(set.log_number(), 10);
    set.log_and_apply(VersionEdit {
        log_number: Some(10),
        ..VersionEdit::default()
    })
    .unwrap();
    assert_eq!(set.log_number(), 10);
}
