//! `Options::wal_dir`: write-ahead logs in a directory of their own. Logs are created,
//! replayed and collected there; checkpoints copy them into a self-contained directory;
//! logs left in the database directory by an open without `wal_dir` are replayed; a
//! database last opened with another `wal_dir` refuses to open instead of losing writes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use terrace::storage::{FaultStorage, FsStorage};
use terrace::{Db, Error, Options, WriteOptions};

use crate::crash_inproc::{self, Check, Layout};
use crate::{open, scan_all, small_options};

fn logs_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    out.sort();
    out
}

fn with_wal_dir(wal: &Path) -> Options {
    Options {
        wal_dir: Some(wal.to_path_buf()),
        ..small_options()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn put_range(db: &Db, range: std::ops::Range<u32>) {
    for i in range {
        db.put(&key(i), format!("value{i}").as_bytes()).unwrap();
    }
}

fn assert_holds(db: &Db, range: std::ops::Range<u32>) {
    let got = scan_all(db);
    assert_eq!(got.len(), range.len());
    for (i, (k, v)) in range.zip(got) {
        assert_eq!(k, key(i));
        assert_eq!(v, format!("value{i}").into_bytes());
    }
}

#[test]
fn logs_go_to_wal_dir_and_are_replayed_from_there() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, wal) = (tmp.path().join("db"), tmp.path().join("fast").join("wal"));
    let db = open(&dir, with_wal_dir(&wal));
    put_range(&db, 0..50);
    db.close().unwrap();
    assert!(logs_in(&dir).is_empty(), "a log in the database directory");
    assert_eq!(logs_in(&wal).len(), 1);
    assert!(
        dir.join("LOCK").exists(),
        "the LOCK stays in the database directory"
    );
    assert!(!wal.join("LOCK").exists());

    let db = open(&dir, with_wal_dir(&wal));
    assert_holds(&db, 0..50);
    put_range(&db, 50..60);
    drop(db);
    let db = open(&dir, with_wal_dir(&wal));
    assert_holds(&db, 0..60);
}

#[test]
fn obsolete_logs_are_removed_from_wal_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, wal) = (tmp.path().join("db"), tmp.path().join("wal"));
    let db = open(&dir, with_wal_dir(&wal));
    // About 40 memtables' worth: many log switches and flushes.
    put_range(&db, 0..20_000);
    db.flush().unwrap();
    // A flush deletes the logs it made obsolete after it reports completion; closing
    // waits for the flush threads.
    drop(db);
    assert_eq!(logs_in(&wal).len(), 1, "only the live log is left");
    assert!(logs_in(&dir).is_empty());
    // Reopening replays the live log into a table file and starts a new one.
    let db = open(&dir, with_wal_dir(&wal));
    assert_eq!(logs_in(&wal).len(), 1);
    assert_holds(&db, 0..20_000);
}

#[test]
fn wal_dir_may_be_the_database_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = open(&dir, with_wal_dir(&dir));
    put_range(&db, 0..30);
    drop(db);
    assert_eq!(logs_in(&dir).len(), 1);
    let db = open(&dir, small_options());
    assert_holds(&db, 0..30);
    drop(db);
    // Another spelling of the same directory.
    let db = open(&dir, with_wal_dir(&dir.join(".")));
    assert_holds(&db, 0..30);
}

#[test]
fn checkpoint_with_wal_dir_opens_as_a_plain_database() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, wal) = (tmp.path().join("db"), tmp.path().join("wal"));
    let db = open(&dir, with_wal_dir(&wal));
    put_range(&db, 0..3000);
    let cp = tmp.path().join("cp");
    db.checkpoint(&cp).unwrap();
    put_range(&db, 3000..3100);
    drop(db);
    std::fs::remove_dir_all(&wal).unwrap();
    assert!(!logs_in(&cp).is_empty(), "the checkpoint holds its own log");
    let copy = open(&cp, small_options());
    assert_holds(&copy, 0..3000);
}

/// Writes that race a checkpoint land in the live log after its flush; the checkpoint
/// copies that log, so it holds every write acknowledged before it was taken and, of
/// the rest, a prefix.
#[test]
fn checkpoint_copies_the_live_log_consistently() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, wal) = (tmp.path().join("db"), tmp.path().join("wal"));
    let db = open(&dir, with_wal_dir(&wal));
    let acked = AtomicU32::new(0);
    let cp = tmp.path().join("cp");
    let before = std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..6000 {
                db.put(&key(i), format!("value{i}").as_bytes()).unwrap();
                acked.store(i + 1, Ordering::SeqCst);
            }
        });
        while acked.load(Ordering::SeqCst) < 2000 {
            std::thread::yield_now();
        }
        let before = acked.load(Ordering::SeqCst);
        db.checkpoint(&cp).unwrap();
        before
    });
    drop(db);
    let copy = open(&cp, small_options());
    let n = u32::try_from(scan_all(&copy).len()).unwrap();
    assert!(
        n >= before,
        "checkpoint lost acknowledged writes: {n} < {before}"
    );
    assert_holds(&copy, 0..n);
}

