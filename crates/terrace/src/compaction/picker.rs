//! Leveled compaction policy as a pure function of the level state: no I/O, no locks.
//!
//! Owns: level byte targets (static and dynamic), compaction scores (`score`), and the
//! choice of input files for automatic and manual compactions (round robin here, minimum
//! overlapping ratio in `min_overlap`, per `Options::compaction_pri`) and the base-level
//! side of a level-0 column (`column`) (docs/techniques/leveled-compaction.md).
//! Must not touch: versions or files; callers pass a consistent view of the levels and
//! apply the outcome themselves.
//! Concurrency: pure functions over borrowed state; call them under the version lock so
//! the state does not change underneath, and mark the picked files as being compacted
//! before releasing it.
//!
//! Preconditions on the state: level 0 may hold files in any order; every deeper level
//! holds non-overlapping files sorted by smallest key (adjacent files may share a
//! boundary user key, as LevelDB allows).

mod column;
mod min_overlap;
mod score;

use std::collections::HashSet;
use std::sync::Arc;

use crate::compaction::filter::FilterSpec;
use crate::compaction::task::{
    CompactionInputLevel, CompactionReason, CompactionTask, Level0Input, OutputSpec,
};
use crate::key::{self, InternalKey, SeqNo, ValueType, MAX_SEQ};
use crate::options::{CompactionPri, Options};
use crate::version::FileMeta;

pub use self::column::pick_into_base_level;
pub use self::score::{base_level, level_targets, scores};

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
    /// one is `level0::level0_file_count_score`.
    pub level0_score: f64,
    /// Level 1's byte target (its base), from the level 0 in use: a larger level 0 may
    /// widen level 1 so that the tree stays shallow.
    pub level1_target_bytes: u64,
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
    /// A column of a level 0 that compacts itself in columns, read within `[lo, hi)`.
    pub column: Option<Level0Column>,
}

/// The level-0 side of a column compaction: what a level 0 that compacts itself in
/// columns chose (the matrix level 0: a key range of its frozen rows).
#[derive(Debug, Clone, PartialEq)]
pub struct Level0Column {
    /// The level-0 units read, opaque to the picker.
    pub input: Level0Input,
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
            level0: self.column.as_ref().map(|c| c.input.clone()),
        }
    }
}

/// The most urgent automatic compaction: levels with score >= 1, highest first, skipping
/// levels whose candidate files are being compacted. A level n >= 1 chooses its input
/// file by `opts.compaction_pri`.
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
        match opts.compaction_pri {
            CompactionPri::RoundRobin => pick_round_robin(state, level),
            CompactionPri::MinOverlappingRatio => {
                min_overlap::pick_min_overlapping_ratio(state, level)
            }
        }
    })
}

/// All of level 0 into the base level, because reads through it have cost as much as
/// compacting it (`read_trigger`). `None` if level 0 is empty or a file of it, or of
/// the base level it overlaps, is being compacted.
pub fn pick_level0_for_reads(state: &LevelState<'_>, opts: &Options) -> Option<PickedCompaction> {
    let files = state.levels.first()?;
    let first = files.iter().map(|f| f.smallest_user_key()).min()?;
    let last = files.iter().map(|f| f.largest_user_key()).max()?;
    let inputs = level0_closure(files, first, last);
    let base = base_level(state.levels, opts, state.level1_target_bytes);
    finish(
        state,
        0,
        base,
        inputs,
        CompactionReason::ReadTriggered,
        true,
    )
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
        compact_file(state, level, f)
    })
}

/// A size-triggered compaction of `f` (a file of the sorted `level`) into the next level,
/// its inputs widened so that no user key is split; `None` if an input or an overlapping
/// file is busy. Both input policies end here.
fn compact_file(state: &LevelState<'_>, level: usize, f: &FileMeta) -> Option<PickedCompaction> {
    let files = state.levels.get(level)?;
    let inputs = sorted_run(
        files,
        Some(f.smallest_user_key()),
        Some(f.largest_user_key()),
    );
    let inputs = extend_trivial_move(state, level, inputs);
    finish(
        state,
        level,
        level + 1,
        inputs,
        CompactionReason::LevelSize,
        true,
    )
}

/// Most files one trivial move takes (RocksDB's `kMaxMultiTrivialMove`).
const MAX_FILES_MOVED: usize = 4;

/// A lone input of a sorted level that overlaps nothing in the next level moves down
/// without being rewritten; so may its neighbours that overlap nothing there either.
/// Extends such an input to up to [`MAX_FILES_MOVED`] adjacent free files (to the right,
/// then to the left) whose whole key range overlaps nothing in the next level and splits
/// no user key: a level over its target sheds several files in one move, before the next
/// compaction into it rereads them (as RocksDB's `TryExtendNonL0TrivialMove`). Any other
/// input is returned as it is.
fn extend_trivial_move(
    state: &LevelState<'_>,
    level: usize,
    inputs: Vec<Arc<FileMeta>>,
) -> Vec<Arc<FileMeta>> {
    let (Some(files), Some(next)) = (state.levels.get(level), state.levels.get(level + 1)) else {
        return inputs;
    };
    let [only] = inputs.as_slice() else {
        return inputs;
    };
    let Some(at) = files.iter().position(|f| Arc::ptr_eq(f, only)) else {
        return inputs;
    };
    // Whether `files[lo..=hi]` can move down together.
    let movable = |lo: usize, hi: usize| {
        let Some(run) = files.get(lo..=hi) else {
            return false;
        };
        let (Some(first), Some(last)) = (run.first(), run.last()) else {
            return false;
        };
        let (a, b) = (first.smallest_user_key(), last.largest_user_key());
        run.iter()
            .all(|f| !state.being_compacted.contains(&f.number))
            && sorted_run(next, Some(a), Some(b)).is_empty()
            && sorted_run(files, Some(a), Some(b)).len() == run.len()
    };
    if level == 0 || !movable(at, at) {
        return inputs;
    }
    let (mut lo, mut hi) = (at, at);
    while hi - lo + 1 < MAX_FILES_MOVED && movable(lo, hi + 1) {
        hi += 1;
    }
    while hi - lo + 1 < MAX_FILES_MOVED && lo > 0 && movable(lo - 1, hi) {
        lo -= 1;
    }
    files.get(lo..=hi).map_or(inputs, <[_]>::to_vec)
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
    // Several files of a sorted level move together (`extend_trivial_move`); level-0
    // files overlap each other, so only a lone one moves.
    let trivial_move =
        allow_trivial && output_inputs.is_empty() && (inputs.len() == 1 || level > 0);
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

#[cfg(test)]
mod tests;
