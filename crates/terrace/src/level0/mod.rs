//! Level 0: where flushed memtables land, behind one interface so that other kinds of
//! level 0 (a matrix container on persistent memory) can replace the classic one.
//!
//! Owns: the [`Level0`] and [`Level0View`] traits, [`Backpressure`], and the classic
//! implementation ([`ClassicLevel0`]: level-0 table files recorded in the manifest), and
//! the matrix container's data structure ([`matrix`]: rows, search, filters, table merge)
//! and its `Level0` ([`MatrixLevel0`]).
//! Must not touch: the write path, the memtable switch or the manifest writer; a level 0
//! returns the version-edit changes it needs and the database applies them.
//! Concurrency: implementations are `Send + Sync`; a view is immutable and shared by the
//! readers that hold it.
//!
//! Contract for implementations:
//! - `flush` makes the memtable's entries durable and returns what the version edit must
//!   record; until that edit is durable the entries are also in the WAL.
//! - A level 0 may rewrite its own older data in the background (the matrix container's
//!   table merge): `rewrite` runs on a thread of its own while flushes go on, keeps every
//!   version a snapshot in `Level0Env::snapshots` can read, and returns the new and the
//!   replaced rows; `accept_rewrite`, under the database's lock, says whether they still
//!   apply, and the database records them in one edit.
//! - A view answers reads for exactly the state it was made from, for as long as a reader
//!   holds it, whatever flushes and compactions do meanwhile. State consumed by a
//!   compaction is released only once the edit replacing it is durable and no view uses it.
//! - `backpressure` replaces file-count triggers: it tells the write path when to slow
//!   down or stop.
//!
//! - `compaction_score` and `level1_target_bytes` steer the picker: when level 0 is
//!   compacted, and how large level 1 is.
//!
//! - A level 0 that compacts itself in its own units (the matrix container's key-range
//!   columns) answers `pick_column` and opens those inputs through `column_source`; the
//!   database turns the pick into a compaction into the base level and records the
//!   consumed column (`trimmed_rows`, `deleted_rows`) in the same edit as the outputs.

mod classic;
pub mod column_cut;
mod container;
pub mod matrix;

use std::collections::HashSet;
use std::sync::Arc;

use crate::compaction::{ColumnSource, PickedColumn};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::SeqNo;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::range_del::RangeTombstone;
use crate::storage::Storage;
use crate::tables::{Lookup, Tables};
use crate::version::{FileMeta, RowMeta, Version};

pub use classic::ClassicLevel0;
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use container::decode_dir;
#[cfg(test)]
pub(crate) use container::encode_dir;
pub use container::{MatrixLevel0, MatrixOptions, DEFAULT_REGION_FILE};

/// What level 0 asks of the write path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backpressure {
    /// Write at full speed.
    None,
    /// Delay writes to the configured delayed write rate.
    Slowdown,
    /// Stop writes until compaction frees room.
    Stop,
}

/// What a level 0 needs from the database to do I/O.
pub struct Level0Env<'a> {
    /// The database's storage.
    pub storage: &'a dyn Storage,
    /// The database's options.
    pub opts: &'a Options,
    /// The table files and their volumes.
    pub tables: &'a Arc<Tables>,
    /// The live snapshots, ascending: what a level 0 that rewrites its own data (the
    /// matrix container's table merge) must keep readable. A snapshot taken later reads
    /// at or above every sequence number level 0 already holds.
    pub snapshots: &'a [SeqNo],
    /// Reserves another number from the database's file-number space, for a background
    /// rewrite (`Level0::rewrite`). `None` where a level 0 may use only the number it is
    /// given (flushes, log replay at open): it then does not rewrite its own data.
    pub new_number: Option<&'a (dyn Fn() -> u64 + Sync)>,
}

/// What a flush (or a background rewrite) produced: the changes the version edit must
/// record.
#[derive(Debug, Clone, Default)]
pub struct Level0Flush {
    /// New level-0 table files.
    pub new_files: Vec<FileMeta>,
    /// New level-0 rows (a matrix level 0).
    pub new_rows: Vec<RowMeta>,
    /// Level-0 rows replaced in the same edit (the inputs of a matrix table merge).
    pub deleted_rows: Vec<u64>,
    /// Table merges that produced these changes.
    pub row_merges: u64,
    /// Bytes written to storage (a table merge's output rows included).
    pub bytes_written: u64,
}

/// An immutable view of level 0 for readers.
pub trait Level0View: Send + Sync {
    /// Looks `user_key` up at snapshot `snap`, newest data first; raises `max_tombstone`
    /// to the newest covering range tombstone seen (see `tables::lookup`).
    ///
    /// # Errors
    /// I/O errors and `Corruption`.
    fn get(
        &self,
        user_key: &[u8],
        seek_key: &[u8],
        snap: SeqNo,
        max_tombstone: &mut SeqNo,
        fill_cache: bool,
    ) -> Result<Lookup>;

    /// Adds iterators over every level-0 entry, and every level-0 range tombstone.
    ///
    /// # Errors
    /// I/O errors and `Corruption`.
    fn add_iterators(
        &self,
        out: &mut Vec<Box<dyn InternalIterator>>,
        tombstones: &mut Vec<RangeTombstone>,
        fill_cache: bool,
    ) -> Result<()>;
}

