//! Fault injection: a storage that behaves like a machine that can lose power.
//!
//! Bytes appended to a file stay in this process's memory until the file is synced, so
//! killing the process (SIGKILL) loses exactly what a power failure would. Files created
//! since their directory was last synced can be dropped with [`FaultStorage::simulate_crash`]
//! (in-process crash tests), and writes or syncs can be made to fail to test error paths:
//! wholesale (`set_fail_writes`, `set_fail_syncs`) or by rule ([`FaultRule`]: chosen
//! operations on chosen files fail with `ENOSPC` or `EIO`, reads included).

mod rules;

pub use rules::{FaultOp, FaultRule, InjectedError};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{
    FileLock, IoClass, IoStats, PointKind, PowerSupply, ReadableFile, Storage, Verdict,
    WritableFile,
};
use crate::error::{Error, Result};

#[derive(Debug, Default)]
struct FaultState {
    fail_writes: AtomicBool,
    fail_syncs: AtomicBool,
    /// Files created or renamed into place whose directory has not been synced since,
    /// each with the durable content the name had before (`None`: no file), which a
    /// crash brings back.
    undurable_names: Mutex<BTreeMap<PathBuf, Option<Vec<u8>>>>,
    /// The simulated power supply every sync asks first (see [`PowerSupply`]).
    power: Option<Arc<PowerSupply>>,
    /// Errors injected by rule.
    rules: rules::Rules,
}

impl FaultState {
    /// Whether file creations, renames and removals must fail (injected, or no power).
    fn writes_fail(&self) -> bool {
        self.fail_writes.load(Ordering::SeqCst) || self.power.as_ref().is_some_and(|p| p.is_out())
    }

    /// What a sync of `kind` must do.
    fn sync_verdict(&self, kind: PointKind) -> Verdict {
        if self.fail_syncs.load(Ordering::SeqCst) {
            return Verdict::Fail;
        }
        self.power
            .as_ref()
            .map_or(Verdict::Durable, |p| p.point(kind))
    }
}

/// Wraps another storage; unsynced data lives only in memory. See the module docs.
#[derive(Debug, Clone)]
pub struct FaultStorage {
    inner: Arc<dyn Storage>,
    state: Arc<FaultState>,
}

