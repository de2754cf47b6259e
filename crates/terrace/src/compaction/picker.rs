//! Leveled compaction policy as a pure function of the level state: no I/O, no locks.
//!
//! Owns: level byte targets (static and dynamic), compaction scores, and the choice of
//! input files for automatic and manual compactions (docs/techniques/leveled-compaction.md).
//! Must not touch: versions or files; callers pass a consistent view of the levels and
//! apply the outcome themselves.
//! Concurrency: pure functions over borrowed state; call them under the version lock so
//! the state does not change underneath, and mark the picked files as being compacted
//! before releasing it.
//!
//! Preconditions on the state: level 0 may hold files in any order; every deeper level
//! holds non-overlapping files sorted by smallest key (adjacent files may share a
//! boundary user key, as LevelDB allows).

use std::collections::HashSet;
use std::sync::Arc;

use crate::compaction::filter::FilterSpec;
use crate::compaction::task::{
    ColumnInput, CompactionInputLevel, CompactionReason, CompactionTask, OutputSpec,
};
use crate::key::{self, InternalKey, SeqNo, ValueType, MAX_SEQ};
use crate::options::Options;
use crate::version::{FileMeta, RowMeta};

/// The part of a version the picker reads.
#[derive(Debug, Clone, Copy)]
pub struct LevelState<'a> {
    /// Files per level; `levels.len()` is the number of levels.
    pub levels: &'a [Vec<Arc<FileMeta>>],
    /// Per level, the largest key of the last compaction out of it (round robin).
    pub compact_pointers: &'a [Option<InternalKey>],
    /// Numbers of files that a running compaction owns.
    pub being_compacted: &'a HashSet<u64>,
    /// Level 0's compaction score, from the level 0 in use (`level0::Level0`); the classic
    /// one is [`level0_file_count_score`].
    pub level0_score: f64,
    /// Level 1's byte target (its base), from the level 0 in use: a larger level 0 may
    /// widen level 1 so that the tree stays shallow.
    pub level1_target_bytes: u64,
}

/// The classic level-0 score: files not being compacted over
/// `level0_file_num_compaction_trigger`.
pub fn level0_file_count_score(
    level0: &[Arc<FileMeta>],
    being_compacted: &HashSet<u64>,
    opts: &Options,
) -> f64 {
    let live = level0
        .iter()
        .filter(|f| !being_compacted.contains(&f.number))
        .count();
    live as f64 / opts.level0_file_num_compaction_trigger.max(1) as f64
}

/// A chosen compaction: which files move from which level to which.
#[derive(Debug, Clone, PartialEq)]
pub struct PickedCompaction {
    /// The level compacted.
    pub level: usize,
    /// The level receiving the outputs.
    pub output_level: usize,
    /// Files of `level`, in key order (level 0: oldest first).
    pub inputs: Vec<Arc<FileMeta>>,
    /// Files of `output_level` that overlap the inputs, in key order.
    pub output_inputs: Vec<Arc<FileMeta>>,
    /// The single input file can move to `output_level` without being rewritten.
    pub trivial_move: bool,
    /// Why it was chosen.
    pub reason: CompactionReason,
    /// No file below `output_level` overlaps the compaction's key range.
    pub bottommost: bool,
    /// A column of matrix rows: the rows, newest first, read within `[lo, hi)`.
    pub column: Option<PickedColumn>,
}

/// The level-0 side of a matrix column compaction.
#[derive(Debug, Clone, PartialEq)]
pub struct PickedColumn {
    /// The frozen rows, newest first.
    pub rows: Vec<Arc<RowMeta>>,
    /// Inclusive lower user key; `None` is unbounded.
    pub lo: Option<Vec<u8>>,
    /// Exclusive upper user key; `None` is unbounded (the last column).
    pub hi: Option<Vec<u8>>,
}

impl PickedCompaction {
    /// Every file read, inputs first.
    pub fn all_files(&self) -> impl Iterator<Item = &Arc<FileMeta>> {
        self.inputs.iter().chain(self.output_inputs.iter())
    }

