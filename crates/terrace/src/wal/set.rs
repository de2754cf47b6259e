//! The set of write-ahead logs of one database: where they live (`Options::wal_dir`, or
//! the database directory), creating the next one (rotation), finding and reading back
//! the ones recovery replays, and naming the ones a flush made obsolete.
//!
//! Owns: the log directories and the checks that refuse logs recovery cannot trust (see
//! docs/formats/wal.md, "Where logs live"):
//! - logs in a directory whose database does not exist yet belong to another database;
//! - a log number found in both directories is ambiguous;
//! - the log the manifest's log number names is found nowhere: the database was last
//!   opened with another `wal_dir`, and replaying the rest would silently lose writes;
//! - damage anywhere but in the unsynced tail of the newest log that holds anything
//!   (`WalRecoveryMode` says what the tail may lose).
//!
//! When the log directory is not the database directory, the database directory is
//! searched as well: a database opened without `wal_dir` left its logs there, and they
//! are replayed (and later collected) as if they were in the log directory.
//! Must not touch: record contents (opaque bytes here: the caller parses batches), the
//! memtable or the manifest (the caller says which log number is the oldest live one).
//! Concurrency: resolved once at open, immutable afterwards, read by every thread.

use std::path::{Path, PathBuf};

use super::{FileLogWriter, LogReader, ReadOutcome};
use crate::error::{Error, Result};
use crate::options::{Options, WalRecoveryMode};
use crate::storage::{IoClass, Storage};
use crate::version::{parse_file_name, wal_file_name, FileKind, LOCK_FILE_NAME};

/// The write-ahead logs of a database, by the directories they are kept in.
#[derive(Debug, Clone)]
pub(crate) struct LogSet {
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

impl LogSet {
    /// Resolves the log directory of the database in `db_dir` (whose LOCK the caller
    /// holds), creating it if missing and syncing its parent so that the new directory
    /// survives a crash together with the logs in it.
    pub(crate) fn open(storage: &dyn Storage, db_dir: &Path, opts: &Options) -> Result<LogSet> {
        let Some(path) = opts.wal_dir.as_deref().filter(|p| *p != db_dir) else {
            return Ok(LogSet {
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
            return Ok(LogSet {
                path: path.to_path_buf(),
                db_dir: None,
            });
        }
        Ok(LogSet {
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
            out.extend(logs_in(storage, dir)?);
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
        let logs = self.live(storage, log_number)?;
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

    /// Creates log `number` in the log directory and makes its name durable: the log
    /// writes go to from now on (the caller syncs the previous one first).
    ///
    /// # Errors
    /// I/O errors creating the file or syncing the directory.
    pub(crate) fn create(&self, storage: &dyn Storage, number: u64) -> Result<FileLogWriter> {
        let file = storage.create(&self.log_path(number), IoClass::Wal)?;
        storage.sync_dir(&self.path)?;
        Ok(FileLogWriter::new(file))
    }

    /// Reads `logs` (oldest first, from [`LogSet::logs_to_replay`]) record by record
    /// into `apply` (the log, the record, its offset). Damage in the newest log that
    /// holds anything is its unsynced tail: `mode` decides whether the records from
    /// there on are dropped (with a warning) or the replay fails; damage in any other
    /// log is in synced data and always fails. Returns how many logs ended in damage
    /// that was dropped (0 or 1).
    ///
    /// # Errors
    /// `Corruption` as above; I/O errors; whatever `apply` returns.
    pub(crate) fn replay(
        &self,
        storage: &dyn Storage,
        logs: &[FoundLog],
        mode: WalRecoveryMode,
        mut apply: impl FnMut(&FoundLog, Vec<u8>, u64) -> Result<()>,
    ) -> Result<u64> {
        let files = logs
            .iter()
            .map(|l| storage.open(&l.path))
            .collect::<Result<Vec<_>>>()?;
        for (i, (log, file)) in logs.iter().zip(files.iter()).enumerate() {
            // The newest log holding anything: a log started after a failed write (whose
            // torn record ends the log before it) stays empty until a flush has made the
            // older log obsolete, so a crash in between leaves the tear at the end of
            // the newest non-empty log.
            let newest = files
                .get(i + 1..)
                .unwrap_or_default()
                .iter()
                .all(|f| f.is_empty());
            let path = &log.path;
            let mut reader = LogReader::new(file.clone(), path.clone());
            loop {
                match reader.read_record()? {
                    ReadOutcome::Record { data, offset } => apply(log, data, offset)?,
                    ReadOutcome::Eof => break,
                    ReadOutcome::Corrupt {
                        offset,
                        reason,
                        tail,
                    } => {
                        // Writes move to a new log only once the old one is synced, so a
                        // later log holding anything proves this damage is in synced data:
                        // dropping from here would lose acknowledged writes. Only the
                        // newest log that holds anything can end in an unsynced tail,
                        // which a power cut may tear anywhere (docs/formats/wal.md,
                        // "Recovery modes").
                        if !newest {
                            return Err(Error::corruption(
                                path,
                                offset,
                                format!("{reason} (a later log holds writes: the damage is in synced data)"),
                            ));
                        }
                        let tolerated = match mode {
                            WalRecoveryMode::PointInTime => true,
                            WalRecoveryMode::TolerateCorruptedTailRecords => tail,
                        };
                        if !tolerated {
                            return Err(Error::corruption(path, offset, reason));
                        }
                        tracing::warn!(path = %path.display(), offset, %reason, "dropping damaged write-ahead-log records");
                        return Ok(1);
                    }
                }
            }
        }
        Ok(0)
    }

    /// The logs numbered below `log_number` (every write in them is in a table file),
    /// in both directories.
    pub(crate) fn obsolete(&self, storage: &dyn Storage, log_number: u64) -> Vec<PathBuf> {
        // Collection goes on past a directory it cannot list.
        self.dirs()
            .flat_map(|dir| logs_in(storage, dir).unwrap_or_default())
            .filter(|l| l.number < log_number)
            .map(|l| l.path)
            .collect()
    }

    /// The logs numbered `log_number` or above (what a copy of the database needs beside
    /// its tables), in both directories, oldest first.
    pub(crate) fn live(&self, storage: &dyn Storage, log_number: u64) -> Result<Vec<FoundLog>> {
        let mut logs: Vec<FoundLog> = self
            .list(storage)?
            .into_iter()
            .filter(|l| l.number >= log_number)
            .collect();
        logs.sort_by_key(|l| l.number);
        Ok(logs)
    }
}

/// The logs in `dir`.
fn logs_in(storage: &dyn Storage, dir: &Path) -> Result<Vec<FoundLog>> {
    Ok(storage
        .list(dir)?
        .into_iter()
        .filter_map(|name| match parse_file_name(&name) {
            Some((FileKind::Wal, number)) => Some(FoundLog {
                number,
                path: dir.join(name),
            }),
            _ => None,
        })
        .collect())
}

#[cfg(test)]
mod tests;
