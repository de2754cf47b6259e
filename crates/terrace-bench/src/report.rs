//! Results of benchmarks and their text and JSON forms: db_bench's result line and
//! histogram block, then latency percentiles, write amplification, bytes per level and
//! stalls.
//!
//! Owns: `BenchResult`, `Latency`, building them from worker stats and engine stats, and
//! their printed shape. Must not touch: the database (it is given `DbStats`).
//! Concurrency: plain data built after the workers have joined.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use hdrhistogram::Histogram;
use terrace::DbStats;

use crate::error::{BenchError, Result};
use crate::interval::IntervalRow;
use crate::recorder::{merge_hist, new_hist, OpKind, ThreadStats};

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
    /// Bytes of those files.
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
    /// Microseconds writers were delayed or stopped during the benchmark.
    pub stall_micros: u64,
    /// Writes delayed or stopped during the benchmark.
    pub stall_count: u64,
    /// Longest time between two completed writes, in microseconds (0 without writes).
    pub longest_write_gap_micros: f64,
    /// Levels after the benchmark.
    pub levels: Vec<LevelBytes>,
    /// Where the engine figures above come from (all zero and printed "-" when `None`).
    pub counters: Counters,
    /// The report-interval series of this benchmark.
    pub intervals: Vec<IntervalRow>,
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
    /// Merges the workers' stats (excluded workers left out) with the engine's counters.
    ///
    /// # Errors
    /// `Histogram` if merging fails.
    pub fn build(
        name: &str,
        threads: &[ThreadStats],
        engine: EngineDelta<'_>,
        longest_write_gap_micros: f64,
    ) -> Result<BenchResult> {
        let measured: Vec<&ThreadStats> = threads.iter().filter(|t| !t.excluded).collect();
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
            write_amplification: if user > 0 {
                (flush + compaction) as f64 / user as f64
            } else {
                0.0
            },
            stall_micros: a.stall_micros.saturating_sub(b.stall_micros),
            stall_count: a.stall_count.saturating_sub(b.stall_count),
            longest_write_gap_micros,
            levels: a
                .levels
                .iter()
                .filter(|l| l.files > 0)
                .map(|l| LevelBytes {
                    level: l.level,
                    files: l.files,
                    bytes: l.bytes,
                })
                .collect(),
            counters: Counters::Engine,
            intervals: Vec::new(),
        })
    }

    /// Prints the result the way db_bench does, then Terrace's extra lines; with
    /// `histogram`, db_bench's per-operation histogram summary too.
    ///
    /// # Errors
    /// Errors of `out`.
    pub fn print(&self, out: &mut dyn Write, histogram: bool) -> std::io::Result<()> {
        let mut extra = String::new();
        if self.bytes > 0 {
            extra = format!("{:6.1} MB/s", self.mb_per_sec);
        }
        if !self.message.is_empty() {
            if !extra.is_empty() {
                extra.push(' ');
            }
            extra.push_str(&self.message);
        }
        writeln!(
            out,
            "{:<12} : {:>11.3} micros/op {} ops/sec {:.3} seconds {} operations;{}{}",
            self.name,
            self.micros_per_op,
            self.ops_per_sec as u64,
            self.seconds,
            self.ops,
            if extra.is_empty() { "" } else { " " },
            extra
        )?;
        if histogram {
            for (op, l) in &self.by_op {
                writeln!(out, "Microseconds per {op}:")?;
                writeln!(
                    out,
                    "Count: {} Average: {:.4}  StdDev: {:.2}",
                    l.count, l.mean, l.stddev
                )?;
                writeln!(
                    out,
                    "Min: {:.0}  Median: {:.4}  Max: {:.0}",
                    l.min, l.p50, l.max
                )?;
                writeln!(
                    out,
                    "Percentiles: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}",
                    l.p50, l.p75, l.p99, l.p999, l.p9999
                )?;
                writeln!(out, "{}", "-".repeat(54))?;
            }
        }
        let l = &self.latency;
        writeln!(
            out,
            "  latency micros: p50 {:.2} p99 {:.2} p99.9 {:.2} max {:.2}",
            l.p50, l.p99, l.p999, l.max
        )?;
        let mb = |b: u64| b as f64 / 1_048_576.0;
        let gap_ms = self.longest_write_gap_micros / 1000.0;
        if self.counters == Counters::None {
            writeln!(out, "  write amplification: -")?;
            writeln!(out, "  level bytes: -")?;
            return writeln!(
                out,
                "  stalls: -; longest gap between completed writes {gap_ms:.3} ms"
            );
        }
        writeln!(
            out,
            "  write amplification: {:.3} (flush {:.1} MB + compaction {:.1} MB) / user {:.1} MB",
            self.write_amplification,
            mb(self.flush_bytes_written),
            mb(self.compaction_bytes_written),
            mb(self.user_bytes_written)
        )?;
        let levels: Vec<String> = self
            .levels
            .iter()
            .map(|l| format!("L{} {:.1} MB ({} files)", l.level, mb(l.bytes), l.files))
            .collect();
        let levels = if self.counters == Counters::ServerInfo {
            "-".to_string()
        } else if levels.is_empty() {
            "empty".to_string()
        } else {
            levels.join(", ")
        };
        writeln!(out, "  level bytes: {levels}")?;
        writeln!(
            out,
            "  stalls: {:.3} seconds in {} writes; longest gap between completed writes {:.3} ms",
            self.stall_micros as f64 / 1e6,
            self.stall_count,
            gap_ms
        )
    }
}

/// Writes `results` as a JSON document `{"flags": ..., "benchmarks": [...]}`.
///
/// # Errors
/// `Io` if the file cannot be written.
pub fn write_json(path: &Path, flags: &crate::Flags, results: &[BenchResult]) -> Result<()> {
    let doc = serde_json::json!({
        "tool": "terrace bench",
        "version": env!("CARGO_PKG_VERSION"),
        "flags": {
            "num": flags.num, "reads": flags.reads, "threads": flags.threads,
            "key_size": flags.key_size, "value_size": flags.value_size,
            "compression_type": format!("{:?}", flags.compression_type),
            "write_buffer_size": flags.write_buffer_size, "bloom_bits": flags.bloom_bits,
            "cache_size": flags.cache_size, "sync": flags.sync, "disable_wal": flags.disable_wal,
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

/// Prints engine counters after all benchmarks, named like RocksDB's statistics
/// (`terrace.<name> COUNT : <value>`) so that the same parser reads both.
///
/// # Errors
/// Errors of `out`.
pub fn print_statistics(out: &mut dyn Write, s: &DbStats) -> std::io::Result<()> {
    writeln!(out, "STATISTICS:")?;
    let counters = [
        ("bytes.written", s.user_bytes_written),
        ("wal.bytes", s.wal_bytes_written),
        ("flush.write.bytes", s.flush_bytes_written),
        ("compact.write.bytes", s.compaction_bytes_written),
        ("compact.read.bytes", s.compaction_bytes_read),
        ("flush.count", s.flushes),
        ("compaction.count", s.compactions),
        ("compaction.trivial.moves", s.trivial_moves),
        ("stall.micros", s.stall_micros),
        ("stall.count", s.stall_count),
        ("block.cache.hit", s.block_cache_hits),
        ("block.cache.miss", s.block_cache_misses),
    ];
    for (name, v) in counters {
        writeln!(out, "terrace.{name} COUNT : {v}")?;
    }
    Ok(())
}
