//! Storage: the one seam through which every byte the engine keeps reaches a device.
//!
//! Owns: the [`Storage`] trait, file handles, per-class I/O accounting ([`IoStats`]),
//! and the implementations: [`FsStorage`] (the operating system's files),
//! [`FaultStorage`] (keeps unsynced data in process memory and emulates power cuts, for
//! crash tests) and [`ThrottledStorage`] (directories that behave like a slower device).
//! Must not touch: file formats; callers decide what the bytes mean.
//! Concurrency: a `Storage` is shared by all threads; a `WritableFile` has one owner;
//! a `ReadableFile` is read by many threads at once (positional reads only).
//!
//! Files are named by path. Which directory (volume) holds a table file is decided by
//! the engine and recorded in the manifest (see `version::FileMeta::volume`).

mod accounting;
mod fault;
mod fs;
mod power;
mod throttle;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::Result;

pub use accounting::{IoClass, IoClassStats, IoStats};
pub use fault::{CrashMode, FaultOp, FaultRule, FaultStorage, InjectedError, PAGE_BYTES};
pub use fs::FsStorage;
pub use power::{PointFilter, PointKind, PowerSupply, Verdict};
#[cfg(test)]
pub(crate) use throttle::bucket::FakeClock;
pub(crate) use throttle::bucket::{Clock, DeviceBudget, SystemClock};
pub use throttle::{ThrottleLimits, ThrottleStats, ThrottledStorage};

/// What makes a file's bytes durable apart from the file's writer (see
/// [`WritableFile::sync_handle`]).
pub trait SyncHandle: Send {
    /// Makes durable every byte the file had handed to the operating system when the
    /// handle was taken (later ones too, perhaps).
    ///
    /// # Errors
    /// I/O errors of the device.
    fn sync(&self) -> Result<()>;
}

/// A file being written: append-only, then synced.
pub trait WritableFile: Send {
    /// Appends `data` at the end of the file.
    ///
    /// # Errors
    /// I/O errors of the device.
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Hands buffered bytes to the operating system (not durable yet).
    ///
    /// # Errors
    /// I/O errors of the device.
    fn flush(&mut self) -> Result<()>;
    /// Makes every appended byte durable.
    ///
    /// # Errors
    /// I/O errors of the device.
    fn sync(&mut self) -> Result<()>;
    /// Hands buffered bytes to the operating system and returns a handle that makes
    /// them durable without this file: a caller that syncs on a schedule (once a second)
    /// can then let appends go on while the device syncs. `None` (the default) where
    /// only the writer can make its bytes durable (unsynced bytes kept in process
    /// memory, a device's budget charged per sync): call [`WritableFile::sync`].
    ///
    /// # Errors
    /// I/O errors of the device.
    fn sync_handle(&mut self) -> Result<Option<Box<dyn SyncHandle>>> {
        Ok(None)
    }
    /// Bytes appended so far.
    fn len(&self) -> u64;
    /// True if nothing was appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A file opened for positional reads, shared between threads.
pub trait ReadableFile: Send + Sync {
    /// Reads exactly `buf.len()` bytes at `offset`, counted under `class`.
    ///
    /// # Errors
    /// I/O errors, and an `Io` error of kind `UnexpectedEof` if the file is shorter.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8], class: IoClass) -> Result<()>;
    /// Reads exactly `len` bytes at `offset` into a new vector, counted under `class`.
    /// Files that can read into uninitialised memory override it to skip zeroing the
    /// buffer first (a block read on every block-cache miss).
    ///
    /// # Errors
    /// As [`ReadableFile::read_exact_at`].
    fn read_vec_at(&self, offset: u64, len: usize, class: IoClass) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.read_exact_at(offset, &mut buf, class)?;
        Ok(buf)
    }
    /// The file's size in bytes when it was opened.
    fn len(&self) -> u64;
    /// True if the file is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Held while a database directory is locked; dropping it releases the lock.
pub trait FileLock: Send + Sync {}

/// The file system seen by the engine. Every implementation is `Send + Sync`.
pub trait Storage: Send + Sync + std::fmt::Debug {
    /// Creates `dir` and its parents if missing.
    ///
    /// # Errors
    /// I/O errors.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Creates (or truncates) `path` for appending; its writes are counted under `class`.
    ///
    /// # Errors
    /// I/O errors.
    fn create(&self, path: &Path, class: IoClass) -> Result<Box<dyn WritableFile>>;
    /// Opens `path` for positional reads.
    ///
    /// # Errors
    /// I/O errors, including not found.
    fn open(&self, path: &Path) -> Result<Arc<dyn ReadableFile>>;
    /// Atomically renames `from` to `to`, replacing `to`. Durable after `sync_dir`.
    ///
    /// # Errors
    /// I/O errors.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Deletes a file.
    ///
    /// # Errors
    /// I/O errors, including not found.
    fn remove_file(&self, path: &Path) -> Result<()>;
    /// The names (not paths) of the entries of `dir`.
    ///
    /// # Errors
    /// I/O errors.
    fn list(&self, dir: &Path) -> Result<Vec<String>>;
    /// True if `path` exists.
    ///
    /// # Errors
    /// I/O errors other than not found.
    fn exists(&self, path: &Path) -> Result<bool>;
    /// Makes creations, renames and deletions in `dir` durable.
    ///
    /// # Errors
    /// I/O errors.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Makes `to` a hard link of `from`, or a synced copy where links are impossible.
    ///
    /// # Errors
    /// I/O errors.
    fn link_or_copy(&self, from: &Path, to: &Path) -> Result<()>;
    /// Takes the exclusive lock on `path` (created if missing).
    ///
    /// # Errors
    /// `Error::Locked` if another holder has it; I/O errors.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;
    /// The I/O counters of this storage.
    fn io_stats(&self) -> &IoStats;

    /// Reads a whole (small) file, counted under `class`.
    ///
    /// # Errors
    /// I/O errors.
    fn read_all(&self, path: &Path, class: IoClass) -> Result<Vec<u8>> {
        let f = self.open(path)?;
        let mut buf = vec![0u8; usize::try_from(f.len()).unwrap_or(usize::MAX)];
        f.read_exact_at(0, &mut buf, class)?;
        Ok(buf)
    }

    /// Writes `data` to `path` through a temporary file, syncs it, renames it into
    /// place and syncs the directory: the crash-safe replace used for CURRENT.
    ///
    /// # Errors
    /// I/O errors; on error `path` keeps its old content.
    fn write_atomic(&self, path: &Path, data: &[u8], class: IoClass) -> Result<()> {
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
        tmp_name.push(".tmp");
        let tmp: PathBuf = dir.join(tmp_name);
        let mut f = self.create(&tmp, class)?;
        f.append(data)?;
        f.sync()?;
        drop(f);
        self.rename(&tmp, path)?;
        self.sync_dir(&dir)
    }
}

#[cfg(test)]
mod tests;
