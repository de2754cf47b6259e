//! Opening a database: lock, manifest recovery, WAL replay, a fresh WAL, and the
//! background threads.
//!
//! Logs are found and created through [`LogSet`] (the `wal_dir` option): recovery replays
//! the logs it finds there and in the database directory, and the fresh log goes into the
//! log directory, whose entry is synced before the manifest names it.

use std::collections::{HashSet, VecDeque};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, RwLock};

use super::{background, stats, write, Db, DbInner, DbState, ImmMemTable, SuperVersion, WalState};
use crate::batch::WriteBatch;
use crate::compaction::FilterRegistry;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{SeqNo, ValueType};
use crate::level0::{Level0, Level0Env};
use crate::memtable::MemTable;
use crate::options::Options;
use crate::sst::BlockCache;
use crate::storage::{Storage, ThrottledStorage};
use crate::tables::Tables;
use crate::version::{parse_file_name, FileKind, FileMeta, Level0Record, VersionEdit, VersionSet};
use crate::volume::heat::Heat;
use crate::volume::placement::{PlacementPolicy, Placer, RAID0_STRIPE_BYTES};
use crate::volume::replica::BacklogChooser;
use crate::volume::Volumes;
use crate::wal::{FoundLog, LogSet, LogWriter};

pub(crate) fn open(dir: &Path, mut opts: Options) -> Result<Db> {
    opts.validate()?;
    if let Some(workers) = &opts.compaction_workers {
        // The host's executor runs its share and whatever a worker fails.
        opts.compaction_executor = workers.executor(opts.compaction_executor.clone(), dir);
    }
    // Each volume with limits gets its own budget, and its own figures in the stats.
    let (throttled_ids, rules) =
        crate::volume::throttle_rules(&Volumes::new(dir, &opts.volumes), &opts.volume_limits);
    let volume_throttle = (!rules.is_empty()).then(|| {
        let mut t = ThrottledStorage::new(opts.storage.clone(), rules);
        if opts.placement_policy == PlacementPolicy::Raid0 {
            // The table volumes as one array in the first one's directory.
            let members: Vec<usize> = (0..throttled_ids.len())
                .filter(|&i| throttled_ids[i] >= 1)
                .collect();
            if let Some(first) = opts.volumes.first() {
                t = t.striped(first.clone(), &members, RAID0_STRIPE_BYTES);
            }
        }
        let t = Arc::new(t);
        opts.storage = t.clone();
        (throttled_ids, t)
    });
    let storage = opts.storage.clone();
    let exists = storage.exists(dir)?;
    if !exists && !opts.create_if_missing {
        return Err(Error::InvalidArgument(format!(
            "{} does not exist and create_if_missing is false",
            dir.display()
        )));
    }
    storage.create_dir_all(dir)?;
    let lock = storage.lock(&dir.join("LOCK"))?;
    for v in &opts.volumes {
        storage.create_dir_all(v)?;
    }
    let logs = LogSet::open(storage.as_ref(), dir, &opts)?;
    let has_db = storage.exists(&dir.join("CURRENT"))?;
    if has_db && opts.error_if_exists {
        return Err(Error::InvalidArgument(format!(
            "{} already exists",
            dir.display()
        )));
    }
    if !has_db {
        logs.refuse_foreign_logs(storage.as_ref())?;
    }
    let mut versions = if has_db {
        VersionSet::recover_with_level0(
            storage.clone(),
            dir,
            opts.num_levels,
            opts.max_manifest_file_size,
            opts.level0.empty_state(),
        )?
    } else if opts.create_if_missing {
        VersionSet::create_with_level0(
            storage.clone(),
            dir,
            opts.num_levels,
            opts.max_manifest_file_size,
            opts.level0.empty_state(),
        )?
    } else {
        return Err(Error::InvalidArgument(format!(
            "{} is not a database and create_if_missing is false",
            dir.display()
        )));
    };
    let names = storage.list(dir)?;
    for name in &names {
        if let Some((FileKind::Temp, _)) = parse_file_name(name) {
            storage.remove_file(&dir.join(name))?;
        }
    }
    // File numbers handed out before a crash but never recorded may name abandoned
    // outputs on any volume (or logs); never hand them out again, so that garbage
    // collection can tell those files from live ones and delete them.
    let volumes = Volumes::new(dir, &opts.volumes);
    let dirs = volumes
        .iter()
        .map(|(_, d)| d.to_path_buf())
        .chain(logs.db_dir.is_some().then(|| logs.path.clone()));
    for volume_dir in dirs {
        for name in storage.list(&volume_dir)? {
            if let Some((_, number)) = parse_file_name(&name) {
                versions.mark_file_number_used(number);
            }
        }
    }
    let block_cache = Arc::new(BlockCache::new(opts.block_cache_bytes));
    let mut tables = Tables::new(
        storage.clone(),
        dir,
        opts.volumes.clone(),
        opts.max_open_files,
        Some(block_cache.clone()),
    )
    .with_warm_new_tables(opts.warm_block_cache_on_write);
    if opts.keeps_heat() {
        tables = tables.with_heat(Arc::new(Heat::new(opts.heat_alpha)));
    }
    if let Some((ids, throttle)) = &volume_throttle {
        tables =
            tables.with_copy_chooser(Arc::new(BacklogChooser::new(ids.clone(), throttle.clone())));
    }
    let tables = Arc::new(tables);
    let filters = FilterRegistry::new();
    for f in &opts.compaction_filter_factories {
        filters.register(f.clone());
    }
    let inner_mem = Arc::new(MemTable::with_point_index(opts.write_buffer_size));
    let listeners = opts.listeners.clone();

    // Replay the logs into level-0 tables.
    let counters = stats::Counters::new(opts.num_levels);
    let level0 = opts.level0.clone();
    let level0_settings = opts.level0_settings();
    let placer = Placer::new(opts.placement_policy, opts.volumes.len());
    // Tables written while replaying logs go where the policy puts a flush (with no
    // heat known yet: by overlap, then at random).
    let replay_plan = placer.plan(&versions.current(), 0, None, None, |_| 0, 0);
    let env = Level0Env {
        storage: storage.as_ref(),
        settings: &level0_settings,
        tables: &tables,
        snapshots: &[],
        new_number: None,
        placement: replay_plan.as_ref(),
    };
    level0.recover(&env, &versions.current())?;
    let to_replay = logs.logs_to_replay(storage.as_ref(), versions.log_number())?;
    let mut recovered = Recovery {
        storage: storage.as_ref(),
        opts: &opts,
        env: &env,
        level0: level0.as_ref(),
        versions: &mut versions,
        new_files: Vec::new(),
        records: Vec::new(),
        deferred: Vec::new(),
        max_seq: 0,
        dropped: 0,
    };
    recovered.replay(&logs, &to_replay)?;
    let Recovery {
        new_files,
        records,
        deferred,
        max_seq,
        dropped,
        ..
    } = recovered;
    stats::add(&counters.wal_records_dropped, dropped);

    let wal_number = versions.new_file_number();
    let mut wal_log = logs.create(storage.as_ref(), wal_number)?;
    let mut deferred: Vec<(Arc<MemTable>, u64)> = deferred
        .into_iter()
        .map(|(m, n)| (Arc::new(m), n))
        .collect();
    if dropped > 0 && !deferred.is_empty() {
        // The logs of the kept memtables end in the damage replay dropped; writes going to
        // a later log would make that damage look like damage in synced data at the next
        // open. Their entries move to the new log, and the damaged logs become obsolete.
        rewrite_kept(&mut wal_log, &deferred)?;
        for (_, n) in &mut deferred {
            *n = wal_number;
        }
    }
    let last_seq = versions.last_sequence().max(max_seq);
    versions.set_last_sequence(last_seq);
    // Logs holding the data of memtables kept unflushed stay until those are flushed.
    let oldest_kept = deferred.first().map(|(_, n)| *n);
    let mut edit = VersionEdit {
        log_number: Some(oldest_kept.unwrap_or(wal_number)),
        ..VersionEdit::default()
    };
    // Everything replayed is in tables unless a memtable was kept unflushed.
    if opts.external_log.is_some() && deferred.is_empty() {
        edit.external_flushed = Some(last_seq);
    }
    edit.new_files = new_files.into_iter().map(|f| (0, f)).collect();
    edit.level0 = records;
    versions.log_and_apply(edit)?;
    if let Some(external) = &opts.external_log {
        external.release_through(versions.external_flushed());
    }

    let version = versions.current();
    let imms: VecDeque<ImmMemTable> = deferred
        .into_iter()
        .map(|(mem, wal_number)| ImmMemTable {
            mem,
            wal_number,
            flushing: false,
            built: None,
        })
        .collect();
    let sv = SuperVersion {
        mem: inner_mem.clone(),
        imms: imms.iter().rev().map(|i| i.mem.clone()).collect(),
        level0: level0.install(&tables, &version),
        level0_charges: super::level0_charges(&opts, level0.as_ref(), &version),
        version,
    };
    let state = DbState {
        versions,
        mem: inner_mem,
        mem_wal_number: wal_number,
        imms,
        pending_outputs: HashSet::new(),
        being_compacted: HashSet::new(),
        running_compactions: 0,
        running_rewrite: false,
        manual_compactions: 0,
        bg_error: None,
        resumes_left: 0,
        shutting_down: false,
        presync_wanted: false,
        presync_log: 0,
    };
    let inner = Arc::new(DbInner {
        dir: dir.to_path_buf(),
        logs,
        storage,
        state: Mutex::new(state),
        bg_done: Condvar::new(),
        bg_work: Condvar::new(),
        super_version: RwLock::new(Arc::new(sv)),
        last_seq: AtomicU64::new(last_seq),
        writers: write::WriteQueue::default(),
        wal: Mutex::new(WalState {
            log: Box::new(wal_log),
            number: wal_number,
            delay: Default::default(),
        }),
        tables,
        level0,
        level0_settings,
        read_trigger: Arc::default(),
        block_cache,
        snapshots: Arc::default(),
        counters,
        filters,
        listeners,
        volume_throttle,
        placer,
        migration_lock: Mutex::new(()),
        opts,
        _lock: lock,
    });
    {
        let mut st = inner.state.lock();
        inner.delete_obsolete_files(&mut st);
    }
    // Level 0 due for reads wakes the compaction threads (under the state lock, so that
    // a thread between its look at the picker and its wait is not missed).
    let weak = Arc::downgrade(&inner);
    inner.read_trigger.set_waker(Box::new(move || {
        if let Some(db) = weak.upgrade() {
            let _st = db.state.lock();
            db.bg_work.notify_all();
        }
    }));
    let threads = background::spawn(&inner)?;
    inner.bg_work.notify_all();
    Ok(Db {
        inner,
        threads: Mutex::new(threads),
    })
}

