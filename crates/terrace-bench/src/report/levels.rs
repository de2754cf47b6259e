//! Compaction work by output level during one benchmark: the difference of the engine's
//! per-level compaction figures (`terrace::LevelStats`) before and after it, and its
//! report line "compaction by output level".
//!
//! Owns: `LevelCompaction` and that line's shape. Must not touch: the database (it is
//! given `DbStats`). Concurrency: plain data.

use terrace::{DbStats, LevelStats};

/// What the compactions whose outputs went to one level did during a benchmark.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct LevelCompaction {
    /// The output level.
    pub level: usize,
    /// Bytes read from the level above: its table files and, for column compactions,
    /// level 0's matrix rows (RocksDB's Rn).
    pub read_input_bytes: u64,
    /// The part of `read_input_bytes` read from level 0's matrix rows on the
    /// persistent-memory tier.
    pub read_row_bytes: u64,
    /// Bytes read from the level's own table files (RocksDB's Rnp1).
    pub read_output_bytes: u64,
    /// Bytes of table files written into the level.
    pub written_bytes: u64,
    /// Bytes of table files trivial moves brought into the level.
    pub moved_bytes: u64,
    /// Compactions into the level, trivial moves included.
    pub compactions: u64,
}

impl LevelCompaction {
    /// `after`'s figures minus `before`'s (a counter that went down counts 0).
    fn between(before: &LevelStats, after: &LevelStats) -> LevelCompaction {
        let d = |f: fn(&LevelStats) -> u64| f(after).saturating_sub(f(before));
        LevelCompaction {
            level: after.level,
            read_input_bytes: d(|l| {
                l.compaction_bytes_read_input_level + l.compaction_bytes_read_level0_rows
            }),
            read_row_bytes: d(|l| l.compaction_bytes_read_level0_rows),
            read_output_bytes: d(|l| l.compaction_bytes_read_output_level),
            written_bytes: d(|l| l.compaction_bytes_written),
            moved_bytes: d(|l| l.compaction_bytes_moved),
            compactions: d(|l| l.compactions),
        }
    }
}

/// The levels that received compactions between `before` and `after`, by output level.
pub fn compaction_by_level(before: &DbStats, after: &DbStats) -> Vec<LevelCompaction> {
    let zero = LevelStats::default();
    after
        .levels
        .iter()
        .map(|a| {
            let b = before.levels.iter().find(|b| b.level == a.level);
            LevelCompaction::between(b.unwrap_or(&zero), a)
        })
        .filter(|l| l.compactions > 0)
        .collect()
}

/// `L1 W 12.3 MB (R 2.1+10.8 MB), L2 ...`: per output level the bytes written, then the
/// bytes read from the level above and from the level itself; rows and moves when any.
/// "none" for no compaction.
pub(super) fn compaction_line(levels: &[LevelCompaction]) -> String {
    let mb = |b: u64| b as f64 / 1_048_576.0;
    let parts: Vec<String> = levels
        .iter()
        .map(|l| {
            let mut s = format!(
                "L{} W {:.1} MB (R {:.1}+{:.1} MB",
                l.level,
                mb(l.written_bytes),
                mb(l.read_input_bytes),
                mb(l.read_output_bytes)
            );
            if l.read_row_bytes > 0 {
                s.push_str(&format!(", L0 rows {:.1} MB of it", mb(l.read_row_bytes)));
            }
            if l.moved_bytes > 0 {
                s.push_str(&format!(", moved {:.1} MB", mb(l.moved_bytes)));
            }
            s.push(')');
            s
        })
        .collect();
    if parts.is_empty() {
        "none".to_string()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests;
