//! Options of a database, of reads and of writes, with RocksDB's names and defaults
//! where RocksDB has the same knob.
//!
//! Owns: option structs and their validation.
//! Must not touch: anything that acts on options.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::level0::{Level0, Level0Settings};
use crate::sst::SstOptions;
use crate::storage::{FsStorage, Storage};

pub use crate::sst::Compression;

/// How write-ahead-log damage found on open is handled (docs/formats/wal.md, "Recovery
/// modes"). In both modes damage in a log followed by a later log that holds anything
/// fails the open with `Error::Corruption`: writes moved to the later log only after the
/// damaged one was synced, so the damage is in synced data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum WalRecoveryMode {
    /// Strict: only damage in the last record of the newest log that holds anything (a
    /// torn write with nothing valid after it) is dropped and counted; any other damage
    /// fails the open with `Error::Corruption`. A power cut that leaves a hole in a log's
    /// unsynced tail (a lost page before one that reached the device) fails the open.
    TolerateCorruptedTailRecords,
    /// Replay of the newest log that holds anything stops at its first damage, of any kind:
    /// the rest of that log (an unsynced tail a power cut may have torn anywhere) is
    /// dropped, logged and counted. The default, as in RocksDB.
    #[default]
    PointInTime,
}

/// Which file of a level n >= 1 a size-triggered compaction takes into level n+1
/// (RocksDB's `compaction_pri` for leveled compaction). Level 0 always takes its oldest
/// file and everything overlapping it. See docs/techniques/leveled-compaction.md.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
pub enum CompactionPri {
    /// The first file after the level's compact pointer (the largest key of the last
    /// compaction out of the level), wrapping around: LevelDB's policy, RocksDB's
    /// `kRoundRobin`. Every key range gets its turn.
    RoundRobin,
    /// The file whose overlapping bytes in level n+1, divided by its own bytes, are the
    /// smallest (ties: the smallest key first): RocksDB's `kMinOverlappingRatio`, its
    /// default since 6.0. Rewrites the fewest bytes of level n+1 per byte moved down, which
    /// lowers write amplification; a file overlapping nothing moves down without a rewrite.
    #[default]
    MinOverlappingRatio,
}

