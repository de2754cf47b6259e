//! Writes made durable by an external log (`Db::write_external`, `Options::external_log`):
//! applied with their sequence numbers after the log has them, replayed at open until
//! the manifest says tables hold them, released after flushes, and kept across a power
//! cut of the engine's own files.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use terrace::storage::{FaultStorage, FsStorage, PowerSupply};
use terrace::wal::ExternalLog;
use terrace::{Db, Error, Options, WriteBatch, WriteOptions};

use crate::small_options;

/// An external log kept in memory (it outlives the databases that use it, as a
/// persistent-memory region outlives a crash): the records it holds, as the engine
/// stamped them.
#[derive(Debug, Default)]
struct MemLog {
    records: Mutex<Vec<Vec<u8>>>,
    /// Negative control: drops every record whenever told to drop any.
    releases_everything: AtomicBool,
    /// The highest `release_through` seen.
    released: Mutex<u64>,
    /// Replays newest first (the trait allows any order).
    reverse: AtomicBool,
}

impl MemLog {
    fn len(&self) -> usize {
        self.records.lock().len()
    }
}

fn last_seq(record: &[u8]) -> u64 {
    let b = WriteBatch::from_record(record.to_vec(), std::path::Path::new("mem"), 0).unwrap();
    b.sequence() + u64::from(b.count()) - 1
}

impl ExternalLog for MemLog {
    fn replay(
        &self,
        after: u64,
        apply: &mut dyn FnMut(&WriteBatch) -> terrace::Result<()>,
    ) -> terrace::Result<()> {
        let mut records = self.records.lock().clone();
        if self.reverse.load(Ordering::Relaxed) {
            records.reverse();
        }
        for r in records.iter().filter(|r| last_seq(r) > after) {
            apply(&WriteBatch::from_record(
                r.clone(),
                std::path::Path::new("mem"),
                0,
            )?)?;
        }
        Ok(())
    }

    fn release_through(&self, seq: u64) {
        let mut released = self.released.lock();
        assert!(
            seq >= *released,
            "release went back from {released} to {seq}"
        );
        *released = seq;
        if self.releases_everything.load(Ordering::Relaxed) {
            self.records.lock().clear();
        } else {
            self.records.lock().retain(|r| last_seq(r) > seq);
        }
    }
}

/// Writes `key = value` through `db` and `log`.
fn put_external(db: &Db, log: &Arc<MemLog>, key: &[u8], value: &[u8]) -> terrace::Result<u64> {
    let mut batch = WriteBatch::new();
    batch.put(key, value);
    let data = batch.data().to_vec();
    let log = log.clone();
    db.write_external(batch, move |seq| {
        let mut stamped = WriteBatch::from_record(data, std::path::Path::new("mem"), 0)?;
        stamped.set_sequence(seq);
        log.records.lock().push(stamped.data().to_vec());
        Ok(())
    })
}

fn options_with(log: &Arc<MemLog>) -> Options {
    Options {
        external_log: Some(log.clone()),
        ..small_options()
    }
}

#[test]
fn write_external_is_refused_without_an_external_log() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    let err = db
        .write_external(WriteBatch::new(), |_| Ok(()))
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}

