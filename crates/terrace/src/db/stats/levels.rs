//! Compaction statistics by output level, like RocksDB's "Compaction Stats" table: the
//! per-level counters a compaction adds to when it is installed, and the text table of
//! the `terrace.compaction-stats` property.
//!
//! Owns: the per-level counters, the compaction totals of `DbStats` (their sums), and
//! the table's layout. Must not touch: what a compaction reads or writes (the caller
//! measures it).
//! Concurrency: relaxed atomics, updated by the thread that installs a compaction; a
//! report taken while one is being recorded may hold part of that compaction only, but
//! its totals are always the sums of its levels.

use std::fmt::Write as _;
use std::sync::atomic::AtomicU64;

use super::{add, load, Counters, DbStats, LevelStats};

/// Counters of the compactions whose outputs went to one level.
#[derive(Debug, Default)]
pub(crate) struct LevelCounters {
    read_input: AtomicU64,
    read_rows: AtomicU64,
    read_output: AtomicU64,
    written: AtomicU64,
    moved: AtomicU64,
    compactions: AtomicU64,
    trivial_moves: AtomicU64,
}

/// What one rewriting compaction read and wrote, by where the bytes came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CompactionBytes {
    /// Table files of the input level (RocksDB's Rn).
    pub(crate) read_input: u64,
    /// Matrix rows of level 0 (a column compaction's level-0 side).
    pub(crate) read_rows: u64,
    /// Table files of the output level (RocksDB's Rnp1).
    pub(crate) read_output: u64,
    /// Table files written.
    pub(crate) written: u64,
}

impl CompactionBytes {
    /// Every byte read.
    pub(crate) fn read(&self) -> u64 {
        self.read_input + self.read_rows + self.read_output
    }
}

impl Counters {
    /// The per-level counters of `output_level`. Outputs always go to a level of the
    /// version, which has as many levels as these counters.
    fn level(&self, output_level: usize) -> Option<&LevelCounters> {
        let l = self.levels.get(output_level);
        if l.is_none() {
            tracing::warn!(
                output_level,
                "compaction into a level beyond the statistics"
            );
        }
        l
    }

    /// Records an installed compaction that rewrote its inputs into `output_level`.
    pub(crate) fn record_compaction(&self, output_level: usize, bytes: CompactionBytes) {
        if let Some(l) = self.level(output_level) {
            add(&l.compactions, 1);
            add(&l.read_input, bytes.read_input);
            add(&l.read_rows, bytes.read_rows);
            add(&l.read_output, bytes.read_output);
            add(&l.written, bytes.written);
        }
    }

    /// Records an installed trivial move of files of `moved` bytes into `output_level`.
    pub(crate) fn record_trivial_move(&self, output_level: usize, moved: u64) {
        if let Some(l) = self.level(output_level) {
            add(&l.compactions, 1);
            add(&l.trivial_moves, 1);
            add(&l.moved, moved);
        }
    }

    /// Copies the compaction figures of `stats.level` into `stats`.
    pub(crate) fn fill_level(&self, stats: &mut LevelStats) {
        let Some(l) = self.levels.get(stats.level) else {
            return;
        };
        stats.compaction_bytes_read_input_level = load(&l.read_input);
        stats.compaction_bytes_read_level0_rows = load(&l.read_rows);
        stats.compaction_bytes_read_output_level = load(&l.read_output);
        stats.compaction_bytes_written = load(&l.written);
        stats.compaction_bytes_moved = load(&l.moved);
        stats.compactions = load(&l.compactions);
        stats.trivial_moves = load(&l.trivial_moves);
    }
}

/// The levels' files, bytes and compaction figures added up (level and target 0).
pub(crate) fn sum(levels: &[LevelStats]) -> LevelStats {
    let mut sum = LevelStats::default();
    for l in levels {
        sum.files += l.files;
        sum.rows += l.rows;
        sum.bytes += l.bytes;
        sum.compaction_bytes_read_input_level += l.compaction_bytes_read_input_level;
        sum.compaction_bytes_read_level0_rows += l.compaction_bytes_read_level0_rows;
        sum.compaction_bytes_read_output_level += l.compaction_bytes_read_output_level;
        sum.compaction_bytes_written += l.compaction_bytes_written;
        sum.compaction_bytes_moved += l.compaction_bytes_moved;
        sum.compactions += l.compactions;
        sum.trivial_moves += l.trivial_moves;
    }
    sum
}

