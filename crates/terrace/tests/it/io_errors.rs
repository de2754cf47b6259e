//! Disk-full and I/O errors injected on every write and read path (fault storage rules):
//! a write error makes the database read-only with an error naming the file, no
//! acknowledged write is lost, `Db::resume` (or the automatic recovery, once space
//! returns) makes it writable again, and a read error reaches the caller instead of a
//! wrong value.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use terrace::storage::{FaultOp, FaultRule, FaultStorage, FsStorage, InjectedError, IoClass};
use terrace::{Db, Error, Options};

fn options(fault: &FaultStorage, auto_resume: bool) -> Options {
    Options {
        storage: Arc::new(fault.clone()),
        max_bgerror_resume_count: if auto_resume { u32::MAX } else { 0 },
        bgerror_resume_retry_interval: Duration::from_millis(20),
        ..crate::small_options()
    }
}

/// Keys in scattered order, so that compactions rewrite files rather than move them.
fn key(i: u32) -> Vec<u8> {
    let scattered = u64::from(i).wrapping_mul(2_654_435_761) % 4_294_967_291;
    format!("key{scattered:010}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    let mut v = format!("value{i}-").into_bytes();
    v.resize(120, b'v');
    v
}

fn errno(e: &Error) -> Option<i32> {
    match e {
        Error::Io { source, .. } => source.raw_os_error(),
        Error::Background(inner) => errno(inner),
        _ => None,
    }
}

/// Writes keys from `from` until one fails or `to` is reached; returns the acknowledged
/// ones and the error.
fn write_until_error(
    db: &Db,
    model: &mut BTreeMap<Vec<u8>, Vec<u8>>,
    from: u32,
    to: u32,
) -> Option<Error> {
    for i in from..to {
        match db.put(&key(i), &value(i)) {
            Ok(()) => {
                model.insert(key(i), value(i));
            }
            Err(e) => return Some(e),
        }
    }
    None
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(crate::scan_all(db), want);
}

/// Waits until the database is writable again (the automatic recovery ran to its end).
fn wait_resumed(db: &Db) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while db.background_error().is_some() || db.stats().resumes == 0 {
        assert!(Instant::now() < deadline, "no automatic recovery");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// One path: arm `rule`, write until the database refuses, check the error and that
/// nothing acknowledged is lost; then free the space and resume (manually or not), write
/// more, and reopen.
fn read_only_then_resumed(rule: FaultRule, names: &str, auto: bool) {
    let dir = tempfile::tempdir().unwrap();
    let fault = FaultStorage::new(Arc::new(FsStorage::new()));
    let db = Db::open(dir.path(), options(&fault, auto)).unwrap();
    let mut model = BTreeMap::new();
    assert!(write_until_error(&db, &mut model, 0, 2000).is_none());
    let want_errno = match rule.error {
        InjectedError::NoSpace => libc::ENOSPC,
        InjectedError::Io => libc::EIO,
    };
    fault.inject(rule);
    // Writes go on until the failing path is reached (a flush, a manifest write), then
    // every write is refused: the database is read-only.
    let err = write_until_error(&db, &mut model, 2000, 200_000).expect("no write failed");
    let bg = db.background_error().expect("no background error recorded");
    assert_eq!(errno(&bg), Some(want_errno), "{bg}");
    assert!(
        bg.to_string().contains(names),
        "the error names no {names} file: {bg}"
    );
    assert!(errno(&err) == Some(want_errno), "{err}");
    assert!(
        db.put(b"refused", b"x").is_err(),
        "a read-only database took a write"
    );
    assert_eq!(db.stats().background_error, Some(bg.to_string()));
    // Reads go on, and nothing acknowledged is missing.
    check(&db, &model);

    fault.clear_faults();
    if auto {
        wait_resumed(&db);
    } else {
        db.resume().unwrap();
    }
    assert!(db.background_error().is_none());
    assert!(db.stats().resumes >= 1);
    let n = model.len() as u32;
    assert!(write_until_error(&db, &mut model, 300_000, 300_000 + n.min(3000)).is_none());
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    check(&db, &model);
    db.close().unwrap();
    let db = Db::open(dir.path(), crate::small_options()).unwrap();
    check(&db, &model);
}

#[test]
fn a_full_device_under_the_log_makes_the_database_read_only_until_resumed() {
    read_only_then_resumed(
        FaultRule::new(&[FaultOp::Append, FaultOp::Sync], InjectedError::NoSpace).on_paths(".log"),
        ".log",
        false,
    );
}

#[test]
fn a_full_device_under_a_flush_recovers_by_itself_once_space_returns() {
    read_only_then_resumed(
        FaultRule::new(&[FaultOp::Create, FaultOp::Append], InjectedError::NoSpace)
            .of_class(IoClass::Flush),
        ".sst",
        true,
    );
}

#[test]
fn a_full_device_under_the_manifest_makes_the_database_read_only_until_resumed() {
    read_only_then_resumed(
        FaultRule::new(&[FaultOp::Append, FaultOp::Sync], InjectedError::NoSpace)
            .on_paths("MANIFEST"),
        "MANIFEST",
        false,
    );
}

#[test]
fn an_io_error_under_a_compaction_is_not_retried_but_can_be_resumed() {
    read_only_then_resumed(
        FaultRule::new(
            &[FaultOp::Create, FaultOp::Append, FaultOp::Sync],
            InjectedError::Io,
        )
        .of_class(IoClass::Compaction),
        ".sst",
        false,
    );
}

#[test]
fn an_io_error_is_not_resumed_automatically() {
    let dir = tempfile::tempdir().unwrap();
    let fault = FaultStorage::new(Arc::new(FsStorage::new()));
    let db = Db::open(dir.path(), options(&fault, true)).unwrap();
    let mut model = BTreeMap::new();
    fault.inject(FaultRule::new(&[FaultOp::Create], InjectedError::Io).of_class(IoClass::Flush));
    assert!(write_until_error(&db, &mut model, 0, 200_000).is_some());
    fault.clear_faults();
    // Many retry intervals later the database is still read-only: EIO is not retried.
    std::thread::sleep(Duration::from_millis(200));
    assert!(db.background_error().is_some());
    db.resume().unwrap();
    db.put(b"after", b"resume").unwrap();
    check(&db, &{
        let mut m = model.clone();
        m.insert(b"after".to_vec(), b"resume".to_vec());
        m
    });
}

#[test]
fn a_resume_that_fails_leaves_the_database_read_only_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fault = FaultStorage::new(Arc::new(FsStorage::new()));
    let db = Db::open(dir.path(), options(&fault, false)).unwrap();
    let mut model = BTreeMap::new();
    fault.inject(
        FaultRule::new(&[FaultOp::Create], InjectedError::NoSpace).of_class(IoClass::Flush),
    );
    assert!(write_until_error(&db, &mut model, 0, 200_000).is_some());
    // Still full: the resume's flush fails the same way.
    let e = db.resume().unwrap_err();
    assert_eq!(errno(&e), Some(libc::ENOSPC), "{e}");
    assert!(db.background_error().is_some());
    assert!(db.put(b"refused", b"x").is_err());
    fault.clear_faults();
    db.resume().unwrap();
    check(&db, &model);
    db.close().unwrap();
    let db = Db::open(dir.path(), crate::small_options()).unwrap();
    check(&db, &model);
}

#[test]
fn read_errors_reach_the_caller_never_a_wrong_value() {
    let dir = tempfile::tempdir().unwrap();
    let fault = FaultStorage::new(Arc::new(FsStorage::new()));
    let opts = Options {
        block_cache_bytes: 0,
        ..options(&fault, false)
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let mut model = BTreeMap::new();
    assert!(write_until_error(&db, &mut model, 0, 3000).is_none());
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    fault.inject(
        FaultRule::new(&[FaultOp::Read], InjectedError::Io)
            .on_paths(".sst")
            .of_class(IoClass::Foreground),
    );
    for i in (0..3000).step_by(97) {
        match db.get(&key(i)) {
            Err(e) => assert_eq!(errno(&e), Some(libc::EIO), "{e}"),
            Ok(v) => panic!("a read that failed returned {v:?}"),
        }
    }
    let mut it = db.iter(terrace::ReadOptions::default()).unwrap();
    assert!(
        it.seek_to_first().is_err(),
        "an iterator over unreadable tables went on"
    );
    // Reads are not a background error: the database stays writable.
    assert!(db.background_error().is_none());
    db.put(b"still", b"writable").unwrap();
    fault.clear_faults();
    model.insert(b"still".to_vec(), b"writable".to_vec());
    check(&db, &model);
}

#[test]
fn a_manual_compaction_error_goes_to_the_caller_and_leaves_the_database_writable() {
    let dir = tempfile::tempdir().unwrap();
    let fault = FaultStorage::new(Arc::new(FsStorage::new()));
    let opts = Options {
        // Only the manual compaction compacts.
        level0_file_num_compaction_trigger: 1000,
        level0_slowdown_writes_trigger: 1000,
        level0_stop_writes_trigger: 1000,
        ..options(&fault, false)
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let mut model = BTreeMap::new();
    assert!(write_until_error(&db, &mut model, 0, 3000).is_none());
    db.flush().unwrap();
    fault.inject(
        FaultRule::new(&[FaultOp::Create], InjectedError::NoSpace).of_class(IoClass::Compaction),
    );
    let e = db.compact_range(None, None).unwrap_err();
    assert_eq!(errno(&e), Some(libc::ENOSPC), "{e}");
    assert!(
        db.background_error().is_none(),
        "a manual compaction's error stopped writes"
    );
    db.put(b"still", b"writable").unwrap();
    model.insert(b"still".to_vec(), b"writable".to_vec());
    fault.clear_faults();
    db.compact_range(None, None).unwrap();
    check(&db, &model);
}

#[test]
fn a_checkpoint_that_fails_leaves_nothing_behind_and_a_retry_succeeds() {
    let tmp = tempfile::tempdir().unwrap();
    let fault = FaultStorage::new(Arc::new(FsStorage::new()));
    let db = Db::open(tmp.path().join("db"), options(&fault, false)).unwrap();
    let mut model = BTreeMap::new();
    assert!(write_until_error(&db, &mut model, 0, 3000).is_none());
    let cp = tmp.path().join("cp");
    fault.inject(
        FaultRule::new(&[FaultOp::Create, FaultOp::Link], InjectedError::NoSpace)
            .on_paths("checkpoint-tmp")
            .after(2),
    );
    fault.inject(FaultRule::new(&[FaultOp::Link], InjectedError::NoSpace).after(1));
    assert!(db.checkpoint(&cp).is_err());
    assert!(!cp.exists());
    assert!(db.background_error().is_none());
    fault.clear_faults();
    db.checkpoint(&cp).unwrap();
    drop(db);
    let copy = Db::open(&cp, crate::small_options()).unwrap();
    check(&copy, &model);
}

/// A write that fails half-way through its log record, with nothing else unflushed: the
/// resume must record the new log in the MANIFEST itself (no flush will), or the next open
/// would replay the torn log followed by one holding writes, and refuse it.
#[test]
fn a_resume_after_a_torn_record_with_nothing_unflushed_moves_past_the_torn_log() {
    let dir = tempfile::tempdir().unwrap();
    let fault = FaultStorage::new(Arc::new(FsStorage::new()));
    let db = Db::open(dir.path(), options(&fault, false)).unwrap();
    let mut model = BTreeMap::new();
    assert!(write_until_error(&db, &mut model, 0, 100).is_none());
    db.flush().unwrap();
    // The record's header reaches the log, its payload does not.
    fault.inject(
        FaultRule::new(&[FaultOp::Append], InjectedError::NoSpace)
            .on_paths(".log")
            .after(1)
            .times(1),
    );
    assert!(db.put(b"torn", b"never acknowledged").is_err());
    db.resume().unwrap();
    assert!(write_until_error(&db, &mut model, 100, 150).is_none());
    db.close().unwrap();
    let db = Db::open(dir.path(), crate::small_options()).unwrap();
    check(&db, &model);
}

/// A persist of the matrix level 0's region fails (an I/O error of the persistent-memory
/// device): the flush fails, the database is read-only with an error naming the region,
/// nothing acknowledged is lost, and a resume flushes again.
#[test]
fn a_failed_region_persist_makes_the_database_read_only_until_resumed() {
    use terrace::storage::{PointFilter, PointKind, PowerSupply};
    let tmp = tempfile::tempdir().unwrap();
    let power = Arc::new(PowerSupply::new());
    let fault = FaultStorage::with_power(Arc::new(FsStorage::new()), power.clone());
    let mut m = crate::matrix_options(tmp.path(), 256 << 10, terrace::pmem::PmemMode::Shadow);
    m.power = Some(power.clone());
    let opts = Options {
        write_buffer_size: 8 << 10,
        level0: Arc::new(terrace::level0::MatrixLevel0::new(m).unwrap()),
        ..options(&fault, false)
    };
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, opts).unwrap();
    let mut model = BTreeMap::new();
    assert!(write_until_error(&db, &mut model, 0, 300).is_none());
    power.fail_points(PointFilter::any().of_kinds(&[PointKind::Persist]), 1);
    assert!(write_until_error(&db, &mut model, 300, 200_000).is_some());
    let bg = db.background_error().expect("no background error");
    assert_eq!(errno(&bg), Some(libc::EIO), "{bg}");
    assert!(bg.to_string().contains("region.pmem"), "{bg}");
    check(&db, &model);
    db.resume().unwrap();
    assert!(write_until_error(&db, &mut model, 300_000, 300_500).is_none());
    db.flush().unwrap();
    check(&db, &model);
    db.close().unwrap();
    let mut m = crate::matrix_options(tmp.path(), 256 << 10, terrace::pmem::PmemMode::Shadow);
    m.power = None;
    let opts = Options {
        write_buffer_size: 8 << 10,
        level0: Arc::new(terrace::level0::MatrixLevel0::new(m).unwrap()),
        ..crate::small_options()
    };
    let db = Db::open(&dir, opts).unwrap();
    check(&db, &model);
}
