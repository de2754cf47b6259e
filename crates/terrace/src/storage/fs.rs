//! The operating system's file system.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{FileLock, IoClass, IoStats, ReadableFile, Storage, SyncHandle, WritableFile};
use crate::error::{Error, Result};

/// Files and directories of the local operating system.
#[derive(Debug, Default)]
pub struct FsStorage {
    stats: Arc<IoStats>,
}

impl FsStorage {
    /// A storage over the local file system with fresh counters.
    pub fn new() -> Self {
        FsStorage::default()
    }
}

struct FsWritable {
    path: PathBuf,
    out: BufWriter<File>,
    len: u64,
    class: IoClass,
    stats: Arc<IoStats>,
}

impl WritableFile for FsWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.out
            .write_all(data)
            .map_err(|e| Error::io(&self.path, e))?;
        self.len += data.len() as u64;
        self.stats.record_write(self.class, data.len() as u64);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.out.flush().map_err(|e| Error::io(&self.path, e))
    }

    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.out
            .get_ref()
            .sync_data()
            .map_err(|e| Error::io(&self.path, e))?;
        self.stats.record_sync(self.class);
        Ok(())
    }

    fn sync_handle(&mut self) -> Result<Option<Box<dyn SyncHandle>>> {
        self.flush()?;
        // A second descriptor of the same open file: its sync covers the writes made
        // through the first.
        let file = self
            .out
            .get_ref()
            .try_clone()
            .map_err(|e| Error::io(&self.path, e))?;
        Ok(Some(Box::new(FsSync {
            file,
            path: self.path.clone(),
            class: self.class,
            stats: Arc::clone(&self.stats),
        })))
    }

    fn len(&self) -> u64 {
        self.len
    }
}

/// [`FsWritable::sync_handle`]'s handle.
struct FsSync {
    file: File,
    path: PathBuf,
    class: IoClass,
    stats: Arc<IoStats>,
}

impl SyncHandle for FsSync {
    fn sync(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::io(&self.path, e))?;
        self.stats.record_sync(self.class);
        Ok(())
    }
}

struct FsReadable {
    path: PathBuf,
    file: File,
    len: u64,
    stats: Arc<IoStats>,
}

impl ReadableFile for FsReadable {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8], class: IoClass) -> Result<()> {
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| Error::io(&self.path, e))?;
        self.stats.record_read(class, buf.len() as u64);
        Ok(())
    }

    fn read_vec_at(&self, offset: u64, len: usize, class: IoClass) -> Result<Vec<u8>> {
        let mut buf = Vec::with_capacity(len);
        while buf.len() < len {
            let at = offset + buf.len() as u64;
            // Reads into the vector's spare capacity and extends its length by what the
            // kernel wrote: no zeroing, and nothing uninitialised is ever visible.
            let n =
                match rustix::io::pread(&self.file, rustix::buffer::spare_capacity(&mut buf), at) {
                    Ok(n) => n,
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(e) => return Err(Error::io(&self.path, e.into())),
                };
            if n == 0 {
                let eof = std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "failed to fill whole buffer",
                );
                return Err(Error::io(&self.path, eof));
            }
        }
        buf.truncate(len);
        self.stats.record_read(class, len as u64);
        Ok(buf)
    }

    fn len(&self) -> u64 {
        self.len
    }
}

struct FsLock {
    _file: File,
}

impl FileLock for FsLock {}

impl Storage for FsStorage {
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
    }

    fn create(&self, path: &Path, class: IoClass) -> Result<Box<dyn WritableFile>> {
        let file = File::create(path).map_err(|e| Error::io(path, e))?;
        Ok(Box::new(FsWritable {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(64 * 1024, file),
            len: 0,
            class,
            stats: self.stats.clone(),
        }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn ReadableFile>> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        Ok(Arc::new(FsReadable {
            path: path.to_path_buf(),
            file,
            len,
            stats: self.stats.clone(),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        std::fs::rename(from, to).map_err(|e| Error::io(from, e))
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        std::fs::remove_file(path).map_err(|e| Error::io(path, e))
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            if let Some(name) = entry.file_name().to_str() {
                out.push(name.to_string());
            }
        }
        out.sort();
        Ok(out)
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        path.try_exists().map_err(|e| Error::io(path, e))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let d = File::open(dir).map_err(|e| Error::io(dir, e))?;
        d.sync_all().map_err(|e| Error::io(dir, e))?;
        self.stats.record_sync(IoClass::Manifest);
        Ok(())
    }

    fn link_or_copy(&self, from: &Path, to: &Path) -> Result<()> {
        if std::fs::hard_link(from, to).is_ok() {
            return Ok(());
        }
        std::fs::copy(from, to).map_err(|e| Error::io(from, e))?;
        let f = OpenOptions::new()
            .write(true)
            .open(to)
            .map_err(|e| Error::io(to, e))?;
        f.sync_all().map_err(|e| Error::io(to, e))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        match file.try_lock() {
            Ok(()) => Ok(Box::new(FsLock { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::Locked(path.to_path_buf())),
            Err(std::fs::TryLockError::Error(e)) => Err(Error::io(path, e)),
        }
    }

    fn io_stats(&self) -> &IoStats {
        &self.stats
    }
}
