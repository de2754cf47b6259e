//! Level 0: where flushed memtables land, behind one interface so that other kinds of
//! level 0 (a matrix container on persistent memory) can replace the classic one.
//!
//! Owns: the [`Level0`] trait (what every level 0 does), the optional [`SelfCompacting`]
//! trait (a level 0 that compacts itself in columns and merges its own data), the
//! readers' [`Level0View`], [`Backpressure`], and the two implementations: the classic
//! one ([`ClassicLevel0`]: level-0 table files) and the matrix level 0 ([`matrix`]: rows
//! on persistent memory, column compaction, table merge).
//! Must not touch: the write path, the memtable switch or the manifest writer; a level 0
//! returns what the version edit must record (table files, and level-0 records that only
//! it decodes) and the database applies them.
//! Concurrency: implementations are `Send + Sync`; a view is immutable and shared by the
//! readers that hold it.
//!
//! Contract for implementations:
//! - A level 0's durable state beyond its table files lives in the versions: `empty_state`
//!   gives the state a new version set starts from, and the level-0 records a level 0
//!   returns are applied to it by the version set (`version::Level0State`).
//! - `flush` makes the memtable's entries durable and returns what the version edit must
//!   record; until that edit is durable the entries are also in the WAL.
//! - `install` is called, under the database's lock, with every version the database
//!   installs, in order: the level 0 takes it as its current state and returns the view
//!   readers of that version use. A view answers reads for exactly the state it was made
//!   from, for as long as a reader holds it, whatever flushes and compactions do
//!   meanwhile. State consumed by a compaction is released only once the edit replacing
//!   it is durable and no view uses it.
//! - `backpressure` replaces file-count triggers: it tells the write path when to slow
//!   down or stop; `ready_to_flush` may hold a flush until compaction frees room.
//! - `compaction_score` and `level1_target_bytes` steer the picker: when level 0 is
//!   compacted, and how large level 1 is.
//! - A level 0 that compacts itself ([`SelfCompacting`], from `self_compacting`) picks
//!   its own columns, opens them for the executor as opaque inputs, and says what the
//!   edit installing a finished column records; it may also rewrite its own data on a
//!   background thread (the matrix container's table merge).

mod classic;
mod flush_stream;
pub mod matrix;
mod self_compacting;

use std::collections::HashSet;
use std::sync::Arc;

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::SeqNo;
use crate::memtable::MemTable;
use crate::range_del::RangeTombstone;
use crate::sst::SstOptions;
use crate::storage::Storage;
use crate::tables::{Lookup, Probe, Tables};
use crate::version::{FileMeta, Level0Record, Level0State, Version};

pub use classic::{level0_file_count_score, ClassicLevel0};
pub use matrix::{MatrixLevel0, MatrixOptions, DEFAULT_REGION_FILE};
pub use self_compacting::{ColumnDone, SelfCompacting};

/// What level 0 asks of the write path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backpressure {
    /// Write at full speed.
    None,
    /// Room is getting short but is not yet scarce: pace writes as for `Slowdown`, but
    /// lower the rate only by a tenth for each new version holding more level-0 bytes,
    /// so that a wide early zone costs little while compaction keeps up.
    Ease,
    /// Delay writes to the configured delayed write rate.
    Slowdown,
    /// Stop writes until compaction frees room.
    Stop,
}

/// What a level 0 needs of the database's options (`Options::level0_settings`): a level 0
/// depends on these, never on the options themselves, which hold the level 0.
#[derive(Debug, Clone, Default)]
pub struct Level0Settings {
    /// Bytes a memtable may hold before it is flushed.
    pub write_buffer_size: usize,
    /// Level-0 files that trigger a compaction (a classic level 0).
    pub level0_file_num_compaction_trigger: usize,
    /// Level-0 files from which writes are delayed (a classic level 0).
    pub level0_slowdown_writes_trigger: usize,
    /// Level-0 files at which writes stop (a classic level 0).
    pub level0_stop_writes_trigger: usize,
    /// The byte target of level 1 the options give.
    pub max_bytes_for_level_base: u64,
    /// The volume level-0 table files go to.
    pub volume: u32,
    /// How table files are written.
    pub sst: SstOptions,
}

