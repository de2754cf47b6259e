//! The public API, operation by operation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use terrace::{Db, EventListener, Options, ReadOptions, WriteBatch, WriteOptions};

use crate::{open, scan_all, small_options};

#[test]
fn put_get_delete_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Options::default());
    db.put(b"a", b"1").unwrap();
    db.put(b"b", b"2").unwrap();
    db.delete(b"a").unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"b").unwrap(), Some(b"2".to_vec()));
    db.close().unwrap();
    let db = open(dir.path(), Options::default());
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"b").unwrap(), Some(b"2".to_vec()));
}

#[test]
fn second_open_is_refused_while_locked() {
    let dir = tempfile::tempdir().unwrap();
    let _db = open(dir.path(), Options::default());
    let err = Db::open(dir.path(), Options::default()).unwrap_err();
    assert!(matches!(err, terrace::Error::Locked(_)), "{err}");
}

#[test]
fn missing_database_without_create_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        create_if_missing: false,
        ..Options::default()
    };
    assert!(Db::open(dir.path().join("nothing"), opts).is_err());
}

#[test]
fn bad_options_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        max_write_buffer_number: 1,
        ..Options::default()
    };
    assert!(matches!(
        Db::open(dir.path(), opts),
        Err(terrace::Error::InvalidArgument(_))
    ));
}

#[test]
fn many_keys_survive_flush_compaction_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), small_options());
    for i in 0..5000u32 {
        db.put(format!("k{i:06}").as_bytes(), format!("v{i}").as_bytes())
            .unwrap();
    }
    for i in (0..5000u32).step_by(3) {
        db.delete(format!("k{i:06}").as_bytes()).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let check = |db: &Db| {
        for i in 0..5000u32 {
            let got = db.get(format!("k{i:06}").as_bytes()).unwrap();
            if i % 3 == 0 {
                assert_eq!(got, None, "k{i}");
            } else {
                assert_eq!(got, Some(format!("v{i}").into_bytes()), "k{i}");
            }
        }
        assert_eq!(scan_all(db).len(), 5000 - 1667);
    };
    check(&db);
    let stats = db.stats();
    assert!(stats.flushes > 0 && stats.compactions > 0, "{stats:?}");
    assert!(stats.write_amplification > 0.0);
    db.close().unwrap();
    let db = open(dir.path(), small_options());
    check(&db);
}

#[test]
fn range_deletion_hides_keys_in_memtable_and_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), small_options());
    for i in 0..1000u32 {
        db.put(format!("k{i:04}").as_bytes(), b"x").unwrap();
    }
    db.flush().unwrap();
    db.delete_range(b"k0100", b"k0200").unwrap();
    assert_eq!(db.get(b"k0150").unwrap(), None);
    assert_eq!(db.get(b"k0200").unwrap(), Some(b"x".to_vec()));
    db.put(b"k0150", b"back").unwrap();
    assert_eq!(db.get(b"k0150").unwrap(), Some(b"back".to_vec()));
    assert_eq!(scan_all(&db).len(), 901);
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get(b"k0199").unwrap(), None);
    assert_eq!(db.get(b"k0150").unwrap(), Some(b"back".to_vec()));
    assert_eq!(scan_all(&db).len(), 901);
    assert!(db.delete_range(b"z", b"a").is_err());
}

#[test]
fn snapshots_see_the_past() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), small_options());
    db.put(b"k", b"old").unwrap();
    let snap = db.snapshot();
    db.put(b"k", b"new").unwrap();
    db.delete(b"gone-later").unwrap();
    for i in 0..3000u32 {
        db.put(format!("fill{i:05}").as_bytes(), &[7u8; 40])
            .unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(
        db.get_opt(&snap.read_options(), b"k").unwrap(),
        Some(b"old".to_vec())
    );
    assert_eq!(db.get(b"k").unwrap(), Some(b"new".to_vec()));
    let mut it = db.iter(snap.read_options()).unwrap();
    it.seek_to_first().unwrap();
    assert_eq!(
        it.collect_remaining().unwrap(),
        vec![(b"k".to_vec(), b"old".to_vec())]
    );
}

