//! Where the write-ahead logs live: `Options::wal_dir`, or the database directory.
//!
//! Owns: resolving the log directory at open, finding the logs recovery replays, and the
//! checks that refuse logs recovery cannot trust (see docs/formats/wal.md, "Where logs
//! live"):
//! - logs in a directory whose database does not exist yet belong to another database;
//! - a log number found in both directories is ambiguous;
//! - the log the manifest's log number names is found nowhere: the database was last
//!   opened with another `wal_dir`, and replaying the rest would silently lose writes.
//!
//! When the log directory is not the database directory, the database directory is
//! searched as well: a database opened without `wal_dir` left its logs there, and they
//! are replayed (and later collected) as if they were in the log directory.
//! Must not touch: log contents (`wal`) or the manifest (`version`).
//! Concurrency: resolved once at open, immutable afterwards, read by every thread.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::options::Options;
use crate::storage::Storage;
use crate::version::{parse_file_name, wal_file_name, FileKind, LOCK_FILE_NAME};

/// The directories a database keeps its write-ahead logs in.
#[derive(Debug, Clone)]
pub(crate) struct WalDir {
    /// Where new logs are created (and their directory entries synced).
    pub(crate) path: PathBuf,
    /// The database directory when it is not `path`: searched for logs left by an open
    /// without `wal_dir`, and cleaned of obsolete ones.
    pub(crate) db_dir: Option<PathBuf>,
}

/// A write-ahead log found on open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FoundLog {
    pub(crate) number: u64,
    pub(crate) path: PathBuf,
}

impl WalDir {
    /// Resolves the log directory of the database in `db_dir` (whose LOCK the caller
    /// holds), creating it if missing and syncing its parent so that the new directory
    /// survives a crash together with the logs in it.
    pub(crate) fn open(storage: &dyn Storage, db_dir: &Path, opts: &Options) -> Result<WalDir> {
        let Some(path) = opts.wal_dir.as_deref().filter(|p| *p != db_dir) else {
            return Ok(WalDir {
                path: db_dir.to_path_buf(),
                db_dir: None,
            });
        };
        if !storage.exists(path)? {
            storage.create_dir_all(path)?;
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                storage.sync_dir(parent)?;
            }
        } else if storage.exists(&path.join(LOCK_FILE_NAME))? {
            // Another name of the database directory ("./db" for "db", a symlink): the
            // directory holding the LOCK we hold is the database directory.
            return Ok(WalDir {
                path: path.to_path_buf(),
                db_dir: None,
            });
        }
        Ok(WalDir {
            path: path.to_path_buf(),
            db_dir: Some(db_dir.to_path_buf()),
        })
    }

    /// Path of log `number`, in the log directory.
    pub(crate) fn log_path(&self, number: u64) -> PathBuf {
        self.path.join(wal_file_name(number))
    }

    /// The directories that may hold this database's logs: the log directory first.
    pub(crate) fn dirs(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.path.as_path()).chain(self.db_dir.as_deref())
    }

    /// Every log in the directories, in no particular order.
    fn list(&self, storage: &dyn Storage) -> Result<Vec<FoundLog>> {
        let mut out = Vec::new();
        for dir in self.dirs() {
            for name in storage.list(dir)? {
                if let Some((FileKind::Wal, number)) = parse_file_name(&name) {
                    out.push(FoundLog {
                        number,
                        path: dir.join(name),
                    });
                }
            }
        }
        Ok(out)
    }

    /// Fails if a directory that is about to receive a new database already holds logs:
    /// they belong to another (or a deleted) database, and replaying them would mix its
    /// writes into this one.
    ///
    /// # Errors
    /// `InvalidArgument` naming the first such log; I/O errors listing the directories.
    pub(crate) fn refuse_foreign_logs(&self, storage: &dyn Storage) -> Result<()> {
        match self.list(storage)?.first() {
            Some(log) => Err(Error::InvalidArgument(format!(
                "{} is a write-ahead log, but no database exists yet: it belongs to another \
                 or a deleted database; remove it or use another wal_dir",
                log.path.display()
            ))),
            None => Ok(()),
        }
    }

    /// The logs numbered `log_number` or above (those that may hold writes not yet in a
    /// table file), oldest first.
    ///
    /// # Errors
    /// `InvalidArgument` if a log number is in both directories, or if `log_number` is
    /// not 0 and its log is in neither (the manifest always names an existing log, so
    /// the logs are in a directory this open was not told about); I/O errors.
    pub(crate) fn logs_to_replay(
        &self,
        storage: &dyn Storage,
        log_number: u64,
    ) -> Result<Vec<FoundLog>> {
        let mut logs: Vec<FoundLog> = self
            .list(storage)?
            .into_iter()
            .filter(|l| l.number >= log_number)
            .collect();
        logs.sort_by_key(|l| l.number);
        for pair in logs.windows(2) {
            if let [a, b] = pair {
                if a.number == b.number {
                    return Err(Error::InvalidArgument(format!(
                        "write-ahead log {} is in both {} and {}; keep the one the database \
                         wrote last",
                        wal_file_name(a.number),
                        a.path.display(),
                        b.path.display()
                    )));
                }
            }
        }
        if log_number != 0 && logs.first().map(|l| l.number) != Some(log_number) {
            let dirs: Vec<String> = self.dirs().map(|d| d.display().to_string()).collect();
            return Err(Error::InvalidArgument(format!(
                "write-ahead log {}, which may hold writes not yet in a table file, is not in \
                 {}: if the database was last opened with another wal_dir, open it with that \
                 one (or move its logs into {}); otherwise the log was lost",
                wal_file_name(log_number),
                dirs.join(" or "),
                self.path.display()
            )));
        }
        Ok(logs)
    }
}

#[cfg(test)]
mod tests;
