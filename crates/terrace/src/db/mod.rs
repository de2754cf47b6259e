//! The database: open and recovery, the write path with group commit, the read path,
//! snapshots, iterators, background flushes and compactions, and statistics.
//!
//! Owns: `Db` and everything that ties the lower modules together.
//! Must not touch: file formats (sst, wal, version own them) or policy (compaction::picker).
//! Concurrency: `Db` is `Send + Sync`. One writer at a time leads a group commit; readers
//! take an `Arc` of the current [`SuperVersion`] and never block writers; background
//! threads take the state mutex only to pick work and to install results.

mod background;
mod checkpoint;
mod compact;
mod flush;
mod gc;
mod iterator;
mod migrate;
mod open;
mod read;
mod resume;
mod rewrite;
mod snapshot;
mod stats;
pub(crate) mod write;
mod write_delay;

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex, RwLock};

use crate::batch::WriteBatch;
use crate::compaction::FilterRegistry;
use crate::error::{Error, Result};
use crate::key::SeqNo;
use crate::level0::{Level0, Level0Env, Level0Settings, Level0View};
use crate::memtable::MemTable;
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::sst::BlockCache;
use crate::storage::{FileLock, Storage};
use crate::tables::Tables;
use crate::version::{FileMeta, Version, VersionSet};
use crate::wal::LogWriter;

pub use crate::listener::{CompactionInfo, EventListener, FlushInfo};
pub use iterator::DbIterator;
pub use read::PinnedValue;
pub use snapshot::Snapshot;
pub use stats::{DbStats, LatencySummary, LevelStats};

/// What a reader needs for a consistent view: the memtables and the table files.
pub(crate) struct SuperVersion {
    pub(crate) mem: Arc<MemTable>,
    /// Immutable memtables, newest first.
    pub(crate) imms: Vec<Arc<MemTable>>,
    pub(crate) version: Arc<Version>,
    pub(crate) level0: Arc<dyn Level0View>,
    /// What seeks through this view's level 0 have cost (`compaction::read_trigger`).
    pub(crate) level0_charges: crate::compaction::read_trigger::Level0Charges,
}

/// An immutable memtable waiting for (or in) flush.
pub(crate) struct ImmMemTable {
    pub(crate) mem: Arc<MemTable>,
    /// The WAL file that holds this memtable's writes.
    pub(crate) wal_number: u64,
    /// Taken by a flush (running, or finished and waiting for older ones to install).
    pub(crate) flushing: bool,
    /// A finished flush waiting for the memtables before it to be installed.
    pub(crate) built: Option<BuiltFlush>,
}

/// The output of a finished flush, not yet installed.
pub(crate) struct BuiltFlush {
    pub(crate) output: crate::level0::Level0Flush,
    /// The file number reserved for it (held in `pending_outputs` until installed).
    pub(crate) file_number: u64,
}

/// How long the background sync ahead of a memtable switch waits for the log's lock
/// before it leaves the sync to the switch (`DbInner::presync_wal`).
const PRESYNC_LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(20);

/// State changed by the write leader and the background threads, under `DbInner::state`.
pub(crate) struct DbState {
    pub(crate) versions: VersionSet,
    pub(crate) mem: Arc<MemTable>,
    pub(crate) mem_wal_number: u64,
    /// Oldest first.
    pub(crate) imms: VecDeque<ImmMemTable>,
    /// File numbers being written by unfinished jobs; never garbage-collected.
    pub(crate) pending_outputs: HashSet<u64>,
    /// Input files of running compactions.
    pub(crate) being_compacted: HashSet<u64>,
    pub(crate) running_compactions: usize,
    /// A background rewrite of level 0 (a matrix table merge) is running.
    pub(crate) running_rewrite: bool,
    pub(crate) manual_compactions: usize,
    pub(crate) bg_error: Option<Error>,
    /// Automatic resumes left for the current background error (`db::resume`).
    pub(crate) resumes_left: u32,
    pub(crate) shutting_down: bool,
    /// A background thread is asked to sync the active log ahead of its switch
    /// (`DbInner::ask_presync`), and the log it was last asked for (once per log).
    pub(crate) presync_wanted: bool,
    pub(crate) presync_log: u64,
}

