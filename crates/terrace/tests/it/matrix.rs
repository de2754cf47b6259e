//! The matrix-container level 0 through the public API: rows, freezes, table merges and
//! column compactions under a random workload checked against a model, snapshots across
//! merges, reopen, manual compaction, and damaged or missing region files.

use std::collections::BTreeMap;
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use terrace::pmem::PmemMode;
use terrace::{Db, Options, ReadOptions};

fn options(dir: &Path, mode: PmemMode) -> Options {
    let mut o = crate::small_options();
    o.write_buffer_size = 8 << 10;
    o.level0 = crate::matrix_level0(dir, 128 << 10, mode);
    o
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// Writes, overwrites and deletes in random order, checking reads on the way.
fn churn(db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, rng: &mut StdRng, n: u32) {
    for i in 0..n {
        let k = key(rng.gen_range(0..2000));
        if rng.gen_bool(0.1) {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let mut v = format!("v{i}-").into_bytes();
            v.resize(rng.gen_range(10..300), b'x');
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        if i % 97 == 0 {
            let probe = key(rng.gen_range(0..2000));
            assert_eq!(
                db.get(&probe).unwrap().as_deref(),
                model.get(&probe).map(Vec::as_slice)
            );
        }
    }
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(crate::scan_all(db), want);
    for (k, v) in model.iter().step_by(7) {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_slice()));
    }
}

#[test]
fn rows_freeze_and_compact_in_columns_and_reads_stay_right() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mut rng = StdRng::seed_from_u64(7);
    let mut model = BTreeMap::new();
    let db = Db::open(&dir, options(tmp.path(), PmemMode::Mapped)).unwrap();
    let snap = db.snapshot();
    let at_snap = model.clone();
    churn(&db, &mut model, &mut rng, 6000);
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert!(s.column_compactions > 0, "no column compaction ran: {s:?}");
    assert!(s.row_bytes_written > 0);
    assert!(
        s.row_chunks_released > 0,
        "column compactions gave no data chunk back: {s:?}"
    );
    assert!(
        s.levels[1].files > 0,
        "column compactions wrote no level-1 file"
    );
    check(&db, &model);
    // A snapshot taken before every write still sees nothing.
    let mut it = db
        .iter(ReadOptions {
            snapshot_seq: Some(snap.seq()),
            ..ReadOptions::default()
        })
        .unwrap();
    it.seek_to_first().unwrap();
    assert_eq!(it.collect_remaining().unwrap().len(), at_snap.len());
    drop(it);
    drop(snap);
    db.close().unwrap();

    let db = Db::open(&dir, options(tmp.path(), PmemMode::Mapped)).unwrap();
    check(&db, &model);
    churn(&db, &mut model, &mut rng, 2000);
    check(&db, &model);
    // A manual compaction empties the container into the levels below.
    db.compact_range(None, None).unwrap();
    assert_eq!(db.stats().levels[0].rows, 0);
    check(&db, &model);
    db.close().unwrap();
    let db = Db::open(&dir, options(tmp.path(), PmemMode::Mapped)).unwrap();
    check(&db, &model);
}

/// Reads at `snap` see exactly `model`.
fn check_snapshot(db: &Db, snap: &terrace::Snapshot, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let mut it = db.iter(snap.read_options()).unwrap();
    it.seek_to_first().unwrap();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(it.collect_remaining().unwrap(), want);
    for i in (0..2000).step_by(13) {
        let k = key(i);
        assert_eq!(
            db.get_opt(&snap.read_options(), &k).unwrap().as_deref(),
            model.get(&k).map(Vec::as_slice)
        );
    }
}

/// A flush into a row drops the versions no snapshot tells apart and keeps the ones a
/// snapshot taken while they sat in the memtable reads.
#[test]
fn rows_keep_what_a_snapshot_taken_before_their_flush_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path().join("db"), options(tmp.path(), PmemMode::Mapped)).unwrap();
    let mut model = BTreeMap::new();
    // Twenty keys written over and over: each memtable holds several versions of each.
    let write = |db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, round: u32| {
        for i in 0..20u32 {
            let v = format!("r{round}-{i}").into_bytes();
            db.put(&key(i), &v).unwrap();
            model.insert(key(i), v);
        }
    };
    for round in 0..3 {
        write(&db, &mut model, round);
    }
    let snap = db.snapshot();
    let at_snap = model.clone();
    for round in 3..6 {
        write(&db, &mut model, round);
    }
    db.flush().unwrap();
    let read_at = |db: &Db, want: &BTreeMap<Vec<u8>, Vec<u8>>, opts: &ReadOptions| {
        for (k, v) in want {
            assert_eq!(db.get_opt(opts, k).unwrap().as_deref(), Some(v.as_slice()));
        }
        let mut it = db.iter(opts.clone()).unwrap();
        it.seek_to_first().unwrap();
        let all: Vec<_> = want.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(it.collect_remaining().unwrap(), all);
    };
    read_at(&db, &model, &ReadOptions::default());
    read_at(&db, &at_snap, &snap.read_options());
    // Rows freeze, compact in columns and merge; the snapshot still reads its versions.
    for round in 6..200 {
        write(&db, &mut model, round);
    }
    db.wait_for_compactions().unwrap();
    read_at(&db, &model, &ReadOptions::default());
    read_at(&db, &at_snap, &snap.read_options());
}

