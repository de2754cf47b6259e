//! The seams later capabilities plug into, each proven with a second implementation.

use std::sync::Arc;

use terrace::storage::{FaultStorage, FsStorage};
use terrace::{Db, Options};

use crate::{scan_all, small_options};

fn count_tables(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "sst")
        })
        .count()
}

#[test]
fn levels_live_in_two_directories() {
    let root = tempfile::tempdir().unwrap();
    let fast = root.path().join("fast");
    let slow = root.path().join("slow");
    let opts = Options {
        volumes: vec![slow.clone()],
        level_volumes: vec![0, 1, 1, 1, 1, 1, 1],
        ..small_options()
    };
    let db = Db::open(&fast, opts.clone()).unwrap();
    for i in 0..6000u32 {
        db.put(format!("k{i:05}").as_bytes(), &[3u8; 50]).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert!(
        count_tables(&slow) > 0,
        "no table reached the second volume"
    );
    assert_eq!(
        count_tables(&fast),
        0,
        "level 0 should be empty after a full compaction"
    );
    db.close().unwrap();
    let db = Db::open(&fast, opts).unwrap();
    assert_eq!(scan_all(&db).len(), 6000);
}

#[test]
fn background_io_error_makes_the_database_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let fault = FaultStorage::new(Arc::new(FsStorage::new()));
    let opts = Options {
        storage: Arc::new(fault.clone()),
        ..small_options()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    db.put(b"before", b"1").unwrap();
    db.flush().unwrap();
    fault.set_fail_syncs(true);
    let mut failed = None;
    for i in 0..20_000u32 {
        if let Err(e) = db.put(format!("k{i:05}").as_bytes(), &[0u8; 64]) {
            failed = Some(e);
            break;
        }
    }
    let err = failed.expect("writes kept succeeding although every sync fails");
    assert!(
        matches!(
            err,
            terrace::Error::Background(_) | terrace::Error::Io { .. }
        ),
        "{err}"
    );
    // Every later write fails with the stored error; reads still work.
    assert!(db.put(b"later", b"x").is_err());
    assert_eq!(db.get(b"before").unwrap(), Some(b"1".to_vec()));
    assert_ne!(db.property("terrace.background-errors").unwrap(), "0");
}

#[test]
fn compaction_filter_by_name_drops_keys() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        compaction_filter: Some(terrace::compaction::FilterSpec {
            name: "drop-prefix".into(),
            params: "746d703a".into(), // hex of "tmp:"
        }),
        ..small_options()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..500u32 {
        db.put(format!("tmp:{i:04}").as_bytes(), b"scratch")
            .unwrap();
        db.put(format!("keep:{i:04}").as_bytes(), b"data").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let all = scan_all(&db);
    assert_eq!(all.len(), 500);
    assert!(all.iter().all(|(k, _)| k.starts_with(b"keep:")));
}

#[test]
fn subcompactions_produce_the_same_data() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        max_subcompactions: 4,
        ..small_options()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    for round in 0..3u32 {
        for i in 0..4000u32 {
            db.put(
                format!("k{i:05}").as_bytes(),
                format!("r{round}").as_bytes(),
            )
            .unwrap();
        }
    }
    db.compact_range(None, None).unwrap();
    let all = scan_all(&db);
    assert_eq!(all.len(), 4000);
    assert!(all.iter().all(|(_, v)| v == b"r2"));
}

/// A second level 0: the classic files, but with a byte budget instead of file-count
/// triggers (for backpressure and for compaction), and a level 1 four budgets wide;
/// it counts how the database uses it.
#[derive(Default)]
struct ByteBudgetLevel0 {
    flushes: std::sync::atomic::AtomicUsize,
    recovered: std::sync::atomic::AtomicUsize,
    slowdowns: std::sync::atomic::AtomicUsize,
}