/// Writes every entry and range tombstone of `mems` into `log`, one record each at its own
/// sequence number (replay inserts them as they were), and syncs it.
fn rewrite_kept(log: &mut dyn LogWriter, mems: &[(Arc<MemTable>, u64)]) -> Result<()> {
    for (mem, _) in mems {
        let mut it = mem.iter();
        it.seek_to_first()?;
        while it.valid() {
            let p = crate::key::parse(it.key(), Path::new("<memtable>"), 0)?;
            let mut b = WriteBatch::new();
            match p.kind {
                ValueType::Value => b.put(p.user_key, it.value()),
                ValueType::Deletion => b.delete(p.user_key),
                ValueType::RangeDeletion => {}
            }
            if b.count() > 0 {
                b.set_sequence(p.seq);
                log.add_record(b.data())?;
            }
            it.next()?;
        }
        for t in mem.range_tombstones() {
            let mut b = WriteBatch::new();
            b.delete_range(&t.start, &t.end);
            b.set_sequence(t.seq);
            log.add_record(b.data())?;
        }
    }
    log.sync()
}

/// WAL replay state.
struct Recovery<'a> {
    storage: &'a dyn Storage,
    opts: &'a Options,
    env: &'a Level0Env<'a>,
    level0: &'a dyn Level0,
    versions: &'a mut VersionSet,
    new_files: Vec<FileMeta>,
    /// Level-0 records of the replayed memtables (a matrix level 0's new rows).
    records: Vec<Level0Record>,
    /// Replayed memtables level 0 had no room for (a matrix container that was full when
    /// the database closed), oldest first, each with the first log holding its data: they
    /// become the new database's immutable memtables, flushed once compaction makes room.
    deferred: Vec<(MemTable, u64)>,
    max_seq: SeqNo,
    dropped: u64,
}

