//! Results of benchmarks and their text and JSON forms: db_bench's result line and
//! histogram block, then latency percentiles, write amplification, compaction by output
//! level (`report/levels.rs`), bytes per level, tree depth, stalls, slow seconds and time
//! waited for a throttled device.
//!
//! Owns: `BenchResult`, `Latency`, building them from worker stats and engine stats, and
//! their printed shape (`report/print.rs`) and JSON. Must not touch: the database (it is
//! given `DbStats`).
//! Concurrency: plain data built after the workers have joined.

use std::collections::BTreeMap;
use std::path::Path;

use hdrhistogram::Histogram;
use terrace::{DbStats, LevelStats};

use crate::error::{BenchError, Result};
use crate::interval::{IntervalRow, SlowSeconds};
use crate::recorder::{merge_hist, new_hist, OpKind, ThreadStats};

mod levels;
mod print;
mod units;
mod volumes;

pub use levels::{compaction_by_level, LevelCompaction};
pub use print::print_statistics;
pub use units::compaction_units;
pub use volumes::{volume_deltas, VolumeDelta, VolumeSpread};

/// Latency summary of a set of operations, in microseconds.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Latency {
    /// Operations timed.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub stddev: f64,
    /// Smallest.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// 99.99th percentile.
    pub p9999: f64,
    /// Largest.
    pub max: f64,
}

impl Latency {
    /// Summarizes a histogram of nanoseconds.
    pub fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        let us = |v: u64| v as f64 / 1000.0;
        Latency {
            count: h.len(),
            mean: h.mean() / 1000.0,
            stddev: h.stdev() / 1000.0,
            min: us(h.min()),
            p50: us(h.value_at_quantile(0.5)),
            p75: us(h.value_at_quantile(0.75)),
            p99: us(h.value_at_quantile(0.99)),
            p999: us(h.value_at_quantile(0.999)),
            p9999: us(h.value_at_quantile(0.9999)),
            max: us(h.max()),
        }
    }
}

/// Bytes and files of one level after a benchmark.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LevelBytes {
    /// Level number.
    pub level: usize,
    /// Table files.
    pub files: usize,
    /// Matrix rows (level 0 with `--l0=matrix`).
    pub rows: usize,
    /// Bytes of those files and rows.
    pub bytes: u64,
}

/// Where a result's write amplification, level bytes and stalls come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Counters {
    /// The embedded engine's statistics: everything is known.
    #[default]
    Engine,
    /// The `engine` section of a Terrace server's `INFO`: no bytes per level.
    ServerInfo,
    /// Neither (a server without an engine section): those fields are not available.
    None,
}

