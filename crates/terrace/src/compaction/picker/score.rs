//! Level byte targets, the base level and compaction scores: how full each level is
//! against its target, as a pure function of the level state.
//!
//! Owns: static and dynamic level targets, the base level that level 0 compacts into, and
//! the scores [`pick`](super::pick) ranks levels by (the classic level-0 score included).
//! Must not touch: the choice of input files (the rest of `picker`); no I/O, no locks.
//! Concurrency: pure functions over borrowed state.

use std::collections::HashSet;
use std::sync::Arc;

use super::LevelState;
use crate::options::Options;
use crate::version::FileMeta;

fn level_bytes(files: &[Arc<FileMeta>], skip: Option<&HashSet<u64>>) -> u64 {
    files
        .iter()
        .filter(|f| skip.is_none_or(|s| !s.contains(&f.number)))
        .map(|f| f.size)
        .sum()
}

fn to_u64(x: f64) -> u64 {
    if x >= u64::MAX as f64 {
        u64::MAX
    } else {
        x.max(0.0) as u64
    }
}

/// Targets and base level; see [`level_targets`].
fn targets_and_base(
    levels: &[Vec<Arc<FileMeta>>],
    opts: &Options,
    level1_target_bytes: u64,
) -> (Vec<u64>, usize) {
    let n = levels.len();
    if n < 2 {
        return (vec![0; n], n.saturating_sub(1));
    }
    let last = n - 1;
    let base = level1_target_bytes.max(1) as f64;
    let mult = opts.max_bytes_for_level_multiplier.max(1.0);
    let mut t = vec![0f64; n];
    if !opts.level_compaction_dynamic_level_bytes {
        let mut size = base;
        for target in t.iter_mut().skip(1) {
            *target = size;
            size *= mult;
        }
        return (t.into_iter().map(to_u64).collect(), 1);
    }
    let largest = levels
        .iter()
        .skip(1)
        .map(|l| level_bytes(l, None))
        .max()
        .unwrap_or(0);
    let first_non_empty = (1..n)
        .find(|&i| levels.get(i).is_some_and(|l| !l.is_empty()))
        .unwrap_or(last);
    let mut size = (largest as f64).max(base);
    for i in (1..=last).rev() {
        if let Some(target) = t.get_mut(i) {
            *target = size;
        }
        size /= mult;
    }
    let mut base_level = last;
    while base_level > 1 && t.get(base_level).is_some_and(|x| *x > base) {
        base_level -= 1;
    }
    let base_level = base_level.min(first_non_empty);
    for target in t.iter_mut().take(base_level) {
        *target = 0.0;
    }
    (t.into_iter().map(to_u64).collect(), base_level)
}

/// Byte target of every level (level 0's is 0: it is scored by file count).
///
/// Static: level 1 gets `max_bytes_for_level_base`, each deeper level
/// `max_bytes_for_level_multiplier` times more. Dynamic (`level_compaction_dynamic_level_bytes`,
/// RocksDB's semantics simplified): the last level's target is its largest level's size
/// (at least the base), each level up is a multiplier smaller, and the base level (where
/// level 0 compacts to) is the deepest level whose target is at most the base, but never
/// below the first non-empty level; levels above the base level get target 0 and stay empty.
/// `level1_target_bytes` takes the place of `max_bytes_for_level_base` (see
/// [`LevelState::level1_target_bytes`]).
pub fn level_targets(
    levels: &[Vec<Arc<FileMeta>>],
    opts: &Options,
    level1_target_bytes: u64,
) -> Vec<u64> {
    targets_and_base(levels, opts, level1_target_bytes).0
}

/// The level that level 0 compacts into: 1, or deeper with dynamic level bytes.
pub fn base_level(
    levels: &[Vec<Arc<FileMeta>>],
    opts: &Options,
    level1_target_bytes: u64,
) -> usize {
    targets_and_base(levels, opts, level1_target_bytes).1
}

/// Compaction score of every level: level 0 is its file count over
/// `level0_file_num_compaction_trigger`, deeper levels their bytes over their target,
/// both counting only files not being compacted. The last level scores 0 (it has no
/// level to compact into). A score of 1 or more asks for a compaction.
pub fn scores(state: &LevelState<'_>, opts: &Options) -> Vec<f64> {
    let n = state.levels.len();
    let targets = level_targets(state.levels, opts, state.level1_target_bytes);
    let mut out = vec![0.0; n];
    for (i, (files, score)) in state.levels.iter().zip(out.iter_mut()).enumerate() {
        if i + 1 >= n {
            break;
        }
        if i == 0 {
            *score = state.level0_score;
            continue;
        }
        let bytes = level_bytes(files, Some(state.being_compacted));
        *score = match targets.get(i).copied().unwrap_or(0) {
            0 if bytes > 0 => f64::MAX,
            0 => 0.0,
            t => bytes as f64 / t as f64,
        };
    }
    out
}