#[test]
fn table_merges_keep_what_snapshots_read_and_survive_reopen() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    // A large container and short segments: groups grow long enough for many merges.
    let mut m = crate::matrix_options(tmp.path(), 384 << 10, PmemMode::Mapped);
    m.params.segment_rows = 2;
    let options = || {
        let mut o = crate::small_options();
        o.write_buffer_size = 8 << 10;
        o.level0 = std::sync::Arc::new(terrace::level0::MatrixLevel0::new(m.clone()).unwrap());
        o
    };
    let mut rng = StdRng::seed_from_u64(11);
    let mut model = BTreeMap::new();
    let db = Db::open(&dir, options()).unwrap();
    churn(&db, &mut model, &mut rng, 1500);
    db.flush().unwrap();
    // The snapshot's versions are in the oldest rows, the first a merge rewrites.
    let snap = db.snapshot();
    let at_snap = model.clone();
    churn(&db, &mut model, &mut rng, 8000);
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert!(s.row_merges > 0, "no table merge ran: {s:?}");
    check(&db, &model);
    check_snapshot(&db, &snap, &at_snap);
    drop(snap);
    churn(&db, &mut model, &mut rng, 3000);
    check(&db, &model);
    db.close().unwrap();

    // The merged rows, their outputs' order and the relinked rows come back from the
    // manifest and the region.
    let db = Db::open(&dir, options()).unwrap();
    check(&db, &model);
    churn(&db, &mut model, &mut rng, 4000);
    db.wait_for_compactions().unwrap();
    check(&db, &model);
    db.close().unwrap();
    let db = Db::open(&dir, options()).unwrap();
    check(&db, &model);
}

#[test]
fn a_missing_or_damaged_region_is_an_error_not_a_wrong_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mut rng = StdRng::seed_from_u64(3);
    let mut model = BTreeMap::new();
    let db = Db::open(&dir, options(tmp.path(), PmemMode::Mapped)).unwrap();
    churn(&db, &mut model, &mut rng, 1500);
    db.flush().unwrap();
    let rows = db.stats().levels[0].rows;
    db.close().unwrap();
    assert!(rows > 0);
    let region = tmp.path().join("region.pmem");
    let saved = std::fs::read(&region).unwrap();

    // Flip bytes all over the region's data pages: a row that no longer checks is
    // corruption at open (bytes in free pages change nothing).
    let mut damaged = saved.clone();
    for i in (4096..damaged.len()).step_by(1013) {
        damaged[i] ^= 0x5a;
    }
    std::fs::write(&region, &damaged).unwrap();
    match Db::open(&dir, options(tmp.path(), PmemMode::Mapped)) {
        Err(e) => assert!(e.is_corruption(), "{e}"),
        Ok(_) => panic!("a damaged region opened"),
    }

    // A region file recreated empty does not hold the rows the manifest names.
    std::fs::remove_file(&region).unwrap();
    match Db::open(&dir, options(tmp.path(), PmemMode::Mapped)) {
        Err(e) => assert!(e.is_corruption(), "{e}"),
        Ok(_) => panic!("a database opened without its rows"),
    }

    // The original bytes open again with every key.
    std::fs::write(&region, &saved).unwrap();
    let db = Db::open(&dir, options(tmp.path(), PmemMode::Mapped)).unwrap();
    check(&db, &model);
}

/// `options` for a checkpoint: the region at its default place, the checkpoint's own
/// `MATRIX.pmem`.
fn checkpoint_options(dir: &Path) -> Options {
    let mut o = options(dir, PmemMode::Mapped);
    let mut m = crate::matrix_options(dir, 128 << 10, PmemMode::Mapped);
    m.region_path = None;
    o.level0 = std::sync::Arc::new(terrace::level0::MatrixLevel0::new(m).unwrap());
    o
}