    /// The largest input key of `level`: the next compact pointer of that level.
    pub fn compact_pointer(&self) -> Option<InternalKey> {
        self.inputs.iter().map(|f| f.largest.clone()).max()
    }

    /// The serializable description of this compaction.
    pub fn to_task(
        &self,
        id: u64,
        snapshots: Vec<SeqNo>,
        output: OutputSpec,
        filter: Option<FilterSpec>,
    ) -> CompactionTask {
        let level = |l: usize, files: &[Arc<FileMeta>]| CompactionInputLevel {
            level: l as u32,
            files: files.iter().map(|f| f.as_ref().clone()).collect(),
        };
        let mut inputs = vec![level(self.level, &self.inputs)];
        inputs.retain(|l| !l.files.is_empty());
        if !self.output_inputs.is_empty() {
            inputs.push(level(self.output_level, &self.output_inputs));
        }
        CompactionTask {
            id,
            inputs,
            output_level: self.output_level as u32,
            smallest_user_key: self.column.as_ref().and_then(|c| c.lo.clone()),
            largest_user_key: self.column.as_ref().and_then(|c| c.hi.clone()),
            snapshots,
            bottommost: self.bottommost,
            output,
            filter,
            reason: if self.trivial_move {
                CompactionReason::TrivialMove
            } else {
                self.reason
            },
            column: self.column.as_ref().map(|c| ColumnInput {
                rows: c.rows.iter().map(|r| r.as_ref().clone()).collect(),
            }),
        }
    }
}

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