impl Recovery<'_> {
    /// Replays the external log's writes not yet in tables (`Options::external_log`),
    /// then `found` (oldest first, of `logs`), into level 0.
    fn replay(&mut self, logs: &LogSet, found: &[FoundLog]) -> Result<()> {
        for log in found {
            self.versions.mark_file_number_used(log.number);
        }
        let mut mem = MemTable::new();
        // The first log holding an entry of `mem` (external writes count as the first
        // log replayed, or the live log number when there is none).
        let mut mem_log = None;
        let first_log = found
            .first()
            .map_or(self.versions.log_number(), |l| l.number);
        // The external log's writes, in sequence order. They are merged with the logs'
        // records by sequence number: a memtable filled mid-replay becomes a level-0
        // table, and every table must hold only writes older than those of the tables
        // made after it (a lookup takes the newest table's version). Only writes not yet
        // in tables are replayed, about a memtable's worth, so holding them is cheap.
        let mut external: Vec<WriteBatch> = Vec::new();
        if let Some(log) = self.opts.external_log.clone() {
            let after = self.versions.external_flushed();
            log.replay(after, &mut |batch| {
                external.push(batch.clone());
                Ok(())
            })?;
        }
        external.sort_by_key(WriteBatch::sequence);
        // The sequence numbers the external log replayed, as (first, last): a memtable
        // kept at an open that dropped damaged records was rewritten into the log here,
        // external writes included, and those must not be applied twice.
        let external_seqs: Vec<(u64, u64)> = external
            .iter()
            .map(|b| {
                let first = b.sequence();
                (first, first + u64::from(b.count()).saturating_sub(1))
            })
            .collect();
        let replayed_externally = |seq: u64| {
            let i = external_seqs.partition_point(|&(first, _)| first <= seq);
            i > 0 && external_seqs[i - 1].1 >= seq
        };
        let mut external = external.into_iter().peekable();
        let mode = self.opts.wal_recovery_mode;
        self.dropped = logs.replay(self.storage, found, mode, |log, data, offset| {
            let batch = WriteBatch::from_record(data, &log.path, offset)?;
            if replayed_externally(batch.sequence()) {
                return Ok(());
            }
            while let Some(older) = external.next_if(|e| e.sequence() < batch.sequence()) {
                self.apply(&mut mem, &mut mem_log, &older, first_log)?;
            }
            self.apply(&mut mem, &mut mem_log, &batch, log.number)
        })?;
        for batch in external {
            self.apply(&mut mem, &mut mem_log, &batch, first_log)?;
        }
        match mem_log {
            Some(first_log) => self.flush(mem, first_log),
            None => Ok(()),
        }
    }

    /// Inserts a replayed `batch` (from log `log`) into `mem`, flushing it when full.
    fn apply(
        &mut self,
        mem: &mut MemTable,
        mem_log: &mut Option<u64>,
        batch: &WriteBatch,
        log: u64,
    ) -> Result<()> {
        let seq = batch.sequence();
        mem_log.get_or_insert(log);
        write::insert_into_memtable(mem, batch, seq)?;
        let last = seq + u64::from(batch.count()).saturating_sub(1);
        self.max_seq = self.max_seq.max(last);
        if mem.approximate_memory_usage() >= self.opts.write_buffer_size {
            let first_log = mem_log.take().unwrap_or(log);
            self.flush(std::mem::take(mem), first_log)?;
        }
        Ok(())
    }

    /// Flushes `mem` (whose oldest entry came from log `first_log`) into level 0, or keeps
    /// it for later if level 0 has no room for it, or an older memtable was kept.
    fn flush(&mut self, mem: MemTable, first_log: u64) -> Result<()> {
        if mem.is_empty() && mem.range_tombstones().is_empty() {
            return Ok(());
        }
        if !self.deferred.is_empty() {
            self.deferred.push((mem, first_log));
            return Ok(());
        }
        let number = self.versions.new_file_number();
        let mem = Arc::new(mem);
        match self.level0.flush(self.env, &mem, number) {
            Ok(flushed) => {
                self.new_files.extend(flushed.new_files);
                self.records.extend(flushed.records);
                Ok(())
            }
            Err(Error::NoSpace { .. }) => {
                let mem = Arc::try_unwrap(mem).map_err(|_| {
                    Error::Internal("level 0 kept a memtable it did not flush".into())
                })?;
                self.deferred.push((mem, first_log));
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}
