//! The text blocks a run prints from the database and the flags: the run's header, the
//! `stats` pseudo-benchmark, and the per-level compaction table `--statistics` prints
//! after each benchmark.
//!
//! Must not touch: the engine's internals (only `Db::stats` and `Db::property`).

use std::io::Write;

use terrace::Db;

use crate::flags::{Flags, L0Kind};
use crate::seed::Seeds;

/// Prints the run's header: versions, sizes, threads, seed, compression, devices.
pub(super) fn print_header(f: &Flags, seeds: &Seeds, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "Terrace:    version {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(out, "Keys:       {} bytes each", f.key_size)?;
    writeln!(
        out,
        "Values:     {} bytes each ({} bytes after compression)",
        f.value_size,
        (f.value_size as f64 * f.compression_ratio + 0.5) as u64
    )?;
    writeln!(out, "Entries:    {}", f.num)?;
    writeln!(out, "Threads:    {}", f.threads)?;
    print_seed(seeds, out)?;
    writeln!(out, "Compression: {:?}", f.compression_type)?;
    let opts = f.engine_options();
    let compaction = match &opts.compaction_workers {
        Some(w) => Some(w.executor(opts.compaction_executor.clone(), &f.db)),
        None if f.compaction_mode != terrace::compaction::ExecutionMode::Linear => {
            Some(opts.compaction_executor.clone())
        }
        None => None,
    };
    if let Some(executor) = compaction {
        writeln!(out, "Compaction: {}", executor.name())?;
    }
    if let Some(wal) = &f.wal_dir {
        writeln!(out, "WAL dir:    {}", wal.display())?;
    }
    if let Some(l0) = &f.level0_dir {
        writeln!(out, "L0 dir:     {} (level-0 table files)", l0.display())?;
    }
    if f.matrix.l0 == L0Kind::Matrix && f.matrix.rate_limit > 0 {
        writeln!(
            out,
            "PMem:       rate-limited to {:.1} MB/s persisted plus read (a token bucket)",
            f.matrix.rate_limit as f64 / 1_048_576.0
        )?;
    }
    if let Some(limits) = f.storage_limits() {
        let mut device = Vec::new();
        if limits.bytes_per_sec > 0 {
            device.push(format!(
                "{:.1} MB/s",
                limits.bytes_per_sec as f64 / 1_048_576.0
            ));
        }
        if limits.iops > 0 {
            device.push(format!(
                "{} IOPS of {} KiB",
                limits.iops,
                limits.io_unit_bytes / 1024
            ));
        }
        let dirs: Vec<String> = f
            .throttled_dirs()
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        writeln!(
            out,
            "Storage:    throttled to {} on {} (the table files of levels 1+)",
            device.join(" and "),
            dirs.join(", ")
        )?;
    }
    writeln!(out, "{}", "-".repeat(48))
}

/// Prints the seed base of the run, and that it came from the clock when `--seed` was 0
/// (as db_bench's "Set seed to N because --seed was 0"), so that the run can be replayed.
pub(crate) fn print_seed(seeds: &Seeds, out: &mut dyn Write) -> std::io::Result<()> {
    if seeds.from_clock() {
        writeln!(
            out,
            "Seed:       {} (from the clock because --seed was 0)",
            seeds.base()
        )
    } else {
        writeln!(out, "Seed:       {}", seeds.base())
    }
}

/// Prints the `stats` pseudo-benchmark: levels, compactions by output level, write
/// amplification, the matrix, stalls and the block cache.
pub(super) fn print_stats(db: &Db, out: &mut dyn Write) -> std::io::Result<()> {
    let s = db.stats();
    writeln!(out, "\n** Terrace stats **")?;
    if let Some(levels) = db.property("terrace.levelstats") {
        write!(out, "{levels}")?;
    }
    if let Some(table) = db.property("terrace.compaction-stats") {
        write!(out, "{table}")?;
    }
    writeln!(
        out,
        "Write amplification: {:.3}  flushes: {}  compactions: {} ({} trivial moves)",
        s.write_amplification, s.flushes, s.compactions, s.trivial_moves
    )?;
    if s.row_bytes_written > 0 {
        writeln!(
            out,
            "Matrix: {} column compactions  {} table merges  {:.1} MB written to rows",
            s.column_compactions,
            s.row_merges,
            s.row_bytes_written as f64 / 1_048_576.0
        )?;
    }
    writeln!(
        out,
        "Stalls: {:.3} seconds in {} writes  block cache: {} hits {} misses\n",
        s.stall_micros as f64 / 1e6,
        s.stall_count,
        s.block_cache_hits,
        s.block_cache_misses
    )
}

/// Prints the engine's compaction statistics by output level (the
/// `terrace.compaction-stats` property, counted since the database was opened).
pub(super) fn print_compaction_stats(db: &Db, out: &mut dyn Write) -> std::io::Result<()> {
    if let Some(table) = db.property("terrace.compaction-stats") {
        writeln!(out, "** Compaction stats (since open) **")?;
        write!(out, "{table}")?;
    }
    Ok(())
}