/// Options of a database, fixed at open.
#[derive(Clone)]
pub struct Options {
    /// Create the database if it does not exist.
    pub create_if_missing: bool,
    /// Fail the open if the database exists.
    pub error_if_exists: bool,
    /// The file system to use.
    pub storage: Arc<dyn Storage>,
    /// Bytes a memtable may hold before it is switched out and flushed.
    pub write_buffer_size: usize,
    /// Memtables (active plus immutable) allowed before writes stop.
    pub max_write_buffer_number: usize,
    /// Target uncompressed size of a table data block.
    pub block_size: usize,
    /// Keys between restart points inside a block.
    pub block_restart_interval: usize,
    /// Bloom filter bits per key; 0 disables filters.
    pub bloom_bits_per_key: usize,
    /// Compression of table blocks.
    pub compression: Compression,
    /// Capacity of the shared block cache in bytes.
    pub block_cache_bytes: usize,
    /// Table files kept open in the table cache.
    pub max_open_files: usize,
    /// Number of levels, level 0 included.
    pub num_levels: usize,
    /// Level-0 file count that triggers a compaction into level 1.
    pub level0_file_num_compaction_trigger: usize,
    /// Level-0 file count at which writes are delayed.
    pub level0_slowdown_writes_trigger: usize,
    /// Level-0 file count at which writes stop until compaction catches up.
    pub level0_stop_writes_trigger: usize,
    /// Target size of level 1 in bytes.
    pub max_bytes_for_level_base: u64,
    /// Size ratio between adjacent levels.
    pub max_bytes_for_level_multiplier: f64,
    /// Size the last level drives the targets of the others (RocksDB's dynamic level bytes).
    pub level_compaction_dynamic_level_bytes: bool,
    /// How a level n >= 1 chooses the file it compacts into level n+1 (RocksDB's
    /// `compaction_pri`; default `MinOverlappingRatio`, as in RocksDB).
    pub compaction_pri: CompactionPri,
    /// Target size of a compaction output file.
    pub target_file_size_base: u64,
    /// Background threads running flushes.
    pub max_background_flushes: usize,
    /// Whether the writers of a write group insert their own batches into the memtable at
    /// once, after the leader wrote the group to the log (RocksDB's
    /// `allow_concurrent_memtable_write`, also on by default). Off, the leader inserts
    /// every batch of its group.
    pub allow_concurrent_memtable_write: bool,
    /// Whether each read and write is timed into [`crate::DbStats`]'s `get_latency` and
    /// `write_latency` (two clock reads and a locked histogram update per operation; on
    /// by default). RocksDB times operations only when statistics are enabled; an
    /// embedder that keeps its own latencies (`terrace serve` does, per command) turns
    /// this off, and the summaries then stay empty.
    pub latency_stats: bool,
    /// Whether iterator seeks that keep paying for level 0's tables compact them into the
    /// base level below the file-count trigger: LevelDB's seek compaction, for level 0
    /// only (`compaction::read_trigger`; on by default, as in LevelDB). Off, as in
    /// RocksDB, only sizes and file counts trigger compactions.
    pub read_triggered_compaction: bool,
    /// Background threads running compactions.
    pub max_background_compactions: usize,
    /// Key-range subtasks one compaction may be cut into, run in parallel.
    pub max_subcompactions: usize,
    /// Write rate in bytes per second when writes start to be slowed down (RocksDB's
    /// `delayed_write_rate`): writes are admitted on a schedule at a rate that starts here,
    /// or at the rate writes were arriving at if that is higher, and falls by a fifth with
    /// each new version holding more level-0 bytes (a tenth while level 0 only eases
    /// writes; rising back as they shrink), and the writing thread sleeps whenever the
    /// schedule runs a millisecond ahead of the clock.
    pub delayed_write_rate: u64,
    /// Handling of write-ahead-log damage on open.
    pub wal_recovery_mode: WalRecoveryMode,
    /// Automatic resumes after a retryable background error (a full device) before the
    /// database stays read-only until `Db::resume` or a reopen (RocksDB's
    /// `max_bgerror_resume_count`); 0 turns automatic recovery off.
    pub max_bgerror_resume_count: u32,
    /// Time between automatic resumes (RocksDB's `bgerror_resume_retry_interval`).
    pub bgerror_resume_retry_interval: std::time::Duration,
    /// Manifest size after which a new manifest is started.
    pub max_manifest_file_size: u64,
    /// Directory of the write-ahead logs (RocksDB's `wal_dir`), e.g. on a faster device
    /// than the table files; `None` keeps them in the database directory. Created if
    /// missing. Logs left in the database directory by an earlier open without a
    /// `wal_dir` are still replayed; a database last opened with another `wal_dir`
    /// refuses to open (see docs/formats/wal.md, "Where logs live"). Two databases must
    /// not share one.
    pub wal_dir: Option<PathBuf>,
    /// Extra directories ("volumes") for table files; volume 0 is the database directory,
    /// volume `i` is `volumes[i - 1]`.
    pub volumes: Vec<PathBuf>,
    /// The volume that receives the table files of each level; missing levels use volume 0.
    /// Only with the `by_level` placement policy.
    pub level_volumes: Vec<u32>,
    /// How new table files are spread over the volumes (docs/techniques/tango.md).
    /// `ByLevel` (the default) follows `level_volumes`; every other policy places each
    /// flush and compaction output on one of `volumes` (on the database directory when
    /// there are none), leaving the database directory to the logs and MANIFEST.
    pub placement_policy: crate::volume::placement::PlacementPolicy,
    /// How often heat statistics close an interval (`volume::heat`); kept only when
    /// `volumes` is not empty. `Duration::ZERO` keeps none.
    pub heat_interval: std::time::Duration,
    /// How much of a file's heat an interval keeps (TANGO's alpha), in `[0, 1)`.
    pub heat_alpha: f64,
    /// Whether hot table files are copied (or moved) off volumes that run at their IOPS
    /// limit, once per heat interval (`volume::migration`; needs heat statistics and
    /// `volume_limits` with IOPS on the table volumes).
    pub migration: crate::volume::migration::MigrationPolicy,
    /// The device limits of each volume, by id (index 0: the database directory, with the
    /// logs and MANIFEST in it unless `wal_dir` moves the logs). Every volume named here
    /// gets its own token buckets (`storage::ThrottledStorage`; zero rates count without
    /// limiting) and its figures in `stats().volumes`; volumes past the end are neither
    /// throttled nor counted.
    pub volume_limits: Vec<crate::storage::ThrottleLimits>,
    /// The compaction filter every compaction runs, by registered name and parameters.
    pub compaction_filter: Option<crate::compaction::FilterSpec>,
    /// Extra compaction-filter factories to register (built-ins are always there).
    pub compaction_filter_factories: Vec<Arc<dyn crate::compaction::CompactionFilterFactory>>,
    /// Receivers of flush, compaction and background-error events.
    pub listeners: Vec<Arc<dyn crate::listener::EventListener>>,
    /// A log kept outside the engine (`wal::ExternalLog`), for writes made durable
    /// elsewhere before they reach the engine (`Db::write_external`): replayed at open
    /// from the last sequence number the manifest says its tables hold, and told after
    /// each flush how far it may drop records. `None`: `Db::write_external` is refused.
    pub external_log: Option<Arc<dyn crate::wal::ExternalLog>>,
    /// The kind of level 0 (classic level-0 table files by default).
    pub level0: Arc<dyn Level0>,
    /// What runs compaction tasks ([`LinearExecutor`](crate::compaction::LinearExecutor),
    /// on the background thread, by default). A task an executor fails, or answers with
    /// a result that does not match the task, runs again on this host.
    pub compaction_executor: Arc<dyn crate::compaction::CompactionExecutor>,
    /// Compaction workers (`terrace compactd`) that share compactions with
    /// `compaction_executor`, which then runs the host's share and whatever a worker
    /// fails. `None`: compactions run on `compaction_executor` alone.
    pub compaction_workers: Option<crate::offload::CompactionWorkers>,
    /// Threads the application lends for a large write group's memtable insert
    /// ([`crate::helpers`]): a sorted batch of `memtable::SHARED_INSERT_MIN` entries or
    /// more is inserted in parts, some by them. `None`: the writing thread inserts all.
    pub memtable_insert_helpers: Option<Arc<dyn crate::helpers::Helpers>>,
    /// Put each data block a flush or a compaction writes into the block cache, while
    /// the cache has room for it without evicting anything (RocksDB's
    /// `prepopulate_block_cache`, which covers flushes only): reads of a new table then
    /// start from memory. Off by default.
    pub warm_block_cache_on_write: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            storage: Arc::new(FsStorage::new()),
            write_buffer_size: 64 << 20,
            max_write_buffer_number: 2,
            block_size: 4096,
            block_restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: Compression::None,
            block_cache_bytes: 32 << 20,
            max_open_files: 1000,
            num_levels: 7,
            level0_file_num_compaction_trigger: 4,
            level0_slowdown_writes_trigger: 20,
            level0_stop_writes_trigger: 36,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10.0,
            level_compaction_dynamic_level_bytes: false,
            compaction_pri: CompactionPri::default(),
            target_file_size_base: 64 << 20,
            max_background_flushes: 1,
            allow_concurrent_memtable_write: true,
            latency_stats: true,
            read_triggered_compaction: true,
            max_background_compactions: 1,
            max_subcompactions: 1,
            delayed_write_rate: 16 << 20,
            wal_recovery_mode: WalRecoveryMode::default(),
            max_bgerror_resume_count: u32::MAX,
            bgerror_resume_retry_interval: std::time::Duration::from_secs(1),
            max_manifest_file_size: 64 << 20,
            wal_dir: None,
            volumes: Vec::new(),
            level_volumes: Vec::new(),
            placement_policy: crate::volume::placement::PlacementPolicy::ByLevel,
            heat_interval: std::time::Duration::from_secs(1),
            heat_alpha: 0.5,
            migration: crate::volume::migration::MigrationPolicy::Off,
            volume_limits: Vec::new(),
            compaction_filter: None,
            compaction_filter_factories: Vec::new(),
            listeners: Vec::new(),
            external_log: None,
            level0: Arc::new(crate::level0::ClassicLevel0),
            compaction_executor: Arc::new(crate::compaction::LinearExecutor),
            compaction_workers: None,
            memtable_insert_helpers: None,
            warm_block_cache_on_write: false,
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("write_buffer_size", &self.write_buffer_size)
            .field("max_write_buffer_number", &self.max_write_buffer_number)
            .field("block_size", &self.block_size)
            .field("bloom_bits_per_key", &self.bloom_bits_per_key)
            .field("compression", &self.compression)
            .field("num_levels", &self.num_levels)
            .field("wal_dir", &self.wal_dir)
            .field("external_log", &self.external_log)
            .field("target_file_size_base", &self.target_file_size_base)
            .field("max_bytes_for_level_base", &self.max_bytes_for_level_base)
            .field(
                "level_compaction_dynamic_level_bytes",
                &self.level_compaction_dynamic_level_bytes,
            )
            .field("compaction_pri", &self.compaction_pri)
            .field("level0", &self.level0.kind())
            .field("compaction_executor", &self.compaction_executor.name())
            .field("compaction_workers", &self.compaction_workers)
            .field("warm_block_cache_on_write", &self.warm_block_cache_on_write)
            .field(
                "memtable_insert_helpers",
                &self.memtable_insert_helpers.is_some(),
            )
            .finish_non_exhaustive()
    }
}