#[test]
fn external_writes_are_read_replayed_at_open_and_released_after_a_flush() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(MemLog::default());
    let db = Db::open(dir.path(), options_with(&log)).unwrap();
    let mut seqs = Vec::new();
    for i in 0..50u32 {
        db.put(format!("n{i:03}").as_bytes(), b"logged").unwrap();
        let seq = put_external(&db, &log, format!("e{i:03}").as_bytes(), b"external").unwrap();
        seqs.push(seq);
    }
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 2), "{seqs:?}");
    assert_eq!(db.get(b"e007").unwrap().as_deref(), Some(&b"external"[..]));
    assert_eq!(log.len(), 50);
    // Closed without a flush: the engine's log holds the n keys, the external log the e
    // keys, and both come back.
    db.close().unwrap();
    let db = Db::open(dir.path(), options_with(&log)).unwrap();
    for i in 0..50u32 {
        let e = db.get(format!("e{i:03}").as_bytes()).unwrap();
        assert_eq!(e.as_deref(), Some(&b"external"[..]), "e{i:03}");
        let n = db.get(format!("n{i:03}").as_bytes()).unwrap();
        assert_eq!(n.as_deref(), Some(&b"logged"[..]), "n{i:03}");
    }
    // Open flushed what it replayed: the log was told it may drop everything.
    assert_eq!(log.len(), 0);
    assert!(*log.released.lock() >= *seqs.last().unwrap());
    // New writes after it, sequence numbers going on from the replayed ones.
    let seq = put_external(&db, &log, b"e999", b"later").unwrap();
    assert!(seq > *seqs.last().unwrap());
    db.flush().unwrap();
    // The release comes from the flushing thread, just after the flush is installed.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while log.len() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(log.len(), 0, "a flush releases what it wrote");
    db.close().unwrap();
    let db = Db::open(dir.path(), options_with(&log)).unwrap();
    assert_eq!(db.get(b"e999").unwrap().as_deref(), Some(&b"later"[..]));
}

#[test]
fn a_failed_persist_applies_nothing_and_the_database_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(MemLog::default());
    let db = Db::open(dir.path(), options_with(&log)).unwrap();
    let mut batch = WriteBatch::new();
    batch.put(b"k", b"never");
    let err = db
        .write_external(batch, |_| {
            Err(Error::InvalidArgument("the segment is full".into()))
        })
        .unwrap_err();
    assert!(err.to_string().contains("segment is full"), "{err}");
    assert_eq!(db.get(b"k").unwrap(), None);
    let seq = put_external(&db, &log, b"k", b"v").unwrap();
    // The failed persist may have reached its log before failing, so its number is
    // never given to another write.
    assert_eq!(seq, 2, "the failed write's sequence number is not reused");
    db.put(b"x", b"y").unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn concurrent_external_writes_each_get_their_own_numbers_and_result() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(MemLog::default());
    let db = Arc::new(Db::open(dir.path(), options_with(&log)).unwrap());
    let threads: Vec<_> = (0..8u32)
        .map(|t| {
            let (db, log) = (db.clone(), log.clone());
            std::thread::spawn(move || {
                let mut seqs = Vec::new();
                for i in 0..300u32 {
                    let key = format!("t{t}-{i:03}");
                    if i % 10 == 3 {
                        // Every tenth write's persist fails: only that writer sees it.
                        let mut batch = WriteBatch::new();
                        batch.put(key.as_bytes(), b"lost");
                        let r = db.write_external(batch, |_| {
                            Err(Error::InvalidArgument("refused".into()))
                        });
                        assert!(r.is_err());
                        db.put(format!("n{t}-{i:03}").as_bytes(), b"logged")
                            .unwrap();
                    } else {
                        seqs.push(put_external(&db, &log, key.as_bytes(), b"v").unwrap());
                    }
                }
                seqs
            })
        })
        .collect();
    let mut seqs: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let n = seqs.len();
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(seqs.len(), n, "two writes shared a sequence number");
    for t in 0..8u32 {
        for i in 0..300u32 {
            let got = db.get(format!("t{t}-{i:03}").as_bytes()).unwrap();
            let want: Option<&[u8]> = if i % 10 == 3 { None } else { Some(b"v") };
            assert_eq!(got.as_deref(), want, "t{t}-{i:03}");
        }
    }
    // Reopened, the log's writes come back by their sequence numbers.
    drop(db);
    let db = Db::open(dir.path(), options_with(&log)).unwrap();
    assert_eq!(db.get(b"t7-299").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(db.get(b"t7-293").unwrap(), None);
}