/// What a level 0 needs from the database to do I/O.
pub struct Level0Env<'a> {
    /// The database's storage.
    pub storage: &'a dyn Storage,
    /// What the database's options say of level 0.
    pub settings: &'a Level0Settings,
    /// The table files and their volumes.
    pub tables: &'a Arc<Tables>,
    /// The live snapshots, ascending: what a level 0 that rewrites its own data (the
    /// matrix container's table merge) must keep readable. A snapshot taken later reads
    /// at or above every sequence number level 0 already holds.
    pub snapshots: &'a [SeqNo],
    /// Reserves another number from the database's file-number space, for a background
    /// rewrite (`SelfCompacting::rewrite`). `None` where a level 0 may use only the number it is
    /// given (flushes, log replay at open): it then does not rewrite its own data.
    pub new_number: Option<&'a (dyn Fn() -> u64 + Sync)>,
    /// Places each new table file under a placement policy; `None`: on
    /// `settings.volume`.
    pub placement: Option<&'a crate::volume::placement::PlacementPlan>,
}

/// What a flush (or a background rewrite) produced: the changes the version edit must
/// record, and what they cost.
#[derive(Debug, Clone, Default)]
pub struct Level0Flush {
    /// New level-0 table files.
    pub new_files: Vec<FileMeta>,
    /// Level-0 records (new rows of a matrix level 0, and the rows a table merge
    /// replaced), for the level 0's state.
    pub records: Vec<Level0Record>,
    /// Point entries the new data holds.
    pub entries: u64,
    /// Bytes written (table files, and the level 0's own tier).
    pub bytes_written: u64,
    /// The part of `bytes_written` that went to the level 0's own tier rather than table
    /// files (the matrix level 0's persistent-memory region).
    pub tier_bytes: u64,
    /// Background merges of level-0 data that produced these changes.
    pub merges: u64,
}

impl Level0Flush {
    /// True if there is nothing to record.
    pub fn is_empty(&self) -> bool {
        self.new_files.is_empty() && self.records.is_empty()
    }
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

    /// [`Level0View::get`] for each probe not found yet, at snapshot `snap`: fills in
    /// what each finds and raises its tombstone. A kind may batch the probes (the classic
    /// level 0 reads each file once for all of them); by default, one `get` each.
    ///
    /// # Errors
    /// I/O errors and `Corruption`; probes found before the error keep what they found.
    fn get_many(&self, probes: &mut [Probe<'_>], snap: SeqNo, fill_cache: bool) -> Result<()> {
        for p in probes.iter_mut().filter(|p| p.found.is_none()) {
            let seek = crate::key::seek_key(p.user_key, snap);
            if let Lookup::Found(v) =
                self.get(p.user_key, &seek, snap, &mut p.max_tombstone, fill_cache)?
            {
                p.found = Some(v);
            }
        }
        Ok(())
    }

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

    /// The state a new version set starts from: level 0's records in the manifest are
    /// applied to it.
    fn empty_state(&self) -> Arc<dyn Level0State>;

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

    /// The database installed `version` (see the module docs): level 0 takes it as its
    /// current state and returns the readers' view of it. If level 0's state cannot follow
    /// the version, the view fails every read with the reason.
    fn install(&self, tables: &Arc<Tables>, version: &Arc<Version>) -> Arc<dyn Level0View>;

    /// Bytes level 0 holds (the L1 target may follow it).
    fn size_bytes(&self, version: &Version) -> u64;

    /// What the write path must do now.
    fn backpressure(&self, version: &Version, settings: &Level0Settings) -> Backpressure;

    /// Whether several memtables may be flushed at once (`flush` called concurrently).
    /// Their results are installed in memtable order either way.
    fn parallel_flushes(&self) -> bool {
        false
    }

    /// False while level 0 has no room for a memtable of `bytes`: the flush waits for a
    /// compaction to free space (a flush stall).
    fn ready_to_flush(&self, _version: &Version, _bytes: usize) -> bool {
        true
    }

    /// How urgently level 0 needs compacting into the base level: 1 or more asks for a
    /// compaction. `being_compacted` holds the files running compactions own.
    fn compaction_score(
        &self,
        version: &Version,
        being_compacted: &HashSet<u64>,
        settings: &Level0Settings,
    ) -> f64;

    /// The byte target of level 1 (the base of every deeper target). A level 0 that holds
    /// much more than a few memtables widens level 1 to match, keeping the tree shallow.
    fn level1_target_bytes(&self, _version: &Version, settings: &Level0Settings) -> u64 {
        settings.max_bytes_for_level_base
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

    /// The level 0 as one that compacts itself in columns, if it is.
    fn self_compacting(&self) -> Option<&dyn SelfCompacting> {
        None
    }
}

#[cfg(test)]
mod tests;