/// Everything measured for one benchmark.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct BenchResult {
    /// Benchmark name.
    pub name: String,
    /// Operations completed by the measured workers.
    pub ops: u64,
    /// Wall-clock seconds from the first worker's start to the last one's finish.
    pub seconds: f64,
    /// Sum of the workers' seconds per operation, in microseconds (db_bench's figure).
    pub micros_per_op: f64,
    /// Operations per wall-clock second.
    pub ops_per_sec: f64,
    /// Key and value mebibytes per wall-clock second.
    pub mb_per_sec: f64,
    /// Key and value bytes moved.
    pub bytes: u64,
    /// Reads or seeks that found their key.
    pub found: u64,
    /// db_bench's parenthesized message, e.g. `(632 of 1000 found)`.
    pub message: String,
    /// Latency of all operations.
    pub latency: Latency,
    /// Latency and count by kind of operation.
    pub by_op: BTreeMap<String, Latency>,
    /// Bytes written by users during the benchmark (engine counter).
    pub user_bytes_written: u64,
    /// Table bytes written by flushes during the benchmark.
    pub flush_bytes_written: u64,
    /// Table bytes written by compactions during the benchmark.
    pub compaction_bytes_written: u64,
    /// (flush + compaction bytes written) / user bytes written during the benchmark.
    pub write_amplification: f64,
    /// Bytes flushes wrote to matrix rows on the persistent-memory tier (part of
    /// `flush_bytes_written`).
    pub row_bytes_written: u64,
    /// Matrix table merges completed during the benchmark.
    pub row_merges: u64,
    /// Matrix column compactions completed during the benchmark.
    pub column_compactions: u64,
    /// Compaction tasks (or device shares) the configured executor failed or answered
    /// wrongly, run again on the host during the benchmark.
    pub compaction_fallbacks: u64,
    /// Write amplification of the table-file tier alone: (flush bytes to table files +
    /// compaction bytes) / user bytes. Equals `write_amplification` without a matrix.
    pub table_write_amplification: f64,
    /// Compaction work during the benchmark by output level, levels that received no
    /// compaction left out (empty where levels are unknown: server mode).
    pub compaction_by_level: Vec<LevelCompaction>,
    /// Compaction work during the benchmark by unit (`host`, each remote worker): runs by
    /// mode, bytes, busy and CPU time, failures and fallbacks (empty in server mode).
    pub compaction_units: Vec<terrace::compaction::UnitTotals>,
    /// Microseconds writers were delayed or stopped during the benchmark.
    pub stall_micros: u64,
    /// Writes delayed or stopped during the benchmark.
    pub stall_count: u64,
    /// Longest time between two completed writes, in microseconds (0 without writes).
    pub longest_write_gap_micros: f64,
    /// How steady throughput was over the benchmark's whole seconds (`None` if it ran
    /// for less than two seconds: the last second is partial and left out).
    pub slow_seconds: Option<SlowSeconds>,
    /// Microseconds file I/Os waited for a throttled device during the benchmark
    /// (`--storage_rate_limit`, `--storage_iops_limit`).
    pub throttle_wait_micros: u64,
    /// File I/Os that waited for a throttled device during the benchmark.
    pub throttle_waits: u64,
    /// Bytes written to throttled directories during the benchmark, whatever the file
    /// (tables, logs, manifests): what the slower tier ("SSD") was given to store.
    pub throttled_bytes_written: u64,
    /// `throttled_bytes_written` / user bytes: the write amplification of the slower tier
    /// (0 without a throttle).
    pub throttled_write_amplification: f64,
    /// Table files load migration copied or moved during the benchmark.
    pub migrations: u64,
    /// Their bytes.
    pub migrated_bytes: u64,
    /// Each throttled volume's work during the benchmark (`--volumes`).
    pub volumes: Vec<VolumeDelta>,
    /// How evenly the table volumes carried it (`None` without table volumes).
    pub volume_spread: Option<VolumeSpread>,
    /// Levels after the benchmark.
    pub levels: Vec<LevelBytes>,
    /// Tree depth after the benchmark: the number of non-empty levels below the
    /// memtables, level 0 included (`None` where levels are unknown: server mode).
    pub tree_depth: Option<usize>,
    /// Where the engine figures above come from (all zero and printed "-" when `None`).
    pub counters: Counters,
    /// The report-interval series of this benchmark.
    pub intervals: Vec<IntervalRow>,
}

/// The tree depth of `levels`: how many hold at least one file. A lookup that misses
/// the memtables searches at most this many levels below them (more files for level 0).
pub fn tree_depth(levels: &[LevelStats]) -> usize {
    levels.iter().filter(|l| l.files > 0 || l.rows > 0).count()
}

/// Engine counters before and after a benchmark.
#[derive(Debug, Clone, Copy)]
pub struct EngineDelta<'a> {
    /// Before.
    pub before: &'a DbStats,
    /// After.
    pub after: &'a DbStats,
}

