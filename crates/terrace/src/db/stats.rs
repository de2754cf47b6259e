//! Engine statistics: counters kept by the database and the public report built from them.
//! The per-level compaction figures and their table live in `levels`.

mod levels;

pub(crate) use levels::CompactionBytes;

use std::sync::atomic::{AtomicU64, Ordering};

use hdrhistogram::Histogram;
use parking_lot::Mutex;

use crate::compaction;
use crate::storage::IoClass;

/// Latency percentiles of one operation, in microseconds.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct LatencySummary {
    /// Operations recorded.
    pub count: u64,
    /// Median.
    pub p50_micros: f64,
    /// 99th percentile.
    pub p99_micros: f64,
    /// 99.9th percentile.
    pub p999_micros: f64,
    /// Largest.
    pub max_micros: f64,
}

/// Files and bytes of one level, and the work of the compactions whose outputs went to it
/// (RocksDB's "Compaction Stats" row of that level). The compaction figures of all levels
/// add up to the totals of [`DbStats`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct LevelStats {
    /// Level number.
    pub level: usize,
    /// Table files.
    pub files: usize,
    /// Matrix rows (level 0 of a matrix container only).
    pub rows: usize,
    /// Bytes of those files and rows.
    pub bytes: u64,
    /// The level's byte target (0 for level 0).
    pub target_bytes: u64,
    /// Bytes of table files of the input level (the level above, or level 0 into the
    /// base level) read by compactions into this level: RocksDB's Rn.
    pub compaction_bytes_read_input_level: u64,
    /// Bytes of matrix rows of level 0, on the persistent-memory tier, read by column
    /// compactions into this level: the rest of Rn. Counted as the key and value bytes
    /// of the row entries in each column's key range (0 without a matrix level 0).
    pub compaction_bytes_read_level0_rows: u64,
    /// Bytes of this level's own table files read by compactions into it: RocksDB's Rnp1.
    pub compaction_bytes_read_output_level: u64,
    /// Bytes of table files compactions wrote into this level.
    pub compaction_bytes_written: u64,
    /// Bytes of table files trivial moves brought into this level without rewriting.
    pub compaction_bytes_moved: u64,
    /// Compactions into this level, trivial moves included.
    pub compactions: u64,
    /// Trivial moves into this level.
    pub trivial_moves: u64,
}

