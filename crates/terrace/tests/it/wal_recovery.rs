//! Write-ahead-log recovery modes: what an open does with damage in a log, by where the
//! damage lies (docs/formats/wal.md, "Recovery modes").

use std::path::{Path, PathBuf};

use terrace::storage::{FsStorage, IoClass, Storage};
use terrace::wal::{FileLogWriter, LogWriter};
use terrace::{Db, Options, WalRecoveryMode, WriteBatch};

fn key(i: u32) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i}-padding-padding").into_bytes()
}

fn strict() -> Options {
    Options {
        wal_recovery_mode: WalRecoveryMode::TolerateCorruptedTailRecords,
        ..Options::default()
    }
}

fn point_in_time() -> Options {
    Options {
        wal_recovery_mode: WalRecoveryMode::PointInTime,
        ..Options::default()
    }
}

/// Writes `n` keys that stay in the log (no flush) and closes the database; returns the
/// log holding them (over 100 KiB: four 32 KiB blocks).
fn unflushed_log(dir: &Path, n: u32) -> PathBuf {
    let db = Db::open(dir, Options::default()).unwrap();
    for i in 0..n {
        db.put(&key(i), &value(i)).unwrap();
    }
    db.close().unwrap();
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    let log = logs.pop().unwrap();
    assert!(std::fs::metadata(&log).unwrap().len() > 3 * 32768);
    log
}

/// Overwrites `len` bytes of `path` at `offset` with zeros: a page a power cut lost
/// below one that reached the device.
fn zero(path: &Path, offset: usize, len: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[offset..offset + len].fill(0);
    std::fs::write(path, bytes).unwrap();
}

/// The number in a log's file name.
fn log_number(log: &Path) -> u64 {
    log.file_stem().unwrap().to_str().unwrap().parse().unwrap()
}

/// Writes a log numbered after `log` holding one batch with sequence `seq`.
fn later_log(log: &Path, seq: u64, put: bool) -> PathBuf {
    let path = log.with_file_name(format!("{:06}.log", log_number(log) + 1));
    let fs = FsStorage::new();
    let mut w = FileLogWriter::new(fs.create(&path, IoClass::Wal).unwrap());
    if put {
        let mut b = WriteBatch::new();
        b.put(b"later", b"write");
        b.set_sequence(seq);
        w.add_record(b.data()).unwrap();
    }
    w.sync().unwrap();
    path
}

/// Asserts that `db` holds exactly the keys `0..n` for some `n` in `1..total` (a strict
/// prefix) and returns `n`.
fn prefix_len(db: &Db, total: u32) -> u32 {
    let all = crate::scan_all(db);
    let n = all.len() as u32;
    assert!(n > 0 && n < total, "{n} of {total} keys");
    for (i, (k, v)) in all.iter().enumerate() {
        assert_eq!(k, &key(i as u32));
        assert_eq!(v, &value(i as u32));
    }
    n
}

/// A page of zeros in the middle of the newest log, with intact records after it in later
/// blocks, is what a power cut leaves of an unsynced tail on a file system that exposes
/// holes: the default keeps the records before it and opens; the strict mode refuses.
#[test]
fn a_zeroed_page_mid_tail_of_the_newest_log_keeps_the_prefix_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let log = unflushed_log(dir.path(), 2000);
    zero(&log, 4 * 4096, 4096);
    let err = Db::open(dir.path(), strict()).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let n = prefix_len(&db, 2000);
    assert!(n < 400, "only records before byte 16384 are kept: {n}");
    assert_eq!(db.stats().wal_records_dropped, 1);
    // The dropped records are gone for good: the next open finds what this one kept.
    db.close().unwrap();
    let db = Db::open(dir.path(), strict()).unwrap();
    assert_eq!(prefix_len(&db, 2000), n);
}

/// Writes move to a new log only after the old one is synced: damage in a log followed by
/// a log holding writes is damage in synced data, and every mode refuses to open rather
/// than drop the writes after it.
#[test]
fn damage_in_an_older_log_followed_by_a_log_holding_writes_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let log = unflushed_log(dir.path(), 2000);
    later_log(&log, 10_000, true);
    zero(&log, 4 * 4096, 4096);
    for (what, opts) in [
        ("default", Options::default()),
        ("point in time", point_in_time()),
        ("strict", strict()),
    ] {
        let err = Db::open(dir.path(), opts).unwrap_err();
        match &err {
            terrace::Error::Corruption { file, reason, .. } => {
                assert_eq!(file, &log, "{what}");
                assert!(reason.contains("synced data"), "{what}: {reason}");
            }
            other => panic!("{what}: {other}"),
        }
    }
    // Even a torn last record: the older log was whole when writes moved on.
    let dir = tempfile::tempdir().unwrap();
    let log = unflushed_log(dir.path(), 2000);
    later_log(&log, 10_000, true);
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(&log, &bytes[..bytes.len() - 10]).unwrap();
    for opts in [Options::default(), strict()] {
        assert!(Db::open(dir.path(), opts).unwrap_err().is_corruption());
    }
}

/// A later log that holds nothing (one started after a failed write) does not make the
/// damage before it synced data: the damaged log is the newest that holds anything.
#[test]
fn damage_followed_only_by_empty_logs_is_the_newest_logs_tail() {
    let dir = tempfile::tempdir().unwrap();
    let log = unflushed_log(dir.path(), 2000);
    later_log(&log, 10_000, false);
    zero(&log, 4 * 4096, 4096);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    prefix_len(&db, 2000);
    assert_eq!(db.stats().wal_records_dropped, 1);
}

#[test]
fn the_default_recovery_mode_is_point_in_time() {
    assert_eq!(
        Options::default().wal_recovery_mode,
        WalRecoveryMode::PointInTime
    );
}