/// Issue: a checkpoint of a matrix level 0 copied the tables, the manifest and the logs
/// but not the rows on persistent memory; the copy then opened empty with a classic level
/// 0, and failed with a matrix one. The rows now travel in the checkpoint's own region.
#[test]
fn a_checkpoint_holds_the_rows_of_level_0() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mut rng = StdRng::seed_from_u64(11);
    let mut model = BTreeMap::new();
    let db = Db::open(&dir, options(tmp.path(), PmemMode::Mapped)).unwrap();
    churn(&db, &mut model, &mut rng, 3000);
    let cp = tmp.path().join("checkpoint");
    // Background flushes and column compactions may change the rows just before or
    // after the checkpoint: it holds one of the two counts.
    let rows_before = db.stats().levels[0].rows;
    db.checkpoint(&cp).unwrap();
    let rows_after = db.stats().levels[0].rows;
    assert!(
        rows_before > 0 || rows_after > 0,
        "the checkpoint was taken with no row in level 0"
    );
    assert!(cp.join(terrace::level0::DEFAULT_REGION_FILE).exists());
    // The original goes on changing; the checkpoint must not follow it.
    let at_checkpoint = model.clone();
    churn(&db, &mut model, &mut rng, 1500);
    db.close().unwrap();

    // A classic level 0 cannot read the rows: it refuses rather than open without them.
    match Db::open(&cp, crate::small_options()) {
        Err(terrace::Error::InvalidArgument(m)) => assert!(m.contains("matrix"), "{m}"),
        Err(e) => panic!("unexpected error: {e}"),
        Ok(_) => panic!("a checkpoint with level-0 rows opened without them"),
    }
    // The matrix level 0 at its default place (the checkpoint's own region) holds them.
    let copy = Db::open(&cp, checkpoint_options(tmp.path())).unwrap();
    let rows = copy.stats().levels[0].rows;
    assert!(
        rows == rows_before || rows == rows_after,
        "{rows} rows, not {rows_before} or {rows_after}"
    );
    check(&copy, &at_checkpoint);
    // And it is a working database: writes, flushes and compactions go on in it.
    let mut copy_model = at_checkpoint;
    churn(&copy, &mut copy_model, &mut rng, 1500);
    copy.flush().unwrap();
    copy.wait_for_compactions().unwrap();
    check(&copy, &copy_model);
    drop(copy);
    // The original is untouched by all this.
    let db = Db::open(&dir, options(tmp.path(), PmemMode::Mapped)).unwrap();
    check(&db, &model);
}

/// A checkpoint taken while a writer goes on holds every write acknowledged before the
/// call and a prefix of the writer's sequence, with rows and column compactions under way.
#[test]
fn a_checkpoint_during_writes_holds_a_prefix_of_them() {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::sync::Arc;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Arc::new(Db::open(&dir, options(tmp.path(), PmemMode::Mapped)).unwrap());
    let acked = Arc::new(AtomicU32::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, acked, stop) = (db.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u32;
            while !stop.load(Ordering::Relaxed) && i < 200_000 {
                db.put(&key(i), format!("value-{i}").as_bytes()).unwrap();
                i += 1;
                acked.store(i, Ordering::Release);
            }
        })
    };
    while acked.load(Ordering::Acquire) < 2000 {
        std::thread::yield_now();
    }
    let before = acked.load(Ordering::Acquire);
    let cp = tmp.path().join("checkpoint");
    db.checkpoint(&cp).unwrap();
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    drop(db);
    let copy = Db::open(&cp, checkpoint_options(tmp.path())).unwrap();
    let got = crate::scan_all(&copy);
    let n = got.len() as u32;
    assert!(
        n >= before,
        "the checkpoint holds {n} writes, {before} were acknowledged before it"
    );
    let mut want: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
        .map(|i| (key(i), format!("value-{i}").into_bytes()))
        .collect();
    want.sort();
    assert_eq!(got, want, "the checkpoint is no prefix of the writes");
}

/// Issue: when replay dropped a torn log tail and the matrix container had no room for all
/// the replayed memtables, the damaged log stayed live behind the new one; the next open
/// then saw damage followed by a log holding writes, and refused. The kept memtables now
/// move to the new log at open.
#[test]
fn memtables_kept_at_open_do_not_keep_a_damaged_log_alive() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let big = |buffer: usize| {
        let mut o = options(tmp.path(), PmemMode::Mapped);
        o.write_buffer_size = buffer;
        o.max_write_buffer_number = 64;
        o
    };
    let value = |i: u32| format!("value-{i}-").repeat(20).into_bytes();
    let db = Db::open(&dir, big(4 << 20)).unwrap();
    let n = 3000u32;
    for i in 0..n {
        db.put(&key(i), &value(i)).unwrap();
    }
    db.close().unwrap();
    // Tear the last record of the log that holds every write.
    let log = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&log).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x5a;
    std::fs::write(&log, &bytes).unwrap();

    // Memtables of 64 KiB in a 128 KiB container: most of the replay is kept unflushed.
    let db = Db::open(&dir, big(64 << 10)).unwrap();
    let s = db.stats();
    assert_eq!(s.wal_records_dropped, 1);
    assert!(
        s.immutable_memtables > 0,
        "the replay fit in the container: {s:?}"
    );
    db.put(b"after", b"reopen").unwrap();
    db.close().unwrap();

    let db = Db::open(&dir, big(64 << 10)).unwrap();
    for i in 0..n - 1 {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(i)), "{i}");
    }
    assert_eq!(
        db.get(&key(n - 1)).unwrap(),
        None,
        "the torn record came back"
    );
    assert_eq!(db.get(b"after").unwrap().as_deref(), Some(&b"reopen"[..]));
}