/// A report of the engine's state and work since open. See `Db::stats`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct DbStats {
    /// Per-level files and bytes.
    pub levels: Vec<LevelStats>,
    /// Bytes of keys and values written by users.
    pub user_bytes_written: u64,
    /// Bytes written to the write-ahead log.
    pub wal_bytes_written: u64,
    /// Bytes written by flushes (table files, or matrix rows on persistent memory, the
    /// rows of matrix table merges included).
    pub flush_bytes_written: u64,
    /// The part of `flush_bytes_written` that went to matrix rows on the
    /// persistent-memory tier rather than to table files.
    pub row_bytes_written: u64,
    /// Bytes of table files written by compactions (the sum of the levels'
    /// `compaction_bytes_written`).
    pub compaction_bytes_written: u64,
    /// Bytes of table files and matrix rows read by compactions (the sum of the levels'
    /// `compaction_bytes_read()`).
    pub compaction_bytes_read: u64,
    /// (flush + compaction bytes written) / user bytes written; 0 before any write.
    pub write_amplification: f64,
    /// Flushes completed.
    pub flushes: u64,
    /// Compactions completed (trivial moves included; the sum of the levels').
    pub compactions: u64,
    /// Compactions that moved a file without rewriting it (the sum of the levels').
    pub trivial_moves: u64,
    /// Matrix column compactions (level-0 columns into the base level).
    pub column_compactions: u64,
    /// Compaction pieces a unit failed or answered with a result that did not match the
    /// task, run again on the host (the sum of `compaction_units`' fallbacks).
    pub compaction_fallbacks: u64,
    /// Per compaction unit (`host`, each remote worker): runs by mode, bytes, busy and
    /// CPU time, failures and fallbacks, of the compactions installed since open.
    pub compaction_units: Vec<compaction::UnitTotals>,
    /// Matrix table merges: runs of old rows merged into fewer, larger rows inside the
    /// container (their bytes count in `row_bytes_written`).
    pub row_merges: u64,
    /// Data chunks of matrix rows given back to the persistent-memory region because
    /// column compactions consumed every entry in them.
    pub row_chunks_released: u64,
    /// Microseconds writers spent delayed or stopped.
    pub stall_micros: u64,
    /// Writes that were delayed or stopped.
    pub stall_count: u64,
    /// File I/Os that waited for a throttled device (`storage::ThrottledStorage`), counted
    /// by the storage: since it was created, for every database sharing it.
    pub throttle_waits: u64,
    /// Microseconds those I/Os waited.
    pub throttle_wait_micros: u64,
    /// Bytes written to throttled devices (every class: tables, logs, manifests), counted
    /// by the storage like `throttle_waits`: what the slower tier was given to store.
    pub throttled_bytes_written: u64,
    /// Bytes read from throttled devices.
    pub throttled_bytes_read: u64,
    /// Each volume `Options::volume_limits` names: its limits, bytes, operations and
    /// waits since open (empty without volume limits).
    pub volumes: Vec<crate::volume::VolumeStats>,
    /// Damaged write-ahead-log records dropped on open.
    pub wal_records_dropped: u64,
    /// The error that made the database read-only, if any (`Db::resume` clears it).
    pub background_error: Option<String>,
    /// Background errors since open (each made the database read-only).
    pub background_errors: u64,
    /// Successful resumes from a background error, manual or automatic.
    pub resumes: u64,
    /// Table files load migration copied (or, with `iops_only`, moved) to another volume.
    pub migrations: u64,
    /// Their bytes.
    pub migrated_bytes: u64,
    /// Microseconds the copies took (read, write and sync; not the manifest update).
    pub migration_micros: u64,
    /// Block cache hits and misses.
    pub block_cache_hits: u64,
    /// Block cache misses.
    pub block_cache_misses: u64,
    /// Memtable bytes (active plus immutable).
    pub memtable_bytes: u64,
    /// Immutable memtables waiting for flush.
    pub immutable_memtables: usize,
    /// Latest sequence number.
    pub last_sequence: u64,
    /// Get latency.
    pub get_latency: LatencySummary,
    /// Write (put, delete, batch) latency.
    pub write_latency: LatencySummary,
}

/// Counters updated by the engine's threads.
#[derive(Debug)]
pub(crate) struct Counters {
    pub(crate) user_bytes: AtomicU64,
    pub(crate) wal_bytes: AtomicU64,
    pub(crate) flush_bytes: AtomicU64,
    pub(crate) row_bytes: AtomicU64,
    pub(crate) flushes: AtomicU64,
    pub(crate) column_compactions: AtomicU64,
    /// Every installed compaction run, summed per unit (`compaction::metrics`).
    pub(crate) compaction_units: Mutex<compaction::metrics::Totals>,
    pub(crate) row_merges: AtomicU64,
    pub(crate) row_chunks_released: AtomicU64,
    pub(crate) stall_micros: AtomicU64,
    pub(crate) stall_count: AtomicU64,
    pub(crate) wal_records_dropped: AtomicU64,
    pub(crate) bg_errors: AtomicU64,
    pub(crate) resumes: AtomicU64,
    /// Load migration: copies made (or moves), their bytes, their time.
    pub(crate) migrations: AtomicU64,
    pub(crate) migrated_bytes: AtomicU64,
    pub(crate) migration_micros: AtomicU64,
    /// Compaction figures by output level (`Counters::record_compaction`,
    /// `Counters::record_trivial_move`); the report's compaction totals are their sums.
    levels: Vec<levels::LevelCounters>,
    get_hist: Mutex<Option<Histogram<u64>>>,
    write_hist: Mutex<Option<Histogram<u64>>>,
}

/// 1 us .. 1 hour at 3 significant digits. `None` only if the library rejected constant
/// bounds, in which case latencies are simply not recorded.
fn new_hist() -> Option<Histogram<u64>> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).ok()
}