/// A flush writes one version per key and snapshot stripe: the versions no live snapshot
/// tells apart are dropped, the ones a snapshot reads are kept, deletions stay.
#[test]
fn flush_drops_versions_no_snapshot_reads() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 1 << 20,
        level0_file_num_compaction_trigger: 100,
        level0_slowdown_writes_trigger: 100,
        level0_stop_writes_trigger: 100,
        ..small_options()
    };
    let db = open(dir.path(), opts);
    let level0_entries = |db: &Db| -> u64 {
        db.live_files()
            .iter()
            .filter(|(level, _)| *level == 0)
            .map(|(_, f)| f.num_entries)
            .sum()
    };
    for round in 0..5u8 {
        for k in 0..10u8 {
            db.put(&[b'a', k], &[round]).unwrap();
        }
    }
    db.delete(&[b'a', 0]).unwrap();
    db.flush().unwrap();
    // Ten keys, the newest version of each: nine values and a deletion.
    assert_eq!(level0_entries(&db), 10);

    db.put(b"s", b"old").unwrap();
    let snap = db.snapshot();
    db.put(b"s", b"mid").unwrap();
    db.put(b"s", b"new").unwrap();
    db.flush().unwrap();
    // "old" for the snapshot, "new" for everyone else; "mid" no one reads.
    assert_eq!(level0_entries(&db), 12);
    assert_eq!(
        db.get_opt(&snap.read_options(), b"s").unwrap(),
        Some(b"old".to_vec())
    );
    assert_eq!(db.get(b"s").unwrap(), Some(b"new".to_vec()));
    assert_eq!(db.get(&[b'a', 0]).unwrap(), None);
    assert_eq!(db.get(&[b'a', 9]).unwrap(), Some(vec![4]));
}

#[test]
fn iterator_bounds_seeks_and_both_directions() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), small_options());
    for i in (0..100u32).step_by(2) {
        db.put(format!("{i:03}").as_bytes(), format!("v{i}").as_bytes())
            .unwrap();
    }
    db.flush().unwrap();
    for i in (1..100u32).step_by(2) {
        db.put(format!("{i:03}").as_bytes(), format!("v{i}").as_bytes())
            .unwrap();
    }
    let mut it = db
        .iter(ReadOptions {
            lower_bound: Some(b"010".to_vec()),
            upper_bound: Some(b"020".to_vec()),
            ..ReadOptions::default()
        })
        .unwrap();
    it.seek_to_first().unwrap();
    assert_eq!(it.key(), b"010");
    it.seek_to_last().unwrap();
    assert_eq!(it.key(), b"019");
    it.prev().unwrap();
    assert_eq!(it.key(), b"018");
    it.next().unwrap();
    assert_eq!(it.key(), b"019");
    it.next().unwrap();
    assert!(!it.valid());
    it.seek(b"0155").unwrap();
    assert_eq!(it.key(), b"016");
    it.seek_for_prev(b"0155").unwrap();
    assert_eq!(it.key(), b"015");
    assert_eq!(it.value(), b"v15");
    it.seek(b"000").unwrap();
    assert_eq!(it.key(), b"010");
    it.seek_for_prev(b"999").unwrap();
    assert_eq!(it.key(), b"019");
}

#[test]
fn write_batch_is_atomic_and_multi_get_and_pinned_reads_work() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), Options::default());
    let mut b = WriteBatch::new();
    b.put(b"x", b"1");
    b.put(b"y", b"2");
    b.delete(b"x");
    db.write(
        b,
        WriteOptions {
            sync: true,
            disable_wal: false,
        },
    )
    .unwrap();
    let got = db
        .multi_get(&ReadOptions::default(), &[b"x", b"y", b"z"])
        .unwrap();
    assert_eq!(got, vec![None, Some(b"2".to_vec()), None]);
    let pinned = db
        .get_pinned(&ReadOptions::default(), b"y")
        .unwrap()
        .unwrap();
    assert_eq!(&*pinned, b"2");
    let mut buf = Vec::new();
    assert!(db
        .get_into(&ReadOptions::default(), b"y", &mut buf)
        .unwrap());
    assert_eq!(buf, b"2");
    assert!(!db
        .get_into(&ReadOptions::default(), b"x", &mut buf)
        .unwrap());
}