impl BenchResult {
    /// Merges the workers' stats (excluded workers left out) with the engine's counters
    /// and the run's figures taken from `Shared` (write gap, slow seconds).
    ///
    /// # Errors
    /// `Histogram` if merging fails.
    pub fn build(
        name: &str,
        threads: &[ThreadStats],
        engine: EngineDelta<'_>,
        longest_write_gap_micros: f64,
        slow_seconds: Option<SlowSeconds>,
    ) -> Result<BenchResult> {
        let measured: Vec<&ThreadStats> = threads.iter().filter(|t| !t.excluded()).collect();
        let mut all = new_hist()?;
        let mut by_kind: BTreeMap<OpKind, Histogram<u64>> = BTreeMap::new();
        let (mut ops, mut bytes, mut found, mut thread_secs) = (0, 0, 0, 0.0);
        for t in &measured {
            merge_hist(&mut all, &t.all)?;
            for (k, h) in &t.hists {
                match by_kind.get_mut(k) {
                    Some(into) => merge_hist(into, h)?,
                    None => {
                        by_kind.insert(*k, h.clone());
                    }
                }
            }
            ops += t.done;
            bytes += t.bytes;
            found += t.found;
            thread_secs += t.finish.duration_since(t.start).as_secs_f64();
        }
        let start = measured.iter().map(|t| t.start).min();
        let finish = measured.iter().map(|t| t.finish).max();
        let seconds = match (start, finish) {
            (Some(s), Some(f)) => f.duration_since(s).as_secs_f64(),
            _ => 0.0,
        };
        let per_sec = |x: f64| if seconds > 0.0 { x / seconds } else { 0.0 };
        let (b, a) = (engine.before, engine.after);
        let user = a.user_bytes_written.saturating_sub(b.user_bytes_written);
        let flush = a.flush_bytes_written.saturating_sub(b.flush_bytes_written);
        let compaction = a
            .compaction_bytes_written
            .saturating_sub(b.compaction_bytes_written);
        let rows = a.row_bytes_written.saturating_sub(b.row_bytes_written);
        let throttled = a
            .throttled_bytes_written
            .saturating_sub(b.throttled_bytes_written);
        let ratio = |x: u64| {
            if user > 0 {
                x as f64 / user as f64
            } else {
                0.0
            }
        };
        Ok(BenchResult {
            name: name.to_string(),
            ops,
            seconds,
            micros_per_op: if ops > 0 {
                thread_secs * 1e6 / ops as f64
            } else {
                0.0
            },
            ops_per_sec: per_sec(ops as f64),
            mb_per_sec: per_sec(bytes as f64 / 1_048_576.0),
            bytes,
            found,
            message: String::new(),
            latency: Latency::of(&all),
            by_op: by_kind
                .iter()
                .map(|(k, h)| (k.label().to_string(), Latency::of(h)))
                .collect(),
            user_bytes_written: user,
            flush_bytes_written: flush,
            compaction_bytes_written: compaction,
            write_amplification: ratio(flush + compaction),
            row_bytes_written: rows,
            row_merges: a.row_merges.saturating_sub(b.row_merges),
            column_compactions: a.column_compactions.saturating_sub(b.column_compactions),
            compaction_fallbacks: a
                .compaction_fallbacks
                .saturating_sub(b.compaction_fallbacks),
            table_write_amplification: ratio(flush.saturating_sub(rows) + compaction),
            compaction_by_level: compaction_by_level(b, a),
            compaction_units: compaction_units(b, a),
            stall_micros: a.stall_micros.saturating_sub(b.stall_micros),
            stall_count: a.stall_count.saturating_sub(b.stall_count),
            longest_write_gap_micros,
            slow_seconds,
            throttle_wait_micros: a
                .throttle_wait_micros
                .saturating_sub(b.throttle_wait_micros),
            throttle_waits: a.throttle_waits.saturating_sub(b.throttle_waits),
            throttled_bytes_written: throttled,
            throttled_write_amplification: ratio(throttled),
            migrations: a.migrations.saturating_sub(b.migrations),
            migrated_bytes: a.migrated_bytes.saturating_sub(b.migrated_bytes),
            volumes: volume_deltas(b, a, seconds),
            volume_spread: volumes::spread(&volume_deltas(b, a, seconds)),
            tree_depth: Some(tree_depth(&a.levels)),
            levels: a
                .levels
                .iter()
                .filter(|l| l.files > 0 || l.rows > 0)
                .map(|l| LevelBytes {
                    level: l.level,
                    files: l.files,
                    rows: l.rows,
                    bytes: l.bytes,
                })
                .collect(),
            counters: Counters::Engine,
            intervals: Vec::new(),
        })
    }
}

/// Writes `results` as a JSON document `{"flags": ..., "benchmarks": [...]}`; the flags'
/// `seed` is the base the run used (`seed`: the clock's value when `--seed` was 0).
///
/// # Errors
/// `Io` if the file cannot be written.
pub fn write_json(
    path: &Path,
    flags: &crate::Flags,
    seed: u64,
    results: &[BenchResult],
) -> Result<()> {
    let doc = serde_json::json!({
        "tool": "terrace bench",
        "version": env!("CARGO_PKG_VERSION"),
        "flags": {
            "num": flags.num, "reads": flags.reads, "threads": flags.threads,
            "key_size": flags.key_size, "value_size": flags.value_size,
            "compression_type": format!("{:?}", flags.compression_type),
            "write_buffer_size": flags.write_buffer_size, "bloom_bits": flags.bloom_bits,
            "cache_size": flags.cache_size, "sync": flags.sync, "disable_wal": flags.disable_wal,
            "storage_rate_limit": flags.storage_rate_limit,
            "storage_iops_limit": flags.storage_iops_limit,
            "storage_io_unit": flags.storage_io_unit,
            "wal_dir": flags.wal_dir,
            "level0_dir": flags.level0_dir,
            "compaction_pri": format!("{:?}", flags.compaction_pri),
            "compaction_mode": format!("{:?}", flags.compaction_mode),
            "compaction_workers": flags.compaction_workers,
            "offload_ratio": flags.offload_ratio.to_string(),
            "compaction_dispatch": flags.compaction_dispatch,
            "compaction_check": flags.compaction_check,
            "seed": seed,
        },
        "benchmarks": results,
    });
    let io = |source| BenchError::Io {
        path: path.to_path_buf(),
        source,
    };
    let text = serde_json::to_string_pretty(&doc).map_err(|e| io(e.into()))?;
    std::fs::write(path, text).map_err(io)
}