impl terrace::level0::Level0 for ByteBudgetLevel0 {
    fn kind(&self) -> &'static str {
        "byte-budget"
    }
    fn flush(
        &self,
        env: &terrace::level0::Level0Env<'_>,
        mem: &Arc<terrace::memtable::MemTable>,
        file_number: u64,
    ) -> terrace::Result<terrace::level0::Level0Flush> {
        self.flushes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        terrace::level0::ClassicLevel0.flush(env, mem, file_number)
    }
    fn empty_state(&self) -> Arc<dyn terrace::version::Level0State> {
        terrace::level0::ClassicLevel0.empty_state()
    }

    fn install(
        &self,
        tables: &Arc<terrace::tables::Tables>,
        version: &Arc<terrace::version::Version>,
    ) -> Arc<dyn terrace::level0::Level0View> {
        terrace::level0::ClassicLevel0.install(tables, version)
    }
    fn size_bytes(&self, version: &terrace::version::Version) -> u64 {
        version.level_bytes(0)
    }
    fn backpressure(
        &self,
        version: &terrace::version::Version,
        _opts: &terrace::level0::Level0Settings,
    ) -> terrace::level0::Backpressure {
        if version.level_bytes(0) > 40 << 10 {
            self.slowdowns
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            terrace::level0::Backpressure::Slowdown
        } else {
            terrace::level0::Backpressure::None
        }
    }
    fn compaction_score(
        &self,
        version: &terrace::version::Version,
        _busy: &std::collections::HashSet<u64>,
        _opts: &terrace::level0::Level0Settings,
    ) -> f64 {
        // Compact once level 0 is past the slowdown budget by a fifth.
        version.level_bytes(0) as f64 / (48 << 10) as f64
    }
    fn level1_target_bytes(
        &self,
        _version: &terrace::version::Version,
        _opts: &terrace::level0::Level0Settings,
    ) -> u64 {
        4 * (64 << 10)
    }
    fn durable_seq(&self, version: &terrace::version::Version) -> u64 {
        terrace::level0::ClassicLevel0.durable_seq(version)
    }
    fn checkpoint(
        &self,
        version: &terrace::version::Version,
    ) -> terrace::Result<Option<Box<dyn terrace::level0::Level0Copy>>> {
        terrace::level0::ClassicLevel0.checkpoint(version)
    }
    fn recover(
        &self,
        env: &terrace::level0::Level0Env<'_>,
        version: &terrace::version::Version,
    ) -> terrace::Result<()> {
        self.recovered
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        terrace::level0::ClassicLevel0.recover(env, version)
    }
}

#[test]
fn a_second_level0_kind_plugs_in() {
    use std::sync::atomic::Ordering::SeqCst;
    let dir = tempfile::tempdir().unwrap();
    let l0 = Arc::new(ByteBudgetLevel0::default());
    let opts = Options {
        level0: l0.clone(),
        // File-count triggers that would never fire: only the byte budget can slow writes
        // or start level-0 compactions.
        level0_file_num_compaction_trigger: 1000,
        level0_slowdown_writes_trigger: 1000,
        level0_stop_writes_trigger: 1000,
        ..small_options()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    assert_eq!(l0.recovered.load(SeqCst), 1);
    for i in 0..6000u32 {
        db.put(format!("k{i:05}").as_bytes(), &[9u8; 40]).unwrap();
    }
    db.flush().unwrap();
    assert!(l0.flushes.load(SeqCst) > 1);
    assert!(
        l0.slowdowns.load(SeqCst) > 0,
        "the byte budget never slowed writes"
    );
    db.wait_for_compactions().unwrap();
    let stats = db.stats();
    assert!(stats.stall_count > 0);
    assert!(
        stats.compactions > 0,
        "the byte score never started a compaction"
    );
    assert!(
        stats.levels[0].bytes < 48 << 10,
        "level 0 holds {} bytes",
        stats.levels[0].bytes
    );
    assert_eq!(stats.levels[1].target_bytes, 4 * (64 << 10));
    db.close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(l0.recovered.load(SeqCst), 2);
    assert_eq!(scan_all(&db).len(), 6000);
}
