//! Many threads writing and reading while flushes and compactions run.

use std::sync::Arc;

use terrace::{Db, ReadOptions};

use crate::small_options;

#[test]
fn concurrent_writers_and_readers() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), small_options()).unwrap());
    let writers: Vec<_> = (0..4u32)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..2500u32 {
                    db.put(
                        format!("t{t}-{i:05}").as_bytes(),
                        format!("{t}:{i}").as_bytes(),
                    )
                    .unwrap();
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2u32)
        .map(|_| {
            let db = db.clone();
            std::thread::spawn(move || {
                for round in 0..30u32 {
                    for t in 0..4u32 {
                        let k = format!("t{t}-{:05}", round * 50);
                        if let Some(v) = db.get(k.as_bytes()).unwrap() {
                            assert_eq!(v, format!("{t}:{}", round * 50).into_bytes());
                        }
                    }
                    let mut it = db.iter(ReadOptions::default()).unwrap();
                    it.seek_to_first().unwrap();
                    let mut prev: Option<Vec<u8>> = None;
                    while it.valid() {
                        if let Some(p) = &prev {
                            assert!(p.as_slice() < it.key());
                        }
                        prev = Some(it.key().to_vec());
                        it.next().unwrap();
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    for r in readers {
        r.join().unwrap();
    }
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
