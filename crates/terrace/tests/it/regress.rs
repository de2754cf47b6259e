//! Regression tests, each named after the bug it pins down.

use std::sync::Arc;

use terrace::storage::{FaultStorage, FsStorage};
use terrace::{Compression, Db, Options};

fn fault_options(fault: &FaultStorage) -> Options {
    let mut o = crate::small_options();
    o.storage = Arc::new(fault.clone());
    // Only explicit compactions: the tests decide when files move.
    o.level0_file_num_compaction_trigger = 100;
    o.level0_slowdown_writes_trigger = 200;
    o.level0_stop_writes_trigger = 300;
    o
}

fn k(i: u32) -> Vec<u8> {
    format!("key-{i:06}").into_bytes()
}

/// Compaction outputs were synced but their directory entries were not: after a crash the
/// manifest named level-1 files that no longer existed, and the inputs were already gone.
#[test]
fn compaction_outputs_survive_a_crash_after_install() {
    let dir = tempfile::tempdir().unwrap();
    let fault = FaultStorage::new(Arc::new(FsStorage::new()));
    {
        let db = Db::open(dir.path(), fault_options(&fault)).unwrap();
        for i in 0..2000 {
            db.put(&k(i), b"value").unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        assert_eq!(db.property("terrace.num-files-at-level0").unwrap(), "0");
    }
    fault.simulate_crash().unwrap();
    let db = Db::open(dir.path(), crate::small_options()).unwrap();
    for i in 0..2000 {
        assert_eq!(
            db.get(&k(i)).unwrap().as_deref(),
            Some(&b"value"[..]),
            "key {i}"
        );
    }
}

/// Output file numbers were reserved from the inputs' file sizes; inputs written with
/// compression and rewritten without it needed more files than reserved, and the
/// compaction failed with "ran out of pre-allocated file numbers", which made the whole
/// database read-only.
#[test]
fn compaction_of_compressed_inputs_into_uncompressed_outputs_does_not_run_out_of_files() {
    let dir = tempfile::tempdir().unwrap();
    let opts = |compression| Options {
        compression,
        level0_file_num_compaction_trigger: 100,
        level0_slowdown_writes_trigger: 200,
        level0_stop_writes_trigger: 300,
        ..crate::small_options()
    };
    let value = vec![b'a'; 1000];
    {
        let db = Db::open(dir.path(), opts(Compression::Lz4)).unwrap();
        for i in 0..2000 {
            db.put(&k(i), &value).unwrap();
        }
        db.flush().unwrap();
    }
    let db = Db::open(dir.path(), opts(Compression::None)).unwrap();
    db.compact_range(None, None).unwrap();
    db.put(b"still", b"writable").unwrap();
    for i in (0..2000).step_by(97) {
        assert_eq!(db.get(&k(i)).unwrap().as_deref(), Some(&value[..]));
    }
}

/// A memtable switch that failed inside `Db::flush` (new log created, directory or old
/// log sync failed) returned the error but left the database writable, while the same
/// failure on the write path makes it read-only: a failed log sync must stop writes.
#[test]
fn failed_memtable_switch_in_flush_makes_the_database_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let fault = FaultStorage::new(Arc::new(FsStorage::new()));
    let db = Db::open(dir.path(), fault_options(&fault)).unwrap();
    db.put(b"a", b"1").unwrap();
    fault.set_fail_syncs(true);
    assert!(db.flush().is_err());
    fault.set_fail_syncs(false);
    let after = db.put(b"b", b"2");
    assert!(
        matches!(after, Err(terrace::Error::Background(_))),
        "write after a failed log switch: {after:?}"
    );
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
}

/// `Db::close` promised to report the background error that stopped the database, but
/// returned only the result of its final log sync: a database that had failed to flush
/// closed with `Ok`.
#[test]
fn close_reports_the_background_error() {
    let dir = tempfile::tempdir().unwrap();
    let fault = FaultStorage::new(Arc::new(FsStorage::new()));
    let db = Db::open(dir.path(), fault_options(&fault)).unwrap();
    db.put(b"a", b"1").unwrap();
    fault.set_fail_writes(true);
    assert!(db.flush().is_err());
    fault.set_fail_writes(false);
    assert!(matches!(
        db.put(b"b", b"2"),
        Err(terrace::Error::Background(_))
    ));
    let closed = db.close();
    assert!(
        matches!(closed, Err(terrace::Error::Background(_))),
        "close after a background error: {closed:?}"
    );
}