#[test]
fn disable_wal_writes_are_lost_without_flush_but_kept_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let no_wal = WriteOptions {
        sync: false,
        disable_wal: true,
    };
    let db = open(dir.path(), Options::default());
    let mut b = WriteBatch::new();
    b.put(b"flushed", b"1");
    db.write(b, no_wal).unwrap();
    db.flush().unwrap();
    let mut b = WriteBatch::new();
    b.put(b"unflushed", b"1");
    db.write(b, no_wal).unwrap();
    db.close().unwrap();
    let db = open(dir.path(), Options::default());
    assert_eq!(db.get(b"flushed").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get(b"unflushed").unwrap(), None);
}

#[test]
fn checkpoint_is_a_consistent_openable_copy() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path().join("db").as_path(), small_options());
    for i in 0..2000u32 {
        db.put(format!("k{i:05}").as_bytes(), b"v").unwrap();
    }
    db.checkpoint(dir.path().join("cp")).unwrap();
    db.put(b"after", b"checkpoint").unwrap();
    assert!(db.checkpoint(dir.path().join("cp")).is_err());
    let cp = open(dir.path().join("cp").as_path(), small_options());
    assert_eq!(cp.get(b"after").unwrap(), None);
    assert_eq!(scan_all(&cp).len(), 2000);
}

#[test]
fn stats_properties_and_listeners() {
    #[derive(Default)]
    struct Counting {
        flushes: AtomicUsize,
        compactions: AtomicUsize,
    }
    impl EventListener for Counting {
        fn on_flush_completed(&self, _: &terrace::FlushInfo) {
            self.flushes.fetch_add(1, Ordering::SeqCst);
        }
        fn on_compaction_completed(&self, _: &terrace::CompactionInfo) {
            self.compactions.fetch_add(1, Ordering::SeqCst);
        }
    }
    let listener = Arc::new(Counting::default());
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        listeners: vec![listener.clone()],
        ..small_options()
    };
    let db = open(dir.path(), opts);
    for i in 0..4000u32 {
        db.put(format!("k{i:05}").as_bytes(), &[1u8; 30]).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert!(listener.flushes.load(Ordering::SeqCst) > 0);
    assert!(listener.compactions.load(Ordering::SeqCst) > 0);
    let s = db.stats();
    assert_eq!(s.user_bytes_written, 4000 * (6 + 30));
    assert!(s.levels.iter().map(|l| l.files).sum::<usize>() > 0);
    assert!(s.write_latency.count >= 4000);
    assert!(db.property("terrace.levelstats").unwrap().contains("Level"));
    assert!(db.property("terrace.num-files-at-level0").is_some());
    assert!(db
        .property("terrace.stats")
        .unwrap()
        .contains("write_amplification"));
    assert_eq!(db.property("terrace.no-such-thing"), None);
}

#[test]
fn db_and_its_handles_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Db>();
    send_sync::<terrace::Snapshot>();
    send::<terrace::DbIterator>();
}

/// Reads and writes are timed into the stats by default, and not at all with
/// `latency_stats` off (what `terrace serve` runs with): the summaries stay empty while
/// the other counters go on.
#[test]
fn latency_stats_time_every_operation_or_none() {
    for timed in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let db = open(
            dir.path(),
            Options {
                latency_stats: timed,
                ..small_options()
            },
        );
        for i in 0..100u32 {
            db.put(format!("k{i:03}").as_bytes(), b"v").unwrap();
        }
        for i in 0..50u32 {
            assert!(db.get(format!("k{i:03}").as_bytes()).unwrap().is_some());
        }
        let keys: Vec<Vec<u8>> = (0..10u32)
            .map(|i| format!("k{i:03}").into_bytes())
            .collect();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let got = db
            .multi_get_pinned(&terrace::ReadOptions::default(), &refs)
            .unwrap();
        assert!(got.iter().all(Option::is_some));
        let s = db.stats();
        assert_eq!(s.user_bytes_written, 100 * (4 + 1));
        if timed {
            assert_eq!(s.write_latency.count, 100);
            assert_eq!(s.get_latency.count, 60);
        } else {
            assert_eq!(s.write_latency.count, 0);
            assert_eq!(s.get_latency.count, 0);
        }
    }
}
