//! Fault injection: a storage that behaves like a machine that can lose power.
//!
//! Bytes appended to a file stay in this process's memory (the simulated page cache) until
//! the file is synced; reads see them, as reads of a file written but not yet synced see
//! the operating system's page cache. Killing the process (SIGKILL) loses exactly those
//! bytes. In-process crash tests call [`FaultStorage::simulate_crash`], which emulates a
//! power cut according to the storage's [`CrashMode`]:
//!
//! - what reaches each file of its unsynced tail: nothing ([`CrashMode::DropUnsynced`], the
//!   default), a prefix torn at a 4 KiB page boundary ([`CrashMode::PartialPages`]), or
//!   any subset of its pages with the lost ones read back as zeros where the file's new
//!   size covers them ([`CrashMode::ZeroPages`]);
//! - directory entries: creations, renames, links (`link_or_copy`) and removals since the
//!   directory was last synced are undone: a new name vanishes, a replaced or removed name
//!   comes back with its durable content.
//!
//! A failed sync (injected: `set_fail_syncs`, a [`FaultRule`]) drops the file's unsynced
//! bytes, as Linux may after a failed `fsync` (it marks the dirty pages clean and reports
//! the error once): they read back as zeros, a later sync that succeeds writes those zeros,
//! and a crash leaves zeros at best. A sync refused because the simulated power is out is not
//! a device error: its bytes stay pending and the crash mode decides their fate.
//!
//! What it does not emulate: a page torn inside itself (sectors), a synced byte that
//! changes (bit rot; the corruption tests flip bytes themselves), a sync that succeeds
//! without writing (but [`PowerSupply::lie`] makes chosen syncs do that), directory
//! operations that a file system made durable on its own before the cut (a journal
//! commit: a crash undoes all of a directory's unsynced operations, never some), the source of a rename coming back, and the page cache of another
//! process: a SIGKILLed child's unsynced bytes are simply gone, whatever the mode.
//!
//! Writes or syncs can also be made to fail to test error paths: wholesale
//! (`set_fail_writes`, `set_fail_syncs`) or by rule ([`FaultRule`]: chosen operations on
//! chosen files fail with `ENOSPC` or `EIO`, reads included).

mod crash;
mod rules;

pub use crash::{CrashMode, PAGE_BYTES};
pub use rules::{FaultOp, FaultRule, InjectedError};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{
    FileLock, IoClass, IoStats, PointKind, PowerSupply, ReadableFile, Storage, Verdict,
    WritableFile,
};
use crate::error::{Error, Result};

/// A file's bytes as the simulated page cache holds them.
#[derive(Debug)]
struct FileData {
    /// Bytes in the underlying file: made durable by syncs.
    synced: u64,
    /// Bytes appended after them, only in memory (zeros where a failed sync dropped them).
    pending: Vec<u8>,
    /// The class a crash's rewrite of the file is counted under.
    class: IoClass,
}

type Shared = Arc<Mutex<FileData>>;

#[derive(Debug, Default)]
struct FaultState {
    fail_writes: AtomicBool,
    fail_syncs: AtomicBool,
    /// Names created, renamed into place, linked or removed whose directory has not been
    /// synced since, each with the durable content the name had before (`None`: no file),
    /// which a crash brings back.
    undurable_names: Mutex<BTreeMap<PathBuf, Option<Vec<u8>>>>,
    /// Files written through this storage: their unsynced bytes, by current name (a hard
    /// link shares its source's entry). Lock order: `undurable_names`, then `files`, then
    /// a file's data.
    files: Mutex<BTreeMap<PathBuf, Shared>>,
    /// What a crash does to unsynced bytes.
    crash_mode: Mutex<CrashMode>,
    /// Crashes simulated so far (a crash's number is one of the inputs of its choices).
    crashes: AtomicU64,
    /// The simulated power supply every sync asks first (see [`PowerSupply`]).
    power: Option<Arc<PowerSupply>>,
    /// Errors injected by rule.
    rules: rules::Rules,
}

