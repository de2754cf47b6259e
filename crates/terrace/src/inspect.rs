//! A read-only view of a database's layout for `terrace inspect` and other tools.
//!
//! Owns: `DatabaseLayout` and `inspect_database`.
//! Must not touch: anything on disk. It reads CURRENT and the manifest through the same
//! replay as `VersionSet::recover` (`version::replay_manifest`), never takes the LOCK and
//! never creates, writes, renames or deletes a file.
//! Concurrency: safe while another process has the database open: a record being appended
//! reads as a torn tail, and a manifest deleted by a rollover is retried through CURRENT.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::level0::matrix::{rows_of, MatrixState, RowMeta};
use crate::storage::Storage;
use crate::version::{manifest_file_name, replay_manifest, table_file_name, FileMeta, Replayed};

/// The most levels any configuration allows (`Options::num_levels` is at most 64); the
/// manifest is replayed with this many so that inspection needs no options.
const MAX_LEVELS: usize = 64;
/// Levels always reported, matching the default `Options::num_levels`.
const MIN_REPORTED_LEVELS: usize = 7;
/// How often to re-read CURRENT when the manifest it named vanished (a rollover).
const ATTEMPTS: usize = 3;

/// What a database's manifest says: its counters and the table files of every level.
#[derive(Debug, Clone, PartialEq)]
pub struct DatabaseLayout {
    /// File name of the manifest CURRENT names, e.g. `MANIFEST-000007`.
    pub manifest: String,
    /// The largest sequence number the manifest records.
    pub last_sequence: u64,
    /// Write-ahead logs numbered below this are obsolete.
    pub log_number: u64,
    /// The next file number the manifest records.
    pub next_file_number: u64,
    /// The files of each level: level 0 newest first, the others ordered by key. As many
    /// levels as the highest non-empty one needs, and at least 7.
    pub levels: Vec<Vec<FileMeta>>,
    /// The rows of a matrix level 0 (on persistent memory, in the region the database is
    /// opened with; a checkpoint keeps them in its `MATRIX.pmem`), in the version's order.
    pub rows: Vec<RowMeta>,
}

impl DatabaseLayout {
    /// Path of a table file. Volume 0 is `db_dir`. The manifest does not record where
    /// other volumes are (they come from `Options::volumes` at open), so files on other
    /// volumes also resolve to `db_dir`; a caller that knows the volumes must map
    /// `f.volume` itself.
    pub fn table_path(&self, db_dir: &Path, f: &FileMeta) -> PathBuf {
        db_dir.join(table_file_name(f.number))
    }

    fn from_replayed(r: Replayed) -> Self {
        let levels = r.version.levels();
        let used = levels
            .iter()
            .rposition(|files| !files.is_empty())
            .map_or(0, |l| l + 1);
        let n = used.max(MIN_REPORTED_LEVELS);
        DatabaseLayout {
            manifest: manifest_file_name(r.manifest_number),
            last_sequence: r.last_sequence,
            log_number: r.log_number,
            next_file_number: r.next_file_number,
            levels: (0..n)
                .map(|l| r.version.files(l).iter().map(|f| (**f).clone()).collect())
                .collect(),
            rows: rows_of(&r.version).iter().map(|r| (**r).clone()).collect(),
        }
    }
}

/// Reads CURRENT in `dir` and replays the manifest it names, without taking the LOCK and
/// without writing anything. If the manifest cannot be read because a concurrent rollover
/// switched CURRENT and deleted it, CURRENT is read again (a few times).
///
/// # Errors
/// `Corruption { file, offset }` for a damaged CURRENT or manifest; `Unsupported` for a
/// manifest written in another format version or with a field that may not be skipped;
/// `InvalidArgument` if the manifest names a level at or above 64; I/O errors (a missing
/// CURRENT: `dir` holds no database).
pub fn inspect_database(storage: Arc<dyn Storage>, dir: &Path) -> Result<DatabaseLayout> {
    let mut attempt = 1;
    loop {
        // The matrix level 0's state reads its rows, and a classic database has none.
        let level0 = Arc::new(MatrixState::default());
        match replay_manifest(storage.as_ref(), dir, MAX_LEVELS, level0) {
            Ok(r) => return Ok(DatabaseLayout::from_replayed(r)),
            Err(e @ Error::Io { .. }) if attempt < ATTEMPTS && manifest_vanished(&*storage, &e) => {
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// True if `e` is about a manifest that no longer exists while CURRENT still exists.
fn manifest_vanished(storage: &dyn Storage, e: &Error) -> bool {
    let Error::Io { path, .. } = e else {
        return false;
    };
    let is_manifest = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("MANIFEST-"));
    is_manifest && matches!(storage.exists(path), Ok(false))
}

#[cfg(test)]
mod tests;