impl Counters {
    /// Zeroed counters for a database of `num_levels` levels.
    pub(crate) fn new(num_levels: usize) -> Self {
        Counters {
            user_bytes: AtomicU64::new(0),
            wal_bytes: AtomicU64::new(0),
            flush_bytes: AtomicU64::new(0),
            row_bytes: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
            column_compactions: AtomicU64::new(0),
            compaction_units: Mutex::new(compaction::metrics::Totals::default()),
            row_merges: AtomicU64::new(0),
            row_chunks_released: AtomicU64::new(0),
            stall_micros: AtomicU64::new(0),
            stall_count: AtomicU64::new(0),
            wal_records_dropped: AtomicU64::new(0),
            bg_errors: AtomicU64::new(0),
            resumes: AtomicU64::new(0),
            migrations: AtomicU64::new(0),
            migrated_bytes: AtomicU64::new(0),
            migration_micros: AtomicU64::new(0),
            levels: levels::level_counters(num_levels),
            get_hist: Mutex::new(new_hist()),
            write_hist: Mutex::new(new_hist()),
        }
    }
}

pub(crate) fn add(c: &AtomicU64, v: u64) {
    c.fetch_add(v, Ordering::Relaxed);
}

pub(crate) fn load(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

fn summarize(h: &Option<Histogram<u64>>) -> LatencySummary {
    let Some(h) = h.as_ref().filter(|h| !h.is_empty()) else {
        return LatencySummary::default();
    };
    LatencySummary {
        count: h.len(),
        p50_micros: h.value_at_quantile(0.5) as f64,
        p99_micros: h.value_at_quantile(0.99) as f64,
        p999_micros: h.value_at_quantile(0.999) as f64,
        max_micros: h.max() as f64,
    }
}

impl Counters {
    pub(crate) fn record_get(&self, micros: u64) {
        if let Some(h) = self.get_hist.lock().as_mut() {
            h.saturating_record(micros.max(1));
        }
    }
    /// Records `n` reads of `micros` each.
    pub(crate) fn record_gets(&self, micros: u64, n: u64) {
        if let Some(h) = self.get_hist.lock().as_mut() {
            h.saturating_record_n(micros.max(1), n);
        }
    }
    pub(crate) fn record_write(&self, micros: u64) {
        if let Some(h) = self.write_hist.lock().as_mut() {
            h.saturating_record(micros.max(1));
        }
    }
    pub(crate) fn get_latency(&self) -> LatencySummary {
        summarize(&self.get_hist.lock())
    }
    pub(crate) fn write_latency(&self) -> LatencySummary {
        summarize(&self.write_hist.lock())
    }
}

impl super::DbInner {
    pub(crate) fn stats(&self) -> DbStats {
        let sv = self.super_version();
        let targets = crate::compaction::level_targets(
            sv.version.levels(),
            &self.opts,
            self.level0
                .level1_target_bytes(&sv.version, &self.level0_settings),
        );
        let levels: Vec<LevelStats> = (0..sv.version.num_levels())
            .map(|l| {
                let mut stats = LevelStats {
                    level: l,
                    files: sv.version.files(l).len(),
                    rows: if l == 0 { sv.version.level0().len() } else { 0 },
                    bytes: sv.version.level_bytes(l)
                        + if l == 0 {
                            sv.version.level0().bytes()
                        } else {
                            0
                        },
                    target_bytes: targets.get(l).copied().unwrap_or(0),
                    ..LevelStats::default()
                };
                self.counters.fill_level(&mut stats);
                stats
            })
            .collect();
        let user = load(&self.counters.user_bytes);
        let flush = load(&self.counters.flush_bytes);
        // The totals come from the same loads as the levels, so they always add up.
        let total = levels::sum(&levels);
        let compaction = total.compaction_bytes_written;
        let memtable_bytes = std::iter::once(&sv.mem)
            .chain(sv.imms.iter())
            .map(|m| m.approximate_memory_usage() as u64)
            .sum();
        let units = self.counters.compaction_units.lock().snapshot();
        let io = self.storage.io_stats();
        let classes: Vec<_> = IoClass::ALL.iter().map(|c| io.get(*c)).collect();
        let sum = |f: fn(&crate::storage::IoClassStats) -> u64| classes.iter().map(f).sum();
        DbStats {
            levels,
            user_bytes_written: user,
            wal_bytes_written: load(&self.counters.wal_bytes),
            flush_bytes_written: flush,
            row_bytes_written: load(&self.counters.row_bytes),
            compaction_bytes_written: compaction,
            compaction_bytes_read: total.compaction_bytes_read(),
            write_amplification: if user == 0 {
                0.0
            } else {
                (flush + compaction) as f64 / user as f64
            },
            flushes: load(&self.counters.flushes),
            compactions: total.compactions,
            trivial_moves: total.trivial_moves,
            column_compactions: load(&self.counters.column_compactions),
            compaction_fallbacks: units.iter().map(|u| u.fallbacks).sum(),
            compaction_units: units,
            row_merges: load(&self.counters.row_merges),
            row_chunks_released: load(&self.counters.row_chunks_released),
            stall_micros: load(&self.counters.stall_micros),
            stall_count: load(&self.counters.stall_count),
            throttle_waits: sum(|c| c.throttle_waits),
            throttle_wait_micros: sum(|c| c.throttle_wait_micros),
            throttled_bytes_written: sum(|c| c.throttled_write_bytes),
            throttled_bytes_read: sum(|c| c.throttled_read_bytes),
            volumes: crate::volume::volume_stats(
                self.tables.volumes(),
                &sv.version,
                self.volume_throttle
                    .as_ref()
                    .map(|(ids, t)| (ids.as_slice(), t.stats())),
                self.tables.heat().map(|h| h.as_ref()),
            ),
            wal_records_dropped: load(&self.counters.wal_records_dropped),
            background_error: self.state.lock().bg_error.as_ref().map(|e| e.to_string()),
            background_errors: load(&self.counters.bg_errors),
            resumes: load(&self.counters.resumes),
            migrations: load(&self.counters.migrations),
            migrated_bytes: load(&self.counters.migrated_bytes),
            migration_micros: load(&self.counters.migration_micros),
            block_cache_hits: self.block_cache.hits(),
            block_cache_misses: self.block_cache.misses(),
            memtable_bytes,
            immutable_memtables: sv.imms.len(),
            last_sequence: self.last_seq.load(Ordering::Acquire),
            get_latency: self.counters.get_latency(),
            write_latency: self.counters.write_latency(),
        }
    }

    pub(crate) fn property(&self, name: &str) -> Option<String> {
        let name = name
            .strip_prefix("terrace.")
            .or_else(|| name.strip_prefix("rocksdb."))?;
        let s = self.stats();
        if let Some(level) = name.strip_prefix("num-files-at-level") {
            let l: usize = level.parse().ok()?;
            return s.levels.get(l).map(|x| x.files.to_string());
        }
        match name {
            "stats" => serde_json::to_string_pretty(&s).ok(),
            "levelstats" => {
                let mut out = String::from("Level Files Size(MB) Target(MB)\n");
                for l in &s.levels {
                    out.push_str(&format!(
                        "{:>5} {:>5} {:>8.1} {:>10.1}\n",
                        l.level,
                        l.files,
                        l.bytes as f64 / 1048576.0,
                        l.target_bytes as f64 / 1048576.0
                    ));
                }
                Some(out)
            }
            "compaction-stats" | "cfstats" => Some(levels::compaction_table(&s)),
            "write-amplification" => Some(format!("{:.3}", s.write_amplification)),
            "estimate-live-data-size" => {
                Some(s.levels.iter().map(|l| l.bytes).sum::<u64>().to_string())
            }
            "num-immutable-mem-table" => Some(s.immutable_memtables.to_string()),
            "cur-size-all-mem-tables" => Some(s.memtable_bytes.to_string()),
            "background-errors" => {
                let st = self.state.lock();
                Some(
                    st.bg_error
                        .as_ref()
                        .map_or_else(|| "0".to_string(), |e| e.to_string()),
                )
            }
            _ => None,
        }
    }
}