/// Level 0's state for one checkpoint, taken under the database's lock and written after
/// it is released (see [`Level0::checkpoint`]).
pub trait Level0Copy: Send {
    /// Writes the state into `dir`, the directory of the checkpoint being built.
    ///
    /// # Errors
    /// I/O errors; the checkpoint is then abandoned.
    fn write_to(self: Box<Self>, dir: &std::path::Path) -> Result<()>;
}

/// A kind of level 0. See the module docs for the contract.
pub trait Level0: Send + Sync {
    /// A short name ("classic").
    fn kind(&self) -> &'static str;

    /// Persists an immutable memtable as level-0 data; `file_number` is reserved for it.
    ///
    /// # Errors
    /// I/O errors; nothing is installed on error.
    fn flush(
        &self,
        env: &Level0Env<'_>,
        mem: &Arc<MemTable>,
        file_number: u64,
    ) -> Result<Level0Flush>;

    /// The reader's view of level 0 in `version`.
    fn view(&self, tables: &Arc<Tables>, version: &Arc<Version>) -> Arc<dyn Level0View>;

    /// Bytes level 0 holds (the L1 target may follow it).
    fn size_bytes(&self, version: &Version) -> u64;

    /// What the write path must do now.
    fn backpressure(&self, version: &Version, opts: &Options) -> Backpressure;

    /// How urgently level 0 needs compacting into the base level: 1 or more asks for a
    /// compaction. `being_compacted` holds the files running compactions own.
    fn compaction_score(
        &self,
        version: &Version,
        being_compacted: &HashSet<u64>,
        opts: &Options,
    ) -> f64;

    /// The byte target of level 1 (the base of every deeper target). A level 0 that holds
    /// much more than a few memtables widens level 1 to match, keeping the tree shallow.
    fn level1_target_bytes(&self, _version: &Version, opts: &Options) -> u64 {
        opts.max_bytes_for_level_base
    }

    /// False while level 0 has no room for a memtable of `bytes`: the flush waits for a
    /// compaction to free space (a flush stall).
    fn ready_to_flush(&self, _version: &Version, _bytes: usize) -> bool {
        true
    }

    /// The next column to compact into the base level, for a level 0 that compacts itself
    /// in columns; `None` otherwise or when nothing is due. `manual` asks for every row to
    /// be compacted (a manual compaction of the whole key range). `busy` holds the numbers
    /// that running compactions own.
    fn pick_column(
        &self,
        _version: &Version,
        _busy: &HashSet<u64>,
        _opts: &Options,
        _manual: bool,
    ) -> Option<PickedColumn> {
        None
    }

    /// Opens the rows of column compactions.
    fn column_source(&self) -> Option<&dyn ColumnSource> {
        None
    }

    /// Once everything below the user key `trim` of `row` has moved to level 1: the
    /// leading data chunks the row can give back in all, and the bytes it then occupies,
    /// recorded in the same edit as the trim; `None` if no more than already released.
    ///
    /// # Errors
    /// Errors reading the row.
    fn releasable(&self, _row: &RowMeta, _trim: &[u8]) -> Result<Option<(u32, u64)>> {
        Ok(None)
    }

    /// True if this level 0 rewrites its own data in the background: the database then
    /// runs a thread that calls `rewrite`.
    fn rewrites_in_background(&self) -> bool {
        false
    }

    /// Runs one background rewrite of level-0 data if one is due (the matrix container's
    /// table merge), without the database's lock; returns the changes to record, or `None`
    /// when nothing is due. What it wrote stays unused until `accept_rewrite` takes it.
    ///
    /// # Errors
    /// I/O errors and `Corruption`; nothing is installed on error.
    fn rewrite(&self, _env: &Level0Env<'_>) -> Result<Option<Level0Flush>> {
        Ok(None)
    }

    /// Called with the database's lock held, right before the edit recording the last
    /// `rewrite`'s changes is applied on top of `version`: true if they still apply (level
    /// 0 has then taken them into its state), false if the database must drop them.
    ///
    /// # Errors
    /// Errors reading the rewritten data.
    fn accept_rewrite(&self, _version: &Version) -> Result<bool> {
        Ok(false)
    }

    /// The newest sequence number that level 0 (and below) holds durably: WAL records up to
    /// it are no longer needed once the edit installing it is durable.
    fn durable_seq(&self, version: &Version) -> SeqNo;

    /// Takes what a checkpoint of `version` needs of level 0's durable state beyond its
    /// table files (those the database links itself): `None` if nothing. Called with the
    /// database's lock held, so `version` is current; the returned copy holds that state
    /// (keeps it from being released) and writes it once the lock is released, so that a
    /// database opened on the checkpoint with the same kind of level 0 (and its default
    /// location for that state) holds `version`'s level 0 whole.
    ///
    /// # Errors
    /// `Internal` if level 0's state disagrees with `version`.
    fn checkpoint(&self, version: &Version) -> Result<Option<Box<dyn Level0Copy>>>;

    /// Brings level 0 back after open, checking it against `version`.
    ///
    /// # Errors
    /// `Corruption` if level 0's own state disagrees with the manifest.
    fn recover(&self, env: &Level0Env<'_>, version: &Version) -> Result<()>;
}

#[cfg(test)]
mod tests;