impl FaultState {
    /// Whether file creations, renames and links must fail (injected, or no power).
    fn writes_fail(&self) -> bool {
        self.fail_writes.load(Ordering::SeqCst) || self.power_out()
    }

    fn power_out(&self) -> bool {
        self.power.as_ref().is_some_and(|p| p.is_out())
    }

    /// What a sync of `kind` must do (before injected failures, which the caller checks).
    fn power_verdict(&self, kind: PointKind) -> Verdict {
        self.power
            .as_ref()
            .map_or(Verdict::Durable, |p| p.point(kind))
    }

    /// Records that the name `path` is about to change (created, replaced, linked or
    /// removed) without its directory being synced: the first change since the last
    /// directory sync remembers what a crash must bring back.
    fn name_changes(
        &self,
        names: &mut BTreeMap<PathBuf, Option<Vec<u8>>>,
        inner: &dyn Storage,
        path: &Path,
    ) -> Result<()> {
        if names.contains_key(path) {
            return Ok(());
        }
        // The underlying file holds exactly the synced bytes.
        let before = if inner.exists(path)? {
            Some(inner.read_all(path, IoClass::Manifest)?)
        } else {
            None
        };
        names.insert(path.to_path_buf(), before);
        Ok(())
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
    /// every sync, creation, rename, link and removal (appends still succeed: they stay in
    /// memory, and the crash decides their fate).
    pub fn with_power(inner: Arc<dyn Storage>, power: Arc<PowerSupply>) -> Self {
        FaultStorage {
            inner,
            state: Arc::new(FaultState {
                power: Some(power),
                ..FaultState::default()
            }),
        }
    }

    /// Chooses what later crashes do to unsynced bytes (see [`CrashMode`]).
    pub fn set_crash_mode(&self, mode: CrashMode) {
        *self.state.crash_mode.lock() = mode;
    }

    /// The current crash mode.
    pub fn crash_mode(&self) -> CrashMode {
        *self.state.crash_mode.lock()
    }

    /// Makes every later append (and file creation) fail with an I/O error while `on`.
    pub fn set_fail_writes(&self, on: bool) {
        self.state.fail_writes.store(on, Ordering::SeqCst);
    }

    /// Makes every later sync fail with an I/O error while `on` (dropping the file's
    /// unsynced bytes, see the module docs).
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

    /// Simulates a power cut and the restart after it. First each file's unsynced tail
    /// reaches the file as the [`CrashMode`] decides (nothing, by default); then every
    /// creation, rename, link and removal since its directory was last synced is undone:
    /// a new name vanishes, and a name that was replaced or removed gets its old, durable
    /// content back (the source of a rename is not brought back: the engine renames only
    /// temporary files). The simulated page cache is empty afterwards. Call it only when
    /// no database uses this storage.
    ///
    /// # Errors
    /// I/O errors of the underlying storage.
    pub fn simulate_crash(&self) -> Result<()> {
        let crash = self.state.crashes.fetch_add(1, Ordering::SeqCst);
        let mode = self.crash_mode();
        let files = std::mem::take(&mut *self.state.files.lock());
        // Names sharing one file (hard links) get one outcome, drawn for the first name.
        let mut done: Vec<*const Mutex<FileData>> = Vec::new();
        for (path, data) in &files {
            let ptr = Arc::as_ptr(data);
            if done.contains(&ptr) {
                continue;
            }
            done.push(ptr);
            let data = data.lock();
            let tail = crash::surviving_tail(mode, crash, path, data.synced, &data.pending);
            if tail.is_empty() {
                continue;
            }
            for (name, other) in &files {
                if Arc::as_ptr(other) != ptr || !self.inner.exists(name)? {
                    continue;
                }
                let mut bytes = self.inner.read_all(name, data.class)?;
                bytes.truncate(usize::try_from(data.synced).unwrap_or(usize::MAX));
                bytes.extend_from_slice(&tail);
                let mut f = self.inner.create(name, data.class)?;
                f.append(&bytes)?;
                f.sync()?;
            }
        }
        let names = std::mem::take(&mut *self.state.undurable_names.lock());
        for (p, before) in names {
            // Unlinked first: the name may be a hard link whose other names keep theirs.
            if self.inner.exists(&p)? {
                self.inner.remove_file(&p)?;
            }
            if let Some(old) = before {
                let mut f = self.inner.create(&p, IoClass::Manifest)?;
                f.append(&old)?;
                f.sync()?;
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

    /// Moves the page-cache entries of `from` (a file, or a directory and everything in
    /// it) to `to`, dropping what `to` held.
    fn rename_entries(&self, from: &Path, to: &Path) {
        let mut files = self.state.files.lock();
        files.remove(to);
        let moved: Vec<PathBuf> = files
            .keys()
            .filter(|p| p.starts_with(from))
            .cloned()
            .collect();
        for p in moved {
            if let (Some(data), Ok(rest)) = (files.remove(&p), p.strip_prefix(from)) {
                let target = if rest.as_os_str().is_empty() {
                    to.to_path_buf()
                } else {
                    to.join(rest)
                };
                files.insert(target, data);
            }
        }
    }
}

struct FaultWritable {
    path: PathBuf,
    inner: Box<dyn WritableFile>,
    data: Shared,
    class: IoClass,
    state: Arc<FaultState>,
}

impl FaultWritable {
    /// The sync failed on the device: its unsynced bytes are dropped (see the module docs).
    fn sync_failed(&self, e: Error) -> Error {
        self.data.lock().pending.fill(0);
        e
    }
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if self.state.fail_writes.load(Ordering::SeqCst) {
            return Err(FaultStorage::injected("write", &self.path));
        }
        self.state
            .rules
            .check(FaultOp::Append, &self.path, Some(self.class))?;
        self.data.lock().pending.extend_from_slice(data);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        if let Err(e) = self
            .state
            .rules
            .check(FaultOp::Sync, &self.path, Some(self.class))
        {
            return Err(self.sync_failed(e));
        }
        if self.state.fail_syncs.load(Ordering::SeqCst) {
            return Err(self.sync_failed(FaultStorage::injected("sync", &self.path)));
        }
        match self.state.power_verdict(PointKind::Sync(self.class)) {
            // The power is out: the bytes stay pending, and the crash decides.
            Verdict::Fail => return Err(FaultStorage::injected("sync", &self.path)),
            Verdict::Lie => return Ok(()),
            Verdict::Durable => {}
        }
        let mut data = self.data.lock();
        if !data.pending.is_empty() {
            self.inner.append(&data.pending)?;
            data.synced += data.pending.len() as u64;
            data.pending.clear();
        }
        self.inner.sync()
    }

    fn len(&self) -> u64 {
        let data = self.data.lock();
        data.synced + data.pending.len() as u64
    }
}

impl Drop for FaultWritable {
    fn drop(&mut self) {
        // A closed file with nothing unsynced needs no page-cache entry; one with unsynced
        // bytes keeps it (closing a file does not make it durable).
        let mut files = self.state.files.lock();
        if self.data.lock().pending.is_empty() {
            files.retain(|_, d| !Arc::ptr_eq(d, &self.data));
        }
    }
}

/// A file opened for reading: reads see the unsynced bytes of the page cache, and can be
/// made to fail by rule.
struct FaultReadable {
    path: PathBuf,
    inner: Arc<dyn ReadableFile>,
    /// The file's page-cache entry, if it has one.
    data: Option<Shared>,
    len: u64,
    state: Arc<FaultState>,
}

impl ReadableFile for FaultReadable {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8], class: IoClass) -> Result<()> {
        self.state
            .rules
            .check(FaultOp::Read, &self.path, Some(class))?;
        let Some(data) = &self.data else {
            return self.inner.read_exact_at(offset, buf, class);
        };
        let data = data.lock();
        let end = offset.checked_add(buf.len() as u64);
        if end.is_none_or(|end| end > data.synced + data.pending.len() as u64) {
            return Err(Error::io(
                &self.path,
                std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
            ));
        }
        // Below `synced` from the file, above from memory.
        let from_file = usize::try_from(data.synced.saturating_sub(offset))
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let (durable, cached) = buf.split_at_mut(from_file);
        if !durable.is_empty() {
            self.inner.read_exact_at(offset, durable, class)?;
        }
        if !cached.is_empty() {
            let start =
                usize::try_from(offset + from_file as u64 - data.synced).unwrap_or(usize::MAX);
            let src = start
                .checked_add(cached.len())
                .and_then(|e| data.pending.get(start..e))
                .ok_or_else(|| {
                    Error::io(
                        &self.path,
                        std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
                    )
                })?;
            cached.copy_from_slice(src);
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
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
        let mut names = self.state.undurable_names.lock();
        self.state
            .name_changes(&mut names, self.inner.as_ref(), path)?;
        let inner = self.inner.create(path, class)?;
        let data = Arc::new(Mutex::new(FileData {
            synced: 0,
            pending: Vec::new(),
            class,
        }));
        self.state
            .files
            .lock()
            .insert(path.to_path_buf(), data.clone());
        Ok(Box::new(FaultWritable {
            path: path.to_path_buf(),
            inner,
            data,
            class,
            state: self.state.clone(),
        }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn ReadableFile>> {
        self.state.rules.check(FaultOp::Read, path, None)?;
        let inner = self.inner.open(path)?;
        let data = self.state.files.lock().get(path).cloned();
        let len = data.as_ref().map_or(inner.len(), |d| {
            let d = d.lock();
            d.synced + d.pending.len() as u64
        });
        Ok(Arc::new(FaultReadable {
            path: path.to_path_buf(),
            inner,
            data,
            len,
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
        self.state
            .name_changes(&mut names, self.inner.as_ref(), to)?;
        self.inner.rename(from, to)?;
        let before = names.remove(to).flatten();
        // Names under a renamed directory move with it.
        let moved: Vec<PathBuf> = names
            .keys()
            .filter(|p| p.starts_with(from))
            .cloned()
            .collect();
        for p in moved {
            let entry = names.remove(&p);
            if let (Some(entry), Ok(rest)) = (entry, p.strip_prefix(from)) {
                if !rest.as_os_str().is_empty() {
                    names.insert(to.join(rest), entry);
                }
            }
        }
        names.insert(to.to_path_buf(), before);
        self.rename_entries(from, to);
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        if self.state.power_out() {
            return Err(FaultStorage::injected("remove", path));
        }
        self.state.rules.check(FaultOp::Remove, path, None)?;
        let mut names = self.state.undurable_names.lock();
        // A crash before the directory is synced brings the durable content back.
        self.state
            .name_changes(&mut names, self.inner.as_ref(), path)?;
        self.inner.remove_file(path)?;
        self.state.files.lock().remove(path);
        Ok(())
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list(dir)
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        self.inner.exists(path)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.state.rules.check(FaultOp::DirSync, dir, None)?;
        if self.state.fail_syncs.load(Ordering::SeqCst) {
            return Err(FaultStorage::injected("directory sync", dir));
        }
        match self.state.power_verdict(PointKind::DirSync) {
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
        if self.state.writes_fail() {
            return Err(FaultStorage::injected("link", from));
        }
        self.state.rules.check(FaultOp::Link, from, None)?;
        let mut names = self.state.undurable_names.lock();
        self.state
            .name_changes(&mut names, self.inner.as_ref(), to)?;
        self.inner.link_or_copy(from, to)?;
        // A link shares its source's page cache; the new name holds its unsynced bytes too.
        let mut files = self.state.files.lock();
        match files.get(from).cloned() {
            Some(data) => files.insert(to.to_path_buf(), data),
            None => files.remove(to),
        };
        Ok(())
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }

    fn io_stats(&self) -> &IoStats {
        self.inner.io_stats()
    }
}