#[test]
fn logs_left_in_the_database_directory_are_replayed_when_wal_dir_is_set() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, wal) = (tmp.path().join("db"), tmp.path().join("wal"));
    let db = open(&dir, small_options());
    put_range(&db, 0..40);
    drop(db);
    assert_eq!(logs_in(&dir).len(), 1);

    let db = open(&dir, with_wal_dir(&wal));
    assert_holds(&db, 0..40);
    assert!(logs_in(&dir).is_empty(), "the replayed log is collected");
    assert_eq!(logs_in(&wal).len(), 1);
    put_range(&db, 40..50);
    drop(db);
    let db = open(&dir, with_wal_dir(&wal));
    assert_holds(&db, 0..50);
}

fn assert_refused(r: terrace::Result<Db>, needle: &str) {
    match r {
        Err(Error::InvalidArgument(msg)) => assert!(msg.contains(needle), "{msg}"),
        Err(e) => panic!("expected InvalidArgument, got {e}"),
        Ok(_) => panic!("opened although its logs are elsewhere"),
    }
}

#[test]
fn a_database_whose_logs_are_in_another_directory_refuses_to_open() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, wal) = (tmp.path().join("db"), tmp.path().join("wal"));
    let db = open(&dir, with_wal_dir(&wal));
    put_range(&db, 0..40);
    drop(db);

    // Without wal_dir, or with another one, the unflushed writes are out of sight.
    assert_refused(Db::open(&dir, small_options()), "wal_dir");
    assert_refused(
        Db::open(&dir, with_wal_dir(&tmp.path().join("other"))),
        "wal_dir",
    );
    // Nothing was replayed or collected meanwhile: the right wal_dir finds everything.
    let db = open(&dir, with_wal_dir(&wal));
    assert_holds(&db, 0..40);
    drop(db);

    // Moving the logs into the database directory is the documented way back.
    for log in logs_in(&wal) {
        std::fs::rename(&log, dir.join(log.file_name().unwrap())).unwrap();
    }
    let db = open(&dir, small_options());
    assert_holds(&db, 0..40);
}

#[test]
fn logs_of_a_deleted_database_are_never_replayed_into_a_new_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, wal) = (tmp.path().join("db"), tmp.path().join("wal"));
    let db = open(&dir, with_wal_dir(&wal));
    put_range(&db, 0..10);
    drop(db);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_refused(Db::open(&dir, with_wal_dir(&wal)), ".log");
}

/// The log an open creates must survive a power loss before any log switch: its
/// directory entry is synced in wal_dir, not in the database directory.
#[test]
fn synced_writes_in_the_first_log_survive_a_crash() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, wal) = (tmp.path().join("db"), tmp.path().join("wal"));
    let fault = FaultStorage::new(Arc::new(FsStorage::new()));
    let opts = Options {
        storage: Arc::new(fault.clone()),
        ..with_wal_dir(&wal)
    };
    let db = open(&dir, opts.clone());
    let sync = WriteOptions {
        sync: true,
        ..WriteOptions::default()
    };
    for i in 0..20 {
        let mut b = terrace::WriteBatch::new();
        b.put(&key(i), format!("value{i}").as_bytes());
        db.write(b, sync).unwrap();
    }
    fault.set_fail_syncs(true);
    drop(db);
    fault.set_fail_syncs(false);
    fault.simulate_crash().unwrap();
    let db = open(&dir, opts);
    assert_holds(&db, 0..20);
}

#[test]
fn crash_with_wal_dir_keeps_a_prefix_holding_every_durable_write() {
    crash_inproc::run(
        crash_inproc::cycles(),
        Check::Honest,
        Layout::SeparateWalDir,
    );
}

#[test]
fn crash_with_wal_dir_negative_control_notices_unsynced_writes_claimed_durable() {
    let out = crash_inproc::run(
        crash_inproc::cycles().max(10),
        Check::ClaimAllDurable,
        Layout::SeparateWalDir,
    );
    assert!(
        out.violations > 0,
        "the checker accepted every cycle although unsynced writes were claimed durable"
    );
}

/// Checkpoints written before checkpoints copied their logs have none; they are refused,
/// and an empty log of the name the error gives opens them as before.
#[test]
fn a_checkpoint_without_its_log_is_refused_until_the_log_is_given_back() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cp) = (tmp.path().join("db"), tmp.path().join("cp"));
    let db = open(&dir, small_options());
    put_range(&db, 0..500);
    db.checkpoint(&cp).unwrap();
    drop(db);
    let logs = logs_in(&cp);
    assert_eq!(logs.len(), 1);
    assert_eq!(std::fs::metadata(&logs[0]).unwrap().len(), 0, "all flushed");
    std::fs::remove_file(&logs[0]).unwrap();
    let name = logs[0].file_name().unwrap().to_str().unwrap();
    assert_refused(Db::open(&cp, small_options()), name);
    std::fs::write(&logs[0], b"").unwrap();
    assert_holds(&open(&cp, small_options()), 0..500);
}