impl Options {
    /// What the level 0 needs of these options.
    pub fn level0_settings(&self) -> Level0Settings {
        Level0Settings {
            write_buffer_size: self.write_buffer_size,
            level0_file_num_compaction_trigger: self.level0_file_num_compaction_trigger,
            level0_slowdown_writes_trigger: self.level0_slowdown_writes_trigger,
            level0_stop_writes_trigger: self.level0_stop_writes_trigger,
            max_bytes_for_level_base: self.max_bytes_for_level_base,
            volume: self.placement().volume_for_level(0),
            sst: self.sst_options(),
        }
    }

    /// True if heat statistics are kept (`heat_interval` is not zero and there are
    /// volumes to compare).
    pub fn keeps_heat(&self) -> bool {
        !self.heat_interval.is_zero() && !self.volumes.is_empty()
    }

    /// Where new tables go (`level_volumes`).
    pub fn placement(&self) -> crate::volume::Placement {
        crate::volume::Placement::by_level(self.level_volumes.clone())
    }

    /// The table options of this database's table files.
    pub fn sst_options(&self) -> SstOptions {
        SstOptions {
            block_size: self.block_size,
            restart_interval: self.block_restart_interval,
            bloom_bits_per_key: self.bloom_bits_per_key,
            compression: self.compression,
        }
    }