/// Writes external and logged (unsynced) keys with flushes and compactions under way,
/// cuts the power, and reopens: returns the external keys whose last value is missing.
fn external_writes_lost_in_a_power_cut(releases_everything: bool) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(MemLog::default());
    log.releases_everything
        .store(releases_everything, Ordering::Relaxed);
    let power = Arc::new(PowerSupply::new());
    let fault = FaultStorage::with_power(Arc::new(FsStorage::new()), power.clone());
    let opts = Options {
        storage: Arc::new(fault.clone()),
        ..options_with(&log)
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let mut expected = BTreeMap::new();
    for i in 0..6000u32 {
        let k = format!("e{:04}", (i * 7919) % 1500);
        let v = format!("{i:06}{}", "x".repeat(40));
        put_external(&db, &log, k.as_bytes(), v.as_bytes()).unwrap();
        expected.insert(k, v);
        db.put(format!("n{i:05}").as_bytes(), &[b'n'; 40]).unwrap();
    }
    assert!(
        db.stats().flushes > 0,
        "the test needs flushes before the cut"
    );
    // A few last external writes, too small to fill the memtable: they are in no table at
    // the cut however the background flushes were timed, so only the log can bring them
    // back (a log that released them loses them).
    for i in 0..20u32 {
        let k = format!("tail{i:02}");
        let v = format!("tail-value-{i}");
        put_external(&db, &log, k.as_bytes(), v.as_bytes()).unwrap();
        expected.insert(k, v);
    }
    power.cut_now();
    drop(db);
    power.restore();
    fault.simulate_crash().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    expected
        .iter()
        .filter(|(k, v)| db.get(k.as_bytes()).unwrap().as_deref() != Some(v.as_bytes()))
        .count()
}

#[test]
fn external_writes_replayed_newest_first_merge_with_the_log_by_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(MemLog::default());
    log.reverse.store(true, Ordering::Relaxed);
    let power = Arc::new(PowerSupply::new());
    let fault = FaultStorage::with_power(Arc::new(FsStorage::new()), power.clone());
    let opts = Options {
        storage: Arc::new(fault.clone()),
        write_buffer_size: 64 << 20,
        ..options_with(&log)
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    // The same keys written through the external log and through the engine's own
    // (synced) log in turn, never flushed before the cut.
    let mut expected = BTreeMap::new();
    for i in 0..3000u32 {
        let k = format!("k{:03}", (i * 7) % 20);
        let v = format!("{i:05}{}", "v".repeat(60));
        if i % 3 == 0 {
            let mut b = WriteBatch::new();
            b.put(k.as_bytes(), v.as_bytes());
            let sync = WriteOptions {
                sync: true,
                ..WriteOptions::default()
            };
            db.write(b, sync).unwrap();
        } else {
            put_external(&db, &log, k.as_bytes(), v.as_bytes()).unwrap();
        }
        expected.insert(k, v);
    }
    assert_eq!(db.stats().flushes, 0);
    power.cut_now();
    drop(db);
    power.restore();
    fault.simulate_crash().unwrap();
    // Reopened with a small write buffer: replay fills and flushes several memtables.
    // No compaction merges the tables before the reads: they must be right as made.
    let small = Options {
        write_buffer_size: 16 << 10,
        level0_file_num_compaction_trigger: 1000,
        level0_slowdown_writes_trigger: 1000,
        level0_stop_writes_trigger: 1000,
        ..opts
    };
    let db = Db::open(dir.path(), small).unwrap();
    let tables: usize = (0..7)
        .filter_map(|l| db.property(&format!("terrace.num-files-at-level{l}")))
        .map(|n| n.parse::<usize>().unwrap())
        .sum();
    assert!(tables > 1, "replay made {tables} tables");
    for (k, v) in &expected {
        assert_eq!(
            db.get(k.as_bytes()).unwrap().as_deref(),
            Some(v.as_bytes()),
            "{k}"
        );
    }
}

#[test]
fn a_power_cut_loses_no_external_write() {
    assert_eq!(external_writes_lost_in_a_power_cut(false), 0);
}

#[test]
fn negative_control_a_log_that_drops_too_much_loses_writes() {
    assert!(external_writes_lost_in_a_power_cut(true) > 0);
}
