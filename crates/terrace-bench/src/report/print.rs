//! The printed form of results: db_bench's result line and histogram block, Terrace's
//! extra lines, and the closing statistics block.
//!
//! Must not touch: the database (it is given `DbStats`). Concurrency: plain data.

use std::io::Write;

use terrace::DbStats;

use super::{BenchResult, Counters};
use crate::interval::SLOW_SECOND_FRACTION;

impl BenchResult {
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
            writeln!(out, "  compaction by output level: -")?;
            writeln!(out, "  level bytes: -")?;
            writeln!(out, "  tree depth: -")?;
            writeln!(
                out,
                "  stalls: -; longest gap between completed writes {gap_ms:.3} ms"
            )?;
            return self.print_slow_seconds(out);
        }
        writeln!(
            out,
            "  write amplification: {:.3} (flush {:.1} MB + compaction {:.1} MB) / user {:.1} MB",
            self.write_amplification,
            mb(self.flush_bytes_written),
            mb(self.compaction_bytes_written),
            mb(self.user_bytes_written)
        )?;
        if self.row_bytes_written > 0 {
            writeln!(
                out,
                "  write amplification of the table tier: {:.3} ({:.1} MB of the flush went to matrix rows)",
                self.table_write_amplification,
                mb(self.row_bytes_written)
            )?;
            writeln!(
                out,
                "  matrix: {} table merges, {} column compactions",
                self.row_merges, self.column_compactions
            )?;
        }
        if self.compaction_fallbacks > 0 {
            writeln!(
                out,
                "  compaction fallbacks: {} tasks run again on the host",
                self.compaction_fallbacks
            )?;
        }
        for u in &self.compaction_units {
            writeln!(out, "  compaction unit {}", super::units::unit_line(u))?;
        }
        for v in &self.volumes {
            writeln!(out, "  volume {}", super::volumes::volume_line(v))?;
        }
        if let Some(s) = &self.volume_spread {
            writeln!(out, "  {}", super::volumes::spread_line(s))?;
        }
        if self.migrations > 0 {
            writeln!(
                out,
                "  migration: {} files, {:.1} MB",
                self.migrations,
                mb(self.migrated_bytes)
            )?;
        }
        if self.throttled_bytes_written > 0 {
            writeln!(
                out,
                "  write amplification of the throttled tier: {:.3} ({:.1} MB written to throttled directories, logs and manifests included)",
                self.throttled_write_amplification,
                mb(self.throttled_bytes_written)
            )?;
        }
        let by_level = if self.counters == Counters::ServerInfo {
            "-".to_string()
        } else {
            super::levels::compaction_line(&self.compaction_by_level)
        };
        writeln!(out, "  compaction by output level: {by_level}")?;
        let levels: Vec<String> = self
            .levels
            .iter()
            .map(|l| match l.rows {
                0 => format!("L{} {:.1} MB ({} files)", l.level, mb(l.bytes), l.files),
                r => format!(
                    "L{} {:.1} MB ({r} rows, {} files)",
                    l.level,
                    mb(l.bytes),
                    l.files
                ),
            })
            .collect();
        let levels = if self.counters == Counters::ServerInfo {
            "-".to_string()
        } else if levels.is_empty() {
            "empty".to_string()
        } else {
            levels.join(", ")
        };
        writeln!(out, "  level bytes: {levels}")?;
        match self.tree_depth {
            Some(d) => writeln!(out, "  tree depth: {d} non-empty levels")?,
            None => writeln!(out, "  tree depth: -")?,
        }
        writeln!(
            out,
            "  stalls: {:.3} seconds in {} writes; longest gap between completed writes {:.3} ms",
            self.stall_micros as f64 / 1e6,
            self.stall_count,
            gap_ms
        )?;
        self.print_slow_seconds(out)?;
        if self.throttle_waits > 0 {
            writeln!(
                out,
                "  storage throttle: {:.3} seconds waited in {} I/Os",
                self.throttle_wait_micros as f64 / 1e6,
                self.throttle_waits
            )?;
        }
        Ok(())
    }

    fn print_slow_seconds(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let pct = SLOW_SECOND_FRACTION * 100.0;
        match &self.slow_seconds {
            Some(s) => writeln!(
                out,
                "  slow seconds: {} of {} ({:.1}%) below {pct:.0}% of the median second ({:.0} ops)",
                s.slow_seconds,
                s.seconds,
                s.share * 100.0,
                s.median_ops_per_sec
            ),
            None => writeln!(out, "  slow seconds: - (no whole second)"),
        }
    }
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
        ("matrix.column.compactions", s.column_compactions),
        ("matrix.row.merges", s.row_merges),
        ("compaction.fallbacks", s.compaction_fallbacks),
        ("stall.micros", s.stall_micros),
        ("stall.count", s.stall_count),
        ("throttle.wait.micros", s.throttle_wait_micros),
        ("throttle.wait.count", s.throttle_waits),
        ("block.cache.hit", s.block_cache_hits),
        ("block.cache.miss", s.block_cache_misses),
    ];
    for (name, v) in counters {
        writeln!(out, "terrace.{name} COUNT : {v}")?;
    }
    Ok(())
}
