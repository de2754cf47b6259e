//! Read-triggered compaction of level 0 (`Options::read_triggered_compaction`): seeks
//! that keep reading through level-0 tables below the file-count trigger get them
//! compacted into the base level; with the option off they stay.

use std::time::{Duration, Instant};

use terrace::{Db, Options, ReadOptions};

fn files_at(db: &Db, level: usize) -> usize {
    db.property(&format!("terrace.num-files-at-level{level}"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Two level-0 tables over the same keys (below the trigger of 4), then `seeks` seeks.
fn two_tables_then_seeks(read_triggered: bool, seeks: usize) -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        read_triggered_compaction: read_triggered,
        level0_file_num_compaction_trigger: 4,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    for round in 0..2u32 {
        for i in 0..500u32 {
            let key = format!("key{:05}", i * 2 + round);
            db.put(key.as_bytes(), format!("v{round}-{i}").as_bytes())
                .unwrap();
        }
        db.flush().unwrap();
    }
    assert_eq!(files_at(&db, 0), 2);
    for i in 0..seeks {
        let mut it = db.iter(ReadOptions::default()).unwrap();
        let target = format!("key{:05}", (i * 7) % 1000);
        it.seek(target.as_bytes()).unwrap();
        assert!(it.valid());
        assert_eq!(it.key(), target.as_bytes());
    }
    (dir, db)
}

#[test]
fn seeks_through_level0_compact_it_below_the_file_count_trigger() {
    // Two small tables: at least 100 reads each, one per table per seek: 100 seeks.
    let (_dir, db) = two_tables_then_seeks(true, 150);
    let deadline = Instant::now() + Duration::from_secs(20);
    while files_at(&db, 0) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(files_at(&db, 0), 0, "level 0 was compacted");
    assert!((1..7).any(|l| files_at(&db, l) > 0));
    // Nothing was lost or changed.
    for i in 0..1000u32 {
        let (round, n) = (i % 2, i / 2);
        let got = db.get(format!("key{i:05}").as_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(format!("v{round}-{n}").as_bytes()));
    }
}

#[test]
fn too_few_seeks_or_the_option_off_leave_level0_alone() {
    let (_dir, db) = two_tables_then_seeks(true, 90);
    db.wait_for_compactions().unwrap();
    assert_eq!(files_at(&db, 0), 2, "below the budget");
    let (_dir, db) = two_tables_then_seeks(false, 300);
    db.wait_for_compactions().unwrap();
    assert_eq!(files_at(&db, 0), 2, "the option is off");
}
