//! Several flushes at once: a newer memtable's flush that finishes first waits for the
//! older one, and the results are installed in memtable order.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use terrace::storage::{
    FileLock, FsStorage, IoClass, IoStats, ReadableFile, Storage, WritableFile,
};
use terrace::{Db, Options};

/// A storage that holds the first flush's table creation until the test opens the gate,
/// and counts the flush tables created.
#[derive(Debug, Default)]
struct GateStorage {
    fs: FsStorage,
    state: Mutex<Gate>,
    cv: Condvar,
}

#[derive(Debug, Default)]
struct Gate {
    open: bool,
    flush_creates: u32,
}

impl GateStorage {
    fn release(&self) {
        self.state.lock().open = true;
        self.cv.notify_all();
    }

    fn flush_creates(&self) -> u32 {
        self.state.lock().flush_creates
    }
}

impl Storage for GateStorage {
    fn create_dir_all(&self, dir: &Path) -> terrace::Result<()> {
        self.fs.create_dir_all(dir)
    }
    fn create(&self, path: &Path, class: IoClass) -> terrace::Result<Box<dyn WritableFile>> {
        if class == IoClass::Flush {
            let mut st = self.state.lock();
            st.flush_creates += 1;
            let first = st.flush_creates == 1;
            self.cv.notify_all();
            while first && !st.open {
                self.cv.wait(&mut st);
            }
        }
        self.fs.create(path, class)
    }
    fn open(&self, path: &Path) -> terrace::Result<Arc<dyn ReadableFile>> {
        self.fs.open(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> terrace::Result<()> {
        self.fs.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> terrace::Result<()> {
        self.fs.remove_file(path)
    }
    fn list(&self, dir: &Path) -> terrace::Result<Vec<String>> {
        self.fs.list(dir)
    }
    fn exists(&self, path: &Path) -> terrace::Result<bool> {
        self.fs.exists(path)
    }
    fn sync_dir(&self, dir: &Path) -> terrace::Result<()> {
        self.fs.sync_dir(dir)
    }
    fn link_or_copy(&self, from: &Path, to: &Path) -> terrace::Result<()> {
        self.fs.link_or_copy(from, to)
    }
    fn lock(&self, path: &Path) -> terrace::Result<Box<dyn FileLock>> {
        self.fs.lock(path)
    }
    fn io_stats(&self) -> &IoStats {
        self.fs.io_stats()
    }
}

fn files_at_level0(db: &Db) -> usize {
    db.property("terrace.num-files-at-level0")
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX)
}

/// Waits until `cond` holds (a background thread's progress), for up to 20 seconds.
fn eventually(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting: {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_newer_flush_that_finishes_first_is_installed_after_the_older_one() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(GateStorage::default());
    let opts = Options {
        storage: storage.clone(),
        write_buffer_size: 64 << 10,
        max_write_buffer_number: 4,
        max_background_flushes: 2,
        level0_file_num_compaction_trigger: 100,
        level0_slowdown_writes_trigger: 200,
        level0_stop_writes_trigger: 300,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let value = |round: u32| format!("round{round}-{}", "v".repeat(200));
    // Round 0 fills the first memtable; round 1 overwrites the same keys in the second.
    for round in 0..2u32 {
        for i in 0..400u32 {
            db.put(format!("k{i:04}").as_bytes(), value(round).as_bytes())
                .unwrap();
        }
    }
    // The first memtable's flush is held at its table's creation; the second one's ran
    // beside it and finished, but must not be installed before the first.
    eventually("the second flush", || storage.flush_creates() >= 2);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        files_at_level0(&db),
        0,
        "a newer flush was installed before an older one"
    );
    for i in (0..400u32).step_by(37) {
        let got = db.get(format!("k{i:04}").as_bytes()).unwrap();
        assert_eq!(
            got,
            Some(value(1).into_bytes()),
            "reads see the newest value meanwhile"
        );
    }
    storage.release();
    db.flush().unwrap();
    assert!(files_at_level0(&db) >= 2);
    for i in 0..400u32 {
        let got = db.get(format!("k{i:04}").as_bytes()).unwrap();
        assert_eq!(got, Some(value(1).into_bytes()), "k{i:04}");
    }
    drop(db);
    let reopened = Db::open(
        dir.path(),
        Options {
            storage: Arc::new(FsStorage::new()),
            ..opts
        },
    )
    .unwrap();
    for i in 0..400u32 {
        let got = reopened.get(format!("k{i:04}").as_bytes()).unwrap();
        assert_eq!(got, Some(value(1).into_bytes()), "after reopen: k{i:04}");
    }
}
