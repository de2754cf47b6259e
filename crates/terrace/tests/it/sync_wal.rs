//! `Db::sync_wal`: writes acknowledged before it survive a power loss; without it they
//! do not (the negative control shows the test can see a loss); and writers go on while
//! it waits for the device.

use std::path::Path;
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::Duration;

use terrace::storage::{
    FaultStorage, FileLock, FsStorage, IoClass, IoStats, ReadableFile, Storage, SyncHandle,
    WritableFile,
};
use terrace::{Db, Options};

fn power_loss_after(sync: bool) -> Option<Vec<u8>> {
    let tmp = tempfile::tempdir().unwrap();
    let fault = FaultStorage::new(Arc::new(FsStorage::new()));
    let opts = || Options {
        storage: Arc::new(fault.clone()),
        ..Options::default()
    };
    let db = Db::open(tmp.path(), opts()).unwrap();
    db.put(b"k", b"v").unwrap();
    if sync {
        db.sync_wal().unwrap();
    }
    fault.set_fail_syncs(true);
    drop(db);
    fault.set_fail_syncs(false);
    fault.simulate_crash().unwrap();
    let db = Db::open(tmp.path(), opts()).unwrap();
    db.get(b"k").unwrap()
}

#[test]
fn sync_wal_makes_earlier_writes_durable() {
    assert_eq!(power_loss_after(true), Some(b"v".to_vec()));
}

#[test]
fn without_sync_wal_the_write_is_lost() {
    assert_eq!(power_loss_after(false), None);
}

/// A file system whose log files' scheduled syncs (`WritableFile::sync_handle`) wait for
/// the test to open a gate, saying when they start; everything else passes through.
#[derive(Debug)]
struct GatedSyncs {
    inner: FsStorage,
    started: Mutex<mpsc::Sender<()>>,
    gate: Arc<(Mutex<bool>, Condvar)>,
}

struct GatedFile {
    inner: Box<dyn WritableFile>,
    started: mpsc::Sender<()>,
    gate: Arc<(Mutex<bool>, Condvar)>,
}

struct GatedSync {
    inner: Box<dyn SyncHandle>,
    started: mpsc::Sender<()>,
    gate: Arc<(Mutex<bool>, Condvar)>,
}

impl SyncHandle for GatedSync {
    fn sync(&self) -> terrace::Result<()> {
        let _ = self.started.send(());
        let (open, cv) = &*self.gate;
        let mut open = open.lock().unwrap();
        while !*open {
            open = cv.wait(open).unwrap();
        }
        self.inner.sync()
    }
}

impl WritableFile for GatedFile {
    fn append(&mut self, data: &[u8]) -> terrace::Result<()> {
        self.inner.append(data)
    }
    fn flush(&mut self) -> terrace::Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> terrace::Result<()> {
        self.inner.sync()
    }
    fn sync_handle(&mut self) -> terrace::Result<Option<Box<dyn SyncHandle>>> {
        let Some(inner) = self.inner.sync_handle()? else {
            return Ok(None);
        };
        Ok(Some(Box::new(GatedSync {
            inner,
            started: self.started.clone(),
            gate: Arc::clone(&self.gate),
        })))
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl Storage for GatedSyncs {
    fn create_dir_all(&self, dir: &Path) -> terrace::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn create(&self, path: &Path, class: IoClass) -> terrace::Result<Box<dyn WritableFile>> {
        let inner = self.inner.create(path, class)?;
        if class != IoClass::Wal {
            return Ok(inner);
        }
        Ok(Box::new(GatedFile {
            inner,
            started: self.started.lock().unwrap().clone(),
            gate: Arc::clone(&self.gate),
        }))
    }
    fn open(&self, path: &Path) -> terrace::Result<Arc<dyn ReadableFile>> {
        self.inner.open(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> terrace::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> terrace::Result<()> {
        self.inner.remove_file(path)
    }
    fn list(&self, dir: &Path) -> terrace::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn exists(&self, path: &Path) -> terrace::Result<bool> {
        self.inner.exists(path)
    }
    fn sync_dir(&self, dir: &Path) -> terrace::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn link_or_copy(&self, from: &Path, to: &Path) -> terrace::Result<()> {
        self.inner.link_or_copy(from, to)
    }
    fn lock(&self, path: &Path) -> terrace::Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
    fn io_stats(&self) -> &IoStats {
        self.inner.io_stats()
    }
}

/// A server's once-a-second `sync_wal` does not hold writers up while the device syncs:
/// a write made during a sync that cannot finish completes, and the sync then succeeds.
/// (With the sync under the log's lock, the write waited for the gate and the test timed
/// out.)
#[test]
fn writes_go_on_while_sync_wal_waits_for_the_device() {
    let tmp = tempfile::tempdir().unwrap();
    let (started_tx, started) = mpsc::channel();
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let storage = GatedSyncs {
        inner: FsStorage::new(),
        started: Mutex::new(started_tx),
        gate: Arc::clone(&gate),
    };
    let opts = Options {
        storage: Arc::new(storage),
        ..Options::default()
    };
    let db = Arc::new(Db::open(tmp.path(), opts).unwrap());
    db.put(b"before", b"1").unwrap();
    let syncing = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || db.sync_wal())
    };
    started
        .recv_timeout(Duration::from_secs(10))
        .expect("the sync reached the device");
    let (done_tx, done) = mpsc::channel();
    let writer = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            let r = db.put(b"during", b"2");
            let _ = done_tx.send(());
            r
        })
    };
    let wrote = done.recv_timeout(Duration::from_secs(5));
    // Open the gate whatever happened, so that no thread is left waiting on it.
    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
    assert!(wrote.is_ok(), "the write waited for the sync");
    writer.join().unwrap().unwrap();
    syncing.join().unwrap().unwrap();
    assert_eq!(db.get(b"during").unwrap(), Some(b"2".to_vec()));
}

/// Once the active memtable is seven eighths full, a background thread syncs its log
/// ahead of the switch (which syncs it again under the log's lock, then with only the
/// records since): a WAL sync happens with no `sync_wal` call and no switch yet.
#[test]
fn a_nearly_full_memtable_has_its_log_synced_in_the_background() {
    let tmp = tempfile::tempdir().unwrap();
    let storage = Arc::new(FsStorage::new());
    let buffer = 4usize << 20;
    let opts = Options {
        storage: storage.clone(),
        write_buffer_size: buffer,
        ..Options::default()
    };
    let db = Db::open(tmp.path(), opts).unwrap();
    let syncs = || storage.io_stats().get(IoClass::Wal).sync_ops;
    let memtable_bytes = || -> usize {
        db.property("terrace.cur-size-all-mem-tables")
            .unwrap()
            .parse()
            .unwrap()
    };
    let before = syncs();
    let value = vec![7u8; 1000];
    let mut i = 0u64;
    // Up to 15/16 of the buffer: past the mark, short of the switch.
    while memtable_bytes() < buffer / 16 * 15 {
        db.put(format!("key{i:08}").as_bytes(), &value).unwrap();
        i += 1;
    }
    assert_eq!(
        db.property("terrace.num-immutable-mem-table").as_deref(),
        Some("0"),
        "the memtable switched before the check"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while syncs() == before && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(syncs() > before, "no background sync of the log");
    assert_eq!(
        db.property("terrace.num-immutable-mem-table").as_deref(),
        Some("0")
    );
}
