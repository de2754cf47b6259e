//! The engine options a run's flags describe, with the storage throttle of
//! `--storage_rate_limit` and `--storage_iops_limit`.
//!
//! The throttle stands for a slower device under the table files of levels 1 and below
//! (docs/techniques/tiers.md): it covers the directory of each of those levels' volumes.
//! The harness opens every database with one directory (no `Options::volumes`), so that
//! directory is `--db` itself and the whole database is on the throttled device, level 0,
//! log and manifest included: RocksDB on a slow SSD, MatrixKV's baseline. `--wal_dir`
//! moves the log off it (MatrixKV keeps it on the persistent-memory tier): a log
//! directory outside `--db` is not throttled (one inside it is, as a file of `--db`).
//! `--level0_dir` moves the level-0 table files to a volume of their own, not throttled
//! either: with `--wal_dir` beside it, the fast tier of a classic tree.

use std::path::PathBuf;
use std::sync::Arc;

use terrace::offload::CompactionWorkers;
use terrace::storage::{FsStorage, Storage, ThrottleLimits, ThrottledStorage};
use terrace::volume::migration::MigrationPolicy;
use terrace::volume::placement::PlacementPolicy;
use terrace::Options;

use super::Flags;

impl Flags {
    /// The engine options these flags describe, on throttled storage when
    /// `--storage_rate_limit` or `--storage_iops_limit` is set.
    pub fn engine_options(&self) -> Options {
        let mut opts = self.base_options();
        // A bad matrix setting is reported by `check`; here the default level 0 stays.
        if let Ok(l0) = self.matrix.level0() {
            opts.level0 = l0;
        }
        match self.storage_limits() {
            Some(limits) => {
                let rules = table_dirs(self, &opts)
                    .into_iter()
                    .map(|d| (d, limits))
                    .collect();
                let storage: Arc<dyn Storage> =
                    Arc::new(ThrottledStorage::new(Arc::new(FsStorage::new()), rules));
                Options { storage, ..opts }
            }
            None => opts,
        }
    }

    /// The limits of the throttled device, or `None` when both limits are 0.
    pub fn storage_limits(&self) -> Option<ThrottleLimits> {
        (self.storage_rate_limit > 0 || self.storage_iops_limit > 0).then(|| {
            ThrottleLimits::bandwidth(self.storage_rate_limit)
                .with_iops(self.storage_iops_limit, self.storage_io_unit)
        })
    }

    /// The directories the throttle covers (none when it is off): those holding the
    /// table files of levels 1 and below. See the module docs.
    pub fn throttled_dirs(&self) -> Vec<PathBuf> {
        match self.storage_limits() {
            Some(_) => table_dirs(self, &self.base_options()),
            None => Vec::new(),
        }
    }

    /// The workers that share compactions with this host, if any were named; the
    /// secret comes from `TERRACE_COMPACTD_SECRET`.
    pub fn compaction_workers(&self) -> Option<CompactionWorkers> {
        (!self.compaction_workers.is_empty()).then(|| CompactionWorkers {
            workers: self.compaction_workers.clone(),
            secret: std::env::var("TERRACE_COMPACTD_SECRET").unwrap_or_default(),
            share: self.offload_ratio,
            dispatch: self.compaction_dispatch,
            check: self.compaction_check,
            ..CompactionWorkers::default()
        })
    }

    fn base_options(&self) -> Options {
        let flushes = (self.max_background_jobs / 4).max(1);
        Options {
            write_buffer_size: self.write_buffer_size,
            max_write_buffer_number: self.max_write_buffer_number,
            target_file_size_base: self.target_file_size_base,
            max_bytes_for_level_base: self.max_bytes_for_level_base,
            max_bytes_for_level_multiplier: self.max_bytes_for_level_multiplier,
            level_compaction_dynamic_level_bytes: self.level_compaction_dynamic_level_bytes,
            compaction_pri: self.compaction_pri,
            compaction_executor: self.compaction_mode.executor(),
            compaction_workers: self.compaction_workers(),
            num_levels: self.num_levels,
            level0_file_num_compaction_trigger: self.level0_file_num_compaction_trigger,
            level0_slowdown_writes_trigger: self.level0_slowdown_writes_trigger,
            level0_stop_writes_trigger: self.level0_stop_writes_trigger,
            bloom_bits_per_key: usize::try_from(self.bloom_bits).unwrap_or(0),
            block_cache_bytes: usize::try_from(self.cache_size).unwrap_or(0),
            block_size: self.block_size,
            compression: self.compression_type,
            max_background_flushes: flushes,
            allow_concurrent_memtable_write: self.allow_concurrent_memtable_write,
            read_triggered_compaction: self.read_triggered_compaction,
            max_background_compactions: self.max_background_jobs.saturating_sub(flushes).max(1),
            max_subcompactions: self.subcompactions,
            wal_dir: self.wal_dir.clone(),
            ..self.volume_options()
        }
    }

    /// The table volumes of `--volumes`: `vol1` .. `volN` in `--db`, each limited by
    /// `--volume_iops` and `--volume_rate`, placed by `--placement` (default `tango`),
    /// balanced by `--migration` (default: TANGO's with `tango` or `demand` placement,
    /// else none); the database directory (log and MANIFEST) counted but not limited. Without
    /// `--volumes`, `--level0_dir` as volume 1 holding level 0.
    fn volume_options(&self) -> Options {
        if self.volumes == 0 {
            return Options {
                volumes: self.level0_dir.iter().cloned().collect(),
                level_volumes: if self.level0_dir.is_some() {
                    vec![1]
                } else {
                    Vec::new()
                },
                ..Options::default()
            };
        }
        let limits = ThrottleLimits::bandwidth(self.volume_rate)
            .with_iops(self.volume_iops, self.storage_io_unit);
        let volume_limits = std::iter::once(ThrottleLimits::default())
            .chain(std::iter::repeat_n(limits, self.volumes))
            .collect();
        let placement_policy = self.placement.unwrap_or(PlacementPolicy::Tango);
        let migration = self
            .migration
            .unwrap_or(if placement_policy.balances_load() {
                MigrationPolicy::Tango
            } else {
                MigrationPolicy::Off
            });
        Options {
            volumes: self.volume_dirs(),
            volume_limits,
            placement_policy,
            migration,
            heat_interval: std::time::Duration::from_millis(self.heat_interval_ms),
            ..Options::default()
        }
    }

    /// The directories of `--volumes`.
    pub fn volume_dirs(&self) -> Vec<PathBuf> {
        (1..=self.volumes)
            .map(|i| self.db.join(format!("vol{i}")))
            .collect()
    }
}

/// The volume directories of levels 1 .. `num_levels`, without repeats, in level order
/// (volume 0 is the database directory, volume `i` is `volumes[i - 1]`).
fn table_dirs(flags: &Flags, opts: &Options) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for level in 1..opts.num_levels {
        let volume = opts.level_volumes.get(level).copied().unwrap_or(0) as usize;
        let dir = match volume.checked_sub(1) {
            None => flags.db.clone(),
            Some(i) => match opts.volumes.get(i) {
                Some(d) => d.clone(),
                None => continue,
            },
        };
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}