impl FaultStorage {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Storage>) -> Self {
        FaultStorage {
            inner,
            state: Arc::default(),
        }
    }

    /// Wraps `inner`, asking `power` at every sync and, once its power is out, failing
    /// every sync, creation, rename and removal (appends still succeed: they stay in
    /// memory and are lost with the crash).
    pub fn with_power(inner: Arc<dyn Storage>, power: Arc<PowerSupply>) -> Self {
        FaultStorage {
            inner,
            state: Arc::new(FaultState {
                power: Some(power),
                ..FaultState::default()
            }),
        }
    }

    /// Makes every later append (and file creation) fail with an I/O error while `on`.
    pub fn set_fail_writes(&self, on: bool) {
        self.state.fail_writes.store(on, Ordering::SeqCst);
    }

    /// Makes every later sync fail with an I/O error while `on`.
    pub fn set_fail_syncs(&self, on: bool) {
        self.state.fail_syncs.store(on, Ordering::SeqCst);
    }

    /// Arms `rule`: matching operations fail with its error (see [`FaultRule`]). Rules
    /// are checked in the order they were armed; the first that hits decides.
    pub fn inject(&self, rule: FaultRule) {
        self.state.rules.arm(rule);
    }

    /// Disarms every rule (the device has space again, or was repaired).
    pub fn clear_faults(&self) {
        self.state.rules.clear();
    }

    /// Errors injected by rule so far.
    pub fn injected_faults(&self) -> u64 {
        self.state.rules.injected()
    }

    /// Undoes every file creation and rename since its directory was last synced, as a
    /// power failure may: a new name vanishes, and a name that a rename replaced gets
    /// its old, durable content back (the source of the rename is not brought back:
    /// the engine renames only temporary files). Unsynced appends are already absent
    /// from the underlying files. Call it only when no database uses this storage.
    ///
    /// # Errors
    /// I/O errors of the underlying storage.
    pub fn simulate_crash(&self) -> Result<()> {
        let names = std::mem::take(&mut *self.state.undurable_names.lock());
        for (p, before) in names {
            match before {
                Some(old) => {
                    let mut f = self.inner.create(&p, IoClass::Manifest)?;
                    f.append(&old)?;
                    f.sync()?;
                }
                None => {
                    if self.inner.exists(&p)? {
                        self.inner.remove_file(&p)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn injected(what: &str, path: &Path) -> Error {
        Error::io(
            path,
            std::io::Error::other(format!("injected {what} failure")),
        )
    }
}

struct FaultWritable {
    path: PathBuf,
    inner: Box<dyn WritableFile>,
    pending: Vec<u8>,
    len: u64,
    class: IoClass,
    state: Arc<FaultState>,
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if self.state.fail_writes.load(Ordering::SeqCst) {
            return Err(FaultStorage::injected("write", &self.path));
        }
        self.state
            .rules
            .check(FaultOp::Append, &self.path, Some(self.class))?;
        self.pending.extend_from_slice(data);
        self.len += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.state
            .rules
            .check(FaultOp::Sync, &self.path, Some(self.class))?;
        match self.state.sync_verdict(PointKind::Sync(self.class)) {
            Verdict::Fail => return Err(FaultStorage::injected("sync", &self.path)),
            Verdict::Lie => return Ok(()),
            Verdict::Durable => {}
        }
        if !self.pending.is_empty() {
            self.inner.append(&self.pending)?;
            self.pending.clear();
        }
        self.inner.sync()
    }

    fn len(&self) -> u64 {
        self.len
    }
}

/// A file opened for reading; reads can be made to fail by rule.
struct FaultReadable {
    path: PathBuf,
    inner: Arc<dyn ReadableFile>,
    state: Arc<FaultState>,
}

impl ReadableFile for FaultReadable {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8], class: IoClass) -> Result<()> {
        self.state
            .rules
            .check(FaultOp::Read, &self.path, Some(class))?;
        self.inner.read_exact_at(offset, buf, class)
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl Storage for FaultStorage {
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.create_dir_all(dir)
    }

    fn create(&self, path: &Path, class: IoClass) -> Result<Box<dyn WritableFile>> {
        if self.state.writes_fail() {
            return Err(FaultStorage::injected("create", path));
        }
        self.state.rules.check(FaultOp::Create, path, Some(class))?;
        let inner = self.inner.create(path, class)?;
        self.state
            .undurable_names
            .lock()
            .entry(path.to_path_buf())
            .or_insert(None);
        Ok(Box::new(FaultWritable {
            path: path.to_path_buf(),
            inner,
            pending: Vec::new(),
            len: 0,
            class,
            state: self.state.clone(),
        }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn ReadableFile>> {
        self.state.rules.check(FaultOp::Read, path, None)?;
        Ok(Arc::new(FaultReadable {
            path: path.to_path_buf(),
            inner: self.inner.open(path)?,
            state: self.state.clone(),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        if self.state.writes_fail() {
            return Err(FaultStorage::injected("rename", from));
        }
        self.state.rules.check(FaultOp::Rename, from, None)?;
        let mut names = self.state.undurable_names.lock();
        // What a crash restores at `to`: what it held durably before this rename.
        let before = match names.get(to) {
            Some(before) => before.clone(),
            None if self.inner.exists(to)? => Some(self.inner.read_all(to, IoClass::Manifest)?),
            None => None,
        };
        self.inner.rename(from, to)?;
        names.remove(from);
        names.insert(to.to_path_buf(), before);
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        if self.state.power.as_ref().is_some_and(|p| p.is_out()) {
            return Err(FaultStorage::injected("remove", path));
        }
        self.state.rules.check(FaultOp::Remove, path, None)?;
        self.state.undurable_names.lock().remove(path);
        self.inner.remove_file(path)
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list(dir)
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        self.inner.exists(path)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.state.rules.check(FaultOp::DirSync, dir, None)?;
        match self.state.sync_verdict(PointKind::DirSync) {
            Verdict::Fail => return Err(FaultStorage::injected("directory sync", dir)),
            Verdict::Lie => return Ok(()),
            Verdict::Durable => {}
        }
        self.inner.sync_dir(dir)?;
        self.state
            .undurable_names
            .lock()
            .retain(|p, _| p.parent() != Some(dir));
        Ok(())
    }

    fn link_or_copy(&self, from: &Path, to: &Path) -> Result<()> {
        self.state.rules.check(FaultOp::Link, from, None)?;
        self.inner.link_or_copy(from, to)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }

    fn io_stats(&self) -> &IoStats {
        self.inner.io_stats()
    }
}
