//! A database whose levels 1+ live on a throttled volume: correct results, and the
//! throttle's accounting agrees with the database's statistics. Nothing here measures
//! speed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use terrace::storage::{FsStorage, IoClass, Storage, ThrottleLimits, ThrottledStorage};
use terrace::{Db, Options};

use crate::{scan_all, small_options};

#[test]
fn a_database_on_a_throttled_volume_reads_back_what_it_wrote() {
    let root = tempfile::tempdir().unwrap();
    let fast = root.path().join("fast");
    let slow = root.path().join("slow");
    // 4 MB/s and 2000 IOPS of 256 KiB with a 10 ms burst: small enough that the
    // compactions below wait, large enough that the test stays short.
    let limits = ThrottleLimits::bandwidth(4 << 20)
        .with_iops(2000, ThrottleLimits::CLOUD_IO_UNIT_BYTES)
        .with_burst(Duration::from_millis(10));
    let throttled = Arc::new(ThrottledStorage::new(
        Arc::new(FsStorage::new()),
        vec![(slow.clone(), limits)],
    ));
    let opts = Options {
        storage: throttled.clone(),
        volumes: vec![slow.clone()],
        level_volumes: vec![0, 1, 1, 1, 1, 1, 1],
        ..small_options()
    };
    let mut model = BTreeMap::new();
    {
        let db = Db::open(&fast, opts.clone()).unwrap();
        for i in 0..6000u32 {
            let key = format!("k{:05}", (i * 7919) % 6000).into_bytes();
            let value = format!("v{i}-{}", "x".repeat(40)).into_bytes();
            db.put(&key, &value).unwrap();
            model.insert(key, value);
            if i % 5 == 0 {
                let gone = format!("k{:05}", (i * 31) % 6000).into_bytes();
                db.delete(&gone).unwrap();
                model.remove(&gone);
            }
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        let expected: Vec<_> = model.clone().into_iter().collect();
        assert_eq!(scan_all(&db), expected);
        for (k, v) in model.iter().step_by(101) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
        }
        let s = db.stats();
        assert!(s.levels.iter().skip(1).any(|l| l.files > 0));
        assert!(s.throttle_waits > 0, "compaction outputs exceed the burst");
        db.close().unwrap();
    }

    // Only the slow volume was charged: its bytes cover the tables written there.
    let st = throttled.stats();
    assert_eq!(st.len(), 1);
    let on_slow: u64 = std::fs::read_dir(&slow)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(on_slow > 0 && st[0].bytes >= on_slow);
    assert!(st[0].ios > 0 && st[0].waits > 0);
    // The storage's per-class counters saw the same waits as the rule, each at least as
    // long as the rule asked (they count the time actually slept).
    let io = throttled.io_stats();
    let (waits, micros) = IoClass::ALL.iter().fold((0, 0), |(n, us), c| {
        let c = io.get(*c);
        (n + c.throttle_waits, us + c.throttle_wait_micros)
    });
    assert_eq!(waits, st[0].waits);
    assert!(
        micros >= st[0].wait_micros,
        "{micros} < {}",
        st[0].wait_micros
    );
    assert_eq!(
        io.get(IoClass::Wal).throttle_waits,
        0,
        "the log is not throttled"
    );

    let db = Db::open(&fast, opts).unwrap();
    assert_eq!(scan_all(&db), model.into_iter().collect::<Vec<_>>());
}

/// Per-volume limits in the options: each named volume gets its own budget and its own
/// figures in `stats().volumes`; tables go where the placement puts them.
#[test]
fn each_volume_named_in_volume_limits_is_throttled_and_counted_on_its_own() {
    let root = tempfile::tempdir().unwrap();
    let (v1, v2) = (root.path().join("v1"), root.path().join("v2"));
    let limits = ThrottleLimits::bandwidth(64 << 20)
        .with_iops(5000, ThrottleLimits::CLOUD_IO_UNIT_BYTES)
        .with_burst(Duration::from_millis(10));
    let opts = Options {
        volumes: vec![v1.clone(), v2.clone()],
        // Level 0 on volume 1, every deeper level on volume 2.
        level_volumes: vec![1, 2, 2, 2, 2, 2, 2],
        // Volume 0 counted only, volumes 1 and 2 limited.
        volume_limits: vec![ThrottleLimits::default(), limits, limits],
        ..small_options()
    };
    let dir = root.path().join("db");
    let db = Db::open(&dir, opts.clone()).unwrap();
    for i in 0..3000u32 {
        db.put(format!("k{i:05}").as_bytes(), &[b'v'; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    let stats = db.stats();
    let ids: Vec<u32> = stats.volumes.iter().map(|v| v.id).collect();
    assert_eq!(ids, vec![0, 1, 2]);
    assert_eq!(stats.volumes[1].dir, v1);
    assert_eq!(stats.volumes[2].bytes_per_sec_limit, 64 << 20);
    assert_eq!(stats.volumes[0].bytes_per_sec_limit, 0);
    // The log and manifest on volume 0, flushes on 1, compaction outputs on 2.
    for v in &stats.volumes {
        assert!(v.bytes > 0 && v.ios > 0, "{v:?}");
    }
    drop(db);
    let db = Db::open(&dir, opts).unwrap();
    assert_eq!(scan_all(&db).len(), 3000);
    // More limits than volumes is refused.
    let bad = Options {
        volume_limits: vec![ThrottleLimits::default(); 2],
        ..small_options()
    };
    assert!(Db::open(root.path().join("other"), bad).is_err());
}