    /// Checks that the options make sense together.
    ///
    /// # Errors
    /// `Error::InvalidArgument` naming the first bad option.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::InvalidArgument(m.to_string()));
        if self.write_buffer_size < 4096 {
            return bad("write_buffer_size must be at least 4096");
        }
        // A memtable addresses its entries with 32-bit indexes; at more than 100 bytes of
        // overhead per entry this bound keeps every memtable far below 2^32 entries.
        if self.write_buffer_size as u64 > 256 << 30 {
            return bad("write_buffer_size must be at most 256 GiB");
        }
        if self.max_write_buffer_number < 2 {
            return bad("max_write_buffer_number must be at least 2");
        }
        if self.bloom_bits_per_key > 64 {
            return bad("bloom_bits_per_key must be at most 64");
        }
        if self.block_size < 64 || self.block_restart_interval == 0 {
            return bad("block_size must be at least 64 and block_restart_interval at least 1");
        }
        if !(2..=64).contains(&self.num_levels) {
            return bad("num_levels must be between 2 and 64");
        }
        if self.level0_file_num_compaction_trigger == 0
            || self.level0_slowdown_writes_trigger < self.level0_file_num_compaction_trigger
            || self.level0_stop_writes_trigger < self.level0_slowdown_writes_trigger
        {
            return bad("level-0 triggers must satisfy 0 < compaction <= slowdown <= stop");
        }
        if self.max_bytes_for_level_multiplier < 1.0 || self.target_file_size_base == 0 {
            return bad(
                "max_bytes_for_level_multiplier must be >= 1 and target_file_size_base > 0",
            );
        }
        if self.max_background_flushes == 0 || self.max_background_compactions == 0 {
            return bad("at least one flush and one compaction thread are needed");
        }
        if self.max_subcompactions == 0 {
            return bad("max_subcompactions must be at least 1");
        }
        if let Compression::Zstd(level) = self.compression {
            if !(-7..=22).contains(&level) {
                return bad("zstd level must be between -7 and 22");
            }
        }
        if self
            .wal_dir
            .as_ref()
            .is_some_and(|d| d.as_os_str().is_empty())
        {
            return bad("wal_dir must not be empty (None keeps logs in the database directory)");
        }
        if self.volume_limits.len() > self.volumes.len() + 1 {
            return bad("volume_limits names a volume that is not configured");
        }
        if self.placement().max_volume() as usize > self.volumes.len() {
            return bad("level_volumes names a volume that is not configured");
        }
        if !(0.0..1.0).contains(&self.heat_alpha) {
            return bad("heat_alpha must be at least 0 and below 1");
        }
        if self.migration != crate::volume::migration::MigrationPolicy::Off && !self.keeps_heat() {
            return bad("migration needs heat statistics: volumes and a non-zero heat_interval");
        }
        if self.placement_policy.spreads() && !self.level_volumes.is_empty() {
            return bad("level_volumes applies only to the by_level placement policy");
        }
        if let Some(w) = &self.compaction_workers {
            w.validate()?;
        }
        Ok(())
    }
}

/// Options of one write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Sync the write-ahead log before acknowledging.
    pub sync: bool,
    /// Skip the write-ahead log: the write is lost on a crash before the next flush.
    pub disable_wal: bool,
}

/// Options of one read.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Read at this sequence number (from a snapshot) instead of the latest.
    pub snapshot_seq: Option<crate::key::SeqNo>,
    /// Iterators: first user key to return (inclusive).
    pub lower_bound: Option<Vec<u8>>,
    /// Iterators: first user key not to return (exclusive).
    pub upper_bound: Option<Vec<u8>>,
    /// Whether blocks read go into the block cache.
    pub fill_cache: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            snapshot_seq: None,
            lower_bound: None,
            upper_bound: None,
            fill_cache: true,
        }
    }
}