/// The write-ahead log, used only by the group-commit leader (and by close).
pub(crate) struct WalState {
    pub(crate) log: Box<dyn LogWriter>,
    pub(crate) number: u64,
    /// The schedule and rate of slowed-down writes.
    pub(crate) delay: write_delay::WriteDelay,
}

pub(crate) struct DbInner {
    pub(crate) dir: PathBuf,
    /// Where the write-ahead logs are created and found.
    pub(crate) logs: crate::wal::LogSet,
    pub(crate) opts: Options,
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) state: Mutex<DbState>,
    /// Signalled when background work finishes or the state changes.
    pub(crate) bg_done: Condvar,
    /// Signalled when there may be background work to do.
    pub(crate) bg_work: Condvar,
    pub(crate) super_version: RwLock<Arc<SuperVersion>>,
    /// The newest sequence number visible to readers.
    pub(crate) last_seq: AtomicU64,
    pub(crate) writers: write::WriteQueue,
    pub(crate) wal: Mutex<WalState>,
    pub(crate) tables: Arc<Tables>,
    pub(crate) level0: Arc<dyn Level0>,
    /// What the options say of level 0, as the level 0 takes them.
    pub(crate) level0_settings: Level0Settings,
    /// Whether seeks have paid for level 0 (`compaction::read_trigger`).
    pub(crate) read_trigger: Arc<crate::compaction::read_trigger::ReadTrigger>,
    pub(crate) block_cache: Arc<BlockCache>,
    pub(crate) snapshots: Arc<snapshot::SnapshotList>,
    pub(crate) counters: stats::Counters,
    pub(crate) filters: FilterRegistry,
    pub(crate) listeners: Vec<Arc<dyn EventListener>>,
    /// The volumes `Options::volume_limits` throttles (their ids, in rule order) and the
    /// storage that does it.
    pub(crate) volume_throttle: Option<(Vec<u32>, Arc<crate::storage::ThrottledStorage>)>,
    /// Where new table files go under a placement policy.
    pub(crate) placer: crate::volume::placement::Placer,
    /// Held for the whole of each load-migration copy (`db::migrate`).
    pub(crate) migration_lock: Mutex<()>,
    pub(crate) _lock: Box<dyn FileLock>,
}

/// An open database. `Send + Sync`: share it between threads with `Arc` or references.
///
/// Dropping it (or calling [`Db::close`]) stops background work, waits for running jobs
/// and syncs the write-ahead log.
pub struct Db {
    inner: Arc<DbInner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// Reads a database without keeping it open: for a compaction filter that must look at
/// other keys than the one it judges (a collection's metadata, for its members). `Send +
/// Sync`, cheap to clone. Reads fail with `Closed` once the database has closed.
#[derive(Clone)]
pub struct DbReader {
    inner: std::sync::Weak<DbInner>,
}

impl std::fmt::Debug for DbReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbReader").finish_non_exhaustive()
    }
}

impl DbReader {
    /// The latest value of `key`, or `None`.
    ///
    /// # Errors
    /// `Closed` after the database closed; as [`Db::get`].
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let inner = self.inner.upgrade().ok_or(Error::Closed)?;
        Ok(inner
            .get_pinned(&ReadOptions::default(), key)?
            .map(|v| v.to_vec()))
    }
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("dir", &self.inner.dir).finish()
    }
}