/// Fails the directory sync that follows a rename onto CURRENT, once armed: the rename
/// has happened, so CURRENT names the new manifest, but the switch reports an error.
#[derive(Debug)]
struct FailCurrentDirSync {
    inner: FsStorage,
    armed: std::sync::atomic::AtomicBool,
    renamed: std::sync::atomic::AtomicBool,
}

impl terrace::storage::Storage for FailCurrentDirSync {
    fn create_dir_all(&self, dir: &std::path::Path) -> terrace::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn create(
        &self,
        path: &std::path::Path,
        class: terrace::storage::IoClass,
    ) -> terrace::Result<Box<dyn terrace::storage::WritableFile>> {
        self.inner.create(path, class)
    }
    fn open(
        &self,
        path: &std::path::Path,
    ) -> terrace::Result<Arc<dyn terrace::storage::ReadableFile>> {
        self.inner.open(path)
    }
    fn rename(&self, from: &std::path::Path, to: &std::path::Path) -> terrace::Result<()> {
        self.inner.rename(from, to)?;
        if to.file_name().is_some_and(|n| n == "CURRENT") {
            self.renamed
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(())
    }
    fn remove_file(&self, path: &std::path::Path) -> terrace::Result<()> {
        self.inner.remove_file(path)
    }
    fn list(&self, dir: &std::path::Path) -> terrace::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn exists(&self, path: &std::path::Path) -> terrace::Result<bool> {
        self.inner.exists(path)
    }
    fn sync_dir(&self, dir: &std::path::Path) -> terrace::Result<()> {
        use std::sync::atomic::Ordering::SeqCst;
        if self.armed.load(SeqCst) && self.renamed.swap(false, SeqCst) {
            self.armed.store(false, SeqCst);
            return Err(terrace::Error::Io {
                path: dir.to_path_buf(),
                source: Arc::new(std::io::Error::other("injected directory sync failure")),
            });
        }
        self.renamed.store(false, SeqCst);
        self.inner.sync_dir(dir)
    }
    fn link_or_copy(&self, from: &std::path::Path, to: &std::path::Path) -> terrace::Result<()> {
        self.inner.link_or_copy(from, to)
    }
    fn lock(&self, path: &std::path::Path) -> terrace::Result<Box<dyn terrace::storage::FileLock>> {
        self.inner.lock(path)
    }
    fn io_stats(&self) -> &terrace::storage::IoStats {
        self.inner.io_stats()
    }
}

/// When switching CURRENT to a new manifest failed after the rename (the directory sync
/// failed), the compaction's clean-up deleted every manifest but the old one, including
/// the new one CURRENT now named: the database could not be opened again.
#[test]
fn failed_manifest_switch_never_deletes_the_manifest_current_names() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(FailCurrentDirSync {
        inner: FsStorage::new(),
        armed: false.into(),
        renamed: false.into(),
    });
    let mut opts = crate::small_options();
    opts.storage = storage.clone();
    // Every edit starts a new manifest.
    opts.max_manifest_file_size = 1;
    opts.level0_file_num_compaction_trigger = 100;
    opts.level0_slowdown_writes_trigger = 200;
    opts.level0_stop_writes_trigger = 300;
    let db = Db::open(dir.path(), opts).unwrap();
    for i in 0..500 {
        db.put(&k(i), b"value").unwrap();
    }
    db.flush().unwrap();
    storage
        .armed
        .store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(db.compact_range(None, None).is_err());
    drop(db);
    let db = Db::open(dir.path(), crate::small_options())
        .unwrap_or_else(|e| panic!("reopen after a failed manifest switch: {e}"));
    assert_eq!(db.get(&k(7)).unwrap().as_deref(), Some(&b"value"[..]));
}

/// An empty range deletion (start equal to end) once made the next flush fail, leaving
/// the database read-only and unable to reopen.
#[test]
fn an_empty_range_deletion_deletes_nothing_and_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let db = crate::open(dir.path(), crate::small_options());
    db.put(b"a", b"1").unwrap();
    db.delete_range(b"a", b"a").unwrap();
    let mut b = terrace::WriteBatch::new();
    b.delete_range(b"z", b"b");
    db.write(b, terrace::WriteOptions::default()).unwrap();
    db.flush().unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    db.close().unwrap();
    let db = crate::open(dir.path(), crate::small_options());
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
}