/// The most urgent automatic compaction: levels with score >= 1, highest first, skipping
/// levels whose candidate files are being compacted.
pub fn pick(state: &LevelState<'_>, opts: &Options) -> Option<PickedCompaction> {
    let s = scores(state, opts);
    let mut order: Vec<usize> = (0..s.len()).filter(|&i| s.get(i) >= Some(&1.0)).collect();
    order.sort_by(|a, b| {
        s.get(*b)
            .partial_cmp(&s.get(*a))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let base = base_level(state.levels, opts, state.level1_target_bytes);
    order.into_iter().find_map(|level| {
        let files = state.levels.get(level)?;
        if level == 0 {
            let seed = files.iter().min_by_key(|f| (f.largest_seq, f.number))?;
            let inputs = level0_closure(files, seed.smallest_user_key(), seed.largest_user_key());
            return finish(
                state,
                0,
                base,
                inputs,
                CompactionReason::Level0FileNum,
                true,
            );
        }
        pick_round_robin(state, level)
    })
}

/// Compacts the files of `level` overlapping the user keys `[lo, hi]` (inclusive, `None`
/// unbounded) into the next level, or into itself for the last level. Never a trivial
/// move, so filters and tombstone drops apply. `None` if nothing overlaps or a needed
/// file is being compacted.
pub fn pick_manual(
    state: &LevelState<'_>,
    opts: &Options,
    level: usize,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) -> Option<PickedCompaction> {
    let n = state.levels.len();
    let files = state.levels.get(level)?;
    let output_level = match level {
        0 => base_level(state.levels, opts, state.level1_target_bytes),
        l if l + 1 >= n => l,
        l => l + 1,
    };
    let inputs = if level == 0 {
        let seeds: Vec<&Arc<FileMeta>> = files.iter().filter(|f| f.overlaps(lo, hi)).collect();
        let first = seeds.iter().map(|f| f.smallest_user_key()).min()?;
        let last = seeds.iter().map(|f| f.largest_user_key()).max()?;
        level0_closure(files, first, last)
    } else {
        sorted_run(files, lo, hi)
    };
    finish(
        state,
        level,
        output_level,
        inputs,
        CompactionReason::Manual,
        false,
    )
}

/// Round robin over a sorted level: the first usable file after the compact pointer.
fn pick_round_robin(state: &LevelState<'_>, level: usize) -> Option<PickedCompaction> {
    let files = state.levels.get(level)?;
    let pointer = state.compact_pointers.get(level).and_then(Option::as_ref);
    let start = pointer.map_or(0, |p| files.partition_point(|f| &f.largest <= p));
    (0..files.len()).find_map(|k| {
        let f = files.get((start + k) % files.len())?;
        if state.being_compacted.contains(&f.number) {
            return None;
        }
        let inputs = sorted_run(
            files,
            Some(f.smallest_user_key()),
            Some(f.largest_user_key()),
        );
        finish(
            state,
            level,
            level + 1,
            inputs,
            CompactionReason::LevelSize,
            true,
        )
    })
}

/// Every level-0 file reachable from `[lo, hi]` through overlaps, oldest first.
fn level0_closure(files: &[Arc<FileMeta>], lo: &[u8], hi: &[u8]) -> Vec<Arc<FileMeta>> {
    let (mut lo, mut hi) = (lo.to_vec(), hi.to_vec());
    loop {
        let chosen: Vec<Arc<FileMeta>> = files
            .iter()
            .filter(|f| f.overlaps(Some(&lo), Some(&hi)))
            .cloned()
            .collect();
        let new_lo = chosen.iter().map(|f| f.smallest_user_key()).min();
        let new_hi = chosen.iter().map(|f| f.largest_user_key()).max();
        match (new_lo, new_hi) {
            (Some(l), Some(h)) if l < lo.as_slice() || h > hi.as_slice() => {
                lo = l.to_vec();
                hi = h.to_vec();
            }
            _ => {
                let mut chosen = chosen;
                chosen.sort_by_key(|f| (f.largest_seq, f.number));
                return chosen;
            }
        }
    }
}

/// True if a file's largest key is a range-tombstone end sentinel: the file then holds
/// nothing of that user key, so the next file may start there without sharing it.
fn ends_exclusive(f: &FileMeta) -> bool {
    key::try_parse(f.largest.encoded())
        .is_ok_and(|p| p.seq == MAX_SEQ && p.kind == ValueType::RangeDeletion)
}

/// The files of a sorted level overlapping `[lo, hi]`, widened so that no user key has
/// versions both inside and just outside the run.
fn sorted_run(files: &[Arc<FileMeta>], lo: Option<&[u8]>, hi: Option<&[u8]>) -> Vec<Arc<FileMeta>> {
    let Some(mut first) = files.iter().position(|f| f.overlaps(lo, hi)) else {
        return Vec::new();
    };
    let mut last = files
        .iter()
        .rposition(|f| f.overlaps(lo, hi))
        .unwrap_or(first);
    let shares = |a: Option<&Arc<FileMeta>>, b: Option<&Arc<FileMeta>>| match (a, b) {
        (Some(a), Some(b)) => !ends_exclusive(a) && a.largest_user_key() == b.smallest_user_key(),
        _ => false,
    };
    while first > 0 && shares(files.get(first - 1), files.get(first)) {
        first -= 1;
    }
    while shares(files.get(last), files.get(last + 1)) {
        last += 1;
    }
    files
        .get(first..=last)
        .map(<[_]>::to_vec)
        .unwrap_or_default()
}

fn user_range(files: &[Arc<FileMeta>]) -> Option<(&[u8], &[u8])> {
    let lo = files.iter().map(|f| f.smallest_user_key()).min()?;
    let hi = files.iter().map(|f| f.largest_user_key()).max()?;
    Some((lo, hi))
}

/// Adds the output-level files, checks ownership, and decides trivial move and bottommost.
fn finish(
    state: &LevelState<'_>,
    level: usize,
    output_level: usize,
    inputs: Vec<Arc<FileMeta>>,
    reason: CompactionReason,
    allow_trivial: bool,
) -> Option<PickedCompaction> {
    let busy = |files: &[Arc<FileMeta>]| {
        files
            .iter()
            .any(|f| state.being_compacted.contains(&f.number))
    };
    let (lo, hi) = user_range(&inputs)?;
    if busy(&inputs) {
        return None;
    }
    let output_inputs = match state.levels.get(output_level) {
        Some(files) if output_level != level => sorted_run(files, Some(lo), Some(hi)),
        _ => Vec::new(),
    };
    if busy(&output_inputs) {
        return None;
    }
    let all: Vec<Arc<FileMeta>> = inputs.iter().chain(&output_inputs).cloned().collect();
    let (lo, hi) = user_range(&all)?;
    let bottommost = state
        .levels
        .iter()
        .skip(output_level + 1)
        .all(|l| l.iter().all(|f| !f.overlaps(Some(lo), Some(hi))));
    let trivial_move = allow_trivial && inputs.len() == 1 && output_inputs.is_empty();
    Some(PickedCompaction {
        level,
        output_level,
        inputs,
        output_inputs,
        trivial_move,
        reason,
        bottommost,
        column: None,
    })
}

/// A matrix column compaction of `rows` within `[lo, hi)` into `output_level`, with every
/// file of that level overlapping the range. `None` if one of them is being compacted.
///
/// Column cuts are chosen between output-level files, so that each file joins exactly one
/// column; but the output level can change between two columns of a group (another level
/// becomes the base level, or its files move). A file that reaches outside the range then
/// widens it: below `lo` only the file contributes (the rows start at their trim), and
/// above `hi` the column grows to the file's end, so no file is ever split.
pub fn pick_column(
    state: &LevelState<'_>,
    output_level: usize,
    mut column: PickedColumn,
) -> Option<PickedCompaction> {
    let files = state.levels.get(output_level)?;
    let overlaps = |f: &Arc<FileMeta>, lo: Option<&[u8]>, hi: Option<&[u8]>| {
        lo.is_none_or(|l| f.largest_user_key() >= l) && hi.is_none_or(|h| f.smallest_user_key() < h)
    };
    let output_inputs: Vec<Arc<FileMeta>> = files
        .iter()
        .filter(|f| overlaps(f, column.lo.as_deref(), column.hi.as_deref()))
        .cloned()
        .collect();
    if let (Some(first), Some(lo)) = (output_inputs.first(), column.lo.as_deref()) {
        if first.smallest_user_key() < lo {
            column.lo = Some(first.smallest_user_key().to_vec());
        }
    }
    if let (Some(last), Some(hi)) = (output_inputs.last(), column.hi.as_deref()) {
        if last.largest_user_key() >= hi && !ends_exclusive_at(last, hi) {
            // The first user key after the file's largest.
            let mut end = last.largest_user_key().to_vec();
            end.push(0);
            column.hi = Some(end);
        }
    }
    if output_inputs
        .iter()
        .any(|f| state.being_compacted.contains(&f.number))
    {
        return None;
    }
    let (lo, hi) = (column.lo.as_deref(), column.hi.as_deref());
    if column
        .rows
        .iter()
        .any(|r| state.being_compacted.contains(&r.number))
    {
        return None;
    }
    let below_overlaps = state.levels.iter().skip(output_level + 1).any(|l| {
        l.iter().any(|f| {
            lo.is_none_or(|x| f.largest_user_key() >= x)
                && hi.is_none_or(|h| f.smallest_user_key() < h)
        })
    });
    Some(PickedCompaction {
        level: 0,
        output_level,
        inputs: Vec::new(),
        output_inputs,
        trivial_move: false,
        reason: CompactionReason::MatrixColumn,
        bottommost: !below_overlaps,
        column: Some(column),
    })
}

/// True if `f` ends with a range-tombstone sentinel at user key `h` (it then holds
/// nothing of `h`).
fn ends_exclusive_at(f: &FileMeta, h: &[u8]) -> bool {
    ends_exclusive(f) && f.largest_user_key() == h
}

#[cfg(test)]
mod tests;