impl Db {
    /// Opens (or creates, with `create_if_missing`) the database in `path`, replaying
    /// its write-ahead logs (from `Options::wal_dir` and the database directory).
    ///
    /// # Errors
    /// `Locked` if another process has it open, `Corruption` for a damaged MANIFEST or
    /// WAL (see `WalRecoveryMode`), `InvalidArgument` for bad options and for logs in
    /// the wrong place (a log the manifest needs is missing, as when the database was
    /// last opened with another `wal_dir`; a new database's `wal_dir` holds logs; see
    /// docs/formats/wal.md, "Where logs live"), I/O errors.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        open::open(path.as_ref(), opts)
    }

    /// Every live table file, with its level: number, volume, replicas, size and keys.
    pub fn live_files(&self) -> Vec<(usize, FileMeta)> {
        let version = self.inner.super_version.read().version.clone();
        version
            .levels()
            .iter()
            .enumerate()
            .flat_map(|(level, files)| files.iter().map(move |f| (level, f.as_ref().clone())))
            .collect()
    }

    /// Adds a copy of live table `number` on table volume `volume`, as load migration
    /// does (docs/techniques/tango.md): written, checked against the file's checksum and
    /// synced before the manifest names it; reads then go to whichever copy's volume has
    /// the most budget left. Returns false if the file already has a copy there, or
    /// stopped being live while the copy was made.
    ///
    /// # Errors
    /// `InvalidArgument` for a volume that is not a table volume (with a spreading
    /// placement policy: `Options::volumes`) or a file that is not live; I/O errors of
    /// the copy; manifest errors.
    pub fn copy_table_to(&self, number: u64, volume: u32) -> Result<bool> {
        self.inner.copy_table_to(number, volume)
    }

    /// Every live table file's heat (reads per heat interval, cooled; see
    /// `Options::heat_interval`), hottest first; empty when heat statistics are not kept.
    pub fn file_heat(&self) -> Vec<crate::volume::heat::FileHeatStats> {
        self.inner
            .tables
            .heat()
            .map(|h| h.files())
            .unwrap_or_default()
    }

    /// Stores `value` under `key`.
    ///
    /// # Errors
    /// I/O errors of the WAL, `Background` after a background failure, `Closed`.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::with_capacity(11 + key.len() + value.len());
        b.put(key, value);
        self.write(b, WriteOptions::default())
    }

    /// Deletes `key`.
    ///
    /// # Errors
    /// As [`Db::put`].
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::with_capacity(6 + key.len());
        b.delete(key);
        self.write(b, WriteOptions::default())
    }

    /// Deletes every key in `[start, end)`.
    ///
    /// # Errors
    /// `InvalidArgument` if `start > end`; otherwise as [`Db::put`].
    pub fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        if start > end {
            return Err(Error::InvalidArgument(
                "delete_range: start is after end".into(),
            ));
        }
        let mut b = WriteBatch::new();
        b.delete_range(start, end);
        self.write(b, WriteOptions::default())
    }

    /// Applies `batch` atomically.
    ///
    /// # Errors
    /// As [`Db::put`].
    pub fn write(&self, batch: WriteBatch, opts: WriteOptions) -> Result<()> {
        self.inner.write(batch, opts)
    }

    /// Applies `batch`, made durable by `Options::external_log` instead of the engine's
    /// own log: the batch gets its sequence numbers, `persist` makes it durable in the
    /// external log with them (the first is its argument), and only then is the batch
    /// inserted and visible, as a logged write is after its log record. Returns the
    /// batch's first sequence number. The external log keeps the write until
    /// `ExternalLog::release_through` passes it, and replays it at open until then.
    ///
    /// # Errors
    /// `InvalidArgument` without an external log; what `persist` returns (the write is
    /// then not applied, and the database goes on); as [`Db::write`] otherwise.
    pub fn write_external(
        &self,
        batch: WriteBatch,
        persist: impl FnOnce(SeqNo) -> Result<()> + Send + 'static,
    ) -> Result<SeqNo> {
        if self.inner.opts.external_log.is_none() {
            return Err(Error::InvalidArgument(
                "write_external needs Options::external_log, which replays such writes at open"
                    .into(),
            ));
        }
        self.inner.write_external(batch, Box::new(persist))
    }

    /// A reader of this database that does not keep it open ([`DbReader`]).
    pub fn reader(&self) -> DbReader {
        DbReader {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// The value of `key`, or `None`.
    ///
    /// # Errors
    /// I/O errors and `Corruption` of table files; never a wrong value.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self
            .inner
            .get_pinned(&ReadOptions::default(), key)?
            .map(|v| v.to_vec()))
    }

    /// The value of `key` read with `opts` (e.g. at a snapshot).
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn get_opt(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.inner.get_pinned(opts, key)?.map(|v| v.to_vec()))
    }

    /// The value of `key` as a pinned slice of the memtable or cached block: no copy.
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn get_pinned(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<PinnedValue>> {
        self.inner.get_pinned(opts, key)
    }

    /// Reads `key` into `buf` (cleared first); returns whether it was found.
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn get_into(&self, opts: &ReadOptions, key: &[u8], buf: &mut Vec<u8>) -> Result<bool> {
        buf.clear();
        match self.inner.get_pinned(opts, key)? {
            Some(v) => {
                buf.extend_from_slice(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Reads several keys at one consistent point in time.
    ///
    /// # Errors
    /// The first error met.
    pub fn multi_get(&self, opts: &ReadOptions, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.inner.multi_get(opts, keys)
    }

    /// Reads several keys at one consistent point in time, each value pinned as by
    /// [`Db::get_pinned`]. The memtable searches of all keys run interleaved, which
    /// overlaps their cache misses: cheaper per key than separate reads.
    ///
    /// # Errors
    /// The first error met.
    pub fn multi_get_pinned(
        &self,
        opts: &ReadOptions,
        keys: &[&[u8]],
    ) -> Result<Vec<Option<PinnedValue>>> {
        self.inner.multi_get_pinned(opts, keys)
    }

    /// Takes a snapshot of the current state.
    pub fn snapshot(&self) -> Snapshot {
        let seq = self.inner.snapshots.acquire_current(&self.inner.last_seq);
        Snapshot {
            seq,
            list: self.inner.snapshots.clone(),
        }
    }

    /// An iterator over a point-in-time view (the snapshot in `opts`, or now).
    /// It is not positioned: call a seek first.
    ///
    /// # Errors
    /// I/O errors opening table files.
    pub fn iter(&self, opts: ReadOptions) -> Result<DbIterator> {
        self.inner.new_iterator(opts)
    }

    /// Flushes the memtable to level 0 and waits until every immutable memtable is flushed.
    ///
    /// # Errors
    /// The flush's error.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush_and_wait()
    }

    /// Compacts every level's files overlapping `[start, end]` (None = unbounded) down to
    /// the last level that has data, then waits.
    ///
    /// # Errors
    /// The compaction's error.
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.inner.compact_range(start, end)
    }

    /// Waits until no flush or compaction is pending or running.
    ///
    /// # Errors
    /// A background error.
    pub fn wait_for_compactions(&self) -> Result<()> {
        self.inner.wait_idle()
    }

    /// Writes a consistent copy of the database into `dir` (which must not exist),
    /// hard-linking table files where possible and copying the live logs. The copy
    /// opens as a database of one directory (no volumes, no `wal_dir`) holding every
    /// write acknowledged before the call.
    ///
    /// # Errors
    /// `InvalidArgument` if `dir` exists; I/O errors.
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<()> {
        self.inner.checkpoint(dir.as_ref())
    }

    /// A report of levels, bytes written, write amplification, stalls and latencies.
    pub fn stats(&self) -> DbStats {
        self.inner.stats()
    }

    /// A named property, RocksDB style: `terrace.stats`, `terrace.num-files-at-level<N>`,
    /// `terrace.levelstats`, `terrace.compaction-stats` (or `cfstats`), `write-amplification`,
    /// `estimate-live-data-size`, `num-immutable-mem-table`, `cur-size-all-mem-tables`,
    /// `background-errors` (each `terrace.` or `rocksdb.`). `None` for an unknown name.
    pub fn property(&self, name: &str) -> Option<String> {
        self.inner.property(name)
    }

    /// The newest sequence number.
    pub fn latest_sequence(&self) -> SeqNo {
        self.inner.last_seq.load(Ordering::Acquire)
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// Syncs the current write-ahead log, making every write acknowledged so far durable
    /// (what a server's once-a-second fsync policy calls).
    ///
    /// # Errors
    /// The sync's I/O error; a failed sync makes the database read-only, as a failed
    /// synced write does.
    pub fn sync_wal(&self) -> Result<()> {
        let r = self.inner.sync_wal_outside_lock();
        if let Err(e) = &r {
            let mut st = self.inner.state.lock();
            self.inner.set_bg_error(&mut st, e.clone());
        }
        r
    }

    /// Leaves the read-only mode a background error put the database in (RocksDB's
    /// `DB::Resume`): starts a new write-ahead log, flushes every memtable, and lets
    /// writes in again once that succeeded. Returns `Ok` at once if there is no error.
    /// Retryable errors (a full device) are also resumed from automatically
    /// (`Options::max_bgerror_resume_count`, `Options::bgerror_resume_retry_interval`).
    ///
    /// # Errors
    /// `Background` holding the error if it cannot be resumed from (corruption: reopen
    /// the database), or the error that made the attempt fail (the database stays
    /// read-only); `Closed`.
    pub fn resume(&self) -> Result<()> {
        self.inner.resume()
    }

    /// The error that made the database read-only, if any.
    pub fn background_error(&self) -> Option<Error> {
        self.inner.state.lock().bg_error.clone()
    }

    /// Stops background work, waits for running jobs and syncs the WAL. Also done on drop.
    ///
    /// # Errors
    /// The WAL sync's error, or the background error that stopped the database.
    pub fn close(self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&self) -> Result<()> {
        {
            let mut st = self.inner.state.lock();
            st.shutting_down = true;
        }
        self.inner.bg_work.notify_all();
        self.inner.bg_done.notify_all();
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        let synced = self.inner.wal.lock().log.sync();
        match &self.inner.state.lock().bg_error {
            Some(e) => Err(Error::Background(Arc::new(e.clone()))),
            None => synced,
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// The read charges of a view of `version`: its level-0 tables, when reads may trigger
/// compactions (`Options::read_triggered_compaction`) and the level 0 in use keeps its
/// tables there (one that compacts itself is never charged). The one place that decides:
/// a view without charges never marks level 0 due.
pub(crate) fn level0_charges(
    opts: &crate::options::Options,
    level0: &dyn crate::level0::Level0,
    version: &crate::version::Version,
) -> crate::compaction::read_trigger::Level0Charges {
    let files = if opts.read_triggered_compaction && level0.self_compacting().is_none() {
        version.files(0)
    } else {
        &[]
    };
    crate::compaction::read_trigger::Level0Charges::new(files)
}

impl DbInner {
    /// [`Db::sync_wal`]'s sync: the log's records reach the operating system under the
    /// log's lock, and the device sync runs outside it through a handle of its own, so
    /// that writers append meanwhile instead of waiting the sync out (milliseconds to
    /// tens of them, once a second under a server's `everysec`). A log that can only be
    /// synced by its writer is synced under the lock.
    pub(crate) fn sync_wal_outside_lock(&self) -> Result<()> {
        let handle = {
            let mut wal = self.wal.lock();
            Self::sync_handle_of(&mut wal, true)?
        };
        match handle {
            Some(handle) => handle.sync(),
            None => Ok(()),
        }
    }

    /// The background sync ahead of a memtable switch (`DbInner::ask_presync`): as
    /// [`DbInner::sync_wal_outside_lock`] without the under-the-lock fallback, and only
    /// if the log's lock comes free within [`PRESYNC_LOCK_WAIT`]. A writer holds that lock
    /// while it waits for a flush to make room, and this runs on a thread that flushes:
    /// waiting for the lock there could wait forever. Skipped, the switch syncs it all.
    pub(crate) fn presync_wal(&self) -> Result<()> {
        let handle = {
            let Some(mut wal) = self.wal.try_lock_for(PRESYNC_LOCK_WAIT) else {
                return Ok(());
            };
            Self::sync_handle_of(&mut wal, false)?
        };
        match handle {
            Some(handle) => handle.sync(),
            None => Ok(()),
        }
    }

    /// The log's sync handle; without one, the log synced here if `or_under_lock`.
    fn sync_handle_of(
        wal: &mut WalState,
        or_under_lock: bool,
    ) -> Result<Option<Box<dyn crate::storage::SyncHandle>>> {
        match wal.log.sync_handle()? {
            Some(handle) => Ok(Some(handle)),
            None if or_under_lock => wal.log.sync().map(|()| None),
            None => Ok(None),
        }
    }

    /// The current consistent view.
    pub(crate) fn super_version(&self) -> Arc<SuperVersion> {
        self.super_version.read().clone()
    }

    /// Publishes a new view built from `st`. Call with the state lock held.
    pub(crate) fn install_super_version(&self, st: &DbState) {
        let version = st.versions.current();
        let sv = SuperVersion {
            mem: st.mem.clone(),
            imms: st.imms.iter().rev().map(|i| i.mem.clone()).collect(),
            level0: self.level0.install(&self.tables, &version),
            level0_charges: level0_charges(&self.opts, self.level0.as_ref(), &version),
            version,
        };
        *self.super_version.write() = Arc::new(sv);
    }

    /// The volume that receives new files of `level` (when the placement policy does
    /// not place each file itself).
    pub(crate) fn volume_for_level(&self, level: usize) -> u32 {
        self.opts.placement().volume_for_level(level)
    }

    /// The plan placing new files of `level` within user keys `[lo, hi]`, when the
    /// placement policy places each file; `None` when it places by level. The new files
    /// replace `inputs` (none for a flush) and hold about `bytes` bytes in all.
    pub(crate) fn placement_plan(
        &self,
        st: &DbState,
        level: usize,
        range: (Option<&[u8]>, Option<&[u8]>),
        inputs: &[u64],
        bytes: u64,
    ) -> Option<crate::volume::placement::PlacementPlan> {
        let version = st.versions.current();
        // A volume's weight: its files' summed heat, in thousandths; without heat
        // statistics, its live table files.
        let weight = |v: u32| match self.tables.heat() {
            Some(h) => (h.volume_load(v).weight * 1000.0) as u64,
            None => version
                .levels()
                .iter()
                .flatten()
                .filter(|f| f.volume == v)
                .count() as u64,
        };
        // A new file's weight: its writing, and its share of the inputs' heat (the
        // reads of its keys move with them).
        let target = self.opts.target_file_size_base.max(1);
        let files = bytes.div_ceil(target).max(1);
        let per_file = bytes / files;
        let inherited = self
            .tables
            .heat()
            .map_or(0.0, |h| h.heat_of(inputs.iter().copied()));
        let new_file_weight = crate::volume::heat::billed_ios(per_file) * 1000
            + (inherited * 1000.0 / files as f64) as u64;
        let (lo, hi) = range;
        let mut plan = self
            .placer
            .plan(&version, level, lo, hi, weight, new_file_weight)?;
        if plan.policy.needs_demand() {
            self.add_demand(st, &mut plan, level, inputs, files, per_file);
        }
        Some(plan)
    }

    /// Fills in `plan`'s predicted demand (`volume::demand`) for `files` new files of
    /// about `per_file` bytes on `level` replacing `inputs`: the layout without the
    /// inputs, the foreground read rates and compaction read rate the heat statistics
    /// measured (until compactions are measured, a nominal rate, so that the layout
    /// still balances), and each new file's share of its inputs' read rates plus what a
    /// file of its size on its level is expected to cost (`Demand::new_file_cost`).
    fn add_demand(
        &self,
        st: &DbState,
        plan: &mut crate::volume::placement::PlacementPlan,
        level: usize,
        inputs: &[u64],
        files: u64,
        per_file: u64,
    ) {
        let scores = self.with_level_state(st, |state| {
            crate::compaction::picker::scores(state, &self.opts)
        });
        let version = st.versions.current();
        let layout: Vec<Vec<Arc<crate::version::FileMeta>>> = version
            .levels()
            .iter()
            .map(|files| {
                files
                    .iter()
                    .filter(|f| !inputs.contains(&f.number))
                    .cloned()
                    .collect()
            })
            .collect();
        // Until compaction reads are measured, a nominal one operation per second.
        let (read_rates, compaction_rate) = match self.tables.heat() {
            Some(h) => (h.read_rates(), h.compaction_rate()),
            None => (Default::default(), 0.0),
        };
        let compaction_rate = if compaction_rate > 0.0 {
            compaction_rate
        } else {
            1.0
        };
        let read_rate = |n: u64| read_rates.get(&n).copied().unwrap_or(0.0);
        let demand = crate::volume::demand::predict(&layout, &scores, read_rate, compaction_rate);
        let inherited: f64 = inputs.iter().map(|&n| read_rate(n)).sum();
        let new_file = inherited / files as f64 + demand.new_file_cost(level, per_file);
        let rate = |v: u32| {
            self.opts
                .volume_limits
                .get(v as usize)
                .map_or(0, |l| l.iops)
        };
        plan.set_demand(&demand, rate, new_file);
    }

    /// What a level 0 needs to do I/O.
    pub(crate) fn level0_env(&self) -> Level0Env<'_> {
        Level0Env {
            storage: self.storage.as_ref(),
            settings: &self.level0_settings,
            tables: &self.tables,
            snapshots: &[],
            new_number: None,
            placement: None,
        }
    }

    /// `e` wrapped in `Error::Volume` when it is about a file on a table volume (with
    /// several volumes configured; the deepest directory holding the path wins).
    pub(crate) fn name_volume(&self, e: Error) -> Error {
        let volumes = self.tables.volumes();
        if volumes.len() < 2 || matches!(e, Error::Volume { .. }) {
            return e;
        }
        let Some(path) = e.path() else {
            return e;
        };
        let found = volumes
            .iter()
            .filter(|(_, dir)| path.starts_with(dir))
            .max_by_key(|(_, dir)| dir.components().count())
            .map(|(id, dir)| (id, dir.to_path_buf()));
        match found {
            Some((volume, dir)) => Error::Volume {
                volume,
                dir,
                error: Arc::new(e),
            },
            None => e,
        }
    }

    /// Records a background failure: the database becomes read-only until `Db::resume`
    /// (or the automatic recovery, for a retryable error) succeeds, or it is reopened.
    pub(crate) fn set_bg_error(&self, st: &mut DbState, e: Error) {
        let e = self.name_volume(e);
        if st.bg_error.is_none() {
            let retryable = resume::is_retryable(&e);
            tracing::error!(
                error = %e,
                retryable,
                "background error; the database is read-only until resumed"
            );
            stats::add(&self.counters.bg_errors, 1);
            for l in &self.listeners {
                l.on_background_error(&e);
            }
            st.bg_error = Some(e);
            st.resumes_left = self.opts.max_bgerror_resume_count;
        }
        self.bg_done.notify_all();
    }
}