/// Per-level counters for `num_levels` levels.
pub(crate) fn level_counters(num_levels: usize) -> Vec<LevelCounters> {
    (0..num_levels).map(|_| LevelCounters::default()).collect()
}

impl LevelStats {
    /// Every byte compactions into this level read: input level, level-0 rows and this
    /// level.
    pub fn compaction_bytes_read(&self) -> u64 {
        self.compaction_bytes_read_input_level
            + self.compaction_bytes_read_level0_rows
            + self.compaction_bytes_read_output_level
    }

    /// Bytes compactions into this level wrote beyond what they read from it (RocksDB's
    /// Wnew): written minus read from the output level, 0 if that is negative.
    pub fn compaction_bytes_new(&self) -> u64 {
        self.compaction_bytes_written
            .saturating_sub(self.compaction_bytes_read_output_level)
    }

    /// RocksDB's per-level W-Amp: bytes written by compactions into this level per byte
    /// they read from the level above (its table files, or level 0's matrix rows); 0
    /// while nothing was read from there.
    pub fn compaction_write_amplification(&self) -> f64 {
        ratio(
            self.compaction_bytes_written,
            self.compaction_bytes_read_input_level + self.compaction_bytes_read_level0_rows,
        )
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn mb(b: u64) -> f64 {
    b as f64 / 1_048_576.0
}

/// One row of the table.
fn row(out: &mut String, name: &str, l: &LevelStats) {
    let _ = writeln!(
        out,
        "{name:>5} {:>6} {:>5} {:>9.1} {:>8.1} {:>9.1} {:>8.1} {:>9.1} {:>8.1} {:>9.1} {:>6.2} {:>9} {:>9}",
        l.files,
        l.rows,
        mb(l.bytes),
        mb(l.compaction_bytes_read_input_level),
        mb(l.compaction_bytes_read_level0_rows),
        mb(l.compaction_bytes_read_output_level),
        mb(l.compaction_bytes_written),
        mb(l.compaction_bytes_new()),
        mb(l.compaction_bytes_moved),
        l.compaction_write_amplification(),
        l.compactions,
        l.trivial_moves,
    );
}

/// The `terrace.compaction-stats` table: one row per level (by output level: what
/// compactions into that level read and wrote), a sum row, and the flush and write
/// amplification figures of the whole engine.
pub(crate) fn compaction_table(s: &DbStats) -> String {
    let mut out = format!(
        "{:>5} {:>6} {:>5} {:>9} {:>8} {:>9} {:>8} {:>9} {:>8} {:>9} {:>6} {:>9} {:>9}\n",
        "Level",
        "Files",
        "Rows",
        "Size(MB)",
        "Rn(MB)",
        "Rrow(MB)",
        "Rnp1(MB)",
        "Write(MB)",
        "Wnew(MB)",
        "Moved(MB)",
        "W-Amp",
        "Comp(cnt)",
        "Move(cnt)"
    );
    for l in &s.levels {
        row(&mut out, &format!("L{}", l.level), l);
    }
    row(&mut out, "Sum", &sum(&s.levels));
    let _ = writeln!(
        out,
        "Rows are output levels. Rn: table files of the input level; Rrow: matrix rows of \
         level 0 (persistent memory) read by column compactions; Rnp1: table files of the \
         output level; W-Amp = Write / (Rn + Rrow)."
    );
    let _ = writeln!(
        out,
        "Flush: {:.1} MB written ({:.1} MB to matrix rows), {} flushes; user: {:.1} MB; \
         write amplification {:.3}",
        mb(s.flush_bytes_written),
        mb(s.row_bytes_written),
        s.flushes,
        mb(s.user_bytes_written),
        s.write_amplification
    );
    out
}

#[cfg(test)]
mod tests;
