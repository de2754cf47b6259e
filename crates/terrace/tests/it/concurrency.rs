//! Many threads writing and reading while flushes and compactions run.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use terrace::{Db, ReadOptions};

use crate::small_options;

#[test]
fn concurrent_writers_and_readers() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), small_options()).unwrap());
    // How many keys each writer has written: a key below it must be readable.
    let written: Arc<Vec<AtomicU32>> = Arc::new((0..4).map(|_| AtomicU32::new(0)).collect());
    let writers: Vec<_> = (0..4u32)
        .map(|t| {
            let db = db.clone();
            let written = written.clone();
            std::thread::spawn(move || {
                for i in 0..2500u32 {
                    db.put(
                        format!("t{t}-{i:05}").as_bytes(),
                        format!("{t}:{i}").as_bytes(),
                    )
                    .unwrap();
                    written[t as usize].store(i + 1, Ordering::Release);
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2u32)
        .map(|_| {
            let db = db.clone();
            let written = written.clone();
            std::thread::spawn(move || {
                let mut checked_present = 0u32;
                // Start once every writer has begun, so that the first round has keys
                // that must be found.
                while written.iter().any(|w| w.load(Ordering::Acquire) == 0) {
                    std::thread::yield_now();
                }
                for round in 0..30u32 {
                    for t in 0..4u32 {
                        let i = round * 50;
                        let done = written[t as usize].load(Ordering::Acquire);
                        let k = format!("t{t}-{i:05}");
                        let got = db.get(k.as_bytes()).unwrap();
                        let want = format!("{t}:{i}").into_bytes();
                        if i < done {
                            // Written before this read began: it must be there.
                            assert_eq!(got.as_deref(), Some(want.as_slice()), "{k}");
                            checked_present += 1;
                        } else if let Some(v) = got {
                            // Written while the read ran: if seen, seen whole.
                            assert_eq!(v, want, "{k}");
                        }
                    }
                    let before: u32 = written.iter().map(|w| w.load(Ordering::Acquire)).sum();
                    let mut it = db.iter(ReadOptions::default()).unwrap();
                    it.seek_to_first().unwrap();
                    let mut prev: Option<Vec<u8>> = None;
                    let mut seen = 0u32;
                    while it.valid() {
                        if let Some(p) = &prev {
                            assert!(p.as_slice() < it.key());
                        }
                        prev = Some(it.key().to_vec());
                        seen += 1;
                        it.next().unwrap();
                    }
                    // Every key written before the iterator was made is in its view.
                    assert!(seen >= before, "iterator saw {seen} keys, {before} written");
                }
                checked_present
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let present: u32 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    // Reads ran alongside the writes, or there was nothing to check.
    assert!(present > 0, "no read found a key written before it");
    db.wait_for_compactions().unwrap();
    assert_eq!(crate::scan_all(&db).len(), 10_000);
}

#[test]
fn iterator_keeps_its_view_across_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    for i in 0..3000u32 {
        db.put(format!("k{i:05}").as_bytes(), b"before").unwrap();
    }
    db.flush().unwrap();
    let mut it = db.iter(ReadOptions::default()).unwrap();
    for i in 0..3000u32 {
        db.put(format!("k{i:05}").as_bytes(), b"after").unwrap();
    }
    for i in (0..3000u32).step_by(2) {
        db.delete(format!("k{i:05}").as_bytes()).unwrap();
    }
    db.compact_range(None, None).unwrap();
    it.seek_to_first().unwrap();
    let all = it.collect_remaining().unwrap();
    assert_eq!(all.len(), 3000);
    assert!(all.iter().all(|(_, v)| v == b"before"));
    drop(it);
    assert_eq!(crate::scan_all(&db).len(), 1500);
}

/// Writers commit batches of 24 keys each from four threads, with and without concurrent
/// memtable inserts (each follower inserting its own batch), while readers check at
/// snapshots that every batch is seen whole or not at all; after a reopen from the log,
/// every key holds its writer's last batch.
#[test]
fn batches_from_many_writers_are_atomic_and_survive_a_reopen() {
    const WRITERS: u32 = 4;
    const BATCHES: u32 = 150;
    const KEYS: u32 = 24;
    for concurrent in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let opts = terrace::Options {
            allow_concurrent_memtable_write: concurrent,
            write_buffer_size: 256 << 10,
            ..small_options()
        };
        let db = Arc::new(Db::open(dir.path(), opts.clone()).unwrap());
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let db = db.clone();
            let done = done.clone();
            std::thread::spawn(move || {
                let mut checked = 0u32;
                while !done.load(Ordering::Acquire) {
                    let snap = db.snapshot();
                    let ro = ReadOptions {
                        snapshot_seq: Some(snap.seq()),
                        ..ReadOptions::default()
                    };
                    for t in 0..WRITERS {
                        let values: Vec<Option<Vec<u8>>> = (0..KEYS)
                            .map(|k| db.get_opt(&ro, format!("w{t}-{k:02}").as_bytes()).unwrap())
                            .collect();
                        assert!(
                            values.windows(2).all(|w| w[0] == w[1]),
                            "writer {t}'s batch seen in part: {values:?}"
                        );
                        checked += 1;
                    }
                }
                checked
            })
        };
        let writers: Vec<_> = (0..WRITERS)
            .map(|t| {
                let db = db.clone();
                std::thread::spawn(move || {
                    for b in 0..BATCHES {
                        let mut batch = terrace::WriteBatch::new();
                        let value = format!("{t}:{b}:{}", "x".repeat((b % 7) as usize * 40));
                        for k in 0..KEYS {
                            batch.put(format!("w{t}-{k:02}").as_bytes(), value.as_bytes());
                        }
                        db.write(batch, terrace::WriteOptions::default()).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Release);
        assert!(reader.join().unwrap() > 0);
        drop(db);
        let db = Db::open(dir.path(), opts).unwrap();
        for t in 0..WRITERS {
            let last = BATCHES - 1;
            let want = format!("{t}:{last}:{}", "x".repeat((last % 7) as usize * 40));
            for k in 0..KEYS {
                let got = db.get(format!("w{t}-{k:02}").as_bytes()).unwrap();
                assert_eq!(
                    got.as_deref(),
                    Some(want.as_bytes()),
                    "concurrent={concurrent}"
                );
            }
        }
    }
}

/// Lends one thread, started per batch, that takes parts beside the writer and counts
/// the parts it ran.
#[derive(Default)]
struct CountingHelper {
    helped: AtomicU32,
}

impl terrace::helpers::Helpers for CountingHelper {
    fn share(&self, parts: usize, work: &(dyn Fn(usize) + Sync)) -> bool {
        let next = AtomicU32::new(0);
        let take = |count: bool| loop {
            let i = next.fetch_add(1, Ordering::Relaxed) as usize;
            if i >= parts {
                break;
            }
            work(i);
            if count {
                self.helped.fetch_add(1, Ordering::Relaxed);
            }
        };
        std::thread::scope(|s| {
            let helper = s.spawn(|| take(true));
            take(false);
            helper.join().is_ok()
        })
    }
}

#[test]
fn large_batches_inserted_with_lent_threads_read_back_and_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let helper = Arc::new(CountingHelper::default());
    let mut opts = small_options();
    opts.memtable_insert_helpers = Some(helper.clone());
    let db = Db::open(dir.path(), opts).unwrap();
    for round in 0..20u32 {
        let mut batch = terrace::WriteBatch::new();
        for i in 0..1000u32 {
            let key = format!("k{:06}", (i * 7919 + round * 13) % 20_000);
            if i % 7 == 0 {
                batch.delete(key.as_bytes());
            } else {
                batch.put(key.as_bytes(), format!("{round}:{i}").as_bytes());
            }
        }
        db.write(batch, terrace::WriteOptions::default()).unwrap();
    }
    assert!(
        helper.helped.load(Ordering::Relaxed) > 0,
        "the lent thread inserted parts"
    );
    let expect = |db: &Db| {
        let mut last = std::collections::BTreeMap::new();
        for round in 0..20u32 {
            for i in 0..1000u32 {
                let key = format!("k{:06}", (i * 7919 + round * 13) % 20_000);
                let value = (i % 7 != 0).then(|| format!("{round}:{i}").into_bytes());
                last.insert(key, value);
            }
        }
        for (key, value) in &last {
            assert_eq!(
                db.get_opt(&ReadOptions::default(), key.as_bytes()).unwrap(),
                *value,
                "{key}"
            );
        }
    };
    expect(&db);
    drop(db);
    let db = Db::open(dir.path(), small_options()).unwrap();
    expect(&db);
}
